package ai.kestrel;

import java.lang.ref.Reference;
import java.util.List;
import java.util.Objects;

/** Image classification ({@code ks_image_classifier}): the top-k classes. One call at a time. */
public final class ImageClassifier extends NativeObject {
    /** Classifier options: the common task options (maxResults 0 = 5). */
    public static final class Options extends TaskOptions {
        private Options(Builder b) {
            super(b);
        }

        public static Builder builder() {
            return new Builder();
        }

        public static final class Builder extends TaskOptions.Builder<Builder> {
            @Override
            protected Builder self() {
                return this;
            }

            public Options build() {
                return new Options(this);
            }
        }
    }

    public ImageClassifier() {
        this(Options.builder().build());
    }

    public ImageClassifier(Options options) {
        super(create(options), ImageClassifier::nativeDestroy, null);
    }

    private static long create(Options o) {
        Objects.requireNonNull(o, "options");
        Kestrel.load();
        return nativeCreate(o.nativeInts(), o.nativeFloats(), o.modelPath(), o.nativeKey(),
                o.keyProvider());
    }

    /** Classes sorted by descending score. */
    public List<Category> classify(Image image) {
        return classify(image, 0);
    }

    public synchronized List<Category> classify(Image image, long timestampUs) {
        Objects.requireNonNull(image, "image");
        try {
            return Category.unpack(nativeClassify(handle(), image, timestampUs));
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    private static native long nativeCreate(int[] ti, float[] tf, String modelPath, byte[] key,
            KeyProvider keyProvider);

    static native void nativeDestroy(long handle);

    private static native Object[] nativeClassify(long handle, Image image, long timestampUs);
}
