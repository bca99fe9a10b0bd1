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

@interface KSPose () <KSObjCResultItem>
@end

@implementation KSPose
@synthesize trackingId = _trackingId;
@synthesize box = _box;
@synthesize score = _score;
@synthesize mask = _mask;

- (instancetype)ks_initWithItem:(const void *)item results:(const void *)results {
    self = [super init];
    if (self == nil) return nil;
    const ks_pose *pose = item;
    const ks_poses *poses = results;
    int32_t width = poses->mask_width_px, height = poses->mask_height_px;
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
    ks_pose_landmarker_desc desc;
    if (!ks__objc_task_desc(taskOptions, [KSPoseLandmarkerOptions class], "KSPoseLandmarker", &desc,
                            sizeof(desc), &desc.task, error))
        return ks__objc_abandon(self);
    KSPoseLandmarkerOptions *options =
        ks__objc_options_as(taskOptions, [KSPoseLandmarkerOptions class]);
    if (options != nil) {
        desc.model = (ks_pose_model)options.model;
        desc.min_presence = options.minPresence;
        desc.output_segmentation = options.outputSegmentation ? 1 : 0;
    }
    ks_pose_landmarker *lm = NULL;
    ks_status st = ks_pose_landmarker_create(&desc, &lm);
    ks__objc_task_desc_end(&desc.task);
    if (!ks__objc_ok(st, NULL, error)) return ks__objc_abandon(self);
    _landmarker = lm;
    return self;
}

- (void)dealloc {
    ks_pose_landmarker_destroy((ks_pose_landmarker *)_landmarker);
    [super dealloc];
}

- (BOOL)swapModelAtPath:(NSString *)path error:(NSError **)error {
    return [self swapModelAtPath:path key:nil error:error];
}

- (BOOL)swapModelAtPath:(NSString *)path key:(NSData *)key error:(NSError **)error {
    ks_task_options source;
    if (!ks__objc_swap_source(path, key, "KSPoseLandmarker", &source, error)) return NO;
    ks_status st = ks_pose_landmarker_swap_model((ks_pose_landmarker *)_landmarker, &source);
    ks__objc_task_desc_end(&source);
    return ks__objc_ok(st, NULL, error); /* the create's message, on this thread */
}

- (uint64_t)modelGeneration {
    ks_task_stats stats;
    if (ks_pose_landmarker_stats((ks_pose_landmarker *)_landmarker, &stats) != KS_STATUS_OK)
        return 0;
    return stats.model_generation;
}

- (NSArray *)detectInImage:(KSImage *)image
               timestampUs:(int64_t)timestampUs
                     error:(NSError **)error {
    ks_image view;
    if (!ks__objc_image_view(image, &view, error)) return nil;
    ks_poses *poses = NULL;
    ks_status st = ks_pose_detect((ks_pose_landmarker *)_landmarker, &view, timestampUs, &poses);
    if (!ks__objc_ok(st, _landmarker, error)) return nil;
    NSArray *out =
        ks__objc_results(poses, poses->items, sizeof(*poses->items), poses->count, [KSPose class]);
    ks_poses_release(poses);
    return out;
}

@end
