/* Internal helpers shared by the Objective-C binding's .m files (not installed). Everything
 * here only marshals between Foundation objects and the C API; no task logic. */
#ifndef KESTREL_OBJC_PRIVATE_H
#define KESTREL_OBJC_PRIVATE_H

#import "KestrelObjC/KestrelObjC.h"

#include "kestrel/vision.h"

/* Sets *error (when error is non-NULL) to a KSErrorDomain error with code `status` and the
 * message `message` (NULL or "": the status name). Returns NO, for `return ks__objc_fail(..)`. */
BOOL ks__objc_fail(NSError **error, ks_status status, const char *message);

/* YES for KS_STATUS_OK; else NO with *error from `status` and ks_last_error(handle) (NULL for a
 * create call). */
BOOL ks__objc_ok(ks_status status, const void *handle, NSError **error);

/* Releases a half-initialized object and returns nil, for `return ks__objc_abandon(self)` in an
 * initializer that failed (dealloc then sees the ivars still zero). */
static inline id ks__objc_abandon(id object) {
    [object release];
    return nil;
}

/* The start of a task's initializer: checks that `options` is nil, a plain KSTaskOptions or a
 * kind of `expected` (else NO with *error naming `task` and the class passed), zeroes the
 * `desc_bytes` of `desc` and fills `task_out` (the desc's ks_task_options) from `options`. String
 * members point into autoreleased storage valid until the current autorelease pool drains; the
 * key (or key provider state) into a buffer that ks__objc_task_desc_end wipes and frees. */
BOOL ks__objc_task_desc(KSTaskOptions *options, Class expected, const char *task, void *desc,
                        size_t desc_bytes, ks_task_options *task_out, NSError **error);

/* Call right after the task's create, whatever it returned, when ks__objc_task_desc succeeded:
 * wipes and frees the key buffer ks__objc_task_desc made for the create call (the key of
 * KSTaskOptions.key, or the key provider's state). */
void ks__objc_task_desc_end(ks_task_options *task);

/* The start of a task's live swap (-swapModelAtPath:key:error:): zeroes *source and sets its
 * model_path to `path` (autoreleased storage) and, for a non-nil `key`, its key fields to a copy
 * of the key in a buffer that ks__objc_task_desc_end wipes and frees (call it right after the
 * swap, whatever it returned). NO with *error naming `task` for a nil path or a key that is not
 * KS_TASK_KEY_BYTES long. */
BOOL ks__objc_swap_source(NSString *path, NSData *key, const char *task, ks_task_options *source,
                          NSError **error);

/* Overwrites n bytes with zeros in a way the compiler cannot drop as a dead store (secrets). */
void ks__objc_wipe(void *p, size_t n);

/* `options` if it is a kind of `expected` (for its task-specific settings), else nil. */
static inline id ks__objc_options_as(KSTaskOptions *options, Class expected) {
    return [options isKindOfClass:expected] ? options : nil;
}

/* A view of `image` as a C image; NO with *error for a nil image. */
BOOL ks__objc_image_view(KSImage *image, ks_image *out, NSError **error);

/* An autoreleased mask: copies width * height floats and, if non-NULL, bytes. fraction < 0:
 * computed from the floats. */
KSMask *ks__objc_mask_make(int32_t width, int32_t height, const float *probabilities,
                           const uint8_t *bytes, float fraction);

/* A result class made from one element of a C result array (ks_faces.items, ...). */
@protocol KSObjCResultItem <NSObject>
/* `item`: the element; `results`: the whole C result, for fields shared by all elements. */
- (instancetype)ks_initWithItem:(const void *)item results:(const void *)results;
@end

/* An autoreleased immutable array of `count` new `item_class` objects, one per element of
 * `items` (`item_bytes` apart), made with -ks_initWithItem:results:. */
NSArray *ks__objc_results(const void *results, const void *items, size_t item_bytes, uint32_t count,
                          Class item_class);

/* Converts C structs to the Objective-C geometry types (layouts differ only in names). */
static inline KSBox ks__objc_box(ks_box b) {
    KSBox r = {b.x, b.y, b.w, b.h};
    return r;
}

#endif /* KESTREL_OBJC_PRIVATE_H */
