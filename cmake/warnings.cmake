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

function(ks_target_defaults target)
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:C>:${KS_C_WARNINGS}>)
  set_target_properties(${target} PROPERTIES C_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)
endfunction()
