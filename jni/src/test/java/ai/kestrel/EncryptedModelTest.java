package ai.kestrel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Encrypted models (ks-protect) through TaskOptions.key and keyProvider: the real face detector
 * model encrypted in the setup with the build's ks-protect, run on the astronaut photo.
 */
class EncryptedModelTest {
    @TempDir
    static Path work;

    private static String plainModel;
    private static String encryptedModel;
    private static byte[] appKey;
    private static byte[] otherKey;
    private static TestImages photo;

    @BeforeAll
    static void setUp() throws Exception {
        Kestrel.load();
        String protect = TestTools.tool("protect");
        plainModel = TestTools.model("ksm/face_detection_short_range.ksm").getPath();
        File key = work.resolve("app.key").toFile();
        File other = work.resolve("other.key").toFile();
        encryptedModel = work.resolve("fd.enc.ksm").toString();
        TestTools.run(protect, "keygen", key.getPath());
        TestTools.run(protect, "keygen", other.getPath());
        TestTools.run(protect, "encrypt", "--key-file", key.getPath(), plainModel, encryptedModel);
        appKey = Files.readAllBytes(key.toPath());
        otherKey = Files.readAllBytes(other.toPath());
        assertEquals(TaskOptions.KEY_BYTES, appKey.length);
        photo = TestImages.astronaut();
    }

    private static List<Face> detect(FaceDetector.Options options) {
        try (FaceDetector det = new FaceDetector(options)) {
            return det.detect(photo.rgbaImage());
        }
    }

    /** Flattened boxes, scores and keypoints, to compare runs bit for bit. */
    private static float[] flat(List<Face> faces) {
        float[] out = new float[faces.size() * (5 + 2 * Face.NUM_KEYPOINTS)];
        int i = 0;
        for (Face f : faces) {
            out[i++] = f.box().x();
            out[i++] = f.box().y();
            out[i++] = f.box().width();
            out[i++] = f.box().height();
            out[i++] = f.score();
            for (Point2 k : f.keypoints()) {
                out[i++] = k.x();
                out[i++] = k.y();
            }
        }
        return out;
    }

    @Test
    void keyOpensTheEncryptedModelWithIdenticalResults() {
        List<Face> plain = detect(FaceDetector.Options.builder().modelPath(plainModel).build());
        assertEquals(1, plain.size(), plain.toString());
        byte[] key = appKey.clone();
        List<Face> enc = detect(
                FaceDetector.Options.builder().modelPath(encryptedModel).key(key).build());
        assertArrayEquals(flat(plain), flat(enc));
        // The caller's array is theirs: read, not wiped or changed.
        assertArrayEquals(appKey, key);
        // A plain model ignores the key.
        List<Face> plainWithKey =
                detect(FaceDetector.Options.builder().modelPath(plainModel).key(key).build());
        assertArrayEquals(flat(plain), flat(plainWithKey));
    }

    @Test
    void keyProviderIsAskedWithTheModelName() {
        List<String> asked = new ArrayList<>();
        List<Face> enc = detect(FaceDetector.Options.builder()
                                        .modelPath(encryptedModel)
                                        .keyProvider(name -> {
                                            asked.add(name);
                                            return appKey.clone();
                                        })
                                        .build());
        List<Face> plain = detect(FaceDetector.Options.builder().modelPath(plainModel).build());
        assertArrayEquals(flat(plain), flat(enc));
        assertEquals(List.of(encryptedModel), asked);
        // Plain models never ask.
        detect(FaceDetector.Options.builder()
                        .modelPath(plainModel)
                        .keyProvider(name -> {
                            throw new AssertionError("asked for " + name);
                        })
                        .build());
    }

    @Test
    void wrongKeyIsTampered() {
        KestrelException e = assertThrows(KestrelException.class,
                () -> detect(FaceDetector.Options.builder()
                                     .modelPath(encryptedModel)
                                     .key(otherKey)
                                     .build()));
        assertEquals(Status.TAMPERED, e.status());
        assertTrue(e.nativeMessage().contains("does not open"), e.nativeMessage());
        assertTrue(e.nativeMessage().contains(encryptedModel), e.nativeMessage());
        e = assertThrows(KestrelException.class,
                () -> detect(FaceDetector.Options.builder()
                                     .modelPath(encryptedModel)
                                     .keyProvider(name -> otherKey.clone())
                                     .build()));
        assertEquals(Status.TAMPERED, e.status());
    }

    @Test
    void noKeyIsRefusedWithAClearMessage() {
        KestrelException e = assertThrows(KestrelException.class,
                () -> detect(FaceDetector.Options.builder().modelPath(encryptedModel).build()));
        assertEquals(Status.INVALID_ARGUMENT, e.status());
        assertTrue(e.nativeMessage().contains("needs its key"), e.nativeMessage());
        // A provider without a key for it: null.
        e = assertThrows(KestrelException.class,
                () -> detect(FaceDetector.Options.builder()
                                     .modelPath(encryptedModel)
                                     .keyProvider(name -> null)
                                     .build()));
        assertEquals(Status.INVALID_ARGUMENT, e.status());
        assertTrue(e.nativeMessage().contains("refused model"), e.nativeMessage());
        // A provider returning a key of the wrong size.
        e = assertThrows(KestrelException.class,
                () -> detect(FaceDetector.Options.builder()
                                     .modelPath(encryptedModel)
                                     .keyProvider(name -> new byte[16])
                                     .build()));
        assertEquals(Status.INVALID_ARGUMENT, e.status());
        assertTrue(e.nativeMessage().contains("16 bytes"), e.nativeMessage());
    }

    @Test
    void providerExceptionPropagates() {
        IllegalStateException boom = new IllegalStateException("keystore locked");
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> detect(FaceDetector.Options.builder()
                                     .modelPath(encryptedModel)
                                     .keyProvider(name -> {
                                         throw boom;
                                     })
                                     .build()));
        assertSame(boom, e);
    }

    @Test
    void keyOfTheWrongSizeIsRefusedByTheBuilder() {
        KestrelException e = assertThrows(KestrelException.class,
                () -> FaceDetector.Options.builder().key(new byte[31]));
        assertEquals(Status.INVALID_ARGUMENT, e.status());
        assertTrue(e.nativeMessage().contains("31 bytes"), e.nativeMessage());
        FaceDetector.Options o = FaceDetector.Options.builder().key(appKey).key(null).build();
        assertFalse(o.hasKey());
    }
}
