# Warning flags applied to every Kestrel target through ks_target_defaults().
set(KS_C_WARNINGS -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
    -Wpointer-arith -Wvla -Wformat=2 -Wno-unused-parameter)
if(CMAKE_C_COMPILER_ID MATCHES "Clang")
  list(APPEND KS_C_WARNINGS -Wno-gnu-zero-variadic-macro-arguments -Wsometimes-uninitialized)
elseif(CMAKE_C_COMPILER_ID STREQUAL "GNU")
  # gcc's -O3 maybe-uninitialized fires on out-parameters set by helpers that return a status
  # first (many false positives). Uninitialized reads are still caught by clang's
  # -Wsometimes-uninitialized in the clang build and by the sanitizers.
  list(APPEND KS_C_WARNINGS -Wno-maybe-uninitialized)
endif()
if(KS_WERROR)
  list(APPEND KS_C_WARNINGS -Werror)
endif()

set(KS_SAN_FLAGS "")
if(KS_SANITIZE_ADDRESS)
  list(APPEND KS_SAN_FLAGS -fsanitize=address -fno-omit-frame-pointer)
endif()
if(KS_SANITIZE_UNDEFINED)
  list(APPEND KS_SAN_FLAGS -fsanitize=undefined -fno-sanitize-recover=undefined)
endif()
if(KS_SANITIZE_THREAD)
  list(APPEND KS_SAN_FLAGS -fsanitize=thread)
endif()
if(KS_BUILD_FUZZERS)
  # Coverage instrumentation for everything, so libFuzzer sees edges inside the library.
  list(APPEND KS_SAN_FLAGS -fsanitize=fuzzer-no-link)
endif()
if(KS_SAN_FLAGS)
  add_compile_options(${KS_SAN_FLAGS})
  add_link_options(${KS_SAN_FLAGS})
endif()

# Sanitizer builds of the SIMD kernel directories (engine/backends/cpu/<isa>/, appended to their
# per-directory flags): AddressSanitizer stays on in full, so every out-of-bounds read or write of
# a kernel is caught; the UBSan checks that instrument every pointer step and array index of the
# fully unrolled microkernels (bounds, pointer-overflow, null, alignment, object-size,
# nonnull-attribute) are off there, and debug info is line tables only. With those checks clang-14
# compiled the heavy kernel files four times slower (x86/avx2/f32_smallc.c: 48 s of CPU with
# them, 12 s without, measured) and made the kernels slow at run time (test_video under ASan:
# 456 s before, 220 s after); what they would catch in intrinsic code shows up anyway: a null or
# misaligned vector access faults (reported by ASan), an out-of-bounds one is ASan's, and every
# kernel is compared with the reference on odd shapes (STYLE.md rule 19). Shift, signed
# overflow, division and float-cast checks stay on. The reference kernels and everything else
# keep the full set.
set(KS_ISA_SAN_FLAGS "")
if(KS_SANITIZE_UNDEFINED)
  list(APPEND KS_ISA_SAN_FLAGS
    -fno-sanitize=bounds,pointer-overflow,null,alignment,object-size,nonnull-attribute)
endif()
if(KS_SAN_FLAGS AND CMAKE_C_COMPILER_ID MATCHES "Clang")
  list(APPEND KS_ISA_SAN_FLAGS -gline-tables-only)
elseif(KS_SAN_FLAGS AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
  list(APPEND KS_ISA_SAN_FLAGS -g1)
endif()

function(ks_target_defaults target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C>:${KS_C_WARNINGS}>)
  set_target_properties(${target} PROPERTIES C_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
endfunction()
