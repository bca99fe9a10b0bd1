"""The kestrel package's PEP 517 backend: scikit-build-core, plus the C sources in the sdist.

python/pyproject.toml names this module (backend-path = ["_kestrel_build"]). Wheels are
scikit-build-core's own (every hook but build_sdist is re-exported unchanged). The CMake project
is the repository's, one level above python/, so scikit-build-core's sdist of python/ alone
cannot build; build_sdist here lets scikit-build-core make it, then adds to the archive:

  _csrc/kestrel/   the repository files the package's CMake targets need: CMakeLists.txt,
                   cmake/, engine/, pipeline/, algos/, effects_format/, ar_render/, delivery/
                   (their tests/ left out, but for ar_render/tests/no_gles, which the GL-less
                   renderer build includes), and python/'s CMake inputs (CMakeLists.txt, src/,
                   kestrel/, wheel_build_config.py) at _csrc/kestrel/python, where the
                   top-level CMakeLists.txt adds it;
  _csrc/kestrel/models/..., _csrc/shared/data/...
                   the source models the default task bundles are made from (the same paths
                   relative to the CMake source directory as in a checkout: models/ and
                   ../shared/data/), see BUNDLE_MODELS and KESTREL_SDIST_MODELS below.

A wheel built from the sdist uses _csrc/kestrel as the CMake source directory (the
`if.from-sdist` override in pyproject.toml). An sdist made from an unpacked sdist already
carries _csrc/ (scikit-build-core copies it like any other file) and is passed through.

Which models (environment variable KESTREL_SDIST_MODELS, or config setting
kestrel.sdist-models; docs/python.md "The sdist"):
  default  every bundle's sources but pose_landmark_heavy.tflite (27.7 MB, a third of the
           total): the sdist stays under 40 MB; a wheel from it lacks pose_landmarker_heavy.ksb
  all      every bundle's sources (the wheel has all the bundles a checkout build has)
  none     no models: the C sources only (the wheel's tasks report their missing bundle)
A listed model missing from the checkout (scripts/setup not run, no ../shared/data) is left
out with a message; that bundle is then skipped at build time, as in a checkout build.
"""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path, PurePosixPath
from typing import Dict, Iterable, List, Optional, Tuple, Union

CSRC = "_csrc"
SRC_DIR = "kestrel"  # _csrc/kestrel: the repository root's stand-in (cmake.source-dir)

# Top-level files and folders of the repository that the package's CMake build reads. The rest
# (jni/, objc/, editor/, samples/, bench/, tests/, docs/, scripts/) is left out: the top-level
# CMakeLists.txt adds jni/ and objc/ only where they exist, and samples/, bench/ and tests/
# only with KS_BUILD_SAMPLES/BENCH/TESTS, which pyproject.toml turns off.
REPO_FILES = ("CMakeLists.txt",)
REPO_DIRS = ("cmake", "engine", "pipeline", "algos", "effects_format", "ar_render", "delivery")
# Kept although under a tests/ folder: ar_render builds its GL-less core against these headers.
KEEP_UNDER_TESTS = ("ar_render/tests/no_gles/",)
# python/'s files that python/CMakeLists.txt reads at configure time.
PYTHON_FILES = ("CMakeLists.txt", "wheel_build_config.py")
PYTHON_DIRS = ("src", "kestrel")

# The task bundles' source models (algos/*/bundle.cmake), relative to the repository root;
# "../shared/data/..." is the data folder beside the checkout. python/tests/sdist_check.sh checks
# that a configure from the sdist skips no bundle but those whose model was left out.
BUNDLE_MODELS = (
    "models/face_detection/face_detection_short_range.tflite",
    "models/face_detection/face_detection_full_range_sparse.tflite",
    "models/face_landmarks/face_landmark.tflite",
    "models/face_landmarks/face_landmark_with_attention.tflite",
    "models/face_landmarks/geometry_pipeline_metadata_landmarks.binarypb",
    "models/hand/palm_detection_lite.tflite",
    "models/hand/hand_landmark_lite.tflite",
    "models/hand/palm_detection_full.tflite",
    "models/hand/hand_landmark_full.tflite",
    "models/pose/pose_detection.tflite",
    "models/pose/pose_landmark_lite.tflite",
    "models/pose/pose_landmark_full.tflite",
    "models/pose/pose_landmark_heavy.tflite",
    "models/segmentation/selfie_segmentation.tflite",
    "models/segmentation/selfie_segmentation_landscape.tflite",
    "../shared/data/classification/mobilenet_v2_1.0_224_quant.tflite",
    "../shared/data/classification/imagenet_labels.txt",
    "../shared/data/object_detection/yolox_nano.onnx",
    "../shared/data/object_detection/nanodet_m.onnx",
    "../shared/data/object_detection/coco.names",
)
# Left out by KESTREL_SDIST_MODELS=default (see the module docstring).
LARGE_MODELS = ("models/pose/pose_landmark_heavy.tflite",)
MODEL_SETS = ("default", "all", "none")

