# Hand landmarker bundles: hand_landmarker_{lite,full}.ksb in ${CMAKE_BINARY_DIR}/bundles, each =
# palm_detection_<v> + hand_landmark_<v> + algos/hand/hand_landmarker.json (as MediaPipe pairs
# them by model_complexity). Models come from ${CMAKE_SOURCE_DIR}/models/hand (scripts/setup);
# a missing model skips its bundle.
include(${CMAKE_CURRENT_LIST_DIR}/../bundle_tool/task_bundle.cmake)
set(_hand_models ${CMAKE_SOURCE_DIR}/models/hand)
foreach(variant lite full)
  ks_task_bundle(NAME hand_landmarker_${variant}
    GRAPH ${CMAKE_CURRENT_LIST_DIR}/hand_landmarker.json
    MODELS palm_detection=${_hand_models}/palm_detection_${variant}.tflite
           hand_landmark=${_hand_models}/hand_landmark_${variant}.tflite)
endforeach()
