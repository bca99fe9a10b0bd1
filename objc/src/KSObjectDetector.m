/* KSObjectDetector and KSImageClassifier over kestrel/detect.h and kestrel/classify.h (manual
 * retain/release). */
#import "KSPrivate.h"

#include <string.h>

#include "kestrel/classify.h"
#include "kestrel/detect.h"

static NSString *ks_objc_label(const char *label) {
    NSString *s = label != NULL ? [NSString stringWithUTF8String:label] : nil;
    return s != nil ? s : @"";
}

@implementation KSObjectDetectorOptions
@end

@interface KSDetectedObject ()
- (instancetype)ks_initWithObject:(const ks_detected_object *)object;
@end

@implementation KSDetectedObject
@synthesize box = _box;
@synthesize classId = _classId;
@synthesize label = _label;
@synthesize score = _score;
@synthesize trackingId = _trackingId;

- (instancetype)ks_initWithObject:(const ks_detected_object *)object {
    self = [super init];
    if (self == nil) return nil;
    _box = ks__objc_box(object->box);
    _classId = object->class_id;
    _label = [ks_objc_label(object->label) copy];
    _score = object->score;
    _trackingId = object->track_id;
    return self;
}

- (void)dealloc {
    [_label release];
    [super dealloc];
}

- (NSString *)description {
    return [NSString stringWithFormat:@"<KSDetectedObject %@ (%d) %.3f box [%.1f %.1f %.1f %.1f]>",
                                      _label, (int)_classId, _score, _box.x, _box.y, _box.width,
                                      _box.height];
}
@end

@implementation KSObjectDetector

- (instancetype)initWithOptions:(KSTaskOptions *)taskOptions error:(NSError **)error {
    self = [super init];
    if (self == nil) return nil;
    if (!ks__objc_check_options(taskOptions, [KSObjectDetectorOptions class], "KSObjectDetector",
                                error)) {
        [self release];
        return nil;
    }
    ks_object_detector_desc desc;
    memset(&desc, 0, sizeof(desc));
    ks__objc_task_options(taskOptions, &desc.task);
    ks_object_detector *det = NULL;
    ks_status st = ks_object_detector_create(&desc, &det);
    if (st != KS_STATUS_OK) {
        ks__objc_fail(error, st, ks_last_error(NULL));
        [self release];
        return nil;
    }
    _detector = det;
    return self;
}

- (void)dealloc {
    ks_object_detector_destroy((ks_object_detector *)_detector);
    [super dealloc];
}

- (NSArray *)detectInImage:(KSImage *)image
               timestampUs:(int64_t)timestampUs
                     error:(NSError **)error {
    ks_image view;
    if (!ks__objc_image_view(image, &view, error)) return nil;
    ks_detected_objects *objects = NULL;
    ks_status st = ks_object_detect((ks_object_detector *)_detector, &view, timestampUs, &objects);
    if (st != KS_STATUS_OK) {
        ks__objc_fail(error, st, ks_last_error(_detector));
        return nil;
    }
    NSMutableArray *out = [NSMutableArray arrayWithCapacity:objects->count];
    for (uint32_t i = 0; i < objects->count; i++) {
        KSDetectedObject *object = [[KSDetectedObject alloc] ks_initWithObject:&objects->items[i]];
        [out addObject:object];
        [object release];
    }
    ks_detected_objects_release(objects);
    return [[out copy] autorelease];
}

@end

@implementation KSImageClassifierOptions
@end

@interface KSCategory ()
- (instancetype)ks_initWithScore:(const ks_class_score *)score;
@end

@implementation KSCategory
@synthesize classId = _classId;
@synthesize label = _label;
@synthesize score = _score;

- (instancetype)ks_initWithScore:(const ks_class_score *)score {
    self = [super init];
    if (self == nil) return nil;
    _classId = score->class_id;
    _label = [ks_objc_label(score->label) copy];
    _score = score->score;
    return self;
}

- (void)dealloc {
    [_label release];
    [super dealloc];
}

- (NSString *)description {
    return [NSString stringWithFormat:@"<KSCategory %@ (%d) %.3f>", _label, (int)_classId, _score];
}
@end

@implementation KSImageClassifier

- (instancetype)initWithOptions:(KSTaskOptions *)taskOptions error:(NSError **)error {
    self = [super init];
    if (self == nil) return nil;
    if (!ks__objc_check_options(taskOptions, [KSImageClassifierOptions class], "KSImageClassifier",
                                error)) {
        [self release];
        return nil;
    }
    ks_image_classifier_desc desc;
    memset(&desc, 0, sizeof(desc));
    ks__objc_task_options(taskOptions, &desc.task);
    ks_image_classifier *cls = NULL;
    ks_status st = ks_image_classifier_create(&desc, &cls);
    if (st != KS_STATUS_OK) {
        ks__objc_fail(error, st, ks_last_error(NULL));
        [self release];
        return nil;
    }
    _classifier = cls;
    return self;
}

- (void)dealloc {
    ks_image_classifier_destroy((ks_image_classifier *)_classifier);
    [super dealloc];
}

- (NSArray *)classifyImage:(KSImage *)image
               timestampUs:(int64_t)timestampUs
                     error:(NSError **)error {
    ks_image view;
    if (!ks__objc_image_view(image, &view, error)) return nil;
    ks_classifications *top = NULL;
    ks_status st = ks_image_classify((ks_image_classifier *)_classifier, &view, timestampUs, &top);
    if (st != KS_STATUS_OK) {
        ks__objc_fail(error, st, ks_last_error(_classifier));
        return nil;
    }
    NSMutableArray *out = [NSMutableArray arrayWithCapacity:top->count];
    for (uint32_t i = 0; i < top->count; i++) {
        KSCategory *category = [[KSCategory alloc] ks_initWithScore:&top->items[i]];
        [out addObject:category];
        [category release];
    }
    ks_classifications_release(top);
    return [[out copy] autorelease];
}

@end
