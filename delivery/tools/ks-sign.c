/* ks-sign: signed delivery packages (docs/delivery.md).
 *   ks-sign keygen NAME                      writes NAME.pub and NAME.sec (0600)
 *   ks-sign sign --key NAME.sec IN OUT [--id ID] [--version X.Y.Z] [--min-runtime X.Y.Z]
 *                [--issued N] [--encryption-key-name NAME] [--selftest FILE.kst]
 *   ks-sign verify --key NAME.pub [--key ...] PKG   exit 0 only for a good signature by that key
 *   ks-sign info PKG
 *   ks-sign selftest MODEL.ksm OUT.kst [--name PATH] [--tolerance T] [--seed N]
 *   ks-sign selftest-face BUNDLE.ksb PHOTO OUT.kst [--name PATH] [--min-iou F]
 * IN is a .ksm, .ksb or .kfx file (or any file), or a folder: its regular files, recursively. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kestrel/delivery.h"
#include "kestrel/engine.h"
#include "package.h"
#if KS_HAVE_IMAGE_IO
#include "image_io.h"
#include "kestrel/face.h"
#endif

#define MAX_IN_BYTES ((size_t)KS_PACKAGE_MAX_PAYLOAD_BYTES + (1u << 20))

static void usage(void) {
    fprintf(stderr,
            "usage: ks-sign keygen NAME\n"
            "       ks-sign sign --key NAME.sec IN OUT [--id ID] [--version X.Y.Z]\n"
            "                    [--min-runtime X.Y.Z] [--issued N] [--encryption-key-name S]\n"
            "                    [--selftest FILE.kst]\n"
            "       ks-sign verify --key NAME.pub [--key OTHER.pub ...] PKG\n"
            "       ks-sign info PKG\n"
            "       ks-sign selftest MODEL.ksm OUT.kst [--name PATH] [--tolerance T] [--seed N]\n"
            "       ks-sign selftest-face BUNDLE.ksb PHOTO OUT.kst [--name PATH] [--min-iou F]\n"
            "  IN: a .ksm, .ksb or .kfx file, or a folder (all its regular files, recursively).\n"
            "  Defaults: --id from IN's name, --version 1.0.0, --min-runtime %s (this Kestrel),\n"
            "  --issued the current Unix time (a store refuses packages issued before one it has\n"
            "  accepted).\n",
            KS_VERSION_STRING);
}

static int read_file(const char *path, size_t max, uint8_t **out, size_t *n_out) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "ks-sign: cannot open %s: %s\n", path, strerror(errno));
        return 1;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n == cap) {
            cap = cap ? cap * 2 : 1u << 16;
            if (cap > max + 1) cap = max + 1;
            uint8_t *nb = realloc(buf, cap);
            if (!nb) break;
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0 || n > max) break;
    }
    int bad = ferror(f) || n > max || !buf;
    fclose(f);
    if (bad) {
        fprintf(stderr, "ks-sign: cannot read %s (or larger than %zu bytes)\n", path, max);
        free(buf);
        return 1;
    }
    *out = buf;
    *n_out = n;
    return 0;
}

/* Writes through a temporary file and rename, so OUT is never half-written. */
static int write_file(const char *path, const uint8_t *data, size_t n, mode_t mode) {
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (fd < 0) {
        fprintf(stderr, "ks-sign: cannot create %s: %s\n", tmp, strerror(errno));
        return 1;
    }
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, data + done, n - done);
        if (w <= 0) break;
        done += (size_t)w;
    }
    int ok = done == n && fsync(fd) == 0;
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        unlink(tmp);
        fprintf(stderr, "ks-sign: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

static void hex(const uint8_t *b, size_t n, char *out) {
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", b[i]);
}

/* A key file holds the raw key or its hex digits (whitespace around them ignored). */
static int read_key(const char *path, uint8_t *key, size_t key_bytes) {
    uint8_t *d = NULL;
    size_t n = 0;
    if (read_file(path, 4096, &d, &n)) return 1;
    int rc = 1;
    if (n == key_bytes) {
        memcpy(key, d, key_bytes);
        rc = 0;
    } else {
        size_t b = 0, k = 0;
        while (b < n && (d[b] == ' ' || d[b] == '\n' || d[b] == '\r' || d[b] == '\t'))
            b++;
        for (; k < key_bytes && b + 1 < n; k++, b += 2) {
            unsigned v;
            char two[3] = {(char)d[b], (char)d[b + 1], 0};
            if (sscanf(two, "%2x", &v) != 1 || !strchr("0123456789abcdefABCDEF", two[0]) ||
                !strchr("0123456789abcdefABCDEF", two[1]))
                break;
            key[k] = (uint8_t)v;
        }
        while (b < n && (d[b] == ' ' || d[b] == '\n' || d[b] == '\r' || d[b] == '\t'))
            b++;
        rc = (k == key_bytes && b == n) ? 0 : 1;
    }
    if (rc)
        fprintf(stderr,
                "ks-sign: %s: expected a %zu-byte key (raw, or %zu hex digits); got %zu bytes "
                "(a .pub where a .sec is needed, or the other way round?)\n",
                path, key_bytes, 2 * key_bytes, n);
    memset(d, 0, n);
    free(d);
    return rc;
}

static int cmd_keygen(const char *name) {
    uint8_t pk[32], sk[64];
    if (ks__pkg_keygen(pk, sk)) {
        fprintf(stderr, "ks-sign: key generation failed (libsodium)\n");
        return 1;
    }
    char pub[4096], sec[4096], text[2 * 64 + 2];
    snprintf(pub, sizeof(pub), "%s.pub", name);
    snprintf(sec, sizeof(sec), "%s.sec", name);
    struct stat st;
    if (stat(pub, &st) == 0 || stat(sec, &st) == 0) {
        fprintf(stderr, "ks-sign: %s or %s exists; not overwriting a key\n", pub, sec);
        return 1;
    }
    hex(sk, 64, text);
    text[128] = '\n';
    int rc = write_file(sec, (const uint8_t *)text, 129, 0600);
    hex(pk, 32, text);
    text[64] = '\n';
    if (!rc) rc = write_file(pub, (const uint8_t *)text, 65, 0644);
    uint8_t id[KS_PACKAGE_KEY_ID_BYTES];
    ks__key_id(pk, id);
    char idh[17];
    hex(id, 8, idh);
    memset(sk, 0, sizeof(sk));
    memset(text, 0, sizeof(text));
    if (!rc) printf("wrote %s (keep it secret) and %s, key id %s\n", sec, pub, idh);
    return rc;
}

/* ---- collecting the input files ----------------------------------------------------------- */

typedef struct inputs {
    ks__pkg_src_file files[KS_PACKAGE_MAX_FILES];
    char *names[KS_PACKAGE_MAX_FILES];
    uint32_t n;
    size_t total;
} inputs;

static int add_file(inputs *in, const char *path, const char *name) {
    if (in->n == KS_PACKAGE_MAX_FILES) {
        fprintf(stderr, "ks-sign: more than %u files\n", KS_PACKAGE_MAX_FILES);
        return 1;
    }
    char err[512];
    if (!ks__pkg_path_ok(name, (uint32_t)strlen(name), err, sizeof(err))) {
        fprintf(stderr, "ks-sign: %s: %s\n", path, err);
        return 1;
    }
    uint8_t *d = NULL;
    size_t n = 0;
    if (read_file(path, MAX_IN_BYTES, &d, &n)) return 1;
    in->names[in->n] = strdup(name);
    in->files[in->n] = (ks__pkg_src_file){in->names[in->n], d, n};
    in->n++;
    in->total += n;
    return 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds the regular files under dir (names relative to the package root, sorted so that the same
 * folder always gives the same package). Symbolic links are refused. */
static int add_dir(inputs *in, const char *dir, const char *prefix, int depth) {
    if (depth > (int)KS_PACKAGE_MAX_PATH_DEPTH) {
        fprintf(stderr, "ks-sign: %s is nested deeper than %u folders\n", dir,
                KS_PACKAGE_MAX_PATH_DEPTH);
        return 1;
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "ks-sign: cannot read folder %s: %s\n", dir, strerror(errno));
        return 1;
    }
    char *names[1024];
    size_t n = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (n == 1024) {
            fprintf(stderr, "ks-sign: %s has too many entries\n", dir);
            rc = 1;
            break;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(names[0]), cmp_str);
    for (size_t i = 0; i < n; i++) {
        char path[4096], name[1024];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        snprintf(name, sizeof(name), "%s%s", prefix, names[i]);
        struct stat st;
        if (rc == 0 && lstat(path, &st) != 0) {
            fprintf(stderr, "ks-sign: %s: %s\n", path, strerror(errno));
            rc = 1;
        } else if (rc == 0 && S_ISDIR(st.st_mode)) {
            char sub[1040];
            snprintf(sub, sizeof(sub), "%s/", name);
            rc = add_dir(in, path, sub, depth + 1);
        } else if (rc == 0 && S_ISREG(st.st_mode)) {
            rc = add_file(in, path, name);
        } else if (rc == 0) {
            fprintf(stderr, "ks-sign: %s is not a regular file or folder (links are refused)\n",
                    path);
            rc = 1;
        }
        free(names[i]);
    }
    return rc;
}

static void free_inputs(inputs *in) {
    for (uint32_t i = 0; i < in->n; i++) {
        free(in->names[i]);
        free((void *)in->files[i].data);
    }
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int cmd_sign(int argc, char **argv) {
    const char *key = NULL, *id = NULL, *version = "1.0.0", *min_rt = KS_VERSION_STRING;
    const char *enc = NULL, *selftest = NULL, *pos[2] = {0};
    uint64_t issued = (uint64_t)time(NULL);
    int npos = 0;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--key") && v)
            key = argv[++i];
        else if (!strcmp(a, "--id") && v)
            id = argv[++i];
        else if (!strcmp(a, "--version") && v)
            version = argv[++i];
        else if (!strcmp(a, "--min-runtime") && v)
            min_rt = argv[++i];
        else if (!strcmp(a, "--issued") && v) {
            char *end;
            issued = strtoull(argv[++i], &end, 10);
            if (*end) {
                fprintf(stderr, "ks-sign: --issued takes a number\n");
                return 2;
            }
        } else if (!strcmp(a, "--encryption-key-name") && v)
            enc = argv[++i];
        else if (!strcmp(a, "--selftest") && v)
            selftest = argv[++i];
        else if (a[0] != '-' && npos < 2)
            pos[npos++] = a;
        else {
            usage();
            return 2;
        }
    }
    if (!key || npos != 2) {
        usage();
        return 2;
    }
    uint32_t ver[3], rt[3];
    if (!ks__semver_parse(version, ver) || !ks__semver_parse(min_rt, rt) || rt[0] > 0xff ||
        rt[1] > 0xff || rt[2] > 0xff) {
        fprintf(stderr, "ks-sign: versions are X.Y.Z (numbers; the runtime's parts <= 255)\n");
        return 2;
    }
    char idbuf[KS_PACKAGE_MAX_ID_BYTES + 1];
    if (!id) { /* IN's name without its extension, lower-cased */
        const char *b = base_name(pos[0]);
        size_t n = strcspn(b, ".");
        if (n == 0 || n > KS_PACKAGE_MAX_ID_BYTES) {
            fprintf(stderr, "ks-sign: cannot derive a package id from %s; pass --id\n", pos[0]);
            return 2;
        }
        for (size_t i = 0; i < n; i++)
            idbuf[i] = (char)(b[i] >= 'A' && b[i] <= 'Z' ? b[i] + 32 : b[i]);
        idbuf[n] = '\0';
        id = idbuf;
    }
    uint8_t sk[64];
    if (read_key(key, sk, sizeof(sk))) return 1;
    inputs *in = calloc(1, sizeof(*in));
    int rc = 1;
    struct stat st;
    if (!in) goto done;
    if (stat(pos[0], &st) != 0) {
        fprintf(stderr, "ks-sign: %s: %s\n", pos[0], strerror(errno));
        goto done;
    }
    if (S_ISDIR(st.st_mode) ? add_dir(in, pos[0], "", 0) : add_file(in, pos[0], base_name(pos[0])))
        goto done;
    if (selftest && add_file(in, selftest, KS__SELFTEST_NAME)) goto done;
    ks__pkg_spec spec = {.id = id,
                         .version = {ver[0], ver[1], ver[2]},
                         .min_runtime = rt[0] << 16 | rt[1] << 8 | rt[2],
                         .issued = issued,
                         .encryption_key_name = enc,
                         .files = in->files,
                         .num_files = in->n};
    uint8_t *pkg = NULL;
    size_t n = 0;
    char err[512];
    if (ks__pkg_write(&spec, sk, &pkg, &n, err, sizeof(err))) {
        fprintf(stderr, "ks-sign: %s\n", err);
        goto done;
    }
    rc = write_file(pos[1], pkg, n, 0644);
    free(pkg);
    if (!rc) printf("%s: %s %s, %u file(s), %zu bytes\n", pos[1], id, version, in->n, n);
done:
    memset(sk, 0, sizeof(sk));
    if (in) free_inputs(in);
    free(in);
    return rc;
}

static void print_info(const ks_package_info *in) {
    char kid[17], dig[65];
    hex(in->key_id, 8, kid);
    hex(in->digest, 32, dig);
    printf("id: %s\nversion: %u.%u.%u\nmin runtime: %u.%u.%u\nissued: %llu\nkey id: %s\n", in->id,
           in->version_major, in->version_minor, in->version_patch, in->min_runtime >> 16,
           (in->min_runtime >> 8) & 0xff, in->min_runtime & 0xff, (unsigned long long)in->issued,
           kid);
    if (in->encryption_key_name[0]) printf("encryption key: %s\n", in->encryption_key_name);
    printf("files: %u (%llu bytes)\ndigest: %s\n", in->num_files,
           (unsigned long long)in->payload_bytes, dig);
}

static int cmd_verify(int argc, char **argv) {
    uint8_t keys[16 * 32];
    uint32_t nk = 0;
    const char *pkg = NULL;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--key") && i + 1 < argc && nk < 16) {
            if (read_key(argv[++i], keys + 32 * nk, 32)) return 1;
            nk++;
        } else if (argv[i][0] != '-' && !pkg) {
            pkg = argv[i];
        } else {
            usage();
            return 2;
        }
    }
    if (!nk || !pkg) {
        usage();
        return 2;
    }
    uint8_t *d = NULL;
    size_t n = 0;
    if (read_file(pkg, MAX_IN_BYTES, &d, &n)) return 1;
    ks_package_info info;
    ks_delivery_error why;
    ks_status st = ks_package_verify(d, n, keys, nk, &info, &why);
    free(d);
    if (st) {
        fprintf(stderr, "ks-sign: %s: REFUSED (%s): %s\n", pkg, ks_delivery_error_string(why),
                ks_last_error(NULL));
        return 1;
    }
    printf("%s: good signature, every file matches\n", pkg);
    print_info(&info);
    return 0;
}

