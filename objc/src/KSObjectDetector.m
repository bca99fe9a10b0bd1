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

@interface KSDetectedObject () <KSObjCResultItem>
@end

@implementation KSDetectedObject
@synthesize box = _box;
@synthesize classId = _classId;
@synthesize label = _label;
@synthesize score = _score;
@synthesize trackingId = _trackingId;

- (instancetype)ks_initWithItem:(const void *)item results:(const void *)results {
    self = [super init];
    if (self == nil) return nil;
    const ks_detected_object *object = item;
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
    ks_object_detector_desc desc;
    if (!ks__objc_task_desc(taskOptions, [KSObjectDetectorOptions class], "KSObjectDetector", &desc,
                            sizeof(desc), &desc.task, error))
        return ks__objc_abandon(self);
    ks_object_detector *det = NULL;
    ks_status st = ks_object_detector_create(&desc, &det);
    ks__objc_task_desc_end(&desc.task);
    if (!ks__objc_ok(st, NULL, error)) return ks__objc_abandon(self);
    _detector = det;
    return self;
}

- (void)dealloc {
    ks_object_detector_destroy((ks_object_detector *)_detector);
    [super dealloc];
}

- (BOOL)swapModelAtPath:(NSString *)path error:(NSError **)error {
    return [self swapModelAtPath:path key:nil error:error];
}

- (BOOL)swapModelAtPath:(NSString *)path key:(NSData *)key error:(NSError **)error {
    ks_task_options source;
    if (!ks__objc_swap_source(path, key, "KSObjectDetector", &source, error)) return NO;
    ks_status st = ks_object_detector_swap_model((ks_object_detector *)_detector, &source);
    ks__objc_task_desc_end(&source);
    return ks__objc_ok(st, NULL, error); /* the create's message, on this thread */
}

- (uint64_t)modelGeneration {
    ks_task_stats stats;
    if (ks_object_detector_stats((ks_object_detector *)_detector, &stats) != KS_STATUS_OK) return 0;
    return stats.model_generation;
}

- (NSArray *)detectInImage:(KSImage *)image
               timestampUs:(int64_t)timestampUs
                     error:(NSError **)error {
    ks_image view;
    if (!ks__objc_image_view(image, &view, error)) return nil;
    ks_detected_objects *objects = NULL;
    ks_status st = ks_object_detect((ks_object_detector *)_detector, &view, timestampUs, &objects);
    if (!ks__objc_ok(st, _detector, error)) return nil;
    NSArray *out = ks__objc_results(objects, objects->items, sizeof(*objects->items),
                                    objects->count, [KSDetectedObject class]);
    ks_detected_objects_release(objects);
    return out;
}

@end

@implementation KSImageClassifierOptions
@end

@interface KSCategory () <KSObjCResultItem>
@end

@implementation KSCategory
@synthesize classId = _classId;
@synthesize label = _label;
@synthesize score = _score;

- (instancetype)ks_initWithItem:(const void *)item results:(const void *)results {
    self = [super init];
    if (self == nil) return nil;
    const ks_class_score *score = item;
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
    ks_image_classifier_desc desc;
    if (!ks__objc_task_desc(taskOptions, [KSImageClassifierOptions class], "KSImageClassifier",
                            &desc, sizeof(desc), &desc.task, error))
        return ks__objc_abandon(self);
    ks_image_classifier *cls = NULL;
    ks_status st = ks_image_classifier_create(&desc, &cls);
    ks__objc_task_desc_end(&desc.task);
    if (!ks__objc_ok(st, NULL, error)) return ks__objc_abandon(self);
    _classifier = cls;
    return self;
}

- (void)dealloc {
    ks_image_classifier_destroy((ks_image_classifier *)_classifier);
    [super dealloc];
}

- (BOOL)swapModelAtPath:(NSString *)path error:(NSError **)error {
    return [self swapModelAtPath:path key:nil error:error];
}

- (BOOL)swapModelAtPath:(NSString *)path key:(NSData *)key error:(NSError **)error {
    ks_task_options source;
    if (!ks__objc_swap_source(path, key, "KSImageClassifier", &source, error)) return NO;
    ks_status st = ks_image_classifier_swap_model((ks_image_classifier *)_classifier, &source);
    ks__objc_task_desc_end(&source);
    return ks__objc_ok(st, NULL, error); /* the create's message, on this thread */
}

- (uint64_t)modelGeneration {
    ks_task_stats stats;
    if (ks_image_classifier_stats((ks_image_classifier *)_classifier, &stats) != KS_STATUS_OK)
        return 0;
    return stats.model_generation;
}

- (NSArray *)classifyImage:(KSImage *)image
               timestampUs:(int64_t)timestampUs
                     error:(NSError **)error {
    ks_image view;
    if (!ks__objc_image_view(image, &view, error)) return nil;
    ks_classifications *top = NULL;
    ks_status st = ks_image_classify((ks_image_classifier *)_classifier, &view, timestampUs, &top);
    if (!ks__objc_ok(st, _classifier, error)) return nil;
    NSArray *out =
        ks__objc_results(top, top->items, sizeof(*top->items), top->count, [KSCategory class]);
    ks_classifications_release(top);
    return out;
}

@end
