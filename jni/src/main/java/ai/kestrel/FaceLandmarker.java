package ai.kestrel;

import java.lang.ref.Reference;
import java.util.List;
import java.util.Objects;

/**
 * Face landmarker ({@code ks_face_landmarker}): a 468-point mesh (478 with irises), head pose and
 * expressions. In VIDEO mode the face is tracked between frames and the detector only runs when
 * tracking is lost. One call at a time per landmarker (methods are synchronized),
 * except {@link #swapModel(String)}, which may run while another thread detects.
 */
public final class FaceLandmarker extends NativeObject {
    /** Landmarker options; zero/unset means the default. */
    public static final class Options extends TaskOptions {
        private final FaceDetector.Model detector;
        private final boolean refineLandmarks;
        private final float minTrackingScore;

        private Options(Builder b) {
            super(b);
            detector = b.detector;
            refineLandmarks = b.refineLandmarks;
            minTrackingScore = b.minTrackingScore;
        }

        public static Builder builder() {
            return new Builder();
        }

        public FaceDetector.Model detector() {
            return detector;
        }

        public boolean refineLandmarks() {
            return refineLandmarks;
        }

        public float minTrackingScore() {
            return minTrackingScore;
        }

        public static final class Builder extends TaskOptions.Builder<Builder> {
            private FaceDetector.Model detector = FaceDetector.Model.SHORT_RANGE;
            private boolean refineLandmarks;
            private float minTrackingScore;

            @Override
            protected Builder self() {
                return this;
            }

            /** Which face detector finds faces to track. */
            public Builder detector(FaceDetector.Model detector) {
                this.detector = Objects.requireNonNull(detector, "detector");
                return this;
            }

            /** 478 points with irises (attention model). */
            public Builder refineLandmarks(boolean refine) {
                this.refineLandmarks = refine;
                return this;
            }

            /** Below this score the face is lost and redetected; 0 = 0.5. */
            public Builder minTrackingScore(float score) {
                this.minTrackingScore = score;
                return this;
            }

            public Options build() {
                return new Options(this);
            }
        }
    }

    public FaceLandmarker() {
        this(Options.builder().build());
    }

    public FaceLandmarker(Options options) {
        super(create(options), FaceLandmarker::nativeDestroy, null);
    }

    private static long create(Options o) {
        Objects.requireNonNull(o, "options");
        Kestrel.load();
        return nativeCreate(o.nativeInts(), o.nativeFloats(), o.modelPath(), o.nativeKey(),
                o.keyProvider(),
                o.detector().ordinal(), o.refineLandmarks(), o.minTrackingScore());
    }

    public List<FaceMesh> detect(Image image) {
        return detect(image, 0);
    }

    /** In VIDEO mode {@code timestampUs} must strictly increase. */
    public synchronized List<FaceMesh> detect(Image image, long timestampUs) {
        Objects.requireNonNull(image, "image");
        try {
            return FaceMesh.unpack(nativeDetect(handle(), image, timestampUs));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Live swap ({@code ks_face_landmarker_swap_model}): see {@link FaceDetector#swapModel(String)}; from any
     * thread, also while another thread runs this task.
     */
    public void swapModel(String modelPath) {
        swapModel(modelPath, (byte[]) null);
    }

    /** {@link #swapModel(String)} for encrypted models (see {@link FaceDetector}). */
    public void swapModel(String modelPath, byte[] key) {
        LiveSwap.swap(this, FaceLandmarker::nativeSwapModel, modelPath, key, null);
    }

    /** {@link #swapModel(String)} with keys from {@code keyProvider} (see {@link FaceDetector}). */
    public void swapModel(String modelPath, KeyProvider keyProvider) {
        LiveSwap.swap(this, FaceLandmarker::nativeSwapModel, modelPath, null, keyProvider);
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
            KeyProvider keyProvider, int detector,
            boolean refine, float minTrackingScore);

    static native void nativeDestroy(long handle);

    private static native void nativeSwapModel(long handle, String modelPath, byte[] key,
            KeyProvider keyProvider);

    private static native long nativeModelGeneration(long handle);

    private static native float[] nativeDetect(long handle, Image image, long timestampUs);
}
