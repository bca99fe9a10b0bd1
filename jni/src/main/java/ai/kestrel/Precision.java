package ai.kestrel;

/**
 * {@code ks_precision}: how the int8 layers of a quantized model (from {@code ks-quant}) run.
 * Float models run in fp32 whatever is chosen.
 */
public enum Precision {
    /** As stored in the file: int8 layers run int8 (the default). */
    STORED(0),
    /** Every int8 layer that has a float form runs in fp32 with its int8 weights. */
    F32(1),
    /**
     * Per layer, whichever of int8 and fp32 is faster on this device: the session times the
     * model both ways when it is created (tens of milliseconds for a phone-sized model).
     */
    FASTEST(2);

    private final int code;

    Precision(int code) {
        this.code = code;
    }

    int code() {
        return code;
    }
}
