/* KSHandLandmarker and KSHand over kestrel/hand.h (manual retain/release). */
#import "KSPrivate.h"

#include <string.h>

#include "kestrel/hand.h"

_Static_assert(KSHandModelLite == (NSInteger)KS_HAND_MODEL_LITE, "models");
_Static_assert(KSHandednessRight == (NSInteger)KS_HANDEDNESS_RIGHT, "handedness");
_Static_assert(KS_HAND_LANDMARK_COUNT == KS_HAND_NUM_LANDMARKS, "landmarks");

@implementation KSHandLandmarkerOptions
@synthesize model = _model;
@synthesize minPresence = _minPresence;
- (id)copyWithZone:(NSZone *)zone {
    KSHandLandmarkerOptions *copy = [super copyWithZone:zone];
    copy->_model = _model;
    copy->_minPresence = _minPresence;
    return copy;
}
@end

@interface KSHand () <KSObjCResultItem>
@end

@implementation KSHand
@synthesize trackingId = _trackingId;
@synthesize box = _box;
@synthesize score = _score;
@synthesize handedness = _handedness;
@synthesize handednessScore = _handednessScore;

- (instancetype)ks_initWithItem:(const void *)item results:(const void *)results {
    self = [super init];
    if (self == nil) return nil;
    const ks_hand *hand = item;
    _trackingId = hand->id;
    _box = ks__objc_box(hand->box);
    _score = hand->score;
    _handedness = (KSHandedness)hand->handedness;
    _handednessScore = hand->handedness_score;
    memcpy(_landmarks, hand->landmarks, sizeof(_landmarks));
    memcpy(_worldLandmarks, hand->world_landmarks, sizeof(_worldLandmarks));
    return self;
}

- (NSUInteger)numLandmarks {
    return KS_HAND_LANDMARK_COUNT;
}

- (const KSPoint3 *)landmarks {
    return _landmarks;
}

- (const KSPoint3 *)worldLandmarks {
    return _worldLandmarks;
}

- (KSPoint3)landmarkAtIndex:(NSUInteger)index {
    KSPoint3 zero = {0.0f, 0.0f, 0.0f};
    return index < KS_HAND_LANDMARK_COUNT ? _landmarks[index] : zero;
}
@end

@implementation KSHandLandmarker

- (instancetype)initWithOptions:(KSTaskOptions *)taskOptions error:(NSError **)error {
    self = [super init];
    if (self == nil) return nil;
    ks_hand_landmarker_desc desc;
    if (!ks__objc_task_desc(taskOptions, [KSHandLandmarkerOptions class], "KSHandLandmarker", &desc,
                            sizeof(desc), &desc.task, error))
        return ks__objc_abandon(self);
    KSHandLandmarkerOptions *options =
        ks__objc_options_as(taskOptions, [KSHandLandmarkerOptions class]);
    if (options != nil) {
        desc.model = (ks_hand_model)options.model;
        desc.min_presence = options.minPresence;
    }
    ks_hand_landmarker *lm = NULL;
    ks_status st = ks_hand_landmarker_create(&desc, &lm);
    ks__objc_task_desc_end(&desc.task);
    if (!ks__objc_ok(st, NULL, error)) return ks__objc_abandon(self);
    _landmarker = lm;
    return self;
}

- (void)dealloc {
    ks_hand_landmarker_destroy((ks_hand_landmarker *)_landmarker);
    [super dealloc];
}

- (BOOL)swapModelAtPath:(NSString *)path error:(NSError **)error {
    return [self swapModelAtPath:path key:nil error:error];
}

- (BOOL)swapModelAtPath:(NSString *)path key:(NSData *)key error:(NSError **)error {
    ks_task_options source;
    if (!ks__objc_swap_source(path, key, "KSHandLandmarker", &source, error)) return NO;
    ks_status st = ks_hand_landmarker_swap_model((ks_hand_landmarker *)_landmarker, &source);
    ks__objc_task_desc_end(&source);
    return ks__objc_ok(st, NULL, error); /* the create's message, on this thread */
}

- (uint64_t)modelGeneration {
    ks_task_stats stats;
    if (ks_hand_landmarker_stats((ks_hand_landmarker *)_landmarker, &stats) != KS_STATUS_OK)
        return 0;
    return stats.model_generation;
}

- (NSArray *)detectInImage:(KSImage *)image
               timestampUs:(int64_t)timestampUs
                     error:(NSError **)error {
    ks_image view;
    if (!ks__objc_image_view(image, &view, error)) return nil;
    ks_hands *hands = NULL;
    ks_status st = ks_hands_detect((ks_hand_landmarker *)_landmarker, &view, timestampUs, &hands);
    if (!ks__objc_ok(st, _landmarker, error)) return nil;
    NSArray *out =
        ks__objc_results(hands, hands->items, sizeof(*hands->items), hands->count, [KSHand class]);
    ks_hands_release(hands);
    return out;
}

@end
