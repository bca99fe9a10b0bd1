/* Kestrel Objective-C API: AR effects. KSEffect is a loaded .kfx package; KSEffectRenderer
 * plays it on camera frames (OpenGL ES 3.0 in the caller's current context, or the null backend
 * that runs layout, triggers and states without GL). Wraps kestrel/ar.h and kestrel/effect.h.
 *
 * Usage (the app's GL context current on this thread):
 *     KSEffect *fx = [[KSEffect alloc] initWithContentsOfFile:path error:&error];
 *     KSEffectRenderer *r = [[KSEffectRenderer alloc] initWithEffect:fx options:nil
 *                                                              error:&error];
 *     [r setColorParameter:@"lip_color" red:0.7f green:0.1f blue:0.2f alpha:1 error:&error];
 *     [r renderFaces:meshes mask:mask cameraTexture:tex width:w height:h timestampUs:t
 *            outputTexture:0 error:&error];     // 0: into framebuffer 0, upright on screen
 */
#ifndef KESTREL_OBJC_KSEFFECTRENDERER_H
#define KESTREL_OBJC_KSEFFECTRENDERER_H

#import "KSBase.h"
#import "KSFace.h"
#import "KSSegmenter.h"

NS_ASSUME_NONNULL_BEGIN

/* A loaded effect package (immutable). */
@interface KSEffect : NSObject {
  @private
    void *_effect;
}
- (instancetype KS_NULLABLE)initWithContentsOfFile:(NSString *)path error:(NSError **)error;
/* The package bytes are copied by the reader; `data` is not kept. */
- (instancetype KS_NULLABLE)initWithData:(NSData *)data error:(NSError **)error;
KS_INIT_UNAVAILABLE
/* Number of layers (manifest order). */
@property(nonatomic, readonly) NSUInteger numLayers;
@end

typedef NS_ENUM(NSInteger, KSEffectBackend) {
    KSEffectBackendGLES3 = 0, /* default: the caller's current OpenGL ES 3.0 context */
    KSEffectBackendNull = 1,  /* no GL: layout, triggers and states only */
};

@interface KSEffectRendererOptions : NSObject <NSCopying> {
  @private
    KSEffectBackend _backend;
    int32_t _width, _height;
}
@property(nonatomic, assign) KSEffectBackend backend;
/* Frame size to allocate render targets for at init (0: at the first frame). */
@property(nonatomic, assign) int32_t width;
@property(nonatomic, assign) int32_t height;
@end

/* What one layer did in the last rendered frame, for one face. */
@interface KSEffectLayerInstance : NSObject {
  @private
    BOOL _drawn;
    int32_t _faceId;
    uint32_t _spriteFrame;
    KSPoint2 _center, _size;
    float _angle;
}
KS_INIT_UNAVAILABLE
@property(nonatomic, readonly) BOOL drawn;
@property(nonatomic, readonly) int32_t faceId;
@property(nonatomic, readonly) uint32_t spriteFrame;
@property(nonatomic, readonly) KSPoint2 centerPixels;
@property(nonatomic, readonly) KSPoint2 sizePixels;
/* Counter-clockwise on screen. */
@property(nonatomic, readonly) float angleRadians;
@end

@interface KSEffectRenderer : NSObject {
  @private
    void *_renderer;
    KSEffect *_effect;
    NSMutableData *_scratch;
}
/* Retains `effect` (it must outlive the renderer). GLES3: a context must be current, and stay
 * current on this thread for every call and for the release of the renderer. */
- (instancetype KS_NULLABLE)initWithEffect:(KSEffect *)effect
                                   options:(KSEffectRendererOptions *KS_NULLABLE)options
                                     error:(NSError **)error NS_DESIGNATED_INITIALIZER;
KS_INIT_UNAVAILABLE

/* The effect being played: the init's, or the last one -swapEffect:error: installed. */
@property(nonatomic, readonly) KSEffect *effect;

/* Live swap (docs/objc.md "Live swap"; ks_ar_renderer_swap_effect): replaces the effect between
 * two frames, e.g. with a newer version installed by a KSStore (load it on any thread first).
 * Same thread and context rules as the render calls: with GLES3, on the rendering thread with
 * the context current. Every layer of `effect` is created as at init (same backend and frame
 * size); the next frame draws it with its parameters at their defaults and its states and
 * animations from their start. On success the renderer retains `effect` and releases the old
 * one; NO and *error (the init's codes, the renderer's message) leave everything as it was. */
- (BOOL)swapEffect:(KSEffect *)effect error:(NSError **)error;

/* Run-time parameters of the effect; NO and *error for an unknown name, another type or a value
 * out of range. Used from the next render on. */
- (BOOL)setColorParameter:(NSString *)name
                      red:(float)red
                    green:(float)green
                     blue:(float)blue
                    alpha:(float)alpha
                    error:(NSError **)error;
- (BOOL)setFloatParameter:(NSString *)name value:(float)value error:(NSError **)error;
/* Enum parameters: one of the options; any parameter from text ("#RRGGBB", "0.5", option). */
- (BOOL)setParameter:(NSString *)name string:(NSString *)value error:(NSError **)error;
- (BOOL)enterState:(NSString *)state error:(NSError **)error;
/* Forgets faces and states (the next frame's timestamp becomes time 0). */
- (void)reset;

/* Renders one frame over a GL_TEXTURE_2D camera texture (RGBA, row 0 = top; 0 with the null
 * backend) into outputTexture (0: framebuffer 0, flipped upright on screen). faces: landmarker
 * results (VIDEO mode for stable ids); mask: nil = everything is person. */
- (BOOL)renderFaces:(KS_ARRAY(KSFaceMesh *) *)faces
               mask:(KSMask *KS_NULLABLE)mask
      cameraTexture:(uint32_t)cameraTexture
              width:(int32_t)width
             height:(int32_t)height
        timestampUs:(int64_t)timestampUs
      outputTexture:(uint32_t)outputTexture
              error:(NSError **)error;

/* Renders over an RGBA image (uploaded each frame) and reads the result back into `output`
 * (resized to width * height * 4 bytes; nil: no readback, e.g. the null backend). */
- (BOOL)renderFaces:(KS_ARRAY(KSFaceMesh *) *)faces
               mask:(KSMask *KS_NULLABLE)mask
        cameraImage:(KSImage *)image
        timestampUs:(int64_t)timestampUs
       outputPixels:(NSMutableData *KS_NULLABLE)output
              error:(NSError **)error;

/* Layer `layerIndex` for face `faceIndex` of the last frame (0 for frame-wide layers), or nil
 * and *error for out-of-range indices. */
- (KSEffectLayerInstance *KS_NULLABLE)layerInstanceAtIndex:(NSUInteger)layerIndex
                                                 faceIndex:(NSUInteger)faceIndex
                                                     error:(NSError **)error;
@end

NS_ASSUME_NONNULL_END

#endif /* KESTREL_OBJC_KSEFFECTRENDERER_H */
