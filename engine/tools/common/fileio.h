/* Whole-file reading for the tools. */
#ifndef KESTREL_FILEIO_H
#define KESTREL_FILEIO_H

#include <stddef.h>
#include <stdint.h>

#include "kestrel/kestrel.h"

/* Reads path into a malloc'ed buffer (free()). Refuses files above max_bytes. */
ks_status ks_read_file(const char *path, size_t max_bytes, uint8_t **data_out, size_t *size_out,
                       char *err, size_t err_cap);
/* Creates directory path (and parents) if missing. */
ks_status ks_make_dirs(const char *path, char *err, size_t err_cap);

#endif
