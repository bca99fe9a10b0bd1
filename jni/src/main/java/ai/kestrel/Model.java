package ai.kestrel;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * A loaded .ksm model ({@code ks_model}). Immutable after load; may be shared by any number of
 * {@link Session}s on any threads.
 *
 * <p>Closing a model while sessions made from it are still open is allowed: the native model is
 * freed when the last of them is closed (sessions hold a reference to it).
 */
public final class Model extends NativeObject {
    /** Native reference count shared with the sessions; the model itself holds one. */
    static final class Shared {
        private long handle;
        private int refs = 1;

        Shared(long handle) {
            this.handle = handle;
        }

        synchronized long retain() {
            if (handle == 0) {
                throw new IllegalStateException("Model is closed");
            }
            refs++;
            return handle;
        }

        synchronized void release() {
            if (--refs == 0) {
                nativeDestroy(handle);
                handle = 0;
            }
        }
    }

    private final Shared shared;

    private Model(long handle, Shared shared) {
        super(handle, h -> shared.release(), null);
        this.shared = shared;
    }

    private static Model wrap(long handle) {
        return new Model(handle, new Shared(handle));
    }

    /** Loads a .ksm file (memory-mapped, zero-copy). */
    public static Model load(String path) {
        return load(path, Options.DEFAULT);
    }

    public static Model load(String path, Options options) {
        Objects.requireNonNull(path, "path");
        Kestrel.load();
        return wrap(nativeLoadFile(path, options.flags(), options.key));
    }

    /** Loads a .ksm image from memory. The bytes are copied; the array may be reused after. */
    public static Model fromBytes(byte[] data) {
        return fromBytes(data, Options.DEFAULT);
    }

    public static Model fromBytes(byte[] data, Options options) {
        Objects.requireNonNull(data, "data");
        Kestrel.load();
        return wrap(nativeLoadBytes(data, null, 0, data.length, options.flags(), options.key));
    }

    /** Loads a .ksm image from a buffer (remaining bytes). The bytes are copied. */
    public static Model fromBuffer(ByteBuffer data, Options options) {
        Objects.requireNonNull(data, "data");
        Kestrel.load();
        if (data.isDirect()) {
            return wrap(nativeLoadBytes(null, data, data.position(), data.remaining(),
                    options.flags(), options.key));
        }
        byte[] copy = new byte[data.remaining()];
        data.duplicate().get(copy);
        return wrap(nativeLoadBytes(copy, null, 0, copy.length, options.flags(), options.key));
    }

    public synchronized int numInputs() {
        try {
            return nativeNumTensors(handle(), true);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    public synchronized int numOutputs() {
        try {
            return nativeNumTensors(handle(), false);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Description of graph input {@code index}; dynamic dimensions are -1. */
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

    /** Metadata value for {@code key} (e.g. "source", "producer"), or null. */
    public synchronized String metadata(String key) {
        Objects.requireNonNull(key, "key");
        try {
            return nativeMetadata(handle(), key);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Takes a reference for a new session; released by the session's cleanup. */
    long retainForSession() {
        handle(); // throws if this Model object is closed
        return shared.retain();
    }

    Shared shared() {
        return shared;
    }

    /** Load options ({@code ks_model_desc}). */
    public static final class Options {
        static final Options DEFAULT = builder().build();

        private final boolean noMmap;
        private final boolean skipChecksum;
        private final byte[] key;

        private Options(Builder b) {
            noMmap = b.noMmap;
            skipChecksum = b.skipChecksum;
            key = b.key;
        }

        public static Builder builder() {
            return new Builder();
        }

        int flags() {
            return (noMmap ? 0x1 : 0) | (skipChecksum ? 0x2 : 0);
        }

        public static final class Builder {
            private boolean noMmap;
            private boolean skipChecksum;
            private byte[] key;

            /** Read the file into memory instead of mapping it. */
            public Builder noMmap(boolean noMmap) {
                this.noMmap = noMmap;
                return this;
            }

            /** Trust the file and skip the whole-file checksum. */
            public Builder skipChecksum(boolean skipChecksum) {
                this.skipChecksum = skipChecksum;
                return this;
            }

            /** 32-byte key of an encrypted (ks-protect) model; copied. */
            public Builder key(byte[] key) {
                this.key = key == null ? null : key.clone();
                return this;
            }

            public Options build() {
                return new Options(this);
            }
        }
    }

    static native void nativeDestroy(long handle);

    private static native long nativeLoadFile(String path, int flags, byte[] key);

    private static native long nativeLoadBytes(byte[] array, ByteBuffer direct, int offset,
            int length, int flags, byte[] key);

    private static native int nativeNumTensors(long handle, boolean inputs);

    private static native TensorInfo nativeTensorInfo(long handle, boolean input, int index);

    private static native String nativeMetadata(long handle, String key);
}
