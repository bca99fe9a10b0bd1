# Installs a build tree into a fresh prefix and builds consumer/consumer.c against it three ways
# (pkg-config shared, pkg-config static, find_package shared + static), then runs each build.
#   cmake -DBUILD=<build dir> -DWORK=<scratch dir> -DSRC=<tests/install> -DCC=<C compiler>
#         -DLIBDIR=<CMAKE_INSTALL_LIBDIR> -DGENERATOR=<cmake generator> -DSAN_FLAGS="<flags>"
#         -DMODEL=<.ksm> -DIMAGE=<photo> -P run_install_test.cmake
foreach(v BUILD WORK SRC CC LIBDIR GENERATOR MODEL IMAGE)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "run_install_test: -D${v}= is required")
  endif()
endforeach()
separate_arguments(san UNIX_COMMAND "${SAN_FLAGS}")

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message(STATUS "${what}:\n${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "FAILED (${rc}): ${what}\n  command: ${ARGN}")
  endif()
  set(last_out "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
run("install" ${CMAKE_COMMAND} --install ${BUILD} --prefix ${prefix})

# The layout promised by docs/install.md.
set(lib ${prefix}/${LIBDIR})
foreach(f include/kestrel/kestrel.h include/kestrel/engine.h include/kestrel/pipeline.h
    include/kestrel/face.h include/kestrel/effect.h ${LIBDIR}/libkestrel.a
    ${LIBDIR}/pkgconfig/kestrel.pc ${LIBDIR}/cmake/Kestrel/KestrelConfig.cmake
    ${LIBDIR}/cmake/Kestrel/KestrelConfigVersion.cmake ${LIBDIR}/cmake/Kestrel/KestrelTargets.cmake
    bin/ks-convert bin/ks-run bin/ks-inspect)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
set(shared OFF)
if(EXISTS ${lib}/libkestrel.so)
  set(shared ON)
  file(READ_SYMLINK ${lib}/libkestrel.so soname_link)
  if(NOT soname_link STREQUAL "libkestrel.so.0")
    message(FATAL_ERROR "libkestrel.so -> ${soname_link}, expected libkestrel.so.0 (SOVERSION 0)")
  endif()
endif()
set(bundles ${prefix}/share/kestrel/bundles)
if(NOT EXISTS ${bundles}/face_detector_short.ksb)
  message(STATUS "SKIP: the default bundles were not built (scripts/setup fetches the models)")
  file(REMOVE_RECURSE ${WORK})
  return() # ctest sees the SKIP line (SKIP_REGULAR_EXPRESSION)
endif()

# Every installed header compiles alone against the installed include dir only (no internal
# header leaks into the public ones).
file(GLOB headers RELATIVE ${prefix}/include ${prefix}/include/kestrel/*.h)
foreach(h ${headers})
  file(WRITE ${WORK}/hdr.c "#include <${h}>\nint main(void) { return 0; }\n")
  run("header ${h}" ${CC} -std=c99 -pedantic -Wall -Werror -I${prefix}/include -c ${WORK}/hdr.c
    -o ${WORK}/hdr.o)
endforeach()

set(args ${MODEL} ${IMAGE} ${bundles})
set(env ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${lib}/pkgconfig)

# 1. pkg-config, shared library
run("pkg-config --cflags --libs" ${env} pkg-config --cflags --libs kestrel)
string(STRIP "${last_out}" pc_flags)
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
if(shared)
  run("cc (pkg-config, shared)" ${CC} ${san} ${SRC}/consumer/consumer.c ${pc_flags} -lstb
    -o ${WORK}/consumer_pc_shared)
  run("consumer_pc_shared" ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${lib}
    ${WORK}/consumer_pc_shared ${args})
endif()

# 2. pkg-config --static, the archive named explicitly (-lkestrel would pick the .so)
run("pkg-config --static --libs" ${env} pkg-config --static --cflags --libs kestrel)
string(STRIP "${last_out}" pc_flags)
string(REPLACE "-lkestrel" "${lib}/libkestrel.a" pc_flags "${pc_flags}")
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
run("cc (pkg-config, static)" ${CC} ${san} ${SRC}/consumer/consumer.c ${pc_flags} -lstb
  -o ${WORK}/consumer_pc_static)
run("consumer_pc_static" ${WORK}/consumer_pc_static ${args})

# 3. find_package(Kestrel): kestrel::kestrel and kestrel::kestrel_static
string(REPLACE ";" " " san_str "${san}")
run("configure consumer project" ${CMAKE_COMMAND} -S ${SRC}/consumer -B ${WORK}/cmake -G ${GENERATOR}
  -DCMAKE_C_COMPILER=${CC} -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
  "-DCMAKE_C_FLAGS=${san_str}" "-DCMAKE_EXE_LINKER_FLAGS=${san_str}")
run("build consumer project" ${CMAKE_COMMAND} --build ${WORK}/cmake)
run("consumer_static (find_package)" ${WORK}/cmake/consumer_static ${args})
if(shared)
  run("consumer_shared (find_package)" ${WORK}/cmake/consumer_shared ${args})
endif()

file(REMOVE_RECURSE ${WORK})
message(STATUS "install test: all consumers built and ran")
