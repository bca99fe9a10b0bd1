/* KS_BACKEND_AUTO's choices kept on disk (auto_cache.h), in a choice file (base/choice_file.h). */
#include "auto_cache.h"

#include <stdio.h>
#include <string.h>

#include "base/choice_file.h"
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

/* A stored value that names a backend a session runs on (never "auto"). */
static int backend_value(const char *v, ks_backend *out) {
    ks_backend b;
    if (ks_backend_parse(v, &b) != 0 || b == KS_BACKEND_AUTO) return 0;
    *out = b;
    return 1;
}

int ks__auto_parse(const char *data, size_t size, const char *header, const char *key,
                   ks_backend *found_out) {
    char v[KS__CHOICE_VALUE_CAP];
    int found = 0;
    int r = ks__choice_parse(data, size, header, KS__AUTO_MAX_ENTRIES, key, v, sizeof(v), &found);
    if (found_out) *found_out = KS_BACKEND_COUNT;
    if (r >= 1 && found && found_out && !backend_value(v, found_out)) return -1;
    return r;
}

int ks__auto_load(const char *path, const char *key, ks_backend *out) {
    char header[512], v[KS__CHOICE_VALUE_CAP];
    ks__auto_header(header, sizeof(header));
    const char *why = NULL;
    int r = ks__choice_load(path, header, KS__AUTO_MAX_ENTRIES, key, v, sizeof(v), &why);
    if (r == 1 && !backend_value(v, out)) {
        r = -1;
        why = "malformed (not a backend name)";
    }
    if (r < 0)
        ks__log(KS_LOG_WARN, "backend auto: '%s' is %s; ignored (rewritten at the next choice)",
                path, why);
    return r == 1;
}

void ks__auto_save(const char *path, const char *key, ks_backend b) {
    if (b == KS_BACKEND_AUTO || ks_backend_string(b)[0] == '?') return;
    char header[512];
    ks__auto_header(header, sizeof(header));
    const char *why = NULL;
    if (ks__choice_save(path, header, KS__AUTO_MAX_ENTRIES, key, ks_backend_string(b), &why))
        ks__log(KS_LOG_WARN,
                "backend auto: cannot record the choice in '%s' (%s); it is kept for this process "
                "only",
                path, why);
}
