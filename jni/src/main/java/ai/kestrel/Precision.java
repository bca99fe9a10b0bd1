package ai.kestrel;

/**
 * {@code ks_precision}: how the int8 layers of a quantized model (from {@code ks-quant}) run, and
 * the GPU's number format. Float models run in fp32 whatever is chosen, but for the fp16 modes on
 * a GPU backend.
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
    FASTEST(2),
    /**
     * Float activations stored in fp16 on a GPU backend that can (Vulkan: 16-bit storage),
     * arithmetic in fp32; else, and on the CPU for now, as {@link #STORED}.
     */
    FP16_STORAGE(3),
    /**
     * As {@link #FP16_STORAGE}, with fp16 arithmetic where the GPU has it (sums in fp32); else as
     * {@link #FP16_STORAGE}. About 1e-3 relative error against fp32.
     */
    FP16(4);

    private final int code;

    Precision(int code) {
        this.code = code;
    }

    int code() {
        return code;
    }
}
