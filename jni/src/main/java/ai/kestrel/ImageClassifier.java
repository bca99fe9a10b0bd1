package ai.kestrel;

import java.lang.ref.Reference;
import java.util.List;
import java.util.Objects;

/**
 * Image classification ({@code ks_image_classifier}): the top-k classes. One call at a time,
 * except {@link #swapModel(String)}, which may run while another thread classifies.
 */
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

    /**
     * Live swap ({@code ks_image_classifier_swap_model}): see {@link FaceDetector#swapModel(String)}; from any
     * thread, also while another thread runs this task.
     */
    public void swapModel(String modelPath) {
        swapModel(modelPath, (byte[]) null);
    }

    /** {@link #swapModel(String)} for encrypted models (see {@link FaceDetector}). */
    public void swapModel(String modelPath, byte[] key) {
        LiveSwap.swap(this, ImageClassifier::nativeSwapModel, modelPath, key, null);
    }

    /** {@link #swapModel(String)} with keys from {@code keyProvider} (see {@link FaceDetector}). */
    public void swapModel(String modelPath, KeyProvider keyProvider) {
        LiveSwap.swap(this, ImageClassifier::nativeSwapModel, modelPath, null, keyProvider);
    }

    /** Live swaps taken so far ({@code ks_task_stats.model_generation}). */
    public synchronized long modelGeneration() {
        try {
            return nativeModelGeneration(handle());
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    private static native long nativeCreate(int[] ti, float[] tf, String modelPath, byte[] key,
            KeyProvider keyProvider);

    static native void nativeDestroy(long handle);

    private static native void nativeSwapModel(long handle, String modelPath, byte[] key,
            KeyProvider keyProvider);

    private static native long nativeModelGeneration(long handle);

    private static native Object[] nativeClassify(long handle, Image image, long timestampUs);
}
