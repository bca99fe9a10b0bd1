# Object detection bundles (COCO-80) from the staged ONNX models in ../shared/data when present:
# bundles/object_detector_yolox.ksb (the default) and bundles/object_detector_nanodet.ksb. Neither
# model is pinned in models/ (no registry package ships a COCO detector), so on a machine without
# ../shared/data they are skipped and users pass their own bundle (docs/tasks.md).
include(${CMAKE_CURRENT_LIST_DIR}/../segment/bundle_tool.cmake)
set(det_data ${CMAKE_SOURCE_DIR}/../shared/data/object_detection)
set(det_labels ${det_data}/coco.names)
if(NOT EXISTS ${det_labels})
  set(det_labels ${CMAKE_CURRENT_LIST_DIR}/coco80.names)
endif()
if(EXISTS ${det_data}/yolox_nano.onnx)
  ks_task_bundle(NAME object_detector_yolox
    GRAPH ${CMAKE_CURRENT_LIST_DIR}/object_detector_yolox.json
    MODELS detector=${det_data}/yolox_nano.onnx
    LABELS labels=${det_labels}
    CONFIGS detector_config=${CMAKE_CURRENT_LIST_DIR}/yolox_nano.json)
else()
  message(STATUS "bundle object_detector_yolox: skipped (${det_data}/yolox_nano.onnx not found)")
endif()
if(EXISTS ${det_data}/nanodet_m.onnx)
  ks_task_bundle(NAME object_detector_nanodet
    GRAPH ${CMAKE_CURRENT_LIST_DIR}/object_detector_nanodet.json
    MODELS detector=${det_data}/nanodet_m.onnx
    LABELS labels=${det_labels}
    CONFIGS detector_config=${CMAKE_CURRENT_LIST_DIR}/nanodet_m.json)
else()
  message(STATUS "bundle object_detector_nanodet: skipped (${det_data}/nanodet_m.onnx not found)")
endif()
