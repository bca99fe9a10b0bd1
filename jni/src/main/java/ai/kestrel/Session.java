package ai.kestrel;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * An inference session on a {@link Model} ({@code ks_session}): {@link #reshape()} once per input
 * shape, then {@link #setInput}, {@link #run()}, {@link #getOutput}.
 *
 * <p>Tensor data is copied in and out (float[] for f32 tensors, byte[] or ByteBuffer of the exact
 * byte size for any type), so no Java object ever points into native memory that a reshape or
 * close could free. Methods are synchronized: one call at a time per session.
 */
public final class Session extends NativeObject {
    private static final int KIND_FLOATS = 0;
    private static final int KIND_BYTES = 1;
    private static final int KIND_DIRECT = 2;

    private final Model model;

    public Session(Model model) {
        this(model, Options.DEFAULT);
    }

    public Session(Model model, Options options) {
        this(model, Objects.requireNonNull(model, "model").retainForSession(),
                Objects.requireNonNull(options, "options"));
    }

    private Session(Model model, long modelHandle, Options options) {
        super(createOrRelease(model, modelHandle, options), Session::nativeDestroy,
                model.shared()::release);
        this.model = model;
    }

    private static long createOrRelease(Model model, long modelHandle, Options o) {
        try {
            return nativeCreate(modelHandle, o.numThreads, o.keepAllTensors ? 1 : 0,
                    o.maxMemoryBytes, o.tuneMode, o.tuneCachePath, o.precision.code(),
                    o.backend.code());
        } catch (RuntimeException | Error e) {
            model.shared().release();
            throw e;
        }
    }

    /** The model this session runs. */
    public Model model() {
        return model;
    }

    /**
     * Where the session runs: {@link Backend#CPU} or a GPU backend, never {@link Backend#AUTO}
     * (the choice AUTO made at create).
     */
    public synchronized Backend backend() {
        try {
            return Backend.fromCode(nativeBackend(handle()));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Plans the session for the model's own (static) input shapes. */
    public synchronized void reshape() {
        try {
            nativeReshape(handle(), null);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Plans the session for the given input shapes, one per model input. */
    public synchronized void reshape(long[]... inputShapes) {
        Objects.requireNonNull(inputShapes, "inputShapes");
        int numInputs = model.isClosed() ? inputShapes.length : model.numInputs();
        if (inputShapes.length != numInputs) {
            throw new IllegalArgumentException("the model has " + numInputs + " inputs, got "
                    + inputShapes.length + " shapes");
        }
        try {
            nativeReshape(handle(), inputShapes);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Input {@code index} as planned by the last reshape (concrete shape). */
    public synchronized TensorInfo inputInfo(int index) {
        try {
            return nativeTensorInfo(handle(), true, index);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    public synchronized TensorInfo outputInfo(int index) {
        try {
            return nativeTensorInfo(handle(), false, index);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Copies {@code data} into f32 input {@code index}; its length must match exactly. */
    public synchronized void setInput(int index, float[] data) {
        Objects.requireNonNull(data, "data");
        copy(true, index, data, KIND_FLOATS, 0, (long) data.length * 4);
    }

    /** Copies the raw bytes of input {@code index}; {@code data.length} must match exactly. */
    public synchronized void setInput(int index, byte[] data) {
        Objects.requireNonNull(data, "data");
        copy(true, index, data, KIND_BYTES, 0, data.length);
    }

    /**
     * Copies {@code data}'s remaining bytes (in native byte order) into input {@code index};
     * their number must match the tensor's size exactly. The position is not changed.
     */
    public synchronized void setInput(int index, ByteBuffer data) {
        Objects.requireNonNull(data, "data");
        copyBuffer(true, index, data);
    }

    /** Runs the graph once. */
    public synchronized void run() {
        try {
            nativeRun(handle());
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** A copy of f32 output {@code index}. */
    public synchronized float[] getOutputFloats(int index) {
        TensorInfo info = outputInfo(index);
        long n = info.numElements();
        if (info.dataType() != DataType.F32 || n < 0 || n > Integer.MAX_VALUE) {
            throw new IllegalStateException("output " + index + " (" + info
                    + ") is not a planned f32 tensor");
        }
        float[] out = new float[(int) n];
        getOutput(index, out);
        return out;
    }

    /** Copies f32 output {@code index} into {@code dst}, whose length must match exactly. */
    public synchronized void getOutput(int index, float[] dst) {
        Objects.requireNonNull(dst, "dst");
        copy(false, index, dst, KIND_FLOATS, 0, (long) dst.length * 4);
    }

    /** Copies the raw bytes of output {@code index} into {@code dst} (exact size). */
    public synchronized void getOutput(int index, byte[] dst) {
        Objects.requireNonNull(dst, "dst");
        copy(false, index, dst, KIND_BYTES, 0, dst.length);
    }

    /** Copies output {@code index} into {@code dst}'s remaining bytes (exact size). */
    public synchronized void getOutput(int index, ByteBuffer dst) {
        Objects.requireNonNull(dst, "dst");
        if (dst.isReadOnly()) {
            throw new IllegalArgumentException("dst is read-only");
        }
        copyBuffer(false, index, dst);
    }

    private void copyBuffer(boolean input, int index, ByteBuffer b) {
        if (b.isDirect()) {
            copy(input, index, b, KIND_DIRECT, b.position(), b.remaining());
        } else if (b.hasArray()) {
            copy(input, index, b.array(), KIND_BYTES, b.arrayOffset() + b.position(),
                    b.remaining());
        } else {
            throw new IllegalArgumentException("a heap ByteBuffer must expose its array");
        }
    }

    private void copy(boolean input, int index, Object target, int kind, int offset, long length) {
        try {
            nativeCopy(handle(), input, index, target, kind, offset, length);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Session options ({@code ks_session_desc}). */
    public static final class Options {
        static final Options DEFAULT = builder().build();

        private final int numThreads;
        private final boolean keepAllTensors;
        private final long maxMemoryBytes;
        private final int tuneMode;
        private final String tuneCachePath;
        private final Precision precision;
        private final Backend backend;

        private Options(Builder b) {
            numThreads = b.numThreads;
            keepAllTensors = b.keepAllTensors;
            maxMemoryBytes = b.maxMemoryBytes;
            tuneMode = b.tuneMode;
            tuneCachePath = b.tuneCachePath;
            precision = b.precision;
            backend = b.backend;
        }

        public static Builder builder() {
            return new Builder();
        }

        public static final class Builder {
            private int numThreads;
            private boolean keepAllTensors;
            private long maxMemoryBytes;
            private int tuneMode;
            private String tuneCachePath;
            private Precision precision = Precision.STORED;
            private Backend backend = Backend.CPU;

            /** Threads that split each op's work; 0 = 1. */
            public Builder numThreads(int numThreads) {
                this.numThreads = numThreads;
                return this;
            }

            /** No memory reuse: every intermediate tensor stays readable (debugging). */
            public Builder keepAllTensors(boolean keep) {
                this.keepAllTensors = keep;
                return this;
            }

            /** Cap on the planned arena; 0 = 2 GiB. */
            public Builder maxMemoryBytes(long maxMemoryBytes) {
                this.maxMemoryBytes = maxMemoryBytes;
                return this;
            }

            /** Kernel tuning at reshape: 0 off, 1 fast, 2 full ({@code ks_tune_mode}). */
            public Builder tune(int tuneMode, String cachePath) {
                this.tuneMode = tuneMode;
                this.tuneCachePath = cachePath;
                return this;
            }

            /** How a quantized model's int8 layers run ({@link Precision}); default STORED. */
            public Builder precision(Precision precision) {
                this.precision = Objects.requireNonNull(precision, "precision");
                return this;
            }

            /**
             * Where the session runs ({@link Backend}); default CPU. A backend this build or
             * device lacks makes the {@link Session} constructor throw {@link KestrelException}
             * ({@link Status#UNSUPPORTED}, the message naming the backend).
             */
            public Builder backend(Backend backend) {
                this.backend = Objects.requireNonNull(backend, "backend");
                return this;
            }

            public Options build() {
                return new Options(this);
            }
        }
    }

    private static native long nativeCreate(long model, int numThreads, int flags,
            long maxMemoryBytes, int tuneMode, String tuneCachePath, int precision, int backend);

    static native void nativeDestroy(long handle);

    private static native int nativeBackend(long handle);

    private static native void nativeReshape(long handle, long[][] shapes);

    private static native TensorInfo nativeTensorInfo(long handle, boolean input, int index);

    private static native void nativeCopy(long handle, boolean input, int index, Object target,
            int kind, int offset, long length);

    private static native void nativeRun(long handle);
}
