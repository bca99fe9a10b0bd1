/* The on-device store. Layout under the root (docs/delivery.md, "Store layout"):
 *
 *   ROOT/.lock                 flock'ed by the one open ks_store
 *   ROOT/<id>/state            the commit record: current and previous slot, next slot, the newest
 *                              accepted `issued`, bad package digests, last roll-back reason
 *   ROOT/<id>/v<N>/package.sig header + manifest + signature of the version in slot N
 *   ROOT/<id>/v<N>/files/...   its files
 *   ROOT/<id>/tmp-<N>/         an install in progress (removed at open)
 *
 * Why this order of operations: the state file is the only commit point. A version folder is
 * complete and fsynced (files, then folders bottom-up) before it is renamed from tmp-<N> to v<N>,
 * and the state that names it is written to state.tmp, fsynced, renamed over state and the folder
 * fsynced. Before that rename the old state names the old, untouched folders; after it the new
 * state names complete ones. Everything the state does not name is garbage, removed at open. */
#define _GNU_SOURCE /* O_DIRECTORY, O_CLOEXEC, flock */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <pthread.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/crc32.h"
#include "base/error.h"
#include "package.h"
#include "src/common.h"

#define STATE_MAGIC "KSSTATE1"
#define MAX_BAD 32u
#define REASON_BYTES 256u
#define STATE_BYTES (32u + MAX_BAD * 32u + REASON_BYTES + 4u)
#define PATH_CAP 4096
#define MAX_ROOT_BYTES 2048u

typedef struct store_state {
    uint32_t current, previous, next; /* slots; 0: none */
    uint32_t num_bad;
    uint64_t max_issued;
    uint8_t bad[MAX_BAD][32];
    char reason[REASON_BYTES];
} store_state;

struct ks_store {
    ks__object obj; /* must be first: ks_last_error() */
    ks_allocator alloc;
    char root[MAX_ROOT_BYTES + 1];
    int lock_fd;
    uint8_t *keys;
    uint32_t num_keys;
    ks_store_event_fn on_event;
    ks_store_key_fn key_provider;
    void *user;
    pthread_mutex_t mu;
    ks_delivery_error refusal;
};

/* Paths are at most MAX_ROOT_BYTES + id + slot + a package path, well under PATH_CAP; through a
 * va_list so that gcc does not flag each call as a possible truncation (the result is cut at cap,
 * which is also the answer for reasons). */
static void pathf(char *buf, size_t cap, const char *fmt, ...) KS__PRINTF(3, 4);
static void pathf(char *buf, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, cap, fmt, ap);
    va_end(ap);
}

/* ---- the fault hook and the file-system steps ---------------------------------------------- */

static ks__store_fault_fn g_fault_fn;
static void *g_fault_user;
static uint32_t g_fault_step;

void ks__store_set_fault_hook(ks__store_fault_fn fn, void *user) {
    g_fault_fn = fn;
    g_fault_user = user;
    g_fault_step = 0;
}

/* 0 to go on; -1 (errno EIO) when the test hook injects a failure; 1 when it asks to skip an
 * fsync (the crash tests model process death, which an fsync cannot change, and run faster). */
static int step(const char *op, const char *path) {
    if (!g_fault_fn) return 0;
    int r = g_fault_fn(g_fault_user, ++g_fault_step, op, path);
    if (r == KS__STORE_FAULT_SKIP_SYNC) return 1;
    if (r) {
        errno = EIO;
        return -1;
    }
    return 0;
}

static int fs_mkdir(const char *path) {
    if (step("mkdir", path) < 0) return -1;
    return mkdir(path, 0755);
}
static int fs_rename(const char *from, const char *to) {
    if (step("rename", to) < 0) return -1;
    return rename(from, to);
}
static int fs_fsync_dir(const char *path) {
    int skip = step("fsync_dir", path);
    if (skip) return skip > 0 ? 0 : -1;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}
/* Creates path (which must not exist), writes it whole and fsyncs it. */
static int fs_write_file(const char *path, const uint8_t *data, size_t n) {
    if (step("create", path) < 0) return -1;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return -1;
    int rc = -1;
    if (step("write", path) < 0) goto done;
    while (n > 0) {
        ssize_t w = write(fd, data, n > (1u << 30) ? (1u << 30) : n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) goto done;
        data += w;
        n -= (size_t)w;
    }
    int skip = step("fsync", path);
    if (skip < 0 || (skip == 0 && fsync(fd) != 0)) goto done;
    rc = 0;
done:
    if (close(fd) != 0) rc = -1;
    return rc;
}
/* Removes a tree (no symlinks are followed: lstat). Best effort; -1 on the first failure. */
static int fs_remove_tree(const char *path, int depth) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(st.st_mode)) {
        if (step("unlink", path) < 0) return -1;
        return unlink(path);
    }
    if (depth > 16) return -1;
    DIR *d = opendir(path);
    if (!d) return -1;
    int rc = 0;
    struct dirent *e;
    char sub[PATH_CAP];
    while (rc == 0 && (e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        pathf(sub, sizeof(sub), "%s/%s", path, e->d_name);
        rc = fs_remove_tree(sub, depth + 1);
    }
    closedir(d);
    if (rc == 0 && (step("rmdir", path) < 0 || rmdir(path) != 0)) rc = -1;
    return rc;
}

