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
 * another GPU or driver is another key). A file with another header (another Kestrel version
 * or CPU) is ignored and rewritten; an unreadable, oversized or malformed one is ignored with a
 * log message and rewritten at the next choice. At most KS__AUTO_MAX_ENTRIES choices are kept
 * (the oldest go). Writes go to "<file>.tmp<pid>" and are renamed over the file, so a reader
 * never sees a partial file; two processes that choose at once keep the last one's file.
 */
#ifndef KESTREL_AUTO_CACHE_H
#define KESTREL_AUTO_CACHE_H

#include <stddef.h>

#include "kestrel/engine.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KS__AUTO_MAGIC "kestrel-auto 1"
#define KS__AUTO_MAX_ENTRIES 256u
#define KS__AUTO_MAX_FILE_BYTES ((size_t)256 << 10)
#define KS__AUTO_KEY_CAP 512

/* This machine's header line, without the newline (tabs and newlines in names become spaces). */
void ks__auto_header(char *buf, size_t cap);

/* Parses a file's bytes. Returns -1 when they are malformed (a line without a tab, an empty or
 * unprintable key, an unknown backend name, no final newline, more entries than the maximum),
 * 0 when the header is not `header`, else 1 + the number of entries; on 1 and above *found_out
 * (may be NULL) is the backend stored for `key` (the last line for it), else KS_BACKEND_COUNT. */
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
