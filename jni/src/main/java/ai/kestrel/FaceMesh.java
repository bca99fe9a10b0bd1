package ai.kestrel;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** A face mesh from the face landmarker ({@code ks_face_mesh}). Immutable. */
public final class FaceMesh {
    public static final int NUM_LANDMARKS = 468;
    public static final int NUM_LANDMARKS_WITH_IRIS = 478;

    private final Box box;
    private final float score;
    private final int id;
    private final List<Point3> landmarks;
    private final float[] landmarksXyz;
    private final float pitchDeg;
    private final float yawDeg;
    private final float rollDeg;
    private final float[] poseMatrix;
    private final float[] projectionMatrix;
    private final FaceExpressions expressions;

    private FaceMesh(Box box, float score, int id, float[] landmarksXyz, float pitchDeg,
            float yawDeg, float rollDeg, float[] poseMatrix, float[] projectionMatrix,
            FaceExpressions expressions) {
        this.box = box;
        this.score = score;
        this.id = id;
        this.landmarksXyz = landmarksXyz;
        List<Point3> points = new ArrayList<>(landmarksXyz.length / 3);
        for (int i = 0; i + 2 < landmarksXyz.length; i += 3) {
            points.add(new Point3(landmarksXyz[i], landmarksXyz[i + 1], landmarksXyz[i + 2]));
        }
        this.landmarks = Collections.unmodifiableList(points);
        this.pitchDeg = pitchDeg;
        this.yawDeg = yawDeg;
        this.rollDeg = rollDeg;
        this.poseMatrix = poseMatrix;
        this.projectionMatrix = projectionMatrix;
        this.expressions = expressions;
    }

    /** Bounding box of the landmarks, upright image pixels. */
    public Box box() {
        return box;
    }

    /** Face presence from the landmark model, 0..1. */
    public float score() {
        return score;
    }

    /** VIDEO: stable while tracked (>= 1); IMAGE: -1. */
    public int id() {
        return id;
    }

    /** 468 (or 478 with irises) points in pixels; z at the scale of x, smaller is closer. */
    public List<Point3> landmarks() {
        return landmarks;
    }

    /** The landmarks as a copy of packed (x, y, z) triples, for drawing or GPU upload. */
    public float[] landmarksXyz() {
        return landmarksXyz.clone();
    }

    /** The packed landmarks without a copy, for native calls (e.g. a future AR renderer). */
    float[] landmarksXyzShared() {
        return landmarksXyz;
    }

    /** Head pitch in degrees; positive looks down. */
    public float pitchDeg() {
        return pitchDeg;
    }

    /** Head yaw in degrees; positive turns towards the image's right. */
    public float yawDeg() {
        return yawDeg;
    }

    /** Head roll in degrees; positive tilts counter-clockwise in the image. */
    public float rollDeg() {
        return rollDeg;
    }

    /**
     * Canonical face model (cm) to camera space, ROW-major 4x4 (translation in [3], [7], [11]);
     * camera at the origin looking down -z. A copy.
     */
    public float[] poseMatrix() {
        return poseMatrix.clone();
    }

    /** Row-major OpenGL perspective matrix of that camera. A copy. */
    public float[] projectionMatrix() {
        return projectionMatrix.clone();
    }

    public FaceExpressions expressions() {
        return expressions;
    }

    static List<FaceMesh> unpack(float[] data) {
        Packed p = new Packed(data);
        int count = p.i();
        List<FaceMesh> out = new ArrayList<>(count);
        for (int n = 0; n < count; n++) {
            Box box = p.box();
            float score = p.f();
            int id = p.i();
            int numLandmarks = p.i();
            float pitch = p.f();
            float yaw = p.f();
            float roll = p.f();
            float[] pose = p.floats(16);
            float[] proj = p.floats(16);
            FaceExpressions ex = new FaceExpressions(p.f(), p.f(), p.f(), p.f(), p.f());
            float[] xyz = p.floats(3 * numLandmarks);
            out.add(new FaceMesh(box, score, id, xyz, pitch, yaw, roll, pose, proj, ex));
        }
        return Packed.freeze(out);
    }

    @Override
    public String toString() {
        return String.format("FaceMesh[%s, %d landmarks, pitch=%.1f yaw=%.1f roll=%.1f]", box,
                landmarks.size(), pitchDeg, yawDeg, rollDeg);
    }
}
