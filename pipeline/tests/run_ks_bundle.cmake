# ks-bundle end to end (ctest ks_bundle_cli): a bundle of BlazeFace (converted here) plain and
# encrypted with ks-protect. An encrypted model is stored as it is; without --key-file the tool
# writes the bundle and says the model was not checked, with the right key it checks it like a
# plain one, with a wrong key it refuses (and leaves no bundle behind). Skipped (the output says
# "skipped:") without the model or without libsodium.
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
if(NOT EXISTS "${TFLITE}")
  message("skipped: ${TFLITE} is missing")
  return()
endif()

function(run tool expect_rc)
  execute_process(COMMAND ${tool} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
    ERROR_VARIABLE err WORKING_DIRECTORY ${WORK})
  if(NOT rc EQUAL expect_rc)
    message(FATAL_ERROR "${tool} ${ARGN}: exit ${rc}, expected ${expect_rc}\n${out}\n${err}")
  endif()
  set(OUT "${out}${err}" PARENT_SCOPE)
endfunction()

function(expect what regex)
  if(NOT OUT MATCHES "${regex}")
    message(FATAL_ERROR "${what}: no match for '${regex}' in:\n${OUT}")
  endif()
endfunction()

run(${CONVERT} 0 ${TFLITE} det.ksm --quiet)
execute_process(COMMAND ${PROTECT} keygen key RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET
  WORKING_DIRECTORY ${WORK})
if(NOT rc EQUAL 0)
  message("skipped: ks-protect keygen failed (built without libsodium?)")
  return()
endif()
run(${PROTECT} 0 keygen wrong)
run(${PROTECT} 0 encrypt --key-file key det.ksm det_enc.ksm)
file(WRITE ${WORK}/graph.json
  "{\"inputs\":[{\"name\":\"image\",\"type\":\"image\"}],\"outputs\":[\"boxes\",\"scores\"],"
  "\"nodes\":[{\"type\":\"image_to_tensor\",\"inputs\":[\"image\"],\"outputs\":[\"t\"],"
  "\"options\":{\"width\":128,\"height\":128,\"range\":[-1,1]}},"
  "{\"type\":\"infer\",\"name\":\"detect\",\"inputs\":[\"t\"],\"outputs\":[\"boxes\",\"scores\"],"
  "\"options\":{\"model\":\"detector\"}}]}")

# Plain: checked completely.
run(${BUNDLE} 0 create plain.ksb --graph graph.json --model detector=det.ksm)
run(${BUNDLE} 0 info plain.ksb --check)
expect("plain bundle" "graph: ok \\(every node")

# Encrypted without a key: written as it is, with a note that it was not checked.
run(${BUNDLE} 0 create enc.ksb --graph graph.json --model detector=det_enc.ksm)
expect("encrypted, no key" "det_enc.ksm: encrypted \\(ks-protect\\); stored as it is, not checked")
expect("encrypted, no key" "encrypted model 'detector', which needs --key-file KEY")
expect("encrypted, no key" "1 encrypted model\\(s\\) stored as they are and not checked")
run(${BUNDLE} 0 info enc.ksb --check)
expect("info, no key" "detector +model +[0-9]+  encrypted")
expect("info, no key" "the encrypted models were not checked")
file(SIZE ${WORK}/det_enc.ksm enc_bytes)
file(SIZE ${WORK}/enc.ksb bundle_bytes)
if(bundle_bytes LESS enc_bytes)
  message(FATAL_ERROR "enc.ksb (${bundle_bytes} bytes) cannot hold det_enc.ksm (${enc_bytes})")
endif()

# With the key (raw, then hex): checked like a plain one.
run(${BUNDLE} 0 info enc.ksb --check --key-file key)
expect("info with the key" "graph: ok \\(every node")
run(${BUNDLE} 0 create enc2.ksb --key-file key --graph graph.json --model detector=det_enc.ksm)
if(OUT MATCHES "not checked")
  message(FATAL_ERROR "create with the key still says 'not checked':\n${OUT}")
endif()
file(READ ${WORK}/key key_hex HEX)
file(WRITE ${WORK}/key.hex "${key_hex}\n")
run(${BUNDLE} 0 create enc3.ksb --graph graph.json --model detector=det_enc.ksm --key-file key.hex)
run(${BUNDLE} 0 info enc3.ksb --check --key-file key.hex)
expect("hex key" "graph: ok \\(every node")

# A wrong key: refused, no bundle left.
run(${BUNDLE} 1 create bad.ksb --graph graph.json --model detector=det_enc.ksm --key-file wrong)
expect("wrong key" "the key in wrong does not open it")
if(EXISTS ${WORK}/bad.ksb)
  message(FATAL_ERROR "a refused create left bad.ksb behind")
endif()
run(${BUNDLE} 1 info enc.ksb --check --key-file wrong)
expect("info, wrong key" "does not open it")
# Not a key file, and a file that only looks encrypted: refused even without a key.
run(${BUNDLE} 1 create bad.ksb --graph graph.json --model detector=det_enc.ksm --key-file graph.json)
expect("bad key file" "32 raw bytes or 64 hex digits")
file(WRITE ${WORK}/fake.ksm "KSME and then anything but a container header, long enough to pass 64")
run(${BUNDLE} 1 create bad.ksb --graph graph.json --model detector=fake.ksm)
expect("fake encrypted model" "fake.ksm is not a valid encrypted model")
