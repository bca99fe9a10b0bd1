# Pose landmarker bundles: pose_landmarker_{lite,full,heavy}.ksb in ${CMAKE_BINARY_DIR}/bundles,
# each = pose_detection + one pose_landmark variant + algos/pose/pose_landmarker.json.
# Models come from ${CMAKE_SOURCE_DIR}/models/pose (scripts/setup); missing ones skip a bundle.
include(${CMAKE_CURRENT_LIST_DIR}/../bundle_tool/task_bundle.cmake)
set(_pose_models ${CMAKE_SOURCE_DIR}/models/pose)
foreach(variant lite full heavy)
  ks_task_bundle(NAME pose_landmarker_${variant}
    GRAPH ${CMAKE_CURRENT_LIST_DIR}/pose_landmarker.json
    MODELS pose_detection=${_pose_models}/pose_detection.tflite
           pose_landmark=${_pose_models}/pose_landmark_${variant}.tflite)
endforeach()
