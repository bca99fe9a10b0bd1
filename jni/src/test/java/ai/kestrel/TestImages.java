package ai.kestrel;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.awt.image.BufferedImage;
import java.io.File;
import java.io.IOException;
import javax.imageio.ImageIO;

/** The test photo, decoded with javax.imageio, and conversions to the formats under test. */
final class TestImages {
    /** Face box of skimage_astronaut.png from ks-vision face_detect (x, y, w, h). */
    static final Box ASTRONAUT_FACE = new Box(177.6f, 82.9f, 95.3f, 95.3f);

    final int width;
    final int height;
    final byte[] rgba;

    private TestImages(int width, int height, byte[] rgba) {
        this.width = width;
        this.height = height;
        this.rgba = rgba;
    }

    static TestImages astronaut() throws IOException {
        String path = System.getProperty("kestrel.test.image", "");
        if (path.isEmpty()) {
            path = "../models/images/skimage_astronaut.png";
        }
        File file = new File(path);
        assertTrue(file.isFile(), "test image not found: " + file.getAbsolutePath()
                + " (set -Dkestrel.test.image)");
        BufferedImage img = ImageIO.read(file);
        int w = img.getWidth();
        int h = img.getHeight();
        int[] argb = img.getRGB(0, 0, w, h, null, 0, w);
        byte[] rgba = new byte[w * h * 4];
        for (int i = 0; i < w * h; i++) {
            rgba[4 * i] = (byte) (argb[i] >> 16);
            rgba[4 * i + 1] = (byte) (argb[i] >> 8);
            rgba[4 * i + 2] = (byte) argb[i];
            rgba[4 * i + 3] = (byte) (argb[i] >>> 24);
        }
        return new TestImages(w, h, rgba);
    }

    Image rgbaImage() {
        return Image.rgba(rgba, width, height);
    }

    /** The photo as a contiguous NV21 frame (BT.601 video range), as an Android camera gives. */
    byte[] nv21() {
        int w = width;
        int h = height;
        byte[] out = new byte[w * h + 2 * ((w + 1) / 2) * ((h + 1) / 2)];
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                int i = 4 * (y * w + x);
                int r = rgba[i] & 255;
                int g = rgba[i + 1] & 255;
                int b = rgba[i + 2] & 255;
                out[y * w + x] = (byte) clamp(Math.round(16 + 0.257 * r + 0.504 * g + 0.098 * b));
            }
        }
        int vu = w * h;
        for (int y = 0; y < h; y += 2) {
            for (int x = 0; x < w; x += 2) {
                int i = 4 * (y * w + x);
                int r = rgba[i] & 255;
                int g = rgba[i + 1] & 255;
                int b = rgba[i + 2] & 255;
                int o = vu + (y / 2) * 2 * ((w + 1) / 2) + x;
                out[o] = (byte) clamp(Math.round(128 + 0.439 * r - 0.368 * g - 0.071 * b));
                out[o + 1] = (byte) clamp(Math.round(128 - 0.148 * r - 0.291 * g + 0.439 * b));
            }
        }
        return out;
    }

    /**
     * The photo as a sensor would store it when it must be rotated clockwise by 90 degrees to be
     * upright: the upright image turned counter-clockwise. Size height x width.
     */
    byte[] rgbaRotatedCounterClockwise() {
        int w = width;
        int h = height;
        byte[] out = new byte[rgba.length];
        // upright (x, y) lands at stored (y, w - 1 - x) in an h-wide image.
        for (int y = 0; y < h; y++) {
            for (int x = 0; x < w; x++) {
                int sx = y;
                int sy = w - 1 - x;
                System.arraycopy(rgba, 4 * (y * w + x), out, 4 * (sy * h + sx), 4);
            }
        }
        return out;
    }

    /** The photo mirrored left-right, as a front camera delivers it. */
    byte[] rgbaMirrored() {
        byte[] out = new byte[rgba.length];
        for (int y = 0; y < height; y++) {
            for (int x = 0; x < width; x++) {
                System.arraycopy(rgba, 4 * (y * width + x), out, 4 * (y * width + width - 1 - x),
                        4);
            }
        }
        return out;
    }

    private static long clamp(long v) {
        return Math.max(0, Math.min(255, v));
    }
}
