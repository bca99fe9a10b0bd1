package ai.kestrel;

import java.io.IOException;
import java.io.InputStream;
import java.lang.ref.Reference;
import java.lang.reflect.UndeclaredThrowableException;
import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * The on-device store of signed packages ({@code ks_store}, {@code kestrel/delivery.h}; see
 * docs/delivery.md): verifies a package completely (Ed25519 signature by a trusted key, every
 * file's SHA-256, sizes, paths, runtime version), installs it atomically into a folder the app
 * owns, keeps the previous version and refuses downgrades, replays and packages that failed
 * before. Kestrel never opens a socket: the app downloads with its own HTTP stack and hands the
 * stream, the bytes or the file to {@link #install(InputStream)}, {@link #install(byte[])} or
 * {@link #installFile(String)}.
 *
 * <pre>{@code
 * byte[] release = Store.publicKeyFromHex(BuildConfig.KESTREL_RELEASE_PUB); // ks-sign keygen
 * try (Store store = Store.open(new File(ctx.getFilesDir(), "kestrel").getPath(), release);
 *      InputStream in = connection.getInputStream()) {
 *     PackageInfo v = store.install(in);
 *     String bundle = store.filePath("face", "face_landmarker.ksb");
 *     ... FaceLandmarker.Options.builder().modelPath(bundle) ...
 * } catch (StoreException e) {
 *     log(e.refusal() + " " + e.status() + ": " + e.nativeMessage()); // nothing was changed
 * }
 * }</pre>
 *
 * <p>Every refusal throws {@link StoreException} with the {@link Status}, the
 * {@link DeliveryError} cause and the native message naming the file, the versions or the key.
 *
 * <p>A {@link StoreListener} given to {@link #open(String, KeyProvider, StoreListener, byte[]...)}
 * is told of every version that becomes current ({@link StoreEvent#INSTALLED}) and of every
 * version marked bad by a failed self-test or {@link #markBad} ({@link StoreEvent#ROLLED_BACK},
 * with the reason), on the thread of the call, inside it.
 *
 * <p>Thread safety: a store may be shared by threads; its calls are serialized (as the native
 * store's are). One folder is opened by one store at a time, across processes too: a second
 * {@link #open} of the same folder fails with {@link Status#INVALID_STATE} until the first is
 * closed.
 */
public final class Store extends NativeObject {
    /** Install flag: accept a version older than the installed one. */
    public static final int ALLOW_DOWNGRADE = 0x1;
    /** Install flag: install without running the package's self-test. */
    public static final int SKIP_SELFTEST = 0x2;
    /** Bytes of an Ed25519 public key ({@code KS_PACKAGE_PUBLIC_KEY_BYTES}). */
    public static final int PUBLIC_KEY_BYTES = 32;
    /**
     * The largest package the store accepts: the 96 bytes of header and signature, the largest
     * manifest and the largest payload of the package format (about 1 GiB). A stream that
     * announces more is refused before anything is read into memory.
     */
    public static final long MAX_PACKAGE_BYTES;

    private static final byte[] MAGIC = {0x4B, 0x53, 0x50, 0x4B, 0x47, 0x0D, 0x0A, 0x1A};
    private static final int HEADER_BYTES = 32;
    private static final int SIGNATURE_BYTES = 64;

    static {
        Kestrel.load();
        MAX_PACKAGE_BYTES = nativeMaxPackageBytes();
    }

    /** The listener's dispatcher (null without a listener); the native store holds it too. */
    private final Events events;

    private Store(long handle, Events events) {
        super(handle, Store::nativeDestroy, null);
        this.events = events;
    }

    /**
     * Opens (creating it if needed, one level) the store folder {@code dir}, which must be
     * private to the app, and removes what interrupted installs left. {@code trustedKeys}: one
     * or more 32-byte Ed25519 public keys ({@code ks-sign keygen}'s {@code NAME.pub}, see
     * {@link #publicKeyFromHex}); several while keys rotate. The keys are copied.
     */
    public static Store open(String dir, byte[]... trustedKeys) {
        return open(dir, null, null, trustedKeys);
    }

    /**
     * {@link #open(String, byte[]...)} with the key provider of the store's self-tests of
     * encrypted models ({@code ks_store_desc.key_provider}): when a package's self-test model is
     * a {@code ks-protect} file, the store asks {@code selftestKeys.keyFor(name)} for the key
     * named by the package's manifest ({@link PackageInfo#encryptionKeyName}, {@code ks-sign sign
     * --encryption-key-name}), on the installing thread, inside the install. The key stays in
     * native memory for the self-test and is wiped after; the returned array is the provider's.
     * Null, a key of another size or one that does not open the model refuses the install with
     * {@link DeliveryError#NO_KEY} (not marking the package bad: it installs once the key is
     * there). The store keeps a reference to the provider until it is closed.
     */
    public static Store open(String dir, KeyProvider selftestKeys, byte[]... trustedKeys) {
        return open(dir, selftestKeys, null, trustedKeys);
    }

    /**
     * {@link #open(String, KeyProvider, byte[]...)} (either may be null) with a listener of the
     * store's events ({@code ks_store_desc.on_event}): {@link StoreEvent#INSTALLED} when an
     * install makes a version current, {@link StoreEvent#ROLLED_BACK} when a version is marked
     * bad (its self-test failed during an install, or {@link #markBad}), each with the version's
     * {@link PackageInfo} and a message saying why. Installing the version that is already
     * current, a refusal and {@link #rollback} report nothing.
     *
     * <p>The listener runs on the thread of the store call, inside it, with the store busy: it
     * must not call this store (that throws {@link IllegalStateException}). An exception it
     * throws is caught before it could unwind through the native store and is thrown by the
     * store call once the store has finished: the store's change stands, and a call that failed
     * as well throws its {@link StoreException} with the listener's exception as suppressed
     * (see {@link StoreListener}). The store keeps a reference to the listener until it is
     * closed.
     */
    public static Store open(String dir, KeyProvider selftestKeys, StoreListener listener,
            byte[]... trustedKeys) {
        Objects.requireNonNull(dir, "dir");
        Objects.requireNonNull(trustedKeys, "trustedKeys");
        if (trustedKeys.length == 0) {
            throw new StoreException(Status.INVALID_ARGUMENT, DeliveryError.OK,
                    "Store.open: at least one trusted public key is needed");
        }
        byte[] keys = new byte[trustedKeys.length * PUBLIC_KEY_BYTES];
        for (int i = 0; i < trustedKeys.length; i++) {
            byte[] k = Objects.requireNonNull(trustedKeys[i], "trustedKeys[" + i + "]");
            if (k.length != PUBLIC_KEY_BYTES) {
                throw new StoreException(Status.INVALID_ARGUMENT, DeliveryError.OK,
                        "Store.open: trusted key " + i + " has " + k.length
                                + " bytes; an Ed25519 public key has " + PUBLIC_KEY_BYTES);
            }
            System.arraycopy(k, 0, keys, i * PUBLIC_KEY_BYTES, PUBLIC_KEY_BYTES);
        }
        Events events = listener == null ? null : new Events(listener);
        return new Store(nativeOpen(dir, keys, selftestKeys, events), events);
    }

    /**
     * Frees the native store. Idempotent. Waits for a call running on another thread.
     *
     * @throws IllegalStateException when called from this store's own {@link StoreListener}
     */
    @Override
    public synchronized void close() {
        if (events != null && events.dispatching) {
            throw new IllegalStateException("Store.close: called from the store's own "
                    + "StoreListener, inside the store call that reported the event");
        }
        super.close();
    }

    /**
     * The 32 bytes of a public key written as 64 hex digits ({@code ks-sign keygen}'s
     * {@code NAME.pub}); surrounding white space is ignored.
     *
     * @throws IllegalArgumentException if it is not 64 hex digits
     */
    public static byte[] publicKeyFromHex(String hex) {
        String h = Objects.requireNonNull(hex, "hex").trim();
        if (h.length() != 2 * PUBLIC_KEY_BYTES) {
            throw new IllegalArgumentException("public key: " + h.length()
                    + " characters; expected " + 2 * PUBLIC_KEY_BYTES + " hex digits");
        }
        byte[] out = new byte[PUBLIC_KEY_BYTES];
        for (int i = 0; i < PUBLIC_KEY_BYTES; i++) {
            int hi = Character.digit(h.charAt(2 * i), 16);
            int lo = Character.digit(h.charAt(2 * i + 1), 16);
            if (hi < 0 || lo < 0) {
                throw new IllegalArgumentException(
                        "public key: '" + h.substring(2 * i, 2 * i + 2) + "' is not hex");
            }
            out[i] = (byte) (hi << 4 | lo);
        }
        return out;
    }

    /** {@link #install(byte[], int)} with no flags. */
    public PackageInfo install(byte[] pkg) {
        return install(pkg, 0);
    }

    /**
     * Verifies the package completely, then installs it as the current version of its id; the
     * current version becomes the previous one (kept), the one before is deleted. Installing the
     * package that is already current does nothing. The array is not kept.
     *
     * @param flags {@link #ALLOW_DOWNGRADE}, {@link #SKIP_SELFTEST} or 0
     * @throws StoreException on any refusal; the store is then unchanged
     */
    public synchronized PackageInfo install(byte[] pkg, int flags) {
        Objects.requireNonNull(pkg, "pkg");
        return call(h -> nativeInstallBytes(h, pkg, flags));
    }

    /** {@link #install(InputStream, int)} with no flags. */
    public PackageInfo install(InputStream in) throws IOException {
        return install(in, 0);
    }

    /**
     * Reads a package from {@code in} (e.g. an HTTP response body) to its end and installs it as
     * {@link #install(byte[], int)} does. The package's header says how long it is: that many
     * bytes are read into one native buffer (outside the Java heap), so memory holds it once.
     * A header that announces more than {@link #MAX_PACKAGE_BYTES} is refused
     * ({@link DeliveryError#TOO_LARGE}) before the rest is read, a stream that goes on past
     * the announced length is refused ({@link DeliveryError#MALFORMED}), and one that ends early
     * is refused as truncated. Does not close {@code in}.
     *
     * @throws IOException from {@code in}
     * @throws StoreException on any refusal; the store is then unchanged
     */
    public PackageInfo install(InputStream in, int flags) throws IOException {
        Objects.requireNonNull(in, "in");
        byte[] header = new byte[HEADER_BYTES];
        int n = readFully(in, header, 0, HEADER_BYTES);
        if (n < HEADER_BYTES || !startsWithMagic(header)) {
            // Not a package (or a truncated header): the native reader says what is wrong.
            byte[] head = new byte[n];
            System.arraycopy(header, 0, head, 0, n);
            return install(head, flags);
        }
        long manifestBytes = le(header, 12, 4);
        long payloadBytes = le(header, 16, 8);
        long total = HEADER_BYTES + manifestBytes + SIGNATURE_BYTES + payloadBytes;
        if (payloadBytes < 0 || total < 0 || total > MAX_PACKAGE_BYTES) {
            throw new StoreException(Status.LIMIT_EXCEEDED, DeliveryError.TOO_LARGE,
                    "package stream: the header announces " + Long.toUnsignedString(total)
                            + " bytes (manifest " + manifestBytes + ", payload "
                            + Long.toUnsignedString(payloadBytes) + "); the limit is "
                            + MAX_PACKAGE_BYTES + " bytes");
        }
        ByteBuffer buf = ByteBuffer.allocateDirect((int) total);
        buf.put(header);
        byte[] chunk = new byte[64 << 10];
        while (buf.hasRemaining()) {
            int r = in.read(chunk, 0, Math.min(chunk.length, buf.remaining()));
            if (r < 0) {
                break; // truncated: installed as is, the native reader refuses it
            }
            buf.put(chunk, 0, r);
        }
        if (!buf.hasRemaining() && in.read() >= 0) {
            throw new StoreException(Status.INVALID_MODEL, DeliveryError.MALFORMED,
                    "package stream: more bytes follow the " + total
                            + " bytes the package's header announces");
        }
        synchronized (this) {
            return call(h -> nativeInstallBuffer(h, buf, buf.position(), flags));
        }
    }

    /** {@link #installFile(String, int)} with no flags. */
    public PackageInfo installFile(String path) {
        return installFile(path, 0);
    }

    /**
     * Installs the package file the app downloaded (read whole; at most
     * {@link #MAX_PACKAGE_BYTES}), as {@link #install(byte[], int)} does. The file is not kept.
     */
    public synchronized PackageInfo installFile(String path, int flags) {
        Objects.requireNonNull(path, "path");
        return call(h -> nativeInstallFile(h, path, flags));
    }

    /**
     * The current version of package {@code id}, re-read from the store with its signature
     * re-verified, or null when none is installed.
     */
    public synchronized PackageInfo current(String id) {
        Objects.requireNonNull(id, "id");
        return call(h -> nativeCurrent(h, id, false));
    }

    /** The kept previous version of {@code id}, or null when there is none. */
    public synchronized PackageInfo previous(String id) {
        Objects.requireNonNull(id, "id");
        return call(h -> nativeCurrent(h, id, true));
    }

    /**
     * Absolute path of file {@code name} (a path in the package) of the current version of
     * {@code id}; it stays valid while that version is current or previous.
     *
     * @throws StoreException {@link DeliveryError#NOT_INSTALLED} when there is no such file
     */
    public synchronized String filePath(String id, String name) {
        Objects.requireNonNull(id, "id");
        Objects.requireNonNull(name, "name");
        return call(h -> nativeFilePath(h, id, name));
    }

    /**
     * Makes the previous version of {@code id} current again (the current one is deleted).
     *
     * @throws StoreException {@link DeliveryError#NO_PREVIOUS} when none is kept
     */
    public synchronized void rollback(String id) {
        Objects.requireNonNull(id, "id");
        call(h -> {
            nativeRollback(h, id);
            return null;
        });
    }

    /**
     * Marks the current version of {@code id} bad (it can never be installed again) and rolls
     * back to the previous one, or to none: for an app whose own first-load check failed.
     * {@code reason} is kept ({@link #lastRollback}).
     */
    public synchronized void markBad(String id, String reason) {
        Objects.requireNonNull(id, "id");
        String why = reason == null ? "" : reason;
        call(h -> {
            nativeMarkBad(h, id, why);
            return null;
        });
    }

    /** Why {@code id} was last rolled back (self-test or markBad), or "" when it never was. */
    public synchronized String lastRollback(String id) {
        Objects.requireNonNull(id, "id");
        return call(h -> nativeLastRollback(h, id));
    }

    /**
     * Re-reads every file of the current version of {@code id} and checks its size and SHA-256
     * against the signed manifest.
     *
     * @throws StoreException {@link DeliveryError#STORE_CORRUPT} on any difference
     */
    public synchronized void check(String id) {
        Objects.requireNonNull(id, "id");
        call(h -> {
            nativeCheck(h, id);
            return null;
        });
    }

    /** One native call on the live handle. */
    @FunctionalInterface
    private interface NativeCall<T> {
        T run(long handle);
    }

    /**
     * Runs one native store call (the caller holds this store's monitor), refusing calls from
     * the store's own listener (the native store's lock is held then: the call would deadlock),
     * and afterwards throws what the listener threw during it (see {@link StoreListener}).
     */
    private <T> T call(NativeCall<T> c) {
        long h = handle();
        if (events != null && events.dispatching) {
            throw new IllegalStateException("Store: called from the store's own StoreListener, "
                    + "inside the store call that reported the event");
        }
        T result;
        try {
            result = c.run(h);
        } catch (RuntimeException | Error e) {
            Throwable listenerError = takeListenerError();
            if (listenerError != null && listenerError != e) {
                e.addSuppressed(listenerError);
            }
            throw e;
        } finally {
            Reference.reachabilityFence(this);
        }
        Throwable listenerError = takeListenerError();
        if (listenerError instanceof RuntimeException) {
            throw (RuntimeException) listenerError;
        }
        if (listenerError instanceof Error) {
            throw (Error) listenerError;
        }
        if (listenerError != null) { // a checked exception, thrown past the compiler
            throw new UndeclaredThrowableException(listenerError);
        }
        return result;
    }

    private Throwable takeListenerError() {
        if (events == null) {
            return null;
        }
        Throwable t = events.thrown;
        events.thrown = null;
        return t;
    }

    /**
     * Hands the native store's events ({@code ks_store_event_fn}) to the listener. The native
     * store holds a global reference to it, not to the Store, so that an unreachable Store can
     * still be cleaned. Its fields are used only by the thread that holds the Store's monitor.
     */
    private static final class Events {
        private final StoreListener listener;
        /** True while the listener runs. */
        boolean dispatching;
        /** What the listener threw during the current store call (null: nothing). */
        Throwable thrown;

        Events(StoreListener listener) {
            this.listener = listener;
        }

        /** Called by the native store inside a store call; never throws. */
        @SuppressWarnings("unused")
        void dispatch(int code, PackageInfo info, String message) {
            StoreEvent event = StoreEvent.fromCode(code);
            if (event == null) {
                return; // an event of a newer native library
            }
            dispatching = true;
            try {
                listener.onEvent(event, info, message);
            } catch (Throwable t) {
                // Never into native code: kept and thrown by the store call when it returns.
                if (thrown == null) {
                    thrown = t;
                } else if (thrown != t) {
                    thrown.addSuppressed(t);
                }
            } finally {
                dispatching = false;
            }
        }
    }

    private static boolean startsWithMagic(byte[] header) {
        for (int i = 0; i < MAGIC.length; i++) {
            if (header[i] != MAGIC[i]) {
                return false;
            }
        }
        return true;
    }

    private static long le(byte[] b, int offset, int size) {
        long v = 0;
        for (int i = size - 1; i >= 0; i--) {
            v = v << 8 | (b[offset + i] & 0xFF);
        }
        return v;
    }

    private static int readFully(InputStream in, byte[] b, int off, int len) throws IOException {
        int n = 0;
        while (n < len) {
            int r = in.read(b, off + n, len - n);
            if (r < 0) {
                break;
            }
            n += r;
        }
        return n;
    }

    private static native long nativeMaxPackageBytes();

    private static native long nativeOpen(String dir, byte[] trustedKeys, KeyProvider keys,
            Events events);

    static native void nativeDestroy(long handle);

    private static native PackageInfo nativeInstallBytes(long handle, byte[] pkg, int flags);

    private static native PackageInfo nativeInstallBuffer(long handle, ByteBuffer pkg, int size,
            int flags);

    private static native PackageInfo nativeInstallFile(long handle, String path, int flags);

    private static native PackageInfo nativeCurrent(long handle, String id, boolean previous);

    private static native String nativeFilePath(long handle, String id, String name);

    private static native void nativeRollback(long handle, String id);

    private static native void nativeMarkBad(long handle, String id, String reason);

    private static native String nativeLastRollback(long handle, String id);

    private static native void nativeCheck(long handle, String id);
}
