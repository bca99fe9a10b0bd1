package ai.kestrel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Live swap of the task models (swapModel, modelGeneration) with the build's real bundles: a
 * face detector swapped from the short-range to the full-range bundle while another thread keeps
 * detecting, bad versions, encrypted versions, a swap racing close(), and every task once.
 */
class LiveSwapTest {
    @TempDir
    static Path work;

    private static TestImages photo;

    @BeforeAll
    static void load() throws Exception {
        Kestrel.load();
        photo = TestImages.astronaut();
    }

    private static String bundle(String name) {
        return TestTools.model(name).getPath();
    }

    private static FaceDetector detector(String path) {
        return new FaceDetector(FaceDetector.Options.builder().modelPath(path).build());
    }

    /** Boxes and scores of one frame, to tell the two models' results apart bit for bit. */
    private static float[] flat(List<Face> faces) {
        float[] out = new float[faces.size() * 5];
        int i = 0;
        for (Face f : faces) {
            out[i++] = f.box().x();
            out[i++] = f.box().y();
            out[i++] = f.box().width();
            out[i++] = f.box().height();
            out[i++] = f.score();
        }
        return out;
    }

    private static float[] detectOnce(String path) {
        try (FaceDetector det = detector(path)) {
            List<Face> faces = det.detect(photo.rgbaImage());
            assertEquals(1, faces.size(), path + ": " + faces);
            return flat(faces);
        }
    }

    @Test
    void swapWhileAnotherThreadDetects() throws Exception {
        String shortRange = bundle("face_detector_short.ksb");
        String fullRange = bundle("face_detector_full.ksb");
        float[] wantShort = detectOnce(shortRange);
        float[] wantFull = detectOnce(fullRange);
        assertFalse(Arrays.equals(wantShort, wantFull), "the two models give the same result");

        try (FaceDetector det = detector(shortRange)) {
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger frames = new AtomicInteger();
            List<float[]> results = new CopyOnWriteArrayList<>();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread runner = new Thread(() -> {
                try {
                    while (!stop.get()) {
                        results.add(flat(det.detect(photo.rgbaImage())));
                        frames.incrementAndGet();
                    }
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, "detect-loop");
            runner.start();
            waitFor(() -> frames.get() >= 2 || failure.get() != null);
            assertEquals(0, det.modelGeneration());
            det.swapModel(fullRange); // while the runner detects
            int atSwap = frames.get();
            waitFor(() -> frames.get() >= atSwap + 3 || failure.get() != null);
            stop.set(true);
            runner.join(30_000);
            assertFalse(runner.isAlive());
            if (failure.get() != null) {
                throw new AssertionError("detect failed during the swap", failure.get());
            }
            // Every frame is one version's result; once the new one came, the old never again.
            boolean switched = false;
            for (float[] r : results) {
                boolean isFull = Arrays.equals(r, wantFull);
                assertTrue(isFull || Arrays.equals(r, wantShort), Arrays.toString(r));
                assertFalse(switched && !isFull, "the old model ran after the switch");
                switched |= isFull;
            }
            assertTrue(switched, "no frame ran the new model");
            assertEquals(1, det.modelGeneration());
            assertArrayEquals(wantFull, flat(det.detect(photo.rgbaImage())));
        }
    }

    private interface Condition {
        boolean holds();
    }

    private static void waitFor(Condition c) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!c.holds()) {
            assertTrue(System.nanoTime() < deadline, "timed out");
            Thread.sleep(2);
        }
    }

