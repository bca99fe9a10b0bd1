/* Kestrel Objective-C API: pose landmarker (33 BlazePose landmarks, world landmarks, optional
 * person mask). Wraps kestrel/pose.h (landmark order: KS_POSE_NOSE ... there).
 */
#ifndef KESTREL_OBJC_KSPOSE_H
#define KESTREL_OBJC_KSPOSE_H

#import "KSBase.h"
#import "KSSegmenter.h"

NS_ASSUME_NONNULL_BEGIN

#define KS_POSE_LANDMARK_COUNT 33

typedef NS_ENUM(NSInteger, KSPoseModel) {
    KSPoseModelFull = 0, /* default */
    KSPoseModelLite = 1,
    KSPoseModelHeavy = 2,
};

typedef struct KSPoseLandmark {
    float x, y;       /* upright image pixels */
    float z;          /* pixels (scale of x), smaller = closer; hips near 0 */
    float visibility; /* 0..1 */
    float presence;   /* 0..1 */
} KSPoseLandmark;

@interface KSPoseLandmarkerOptions : KSTaskOptions {
  @private
    KSPoseModel _model;
    float _minPresence;
    BOOL _outputSegmentation;
}
@property(nonatomic, assign) KSPoseModel model;
/* 0: 0.5. */
@property(nonatomic, assign) float minPresence;
/* YES: each pose carries a person mask. */
@property(nonatomic, assign) BOOL outputSegmentation;
@end

@interface KSPose : NSObject {
  @private
    int32_t _trackingId;
    KSBox _box;
    float _score;
    KSPoseLandmark _landmarks[KS_POSE_LANDMARK_COUNT];
    KSPoint3 _worldLandmarks[KS_POSE_LANDMARK_COUNT];
    KSMask *_mask;
}
KS_INIT_UNAVAILABLE
/* VIDEO: stable while tracked (>= 1); IMAGE: 1 + index. */
@property(nonatomic, readonly) int32_t trackingId;
@property(nonatomic, readonly) KSBox box;
@property(nonatomic, readonly) float score;
/* Always 33. */
@property(nonatomic, readonly) NSUInteger numLandmarks;
/* 33 landmarks, valid while the pose lives. */
@property(nonatomic, readonly) const KSPoseLandmark *landmarks KS_INNER_POINTER;
/* 33 points in meters, origin between the hips. */
@property(nonatomic, readonly) const KSPoint3 *worldLandmarks KS_INNER_POINTER;
/* Out-of-range indices give zeros. */
- (KSPoseLandmark)landmarkAtIndex:(NSUInteger)index;
- (KSPoint3)worldLandmarkAtIndex:(NSUInteger)index;
/* The person mask, nil unless outputSegmentation. */
@property(nonatomic, readonly) KSMask *KS_NULLABLE mask;
@end

@interface KSPoseLandmarker : NSObject {
  @private
    void *_landmarker;
}
- (instancetype KS_NULLABLE)initWithOptions:(KSTaskOptions *KS_NULLABLE)options
                                      error:(NSError **)error NS_DESIGNATED_INITIALIZER;
KS_INIT_UNAVAILABLE
/* Poses sorted by tracking id (possibly empty), or nil on failure. */
- (KS_ARRAY(KSPose *) * KS_NULLABLE)detectInImage:(KSImage *)image
                                      timestampUs:(int64_t)timestampUs
                                            error:(NSError **)error;
/* Live swap: see KSFaceDetector. Any thread, also while another thread runs this task. */
- (BOOL)swapModelAtPath:(NSString *)path error:(NSError **)error;
- (BOOL)swapModelAtPath:(NSString *)path key:(NSData *KS_NULLABLE)key error:(NSError **)error;
/* Live swaps taken so far (ks_task_stats.model_generation). */
@property(nonatomic, readonly) uint64_t modelGeneration;
@end

NS_ASSUME_NONNULL_END

#endif /* KESTREL_OBJC_KSPOSE_H */