/* Reads a whole file of at most max bytes into malloc'd memory. */
static int read_small(const char *path, size_t max, uint8_t **out, size_t *n_out) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) goto fail;
    if ((uint64_t)st.st_size > max) {
        errno = EFBIG;
        goto fail;
    }
    size_t n = (size_t)st.st_size, got = 0;
    buf = malloc(n ? n : 1);
    if (!buf) goto fail;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) goto fail;
        got += (size_t)r;
    }
    close(fd);
    *out = buf;
    *n_out = n;
    return 0;
fail:
    free(buf);
    int e = errno;
    close(fd);
    errno = e ? e : EIO;
    return -1;
}

/* ---- errors ------------------------------------------------------------------------------- */

static ks_status store_fail(ks_store *s, ks_delivery_error why, ks_status st, const char *fmt, ...)
    KS__PRINTF(4, 5);
static ks_status store_fail(ks_store *s, ks_delivery_error why, ks_status st, const char *fmt,
                            ...) {
    char msg[KS_ERROR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ks__object_error(&s->obj, "%s", msg);
    s->refusal = why;
    return st;
}

static ks_status io_fail(ks_store *s, const char *what, const char *path) {
    return store_fail(s, KS_DELIVERY_IO, KS_STATUS_IO_ERROR, "%s %s: %s", what, path,
                      strerror(errno));
}

static bool id_ok(const char *id) {
    size_t n = id ? strlen(id) : 0;
    if (n == 0 || n > KS_PACKAGE_MAX_ID_BYTES) return false;
    for (size_t i = 0; i < n; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              (i > 0 && (c == '.' || c == '_' || c == '-'))))
            return false;
    }
    return true;
}

/* ---- the state file ----------------------------------------------------------------------- */

static void state_encode(const store_state *st, uint8_t b[STATE_BYTES]) {
    memset(b, 0, STATE_BYTES);
    memcpy(b, STATE_MAGIC, 8);
    ks__pkg_wr32(b + 8, st->current);
    ks__pkg_wr32(b + 12, st->previous);
    ks__pkg_wr32(b + 16, st->next);
    ks__pkg_wr32(b + 20, st->num_bad);
    ks__pkg_wr32(b + 24, (uint32_t)st->max_issued);
    ks__pkg_wr32(b + 28, (uint32_t)(st->max_issued >> 32));
    memcpy(b + 32, st->bad, sizeof(st->bad));
    memcpy(b + 32 + sizeof(st->bad), st->reason, REASON_BYTES);
    b[32 + sizeof(st->bad) + REASON_BYTES - 1] = 0;
    ks__pkg_wr32(b + STATE_BYTES - 4, ks__crc32(0, b, STATE_BYTES - 4));
}

/* Loads ROOT/id/state; a missing file is the empty state. */
static ks_status state_load(ks_store *s, const char *id, store_state *st) {
    memset(st, 0, sizeof(*st));
    st->next = 1;
    char path[PATH_CAP];
    pathf(path, sizeof(path), "%s/%s/state", s->root, id);
    uint8_t *b = NULL;
    size_t n = 0;
    if (read_small(path, STATE_BYTES, &b, &n) != 0) {
        if (errno == ENOENT) return KS_STATUS_OK;
        return io_fail(s, "cannot read", path);
    }
    bool ok = n == STATE_BYTES && memcmp(b, STATE_MAGIC, 8) == 0 &&
              ks__pkg_rd32(b + STATE_BYTES - 4) == ks__crc32(0, b, STATE_BYTES - 4);
    if (ok) {
        st->current = ks__pkg_rd32(b + 8);
        st->previous = ks__pkg_rd32(b + 12);
        st->next = ks__pkg_rd32(b + 16);
        st->num_bad = ks__pkg_rd32(b + 20);
        st->max_issued = ks__pkg_rd32(b + 24) | (uint64_t)ks__pkg_rd32(b + 28) << 32;
        memcpy(st->bad, b + 32, sizeof(st->bad));
        memcpy(st->reason, b + 32 + sizeof(st->bad), REASON_BYTES);
        st->reason[REASON_BYTES - 1] = '\0';
        ok = st->num_bad <= MAX_BAD && st->next > st->current && st->next > st->previous &&
             st->next < 0x7fffffffu;
    }
    free(b);
    if (!ok)
        return store_fail(s, KS_DELIVERY_STORE_CORRUPT, KS_STATUS_CHECKSUM_MISMATCH,
                          "%s: the store's state file is corrupt (size %zu, bad magic, CRC or "
                          "slots); the store cannot tell which version is current",
                          path, n);
    return KS_STATUS_OK;
}

