package ai.kestrel;

import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Base of every class that owns a native handle. {@link #close()} frees it deterministically; a
 * {@link Cleaner} frees it if the object becomes unreachable without being closed. After close,
 * every method throws {@link IllegalStateException}.
 *
 * <p>Subclasses pass a {@link Destroyer} that must not capture the object itself (a static method
 * reference such as {@code FaceDetector::nativeDestroy}), or the cleaner could never run.
 */
abstract class NativeObject implements AutoCloseable {
    /** Frees a native handle. */
    interface Destroyer {
        void destroy(long handle);
    }

    private static final Cleaner CLEANER = Cleaner.create();

    /** Native objects freed so far (by close or by the Cleaner); for tests. */
    static final AtomicLong NUM_DESTROYED = new AtomicLong();

    /** The cleanup action: reachable from the Cleaner only, never from the owner's callers. */
    private static final class State implements Runnable {
        private volatile long handle;
        private final Destroyer destroyer;
        private final Runnable after;

        State(long handle, Destroyer destroyer, Runnable after) {
            this.handle = handle;
            this.destroyer = destroyer;
            this.after = after;
        }

        @Override
        public synchronized void run() {
            long h = handle;
            if (h == 0) {
                return;
            }
            handle = 0;
            destroyer.destroy(h);
            NUM_DESTROYED.incrementAndGet();
            if (after != null) {
                after.run();
            }
        }
    }

    private final State state;
    private final Cleaner.Cleanable cleanable;

    /**
     * Takes ownership of {@code handle} (nonzero). {@code after} (may be null) runs once after
     * the destroyer, e.g. to release a parent the handle depended on.
     */
    NativeObject(long handle, Destroyer destroyer, Runnable after) {
        if (handle == 0) {
            throw new IllegalArgumentException("null native handle");
        }
        state = new State(handle, destroyer, after);
        cleanable = CLEANER.register(this, state);
    }

    /** The live handle; throws IllegalStateException after close. */
    final long handle() {
        long h = state.handle;
        if (h == 0) {
            throw new IllegalStateException(getClass().getSimpleName() + " is closed");
        }
        return h;
    }

    /** True once {@link #close()} has run. */
    public final boolean isClosed() {
        return state.handle == 0;
    }

    /** Frees the native object. Idempotent. Waits for a call running on another thread. */
    @Override
    public synchronized void close() {
        cleanable.clean();
    }
}
