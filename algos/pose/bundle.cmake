# Pose landmarker bundles: pose_landmarker_{lite,full,heavy}.ksb in ${CMAKE_BINARY_DIR}/bundles,
# each = pose_detection + one pose_landmark variant + algos/pose/pose_landmarker.json.
# Models come from ${CMAKE_SOURCE_DIR}/models/pose (scripts/setup); missing ones skip a bundle.
if(NOT TARGET ks_bundles)
  add_custom_target(ks_bundles ALL)
endif()
if(TARGET ks-convert AND TARGET ks-bundle)
  set(_pose_models ${CMAKE_SOURCE_DIR}/models/pose)
  set(_pose_work ${CMAKE_BINARY_DIR}/bundles/work/pose)
  set(_pose_graph ${CMAKE_CURRENT_LIST_DIR}/pose_landmarker.json)
  if(EXISTS ${_pose_models}/pose_detection.tflite)
    add_custom_command(OUTPUT ${_pose_work}/pose_detection.ksm
      COMMAND ${CMAKE_COMMAND} -E make_directory ${_pose_work}
      COMMAND $<TARGET_FILE:ks-convert> ${_pose_models}/pose_detection.tflite
              ${_pose_work}/pose_detection.ksm --quiet
      DEPENDS ks-convert ${_pose_models}/pose_detection.tflite
      COMMENT "Converting pose_detection.tflite" VERBATIM)
    foreach(variant lite full heavy)
      set(_src ${_pose_models}/pose_landmark_${variant}.tflite)
      if(NOT EXISTS ${_src})
        message(STATUS "pose_landmarker_${variant}.ksb skipped: ${_src} not found (scripts/setup)")
        continue()
      endif()
      set(_ksm ${_pose_work}/pose_landmark_${variant}.ksm)
      set(_ksb ${CMAKE_BINARY_DIR}/bundles/pose_landmarker_${variant}.ksb)
      add_custom_command(OUTPUT ${_ksm}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${_pose_work}
        COMMAND $<TARGET_FILE:ks-convert> ${_src} ${_ksm} --quiet
        DEPENDS ks-convert ${_src}
        COMMENT "Converting pose_landmark_${variant}.tflite" VERBATIM)
      add_custom_command(OUTPUT ${_ksb}
        COMMAND $<TARGET_FILE:ks-bundle> create ${_ksb} --graph ${_pose_graph}
                --model pose_detection=${_pose_work}/pose_detection.ksm
                --model pose_landmark=${_ksm}
        DEPENDS ks-bundle ${_pose_graph} ${_pose_work}/pose_detection.ksm ${_ksm}
        COMMENT "Bundling pose_landmarker_${variant}.ksb" VERBATIM)
      add_custom_target(ks_bundle_pose_${variant} DEPENDS ${_ksb})
      add_dependencies(ks_bundles ks_bundle_pose_${variant})
    endforeach()
  else()
    message(STATUS "pose bundles skipped: ${_pose_models}/pose_detection.tflite not found")
  endif()
endif()
