/* Front-end dispatch: picks the importer from the file's content. */
#include "convert.h"

#include <string.h>

ks_status ks__import_any(const uint8_t *data, size_t size_bytes, const char *source_name,
                         ks__graph *g, char *err, size_t err_cap) {
    /* TFLite flatbuffers carry the file identifier "TFL3" at bytes 4..7. */
    if (size_bytes >= 8 && memcmp(data + 4, "TFL3", 4) == 0)
        return ks__import_tflite(data, size_bytes, source_name, g, err, err_cap);
    /* ONNX ModelProto has no magic; it starts with a protobuf tag (field 1 ir_version varint =
     * 0x08, or another small field). Accept by extension-independent attempt. */
    if (size_bytes >= 2 && (data[0] == 0x08 || data[0] == 0x12 || data[0] == 0x1a ||
                            data[0] == 0x22 || data[0] == 0x3a || data[0] == 0x42))
        return ks__import_onnx(data, size_bytes, source_name, g, err, err_cap);
    ks__fmt(err, err_cap,
            "%s: neither a TFLite flatbuffer (no 'TFL3' identifier) nor an ONNX "
            "protobuf",
            source_name);
    return KS_STATUS_INVALID_MODEL;
}
