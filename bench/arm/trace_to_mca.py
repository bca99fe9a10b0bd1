#!/usr/bin/env python3
"""One steady-state loop iteration, as executed, from a PC trace of bench/arm/insn_count.c.

    trace_to_mca.py TRACE BINARY OUT.s

TRACE holds "pc <hex>" lines recorded inside one function. The shortest period P with
trace[i] == trace[i + P] over three periods is one iteration of the innermost loop that was
running (every iteration took the same path); its instructions, disassembled from BINARY with
aarch64-linux-gnu-objdump, are written to OUT.s as a straight-line block for llvm-mca (branch
targets replaced by a label; llvm-mca models a branch as an instruction, not its effect). Prints
"period P".
"""
import re
import subprocess
import sys


def main() -> int:
    if len(sys.argv) != 4:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    pcs = [int(line.split()[1], 16) for line in open(sys.argv[1]) if line.startswith("pc ")]
    period = 0
    for p in range(1, len(pcs) // 3 + 1):
        if all(pcs[i] == pcs[i + p] for i in range(2 * p)):
            period = p
            break
    if not period:
        print(f"trace_to_mca: no repeating iteration in {len(pcs)} PCs", file=sys.stderr)
        return 1
    lo, hi = min(pcs[:period]), max(pcs[:period]) + 4
    dis = subprocess.run(
        ["aarch64-linux-gnu-objdump", "-d", "--no-show-raw-insn", f"--start-address={lo:#x}",
         f"--stop-address={hi:#x}", sys.argv[2]],
        check=True, capture_output=True, text=True).stdout
    text = {}
    for line in dis.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(\S.*)$", line)
        if not m:
            continue
        insn = m.group(2)
        insn = re.sub(r"\s*//.*$", "", insn)  # objdump comments
        insn = re.sub(r"\s*<[^>]*>", "", insn)  # symbolic targets
        # branch targets (an address operand) -> a label
        bm = re.match(r"(b(\.\w+)?|bl|cbn?z|tbn?z)\s+(.*)$", insn)
        if bm:
            ops = [o.strip() for o in bm.group(3).split(",")]
            ops[-1] = ".Lt"
            insn = bm.group(1) + " " + ", ".join(ops)
        # adrp's page address -> the label too (its value does not matter to llvm-mca)
        insn = re.sub(r"^(adrp\s+\w+,\s*)\S+$", r"\1.Lt", insn)
        text[int(m.group(1), 16)] = insn.replace("\t", " ")
    with open(sys.argv[3], "w") as f:
        f.write(".Lt:\n")
        for pc in pcs[:period]:
            f.write(text[pc] + "\n")
    print(f"period {period}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
