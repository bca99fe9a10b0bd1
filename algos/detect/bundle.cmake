# Object detection bundles (COCO-80) from the staged ONNX models in ../shared/data when present:
# bundles/object_detector_yolox.ksb (the default) and bundles/object_detector_nanodet.ksb. Neither
# model is pinned in models/ (no registry package ships a COCO detector), so on a machine without
# ../shared/data they are skipped and users pass their own bundle (docs/tasks.md).
include(${CMAKE_CURRENT_LIST_DIR}/../bundle_tool/task_bundle.cmake)
set(det_data ${CMAKE_SOURCE_DIR}/../shared/data/object_detection)
set(det_labels ${det_data}/coco.names)
if(NOT EXISTS ${det_labels})
  set(det_labels ${CMAKE_CURRENT_LIST_DIR}/coco80.names)
endif()
# <graph and bundle suffix>:<model and config stem>
foreach(pair yolox:yolox_nano nanodet:nanodet_m)
  string(REPLACE ":" ";" kv ${pair})
  list(GET kv 0 kind)
  list(GET kv 1 stem)
  ks_task_bundle(NAME object_detector_${kind}
    GRAPH ${CMAKE_CURRENT_LIST_DIR}/object_detector_${kind}.json
    MODELS detector=${det_data}/${stem}.onnx
    LABELS labels=${det_labels}
    CONFIGS detector_config=${CMAKE_CURRENT_LIST_DIR}/${stem}.json)
endforeach()
