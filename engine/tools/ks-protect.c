/* ks-protect: encrypted models.
 *   ks-protect keygen KEY                         new random 32-byte key (file mode 0600)
 *   ks-protect encrypt --key-file KEY IN.ksm OUT.ksm [--chunk-size BYTES]
 *   ks-protect decrypt --key-file KEY IN.ksm OUT.ksm
 *   ks-protect info IN.ksm
 * The key is never written into the model; ship it with the app by your own means. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "kestrel/engine.h"
#include "key_file.h"
#include "ksm_crypt.h"

#define MAX_MODEL_BYTES ((size_t)4 << 30)

static void usage(void) {
    fprintf(stderr,
            "usage: ks-protect keygen KEY\n"
            "       ks-protect encrypt --key-file KEY IN.ksm OUT.ksm [--chunk-size BYTES]\n"
            "       ks-protect decrypt --key-file KEY IN.ksm OUT.ksm\n"
            "       ks-protect info IN.ksm\n"
            "  KEY holds 32 raw bytes or 64 hex digits. It is never stored in the model.\n");
}

/* Writes through a temporary file and rename so a failed run never leaves a half-written
 * model under the final name. */
static int write_atomic(const char *path, const uint8_t *data, size_t n) {
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        fprintf(stderr, "ks-protect: cannot create %s\n", tmp);
        return 1;
    }
    size_t w = fwrite(data, 1, n, f);
    if (fclose(f) != 0 || w != n || rename(tmp, path) != 0) {
        remove(tmp);
        fprintf(stderr, "ks-protect: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

static int cmd_keygen(const char *path) {
    uint8_t key[KSME_KEY_BYTES];
    char err[512];
    ks_status st = ks__ksme_keygen(key, sizeof(key));
    if (st) {
        fprintf(stderr, "ks-protect: keygen: %s (built without libsodium?)\n",
                ks_status_string(st));
        return 1;
    }
    st = ks_key_file_write(path, key, err, sizeof(err));
    ks__secure_zero(key, sizeof(key));
    if (st) {
        fprintf(stderr, "ks-protect: %s\n", err);
        return 1;
    }
    return 0;
}

static int cmd_info(const char *path) {
    uint8_t *data = NULL;
    size_t n = 0;
    char err[512];
    if (ks_read_file(path, MAX_MODEL_BYTES, &data, &n, err, sizeof(err))) {
        fprintf(stderr, "ks-protect: %s\n", err);
        return 1;
    }
    int rc = 1;
    if (!ks__ksme_is_encrypted(data, n)) {
        printf("%s: not encrypted (%zu bytes)\n", path, n);
        rc = 0;
        goto done;
    }
    ks__ksme_info info;
    if (ks__ksme_parse_header(data, n, &info, err, sizeof(err))) {
        fprintf(stderr, "ks-protect: %s: %s\n", path, err);
        goto done;
    }
    printf("%s: KSME v%u, XChaCha20-Poly1305 %s, %llu plaintext bytes in %llu chunks of %u\n", path,
           info.version,
           info.version == 1 ? "secretstream (sequential)" : "independent chunks (parallel)",
           (unsigned long long)info.plain_bytes, (unsigned long long)info.num_chunks,
           info.chunk_bytes);
    rc = 0;
done:
    free(data);
    return rc;
}

static int cmd_crypt(bool encrypt, const char *key_path, const char *in, const char *out,
                     uint32_t chunk_bytes) {
    uint8_t key[KSME_KEY_BYTES];
    uint8_t *data = NULL, *result = NULL;
    size_t n = 0, result_bytes = 0;
    char err[512];
    int rc = 1;
    ks_model *model = NULL;
    ks_allocator alloc = {0};
    if (ks_key_file_read(key_path, key, err, sizeof(err))) {
        fprintf(stderr, "ks-protect: %s\n", err);
        return 1;
    }
    ks_status st = ks_model_load_file(
        in, &(ks_model_desc){.key = encrypt ? NULL : key, .key_bytes = encrypt ? 0 : sizeof(key)},
        &model);
    /* Loading first refuses to encrypt something that is not a valid model (and checks its
     * CRC), and for decrypt authenticates before anything is written. */
    if (st) {
        fprintf(stderr, "ks-protect: %s: %s\n", ks_status_string(st), ks_last_error(NULL));
        goto done;
    }
    ks_model_destroy(model);
    model = NULL;
    if (ks_read_file(in, MAX_MODEL_BYTES, &data, &n, err, sizeof(err))) {
        fprintf(stderr, "ks-protect: %s\n", err);
        goto done;
    }
    if (encrypt) {
        st = ks__ksme_encrypt(data, n, key, sizeof(key), chunk_bytes, &alloc, &result,
                              &result_bytes, err, sizeof(err));
    } else {
        st = ks__ksme_decrypt_buffer(data, n, key, sizeof(key), &alloc, &result, &result_bytes, err,
                                     sizeof(err));
    }
    if (st) {
        fprintf(stderr, "ks-protect: %s: %s\n", in, err);
        goto done;
    }
    if (write_atomic(out, result, result_bytes)) goto done;
    if (encrypt) {
        /* Prove the written file decrypts and parses before reporting success. */
        st =
            ks_model_load_file(out, &(ks_model_desc){.key = key, .key_bytes = sizeof(key)}, &model);
        if (st) {
            fprintf(stderr, "ks-protect: verifying %s failed: %s: %s\n", out, ks_status_string(st),
                    ks_last_error(NULL));
            remove(out);
            goto done;
        }
    }
    rc = 0;
done:
    ks_model_destroy(model);
    ks__secure_zero(key, sizeof(key));
    if (result && !encrypt) ks__secure_zero(result, result_bytes);
    ks__free(&alloc, result);
    free(data);
    return rc;
}

int main(int argc, char **argv) {
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage();
        return argc < 2 ? 2 : 0;
    }
    const char *cmd = argv[1], *key_path = NULL, *pos[2] = {NULL, NULL};
    int num_pos = 0;
    unsigned long chunk = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--key-file") == 0 && i + 1 < argc) {
            key_path = argv[++i];
        } else if (strcmp(argv[i], "--chunk-size") == 0 && i + 1 < argc) {
            char *end = NULL;
            chunk = strtoul(argv[++i], &end, 10);
            if (!end || *end || chunk < KSME_MIN_CHUNK_BYTES || chunk > KSME_MAX_CHUNK_BYTES) {
                fprintf(stderr, "ks-protect: --chunk-size must be %u..%u\n", KSME_MIN_CHUNK_BYTES,
                        KSME_MAX_CHUNK_BYTES);
                return 2;
            }
        } else if (argv[i][0] != '-' && num_pos < 2) {
            pos[num_pos++] = argv[i];
        } else {
            fprintf(stderr, "ks-protect: unexpected argument '%s'\n", argv[i]);
            usage();
            return 2;
        }
    }
    if (strcmp(cmd, "keygen") == 0 && num_pos == 1 && !key_path) return cmd_keygen(pos[0]);
    if (strcmp(cmd, "info") == 0 && num_pos == 1) return cmd_info(pos[0]);
    bool enc = strcmp(cmd, "encrypt") == 0, dec = strcmp(cmd, "decrypt") == 0;
    if ((enc || dec) && key_path && num_pos == 2)
        return cmd_crypt(enc, key_path, pos[0], pos[1], (uint32_t)chunk);
    usage();
    return 2;
}
