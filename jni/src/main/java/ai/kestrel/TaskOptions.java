package ai.kestrel;

import java.util.Objects;

/**
 * Options shared by every vision task ({@code ks_task_options}). Each task's {@code Options}
 * extends this class and its builder extends {@link Builder}, so common and task-specific setters
 * chain: {@code FaceDetector.Options.builder().mode(RunningMode.VIDEO).minScore(0.6f).build()}.
 * Zero (the builder's initial value) means the task's default, as in C.
 */
public abstract class TaskOptions {
    /** Bytes of a {@code ks-protect} key ({@code KS_TASK_KEY_BYTES}). */
    public static final int KEY_BYTES = 32;

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
    private final byte[] key;
    private final KeyProvider keyProvider;

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
        this.key = b.key;
        this.keyProvider = b.keyProvider;
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

    /** Whether a key for encrypted models was set (the key itself is not handed out again). */
    public boolean hasKey() {
        return key != null;
    }

    /** The provider of keys for encrypted models, or null. */
    public KeyProvider keyProvider() {
        return keyProvider;
    }

    /** The caller's key array (not a copy), for the native create call only. */
    final byte[] nativeKey() {
        return key;
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
        private byte[] key;
        private KeyProvider keyProvider;

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

        /**
         * The key of encrypted models ({@code ks-protect}, 32 bytes): it opens every encrypted
         * model of the task, the {@link #modelPath} one or the entries of a bundle. Plain models
         * ignore it. Null removes it.
         *
         * <p>The array stays yours: the options keep a reference to it (no copy, so no second
         * copy of the key lingers in the Java heap), and the task's constructor copies it into
         * native memory for the create call only and wipes that copy before it returns. The task
         * keeps no key. Wipe the array yourself ({@code Arrays.fill(key, (byte) 0)}) once the
         * tasks that need it are created; do not change it while a constructor runs.
         *
         * <p>Without a key (and without a {@link #keyProvider}) an encrypted model makes the
         * constructor throw {@link KestrelException} with {@link Status#INVALID_ARGUMENT}
         * ("... needs its key ..."); a key that does not open it, {@link Status#TAMPERED}.
         *
         * @throws KestrelException INVALID_ARGUMENT if {@code key} is not 32 bytes
         */
        public B key(byte[] key) {
            if (key != null && key.length != KEY_BYTES) {
                throw new KestrelException(Status.INVALID_ARGUMENT,
                        "TaskOptions.key: " + key.length + " bytes; a ks-protect key is "
                                + KEY_BYTES + " bytes");
            }
            this.key = key;
            return self();
        }

        /**
         * Asked for the key of each encrypted model when the task is created (on the creating
         * thread, inside the constructor); used when no {@link #key} is set. See
         * {@link KeyProvider}. Null removes it.
         */
        public B keyProvider(KeyProvider keyProvider) {
            this.keyProvider = keyProvider;
            return self();
        }

        /** A .ksb bundle to use instead of the task's default. */
        public B modelPath(String modelPath) {
            this.modelPath = modelPath;
            return self();
        }
    }
}
