/* Model load benchmark: plain vs encrypted .ksm, interleaved, medians (docs/compression.md).
 *
 *     ks-loadbench PLAIN.ksm ENCRYPTED.ksm --key-file K [--runs N] [--threads T]
 *
 * Each round loads the plain file (default flags: mmap + CRC-32) and the encrypted one (decrypt
 * on T threads, 0 = default) back to back, so both see the same machine load; the ratio of the
 * medians is the figure to read. Not a test: no assertions on time. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kestrel/engine.h"
#include "key_file.h"

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int load_once(const char *path, const ks_model_desc *desc, double *ms) {
    ks_model *m = NULL;
    double t0 = now_ms();
    ks_status st = ks_model_load_file(path, desc, &m);
    *ms = now_ms() - t0;
    if (st) {
        fprintf(stderr, "ks-loadbench: %s: %s\n", path, ks_last_error(NULL));
        return 1;
    }
    ks_model_destroy(m);
    return 0;
}

int main(int argc, char **argv) {
    const char *plain = NULL, *enc = NULL, *key_path = NULL;
    int runs = 20;
    long threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--key-file") && i + 1 < argc) {
            key_path = argv[++i];
        } else if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
            runs = atoi(argv[++i]);
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            threads = strtol(argv[++i], NULL, 10);
        } else if (!plain) {
            plain = argv[i];
        } else if (!enc) {
            enc = argv[i];
        } else {
            plain = NULL;
            break;
        }
    }
    if (!plain || !enc || !key_path || runs < 1 || runs > 10000 || threads < 0 || threads > 64) {
        fprintf(stderr, "usage: ks-loadbench PLAIN.ksm ENCRYPTED.ksm --key-file K [--runs N] "
                        "[--threads T]\n");
        return 2;
    }
    uint8_t key[KS_KEY_FILE_BYTES];
    char err[256];
    if (ks_key_file_read(key_path, key, err, sizeof(err))) {
        fprintf(stderr, "ks-loadbench: %s\n", err);
        return 1;
    }
    ks_model_desc enc_desc = {
        .key = key, .key_bytes = sizeof(key), .num_threads = (uint32_t)threads};
    double *tp = calloc((size_t)runs, sizeof(double)), *te = calloc((size_t)runs, sizeof(double));
    int rc = !tp || !te;
    double warm;
    if (!rc) rc = load_once(plain, NULL, &warm) || load_once(enc, &enc_desc, &warm);
    for (int r = 0; r < runs && !rc; r++)
        rc = load_once(plain, NULL, &tp[r]) || load_once(enc, &enc_desc, &te[r]);
    if (!rc) {
        double mp = median(tp, runs), me = median(te, runs);
        printf("plain     median %.2f ms  min %.2f ms\n", mp, tp[0]);
        printf("encrypted median %.2f ms  min %.2f ms  (threads %ld)\n", me, te[0], threads);
        printf("ratio encrypted/plain %.3f\n", me / mp);
    }
    free(tp);
    free(te);
    return rc;
}
