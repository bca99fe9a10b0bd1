package ai.kestrel;

/**
 * What a {@link StoreListener} is told ({@code ks_store_event}); values match
 * {@code kestrel/delivery.h}.
 */
public enum StoreEvent {
    /** A version became current: an install committed it. */
    INSTALLED(0),
    /**
     * A version was marked bad: its self-test failed during an install (the previous version
     * stays current) or the app called {@link Store#markBad} (the previous version is current
     * again). The message says why.
     */
    ROLLED_BACK(1);

    private final int code;

    StoreEvent(int code) {
        this.code = code;
    }

    /** The native {@code ks_store_event} value. */
    public int code() {
        return code;
    }

    /** Maps a native code to its constant; null for a code this binding does not know. */
    static StoreEvent fromCode(int code) {
        for (StoreEvent e : values()) {
            if (e.code == code) {
                return e;
            }
        }
        return null;
    }
}