ConfigSettings = Optional[Dict[str, Union[str, List[str]]]]


def _skb():
    # Imported when a hook runs, so that `python kestrel_build_backend.py list` (and the tests
    # that use it) need no scikit-build-core.
    import scikit_build_core.build

    return scikit_build_core.build


# The PEP 517 hooks other than build_sdist: scikit-build-core's, unchanged.
def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _skb().build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _skb().build_editable(wheel_directory, config_settings, metadata_directory)


def get_requires_for_build_wheel(config_settings=None):
    return _skb().get_requires_for_build_wheel(config_settings)


def get_requires_for_build_editable(config_settings=None):
    return _skb().get_requires_for_build_editable(config_settings)


def get_requires_for_build_sdist(config_settings=None):
    return _skb().get_requires_for_build_sdist(_models_setting(config_settings)[1])


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _skb().prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _skb().prepare_metadata_for_build_editable(metadata_directory, config_settings)


def _say(msg: str) -> None:
    print(f"kestrel sdist: {msg}", file=sys.stderr, flush=True)


def _repo_root() -> Optional[Path]:
    """The checkout around python/ (the frontend runs hooks from the project folder)."""
    root = Path.cwd().resolve().parent
    top = root / "CMakeLists.txt"
    if top.is_file() and (root / "engine" / "CMakeLists.txt").is_file():
        if "project(kestrel" in top.read_text(encoding="utf-8", errors="replace"):
            return root
    return None


def _listed_files(root: Path, tops: Iterable[str]) -> List[str]:
    """Files under `tops` (repository-relative, POSIX): git's view of the working tree where
    there is one (tracked and untracked-but-not-ignored files, so build outputs and editor junk
    stay out), else a walk that skips __pycache__ and build*/ folders."""
    tops = list(tops)
    if (root / ".git").exists():
        try:
            out = subprocess.run(
                ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                 "--exclude-standard", "--", *tops],
                check=True, capture_output=True).stdout
            names = sorted({n for n in out.decode("utf-8").split("\0") if n})
            return [n for n in names if (root / n).is_file()]
        except (OSError, subprocess.CalledProcessError):
            pass
    names = []
    for top in tops:
        p = root / top
        if p.is_file():
            names.append(top)
            continue
        for dirpath, dirnames, filenames in os.walk(p):
            dirnames[:] = sorted(d for d in dirnames
                                 if d != "__pycache__" and not d.startswith("build"))
            for f in filenames:
                if not f.endswith(".pyc"):
                    names.append(Path(dirpath, f).relative_to(root).as_posix())
    return sorted(names)


def _wanted_source(rel: str) -> bool:
    parts = rel.split("/")
    if "tests" in parts[1:-1] and not rel.startswith(KEEP_UNDER_TESTS):
        return False
    return True


def staged_files(root: Path, models: str) -> Tuple[List[Tuple[Path, str]], List[str]]:
    """(file, archive path under the sdist folder) pairs to add, and the models left out."""
    pairs: List[Tuple[Path, str]] = []
    for rel in _listed_files(root, REPO_FILES + REPO_DIRS):
        if _wanted_source(rel):
            pairs.append((root / rel, f"{CSRC}/{SRC_DIR}/{rel}"))
    py = [f"python/{n}" for n in PYTHON_FILES + PYTHON_DIRS]
    for rel in _listed_files(root, py):
        pairs.append((root / rel, f"{CSRC}/{SRC_DIR}/{rel}"))
    missing: List[str] = []
    if models != "none":
        for rel in BUNDLE_MODELS:
            if models == "default" and rel in LARGE_MODELS:
                continue
            src = root / rel
            if not src.is_file():
                missing.append(rel)
                continue
            # ../shared/data/x -> _csrc/shared/data/x; models/x -> _csrc/kestrel/models/x
            arc = PurePosixPath(CSRC, SRC_DIR, rel)
            parts: List[str] = []
            for part in arc.parts:
                if part == "..":
                    parts.pop()
                else:
                    parts.append(part)
            pairs.append((src, "/".join(parts)))
    return pairs, missing


