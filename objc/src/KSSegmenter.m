/* KSSegmenter and KSMask over kestrel/segment.h (manual retain/release). */
#import "KSPrivate.h"

#include <string.h>

#include "kestrel/segment.h"

_Static_assert(KSSegmenterModelLandscape == (NSInteger)KS_SEGMENTER_LANDSCAPE, "models");

@interface KSMask ()
- (instancetype)ks_initWithWidth:(int32_t)width
                          height:(int32_t)height
                   probabilities:(const float *)probabilities
                           bytes:(const uint8_t *)bytes
                        fraction:(float)fraction;
@end

@implementation KSMask
@synthesize width = _width;
@synthesize height = _height;
@synthesize data = _data;
@synthesize bytes = _bytes;
@synthesize personFraction = _personFraction;

- (instancetype)ks_initWithWidth:(int32_t)width
                          height:(int32_t)height
                   probabilities:(const float *)probabilities
                           bytes:(const uint8_t *)bytes
                        fraction:(float)fraction {
    self = [super init];
    if (self == nil) return nil;
    size_t count = (size_t)width * (size_t)height;
    _width = width;
    _height = height;
    _data = [[NSData alloc] initWithBytes:probabilities length:count * sizeof(float)];
    if (bytes != NULL) _bytes = [[NSData alloc] initWithBytes:bytes length:count];
    if (fraction < 0.0f) {
        size_t num_person = 0;
        for (size_t i = 0; i < count; i++)
            num_person += probabilities[i] >= 0.5f;
        fraction = count > 0 ? (float)((double)num_person / (double)count) : 0.0f;
    }
    _personFraction = fraction;
    return self;
}

- (void)dealloc {
    [_data release];
    [_bytes release];
    [super dealloc];
}

- (float)probabilityAtX:(int32_t)x y:(int32_t)y {
    if (x < 0 || y < 0 || x >= _width || y >= _height) return 0.0f;
    return ((const float *)[_data bytes])[(size_t)y * (size_t)_width + (size_t)x];
}

- (NSString *)description {
    return [NSString
        stringWithFormat:@"<KSMask %dx%d person %.3f>", (int)_width, (int)_height, _personFraction];
}
@end

KSMask *ks__objc_mask_make(int32_t width, int32_t height, const float *probabilities,
                           const uint8_t *bytes, float fraction) {
    KSMask *mask = [[KSMask alloc] ks_initWithWidth:width
                                             height:height
                                      probabilities:probabilities
                                              bytes:bytes
                                           fraction:fraction];
    return [mask autorelease];
}

@implementation KSSegmenterOptions
@synthesize model = _model;
@synthesize outputBytes = _outputBytes;
- (id)copyWithZone:(NSZone *)zone {
    KSSegmenterOptions *copy = [super copyWithZone:zone];
    copy->_model = _model;
    copy->_outputBytes = _outputBytes;
    return copy;
}
@end

@implementation KSSegmenter

- (instancetype)initWithOptions:(KSTaskOptions *)taskOptions error:(NSError **)error {
    self = [super init];
    if (self == nil) return nil;
    ks_segmenter_desc desc;
    if (!ks__objc_task_desc(taskOptions, [KSSegmenterOptions class], "KSSegmenter", &desc,
                            sizeof(desc), &desc.task, error))
        return ks__objc_abandon(self);
    KSSegmenterOptions *options = ks__objc_options_as(taskOptions, [KSSegmenterOptions class]);
    if (options != nil) {
        desc.model = (ks_segmenter_model)options.model;
        desc.output_u8 = options.outputBytes ? 1 : 0;
    }
    ks_segmenter *seg = NULL;
    ks_status st = ks_segmenter_create(&desc, &seg);
    ks__objc_task_desc_end(&desc.task);
    if (!ks__objc_ok(st, NULL, error)) return ks__objc_abandon(self);
    _segmenter = seg;
    return self;
}

- (void)dealloc {
    ks_segmenter_destroy((ks_segmenter *)_segmenter);
    [super dealloc];
}

- (BOOL)swapModelAtPath:(NSString *)path error:(NSError **)error {
    return [self swapModelAtPath:path key:nil error:error];
}

- (BOOL)swapModelAtPath:(NSString *)path key:(NSData *)key error:(NSError **)error {
    ks_task_options source;
    if (!ks__objc_swap_source(path, key, "KSSegmenter", &source, error)) return NO;
    ks_status st = ks_segmenter_swap_model((ks_segmenter *)_segmenter, &source);
    ks__objc_task_desc_end(&source);
    return ks__objc_ok(st, NULL, error); /* the create's message, on this thread */
}

- (uint64_t)modelGeneration {
    ks_task_stats stats;
    if (ks_segmenter_stats((ks_segmenter *)_segmenter, &stats) != KS_STATUS_OK) return 0;
    return stats.model_generation;
}

- (KSMask *)segmentImage:(KSImage *)image timestampUs:(int64_t)timestampUs error:(NSError **)error {
    ks_image view;
    if (!ks__objc_image_view(image, &view, error)) return nil;
    ks_segmentation *seg = NULL;
    ks_status st = ks_segment((ks_segmenter *)_segmenter, &view, timestampUs, &seg);
    if (!ks__objc_ok(st, _segmenter, error)) return nil;
    KSMask *mask = ks__objc_mask_make(seg->width_px, seg->height_px, seg->mask, seg->mask_u8,
                                      seg->person_fraction);
    ks_segmentation_release(seg);
    return mask;
}

@end
