/* KSEffect and KSEffectRenderer over kestrel/effect.h and kestrel/ar.h (manual retain/release).
 * Without the AR renderer in the build (KS_OBJC_HAVE_AR undefined) the classes exist and their
 * initializers fail with KSErrorCodeUnsupported, so apps link either way. */
#import "KSPrivate.h"

#include <string.h>

#ifdef KS_OBJC_HAVE_AR
#include "kestrel/ar.h"
#include "kestrel/effect.h"

_Static_assert(KSEffectBackendNull == (NSInteger)KS_AR_BACKEND_NULL, "backends");
#endif

#ifndef KS_OBJC_HAVE_AR
static const char ks_objc_no_ar[] =
    "KSEffectRenderer: this build has no AR renderer (ar_render was skipped at configure time)";
#endif

@interface KSEffect ()
- (void *)ks_handle;
@end

@implementation KSEffect

#ifdef KS_OBJC_HAVE_AR
/* The end of both initializers: keeps `fx`, opened with status `st`, or releases self and sets
 * *error (`nilMessage` non-NULL: the input was nil, so nothing was opened). */
- (instancetype)ks_keepEffect:(ks_effect *)fx
                       status:(ks_status)st
                   nilMessage:(const char *)nilMessage
                        error:(NSError **)error {
    if (st != KS_STATUS_OK) {
        ks__objc_fail(error, st, nilMessage != NULL ? nilMessage : ks_last_error(NULL));
        return ks__objc_abandon(self);
    }
    _effect = fx;
    return self;
}
#endif

- (instancetype)initWithContentsOfFile:(NSString *)path error:(NSError **)error {
    self = [super init];
    if (self == nil) return nil;
#ifdef KS_OBJC_HAVE_AR
    ks_effect *fx = NULL;
    ks_status st = path != nil ? ks_effect_open_file([path UTF8String], NULL, &fx)
                               : KS_STATUS_INVALID_ARGUMENT;
    return [self ks_keepEffect:fx
                        status:st
                    nilMessage:path != nil ? NULL : "KSEffect: path is nil"
                         error:error];
#else
    ks__objc_fail(error, KS_STATUS_UNSUPPORTED, ks_objc_no_ar);
    return ks__objc_abandon(self);
#endif
}

- (instancetype)initWithData:(NSData *)data error:(NSError **)error {
    self = [super init];
    if (self == nil) return nil;
#ifdef KS_OBJC_HAVE_AR
    ks_effect *fx = NULL;
    ks_status st = data != nil ? ks_effect_open_memory([data bytes], [data length], NULL, &fx)
                               : KS_STATUS_INVALID_ARGUMENT;
    return [self ks_keepEffect:fx
                        status:st
                    nilMessage:data != nil ? NULL : "KSEffect: data is nil"
                         error:error];
#else
    ks__objc_fail(error, KS_STATUS_UNSUPPORTED, ks_objc_no_ar);
    return ks__objc_abandon(self);
#endif
}

- (void)dealloc {
#ifdef KS_OBJC_HAVE_AR
    ks_effect_destroy((ks_effect *)_effect);
#endif
    [super dealloc];
}

- (NSUInteger)numLayers {
#ifdef KS_OBJC_HAVE_AR
    return ks_effect_num_layers((const ks_effect *)_effect);
#else
    return 0;
#endif
}

/* The C handle, for the renderer. */
- (void *)ks_handle {
    return _effect;
}

@end

@implementation KSEffectRendererOptions
@synthesize backend = _backend;
@synthesize width = _width;
@synthesize height = _height;
- (id)copyWithZone:(NSZone *)zone {
    KSEffectRendererOptions *copy = [[[self class] allocWithZone:zone] init];
    copy->_backend = _backend;
    copy->_width = _width;
    copy->_height = _height;
    return copy;
}
@end

@interface KSEffectLayerInstance ()
- (instancetype)ks_initWithDrawn:(BOOL)drawn
                          faceId:(int32_t)faceId
                     spriteFrame:(uint32_t)spriteFrame
                          center:(KSPoint2)center
                            size:(KSPoint2)size
                           angle:(float)angle;