/* The commit: state.tmp, fsync, rename over state, fsync the folder. */
static ks_status state_commit(ks_store *s, const char *id, const store_state *st) {
    uint8_t b[STATE_BYTES];
    state_encode(st, b);
    char dir[PATH_CAP], tmp[PATH_CAP], path[PATH_CAP];
    pathf(dir, sizeof(dir), "%s/%s", s->root, id);
    pathf(tmp, sizeof(tmp), "%s/state.tmp", dir);
    pathf(path, sizeof(path), "%s/state", dir);
    unlink(tmp);
    if (fs_write_file(tmp, b, sizeof(b)) != 0) {
        ks_status r = io_fail(s, "cannot write", tmp);
        unlink(tmp);
        return r;
    }
    if (fs_rename(tmp, path) != 0) {
        ks_status r = io_fail(s, "cannot rename over", path);
        unlink(tmp);
        return r;
    }
    return KS_STATUS_OK;
}

static bool is_bad(const store_state *st, const uint8_t digest[32]) {
    for (uint32_t i = 0; i < st->num_bad; i++)
        if (memcmp(st->bad[i], digest, 32) == 0) return true;
    return false;
}
static void add_bad(store_state *st, const uint8_t digest[32]) {
    if (is_bad(st, digest)) return;
    if (st->num_bad == MAX_BAD) { /* forget the oldest */
        memmove(st->bad[0], st->bad[1], (MAX_BAD - 1) * 32);
        st->num_bad--;
    }
    memcpy(st->bad[st->num_bad++], digest, 32);
}

/* ---- reading an installed version --------------------------------------------------------- */

/* Reads v<slot>/package.sig, parses it and checks its signature. */
static ks_status read_version(ks_store *s, const char *id, uint32_t slot, ks__pkg *pkg,
                              uint8_t **sig_out) {
    char path[PATH_CAP];
    pathf(path, sizeof(path), "%s/%s/v%u/package.sig", s->root, id, slot);
    uint8_t *b = NULL;
    size_t n = 0;
    if (read_small(
            path, KS__PKG_HEADER_BYTES + KS_PACKAGE_MAX_MANIFEST_BYTES + KS_PACKAGE_SIGNATURE_BYTES,
            &b, &n) != 0)
        return io_fail(s, "cannot read", path);
    char err[KS_ERROR_CAP];
    ks_delivery_error why = KS_DELIVERY_OK;
    ks_status st = ks__pkg_parse(b, n, false, pkg, &why, err, sizeof(err));
    if (!st) st = ks__pkg_check_signature(b, pkg, s->keys, s->num_keys, &why, err, sizeof(err));
    if (!st && strcmp(pkg->info.id, id) != 0) {
        st = KS_STATUS_CHECKSUM_MISMATCH;
        snprintf(err, sizeof(err), "holds package '%s'", pkg->info.id);
    }
    if (st) {
        free(b);
        return store_fail(s, KS_DELIVERY_STORE_CORRUPT, KS_STATUS_CHECKSUM_MISMATCH,
                          "%s: installed manifest no longer verifies (%s: %s)", path,
                          ks_delivery_error_string(why), err);
    }
    *sig_out = b; /* pkg's pointers point into it */
    return KS_STATUS_OK;
}

/* Removes every entry of ROOT/id that the state does not name: interrupted installs (tmp-*),
 * versions written but not committed, versions no longer kept, a stray state.tmp. */
static void cleanup_id(ks_store *s, const char *id, const store_state *st) {
    char dir[PATH_CAP], sub[PATH_CAP];
    pathf(dir, sizeof(dir), "%s/%s", s->root, id);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "state")) continue;
        unsigned slot = 0;
        char extra;
        bool keep = sscanf(n, "v%u%c", &slot, &extra) == 1 && slot != 0 &&
                    (slot == st->current || slot == st->previous);
        if (keep) continue;
        pathf(sub, sizeof(sub), "%s/%s", dir, n);
        fs_remove_tree(sub, 0);
    }
    closedir(d);
}

/* ---- open / destroy ----------------------------------------------------------------------- */

