/* Kestrel Objective-C API: common types (errors, images, task options, geometry).
 *
 * Usage (manual retain/release shown; under ARC drop the release/drain calls):
 *     NSError *error = nil;
 *     KSImage *image = [[KSImage alloc] initWithData:rgba format:KSPixelFormatRGBA
 *                                              width:640 height:480 error:&error];
 *     KSFaceLandmarker *lm = [[KSFaceLandmarker alloc] initWithOptions:nil error:&error];
 *     if (lm == nil) NSLog(@"%@ (%ld)", error.localizedDescription, (long)error.code);
 *     for (KSFaceMesh *face in [lm detectInImage:image timestampUs:0 error:&error])
 *         NSLog(@"yaw %.0f", face.yawDegrees);
 *     [lm release]; [image release];
 *
 * Conventions (as the C API, see docs/objc.md):
 *   - failures return nil / NO and set *error (domain KSErrorDomain, code = the C ks_status,
 *     localizedDescription = the C library's message naming the file, node or value);
 *   - options objects treat 0 / nil as "the default"; they are read at init (later edits do not
 *     affect the task). Every task's initWithOptions: takes its own options class (e.g.
 *     KSFaceDetectorOptions) or a plain KSTaskOptions (common fields only); another options
 *     class is refused with KSErrorCodeInvalidArgument. (One parameter type for all tasks keeps
 *     `[[KSX alloc] initWithOptions:...]` unambiguous for compilers without instancetype, gcc.)
 *   - results are immutable and autoreleased; coordinates are pixels of the upright image;
 *   - a task object is used by one thread at a time, except for its -swapModelAtPath:...
 *     methods (live swap), which any thread may call while another runs the task.
 *
 * The headers compile with gcc (GNUstep, no nullability or generics: the KS_* macros expand to
 * nothing there), with clang under manual retain/release, and with clang under ARC. They include
 * Foundation only, never the C headers.
 */
#ifndef KESTREL_OBJC_KSBASE_H
#define KESTREL_OBJC_KSBASE_H

#import <Foundation/Foundation.h>
#include <stdint.h>

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#ifndef __has_attribute
#define __has_attribute(x) 0
#endif

/* Nullability and lightweight generics where the compiler has them (clang); nothing on gcc. */
#if __has_feature(nullability)
#define KS_NULLABLE _Nullable
#define KS_NONNULL _Nonnull
#else
#define KS_NULLABLE
#define KS_NONNULL
#endif
#if __has_feature(objc_generics)
#define KS_ARRAY(T) NSArray<T>
#else
#define KS_ARRAY(T) NSArray
#endif
/* -init is unavailable on classes that need arguments (clang); gcc cannot mark it, and would
 * then warn about a declared but unimplemented method, so it is not declared there. */
#if defined(__clang__)
#define KS_INIT_UNAVAILABLE                                                                        \
    -(instancetype)init __attribute__((unavailable("use the designated initializer")));            \
    +(instancetype) new __attribute__((unavailable("use the designated initializer")));
#else
#define KS_INIT_UNAVAILABLE
#endif
#if __has_attribute(objc_returns_inner_pointer)
#define KS_INNER_POINTER __attribute__((objc_returns_inner_pointer))
#else
#define KS_INNER_POINTER
#endif
#ifndef NS_DESIGNATED_INITIALIZER
#define NS_DESIGNATED_INITIALIZER
#endif

NS_ASSUME_NONNULL_BEGIN

/* ---- errors --------------------------------------------------------------------------------- */

/* Domain of every NSError made by this API. */
extern NSString *const KSErrorDomain;
/* userInfo key: the C status name (NSString, e.g. "invalid model"). */
extern NSString *const KSErrorStatusNameKey;

