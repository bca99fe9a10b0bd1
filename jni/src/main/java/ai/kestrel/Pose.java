package ai.kestrel;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** A body pose ({@code ks_pose}): 33 landmarks in BlazePose order. Immutable. */
public final class Pose {
    public static final int NUM_LANDMARKS = 33;
    /** A few landmark indices ("left" is the person's left); see kestrel/pose.h for all 33. */
    public static final int NOSE = 0;
    public static final int LEFT_SHOULDER = 11;
    public static final int RIGHT_SHOULDER = 12;
    public static final int LEFT_WRIST = 15;
    public static final int RIGHT_WRIST = 16;
    public static final int LEFT_HIP = 23;
    public static final int RIGHT_HIP = 24;
    public static final int LEFT_ANKLE = 27;
    public static final int RIGHT_ANKLE = 28;

    private final int id;
    private final Box box;
    private final float score;
    private final List<PoseLandmark> landmarks;
    private final List<Point3> worldLandmarks;
    private final Mask mask;

    private Pose(int id, Box box, float score, List<PoseLandmark> landmarks,
            List<Point3> worldLandmarks, Mask mask) {
        this.id = id;
        this.box = box;
        this.score = score;
        this.landmarks = landmarks;
        this.worldLandmarks = worldLandmarks;
        this.mask = mask;
    }

    /** VIDEO: stable while tracked (from 1); IMAGE: 1 + index. */
    public int id() {
        return id;
    }

    /** Bounding box of the landmarks, clipped to the image. */
    public Box box() {
        return box;
    }

    /** Pose presence from the landmark model, 0..1. */
    public float score() {
        return score;
    }

    public List<PoseLandmark> landmarks() {
        return landmarks;
    }

    /** Meters, origin between the hips. */
    public List<Point3> worldLandmarks() {
        return worldLandmarks;
    }

    /** Person mask at the upright input size, or null unless requested in the options. */
    public Mask mask() {
        return mask;
    }

    static List<Pose> unpack(Object[] result) {
        Packed p = new Packed((float[]) result[0]);
        float[][] masks = (float[][]) result[1];
        int count = p.i();
        int maskWidth = p.i();
        int maskHeight = p.i();
        List<Pose> out = new ArrayList<>(count);
        for (int n = 0; n < count; n++) {
            int id = p.i();
            Box box = p.box();
            float score = p.f();
            List<PoseLandmark> lms = new ArrayList<>(NUM_LANDMARKS);
            for (int k = 0; k < NUM_LANDMARKS; k++) {
                lms.add(new PoseLandmark(p.f(), p.f(), p.f(), p.f(), p.f()));
            }
            List<Point3> world = p.points3(NUM_LANDMARKS);
            Mask mask = masks != null && masks[n] != null
                    ? new Mask(maskWidth, maskHeight, masks[n], null, -1)
                    : null;
            out.add(new Pose(id, box, score, Collections.unmodifiableList(lms), world, mask));
        }
        return Packed.freeze(out);
    }

    @Override
    public String toString() {
        return "Pose[id=" + id + ", " + box + ", score=" + score + "]";
    }
}
