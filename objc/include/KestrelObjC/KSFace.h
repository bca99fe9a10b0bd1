/* Kestrel Objective-C API: face detection (BlazeFace) and the face landmarker (468/478-point
 * mesh, head pose, expressions). Wraps kestrel/face.h; see it for the models and defaults.
 *
 * Usage:
 *     KSFaceLandmarkerOptions *o = [[[KSFaceLandmarkerOptions alloc] init] autorelease];
 *     o.mode = KSRunningModeVideo;
 *     KSFaceLandmarker *lm = [[KSFaceLandmarker alloc] initWithOptions:o error:&error];
 *     NSArray *faces = [lm detectInImage:frame timestampUs:t error:&error];  // nil on failure
 */
#ifndef KESTREL_OBJC_KSFACE_H
#define KESTREL_OBJC_KSFACE_H

#import "KSBase.h"

NS_ASSUME_NONNULL_BEGIN

typedef NS_ENUM(NSInteger, KSFaceDetectorModel) {
    KSFaceDetectorModelShortRange = 0, /* default: faces within ~2 m */
    KSFaceDetectorModelFullRange = 1,  /* faces up to ~5 m */
};

/* Keypoints of a KSFace (the subject's right eye is on the image's left). */
typedef NS_ENUM(NSInteger, KSFaceKeypoint) {
    KSFaceKeypointRightEye = 0,
    KSFaceKeypointLeftEye = 1,
    KSFaceKeypointNoseTip = 2,
    KSFaceKeypointMouth = 3,
    KSFaceKeypointRightEar = 4,
    KSFaceKeypointLeftEar = 5,
};
#define KS_FACE_NUM_KEYPOINTS 6

@interface KSFaceDetectorOptions : KSTaskOptions {
  @private
    KSFaceDetectorModel _model;
}
@property(nonatomic, assign) KSFaceDetectorModel model;
@end

/* One detected face. */
@interface KSFace : NSObject {
  @private
    KSBox _box;
    float _score;
    int32_t _trackingId;
    KSPoint2 _keypoints[KS_FACE_NUM_KEYPOINTS];
}
KS_INIT_UNAVAILABLE
@property(nonatomic, readonly) KSBox box;
@property(nonatomic, readonly) float score;
/* VIDEO: stable while the face stays in view (>= 1); IMAGE: -1. */
@property(nonatomic, readonly) int32_t trackingId;
/* Out-of-range keypoints give (0, 0). */
- (KSPoint2)keypoint:(KSFaceKeypoint)keypoint;
@end

@interface KSFaceDetector : NSObject {
  @private
    void *_detector;
}
/* options nil: all defaults. Loads the bundle; nil and *error on failure. */
- (instancetype KS_NULLABLE)initWithOptions:(KSTaskOptions *KS_NULLABLE)options
                                      error:(NSError **)error NS_DESIGNATED_INITIALIZER;
KS_INIT_UNAVAILABLE
/* Faces by descending score (possibly empty), or nil on failure. timestampUs must increase in
 * VIDEO mode. */
- (KS_ARRAY(KSFace *) * KS_NULLABLE)detectInImage:(KSImage *)image
                                      timestampUs:(int64_t)timestampUs
                                            error:(NSError **)error;
/* Live swap (docs/objc.md "Live swap"; kestrel/vision.h): loads the .ksb (or .ksm) at `path`,
 * e.g. a newer version installed by a KSStore, and makes the next detect call use it; every other
 * option stays as at init. Unlike the other methods it may be called from any thread, also while
 * another thread runs this task (that frame finishes on the old version; none is dropped or mixes
 * versions); the caller keeps the task retained for the call. Loading runs on the calling thread
 * and takes as long as an init. NO and *error (the init's code and message) for a bad version (a
 * missing or damaged file, a wrong or missing key, another task's bundle): the task keeps running
 * its current version. */
- (BOOL)swapModelAtPath:(NSString *)path error:(NSError **)error;
/* The same for encrypted models: `key` (KS_TASK_KEY_LENGTH bytes; nil: none) opens them, as
 * KSTaskOptions.key. Its bytes are copied for this call only and wiped before it returns. */