    @Test
    void badVersionThrowsAndTheTaskKeepsRunning() {
        String shortRange = bundle("face_detector_short.ksb");
        float[] want = detectOnce(shortRange);
        try (FaceDetector det = detector(shortRange)) {
            String missing = work.resolve("no_such_version.ksb").toString();
            KestrelException e =
                    assertThrows(KestrelException.class, () -> det.swapModel(missing));
            assertEquals(Status.IO_ERROR, e.status(), e.getMessage());
            assertTrue(e.nativeMessage().contains(missing), e.nativeMessage());
            // Another task's bundle: the checks of create.
            String landmarker = bundle("face_landmarker.ksb");
            e = assertThrows(KestrelException.class, () -> det.swapModel(landmarker));
            assertTrue(e.nativeMessage().contains("face detector bundle"), e.nativeMessage());
            assertArrayEquals(want, flat(det.detect(photo.rgbaImage())));
            assertEquals(0, det.modelGeneration());
            // A key of the wrong size is refused before any native call.
            e = assertThrows(KestrelException.class, () -> det.swapModel(shortRange, new byte[5]));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            assertTrue(e.nativeMessage().contains("5 bytes"), e.nativeMessage());
            assertThrows(NullPointerException.class, () -> det.swapModel(null));
            assertEquals(0, det.modelGeneration());
        }
    }

    @Test
    @SuppressWarnings("try") // closes the detector from its key provider on purpose
    void encryptedVersionNeedsItsKey() throws Exception {
        String protect = TestTools.tool("protect");
        String plain = TestTools.model("ksm/face_detection_short_range.ksm").getPath();
        File keyFile = work.resolve("swap.key").toFile();
        File otherFile = work.resolve("swap_other.key").toFile();
        String encrypted = work.resolve("fd_swap.enc.ksm").toString();
        TestTools.run(protect, "keygen", keyFile.getPath());
        TestTools.run(protect, "keygen", otherFile.getPath());
        TestTools.run(protect, "encrypt", "--key-file", keyFile.getPath(), plain, encrypted);
        byte[] key = Files.readAllBytes(keyFile.toPath());
        byte[] other = Files.readAllBytes(otherFile.toPath());
        byte[] keyCopy = key.clone();

        // The .ksm replaces the model of the default bundle (face_detector_short.ksb).
        try (FaceDetector det = new FaceDetector()) {
            float[] before = flat(det.detect(photo.rgbaImage()));
            KestrelException e =
                    assertThrows(KestrelException.class, () -> det.swapModel(encrypted));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            assertTrue(e.nativeMessage().contains("needs its key"), e.nativeMessage());
            e = assertThrows(KestrelException.class, () -> det.swapModel(encrypted, other));
            assertEquals(Status.TAMPERED, e.status());
            assertTrue(e.nativeMessage().contains(encrypted), e.nativeMessage());
            assertArrayEquals(before, flat(det.detect(photo.rgbaImage())));
            assertEquals(0, det.modelGeneration());

            det.swapModel(encrypted, key);
            assertArrayEquals(keyCopy, key); // read, not wiped: the array stays the caller's
            assertArrayEquals(before, flat(det.detect(photo.rgbaImage()))); // the same model
            assertEquals(1, det.modelGeneration());

            List<String> asked = new ArrayList<>();
            det.swapModel(encrypted, name -> {
                asked.add(name);
                return key.clone();
            });
            assertEquals(List.of(encrypted), asked);
            assertArrayEquals(before, flat(det.detect(photo.rgbaImage())));
            assertEquals(2, det.modelGeneration());

            // A detect on another thread runs while the swap is in progress (here: inside its
            // key provider); were the swap to hold the detector's monitor, it would time out.
            ExecutorService runner = Executors.newSingleThreadExecutor();
            try {
                det.swapModel(encrypted, name -> {
                    Future<List<Face>> frame = runner.submit(() -> det.detect(photo.rgbaImage()));
                    try {
                        assertArrayEquals(before, flat(frame.get(30, TimeUnit.SECONDS)));
                    } catch (Exception ex) {
                        throw new AssertionError("detect did not run during the swap", ex);
                    }
                    return key.clone();
                });
            } finally {
                runner.shutdown();
            }
            assertArrayEquals(before, flat(det.detect(photo.rgbaImage())));
            assertEquals(3, det.modelGeneration());

            // A provider's exception comes out unchanged; the task keeps its version.
            IllegalStateException boom = new IllegalStateException("keystore locked");
            IllegalStateException thrown = assertThrows(IllegalStateException.class,
                    () -> det.swapModel(encrypted, name -> {
                        throw boom;
                    }));
            assertSame(boom, thrown);
            // A provider that closes the task it is asked for is refused (the swap holds it).
            thrown = assertThrows(IllegalStateException.class,
                    () -> det.swapModel(encrypted, name -> {
                        det.close();
                        return key.clone();
                    }));
            assertTrue(thrown.getMessage().contains("close()"), thrown.getMessage());
            assertFalse(det.isClosed());
            assertArrayEquals(before, flat(det.detect(photo.rgbaImage())));
            assertEquals(3, det.modelGeneration());
        }
    }

