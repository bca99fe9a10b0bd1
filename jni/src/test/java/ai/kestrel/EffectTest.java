package ai.kestrel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Effect and EffectRenderer with the null backend (layout, triggers and states; no GL): the
 * sample cat_ears package on the real photo's face mesh, parameters of a package built here, and
 * the errors.
 */
class EffectTest {
    private static TestImages photo;
    private static FaceMesh astronaut;
    private static File catEars;

    @BeforeAll
    static void load() throws Exception {
        Kestrel.load();
        photo = TestImages.astronaut();
        String dir = System.getProperty("kestrel.effects.dir", "");
        catEars = new File(dir.isEmpty() ? "../build/effects" : dir, "cat_ears.kfx");
        try (FaceLandmarker lm = new FaceLandmarker()) {
            List<FaceMesh> faces = lm.detect(photo.rgbaImage());
            assertEquals(1, faces.size(), faces.toString());
            astronaut = faces.get(0);
        }
    }

    private static Effect openCatEars() {
        assumeTrue(catEars.isFile(), "sample effect not built: " + catEars.getAbsolutePath()
                + " (ninja ks_effects; set -Dkestrel.effects.dir)");
        return Effect.open(catEars.getPath());
    }

    private static EffectRenderer nullRenderer(Effect fx) {
        return new EffectRenderer(fx,
                EffectRenderer.Options.builder().backend(EffectRenderer.Backend.NULL).build());
    }

    private static EffectRenderer.Frame frame(long timestampUs, List<FaceMesh> faces) {
        return EffectRenderer.Frame.builder(photo.width, photo.height).timestampUs(timestampUs)
                .inputPixels(photo.rgba).faces(faces).build();
    }

    /** A copy of {@code m} with other expression scores (through the package-private unpack). */
    private static FaceMesh withMouthOpen(FaceMesh m, float mouthOpen, int numLandmarks) {
        float[] xyz = m.landmarksXyz();
        float[] p = new float[1 + 4 + 3 + 3 + 16 + 16 + 5 + 3 * numLandmarks];
        int o = 0;
        p[o++] = 1;
        p[o++] = m.box().x();
        p[o++] = m.box().y();
        p[o++] = m.box().width();
        p[o++] = m.box().height();
        p[o++] = m.score();
        p[o++] = m.id();
        p[o++] = numLandmarks;
        p[o++] = m.pitchDeg();
        p[o++] = m.yawDeg();
        p[o++] = m.rollDeg();
        System.arraycopy(m.poseMatrix(), 0, p, o, 16);
        o += 16;
        System.arraycopy(m.projectionMatrix(), 0, p, o, 16);
        o += 16;
        FaceExpressions e = m.expressions();
        p[o++] = mouthOpen;
        p[o++] = e.leftEyeBlink();
        p[o++] = e.rightEyeBlink();
        p[o++] = e.browRaise();
        p[o++] = e.smile();
        System.arraycopy(xyz, 0, p, o, Math.min(xyz.length, 3 * numLandmarks));
        return FaceMesh.unpack(p).get(0);
    }

    @Test
    void catEarsInfo() {
        try (Effect fx = openCatEars()) {
            assertEquals("dev.kestrel.samples.cat_ears", fx.id());
            assertEquals("Cat ears", fx.name());
            assertEquals("Kestrel samples", fx.author());
            assertEquals("1.0.0", fx.formatVersion());
            assertEquals(4, fx.maxFaces());
            assertEquals(Set.of(Effect.Capability.FACE_LANDMARKS), fx.requiredCapabilities());
            assertEquals(List.of("whiskers", "ears"), fx.layerNames());
            assertEquals(List.of(Effect.LayerKind.STICKER, Effect.LayerKind.STICKER),
                    fx.layerKinds());
            assertEquals(1, fx.layerIndex("ears"));
            assertEquals(-1, fx.layerIndex("hat"));
            assertTrue(fx.paramNames().isEmpty());
            assertEquals(List.of("idle", "meow"), fx.stateNames());
        }
    }