- (BOOL)swapModelAtPath:(NSString *)path key:(NSData *KS_NULLABLE)key error:(NSError **)error;
/* Live swaps taken so far (ks_task_stats.model_generation): 0 until the first detect call after
 * a successful swap, which switches. Like detect, not while another thread runs the task. */
@property(nonatomic, readonly) uint64_t modelGeneration;
@end

/* Each in [0, 1]; 0 at a neutral face. */
typedef struct KSFaceExpressions {
    float mouthOpen;
    float leftEyeBlink, rightEyeBlink; /* the subject's left / right */
    float browRaise;
    float smile;
} KSFaceExpressions;

@interface KSFaceLandmarkerOptions : KSTaskOptions {
  @private
    KSFaceDetectorModel _detectorModel;
    BOOL _refineLandmarks;
    float _minTrackingScore;
}
@property(nonatomic, assign) KSFaceDetectorModel detectorModel;
/* YES: 478 landmarks with irises (attention model). */
@property(nonatomic, assign) BOOL refineLandmarks;
/* 0: 0.5. */
@property(nonatomic, assign) float minTrackingScore;
@end

/* One face mesh. */
@interface KSFaceMesh : NSObject {
  @private
    KSBox _box;
    float _score;
    int32_t _trackingId;
    NSData *_landmarks;
    float _pitch, _yaw, _roll;
    float _poseMatrix[16];
    float _projectionMatrix[16];
    KSFaceExpressions _expressions;
}
KS_INIT_UNAVAILABLE
/* Bounding box of the landmarks. */
@property(nonatomic, readonly) KSBox box;
@property(nonatomic, readonly) float score;
/* VIDEO: the same while the face is tracked (>= 1); IMAGE: -1. */
@property(nonatomic, readonly) int32_t trackingId;
/* 468, or 478 with refineLandmarks. */
@property(nonatomic, readonly) NSUInteger numLandmarks;
/* numLandmarks KSPoint3 values (pixels), valid while the mesh lives. */
@property(nonatomic, readonly) const KSPoint3 *landmarks KS_INNER_POINTER;
/* The same points as bytes (numLandmarks * sizeof(KSPoint3)). */
@property(nonatomic, readonly) NSData *landmarksData;
/* Out-of-range indices give (0, 0, 0). */
- (KSPoint3)landmarkAtIndex:(NSUInteger)index;
/* Head pose in degrees: pitch > 0 looks down, yaw > 0 turns towards the image's right, roll > 0
 * tilts counter-clockwise in the image. */
@property(nonatomic, readonly) float pitchDegrees;
@property(nonatomic, readonly) float yawDegrees;
@property(nonatomic, readonly) float rollDegrees;
/* Canonical face model (cm) -> camera space, ROW-major 4x4 (16 floats, valid while the mesh
 * lives); camera at the origin looking down -z, 63 degree vertical field of view. */
@property(nonatomic, readonly) const float *poseMatrix KS_INNER_POINTER;
/* Row-major OpenGL perspective for that camera (16 floats). */
@property(nonatomic, readonly) const float *projectionMatrix KS_INNER_POINTER;
@property(nonatomic, readonly) KSFaceExpressions expressions;
@end

@interface KSFaceLandmarker : NSObject {
  @private
    void *_landmarker;
}
- (instancetype KS_NULLABLE)initWithOptions:(KSTaskOptions *KS_NULLABLE)options
                                      error:(NSError **)error NS_DESIGNATED_INITIALIZER;
KS_INIT_UNAVAILABLE
/* Up to maxResults faces (default 1): sorted by tracking id in VIDEO mode, best first in IMAGE
 * mode; nil on failure. */
- (KS_ARRAY(KSFaceMesh *) * KS_NULLABLE)detectInImage:(KSImage *)image
                                          timestampUs:(int64_t)timestampUs
                                                error:(NSError **)error;
/* Live swap: see KSFaceDetector. Any thread, also while another thread runs this task. */
- (BOOL)swapModelAtPath:(NSString *)path error:(NSError **)error;
- (BOOL)swapModelAtPath:(NSString *)path key:(NSData *KS_NULLABLE)key error:(NSError **)error;
/* Live swaps taken so far (ks_task_stats.model_generation). */
@property(nonatomic, readonly) uint64_t modelGeneration;
@end

NS_ASSUME_NONNULL_END

#endif /* KESTREL_OBJC_KSFACE_H */
