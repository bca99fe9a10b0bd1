/* Kestrel Objective-C API: hand landmarker (21 landmarks, world landmarks, handedness). Wraps
 * kestrel/hand.h (landmark order KS_HAND_WRIST ... and the handedness convention there).
 */
#ifndef KESTREL_OBJC_KSHAND_H
#define KESTREL_OBJC_KSHAND_H

#import "KSBase.h"

NS_ASSUME_NONNULL_BEGIN

#define KS_HAND_LANDMARK_COUNT 21

typedef NS_ENUM(NSInteger, KSHandModel) {
    KSHandModelFull = 0, /* default */
    KSHandModelLite = 1,
};

/* The person's real hand, for any mirror option. */
typedef NS_ENUM(NSInteger, KSHandedness) {
    KSHandednessLeft = 0,
    KSHandednessRight = 1,
};

@interface KSHandLandmarkerOptions : KSTaskOptions {
  @private
    KSHandModel _model;
    float _minPresence;
}
@property(nonatomic, assign) KSHandModel model;
/* 0: 0.5. */
@property(nonatomic, assign) float minPresence;
@end

@interface KSHand : NSObject {
  @private
    int32_t _trackingId;
    KSBox _box;
    float _score;
    KSHandedness _handedness;
    float _handednessScore;
    KSPoint3 _landmarks[KS_HAND_LANDMARK_COUNT];
    KSPoint3 _worldLandmarks[KS_HAND_LANDMARK_COUNT];
}
KS_INIT_UNAVAILABLE
@property(nonatomic, readonly) int32_t trackingId;
@property(nonatomic, readonly) KSBox box;
@property(nonatomic, readonly) float score;
@property(nonatomic, readonly) KSHandedness handedness;
@property(nonatomic, readonly) float handednessScore;
/* Always 21. */
@property(nonatomic, readonly) NSUInteger numLandmarks;
@property(nonatomic, readonly) const KSPoint3 *landmarks KS_INNER_POINTER;
@property(nonatomic, readonly) const KSPoint3 *worldLandmarks KS_INNER_POINTER;
- (KSPoint3)landmarkAtIndex:(NSUInteger)index;
@end

@interface KSHandLandmarker : NSObject {
  @private
    void *_landmarker;
}
- (instancetype KS_NULLABLE)initWithOptions:(KSTaskOptions *KS_NULLABLE)options
                                      error:(NSError **)error NS_DESIGNATED_INITIALIZER;
KS_INIT_UNAVAILABLE
- (KS_ARRAY(KSHand *) * KS_NULLABLE)detectInImage:(KSImage *)image
                                      timestampUs:(int64_t)timestampUs
                                            error:(NSError **)error;
/* Live swap: see KSFaceDetector. Any thread, also while another thread runs this task. */
- (BOOL)swapModelAtPath:(NSString *)path error:(NSError **)error;
- (BOOL)swapModelAtPath:(NSString *)path key:(NSData *KS_NULLABLE)key error:(NSError **)error;
/* Live swaps taken so far (ks_task_stats.model_generation). */
@property(nonatomic, readonly) uint64_t modelGeneration;
@end

NS_ASSUME_NONNULL_END

#endif /* KESTREL_OBJC_KSHAND_H */
