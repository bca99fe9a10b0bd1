package ai.kestrel;

import java.lang.ref.Reference;
import java.util.List;
import java.util.Objects;

/**
 * Pose landmarker ({@code ks_pose_landmarker}): 33 body landmarks per person, world landmarks and
 * an optional person mask. One call at a time per landmarker (methods are synchronized),
 * except {@link #swapModel(String)}, which may run while another thread detects.
 */
public final class PoseLandmarker extends NativeObject {
    /** Landmark model size. */
    public enum Model {
        FULL,
        LITE,
        HEAVY
    }

    /** Landmarker options; zero/unset means the default. */
    public static final class Options extends TaskOptions {
        private final Model model;
        private final float minPresence;
        private final boolean outputSegmentation;

        private Options(Builder b) {
            super(b);
            model = b.model;
            minPresence = b.minPresence;
            outputSegmentation = b.outputSegmentation;
        }

        public static Builder builder() {
            return new Builder();
        }

        public Model model() {
            return model;
        }

        public float minPresence() {
            return minPresence;
        }

        public boolean outputSegmentation() {
            return outputSegmentation;
        }

        public static final class Builder extends TaskOptions.Builder<Builder> {
            private Model model = Model.FULL;
            private float minPresence;
            private boolean outputSegmentation;

            @Override
            protected Builder self() {
                return this;
            }

            /** Ignored when a model path is set. */
            public Builder model(Model model) {
                this.model = Objects.requireNonNull(model, "model");
                return this;
            }

            /** Pose flag threshold of the landmark model; 0 = 0.5. */
            public Builder minPresence(float minPresence) {
                this.minPresence = minPresence;
                return this;
            }

            /** Give each pose a person mask at the input size. */
            public Builder outputSegmentation(boolean output) {
                this.outputSegmentation = output;
                return this;
            }

            public Options build() {
                return new Options(this);
            }
        }
    }

    public PoseLandmarker() {
        this(Options.builder().build());
    }

    public PoseLandmarker(Options options) {
        super(create(options), PoseLandmarker::nativeDestroy, null);
    }

    private static long create(Options o) {
        Objects.requireNonNull(o, "options");
        Kestrel.load();
        return nativeCreate(o.nativeInts(), o.nativeFloats(), o.modelPath(), o.nativeKey(),
                o.keyProvider(), o.model().ordinal(),
                o.minPresence(), o.outputSegmentation());
    }

    public List<Pose> detect(Image image) {
        return detect(image, 0);
    }

    /** In VIDEO mode {@code timestampUs} must strictly increase. */
    public synchronized List<Pose> detect(Image image, long timestampUs) {
        Objects.requireNonNull(image, "image");
        try {
            return Pose.unpack(nativeDetect(handle(), image, timestampUs));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Live swap ({@code ks_pose_landmarker_swap_model}): see {@link FaceDetector#swapModel(String)}; from any
     * thread, also while another thread runs this task.
     */
    public void swapModel(String modelPath) {
        swapModel(modelPath, (byte[]) null);
    }

    /** {@link #swapModel(String)} for encrypted models (see {@link FaceDetector}). */
    public void swapModel(String modelPath, byte[] key) {
        LiveSwap.swap(this, PoseLandmarker::nativeSwapModel, modelPath, key, null);
    }

    /** {@link #swapModel(String)} with keys from {@code keyProvider} (see {@link FaceDetector}). */
    public void swapModel(String modelPath, KeyProvider keyProvider) {
        LiveSwap.swap(this, PoseLandmarker::nativeSwapModel, modelPath, null, keyProvider);
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
            float minPresence, boolean outputSegmentation);

    static native void nativeDestroy(long handle);

    private static native void nativeSwapModel(long handle, String modelPath, byte[] key,
            KeyProvider keyProvider);

    private static native long nativeModelGeneration(long handle);

    private static native Object[] nativeDetect(long handle, Image image, long timestampUs);
}
