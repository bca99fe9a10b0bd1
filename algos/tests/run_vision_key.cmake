# ctest: ks-vision with an encrypted model (ks-protect), end to end through the command line.
#   cmake -DVISION=ks-vision -DPROTECT=ks-protect -DBUNDLES=dir -DIMAGE=photo -DWORK=dir -P this
# The encrypted face detector model with --key-file prints exactly the plain model's JSON;
# without --key-file, and with another key, ks-vision exits 1 with a message saying so.
# Prints "run_vision_key: skipped" (the test's SKIP_REGULAR_EXPRESSION) when the bundles are not
# built.
set(model ${BUNDLES}/ksm/face_detection_short_range.ksm)
if(NOT EXISTS ${model} OR NOT EXISTS ${BUNDLES}/face_detector_short.ksb OR NOT EXISTS ${IMAGE})
  message("run_vision_key: skipped: ${model} or ${IMAGE} missing (build the ks_bundles target)")
  return()
endif()
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(ENV{KESTREL_MODELS_DIR} ${BUNDLES})

function(run expect_rc out_var err_var)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL expect_rc)
    message(FATAL_ERROR "'${ARGN}' exited ${rc}, expected ${expect_rc}:\n${out}\n${err}")
  endif()
  set(${out_var} "${out}" PARENT_SCOPE)
  set(${err_var} "${err}" PARENT_SCOPE)
endfunction()

run(0 o e ${PROTECT} keygen ${WORK}/app.key)
run(0 o e ${PROTECT} keygen ${WORK}/other.key)
run(0 o e ${PROTECT} encrypt --key-file ${WORK}/app.key ${model} ${WORK}/fd.enc.ksm)

run(0 plain e ${VISION} face_detect ${IMAGE} --json)
run(0 enc e ${VISION} face_detect ${IMAGE} --json --model ${WORK}/fd.enc.ksm
    --key-file ${WORK}/app.key)
if(NOT plain STREQUAL enc OR NOT plain MATCHES "\"faces\":\\[{")
  message(FATAL_ERROR "encrypted model output differs or has no face:\n${plain}\n${enc}")
endif()

run(1 o err ${VISION} face_detect ${IMAGE} --model ${WORK}/fd.enc.ksm)
if(NOT err MATCHES "needs its key" OR NOT err MATCHES "--key-file")
  message(FATAL_ERROR "no key: unclear message:\n${err}")
endif()
run(1 o err ${VISION} face_detect ${IMAGE} --model ${WORK}/fd.enc.ksm
    --key-file ${WORK}/other.key)
if(NOT err MATCHES "does not open")
  message(FATAL_ERROR "wrong key: unclear message:\n${err}")
endif()
file(REMOVE_RECURSE ${WORK})
message("run_vision_key: encrypted model output identical; no key and wrong key refused")
