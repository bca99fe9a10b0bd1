/* Measured kernel selection at reshape (ks_session_desc.tune). Not a published API.
 *
 * For a node whose op has at least two variants that the CPU supports and whose cost() accepts
 * the node, the tuner times candidates on the node's real shapes (FAST: the three cheapest by
 * cost; FULL: all) with trial buffers (inputs zero-filled, packed weights and scratch made for
 * the trial, then freed) and keeps the fastest. Winners are cached per (op, shapes, params,
 * threads, the session's ISA bits) key in memory and, with a cache path, in a text file:
 *
 *     line 1:  "kestrel-tune 1\t<ks__cpu_name()>\t<isa string>\t<KS_VERSION_STRING>\n"
 *     then:    "<key>\t<variant name>\n" per entry
 *
 * A file whose header differs (another CPU, ISA set or version) is ignored and rewritten; a file
 * that is unreadable, too large, or has any malformed line is ignored with a log message. Writes
 * go to "<path>.tmp" and are renamed over the file, so readers never see a partial file.
 *
 * Thread safety: a tuner belongs to one session and is used by one thread at a time.
 */
#ifndef KESTREL_TUNE_H
#define KESTREL_TUNE_H

#include "impl.h"
#include "kestrel/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ks__tuner ks__tuner;

/* mode must be FAST or FULL. cache_path may be NULL; it is copied. Allocates with alloc. */
ks_status ks__tuner_create(const ks_allocator *alloc, ks_tune_mode mode, const char *cache_path,
                           ks__tuner **tuner_out);
void ks__tuner_destroy(ks__tuner *tuner); /* NULL: no-op */

/* The variant to run ctx's node with (NULL: the reference kernel), as ks__impl_select would
 * pick it but measured. ctx is the reshape-time context (outputs shaped, non-constant data
 * NULL); it is not modified. Never fails: trial errors (e.g. out of memory) fall back to the
 * cost model, with a log message. */
const ks__impl *ks__tune_select(ks__tuner *tuner, const ks__kernel_ctx *ctx, uint32_t isa);

/* Test hook: number of candidate timings (trials) run in this process so far. */
uint64_t ks__tune_trial_count(void);

/* Parses a cache file's bytes into the tuner's memory cache (exposed for the fuzz target).
 * Returns 0 when accepted, -1 when the file was ignored (reason logged). Never crashes. */
int ks__tune_parse(ks__tuner *tuner, const char *data, size_t size_bytes);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_TUNE_H */
