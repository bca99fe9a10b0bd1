/* KS_BACKEND_AUTO's choices kept on disk (auto_cache.h). */
#include "auto_cache.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/cpuinfo.h"
#include "src/common.h"

void ks__auto_header(char *buf, size_t cap) {
    char isa[128], cpu[256];
    ks__isa_string(ks__cpu_isa(), isa, sizeof(isa));
    snprintf(cpu, sizeof(cpu), "%s", ks__cpu_name() ? ks__cpu_name() : "unknown");
    for (char *p = cpu; *p; p++)
        if (*p == '\t' || *p == '\n' || *p == '\r') *p = ' ';
    snprintf(buf, cap, "%s\t%s\t%s\t%s", KS__AUTO_MAGIC, KS_VERSION_STRING, cpu, isa);
}

/* One entry line of a file: [key, key + key_len) and the backend after the tab. */
typedef struct auto_line {
    const char *key;
    size_t key_len;
    ks_backend backend;
} auto_line;

/* Splits and checks data[pos..]'s line; returns its length with the newline, or 0 if bad. */
static size_t entry_line(const char *data, size_t size, size_t pos, auto_line *out) {
    const char *ln = data + pos;
    const char *nl = memchr(ln, '\n', size - pos);
    if (!nl) return 0; /* no final newline: a partial write */
    size_t len = (size_t)(nl - ln);
    const char *tab = memchr(ln, '\t', len);
    if (!tab || tab == ln) return 0;
    size_t key_len = (size_t)(tab - ln);
    if (key_len >= KS__AUTO_KEY_CAP) return 0;
    for (size_t i = 0; i < key_len; i++)
        if ((unsigned char)ln[i] < 0x20 || (unsigned char)ln[i] > 0x7e) return 0;
    char name[16];
    size_t name_len = len - key_len - 1;
    if (name_len == 0 || name_len >= sizeof(name)) return 0;
    memcpy(name, tab + 1, name_len);
    name[name_len] = '\0';
    ks_backend b;
    /* a choice is a backend a session runs on: never "auto" */
    if (ks_backend_parse(name, &b) != 0 || b == KS_BACKEND_AUTO) return 0;
    out->key = ln;
    out->key_len = key_len;
    out->backend = b;
    return len + 1;
}

int ks__auto_parse(const char *data, size_t size, const char *header, const char *key,
                   ks_backend *found_out) {
    if (found_out) *found_out = KS_BACKEND_COUNT;
    if (!data || !header) return -1;
    size_t hl = strlen(header);
    if (size < hl + 1 || memcmp(data, header, hl) != 0 || data[hl] != '\n') return 0;
    size_t kl = key ? strlen(key) : 0, pos = hl + 1;
    uint32_t entries = 0;
    while (pos < size) {
        auto_line l;
        size_t n = entry_line(data, size, pos, &l);
        if (n == 0 || ++entries > KS__AUTO_MAX_ENTRIES) {
            if (found_out) *found_out = KS_BACKEND_COUNT; /* nothing from a bad file */
            return -1;
        }
        if (key && l.key_len == kl && memcmp(l.key, key, kl) == 0 && found_out)
            *found_out = l.backend;
        pos += n;
    }
    return 1 + (int)entries;
}

/* The file's bytes (NUL-terminated, *size_out without the NUL), or NULL: no file (quietly), or
 * unreadable / too large (logged). */
static char *read_file(const char *path, size_t *size_out) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = NULL;
    long end = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (end < 0 || (unsigned long)end > KS__AUTO_MAX_FILE_BYTES) {
        ks__log(KS_LOG_WARN, "backend auto: '%s' is %s; ignored", path,
                end < 0 ? "unreadable" : "too large");
    } else if (fseek(f, 0, SEEK_SET) == 0 && (buf = ks__alloc(NULL, (size_t)end + 1)) != NULL) {
        if (fread(buf, 1, (size_t)end, f) != (size_t)end) {
            ks__log(KS_LOG_WARN, "backend auto: '%s': read error; ignored", path);
            ks__free(NULL, buf);
            buf = NULL;
        } else {
            buf[end] = '\0';
            *size_out = (size_t)end;
        }
    }
    fclose(f);
    return buf;
}

int ks__auto_load(const char *path, const char *key, ks_backend *out) {
    size_t n = 0;
    char *data = path ? read_file(path, &n) : NULL;
    if (!data) return 0;
    char header[512];
    ks__auto_header(header, sizeof(header));
    ks_backend b = KS_BACKEND_COUNT;
    int r = ks__auto_parse(data, n, header, key, &b);
    ks__free(NULL, data);
    if (r < 0)
        ks__log(KS_LOG_WARN,
                "backend auto: '%s' is malformed; ignored (rewritten at the next "
                "choice)",
                path);
    if (r < 1 || b == KS_BACKEND_COUNT) return 0;
    *out = b;
    return 1;
}

void ks__auto_save(const char *path, const char *key, ks_backend b) {
    if (!path || !key || !key[0] || strlen(key) >= KS__AUTO_KEY_CAP || b == KS_BACKEND_AUTO ||
        ks_backend_string(b)[0] == '?' || strpbrk(key, "\t\n\r"))
        return;
    char header[512];
    ks__auto_header(header, sizeof(header));
    size_t n = 0, hl = strlen(header), kl = strlen(key);
    char *old = read_file(path, &n);
    int entries = old ? ks__auto_parse(old, n, header, NULL, NULL) - 1 : -1;
    if (entries < 0) entries = 0; /* no file, another header or malformed: start afresh */
    size_t pl = strlen(path);
    size_t cap = hl + 1 + (entries ? n : 0) + kl + 16;
    char *out = ks__alloc(NULL, cap), *tmp = ks__alloc(NULL, pl + 32);
    bool ok = out && tmp;
    size_t len = 0;
    if (ok) {
        memcpy(out, header, hl);
        out[hl] = '\n';
        len = hl + 1;
        /* keep the others, the oldest dropped to make room */
        int skip =
            entries >= (int)KS__AUTO_MAX_ENTRIES ? entries - (int)KS__AUTO_MAX_ENTRIES + 1 : 0;
        for (size_t pos = hl + 1; entries && pos < n;) {
            auto_line l;
            size_t ln = entry_line(old, n, pos, &l);
            if (ln == 0) break; /* cannot happen: parsed above */
            bool same = l.key_len == kl && memcmp(l.key, key, kl) == 0;
            if (!same && skip-- <= 0) {
                memcpy(out + len, old + pos, ln);
                len += ln;
            }
            pos += ln;
        }
        len += (size_t)snprintf(out + len, cap - len, "%s\t%s\n", key, ks_backend_string(b));
        snprintf(tmp, pl + 32, "%s.tmp%ld", path, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        ok = f && fwrite(out, 1, len, f) == len;
        if (f && fclose(f) != 0) ok = false;
        if (ok && rename(tmp, path) != 0) ok = false;
        if (!ok) remove(tmp);
    }
    if (!ok)
        ks__log(KS_LOG_WARN,
                "backend auto: cannot write '%s'; the choice is kept for this "
                "process only",
                path);
    ks__free(NULL, out);
    ks__free(NULL, tmp);
    ks__free(NULL, old);
}
