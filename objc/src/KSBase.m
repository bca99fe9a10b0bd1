/* Errors, KSImage, KSTaskOptions and KSModels (manual retain/release). */
#import "KSPrivate.h"

#include <stdlib.h>
#include <string.h>

NSString *const KSErrorDomain = @"ai.kestrel";
NSString *const KSErrorStatusNameKey = @"KSErrorStatusName";

/* The Objective-C enums mirror the C ones value for value (they are public API on both sides). */
_Static_assert(KSErrorCodeTampered == (NSInteger)KS_STATUS_TAMPERED, "status values");
_Static_assert(KSErrorCodeInvalidModel == (NSInteger)KS_STATUS_INVALID_MODEL, "status values");
_Static_assert(KSPixelFormatI420 == (NSInteger)KS_PIXEL_FORMAT_I420, "pixel format values");
_Static_assert(KSPixelFormatNV21 == (NSInteger)KS_PIXEL_FORMAT_NV21, "pixel format values");
_Static_assert(KSRotation270 == (NSInteger)KS_ROTATION_270, "rotation values");
_Static_assert(KSRunningModeVideo == (NSInteger)KS_MODE_VIDEO, "running mode values");
_Static_assert(KSBackendCPU == (NSInteger)KS_BACKEND_CPU, "backend values");
_Static_assert(KSBackendVulkan == (NSInteger)KS_BACKEND_VULKAN, "backend values");
_Static_assert(KSBackendOpenCL == (NSInteger)KS_BACKEND_OPENCL, "backend values");
_Static_assert(KSBackendAuto == (NSInteger)KS_BACKEND_AUTO, "backend values");
_Static_assert(KS_TASK_KEY_LENGTH == KS_TASK_KEY_BYTES, "key size");
_Static_assert(sizeof(KSBox) == sizeof(ks_box), "box layout");
_Static_assert(sizeof(KSPoint3) == sizeof(ks_point3f), "point layout");

BOOL ks__objc_fail(NSError **error, ks_status status, const char *message) {
    if (error == NULL) return NO;
    const char *text = (message != NULL && message[0] != '\0') ? message : ks_status_string(status);
    NSString *desc = [NSString stringWithUTF8String:text];
    if (desc == nil) desc = [NSString stringWithUTF8String:ks_status_string(status)];
    NSString *name = [NSString stringWithUTF8String:ks_status_string(status)];
    NSDictionary *info =
        [NSDictionary dictionaryWithObjectsAndKeys:desc, NSLocalizedDescriptionKey, name,
                                                   KSErrorStatusNameKey, nil];
    *error = [NSError errorWithDomain:KSErrorDomain code:(NSInteger)status userInfo:info];
    return NO;
}

BOOL ks__objc_ok(ks_status status, const void *handle, NSError **error) {
    if (status == KS_STATUS_OK) return YES;
    return ks__objc_fail(error, status, ks_last_error(handle));
}

static BOOL ks_objc_check_options(KSTaskOptions *options, Class expected, const char *task,
                                  NSError **error) {
    if (options == nil || [options class] == [KSTaskOptions class] ||
        [options isKindOfClass:expected])
        return YES;
    char msg[200];
    snprintf(msg, sizeof(msg), "%s: options must be %s or KSTaskOptions, got %s", task,
             [NSStringFromClass(expected) UTF8String],
             [NSStringFromClass([options class]) UTF8String]);
    return ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, msg);
}

void ks__objc_wipe(void *p, size_t n) {
    volatile uint8_t *v = (volatile uint8_t *)p;
    for (size_t i = 0; i < n; i++)
        v[i] = 0;
}

/* The key state of one task create (or swap) call (ks_task_options.key_user): the key copied out
 * of KSTaskOptions.key (or the swap's key), or the options whose provider the C task calls back
 * (nil for a swap). malloc'ed so that it outlives ks__objc_task_desc (ks__objc_swap_source);
 * wiped and freed by ks__objc_task_desc_end. */
