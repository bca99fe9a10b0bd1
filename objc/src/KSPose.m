/* KSPoseLandmarker and KSPose over kestrel/pose.h (manual retain/release). */
#import "KSPrivate.h"

#include <string.h>

#include "kestrel/pose.h"

_Static_assert(KSPoseModelHeavy == (NSInteger)KS_POSE_MODEL_HEAVY, "models");
_Static_assert(KS_POSE_LANDMARK_COUNT == KS_POSE_NUM_LANDMARKS, "landmarks");
_Static_assert(sizeof(KSPoseLandmark) == sizeof(ks_pose_landmark), "landmark layout");

@implementation KSPoseLandmarkerOptions
@synthesize model = _model;
@synthesize minPresence = _minPresence;
@synthesize outputSegmentation = _outputSegmentation;
- (id)copyWithZone:(NSZone *)zone {
    KSPoseLandmarkerOptions *copy = [super copyWithZone:zone];
    copy->_model = _model;
    copy->_minPresence = _minPresence;
    copy->_outputSegmentation = _outputSegmentation;
    return copy;
}
@end

@interface KSPose ()
- (instancetype)ks_initWithPose:(const ks_pose *)pose width:(int32_t)width height:(int32_t)height;
@end

@implementation KSPose
@synthesize trackingId = _trackingId;
@synthesize box = _box;
@synthesize score = _score;
@synthesize mask = _mask;

- (instancetype)ks_initWithPose:(const ks_pose *)pose width:(int32_t)width height:(int32_t)height {
    self = [super init];
    if (self == nil) return nil;
    _trackingId = pose->id;
    _box = ks__objc_box(pose->box);
    _score = pose->score;
    for (int i = 0; i < KS_POSE_LANDMARK_COUNT; i++) {
        const ks_pose_landmark *l = &pose->landmarks[i];
        _landmarks[i].x = l->x;
        _landmarks[i].y = l->y;
        _landmarks[i].z = l->z;
        _landmarks[i].visibility = l->visibility;
        _landmarks[i].presence = l->presence;
        _worldLandmarks[i].x = pose->world_landmarks[i].x;
        _worldLandmarks[i].y = pose->world_landmarks[i].y;
        _worldLandmarks[i].z = pose->world_landmarks[i].z;
    }
    if (pose->mask != NULL && width > 0 && height > 0)
        _mask = [ks__objc_mask_make(width, height, pose->mask, NULL, -1.0f) retain];
    return self;
}

- (void)dealloc {
    [_mask release];
    [super dealloc];
}

- (NSUInteger)numLandmarks {
    return KS_POSE_LANDMARK_COUNT;
}

- (const KSPoseLandmark *)landmarks {
    return _landmarks;
}

- (const KSPoint3 *)worldLandmarks {
    return _worldLandmarks;
}

- (KSPoseLandmark)landmarkAtIndex:(NSUInteger)index {
    KSPoseLandmark zero;
    memset(&zero, 0, sizeof(zero));
    return index < KS_POSE_LANDMARK_COUNT ? _landmarks[index] : zero;
}

- (KSPoint3)worldLandmarkAtIndex:(NSUInteger)index {
    KSPoint3 zero = {0.0f, 0.0f, 0.0f};
    return index < KS_POSE_LANDMARK_COUNT ? _worldLandmarks[index] : zero;
}

- (NSString *)description {
    return
        [NSString stringWithFormat:@"<KSPose box [%.1f %.1f %.1f %.1f] score %.3f id %d>", _box.x,
                                   _box.y, _box.width, _box.height, _score, (int)_trackingId];
}
@end

@implementation KSPoseLandmarker

- (instancetype)initWithOptions:(KSTaskOptions *)taskOptions error:(NSError **)error {
    self = [super init];
    if (self == nil) return nil;
    if (!ks__objc_check_options(taskOptions, [KSPoseLandmarkerOptions class], "KSPoseLandmarker",
                                error)) {
        [self release];
        return nil;
    }
    KSPoseLandmarkerOptions *options = [taskOptions isKindOfClass:[KSPoseLandmarkerOptions class]]
                                           ? (KSPoseLandmarkerOptions *)taskOptions
                                           : nil;
    ks_pose_landmarker_desc desc;
    memset(&desc, 0, sizeof(desc));
    ks__objc_task_options(taskOptions, &desc.task);
    if (options != nil) {
        desc.model = (ks_pose_model)options.model;
        desc.min_presence = options.minPresence;
        desc.output_segmentation = options.outputSegmentation ? 1 : 0;
    }
    ks_pose_landmarker *lm = NULL;
    ks_status st = ks_pose_landmarker_create(&desc, &lm);
    if (st != KS_STATUS_OK) {
        ks__objc_fail(error, st, ks_last_error(NULL));
        [self release];
        return nil;
    }
    _landmarker = lm;
    return self;
}

- (void)dealloc {
    ks_pose_landmarker_destroy((ks_pose_landmarker *)_landmarker);
    [super dealloc];
}

- (NSArray *)detectInImage:(KSImage *)image
               timestampUs:(int64_t)timestampUs
                     error:(NSError **)error {
    ks_image view;
    if (!ks__objc_image_view(image, &view, error)) return nil;
    ks_poses *poses = NULL;
    ks_status st = ks_pose_detect((ks_pose_landmarker *)_landmarker, &view, timestampUs, &poses);
    if (st != KS_STATUS_OK) {
        ks__objc_fail(error, st, ks_last_error(_landmarker));
        return nil;
    }
    NSMutableArray *out = [NSMutableArray arrayWithCapacity:poses->count];
    for (uint32_t i = 0; i < poses->count; i++) {
        KSPose *pose = [[KSPose alloc] ks_initWithPose:&poses->items[i]
                                                 width:poses->mask_width_px
                                                height:poses->mask_height_px];
        [out addObject:pose];
        [pose release];
    }
    ks_poses_release(poses);
    return [[out copy] autorelease];
}

@end
