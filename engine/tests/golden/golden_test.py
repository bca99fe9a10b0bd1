#!/usr/bin/env python3
"""Golden test of one model: Kestrel against the reference runtime.

Usage:
    golden_test.py MODEL --ks-convert PATH --ks-run PATH --cache DIR [--results TSV]
                   [--work DIR] [--sets NAME,...] [--emulator CMD]
                   [--precision P --fp-rel-l2 X --fp-abs X] [--backend B]

MODEL is a path or a path relative to models/ or ../shared/data. The script makes (or reuses)
the inputs and reference outputs (make_reference.py), converts MODEL with
`ks-convert MODEL OUT.ksm`, runs `ks-run OUT.ksm --input NAME=FILE.npy ... --output-dir DIR` per
input set, and compares every output (rules in golden_common.compare):

    float outputs      relative L2 <= 1e-4 and max |diff| <= 1e-3 * max(1, max |ref|)
    uint8/int8 outputs |diff| <= 1 quantum everywhere and >= 99 % bit-exact
    integer outputs    >= 99 % equal (ArgMax labels flip on near-ties)

--precision runs ks-run at that session precision (the fp16 variant: `--precision fp16`, float
tolerances widened with --fp-rel-l2 / --fp-abs). --backend runs it on that backend (`vulkan`:
the golden_vk tests). --oracle-precision P compares with Kestrel's own CPU run at precision P
instead of the reference runtime, with the same rules: a quantized model on a GPU backend runs
its int8 layers dequantized (as KS_PRECISION_F32 does on the CPU), which moves uint8 outputs by
more than the int8 tolerance from the int8 reference, so the device is held to the CPU's f32 run.

It prints one line per output and appends one row per output to the results TSV (columns in
RESULT_COLUMNS), read by results_to_md.py for docs/models.md.

--emulator (default: $KS_GOLDEN_EMULATOR) prefixes both tools, for cross builds, e.g.
`--emulator "qemu-aarch64 -L /usr/aarch64-linux-gnu -cpu max"` (scripts/test-arm64).

Exit status: 0 pass, 1 fail, 77 skip (model file, tool or venv package missing).
"""

import argparse
import datetime
import fcntl
import os
import shlex
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_common as gc  # noqa: E402
import make_reference  # noqa: E402

RESULT_COLUMNS = ["date", "model", "set", "output", "dtype", "shape", "kind", "rel_l2", "max_abs",
                  "tol_abs", "pct_exact", "status", "ks_ms", "runtime"]


def _run(cmd, what, timeout_s):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return False, f"{what} timed out after {timeout_s} s: {' '.join(cmd)}"
    if p.returncode != 0:
        return False, f"{what} failed (exit {p.returncode}): {' '.join(cmd)}\n{p.stdout.strip()}"
    return True, p.stdout


def _append_results(path, rows):
    if not path:
        return
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # ctest -j runs several models at once
        if f.tell() == 0:
            f.write("\t".join(RESULT_COLUMNS) + "\n")
        for r in rows:
            f.write("\t".join(str(r.get(c, "")) for c in RESULT_COLUMNS) + "\n")
        fcntl.flock(f, fcntl.LOCK_UN)


