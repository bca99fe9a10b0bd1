/* Internal to kestrel_effects: allocation helpers and the zip reader. Not a published API. */
#ifndef KESTREL_EFFECT_INTERNAL_H
#define KESTREL_EFFECT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "base/alloc.h"
#include "kestrel/effect.h"

/* One file of the archive, uncompressed into its own allocation (size_bytes + 1, the extra byte
 * is a NUL so text assets can be read as C strings). */
typedef struct ks__zip_file {
    char *name;
    uint8_t *data;
    size_t size_bytes;
} ks__zip_file;

/* Reads every file of the zip in `buf` into memory after the structural checks listed in
 * effect.h. Directory entries are skipped. On failure writes a message to err (naming the entry
 * and the offending value) and returns the status; nothing is allocated then. */
ks_status ks__zip_read(const uint8_t *buf, size_t size_bytes, const ks_allocator *a,
                       ks__zip_file **files_out, uint32_t *num_files_out, char *err,
                       size_t err_cap);
void ks__zip_free(const ks_allocator *a, ks__zip_file *files, uint32_t num_files);

#endif /* KESTREL_EFFECT_INTERNAL_H */