ks_status ks_store_open(const char *root, const ks_store_desc *desc, ks_store **store_out) {
    if (!root || !desc || !store_out || !desc->trusted_keys || desc->num_trusted_keys == 0 ||
        desc->num_trusted_keys > 64) {
        ks__object_error(NULL, "ks_store_open: root, desc with 1..64 trusted_keys and store_out "
                               "are required");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    size_t rn = strlen(root);
    if (rn == 0 || rn > MAX_ROOT_BYTES) {
        ks__object_error(NULL, "ks_store_open: root path of %zu bytes (1..%u)", rn, MAX_ROOT_BYTES);
        return KS_STATUS_INVALID_ARGUMENT;
    }
    if (sodium_init() < 0) {
        ks__object_error(NULL, "ks_store_open: libsodium failed to initialise");
        return KS_STATUS_INTERNAL;
    }
    ks_allocator a = ks__allocator_or_default(desc->allocator);
    ks_store *s = ks__calloc(&a, 1, sizeof(*s));
    if (!s) {
        ks__object_error(NULL, "ks_store_open: out of memory");
        return KS_STATUS_OUT_OF_MEMORY;
    }
    s->obj.magic = KS__OBJECT_MAGIC;
    s->alloc = a;
    s->lock_fd = -1;
    memcpy(s->root, root, rn + 1);
    while (rn > 1 && s->root[rn - 1] == '/')
        s->root[--rn] = '\0';
    pthread_mutex_init(&s->mu, NULL);
    s->on_event = desc->on_event;
    s->key_provider = desc->key_provider;
    s->user = desc->user;
    s->num_keys = desc->num_trusted_keys;
    s->keys = ks__alloc(&a, (size_t)s->num_keys * 32);
    if (!s->keys) {
        ks__object_error(NULL, "ks_store_open: out of memory");
        ks_store_destroy(s);
        return KS_STATUS_OUT_OF_MEMORY;
    }
    memcpy(s->keys, desc->trusted_keys, (size_t)s->num_keys * 32);
    if (mkdir(s->root, 0700) != 0 && errno != EEXIST) {
        ks__object_error(NULL, "ks_store_open: cannot create %s: %s", s->root, strerror(errno));
        ks_store_destroy(s);
        return KS_STATUS_IO_ERROR;
    }
    char path[PATH_CAP];
    pathf(path, sizeof(path), "%s/.lock", s->root);
    s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0) {
        ks__object_error(NULL, "ks_store_open: cannot open %s: %s", path, strerror(errno));
        ks_store_destroy(s);
        return KS_STATUS_IO_ERROR;
    }
    if (flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        ks__object_error(NULL,
                         "ks_store_open: %s is in use by another ks_store (this process or "
                         "another)",
                         s->root);
        ks_store_destroy(s);
        return KS_STATUS_INVALID_STATE;
    }
    /* Leftovers of interrupted installs. A package whose state is unreadable is left alone: its
     * calls report the corruption. */
    DIR *d = opendir(s->root);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (!id_ok(e->d_name)) continue;
            store_state st;
            if (state_load(s, e->d_name, &st) == KS_STATUS_OK) cleanup_id(s, e->d_name, &st);
        }
        closedir(d);
    }
    s->obj.error[0] = '\0';
    s->refusal = KS_DELIVERY_OK;
    *store_out = s;
    return KS_STATUS_OK;
}

void ks_store_destroy(ks_store *s) {
    if (!s) return;
    if (s->lock_fd >= 0) close(s->lock_fd); /* releases the flock */
    if (s->keys) {
        sodium_memzero(s->keys, (size_t)s->num_keys * 32);
        ks__free(&s->alloc, s->keys);
    }
    pthread_mutex_destroy(&s->mu);
    ks_allocator a = s->alloc;
    ks__free(&a, s);
}

ks_delivery_error ks_store_last_refusal(const ks_store *s) {
    return s ? s->refusal : KS_DELIVERY_OK;
}

/* ---- install ------------------------------------------------------------------------------ */

static bool version_less(const ks_package_info *a, const ks_package_info *b) {
    if (a->version_major != b->version_major) return a->version_major < b->version_major;
    if (a->version_minor != b->version_minor) return a->version_minor < b->version_minor;
    return a->version_patch < b->version_patch;
}

static void emit(ks_store *s, ks_store_event ev, const ks_package_info *info, const char *msg) {
    if (s->on_event) s->on_event(s->user, ev, info, msg);
}

/* Writes the package into dir (tmp-<slot>): files/..., package.sig; every file and folder
 * fsynced. */
static ks_status write_version(ks_store *s, const char *dir, const uint8_t *data,
                               const ks__pkg *pkg) {
    char path[PATH_CAP];
    if (fs_mkdir(dir) != 0) return io_fail(s, "cannot create", dir);
    pathf(path, sizeof(path), "%s/files", dir);
    if (fs_mkdir(path) != 0) return io_fail(s, "cannot create", path);
    /* Folders are created as paths need them; each is fsynced after its files. The list of
     * folders made is small (a package has at most 256 files). */
    static const size_t max_dirs = KS_PACKAGE_MAX_FILES * KS_PACKAGE_MAX_PATH_DEPTH;
    char(*dirs)[KS_PACKAGE_MAX_NAME_BYTES + 1] = NULL;
    size_t num_dirs = 0;
    ks_status st = KS_STATUS_OK;
    for (uint32_t i = 0; i < pkg->num_files && !st; i++) {
        const ks__pkg_file *f = &pkg->files[i];
        for (uint32_t j = 0; j < f->name_len && !st; j++) {
            if (f->name[j] != '/') continue;
            bool seen = false;
            for (size_t k = 0; k < num_dirs && !seen; k++)
                seen = strlen(dirs[k]) == j && memcmp(dirs[k], f->name, j) == 0;
            if (seen) continue;
            if (!dirs) {
                dirs = ks__calloc(&s->alloc, max_dirs, sizeof(*dirs));
                if (!dirs)
                    return store_fail(s, KS_DELIVERY_IO, KS_STATUS_OUT_OF_MEMORY, "out of memory");
            }
            memcpy(dirs[num_dirs], f->name, j);
            dirs[num_dirs][j] = '\0';
            pathf(path, sizeof(path), "%s/files/%s", dir, dirs[num_dirs]);
            num_dirs++;
            if (fs_mkdir(path) != 0) st = io_fail(s, "cannot create", path);
        }
        if (st) break;
        pathf(path, sizeof(path), "%s/files/%.*s", dir, (int)f->name_len, f->name);
        if (fs_write_file(path, f->data, (size_t)f->size_bytes) != 0)
            st = io_fail(s, "cannot write", path);
    }
    for (size_t k = num_dirs; k-- > 0 && !st;) { /* deepest were created last */
        pathf(path, sizeof(path), "%s/files/%s", dir, dirs[k]);
        if (fs_fsync_dir(path) != 0) st = io_fail(s, "cannot sync", path);
    }
    ks__free(&s->alloc, dirs);
    if (st) return st;
    pathf(path, sizeof(path), "%s/files", dir);
    if (fs_fsync_dir(path) != 0) return io_fail(s, "cannot sync", path);
    pathf(path, sizeof(path), "%s/package.sig", dir);
    if (fs_write_file(path, data, pkg->signed_bytes + KS_PACKAGE_SIGNATURE_BYTES) != 0)
        return io_fail(s, "cannot write", path);
    if (fs_fsync_dir(dir) != 0) return io_fail(s, "cannot sync", dir);
    return KS_STATUS_OK;
}

