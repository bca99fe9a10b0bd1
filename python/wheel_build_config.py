# Installed as kestrel/_build_config.py in wheels (python/CMakeLists.txt): the tools and the
# task bundles live inside the package (kestrel/bin, kestrel/bundles).
import os as _os

_here = _os.path.dirname(_os.path.abspath(__file__))
TOOLS = {
    name: _os.path.join(_here, "bin", name)
    for name in ("ks-convert", "ks-inspect", "ks-run", "ks-bench", "ks-quant", "ks-protect", "ks-vision")
}
MODELS_DIR = _os.path.join(_here, "bundles")
