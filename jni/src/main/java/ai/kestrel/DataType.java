package ai.kestrel;

/** Tensor element types ({@code ks_dtype}). */
public enum DataType {
    INVALID(0, 0),
    F32(1, 4),
    F16(2, 2),
    I32(3, 4),
    I64(4, 8),
    U8(5, 1),
    I8(6, 1),
    BOOL(7, 1),
    I16(8, 2);

    private final int code;
    private final int sizeBytes;

    DataType(int code, int sizeBytes) {
        this.code = code;
        this.sizeBytes = sizeBytes;
    }

    /** Size of one element in bytes (0 for INVALID). */
    public int sizeBytes() {
        return sizeBytes;
    }

    static DataType fromCode(int code) {
        for (DataType t : values()) {
            if (t.code == code) {
                return t;
            }
        }
        return INVALID;
    }
}
