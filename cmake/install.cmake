# The installable SDK (docs/install.md): one combined library for consumers, libkestrel.so.<major>
# and libkestrel.a, holding the engine, the pipeline runtime, the vision blocks, the task APIs,
# the effect-package reader and the AR renderer (when built), plus kestrel.pc and KestrelConfig.cmake (find_package(Kestrel) ->
# kestrel::kestrel, kestrel::kestrel_static).
#
# Why one library and not one per layer: the layers call each other through ks__ internals that
# are hidden in a shared library (C_VISIBILITY_PRESET hidden, only KS_API is exported), so split
# shared libraries would have to export internals; one SONAME also rules out version skew between
# layers. Static consumers lose nothing: the linker only pulls the archive members they use.
#
# Included by the top-level CMakeLists.txt after every subdirectory, so all parts exist here.
# The per-layer static libraries (kestrel_static, kestrel_pipeline, ...) stay build-tree only:
# tests and tools use them and may reach internals.

set(KS_SDK_PARTS kestrel_obj kestrel_pipeline kestrel_vision kestrel_tasks kestrel_effects
  kestrel_ar kestrel_delivery)
set(KS_SDK_OBJECTS "")
set(KS_SDK_INCLUDES "")
foreach(part ${KS_SDK_PARTS})
  if(TARGET ${part})
    list(APPEND KS_SDK_OBJECTS $<TARGET_OBJECTS:${part}>)
  endif()
endforeach()
foreach(dir engine pipeline algos effects_format ar_render delivery)
  if(EXISTS ${CMAKE_SOURCE_DIR}/${dir}/include/kestrel)
    list(APPEND KS_SDK_INCLUDES $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/${dir}/include>)
  endif()
endforeach()

# Private dependencies of the objects above; consumers of the shared library never see them, a
# static consumer links them (kestrel.pc Libs.private, KestrelConfig.cmake find_dependency).
# The kestrel::dep_* names are re-created by KestrelConfig.cmake on the consumer's machine.
find_package(Threads REQUIRED)
find_package(ZLIB)
set(KS_SDK_DEPS Threads::Threads)
set(KS_SDK_PC_LIBS "")
macro(ks_sdk_dep name lib)
  if(NOT TARGET kestrel::dep_${name})
    add_library(kestrel::dep_${name} UNKNOWN IMPORTED)
    set_target_properties(kestrel::dep_${name} PROPERTIES IMPORTED_LOCATION ${lib})
  endif()
  list(APPEND KS_SDK_DEPS kestrel::dep_${name})
  list(APPEND KS_SDK_PC_LIBS -l${name})
  list(APPEND KS_SDK_DEP_NAMES ${name})
endmacro()
set(KS_SDK_DEP_NAMES "")
set(KS_SDK_NEEDS_ZLIB OFF)
if(TARGET kestrel_pipeline OR TARGET kestrel_effects)
  ks_sdk_dep(cjson ${CJSON_LIB})
endif()
if(TARGET kestrel_effects)
  ks_sdk_dep(stb ${STB_LIB})
  list(APPEND KS_SDK_DEPS ZLIB::ZLIB)
  list(APPEND KS_SDK_PC_LIBS -lz)
  set(KS_SDK_NEEDS_ZLIB ON)
endif()
if(KS_WITH_SODIUM)
  ks_sdk_dep(sodium ${KS_SODIUM_LIBRARY})
endif()
if(TARGET kestrel_ar AND KS_AR_GLES)
  # The AR renderer draws with the caller's GLES 3 context (no EGL in the library).
  ks_sdk_dep(GLESv2 ${KS_GLESV2_LIB})
endif()
list(APPEND KS_SDK_DEPS m)
list(APPEND KS_SDK_PC_LIBS -lm -pthread)

# The Vulkan backend (engine/CMakeLists.txt): linked into the static library; the shared one
# opens libkestrel_vulkan.so beside it when built with KS_VULKAN_MODULE (docs/vulkan.md, "The
# Vulkan module"), else links it in too.
set(KS_SDK_STATIC_OBJECTS ${KS_SDK_OBJECTS})
set(KS_SDK_SHARED_OBJECTS ${KS_SDK_OBJECTS})
if(TARGET kestrel_vk_obj)
  list(APPEND KS_SDK_STATIC_OBJECTS $<TARGET_OBJECTS:kestrel_vk_obj>)
  if(TARGET kestrel_vkload_obj)
    list(APPEND KS_SDK_SHARED_OBJECTS $<TARGET_OBJECTS:kestrel_vkload_obj>)
  else()
    list(APPEND KS_SDK_SHARED_OBJECTS $<TARGET_OBJECTS:kestrel_vk_obj>)
  endif()
endif()

