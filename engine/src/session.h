/* Session internals the runtime (engine/runtime) builds on. Not a published API. */
#ifndef KESTREL_SESSION_H
#define KESTREL_SESSION_H

#include "backend.h"
#include "ir.h"

/* Creates a session that runs `graph` (the model's own, or a copy that outlives the session:
 * see ks__session_adopt_graph) on `backend`. desc was validated by the caller (may be NULL). */
ks_status ks__session_create_with(const ks_model *model, const ks__graph *graph,
                                  const ks_session_desc *desc, const ks__backend *backend,
                                  ks_session **session_out);
/* As ks__session_create_with, with a device backend (backend.h; NULL: none): the nodes the
 * device supports run on it in partitions (partition.h), the rest on `backend`, the host. Fails
 * with the device's status and reason when it cannot be opened. */
ks_status ks__session_create_split(const ks_model *model, const ks__graph *graph,
                                   const ks_session_desc *desc, const ks__backend *backend,
                                   const ks__backend *device, ks_session **session_out);
/* The session takes `graph` (allocated with the session's allocator, the one it runs) and frees
 * it when destroyed. */
void ks__session_adopt_graph(ks_session *session, ks__graph *graph);

#endif /* KESTREL_SESSION_H */
