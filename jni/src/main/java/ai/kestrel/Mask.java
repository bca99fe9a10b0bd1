package ai.kestrel;

/**
 * A per-pixel person probability at the upright input size ({@code ks_segmentation}, or a pose's
 * mask), row-major. Immutable: accessors return copies.
 */
public final class Mask {
    private final int width;
    private final int height;
    private final float[] probabilities;
    private final byte[] bytes;
    private final float personFraction;

    /** {@code personFraction} < 0: computed here from the probabilities. */
    Mask(int width, int height, float[] probabilities, byte[] bytes, float personFraction) {
        this.width = width;
        this.height = height;
        this.probabilities = probabilities;
        this.bytes = bytes;
        if (personFraction < 0) {
            int n = 0;
            for (float v : probabilities) {
                if (v >= 0.5f) {
                    n++;
                }
            }
            personFraction = probabilities.length == 0 ? 0 : (float) n / probabilities.length;
        }
        this.personFraction = personFraction;
    }

    public int width() {
        return width;
    }

    public int height() {
        return height;
    }

    /** Person probability 0..1 at pixel (x, y). */
    public float get(int x, int y) {
        if (x < 0 || y < 0 || x >= width || y >= height) {
            throw new IndexOutOfBoundsException("(" + x + ", " + y + ") outside " + width + "x"
                    + height);
        }
        return probabilities[y * width + x];
    }

    /** Fraction of pixels with probability >= 0.5. */
    public float personFraction() {
        return personFraction;
    }

    /** A copy of the probabilities, {@code width * height}, row-major. */
    public float[] toFloatArray() {
        return probabilities.clone();
    }

    /** round(255 * probability) per pixel, row-major (a copy). */
    public byte[] toByteArray() {
        if (bytes != null) {
            return bytes.clone();
        }
        byte[] out = new byte[probabilities.length];
        for (int i = 0; i < out.length; i++) {
            float v = Math.min(1f, Math.max(0f, probabilities[i]));
            out[i] = (byte) Math.round(255f * v);
        }
        return out;
    }

    static Mask unpack(Object[] result) {
        float[] header = (float[]) result[0];
        return new Mask((int) header[0], (int) header[1], (float[]) result[1], (byte[]) result[2],
                header[2]);
    }

    @Override
    public String toString() {
        return String.format("Mask[%dx%d, person %.3f]", width, height, personFraction);
    }
}
