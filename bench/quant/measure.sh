#!/bin/sh
# Reproduces the "Post-training int8 (ks-quant)" figures of docs/compression.md.
#   bench/quant/measure.sh BUILD_DIR WORK_DIR
# Environment (all optional): MODELS="blazeface selfie ..." (default: all six), VARIANTS="full
# max" (default "fast max full"), KS_QUANT_FLAGS (extra ks-quant flags for every run, e.g.
# "--no-equalize --no-bias-correction" for the numbers without the data-free passes), BENCH=N
# (interleaved timing runs, default 30; 0: no timing and no profiles), NOISE="w16 w8" (noise-floor
# baselines, default none: the fp32 model with fp16 / int8 weight-only weights from
# `ks-convert --weights fp16|int8`, measured like a variant: how far the task metric moves for an
# almost lossless change, i.e. its fragility (NMS ties, tiny boxes, mask edges)), FLAGS_<name>
# (extra ks-quant flags for one model, e.g. FLAGS_yolox_nano="--fallback cheap"), CALIB_CROPS=1
# (FaceMesh and BlazePose full calibrate on the crops their task cuts around each detected face /
# person in the calibration photos, bench/quant/task_crops.py, instead of whole photos).
# BUILD_DIR: a build with ks-convert, ks-quant, ks-run (engine/tools), ks-vision and
# ks-task-bundle (algos). Needs /work/shared/data (../shared/data) and the project venv.
# Calibration photos: ../shared/data/images minus masks and minus the held-out test photos
# (darknet_*, ultralytics_*, ultraface_*, opencv_messi5); the test photos give the task deltas.
set -eu
BUILD=$(cd "$1" && pwd)
WORK=$2
SRC=$(cd "$(dirname "$0")/../../.." && pwd)
DATA=$SRC/../shared/data
T=$BUILD/engine/tools
PY=$SRC/.venv/bin/python
mkdir -p "$WORK/calib" "$WORK/test"
for f in "$DATA"/images/*; do
  b=$(basename "$f")
  case $b in
    *_mask*) ;;
    darknet_*|ultralytics_*|ultraface_*|opencv_messi5*) ln -sf "$f" "$WORK/test/$b" ;;
    *) ln -sf "$f" "$WORK/calib/$b" ;;
  esac
done
ln -sf "$SRC/models/images/skimage_astronaut.png" "$WORK/calib/" 2>/dev/null || true

# name|source|preprocess|extra ks-quant flags|flags of the "task" variant. BlazePose: the output
# check skips Identity_2, the segmentation logits the pose task does not use (they amplify any
# perturbation). The task flags are the per-model settings that came closest to the task targets
# with the most int8 layers (docs/compression.md); YOLOX-nano and BlazePose full must also stay
# fast, hence --fallback cheap. BlazeFace: its score heads and the 8x8 box head stay fp32
# (per-tensor int8 outputs: see "fp32 output layers"), the 16x16 box head is int8 for the size.
# Selfie, UltraFace and BlazePose full: --weights-only (fp32 activations, gptq int8 weights): with
# any int8 activations they miss their task targets (docs/compression.md, fifth session).
# FaceMesh and YOLOX-nano meet the size with fp32 fallback weights and keep more int8 layers
# (FaceMesh) or their confident boxes (YOLOX-nano) that way.
cat > "$WORK/models.txt" <<LIST
blazeface|$SRC/models/face_detection/face_detection_short_range.tflite|mean=127.5,scale=0.0078431||--no-speed-check --min-output-cosine 0 --calibration-method minmax --bias-correction empirical --int8-output-layers --skip classificator_16,classificator_8,regressor_8
selfie|$SRC/models/segmentation/selfie_segmentation.tflite|mean=0,scale=0.0039216||--weights-only
facemesh|$SRC/models/face_landmarks/face_landmark.tflite|mean=0,scale=0.0039216||--no-speed-check --min-output-cosine 0.9999 --fallback-weights fp32
blazepose_full|$SRC/models/pose/pose_landmark_full.tflite|mean=0,scale=0.0039216|--outputs Identity,Identity_1,Identity_3,Identity_4|--weights-only
yolox_nano|$DATA/object_detection/yolox_nano.onnx|mean=0,scale=1,layout=nchw,color=bgr||--no-speed-check --fallback cheap --min-output-cosine 0.995 --fallback-weights fp32
ultraface|$DATA/face_detection/version-RFB-320.onnx|mean=127,scale=0.0078125,layout=nchw||--weights-only
LIST
# Variants: fast = defaults (int8 only where measured faster, accuracy checks on);
# max = --no-speed-check (accuracy checks still on); full = every layer with an int8 kernel;
# task = the model's task flags (last field above) plus --entropy (packed, the size that counts).
MODELS=${MODELS:-blazeface selfie facemesh blazepose_full yolox_nano ultraface}
VARIANTS=${VARIANTS:-fast max full}
BENCH=${BENCH:-30}
KS_QUANT_FLAGS=${KS_QUANT_FLAGS:-}
NOISE=${NOISE:-}
while IFS='|' read -r name src pp flags task_flags; do
  case " $MODELS " in *" $name "*) ;; *) continue ;; esac
  "$T/ks-convert" "$src" "$WORK/$name.ksm" --quiet
  for mode in $NOISE; do
    case $mode in
      w16) "$T/ks-convert" "$WORK/$name.ksm" "$WORK/${name}_int8_$mode.ksm" --weights fp16 \
             --quiet ;;
      w8) "$T/ks-convert" "$WORK/$name.ksm" "$WORK/${name}_int8_$mode.ksm" --weights int8 \
            --quiet ;;
      *) echo "measure.sh: NOISE: unknown baseline '$mode' (w16, w8)" >&2; exit 2 ;;
    esac
  done
  eval "model_flags=\${FLAGS_$name:-}"
  calib=$WORK/calib
  case ${CALIB_CROPS:-}:$name in
    ?*:facemesh) crop_task=face_landmarks ;;
    ?*:blazepose_full) crop_task=pose ;;
    *) crop_task="" ;;
  esac
  if [ -n "$crop_task" ]; then
    calib=$WORK/crops_$name
    rm -rf "$calib"
    "$PY" "$SRC/bench/quant/task_crops.py" "$BUILD/algos/ks-vision" "$crop_task" \
      "$WORK/calib" "$calib" --quiet
  fi
  for mode in $VARIANTS; do
    case $mode in
      fast) extra="" ;;
      max) extra="--no-speed-check" ;;
      full) extra="--no-speed-check --min-cosine 0 --min-output-cosine 0" ;;
      task) extra="$task_flags --entropy" ;;
      *) echo "measure.sh: unknown variant '$mode' (fast, max, full, task)" >&2; exit 2 ;;
    esac
    echo "== $name ($mode)"
    bench=""
    [ "$BENCH" -gt 0 ] && bench="--bench $BENCH"
    # shellcheck disable=SC2086
    "$T/ks-quant" "$WORK/$name.ksm" "$WORK/${name}_int8_$mode.ksm" --calibration "$calib" \
      --preprocess "$pp" --report "$WORK/${name}_$mode.md" --quiet $bench $extra $flags $KS_QUANT_FLAGS \
      $model_flags
  done
  if [ "$BENCH" -gt 0 ] && [ -f "$WORK/${name}_int8_full.ksm" ]; then
    "$T/ks-bench" "$WORK/${name}_int8_full.ksm" --profile --runs 10 > "$WORK/${name}_full_profile.txt"
    "$T/ks-bench" "$WORK/$name.ksm" --profile --runs 10 > "$WORK/${name}_fp32_profile.txt"
  fi
done < "$WORK/models.txt"
"$PY" "$SRC/bench/quant/task_deltas.py" "$BUILD" "$WORK" --models "$(echo $MODELS | tr ' ' ,)" \
  --variants "$(echo $NOISE $VARIANTS | tr ' ' ,)"
