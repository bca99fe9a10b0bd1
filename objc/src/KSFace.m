/* KSFaceDetector, KSFaceLandmarker and their results over kestrel/face.h (manual
 * retain/release). */
#import "KSPrivate.h"

#include <string.h>

#include "kestrel/face.h"

_Static_assert(KSFaceDetectorModelFullRange == (NSInteger)KS_FACE_DETECTOR_FULL_RANGE, "models");
_Static_assert(KS_FACE_NUM_KEYPOINTS == KS_FACE_KEYPOINT_COUNT, "keypoints");

@implementation KSFaceDetectorOptions
@synthesize model = _model;
- (id)copyWithZone:(NSZone *)zone {
    KSFaceDetectorOptions *copy = [super copyWithZone:zone];
    copy->_model = _model;
    return copy;
}
@end

@implementation KSFaceLandmarkerOptions
@synthesize detectorModel = _detectorModel;
@synthesize refineLandmarks = _refineLandmarks;
@synthesize minTrackingScore = _minTrackingScore;
- (id)copyWithZone:(NSZone *)zone {
    KSFaceLandmarkerOptions *copy = [super copyWithZone:zone];
    copy->_detectorModel = _detectorModel;
    copy->_refineLandmarks = _refineLandmarks;
    copy->_minTrackingScore = _minTrackingScore;
    return copy;
}
@end

/* ---- results -------------------------------------------------------------------------------- */

@interface KSFace () <KSObjCResultItem>
@end

@implementation KSFace
@synthesize box = _box;
@synthesize score = _score;
@synthesize trackingId = _trackingId;

- (instancetype)ks_initWithItem:(const void *)item results:(const void *)results {
    self = [super init];
    if (self == nil) return nil;
    const ks_face *face = item;
    _box = ks__objc_box(face->box);
    _score = face->score;
    _trackingId = face->id;
    for (int i = 0; i < KS_FACE_NUM_KEYPOINTS; i++) {
        _keypoints[i].x = face->keypoints[i].x;
        _keypoints[i].y = face->keypoints[i].y;
    }
    return self;
}

- (KSPoint2)keypoint:(KSFaceKeypoint)keypoint {
    KSPoint2 zero = {0.0f, 0.0f};
    if (keypoint < 0 || keypoint >= KS_FACE_NUM_KEYPOINTS) return zero;
    return _keypoints[keypoint];
}

- (NSString *)description {
    return
        [NSString stringWithFormat:@"<KSFace box [%.1f %.1f %.1f %.1f] score %.3f id %d>", _box.x,
                                   _box.y, _box.width, _box.height, _score, (int)_trackingId];
}
@end

@interface KSFaceMesh () <KSObjCResultItem>
@end

@implementation KSFaceMesh
@synthesize box = _box;
@synthesize score = _score;
@synthesize trackingId = _trackingId;
@synthesize pitchDegrees = _pitch;
@synthesize yawDegrees = _yaw;
@synthesize rollDegrees = _roll;
@synthesize expressions = _expressions;
@synthesize landmarksData = _landmarks;

- (instancetype)ks_initWithItem:(const void *)item results:(const void *)results {
    self = [super init];
    if (self == nil) return nil;
    const ks_face_mesh *mesh = item;
    _box = ks__objc_box(mesh->box);
    _score = mesh->score;
    _trackingId = mesh->id;
    _landmarks = [[NSData alloc] initWithBytes:mesh->landmarks
                                        length:mesh->num_landmarks * sizeof(KSPoint3)];
    _pitch = mesh->pitch_deg;
    _yaw = mesh->yaw_deg;
    _roll = mesh->roll_deg;
    memcpy(_poseMatrix, mesh->pose_matrix, sizeof(_poseMatrix));
    memcpy(_projectionMatrix, mesh->projection_matrix, sizeof(_projectionMatrix));
    _expressions.mouthOpen = mesh->expressions.mouth_open;
    _expressions.leftEyeBlink = mesh->expressions.left_eye_blink;
    _expressions.rightEyeBlink = mesh->expressions.right_eye_blink;
    _expressions.browRaise = mesh->expressions.brow_raise;
    _expressions.smile = mesh->expressions.smile;
    return self;
}

- (void)dealloc {
    [_landmarks release];
    [super dealloc];
}

- (NSUInteger)numLandmarks {
    return [_landmarks length] / sizeof(KSPoint3);
}

- (const KSPoint3 *)landmarks {
    return (const KSPoint3 *)[_landmarks bytes];
}

- (KSPoint3)landmarkAtIndex:(NSUInteger)index {
    KSPoint3 zero = {0.0f, 0.0f, 0.0f};
    if (index >= [self numLandmarks]) return zero;
    return [self landmarks][index];
}

- (const float *)poseMatrix {
    return _poseMatrix;
}

- (const float *)projectionMatrix {
    return _projectionMatrix;
}

- (NSString *)description {
    return [NSString stringWithFormat:@"<KSFaceMesh box [%.1f %.1f %.1f %.1f] %lu landmarks "
                                      @"yaw %.1f pitch %.1f roll %.1f id %d>",
                                      _box.x, _box.y, _box.width, _box.height,
                                      (unsigned long)[self numLandmarks], _yaw, _pitch, _roll,
                                      (int)_trackingId];
}
@end

/* ---- tasks ---------------------------------------------------------------------------------- */

