# All Kestrel build options live here (STYLE.md rule 22).
option(KS_WERROR "Treat warnings as errors" OFF)
option(KS_SANITIZE_ADDRESS "Build with AddressSanitizer" OFF)
option(KS_SANITIZE_UNDEFINED "Build with UndefinedBehaviorSanitizer" OFF)
option(KS_SANITIZE_THREAD "Build with ThreadSanitizer" OFF)
option(KS_SANITIZE_ALL_ISAS
  "Sanitizer builds: also instrument the SIMD kernel directories this CPU cannot run" OFF)
option(KS_BUILD_TESTS "Build the test suite" ON)
option(KS_BUILD_TOOLS "Build ks-convert, ks-run, ks-inspect" ON)
option(KS_BUILD_BENCH "Build kernel microbenchmarks (bench/)" ON)
option(KS_BUILD_SAMPLES "Build the desktop samples (needs libstb-dev)" ON)
option(KS_BUILD_FUZZERS "Build libFuzzer targets (needs clang)" OFF)
option(KS_BUILD_SHARED "Build libkestrel as a shared library too" ON)
# Engine, its tools and tests only (no pipeline/tasks/effects, so no cJSON, zlib or stb): the
# AArch64 cross build under QEMU (scripts/test-arm64) uses it.
option(KS_ENGINE_ONLY "Build only the engine, its tools and its tests" OFF)
# ks-protect: encrypted models (KSME) need libsodium (Debian libsodium-dev); ON when it is found.
find_library(KS_SODIUM_LIBRARY sodium)
find_path(KS_SODIUM_INCLUDE_DIR sodium.h)
if(KS_SODIUM_LIBRARY AND KS_SODIUM_INCLUDE_DIR)
  option(KS_WITH_SODIUM "Encrypted model support (KSME) via libsodium" ON)
else()
  option(KS_WITH_SODIUM "Encrypted model support (KSME) via libsodium" OFF)
endif()
# The AR renderer's OpenGL ES 3 backend (ar_render/src/gles3/); ON when the GLES 3 headers and
# library (Debian libgles-dev) are found. OFF builds the renderer core with the null backend only
# (no GL header or library needed), as on a GLES-less machine; scripts/test builds one so.
find_path(KS_GLES3_INCLUDE GLES3/gl3.h)
find_library(KS_GLESV2_LIB GLESv2)
if(KS_GLES3_INCLUDE AND KS_GLESV2_LIB)
  option(KS_AR_GLES "AR renderer: build the OpenGL ES 3 backend (else the null backend only)" ON)
else()
  option(KS_AR_GLES "AR renderer: build the OpenGL ES 3 backend (else the null backend only)" OFF)
endif()
# Op-pruned builds (docs/size.md, cmake/op_pruning.cmake): register only these IR ops, or the ops
# of these models (converted and listed with the host tools in KS_OPS_TOOLS_DIR). Empty: all ops.
set(KS_OPS "" CACHE STRING "Op-pruned build: IR op names to register (;-list), empty = all")
set(KS_OPS_FROM_MODELS "" CACHE STRING
  "Op-pruned build: models (.ksm/.tflite/.onnx, ;-list) whose ops are registered")
set(KS_OPS_TOOLS_DIR "" CACHE PATH
  "Directory with host ks-convert and ks-inspect (for KS_OPS_FROM_MODELS)")
