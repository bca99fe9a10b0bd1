"""``kestrel visualize``: a model's graph as one self-contained HTML file.

The graph comes from ``ks-convert MODEL --graph-json`` (the converter's own reading of a .ksm,
.tflite or .onnx). The layout is computed here: longest-path layering (a node sits one row below
its deepest producer), then a few sweeps of barycentre ordering within each row to cut edge
crossings. The page is inline SVG plus a small inline script (zoom with the wheel, pan by
dragging, click a node for its details): no network, no external script, style sheet or font.
"""

from __future__ import annotations

import html
import json
import os
from typing import Any, Dict, List, Optional, Sequence

from . import _tools

_NODE_W, _NODE_H, _GAP_X, _GAP_Y = 180, 44, 30, 60


def graph(model: "os.PathLike[str] | str", optimize: bool = True) -> Dict[str, Any]:
    """The graph of ``model`` (.ksm, .tflite or .onnx) as ``ks-convert --graph-json`` prints it:
    ``tensors`` (``name``, ``dtype``, ``shape``, ``const_bytes``), ``nodes`` (``op``, ``name``,
    ``inputs``, ``outputs`` as tensor ids; -1 for an absent optional input), ``inputs`` and
    ``outputs`` (tensor ids). Raises :class:`ToolError` with the converter's message."""
    path = os.fspath(model)
    args = [path, "--graph-json"] + ([] if optimize else ["--no-optimize"])
    return json.loads(_tools.run_tool("ks-convert", args).stdout)


def layout(g: Dict[str, Any]) -> List[Dict[str, float]]:
    """Positions (``x``, ``y`` of the top-left corner, ``layer``) per node of ``g``: longest-path
    layers top to bottom, barycentre ordering within a layer."""
    nodes = g["nodes"]
    producer: Dict[int, int] = {}
    for i, n in enumerate(nodes):
        for t in n["outputs"]:
            producer[t] = i
    preds: List[List[int]] = [sorted({producer[t] for t in n["inputs"] if t in producer})
                              for n in nodes]
    succs: List[List[int]] = [[] for _ in nodes]
    for i, ps in enumerate(preds):
        for p in ps:
            succs[p].append(i)
    # nodes are in execution (topological) order, so one pass gives the longest path
    layer = [0] * len(nodes)
    for i, ps in enumerate(preds):
        earlier = [layer[p] for p in ps if p < i]
        layer[i] = 1 + max(earlier) if earlier else 0
    rows: List[List[int]] = [[] for _ in range(max(layer, default=-1) + 1)]
    for i, l in enumerate(layer):
        rows[l].append(i)
    pos: Dict[int, float] = {}
    for row in rows:
        for k, i in enumerate(row):
            pos[i] = float(k)

    def sweep(down: bool) -> None:
        order = rows[1:] if down else rows[-2::-1]
        for row in order:
            def bary(i: int) -> float:
                nb = preds[i] if down else succs[i]
                return sum(pos[j] for j in nb) / len(nb) if nb else pos[i]
            row.sort(key=bary)
            for k, i in enumerate(row):
                pos[i] = float(k)

    for _ in range(4):
        sweep(True)
        sweep(False)
    widest = max((len(r) for r in rows), default=1)
    out: List[Dict[str, float]] = [{} for _ in nodes]
    for l, row in enumerate(rows):
        offset = (widest - len(row)) * (_NODE_W + _GAP_X) / 2
        for k, i in enumerate(row):
            out[i] = {"x": offset + k * (_NODE_W + _GAP_X), "y": l * (_NODE_H + _GAP_Y),
                      "layer": l}
    return out


def _shape(t: Dict[str, Any]) -> str:
    s = t.get("shape")
    if s is None:
        return "?"
    return "x".join("?" if d < 0 else str(d) for d in s) or "scalar"


def _size(n: int) -> str:
    for unit, f in (("MB", 1e6), ("KB", 1e3)):
        if n >= f:
            return f"{n / f:.1f} {unit}"
    return f"{n} B"


