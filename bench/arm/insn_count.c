/* A QEMU TCG plugin (host shared library) that counts the guest instructions a user-mode run
 * executes, and optionally records the program counters executed inside one address range.
 *
 *   qemu-aarch64 -plugin ./libinsn_count.so,out=FILE[,lo=ADDR,hi=ADDR,skip=N,limit=M,hist=1]
 * PROGRAM
 *
 * FILE receives "insns <total>" and, with lo/hi, "pc <hex>" lines: the PCs of the instructions
 * executed in [lo, hi), after the first `skip` of them, at most `limit` (default 4096). With
 * hist=1, "pcn <hex> <count>" lines instead: how often each instruction of [lo, hi) ran.
 *
 * Counting is exact per executed translation block: at translation time each block gets an
 * inline add of its instruction count, executed every time the block runs (no helper call, so
 * counting barely slows the guest). A block left part-way through by a fault or a syscall would
 * be counted whole; the programs measured here take no faults, and syscalls end blocks.
 *
 * Debian's qemu-user (7.2) accepts -plugin but ships no qemu-plugin.h, so the few declarations
 * used are written below from QEMU's documented plugin API (docs/devel/tcg-plugins.rst,
 * include/qemu/qemu-plugin.h), API version 1, which QEMU 4.2 .. 8.x load. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the subset of qemu-plugin.h used here (plugin API version 1) ---- */
typedef uint64_t qemu_plugin_id_t;
typedef struct qemu_info_t qemu_info_t; /* only passed through */
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_CB_R_REGS, QEMU_PLUGIN_CB_RW_REGS };
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb, enum qemu_plugin_op op,
                                              void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_insn_exec_cb(struct qemu_plugin_insn *insn,
                                            qemu_plugin_vcpu_udata_cb_t cb,
                                            enum qemu_plugin_cb_flags flags, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
void qemu_plugin_outs(const char *string);

#define EXPORT __attribute__((visibility("default")))
EXPORT int qemu_plugin_version = 1;

/* ---- state ---- */
static uint64_t g_insns;    /* the inline counter (the measured programs are single-threaded) */
static uint64_t g_lo, g_hi; /* PC range to record; empty when g_lo == g_hi */
static uint64_t g_skip;     /* in-range instructions still to skip */
static uint64_t g_limit = 4096;
static uint64_t *g_pcs;
static uint64_t g_num_pcs;
static int g_hist;         /* hist=1: a count per instruction slot of [lo, hi) instead of a trace */
static uint64_t *g_counts; /* hist: (hi - lo) / 4 counters */
static char g_out[4096];

static void on_insn(unsigned int vcpu, void *udata) {
    (void)vcpu;
    if (g_skip) {
        g_skip--;
        return;
    }
    if (g_hist) {
        g_counts[((uint64_t)(uintptr_t)udata - g_lo) >> 2]++;
        return;
    }
    if (g_num_pcs < g_limit) g_pcs[g_num_pcs++] = (uint64_t)(uintptr_t)udata;
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &g_insns, n);
    if (g_lo == g_hi) return;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
        uint64_t pc = qemu_plugin_insn_vaddr(insn);
        if (pc >= g_lo && pc < g_hi)
            qemu_plugin_register_vcpu_insn_exec_cb(insn, on_insn, QEMU_PLUGIN_CB_NO_REGS,
                                                   (void *)(uintptr_t)pc);
    }
}

static void at_exit_cb(qemu_plugin_id_t id, void *userdata) {
    (void)id, (void)userdata;
    FILE *f = g_out[0] ? fopen(g_out, "w") : NULL;
    if (!f) {
        char line[64];
        snprintf(line, sizeof(line), "insns %" PRIu64 "\n", g_insns);
        qemu_plugin_outs(line);
        return;
    }
    fprintf(f, "insns %" PRIu64 "\n", g_insns);
    for (uint64_t i = 0; i < g_num_pcs; i++)
        fprintf(f, "pc %" PRIx64 "\n", g_pcs[i]);
    if (g_hist)
        for (uint64_t i = 0; i < (g_hi - g_lo) >> 2; i++)
            if (g_counts[i]) fprintf(f, "pcn %" PRIx64 " %" PRIu64 "\n", g_lo + i * 4, g_counts[i]);
    fclose(f);
}

/* One "key=value" argument; 0 when it is understood. */
static int parse_arg(const char *a) {
    const char *eq = strchr(a, '=');
    if (!eq) return -1;
    size_t klen = (size_t)(eq - a);
    const char *v = eq + 1;
    if (klen == 3 && !strncmp(a, "out", 3)) {
        snprintf(g_out, sizeof(g_out), "%s", v);
        return 0;
    }
    char *end = NULL;
    uint64_t x = strtoull(v, &end, 0);
    if (!*v || *end) return -1;
    if (klen == 2 && !strncmp(a, "lo", 2))
        g_lo = x;
    else if (klen == 2 && !strncmp(a, "hi", 2))
        g_hi = x;
    else if (klen == 4 && !strncmp(a, "skip", 4))
        g_skip = x;
    else if (klen == 5 && !strncmp(a, "limit", 5))
        g_limit = x;
    else if (klen == 4 && !strncmp(a, "hist", 4))
        g_hist = x != 0;
    else
        return -1;
    return 0;
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc,
                               char **argv) {
    (void)info;
    for (int i = 0; i < argc; i++) {
        if (parse_arg(argv[i])) {
            fprintf(stderr, "insn_count: bad argument '%s' (out=FILE lo= hi= skip= limit= hist=)\n",
                    argv[i]);
            return -1;
        }
    }
    if (g_hi < g_lo || g_limit > ((uint64_t)1 << 26)) {
        fprintf(stderr, "insn_count: need lo <= hi and limit <= 2^26\n");
        return -1;
    }
    if (g_lo != g_hi && g_hist) {
        g_counts = calloc((size_t)((g_hi - g_lo) >> 2) + 1, sizeof(*g_counts));
        if (!g_counts) return -1;
    } else if (g_lo != g_hi) {
        g_pcs = calloc((size_t)g_limit, sizeof(*g_pcs));
        if (!g_pcs) return -1;
    }
    qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
    qemu_plugin_register_atexit_cb(id, at_exit_cb, NULL);
    return 0;
}