typedef struct ks_objc_key_state {
    uint8_t key[KS_TASK_KEY_BYTES];
    KSTaskOptions *options; /* retained */
} ks_objc_key_state;

/* ks_task_key_fn over the options' block or KSKeyProvider object: called by the C task inside
 * create, on the initializing thread. The NSData is copied straight into the task's key_out
 * (which the task wipes); a pool drains what the provider autoreleased right away. */
static ks_status ks_objc_key_provider(void *user, const char *model_name, uint8_t *key_out,
                                      size_t key_cap, size_t *key_bytes_out) {
    ks_objc_key_state *state = user;
    NSAutoreleasePool *pool = [[NSAutoreleasePool alloc] init];
    NSString *name = [NSString stringWithUTF8String:model_name != NULL ? model_name : ""];
    NSData *key = nil;
    if (name != nil) {
#if defined(__BLOCKS__)
        KSKeyProviderBlock block = state->options.keyProvider;
        if (block != nil)
            key = block(name);
        else
#endif
            key = [state->options.keyProviderObject keyForEntryName:name];
    }
    ks_status st = KS_STATUS_INVALID_ARGUMENT; /* nil: "key provider refused model '...'" */
    if (key != nil) {
        NSUInteger n = [key length];
        if (n <= key_cap) [key getBytes:key_out length:n];
        *key_bytes_out = n; /* another size: the task names it */
        st = KS_STATUS_OK;
    }
    [pool drain];
    return st;
}

static BOOL ks_objc_task_options(KSTaskOptions *options, ks_task_options *out, NSError **error) {
    memset(out, 0, sizeof(*out));
    if (options == nil) return YES;
    out->mode = (ks_running_mode)options.mode;
    out->num_threads = options.numThreads;
    out->min_score = options.minScore;
    out->max_results = options.maxResults;
    out->rotation = (ks_rotation)options.rotation;
    out->mirror = options.mirror ? 1 : 0;
    KSBox roi = options.regionOfInterest;
    out->roi.x = roi.x;
    out->roi.y = roi.y;
    out->roi.w = roi.width;
    out->roi.h = roi.height;
    out->smoothing = options.smoothing;
    out->model_path = options.modelPath != nil ? [options.modelPath UTF8String] : NULL;
    out->precision = (ks_precision)options.precision;
    out->backend = (ks_backend)options.backend;
    NSData *key = options.key;
    BOOL provider = options.keyProviderObject != nil;
#if defined(__BLOCKS__)
    provider = provider || options.keyProvider != nil;
#endif
    if (key == nil && !provider) return YES;
    if (key != nil && [key length] != KS_TASK_KEY_BYTES) {
        char msg[160];
        snprintf(msg, sizeof(msg), "KSTaskOptions.key: %lu bytes; a ks-protect key is %d bytes",
                 (unsigned long)[key length], KS_TASK_KEY_BYTES);
        return ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, msg);
    }
    ks_objc_key_state *state = calloc(1, sizeof(*state));
    if (state == NULL) return ks__objc_fail(error, KS_STATUS_OUT_OF_MEMORY, "task key buffer");
    state->options = [options retain];
    out->key_user = state;
    if (key != nil) {
        /* getBytes: works for any NSData (also discontiguous ones, which -bytes would flatten
         * into a buffer nobody wipes). */
        [key getBytes:state->key length:KS_TASK_KEY_BYTES];
        out->key = state->key;
        out->key_bytes = KS_TASK_KEY_BYTES;
    } else {
        out->key_provider = ks_objc_key_provider;
    }
    return YES;
}

void ks__objc_task_desc_end(ks_task_options *task) {
    ks_objc_key_state *state = task->key_user;
    if (state == NULL) return;
    ks__objc_wipe(state->key, sizeof(state->key));
    [state->options release];
    free(state);
    task->key_user = NULL;
    task->key = NULL;
}

