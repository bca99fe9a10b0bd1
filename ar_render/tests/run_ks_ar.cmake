# ctest ar_ks_ar_example: builds the worked example package of docs/effects-format.md with
# effects_format/tests/make_kfx.py and renders it with ks-ar on the astronaut photo using the
# committed landmark fixture (every layer kind, a custom shader, parameters).
# Variables: PY, GEN, KS_AR, IMAGE, FIXTURE, WORK.
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${PY} ${GEN} ${WORK}/example.kfx RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make_kfx.py failed (${rc})")
endif()
execute_process(COMMAND ${KS_AR} --effect ${WORK}/example.kfx --image ${IMAGE}
    --landmarks ${FIXTURE} "--param" "lip_color=#8a1538" --param lip_strength=0.7 --no-mask
    --out ${WORK}/example.png
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ks-ar failed (${rc})")
endif()
if(NOT EXISTS ${WORK}/example.png)
  message(FATAL_ERROR "ks-ar wrote no ${WORK}/example.png")
endif()