    @Test
    void swapRacingCloseNeverCrashes() throws Exception {
        String shortRange = bundle("face_detector_short.ksb");
        String fullRange = bundle("face_detector_full.ksb");
        for (int round = 0; round < 3; round++) {
            FaceDetector det = detector(shortRange);
            CountDownLatch started = new CountDownLatch(1);
            AtomicInteger swaps = new AtomicInteger();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread swapper = new Thread(() -> {
                started.countDown();
                try {
                    for (int i = 0;; i++) {
                        det.swapModel(i % 2 == 0 ? fullRange : shortRange);
                        swaps.incrementAndGet();
                    }
                } catch (IllegalStateException closed) {
                    // the expected end: the detector was closed between two swaps
                } catch (Throwable t) {
                    failure.set(t);
                }
            }, "swap-loop");
            swapper.start();
            assertTrue(started.await(30, TimeUnit.SECONDS));
            Thread.sleep(20L * round);
            det.close(); // waits for a swap in progress, frees the untaken version too
            swapper.join(60_000);
            assertFalse(swapper.isAlive());
            if (failure.get() != null) {
                throw new AssertionError("swap failed other than by close", failure.get());
            }
            assertTrue(det.isClosed());
            assertThrows(IllegalStateException.class, () -> det.swapModel(fullRange));
            assertThrows(IllegalStateException.class, det::modelGeneration);
        }
    }

    @Test
    void everyTaskSwaps() {
        Image img = photo.rgbaImage();
        try (FaceLandmarker t = new FaceLandmarker()) {
            assertThrows(KestrelException.class,
                    () -> t.swapModel(bundle("face_detector_short.ksb")));
            t.swapModel(bundle("face_landmarker.ksb"));
            assertEquals(1, t.detect(img).size());
            assertEquals(1, t.modelGeneration());
        }
        try (PoseLandmarker t = new PoseLandmarker()) {
            t.swapModel(bundle("pose_landmarker_full.ksb"));
            assertNotNull(t.detect(img));
            assertEquals(1, t.modelGeneration());
        }
        try (HandLandmarker t = new HandLandmarker()) {
            t.swapModel(bundle("hand_landmarker_full.ksb"));
            assertNotNull(t.detect(img));
            assertEquals(1, t.modelGeneration());
        }
        try (Segmenter t = new Segmenter()) {
            t.swapModel(bundle("selfie_segmenter_landscape.ksb"));
            Mask m = t.segment(img);
            assertEquals(photo.width, m.width());
            assertEquals(1, t.modelGeneration());
        }
        try (ImageClassifier t = new ImageClassifier()) {
            t.swapModel(bundle("classifier_mobilenet_v2.ksb"));
            assertFalse(t.classify(img).isEmpty());
            assertEquals(1, t.modelGeneration());
        }
        try (ObjectDetector t = new ObjectDetector()) {
            assertEquals(0, t.modelGeneration());
            t.swapModel(bundle("object_detector_nanodet.ksb"));
            assertNotNull(t.detect(img));
            assertEquals(1, t.modelGeneration());
        }
    }
}