    @Test
    void earsArePlacedAboveTheFace() {
        try (Effect fx = openCatEars(); EffectRenderer ar = nullRenderer(fx)) {
            int ears = fx.layerIndex("ears");
            EffectRenderer.Stats stats = null;
            for (int i = 0; i < 3; i++) {
                stats = ar.render(frame(i * 33_333L, List.of(astronaut)));
            }
            assertEquals(1, stats.numFaces(), stats.toString());
            Box box = astronaut.box();
            EffectRenderer.LayerInstance inst = ar.layerInstance(ears, 0);
            assertTrue(inst.drawn(), inst.toString());
            assertTrue(inst.centerY() < box.y(), inst + " not above " + box);
            assertTrue(inst.centerY() > box.y() - box.height(), inst + " far above " + box);
            assertTrue(inst.centerX() > box.x() && inst.centerX() < box.x() + box.width(),
                    inst + " not over " + box);
            // scale 1.4 face widths
            assertTrue(inst.width() > box.width() && inst.width() < 2 * box.width(),
                    inst.toString());
            List<EffectRenderer.LayerInstance> all = ar.layerInstances(ears);
            assertEquals(fx.maxFaces(), all.size());
            assertTrue(all.get(0).drawn());
            assertFalse(all.get(1).drawn()); // one face in the frame
            // The sprite animates at 8 fps: frame 2 at 66 ms is still sprite frame 0.
            assertEquals(0, inst.spriteFrame());
            ar.render(frame(300_000L, List.of(astronaut)));
            assertEquals(2, ar.layerInstance(ears, 0).spriteFrame());
        }
    }

    @Test
    void statesFollowEnterStateAndTheMouthOpenTrigger() {
        try (Effect fx = openCatEars(); EffectRenderer ar = nullRenderer(fx)) {
            int whiskers = fx.layerIndex("whiskers");
            FaceMesh closed = withMouthOpen(astronaut, 0f, 468);
            FaceMesh open = withMouthOpen(astronaut, 0.9f, 468);

            ar.render(frame(0, List.of(closed)));
            assertFalse(ar.layerInstance(whiskers, 0).drawn(), "idle hides the whiskers");
            ar.enterState("meow");
            ar.render(frame(33_333, List.of(closed)));
            assertTrue(ar.layerInstance(whiskers, 0).drawn(), "enterState(meow)");
            ar.enterState("idle");
            ar.render(frame(66_666, List.of(closed)));
            assertFalse(ar.layerInstance(whiskers, 0).drawn(), "enterState(idle)");

            EffectRenderer.Stats stats = ar.render(frame(100_000, List.of(open)));
            assertTrue(stats.numTriggersFired() >= 1, stats.toString());
            assertTrue(ar.layerInstance(whiskers, 0).drawn(), "mouth_open trigger");

            // face_lost -> idle; the face comes back with its mouth closed.
            ar.render(frame(133_333, List.of()));
            ar.render(frame(166_666, List.of(closed)));
            assertFalse(ar.layerInstance(whiskers, 0).drawn(), "face_lost trigger");
            assertTrue(ar.layerInstance(fx.layerIndex("ears"), 0).drawn());

            ar.reset();
            ar.render(frame(0, List.of(closed)));
            assertFalse(ar.layerInstance(whiskers, 0).drawn(), "reset");
        }
    }

    @Test
    void directBuffersAndMasksAreAccepted() {
        try (Effect fx = openCatEars(); EffectRenderer ar = nullRenderer(fx)) {
            int stride = photo.width * 4 + 32;
            ByteBuffer in = ByteBuffer.allocateDirect(8 + stride * photo.height);
            in.position(8);
            ByteBuffer out = ByteBuffer.allocateDirect(photo.width * 4 * photo.height);
            byte[] mask = new byte[64 * 64];
            EffectRenderer.Stats s = ar.render(EffectRenderer.Frame.builder(photo.width,
                    photo.height).inputPixels(in, stride).outputPixels(out, 0)
                    .mask(mask, 64, 64).faces(List.of(astronaut)).build());
            assertEquals(1, s.numFaces());
            assertThrows(IllegalArgumentException.class,
                    () -> EffectRenderer.Frame.builder(photo.width, photo.height)
                            .inputPixels(new byte[16]));
            assertThrows(IllegalArgumentException.class,
                    () -> EffectRenderer.Frame.builder(0, 10));
            assertThrows(IllegalArgumentException.class,
                    () -> EffectRenderer.Frame.builder(8, 8)
                            .inputPixels(ByteBuffer.allocate(256), 0));
            assertThrows(IllegalArgumentException.class,
                    () -> EffectRenderer.Frame.builder(8, 8).mask(new byte[10], 8, 8));
        }
    }

