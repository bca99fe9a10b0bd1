package ai.kestrel;

import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * An AR effect package ({@code .kfx}, {@code ks_effect} of {@code kestrel/effect.h}): validated
 * once at open, immutable after. Play it with an {@link EffectRenderer}.
 *
 * <p>The package description (id, name, layers, parameters, states) is read once at open, so the
 * getters need no native call and keep working after {@link #close()}. An effect may be closed
 * while renderers made from it are open: the native effect is freed when the last of them closes.
 *
 * <p>Without the AR renderer in the native build, {@link #open} and {@link #fromBytes} throw
 * {@link KestrelException} with {@link Status#UNSUPPORTED}.
 */
public final class Effect extends NativeObject {
    /** Capabilities an effect may require from the host ({@code ks_effect_capability}). */
    public enum Capability {
        FACE_LANDMARKS,
        SEGMENTATION,
        HAND_LANDMARKS,
        POSE_LANDMARKS,
        FACE_EXPRESSIONS
    }

    /** Layer kinds ({@code ks_effect_layer_kind}), in native order. */
    public enum LayerKind {
        STICKER,
        FACE_TEXTURE,
        MAKEUP,
        BEAUTY,
        LUT,
        BACKGROUND,
        MESH3D,
        /** A kind this binding does not know (a newer native library). */
        UNKNOWN;

        static LayerKind fromCode(int code) {
            LayerKind[] all = values();
            return code >= 0 && code < all.length - 1 ? all[code] : UNKNOWN;
        }

        /** Frame-wide layers have one instance per frame, not one per face. */
        boolean isFrameWide() {
            return this == LUT || this == BACKGROUND;
        }
    }

    /** Run-time parameter types ({@code ks_effect_param_type}), in native order. */
    public enum ParamType {
        COLOR,
        FLOAT,
        ENUM,
        IMAGE,
        UNKNOWN;

        static ParamType fromCode(int code) {
            ParamType[] all = values();
            return code >= 0 && code < all.length - 1 ? all[code] : UNKNOWN;
        }
    }

    /** Native reference count shared with the renderers; the effect itself holds one. */
    static final class Shared {
        private long handle;
        private int refs = 1;

        Shared(long handle) {
            this.handle = handle;
        }

        synchronized long retain() {
            if (handle == 0) {
                throw new IllegalStateException("Effect is closed");
            }
            refs++;
            return handle;
        }

        synchronized void release() {
            if (--refs == 0) {
                nativeDestroy(handle);
                handle = 0;
            }
        }
    }

    private final Shared shared;
    private final String id;
    private final String name;
    private final String author;
    private final String version;
    private final Set<Capability> requiredCapabilities;
    private final int maxFaces;
    private final List<String> layerNames;
    private final List<LayerKind> layerKinds;
    private final List<String> paramNames;
    private final List<ParamType> paramTypes;
    private final List<String> stateNames;

    private Effect(long handle, Shared shared, Object[] info) {
        super(handle, h -> shared.release(), null);
        this.shared = shared;
        id = (String) info[0];
        name = (String) info[1];
        author = (String) info[2];
        int[] nums = (int[]) info[3];
        version = nums[0] + "." + nums[1] + "." + nums[2];
        EnumSet<Capability> caps = EnumSet.noneOf(Capability.class);
        for (Capability c : Capability.values()) {
            if ((nums[3] & (1 << c.ordinal())) != 0) {
                caps.add(c);
            }
        }
        requiredCapabilities = Collections.unmodifiableSet(caps);
        maxFaces = nums[4];
        layerNames = List.of((String[]) info[4]);
        int[] kinds = (int[]) info[5];
        LayerKind[] lk = new LayerKind[kinds.length];
        for (int i = 0; i < kinds.length; i++) {
            lk[i] = LayerKind.fromCode(kinds[i]);
        }
        layerKinds = List.of(lk);
        paramNames = List.of((String[]) info[6]);
        int[] types = (int[]) info[7];
        ParamType[] pt = new ParamType[types.length];
        for (int i = 0; i < types.length; i++) {
            pt[i] = ParamType.fromCode(types[i]);
        }
        paramTypes = List.of(pt);
        stateNames = List.of((String[]) info[8]);
    }

    private static Effect wrap(long handle) {
        Object[] info;
        try {
            info = nativeInfo(handle);
        } catch (RuntimeException | Error e) {
            nativeDestroy(handle);
            throw e;
        }
        return new Effect(handle, new Shared(handle), info);
    }

    /**
     * Opens and validates a {@code .kfx} package. A file that is not a valid package is a
     * {@link KestrelException} ({@link Status#INVALID_MODEL}, {@link Status#IO_ERROR}, ...)
     * whose message starts with the path and names the entry and value at fault.
     */
    public static Effect open(String path) {
        Objects.requireNonNull(path, "path");
        Kestrel.load();
        return wrap(nativeOpenFile(path));
    }

    /** Opens a package from memory. The bytes are copied; the array may be reused after. */
    public static Effect fromBytes(byte[] data) {
        Objects.requireNonNull(data, "data");
        Kestrel.load();
        return wrap(nativeOpenBytes(data));
    }

    /** Reverse-DNS identifier, e.g. {@code "dev.kestrel.samples.cat_ears"}. */
    public String id() {
        return id;
    }

    public String name() {
        return name;
    }

    /** "" when the manifest has none. */
    public String author() {
        return author;
    }

    /** The manifest's format_version, "major.minor.patch". */
    public String formatVersion() {
        return version;
    }

    public Set<Capability> requiredCapabilities() {
        return requiredCapabilities;
    }

    /** Faces the effect decorates at most (1..8); extra faces are ignored by the renderer. */
    public int maxFaces() {
        return maxFaces;
    }

    /** Layer names in render (manifest) order; the index is the layer index. */
    public List<String> layerNames() {
        return layerNames;
    }

    public List<LayerKind> layerKinds() {
        return layerKinds;
    }

    /** Index of the layer called {@code layerName}, or -1. */
    public int layerIndex(String layerName) {
        return layerNames.indexOf(layerName);
    }

    /** Run-time parameter names (see {@link EffectRenderer#setParam}). */
    public List<String> paramNames() {
        return paramNames;
    }

    public List<ParamType> paramTypes() {
        return paramTypes;
    }

    /** State names (see {@link EffectRenderer#enterState}). */
    public List<String> stateNames() {
        return stateNames;
    }

    /** Takes a reference for a new renderer; released by the renderer's cleanup. */
    long retainForRenderer() {
        handle(); // throws if this Effect object is closed
        return shared.retain();
    }

    Shared shared() {
        return shared;
    }

    @Override
    public String toString() {
        return "Effect[" + id + ", \"" + name + "\", layers " + layerNames + ", params "
                + paramNames + ", states " + stateNames + "]";
    }

    static native long nativeOpenFile(String path);

    static native long nativeOpenBytes(byte[] data);

    static native void nativeDestroy(long handle);

    static native Object[] nativeInfo(long handle);
}