@end

@implementation KSEffectLayerInstance
@synthesize drawn = _drawn;
@synthesize faceId = _faceId;
@synthesize spriteFrame = _spriteFrame;
@synthesize centerPixels = _center;
@synthesize sizePixels = _size;
@synthesize angleRadians = _angle;

- (instancetype)ks_initWithDrawn:(BOOL)drawn
                          faceId:(int32_t)faceId
                     spriteFrame:(uint32_t)spriteFrame
                          center:(KSPoint2)center
                            size:(KSPoint2)size
                           angle:(float)angle {
    self = [super init];
    if (self == nil) return nil;
    _drawn = drawn;
    _faceId = faceId;
    _spriteFrame = spriteFrame;
    _center = center;
    _size = size;
    _angle = angle;
    return self;
}
@end

#ifdef KS_OBJC_HAVE_AR
/* Fills the C frame's faces and mask from the Objective-C results. The mask's 8-bit pixels come
 * from KSMask.bytes, else are converted into `scratch` (resized here). */
static BOOL ks_objc_fill_frame(NSArray *faces, KSMask *mask, NSMutableData *scratch,
                               ks_ar_face faces_out[KS_AR_MAX_FACES], ks_ar_frame *frame,
                               NSError **error) {
    NSUInteger count = [faces count];
    if (count > KS_AR_MAX_FACES) count = KS_AR_MAX_FACES; /* the renderer ignores the rest too */
    for (NSUInteger i = 0; i < count; i++) {
        KSFaceMesh *mesh = [faces objectAtIndex:i];
        if (![mesh isKindOfClass:[KSFaceMesh class]])
            return ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT,
                                 "KSEffectRenderer: faces must hold KSFaceMesh objects");
        ks_ar_face *f = &faces_out[i];
        memset(f, 0, sizeof(*f));
        f->id = mesh.trackingId;
        f->num_landmarks = (uint32_t)mesh.numLandmarks;
        f->landmarks_xyz = (const float *)mesh.landmarks; /* KSPoint3 is 3 packed floats */
        f->has_pose = 1;
        memcpy(f->pose_matrix, mesh.poseMatrix, sizeof(f->pose_matrix));
        memcpy(f->projection_matrix, mesh.projectionMatrix, sizeof(f->projection_matrix));
        KSFaceExpressions e = mesh.expressions;
        f->expressions.mouth_open = e.mouthOpen;
        f->expressions.left_eye_blink = e.leftEyeBlink;
        f->expressions.right_eye_blink = e.rightEyeBlink;
        f->expressions.brow_raise = e.browRaise;
        f->expressions.smile = e.smile;
    }
    frame->num_faces = (uint32_t)count;
    frame->faces = faces_out;
    if (mask != nil) {
        const uint8_t *pixels = NULL;
        if (mask.bytes != nil) {
            pixels = (const uint8_t *)[mask.bytes bytes];
        } else {
            size_t n = (size_t)mask.width * (size_t)mask.height;
            [scratch setLength:n];
            uint8_t *dst = (uint8_t *)[scratch mutableBytes];
            const float *src = (const float *)[mask.data bytes];
            for (size_t i = 0; i < n; i++) {
                float v = src[i] < 0.0f ? 0.0f : src[i] > 1.0f ? 1.0f : src[i];
                dst[i] = (uint8_t)(v * 255.0f + 0.5f);
            }
            pixels = dst;
        }
        frame->mask.pixels = pixels;
        frame->mask.width_px = mask.width;
        frame->mask.height_px = mask.height;
    }
    return YES;
}
#endif

@implementation KSEffectRenderer
@synthesize effect = _effect;