BOOL ks__objc_swap_source(NSString *path, NSData *key, const char *task, ks_task_options *source,
                          NSError **error) {
    memset(source, 0, sizeof(*source));
    char msg[200];
    if (path == nil) {
        snprintf(msg, sizeof(msg), "%s swapModelAtPath: the path is nil", task);
        return ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, msg);
    }
    if (key != nil && [key length] != KS_TASK_KEY_BYTES) {
        snprintf(msg, sizeof(msg),
                 "%s swapModelAtPath: key of %lu bytes; a ks-protect key is %d bytes", task,
                 (unsigned long)[key length], KS_TASK_KEY_BYTES);
        return ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, msg);
    }
    if (key != nil) {
        ks_objc_key_state *state = calloc(1, sizeof(*state));
        if (state == NULL) return ks__objc_fail(error, KS_STATUS_OUT_OF_MEMORY, "task key buffer");
        [key getBytes:state->key length:KS_TASK_KEY_BYTES]; /* as in ks_objc_task_options */
        source->key_user = state;
        source->key = state->key;
        source->key_bytes = KS_TASK_KEY_BYTES;
    }
    source->model_path = [path UTF8String];
    return YES;
}

BOOL ks__objc_task_desc(KSTaskOptions *options, Class expected, const char *task, void *desc,
                        size_t desc_bytes, ks_task_options *task_out, NSError **error) {
    if (!ks_objc_check_options(options, expected, task, error)) return NO;
    memset(desc, 0, desc_bytes);
    return ks_objc_task_options(options, task_out, error);
}

NSArray *ks__objc_results(const void *results, const void *items, size_t item_bytes, uint32_t count,
                          Class item_class) {
    NSMutableArray *out = [NSMutableArray arrayWithCapacity:count];
    const uint8_t *item = (const uint8_t *)items;
    for (uint32_t i = 0; i < count; i++, item += item_bytes) {
        id<KSObjCResultItem> object = [[item_class alloc] ks_initWithItem:item results:results];
        [out addObject:object];
        [object release];
    }
    return [[out copy] autorelease];
}

/* ---- KSImage -------------------------------------------------------------------------------- */

static int ks_objc_num_planes(KSPixelFormat format) {
    switch (format) {
    case KSPixelFormatNV12:
    case KSPixelFormatNV21:
        return 2;
    case KSPixelFormatI420:
        return 3;
    default:
        return 1;
    }
}

static int ks_objc_bytes_per_px(KSPixelFormat format) {
    switch (format) {
    case KSPixelFormatRGBA:
    case KSPixelFormatBGRA:
        return 4;
    case KSPixelFormatRGB:
    case KSPixelFormatBGR:
        return 3;
    default:
        return 1;
    }
}

/* Row bytes and row count of plane `i`. */
static void ks_objc_plane_geometry(KSPixelFormat format, int32_t width, int32_t height, int i,
                                   int64_t *row_bytes, int64_t *rows) {
    int64_t half_w = ((int64_t)width + 1) / 2, half_h = ((int64_t)height + 1) / 2;
    if (i == 0) {
        *row_bytes = (int64_t)width * ks_objc_bytes_per_px(format);
        *rows = height;
    } else if (format == KSPixelFormatI420) {
        *row_bytes = half_w;
        *rows = half_h;
    } else {
        *row_bytes = 2 * half_w;
        *rows = half_h;
    }
}

@implementation KSImage

@synthesize fullRangeYUV = _fullRange;

/* Defined inside the implementation: it reads the private ivars. */
BOOL ks__objc_image_view(KSImage *image, ks_image *out, NSError **error) {
    if (image == nil)
        return ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, "KSImage: image is nil");
    memset(out, 0, sizeof(*out));
    out->format = (ks_pixel_format)image->_format;
    out->width_px = image->_width;
    out->height_px = image->_height;
    for (int i = 0; i < 3; i++) {
        out->planes[i] = image->_planes[i];
        out->stride_bytes[i] = image->_strides[i];
    }
    out->yuv_range = image->_fullRange ? KS_YUV_BT601_FULL : KS_YUV_BT601_VIDEO;
    return YES;
}

