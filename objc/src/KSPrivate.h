/* Internal helpers shared by the Objective-C binding's .m files (not installed). Everything
 * here only marshals between Foundation objects and the C API; no task logic. */
#ifndef KESTREL_OBJC_PRIVATE_H
#define KESTREL_OBJC_PRIVATE_H

#import "KestrelObjC/KestrelObjC.h"

#include "kestrel/vision.h"

/* Sets *error (when error is non-NULL) to a KSErrorDomain error with code `status` and the
 * message `message` (NULL or "": the status name). Returns NO, for `return ks__objc_fail(..)`. */
BOOL ks__objc_fail(NSError **error, ks_status status, const char *message);

/* Fills the C task options from `options` (nil: zeros). String members point into autoreleased
 * storage valid until the current autorelease pool drains. */
void ks__objc_task_options(KSTaskOptions *options, ks_task_options *out);

/* YES if `options` is nil, a plain KSTaskOptions or a kind of `expected`; else NO with *error
 * naming `task` and the class that was passed. */
BOOL ks__objc_check_options(KSTaskOptions *options, Class expected, const char *task,
                            NSError **error);

/* A view of `image` as a C image; NO with *error for a nil image. */
BOOL ks__objc_image_view(KSImage *image, ks_image *out, NSError **error);

/* An autoreleased mask: copies width * height floats and, if non-NULL, bytes. fraction < 0:
 * computed from the floats. */
KSMask *ks__objc_mask_make(int32_t width, int32_t height, const float *probabilities,
                           const uint8_t *bytes, float fraction);

/* Converts C structs to the Objective-C geometry types (layouts differ only in names). */
static inline KSBox ks__objc_box(ks_box b) {
    KSBox r = {b.x, b.y, b.w, b.h};
    return r;
}

#endif /* KESTREL_OBJC_PRIVATE_H */
