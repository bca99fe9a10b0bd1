package ai.kestrel;

import java.lang.ref.Reference;
import java.util.List;
import java.util.Objects;

/**
 * Face detection (BlazeFace, {@code ks_face_detector}).
 *
 * <pre>{@code
 * FaceDetector.Options opts = FaceDetector.Options.builder().minScore(0.6f).build();
 * try (FaceDetector det = new FaceDetector(opts)) {
 *     for (Face f : det.detect(Image.rgba(pixels, w, h))) System.out.println(f.box());
 * }
 * }</pre>
 *
 * One call at a time per detector (methods are synchronized), except {@link #swapModel(String)},
 * which may run while another thread detects; separate detectors run concurrently.
 */
public final class FaceDetector extends NativeObject {
    /** Which BlazeFace model runs. */
    public enum Model {
        /** 128x128, faces within ~2 m (selfies). */
        SHORT_RANGE,
        /** 192x192, faces up to ~5 m (group photos). */
        FULL_RANGE
    }

    /** Detector options; zero/unset means the default. */
    public static final class Options extends TaskOptions {
        private final Model model;

        private Options(Builder b) {
            super(b);
            model = b.model;
        }

        public static Builder builder() {
            return new Builder();
        }

        public Model model() {
            return model;
        }

        public static final class Builder extends TaskOptions.Builder<Builder> {
            private Model model = Model.SHORT_RANGE;

            @Override
            protected Builder self() {
                return this;
            }

            public Builder model(Model model) {
                this.model = Objects.requireNonNull(model, "model");
                return this;
            }

            public Options build() {
                return new Options(this);
            }
        }
    }

    /** A detector with all defaults. */
    public FaceDetector() {
        this(Options.builder().build());
    }

    public FaceDetector(Options options) {
        super(create(options), FaceDetector::nativeDestroy, null);
    }

    private static long create(Options o) {
        Objects.requireNonNull(o, "options");
        Kestrel.load();
        return nativeCreate(o.nativeInts(), o.nativeFloats(), o.modelPath(), o.nativeKey(),
                o.keyProvider(), o.model().ordinal());
    }

    /** Detects faces in a photo (IMAGE mode). */
    public List<Face> detect(Image image) {
        return detect(image, 0);
    }

    /** Detects faces; in VIDEO mode {@code timestampUs} must strictly increase. */
    public synchronized List<Face> detect(Image image, long timestampUs) {
        Objects.requireNonNull(image, "image");
        try {
            return Face.unpack(nativeDetect(handle(), image, timestampUs));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Live swap ({@code ks_face_detector_swap_model}; docs/java.md "Live swap"): loads the {@code .ksb} (or
     * {@code .ksm}) at {@code modelPath}, e.g. a newer version from {@link Store#filePath}, and
     * makes the next call that runs this task use it; every other option stays as constructed.
     * Unlike the other methods it does not wait for a call in progress: call it from any thread,
     * also while another thread runs this task (that frame finishes on the old version, none is
     * dropped or mixes versions). The loading runs on the calling thread and takes as long as a
     * constructor. {@link #close()} waits for it; after close it throws
     * {@link IllegalStateException}.
     *
     * @throws KestrelException with the status and message of the constructor for a bad version
     *     (a missing or damaged file, a wrong or missing key, another task's bundle): the task
     *     keeps running its current version
     */
    public void swapModel(String modelPath) {
        swapModel(modelPath, (byte[]) null);
    }

    /**
     * {@link #swapModel(String)} for encrypted models: {@code key} (32 bytes) opens them, as
     * {@link TaskOptions.Builder#key}; it is copied into native memory for this call only and
     * wiped before it returns, the array stays yours. Null: no key.
     */
    public void swapModel(String modelPath, byte[] key) {
        LiveSwap.swap(this, FaceDetector::nativeSwapModel, modelPath, key, null);
    }

    /**
     * {@link #swapModel(String)} with keys from {@code keyProvider} (as
     * {@link TaskOptions.Builder#keyProvider}), asked on the calling thread during this call. The
     * provider must not call this task.
     */
    public void swapModel(String modelPath, KeyProvider keyProvider) {
        LiveSwap.swap(this, FaceDetector::nativeSwapModel, modelPath, null, keyProvider);
    }

    /**
     * Live swaps taken so far ({@code ks_task_stats.model_generation}): 0 until the first call
     * that runs after a successful {@link #swapModel(String)}, which switches.
     */
    public synchronized long modelGeneration() {
        try {
            return nativeModelGeneration(handle());
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    private static native long nativeCreate(int[] ti, float[] tf, String modelPath, byte[] key,
            KeyProvider keyProvider, int model);

    static native void nativeDestroy(long handle);

    private static native void nativeSwapModel(long handle, String modelPath, byte[] key,
            KeyProvider keyProvider);

    private static native long nativeModelGeneration(long handle);

    private static native float[] nativeDetect(long handle, Image image, long timestampUs);
}
