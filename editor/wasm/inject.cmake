# Adds editor/wasm to an Emscripten configure of the top-level project without editing it:
# scripts/editor passes -DCMAKE_PROJECT_kestrel_INCLUDE=<this file>, which runs right after the
# top level's project() call; the include of editor/wasm/CMakeLists.txt is deferred to the end of
# the top-level directory, once the engine, tasks, effects and renderer targets exist (CMake
# refuses a deferred add_subdirectory, so that file is written to work when included too).
# A deferred call expands its arguments when it runs (where CMAKE_CURRENT_LIST_DIR is the top
# level), so the path is expanded now, through EVAL.
if(EMSCRIPTEN)
  cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY \"${CMAKE_SOURCE_DIR}\" CALL include
    \"${CMAKE_CURRENT_LIST_DIR}/CMakeLists.txt\")")
endif()