- (instancetype)initWithEffect:(KSEffect *)effect
                       options:(KSEffectRendererOptions *)options
                         error:(NSError **)error {
    self = [super init];
    if (self == nil) return nil;
#ifdef KS_OBJC_HAVE_AR
    if (effect == nil) {
        ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, "KSEffectRenderer: effect is nil");
        return ks__objc_abandon(self);
    }
    ks_ar_renderer_desc desc;
    memset(&desc, 0, sizeof(desc));
    if (options != nil) {
        desc.backend = (ks_ar_backend)options.backend;
        desc.width_px = options.width;
        desc.height_px = options.height;
    }
    ks_ar_renderer *r = NULL;
    ks_status st = ks_ar_renderer_create(&desc, (const ks_effect *)[effect ks_handle], &r);
    if (!ks__objc_ok(st, NULL, error)) return ks__objc_abandon(self);
    _renderer = r;
    _effect = [effect retain];
    _scratch = [[NSMutableData alloc] init];
    return self;
#else
    ks__objc_fail(error, KS_STATUS_UNSUPPORTED, ks_objc_no_ar);
    return ks__objc_abandon(self);
#endif
}

- (void)dealloc {
#ifdef KS_OBJC_HAVE_AR
    ks_ar_renderer_destroy((ks_ar_renderer *)_renderer); /* before the effect it plays */
#endif
    [_effect release];
    [_scratch release];
    [super dealloc];
}

#ifdef KS_OBJC_HAVE_AR
/* Status of a parameter/state call, with the renderer's message. */
- (BOOL)ks_check:(ks_status)st error:(NSError **)error {
    return ks__objc_ok(st, _renderer, error);
}
#endif

- (BOOL)swapEffect:(KSEffect *)effect error:(NSError **)error {
#ifdef KS_OBJC_HAVE_AR
    if (effect == nil)
        return ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, "swapEffect: effect is nil");
    ks_status st = ks_ar_renderer_swap_effect((ks_ar_renderer *)_renderer,
                                              (const ks_effect *)[effect ks_handle]);
    if (![self ks_check:st error:error]) return NO; /* still drawing (and retaining) the old */
    /* The renderer no longer uses the old ks_effect: the old KSEffect may go now. */
    KSEffect *old = _effect;
    _effect = [effect retain];
    [old release];
    return YES;
#else
    return ks__objc_fail(error, KS_STATUS_UNSUPPORTED, ks_objc_no_ar);
#endif
}

- (BOOL)setColorParameter:(NSString *)name
                      red:(float)red
                    green:(float)green
                     blue:(float)blue
                    alpha:(float)alpha
                    error:(NSError **)error {
#ifdef KS_OBJC_HAVE_AR
    const float rgba[4] = {red, green, blue, alpha};
    return
        [self ks_check:ks_ar_set_param_color((ks_ar_renderer *)_renderer, [name UTF8String], rgba)
                 error:error];
#else
    return ks__objc_fail(error, KS_STATUS_UNSUPPORTED, ks_objc_no_ar);
#endif
}

- (BOOL)setFloatParameter:(NSString *)name value:(float)value error:(NSError **)error {
#ifdef KS_OBJC_HAVE_AR
    return
        [self ks_check:ks_ar_set_param_float((ks_ar_renderer *)_renderer, [name UTF8String], value)
                 error:error];
#else
    return ks__objc_fail(error, KS_STATUS_UNSUPPORTED, ks_objc_no_ar);
#endif
}

- (BOOL)setParameter:(NSString *)name string:(NSString *)value error:(NSError **)error {
#ifdef KS_OBJC_HAVE_AR
    return [self ks_check:ks_ar_set_param_string((ks_ar_renderer *)_renderer, [name UTF8String],
                                                 [value UTF8String])
                    error:error];
#else
    return ks__objc_fail(error, KS_STATUS_UNSUPPORTED, ks_objc_no_ar);
#endif
}

- (BOOL)enterState:(NSString *)state error:(NSError **)error {
#ifdef KS_OBJC_HAVE_AR
    return [self ks_check:ks_ar_enter_state((ks_ar_renderer *)_renderer, [state UTF8String])
                    error:error];
#else
    return ks__objc_fail(error, KS_STATUS_UNSUPPORTED, ks_objc_no_ar);
#endif
}

- (void)reset {
#ifdef KS_OBJC_HAVE_AR
    ks_ar_reset((ks_ar_renderer *)_renderer);
#endif
}

