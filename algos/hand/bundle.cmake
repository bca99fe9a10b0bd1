# Hand landmarker bundles: hand_landmarker_{lite,full}.ksb in ${CMAKE_BINARY_DIR}/bundles, each =
# palm_detection_<v> + hand_landmark_<v> + algos/hand/hand_landmarker.json (as MediaPipe pairs
# them by model_complexity). Models come from ${CMAKE_SOURCE_DIR}/models/hand (scripts/setup);
# a missing model skips its bundle.
if(NOT TARGET ks_bundles)
  add_custom_target(ks_bundles ALL)
endif()
if(TARGET ks-convert AND TARGET ks-bundle)
  set(_hand_models ${CMAKE_SOURCE_DIR}/models/hand)
  set(_hand_work ${CMAKE_BINARY_DIR}/bundles/work/hand)
  set(_hand_graph ${CMAKE_CURRENT_LIST_DIR}/hand_landmarker.json)
  foreach(variant lite full)
    set(_palm ${_hand_models}/palm_detection_${variant}.tflite)
    set(_lm ${_hand_models}/hand_landmark_${variant}.tflite)
    if(NOT EXISTS ${_palm} OR NOT EXISTS ${_lm})
      message(STATUS "hand_landmarker_${variant}.ksb skipped: ${_palm} or ${_lm} not found "
                     "(scripts/setup)")
      continue()
    endif()
    set(_ksb ${CMAKE_BINARY_DIR}/bundles/hand_landmarker_${variant}.ksb)
    foreach(m palm_detection_${variant} hand_landmark_${variant})
      add_custom_command(OUTPUT ${_hand_work}/${m}.ksm
        COMMAND ${CMAKE_COMMAND} -E make_directory ${_hand_work}
        COMMAND $<TARGET_FILE:ks-convert> ${_hand_models}/${m}.tflite ${_hand_work}/${m}.ksm
                --quiet
        DEPENDS ks-convert ${_hand_models}/${m}.tflite
        COMMENT "Converting ${m}.tflite" VERBATIM)
    endforeach()
    add_custom_command(OUTPUT ${_ksb}
      COMMAND $<TARGET_FILE:ks-bundle> create ${_ksb} --graph ${_hand_graph}
              --model palm_detection=${_hand_work}/palm_detection_${variant}.ksm
              --model hand_landmark=${_hand_work}/hand_landmark_${variant}.ksm
      DEPENDS ks-bundle ${_hand_graph} ${_hand_work}/palm_detection_${variant}.ksm
              ${_hand_work}/hand_landmark_${variant}.ksm
      COMMENT "Bundling hand_landmarker_${variant}.ksb" VERBATIM)
    add_custom_target(ks_bundle_hand_${variant} DEPENDS ${_ksb})
    add_dependencies(ks_bundles ks_bundle_hand_${variant})
  endforeach()
endif()
