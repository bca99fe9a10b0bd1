package ai.kestrel;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * Plays an {@link Effect} on camera frames ({@code ks_ar_renderer} of {@code kestrel/ar.h}),
 * driven by the face meshes of a {@link FaceLandmarker} and an optional person {@link Mask}.
 *
 * <p><b>GL context.</b> With {@link Backend#GLES3} (the default) the caller's OpenGL ES 3.0
 * context must be current on the calling thread for the constructor, every {@link #render} and
 * {@link #close()} (on Android: inside {@code GLSurfaceView.Renderer}'s callbacks). The renderer
 * never creates a context. Do not leave it to the Cleaner: it would free GL objects on the
 * Cleaner's thread, where no context is current. {@link Backend#NULL} makes no GL call at all
 * (layout, triggers and states only) and may be used from any thread.
 *
 * <p>Methods are synchronized: one call at a time per renderer. The renderer keeps its
 * {@link Effect}'s native package alive until it is closed (or {@link #swapEffect} replaces it).
 */
public final class EffectRenderer extends NativeObject {
    /** {@code ks_ar_backend}. */
    public enum Backend {
        /** The caller's current OpenGL ES 3.0 context. */
        GLES3,
        /** No GL: layout, triggers and states only (tests, servers). */
        NULL
    }

    private static final int FACE_FLOATS = 3 + 16 + 16 + 5;

    /**
     * The reference the renderer holds on its current effect's native package, released after
     * the native renderer is destroyed. A holder of its own (not the renderer) so that the
     * Cleaner's action never reaches the renderer, and so that a swap can change what it
     * releases.
     */
    private static final class EffectRef implements Runnable {
        private Effect.Shared shared; // guarded by this

        EffectRef(Effect.Shared shared) {
            this.shared = shared;
        }

        synchronized Effect.Shared exchange(Effect.Shared next) {
            Effect.Shared old = shared;
            shared = next;
            return old;
        }

        @Override
        public synchronized void run() {
            shared.release();
        }
    }

    private final EffectRef effectRef;
    private volatile Effect effect;

    public EffectRenderer(Effect effect) {
        this(effect, Options.DEFAULT);
    }

    public EffectRenderer(Effect effect, Options options) {
        this(effect, Objects.requireNonNull(effect, "effect").retainForRenderer(),
                Objects.requireNonNull(options, "options"));
    }

    private EffectRenderer(Effect effect, long effectHandle, Options options) {
        this(effect, effectHandle, options, new EffectRef(effect.shared()));
    }

    private EffectRenderer(Effect effect, long effectHandle, Options options, EffectRef ref) {
        super(createOrRelease(effect, effectHandle, options), EffectRenderer::nativeDestroy, ref);
        this.effectRef = ref;
        this.effect = effect;
    }

    private static long createOrRelease(Effect effect, long effectHandle, Options o) {
        try {
            return nativeCreate(effectHandle, o.backend.ordinal(), o.width, o.height);
        } catch (RuntimeException | Error e) {
            effect.shared().release();
            throw e;
        }
    }

    /** The effect this renderer plays (the last one {@link #swapEffect} installed). */
    public Effect effect() {
        return effect;
    }

    /**
     * Live swap ({@code ks_ar_renderer_swap_effect}; docs/java.md "Live swap"): replaces the
     * effect between two frames, e.g. with a newer version installed by a {@link Store} (open it
     * with {@link Effect#open} on any thread first). Same thread and GL context rules as
     * {@link #render}: with {@link Backend#GLES3}, on the rendering thread with the context
     * current. Every layer of {@code effect} is created as by the constructor (same backend and
     * frame size); the next frame draws it with its parameters at their defaults and its states
     * and animations from their start. On success the renderer holds {@code effect}'s native
     * package until it is closed or swapped again, and lets go of the old one (the old Effect
     * may be closed, as it could be before). On failure nothing changes: the renderer keeps
     * drawing the old effect.
     *
     * @throws KestrelException with the status and message of the constructor (e.g. a shader
     *     that does not compile on this device)
     * @throws IllegalStateException if this renderer or {@code effect} is closed
     */
    public synchronized void swapEffect(Effect effect) {
        Objects.requireNonNull(effect, "effect");
        long h = handle();
        long effectHandle = effect.retainForRenderer();
        try {
            nativeSwapEffect(h, effectHandle);
        } catch (RuntimeException | Error e) {
            effect.shared().release();
            throw e;
        } finally {
            Reference.reachabilityFence(this);
        }
        effectRef.exchange(effect.shared()).release();
        this.effect = effect;
    }

    /**
     * Sets a FLOAT parameter, used from the next frame on. An unknown name, another type or a
     * value outside the parameter's range is a {@link KestrelException} (INVALID_ARGUMENT)
     * naming the parameter.
     */
    public synchronized void setParam(String name, float value) {
        Objects.requireNonNull(name, "name");
        try {
            nativeSetFloat(handle(), name, value);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Sets a COLOR parameter: straight-alpha RGBA, each in [0, 1]. */
    public synchronized void setColor(String name, float[] rgba) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(rgba, "rgba");
        if (rgba.length != 4) {
            throw new IllegalArgumentException("rgba must hold 4 values, got " + rgba.length);
        }
        try {
            nativeSetColor(handle(), name, rgba);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Sets an ENUM parameter to one of its options. */
    public synchronized void setEnum(String name, String option) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(option, "option");
        try {
            nativeSetText(handle(), name, option, true);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Sets any non-image parameter from text, as a command line gives it: colours
     * {@code "#RRGGBB[AA]"} or {@code "r,g,b[,a]"}, floats {@code "0.5"}, enums the option.
     */
    public synchronized void setParam(String name, String value) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(value, "value");
        try {
            nativeSetText(handle(), name, value, false);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Enters a state (see {@link Effect#stateNames()}) for every tracked face and the frame-wide
     * layers, as if a trigger had fired. An unknown name is INVALID_ARGUMENT.
     */
    public synchronized void enterState(String state) {
        Objects.requireNonNull(state, "state");
        try {
            nativeEnterState(handle(), state);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Forgets all faces and states; the next frame's timestamp becomes time 0. */
    public synchronized void reset() {
        try {
            nativeReset(handle());
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Renders one frame: tracks faces, fires triggers, lays out every layer and (GLES3) draws
     * them over the input into the frame's outputs. Returns what the frame did.
     */
    public synchronized Stats render(Frame frame) {
        Objects.requireNonNull(frame, "frame");
        int numFaces = Math.min(frame.faces.size(), 8);
        float[] faceData = new float[numFaces * FACE_FLOATS];
        Object[] landmarks = new Object[numFaces];
        for (int i = 0; i < numFaces; i++) {
            FaceMesh m = frame.faces.get(i);
            int o = i * FACE_FLOATS;
            float[] xyz = m.landmarksXyzShared();
            faceData[o] = m.id();
            faceData[o + 1] = xyz.length / 3f;
            faceData[o + 2] = 1;
            System.arraycopy(m.poseMatrix(), 0, faceData, o + 3, 16);
            System.arraycopy(m.projectionMatrix(), 0, faceData, o + 19, 16);
            FaceExpressions e = m.expressions();
            faceData[o + 35] = e.mouthOpen();
            faceData[o + 36] = e.leftEyeBlink();
            faceData[o + 37] = e.rightEyeBlink();
            faceData[o + 38] = e.browRaise();
            faceData[o + 39] = e.smile();
            landmarks[i] = xyz;
        }
        int[] ints = {frame.width, frame.height, frame.inputTexture, frame.inputStrideBytes,
            frame.maskWidth, frame.maskHeight, frame.outputTexture, frame.toFramebuffer ? 1 : 0,
            frame.framebuffer, frame.outputStrideBytes};
        try {
            float[] s = nativeRender(handle(), ints, frame.timestampUs, frame.inputArray,
                    frame.inputBuffer, frame.inputOffset, faceData, landmarks, frame.mask,
                    frame.outputArray, frame.outputBuffer, frame.outputOffset);
            return new Stats((int) s[0], (int) s[1], (int) s[2], (int) s[3], s[4]);
        } finally {
            Reference.reachabilityFence(this);
            Reference.reachabilityFence(frame);
        }
    }

    /**
     * What layer {@code layerIndex} (see {@link Effect#layerNames()}) did in the last frame, for
     * {@code faceIndex} (an index into that frame's faces; 0 for frame-wide layers).
     */
    public synchronized LayerInstance layerInstance(int layerIndex, int faceIndex) {
        try {
            float[] v = nativeLayerInstance(handle(), layerIndex, faceIndex);
            return new LayerInstance(v[0] != 0, (int) v[1], (int) v[2], v[3], v[4], v[5], v[6],
                    v[7]);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Layer {@code layerIndex} for every face the effect can decorate ({@link Effect#maxFaces()},
     * one instance for frame-wide layers), in the last frame's face order. Faces that were not
     * in the frame report {@code drawn() == false}. For tests and debugging.
     */
    public synchronized List<LayerInstance> layerInstances(int layerIndex) {
        List<Effect.LayerKind> kinds = effect.layerKinds();
        if (layerIndex < 0 || layerIndex >= kinds.size()) {
            throw new IndexOutOfBoundsException("layer " + layerIndex + " of " + kinds.size());
        }
        int n = kinds.get(layerIndex).isFrameWide() ? 1 : effect.maxFaces();
        List<LayerInstance> out = new ArrayList<>(n);
        for (int f = 0; f < n; f++) {
            out.add(layerInstance(layerIndex, f));
        }
        return Collections.unmodifiableList(out);
    }

    /** Renderer options ({@code ks_ar_renderer_desc}). */
    public static final class Options {
        static final Options DEFAULT = builder().build();

        final Backend backend;
        final int width;
        final int height;

        private Options(Builder b) {
            backend = b.backend;
            width = b.width;
            height = b.height;
        }

        public static Builder builder() {
            return new Builder();
        }

        public static final class Builder {
            private Backend backend = Backend.GLES3;
            private int width;
            private int height;

            public Builder backend(Backend backend) {
                this.backend = Objects.requireNonNull(backend, "backend");
                return this;
            }

            /**
             * Frame size to allocate the render targets for at create (default: at the first
             * frame; a frame of another size reallocates them once).
             */
            public Builder frameSize(int width, int height) {
                if (width < 0 || height < 0) {
                    throw new IllegalArgumentException("frame size " + width + "x" + height);
                }
                this.width = width;
                this.height = height;
                return this;
            }

            public Options build() {
                return new Options(this);
            }
        }
    }

    /**
     * One frame to render: size, timestamp, the camera input (a GL texture or RGBA pixels), the
     * faces, an optional person mask, and the outputs (a GL texture, a framebuffer and/or an RGBA
     * readback). Buffers are referenced, not copied, until {@link #render} returns.
     */
    public static final class Frame {
        final int width;
        final int height;
        final long timestampUs;
        final int inputTexture;
        final byte[] inputArray;
        final ByteBuffer inputBuffer;
        final long inputOffset;
        final int inputStrideBytes;
        final List<FaceMesh> faces;
        final byte[] mask;
        final int maskWidth;
        final int maskHeight;
        final int outputTexture;
        final boolean toFramebuffer;
        final int framebuffer;
        final byte[] outputArray;
        final ByteBuffer outputBuffer;
        final long outputOffset;
        final int outputStrideBytes;

        private Frame(Builder b) {
            width = b.width;
            height = b.height;
            timestampUs = b.timestampUs;
            inputTexture = b.inputTexture;
            inputArray = b.inputArray;
            inputBuffer = b.inputBuffer;
            inputOffset = b.inputOffset;
            inputStrideBytes = b.inputStrideBytes;
            faces = b.faces;
            mask = b.mask;
            maskWidth = b.maskWidth;
            maskHeight = b.maskHeight;
            outputTexture = b.outputTexture;
            toFramebuffer = b.toFramebuffer;
            framebuffer = b.framebuffer;
            outputArray = b.outputArray;
            outputBuffer = b.outputBuffer;
            outputOffset = b.outputOffset;
            outputStrideBytes = b.outputStrideBytes;
        }

        /** A frame of {@code width x height} pixels (1..4096 each). */
        public static Builder builder(int width, int height) {
            return new Builder(width, height);
        }

        public static final class Builder {
            private final int width;
            private final int height;
            private long timestampUs;
            private int inputTexture;
            private byte[] inputArray;
            private ByteBuffer inputBuffer;
            private long inputOffset;
            private int inputStrideBytes;
            private List<FaceMesh> faces = List.of();
            private byte[] mask;
            private int maskWidth;
            private int maskHeight;
            private int outputTexture;
            private boolean toFramebuffer;
            private int framebuffer;
            private byte[] outputArray;
            private ByteBuffer outputBuffer;
            private long outputOffset;
            private int outputStrideBytes;

            private Builder(int width, int height) {
                if (width < 1 || height < 1 || width > 4096 || height > 4096) {
                    throw new IllegalArgumentException("frame size " + width + "x" + height
                            + " outside 1..4096");
                }
                this.width = width;
                this.height = height;
            }

            /** Drives animations; the first frame's timestamp is time 0. */
            public Builder timestampUs(long timestampUs) {
                this.timestampUs = timestampUs;
                return this;
            }

            /** The camera image as a GL_TEXTURE_2D name (RGBA, row 0 = top; never modified). */
            public Builder inputTexture(int texture) {
                this.inputTexture = texture;
                return this;
            }

            /** The camera image as tightly packed RGBA8 ({@code width * height * 4} bytes). */
            public Builder inputPixels(byte[] rgba) {
                Objects.requireNonNull(rgba, "rgba");
                checkSize("input", rgba.length, 0, width * 4);
                inputArray = rgba;
                inputBuffer = null;
                inputOffset = 0;
                inputStrideBytes = 0;
                return this;
            }

            /**
             * The camera image as RGBA8 rows of {@code strideBytes} (0: {@code width * 4}) in a
             * direct buffer, starting at its position. Read in place, no copy.
             */
            public Builder inputPixels(ByteBuffer rgba, int strideBytes) {
                checkDirect(rgba, "input");
                int stride = strideBytes == 0 ? width * 4 : strideBytes;
                checkSize("input", rgba.remaining(), 0, stride);
                inputBuffer = rgba;
                inputArray = null;
                inputOffset = rgba.position();
                inputStrideBytes = stride;
                return this;
            }

            /** The tracked faces (the first {@link Effect#maxFaces()} are decorated). */
            public Builder faces(List<FaceMesh> faces) {
                this.faces = List.copyOf(Objects.requireNonNull(faces, "faces"));
                return this;
            }

            /** The person mask of a {@link Segmenter} (stretched over the frame). */
            public Builder mask(Mask mask) {
                Objects.requireNonNull(mask, "mask");
                return mask(mask.toByteArray(), mask.width(), mask.height());
            }

            /** A person mask as 8-bit values (255 = person), {@code width * height} bytes. */
            public Builder mask(byte[] pixels, int width, int height) {
                Objects.requireNonNull(pixels, "pixels");
                if (width < 1 || height < 1 || (long) width * height > pixels.length) {
                    throw new IllegalArgumentException("mask " + width + "x" + height + " needs "
                            + (long) width * height + " bytes, got " + pixels.length);
                }
                this.mask = pixels;
                this.maskWidth = width;
                this.maskHeight = height;
                return this;
            }

            /** Draw the frame into this GL_TEXTURE_2D (RGBA8, frame size, row 0 = top). */
            public Builder outputTexture(int texture) {
                this.outputTexture = texture;
                return this;
            }

            /**
             * Draw the frame into {@code framebuffer} (0: the window's), upright on screen,
             * viewport (0, 0, width, height).
             */
            public Builder outputFramebuffer(int framebuffer) {
                this.toFramebuffer = true;
                this.framebuffer = framebuffer;
                return this;
            }

            /** Read the result back as tightly packed RGBA8 into {@code rgba} (waits for the GPU). */
            public Builder outputPixels(byte[] rgba) {
                Objects.requireNonNull(rgba, "rgba");
                checkSize("output", rgba.length, 0, width * 4);
                outputArray = rgba;
                outputBuffer = null;
                outputOffset = 0;
                outputStrideBytes = 0;
                return this;
            }

            /** Read the result back as RGBA8 rows of {@code strideBytes} into a direct buffer. */
            public Builder outputPixels(ByteBuffer rgba, int strideBytes) {
                checkDirect(rgba, "output");
                if (rgba.isReadOnly()) {
                    throw new IllegalArgumentException("the output buffer is read-only");
                }
                int stride = strideBytes == 0 ? width * 4 : strideBytes;
                checkSize("output", rgba.remaining(), 0, stride);
                outputBuffer = rgba;
                outputArray = null;
                outputOffset = rgba.position();
                outputStrideBytes = stride;
                return this;
            }

            public Frame build() {
                return new Frame(this);
            }

            private static void checkDirect(ByteBuffer b, String what) {
                Objects.requireNonNull(b, what);
                if (!b.isDirect()) {
                    throw new IllegalArgumentException("the " + what
                            + " ByteBuffer must be direct (use a byte[] otherwise)");
                }
            }

            private void checkSize(String what, long available, long offset, long strideBytes) {
                if (strideBytes < (long) width * 4) {
                    throw new IllegalArgumentException(what + " stride " + strideBytes
                            + " < width * 4 = " + (long) width * 4);
                }
                long need = offset + strideBytes * (height - 1) + (long) width * 4;
                if (available < need) {
                    throw new IllegalArgumentException(what + " pixels: " + width + "x" + height
                            + " RGBA with stride " + strideBytes + " needs " + need
                            + " bytes, got " + available);
                }
            }
        }
    }

    /** What a frame did ({@code ks_ar_stats}). Immutable. */
    public static final class Stats {
        private final int numFaces;
        private final int numLayersDrawn;
        private final int numPasses;
        private final int numTriggersFired;
        private final float cpuMs;

        Stats(int numFaces, int numLayersDrawn, int numPasses, int numTriggersFired,
                float cpuMs) {
            this.numFaces = numFaces;
            this.numLayersDrawn = numLayersDrawn;
            this.numPasses = numPasses;
            this.numTriggersFired = numTriggersFired;
            this.cpuMs = cpuMs;
        }

        /** Faces rendered (at most the effect's maxFaces). */
        public int numFaces() {
            return numFaces;
        }

        /** Layer draws, one per layer and face. */
        public int numLayersDrawn() {
            return numLayersDrawn;
        }

        /** Full-frame passes (copies and composites). */
        public int numPasses() {
            return numPasses;
        }

        public int numTriggersFired() {
            return numTriggersFired;
        }

        /** CPU time of the render call (GL work is asynchronous). */
        public float cpuMs() {
            return cpuMs;
        }

        @Override
        public String toString() {
            return String.format("Stats[faces=%d, layers=%d, passes=%d, triggers=%d, %.2f ms]",
                    numFaces, numLayersDrawn, numPasses, numTriggersFired, cpuMs);
        }
    }

    /** What one layer did for one face in the last frame ({@code ks_ar_layer_instance}). */
    public static final class LayerInstance {
        private final boolean drawn;
        private final int faceId;
        private final int spriteFrame;
        private final float centerX;
        private final float centerY;
        private final float width;
        private final float height;
        private final float angleRad;

        LayerInstance(boolean drawn, int faceId, int spriteFrame, float centerX, float centerY,
                float width, float height, float angleRad) {
            this.drawn = drawn;
            this.faceId = faceId;
            this.spriteFrame = spriteFrame;
            this.centerX = centerX;
            this.centerY = centerY;
            this.width = width;
            this.height = height;
            this.angleRad = angleRad;
        }

        /** Visible, its face present and its geometry valid. */
        public boolean drawn() {
            return drawn;
        }

        /** The face's tracking id (-1: frame-wide layer or untracked face). */
        public int faceId() {
            return faceId;
        }

        /** Sprite layers: the frame index shown. */
        public int spriteFrame() {
            return spriteFrame;
        }

        /** Stickers: sprite centre; face layers: anchor / face centre (frame pixels). */
        public float centerX() {
            return centerX;
        }

        public float centerY() {
            return centerY;
        }

        /** Stickers: sprite width in pixels. */
        public float width() {
            return width;
        }

        public float height() {
            return height;
        }

        /** Stickers: rotation (face roll), counter-clockwise on screen. */
        public float angleRad() {
            return angleRad;
        }

        @Override
        public String toString() {
            return String.format("LayerInstance[drawn=%b, face %d, sprite %d, centre (%.1f, %.1f),"
                    + " size %.1fx%.1f, %.3f rad]", drawn, faceId, spriteFrame, centerX, centerY,
                    width, height, angleRad);
        }
    }

    static native long nativeCreate(long effect, int backend, int width, int height);

    static native void nativeDestroy(long handle);

    static native void nativeSwapEffect(long handle, long effect);

    static native void nativeSetFloat(long handle, String name, float value);

    static native void nativeSetColor(long handle, String name, float[] rgba);

    static native void nativeSetText(long handle, String name, String value, boolean asEnum);

    static native void nativeEnterState(long handle, String state);

    static native void nativeReset(long handle);

    static native float[] nativeRender(long handle, int[] ints, long timestampUs,
            byte[] inputArray, ByteBuffer inputBuffer, long inputOffset, float[] faceData,
            Object[] landmarks, byte[] mask, byte[] outputArray, ByteBuffer outputBuffer,
            long outputOffset);

    static native float[] nativeLayerInstance(long handle, int layer, int face);
}
