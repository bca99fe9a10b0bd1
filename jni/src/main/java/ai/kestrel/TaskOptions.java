package ai.kestrel;

import java.util.Objects;

/**
 * Options shared by every vision task ({@code ks_task_options}). Each task's {@code Options}
 * extends this class and its builder extends {@link Builder}, so common and task-specific setters
 * chain: {@code FaceDetector.Options.builder().mode(RunningMode.VIDEO).minScore(0.6f).build()}.
 * Zero (the builder's initial value) means the task's default, as in C.
 */
public abstract class TaskOptions {
    private final RunningMode mode;
    private final int numThreads;
    private final float minScore;
    private final int maxResults;
    private final Rotation rotation;
    private final boolean mirror;
    private final Box roi;
    private final float smoothing;
    private final String modelPath;
    private final Precision precision;
    private final Backend backend;

    protected TaskOptions(Builder<?> b) {
        this.mode = b.mode;
        this.numThreads = b.numThreads;
        this.minScore = b.minScore;
        this.maxResults = b.maxResults;
        this.rotation = b.rotation;
        this.mirror = b.mirror;
        this.roi = b.roi;
        this.smoothing = b.smoothing;
        this.modelPath = b.modelPath;
        this.precision = b.precision;
        this.backend = b.backend;
    }

    public RunningMode mode() {
        return mode;
    }

    public int numThreads() {
        return numThreads;
    }

    public float minScore() {
        return minScore;
    }

    public int maxResults() {
        return maxResults;
    }

    public Rotation rotation() {
        return rotation;
    }

    public boolean mirror() {
        return mirror;
    }

    /** Search region, or null for the whole image. */
    public Box roi() {
        return roi;
    }

    public float smoothing() {
        return smoothing;
    }

    /** Bundle path, or null for the task's default bundle in {@link Kestrel#modelsDir()}. */
    public String modelPath() {
        return modelPath;
    }

    /** How an int8 model's layers run. */
    public Precision precision() {
        return precision;
    }

    /** Where the task's models run (as asked: AUTO stays AUTO here). */
    public Backend backend() {
        return backend;
    }

    /** Integer fields in the order native code reads them (kestrel_jni_tasks.c). */
    final int[] nativeInts() {
        return new int[] {
            mode.ordinal(), numThreads, maxResults, rotation.code(), mirror ? 1 : 0,
            precision.code(), backend.code()
        };
    }

    /** Float fields in the order native code reads them (kestrel_jni_tasks.c). */
    final float[] nativeFloats() {
        Box r = roi == null ? new Box(0, 0, 0, 0) : roi;
        return new float[] {minScore, r.x(), r.y(), r.width(), r.height(), smoothing};
    }

    /** Builder of the common options; {@code B} is the concrete builder type. */
    public abstract static class Builder<B extends Builder<B>> {
        private RunningMode mode = RunningMode.IMAGE;
        private int numThreads;
        private float minScore;
        private int maxResults;
        private Rotation rotation = Rotation.DEG_0;
        private boolean mirror;
        private Box roi;
        private float smoothing;
        private String modelPath;
        private Precision precision = Precision.STORED;
        private Backend backend = Backend.CPU;

        protected Builder() {}

        protected abstract B self();

        /** IMAGE (default) or VIDEO (tracking, smoothing; timestamps must increase). */
        public B mode(RunningMode mode) {
            this.mode = Objects.requireNonNull(mode, "mode");
            return self();
        }

        /** How an int8 model's layers run ({@link Precision}); default STORED. */
        public B precision(Precision precision) {
            this.precision = Objects.requireNonNull(precision, "precision");
            return self();
        }

        /**
         * Where the task's models run ({@link Backend}); default CPU. AUTO times each model on
         * the CPU and the GPU backends here when the task is created. A backend this build or
         * device lacks makes the task's constructor throw {@link KestrelException}
         * ({@link Status#UNSUPPORTED}, the message naming the backend).
         */
        public B backend(Backend backend) {
            this.backend = Objects.requireNonNull(backend, "backend");
            return self();
        }

        /** Inference threads; 0 = 1. */
        public B numThreads(int numThreads) {
            this.numThreads = numThreads;
            return self();
        }

        /** Detection score threshold; 0 = the task's default. */
        public B minScore(float minScore) {
            this.minScore = minScore;
            return self();
        }

        /** Maximum number of results; 0 = the task's default. */
        public B maxResults(int maxResults) {
            this.maxResults = maxResults;
            return self();
        }

        /** How input images are rotated (camera sensor orientation); results are upright. */
        public B rotation(Rotation rotation) {
            this.rotation = Objects.requireNonNull(rotation, "rotation");
            return self();
        }

        /** True if input images are mirrored (front camera). */
        public B mirror(boolean mirror) {
            this.mirror = mirror;
            return self();
        }

        /** Only search this region (upright pixels); null = the whole image. */
        public B roi(Box roi) {
            this.roi = roi;
            return self();
        }

        /** VIDEO smoothing: 0 = default, negative = off, else the task-specific parameter. */
        public B smoothing(float smoothing) {
            this.smoothing = smoothing;
            return self();
        }

        /** A .ksb bundle to use instead of the task's default. */
        public B modelPath(String modelPath) {
            this.modelPath = modelPath;
            return self();
        }
    }
}