static ks_status install_locked(ks_store *s, const uint8_t *data, size_t n, uint32_t flags,
                                ks_package_info *info_out) {
    ks__pkg *pkg = ks__alloc(&s->alloc, sizeof(*pkg));
    ks__pkg *cur = ks__alloc(&s->alloc, sizeof(*cur));
    uint8_t *cur_sig = NULL;
    ks_status st = KS_STATUS_OK;
    char dir[PATH_CAP], tmp[PATH_CAP], fin[PATH_CAP];
    if (!pkg || !cur) {
        st = store_fail(s, KS_DELIVERY_IO, KS_STATUS_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    char err[KS_ERROR_CAP];
    ks_delivery_error why = KS_DELIVERY_OK;
    st = ks__pkg_verify(data, n, s->keys, s->num_keys, pkg, &why, err, sizeof(err));
    if (st) {
        store_fail(s, why, st, "%s", err);
        goto done;
    }
    const ks_package_info *in = &pkg->info;
    pathf(dir, sizeof(dir), "%s/%s", s->root, in->id);
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        if (fs_mkdir(dir) != 0 || fs_fsync_dir(s->root) != 0) {
            st = io_fail(s, "cannot create", dir);
            goto done;
        }
    }
    store_state state;
    st = state_load(s, in->id, &state);
    if (st) goto done;
    if (is_bad(&state, in->digest)) {
        st = store_fail(s, KS_DELIVERY_KNOWN_BAD, KS_STATUS_INVALID_STATE,
                        "package %s %u.%u.%u (this exact signed package) was marked bad before: "
                        "%s",
                        in->id, in->version_major, in->version_minor, in->version_patch,
                        state.reason[0] ? state.reason : "no reason recorded");
        goto done;
    }
    if (state.current) {
        st = read_version(s, in->id, state.current, cur, &cur_sig);
        if (st) goto done;
        if (memcmp(cur->info.digest, in->digest, 32) == 0) { /* already current */
            if (info_out) *info_out = *in;
            goto done;
        }
        if (version_less(in, &cur->info) && !(flags & KS_STORE_ALLOW_DOWNGRADE)) {
            st = store_fail(s, KS_DELIVERY_DOWNGRADE, KS_STATUS_INVALID_STATE,
                            "package %s: version %u.%u.%u is older than the installed %u.%u.%u "
                            "(a downgrade; KS_STORE_ALLOW_DOWNGRADE allows it)",
                            in->id, in->version_major, in->version_minor, in->version_patch,
                            cur->info.version_major, cur->info.version_minor,
                            cur->info.version_patch);
            goto done;
        }
    }
    if (in->issued < state.max_issued) {
        st = store_fail(s, KS_DELIVERY_REPLAY, KS_STATUS_INVALID_STATE,
                        "package %s %u.%u.%u was signed at %llu, before a package this store "
                        "already accepted (%llu): a replay of an old signed package is refused "
                        "even with KS_STORE_ALLOW_DOWNGRADE (re-sign it to downgrade)",
                        in->id, in->version_major, in->version_minor, in->version_patch,
                        (unsigned long long)in->issued, (unsigned long long)state.max_issued);
        goto done;
    }
    uint32_t slot = state.next;
    pathf(tmp, sizeof(tmp), "%s/tmp-%u", dir, slot);
    pathf(fin, sizeof(fin), "%s/v%u", dir, slot);
    if (fs_remove_tree(tmp, 0) != 0 || fs_remove_tree(fin, 0) != 0) {
        st = io_fail(s, "cannot remove leftovers at", tmp);
        goto done;
    }
    st = write_version(s, tmp, data, pkg);
    if (st) goto cleanup_tmp;
    /* The self-test runs on the written copy, the bytes the app will load. */
    const ks__pkg_file *kst = NULL, *kstf = NULL;
    for (uint32_t i = 0; i < pkg->num_files; i++) {
        const ks__pkg_file *f = &pkg->files[i];
        if (f->name_len == strlen(KS__SELFTEST_NAME) &&
            !memcmp(f->name, KS__SELFTEST_NAME, f->name_len))
            kst = f;
        if (f->name_len == strlen(KS__SELFTEST_FACE_NAME) &&
            !memcmp(f->name, KS__SELFTEST_FACE_NAME, f->name_len))
            kstf = f;
    }
    if ((kst || kstf) && !(flags & KS_STORE_SKIP_SELFTEST)) {
        char files[PATH_CAP], why_msg[KS_ERROR_CAP];
        pathf(files, sizeof(files), "%s/files", tmp);
        /* The key lives on this stack frame for the self-test only and is wiped after. */
        uint8_t key[32];
        bool have_key =
            s->key_provider && s->key_provider(s->user, in->encryption_key_name, key) == 0;
        bool key_problem = false;
        ks_status tst = KS_STATUS_OK;
        if (kst)
            tst = ks__selftest_run(kst->data, (size_t)kst->size_bytes, files, have_key ? key : NULL,
                                   &key_problem, why_msg, sizeof(why_msg));
        if (tst == KS_STATUS_OK && kstf)
            tst = ks__selftest_face_run(kstf->data, (size_t)kstf->size_bytes, files,
                                        have_key ? key : NULL, &key_problem, why_msg,
                                        sizeof(why_msg));
        sodium_memzero(key, sizeof(key));
        if (tst != KS_STATUS_OK && key_problem) {
            st = store_fail(s, KS_DELIVERY_NO_KEY, KS_STATUS_INVALID_ARGUMENT,
                            "%s %u.%u.%u: cannot self-test: %s (key name '%s'%s)", in->id,
                            in->version_major, in->version_minor, in->version_patch, why_msg,
                            in->encryption_key_name,
                            s->key_provider ? "" : "; ks_store_desc.key_provider is not set");
            goto cleanup_tmp;
        }
        if (tst != KS_STATUS_OK) {
            store_state bad = state;
            add_bad(&bad, in->digest);
            pathf(bad.reason, sizeof(bad.reason), "%s %u.%u.%u: self-test failed: %s", in->id,
                  in->version_major, in->version_minor, in->version_patch, why_msg);
            fs_remove_tree(tmp, 0);
            st = state_commit(s, in->id, &bad);
            if (st) goto done;
            st = store_fail(s, KS_DELIVERY_SELFTEST_FAILED, KS_STATUS_CHECKSUM_MISMATCH, "%s",
                            bad.reason);
            emit(s, KS_STORE_EVENT_ROLLED_BACK, in, bad.reason);
            goto done;
        }
    }
    if (fs_rename(tmp, fin) != 0 || fs_fsync_dir(dir) != 0) {
        st = io_fail(s, "cannot move the new version into place at", fin);
        goto cleanup_tmp;
    }
    store_state next = state;
    uint32_t dropped = state.previous;
    next.previous = state.current;
    next.current = slot;
    next.next = slot + 1;
    if (in->issued > next.max_issued) next.max_issued = in->issued;
    st = state_commit(s, in->id, &next);
    if (st) {
        fs_remove_tree(fin, 0);
        goto done;
    }
    /* Committed. A failure to sync the folder now can only lose the commit on power loss (the
     * old version then comes back whole); the process already uses the new one. */
    if (fs_fsync_dir(dir) != 0)
        ks__log(KS_LOG_WARN, "store: cannot sync %s after the commit: %s", dir, strerror(errno));
    if (dropped) {
        pathf(tmp, sizeof(tmp), "%s/v%u", dir, dropped);
        fs_remove_tree(tmp, 0); /* unreferenced now; open removes it if this fails */
    }
    if (info_out) *info_out = *in;
    emit(s, KS_STORE_EVENT_INSTALLED, in, "installed");
    goto done;
cleanup_tmp:
    fs_remove_tree(tmp, 0);
done:
    free(cur_sig);
    ks__free(&s->alloc, pkg);
    ks__free(&s->alloc, cur);
    return st;
}

ks_status ks_store_install_buffer(ks_store *s, const void *data, size_t n, uint32_t flags,
                                  ks_package_info *info_out) {
    if (!s || !data) {
        ks__object_error(s ? &s->obj : NULL,
                         "ks_store_install_buffer: store and data are required");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    pthread_mutex_lock(&s->mu);
    s->refusal = KS_DELIVERY_OK;
    ks_status st = install_locked(s, data, n, flags, info_out);
    pthread_mutex_unlock(&s->mu);
    return st;
}

ks_status ks_store_install_file(ks_store *s, const char *path, uint32_t flags,
                                ks_package_info *info_out) {
    if (!s || !path) {
        ks__object_error(s ? &s->obj : NULL, "ks_store_install_file: store and path are required");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    uint8_t *b = NULL;
    size_t n = 0;
    const size_t max = KS__PKG_HEADER_BYTES + KS_PACKAGE_MAX_MANIFEST_BYTES +
                       KS_PACKAGE_SIGNATURE_BYTES + (size_t)KS_PACKAGE_MAX_PAYLOAD_BYTES;
    if (read_small(path, max, &b, &n) != 0) {
        pthread_mutex_lock(&s->mu);
        ks_status st = errno != EFBIG
                           ? io_fail(s, "cannot read", path)
                           : store_fail(s, KS_DELIVERY_TOO_LARGE, KS_STATUS_LIMIT_EXCEEDED,
                                        "%s is larger than any package may be", path);
        pthread_mutex_unlock(&s->mu);
        return st;
    }
    ks_status st = ks_store_install_buffer(s, b, n, flags, info_out);
    free(b);
    return st;
}

/* ---- queries, rollback -------------------------------------------------------------------- */

static ks_status need_id(ks_store *s, const char *id) {
    if (!id_ok(id))
        return store_fail(s, KS_DELIVERY_NOT_INSTALLED, KS_STATUS_INVALID_ARGUMENT,
                          "'%.80s' is not a package id ([a-z0-9][a-z0-9._-]*, 1..%u bytes)",
                          id ? id : "(null)", KS_PACKAGE_MAX_ID_BYTES);
    return KS_STATUS_OK;
}

ks_status ks_store_current(ks_store *s, const char *id, int previous, ks_package_info *info_out) {
    if (!s || !info_out) {
        ks__object_error(s ? &s->obj : NULL, "ks_store_current: store and info_out are required");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    pthread_mutex_lock(&s->mu);
    s->refusal = KS_DELIVERY_OK;
    store_state state;
    memset(&state, 0, sizeof(state));
    ks__pkg *pkg = NULL;
    uint8_t *sig = NULL;
    ks_status st = need_id(s, id);
    if (!st) st = state_load(s, id, &state);
    uint32_t slot = previous ? state.previous : state.current;
    if (!st && slot == 0)
        st = store_fail(s, KS_DELIVERY_NOT_INSTALLED, KS_STATUS_INVALID_ARGUMENT,
                        "package %s has no %s version in %s", id, previous ? "previous" : "current",
                        s->root);
    if (!st && !(pkg = ks__alloc(&s->alloc, sizeof(*pkg))))
        st = store_fail(s, KS_DELIVERY_IO, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st) st = read_version(s, id, slot, pkg, &sig);
    if (!st) *info_out = pkg->info;
    free(sig);
    ks__free(&s->alloc, pkg);
    pthread_mutex_unlock(&s->mu);
    return st;
}

ks_status ks_store_file_path(ks_store *s, const char *id, const char *name, char *path_out,
                             size_t cap) {
    if (!s || !name || !path_out) {
        ks__object_error(s ? &s->obj : NULL, "ks_store_file_path: store, name, path_out required");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    pthread_mutex_lock(&s->mu);
    s->refusal = KS_DELIVERY_OK;
    store_state state;
    ks__pkg *pkg = NULL;
    uint8_t *sig = NULL;
    ks_status st = need_id(s, id);
    if (!st) st = state_load(s, id, &state);
    if (!st && state.current == 0)
        st = store_fail(s, KS_DELIVERY_NOT_INSTALLED, KS_STATUS_INVALID_ARGUMENT,
                        "package %s is not installed in %s", id, s->root);
    if (!st && !(pkg = ks__alloc(&s->alloc, sizeof(*pkg))))
        st = store_fail(s, KS_DELIVERY_IO, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st) st = read_version(s, id, state.current, pkg, &sig);
    if (!st) {
        size_t nl = strlen(name);
        bool found = false;
        for (uint32_t i = 0; i < pkg->num_files && !found; i++)
            found = pkg->files[i].name_len == nl && !memcmp(pkg->files[i].name, name, nl);
        if (!found) {
            st = store_fail(s, KS_DELIVERY_NOT_INSTALLED, KS_STATUS_INVALID_ARGUMENT,
                            "package %s %u.%u.%u has no file '%.255s'", id, pkg->info.version_major,
                            pkg->info.version_minor, pkg->info.version_patch, name);
        } else if ((size_t)snprintf(path_out, cap, "%s/%s/v%u/files/%s", s->root, id, state.current,
                                    name) >= cap) {
            st = store_fail(s, KS_DELIVERY_TOO_LARGE, KS_STATUS_LIMIT_EXCEEDED,
                            "the path of %s does not fit %zu bytes", name, cap);
        }
    }
    free(sig);
    ks__free(&s->alloc, pkg);
    pthread_mutex_unlock(&s->mu);
    return st;
}

/* Makes previous current (or nothing, when allow_empty and there is no previous); with
 * bad_reason, the current version's digest joins the bad list. */
static ks_status rollback_locked(ks_store *s, const char *id, const char *bad_reason,
                                 bool allow_empty) {
    store_state state;
    ks_status st = need_id(s, id);
    if (!st) st = state_load(s, id, &state);
    if (st) return st;
    if (state.current == 0)
        return store_fail(s, KS_DELIVERY_NOT_INSTALLED, KS_STATUS_INVALID_ARGUMENT,
                          "package %s is not installed in %s", id, s->root);
    if (state.previous == 0 && !allow_empty)
        return store_fail(s, KS_DELIVERY_NO_PREVIOUS, KS_STATUS_INVALID_ARGUMENT,
                          "package %s: no previous version is kept to roll back to", id);
    ks__pkg *pkg = ks__alloc(&s->alloc, sizeof(*pkg));
    uint8_t *sig = NULL;
    if (!pkg) return store_fail(s, KS_DELIVERY_IO, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    st = read_version(s, id, state.current, pkg, &sig);
    store_state next = state;
    next.current = state.previous;
    next.previous = 0;
    if (bad_reason) {
        /* A corrupt current version can still be rolled away from; it is just not listed. */
        if (!st) add_bad(&next, pkg->info.digest);
        pathf(next.reason, sizeof(next.reason), "%s %u.%u.%u: %s", id,
              st ? 0 : pkg->info.version_major, st ? 0 : pkg->info.version_minor,
              st ? 0 : pkg->info.version_patch, bad_reason);
        st = KS_STATUS_OK;
    }
    if (!st) st = state_commit(s, id, &next);
    if (!st) {
        char dir[PATH_CAP], old[PATH_CAP];
        pathf(dir, sizeof(dir), "%s/%s", s->root, id);
        if (fs_fsync_dir(dir) != 0)
            ks__log(KS_LOG_WARN, "store: cannot sync %s after the commit", dir);
        pathf(old, sizeof(old), "%s/v%u", dir, state.current);
        fs_remove_tree(old, 0);
        if (bad_reason) emit(s, KS_STORE_EVENT_ROLLED_BACK, &pkg->info, next.reason);
    }
    free(sig);
    ks__free(&s->alloc, pkg);
    return st;
}

ks_status ks_store_rollback(ks_store *s, const char *id) {
    if (!s) {
        ks__object_error(NULL, "ks_store_rollback: store is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    pthread_mutex_lock(&s->mu);
    s->refusal = KS_DELIVERY_OK;
    ks_status st = rollback_locked(s, id, NULL, false);
    pthread_mutex_unlock(&s->mu);
    return st;
}

ks_status ks_store_mark_bad(ks_store *s, const char *id, const char *reason) {
    if (!s) {
        ks__object_error(NULL, "ks_store_mark_bad: store is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    pthread_mutex_lock(&s->mu);
    s->refusal = KS_DELIVERY_OK;
    ks_status st =
        rollback_locked(s, id, reason && reason[0] ? reason : "marked bad by the app", true);
    pthread_mutex_unlock(&s->mu);
    return st;
}

ks_status ks_store_last_rollback(ks_store *s, const char *id, char *reason_out, size_t cap) {
    if (!s || !reason_out || cap == 0) {
        ks__object_error(s ? &s->obj : NULL, "ks_store_last_rollback: store and reason_out "
                                             "(cap > 0) are required");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    pthread_mutex_lock(&s->mu);
    s->refusal = KS_DELIVERY_OK;
    store_state state;
    ks_status st = need_id(s, id);
    if (!st) st = state_load(s, id, &state);
    if (!st) snprintf(reason_out, cap, "%s", state.reason);
    pthread_mutex_unlock(&s->mu);
    return st;
}

ks_status ks_store_check(ks_store *s, const char *id) {
    if (!s) {
        ks__object_error(NULL, "ks_store_check: store is NULL");
        return KS_STATUS_INVALID_ARGUMENT;
    }
    pthread_mutex_lock(&s->mu);
    s->refusal = KS_DELIVERY_OK;
    store_state state;
    ks__pkg *pkg = NULL;
    uint8_t *sig = NULL, *buf = NULL;
    ks_status st = need_id(s, id);
    if (!st) st = state_load(s, id, &state);
    if (!st && state.current == 0)
        st = store_fail(s, KS_DELIVERY_NOT_INSTALLED, KS_STATUS_INVALID_ARGUMENT,
                        "package %s is not installed in %s", id, s->root);
    if (!st &&
        (!(pkg = ks__alloc(&s->alloc, sizeof(*pkg))) || !(buf = ks__alloc(&s->alloc, 1u << 16))))
        st = store_fail(s, KS_DELIVERY_IO, KS_STATUS_OUT_OF_MEMORY, "out of memory");
    if (!st) st = read_version(s, id, state.current, pkg, &sig);
    for (uint32_t i = 0; !st && i < pkg->num_files; i++) {
        const ks__pkg_file *f = &pkg->files[i];
        char path[PATH_CAP];
        pathf(path, sizeof(path), "%s/%s/v%u/files/%.*s", s->root, id, state.current,
              (int)f->name_len, f->name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            st = store_fail(s, KS_DELIVERY_STORE_CORRUPT, KS_STATUS_CHECKSUM_MISMATCH,
                            "%s: missing (%s)", path, strerror(errno));
            break;
        }
        crypto_hash_sha256_state h;
        crypto_hash_sha256_init(&h);
        uint64_t total = 0;
        ssize_t r;
        while ((r = read(fd, buf, 1u << 16)) > 0) {
            crypto_hash_sha256_update(&h, buf, (unsigned long long)r);
            total += (uint64_t)r;
        }
        close(fd);
        uint8_t got[32];
        crypto_hash_sha256_final(&h, got);
        if (r < 0 || total != f->size_bytes || memcmp(got, f->sha256, 32) != 0)
            st = store_fail(s, KS_DELIVERY_STORE_CORRUPT, KS_STATUS_CHECKSUM_MISMATCH,
                            "%s: %llu bytes on disk, the manifest says %llu%s", path,
                            (unsigned long long)total, (unsigned long long)f->size_bytes,
                            total == f->size_bytes ? " (the SHA-256 differs)" : "");
    }
    free(sig);
    ks__free(&s->alloc, buf);
    ks__free(&s->alloc, pkg);
    pthread_mutex_unlock(&s->mu);
    return st;
}
