package ai.kestrel;

/** One body landmark ({@code ks_pose_landmark}). Immutable. */
public final class PoseLandmark {
    private final float x;
    private final float y;
    private final float z;
    private final float visibility;
    private final float presence;

    PoseLandmark(float x, float y, float z, float visibility, float presence) {
        this.x = x;
        this.y = y;
        this.z = z;
        this.visibility = visibility;
        this.presence = presence;
    }

    /** Upright image pixels. */
    public float x() {
        return x;
    }

    public float y() {
        return y;
    }

    /** Depth in pixels (scale of x), smaller is closer; hips near 0. */
    public float z() {
        return z;
    }

    /** 0..1: likely visible (not occluded). */
    public float visibility() {
        return visibility;
    }

    /** 0..1: likely inside the image. */
    public float presence() {
        return presence;
    }

    @Override
    public String toString() {
        return String.format("(%.1f, %.1f, %.1f; vis %.2f)", x, y, z, visibility);
    }
}
