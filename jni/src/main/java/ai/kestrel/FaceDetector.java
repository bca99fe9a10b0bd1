package ai.kestrel;

import java.lang.ref.Reference;
import java.util.List;
import java.util.Objects;

/**
 * Face detection (BlazeFace, {@code ks_face_detector}).
 *
 * <pre>{@code
 * FaceDetector.Options opts = FaceDetector.Options.builder().minScore(0.6f).build();
 * try (FaceDetector det = new FaceDetector(opts)) {
 *     for (Face f : det.detect(Image.rgba(pixels, w, h))) System.out.println(f.box());
 * }
 * }</pre>
 *
 * One call at a time per detector (methods are synchronized); separate detectors run
 * concurrently.
 */
public final class FaceDetector extends NativeObject {
    /** Which BlazeFace model runs. */
    public enum Model {
        /** 128x128, faces within ~2 m (selfies). */
        SHORT_RANGE,
        /** 192x192, faces up to ~5 m (group photos). */
        FULL_RANGE
    }

    /** Detector options; zero/unset means the default. */
    public static final class Options extends TaskOptions {
        private final Model model;

        private Options(Builder b) {
            super(b);
            model = b.model;
        }

        public static Builder builder() {
            return new Builder();
        }

        public Model model() {
            return model;
        }

        public static final class Builder extends TaskOptions.Builder<Builder> {
            private Model model = Model.SHORT_RANGE;

            @Override
            protected Builder self() {
                return this;
            }

            public Builder model(Model model) {
                this.model = Objects.requireNonNull(model, "model");
                return this;
            }

            public Options build() {
                return new Options(this);
            }
        }
    }

    /** A detector with all defaults. */
    public FaceDetector() {
        this(Options.builder().build());
    }

    public FaceDetector(Options options) {
        super(create(options), FaceDetector::nativeDestroy, null);
    }

    private static long create(Options o) {
        Objects.requireNonNull(o, "options");
        Kestrel.load();
        return nativeCreate(o.nativeInts(), o.nativeFloats(), o.modelPath(), o.nativeKey(),
                o.keyProvider(), o.model().ordinal());
    }

    /** Detects faces in a photo (IMAGE mode). */
    public List<Face> detect(Image image) {
        return detect(image, 0);
    }

    /** Detects faces; in VIDEO mode {@code timestampUs} must strictly increase. */
    public synchronized List<Face> detect(Image image, long timestampUs) {
        Objects.requireNonNull(image, "image");
        try {
            return Face.unpack(nativeDetect(handle(), image, timestampUs));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    private static native long nativeCreate(int[] ti, float[] tf, String modelPath, byte[] key,
            KeyProvider keyProvider, int model);

    static native void nativeDestroy(long handle);

    private static native float[] nativeDetect(long handle, Image image, long timestampUs);
}
