package ai.kestrel;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteBuffer;
import org.junit.jupiter.api.Test;

/**
 * Pure-Java checks (no native library): image validation and value types. Also the test that
 * scripts can run to pre-fetch Maven's plugins: mvn test -Dtest=ImageTest.
 */
class ImageTest {
    @Test
    void imageBufferTooSmallIsRejected() {
        assertThrows(IllegalArgumentException.class, () -> Image.rgba(new byte[100], 64, 64));
        assertThrows(IllegalArgumentException.class,
                () -> Image.nv21(new byte[64 * 64], 64, 64)); // missing the VU plane
        assertThrows(IllegalArgumentException.class,
                () -> Image.rgba(ByteBuffer.allocateDirect(64 * 64 * 4), 64, 64, 100));
        ByteBuffer atEnd = ByteBuffer.allocateDirect(64 * 64 * 4);
        atEnd.position(4);
        assertThrows(IllegalArgumentException.class, () -> Image.rgba(atEnd, 64, 64, 0));
        assertThrows(IllegalArgumentException.class, () -> Image.rgba(new byte[0], 0, 0));
        assertThrows(IllegalArgumentException.class,
                () -> Image.packed(PixelFormat.NV21, new byte[10], 0, 2, 2, 0));
    }

    @Test
    void stridesDefaultToTightRows() {
        Image img = Image.nv21(new byte[6 * 4 * 3 / 2], 6, 4);
        assertEquals(6, img.strideBytes(0));
        assertEquals(6, img.strideBytes(1));
        assertEquals(PixelFormat.NV21, img.format());
        Image odd = Image.packed(PixelFormat.RGB, new byte[5 * 3 * 3], 0, 5, 3, 0);
        assertEquals(15, odd.strideBytes(0));
    }

    @Test
    void rotationFromDegrees() {
        assertEquals(Rotation.DEG_270, Rotation.fromDegrees(-90));
        assertEquals(Rotation.DEG_90, Rotation.fromDegrees(450));
        assertThrows(IllegalArgumentException.class, () -> Rotation.fromDegrees(45));
    }

    @Test
    void boxIou() {
        Box a = new Box(0, 0, 10, 10);
        assertEquals(1f, a.iou(a), 1e-6);
        assertEquals(0f, a.iou(new Box(20, 20, 5, 5)), 1e-6);
        assertEquals(25f / 175f, a.iou(new Box(5, 5, 10, 10)), 1e-6);
    }

    @Test
    void statusCodesRoundTrip() {
        for (Status s : Status.values()) {
            assertEquals(s, Status.fromCode(s.code()));
        }
        assertEquals(Status.UNKNOWN, Status.fromCode(1000));
    }
}
