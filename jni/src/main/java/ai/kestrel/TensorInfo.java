package ai.kestrel;

import java.util.Arrays;

/** Name, type, shape and quantization of a model or session tensor. Immutable. */
public final class TensorInfo {
    private final String name;
    private final DataType dataType;
    private final long[] shape;
    private final float scale;
    private final int zeroPoint;

    /** Called from native code. */
    TensorInfo(String name, int dtype, long[] shape, float scale, int zeroPoint) {
        this.name = name == null ? "" : name;
        this.dataType = DataType.fromCode(dtype);
        this.shape = shape.clone();
        this.scale = scale;
        this.zeroPoint = zeroPoint;
    }

    public String name() {
        return name;
    }

    public DataType dataType() {
        return dataType;
    }

    /** Dimensions; -1 marks a dimension that is only known after reshape. */
    public long[] shape() {
        return shape.clone();
    }

    /** Quantization scale (real = scale * (q - zeroPoint)); 0 when not quantized. */
    public float scale() {
        return scale;
    }

    public int zeroPoint() {
        return zeroPoint;
    }

    /** Number of elements, or -1 if a dimension is dynamic. */
    public long numElements() {
        long n = 1;
        for (long d : shape) {
            if (d < 0) {
                return -1;
            }
            n *= d;
        }
        return n;
    }

    @Override
    public String toString() {
        return name + " " + dataType + Arrays.toString(shape);
    }
}
