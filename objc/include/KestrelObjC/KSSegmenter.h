/* Kestrel Objective-C API: person segmentation (selfie segmentation). Wraps kestrel/segment.h.
 *
 * Usage:
 *     KSSegmenter *seg = [[KSSegmenter alloc] initWithOptions:nil error:&error];
 *     KSMask *mask = [seg segmentImage:frame timestampUs:t error:&error];
 *     float p = [mask probabilityAtX:10 y:20];   // 0 background .. 1 person
 */
#ifndef KESTREL_OBJC_KSSEGMENTER_H
#define KESTREL_OBJC_KSSEGMENTER_H

#import "KSBase.h"

NS_ASSUME_NONNULL_BEGIN

/* A person probability mask at the upright input size. */
@interface KSMask : NSObject {
  @private
    int32_t _width, _height;
    NSData *_data;
    NSData *_bytes;
    float _personFraction;
}
KS_INIT_UNAVAILABLE
@property(nonatomic, readonly) int32_t width;
@property(nonatomic, readonly) int32_t height;
/* width * height float probabilities 0..1, row-major. */
@property(nonatomic, readonly) NSData *data;
/* width * height bytes round(255 * p), or nil (KSSegmenterOptions.outputBytes). */
@property(nonatomic, readonly) NSData *KS_NULLABLE bytes;
/* Fraction of pixels with probability >= 0.5. */
@property(nonatomic, readonly) float personFraction;
/* 0 outside the mask. */
- (float)probabilityAtX:(int32_t)x y:(int32_t)y;
@end

typedef NS_ENUM(NSInteger, KSSegmenterModel) {
    KSSegmenterModelGeneral = 0,   /* 256x256 */
    KSSegmenterModelLandscape = 1, /* 144x256, faster, for 16:9 video */
};

@interface KSSegmenterOptions : KSTaskOptions {
  @private
    KSSegmenterModel _model;
    BOOL _outputBytes;
}
@property(nonatomic, assign) KSSegmenterModel model;
/* YES: masks also carry 8-bit `bytes`. */
@property(nonatomic, assign) BOOL outputBytes;
@end

@interface KSSegmenter : NSObject {
  @private
    void *_segmenter;
}
- (instancetype KS_NULLABLE)initWithOptions:(KSTaskOptions *KS_NULLABLE)options
                                      error:(NSError **)error NS_DESIGNATED_INITIALIZER;
KS_INIT_UNAVAILABLE
- (KSMask *KS_NULLABLE)segmentImage:(KSImage *)image
                        timestampUs:(int64_t)timestampUs
                              error:(NSError **)error;
/* Live swap: see KSFaceDetector. Any thread, also while another thread runs this task. */
- (BOOL)swapModelAtPath:(NSString *)path error:(NSError **)error;
- (BOOL)swapModelAtPath:(NSString *)path key:(NSData *KS_NULLABLE)key error:(NSError **)error;
/* Live swaps taken so far (ks_task_stats.model_generation). */
@property(nonatomic, readonly) uint64_t modelGeneration;
@end

NS_ASSUME_NONNULL_END

#endif /* KESTREL_OBJC_KSSEGMENTER_H */
