/* Model key files for the tools (ks-protect, ks-run, ks-bench). */
#ifndef KESTREL_KEY_FILE_H
#define KESTREL_KEY_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "kestrel/kestrel.h"

#define KS_KEY_FILE_BYTES 32

/* Reads a model key: a file of exactly 32 raw bytes, or 64 hex digits optionally followed by
 * a newline. */
ks_status ks_key_file_read(const char *path, uint8_t key_out[KS_KEY_FILE_BYTES], char *err,
                           size_t err_cap);

/* Writes 32 raw bytes to a new file with mode 0600; refuses to overwrite an existing file. */
ks_status ks_key_file_write(const char *path, const uint8_t key[KS_KEY_FILE_BYTES], char *err,
                            size_t err_cap);

#endif
