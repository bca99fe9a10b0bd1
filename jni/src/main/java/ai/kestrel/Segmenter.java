package ai.kestrel;

import java.lang.ref.Reference;
import java.util.Objects;

/**
 * Person (selfie) segmentation ({@code ks_segmenter}): a person probability per pixel at the
 * upright input size. VIDEO mode smooths the mask over time. One call at a time per segmenter,
 * except {@link #swapModel(String)}, which may run while another thread segments.
 */
public final class Segmenter extends NativeObject {
    public enum Model {
        /** 256x256 input. */
        GENERAL,
        /** 144x256, faster, for 16:9 video. */
        LANDSCAPE
    }

    /** Segmenter options; zero/unset means the default. */
    public static final class Options extends TaskOptions {
        private final Model model;
        private final boolean outputBytes;

        private Options(Builder b) {
            super(b);
            model = b.model;
            outputBytes = b.outputBytes;
        }

        public static Builder builder() {
            return new Builder();
        }

        public Model model() {
            return model;
        }

        public boolean outputBytes() {
            return outputBytes;
        }

        public static final class Builder extends TaskOptions.Builder<Builder> {
            private Model model = Model.GENERAL;
            private boolean outputBytes;

            @Override
            protected Builder self() {
                return this;
            }

            public Builder model(Model model) {
                this.model = Objects.requireNonNull(model, "model");
                return this;
            }

            /** Also have the native side produce the 8-bit mask ({@link Mask#toByteArray}). */
            public Builder outputBytes(boolean outputBytes) {
                this.outputBytes = outputBytes;
                return this;
            }

            public Options build() {
                return new Options(this);
            }
        }
    }

    public Segmenter() {
        this(Options.builder().build());
    }

    public Segmenter(Options options) {
        super(create(options), Segmenter::nativeDestroy, null);
    }

    private static long create(Options o) {
        Objects.requireNonNull(o, "options");
        Kestrel.load();
        return nativeCreate(o.nativeInts(), o.nativeFloats(), o.modelPath(), o.nativeKey(),
                o.keyProvider(), o.model().ordinal(),
                o.outputBytes());
    }

    public Mask segment(Image image) {
        return segment(image, 0);
    }

    /** In VIDEO mode {@code timestampUs} must strictly increase. */
    public synchronized Mask segment(Image image, long timestampUs) {
        Objects.requireNonNull(image, "image");
        try {
            return Mask.unpack(nativeSegment(handle(), image, timestampUs));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Live swap ({@code ks_segmenter_swap_model}): see {@link FaceDetector#swapModel(String)}; from any
     * thread, also while another thread runs this task.
     */
    public void swapModel(String modelPath) {
        swapModel(modelPath, (byte[]) null);
    }

    /** {@link #swapModel(String)} for encrypted models (see {@link FaceDetector}). */
    public void swapModel(String modelPath, byte[] key) {
        LiveSwap.swap(this, Segmenter::nativeSwapModel, modelPath, key, null);
    }

    /** {@link #swapModel(String)} with keys from {@code keyProvider} (see {@link FaceDetector}). */
    public void swapModel(String modelPath, KeyProvider keyProvider) {
        LiveSwap.swap(this, Segmenter::nativeSwapModel, modelPath, null, keyProvider);
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
            KeyProvider keyProvider, int model,
            boolean outputU8);

    static native void nativeDestroy(long handle);

    private static native void nativeSwapModel(long handle, String modelPath, byte[] key,
            KeyProvider keyProvider);

    private static native long nativeModelGeneration(long handle);

    private static native Object[] nativeSegment(long handle, Image image, long timestampUs);
}
