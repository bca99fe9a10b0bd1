/* Session creation (runtime.h): validates the description, picks the backend and, for
 * KS_PRECISION_F32 / FASTEST on a quantized model, builds the graph the session runs. */
#include "runtime.h"

#include <stdbool.h>
#include <string.h>

#include "backends/cpu/impl.h" /* ks__cpu_backend */
#include "src/common.h"
#include "src/model.h"
#include "src/precision.h"

ks_status ks__session_create_on(const ks_model *model, const ks__graph *graph,
                                const ks_session_desc *desc, ks_session **session_out) {
    return ks__session_create_with(model, graph, desc, ks__cpu_backend(), session_out);
}

/* KS_PRECISION_F32 / FASTEST on a quantized model: the session runs its own copy of the graph
 * with the chosen int8 layers in fp32 (precision.h). */
static ks_status create_mixed(const ks_model *model, const ks_session_desc *desc,
                              ks_session **session_out) {
    const ks__graph *mg = &model->graph;
    ks_allocator a = ks__allocator_or_default(desc->allocator ? desc->allocator : &model->alloc);
    uint8_t *fp32 = ks__alloc(&a, mg->num_nodes ? mg->num_nodes : 1);
    ks__graph *g = ks__alloc(&a, sizeof(*g));
    ks_status st = KS_STATUS_OUT_OF_MEMORY;
    if (!fp32 || !g) {
        ks__object_error(NULL, "out of memory creating a session");
        goto done;
    }
    memset(fp32, desc->precision == KS_PRECISION_F32, mg->num_nodes);
    if (desc->precision == KS_PRECISION_FASTEST && (st = ks__prec_plan(model, desc, fp32))) {
        ks__object_error(NULL, "precision fastest: %s", ks_status_string(st));
        goto done;
    }
    bool any = false;
    for (uint32_t i = 0; i < mg->num_nodes; i++)
        any |= fp32[i] != 0;
    if (!any) {
        st = ks__session_create_on(model, mg, desc, session_out);
        goto done;
    }
    char err[256] = "";
    if ((st = ks__prec_build(mg, fp32, g, NULL, err, sizeof(err)))) {
        ks__object_error(NULL, "ks_session_create: cannot run the int8 layers in fp32: %s", err);
        goto done;
    }
    if ((st = ks__session_create_on(model, g, desc, session_out))) {
        ks__graph_free(g);
        goto done;
    }
    ks__session_adopt_graph(*session_out, g);
    g = NULL;
done:
    ks__free(&a, fp32);
    ks__free(&a, g);
    return st;
}

ks_status ks_session_create(const ks_model *model, const ks_session_desc *desc,
                            ks_session **session_out) {
    if (!model || !session_out) {
        ks__object_error(NULL, "ks_session_create: model and session_out must not be NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (desc && (desc->num_threads < 0 || desc->precision >= KS_PRECISION_COUNT ||
                 (desc->flags & ~(KS_SESSION_KEEP_ALL_TENSORS | KS_SESSION_NO_THREAD_AFFINITY)) ||
                 (int)desc->tune < 0 || desc->tune >= KS_TUNE_COUNT)) {
        ks__object_error(NULL,
                         "ks_session_create: invalid desc (num_threads %d, precision %d, "
                         "flags 0x%x, tune %d)",
                         desc->num_threads, (int)desc->precision, desc->flags, (int)desc->tune);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    ks_precision prec = desc ? desc->precision : KS_PRECISION_DEFAULT;
    if (prec == KS_PRECISION_DEFAULT || !ks__prec_count_demotable(&model->graph))
        return ks__session_create_on(model, &model->graph, desc, session_out);
    return create_mixed(model, desc, session_out);
}