- (BOOL)renderFaces:(NSArray *)faces
               mask:(KSMask *)mask
      cameraTexture:(uint32_t)cameraTexture
              width:(int32_t)width
             height:(int32_t)height
        timestampUs:(int64_t)timestampUs
      outputTexture:(uint32_t)outputTexture
              error:(NSError **)error {
#ifdef KS_OBJC_HAVE_AR
    ks_ar_face c_faces[KS_AR_MAX_FACES];
    ks_ar_frame frame;
    memset(&frame, 0, sizeof(frame));
    frame.width_px = width;
    frame.height_px = height;
    frame.timestamp_us = timestampUs;
    frame.texture = cameraTexture;
    if (!ks_objc_fill_frame(faces, mask, _scratch, c_faces, &frame, error)) return NO;
    ks_ar_output out;
    memset(&out, 0, sizeof(out));
    if (outputTexture != 0)
        out.texture = outputTexture;
    else
        out.to_framebuffer = 1;
    return [self ks_check:ks_ar_render((ks_ar_renderer *)_renderer, &frame, &out) error:error];
#else
    return ks__objc_fail(error, KS_STATUS_UNSUPPORTED, ks_objc_no_ar);
#endif
}

- (BOOL)renderFaces:(NSArray *)faces
               mask:(KSMask *)mask
        cameraImage:(KSImage *)image
        timestampUs:(int64_t)timestampUs
       outputPixels:(NSMutableData *)output
              error:(NSError **)error {
#ifdef KS_OBJC_HAVE_AR
    ks_image view;
    if (!ks__objc_image_view(image, &view, error)) return NO;
    if (view.format != KS_PIXEL_FORMAT_RGBA)
        return ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT,
                             "KSEffectRenderer: the camera image must be RGBA");
    ks_ar_face c_faces[KS_AR_MAX_FACES];
    ks_ar_frame frame;
    memset(&frame, 0, sizeof(frame));
    frame.width_px = view.width_px;
    frame.height_px = view.height_px;
    frame.timestamp_us = timestampUs;
    frame.pixels = (const uint8_t *)view.planes[0];
    frame.stride_bytes = (size_t)view.stride_bytes[0];
    if (!ks_objc_fill_frame(faces, mask, _scratch, c_faces, &frame, error)) return NO;
    ks_ar_output out;
    memset(&out, 0, sizeof(out));
    if (output != nil) {
        [output setLength:(NSUInteger)view.width_px * (NSUInteger)view.height_px * 4u];
        out.pixels = (uint8_t *)[output mutableBytes];
    }
    return [self ks_check:ks_ar_render((ks_ar_renderer *)_renderer, &frame, &out) error:error];
#else
    return ks__objc_fail(error, KS_STATUS_UNSUPPORTED, ks_objc_no_ar);
#endif
}

- (KSEffectLayerInstance *)layerInstanceAtIndex:(NSUInteger)layerIndex
                                      faceIndex:(NSUInteger)faceIndex
                                          error:(NSError **)error {
#ifdef KS_OBJC_HAVE_AR
    ks_ar_layer_instance li;
    memset(&li, 0, sizeof(li));
    if (layerIndex > UINT32_MAX || faceIndex > UINT32_MAX) {
        ks__objc_fail(error, KS_STATUS_INVALID_ARGUMENT, "KSEffectRenderer: index out of range");
        return nil;
    }
    ks_status st = ks_ar_get_layer_instance((const ks_ar_renderer *)_renderer, (uint32_t)layerIndex,
                                            (uint32_t)faceIndex, &li);
    if (!ks__objc_ok(st, _renderer, error)) return nil;
    KSPoint2 center = {li.center_px[0], li.center_px[1]};
    KSPoint2 size = {li.size_px[0], li.size_px[1]};
    KSEffectLayerInstance *inst = [[KSEffectLayerInstance alloc] ks_initWithDrawn:li.drawn != 0
                                                                           faceId:li.face_id
                                                                      spriteFrame:li.sprite_frame
                                                                           center:center
                                                                             size:size
                                                                            angle:li.angle_rad];
    return [inst autorelease];
#else
    ks__objc_fail(error, KS_STATUS_UNSUPPORTED, ks_objc_no_ar);
    return nil;
#endif
}

@end
