/* ks-run MODEL.ksm --input NAME=FILE.npy ... --output-dir DIR [--dump-all DIR] [--threads N]
 * Runs a model once on .npy inputs and writes one DIR/<name>.npy per output, <name> being the
 * output tensor name with characters outside [A-Za-z0-9._-] replaced by '_'. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "kestrel/engine.h"
#include "key_file.h"
#include "npy.h"
#include "precision.h"

#define MAX_INPUTS 64

static void usage(void) {
    fprintf(stderr,
            "usage: ks-run MODEL.ksm --input NAME=FILE.npy ... --output-dir DIR\n"
            "              [--dump-all DIR] [--threads N] [--key-file KEY]\n"
            "              [--precision stored|f32|fastest|fp16-storage|fp16] [--backend "
            "cpu|vulkan|auto]\n"
            "  Inputs may also be given by position: --input FILE.npy.\n"
            "  --dump-all writes every intermediate tensor of the graph as DIR/<name>.npy.\n"
            "  --key-file reads the key of an encrypted model (ks-protect).\n"
            "  --precision: int8 layers of a quantized model as stored (default), all in fp32,\n"
            "              or per layer the faster of the two on this CPU (timed at create).\n"
            "  --backend: where the model runs (ks_session_desc.backend; default cpu).\n");
}

static int write_tensor(const char *dir, const ks_tensor *t) {
    char name[512], path[4096], err[1024];
    ks_npy_sanitize_name(t->info.name, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s.npy", dir, name);
    if (ks_npy_write(path, t->info.dtype, &t->info.shape, t->data, t->size_bytes, err,
                     sizeof(err))) {
        fprintf(stderr, "ks-run: %s\n", err);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *out_dir = NULL, *dump_dir = NULL, *key_file = NULL;
    const char *in_specs[MAX_INPUTS];
    int num_specs = 0, threads = 1, rc = 1;
    ks_precision precision = KS_PRECISION_DEFAULT;
    ks_backend backend = KS_BACKEND_CPU;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--input") == 0 && i + 1 < argc) {
            if (num_specs == MAX_INPUTS) {
                fprintf(stderr, "ks-run: too many inputs\n");
                return 2;
            }
            in_specs[num_specs++] = argv[++i];
        } else if (strcmp(argv[i], "--output-dir") == 0 && i + 1 < argc) {
            out_dir = argv[++i];
        } else if (strcmp(argv[i], "--dump-all") == 0 && i + 1 < argc) {
            dump_dir = argv[++i];
        } else if (strcmp(argv[i], "--key-file") == 0 && i + 1 < argc) {
            key_file = argv[++i];
        } else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc) {
            threads = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--precision") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            if (!ks__precision_parse(v, &precision)) {
                fprintf(
                    stderr,
                    "ks-run: --precision '%s': use stored, f32, fastest, fp16-storage or fp16\n",
                    v);
                return 2;
            }
        } else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            if (ks_backend_parse(v, &backend)) {
                fprintf(stderr, "ks-run: --backend '%s': use cpu, vulkan, opencl or auto\n", v);
                return 2;
            }
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage();
            return 0;
        } else if (argv[i][0] != '-' && !model_path) {
            model_path = argv[i];
        } else {
            fprintf(stderr, "ks-run: unexpected argument '%s'\n", argv[i]);
            usage();
            return 2;
        }
    }
    if (!model_path || (!out_dir && !dump_dir)) {
        usage();
        return 2;
    }
    ks_model *model = NULL;
    ks_session *s = NULL;
    ks_npy npys[MAX_INPUTS];
    memset(npys, 0, sizeof(npys));
    ks_tensor_shape shapes[MAX_INPUTS];
    char err[1024];
    uint8_t key[KS_KEY_FILE_BYTES];
    ks_model_desc model_desc = {0};
    if (key_file) {
        if (ks_key_file_read(key_file, key, err, sizeof(err))) {
            fprintf(stderr, "ks-run: %s\n", err);
            return 1;
        }
        model_desc.key = key;
        model_desc.key_bytes = sizeof(key);
    }
    ks_status st = ks_model_load_file(model_path, &model_desc, &model);
    memset(key, 0, sizeof(key));
    if (st) {
        fprintf(stderr, "ks-run: %s: %s\n", ks_status_string(st), ks_last_error(NULL));
        return 1;
    }
    uint32_t nin = ks_model_num_inputs(model);
    if (nin > MAX_INPUTS || (uint32_t)num_specs != nin) {
        fprintf(stderr, "ks-run: the model has %u inputs, %d given:", nin, num_specs);
        for (uint32_t i = 0; i < nin && i < MAX_INPUTS; i++) {
            ks_tensor_info info;
            ks_model_input_info(model, i, &info);
            fprintf(stderr, " %s", info.name);
        }
        fprintf(stderr, "\n");
        goto done;
    }
    /* match specs to inputs: NAME=FILE by name, plain FILE by position */
    for (uint32_t i = 0; i < nin; i++) {
        ks_tensor_info info;
        ks_model_input_info(model, i, &info);
        const char *file = NULL;
        for (int k = 0; k < num_specs && !file; k++) {
            const char *eq = strrchr(in_specs[k], '=');
            if (eq && (size_t)(eq - in_specs[k]) == strlen(info.name) &&
                strncmp(in_specs[k], info.name, strlen(info.name)) == 0)
                file = eq + 1;
        }
        if (!file && !strchr(in_specs[i], '=')) file = in_specs[i];
        if (!file) {
            fprintf(stderr, "ks-run: no --input given for model input '%s'\n", info.name);
            goto done;
        }
        if (ks_npy_read(file, &npys[i], err, sizeof(err))) {
            fprintf(stderr, "ks-run: %s\n", err);
            goto done;
        }
        if (npys[i].dtype != info.dtype) {
            fprintf(stderr, "ks-run: %s is %s, model input '%s' needs %s\n", file,
                    ks_dtype_string(npys[i].dtype), info.name, ks_dtype_string(info.dtype));
            goto done;
        }
        shapes[i] = npys[i].shape;
    }
    ks_session_desc desc = {.num_threads = threads,
                            .precision = precision,
                            .flags = dump_dir ? KS_SESSION_KEEP_ALL_TENSORS : 0u,
                            .backend = backend};
    st = ks_session_create(model, &desc, &s);
    if (st) {
        fprintf(stderr, "ks-run: %s: %s\n", ks_status_string(st), ks_last_error(NULL));
        goto done;
    }
    st = ks_session_reshape(s, shapes);
    if (st) {
        fprintf(stderr, "ks-run: reshape: %s: %s\n", ks_status_string(st), ks_last_error(s));
        goto done;
    }
    for (uint32_t i = 0; i < nin; i++) {
        ks_tensor t;
        ks_session_input(s, i, &t);
        if (t.size_bytes != npys[i].size_bytes) {
            fprintf(stderr, "ks-run: input '%s' size mismatch\n", t.info.name);
            goto done;
        }
        memcpy(t.data, npys[i].data, t.size_bytes);
    }
    st = ks_session_run(s);
    if (st) {
        fprintf(stderr, "ks-run: run: %s: %s\n", ks_status_string(st), ks_last_error(s));
        goto done;
    }
    if (out_dir) {
        if (ks_make_dirs(out_dir, err, sizeof(err))) {
            fprintf(stderr, "ks-run: %s\n", err);
            goto done;
        }
        for (uint32_t i = 0; i < ks_model_num_outputs(model); i++) {
            ks_tensor t;
            ks_session_output(s, i, &t);
            if (write_tensor(out_dir, &t)) goto done;
        }
    }
    if (dump_dir) {
        if (ks_make_dirs(dump_dir, err, sizeof(err))) {
            fprintf(stderr, "ks-run: %s\n", err);
            goto done;
        }
        for (uint32_t i = 0; i < ks_session_num_tensors(s); i++) {
            ks_tensor t;
            if (ks_session_tensor(s, i, &t) || !t.data) continue;
            if (write_tensor(dump_dir, &t)) goto done;
        }
    }
    rc = 0;
done:
    for (int i = 0; i < MAX_INPUTS; i++)
        ks_npy_free(&npys[i]);
    ks_session_destroy(s);
    ks_model_destroy(model);
    return rc;
}
