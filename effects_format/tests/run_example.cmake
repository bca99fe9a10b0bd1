# Builds the documented example package with make_kfx.py and checks it with ks-effect.
execute_process(COMMAND ${PY} ${GEN} ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "make_kfx.py failed (${rc})")
endif()
foreach(cmd validate info)
  execute_process(COMMAND ${TOOL} ${cmd} ${OUT} RESULT_VARIABLE rc OUTPUT_VARIABLE out
    ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ks-effect ${cmd} failed (${rc})")
  endif()
endforeach()