def render_html(g: Dict[str, Any], title: str,
                kernels: Optional[Dict[int, Dict[str, Any]]] = None) -> str:
    """The HTML page for graph ``g`` (from :func:`graph`). ``kernels``: per node index, the
    session's profile entry (``op``, ``kernel``, ``ms``) as :meth:`Session.profile` reports it;
    an entry whose op is not the node's is ignored."""
    tensors, nodes = g["tensors"], g["nodes"]
    pos = layout(g)
    details = []
    total_w = 0
    # optimizer-made nodes have no name: their first output's name stands in
    labels = [n["name"] or next((tensors[t]["name"] for t in n["outputs"]
                                 if 0 <= t < len(tensors)), "") for n in nodes]
    for i, n in enumerate(nodes):
        ins = [tensors[t] for t in n["inputs"] if 0 <= t < len(tensors)]
        weights = [t for t in ins if t["const_bytes"]]
        d: Dict[str, Any] = {
            "index": i, "op": n["op"], "name": labels[i],
            "inputs": [f"{t['name']}: {_shape(t)} {t['dtype']}" +
                       (f" (constant, {_size(t['const_bytes'])})" if t["const_bytes"] else "")
                       for t in ins],
            "outputs": [f"{tensors[t]['name']}: {_shape(tensors[t])} {tensors[t]['dtype']}"
                        for t in n["outputs"] if 0 <= t < len(tensors)],
            "weight_bytes": sum(t["const_bytes"] for t in weights)}
        prof = kernels.get(i) if kernels else None
        if prof is not None and prof.get("op") == n["op"]:
            d["kernel"] = prof.get("kernel", "")
            d["ms"] = prof.get("ms")
        details.append(d)
    parts: List[str] = []
    producer = {t: i for i, n in enumerate(nodes) for t in n["outputs"]}
    for i, n in enumerate(nodes):
        for t in n["inputs"]:
            p = producer.get(t)
            if p is None:
                continue
            x1, y1 = pos[p]["x"] + _NODE_W / 2, pos[p]["y"] + _NODE_H
            x2, y2 = pos[i]["x"] + _NODE_W / 2, pos[i]["y"]
            my = (y1 + y2) / 2
            parts.append(f'<path class="e" d="M{x1:.0f},{y1:.0f} C{x1:.0f},{my:.0f} '
                         f'{x2:.0f},{my:.0f} {x2:.0f},{y2:.0f}"/>')
            lbl = _shape(tensors[t])
            parts.append(f'<text class="el" x="{(x1 + x2) / 2 + 4:.0f}" y="{my:.0f}">'
                         f'{html.escape(lbl)}</text>')
    for i, n in enumerate(nodes):
        x, y = pos[i]["x"], pos[i]["y"]
        total_w = max(total_w, int(x + _NODE_W))
        d = details[i]
        label = labels[i]
        sub = label[:26]
        extra = []
        if d["weight_bytes"]:
            extra.append(_size(d["weight_bytes"]))
        if "kernel" in d:
            extra.append(str(d["kernel"]))
        parts.append(
            f'<g class="n" data-i="{i}" transform="translate({x:.0f},{y:.0f})">'
            f'<rect width="{_NODE_W}" height="{_NODE_H}" rx="6"/>'
            f'<text x="8" y="16" class="op">{html.escape(n["op"])}</text>'
            f'<text x="8" y="30">{html.escape(sub)}</text>'
            f'<text x="8" y="41" class="k">{html.escape(" | ".join(extra)[:34])}</text>'
            f'<title>{html.escape(label)}</title></g>')
    height = (max((p["layer"] for p in pos), default=0) + 1) * (_NODE_H + _GAP_Y)
    in_names = ", ".join(f"{tensors[t]['name']} {_shape(tensors[t])} {tensors[t]['dtype']}"
                         for t in g["inputs"])
    weights_total = sum(t["const_bytes"] for t in tensors)
    summary = (f"{len(nodes)} nodes, {len(tensors)} tensors, weights {_size(weights_total)}; "
               f"inputs: {in_names}")
    data = json.dumps(details).replace("</", "<\\/")
    return _PAGE.format(title=html.escape(title), summary=html.escape(summary),
                        width=max(total_w, 200), height=max(height, 100),
                        svg="\n".join(parts), data=data)


