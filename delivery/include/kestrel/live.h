/* Kestrel live swap: a slot that hands the current version of an object (a model with its
 * session, a bundle, an effect) to each frame, and swaps in a newer one between frames.
 *
 * A frame acquires the slot's current object, uses only that object for the whole frame, and
 * releases it. ks_live_publish makes a new object current: frames that start afterwards get it,
 * frames already running finish on the old one, and the old object is released (the release
 * callback runs) when its last frame releases it. So no frame is dropped or sees a mix of
 * versions, and nothing is freed under a running frame.
 *
 * Usage (with the store: publish what an install made current):
 *     ks_live *slot = NULL;
 *     ks_live_create(&(ks_live_desc){ .release = free_engine, .user = NULL }, &slot);
 *     ks_live_publish(slot, load_engine(path_of_v1));
 *     // camera thread, every frame:
 *     ks_live_ref ref;
 *     engine *e = ks_live_acquire(slot, &ref);     // never NULL once something is published
 *     run_frame(e, frame);
 *     ks_live_release(slot, ref);
 *     // update thread, after ks_store_install_file succeeded:
 *     ks_live_publish(slot, load_engine(path_of_v2));  // v1 is freed after its last frame
 *     ...
 *     ks_live_destroy(slot);                        // after the last frame has released
 *
 * Thread safety: acquire, release and publish may be called from any threads at once. Acquire
 * and release never allocate and hold a lock only for a few instructions. create and destroy
 * must not race with other calls on the same slot.
 */
#ifndef KESTREL_LIVE_H
#define KESTREL_LIVE_H

#include <stdint.h>

#include "kestrel/kestrel.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks_live ks_live;

/* Releases a published object once no frame uses it and it is no longer current. Called on the
 * thread whose release (or publish, or destroy) dropped the last reference. */
typedef void (*ks_live_release_fn)(void *user, void *object);

typedef struct ks_live_desc {
    ks_live_release_fn release; /* NULL: objects are not released by the slot */
    void *user;
    const ks_allocator *allocator; /* NULL: malloc/free. Must outlive the slot. */
} ks_live_desc;

/* A frame's hold on one object; pass it back to ks_live_release. */
typedef struct ks_live_ref {
    void *node;
} ks_live_ref;

KS_API ks_status ks_live_create(const ks_live_desc *desc, ks_live **live_out);
/* Releases the current object. Every acquired reference must have been released. NULL: no-op. */
KS_API void ks_live_destroy(ks_live *live);

/* Makes object (not NULL) current for the frames that acquire after this call returns. The
 * previous object is released when its last frame ends (or now, if none uses it). Allocates a
 * small record: KS_STATUS_OUT_OF_MEMORY leaves the previous object current and does not take
 * ownership of object. */
KS_API ks_status ks_live_publish(ks_live *live, void *object);

/* The current object (NULL before the first publish, and then ref_out holds nothing to
 * release), held until ks_live_release(live, *ref_out). */
KS_API void *ks_live_acquire(ks_live *live, ks_live_ref *ref_out);
KS_API void ks_live_release(ks_live *live, ks_live_ref ref);

/* Number of publishes so far (the version a frame got can be compared with it). */
KS_API uint64_t ks_live_generation(const ks_live *live);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_LIVE_H */