/* NSError codes: the values of the C ks_status (kestrel/kestrel.h). */
typedef NS_ENUM(NSInteger, KSErrorCode) {
    KSErrorCodeInvalidArgument = 1,
    KSErrorCodeOutOfMemory = 2,
    KSErrorCodeIOError = 3,
    KSErrorCodeInvalidModel = 4,
    KSErrorCodeUnsupported = 5,
    KSErrorCodeVersionMismatch = 6,
    KSErrorCodeChecksumMismatch = 7,
    KSErrorCodeInvalidShape = 8,
    KSErrorCodeInvalidState = 9,
    KSErrorCodeLimitExceeded = 10,
    KSErrorCodeInternal = 11,
    KSErrorCodeTampered = 12,
};

/* ---- geometry ------------------------------------------------------------------------------- */

/* Axis-aligned box in upright image pixels: top-left corner and size. */
typedef struct KSBox {
    float x, y, width, height;
} KSBox;

typedef struct KSPoint2 {
    float x, y;
} KSPoint2;

/* x, y in pixels; z in pixels too (the scale of x), smaller is closer to the camera. World
 * landmarks use the same struct in meters. */
typedef struct KSPoint3 {
    float x, y, z;
} KSPoint3;

/* ---- images --------------------------------------------------------------------------------- */

/* Pixel formats (values of the C ks_pixel_format). */
typedef NS_ENUM(NSInteger, KSPixelFormat) {
    KSPixelFormatRGBA = 1, /* bytes R G B A; alpha ignored */
    KSPixelFormatBGRA = 2, /* bytes B G R A (kCVPixelFormatType_32BGRA) */
    KSPixelFormatRGB = 3,
    KSPixelFormatBGR = 4,
    KSPixelFormatGray = 5,
    KSPixelFormatNV21 = 6, /* Y plane, then interleaved V U at half resolution (Android) */
    KSPixelFormatNV12 = 7, /* Y plane, then interleaved U V (iOS 420YpCbCr8BiPlanar) */
    KSPixelFormatI420 = 8, /* Y, U, V planes, U and V at half resolution */
};

/* Clockwise rotation of the input (camera sensor orientation), a task option. */
typedef NS_ENUM(NSInteger, KSRotation) {
    KSRotation0 = 0,
    KSRotation90 = 1,
    KSRotation180 = 2,
    KSRotation270 = 3,
};

/* An immutable view of 8-bit pixels. Nothing is copied: the image keeps (retains) the NSData
 * or the `owner` of the bytes, so the pixels stay valid as long as the image lives. The bytes
 * must not change while a task call reads them. Orientation (rotation, mirror) is a task option
 * (KSTaskOptions), as for the C API: it describes the camera, not one frame. */
@interface KSImage : NSObject {
  @private
    NSInteger _format;
    int32_t _width, _height;
    const void *_planes[3];
    int32_t _strides[3];
    BOOL _fullRange;
    id _owner;
}

/* Tightly packed pixels in `data` (all planes back to back for the YUV formats). */
- (instancetype KS_NULLABLE)initWithData:(NSData *)data
                                  format:(KSPixelFormat)format
                                   width:(int32_t)width
                                  height:(int32_t)height
                                   error:(NSError **)error;

/* Rows of `strideBytes` (0: tightly packed) for plane 0. YUV planes follow each other in
 * `data`: NV12/NV21 chroma rows have the same stride as Y; I420 U and V rows have
 * (strideBytes + 1) / 2. */
- (instancetype KS_NULLABLE)initWithData:(NSData *)data
                                  format:(KSPixelFormat)format
                                   width:(int32_t)width
                                  height:(int32_t)height
                             strideBytes:(int32_t)strideBytes
                                   error:(NSError **)error;

/* Separate planes (1 for RGB-family and gray, 2 for NV12/NV21, 3 for I420), e.g. the base
 * addresses of a locked CVPixelBuffer. `owner` (may be nil) is retained until the image is
 * deallocated: pass the object that owns the memory. strides[i] 0: tightly packed. The byte
 * size of each plane is checked from width, height and stride only: the caller guarantees
 * that the memory is that large. */
