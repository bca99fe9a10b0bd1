# Image classification bundle from the staged quantized MobileNet v2 in ../shared/data when
# present: bundles/classifier_mobilenet_v2.ksb (uint8 input, 1001 ImageNet outputs with
# "background" at 0). Skipped with a message otherwise.
include(${CMAKE_CURRENT_LIST_DIR}/../bundle_tool/task_bundle.cmake)
set(cls_data ${CMAKE_SOURCE_DIR}/../shared/data/classification)
ks_task_bundle(NAME classifier_mobilenet_v2
  GRAPH ${CMAKE_CURRENT_LIST_DIR}/classifier.json
  MODELS classifier=${cls_data}/mobilenet_v2_1.0_224_quant.tflite
  LABELS labels=${cls_data}/imagenet_labels.txt
  CONFIGS classifier_config=${CMAKE_CURRENT_LIST_DIR}/mobilenet_v2_quant.json)
