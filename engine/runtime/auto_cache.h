/* KS_BACKEND_AUTO's choices kept on disk (session_create.c). Not a published API.
 *
 * With a tune_cache_path, AUTO's measured choice is written to "<tune_cache_path>.auto", so
 * that a later process creates its session on the chosen backend without measuring:
 *
 *     line 1:  "kestrel-auto 1\t<KS_VERSION_STRING>\t<ks__cpu_name()>\t<isa string>\n"
 *     then:    "<key>\t<backend name>\n" per choice, the oldest first
 *     key:     "<model crc32, 8 hex digits>:<model bytes>:t<threads>:p<precision>:<device>"
 *
 * <device> is the device backend's identity (vendor and device ids, driver version and name:
 * another GPU or driver is another key). The file is a choice file (base/choice_file.h: atomic
 * writes, other headers and malformed files ignored and replaced, the oldest entries dropped
 * beyond KS__AUTO_MAX_ENTRIES); problems are logged here.
 */
#ifndef KESTREL_AUTO_CACHE_H
#define KESTREL_AUTO_CACHE_H

#include <stddef.h>

#include "base/choice_file.h"
#include "kestrel/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS__AUTO_MAGIC "kestrel-auto 1"
#define KS__AUTO_MAX_ENTRIES 256u
#define KS__AUTO_KEY_CAP KS__CHOICE_KEY_CAP

/* This machine's header line, without the newline (tabs and newlines in names become spaces). */
void ks__auto_header(char *buf, size_t cap);

/* Parses a file's bytes (ks__choice_parse). Returns -1 when they are malformed (also: the value
 * for key is not the name of a backend a session runs on), 0 when the header is not `header`,
 * else 1 + the number of entries; *found_out (may be NULL) is the backend stored for `key`, or
 * KS_BACKEND_COUNT. */
int ks__auto_parse(const char *data, size_t size, const char *header, const char *key,
                   ks_backend *found_out);

/* The choice for key in the file at path: 1 and *out set, or 0 (no file, no entry, another
 * header, a bad file: logged). */
int ks__auto_load(const char *path, const char *key, ks_backend *out);

/* Records key -> b in the file at path (the file's other valid entries are kept). Failures are
 * logged, never fatal: the choice is then remembered for the process only. */
void ks__auto_save(const char *path, const char *key, ks_backend b);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_AUTO_CACHE_H */
