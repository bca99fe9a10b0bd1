package ai.kestrel;

import java.io.File;

/**
 * Library-wide entry points: native library loading, version and the default models directory.
 *
 * <p>The native library {@code libkestrel_jni} is found, in order, in the directory named by the
 * system property {@code kestrel.native.dir}, then by the environment variable
 * {@code KESTREL_NATIVE_DIR}, then through {@link System#loadLibrary} (java.library.path; on
 * Android the APK's lib/ABI directory). Loading happens once, on first use of any class.
 */
public final class Kestrel {
    /** Name passed to {@link System#loadLibrary}. */
    public static final String LIBRARY_NAME = "kestrel_jni";

    private static volatile boolean loaded;

    private Kestrel() {}

    /** Loads the native library if it is not loaded yet. Thread-safe and idempotent. */
    public static void load() {
        if (loaded) {
            return;
        }
        synchronized (Kestrel.class) {
            if (loaded) {
                return;
            }
            String dir = System.getProperty("kestrel.native.dir");
            if (dir == null || dir.isEmpty()) {
                dir = System.getenv("KESTREL_NATIVE_DIR");
            }
            if (dir != null && !dir.isEmpty()) {
                File lib = new File(dir, System.mapLibraryName(LIBRARY_NAME));
                System.load(lib.getAbsolutePath());
            } else {
                System.loadLibrary(LIBRARY_NAME);
            }
            loaded = true;
        }
    }

    /** Version string of the linked native library, e.g. "0.1.0". */
    public static String version() {
        load();
        return nativeVersion();
    }

    /**
     * Sets the directory where tasks look for their default bundles (.ksb). The environment
     * variable {@code KESTREL_MODELS_DIR} takes precedence when set. {@code null} resets to the
     * build-time default. Call before creating tasks.
     */
    public static void setModelsDir(String dir) {
        load();
        nativeSetModelsDir(dir);
    }

    /** The directory tasks currently read default bundles from. */
    public static String modelsDir() {
        load();
        return nativeModelsDir();
    }

    private static native String nativeVersion();

    private static native void nativeSetModelsDir(String dir);

    private static native String nativeModelsDir();
}
