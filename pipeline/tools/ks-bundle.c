/* ks-bundle: makes and inspects .ksb model bundles.
 *
 *   ks-bundle create OUT.ksb --graph G.json [--graph NAME=G2.json ...] [--model NAME=FILE.ksm ...]
 *                    [--labels NAME=FILE ...] [--config NAME=FILE.json ...] [--file NAME=PATH ...]
 *   ks-bundle info B.ksb [--check]
 *
 * create checks that every model is a loadable .ksm, writes the bundle, then instantiates each
 * graph (which loads every model the graph names) and fails if that does not work (a --graph
 * without NAME= is the default entry "graph");
 * info --check does the same instantiation for an existing bundle.
 *
 * ks-task-bundle (algos/bundle_tool) is this same file built with the task library and with
 * KS_BUNDLE_REGISTER_NODES naming a function that registers the task node types, so graphs that
 * use them pass the check. Without it only the built-in nodes exist. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kestrel/bundle.h"
#include "kestrel/engine.h"
#include "kestrel/pipeline.h"

#define MAX_INPUT_BYTES ((size_t)2 << 30)

#if defined(KS_BUNDLE_REGISTER_NODES)
/* Returns nonzero (message in ks_last_error(NULL)) when a node type cannot be registered. */
int KS_BUNDLE_REGISTER_NODES(void);
#endif

static int usage(void) {
    fprintf(stderr, "usage: ks-bundle create OUT.ksb --graph G.json [--graph NAME=G2.json ...]\n"
                    "                 [--model NAME=FILE.ksm ...] [--labels NAME=FILE ...]\n"
                    "                 [--config NAME=FILE.json ...] [--file NAME=PATH ...]\n"
                    "       ks-bundle info B.ksb [--check]\n");
    return 2;
}

static int read_all(const char *path, uint8_t **data_out, size_t *size_out) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "ks-bundle: cannot open %s\n", path);
        return 1;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 65536;
            if (ncap > MAX_INPUT_BYTES) {
                fprintf(stderr, "ks-bundle: %s is larger than 2 GiB\n", path);
                free(buf);
                fclose(f);
                return 1;
            }
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                fprintf(stderr, "ks-bundle: out of memory reading %s\n", path);
                free(buf);
                fclose(f);
                return 1;
            }
            buf = nb;
            cap = ncap;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "ks-bundle: error reading %s\n", path);
        free(buf);
        return 1;
    }
    *data_out = buf;
    *size_out = n;
    return 0;
}

static int add_file(ks_bundle_writer *w, const char *name, const char *path, uint32_t kind) {
    uint8_t *data = NULL;
    size_t n = 0;
    if (read_all(path, &data, &n)) return 1;
    int rc = 0;
    if (kind == KS_BUNDLE_MODEL) {
        ks_model *m = NULL;
        if (ks_model_load_buffer(data, n, &(ks_model_desc){.flags = KS_MODEL_COPY_BUFFER}, &m)) {
            fprintf(stderr, "ks-bundle: %s is not a loadable .ksm model: %s\n", path,
                    ks_last_error(NULL));
            rc = 1;
        }
        ks_model_destroy(m);
    }
    if (!rc && ks_bundle_writer_add(w, name, kind, data, n)) {
        fprintf(stderr, "ks-bundle: %s\n", ks_last_error(w));
        rc = 1;
    }
    free(data);
    return rc;
}

/* Instantiates every graph entry of the bundle (at least the default "graph"). */
static int check_bundle(const char *path) {
    ks_bundle *b = NULL;
    if (ks_bundle_open_file(path, NULL, &b)) {
        fprintf(stderr, "ks-bundle: %s: %s\n", path, ks_last_error(NULL));
        return 1;
    }
    int rc = 0;
    uint32_t n = ks_bundle_num_entries(b);
    for (uint32_t i = 0; i <= n && rc == 0; i++) {
        ks_bundle_entry e;
        const char *graph = NULL; /* i == n: the default entry, which must exist */
        if (i < n) {
            if (ks_bundle_get_entry(b, i, &e) || e.kind != KS_BUNDLE_GRAPH ||
                strcmp(e.name, "graph") == 0)
                continue;
            graph = e.name;
        }
        ks_pipeline *p = NULL;
        if (ks_pipeline_create_bundle(b, &(ks_pipeline_desc){.graph_entry = graph}, &p)) {
            fprintf(stderr, "ks-bundle: %s: graph '%s' check failed: %s\n", path,
                    graph ? graph : "graph", ks_last_error(NULL));
            rc = 1;
        }
        ks_pipeline_destroy(p);
    }
    ks_bundle_destroy(b);
    return rc;
}