- (instancetype KS_NULLABLE)initWithPlanes:(const void *const KS_NONNULL *KS_NONNULL)planes
                                   strides:(const int32_t *KS_NONNULL)strides
                                 numPlanes:(NSUInteger)numPlanes
                                    format:(KSPixelFormat)format
                                     width:(int32_t)width
                                    height:(int32_t)height
                                     owner:(id KS_NULLABLE)owner
                                     error:(NSError **)error NS_DESIGNATED_INITIALIZER;
KS_INIT_UNAVAILABLE

@property(nonatomic, readonly) KSPixelFormat format;
@property(nonatomic, readonly) int32_t width;
@property(nonatomic, readonly) int32_t height;
/* Row stride of plane 0 in bytes. */
@property(nonatomic, readonly) int32_t strideBytes;
/* YUV formats: YES if full range (JPEG), NO (default) for the video range of camera frames.
 * Set it right after init, before the image is shared. */
@property(nonatomic, assign) BOOL fullRangeYUV;
@end

/* ---- task options --------------------------------------------------------------------------- */

typedef NS_ENUM(NSInteger, KSRunningMode) {
    KSRunningModeImage = 0, /* independent photos */
    KSRunningModeVideo = 1, /* a stream: tracking, stable ids, smoothing; timestamps increase */
};

/* How the int8 layers of a quantized model (ks-quant) run, and the GPU's number format
 * (ks_precision in kestrel/engine.h). */
typedef NS_ENUM(NSInteger, KSPrecision) {
    KSPrecisionStored = 0,      /* as stored in the file: int8 layers run int8 */
    KSPrecisionF32 = 1,         /* every int8 layer with a float form runs in fp32 */
    KSPrecisionFastest = 2,     /* per layer the faster of the two on this device, timed at init */
    KSPrecisionFP16Storage = 3, /* GPU: activations in fp16, fp32 math; CPU: as stored */
    KSPrecisionFP16 = 4,        /* GPU: fp16 arithmetic too where it has it (sums in fp32) */
};

/* Where a session's or a task's models run (ks_backend in kestrel/engine.h; docs/backends.md,
 * "Choosing the backend"). A GPU backend runs the ops it supports and leaves the rest to the CPU.
 * A backend this build or device lacks fails the init with KSErrorCodeUnsupported and a message
 * naming it. */
typedef NS_ENUM(NSInteger, KSBackend) {
    KSBackendCPU = 0,    /* the default */
    KSBackendVulkan = 1, /* Vulkan compute (a build with KS_VULKAN and a Vulkan 1.1 device) */
    KSBackendOpenCL = 2, /* not in this version: always refused */
    /* the faster of the CPU and each GPU backend that opens here, timed at init (remembered for
     * the process per model, threads and precision); any GPU failure falls back to the CPU */
    KSBackendAuto = 3,
};

/* Bytes of a ks-protect key (KS_TASK_KEY_BYTES). */
#define KS_TASK_KEY_LENGTH 32

/* Gives the key of an encrypted (ks-protect) model, for compilers without blocks (GNUstep's
 * gcc) or for a key store object: see KSTaskOptions.keyProviderObject. */
@protocol KSKeyProvider <NSObject>
/* The 32-byte key for `entryName` (the bundle entry, e.g. "face_landmarks", or the path of a
 * .ksm given as modelPath), or nil when there is none. Called during a task's init, on the
 * initializing thread, once per encrypted model. */
- (NSData *KS_NULLABLE)keyForEntryName:(NSString *)entryName;
@end

#if defined(__BLOCKS__)
/* The block form of KSKeyProvider (KSTaskOptions.keyProvider). */
typedef NSData *KS_NULLABLE (^KSKeyProviderBlock)(NSString *KS_NONNULL entryName);
#endif

