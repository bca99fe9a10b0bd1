# Registering cmocka executables with ctest (docs/testing.md).
#
# ks_add_cmocka_test(NAME SOURCE LABELS l1;l2 [SANITIZED_SUBSET t1 t2 ...])
#
# Without SANITIZED_SUBSET: one ctest test NAME running the whole executable.
#
# With SANITIZED_SUBSET (for the few test files whose cases run real models end to end and take
# minutes): one ctest test per cmocka case, NAME.<case> (the case names are read from the
# source's cmocka_unit_test(...) lines), each running the executable with KS_TEST_FILTER=<case>
# (the test's main passes it to cmocka_set_test_filter). Per-case tests spread over ctest's jobs
# instead of holding one core for the whole file. In a sanitizer build only the cases listed
# after SANITIZED_SUBSET are registered: the others exercise no code the listed ones and the
# Release build do not, and under ASan+UBSan each takes many minutes. Set
# KS_SANITIZED_FULL=ON to register every case in a sanitizer build too.
option(KS_SANITIZED_FULL "Sanitizer builds register every case of the split test files" OFF)

function(ks_add_cmocka_test name src)
  cmake_parse_arguments(arg "" "" "LABELS;SANITIZED_SUBSET" ${ARGN})
  if(NOT arg_SANITIZED_SUBSET)
    add_test(NAME ${name} COMMAND ${name})
    set_tests_properties(${name} PROPERTIES LABELS "${arg_LABELS}" SKIP_RETURN_CODE 77)
    return()
  endif()
  file(STRINGS ${src} lines REGEX "cmocka_unit_test[a-z_]*\\(")
  set(cases "")
  foreach(line IN LISTS lines)
    string(REGEX MATCHALL "cmocka_unit_test[a-z_]*\\(([A-Za-z0-9_]+)" found "${line}")
    foreach(m IN LISTS found)
      string(REGEX REPLACE ".*\\(" "" c "${m}")
      list(APPEND cases ${c})
    endforeach()
  endforeach()
  if(NOT cases)
    message(FATAL_ERROR "${src}: no cmocka_unit_test(...) cases found")
  endif()
  foreach(c IN LISTS arg_SANITIZED_SUBSET)
    if(NOT c IN_LIST cases)
      message(FATAL_ERROR "${src}: SANITIZED_SUBSET names '${c}', which is not a case")
    endif()
  endforeach()
  foreach(c IN LISTS cases)
    if(KS_SAN_FLAGS AND NOT KS_SANITIZED_FULL AND NOT c IN_LIST arg_SANITIZED_SUBSET)
      continue()
    endif()
    add_test(NAME ${name}.${c} COMMAND ${name})
    set_tests_properties(${name}.${c} PROPERTIES LABELS "${arg_LABELS}" SKIP_RETURN_CODE 77
      ENVIRONMENT KS_TEST_FILTER=${c})
  endforeach()
endfunction()
