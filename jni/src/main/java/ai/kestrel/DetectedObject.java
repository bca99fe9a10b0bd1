package ai.kestrel;

import java.util.ArrayList;
import java.util.List;

/** An object found by the {@link ObjectDetector} ({@code ks_detected_object}). Immutable. */
public final class DetectedObject {
    private final Box box;
    private final int classId;
    private final String label;
    private final float score;
    private final int trackId;

    private DetectedObject(Box box, int classId, String label, float score, int trackId) {
        this.box = box;
        this.classId = classId;
        this.label = label;
        this.score = score;
        this.trackId = trackId;
    }

    public Box box() {
        return box;
    }

    /** Index into the bundle's labels. */
    public int classId() {
        return classId;
    }

    /** Class name, "" without labels. */
    public String label() {
        return label;
    }

    public float score() {
        return score;
    }

    /** VIDEO: stable id >= 1 for the same object across frames; IMAGE: -1. */
    public int trackId() {
        return trackId;
    }

    static List<DetectedObject> unpack(Object[] result) {
        Packed p = new Packed((float[]) result[0]);
        String[] labels = (String[]) result[1];
        int count = p.i();
        List<DetectedObject> out = new ArrayList<>(count);
        for (int n = 0; n < count; n++) {
            Box box = p.box();
            int classId = p.i();
            float score = p.f();
            int trackId = p.i();
            out.add(new DetectedObject(box, classId, labels[n], score, trackId));
        }
        return Packed.freeze(out);
    }

    @Override
    public String toString() {
        return "DetectedObject[" + label + " " + score + " " + box + "]";
    }
}