def _models_setting(config_settings: ConfigSettings) -> Tuple[str, ConfigSettings]:
    """KESTREL_SDIST_MODELS / kestrel.sdist-models, and the settings without kestrel.* keys
    (scikit-build-core would reject them)."""
    settings = dict(config_settings or {})
    value = os.environ.get("KESTREL_SDIST_MODELS", "default")
    for key in [k for k in settings if k.startswith("kestrel.")]:
        v = settings.pop(key)
        if key != "kestrel.sdist-models":
            raise ValueError(f"unknown config setting {key!r} (known: kestrel.sdist-models)")
        value = v[-1] if isinstance(v, list) else v
    if value not in MODEL_SETS:
        raise ValueError(f"kestrel.sdist-models / KESTREL_SDIST_MODELS is {value!r}; "
                         f"expected one of {', '.join(MODEL_SETS)}")
    return value, (settings or None)


def _add_to_sdist(path: Path, pairs: List[Tuple[Path, str]]) -> None:
    """Rewrites the .tar.gz at `path` with `pairs` added under its top folder, normalized as
    scikit-build-core normalizes its members (owner, mode, PKG-INFO's mtime) so that the
    archive stays reproducible."""
    with tarfile.open(path, "r:gz") as src:
        members = [(m, src.extractfile(m).read() if m.isfile() else None)
                   for m in src.getmembers()]
    top = members[0][0].name.split("/")[0]
    mtime = next((m.mtime for m, _ in members if m.name == f"{top}/PKG-INFO"), 0)
    have = {m.name for m, _ in members}
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=mtime) as gz, \
            tarfile.TarFile(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for m, data in members:
            tar.addfile(m, io.BytesIO(data) if data is not None else None)
        for file, arc in sorted(pairs, key=lambda p: p[1]):
            name = f"{top}/{arc}"
            if name in have:
                continue
            info = tarfile.TarInfo(name)
            info.size = file.stat().st_size
            info.mtime = mtime
            info.mode = 0o755 if os.access(file, os.X_OK) else 0o644
            with open(file, "rb") as f:
                tar.addfile(info, f)
    os.replace(tmp, path)


def build_sdist(sdist_directory: str, config_settings: ConfigSettings = None) -> str:
    models, settings = _models_setting(config_settings)
    if Path(CSRC, SRC_DIR, "CMakeLists.txt").is_file():
        # An unpacked sdist: scikit-build-core copies _csrc/ along with the rest.
        return _skb().build_sdist(sdist_directory, settings)
    root = _repo_root()
    if root is None:
        raise RuntimeError(
            f"kestrel sdist: neither {CSRC}/{SRC_DIR}/ (an unpacked sdist) nor the Kestrel "
            f"repository around {Path.cwd()} (../CMakeLists.txt, ../engine/) was found: build "
            "the sdist from python/ in a checkout")
    pairs, missing = staged_files(root, models)
    for rel in missing:
        _say(f"{rel} not found (scripts/setup fetches models/; ../shared/data is the data "
             "folder beside the checkout): left out, its bundle will be skipped")
    name = _skb().build_sdist(sdist_directory, settings)
    path = Path(sdist_directory, name)
    _add_to_sdist(path, pairs)
    size = sum(p.stat().st_size for p, _ in pairs)
    _say(f"added {len(pairs)} files ({size / 1e6:.1f} MB, models: {models}) under {CSRC}/; "
         f"{name} is {path.stat().st_size / 1e6:.1f} MB")
    return name


def _main(argv: List[str]) -> int:
    """python kestrel_build_backend.py list [default|all|none]: what build_sdist would add."""
    if len(argv) < 2 or argv[1] != "list":
        print(_main.__doc__, file=sys.stderr)
        return 2
    os.environ.setdefault("KESTREL_SDIST_MODELS", argv[2] if len(argv) > 2 else "default")
    models, _ = _models_setting(None)
    os.chdir(Path(__file__).resolve().parent.parent)
    root = _repo_root()
    if root is None:
        print("not in a checkout", file=sys.stderr)
        return 1
    pairs, missing = staged_files(root, models)
    for file, arc in pairs:
        print(f"{file.stat().st_size:10d} {arc}")
    for rel in missing:
        print(f"   missing {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv))
