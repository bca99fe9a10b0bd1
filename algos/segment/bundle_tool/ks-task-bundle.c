/* ks-task-bundle: `ks-bundle create` for task bundles whose graphs use the task node types
 * (seg_mask, model_input, det_decode, cls_scores). ks-bundle checks a new bundle by
 * instantiating its graph, which needs those types registered; ks-bundle links only the pipeline
 * library, so the task bundles are built with this build-time helper instead.
 *
 *   ks-task-bundle OUT.ksb --graph G.json [--model NAME=FILE.ksm ...] [--labels NAME=FILE ...]
 *                  [--config NAME=FILE.json ...]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../task_util.h"

static int add_file(ks_bundle_writer *w, const char *name, const char *path, uint32_t kind) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "ks-task-bundle: cannot open '%s'\n", path);
        return 1;
    }
    int rc = 1;
    uint8_t *data = NULL;
    if (fseek(f, 0, SEEK_END) != 0) goto done;
    long n = ftell(f);
    if (n < 0 || fseek(f, 0, SEEK_SET) != 0) goto done;
    data = malloc((size_t)n + 1);
    if (!data || fread(data, 1, (size_t)n, f) != (size_t)n) goto done;
    if (ks_bundle_writer_add(w, name, kind, data, (size_t)n)) {
        fprintf(stderr, "ks-task-bundle: %s\n", ks_last_error(w));
        goto done;
    }
    rc = 0;
done:
    if (rc && data) fprintf(stderr, "ks-task-bundle: cannot read '%s'\n", path);
    free(data);
    fclose(f);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: ks-task-bundle OUT.ksb --graph G.json [--model NAME=FILE.ksm ...] "
                        "[--labels NAME=FILE ...] [--config NAME=FILE.json ...]\n");
        return 2;
    }
    if (ks__seg_register_nodes() || ks__det_register_nodes() || ks__cls_register_nodes()) {
        fprintf(stderr, "ks-task-bundle: %s\n", ks_last_error(NULL));
        return 1;
    }
    const char *out = argv[1];
    ks_bundle_writer *w = NULL;
    ks_bundle *b = NULL;
    ks_pipeline *p = NULL;
    int rc = 1;
    if (ks_bundle_writer_create(NULL, &w)) {
        fprintf(stderr, "ks-task-bundle: %s\n", ks_last_error(NULL));
        return 1;
    }
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *opt = argv[i], *arg = argv[i + 1];
        if (strcmp(opt, "--graph") == 0) {
            if (add_file(w, "graph", arg, KS_BUNDLE_GRAPH)) goto done;
            continue;
        }
        uint32_t kind = strcmp(opt, "--model") == 0    ? KS_BUNDLE_MODEL
                        : strcmp(opt, "--labels") == 0 ? KS_BUNDLE_LABELS
                        : strcmp(opt, "--config") == 0 ? KS_BUNDLE_CONFIG
                                                       : KS_BUNDLE_KIND_COUNT;
        const char *eq = strchr(arg, '=');
        if (kind == KS_BUNDLE_KIND_COUNT || !eq || eq == arg ||
            (size_t)(eq - arg) >= KS_BUNDLE_NAME_BYTES) {
            fprintf(stderr, "ks-task-bundle: bad option %s %s\n", opt, arg);
            goto done;
        }
        char name[KS_BUNDLE_NAME_BYTES];
        memcpy(name, arg, (size_t)(eq - arg));
        name[eq - arg] = '\0';
        if (add_file(w, name, eq + 1, kind)) goto done;
    }
    if (ks_bundle_writer_write_file(w, out)) {
        fprintf(stderr, "ks-task-bundle: %s\n", ks_last_error(w));
        goto done;
    }
    if (ks_bundle_open_file(out, NULL, &b) || ks_pipeline_create_bundle(b, NULL, &p)) {
        fprintf(stderr, "ks-task-bundle: %s: graph check failed: %s\n", out, ks_last_error(NULL));
        remove(out);
        goto done;
    }
    rc = 0;
done:
    ks_pipeline_destroy(p);
    ks_bundle_destroy(b);
    ks_bundle_writer_destroy(w);
    return rc;
}
