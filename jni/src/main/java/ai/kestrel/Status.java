package ai.kestrel;

/** Native status codes ({@code ks_status}); values match {@code kestrel/kestrel.h}. */
public enum Status {
    OK(0),
    INVALID_ARGUMENT(1),
    OUT_OF_MEMORY(2),
    IO_ERROR(3),
    INVALID_MODEL(4),
    UNSUPPORTED(5),
    VERSION_MISMATCH(6),
    CHECKSUM_MISMATCH(7),
    INVALID_SHAPE(8),
    INVALID_STATE(9),
    LIMIT_EXCEEDED(10),
    INTERNAL(11),
    TAMPERED(12),
    /** A code this binding does not know (a newer native library). */
    UNKNOWN(-1);

    private final int code;

    Status(int code) {
        this.code = code;
    }

    /** The native {@code ks_status} value. */
    public int code() {
        return code;
    }

    /** Maps a native code to its constant; unknown codes give {@link #UNKNOWN}. */
    public static Status fromCode(int code) {
        for (Status s : values()) {
            if (s.code == code) {
                return s;
            }
        }
        return UNKNOWN;
    }
}