static int cmd_info(const char *path) {
    uint8_t *d = NULL;
    size_t n = 0;
    if (read_file(path, MAX_IN_BYTES, &d, &n)) return 1;
    ks__pkg *pkg = malloc(sizeof(*pkg));
    char err[512];
    ks_delivery_error why;
    int rc = 1;
    if (pkg && ks__pkg_parse(d, n, false, pkg, &why, err, sizeof(err)) == KS_STATUS_OK) {
        printf("%s: %zu bytes (signature NOT checked: use ks-sign verify)\n", path, n);
        print_info(&pkg->info);
        for (uint32_t i = 0; i < pkg->num_files; i++) {
            char h[65];
            hex(pkg->files[i].sha256, 32, h);
            printf("  %12llu  %s  %.*s\n", (unsigned long long)pkg->files[i].size_bytes, h,
                   (int)pkg->files[i].name_len, pkg->files[i].name);
        }
        rc = 0;
    } else if (pkg) {
        fprintf(stderr, "ks-sign: %s: %s: %s\n", path, ks_delivery_error_string(why), err);
    }
    free(pkg);
    free(d);
    return rc;
}

/* Golden outputs of a model on a deterministic input, recorded with this build of the engine. */
static int cmd_selftest(int argc, char **argv) {
    const char *pos[2] = {0}, *name = NULL;
    float tol = 1e-4f;
    unsigned long seed = 1;
    int npos = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--name") && i + 1 < argc)
            name = argv[++i];
        else if (!strcmp(argv[i], "--tolerance") && i + 1 < argc)
            tol = strtof(argv[++i], NULL);
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoul(argv[++i], NULL, 10);
        else if (argv[i][0] != '-' && npos < 2)
            pos[npos++] = argv[i];
        else {
            usage();
            return 2;
        }
    }
    if (npos != 2) {
        usage();
        return 2;
    }
    ks_model *m = NULL;
    ks_session *s = NULL;
    int rc = 1;
    ks__selftest_tensor ins[16], outs[16];
    uint8_t *in_copy[16] = {0}; /* the run may reuse the inputs' memory: keep what was fed */
    uint32_t ni = 0, no = 0;
    if (ks_model_load_file(pos[0], NULL, &m) || ks_session_create(m, NULL, &s) ||
        ks_session_reshape(s, NULL)) {
        fprintf(stderr, "ks-sign: %s: %s\n", pos[0], ks_last_error(s));
        goto done;
    }
    ni = ks_model_num_inputs(m);
    no = ks_model_num_outputs(m);
    if (ni > 16 || no > 16) {
        fprintf(stderr, "ks-sign: at most 16 inputs and outputs\n");
        goto done;
    }
    uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
    for (uint32_t i = 0; i < ni; i++) {
        ks_tensor t;
        ks_session_input(s, i, &t);
        for (size_t j = 0; j < t.size_bytes; j++) { /* xorshift: bytes, or floats in [-1, 1) */
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if (t.info.dtype == KS_DTYPE_F32 && j % 4 == 0 && j + 4 <= t.size_bytes) {
                float f = (float)((x >> 40) / (double)(1ull << 24) * 2.0 - 1.0);
                memcpy((uint8_t *)t.data + j, &f, 4);
                j += 3;
            } else {
                ((uint8_t *)t.data)[j] = (uint8_t)(x >> 56);
            }
        }
        in_copy[i] = malloc(t.size_bytes ? t.size_bytes : 1u);
        if (!in_copy[i]) {
            fprintf(stderr, "ks-sign: out of memory for input %u\n", i);
            goto done;
        }
        memcpy(in_copy[i], t.data, t.size_bytes);
        ins[i] = (ks__selftest_tensor){i, 0, in_copy[i], t.size_bytes};
    }
    if (ks_session_run(s)) {
        fprintf(stderr, "ks-sign: %s: %s\n", pos[0], ks_last_error(s));
        goto done;
    }
    for (uint32_t i = 0; i < no; i++) {
        ks_tensor t;
        ks_session_output(s, i, &t);
        outs[i] = (ks__selftest_tensor){i, tol, t.data, t.size_bytes};
    }
    uint8_t *kst = NULL;
    size_t n = 0;
    if (ks__selftest_write(name ? name : base_name(pos[0]), ins, ni, outs, no, &kst, &n)) {
        fprintf(stderr, "ks-sign: cannot encode the self-test\n");
        goto done;
    }
    rc = write_file(pos[1], kst, n, 0644);
    free(kst);
    if (!rc)
        printf("%s: %u input(s), %u output(s), tolerance %g, %zu bytes\n", pos[1], ni, no,
               (double)tol, n);
