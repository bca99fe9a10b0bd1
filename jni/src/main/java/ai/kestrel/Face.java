package ai.kestrel;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** A detected face ({@code ks_face}). Immutable. */
public final class Face {
    /** Keypoint indices; "right" is the subject's right (on the image's left). */
    public static final int RIGHT_EYE = 0;
    public static final int LEFT_EYE = 1;
    public static final int NOSE_TIP = 2;
    public static final int MOUTH = 3;
    public static final int RIGHT_EAR = 4;
    public static final int LEFT_EAR = 5;
    public static final int NUM_KEYPOINTS = 6;

    private final Box box;
    private final float score;
    private final int id;
    private final List<Point2> keypoints;

    private Face(Box box, float score, int id, List<Point2> keypoints) {
        this.box = box;
        this.score = score;
        this.id = id;
        this.keypoints = keypoints;
    }

    /** Upright image pixels. */
    public Box box() {
        return box;
    }

    public float score() {
        return score;
    }

    /** VIDEO: tracking id (>= 1), stable while the face stays in view; IMAGE: -1. */
    public int id() {
        return id;
    }

    /** {@link #NUM_KEYPOINTS} points, indexed by {@link #RIGHT_EYE} etc. */
    public List<Point2> keypoints() {
        return keypoints;
    }

    public Point2 keypoint(int index) {
        return keypoints.get(index);
    }

    static List<Face> unpack(float[] data) {
        Packed p = new Packed(data);
        int count = p.i();
        List<Face> out = new ArrayList<>(count);
        for (int n = 0; n < count; n++) {
            Box box = p.box();
            float score = p.f();
            int id = p.i();
            List<Point2> kps = new ArrayList<>(NUM_KEYPOINTS);
            for (int k = 0; k < NUM_KEYPOINTS; k++) {
                kps.add(new Point2(p.f(), p.f()));
            }
            out.add(new Face(box, score, id, Collections.unmodifiableList(kps)));
        }
        return Packed.freeze(out);
    }

    @Override
    public String toString() {
        return "Face[" + box + ", score=" + score + ", id=" + id + "]";
    }
}
