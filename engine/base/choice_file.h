/* Small text files of remembered choices, shared by the caches that keep a measured decision per
 * key across processes (KS_BACKEND_AUTO's "<tune_cache_path>.auto", engine/runtime/auto_cache.h;
 * the Vulkan backend's kernel tuning, "<tune_cache_path>.vktune"). Not a published API.
 *
 *     line 1:  "<header>\n"              (the caller's: format name, version, machine)
 *     then:    "<key>\t<value>\n" per choice, the oldest first
 *
 * A key is 1 to KS__CHOICE_KEY_CAP - 1 printable ASCII characters (spaces allowed, no tab); a
 * value 1 to KS__CHOICE_VALUE_CAP - 1 characters of [A-Za-z0-9_.-]. Files larger than
 * KS__CHOICE_MAX_FILE_BYTES are not read. A file with another header is someone else's (another
 * version or machine): ignored, and replaced at the next save. A malformed one (a bad line, no
 * final newline, more entries than the caller allows) likewise, and the caller is told why.
 * Saving keeps the file's other valid entries (the oldest dropped beyond max_entries), writes
 * "<path>.tmp<pid>" and renames it over the file, so a reader never sees a partial file and two
 * processes that save at once keep one whole file (the last one's). No logging here: the
 * functions return why, the caller logs.
 */
#ifndef KESTREL_BASE_CHOICE_FILE_H
#define KESTREL_BASE_CHOICE_FILE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KS__CHOICE_KEY_CAP 512
#define KS__CHOICE_VALUE_CAP 32
#define KS__CHOICE_MAX_FILE_BYTES ((size_t)1 << 20)

/* Parses a file's bytes. Returns -1 when they are malformed (see above), 0 when the first line is
 * not `header`, else 1 + the number of entries. When key is not NULL and the result is 1 or more,
 * the value of the last line for key (if any) is copied into value_out (value_cap bytes, at least
 * KS__CHOICE_VALUE_CAP) and *found_out (may be NULL) is 1, else *found_out is 0 and value_out is
 * "" (value_out may be NULL when key is). */
int ks__choice_parse(const char *data, size_t size, const char *header, uint32_t max_entries,
                     const char *key, char *value_out, size_t value_cap, int *found_out);

/* The file's bytes (*size_out of them, NUL-terminated; free with ks__free(NULL, p)), or NULL: no
 * file (*why_out NULL), or unreadable / too large (*why_out says which). For a caller that looks
 * up many keys: read once, then ks__choice_parse per key. */
char *ks__choice_read(const char *path, size_t *size_out, const char **why_out);

/* The value stored for key in the file at path: 1 (value set), 0 (no file, no entry, another
 * header), -1 (unreadable, too large or malformed: *why_out, if not NULL, says which). */
int ks__choice_load(const char *path, const char *header, uint32_t max_entries, const char *key,
                    char *value, size_t value_cap, const char **why_out);

/* Records key -> value in the file at path. 0 on success, -1 (bad key or value, out of memory,
 * cannot write) with *why_out set. */
int ks__choice_save(const char *path, const char *header, uint32_t max_entries, const char *key,
                    const char *value, const char **why_out);

#ifdef __cplusplus
}
#endif
#endif /* KESTREL_BASE_CHOICE_FILE_H */
