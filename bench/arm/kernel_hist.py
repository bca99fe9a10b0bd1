#!/usr/bin/env python3
"""Instructions per function of one inference, from two PC traces of insn_count.c.

With the plugin's hist=1 the files hold a count per instruction ("pcn <hex> <count>") instead of
a trace, so no skip or limit is needed and a whole large model fits (YOLOX-nano: 400 M per
inference).

  kernel_hist.py TRACE_A TRACE_B BINARY [--base 0x5500000000] [--calls N] [--top K]

TRACE_A and TRACE_B are insn_count.c outputs ("pc <hex>" lines) of the same program over the
executable's text range with the same `skip`, B running N more inferences than A (default 1):
per function, (PCs in B - PCs in A) / N is its instruction count per inference. BINARY is the
AArch64 executable (for its symbols, via aarch64-linux-gnu-nm); --base is where qemu-user loads
a PIE (0x5500000000 for qemu-aarch64 7.2; 0 for a static non-PIE binary). Example, Kestrel's
ks-bench on one model (text range from `readelf -lW`; skip past the setup, the limit above the
larger trace's count):

  P=libinsn_count.so,lo=0x5500000000,hi=0x5500000000+TEXT_SIZE,skip=30000000,limit=67108864
  qemu-aarch64 -L SYSROOT -plugin $P,out=a.txt ks-bench M.ksm --threads 1 --warmup 1 --runs 1
  qemu-aarch64 -L SYSROOT -plugin $P,out=b.txt ks-bench M.ksm --threads 1 --warmup 1 --runs 2
  bench/arm/kernel_hist.py a.txt b.txt ks-bench
"""

import argparse
import bisect
import collections
import subprocess
import sys


def symbols(binary):
    out = subprocess.run(["aarch64-linux-gnu-nm", "-S", "--defined-only", binary], check=True,
                         text=True, stdout=subprocess.PIPE).stdout
    syms = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "tTwW":
            syms.append((int(f[0], 16), int(f[1], 16), f[3]))
    return sorted(syms)


def per_function(trace, syms, base):
    pcs = collections.Counter()
    with open(trace) as fh:
        for line in fh:
            if line.startswith("pc "):
                pcs[line[3:-1]] += 1
            elif line.startswith("pcn "):  # insn_count.c hist=1: "pcn <hex> <count>"
                f = line.split()
                pcs[f[1]] += int(f[2])
    starts = [s[0] for s in syms]
    hist = collections.Counter()
    for pc, n in pcs.items():
        off = int(pc, 16) - base
        i = bisect.bisect_right(starts, off) - 1
        inside = i >= 0 and off < syms[i][0] + syms[i][1]
        hist[syms[i][2] if inside else "(no symbol)"] += n
    return hist


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trace_a")
    ap.add_argument("trace_b")
    ap.add_argument("binary")
    ap.add_argument("--base", type=lambda s: int(s, 0), default=0x5500000000)
    ap.add_argument("--calls", type=int, default=1)
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    syms = symbols(args.binary)
    a = per_function(args.trace_a, syms, args.base)
    b = per_function(args.trace_b, syms, args.base)
    diff = {k: (b[k] - a.get(k, 0)) / args.calls for k in b}
    total = sum(diff.values())
    if total <= 0:
        print("kernel_hist: trace B has no more instructions than trace A", file=sys.stderr)
        return 1
    print(f"{total:14,.0f}  100.0 %  (the executable's code, per inference)")
    for name, n in sorted(diff.items(), key=lambda kv: -kv[1])[:args.top]:
        print(f"{n:14,.0f}  {100 * n / total:5.1f} %  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
