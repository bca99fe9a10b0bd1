package ai.kestrel;

/** A 2D point in image pixels. Immutable. */
public final class Point2 {
    private final float x;
    private final float y;

    public Point2(float x, float y) {
        this.x = x;
        this.y = y;
    }

    public float x() {
        return x;
    }

    public float y() {
        return y;
    }

    @Override
    public String toString() {
        return String.format("(%.1f, %.1f)", x, y);
    }
}