static int cmd_create(int argc, char **argv) {
    if (argc < 3) return usage();
    const char *out = argv[2];
    const char *graph = NULL;
    ks_bundle_writer *w = NULL;
    int rc = 1;
    if (ks_bundle_writer_create(NULL, &w)) {
        fprintf(stderr, "ks-bundle: %s\n", ks_last_error(NULL));
        return 1;
    }
    for (int i = 3; i < argc; i++) {
        const char *opt = argv[i];
        if (i + 1 >= argc) {
            usage();
            goto done;
        }
        const char *arg = argv[++i];
        uint32_t kind;
        if (strcmp(opt, "--graph") == 0 && !strchr(arg, '=')) {
            /* Checked against the finished bundle (its models live there), not here. */
            if (add_file(w, "graph", arg, KS_BUNDLE_GRAPH)) goto done;
            graph = arg;
            continue;
        }
        if (strcmp(opt, "--graph") == 0)
            kind = KS_BUNDLE_GRAPH;
        else if (strcmp(opt, "--model") == 0)
            kind = KS_BUNDLE_MODEL;
        else if (strcmp(opt, "--labels") == 0)
            kind = KS_BUNDLE_LABELS;
        else if (strcmp(opt, "--config") == 0)
            kind = KS_BUNDLE_CONFIG;
        else if (strcmp(opt, "--file") == 0)
            kind = KS_BUNDLE_FILE;
        else {
            fprintf(stderr, "ks-bundle: unknown option %s\n", opt);
            usage();
            goto done;
        }
        const char *eq = strchr(arg, '=');
        if (!eq || eq == arg || !eq[1]) {
            fprintf(stderr, "ks-bundle: %s takes NAME=PATH, got '%s'\n", opt, arg);
            goto done;
        }
        char name[KS_BUNDLE_NAME_BYTES];
        size_t len = (size_t)(eq - arg);
        if (len >= sizeof(name)) {
            fprintf(stderr, "ks-bundle: entry name in '%s' is longer than %u bytes\n", arg,
                    (unsigned)sizeof(name) - 1);
            goto done;
        }
        memcpy(name, arg, len);
        name[len] = '\0';
        if (add_file(w, name, eq + 1, kind)) goto done;
    }
    if (!graph) {
        fprintf(stderr, "ks-bundle: create needs --graph G.json\n");
        goto done;
    }
    if (ks_bundle_writer_write_file(w, out)) {
        fprintf(stderr, "ks-bundle: %s\n", ks_last_error(w));
        goto done;
    }
    rc = check_bundle(out) ? 1 : 0;
    if (rc) remove(out);
done:
    ks_bundle_writer_destroy(w);
    return rc;
}

static int cmd_info(int argc, char **argv) {
    if (argc < 3) return usage();
    int check = argc > 3 && strcmp(argv[3], "--check") == 0;
    ks_bundle *b = NULL;
    if (ks_bundle_open_file(argv[2], NULL, &b)) {
        fprintf(stderr, "ks-bundle: %s\n", ks_last_error(NULL));
        return 1;
    }
    uint32_t n = ks_bundle_num_entries(b);
    printf("%s: %u entries\n", argv[2], (unsigned)n);
    printf("  %-32s %-8s %12s\n", "name", "kind", "bytes");
    for (uint32_t i = 0; i < n; i++) {
        ks_bundle_entry e;
        if (ks_bundle_get_entry(b, i, &e)) continue;
        printf("  %-32s %-8s %12zu\n", e.name, ks_bundle_kind_string(e.kind), e.size_bytes);
    }
    int rc = 0;
    if (check) {
        rc = check_bundle(argv[2]);
        if (!rc) printf("graph: ok (every node and model instantiates)\n");
    }
    ks_bundle_destroy(b);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2) return usage();
#if defined(KS_BUNDLE_REGISTER_NODES)
    if (KS_BUNDLE_REGISTER_NODES()) {
        fprintf(stderr, "ks-bundle: cannot register node types: %s\n", ks_last_error(NULL));
        return 1;
    }
#endif
    if (strcmp(argv[1], "create") == 0) return cmd_create(argc, argv);
    if (strcmp(argv[1], "info") == 0) return cmd_info(argc, argv);
    return usage();
}
