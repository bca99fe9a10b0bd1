"""The C command-line tools behind kestrel.convert and the CLI.

Conversion (the ONNX and TFLite importers, the graph passes, the .ksm writer) is not part of the
public C API: it lives in the converter library that only the tools link (docs/architecture.md,
"Layers": the bindings may not reach it). The package therefore ships the tools themselves (in
kestrel/bin of a wheel; the build's own in a build tree) and runs them as child processes. A
KeyboardInterrupt stops the child and removes its partial output.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any, Dict, List, Optional, Sequence

from ._errors import KestrelIOError, ToolError

try:
    from . import _build_config
except ImportError:  # a source checkout without a build: only $KESTREL_TOOLS_DIR / $PATH
    _build_config = None  # type: ignore[assignment]


def tool_path(name: str) -> str:
    """The path of tool ``name`` (``ks-convert``, ...): $KESTREL_TOOLS_DIR, the package's own,
    then $PATH. Raises :class:`ToolError` when it is nowhere."""
    env = os.environ.get("KESTREL_TOOLS_DIR")
    candidates: List[str] = []
    if env:
        candidates.append(os.path.join(env, name))
    if _build_config is not None and name in _build_config.TOOLS:
        candidates.append(_build_config.TOOLS[name])
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    found = shutil.which(name)
    if found:
        return found
    raise ToolError(f"{name} not found (looked in {candidates or 'nothing'} and $PATH; set "
                    "KESTREL_TOOLS_DIR to the folder that holds it)")


def tool_env() -> Dict[str, str]:
    """The environment for a tool: the caller's, plus KESTREL_MODELS_DIR pointing at the
    package's task bundles (a wheel's tools were built elsewhere, so their compiled-in default
    folder does not exist here) unless the caller set it."""
    env = dict(os.environ)
    if "KESTREL_MODELS_DIR" not in env and _build_config is not None and \
            os.path.isdir(_build_config.MODELS_DIR):
        env["KESTREL_MODELS_DIR"] = _build_config.MODELS_DIR
    return env


def run_tool(name: str, args: Sequence[str], output: Optional[str] = None,
             capture: bool = True) -> subprocess.CompletedProcess:
    """Runs tool ``name`` with ``args``; raises :class:`ToolError` (its stderr as the message)
    when it fails. ``output``: a file the tool writes, removed when it fails or is
    interrupted."""
    cmd = [tool_path(name), *[os.fspath(a) for a in args]]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE if capture else None,
                            stderr=subprocess.PIPE, text=True, env=tool_env())
    try:
        out, err = proc.communicate()
    except BaseException:  # KeyboardInterrupt included: stop the child, drop partial output
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if output and os.path.exists(output):
            os.remove(output)
        raise
    if proc.returncode != 0:
        if output and os.path.exists(output):
            os.remove(output)
        msg = (err or "").strip() or f"exit status {proc.returncode}"
        raise ToolError(f"{name}: {msg}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


_WEIGHTS = ("fp32", "fp16", "int8", "int4")
_CODERS = ("best", "rans", "wcode")


def convert(src: "os.PathLike[str] | str", dst: "os.PathLike[str] | str", *,
            optimize: bool = True, weights: str = "fp32", entropy: bool = False,
            coder: Optional[str] = None, block: Optional[int] = None,
            pack: bool = False) -> str:
    """Converts a TFLite or ONNX model (or rewrites a .ksm) into ``dst`` (.ksm), as
    ``ks-convert SRC DST`` does. Options mirror its flags: ``optimize=False`` is
    ``--no-optimize``; ``weights`` is the storage of conv/FC weights (``fp32``, ``fp16``,
    ``int8``, ``int4``); ``entropy``, ``coder`` (``best``, ``rans``, ``wcode``), ``block`` (int4
    block size) and ``pack`` (format 1.2 lossless packing). Returns ``dst`` as a string.

    Raises :class:`KestrelIOError` when ``src`` does not exist and :class:`ToolError` with the
    converter's message when the model cannot be converted."""
    src_s, dst_s = os.fspath(src), os.fspath(dst)
    if not os.path.isfile(src_s):
        raise KestrelIOError(f"{src_s}: no such file")
    if weights not in _WEIGHTS:
        raise ValueError(f"weights={weights!r}: expected one of {', '.join(_WEIGHTS)}")
    args: List[Any] = [src_s, dst_s, "--quiet"]
    if not optimize:
        args.append("--no-optimize")
    if weights != "fp32":
        args += ["--weights", weights]
    if entropy:
        args.append("--entropy")
    if coder is not None:
        if coder not in _CODERS:
            raise ValueError(f"coder={coder!r}: expected one of {', '.join(_CODERS)}")
        args += ["--coder", coder]
    if block is not None:
        args += ["--block", str(int(block))]
    if pack:
        args.append("--pack")
    run_tool("ks-convert", args, output=dst_s)
    return dst_s


def list_ops() -> Dict[str, Any]:
    """The operators each importer converts, with their constraints, as ``ks-convert --list-ops
    --json`` reports them (read from the importers' own tables): ``{"importers": [{"format":
    "tflite"|"onnx", "notes": str, "ops": [{"name": str, "constraints": str}]}]}``."""
    import json

    return json.loads(run_tool("ks-convert", ["--list-ops", "--json"]).stdout)
