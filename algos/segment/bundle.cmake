# Selfie segmentation bundles from the pinned MediaPipe models (models/segmentation, fetched by
# scripts/setup): bundles/selfie_segmenter.ksb and bundles/selfie_segmenter_landscape.ksb.
include(${CMAKE_CURRENT_LIST_DIR}/../bundle_tool/task_bundle.cmake)
set(seg_models ${CMAKE_SOURCE_DIR}/models/segmentation)
ks_task_bundle(NAME selfie_segmenter
  GRAPH ${CMAKE_CURRENT_LIST_DIR}/selfie_segmenter_general.json
  MODELS selfie_segmentation=${seg_models}/selfie_segmentation.tflite)
ks_task_bundle(NAME selfie_segmenter_landscape
  GRAPH ${CMAKE_CURRENT_LIST_DIR}/selfie_segmenter_landscape.json
  MODELS selfie_segmentation_landscape=${seg_models}/selfie_segmentation_landscape.tflite)
