"""The C command-line tools behind kestrel.convert and the CLI.

Conversion (the ONNX and TFLite importers, the graph passes, the .ksm writer) is not part of the
public C API: it lives in the converter library that only the tools link (docs/architecture.md,
"Layers": the bindings may not reach it). The package therefore ships the tools themselves (in
kestrel/bin of a wheel; the build's own in a build tree) and runs them as child processes. A
KeyboardInterrupt stops the child and removes its partial output. Long work reports progress:
the tools' ``--progress-lines`` write ``progress<TAB>STAGE<TAB>DONE<TAB>TOTAL`` lines on stderr,
which :func:`run_tool` turns into calls of a progress callback (a tqdm bar by default on a
terminal, see :func:`progress_callback`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

ProgressFn = Callable[[str, int, int], None]
Progress = Union[None, bool, ProgressFn]

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


class _Bars:
    """tqdm bars, one per stage (a new stage closes the last one's bar)."""

    def __init__(self, tqdm: Any) -> None:
        self._tqdm = tqdm
        self._bar: Any = None
        self._what = ""

    def __call__(self, what: str, done: int, total: int) -> None:
        if self._bar is None or what != self._what:
            self.close()
            self._bar = self._tqdm(total=max(total, 0), desc=what, leave=False)
            self._what = what
        self._bar.total = max(total, 0)
        self._bar.n = max(0, min(done, total))
        self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def progress_callback(progress: Progress) -> Optional[ProgressFn]:
    """The callback for a ``progress=`` argument: a callable as it is; ``False`` none; ``True`` a
    tqdm bar per stage (a plain line per stage on stderr without tqdm); ``None`` (the default) a
    tqdm bar when tqdm is installed and stderr is a terminal, else none."""
    if callable(progress):
        return progress
    if progress is False:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if progress is None and (tqdm is None or not sys.stderr.isatty()):
        return None
    if tqdm is not None:
        return _Bars(tqdm)
    last = [""]

    def plain(what: str, done: int, total: int) -> None:
        if what != last[0] or done >= total:
            print(f"{what}: {done}/{total}", file=sys.stderr)
            last[0] = what if done < total else ""

    return plain


def run_tool(name: str, args: Sequence[str], output: Optional[str] = None,
             capture: bool = True,
             progress: Optional[ProgressFn] = None) -> subprocess.CompletedProcess:
    """Runs tool ``name`` with ``args``; raises :class:`ToolError` (its stderr as the message)
    when it fails. ``output``: a file the tool writes, removed when it fails or is
    interrupted. ``progress``: called as ``progress(stage, done, total)`` for each
    ``--progress-lines`` line the tool writes (the caller passes that flag), on this thread; the
    other stderr lines make the error message."""
    cmd = [tool_path(name), *[os.fspath(a) for a in args]]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE if capture else None,
                            stderr=subprocess.PIPE, text=True, env=tool_env())
    try:
        if progress is None:
            out, err = proc.communicate()
        else:
            out, err = _stream(proc, progress)
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
    finally:
        close = getattr(progress, "close", None)
        if close is not None:
            close()
    if proc.returncode != 0:
        if output and os.path.exists(output):
            os.remove(output)
        msg = (err or "").strip() or f"exit status {proc.returncode}"
        raise ToolError(f"{name}: {msg}")
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _stream(proc: subprocess.Popen, progress: ProgressFn) -> "tuple[str, str]":
    """Reads the child's stderr line by line (progress lines to ``progress``, the rest kept)
    while a thread drains its stdout, then waits for it."""
    chunks: List[str] = []
    reader = None
    if proc.stdout is not None:
        stdout = proc.stdout
        reader = threading.Thread(target=lambda: chunks.append(stdout.read()), daemon=True)
        reader.start()
    kept: List[str] = []
    assert proc.stderr is not None
    for line in proc.stderr:
        parts = line.rstrip("\n").split("\t")
        if len(parts) == 4 and parts[0] == "progress":
            try:
                done, total = int(parts[2]), int(parts[3])
            except ValueError:
                kept.append(line)
                continue
            progress(parts[1], done, total)
        else:
            kept.append(line)
    proc.wait()
    if reader is not None:
        reader.join()
    return "".join(chunks), "".join(kept)


_WEIGHTS = ("fp32", "fp16", "int8", "int4")
_CODERS = ("best", "rans", "wcode")


def convert(src: "os.PathLike[str] | str", dst: "os.PathLike[str] | str", *,
            optimize: bool = True, weights: str = "fp32", entropy: bool = False,
            coder: Optional[str] = None, block: Optional[int] = None,
            pack: bool = False, progress: Progress = None) -> str:
    """Converts a TFLite or ONNX model (or rewrites a .ksm) into ``dst`` (.ksm), as
    ``ks-convert SRC DST`` does. Options mirror its flags: ``optimize=False`` is
    ``--no-optimize``; ``weights`` is the storage of conv/FC weights (``fp32``, ``fp16``,
    ``int8``, ``int4``); ``entropy``, ``coder`` (``best``, ``rans``, ``wcode``), ``block`` (int4
    block size) and ``pack`` (format 1.2 lossless packing). ``progress``: see
    :func:`progress_callback` (stage ``"converting"``: read, import, optimize, write). Returns
    ``dst`` as a string. Ctrl-C stops the converter and removes ``dst``.

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
    cb = progress_callback(progress)
    if cb is not None:
        args.append("--progress-lines")
    run_tool("ks-convert", args, output=dst_s, progress=cb)
    return dst_s


def list_ops() -> Dict[str, Any]:
    """The operators each importer converts, with their constraints, as ``ks-convert --list-ops
    --json`` reports them (read from the importers' own tables): ``{"importers": [{"format":
    "tflite"|"onnx", "notes": str, "ops": [{"name": str, "constraints": str}]}]}``."""
    import json

    return json.loads(run_tool("ks-convert", ["--list-ops", "--json"]).stdout)
