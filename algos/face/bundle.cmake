# Face bundles from the pinned MediaPipe models (models/face_detection, models/face_landmarks,
# fetched by scripts/setup): bundles/face_detector_short.ksb, face_detector_full.ksb,
# face_landmarker.ksb and face_landmarker_attention.ksb. Packed by `ks-vision bundle`, which
# checks each graph with the vision node types registered.
if(NOT TARGET ks_bundles)
  add_custom_target(ks_bundles ALL)
endif()
set(KS_FACE_BUNDLE_DIR ${CMAKE_BINARY_DIR}/bundles)
set(KS_FACE_KSM_DIR ${CMAKE_BINARY_DIR}/bundles/face_models)
file(MAKE_DIRECTORY ${KS_FACE_KSM_DIR})
set(ks_face_src ${CMAKE_SOURCE_DIR}/models)

# ks_face_bundle(NAME n GRAPH json MODELS entry=src.tflite ... [FILES entry=path ...])
function(ks_face_bundle)
  cmake_parse_arguments(B "" "NAME;GRAPH" "MODELS;FILES" ${ARGN})
  # ks-vision is defined after the bundle fragments are included; it exists whenever
  # kestrel_tasks does and tools are on, and COMMAND resolves it at generate time.
  if(NOT TARGET kestrel_tasks OR NOT KS_BUILD_TOOLS OR NOT TARGET ks-convert)
    message(STATUS "bundle ${B_NAME}: skipped (needs KS_BUILD_TOOLS, ks-convert and kestrel_tasks)")
    return()
  endif()
  set(out ${KS_FACE_BUNDLE_DIR}/${B_NAME}.ksb)
  set(args bundle ${out} --graph ${B_GRAPH})
  set(deps ks-vision ${B_GRAPH})
  foreach(m ${B_MODELS})
    string(REPLACE "=" ";" kv ${m})
    list(GET kv 0 entry)
    list(GET kv 1 src)
    if(NOT EXISTS ${src})
      message(STATUS "bundle ${B_NAME}: skipped (${src} is missing; run scripts/setup)")
      return()
    endif()
    get_filename_component(stem ${src} NAME_WE)
    set(ksm ${KS_FACE_KSM_DIR}/${stem}.ksm)
    # Several bundles share a model: convert it once.
    if(NOT TARGET ks_face_ksm_${stem})
      add_custom_command(OUTPUT ${ksm} COMMAND ks-convert ${src} ${ksm} --quiet
        DEPENDS ks-convert ${src} COMMENT "ks-convert ${stem}" VERBATIM)
      add_custom_target(ks_face_ksm_${stem} DEPENDS ${ksm})
    endif()
    list(APPEND args --model ${entry}=${ksm})
    list(APPEND deps ${ksm} ks_face_ksm_${stem})
  endforeach()
  foreach(f ${B_FILES})
    string(REPLACE "=" ";" kv ${f})
    list(GET kv 1 src)
    if(NOT EXISTS ${src})
      message(STATUS "bundle ${B_NAME}: skipped (${src} is missing; run scripts/setup)")
      return()
    endif()
    list(APPEND args --file ${f})
    list(APPEND deps ${src})
  endforeach()
  add_custom_command(OUTPUT ${out} COMMAND ks-vision ${args} DEPENDS ${deps}
    COMMENT "bundle ${B_NAME}.ksb" VERBATIM)
  add_custom_target(ks_bundle_${B_NAME} DEPENDS ${out})
  add_dependencies(ks_bundles ks_bundle_${B_NAME})
endfunction()

set(ks_face_det ${ks_face_src}/face_detection)
set(ks_face_lm ${ks_face_src}/face_landmarks)
set(ks_face_geom
  geometry_pipeline_metadata_landmarks.binarypb=${ks_face_lm}/geometry_pipeline_metadata_landmarks.binarypb)
ks_face_bundle(NAME face_detector_short GRAPH ${CMAKE_CURRENT_LIST_DIR}/face_detector_short.json
  MODELS face_detector=${ks_face_det}/face_detection_short_range.tflite)
ks_face_bundle(NAME face_detector_full GRAPH ${CMAKE_CURRENT_LIST_DIR}/face_detector_full.json
  MODELS face_detector=${ks_face_det}/face_detection_full_range_sparse.tflite)
ks_face_bundle(NAME face_landmarker GRAPH ${CMAKE_CURRENT_LIST_DIR}/face_landmarker.json
  MODELS face_detector_short=${ks_face_det}/face_detection_short_range.tflite
         face_detector_full=${ks_face_det}/face_detection_full_range_sparse.tflite
         face_landmarks=${ks_face_lm}/face_landmark.tflite
  FILES ${ks_face_geom})
ks_face_bundle(NAME face_landmarker_attention
  GRAPH ${CMAKE_CURRENT_LIST_DIR}/face_landmarker_attention.json
  MODELS face_detector_short=${ks_face_det}/face_detection_short_range.tflite
         face_detector_full=${ks_face_det}/face_detection_full_range_sparse.tflite
         face_landmarks=${ks_face_lm}/face_landmark_with_attention.tflite
  FILES ${ks_face_geom})
