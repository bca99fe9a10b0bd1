"""The tasks from Python give the C tool's results: ks-vision TASK IMAGE --json on the same
image (PNG/BMP, which Pillow and the tools' decoder read to the same pixels), compared at the
precision the tool prints."""

from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

import kestrel
from kestrel import _tools

from conftest import data_file, load_rgb


def ks_vision(task: str, image_rel: str, *extra: str):
    try:
        tool = _tools.tool_path("ks-vision")
    except kestrel.ToolError as e:
        pytest.skip(str(e))
    out = subprocess.run([tool, task, data_file(image_rel), "--json", "--threads", "1", *extra],
                         check=True, capture_output=True, text=True,
                         env=_tools.tool_env()).stdout
    return json.loads(out.strip().splitlines()[-1])


def close(a, b, tol):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=0,
                               atol=tol)


def test_face_detector_matches_ks_vision():
    img_rel = "images/skimage_astronaut.png"
    want = ks_vision("face_detect", img_rel)["faces"]
    with kestrel.FaceDetector() as det:
        faces = det.detect(load_rgb(img_rel))
    assert len(faces) == len(want) >= 1
    for f, w in zip(faces, want):
        close(f.box.to_list(), w["box"], 0.006)
        close(f.score, w["score"], 6e-5)
        close(f.keypoints, w["keypoints"], 0.006)
        assert f.id == -1 and f.keypoints.shape == (6, 2)
        d = f.to_dict()
        assert set(d) == {"box", "score", "id", "keypoints"} and len(d["box"]) == 4
        json.dumps(d)


def test_face_landmarker_matches_ks_vision():
    img_rel = "images/skimage_astronaut.png"
    want = ks_vision("face_landmarks", img_rel)["faces"]
    with kestrel.FaceLandmarker(max_results=16) as lm:
        meshes = lm.detect(load_rgb(img_rel))
    assert len(meshes) == len(want) >= 1
    for m, w in zip(meshes, want):
        assert m.landmarks.shape == (468, 3)
        close(m.landmarks, w["landmarks"], 0.006)
        close([m.pitch_deg, m.yaw_deg, m.roll_deg], w["euler_deg"], 0.006)
        close(m.expressions["smile"], w["expressions"]["smile"], 6e-4)


def test_pose_landmarker_matches_ks_vision():
    img_rel = "images/coral_squat.bmp"
    want = ks_vision("pose", img_rel)["poses"]
    with kestrel.PoseLandmarker() as pl:
        poses = pl.detect(load_rgb(img_rel))
    assert len(poses) == len(want) >= 1
    for p, w in zip(poses, want):
        close(p.box.to_list(), w["box"], 1e-3)
        close(p.landmarks, w["landmarks"], 1e-3)
        close(p.world_landmarks, w["world_landmarks"], 1e-6)
        assert json.loads(json.dumps(p.to_dict()))["landmarks"][0] == p.landmarks[0].tolist()


def test_hand_landmarker_matches_ks_vision():
    img_rel = "images/coral_squat.bmp"
    want = ks_vision("hands", img_rel)["hands"]
    with kestrel.HandLandmarker() as hl:
        hands = hl.detect(load_rgb(img_rel))
    assert len(hands) == len(want) >= 1
    for h, w in zip(hands, want):
        assert h.handedness == w["handedness"]
        close(h.landmarks, w["landmarks"], 1e-3)
        assert h.to_dict()["handedness"] == w["handedness"] and h.world_landmarks.shape == (21, 3)


def test_segmenter_matches_ks_vision(tmp_path):
    img_rel = "images/skimage_astronaut.png"
    mask_png = tmp_path / "mask.png"
    want = ks_vision("segment", img_rel, "--mask-out", str(mask_png))
    with kestrel.Segmenter(output_u8=True) as seg:
        r = seg.segment(load_rgb(img_rel))
    assert (r.width, r.height) == (want["width"], want["height"])
    close(r.person_fraction, want["person_fraction"], 1e-5)
    assert r.mask.dtype == np.float32 and r.mask.shape == (r.height, r.width)
    Image = pytest.importorskip("PIL.Image")
    with Image.open(mask_png) as im:
        tool_mask = np.asarray(im.convert("L"))
    np.testing.assert_array_equal(r.mask_u8, tool_mask)


def test_object_detector_matches_ks_vision():
    img_rel = "images/skimage_coffee.png"
    want = ks_vision("detect", img_rel)["objects"]
    with kestrel.ObjectDetector() as od:
        objs = od.detect(load_rgb(img_rel))
    assert len(objs) == len(want) >= 1
    for o, w in zip(objs, want):
        assert (o.class_id, o.label) == (w["class_id"], w["label"])
        close(o.box.to_list(), w["box"], 1e-3)
        close(o.score, w["score"], 1e-5)
        assert o.to_dict() == {"box": o.box.to_list(), "class_id": o.class_id, "label": o.label,
                               "score": o.score, "track_id": -1}


def test_image_classifier_matches_ks_vision():
    img_rel = "images/skimage_chelsea.png"
    want = ks_vision("classify", img_rel)["classes"]
    with kestrel.ImageClassifier() as clf:
        classes = clf.classify(load_rgb(img_rel))
    assert [(c.class_id, c.label) for c in classes] == [(w["class_id"], w["label"]) for w in want]
    close([c.score for c in classes], [w["score"] for w in want], 1e-5)
    assert "cat" in classes[0].label


def test_video_mode_tracks_and_pil_input():
    img = load_rgb("images/skimage_astronaut.png")
    with kestrel.FaceDetector(mode="video") as det:
        ids = [det.detect(img)[0].id for _ in range(3)]  # timestamps default to 1/30 s apart
        assert ids[0] >= 1 and len(set(ids)) == 1
        with pytest.raises(kestrel.KestrelError):
            det.detect(img, timestamp_us=0)  # timestamps must increase
    Image = pytest.importorskip("PIL.Image")
    with kestrel.FaceDetector() as det:
        a = det.detect(Image.fromarray(img))
        b = det.detect(img)
        assert [f.to_dict() for f in a] == [f.to_dict() for f in b]
        # RGBA works as RGB
        rgba = np.dstack([img, np.full(img.shape[:2], 255, np.uint8)])
        c = det.detect(rgba)
        close([f.box.to_list() for f in c], [f.box.to_list() for f in b], 1e-4)


def test_swap_model_between_frames(tmp_path):
    """Live swap: the next detect runs the new bundle; a bad version raises and changes nothing."""
    bundles = kestrel.vision.models_dir()
    short, full = f"{bundles}/face_detector_short.ksb", f"{bundles}/face_detector_full.ksb"
    for p in (short, full):
        try:
            open(p, "rb").close()
        except OSError:
            pytest.skip(f"{p} is missing")
    img = load_rgb("images/skimage_astronaut.png")
    with kestrel.FaceDetector(model_path=short) as a, kestrel.FaceDetector(model_path=full) as b:
        want_short, want_full = a.detect(img), b.detect(img)
    with kestrel.FaceDetector(model_path=short) as det:
        assert [f.box.to_list() for f in det.detect(img)] == [f.box.to_list() for f in want_short]
        with pytest.raises(kestrel.KestrelError) as e:
            det.swap_model(tmp_path / "missing.ksb")
        assert "missing.ksb" in str(e.value) and det.model_generation == 0
        det.swap_model(full)
        got = det.detect(img)
        assert [f.box.to_list() for f in got] == [f.box.to_list() for f in want_full]
        assert det.model_generation == 1
    with pytest.raises(kestrel.KestrelError):
        det.swap_model(full)  # closed
