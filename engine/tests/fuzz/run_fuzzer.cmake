# Runs one libFuzzer target for SECONDS from a freshly generated synthetic seed corpus.
# Seeds: gen_seeds_ksm (C) for ksm; engine/tests/fuzz/gen_seeds_<FORMAT>.py for the importers.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/seeds ${WORK}/corpus)
if(FORMAT STREQUAL "ksm")
  execute_process(COMMAND ${SEEDGEN_C} ${WORK}/seeds RESULT_VARIABLE rc)
elseif(EXISTS ${SRC}/gen_seeds_${FORMAT}.py)
  execute_process(COMMAND python3 ${SRC}/gen_seeds_${FORMAT}.py ${WORK}/seeds RESULT_VARIABLE rc)
else()
  set(rc 0)
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "seed generation for ${FORMAT} failed")
endif()
execute_process(COMMAND ${FUZZER} -max_total_time=${SECONDS} -rss_limit_mb=2048 -malloc_limit_mb=1024
    -timeout=20 -print_final_stats=1 -artifact_prefix=${WORK}/ ${WORK}/corpus ${WORK}/seeds
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "fuzzer ${FUZZER} found a failure (exit ${rc}); artifacts in ${WORK}")
endif()