/* Options common to every task; 0 / nil means the task's default (see the C headers). Every
 * task's options class derives from it. Copied by the task at init.
 *
 * Encrypted models (ks-protect, docs/objc.md "Encrypted models"): `key` opens every encrypted
 * model of the task (modelPath or the entries of a bundle); else the key provider is asked for
 * each (the block `keyProvider` where the compiler has blocks, else `keyProviderObject`). With
 * none, init fails with KSErrorCodeInvalidArgument ("... needs its key ..."); a key that does not
 * open a model, KSErrorCodeTampered. Plain models ignore them. */
@interface KSTaskOptions : NSObject <NSCopying> {
  @private
    KSRunningMode _mode;
    int32_t _numThreads, _maxResults;
    float _minScore, _smoothing;
    KSRotation _rotation;
    BOOL _mirror;
    KSBox _regionOfInterest;
    NSString *_modelPath;
    KSPrecision _precision;
    KSBackend _backend;
    NSData *_key;
    id _keyProvider; /* a KSKeyProviderBlock, copied; nil without blocks */
    id _keyProviderObject;
}
@property(nonatomic, assign) KSRunningMode mode;
@property(nonatomic, assign) int32_t numThreads;
@property(nonatomic, assign) float minScore;
@property(nonatomic, assign) int32_t maxResults;
@property(nonatomic, assign) KSRotation rotation;
/* YES: the input is mirrored (front camera). */
@property(nonatomic, assign) BOOL mirror;
/* width 0: the whole image. */
@property(nonatomic, assign) KSBox regionOfInterest;
/* VIDEO: 0 default, < 0 off, else the One Euro min_cutoff (Hz) or mask smoothing ratio. */
@property(nonatomic, assign) float smoothing;
/* A .ksb bundle; nil: the task's default bundle in +[KSModels directory]. */
@property(nonatomic, copy) NSString *KS_NULLABLE modelPath;
/* Stored (default), F32 or Fastest; float models are not affected. */
@property(nonatomic, assign) KSPrecision precision;
/* CPU (default), Vulkan, OpenCL (refused) or Auto: where the task's models run. */
@property(nonatomic, assign) KSBackend backend;
/* The key of encrypted models: KS_TASK_KEY_LENGTH (32) bytes. The options retain the NSData you
 * pass and never copy its bytes (copies of the options share it), so no stray copy of the key
 * stays in memory; it stays yours: wipe it (an NSMutableData: resetBytesInRange:) once the tasks
 * are created. A task's init copies the bytes into a buffer for the C create call only and wipes
 * that buffer (and the C task its own copy) before init returns; the task keeps no key. */
@property(nonatomic, retain) NSData *KS_NULLABLE key;
#if defined(__BLOCKS__)
/* Asked for the key of each encrypted model when no `key` is set (copied). Its NSData is copied
 * into the C task's key buffer, which the task wipes; the NSData stays the block's. Returning
 * nil refuses the model (KSErrorCodeInvalidArgument, naming it). */
@property(nonatomic, copy) KSKeyProviderBlock KS_NULLABLE keyProvider;
#endif
/* The same as an object (retained), used when neither `key` nor `keyProvider` is set. */
@property(nonatomic, retain) id<KSKeyProvider> KS_NULLABLE keyProviderObject;
@end

/* The directory where tasks look for their default bundles (KESTREL_MODELS_DIR if set, else the
 * build-time default; see ks_models_dir in kestrel/vision.h). */
@interface KSModels : NSObject
+ (NSString *)directory;
/* nil resets to the build-time default. Call before creating tasks. */
+ (BOOL)setDirectory:(NSString *KS_NULLABLE)directory error:(NSError **)error;
/* The linked C library's version, e.g. "0.1.0". */
+ (NSString *)libraryVersion;
@end

NS_ASSUME_NONNULL_END

#endif /* KESTREL_OBJC_KSBASE_H */
