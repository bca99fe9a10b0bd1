package ai.kestrel;

/**
 * How the input image is rotated relative to upright: the task rotates it clockwise by this angle
 * before running (e.g. the camera sensor orientation on Android). Results are in upright pixels.
 */
public enum Rotation {
    DEG_0(0),
    DEG_90(1),
    DEG_180(2),
    DEG_270(3);

    private final int code;

    Rotation(int code) {
        this.code = code;
    }

    int code() {
        return code;
    }

    /** The rotation for a clockwise angle in degrees (0, 90, 180 or 270, or an equivalent). */
    public static Rotation fromDegrees(int degrees) {
        int d = ((degrees % 360) + 360) % 360;
        switch (d) {
            case 0:
                return DEG_0;
            case 90:
                return DEG_90;
            case 180:
                return DEG_180;
            case 270:
                return DEG_270;
            default:
                throw new IllegalArgumentException(
                        "rotation must be a multiple of 90, got " + degrees);
        }
    }
}
