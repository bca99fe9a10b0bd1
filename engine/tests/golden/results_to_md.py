#!/usr/bin/env python3
"""Render the golden results TSV into the model table of docs/models.md.

Usage:
    results_to_md.py [--results BUILD/golden_results.tsv] [--doc docs/models.md] [--stdout]

The table has one row per model of engine/tests/golden/models.txt: task, file, source, op count and
inputs (from ../shared/data/MANIFEST.tsv when present, and the model file itself for the op
count), then the worst errors over all outputs and input sets of the latest run of each model
in the results TSV: relative L2, max abs error, min % exact, and pass/fail. It replaces the text
between the "<!-- golden-table:begin -->" and "<!-- golden-table:end -->" markers of the doc
(or prints the table with --stdout). Without --results the error columns stay empty.
"""

import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_common as gc  # noqa: E402

BEGIN, END = "<!-- golden-table:begin -->", "<!-- golden-table:end -->"


def read_models():
    with open(os.path.join(gc.HERE, "models.txt")) as f:
        return [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]


def read_manifest():
    rows = {}
    for root in gc.SEARCH_ROOTS[1:]:
        path = os.path.join(root, "MANIFEST.tsv")
        if os.path.isfile(path):
            with open(path, newline="") as f:
                for r in csv.DictReader(f, delimiter="\t"):
                    rows[r["file"]] = r
    return rows


def op_count(path):
    try:
        if path.endswith(".onnx"):
            import onnx
            return str(len(onnx.load(path, load_external_data=False).graph.node))
        from ai_edge_litert.interpreter import Interpreter
        return str(len(Interpreter(model_path=path)._get_ops_details()))  # noqa: SLF001
    except Exception:  # noqa: BLE001 (an unreadable model just leaves the cell empty)
        return ""


def short_source(src):
    if src.startswith("npm "):
        return src.split(":")[0]
    if src.startswith("github "):
        repo = src.split()[1].split("@")[0]
        return f"github {repo}"
    return src.split(":")[0]


def worst(results, stem):
    """Aggregate the rows of the last run (last date) of one model."""
    rows = [r for r in results if r.get("model") == stem]
    if not rows:
        return None
    last = max(r["date"] for r in rows)
    rows = [r for r in rows if r["date"] == last]

    def num(r, k):
        try:
            return float(r[k])
        except (KeyError, ValueError):
            return float("nan")
    rel = [num(r, "rel_l2") for r in rows if r.get("kind") == "fp"]
    mabs = [num(r, "max_abs") for r in rows if r.get("kind") in ("fp", "quant")]
    exact = [num(r, "pct_exact") for r in rows if r.get("kind")]
    statuses = {r.get("status", "") for r in rows}
    status = "pass" if statuses == {"pass"} else ("fail: " + ",".join(sorted(statuses - {"pass"})))
    fmt = lambda xs, f: f(xs) if xs and all(x == x for x in xs) else ""  # noqa: E731
    return dict(rel=fmt(rel, lambda x: f"{max(x):.2g}"), abs=fmt(mabs, lambda x: f"{max(x):.2g}"),
                exact=fmt(exact, lambda x: f"{min(x):.2f}"), status=status, date=last,
                runtime=rows[-1].get("runtime", ""))


def render(results):
    manifest = read_manifest()
    out = ["| task | file | source | ops | input | rel L2 (max) | max abs | exact % (min) | "
           "status | reference |",
           "|---|---|---|---:|---|---:|---:|---:|---|---|"]
    for rel in read_models():
        m = manifest.get(rel, {})
        path = gc.find_file(rel)
        w = worst(results, gc.stem(rel)) or {}
        out.append("| " + " | ".join([
            m.get("task", rel.split("/")[0]), os.path.basename(rel),
            short_source(m.get("source", "")), op_count(path) if path else "",
            m.get("input", "").replace("|", "/"), w.get("rel", ""), w.get("abs", ""),
            w.get("exact", ""), w.get("status", "not run"), w.get("runtime", "")]) + " |")
    return "\n".join(out) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results")
    ap.add_argument("--doc", default=os.path.join(gc.ROOT, "docs", "models.md"))
    ap.add_argument("--stdout", action="store_true")
    args = ap.parse_args(argv)
    results = []
    if args.results:
        with open(args.results, newline="") as f:
            results = list(csv.DictReader(f, delimiter="\t"))
    table = render(results)
    if args.stdout:
        sys.stdout.write(table)
        return 0
    with open(args.doc) as f:
        doc = f.read()
    b, e = doc.find(BEGIN), doc.find(END)
    if b < 0 or e < b:
        print(f"{args.doc}: markers {BEGIN} / {END} not found", file=sys.stderr)
        return 1
    doc = doc[:b + len(BEGIN)] + "\n" + table + doc[e:]
    with open(args.doc, "w") as f:
        f.write(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
