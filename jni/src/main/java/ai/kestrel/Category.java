package ai.kestrel;

import java.util.ArrayList;
import java.util.List;

/** A class and its probability from the {@link ImageClassifier}. Immutable. */
public final class Category {
    private final int classId;
    private final String label;
    private final float score;

    private Category(int classId, String label, float score) {
        this.classId = classId;
        this.label = label;
        this.score = score;
    }

    /** Model output index. */
    public int classId() {
        return classId;
    }

    /** Class name, "" without labels. */
    public String label() {
        return label;
    }

    /** Probability 0..1. */
    public float score() {
        return score;
    }

    static List<Category> unpack(Object[] result) {
        Packed p = new Packed((float[]) result[0]);
        String[] labels = (String[]) result[1];
        int count = p.i();
        List<Category> out = new ArrayList<>(count);
        for (int n = 0; n < count; n++) {
            int classId = p.i();
            float score = p.f();
            out.add(new Category(classId, labels[n], score));
        }
        return Packed.freeze(out);
    }

    @Override
    public String toString() {
        return "Category[" + classId + " " + label + " " + score + "]";
    }
}