def visualize(model: "os.PathLike[str] | str", output: "os.PathLike[str] | str", *,
              session: bool = False, threads: int = 1, backend: str = "cpu",
              optimize: bool = True) -> str:
    """Writes ``output``: one self-contained HTML page drawing ``model``'s graph (nodes, tensor
    shapes and dtypes, weight sizes). With ``session=True`` the model (a .ksm; a .tflite/.onnx is
    converted first) runs once on seeded random inputs with the profiler on (dynamic dimensions:
    1 for the batch, 320 for the others), and each node shows the kernel the session chose and
    its time. Returns ``output`` as a string."""
    import tempfile

    src = os.fspath(model)
    kernels: Optional[Dict[int, Dict[str, Any]]] = None
    with tempfile.TemporaryDirectory() as tmp:
        ksm = src
        if not src.endswith(".ksm"):
            ksm = os.path.join(tmp, "model.ksm")
            _tools.convert(src, ksm, optimize=optimize)
        g = graph(ksm)
        if session:
            kernels = _profile(ksm, threads, backend)
    page = render_html(g, os.path.basename(src), kernels)
    out = os.fspath(output)
    tmp_out = out + ".part"
    with open(tmp_out, "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(tmp_out, out)
    return out


def _profile(ksm: str, threads: int, backend: str) -> Dict[int, Dict[str, Any]]:
    import numpy as np

    from ._core import Model, Session

    with Model.load(ksm) as m, Session(m, threads=threads, backend=backend) as s:
        rng = np.random.default_rng(1)
        feeds = {}
        for t in m.inputs:
            # a dynamic dimension: 1 for the batch, 320 elsewhere (an image-sized input)
            shape = [d if d > 0 else (1 if k == 0 else 320) for k, d in enumerate(t.shape)]
            if t.dtype.kind == "f":
                feeds[t.name] = rng.uniform(-1, 1, shape).astype(t.dtype)
            else:
                feeds[t.name] = np.zeros(shape, t.dtype)
        s.run(feeds)
        prof = s.profile()
    return {int(p["index"]): p for p in prof}


_PAGE = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>{title}</title>
<style>
body{{margin:0;font:12px system-ui,sans-serif;display:flex;height:100vh}}
#v{{flex:1;overflow:hidden;cursor:grab;background:#fafafa}}
#side{{width:340px;overflow:auto;border-left:1px solid #ccc;padding:8px}}
.n rect{{fill:#e8f0fe;stroke:#4a6fa5}} .n.sel rect{{fill:#ffe9a8;stroke:#c08a00}}
.n text{{font-size:10px;fill:#222}} .n .op{{font-weight:bold;font-size:11px}}
.n .k{{fill:#7a3b00}} .n{{cursor:pointer}}
.e{{fill:none;stroke:#999}} .el{{font-size:9px;fill:#777}}
h1{{font-size:14px}} li{{word-break:break-all}}
</style></head><body>
<div id="v"><svg id="s" width="100%" height="100%"><g id="w">
{svg}
</g></svg></div>
<div id="side"><h1>{title}</h1><p>{summary}</p>
<p>Wheel: zoom. Drag: pan. Click a node: details.</p><div id="d"></div></div>
<script>
var D={data};
var W={width},H={height};
var s=document.getElementById('s'),w=document.getElementById('w');
var z=Math.min(1,(s.clientWidth||800)/W),tx=10,ty=10,drag=null;
function ap(){{w.setAttribute('transform','translate('+tx+','+ty+') scale('+z+')');}}
ap();
s.addEventListener('wheel',function(e){{e.preventDefault();var f=e.deltaY<0?1.15:1/1.15;
var r=s.getBoundingClientRect(),mx=e.clientX-r.left,my=e.clientY-r.top;
tx=mx-(mx-tx)*f;ty=my-(my-ty)*f;z*=f;ap();}},{{passive:false}});
s.addEventListener('mousedown',function(e){{drag=[e.clientX-tx,e.clientY-ty];}});
window.addEventListener('mousemove',function(e){{if(drag){{tx=e.clientX-drag[0];
ty=e.clientY-drag[1];ap();}}}});
window.addEventListener('mouseup',function(){{drag=null;}});
function esc(t){{return String(t).replace(/[&<>]/g,function(c){{
return {{'&':'&amp;','<':'&lt;','>':'&gt;'}}[c];}});}}
function li(a){{return '<ul>'+a.map(function(x){{return '<li>'+esc(x)+'</li>';}})
.join('')+'</ul>';}}
Array.prototype.forEach.call(document.querySelectorAll('.n'),function(g){{
g.addEventListener('click',function(e){{e.stopPropagation();
Array.prototype.forEach.call(document.querySelectorAll('.n.sel'),function(x){{
x.classList.remove('sel');}});g.classList.add('sel');
var d=D[+g.getAttribute('data-i')];
var h='<h1>#'+d.index+' '+esc(d.op)+'</h1><p>'+esc(d.name)+'</p>';
if(d.kernel!==undefined)h+='<p>kernel: <b>'+esc(d.kernel)+'</b>'+
(d.ms!=null?' ('+d.ms.toFixed(3)+' ms)':'')+'</p>';
if(d.weight_bytes)h+='<p>weights: '+d.weight_bytes+' bytes</p>';
h+='<p>inputs</p>'+li(d.inputs)+'<p>outputs</p>'+li(d.outputs);
document.getElementById('d').innerHTML=h;}});}});
</script></body></html>
"""
