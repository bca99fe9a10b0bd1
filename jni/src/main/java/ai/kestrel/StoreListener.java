package ai.kestrel;

/**
 * Told what the {@link Store} did ({@code ks_store_desc.on_event}): set with
 * {@link Store#open(String, KeyProvider, StoreListener, byte[]...)}.
 *
 * <p>Called on the thread of the store call that caused the event ({@link Store#install},
 * {@link Store#installFile}, {@link Store#markBad}), inside that call, after the store has
 * committed the change and while it holds the store's lock: the listener must not call the same
 * store (such a call throws {@link IllegalStateException}), and should return quickly (post to
 * another thread for slow work).
 *
 * <p>An exception thrown here does not unwind through the native store: the binding catches it,
 * lets the store finish, and throws it from the store call afterwards. The store's change stands
 * (the event reports something already committed: {@link Store#current} shows it), so a
 * successful install then throws the listener's exception instead of returning its
 * {@link PackageInfo}; a call that failed too (a self-test failure) throws its
 * {@link StoreException} with the listener's exception as suppressed
 * ({@link Throwable#getSuppressed()}).
 */
@FunctionalInterface
public interface StoreListener {
    /**
     * @param event what happened
     * @param info the signed manifest of the version concerned (the one installed, or the one
     *     marked bad)
     * @param message why: {@code "installed"}, the self-test's failure ({@code "face 3.0.0:
     *     self-test failed: ..."}) or the {@link Store#markBad} reason with the package and
     *     version in front
     */
    void onEvent(StoreEvent event, PackageInfo info, String message);
}