@implementation KSFaceDetector

- (instancetype)initWithOptions:(KSTaskOptions *)taskOptions error:(NSError **)error {
    self = [super init];
    if (self == nil) return nil;
    ks_face_detector_desc desc;
    if (!ks__objc_task_desc(taskOptions, [KSFaceDetectorOptions class], "KSFaceDetector", &desc,
                            sizeof(desc), &desc.task, error))
        return ks__objc_abandon(self);
    KSFaceDetectorOptions *options =
        ks__objc_options_as(taskOptions, [KSFaceDetectorOptions class]);
    if (options != nil) desc.model = (ks_face_detector_model)options.model;
    ks_face_detector *det = NULL;
    ks_status st = ks_face_detector_create(&desc, &det);
    ks__objc_task_desc_end(&desc.task);
    if (!ks__objc_ok(st, NULL, error)) return ks__objc_abandon(self);
    _detector = det;
    return self;
}

- (void)dealloc {
    ks_face_detector_destroy((ks_face_detector *)_detector);
    [super dealloc];
}

- (BOOL)swapModelAtPath:(NSString *)path error:(NSError **)error {
    return [self swapModelAtPath:path key:nil error:error];
}

- (BOOL)swapModelAtPath:(NSString *)path key:(NSData *)key error:(NSError **)error {
    ks_task_options source;
    if (!ks__objc_swap_source(path, key, "KSFaceDetector", &source, error)) return NO;
    ks_status st = ks_face_detector_swap_model((ks_face_detector *)_detector, &source);
    ks__objc_task_desc_end(&source);
    return ks__objc_ok(st, NULL, error); /* the create's message, on this thread */
}

- (uint64_t)modelGeneration {
    ks_task_stats stats;
    if (ks_face_detector_stats((ks_face_detector *)_detector, &stats) != KS_STATUS_OK) return 0;
    return stats.model_generation;
}

- (NSArray *)detectInImage:(KSImage *)image
               timestampUs:(int64_t)timestampUs
                     error:(NSError **)error {
    ks_image view;
    if (!ks__objc_image_view(image, &view, error)) return nil;
    ks_faces *faces = NULL;
    ks_status st = ks_face_detect((ks_face_detector *)_detector, &view, timestampUs, &faces);
    if (!ks__objc_ok(st, _detector, error)) return nil;
    NSArray *out =
        ks__objc_results(faces, faces->items, sizeof(*faces->items), faces->count, [KSFace class]);
    ks_faces_release(faces);
    return out;
}

@end

@implementation KSFaceLandmarker

- (instancetype)initWithOptions:(KSTaskOptions *)taskOptions error:(NSError **)error {
    self = [super init];
    if (self == nil) return nil;
    ks_face_landmarker_desc desc;
    if (!ks__objc_task_desc(taskOptions, [KSFaceLandmarkerOptions class], "KSFaceLandmarker", &desc,
                            sizeof(desc), &desc.task, error))
        return ks__objc_abandon(self);
    KSFaceLandmarkerOptions *options =
        ks__objc_options_as(taskOptions, [KSFaceLandmarkerOptions class]);
    if (options != nil) {
        desc.detector = (ks_face_detector_model)options.detectorModel;
        desc.refine_landmarks = options.refineLandmarks ? 1 : 0;
        desc.min_tracking_score = options.minTrackingScore;
    }
    ks_face_landmarker *lm = NULL;
    ks_status st = ks_face_landmarker_create(&desc, &lm);
    ks__objc_task_desc_end(&desc.task);
    if (!ks__objc_ok(st, NULL, error)) return ks__objc_abandon(self);
    _landmarker = lm;
    return self;
}

- (void)dealloc {
    ks_face_landmarker_destroy((ks_face_landmarker *)_landmarker);
    [super dealloc];
}

- (BOOL)swapModelAtPath:(NSString *)path error:(NSError **)error {
    return [self swapModelAtPath:path key:nil error:error];
}

- (BOOL)swapModelAtPath:(NSString *)path key:(NSData *)key error:(NSError **)error {
    ks_task_options source;
    if (!ks__objc_swap_source(path, key, "KSFaceLandmarker", &source, error)) return NO;
    ks_status st = ks_face_landmarker_swap_model((ks_face_landmarker *)_landmarker, &source);
    ks__objc_task_desc_end(&source);
    return ks__objc_ok(st, NULL, error); /* the create's message, on this thread */
}

- (uint64_t)modelGeneration {
    ks_task_stats stats;
    if (ks_face_landmarker_stats((ks_face_landmarker *)_landmarker, &stats) != KS_STATUS_OK)
        return 0;
    return stats.model_generation;
}

- (NSArray *)detectInImage:(KSImage *)image
               timestampUs:(int64_t)timestampUs
                     error:(NSError **)error {
    ks_image view;
    if (!ks__objc_image_view(image, &view, error)) return nil;
    ks_face_meshes *meshes = NULL;
    ks_status st =
        ks_face_landmarker_detect((ks_face_landmarker *)_landmarker, &view, timestampUs, &meshes);
    if (!ks__objc_ok(st, _landmarker, error)) return nil;
    NSArray *out = ks__objc_results(meshes, meshes->items, sizeof(*meshes->items), meshes->count,
                                    [KSFaceMesh class]);
    ks_face_meshes_release(meshes);
    return out;
}

@end
