# Cross build for 64-bit Arm Linux (AArch64) with Debian's cross toolchain, tests run under QEMU
# user-mode emulation:
#
#   apt-get install gcc-aarch64-linux-gnu g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
#   dpkg --add-architecture arm64 && apt-get update && apt-get install libcmocka-dev:arm64
#   cmake -S . -B build/arm64 -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake [-DKS_QEMU_CPU=cortex-a53]
#   ctest --test-dir build/arm64
#
# scripts/test-arm64 does all of this. cmocka comes from Debian's arm64 package through dpkg
# multiarch (/usr/lib/aarch64-linux-gnu, header shared with the host package in /usr/include),
# which Debian's cross gcc searches by default; the C library comes from the cross sysroot
# /usr/aarch64-linux-gnu.
#
# KS_QEMU_CPU picks the emulated CPU: `max` (every extension QEMU knows: fp16, dotprod, ...) or a
# real core such as `cortex-a53` (ARMv8.0: no fp16 arithmetic, no dotprod) to exercise the
# fallbacks. Changing it needs only a re-configure, not a rebuild.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(KS_CROSS_TRIPLE aarch64-linux-gnu)
set(KS_CROSS_SYSROOT /usr/${KS_CROSS_TRIPLE})

set(CMAKE_C_COMPILER ${KS_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${KS_CROSS_TRIPLE}-g++) # only for the public-header C++ compile check

# Headers and libraries come from the cross sysroot or from multiarch dirs under / (the
# aarch64-linux-gnu library architecture keeps host x86-64 libraries out); programs are host ones.
set(CMAKE_FIND_ROOT_PATH ${KS_CROSS_SYSROOT} /)
set(CMAKE_LIBRARY_ARCHITECTURE ${KS_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(KS_QEMU_CPU max CACHE STRING "CPU emulated by qemu-aarch64 when running tests (max, cortex-a53, ...)")
find_program(KS_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(KS_QEMU_AARCH64)
  # The sysroot's libc must also win over the multiarch libc6:arm64 (a cmocka dependency) that
  # its ld.so would otherwise find in /lib/aarch64-linux-gnu: a loader and a libc from different
  # glibc builds hang in pthread_create.
  set(CMAKE_CROSSCOMPILING_EMULATOR ${KS_QEMU_AARCH64} -L ${KS_CROSS_SYSROOT}
    -E LD_LIBRARY_PATH=${KS_CROSS_SYSROOT}/lib -cpu ${KS_QEMU_CPU})
endif()
