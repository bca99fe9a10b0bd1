# Face bundles from the pinned MediaPipe models (models/face_detection, models/face_landmarks,
# fetched by scripts/setup): bundles/face_detector_short.ksb, face_detector_full.ksb,
# face_landmarker.ksb and face_landmarker_attention.ksb.
include(${CMAKE_CURRENT_LIST_DIR}/../bundle_tool/task_bundle.cmake)
set(ks_face_src ${CMAKE_SOURCE_DIR}/models)
set(ks_face_det ${ks_face_src}/face_detection)
set(ks_face_lm ${ks_face_src}/face_landmarks)
set(ks_face_geom
  geometry_pipeline_metadata_landmarks.binarypb=${ks_face_lm}/geometry_pipeline_metadata_landmarks.binarypb)
ks_task_bundle(NAME face_detector_short GRAPH ${CMAKE_CURRENT_LIST_DIR}/face_detector_short.json
  MODELS face_detector=${ks_face_det}/face_detection_short_range.tflite)
ks_task_bundle(NAME face_detector_full GRAPH ${CMAKE_CURRENT_LIST_DIR}/face_detector_full.json
  MODELS face_detector=${ks_face_det}/face_detection_full_range_sparse.tflite)
ks_task_bundle(NAME face_landmarker GRAPH ${CMAKE_CURRENT_LIST_DIR}/face_landmarker.json
  MODELS face_detector_short=${ks_face_det}/face_detection_short_range.tflite
         face_detector_full=${ks_face_det}/face_detection_full_range_sparse.tflite
         face_landmarks=${ks_face_lm}/face_landmark.tflite
  FILES ${ks_face_geom})
ks_task_bundle(NAME face_landmarker_attention
  GRAPH ${CMAKE_CURRENT_LIST_DIR}/face_landmarker_attention.json
  MODELS face_detector_short=${ks_face_det}/face_detection_short_range.tflite
         face_detector_full=${ks_face_det}/face_detection_full_range_sparse.tflite
         face_landmarks=${ks_face_lm}/face_landmark_with_attention.tflite
  FILES ${ks_face_geom})
