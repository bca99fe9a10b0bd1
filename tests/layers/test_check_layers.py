#!/usr/bin/env python3
"""scripts/check-layers passes on the tree and fails on planted upward and sideways includes and
on a stale exception. Usage: test_check_layers.py SOURCE_DIR [BUILD_DIR]"""

import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(sys.argv[1])
CHECK = os.path.join(ROOT, "scripts", "check-layers")
failures = []


def run(*args):
    p = subprocess.run([sys.executable, CHECK, *args], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


def expect(name, rc_want, args, must_contain=()):
    rc, out = run(*args)
    ok = rc == rc_want and all(s in out for s in must_contain)
    print(f"{'ok  ' if ok else 'FAIL'} {name} (exit {rc})")
    if not ok:
        print(out)
        failures.append(name)


# The tree as it is; with the build tree's object files the calls are checked too.
expect("tree passes (includes)", 0, [])
if len(sys.argv) > 2 and os.path.isdir(os.path.join(sys.argv[2], "engine")):
    expect("tree passes (includes and calls)", 0, ["--build", sys.argv[2]])

# Upward: the base floor including the CPU backend.
expect("planted upward include fails", 1,
       ["--plant", 'engine/base/planted.c=#include "../backends/cpu/impl.h"'],
       ["engine/base/planted.c:1: base includes engine/backends/cpu/impl.h (cpu)"])
# Upward through the include path: the core reaching a converter header by name.
expect("planted upward include by name fails", 1,
       ["--plant", 'engine/format/planted.c=#include <stdio.h>\\n#include "convert.h"'],
       ["engine/format/planted.c:2: core includes engine/convert/convert.h (convert)"])
# Sideways: the pipeline including a task API header (tasks sit above the pipeline).
expect("planted sideways include fails", 1,
       ["--plant", 'pipeline/src/planted.c=#include "kestrel/face.h"'],
       ["pipeline/src/planted.c:1: pipeline includes algos/include/kestrel/face.h (tasks)"])
# Allowed: a task including the pipeline API; a system header.
expect("planted allowed include passes", 0,
       ["--plant", 'algos/face/planted.c=#include "kestrel/pipeline.h"\\n#include <math.h>'])

# An exception that no longer occurs fails, so the list of known exceptions only shrinks.
with tempfile.TemporaryDirectory() as tmp:
    layers = os.path.join(tmp, "layers.txt")
    with open(os.path.join(ROOT, "docs", "layers.txt")) as f:
        text = f.read()
    with open(layers, "w") as f:
        f.write(text + "include engine/src/ir.c -> engine/backends/cpu/impl.h  # stale\n")
    expect("stale exception fails", 1, ["--layers", layers],
           ["'include engine/src/ir.c -> engine/backends/cpu/impl.h' no longer occurs"])

sys.exit(1 if failures else 0)
