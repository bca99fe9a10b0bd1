# ctest sample_live_camera: runs live_camera under xvfb-run for a few seconds on the astronaut
# photo with the cat_ears effect, then again with the effect off, and checks that the head region
# of the two screenshots differs (the ears were drawn) while the effect-off screenshot matches the
# photo there (the window shows the camera frame as is). With KEYS (ks-sample-x11-keys), a third
# run types right, left, space: the carousel must load two more effects and the effect must end
# up off (the head region equals the photo again).
# cmake -DXVFB_RUN=xvfb-run -DTOOL=live_camera -DCHECK=ks-sample-video-check -DPHOTO=...
#       -DEFFECTS=dir -DWORK=dir [-DKEYS=ks-sample-x11-keys -DWITH_KEYS=with_keys.sh]
#       [-DSAMPLE_ENV=...] -P run_test.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# SAMPLE_ENV: NAME=VALUE list for the sample itself (sanitizer builds), not for the helpers.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out TIMEOUT 120)
  message("${out}")
  set(output "${out}" PARENT_SCOPE)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()
set(tool ${CMAKE_COMMAND} -E env ${SAMPLE_ENV} ${TOOL})

set(xvfb ${XVFB_RUN} -a -s "-screen 0 1024x768x24")
run(${xvfb} ${tool} --source ${PHOTO} --effects ${EFFECTS} --effect cat_ears
  --screenshot ${WORK}/effect_on.png --quit-after 3)
run(${xvfb} ${tool} --source ${PHOTO} --effects ${EFFECTS} --effect cat_ears --no-effect
  --screenshot ${WORK}/effect_off.png --quit-after 2)
# The head of the 512x512 photo (ears above it): x 150..310, y 0..190.
run(${CHECK} compare ${WORK}/effect_off.png ${WORK}/effect_on.png --region 150,0,160,190
  --min-changed 0.03)
run(${CHECK} compare ${PHOTO} ${WORK}/effect_off.png --region 150,0,160,190 --min-changed 0
  --max-changed 0.001)

if(KEYS)
  run(${xvfb} sh ${WITH_KEYS} ${KEYS} "Right Left space" ${tool} --source ${PHOTO}
    --effects ${EFFECTS} --effect cat_ears --screenshot ${WORK}/keys.png --quit-after 6)
  if(NOT output MATCHES "effect [0-9]+/[0-9]+: [^\n]*\neffect [0-9]+/[0-9]+: [^\n]*\neffect [0-9]+/")
    message(FATAL_ERROR "the arrow keys did not switch effects")
  endif()
  run(${CHECK} compare ${PHOTO} ${WORK}/keys.png --region 150,0,160,190 --min-changed 0
    --max-changed 0.001)
endif()
