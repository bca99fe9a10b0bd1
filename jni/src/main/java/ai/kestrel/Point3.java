package ai.kestrel;

/** A 3D point: image pixels (z at the scale of x) or meters for world landmarks. Immutable. */
public final class Point3 {
    private final float x;
    private final float y;
    private final float z;

    public Point3(float x, float y, float z) {
        this.x = x;
        this.y = y;
        this.z = z;
    }

    public float x() {
        return x;
    }

    public float y() {
        return y;
    }

    public float z() {
        return z;
    }

    @Override
    public String toString() {
        return String.format("(%.1f, %.1f, %.1f)", x, y, z);
    }
}