done:
    for (uint32_t i = 0; i < 16; i++)
        free(in_copy[i]);
    ks_session_destroy(s);
    ks_model_destroy(m);
    return rc;
}

/* The faces a face detector or face landmarker bundle finds on a photo, recorded as
 * selftest_face.kst. */
static int cmd_selftest_face(int argc, char **argv) {
#if KS_HAVE_IMAGE_IO
    const char *pos[3] = {0}, *name = NULL;
    float min_iou = 0.8f;
    int npos = 0;
    for (int i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--name") && i + 1 < argc)
            name = argv[++i];
        else if (!strcmp(argv[i], "--min-iou") && i + 1 < argc)
            min_iou = strtof(argv[++i], NULL);
        else if (argv[i][0] != '-' && npos < 3)
            pos[npos++] = argv[i];
        else {
            usage();
            return 2;
        }
    }
    if (npos != 3 || !(min_iou >= 0 && min_iou <= 1)) {
        usage();
        return 2;
    }
    ks_image_buf img = {0};
    char err[512];
    if (ks_image_load(pos[1], 0, &img, err, sizeof(err))) {
        fprintf(stderr, "ks-sign: %s\n", err);
        return 1;
    }
    int rc = 1;
    if (img.image.format != KS_PIXEL_FORMAT_RGB) {
        fprintf(stderr, "ks-sign: %s: an RGB photo is needed (no alpha, not gray)\n", pos[1]);
        goto done;
    }
    float boxes[4 * 64];
    uint32_t num_faces = 0;
    const char *kind = "";
    bool key_problem = false;
    if (ks__selftest_face_find(pos[0], NULL, img.pixels, (uint32_t)img.image.width_px,
                               (uint32_t)img.image.height_px, boxes, 64, &num_faces, &kind,
                               &key_problem, err, sizeof(err))) {
        fprintf(stderr, "ks-sign: %s: %s\n", pos[0], err);
        goto done;
    }
    uint32_t nb = num_faces < 64 ? num_faces : 64;
    ks__selftest_face t = {.bundle_name = name ? name : base_name(pos[0]),
                           .width_px = (uint32_t)img.image.width_px,
                           .height_px = (uint32_t)img.image.height_px,
                           .rgb = img.pixels,
                           .num_faces = num_faces,
                           .min_iou = min_iou,
                           .num_boxes = nb,
                           .boxes = boxes};
    uint8_t *kst = NULL;
    size_t n = 0;
    if (ks__selftest_face_write(&t, &kst, &n)) {
        fprintf(stderr, "ks-sign: cannot encode the face self-test (photo at most 4096 px)\n");
        goto done;
    }
    rc = write_file(pos[2], kst, n, 0644);
    free(kst);
    if (!rc)
        printf("%s: %u face(s) on %s by the %s, boxes kept with IoU >= %g, %zu bytes\n", pos[2],
               num_faces, pos[1], kind, (double)min_iou, n);
done:
    ks_image_buf_free(&img);
    return rc;
#else
    (void)argc;
    (void)argv;
    fprintf(stderr, "ks-sign: selftest-face needs the task library and image I/O in this build\n");
    return 1;
#endif
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage();
        return 2;
    }
    const char *c = argv[1];
    if (!strcmp(c, "keygen") && argc == 3) return cmd_keygen(argv[2]);
    if (!strcmp(c, "sign")) return cmd_sign(argc - 2, argv + 2);
    if (!strcmp(c, "verify")) return cmd_verify(argc - 2, argv + 2);
    if (!strcmp(c, "info") && argc == 3) return cmd_info(argv[2]);
    if (!strcmp(c, "selftest")) return cmd_selftest(argc - 2, argv + 2);
    if (!strcmp(c, "selftest-face")) return cmd_selftest_face(argc - 2, argv + 2);
    usage();
    return 2;
}
