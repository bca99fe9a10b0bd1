"""The nodes of a .ksm model as `ks-inspect --nodes` prints them, for the bench scripts
(bench/isa_families.py, bench/gpu/bounds.py). Not a stable format: it follows ks-inspect."""
import re
import subprocess


def parse_nodes(inspect, model):
    """Per node index: dims (of the first output), ins / outs (tensor ids), ip (integer
    parameters), flops, and in0 (the dims of the first input: a node's output, or the graph's
    first input for an operand no node makes; None when unknown)."""
    out = subprocess.run([inspect, model, "--nodes"], capture_output=True, text=True,
                         check=True).stdout
    shape, nodes, graph_in = {}, {}, None
    for line in out.splitlines():
        m = re.match(r"input \d+: \S+ \w+ \[([\d,]+)\]", line)
        if m and graph_in is None:
            graph_in = [int(x) for x in m.group(1).split(",")]
        if not line.startswith("#"):
            continue
        idx = int(line[1:].split()[0])
        dm = re.search(r"\[([\d,]*)\]", line)
        om = re.search(r" out=([\d,]+)", line)
        im = re.search(r" in=([\d,-]+)", line)
        ipm = re.search(r" ip=([-\d,]+)", line)
        fm = re.search(r"flops=(\d+)", line)
        dims = [int(x) for x in dm.group(1).split(",") if x] if dm else []
        outs = [int(x) for x in om.group(1).split(",")] if om else []
        for t in outs:
            shape[t] = dims  # ks-inspect prints the first output's dims
        nodes[idx] = dict(dims=dims, outs=outs,
                          ins=[int(x) for x in im.group(1).split(",") if x and x != "-1"]
                          if im else [],
                          ip=[int(x) for x in ipm.group(1).split(",")] if ipm else [],
                          flops=int(fm.group(1)) if fm else 0)
    for n in nodes.values():
        n["shape"] = shape
        n["in0"] = (shape.get(n["ins"][0], graph_in) if n["ins"] else None)
    return nodes
