/* ks__cpu_isa as an AVX-512 machine reports it (linked with -Wl,--wrap=ks__cpu_isa by
 * bench/x86/check-avx512-emulated.sh), so the dispatch takes the emulated AVX-512 path. */
#include <stdint.h>

uint32_t __wrap_ks__cpu_isa(void);
uint32_t __wrap_ks__cpu_isa(void) {
    return (1u << 0) | (1u << 1); /* KS_ISA_AVX2 | KS_ISA_AVX512 */
}
