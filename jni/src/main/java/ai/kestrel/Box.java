package ai.kestrel;

/** An axis-aligned box in image pixels: top-left corner and size. Immutable. */
public final class Box {
    private final float x;
    private final float y;
    private final float width;
    private final float height;

    public Box(float x, float y, float width, float height) {
        this.x = x;
        this.y = y;
        this.width = width;
        this.height = height;
    }

    public float x() {
        return x;
    }

    public float y() {
        return y;
    }

    public float width() {
        return width;
    }

    public float height() {
        return height;
    }

    public float centerX() {
        return x + width / 2;
    }

    public float centerY() {
        return y + height / 2;
    }

    /** True if the point lies inside the box grown by {@code marginPx} on every side. */
    public boolean contains(float px, float py, float marginPx) {
        return px >= x - marginPx && px <= x + width + marginPx && py >= y - marginPx
                && py <= y + height + marginPx;
    }

    /** Intersection over union with {@code other}; 0 when either box is empty. */
    public float iou(Box other) {
        float ix = Math.max(0, Math.min(x + width, other.x + other.width) - Math.max(x, other.x));
        float iy = Math.max(0, Math.min(y + height, other.y + other.height) - Math.max(y, other.y));
        float inter = ix * iy;
        float union = width * height + other.width * other.height - inter;
        return union > 0 ? inter / union : 0;
    }

    @Override
    public String toString() {
        return String.format("Box[x=%.1f, y=%.1f, w=%.1f, h=%.1f]", x, y, width, height);
    }
}
