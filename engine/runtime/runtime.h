/* The runtime: the floor above the core and the backends that creates sessions (choosing their
 * backend) and times models for KS_PRECISION_FASTEST. Not a published API. */
#ifndef KESTREL_RUNTIME_H
#define KESTREL_RUNTIME_H

#include "src/session.h"

/* A session on the model's graph (or on `graph`, which must outlive it) with the backend the
 * runtime picks (today: the CPU). */
ks_status ks__session_create_on(const ks_model *model, const ks__graph *graph,
                                const ks_session_desc *desc, ks_session **session_out);

/* Forgets KS_BACKEND_AUTO's choices made in this process (not those on disk): tests only. */
void ks__auto_forget(void);

/* KS_PRECISION_FASTEST: fills fp32[g->num_nodes] (1 = run in fp32) for model's graph, timed
 * with desc's threads and tuning. Returns KS_STATUS_OK with every entry 0 when nothing is
 * demotable or the timing cannot run (dynamic input shapes, a missing kernel: logged). */
ks_status ks__prec_plan(const ks_model *model, const ks_session_desc *desc, uint8_t *fp32);

#endif /* KESTREL_RUNTIME_H */
