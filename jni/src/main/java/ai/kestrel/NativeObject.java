package ai.kestrel;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Base of every class that owns a native handle. {@link #close()} frees it deterministically; a
 * {@link Cleaner} frees it if the object becomes unreachable without being closed. After close,
 * every method throws {@link IllegalStateException}.
 *
 * <p>Calls normally hold the object's monitor (synchronized methods), which {@link #close()} takes
 * too. The few calls that the C API allows while another call runs on the object (a task's live
 * swap) go through {@link #callConcurrently} instead: they do not wait for the synchronized
 * methods, but close() waits for them.
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

    /** A native call made with the live handle (see {@link #callConcurrently}). */
    interface HandleCall {
        void call(long handle);
    }

    private final State state;
    private final Cleaner.Cleanable cleanable;
    /** Held by {@link #callConcurrently} and by {@link #close()} (inside the monitor). */
    private final Object closeGuard = new Object();
    /** The thread inside {@link #callConcurrently}, or null; guarded by closeGuard. */
    private Thread concurrentCaller;

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

    /**
     * Calls {@code call} with the live handle without taking this object's monitor, so it may run
     * while a synchronized method runs on another thread; {@link #close()} waits until it has
     * returned. Such calls exclude each other. Throws IllegalStateException after close, and
     * makes close() throw if {@code call} leads back to it on the same thread (e.g. from a key
     * provider), which would free the handle under the call.
     */
    final void callConcurrently(HandleCall call) {
        synchronized (closeGuard) {
            long h = handle();
            Thread outer = concurrentCaller; // non-null when nested on this thread
            concurrentCaller = Thread.currentThread();
            try {
                call.call(h);
            } finally {
                concurrentCaller = outer;
                Reference.reachabilityFence(this);
            }
        }
    }

    /**
     * Frees the native object. Idempotent. Waits for a call running on another thread.
     *
     * @throws IllegalStateException when called from inside a call on this object made on the
     *     same thread (a key provider of a live swap closing the task it is asked for)
     */
    @Override
    public synchronized void close() {
        synchronized (closeGuard) {
            if (concurrentCaller == Thread.currentThread()) {
                throw new IllegalStateException(getClass().getSimpleName()
                        + ".close() called from inside a call on it (a swap's key provider?)");
            }
            cleanable.clean();
        }
    }
}
