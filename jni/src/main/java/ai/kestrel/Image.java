package ai.kestrel;

import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * A view of caller-owned 8-bit pixels ({@code ks_image}): a {@code byte[]} or a
 * {@link ByteBuffer} per plane, with format, size and row strides. Nothing is copied when the
 * image is made; the pixels are read during each task call and not kept after it returns, so a
 * camera buffer may be reused for the next frame once the call is done.
 *
 * <p>Direct ByteBuffers (camera frames, {@code ImageReader} planes) are passed to the native
 * library by address, without any copy. A {@code byte[]} (or a heap ByteBuffer) is copied once by
 * the JVM per call, because JNI cannot pin a heap array for the length of an inference.
 *
 * <p>The image's orientation (rotation, mirror) is a task option ({@link TaskOptions}), as in the
 * C API: the task's tracking state in VIDEO mode depends on it.
 *
 * <p>Sizes are checked when the image is made (against the buffer's capacity, which never
 * changes); a buffer that is too small is an {@link IllegalArgumentException}.
 */
public final class Image {
    /** How a plane is passed to native code. */
    static final int KIND_NONE = 0;
    static final int KIND_ARRAY = 1;
    static final int KIND_DIRECT = 2;
    static final int KIND_ANDROID_BITMAP = 3;
    static final int KIND_ANDROID_HARDWARE_BUFFER = 4;

    /** YUV range codes ({@code ks_yuv_range}). */
    static final int YUV_VIDEO = 0;
    static final int YUV_FULL = 1;

    // Read by native code (jni/src/kestrel_jni_image.c); keep names and types in sync.
    final int formatCode;
    final int width;
    final int height;
    final int yuvRange;
    final Object[] planes;
    final int[] kinds;
    final int[] offsets;
    final int[] strides;

    private final PixelFormat format;

    Image(PixelFormat format, int width, int height, int yuvRange, Object[] planes, int[] kinds,
            int[] offsets, int[] strides) {
        this.format = format;
        this.formatCode = format == null ? 0 : format.code();
        this.width = width;
        this.height = height;
        this.yuvRange = yuvRange;
        this.planes = planes;
        this.kinds = kinds;
        this.offsets = offsets;
        this.strides = strides;
    }

    public PixelFormat format() {
        return format;
    }

    public int width() {
        return width;
    }

    public int height() {
        return height;
    }

    /** Row stride of plane {@code plane} in bytes. */
    public int strideBytes(int plane) {
        return strides[plane];
    }

    /** True if YUV samples use the full 0..255 range (JPEG) instead of video range. */
    public boolean isFullRangeYuv() {
        return yuvRange == YUV_FULL;
    }

    /** The same pixels, with YUV samples read as full range (JPEG/JFIF) instead of video range. */
    public Image withFullRangeYuv() {
        return new Image(format, width, height, YUV_FULL, planes, kinds, offsets, strides);
    }

    // ---- packed formats ------------------------------------------------------------------------

    /** Tightly packed RGBA bytes ({@code width * height * 4}). */
    public static Image rgba(byte[] pixels, int width, int height) {
        return packed(PixelFormat.RGBA, pixels, 0, width, height, 0);
    }

    /** RGBA pixels in a buffer, from its position; {@code strideBytes} 0 = tightly packed. */
    public static Image rgba(ByteBuffer pixels, int width, int height, int strideBytes) {
        return packed(PixelFormat.RGBA, pixels, width, height, strideBytes);
    }

    /** Any single-plane format (RGBA, BGRA, RGB, BGR, GRAY) from a byte array. */
    public static Image packed(PixelFormat format, byte[] pixels, int offset, int width, int height,
            int strideBytes) {
        requirePacked(format);
        return build(format, width, height, new Object[] {pixels}, new int[] {offset},
                new int[] {strideBytes});
    }

    /** Any single-plane format (RGBA, BGRA, RGB, BGR, GRAY) from a buffer, at its position. */
    public static Image packed(PixelFormat format, ByteBuffer pixels, int width, int height,
            int strideBytes) {
        requirePacked(format);
        return build(format, width, height, new Object[] {pixels}, new int[] {position(pixels)},
                new int[] {strideBytes});
    }

    // ---- YUV -----------------------------------------------------------------------------------

    /** A contiguous NV21 frame (Android {@code Camera.PreviewCallback}): Y rows, then VU rows. */
    public static Image nv21(byte[] frame, int width, int height) {
        Objects.requireNonNull(frame, "frame");
        return build(PixelFormat.NV21, width, height, new Object[] {frame, frame},
                new int[] {0, width * height}, new int[] {width, 0});
    }

