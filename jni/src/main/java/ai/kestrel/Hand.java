package ai.kestrel;

import java.util.ArrayList;
import java.util.List;

/** A hand from the {@link HandLandmarker} ({@code ks_hand}): 21 landmarks. Immutable. */
public final class Hand {
    public static final int NUM_LANDMARKS = 21;
    public static final int WRIST = 0;
    public static final int THUMB_TIP = 4;
    public static final int INDEX_TIP = 8;
    public static final int MIDDLE_TIP = 12;
    public static final int RING_TIP = 16;
    public static final int PINKY_TIP = 20;

    private final int id;
    private final Box box;
    private final float score;
    private final Handedness handedness;
    private final float handednessScore;
    private final List<Point3> landmarks;
    private final List<Point3> worldLandmarks;

    private Hand(int id, Box box, float score, Handedness handedness, float handednessScore,
            List<Point3> landmarks, List<Point3> worldLandmarks) {
        this.id = id;
        this.box = box;
        this.score = score;
        this.handedness = handedness;
        this.handednessScore = handednessScore;
        this.landmarks = landmarks;
        this.worldLandmarks = worldLandmarks;
    }

    /** VIDEO: stable while tracked (from 1); IMAGE: 1 + index. */
    public int id() {
        return id;
    }

    public Box box() {
        return box;
    }

    /** Hand presence, 0..1. */
    public float score() {
        return score;
    }

    /** The person's real hand, whatever the mirror option. */
    public Handedness handedness() {
        return handedness;
    }

    public float handednessScore() {
        return handednessScore;
    }

    /** Upright image pixels; z relative to the wrist at the scale of x. */
    public List<Point3> landmarks() {
        return landmarks;
    }

    /** Meters, origin near the hand centre. */
    public List<Point3> worldLandmarks() {
        return worldLandmarks;
    }

    static List<Hand> unpack(float[] data) {
        Packed p = new Packed(data);
        int count = p.i();
        List<Hand> out = new ArrayList<>(count);
        for (int n = 0; n < count; n++) {
            int id = p.i();
            Box box = p.box();
            float score = p.f();
            Handedness h = p.i() == 0 ? Handedness.LEFT : Handedness.RIGHT;
            float hs = p.f();
            List<Point3> lms = p.points3(NUM_LANDMARKS);
            List<Point3> world = p.points3(NUM_LANDMARKS);
            out.add(new Hand(id, box, score, h, hs, lms, world));
        }
        return Packed.freeze(out);
    }

    @Override
    public String toString() {
        return "Hand[id=" + id + ", " + handedness + ", " + box + "]";
    }
}
