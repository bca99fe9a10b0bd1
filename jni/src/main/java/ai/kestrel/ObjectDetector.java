package ai.kestrel;

import java.lang.ref.Reference;
import java.util.List;
import java.util.Objects;

/**
 * Object detection ({@code ks_object_detector}; COCO-80 with the default bundles), configured by
 * its bundle. VIDEO mode adds stable track ids. One call at a time per detector,
 * except {@link #swapModel(String)}, which may run while another thread detects.
 */
public final class ObjectDetector extends NativeObject {
    /** Detector options: the common task options only. */
    public static final class Options extends TaskOptions {
        private Options(Builder b) {
            super(b);
        }

        public static Builder builder() {
            return new Builder();
        }

        public static final class Builder extends TaskOptions.Builder<Builder> {
            @Override
            protected Builder self() {
                return this;
            }

            public Options build() {
                return new Options(this);
            }
        }
    }

    public ObjectDetector() {
        this(Options.builder().build());
    }

    public ObjectDetector(Options options) {
        super(create(options), ObjectDetector::nativeDestroy, null);
    }

    private static long create(Options o) {
        Objects.requireNonNull(o, "options");
        Kestrel.load();
        return nativeCreate(o.nativeInts(), o.nativeFloats(), o.modelPath(), o.nativeKey(),
                o.keyProvider());
    }

    public List<DetectedObject> detect(Image image) {
        return detect(image, 0);
    }

    /** Objects sorted by descending score. In VIDEO mode timestamps must strictly increase. */
    public synchronized List<DetectedObject> detect(Image image, long timestampUs) {
        Objects.requireNonNull(image, "image");
        try {
            return DetectedObject.unpack(nativeDetect(handle(), image, timestampUs));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Live swap ({@code ks_object_detector_swap_model}): see {@link FaceDetector#swapModel(String)}; from any
     * thread, also while another thread runs this task.
     */
    public void swapModel(String modelPath) {
        swapModel(modelPath, (byte[]) null);
    }

    /** {@link #swapModel(String)} for encrypted models (see {@link FaceDetector}). */
    public void swapModel(String modelPath, byte[] key) {
        LiveSwap.swap(this, ObjectDetector::nativeSwapModel, modelPath, key, null);
    }

    /** {@link #swapModel(String)} with keys from {@code keyProvider} (see {@link FaceDetector}). */
    public void swapModel(String modelPath, KeyProvider keyProvider) {
        LiveSwap.swap(this, ObjectDetector::nativeSwapModel, modelPath, null, keyProvider);
    }

    /** Live swaps taken so far ({@code ks_task_stats.model_generation}). */
    public synchronized long modelGeneration() {
        try {
            return nativeModelGeneration(handle());
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    private static native long nativeCreate(int[] ti, float[] tf, String modelPath, byte[] key,
            KeyProvider keyProvider);

    static native void nativeDestroy(long handle);

    private static native void nativeSwapModel(long handle, String modelPath, byte[] key,
            KeyProvider keyProvider);

    private static native long nativeModelGeneration(long handle);

    private static native Object[] nativeDetect(long handle, Image image, long timestampUs);
}
