/* Crash consistency of the store. For every file-system step N of an install (and of a mark_bad
 * roll-back), a child process is killed (_exit from the step hook, before step N runs) and the
 * parent reopens the store: it must find a complete old or new version (every file's SHA-256
 * checked against the signed manifest) and no leftovers. Then the same with an injected I/O error
 * at step N, in process: the call fails with KS_STATUS_IO_ERROR and the old version is current
 * and complete, or (only after the commit point) succeeds with the new one.
 *
 * What this models: the death of the process between any two syscalls. Power loss additionally
 * needs the fsync ordering the store performs (docs/delivery.md, "Crash safety"). */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "delivery_test_util.h"
#include "kestrel/delivery.h"

static uint8_t pk[32], sk[64];
static uint8_t *pkg[4];
static size_t pkg_n[4];

static int setup(void **state) {
    (void)state;
    dt_keypair(7, pk, sk);
    for (uint32_t v = 1; v <= 3; v++)
        pkg[v] = dt_simple_package(sk, v, 100 * v, (float)v, &pkg_n[v]);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    for (int v = 1; v <= 3; v++)
        free(pkg[v]);
    return 0;
}

/* fsyncs are counted as steps (kill and failure points) but not performed: a process death cannot
 * observe them, and they cost seconds on a busy disk. */
static int is_sync(const char *op) {
    return !strncmp(op, "fsync", 5);
}
static uint32_t g_kill_at;
static int kill_hook(void *user, uint32_t step, const char *op, const char *path) {
    (void)user, (void)path;
    if (step == g_kill_at) _exit(0); /* dies before the step runs, without any clean-up */
    return is_sync(op) ? KS__STORE_FAULT_SKIP_SYNC : 0;
}
static int fail_hook(void *user, uint32_t step, const char *op, const char *path) {
    (void)user, (void)path;
    if (step == g_kill_at) return 1;
    return is_sync(op) ? KS__STORE_FAULT_SKIP_SYNC : 0;
}
static int fast_hook(void *user, uint32_t step, const char *op, const char *path) {
    (void)user, (void)step, (void)path;
    return is_sync(op) ? KS__STORE_FAULT_SKIP_SYNC : 0;
}

static ks_store *open_store(const char *root) {
    ks_store *s = NULL;
    ks_store_desc desc = {.trusted_keys = pk, .num_trusted_keys = 1};
    if (ks_store_open(root, &desc, &s) != KS_STATUS_OK)
        fail_msg("open %s: %s", root, ks_last_error(NULL));
    return s;
}

/* A store with version 1 and 2 installed (2 current, 1 kept). */
static void base_store(const char *root) {
    dt_remove_tree(root);
    ks__store_set_fault_hook(fast_hook, NULL);
    ks_store *s = open_store(root);
    assert_int_equal(ks_store_install_buffer(s, pkg[1], pkg_n[1], 0, NULL), KS_STATUS_OK);
    assert_int_equal(ks_store_install_buffer(s, pkg[2], pkg_n[2], 0, NULL), KS_STATUS_OK);
    ks_store_destroy(s);
    ks__store_set_fault_hook(NULL, NULL);
}

/* Opens the store and checks it is one of the two expected complete states; returns the current
 * major version. */
static uint32_t check_consistent(const char *root, uint32_t old_major, uint32_t new_major,
                                 uint32_t old_prev, uint32_t new_prev) {
    ks_store *s = open_store(root);
    ks_package_info info;
    uint32_t cur = 0, prev = 0;
    if (ks_store_current(s, "face", 0, &info) == KS_STATUS_OK) cur = info.version_major;
    if (ks_store_current(s, "face", 1, &info) == KS_STATUS_OK) prev = info.version_major;
    if (!((cur == old_major && prev == old_prev) || (cur == new_major && prev == new_prev)))
        fail_msg("store holds current %u, previous %u; expected %u/%u or %u/%u", cur, prev,
                 old_major, old_prev, new_major, new_prev);
    if (cur && ks_store_check(s, "face") != KS_STATUS_OK)
        fail_msg("current version %u is not complete: %s", cur, ks_last_error(s));
    ks_store_destroy(s);
    /* No leftovers: only state and the kept version folders. */
    char dir[4096];
    snprintf(dir, sizeof(dir), "%s/face", root);
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int entries = 0;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) entries++;
    closedir(d);
    assert_int_equal(entries, 1 + (cur != 0) + (prev != 0));
    return cur;
}

