/* Run-time CPU feature detection. x86: CPUID leaves 1, 7 and XGETBV (the OS must save the
 * AVX/AVX-512 state, not only the CPU support it). AArch64: HWCAP from the auxiliary vector. */
#include "cpuinfo.h"

#include "once.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define KS_X86 1
#elif defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#define KS_ARM64_LINUX 1
#endif

static uint32_t g_isa;
static ks__once_flag g_isa_once = KS__ONCE_INIT;
static char g_name[64];

#if KS_X86
static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

static uint32_t detect(void) {
    uint32_t isa = 0;
#if KS_X86
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    int osxsave = (c >> 27) & 1, fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    uint64_t xcr0 = osxsave ? xgetbv0() : 0;
    int ymm_ok = (xcr0 & 0x6) == 0x6, zmm_ok = (xcr0 & 0xe6) == 0xe6;
    unsigned b7 = 0, c7 = 0, a71 = 0;
    if ((unsigned)__get_cpuid_max(0, NULL) >= 7u) {
        __cpuid_count(7, 0, a, b7, c7, d);
        unsigned bb, cc, dd;
        __cpuid_count(7, 1, a71, bb, cc, dd);
    }
    if (ymm_ok && fma && f16c && ((b7 >> 5) & 1)) isa |= KS_ISA_AVX2;
    int avx512 = ((b7 >> 16) & 1) && ((b7 >> 17) & 1) && ((b7 >> 30) & 1) && ((b7 >> 31) & 1);
    if (zmm_ok && avx512 && (isa & KS_ISA_AVX2)) isa |= KS_ISA_AVX512;
    if ((isa & KS_ISA_AVX512) && ((c7 >> 11) & 1)) isa |= KS_ISA_AVX512_VNNI;
    if ((isa & KS_ISA_AVX512) && ((c7 >> 1) & 1)) isa |= KS_ISA_AVX512_VBMI;
    if ((isa & KS_ISA_AVX2) && ((a71 >> 4) & 1)) isa |= KS_ISA_AVX_VNNI;
#elif KS_ARM64_LINUX
    unsigned long hw = getauxval(AT_HWCAP);
    isa |= KS_ISA_NEON;
#ifndef HWCAP_ASIMDHP
#define HWCAP_ASIMDHP (1 << 10)
#endif
#ifndef HWCAP_ASIMDDP
#define HWCAP_ASIMDDP (1 << 20)
#endif
    if (hw & HWCAP_ASIMDHP) isa |= KS_ISA_NEON_FP16;
    if (hw & HWCAP_ASIMDDP) isa |= KS_ISA_NEON_DOT;
#elif defined(__aarch64__)
    isa |= KS_ISA_NEON;
#elif defined(__wasm_simd128__)
    /* A module built with -msimd128 only instantiates where the engine runs SIMD128. */
    isa |= KS_ISA_WASM_SIMD128;
#endif
    return isa;
}

/* KS_ISA_MAX caps dispatch at one ISA level, so the AVX2 (or NEON-without-fp16) kernels can be
 * tested and timed on a CPU that has more. Each level keeps the bits of its own architecture at
 * or below it and leaves the other architecture's bits alone, so one setting (KS_ISA_MAX=avx2 in
 * a test script) does not turn an AArch64 run scalar; "scalar" keeps nothing. An unknown value
 * caps nothing (the library neither prints nor fails on its environment), so what was
 * dispatched is shown where it matters: ks-bench prints ks__isa_string(), and test_cpuinfo,
 * which scripts/test's capped pass runs too, fails if a bit above the cap gets through. */
uint32_t ks__isa_cap(const char *level) {
    enum {
        X86 =
            KS_ISA_AVX2 | KS_ISA_AVX_VNNI | KS_ISA_AVX512 | KS_ISA_AVX512_VNNI | KS_ISA_AVX512_VBMI,
        ARM = KS_ISA_NEON | KS_ISA_NEON_FP16 | KS_ISA_NEON_DOT,
        WASM = KS_ISA_WASM_SIMD128
    };
    static const struct {
        const char *name;
        uint32_t keep;
    } levels[] = {
        {"scalar", 0},
        {"avx2", WASM | ARM | KS_ISA_AVX2},
        {"avxvnni", WASM | ARM | KS_ISA_AVX2 | KS_ISA_AVX_VNNI},
        {"avx512", WASM | ARM | KS_ISA_AVX2 | KS_ISA_AVX_VNNI | KS_ISA_AVX512},
        {"avx512vnni",
         WASM | ARM | KS_ISA_AVX2 | KS_ISA_AVX_VNNI | KS_ISA_AVX512 | KS_ISA_AVX512_VNNI},
        {"neon", WASM | X86 | KS_ISA_NEON},
        {"neonfp16", WASM | X86 | KS_ISA_NEON | KS_ISA_NEON_FP16},
        {"neondot", WASM | X86 | KS_ISA_NEON | KS_ISA_NEON_DOT},
        {"simd128", X86 | ARM | KS_ISA_WASM_SIMD128},
    };
    if (!level || !level[0]) return ~0u;
    for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++)
        if (!strcasecmp(level, levels[i].name)) return levels[i].keep;
    return ~0u;
}

static void detect_once(void) {
    const char *force = getenv("KS_FORCE_SCALAR");
    uint32_t isa = (force && force[0] && strcmp(force, "0") != 0) ? 0 : detect();
    isa &= ks__isa_cap(getenv("KS_ISA_MAX"));
    snprintf(g_name, sizeof(g_name), "unknown");
#if KS_X86
    unsigned regs[12];
    if ((unsigned)__get_cpuid_max(0x80000000u, NULL) >= 0x80000004u) {
        for (unsigned i = 0; i < 3; i++)
            __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2],
                        &regs[4 * i + 3]);
        char brand[49];
        memcpy(brand, regs, 48);
        brand[48] = 0;
        const char *p = brand;
        while (*p == ' ')
            p++;
        snprintf(g_name, sizeof(g_name), "%s", p);
    }
#elif defined(__aarch64__)
    snprintf(g_name, sizeof(g_name), "aarch64");
#elif defined(__wasm__)
    snprintf(g_name, sizeof(g_name), "wasm32");
#endif
    g_isa = isa;
}

static void init(void) {
    ks__once(&g_isa_once, detect_once);
}

uint32_t ks__cpu_isa(void) {
    init();
    return g_isa;
}

const char *ks__cpu_name(void) {
    init();
    return g_name;
}

void ks__isa_string(uint32_t isa, char *buf, size_t cap) {
    static const struct {
        uint32_t bit;
        const char *name;
    } names[] = {{KS_ISA_AVX2, "avx2"},
                 {KS_ISA_AVX512, "avx512"},
                 {KS_ISA_AVX512_VNNI, "avx512vnni"},
                 {KS_ISA_AVX512_VBMI, "avx512vbmi"},
                 {KS_ISA_AVX_VNNI, "avxvnni"},
                 {KS_ISA_NEON, "neon"},
                 {KS_ISA_NEON_FP16, "fp16"},
                 {KS_ISA_NEON_DOT, "dotprod"},
                 {KS_ISA_WASM_SIMD128, "simd128"}};
    size_t len = 0;
    if (cap) buf[0] = 0;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (!(isa & names[i].bit)) continue;
        int n =
            snprintf(buf + len, cap > len ? cap - len : 0, "%s%s", len ? "," : "", names[i].name);
        if (n > 0) len += (size_t)n;
        if (len >= cap) break;
    }
    if (cap && !buf[0]) snprintf(buf, cap, "scalar");
}
