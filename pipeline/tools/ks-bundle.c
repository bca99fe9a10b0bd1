/* ks-bundle: makes and inspects .ksb model bundles.
 *
 *   ks-bundle create OUT.ksb --graph G.json [--graph NAME=G2.json ...] [--model NAME=FILE.ksm ...]
 *                    [--labels NAME=FILE ...] [--config NAME=FILE.json ...] [--file NAME=PATH ...]
 *                    [--key-file KEY]
 *   ks-bundle info B.ksb [--check] [--key-file KEY]
 *
 * create checks that every model is a loadable .ksm, writes the bundle, then instantiates each
 * graph (which loads every model the graph names) and fails if that does not work (a --graph
 * without NAME= is the default entry "graph");
 * info --check does the same instantiation for an existing bundle.
 *
 * Encrypted models (ks-protect) are stored as they are. With --key-file (the key file format of
 * ks-protect: 32 raw bytes or 64 hex digits) they are loaded with that key like plain ones, and
 * the graphs are instantiated with it (ks_pipeline_desc.key). Without it, only their container
 * header is checked, each graph is instantiated up to its first encrypted model, and the tool
 * says that the encrypted models were not checked.
 *
 * ks-task-bundle (algos/bundle_tool) is this same file built with the task library and with
 * KS_BUNDLE_REGISTER_NODES naming a function that registers the task node types, so graphs that
 * use them pass the check. Without it only the built-in nodes exist. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/ksm_crypt.h"
#include "kestrel/bundle.h"
#include "kestrel/engine.h"
#include "kestrel/pipeline.h"
#include "key_file.h"

#define MAX_INPUT_BYTES ((size_t)2 << 30)

#if defined(KS_BUNDLE_REGISTER_NODES)
/* Returns nonzero (message in ks_last_error(NULL)) when a node type cannot be registered. */
int KS_BUNDLE_REGISTER_NODES(void);
#endif

static int usage(void) {
    fprintf(stderr,
            "usage: ks-bundle create OUT.ksb --graph G.json [--graph NAME=G2.json ...]\n"
            "                 [--model NAME=FILE.ksm ...] [--labels NAME=FILE ...]\n"
            "                 [--config NAME=FILE.json ...] [--file NAME=PATH ...]\n"
            "                 [--key-file KEY]\n"
            "       ks-bundle info B.ksb [--check] [--key-file KEY]\n"
            "  KEY (ks-protect's key file: 32 raw bytes or 64 hex digits) opens encrypted\n"
            "  models so that they are checked too; they are stored encrypted either way.\n");
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

/* The key from --key-file, or none. Lives for the whole run; wiped before exit. */
typedef struct key_opt {
    const char *path; /* NULL: no key */
    uint8_t key[KS_KEY_FILE_BYTES];
} key_opt;

/* Checks model `path` (bytes `data`): a plain one must load; an encrypted one must open with the
 * key, or, without a key, have a valid container header (*unchecked counts those). */
static int check_model(const char *path, const uint8_t *data, size_t n, const key_opt *key,
                       uint32_t *unchecked) {
    bool encrypted = ks__ksme_is_encrypted(data, n);
    if (encrypted && !key->path) {
        ks__ksme_info info;
        char err[256];
        if (n < KSME_HEADER_BYTES ||
            ks__ksme_parse_header(data, n, &info, err, sizeof(err)) != KS_STATUS_OK) {
            fprintf(stderr, "ks-bundle: %s is not a valid encrypted model: %s\n", path,
                    n < KSME_HEADER_BYTES ? "shorter than the 64-byte header" : err);
            return 1;
        }
        printf("%s: encrypted (ks-protect); stored as it is, not checked (no --key-file)\n", path);
        (*unchecked)++;
        return 0;
    }
    ks_model *m = NULL;
    ks_model_desc md = {.flags = KS_MODEL_COPY_BUFFER};
    if (encrypted) {
        md.key = key->key;
        md.key_bytes = sizeof(key->key);
    }
    ks_status st = ks_model_load_buffer(data, n, &md, &m);
    ks_model_destroy(m);
    if (st == KS_STATUS_TAMPERED) {
        fprintf(stderr,
                "ks-bundle: %s: the key in %s does not open it (wrong key, or the file was "
                "altered): %s\n",
                path, key->path, ks_last_error(NULL));
        return 1;
    }
    if (st) {
        fprintf(stderr, "ks-bundle: %s is not a loadable .ksm model: %s\n", path,
                ks_last_error(NULL));
        return 1;
    }
    return 0;
}

static int add_file(ks_bundle_writer *w, const char *name, const char *path, uint32_t kind,
                    const key_opt *key, uint32_t *unchecked) {
    uint8_t *data = NULL;
    size_t n = 0;
    if (read_all(path, &data, &n)) return 1;
    int rc = 0;
    if (kind == KS_BUNDLE_MODEL) rc = check_model(path, data, n, key, unchecked);
    if (!rc && ks_bundle_writer_add(w, name, kind, data, n)) {
        fprintf(stderr, "ks-bundle: %s\n", ks_last_error(w));
        rc = 1;
    }
    free(data);
    return rc;
}

/* Without a key: stops the graph check at the first encrypted model and remembers its name. */
typedef struct no_key {
    int met;
    char model[KS_PIPELINE_MAX_NAME_BYTES];
} no_key;

static ks_status no_key_provider(void *user, const char *model_name, uint8_t *key_out,
                                 size_t key_cap, size_t *key_bytes_out) {
    (void)key_out;
    (void)key_cap;
    (void)key_bytes_out;
    no_key *nk = user;
    nk->met = 1;
    snprintf(nk->model, sizeof(nk->model), "%s", model_name);
    return KS_STATUS_UNSUPPORTED;
}

/* Instantiates every graph entry of the bundle (at least the default "graph"). *partial is set
 * when, without a key, a graph stopped at an encrypted model. */
static int check_bundle(const char *path, const key_opt *key, int *partial) {
    *partial = 0;
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
        no_key nk = {0};
        ks_pipeline_desc pd = {.graph_entry = graph};
        if (key->path) {
            pd.key = key->key;
            pd.key_bytes = sizeof(key->key);
        } else {
            pd.key_provider = no_key_provider;
            pd.key_user = &nk;
        }
        ks_status st = ks_pipeline_create_bundle(b, &pd, &p);
        if (st == KS_STATUS_UNSUPPORTED && nk.met) {
            printf("graph '%s': streams, types and node options checked up to encrypted model "
                   "'%s', which needs --key-file KEY to be checked\n",
                   graph ? graph : "graph", nk.model);
            *partial = 1;
        } else if (st) {
            fprintf(stderr, "ks-bundle: %s: graph '%s' check failed: %s\n", path,
                    graph ? graph : "graph", ks_last_error(NULL));
            rc = 1;
        }
        ks_pipeline_destroy(p);
    }
    ks_bundle_destroy(b);
    return rc;
}

