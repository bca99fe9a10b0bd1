package ai.kestrel;

/** 8-bit pixel formats ({@code ks_pixel_format}). */
public enum PixelFormat {
    /** Bytes R G B A; alpha is ignored. Android {@code Bitmap.Config.ARGB_8888} memory order. */
    RGBA(1, 1, 4),
    /** Bytes B G R A (iOS 32BGRA, many desktop capture APIs). */
    BGRA(2, 1, 4),
    RGB(3, 1, 3),
    BGR(4, 1, 3),
    GRAY(5, 1, 1),
    /** Y plane, then interleaved V U at half resolution (Android camera default). */
    NV21(6, 2, 1),
    /** Y plane, then interleaved U V at half resolution. */
    NV12(7, 2, 1),
    /** Y, U and V planes; U and V at half resolution. */
    I420(8, 3, 1);

    private final int code;
    private final int numPlanes;
    private final int bytesPerPixel;

    PixelFormat(int code, int numPlanes, int bytesPerPixel) {
        this.code = code;
        this.numPlanes = numPlanes;
        this.bytesPerPixel = bytesPerPixel;
    }

    int code() {
        return code;
    }

    /** Number of planes the native image reads (1 for packed formats). */
    public int numPlanes() {
        return numPlanes;
    }

    /** True for the YUV formats (NV21, NV12, I420). */
    public boolean isYuv() {
        return numPlanes > 1;
    }

    /** Bytes of one row of plane {@code plane} for an image {@code widthPx} wide. */
    int rowBytes(int plane, int widthPx) {
        if (plane == 0) {
            return widthPx * bytesPerPixel;
        }
        int chromaWidth = (widthPx + 1) / 2;
        return this == I420 ? chromaWidth : 2 * chromaWidth;
    }

    /** Number of rows of plane {@code plane} for an image {@code heightPx} tall. */
    int rows(int plane, int heightPx) {
        return plane == 0 ? heightPx : (heightPx + 1) / 2;
    }
}