- (instancetype)initWithData:(NSData *)data
                      format:(KSPixelFormat)format
                       width:(int32_t)width
                      height:(int32_t)height
                       error:(NSError **)error {
    return [self initWithData:data
                       format:format
                        width:width
                       height:height
                  strideBytes:0
                        error:error];
}

- (instancetype)initWithData:(NSData *)data
                      format:(KSPixelFormat)format
                       width:(int32_t)width
                      height:(int32_t)height
                 strideBytes:(int32_t)strideBytes
                       error:(NSError **)error {
    if (data == nil) {
        ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, "KSImage: data is nil");
        return ks__objc_abandon(self);
    }
    if (format < KSPixelFormatRGBA || format > KSPixelFormatI420 || width <= 0 || height <= 0 ||
        width > KS_IMAGE_MAX_DIM_PX || height > KS_IMAGE_MAX_DIM_PX || strideBytes < 0) {
        char msg[160];
        snprintf(msg, sizeof(msg), "KSImage: bad format %ld, size %dx%d or stride %d", (long)format,
                 (int)width, (int)height, (int)strideBytes);
        ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, msg);
        return ks__objc_abandon(self);
    }
    int num_planes = ks_objc_num_planes(format);
    const uint8_t *base = (const uint8_t *)[data bytes];
    const void *planes[3] = {NULL, NULL, NULL};
    int32_t strides[3] = {0, 0, 0};
    int64_t offset = 0;
    for (int i = 0; i < num_planes; i++) {
        int64_t row_bytes, rows;
        ks_objc_plane_geometry(format, width, height, i, &row_bytes, &rows);
        int64_t stride = row_bytes;
        if (strideBytes > 0)
            stride = i == 0 || format != KSPixelFormatI420 ? strideBytes : (strideBytes + 1) / 2;
        if (stride > INT32_MAX) stride = INT32_MAX; /* rejected below: too large for the data */
        planes[i] = base + offset;
        strides[i] = (int32_t)stride;
        /* The last row needs only its own bytes, not a whole stride. */
        offset += stride * (rows - 1) + row_bytes;
        if (i + 1 < num_planes) offset += stride - row_bytes;
        if (offset > (int64_t)[data length]) {
            char msg[200];
            snprintf(msg, sizeof(msg),
                     "KSImage: %lu bytes of data, but a %dx%d %s image with stride %d needs at "
                     "least %lld",
                     (unsigned long)[data length], (int)width, (int)height,
                     ks_pixel_format_string((ks_pixel_format)format), (int)strideBytes,
                     (long long)offset);
            ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, msg);
            return ks__objc_abandon(self);
        }
    }
    return [self initWithPlanes:planes
                        strides:strides
                      numPlanes:(NSUInteger)num_planes
                         format:format
                          width:width
                         height:height
                          owner:data
                          error:error];
}

- (instancetype)initWithPlanes:(const void *const *)planes
                       strides:(const int32_t *)strides
                     numPlanes:(NSUInteger)numPlanes
                        format:(KSPixelFormat)format
                         width:(int32_t)width
                        height:(int32_t)height
                         owner:(id)owner
                         error:(NSError **)error {
    self = [super init];
    if (self == nil) return nil;
    char msg[160];
    msg[0] = '\0';
    if (planes == NULL || strides == NULL) {
        snprintf(msg, sizeof(msg), "KSImage: planes or strides is NULL");
    } else if (format < KSPixelFormatRGBA || format > KSPixelFormatI420 || width <= 0 ||
               height <= 0 || width > KS_IMAGE_MAX_DIM_PX || height > KS_IMAGE_MAX_DIM_PX) {
        snprintf(msg, sizeof(msg), "KSImage: bad format %ld or size %dx%d", (long)format,
                 (int)width, (int)height);
    } else if (numPlanes != (NSUInteger)ks_objc_num_planes(format)) {
        snprintf(msg, sizeof(msg), "KSImage: %s needs %d planes, got %lu",
                 ks_pixel_format_string((ks_pixel_format)format), ks_objc_num_planes(format),
                 (unsigned long)numPlanes);
    } else {
        for (NSUInteger i = 0; i < numPlanes && msg[0] == '\0'; i++) {
            int64_t row_bytes, rows;
            ks_objc_plane_geometry(format, width, height, (int)i, &row_bytes, &rows);
            if (planes[i] == NULL)
                snprintf(msg, sizeof(msg), "KSImage: plane %lu is NULL", (unsigned long)i);
            else if (strides[i] != 0 && strides[i] < row_bytes)
                snprintf(msg, sizeof(msg), "KSImage: plane %lu stride %d < row size %lld",
                         (unsigned long)i, (int)strides[i], (long long)row_bytes);
        }
    }
    if (msg[0] != '\0') {
        ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, msg);
        return ks__objc_abandon(self);
    }
    _format = format;
    _width = width;
    _height = height;
    for (NSUInteger i = 0; i < numPlanes; i++) {
        _planes[i] = planes[i];
        _strides[i] = strides[i];
    }
    _owner = [owner retain];
    return self;
}