    /** A contiguous NV21 frame in a buffer, starting at its position, tightly packed. */
    public static Image nv21(ByteBuffer frame, int width, int height) {
        Objects.requireNonNull(frame, "frame");
        int pos = position(frame);
        return build(PixelFormat.NV21, width, height, new Object[] {frame, frame},
                new int[] {pos, pos + width * height}, new int[] {width, 0});
    }

    /**
     * Two-plane YUV (NV21 or NV12) with separate Y and interleaved chroma buffers and strides,
     * e.g. Camera2 {@code ImageReader} planes whose chroma pixel stride is 2. Each buffer is read
     * from its position.
     */
    public static Image yuv2(PixelFormat format, ByteBuffer y, int yStrideBytes, ByteBuffer chroma,
            int chromaStrideBytes, int width, int height) {
        if (format != PixelFormat.NV21 && format != PixelFormat.NV12) {
            throw new IllegalArgumentException("yuv2 needs NV21 or NV12, got " + format);
        }
        return build(format, width, height, new Object[] {y, chroma},
                new int[] {position(y), position(chroma)},
                new int[] {yStrideBytes, chromaStrideBytes});
    }

    /** Three-plane I420 (Y, U, V), each buffer read from its position. */
    public static Image i420(ByteBuffer y, int yStrideBytes, ByteBuffer u, int uStrideBytes,
            ByteBuffer v, int vStrideBytes, int width, int height) {
        return build(PixelFormat.I420, width, height, new Object[] {y, u, v},
                new int[] {position(y), position(u), position(v)},
                new int[] {yStrideBytes, uStrideBytes, vStrideBytes});
    }

    // ---- validation ----------------------------------------------------------------------------

    private static void requirePacked(PixelFormat format) {
        Objects.requireNonNull(format, "format");
        if (format.isYuv()) {
            throw new IllegalArgumentException(format + " has several planes; use nv21/yuv2/i420");
        }
    }

    private static int position(ByteBuffer b) {
        return Objects.requireNonNull(b, "buffer").position();
    }

    /** Checks every plane against its buffer and normalizes heap buffers to their arrays. */
    private static Image build(PixelFormat format, int width, int height, Object[] planes,
            int[] offsets, int[] strides) {
        if (width <= 0 || height <= 0) {
            throw new IllegalArgumentException("image size must be positive, got " + width + "x"
                    + height);
        }
        int n = planes.length;
        int[] kinds = new int[n];
        for (int i = 0; i < n; i++) {
            Object p = Objects.requireNonNull(planes[i], "plane " + i);
            int rowBytes = format.rowBytes(i, width);
            int rows = format.rows(i, height);
            if (strides[i] == 0) {
                strides[i] = rowBytes;
            }
            if (strides[i] < rowBytes) {
                throw new IllegalArgumentException("plane " + i + " stride " + strides[i]
                        + " bytes is below its row size " + rowBytes);
            }
            long needed = (long) strides[i] * (rows - 1) + rowBytes;
            long capacity;
            if (p instanceof byte[]) {
                kinds[i] = KIND_ARRAY;
                capacity = ((byte[]) p).length;
            } else if (p instanceof ByteBuffer) {
                ByteBuffer b = (ByteBuffer) p;
                if (b.isDirect()) {
                    kinds[i] = KIND_DIRECT;
                    capacity = b.capacity();
                } else if (b.hasArray()) {
                    kinds[i] = KIND_ARRAY;
                    planes[i] = b.array();
                    offsets[i] += b.arrayOffset();
                    capacity = b.array().length;
                } else {
                    throw new IllegalArgumentException("plane " + i
                            + ": a heap ByteBuffer must expose its array (not read-only)");
                }
            } else {
                throw new IllegalArgumentException("plane " + i + ": unsupported type "
                        + p.getClass().getName());
            }
            if (offsets[i] < 0 || offsets[i] + needed > capacity) {
                throw new IllegalArgumentException(String.format(
                        "%s %dx%d plane %d needs %d bytes from offset %d, buffer has %d", format,
                        width, height, i, needed, offsets[i], capacity));
            }
        }
        return new Image(format, width, height, YUV_VIDEO, planes, kinds, offsets, strides);
    }

    @Override
    public String toString() {
        return "Image[" + format + " " + width + "x" + height + "]";
    }
}