def _fmt(x):
    return "nan" if x != x else f"{x:.3g}"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model")
    ap.add_argument("--ks-convert", required=True)
    ap.add_argument("--ks-run", required=True)
    ap.add_argument("--cache", required=True, help="reference cache dir (build tree)")
    ap.add_argument("--work", help="dir for the .ksm and Kestrel outputs (default: CACHE/../work)")
    ap.add_argument("--results", help="results TSV to append to")
    ap.add_argument("--sets", help="comma-separated input sets to run (default: all)")
    ap.add_argument("--timeout", type=int, default=1200, help="per tool invocation, seconds")
    ap.add_argument("--precision", help="ks-run --precision (e.g. fp16; default: as stored)")
    ap.add_argument("--backend", help="ks-run --backend (e.g. vulkan; default: the CPU)")
    ap.add_argument("--oracle-precision",
                    help="compare with Kestrel's CPU at this precision instead of the reference "
                         "runtime (e.g. f32: a quantized model on a GPU backend, which runs its "
                         "int8 layers dequantized)")
    ap.add_argument("--fp-rel-l2", type=float, default=gc.FP32_REL_L2,
                    help="float outputs: rel L2 tolerance (default %(default)g)")
    ap.add_argument("--fp-abs", type=float, default=gc.FP32_ABS,
                    help="float outputs: max |diff| <= FP_ABS * max(1, max |ref|) "
                         "(default %(default)g)")
    ap.add_argument("--emulator", default=os.environ.get("KS_GOLDEN_EMULATOR", ""),
                    help="command prefix that runs the tools (cross builds); "
                         "default $KS_GOLDEN_EMULATOR")
    args = ap.parse_args(argv)
    emu = shlex.split(args.emulator)

    for tool in (args.ks_convert, args.ks_run):
        if not (os.path.isfile(tool) and os.access(tool, os.X_OK)):
            gc.skip(f"tool {tool} not built")
    try:
        meta = make_reference.ensure_reference(args.model, args.cache)
    except FileNotFoundError as e:
        gc.skip(f"model {e} not found under {' or '.join(gc.SEARCH_ROOTS)} "
                "(run scripts/fetch-models; other models need ../shared/data)")
    except ImportError as e:
        gc.skip(f"reference runtime unavailable ({e}); run scripts/setup")

    model_path = meta["model"]
    s = gc.stem(model_path)
    model_cache = os.path.join(args.cache, s)
    work = os.path.join(args.work or os.path.join(os.path.dirname(os.path.abspath(args.cache)),
                                                  "work"), s)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    ksm = os.path.join(work, s + ".ksm")
    ok, out = _run(emu + [args.ks_convert, model_path, ksm], "ks-convert", args.timeout)
    if not ok:
        print(f"FAIL {s}: {out}")
        _append_results(args.results, [dict(date=datetime.date.today().isoformat(), model=s,
                                             set="-", output="-", status="convert-failed",
                                             runtime=meta.get("runtime", ""))])
        return 1

    wanted = set(args.sets.split(",")) if args.sets else None
    rows, failures = [], 0
    for st in meta["sets"]:
        if wanted is not None and st["name"] not in wanted:
            continue
        out_dir = os.path.join(work, st["name"])
        os.makedirs(out_dir, exist_ok=True)
        cmd = emu + [args.ks_run, ksm]
        for name, rel in st["inputs"].items():
            cmd += ["--input", f"{name}={os.path.join(model_cache, rel)}"]
        cmd += ["--output-dir", out_dir]
        if args.precision:
            cmd += ["--precision", args.precision]
        if args.backend:
            cmd += ["--backend", args.backend]
        t0 = datetime.datetime.now()
        ok, out = _run(cmd, "ks-run", args.timeout)
        ks_ms = (datetime.datetime.now() - t0).total_seconds() * 1000.0
        oracle_dir = out_dir + ".oracle"
        if ok and args.oracle_precision:
            os.makedirs(oracle_dir, exist_ok=True)
            ocmd = [c for c in cmd]
            ocmd[ocmd.index("--output-dir") + 1] = oracle_dir
            ocmd = ocmd[:ocmd.index("--output-dir") + 2] + ["--precision", args.oracle_precision]
            ok, out = _run(ocmd, "ks-run (oracle)", args.timeout)
        if not ok and args.backend and f"backend '{args.backend}'" in out:
            gc.skip(f"ks-run refused --backend {args.backend} here: {out.strip().splitlines()[-1]}")
        if not ok:
            print(f"FAIL {s} {st['name']}: {out}")
            rows.append(dict(model=s, set=st["name"], output="-", status="run-failed"))
            failures += 1
            continue
        for name, rel in st["ref"].items():
            if args.oracle_precision:
                ref = np.load(os.path.join(oracle_dir, gc.sanitize(name) + ".npy"))
            else:
                ref = np.load(os.path.join(model_cache, rel))
            got_path = os.path.join(out_dir, gc.sanitize(name) + ".npy")
            row = dict(model=s, set=st["name"], output=name, dtype=ref.dtype.name,
                       shape="x".join(map(str, ref.shape)), ks_ms=f"{ks_ms:.0f}",
                       runtime=meta.get("runtime", ""))
            if not os.path.isfile(got_path):
                row.update(status="missing")
                print(f"FAIL {s} {st['name']} {name}: ks-run wrote no {got_path}")
                failures += 1
                rows.append(row)
                continue
            try:
                got = np.load(got_path, allow_pickle=False)
            except (ValueError, OSError) as e:
                row.update(status="bad-npy")
                print(f"FAIL {s} {st['name']} {name}: cannot read {got_path}: {e}")
                failures += 1
                rows.append(row)
                continue
            c = gc.compare(ref, got, args.fp_rel_l2, args.fp_abs)
            row.update(kind=c["kind"], rel_l2=_fmt(c["rel_l2"]), max_abs=_fmt(c["max_abs"]),
                       tol_abs=_fmt(c["tol_abs"]), pct_exact=f"{c['pct_exact']:.2f}",
                       status="pass" if c["ok"] else "fail")
            rows.append(row)
            verdict = "ok  " if c["ok"] else "FAIL"
            print(f"{verdict} {s} {st['name']} {name} [{row['shape']} {row['dtype']}]: "
                  f"rel_l2={_fmt(c['rel_l2'])} max_abs={_fmt(c['max_abs'])} "
                  f"(tol {_fmt(c['tol_abs'])}) exact={c['pct_exact']:.2f}%"
                  + (f" -- {c['why']}" if c["why"] else ""))
            failures += 0 if c["ok"] else 1
    today = datetime.date.today().isoformat()
    for r in rows:
        r["date"] = today
        r.setdefault("runtime", meta.get("runtime", ""))
    _append_results(args.results, rows)
    if not rows:
        gc.skip(f"no input set selected for {s}")
    against = (f"Kestrel's CPU at --precision {args.oracle_precision}" if args.oracle_precision
               else meta.get('runtime', '?'))
    print(f"{s}: {'PASS' if failures == 0 else f'FAIL ({failures} problem(s))'} vs {against}")
    if failures:
        print(f"hint: engine/tests/golden/find_divergence.py {model_path} {ksm}")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
