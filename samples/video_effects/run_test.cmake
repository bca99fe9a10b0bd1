# ctest sample_video_effects: makes a 2-second clip of the astronaut photo (panned and zoomed),
# runs ks-video-effects with the cat_ears effect and checks the output video: same frame count
# as the input, and the head region (ears + face, where the face stays during the pan) changed.
# cmake -DTOOL=ks-video-effects -DCHECK=ks-sample-video-check -DPHOTO=... -DEFFECT=... -DWORK=dir
#       -P run_test.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

# SAMPLE_ENV: NAME=VALUE list for the sample itself (sanitizer builds), not for the helpers.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()
set(tool ${CMAKE_COMMAND} -E env ${SAMPLE_ENV} ${TOOL})

run(${CHECK} make ${PHOTO} ${WORK}/in.mp4 --frames 50)
run(${tool} --effect ${EFFECT} --in ${WORK}/in.mp4 --out ${WORK}/out.mp4)
# The head over the clip: x 90..200, y 0..130 of the 320x240 frames.
run(${CHECK} compare ${WORK}/in.mp4 ${WORK}/out.mp4 --frames 50 --region 90,0,110,130
  --min-changed 0.03 --side-by-side ${WORK}/side_by_side.png)
# --max-frames and --overlay: the first 10 frames only, with landmark dots drawn everywhere.
run(${tool} --effect ${EFFECT} --in ${WORK}/in.mp4 --out ${WORK}/overlay.mp4 --overlay
  --max-frames 10)
run(${CHECK} compare ${WORK}/in.mp4 ${WORK}/overlay.mp4 --frames 10 --region 90,0,110,130
  --min-changed 0.03)
