/* Placeholder: replaced by the real importer. */
#include "convert.h"

ks_status ks__import_onnx(const uint8_t *data, size_t size_bytes, const char *source_name,
                        ks__graph *g, char *err, size_t err_cap) {
    (void)data;
    (void)size_bytes;
    (void)g;
    ks__fmt(err, err_cap, "%s: onnx import not built yet", source_name);
    return KS_STATUS_UNSUPPORTED;
}
