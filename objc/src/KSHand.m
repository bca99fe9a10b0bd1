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

@interface KSHand ()
- (instancetype)ks_initWithHand:(const ks_hand *)hand;
@end

@implementation KSHand
@synthesize trackingId = _trackingId;
@synthesize box = _box;
@synthesize score = _score;
@synthesize handedness = _handedness;
@synthesize handednessScore = _handednessScore;

- (instancetype)ks_initWithHand:(const ks_hand *)hand {
    self = [super init];
    if (self == nil) return nil;
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
    if (!ks__objc_check_options(taskOptions, [KSHandLandmarkerOptions class], "KSHandLandmarker",
                                error)) {
        [self release];
        return nil;
    }
    KSHandLandmarkerOptions *options = [taskOptions isKindOfClass:[KSHandLandmarkerOptions class]]
                                           ? (KSHandLandmarkerOptions *)taskOptions
                                           : nil;
    ks_hand_landmarker_desc desc;
    memset(&desc, 0, sizeof(desc));
    ks__objc_task_options(taskOptions, &desc.task);
    if (options != nil) {
        desc.model = (ks_hand_model)options.model;
        desc.min_presence = options.minPresence;
    }
    ks_hand_landmarker *lm = NULL;
    ks_status st = ks_hand_landmarker_create(&desc, &lm);
    if (st != KS_STATUS_OK) {
        ks__objc_fail(error, st, ks_last_error(NULL));
        [self release];
        return nil;
    }
    _landmarker = lm;
    return self;
}

- (void)dealloc {
    ks_hand_landmarker_destroy((ks_hand_landmarker *)_landmarker);
    [super dealloc];
}

- (NSArray *)detectInImage:(KSImage *)image
               timestampUs:(int64_t)timestampUs
                     error:(NSError **)error {
    ks_image view;
    if (!ks__objc_image_view(image, &view, error)) return nil;
    ks_hands *hands = NULL;
    ks_status st = ks_hands_detect((ks_hand_landmarker *)_landmarker, &view, timestampUs, &hands);
    if (st != KS_STATUS_OK) {
        ks__objc_fail(error, st, ks_last_error(_landmarker));
        return nil;
    }
    NSMutableArray *out = [NSMutableArray arrayWithCapacity:hands->count];
    for (uint32_t i = 0; i < hands->count; i++) {
        KSHand *hand = [[KSHand alloc] ks_initWithHand:&hands->items[i]];
        [out addObject:hand];
        [hand release];
    }
    ks_hands_release(hands);
    return [[out copy] autorelease];
}

@end