add_library(kestrel_sdk_static STATIC ${KS_SDK_STATIC_OBJECTS})
target_include_directories(kestrel_sdk_static INTERFACE ${KS_SDK_INCLUDES}
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(kestrel_sdk_static INTERFACE ${KS_SDK_DEPS})
# Build-tree copies live in sdk/ so they do not clash with engine/libkestrel.*.
set_target_properties(kestrel_sdk_static PROPERTIES OUTPUT_NAME kestrel EXPORT_NAME kestrel_static
  ARCHIVE_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/sdk)
set(KS_SDK_TARGETS kestrel_sdk_static)

if(KS_BUILD_SHARED)
  add_library(kestrel_sdk SHARED ${KS_SDK_SHARED_OBJECTS})
  if(TARGET kestrel_vulkan)
    # the module beside the build tree's copy (sdk/), as it is installed beside the library
    add_custom_command(TARGET kestrel_sdk POST_BUILD
      COMMAND ${CMAKE_COMMAND} -E copy_if_different $<TARGET_FILE:kestrel_vulkan>
        ${CMAKE_BINARY_DIR}/sdk/
      VERBATIM)
    add_dependencies(kestrel_sdk kestrel_vulkan)
  endif()
  target_include_directories(kestrel_sdk INTERFACE ${KS_SDK_INCLUDES}
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(kestrel_sdk PRIVATE ${KS_SDK_DEPS})
  # -z defs: a missing private dependency is a link error here, not a consumer's surprise.
  target_link_options(kestrel_sdk PRIVATE $<$<PLATFORM_ID:Linux>:LINKER:-z,defs>)
  if(KS_SAN_FLAGS)
    # Sanitizer runtimes are linked into the executable, not the shared library.
    target_link_options(kestrel_sdk PRIVATE $<$<PLATFORM_ID:Linux>:LINKER:-z,undefs>)
  endif()
  set_target_properties(kestrel_sdk PROPERTIES OUTPUT_NAME kestrel EXPORT_NAME kestrel
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
    LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/sdk)
  list(APPEND KS_SDK_TARGETS kestrel_sdk)
endif()

install(TARGETS ${KS_SDK_TARGETS} EXPORT KestrelTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT Development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT Development)
if(TARGET kestrel_vulkan AND KS_BUILD_SHARED)
  install(TARGETS kestrel_vulkan LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()

# Default task bundles, when they were built (scripts/setup fetched the models): installed into
# share/kestrel/bundles. The library's compiled-in default models dir is the build tree, so
# installed consumers point the tasks here (KESTREL_MODELS_DIR, ks_set_models_dir or model_path;
# kestrel.pc's bundlesdir, KestrelConfig's Kestrel_BUNDLES_DIR).
set(KS_SDK_BUNDLES_DIR ${CMAKE_INSTALL_DATADIR}/kestrel/bundles)
install(CODE "
  file(GLOB ks_bundles \"${CMAKE_BINARY_DIR}/bundles/*.ksb\")
  if(ks_bundles)
    file(INSTALL \${ks_bundles} DESTINATION \"\${CMAKE_INSTALL_PREFIX}/${KS_SDK_BUNDLES_DIR}\")
  endif()" COMPONENT Bundles)

# pkg-config: relocatable (prefix from the .pc file's own location), so `cmake --install
# --prefix` anywhere works. Private deps are Libs.private rather than Requires.private: a shared
# consumer then needs no -dev package of cJSON/libsodium/stb.
set(KS_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH KS_PC_TO_PREFIX /ks_prefix/${KS_PC_DIR} /ks_prefix)
string(REGEX REPLACE "/$" "" KS_PC_TO_PREFIX "${KS_PC_TO_PREFIX}")
string(JOIN " " KS_PC_LIBS_PRIVATE ${KS_SDK_PC_LIBS})
configure_file(${CMAKE_CURRENT_LIST_DIR}/kestrel.pc.in ${CMAKE_BINARY_DIR}/sdk/kestrel.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/sdk/kestrel.pc DESTINATION ${KS_PC_DIR} COMPONENT Development)

# CMake package: KestrelConfig.cmake + version + exported targets (namespace kestrel::).
include(CMakePackageConfigHelpers)
set(KS_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Kestrel)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/KestrelConfig.cmake.in
  ${CMAKE_BINARY_DIR}/sdk/KestrelConfig.cmake INSTALL_DESTINATION ${KS_CMAKE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR KS_SDK_BUNDLES_DIR)
# 0.x: any minor release may change the API/ABI (SOVERSION stays 0); from 1.0 on, the major.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(KS_COMPAT SameMinorVersion)
else()
  set(KS_COMPAT SameMajorVersion)
endif()
write_basic_package_version_file(${CMAKE_BINARY_DIR}/sdk/KestrelConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${KS_COMPAT})
install(EXPORT KestrelTargets NAMESPACE kestrel:: DESTINATION ${KS_CMAKE_DIR}
  COMPONENT Development)
install(FILES ${CMAKE_BINARY_DIR}/sdk/KestrelConfig.cmake
  ${CMAKE_BINARY_DIR}/sdk/KestrelConfigVersion.cmake DESTINATION ${KS_CMAKE_DIR}
  COMPONENT Development)
