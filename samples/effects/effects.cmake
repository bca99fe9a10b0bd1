# Sample AR effect packages. Included from samples/CMakeLists.txt (after effects_format/, so the
# ks-effect target exists):
#
#     include(${CMAKE_CURRENT_SOURCE_DIR}/effects/effects.cmake)
#
# For every samples/effects/<name>/ holding a manifest.json, zips the folder's files (committed
# assets made by scripts/make_effect_assets.py; the build does not need Python) into
# ${CMAKE_BINARY_DIR}/effects/<name>.kfx with manifest.json at the zip root, validates the
# package with `ks-effect validate` before publishing it, and adds a ctest `effect_sample_<name>`
# (label `ar`) that validates the built package again. All packages hang off the `ks_effects`
# target, which is part of ALL.
set(KS_EFFECTS_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR})
set(KS_EFFECTS_OUTPUT_DIR ${CMAKE_BINARY_DIR}/effects)
# Fixed timestamp for every zip entry, so the same sources give byte-identical packages.
set(KS_EFFECTS_MTIME "2026-01-01 00:00:00 UTC")

if(NOT TARGET ks_effects)
  add_custom_target(ks_effects ALL)
endif()

file(GLOB ks_effect_names LIST_DIRECTORIES true RELATIVE ${KS_EFFECTS_SOURCE_DIR}
  ${KS_EFFECTS_SOURCE_DIR}/*)
list(SORT ks_effect_names)
foreach(ks_effect_name IN LISTS ks_effect_names)
  set(ks_effect_dir ${KS_EFFECTS_SOURCE_DIR}/${ks_effect_name})
  if(NOT IS_DIRECTORY ${ks_effect_dir} OR NOT EXISTS ${ks_effect_dir}/manifest.json)
    continue()
  endif()
  # Relative paths become the zip entry names; CONFIGURE_DEPENDS re-globs when files are added.
  file(GLOB_RECURSE ks_effect_files CONFIGURE_DEPENDS RELATIVE ${ks_effect_dir}
    ${ks_effect_dir}/*)
  list(SORT ks_effect_files)
  list(REMOVE_ITEM ks_effect_files manifest.json)
  list(PREPEND ks_effect_files manifest.json)
  set(ks_effect_deps)
  foreach(f IN LISTS ks_effect_files)
    list(APPEND ks_effect_deps ${ks_effect_dir}/${f})
  endforeach()

  set(ks_effect_out ${KS_EFFECTS_OUTPUT_DIR}/${ks_effect_name}.kfx)
  # Build into a temporary name and rename only after validation, so a package that fails
  # validation never appears as an up-to-date output.
  set(ks_effect_tmp ${KS_EFFECTS_OUTPUT_DIR}/${ks_effect_name}.kfx.part)
  set(ks_effect_validate)
  set(ks_effect_tool)
  if(TARGET ks-effect)
    set(ks_effect_validate COMMAND $<TARGET_FILE:ks-effect> validate ${ks_effect_tmp})
    set(ks_effect_tool ks-effect)
  endif()
  add_custom_command(OUTPUT ${ks_effect_out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${KS_EFFECTS_OUTPUT_DIR}
    COMMAND ${CMAKE_COMMAND} -E rm -f ${ks_effect_tmp}
    COMMAND ${CMAKE_COMMAND} -E tar cf ${ks_effect_tmp} --format=zip
      "--mtime=${KS_EFFECTS_MTIME}" ${ks_effect_files}
    ${ks_effect_validate}
    COMMAND ${CMAKE_COMMAND} -E rename ${ks_effect_tmp} ${ks_effect_out}
    WORKING_DIRECTORY ${ks_effect_dir}
    DEPENDS ${ks_effect_deps} ${ks_effect_tool}
    COMMENT "Packaging sample effect ${ks_effect_name}.kfx"
    VERBATIM)
  add_custom_target(ks_effect_${ks_effect_name} DEPENDS ${ks_effect_out})
  add_dependencies(ks_effects ks_effect_${ks_effect_name})

  if(KS_BUILD_TESTS AND TARGET ks-effect)
    add_test(NAME effect_sample_${ks_effect_name}
      COMMAND ks-effect validate ${ks_effect_out})
    set_tests_properties(effect_sample_${ks_effect_name} PROPERTIES LABELS ar)
  endif()
endforeach()
