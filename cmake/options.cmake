# All Kestrel build options live here (STYLE.md rule 22).
option(KS_WERROR "Treat warnings as errors" OFF)
option(KS_SANITIZE_ADDRESS "Build with AddressSanitizer" OFF)
option(KS_SANITIZE_UNDEFINED "Build with UndefinedBehaviorSanitizer" OFF)
option(KS_SANITIZE_THREAD "Build with ThreadSanitizer" OFF)
option(KS_BUILD_TESTS "Build the test suite" ON)
option(KS_BUILD_TOOLS "Build ks-convert, ks-run, ks-inspect" ON)
option(KS_BUILD_FUZZERS "Build libFuzzer targets (needs clang)" OFF)
option(KS_BUILD_SHARED "Build libkestrel as a shared library too" ON)
