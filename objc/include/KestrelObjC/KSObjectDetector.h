/* Kestrel Objective-C API: object detection (YOLOX / NanoDet bundles, COCO-80 by default) and
 * image classification. Wraps kestrel/detect.h and kestrel/classify.h.
 */
#ifndef KESTREL_OBJC_KSOBJECTDETECTOR_H
#define KESTREL_OBJC_KSOBJECTDETECTOR_H

#import "KSBase.h"

NS_ASSUME_NONNULL_BEGIN

@interface KSObjectDetectorOptions : KSTaskOptions
@end

@interface KSDetectedObject : NSObject {
  @private
    KSBox _box;
    int32_t _classId;
    NSString *_label;
    float _score;
    int32_t _trackingId;
}
KS_INIT_UNAVAILABLE
@property(nonatomic, readonly) KSBox box;
@property(nonatomic, readonly) int32_t classId;
/* "" when the bundle has no labels. */
@property(nonatomic, readonly, copy) NSString *label;
@property(nonatomic, readonly) float score;
/* VIDEO: stable id >= 1; else -1. */
@property(nonatomic, readonly) int32_t trackingId;
@end

@interface KSObjectDetector : NSObject {
  @private
    void *_detector;
}
- (instancetype KS_NULLABLE)initWithOptions:(KSTaskOptions *KS_NULLABLE)options
                                      error:(NSError **)error NS_DESIGNATED_INITIALIZER;
KS_INIT_UNAVAILABLE
/* Objects by descending score (possibly empty), or nil on failure. */
- (KS_ARRAY(KSDetectedObject *) * KS_NULLABLE)detectInImage:(KSImage *)image
                                                timestampUs:(int64_t)timestampUs
                                                      error:(NSError **)error;
/* Live swap: see KSFaceDetector. Any thread, also while another thread runs this task. */
- (BOOL)swapModelAtPath:(NSString *)path error:(NSError **)error;
- (BOOL)swapModelAtPath:(NSString *)path key:(NSData *KS_NULLABLE)key error:(NSError **)error;
/* Live swaps taken so far (ks_task_stats.model_generation). */
@property(nonatomic, readonly) uint64_t modelGeneration;
@end

@interface KSImageClassifierOptions : KSTaskOptions
@end

@interface KSCategory : NSObject {
  @private
    int32_t _classId;
    NSString *_label;
    float _score;
}
KS_INIT_UNAVAILABLE
@property(nonatomic, readonly) int32_t classId;
@property(nonatomic, readonly, copy) NSString *label;
@property(nonatomic, readonly) float score;
@end

@interface KSImageClassifier : NSObject {
  @private
    void *_classifier;
}
- (instancetype KS_NULLABLE)initWithOptions:(KSTaskOptions *KS_NULLABLE)options
                                      error:(NSError **)error NS_DESIGNATED_INITIALIZER;
KS_INIT_UNAVAILABLE
/* The top maxResults (default 5) categories by descending score, or nil on failure. */
- (KS_ARRAY(KSCategory *) * KS_NULLABLE)classifyImage:(KSImage *)image
                                          timestampUs:(int64_t)timestampUs
                                                error:(NSError **)error;
/* Live swap: see KSFaceDetector. Any thread, also while another thread runs this task. */
- (BOOL)swapModelAtPath:(NSString *)path error:(NSError **)error;
- (BOOL)swapModelAtPath:(NSString *)path key:(NSData *KS_NULLABLE)key error:(NSError **)error;
/* Live swaps taken so far (ks_task_stats.model_generation). */
@property(nonatomic, readonly) uint64_t modelGeneration;
@end

NS_ASSUME_NONNULL_END

#endif /* KESTREL_OBJC_KSOBJECTDETECTOR_H */