- (void)dealloc {
    [_owner release];
    [super dealloc];
}

- (KSPixelFormat)format {
    return (KSPixelFormat)_format;
}

- (int32_t)width {
    return _width;
}

- (int32_t)height {
    return _height;
}

- (int32_t)strideBytes {
    if (_strides[0] != 0) return _strides[0];
    return _width * ks_objc_bytes_per_px((KSPixelFormat)_format);
}

@end

/* ---- KSTaskOptions -------------------------------------------------------------------------- */

@implementation KSTaskOptions

@synthesize mode = _mode;
@synthesize numThreads = _numThreads;
@synthesize minScore = _minScore;
@synthesize maxResults = _maxResults;
@synthesize rotation = _rotation;
@synthesize mirror = _mirror;
@synthesize regionOfInterest = _regionOfInterest;
@synthesize smoothing = _smoothing;
@synthesize modelPath = _modelPath;
@synthesize precision = _precision;
@synthesize backend = _backend;
@synthesize key = _key;
@synthesize keyProviderObject = _keyProviderObject;

#if defined(__BLOCKS__)
- (KSKeyProviderBlock)keyProvider {
    return _keyProvider;
}

- (void)setKeyProvider:(KSKeyProviderBlock)keyProvider {
    id copy = [keyProvider copy];
    [_keyProvider release];
    _keyProvider = copy;
}
#endif

- (id)copyWithZone:(NSZone *)zone {
    KSTaskOptions *copy = [[[self class] allocWithZone:zone] init];
    copy->_mode = _mode;
    copy->_numThreads = _numThreads;
    copy->_minScore = _minScore;
    copy->_maxResults = _maxResults;
    copy->_rotation = _rotation;
    copy->_mirror = _mirror;
    copy->_regionOfInterest = _regionOfInterest;
    copy->_smoothing = _smoothing;
    copy->_modelPath = [_modelPath copy];
    copy->_precision = _precision;
    copy->_backend = _backend;
    copy->_key = [_key retain]; /* shared, never a copy of the key bytes */
    copy->_keyProvider = [_keyProvider retain];
    copy->_keyProviderObject = [_keyProviderObject retain];
    return copy;
}

- (void)dealloc {
    [_modelPath release];
    [_key release];
    [_keyProvider release];
    [_keyProviderObject release];
    [super dealloc];
}

@end

/* ---- KSModels ------------------------------------------------------------------------------- */

@implementation KSModels

+ (NSString *)directory {
    return [NSString stringWithUTF8String:ks_models_dir()];
}

+ (BOOL)setDirectory:(NSString *)directory error:(NSError **)error {
    ks_status st = ks_set_models_dir(directory != nil ? [directory UTF8String] : NULL);
    return ks__objc_ok(st, NULL, error);
}

+ (NSString *)libraryVersion {
    return [NSString stringWithUTF8String:ks_version_string()];
}

@end