    /** A package with every parameter type, built in memory (STORED entries). */
    private static byte[] paramsPackage() throws IOException {
        String manifest = "{\"format_version\": \"1.0.0\", \"id\": \"dev.kestrel.tests.params\","
                + " \"name\": \"Params\", \"requires\": [\"face_landmarks\"], \"max_faces\": 1,"
                + " \"parameters\": ["
                + "{\"name\": \"lip_color\", \"type\": \"color\", \"default\": \"#C8102EFF\"},"
                + "{\"name\": \"lip_strength\", \"type\": \"float\", \"min\": 0, \"max\": 1,"
                + " \"default\": 0.6},"
                + "{\"name\": \"style\", \"type\": \"enum\", \"options\": [\"day\", \"night\"],"
                + " \"default\": \"night\"}],"
                + " \"layers\": [{\"name\": \"lips\", \"kind\": \"makeup\", \"region\": \"lips\","
                + " \"color\": [0.8, 0.1, 0.2, 1.0], \"color_param\": \"lip_color\","
                + " \"intensity\": 0.6, \"intensity_param\": \"lip_strength\"}]}";
        return zipManifest(manifest);
    }

    /** A package of {@code manifest} alone (one STORED manifest.json entry). */
    private static byte[] zipManifest(String manifest) throws IOException {
        byte[] data = manifest.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ZipOutputStream zip = new ZipOutputStream(bytes)) {
            ZipEntry e = new ZipEntry("manifest.json");
            e.setMethod(ZipEntry.STORED);
            e.setSize(data.length);
            CRC32 crc = new CRC32();
            crc.update(data);
            e.setCrc(crc.getValue());
            zip.putNextEntry(e);
            zip.write(data);
            zip.closeEntry();
        }
        return bytes.toByteArray();
    }

    @Test
    void parametersAreSetAndCheckedByName() throws IOException {
        try (Effect fx = Effect.fromBytes(paramsPackage()); EffectRenderer ar = nullRenderer(fx)) {
            assertEquals(List.of("lip_color", "lip_strength", "style"), fx.paramNames());
            assertEquals(List.of(Effect.ParamType.COLOR, Effect.ParamType.FLOAT,
                    Effect.ParamType.ENUM), fx.paramTypes());
            assertEquals(List.of(Effect.LayerKind.MAKEUP), fx.layerKinds());
            ar.setColor("lip_color", new float[] {0.7f, 0.1f, 0.2f, 1f});
            ar.setParam("lip_strength", 0.25f);
            ar.setEnum("style", "day");
            ar.setParam("lip_color", "#102030");
            ar.render(frame(0, List.of(astronaut)));
            assertTrue(ar.layerInstance(0, 0).drawn());

            KestrelException e =
                    assertThrows(KestrelException.class, () -> ar.setParam("nope", 1f));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            assertTrue(e.nativeMessage().contains("nope"), e.getMessage());
            e = assertThrows(KestrelException.class, () -> ar.setParam("lip_strength", 2f));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            assertTrue(e.nativeMessage().contains("lip_strength"), e.getMessage());
            e = assertThrows(KestrelException.class, () -> ar.setParam("lip_color", 0.5f));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            e = assertThrows(KestrelException.class, () -> ar.setEnum("style", "dusk"));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            assertTrue(e.nativeMessage().contains("dusk"), e.getMessage());
            assertThrows(IllegalArgumentException.class,
                    () -> ar.setColor("lip_color", new float[3]));
        }
    }

    /** Two lips makeup layers and no parameters: another effect for the swap. */
    private static byte[] twoLayerPackage() throws IOException {
        String layer = "{\"name\": \"%s\", \"kind\": \"makeup\", \"region\": \"lips\","
                + " \"color\": [0.2, 0.1, 0.8, 1.0], \"intensity\": 0.5}";
        return zipManifest("{\"format_version\": \"1.0.0\", \"id\": \"dev.kestrel.tests.two\","
                + " \"name\": \"Two\", \"requires\": [\"face_landmarks\"], \"max_faces\": 1,"
                + " \"layers\": [" + String.format(layer, "lips_a") + ", "
                + String.format(layer, "lips_b") + "]}");
    }

    @Test
    void swapEffectDrawsTheNewEffectFromTheNextFrame() throws IOException {
        Effect first = Effect.fromBytes(paramsPackage());
        Effect second = Effect.fromBytes(twoLayerPackage());
        try (EffectRenderer ar = nullRenderer(first)) {
            ar.setParam("lip_strength", 0.25f);
            ar.render(frame(0, List.of(astronaut)));
            assertTrue(ar.layerInstance(0, 0).drawn());
            assertThrows(KestrelException.class, () -> ar.layerInstance(1, 0)); // one layer

            ar.swapEffect(second);
            assertSame(second, ar.effect());
            // The renderer holds the new package and let go of the old: both Effect objects
            // may be closed now.
            first.close();
            second.close();
            EffectRenderer.Stats stats = ar.render(frame(33_333, List.of(astronaut)));
            assertEquals(2, stats.numLayersDrawn(), stats.toString());
            assertTrue(ar.layerInstance(0, 0).drawn());
            assertTrue(ar.layerInstance(1, 0).drawn());
            assertEquals(1, ar.layerInstances(1).size()); // the new effect's max_faces
            // The old effect's parameters went with it.
            KestrelException e = assertThrows(KestrelException.class,
                    () -> ar.setParam("lip_strength", 0.5f));
            assertEquals(Status.INVALID_ARGUMENT, e.status());

            // A closed Effect cannot be swapped in; the renderer keeps its effect.
            IllegalStateException closed =
                    assertThrows(IllegalStateException.class, () -> ar.swapEffect(first));
            assertTrue(closed.getMessage().contains("closed"), closed.getMessage());
            assertSame(second, ar.effect());
            assertEquals(2, ar.render(frame(66_666, List.of(astronaut))).numLayersDrawn());
        }
        assertThrows(IllegalStateException.class, () -> nullRenderer(first));
    }

    @Test
    void errors() {
        try (Effect fx = openCatEars(); EffectRenderer ar = nullRenderer(fx)) {
            KestrelException e =
                    assertThrows(KestrelException.class, () -> ar.enterState("purring"));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            assertTrue(e.nativeMessage().contains("purring"), e.getMessage());
            e = assertThrows(KestrelException.class, () -> ar.setParam("nope", 1f));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            assertTrue(e.nativeMessage().contains("nope"), e.getMessage());
            e = assertThrows(KestrelException.class, () -> ar.layerInstance(7, 0));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            FaceMesh tooFew = withMouthOpen(astronaut, 0f, 100);
            e = assertThrows(KestrelException.class, () -> ar.render(frame(0, List.of(tooFew))));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            assertFalse(e.nativeMessage().isEmpty());
        }
        String png = new File(System.getProperty("kestrel.test.image",
                "../models/images/skimage_astronaut.png")).getPath();
        KestrelException e = assertThrows(KestrelException.class, () -> Effect.open(png));
        assertEquals(Status.INVALID_MODEL, e.status());
        assertTrue(e.nativeMessage().contains(png), e.getMessage());
        e = assertThrows(KestrelException.class, () -> Effect.open("/nonexistent/fx.kfx"));
        assertEquals(Status.IO_ERROR, e.status());
        assertTrue(e.nativeMessage().contains("/nonexistent/fx.kfx"), e.getMessage());
        e = assertThrows(KestrelException.class, () -> Effect.fromBytes(new byte[] {1, 2, 3}));
        assertEquals(Status.INVALID_MODEL, e.status());
    }

    @Test
    void closedObjectsThrowIllegalState() {
        Effect fx = openCatEars();
        EffectRenderer ar = nullRenderer(fx);
        // The renderer keeps the native effect alive after the Effect object is closed.
        fx.close();
        fx.close();
        assertTrue(fx.isClosed());
        assertEquals("Cat ears", fx.name()); // info is plain Java data
        assertThrows(IllegalStateException.class, () -> nullRenderer(fx));
        assertEquals(1, ar.render(frame(0, List.of(astronaut))).numFaces());
        ar.close();
        ar.close();
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> ar.render(frame(0, List.of(astronaut))));
        assertTrue(e.getMessage().contains("EffectRenderer"), e.getMessage());
        assertThrows(IllegalStateException.class, () -> ar.setParam("x", 1f));
        assertThrows(IllegalStateException.class, () -> ar.enterState("idle"));
        assertThrows(IllegalStateException.class, () -> ar.layerInstance(0, 0));
    }

    // ---- GLES3 on a headless EGL context (test-only library kestrel_jni_gltest) ----------------

    private static String glSkipReason;

    static native long nativeEglCreate(String[] errOut);

    static native void nativeEglDestroy(long egl);

    static native int nativeTexture(byte[] rgba, int width, int height);

    static native void nativeReadTexture(int texture, int width, int height, byte[] rgba);

    static native void nativeDeleteTexture(int texture);

    /** Loads the test library and makes a context current on this thread, or skips. */
    private static long eglOrSkip() {
        if (glSkipReason == null) {
            String dir = System.getProperty("kestrel.native.dir", "");
            if (dir.isEmpty()) {
                dir = System.getenv().getOrDefault("KESTREL_NATIVE_DIR", "");
            }
            File lib = new File(dir, System.mapLibraryName("kestrel_jni_gltest"));
            if (!lib.isFile()) {
                glSkipReason = "no " + lib.getAbsolutePath() + " (built with EGL only)";
            } else {
                System.load(lib.getAbsolutePath());
                glSkipReason = "";
            }
        }
        assumeTrue(glSkipReason.isEmpty(), glSkipReason);
        String[] err = new String[1];
        long egl = nativeEglCreate(err);
        assumeTrue(egl != 0, "no headless GLES 3 context: " + err[0]);
        return egl;
    }

    /** Pixels of the rectangle where some channel differs by more than 2. */
    private static int countChanged(byte[] a, byte[] b, int x0, int y0, int x1, int y1) {
        int n = 0;
        for (int y = Math.max(0, y0); y < Math.min(photo.height, y1); y++) {
            for (int x = Math.max(0, x0); x < Math.min(photo.width, x1); x++) {
                int i = 4 * (y * photo.width + x);
                for (int c = 0; c < 3; c++) {
                    if (Math.abs((a[i + c] & 255) - (b[i + c] & 255)) > 2) {
                        n++;
                        break;
                    }
                }
            }
        }
        return n;
    }

    @Test
    void gles3DrawsTheEarsIntoPixelsAndTextures() {
        long egl = eglOrSkip();
        int inTex = 0;
        int outTex = 0;
        try (Effect fx = openCatEars(); EffectRenderer ar = new EffectRenderer(fx)) {
            int w = photo.width;
            int h = photo.height;
            byte[] out = new byte[photo.rgba.length];
            ar.render(EffectRenderer.Frame.builder(w, h).inputPixels(photo.rgba)
                    .faces(List.of(astronaut)).outputPixels(out).build());
            EffectRenderer.LayerInstance ears = ar.layerInstance(fx.layerIndex("ears"), 0);
            assertTrue(ears.drawn(), ears.toString());
            int x0 = Math.round(ears.centerX() - ears.width() / 2);
            int y0 = Math.round(ears.centerY() - ears.height() / 2);
            int x1 = Math.round(ears.centerX() + ears.width() / 2);
            int y1 = Math.round(ears.centerY() + ears.height() / 2);
            int area = (x1 - x0) * (y1 - y0);
            int inside = countChanged(photo.rgba, out, x0, y0, x1, y1);
            assertTrue(inside > area / 10, inside + " of " + area + " sticker pixels changed, "
                    + ears);
            assertEquals(0, countChanged(photo.rgba, out, 0, h - 64, w, h),
                    "pixels far below the face changed");

            // The same frame through GL textures: input texture in, output texture read back.
            inTex = nativeTexture(photo.rgba, w, h);
            outTex = nativeTexture(null, w, h);
            assertTrue(inTex != 0 && outTex != 0, "test textures");
            ar.reset();
            ar.render(EffectRenderer.Frame.builder(w, h).inputTexture(inTex)
                    .faces(List.of(astronaut)).outputTexture(outTex).build());
            byte[] back = new byte[photo.rgba.length];
            nativeReadTexture(outTex, w, h, back);
            int differ = countChanged(out, back, 0, 0, w, h);
            assertTrue(differ < w * h / 100, differ + " pixels differ between the pixel and "
                    + "texture paths");
        } finally {
            if (inTex != 0) {
                nativeDeleteTexture(inTex);
            }
            if (outTex != 0) {
                nativeDeleteTexture(outTex);
            }
            nativeEglDestroy(egl);
        }
    }
}
