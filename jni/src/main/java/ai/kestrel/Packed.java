package ai.kestrel;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Reads the flat float arrays that native code returns results in (one JNI array per call instead
 * of thousands of small objects). Layouts are documented in jni/src/kestrel_jni_tasks.c next to
 * the code that writes them; integers (ids, counts, class ids) are stored as exact floats.
 */
final class Packed {
    private final float[] data;
    private int pos;

    Packed(float[] data) {
        this.data = data;
    }

    float f() {
        return data[pos++];
    }

    int i() {
        return (int) data[pos++];
    }

    Box box() {
        return new Box(f(), f(), f(), f());
    }

    float[] floats(int n) {
        float[] out = new float[n];
        System.arraycopy(data, pos, out, 0, n);
        pos += n;
        return out;
    }

    List<Point3> points3(int n) {
        List<Point3> out = new ArrayList<>(n);
        for (int k = 0; k < n; k++) {
            out.add(new Point3(f(), f(), f()));
        }
        return Collections.unmodifiableList(out);
    }

    static <T> List<T> freeze(List<T> list) {
        return Collections.unmodifiableList(list);
    }
}