/* Reads the key of the last "--key-file KEY" among argv[first..]. Returns nonzero on failure. */
static int read_key_opt(int argc, char **argv, int first, key_opt *key) {
    key->path = NULL;
    for (int i = first; i + 1 < argc; i++)
        if (strcmp(argv[i], "--key-file") == 0) key->path = argv[++i];
    if (!key->path) return 0;
    char err[512];
    if (ks_key_file_read(key->path, key->key, err, sizeof(err))) {
        fprintf(stderr, "ks-bundle: %s\n", err);
        key->path = NULL;
        return 1;
    }
    return 0;
}

static int cmd_create(int argc, char **argv) {
    if (argc < 3) return usage();
    const char *out = argv[2];
    const char *graph = NULL;
    ks_bundle_writer *w = NULL;
    key_opt key;
    uint32_t unchecked = 0;
    int rc = 1, partial = 0;
    if (read_key_opt(argc, argv, 3, &key)) return 1;
    if (ks_bundle_writer_create(NULL, &w)) {
        fprintf(stderr, "ks-bundle: %s\n", ks_last_error(NULL));
        goto done;
    }
    for (int i = 3; i < argc; i++) {
        const char *opt = argv[i];
        if (i + 1 >= argc) {
            usage();
            goto done;
        }
        const char *arg = argv[++i];
        uint32_t kind;
        if (strcmp(opt, "--key-file") == 0) continue; /* read above */
        if (strcmp(opt, "--graph") == 0 && !strchr(arg, '=')) {
            /* Checked against the finished bundle (its models live there), not here. */
            if (add_file(w, "graph", arg, KS_BUNDLE_GRAPH, &key, &unchecked)) goto done;
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
        if (add_file(w, name, eq + 1, kind, &key, &unchecked)) goto done;
    }
    if (!graph) {
        fprintf(stderr, "ks-bundle: create needs --graph G.json\n");
        goto done;
    }
    if (ks_bundle_writer_write_file(w, out)) {
        fprintf(stderr, "ks-bundle: %s\n", ks_last_error(w));
        goto done;
    }
    rc = check_bundle(out, &key, &partial) ? 1 : 0;
    if (rc) remove(out);
    if (!rc && (unchecked || partial))
        printf("%s: written; %u encrypted model(s) stored as they are and not checked (give "
               "--key-file KEY to check them)\n",
               out, (unsigned)unchecked);
done:
    ks__secure_zero(key.key, sizeof(key.key));
    ks_bundle_writer_destroy(w);
    return rc;
}

static int cmd_info(int argc, char **argv) {
    if (argc < 3) return usage();
    int check = 0, partial = 0;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--check") == 0) {
            check = 1;
        } else if (strcmp(argv[i], "--key-file") == 0 && i + 1 < argc) {
            i++;
        } else {
            fprintf(stderr, "ks-bundle: unknown option %s\n", argv[i]);
            return usage();
        }
    }
    key_opt key;
    if (read_key_opt(argc, argv, 3, &key)) return 1;
    ks_bundle *b = NULL;
    if (ks_bundle_open_file(argv[2], NULL, &b)) {
        fprintf(stderr, "ks-bundle: %s\n", ks_last_error(NULL));
        ks__secure_zero(key.key, sizeof(key.key));
        return 1;
    }
    uint32_t n = ks_bundle_num_entries(b);
    printf("%s: %u entries\n", argv[2], (unsigned)n);
    printf("  %-32s %-8s %12s\n", "name", "kind", "bytes");
    for (uint32_t i = 0; i < n; i++) {
        ks_bundle_entry e;
        if (ks_bundle_get_entry(b, i, &e)) continue;
        bool encrypted = e.kind == KS_BUNDLE_MODEL && ks__ksme_is_encrypted(e.data, e.size_bytes);
        printf("  %-32s %-8s %12zu%s\n", e.name, ks_bundle_kind_string(e.kind), e.size_bytes,
               encrypted ? "  encrypted" : "");
    }
    int rc = 0;
    if (check) {
        rc = check_bundle(argv[2], &key, &partial);
        if (!rc && !partial) printf("graph: ok (every node and model instantiates)\n");
        if (!rc && partial)
            printf("graph: ok as far as checked; the encrypted models were not checked (give "
                   "--key-file KEY)\n");
    }
    ks__secure_zero(key.key, sizeof(key.key));
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
