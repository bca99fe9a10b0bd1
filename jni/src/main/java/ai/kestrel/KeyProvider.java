package ai.kestrel;

/**
 * Gives the key of an encrypted model ({@code ks-protect}) when a task meets one
 * ({@code ks_task_key_fn}): set with {@link TaskOptions.Builder#keyProvider}.
 *
 * <p>Called during the task's constructor, on the thread that runs it, once per encrypted model.
 * The returned array stays the provider's: Kestrel copies its 32 bytes straight into a native
 * buffer that the task wipes before the constructor returns, and does not modify or keep the
 * array. A provider that fetches the key (e.g. unwraps it with the Android Keystore) should
 * return a fresh array and drop it; one that caches a key keeps it alive for as long as it does.
 */
@FunctionalInterface
public interface KeyProvider {
    /**
     * The 32-byte key for {@code entryName}: the bundle entry (e.g. {@code "face_landmarks"})
     * or, for a {@code .ksm} given as the model path, that path. Return null when there is no
     * key for it: the constructor then throws {@link KestrelException}
     * ({@link Status#INVALID_ARGUMENT}, naming the model). An exception thrown here propagates
     * out of the constructor unchanged.
     */
    byte[] keyFor(String entryName);
}
