package ai.kestrel;

/**
 * Why the {@link Store} refused a package or a call ({@code ks_delivery_error}, finer than
 * {@link Status}); values match {@code kestrel/delivery.h}. See docs/delivery.md, "Refusals".
 */
public enum DeliveryError {
    OK(0),
    /** Not a package, truncated, trailing bytes, or bad structure. */
    MALFORMED(1),
    /** A size limit ({@link Store#MAX_PACKAGE_BYTES}, the manifest's limits). */
    TOO_LARGE(2),
    /** Signed by a key that is not among the store's trusted keys. */
    UNKNOWN_KEY(3),
    /** The signature does not match (altered header or manifest). */
    BAD_SIGNATURE(4),
    /** The manifest's file sizes disagree with the payload. */
    SIZE_MISMATCH(5),
    /** A file's SHA-256 differs from the signed manifest's. */
    HASH_MISMATCH(6),
    /** A file path that could escape the store or collide. */
    UNSAFE_PATH(7),
    /** The package needs a newer Kestrel than this one. */
    RUNTIME_TOO_OLD(8),
    /** Older than the installed version ({@link Store#ALLOW_DOWNGRADE} accepts it). */
    DOWNGRADE(9),
    /** Signed before a package the store already accepted (an old signed file, replayed). */
    REPLAY(10),
    /** This exact package failed before (self-test or {@link Store#markBad}). */
    KNOWN_BAD(11),
    /** Its self-test failed: marked bad, the previous version stays current. */
    SELFTEST_FAILED(12),
    /** No such package id or file in the store. */
    NOT_INSTALLED(13),
    /** Roll-back without a kept previous version. */
    NO_PREVIOUS(14),
    /** A file system call failed; the store is unchanged. */
    IO(15),
    /** An installed version no longer matches its signed manifest ({@link Store#check}). */
    STORE_CORRUPT(16),
    /** The self-test's encrypted model has no (working) key. */
    NO_KEY(17),
    /** A code this binding does not know (a newer native library). */
    UNKNOWN(-1);

    private final int code;

    DeliveryError(int code) {
        this.code = code;
    }

    /** The native {@code ks_delivery_error} value. */
    public int code() {
        return code;
    }

    /** Maps a native code to its constant; unknown codes give {@link #UNKNOWN}. */
    public static DeliveryError fromCode(int code) {
        for (DeliveryError e : values()) {
            if (e.code == code) {
                return e;
            }
        }
        return UNKNOWN;
    }
}
