/* Small text files of remembered choices (choice_file.h). */
#include "choice_file.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"

static bool value_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '.' || c == '-';
}

static bool key_ok(const char *k, size_t n) {
    if (n == 0 || n >= KS__CHOICE_KEY_CAP) return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)k[i] < 0x20 || (unsigned char)k[i] > 0x7e) return false;
    return true;
}

static bool value_ok(const char *v, size_t n) {
    if (n == 0 || n >= KS__CHOICE_VALUE_CAP) return false;
    for (size_t i = 0; i < n; i++)
        if (!value_char(v[i])) return false;
    return true;
}

/* One entry line: [key, key + key_len) and [value, value + value_len). */
typedef struct choice_line {
    const char *key, *value;
    size_t key_len, value_len;
} choice_line;

/* Splits and checks data[pos..]'s line; returns its length with the newline, or 0 if bad. */
static size_t entry_line(const char *data, size_t size, size_t pos, choice_line *out) {
    const char *ln = data + pos;
    const char *nl = memchr(ln, '\n', size - pos);
    if (!nl) return 0; /* no final newline: a partial write */
    size_t len = (size_t)(nl - ln);
    const char *tab = memchr(ln, '\t', len);
    if (!tab) return 0;
    out->key = ln;
    out->key_len = (size_t)(tab - ln);
    out->value = tab + 1;
    out->value_len = len - out->key_len - 1;
    if (!key_ok(out->key, out->key_len) || !value_ok(out->value, out->value_len)) return 0;
    return len + 1;
}

int ks__choice_parse(const char *data, size_t size, const char *header, uint32_t max_entries,
                     const char *key, char *value_out, size_t value_cap, int *found_out) {
    if (found_out) *found_out = 0;
    if (value_out && value_cap) value_out[0] = '\0';
    if (!data || !header) return -1;
    size_t hl = strlen(header);
    if (size < hl + 1 || memcmp(data, header, hl) != 0 || data[hl] != '\n') return 0;
    size_t kl = key ? strlen(key) : 0, pos = hl + 1;
    uint32_t entries = 0;
    const char *found = NULL;
    size_t found_len = 0;
    while (pos < size) {
        choice_line l;
        size_t n = entry_line(data, size, pos, &l);
        if (n == 0 || ++entries > max_entries) return -1;
        if (key && l.key_len == kl && memcmp(l.key, key, kl) == 0) {
            found = l.value;
            found_len = l.value_len;
        }
        pos += n;
    }
    if (found && value_out && value_cap > found_len) {
        memcpy(value_out, found, found_len);
        value_out[found_len] = '\0';
        if (found_out) *found_out = 1;
    }
    return 1 + (int)entries;
}

/* The file's bytes (*size_out of them, NUL-terminated), or NULL: no file (*why_out NULL), or
 * unreadable / too large (*why_out says which). */
char *ks__choice_read(const char *path, size_t *size_out, const char **why_out) {
    *why_out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long end = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (end < 0) {
        *why_out = "unreadable";
    } else if ((unsigned long)end > KS__CHOICE_MAX_FILE_BYTES) {
        *why_out = "too large";
    } else if (fseek(f, 0, SEEK_SET) != 0 || !(buf = ks__alloc(NULL, (size_t)end + 1))) {
        *why_out = "unreadable";
    } else if (fread(buf, 1, (size_t)end, f) != (size_t)end) {
        *why_out = "a read error";
        ks__free(NULL, buf);
        buf = NULL;
    } else {
        buf[end] = '\0';
        *size_out = (size_t)end;
    }
    fclose(f);
    return buf;
}

int ks__choice_load(const char *path, const char *header, uint32_t max_entries, const char *key,
                    char *value, size_t value_cap, const char **why_out) {
    const char *why = NULL;
    size_t n = 0;
    char *data = path ? ks__choice_read(path, &n, &why) : NULL;
    int found = 0, r = 0;
    if (data) {
        r = ks__choice_parse(data, n, header, max_entries, key, value, value_cap, &found);
        if (r < 0) why = "malformed";
        ks__free(NULL, data);
    }
    if (why_out) *why_out = why;
    if (why) return -1;
    return r >= 1 && found ? 1 : 0;
}

int ks__choice_save(const char *path, const char *header, uint32_t max_entries, const char *key,
                    const char *value, const char **why_out) {
    const char *why = NULL;
    size_t hl = header ? strlen(header) : 0, kl = key ? strlen(key) : 0;
    size_t vl = value ? strlen(value) : 0;
    if (!path || !header || !key_ok(key, kl) || memchr(key, '\t', kl) || !value_ok(value, vl) ||
        max_entries == 0) {
        if (why_out) *why_out = "a bad key or value";
        return -1;
    }
    size_t n = 0;
    char *old = ks__choice_read(path, &n, &why);
    int entries = old ? ks__choice_parse(old, n, header, max_entries, NULL, NULL, 0, NULL) - 1 : -1;
    if (entries < 0) entries = 0; /* no file, another header or malformed: start afresh */
    size_t pl = strlen(path), cap = hl + 1 + (entries ? n : 0) + kl + vl + 3;
    char *out = ks__alloc(NULL, cap), *tmp = ks__alloc(NULL, pl + 32);
    bool ok = out && tmp;
    why = ok ? NULL : "out of memory";
    if (ok) {
        memcpy(out, header, hl);
        out[hl] = '\n';
        size_t len = hl + 1;
        /* keep the others, the oldest dropped to make room for the new one */
        int skip = entries >= (int)max_entries ? entries - (int)max_entries + 1 : 0;
        for (size_t pos = hl + 1; entries && pos < n;) {
            choice_line l;
            size_t ln = entry_line(old, n, pos, &l);
            if (ln == 0) break; /* cannot happen: parsed above */
            bool same = l.key_len == kl && memcmp(l.key, key, kl) == 0;
            if (!same && skip-- <= 0) {
                memcpy(out + len, old + pos, ln);
                len += ln;
            }
            pos += ln;
        }
        memcpy(out + len, key, kl);
        out[len + kl] = '\t';
        memcpy(out + len + kl + 1, value, vl);
        out[len + kl + 1 + vl] = '\n';
        len += kl + vl + 2;
        snprintf(tmp, pl + 32, "%s.tmp%ld", path, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        ok = f && fwrite(out, 1, len, f) == len;
        if (f && fclose(f) != 0) ok = false;
        if (ok && rename(tmp, path) != 0) ok = false;
        if (!ok) {
            remove(tmp);
            why = "cannot write it";
        }
    }
    ks__free(NULL, out);
    ks__free(NULL, tmp);
    ks__free(NULL, old);
    if (why_out) *why_out = why;
    return ok ? 0 : -1;
}
