package ai.kestrel;

import java.util.Objects;

/**
 * The live swap shared by the task classes ({@code ks_<task>_swap_model}, {@code kestrel/vision.h}
 * "Live swap"; docs/java.md "Live swap"): argument checks, then the native call through
 * {@link NativeObject#callConcurrently}, so that it runs while a detect call of the same task is
 * in progress on another thread and close() waits for it.
 */
final class LiveSwap {
    private LiveSwap() {}

    /** A task's {@code nativeSwapModel}. */
    interface NativeSwap {
        void swap(long handle, String modelPath, byte[] key, KeyProvider keyProvider);
    }

    static void swap(NativeObject task, NativeSwap fn, String modelPath, byte[] key,
            KeyProvider keyProvider) {
        Objects.requireNonNull(modelPath, "modelPath");
        if (key != null && key.length != TaskOptions.KEY_BYTES) {
            throw new KestrelException(Status.INVALID_ARGUMENT,
                    task.getClass().getSimpleName() + ".swapModel: key of " + key.length
                            + " bytes; a ks-protect key is " + TaskOptions.KEY_BYTES + " bytes");
        }
        task.callConcurrently(h -> fn.swap(h, modelPath, key, keyProvider));
    }
}