enum { OP_INSTALL, OP_MARK_BAD };

/* Runs the operation in a child killed at step `at`; returns 1 if the child finished (no such
 * step). */
static int run_killed(const char *root, int op, uint32_t at) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        g_kill_at = at;
        ks__store_set_fault_hook(fast_hook, NULL);
        ks_store *s = open_store(root);
        ks__store_set_fault_hook(kill_hook, NULL);
        ks_status st = op == OP_INSTALL ? ks_store_install_buffer(s, pkg[3], pkg_n[3], 0, NULL)
                                        : ks_store_mark_bad(s, "face", "test");
        _exit(st == KS_STATUS_OK ? 3 : 4);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) == 4) fail_msg("the uninterrupted operation failed");
    return WEXITSTATUS(status) == 3;
}

static void crash_loop(int op) {
    /* Scratch on tmpfs where there is one: a process death looks the same on any file system,
     * and the ~700 directory removals of the loops cost seconds on a busy disk. */
    char root[4096];
    if (access("/dev/shm", W_OK) == 0)
        snprintf(root, sizeof(root), "/dev/shm/ks_store_crash_%ld_%d", (long)getpid(), op);
    else
        snprintf(root, sizeof(root), "%s/crash_%d", KS_BINARY_DIR, op);
    /* install 3 over 2 (1 kept, dropped on commit) ; mark_bad 2 -> back to 1 */
    uint32_t old_cur = 2, old_prev = 1;
    uint32_t new_cur = op == OP_INSTALL ? 3 : 1, new_prev = op == OP_INSTALL ? 2 : 0;
    uint32_t at = 1, seen_new = 0;
    for (;; at++) {
        base_store(root);
        int finished = run_killed(root, op, at);
        uint32_t cur = check_consistent(root, old_cur, new_cur, old_prev, new_prev);
        seen_new += cur == new_cur;
        if (finished) {
            assert_int_equal(cur, new_cur);
            break;
        }
        assert_true(at < 1000);
    }
    print_message("%s: killed at each of %u file-system steps; the store reopened complete "
                  "every time (%u times the new version)\n",
                  op == OP_INSTALL ? "install" : "mark_bad", at - 1, seen_new);
    assert_true(at > 5);
    /* Injected I/O errors at each step, in process. */
    for (uint32_t k = 1; k < at; k++) {
        base_store(root);
        ks_store *s = open_store(root);
        g_kill_at = k;
        ks__store_set_fault_hook(fail_hook, NULL);
        ks_status st = op == OP_INSTALL ? ks_store_install_buffer(s, pkg[3], pkg_n[3], 0, NULL)
                                        : ks_store_mark_bad(s, "face", "test");
        ks__store_set_fault_hook(NULL, NULL);
        ks_delivery_error why = ks_store_last_refusal(s);
        ks_package_info info;
        assert_int_equal(ks_store_current(s, "face", 0, &info), KS_STATUS_OK);
        if (st != KS_STATUS_OK) {
            assert_int_equal(st, KS_STATUS_IO_ERROR);
            assert_int_equal(why, KS_DELIVERY_IO);
            assert_int_equal(info.version_major, old_cur);
        } else {
            assert_int_equal(info.version_major, new_cur);
        }
        ks_store_destroy(s);
        check_consistent(root, old_cur, new_cur, old_prev, new_prev);
    }
    dt_remove_tree(root);
}

static void test_install_crash(void **state) {
    (void)state;
    crash_loop(OP_INSTALL);
}
static void test_mark_bad_crash(void **state) {
    (void)state;
    crash_loop(OP_MARK_BAD);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_install_crash),
        cmocka_unit_test(test_mark_bad_crash),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
