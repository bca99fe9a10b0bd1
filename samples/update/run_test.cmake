# ctest sample_update: the publisher's side with ks-sign (a release key, three versions of the
# package "face": the face landmarker bundle, an effect and a face self-test recorded on the
# bundle), then the app's side, ks-update-demo, with a video of 90 frames at 30 fps.
#   version 1: face_landmarker.ksb, cat_ears.kfx
#   version 2: the attention face landmarker (478 points), face_paint.kfx
#   version 3: broken: the pose bundle shipped as face_landmarker.ksb (its self-test fails)
# cmake -DDEMO=ks-update-demo -DSIGN=ks-sign -DBUNDLES=dir -DEFFECTS=dir -DPHOTO=png -DWORK=dir
#       -P run_test.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK}/v1 ${WORK}/v2 ${WORK}/v3)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

run(${SIGN} keygen ${WORK}/release)
file(COPY_FILE ${BUNDLES}/face_landmarker.ksb ${WORK}/v1/face_landmarker.ksb)
file(COPY_FILE ${EFFECTS}/cat_ears.kfx ${WORK}/v1/effect.kfx)
file(COPY_FILE ${BUNDLES}/face_landmarker_attention.ksb ${WORK}/v2/face_landmarker.ksb)
file(COPY_FILE ${EFFECTS}/face_paint.kfx ${WORK}/v2/effect.kfx)
file(COPY_FILE ${BUNDLES}/pose_landmarker_lite.ksb ${WORK}/v3/face_landmarker.ksb)
file(COPY_FILE ${EFFECTS}/face_paint.kfx ${WORK}/v3/effect.kfx)
foreach(v 1 2)
  run(${SIGN} selftest-face ${WORK}/v${v}/face_landmarker.ksb ${PHOTO}
    ${WORK}/v${v}/selftest_face.kst --name face_landmarker.ksb)
endforeach()
# Version 3 carries version 2's expectations: the file it ships instead cannot meet them.
file(COPY_FILE ${WORK}/v2/selftest_face.kst ${WORK}/v3/selftest_face.kst)
foreach(v 1 2 3)
  run(${SIGN} sign --key ${WORK}/release.sec ${WORK}/v${v} ${WORK}/face-${v}.kspkg --id face
    --version ${v}.0.0 --issued ${v})
endforeach()
run(${SIGN} verify --key ${WORK}/release.pub ${WORK}/face-3.kspkg)

run(${DEMO} --store ${WORK}/store --key ${WORK}/release.pub --photo ${PHOTO}
  --v1 ${WORK}/face-1.kspkg --v2 ${WORK}/face-2.kspkg --v3 ${WORK}/face-3.kspkg
  --frames 90 --fps 30)
