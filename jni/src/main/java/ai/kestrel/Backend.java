package ai.kestrel;

/**
 * {@code ks_backend}: where a {@link Session}'s or a task's models run. A GPU backend runs the
 * ops it supports and leaves the rest, with the transfers between them, to the CPU. A backend
 * this build or device lacks makes the constructor throw {@link KestrelException} with
 * {@link Status#UNSUPPORTED} and a message naming it (docs/backends.md, "Choosing the backend").
 *
 * <p>Not to be confused with {@link EffectRenderer.Backend}, the AR renderer's graphics API.
 */
public enum Backend {
    /** The CPU (the default). */
    CPU(0),
    /** Vulkan compute (a build with {@code KS_VULKAN} and a Vulkan 1.1 device). */
    VULKAN(1),
    /** Not in this version of Kestrel: always refused. */
    OPENCL(2),
    /**
     * The faster of the CPU and each GPU backend that opens here, timed when the session or task
     * is created (a few runs of the model; remembered for the process per model, thread count
     * and precision); any GPU failure falls back to the CPU. {@link Session#backend()} tells the
     * choice. A model with dynamic input shapes runs on the CPU.
     */
    AUTO(3);

    private final int code;

    Backend(int code) {
        this.code = code;
    }

    int code() {
        return code;
    }

    /** The constant of a native {@code ks_backend} value. */
    static Backend fromCode(int code) {
        for (Backend b : values()) {
            if (b.code == code) {
                return b;
            }
        }
        throw new IllegalArgumentException("unknown ks_backend " + code);
    }
}
