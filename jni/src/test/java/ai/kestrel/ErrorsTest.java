package ai.kestrel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/** Errors: native failures become KestrelException, Java misuse fails before native code. */
class ErrorsTest {
    @Test
    void badBundlePathThrowsWithTheNativeMessage() {
        FaceDetector.Options opts =
                FaceDetector.Options.builder().modelPath("/nonexistent/face.ksb").build();
        KestrelException e = assertThrows(KestrelException.class, () -> new FaceDetector(opts));
        assertEquals(Status.IO_ERROR, e.status());
        assertTrue(e.nativeMessage().contains("/nonexistent/face.ksb"), e.getMessage());
        assertTrue(e.getMessage().startsWith("IO_ERROR: "), e.getMessage());
    }

    @Test
    void invalidOptionIsRejectedByTheLibrary() {
        // kestrel/pose.h: at most KS_POSE_MAX_RESULTS (16) people.
        PoseLandmarker.Options opts = PoseLandmarker.Options.builder().maxResults(100).build();
        KestrelException e = assertThrows(KestrelException.class, () -> new PoseLandmarker(opts));
        assertEquals(Status.INVALID_ARGUMENT, e.status());
        assertFalse(e.nativeMessage().isEmpty());
    }

    @Test
    void closedObjectsThrowIllegalState() throws Exception {
        TestImages photo = TestImages.astronaut();
        FaceDetector det = new FaceDetector();
        det.close();
        det.close(); // idempotent
        assertTrue(det.isClosed());
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> det.detect(photo.rgbaImage()));
        assertTrue(e.getMessage().contains("FaceDetector"));
        Segmenter seg = new Segmenter();
        seg.close();
        assertThrows(IllegalStateException.class, () -> seg.segment(photo.rgbaImage()));
    }

    @Test
    void tinyImageIsHandledByTheLibrary() {
        // Valid but tiny input: no crash, an empty or small result.
        try (FaceDetector det = new FaceDetector()) {
            assertTrue(det.detect(Image.rgba(new byte[4 * 4 * 4], 4, 4)).isEmpty());
        }
    }

    @Test
    void heapByteBufferWorks() throws Exception {
        TestImages photo = TestImages.astronaut();
        ByteBuffer heap = ByteBuffer.wrap(photo.rgba);
        try (FaceDetector det = new FaceDetector()) {
            assertEquals(1, det.detect(Image.rgba(heap, photo.width, photo.height, 0)).size());
        }
    }

    @Test
    void unreachableObjectsAreFreedByTheCleaner() throws Exception {
        long before = NativeObject.NUM_DESTROYED.get();
        for (int i = 0; i < 3; i++) {
            new FaceDetector(); // never closed
        }
        long deadline = System.nanoTime() + 20_000_000_000L;
        while (NativeObject.NUM_DESTROYED.get() < before + 3 && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(20);
        }
        assertTrue(NativeObject.NUM_DESTROYED.get() >= before + 3,
                "the Cleaner freed " + (NativeObject.NUM_DESTROYED.get() - before) + " of 3");
    }
}
