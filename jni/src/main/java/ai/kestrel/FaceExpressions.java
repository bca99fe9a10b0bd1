package ai.kestrel;

/** Facial expression scores, each in [0, 1] and 0 at a neutral face. Immutable. */
public final class FaceExpressions {
    private final float mouthOpen;
    private final float leftEyeBlink;
    private final float rightEyeBlink;
    private final float browRaise;
    private final float smile;

    FaceExpressions(float mouthOpen, float leftEyeBlink, float rightEyeBlink, float browRaise,
            float smile) {
        this.mouthOpen = mouthOpen;
        this.leftEyeBlink = leftEyeBlink;
        this.rightEyeBlink = rightEyeBlink;
        this.browRaise = browRaise;
        this.smile = smile;
    }

    public float mouthOpen() {
        return mouthOpen;
    }

    /** The subject's left eye. */
    public float leftEyeBlink() {
        return leftEyeBlink;
    }

    public float rightEyeBlink() {
        return rightEyeBlink;
    }

    /** Mean of both brows. */
    public float browRaise() {
        return browRaise;
    }

    public float smile() {
        return smile;
    }

    @Override
    public String toString() {
        return String.format("FaceExpressions[mouthOpen=%.2f, blink L=%.2f R=%.2f, brow=%.2f, "
                + "smile=%.2f]", mouthOpen, leftEyeBlink, rightEyeBlink, browRaise, smile);
    }
}
