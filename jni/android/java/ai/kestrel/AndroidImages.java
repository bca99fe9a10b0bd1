package ai.kestrel;

import android.graphics.Bitmap;
import android.hardware.HardwareBuffer;
import java.nio.ByteBuffer;

/**
 * Android-only image sources. NOT BUILT HERE: this file is compiled only by an Android Gradle
 * build that adds jni/android/java to its source set (see docs/android.md); the matching native
 * code in jni/src/kestrel_jni_image.c is compiled only when {@code __ANDROID__} is defined.
 *
 * <p>A Bitmap or HardwareBuffer is locked by native code for the length of each task call
 * (jnigraphics {@code AndroidBitmap_lockPixels}, {@code AHardwareBuffer_lock}) and read in place.
 */
public final class AndroidImages {
    private AndroidImages() {}

    /** An {@code ARGB_8888} Bitmap (memory order R G B A), read in place on each call. */
    public static Image fromBitmap(Bitmap bitmap) {
        if (bitmap.getConfig() != Bitmap.Config.ARGB_8888) {
            throw new IllegalArgumentException("Bitmap must be ARGB_8888, got "
                    + bitmap.getConfig());
        }
        return new Image(PixelFormat.RGBA, bitmap.getWidth(), bitmap.getHeight(),
                Image.YUV_VIDEO, new Object[] {bitmap},
                new int[] {Image.KIND_ANDROID_BITMAP}, new int[] {0},
                new int[] {bitmap.getRowBytes()});
    }

    /** An RGBA8888 HardwareBuffer with CPU read usage (API 26+), locked on each call. */
    public static Image fromHardwareBuffer(HardwareBuffer buffer) {
        if (buffer.getFormat() != HardwareBuffer.RGBA_8888
                && buffer.getFormat() != HardwareBuffer.RGBX_8888) {
            throw new IllegalArgumentException("HardwareBuffer must be RGBA_8888 or RGBX_8888");
        }
        return new Image(PixelFormat.RGBA, buffer.getWidth(), buffer.getHeight(),
                Image.YUV_VIDEO, new Object[] {buffer},
                new int[] {Image.KIND_ANDROID_HARDWARE_BUFFER}, new int[] {0},
                new int[] {0 /* set by native code from AHardwareBuffer_describe */});
    }

    /**
     * A Camera2 {@code ImageFormat.YUV_420_888} frame. Planar chroma (pixel stride 1) is read in
     * place as I420. Interleaved chroma (pixel stride 2, most devices) is copied into
     * {@code scratch} as NV21 (a direct buffer of at least 2 * ceil(w / 2) * ceil(h / 2) bytes,
     * reused across frames), because the V plane's buffer ends one byte before its last U
     * sample.
     */
    public static Image fromYuv420(android.media.Image frame, ByteBuffer scratch) {
        android.media.Image.Plane[] p = frame.getPlanes();
        int w = frame.getWidth();
        int h = frame.getHeight();
        if (p[1].getPixelStride() == 1) {
            return Image.i420(p[0].getBuffer(), p[0].getRowStride(), p[1].getBuffer(),
                    p[1].getRowStride(), p[2].getBuffer(), p[2].getRowStride(), w, h);
        }
        int cw = (w + 1) / 2;
        int ch = (h + 1) / 2;
        ByteBuffer u = p[1].getBuffer();
        ByteBuffer v = p[2].getBuffer();
        int rowStride = p[1].getRowStride();
        int pixelStride = p[1].getPixelStride();
        scratch.clear();
        for (int y = 0; y < ch; y++) {
            for (int x = 0; x < cw; x++) {
                int i = y * rowStride + x * pixelStride;
                scratch.put(v.get(i));
                scratch.put(u.get(i));
            }
        }
        scratch.flip();
        return Image.yuv2(PixelFormat.NV21, p[0].getBuffer(), p[0].getRowStride(), scratch,
                2 * cw, w, h);
    }
}
