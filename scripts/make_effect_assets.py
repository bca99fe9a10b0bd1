#!/usr/bin/env python3
"""Generates the six sample AR effect packages' folders under samples/effects/: every asset
(sprite frames, face paint, LUT, glTF mesh, backdrop, thumbnails) and every manifest.json.

Usage (project venv: numpy + Pillow only):
    .venv/bin/python scripts/make_effect_assets.py [--out samples/effects] [--preview DIR]

Everything is drawn procedurally here, from the canonical face mesh in
models/face_landmarks/geometry_pipeline_metadata_landmarks.binarypb (read with
scripts/render_uv_template.py's parser) and fixed random seeds, so a rerun writes identical
bytes (given the same numpy/Pillow/zlib). The build does not run this script: it zips the
committed folders into .kfx packages (samples/effects/effects.cmake). See
samples/effects/README.md for what each effect does, and docs/effects-format.md for the format.

Conventions used below:
- "canonical space": the face mesh's metric space (centimetre-like units, x to the subject's
  left, y up, z towards the camera; origin near the head centre).
- "UV layout": docs/effects-format.md section 5; pixel (0, 0) is (u, v) = (0, 0), v grows down.
- Drawing is supersampled (SS times) and reduced with a box filter for clean anti-aliased edges.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np
from PIL import Image, ImageDraw, ImageFilter

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from render_uv_template import DEFAULT_IN, read_mesh  # noqa: E402

SS = 4  # supersampling factor for 2D drawing
FORMAT_VERSION = "1.0.0"
AUTHOR = "Kestrel samples"
THUMB_PX = 256

# MediaPipe face-mesh landmark indices (vertex i of the canonical mesh is landmark i).
LM_FOREHEAD_TOP = 10
LM_FOREHEAD_SIDES = (109, 338)
LM_NOSE_TIP = 1
LM_NOSE_BELOW = 4
LIPS_OUTER = [61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291, 409, 270, 269, 267, 0, 37, 39,
              40, 185]
LIPS_INNER = [78, 95, 88, 178, 87, 14, 317, 402, 318, 324, 308, 415, 310, 311, 312, 13, 82, 81,
              80, 191]


# ---------------------------------------------------------------------------------------------
# Small utilities


def save_png(img, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    img.save(path, format="PNG", optimize=False, compress_level=9)


def save_json(obj, path):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


def down(img, size):
    """Supersampled canvas -> final size (box filter = exact area average)."""
    return img.resize(size, Image.BOX)


def hex_rgb(h):
    h = h.lstrip("#")
    return tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))


def lerp(a, b, t):
    return a + (b - a) * t


def vgrad(w, h, stops):
    """Vertical gradient, stops = [(t, (r, g, b)), ...] with t in [0, 1] top to bottom."""
    t = np.linspace(0.0, 1.0, h)[:, None]
    ts = np.array([s[0] for s in stops])
    out = np.zeros((h, 1, 3))
    for c in range(3):
        out[:, 0, c] = np.interp(t[:, 0], ts, [s[1][c] for s in stops])
    return np.repeat(out, w, axis=1)


def bezier(p0, p1, p2, p3, n):
    t = np.linspace(0.0, 1.0, n)[:, None]
    p0, p1, p2, p3 = (np.asarray(p, dtype=np.float64) for p in (p0, p1, p2, p3))
    return ((1 - t) ** 3) * p0 + 3 * ((1 - t) ** 2) * t * p1 + 3 * (1 - t) * t * t * p2 + \
        (t ** 3) * p3


def rotate_pts(pts, angle_deg, centre):
    a = math.radians(angle_deg)
    c, s = math.cos(a), math.sin(a)
    p = np.asarray(pts, dtype=np.float64) - centre
    return np.stack([p[:, 0] * c - p[:, 1] * s, p[:, 0] * s + p[:, 1] * c], axis=1) + centre


def poly(draw, pts, fill):
    draw.polygon([tuple(map(float, p)) for p in pts], fill=fill)


def star_pts(cx, cy, r_out, r_in, n=5, rot_deg=-90.0):
    pts = []
    for k in range(2 * n):
        r = r_out if k % 2 == 0 else r_in
        a = math.radians(rot_deg + 180.0 * k / n)
        pts.append((cx + r * math.cos(a), cy + r * math.sin(a)))
    return pts


def heart_pts(cx, cy, size, n=96):
    """Classic parametric heart, point down, ~size wide."""
    t = np.linspace(0, 2 * math.pi, n, endpoint=False)
    x = 16 * np.sin(t) ** 3
    y = -(13 * np.cos(t) - 5 * np.cos(2 * t) - 2 * np.cos(3 * t) - np.cos(4 * t))
    k = size / 34.0
    return np.stack([cx + x * k, cy + y * k], axis=1)


# ---------------------------------------------------------------------------------------------
# Canonical face mesh and a tiny software rasterizer (for thumbnails and previews)


class Face:
    def __init__(self):
        verts, tris = read_mesh(DEFAULT_IN)
        self.xyz = verts[:, :3].astype(np.float64)
        self.uv = verts[:, 3:5].astype(np.float64)
        self.tris = tris

    def uv_px(self, idx, size):
        return self.uv[idx] * (size - 1)


class Raster:
    """Orthographic frontal z-buffer renderer of canonical-space triangles into an RGB image.
    Image x = canonical x (the subject's left is the viewer's right), image y = -canonical y."""

    def __init__(self, size, centre=(0.0, 0.5), span_cm=22.0, bg=(236, 240, 246)):
        self.size = size
        self.k = size / span_cm
        self.cx, self.cy = centre
        self.rgb = np.zeros((size, size, 3), dtype=np.float64) + np.array(bg, np.float64) / 255
        self.z = np.full((size, size), -1e9)
        self.light = np.array([-0.35, 0.45, 1.0]) / np.linalg.norm([-0.35, 0.45, 1.0])

    def project(self, p):
        p = np.asarray(p, np.float64)
        return np.stack([(p[..., 0] - self.cx) * self.k + self.size / 2,
                         (self.cy - p[..., 1]) * self.k + self.size / 2], axis=-1)

    def shade(self, n, base, spec=0.0):
        """Lambert + Blinn-Phong highlight for normals n [N, 3] -> colours [N, 3]."""
        n = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-9)
        d = np.clip(n @ self.light, 0, None)[:, None]
        col = np.asarray(base, np.float64)[None, :] * (0.35 + 0.65 * d)
        if spec:
            h = self.light + np.array([0, 0, 1.0])
            h /= np.linalg.norm(h)
            col = col + spec * np.clip(n @ h, 0, None)[:, None] ** 40
        return col

    def triangles(self, xyz, tris, colour_fn, alpha=1.0, zbias=0.0):
        """colour_fn(tri_index, bary[N,3], verts[3]) -> [N,3] colours in [0, 1]."""
        scr = self.project(xyz)
        for ti, (a, b, c) in enumerate(tris):
            p = scr[[a, b, c]]
            x0, y0 = np.floor(p.min(0)).astype(int)
            x1, y1 = np.ceil(p.max(0)).astype(int)
            x0, y0 = max(x0, 0), max(y0, 0)
            x1, y1 = min(x1, self.size - 1), min(y1, self.size - 1)
            if x1 < x0 or y1 < y0:
                continue
            den = (p[1, 1] - p[2, 1]) * (p[0, 0] - p[2, 0]) + \
                (p[2, 0] - p[1, 0]) * (p[0, 1] - p[2, 1])
            if abs(den) < 1e-12:
                continue
            ys, xs = np.mgrid[y0:y1 + 1, x0:x1 + 1]
            xs = xs.ravel() + 0.5
            ys = ys.ravel() + 0.5
            w0 = ((p[1, 1] - p[2, 1]) * (xs - p[2, 0]) + (p[2, 0] - p[1, 0]) * (ys - p[2, 1])) / den
            w1 = ((p[2, 1] - p[0, 1]) * (xs - p[2, 0]) + (p[0, 0] - p[2, 0]) * (ys - p[2, 1])) / den
            w2 = 1 - w0 - w1
            inside = (w0 >= 0) & (w1 >= 0) & (w2 >= 0)
            if not inside.any():
                continue
            bary = np.stack([w0, w1, w2], axis=1)[inside]
            xi = (xs[inside] - 0.5).astype(int)
            yi = (ys[inside] - 0.5).astype(int)
            z = bary @ xyz[[a, b, c], 2] + zbias
            vis = z > self.z[yi, xi]
            if not vis.any():
                continue
            xi, yi, z, bary = xi[vis], yi[vis], z[vis], bary[vis]
            col = colour_fn(ti, bary, (a, b, c))
            if alpha >= 1.0:
                self.z[yi, xi] = z
                self.rgb[yi, xi] = col
            else:
                self.rgb[yi, xi] = self.rgb[yi, xi] * (1 - alpha) + col * alpha

    def image(self, out_size=None):
        img = Image.fromarray((np.clip(self.rgb, 0, 1) * 255 + 0.5).astype(np.uint8), "RGB")
        return down(img, (out_size, out_size)) if out_size else img


SKIN = np.array([0.93, 0.76, 0.64])


def face_normals(face):
    n = np.zeros_like(face.xyz)
    v = face.xyz
    t = face.tris
    fn = np.cross(v[t[:, 1]] - v[t[:, 0]], v[t[:, 2]] - v[t[:, 0]])
    for k in range(3):
        np.add.at(n, t[:, k], fn)
    # The mesh's winding may face either way; make normals point towards the camera (+z) on
    # average so lighting is right.
    if n[:, 2].sum() < 0:
        n = -n
    return n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-9)


def render_face(r, face, texture=None):
    """Skin-shaded face, optionally with an RGBA UV-layout texture composited on the skin."""
    normals = face_normals(face)
    tex = None
    if texture is not None:
        tex = np.asarray(texture.convert("RGBA"), np.float64) / 255
        th, tw = tex.shape[:2]

    def colour(ti, bary, abc):
        n = bary @ normals[list(abc)]
        n /= np.linalg.norm(n, axis=1, keepdims=True)
        d = np.clip(n @ r.light, 0, 1)[:, None]
        base = np.repeat(SKIN[None, :], len(bary), axis=0)
        if tex is not None:
            uv = bary @ face.uv[list(abc)]
            tx = np.clip((uv[:, 0] * (tw - 1)).round().astype(int), 0, tw - 1)
            ty = np.clip((uv[:, 1] * (th - 1)).round().astype(int), 0, th - 1)
            t = tex[ty, tx]
            base = base * (1 - t[:, 3:4]) + t[:, :3] * t[:, 3:4]
        return base * (0.45 + 0.55 * d)

    r.triangles(face.xyz, face.tris, colour)


def face_features(img, r, face):
    """Eyes (dark ellipses) and a mouth line drawn over a rendered face, for thumbnails."""
    d = ImageDraw.Draw(img)
    for a, b in ((33, 133), (362, 263)):
        p = r.project(face.xyz[[a, b]])
        c = p.mean(0)
        w = abs(p[1, 0] - p[0, 0]) * 0.36
        d.ellipse([c[0] - w, c[1] - w * 0.55, c[0] + w, c[1] + w * 0.55], fill=(60, 42, 36))
    return img


# ---------------------------------------------------------------------------------------------
# 1. cat_ears: animated ears sticker (8 frames) + whiskers/nose sticker shown on mouth open

EAR_W, EAR_H = 512, 256
GINGER = (222, 134, 64)
GINGER_DARK = (150, 78, 34)
EAR_PINK = (248, 172, 182)

# Twitch cycle: frames 0-4 move, 5-7 rest (8 fps => one twitch per second). Degrees, positive =
# clockwise on screen. The viewer-left ear leads, the other follows a frame later.
TWITCH_L = [0, -7, -15, -9, -3, 0, 0, 0]
TWITCH_R = [0, 0, 6, 14, 8, 3, 0, 0]


def ear_shape(base_l, base_r, tip, bulge):
    """Closed outline of one ear: a triangle with outward-curved sides and a rounded tip."""
    base_l, base_r, tip = (np.asarray(p, np.float64) for p in (base_l, base_r, tip))
    left = bezier(base_l, base_l + (tip - base_l) * 0.35 + np.array([-bulge, 0]),
                  tip + np.array([-bulge * 0.6, bulge * 0.9]), tip, 40)
    right = bezier(tip, tip + np.array([bulge * 0.6, bulge * 0.9]),
                   base_r + (tip - base_r) * 0.35 + np.array([bulge, 0]), base_r, 40)
    sag = np.array([0, bulge * 0.5])
    bottom = bezier(base_r, base_r + sag, base_l + sag, base_l, 20)
    return np.concatenate([left, right[1:], bottom[1:-1]])


def draw_ear(canvas, cx, base_y, width, height, lean_deg, twitch_deg):
    s = SS
    pivot = np.array([cx, base_y])
    half = width / 2
    tip = np.array([cx + math.tan(math.radians(lean_deg)) * height, base_y - height])
    outer = ear_shape((cx - half, base_y), (cx + half, base_y), tip, width * 0.12)
    inner_tip = pivot + (tip - pivot) * 0.78 + np.array([0, 4 * s])
    inner = ear_shape((cx - half * 0.58, base_y - 4 * s), (cx + half * 0.58, base_y - 4 * s),
                      inner_tip, width * 0.08)
    outer = rotate_pts(outer, twitch_deg, pivot)
    inner = rotate_pts(inner, twitch_deg, pivot)
    w, h = canvas.size
    # Fur: vertical gradient from light ginger at the base to deeper ginger at the tip.
    grad = vgrad(w, h, [(0.0, GINGER_DARK), (0.45, GINGER), (1.0, (240, 170, 110))])
    fur = Image.fromarray(grad.astype(np.uint8), "RGB")
    mask = Image.new("L", (w, h), 0)
    poly(ImageDraw.Draw(mask), outer, 255)
    outline = mask.filter(ImageFilter.MaxFilter(2 * s + 1))
    dark = Image.new("RGBA", (w, h), GINGER_DARK + (255,))
    canvas.paste(dark, (0, 0), outline)
    canvas.paste(fur, (0, 0), mask)
    # Inner ear: pink with a soft lighter centre.
    pmask = Image.new("L", (w, h), 0)
    poly(ImageDraw.Draw(pmask), inner, 255)
    pink = vgrad(w, h, [(0.0, (236, 140, 156)), (1.0, EAR_PINK)])
    canvas.paste(Image.fromarray(pink.astype(np.uint8), "RGB"), (0, 0), pmask)
    # Fur tufts: a few white strokes from the inner base, kept inside the pink inner ear.
    tufts = Image.new("RGBA", (w, h), (0, 0, 0, 0))
    d = ImageDraw.Draw(tufts)
    for k, dx in enumerate((-0.22, -0.08, 0.08, 0.22)):
        p0 = np.array([cx + dx * width, base_y - 6 * s])
        p1 = p0 + np.array([dx * width * 0.5, -height * (0.32 + 0.05 * (k % 2))])
        seg = rotate_pts(bezier(p0, p0 + (p1 - p0) * 0.4 + [dx * 30 * s, 0],
                                p1 - [0, 10 * s], p1, 12), twitch_deg, pivot)
        d.line([tuple(q) for q in seg], fill=(255, 246, 236, 230), width=3 * s)
    alpha = np.minimum(np.asarray(tufts.getchannel("A")), np.asarray(pmask))
    tufts.putalpha(Image.fromarray(alpha.astype(np.uint8), "L"))
    canvas.alpha_composite(tufts)


def cat_ear_frame(i):
    s = SS
    canvas = Image.new("RGBA", (EAR_W * s, EAR_H * s), (0, 0, 0, 0))
    # Margins leave room for the twitch: a rotated ear's base corner swings down, its tip out.
    base_y = (EAR_H - 36) * s
    draw_ear(canvas, 134 * s, base_y, 164 * s, 184 * s, -14, TWITCH_L[i])
    draw_ear(canvas, (EAR_W - 134) * s, base_y, 164 * s, 184 * s, 14, TWITCH_R[i])
    return down(canvas, (EAR_W, EAR_H))


WHISK_W, WHISK_H = 512, 256


def whiskers_image():
    s = SS
    W, H = WHISK_W * s, WHISK_H * s
    img = Image.new("RGBA", (W, H), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    cx, cy = W / 2, H / 2
    # Whiskers: three gently curved strokes per side, starting at the whisker pads.
    for side in (-1, 1):
        for k, (dy, spread) in enumerate(((-22, -40), (6, 4), (32, 46))):
            p0 = np.array([cx + side * 62 * s, cy + dy * s])
            p3 = np.array([cx + side * 236 * s, cy + (dy + spread) * s])
            p1 = p0 + np.array([side * 60 * s, -8 * s])
            p2 = p3 + np.array([-side * 70 * s, -10 * s])
            pts = [tuple(q) for q in bezier(p0, p1, p2, p3, 40)]
            d.line(pts, fill=(40, 30, 28, 255), width=5 * s, joint="curve")
        # Whisker pad dots.
        for (px, py) in ((44, -14), (58, 4), (40, 20), (60, 24)):
            x, y = cx + side * px * s, cy + py * s
            d.ellipse([x - 4 * s, y - 4 * s, x + 4 * s, y + 4 * s], fill=(70, 48, 42, 255))
    # Nose: rounded pink triangle, point down, at the centre (the anchor).
    nose = np.concatenate([
        bezier((cx - 34 * s, cy - 22 * s), (cx - 30 * s, cy - 36 * s), (cx + 30 * s, cy - 36 * s),
               (cx + 34 * s, cy - 22 * s), 24),
        bezier((cx + 34 * s, cy - 22 * s), (cx + 30 * s, cy - 4 * s), (cx + 8 * s, cy + 14 * s),
               (cx, cy + 16 * s), 16)[1:],
        bezier((cx, cy + 16 * s), (cx - 8 * s, cy + 14 * s), (cx - 30 * s, cy - 4 * s),
               (cx - 34 * s, cy - 22 * s), 16)[1:-1]])
    nmask = Image.new("L", (W, H), 0)
    poly(ImageDraw.Draw(nmask), nose, 255)
    img.paste(Image.new("RGBA", (W, H), (120, 52, 62, 255)), (0, 0),
              nmask.filter(ImageFilter.MaxFilter(2 * s + 1)))
    img.paste(Image.new("RGBA", (W, H), (236, 128, 150, 255)), (0, 0), nmask)
    d = ImageDraw.Draw(img)
    d.ellipse([cx - 16 * s, cy - 28 * s, cx - 2 * s, cy - 20 * s], fill=(255, 214, 222, 255))
    return down(img, (WHISK_W, WHISK_H))


# Sticker placement (anchor offset in face widths, sprite width in face widths).
EARS_ANCHOR = {"landmarks": [LM_FOREHEAD_TOP, LM_FOREHEAD_SIDES[0], LM_FOREHEAD_SIDES[1]],
               "offset": [0.0, -0.42], "scale": 1.4}
WHISKERS_ANCHOR = {"landmarks": [LM_NOSE_TIP, LM_NOSE_BELOW], "offset": [0.0, 0.02],
                   "scale": 0.95}


def paste_sticker(img, r, face, sprite, anchor):
    """Thumbnail helper: places a sticker like a renderer would for a frontal canonical face."""
    width_px = np.linalg.norm(r.project(face.xyz[454]) - r.project(face.xyz[234]))
    a = r.project(face.xyz[anchor["landmarks"]]).mean(0)
    a = a + np.array(anchor["offset"]) * width_px
    w = int(round(anchor["scale"] * width_px))
    h = int(round(w * sprite.height / sprite.width))
    sp = sprite.resize((w, h), Image.LANCZOS)
    img.alpha_composite(sp, (int(round(a[0] - w / 2)), int(round(a[1] - h / 2))))


def paint_hair(r):
    """Thumbnail helper: a simple hair silhouette behind the (hairless) canonical face, so
    head-top stickers are seen where they sit on a real head."""
    img = Image.fromarray((r.rgb * 255 + 0.5).astype(np.uint8), "RGB")
    d = ImageDraw.Draw(img)
    c = r.project(np.array([0.0, 6.0, 0.0]))
    rx, ry = 8.6 * r.k, 8.4 * r.k
    d.ellipse([c[0] - rx, c[1] - ry, c[0] + rx, c[1] + ry * 0.9], fill=(92, 58, 40))
    r.rgb = np.asarray(img, np.float64) / 255


def make_cat_ears(out, face):
    d = os.path.join(out, "cat_ears")
    frames = []
    for i in range(len(TWITCH_L)):
        name = "ears/%02d.png" % i
        save_png(cat_ear_frame(i), os.path.join(d, name))
        frames.append(name)
    wh = whiskers_image()
    save_png(wh, os.path.join(d, "whiskers.png"))
    # Thumbnail: the canonical face with both stickers.
    big = THUMB_PX * 2
    r = Raster(big, centre=(0.0, 5.0), span_cm=32.0)
    paint_hair(r)
    render_face(r, face)
    img = face_features(r.image(), r, face).convert("RGBA")
    paste_sticker(img, r, face, cat_ear_frame(2), EARS_ANCHOR)
    paste_sticker(img, r, face, wh, WHISKERS_ANCHOR)
    save_png(down(img, (THUMB_PX, THUMB_PX)), os.path.join(d, "thumbnail.png"))
    save_json({
        "format_version": FORMAT_VERSION,
        "id": "dev.kestrel.samples.cat_ears",
        "name": "Cat ears",
        "author": AUTHOR,
        "thumbnail": "thumbnail.png",
        "requires": ["face_landmarks"],
        "max_faces": 4,
        "layers": [
            {"name": "whiskers", "kind": "sticker", "visible": False,
             "anchor": WHISKERS_ANCHOR,
             "sprite": {"frames": ["whiskers.png"]}},
            {"name": "ears", "kind": "sticker", "anchor": EARS_ANCHOR,
             "sprite": {"frames": frames, "fps": 8, "loop": True}},
        ],
        "states": [
            {"name": "idle", "actions": [{"action": "hide_layer", "layer": "whiskers"}]},
            {"name": "meow", "actions": [{"action": "show_layer", "layer": "whiskers"},
                                         {"action": "start_animation", "layer": "ears"}]},
        ],
        "initial_state": "idle",
        "triggers": [
            {"on": "mouth_open", "threshold": 0.35, "state": "meow"},
            {"on": "face_lost", "state": "idle"},
        ],
    }, os.path.join(d, "manifest.json"))


# ---------------------------------------------------------------------------------------------
# 2. glasses_3d: binary glTF 2.0 glasses in canonical face space

class MeshBuilder:
    def __init__(self):
        self.pos, self.nrm, self.idx = [], [], []

    def add(self, pos, nrm, idx):
        base = sum(len(p) for p in self.pos)
        self.pos.append(np.asarray(pos, np.float64))
        self.nrm.append(np.asarray(nrm, np.float64))
        self.idx.append(np.asarray(idx, np.int64) + base)

    def arrays(self):
        pos = np.concatenate(self.pos).astype(np.float32)
        nrm = np.concatenate(self.nrm)
        nrm = (nrm / np.linalg.norm(nrm, axis=1, keepdims=True)).astype(np.float32)
        idx = np.concatenate(self.idx).astype(np.uint16)
        if len(pos) > 65535:
            raise ValueError("primitive has %d vertices; uint16 indices need <= 65535" % len(pos))
        return pos, nrm, idx


def sweep(path, side, up, half_side, half_up, n_seg, closed):
    """Tube with an elliptical cross-section along `path` [N,3]; side/up [N,3] are the
    cross-section axes at each point. Returns positions, normals and triangle indices
    (outward facing, counter-clockwise seen from outside); open tubes get flat end caps."""
    n = len(path)
    th = np.linspace(0, 2 * math.pi, n_seg, endpoint=False)
    c, s = np.cos(th), np.sin(th)
    pos = path[:, None, :] + side[:, None, :] * (half_side * c)[None, :, None] + \
        up[:, None, :] * (half_up * s)[None, :, None]
    nrm = side[:, None, :] * (c / half_side)[None, :, None] + \
        up[:, None, :] * (s / half_up)[None, :, None]
    pos = pos.reshape(-1, 3)
    nrm = nrm.reshape(-1, 3)
    idx = []
    rings = n if closed else n - 1
    for i in range(rings):
        j = (i + 1) % n
        for k in range(n_seg):
            k1 = (k + 1) % n_seg
            a, b, cc, d = i * n_seg + k, i * n_seg + k1, j * n_seg + k1, j * n_seg + k
            idx += [(a, b, cc), (a, cc, d)]
    idx = np.array(idx)
    # Orientation check: the first triangle's normal must agree with the vertex normals.
    t = idx[0]
    fn = np.cross(pos[t[1]] - pos[t[0]], pos[t[2]] - pos[t[0]])
    if fn @ nrm[t[0]] < 0:
        idx = idx[:, ::-1]
    if closed:
        return pos, nrm, idx
    caps_pos, caps_nrm, caps_idx = [pos], [nrm], [idx]
    base = len(pos)
    for end, sign in ((0, -1.0), (n - 1, 1.0)):
        t_dir = path[min(end + 1, n - 1)] - path[max(end - 1, 0)]
        t_dir = sign * t_dir / np.linalg.norm(t_dir)
        ring = pos[end * n_seg:(end + 1) * n_seg]
        cp = np.concatenate([path[end][None, :], ring])
        caps_pos.append(cp)
        caps_nrm.append(np.repeat(t_dir[None, :], len(cp), axis=0))
        tri = np.array([(base, base + 1 + k, base + 1 + (k + 1) % n_seg) for k in range(n_seg)])
        tri_fn = np.cross(cp[tri[0, 1] - base] - cp[0], cp[tri[0, 2] - base] - cp[0])
        if tri_fn @ t_dir < 0:
            tri = tri[:, ::-1]
        caps_idx.append(tri)
        base += len(cp)
    return np.concatenate(caps_pos), np.concatenate(caps_nrm), np.concatenate(caps_idx)


def rounded_rect(cx, cy, half_w, half_h, power, n):
    """Superellipse |x/a|^p + |y/b|^p = 1, counter-clockwise (x right, y up), n points."""
    t = np.linspace(0, 2 * math.pi, n, endpoint=False)
    c, s = np.cos(t), np.sin(t)
    x = half_w * np.sign(c) * np.abs(c) ** (2.0 / power)
    y = half_h * np.sign(s) * np.abs(s) ** (2.0 / power)
    return np.stack([cx + x, cy + y], axis=1)


class Glasses:
    """Geometry of the sample glasses, fitted to the canonical face (all numbers in cm)."""
    HALF_W = 2.45        # lens half width
    HALF_H = 1.75        # lens half height
    POWER = 3.2          # superellipse exponent: a soft rounded rectangle
    WRAP = 0.16          # lens plane: z = z0 - WRAP * |x| (slight wrap around the face)
    CLEARANCE = 0.3      # minimum gap between the back of the rim and the face surface
    CHAMFER = 2.55       # inner-lower corner cut (room for the nose): d_nose + d_down <= this
    RIM_SIDE = 0.30      # rim cross-section half size in the lens plane ...
    RIM_DEPTH = 0.22     # ... and along the plane normal
    TEMPLE_HALF = (0.16, 0.30)  # temple cross-section half sizes (horizontal, vertical)

    def __init__(self, face):
        xyz = face.xyz
        eye_r = xyz[[33, 133, 159, 145]].mean(0)   # subject's right eye, x < 0
        eye_l = xyz[[263, 362, 386, 374]].mean(0)
        self.centres = [np.array([eye_r[0] + 0.05, eye_r[1] - 0.15]),
                        np.array([eye_l[0] - 0.05, eye_l[1] - 0.15])]
        # z0 so that every face vertex under a rim (in the xy footprint, grown by the rim
        # width) stays CLEARANCE behind the back of the rim.
        z0 = -1e9
        for c in self.centres:
            dx = np.abs(xyz[:, 0] - c[0]) / (self.HALF_W + 2 * self.RIM_SIDE)
            dy = np.abs(xyz[:, 1] - c[1]) / (self.HALF_H + 2 * self.RIM_SIDE)
            towards_nose = (xyz[:, 0] - c[0]) * -np.sign(c[0])
            under = (dx ** self.POWER + dy ** self.POWER <= 1.0) & \
                (towards_nose + (c[1] - xyz[:, 1]) <= self.CHAMFER + 2 * self.RIM_SIDE * 1.42)
            need = xyz[under, 2] + self.WRAP * np.abs(xyz[under, 0]) + self.CLEARANCE + \
                self.RIM_DEPTH
            z0 = max(z0, need.max())
        self.z0 = z0
        self.face = face

    def plane_z(self, x):
        return self.z0 - self.WRAP * np.abs(x)

    def plane_normal(self, x):
        # gradient of z - plane_z(x) = 0  ->  (WRAP * sign(x), 0, 1)
        nrm = np.stack([self.WRAP * np.sign(x), np.zeros_like(x), np.ones_like(x)], axis=-1)
        return nrm / np.linalg.norm(nrm, axis=-1, keepdims=True)

    def rim_path(self, i, n=96):
        c = self.centres[i]
        xy = rounded_rect(c[0], c[1], self.HALF_W, self.HALF_H, self.POWER, n)
        # Cut the corner next to the nose along the line d_nose + d_down = CHAMFER, then round
        # the new corners with a few passes of neighbour averaging.
        inward = -np.sign(c[0])
        excess = (xy[:, 0] - c[0]) * inward + (c[1] - xy[:, 1]) - self.CHAMFER
        cut = excess > 0
        xy[cut, 0] -= inward * excess[cut] / 2
        xy[cut, 1] += excess[cut] / 2
        for _ in range(6):
            xy = 0.5 * xy + 0.25 * (np.roll(xy, 1, axis=0) + np.roll(xy, -1, axis=0))
        return np.concatenate([xy, self.plane_z(xy[:, 0])[:, None]], axis=1)

    def build(self):
        frame = MeshBuilder()
        lenses = MeshBuilder()
        for i in range(2):
            path = self.rim_path(i)
            up = self.plane_normal(path[:, 0])
            tang = np.roll(path, -1, axis=0) - np.roll(path, 1, axis=0)
            side = np.cross(tang, up)
            side /= np.linalg.norm(side, axis=1, keepdims=True)
            # `side` must point away from the lens centre (outward in the plane).
            c3 = np.array([self.centres[i][0], self.centres[i][1], 0])
            if np.sum((path - c3)[:, :2] * side[:, :2]) < 0:
                side = -side
            frame.add(*sweep(path, side, up, self.RIM_SIDE, self.RIM_DEPTH, 12, True))
            # Lens: a fan over the rim outline, a hair behind the rim's centre line.
            inner = path - side * (self.RIM_SIDE * 0.5)
            centre = np.array([self.centres[i][0], self.centres[i][1],
                               self.plane_z(self.centres[i][0])])
            lp = np.concatenate([centre[None, :], inner])
            ln = self.plane_normal(lp[:, 0])
            m = len(inner)
            tri = np.array([(0, 1 + k, 1 + (k + 1) % m) for k in range(m)])
            fn = np.cross(lp[tri[0, 1]] - lp[0], lp[tri[0, 2]] - lp[0])
            if fn @ ln[0] < 0:
                tri = tri[:, ::-1]
            lenses.add(lp, ln, tri)
        # Bridge: an arch over the nose between the inner rims.
        xin = self.centres[1][0] - self.HALF_W
        yb = self.centres[1][1] + self.HALF_H * 0.45
        zb = float(self.plane_z(np.array([xin]))[0])
        nose_top = self.face.xyz[168]
        arch_y = max(yb + 0.25, nose_top[1] + 0.35)
        p = bezier((-xin - 0.05, yb, zb), (-xin * 0.5, arch_y, zb + 0.15),
                   (xin * 0.5, arch_y, zb + 0.15), (xin + 0.05, yb, zb), 24)
        tang = np.gradient(p, axis=0)
        tang /= np.linalg.norm(tang, axis=1, keepdims=True)
        fwd = np.array([0.0, 0.0, 1.0])
        side = np.cross(tang, fwd)
        side /= np.linalg.norm(side, axis=1, keepdims=True)
        upv = np.cross(side, tang)
        frame.add(*sweep(p, side, upv, 0.20, 0.24, 10, False))
        # Temples: from a hinge at each lens's outer edge, out and back along the head.
        for sgn, i in ((-1.0, 0), (1.0, 1)):
            c = self.centres[i]
            x_h = c[0] + sgn * (self.HALF_W + self.RIM_SIDE * 0.6)
            y_h = c[1] + self.HALF_H * 0.55
            z_h = float(self.plane_z(np.array([x_h]))[0]) - self.RIM_DEPTH
            half_face = abs(self.face.xyz[356, 0])
            p0 = np.array([x_h, y_h, z_h])
            p3 = np.array([sgn * (half_face + 0.45), y_h - 0.9, -5.5])
            p1 = p0 + np.array([sgn * 1.2, 0.0, -0.6])
            p2 = p3 + np.array([0.0, 0.3, 3.5])
            path = bezier(p0, p1, p2, p3, 28)
            tang = np.gradient(path, axis=0)
            tang /= np.linalg.norm(tang, axis=1, keepdims=True)
            upw = np.array([0.0, 1.0, 0.0])
            side = np.cross(tang, upw)
            side /= np.linalg.norm(side, axis=1, keepdims=True)
            upv = np.cross(side, tang)
            frame.add(*sweep(path, side, upv, self.TEMPLE_HALF[0], self.TEMPLE_HALF[1], 8,
                             False))
        return frame.arrays(), lenses.arrays()


FRAME_RGBA = [0.05, 0.045, 0.05, 1.0]
LENS_RGBA = [0.32, 0.22, 0.14, 0.42]  # warm brown tint, 42 % opaque


def glb_bytes(frame, lenses):
    """Binary glTF 2.0: one mesh, two primitives (frame: opaque, lenses: alpha-blended)."""
    bin_parts = []
    views, accessors = [], []

    def add_view(data, target):
        off = sum(len(b) for b in bin_parts)
        raw = data.tobytes()
        bin_parts.append(raw + b"\0" * (-len(raw) % 4))
        views.append({"buffer": 0, "byteOffset": off, "byteLength": len(raw), "target": target})
        return len(views) - 1

    def add_vec3(arr):
        v = add_view(arr, 34962)  # ARRAY_BUFFER
        accessors.append({"bufferView": v, "componentType": 5126, "count": int(len(arr)),
                          "type": "VEC3", "min": [float(x) for x in arr.min(0)],
                          "max": [float(x) for x in arr.max(0)]})
        return len(accessors) - 1

    def add_indices(arr):
        v = add_view(arr, 34963)  # ELEMENT_ARRAY_BUFFER
        accessors.append({"bufferView": v, "componentType": 5123, "count": int(len(arr)),
                          "type": "SCALAR", "min": [int(arr.min())], "max": [int(arr.max())]})
        return len(accessors) - 1

    prims = []
    for mat, (pos, nrm, idx) in enumerate((frame, lenses)):
        a_pos = add_vec3(pos)
        a_nrm = add_vec3(nrm)
        a_idx = add_indices(idx.reshape(-1))
        prims.append({"attributes": {"POSITION": a_pos, "NORMAL": a_nrm}, "indices": a_idx,
                      "material": mat, "mode": 4})
    binary = b"".join(bin_parts)
    doc = {
        "asset": {"version": "2.0", "generator": "Kestrel scripts/make_effect_assets.py"},
        "scene": 0,
        "scenes": [{"name": "glasses", "nodes": [0]}],
        "nodes": [{"name": "glasses", "mesh": 0}],
        "meshes": [{"name": "glasses", "primitives": prims}],
        "materials": [
            {"name": "frame", "pbrMetallicRoughness": {
                "baseColorFactor": FRAME_RGBA, "metallicFactor": 0.0, "roughnessFactor": 0.3}},
            {"name": "lens", "alphaMode": "BLEND", "doubleSided": True, "pbrMetallicRoughness": {
                "baseColorFactor": LENS_RGBA, "metallicFactor": 0.0, "roughnessFactor": 0.05}},
        ],
        "accessors": accessors,
        "bufferViews": views,
        "buffers": [{"byteLength": len(binary)}],
    }
    js = json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()
    js += b" " * (-len(js) % 4)
    body = struct.pack("<II", len(js), 0x4E4F534A) + js + \
        struct.pack("<II", len(binary), 0x004E4942) + binary
    return struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body


def check_glb(data):
    """Structural glTF 2.0 binary check (what a renderer relies on). Raises ValueError."""
    def need(cond, msg):
        if not cond:
            raise ValueError("glb: " + msg)
    need(len(data) >= 20, "too short")
    magic, version, length = struct.unpack_from("<4sII", data, 0)
    need(magic == b"glTF" and version == 2, "bad magic/version")
    need(length == len(data), "header length %d != file size %d" % (length, len(data)))
    jlen, jtype = struct.unpack_from("<II", data, 12)
    need(jtype == 0x4E4F534A and jlen % 4 == 0 and 20 + jlen <= len(data), "bad JSON chunk")
    doc = json.loads(data[20:20 + jlen].decode("utf-8"))
    pos = 20 + jlen
    need(pos + 8 <= len(data), "missing BIN chunk")
    blen, btype = struct.unpack_from("<II", data, pos)
    need(btype == 0x004E4942 and blen % 4 == 0 and pos + 8 + blen == len(data), "bad BIN chunk")
    binary = data[pos + 8:pos + 8 + blen]
    need(doc["asset"]["version"] == "2.0", "asset.version")
    need(len(doc["buffers"]) == 1 and "uri" not in doc["buffers"][0], "one GLB-stored buffer")
    need(doc["buffers"][0]["byteLength"] <= blen, "buffer longer than BIN chunk")
    sizes = {5126: 4, 5123: 2, 5125: 4}
    ncomp = {"SCALAR": 1, "VEC3": 3}
    fmt = {5126: "f", 5123: "H", 5125: "I"}
    for v in doc["bufferViews"]:
        need(v["byteOffset"] % 4 == 0, "bufferView offset not 4-aligned")
        need(v["byteOffset"] + v["byteLength"] <= doc["buffers"][0]["byteLength"],
             "bufferView past the buffer")

    def read(ai):
        a = doc["accessors"][ai]
        v = doc["bufferViews"][a["bufferView"]]
        n = a["count"] * ncomp[a["type"]]
        need(a.get("byteOffset", 0) + n * sizes[a["componentType"]] <= v["byteLength"],
             "accessor %d past its bufferView" % ai)
        off = v["byteOffset"] + a.get("byteOffset", 0)
        vals = np.frombuffer(binary, dtype="<" + fmt[a["componentType"]], count=n, offset=off)
        return a, vals.reshape(a["count"], ncomp[a["type"]])
    for mesh in doc["meshes"]:
        for p in mesh["primitives"]:
            need(p.get("mode", 4) == 4, "triangles only")
            a, P = read(p["attributes"]["POSITION"])
            need(a["type"] == "VEC3" and a["componentType"] == 5126, "POSITION type")
            need(np.allclose(P.min(0), a["min"]) and np.allclose(P.max(0), a["max"]),
                 "POSITION min/max")
            need(np.isfinite(P).all(), "POSITION not finite")
            a, N = read(p["attributes"]["NORMAL"])
            need(a["count"] == len(P), "NORMAL count")
            need(np.allclose(np.linalg.norm(N, axis=1), 1.0, atol=1e-4), "NORMAL not unit")
            a, I = read(p["indices"])
            need(a["type"] == "SCALAR" and len(I) % 3 == 0, "indices not triangles")
            need(int(I.max()) < len(P), "index %d >= %d vertices" % (int(I.max()), len(P)))
            mat = doc["materials"][p["material"]]
            rgba = mat["pbrMetallicRoughness"]["baseColorFactor"]
            need(len(rgba) == 4 and all(0 <= c <= 1 for c in rgba), "baseColorFactor")
    return doc


def make_glasses(out, face):
    d = os.path.join(out, "glasses_3d")
    g = Glasses(face)
    frame, lenses = g.build()
    data = glb_bytes(frame, lenses)
    check_glb(data)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "glasses.glb"), "wb") as f:
        f.write(data)
    # Thumbnail: face + glasses rendered with the z-buffer (face mesh occludes the temples).
    big = THUMB_PX * 2
    r = Raster(big, centre=(0.0, 1.2), span_cm=19.0)
    render_face(r, face)
    r.rgb = np.asarray(face_features(r.image(), r, face), np.float64) / 255
    for (pos, nrm, idx), rgba, spec in ((frame, FRAME_RGBA, 0.35), (lenses, LENS_RGBA, 0.0)):
        pos = pos.astype(np.float64)
        nrm = nrm.astype(np.float64)

        def colour(ti, bary, abc, nrm=nrm, rgba=rgba, spec=spec):
            n = bary @ nrm[list(abc)]
            return r.shade(n, rgba[:3], spec)
        r.triangles(pos, idx.reshape(-1, 3), colour, alpha=rgba[3])
    save_png(down(r.image(), (THUMB_PX, THUMB_PX)), os.path.join(d, "thumbnail.png"))
    save_json({
        "format_version": FORMAT_VERSION,
        "id": "dev.kestrel.samples.glasses_3d",
        "name": "3D glasses",
        "author": AUTHOR,
        "thumbnail": "thumbnail.png",
        "requires": ["face_landmarks"],
        "max_faces": 4,
        "layers": [{"name": "glasses", "kind": "mesh3d", "mesh": "glasses.glb"}],
    }, os.path.join(d, "manifest.json"))
    return g


# ---------------------------------------------------------------------------------------------
# 3. lipstick: three shades, each a makeup layer with its own strength parameter

SHADES = [  # name, colour, default strength (only the first is on by default)
    ("ruby", "#A3152F", 0.65),
    ("coral", "#E2584A", 0.0),
    ("mauve", "#9A5A6E", 0.0),
]


def lips_texture(size, face, colour):
    """UV-layout image with the lips (outer minus inner contour) filled, for previews."""
    s = SS
    img = Image.new("RGBA", (size * s, size * s), (0, 0, 0, 0))
    m = Image.new("L", img.size, 0)
    d = ImageDraw.Draw(m)
    poly(d, face.uv_px(LIPS_OUTER, size * s), 255)
    poly(d, face.uv_px(LIPS_INNER, size * s), 0)
    m = m.filter(ImageFilter.GaussianBlur(1.5 * s))
    img.paste(Image.new("RGBA", img.size, colour + (235,)), (0, 0), m)
    return down(img, (size, size))


def make_lipstick(out, face):
    d = os.path.join(out, "lipstick")
    # Thumbnail: the lower face with the default shade, and a swatch per shade.
    big = THUMB_PX * 2
    r = Raster(big, centre=(0.0, -2.6), span_cm=13.0)
    render_face(r, face, lips_texture(1024, face, hex_rgb(SHADES[0][1])))
    img = r.image().convert("RGBA")
    dr = ImageDraw.Draw(img)
    for k, (_, colour, _) in enumerate(SHADES):
        x = big * (0.22 + 0.28 * k)
        y = big * 0.86
        rad = big * 0.075
        dr.ellipse([x - rad - 6, y - rad - 6, x + rad + 6, y + rad + 6], fill=(255, 255, 255))
        dr.ellipse([x - rad, y - rad, x + rad, y + rad], fill=hex_rgb(colour))
    save_png(down(img, (THUMB_PX, THUMB_PX)), os.path.join(d, "thumbnail.png"))
    params, layers = [], []
    for name, colour, strength in SHADES:
        params.append({"name": name, "type": "float", "min": 0, "max": 1, "default": strength})
        layers.append({"name": "lips_" + name, "kind": "makeup", "region": "lips",
                       "color": colour, "intensity": strength, "intensity_param": name,
                       "blend": "normal"})
    save_json({
        "format_version": FORMAT_VERSION,
        "id": "dev.kestrel.samples.lipstick",
        "name": "Lipstick try-on",
        "author": AUTHOR,
        "thumbnail": "thumbnail.png",
        "requires": ["face_landmarks"],
        "max_faces": 4,
        "parameters": params,
        "layers": layers,
    }, os.path.join(d, "manifest.json"))


# ---------------------------------------------------------------------------------------------
# 4. face_paint: stars across the forehead, hearts on the cheeks, gold glitter (UV layout)

PAINT_PX = 1024
GOLD = (242, 188, 70)
PINK = (232, 70, 130)
TEAL = (48, 170, 190)


def face_paint_texture(face):
    s = SS
    size = PAINT_PX * s
    img = Image.new("RGBA", (size, size), (0, 0, 0, 0))
    d = ImageDraw.Draw(img)

    def at(lm):
        return face.uv_px(lm, size)

    def outlined(pts, fill, outline=(255, 255, 255, 235), width=2.0):
        """Shape with a thin white outline, so it reads on any skin tone."""
        m = Image.new("L", img.size, 0)
        poly(ImageDraw.Draw(m), pts, 255)
        grown = m.filter(ImageFilter.MaxFilter(int(2 * width * s) | 1))
        img.paste(Image.new("RGBA", img.size, outline), (0, 0), grown)
        img.paste(Image.new("RGBA", img.size, fill), (0, 0), m)

    unit = size / 1024.0  # one pixel of the final 1024 px texture
    # Forehead: a gold star at the centre and, on each side, an arc of smaller stars and gold
    # dots running above the brow towards the temple.
    c = (at(151) + at(9)) / 2 - np.array([0, 12 * unit])
    outlined(star_pts(c[0], c[1], 52 * unit, 22 * unit), GOLD + (240,), width=3)
    for side in (-1, 1):
        end = at(70 if side < 0 else 300) + np.array([side * 18 * unit, -26 * unit])

        def arc(t):
            q = lerp(c, end, t)
            return q - np.array([0, 26 * unit * math.sin(math.pi * t)])
        for k, t in enumerate((0.34, 0.64, 0.92)):
            q = arc(t)
            rad = (34 - 6 * k) * unit
            col = (TEAL if k % 2 == 0 else PINK) + (235,)
            outlined(star_pts(q[0], q[1], rad, rad * 0.45, rot_deg=-90 + side * 10 * (k + 1)),
                     col)
        for t in (0.20, 0.49, 0.78):
            q = arc(t)
            rad = 7 * unit
            d.ellipse([q[0] - rad, q[1] - rad, q[0] + rad, q[1] + rad], fill=GOLD + (235,))
    # Cheeks: a pink heart on each cheekbone (between landmarks 50/280 and 205/425, a little
    # outwards), tilted towards the ears, and a trail of gold glitter up towards the temple.
    for side, (a, b) in ((-1, (50, 205)), (1, (280, 425))):
        p = (at(a) + at(b)) / 2 + np.array([side * 26 * unit, 0])
        h = rotate_pts(heart_pts(p[0], p[1], 92 * unit), side * 14, p)
        outlined(h, PINK + (235,), width=3)
        rng = np.random.default_rng(5 if side < 0 else 6)
        temple = np.array([0.5 + side * 0.37, 0.415]) * (size - 1)
        for _ in range(34):
            t = rng.uniform(0.0, 1.0) ** 0.8
            q = lerp(p + np.array([side * 40 * unit, -40 * unit]), temple, t)
            q = q + np.array([0, 22 * unit * math.sin(math.pi * t)]) + rng.normal(0, 9 * unit, 2)
            rad = rng.uniform(2.5, 7.0) * (1.1 - 0.5 * t) * unit
            a_ = int(rng.uniform(180, 250))
            d.ellipse([q[0] - rad, q[1] - rad, q[0] + rad, q[1] + rad], fill=GOLD + (a_,))
    return down(img, (PAINT_PX, PAINT_PX))


def make_face_paint(out, face):
    d = os.path.join(out, "face_paint")
    tex = face_paint_texture(face)
    save_png(tex, os.path.join(d, "paint.png"))
    big = THUMB_PX * 2
    r = Raster(big, centre=(0.0, 0.0), span_cm=20.0)
    render_face(r, face, tex)
    img = face_features(r.image(), r, face)
    save_png(down(img, (THUMB_PX, THUMB_PX)), os.path.join(d, "thumbnail.png"))
    save_json({
        "format_version": FORMAT_VERSION,
        "id": "dev.kestrel.samples.face_paint",
        "name": "Festival face paint",
        "author": AUTHOR,
        "thumbnail": "thumbnail.png",
        "requires": ["face_landmarks"],
        "max_faces": 4,
        "layers": [{"name": "paint", "kind": "face_texture", "texture": "paint.png",
                    "opacity": 0.9}],
    }, os.path.join(d, "manifest.json"))
    return tex


# ---------------------------------------------------------------------------------------------
# 5. vintage_lut: warm faded grade as a 512x512 LUT

def vintage_grade(rgb):
    """The grade, on [..., 3] arrays in [0, 1]. Steps (all explicit, no randomness):
    1. saturation x0.78 around Rec.709 luma;
    2. gentle S-curve for mid-tone contrast: y = x + 0.12 * sin(2 pi x) * ... (monotonic);
    3. warm white balance: gains R 1.06, G 1.00, B 0.86;
    4. split tone: shadows pulled towards brown (0.16, 0.10, 0.06), highlights towards cream;
    5. fade: blacks lifted to (0.09, 0.07, 0.06), whites capped at (0.97, 0.94, 0.84)."""
    x = np.asarray(rgb, np.float64)
    luma = x @ np.array([0.2126, 0.7152, 0.0722])
    x = luma[..., None] + 0.78 * (x - luma[..., None])
    x = np.clip(x, 0, 1)
    x = x - 0.045 * np.sin(2 * math.pi * x)  # S-curve, derivative >= 1 - 0.28 > 0
    x = x * np.array([1.06, 1.00, 0.86])
    x = np.clip(x, 0, 1)
    luma = (x @ np.array([0.2126, 0.7152, 0.0722]))[..., None]
    shadow = np.clip(1 - luma * 2.5, 0, 1) * 0.18
    high = np.clip((luma - 0.6) * 2.5, 0, 1) * 0.10
    x = x * (1 - shadow) + np.array([0.16, 0.10, 0.06]) * shadow
    x = x * (1 - high) + np.array([1.0, 0.93, 0.78]) * high
    lift = np.array([0.09, 0.07, 0.06])
    ceil = np.array([0.97, 0.94, 0.84])
    return np.clip(lift + (ceil - lift) * x, 0, 1)


def lut_image(fn):
    """64^3 cube, 8x8 tiles: tile = b (column b % 8, row b // 8); x = r, y = g in a tile."""
    i = np.arange(512)
    xx, yy = np.meshgrid(i, i)
    r = (xx % 64) / 63.0
    g = (yy % 64) / 63.0
    b = ((yy // 64) * 8 + xx // 64) / 63.0
    out = fn(np.stack([r, g, b], axis=-1))
    return Image.fromarray((np.clip(out, 0, 1) * 255 + 0.5).astype(np.uint8), "RGB")


def apply_lut(img, lut):
    """Nearest-cell LUT application (for the thumbnail and the self-check)."""
    a = np.asarray(img.convert("RGB")).astype(np.int64)
    q = (a * 63 + 127) // 255
    L = np.asarray(lut)
    x = (q[..., 2] % 8) * 64 + q[..., 0]
    y = (q[..., 2] // 8) * 64 + q[..., 1]
    return Image.fromarray(L[y, x].astype(np.uint8), "RGB")


def make_vintage_lut(out, scene):
    d = os.path.join(out, "vintage_lut")
    lut = lut_image(vintage_grade)
    save_png(lut, os.path.join(d, "vintage.png"))
    # Self-check of the layout against the grade at a few exact lattice points.
    L = np.asarray(lut)
    for r_, g_, b_ in ((0, 0, 0), (63, 63, 63), (63, 0, 0), (0, 63, 0), (0, 0, 63), (20, 40, 9)):
        want = (vintage_grade(np.array([r_, g_, b_]) / 63.0) * 255 + 0.5).astype(int)
        got = L[(b_ // 8) * 64 + g_, (b_ % 8) * 64 + r_]
        if (np.abs(got.astype(int) - want) > 0).any():
            raise ValueError("LUT layout self-check failed at %s" % ((r_, g_, b_),))
    # Thumbnail: a scene, graded on the right half.
    th = scene.resize((THUMB_PX * 16 // 9, THUMB_PX), Image.LANCZOS)
    off = (th.width - THUMB_PX) // 2
    th = th.crop((off, 0, off + THUMB_PX, THUMB_PX))
    graded = apply_lut(th, lut)
    th.paste(graded.crop((THUMB_PX // 2, 0, THUMB_PX, THUMB_PX)), (THUMB_PX // 2, 0))
    ImageDraw.Draw(th).line([(THUMB_PX // 2, 0), (THUMB_PX // 2, THUMB_PX)],
                            fill=(255, 255, 255), width=2)
    save_png(th, os.path.join(d, "thumbnail.png"))
    save_json({
        "format_version": FORMAT_VERSION,
        "id": "dev.kestrel.samples.vintage_lut",
        "name": "Vintage film",
        "author": AUTHOR,
        "thumbnail": "thumbnail.png",
        "parameters": [{"name": "strength", "type": "float", "min": 0, "max": 1,
                        "default": 0.85}],
        "layers": [{"name": "grade", "kind": "lut", "lut": "vintage.png", "intensity": 0.85,
                    "intensity_param": "strength"}],
    }, os.path.join(d, "manifest.json"))


# ---------------------------------------------------------------------------------------------
# 6. background_beach: sunset beach backdrop

BG_W, BG_H = 1280, 720


def beach_image():
    rng = np.random.default_rng(20260)
    W, H = BG_W, BG_H
    horizon = int(H * 0.56)
    shore = int(H * 0.80)
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float64)
    # Sky: deep blue-violet at the top through pink to warm orange at the horizon.
    sky = vgrad(W, H, [(0.0, (44, 52, 112)), (0.22, (112, 74, 140)), (0.40, (226, 112, 112)),
                       (0.50, (250, 160, 92)), (0.56, (255, 204, 120)), (1.0, (255, 204, 120))])
    sun_c = np.array([W * 0.62, horizon - H * 0.07])
    sun_r = H * 0.085
    dist = np.hypot(xx - sun_c[0], yy - sun_c[1])
    glow = np.exp(-(dist / (sun_r * 3.2)) ** 2)[..., None]
    img = sky + glow * (np.array([255, 226, 170]) - sky) * 0.55
    sun = np.clip((sun_r - dist) / 2.0, 0, 1)[..., None]
    img = img * (1 - sun) + np.array([255, 244, 214]) * sun
    # Soft clouds: stretched sums of blurred noise, brightened by the sun.
    noise = rng.random((H // 8, W // 8))
    n_img = Image.fromarray((noise * 255).astype(np.uint8), "L").resize((W, H), Image.BICUBIC)
    n_img = n_img.filter(ImageFilter.GaussianBlur(18))
    n = np.asarray(n_img, np.float64) / 255
    band = np.exp(-((yy - H * 0.30) / (H * 0.09)) ** 2) + \
        0.7 * np.exp(-((yy - H * 0.16) / (H * 0.05)) ** 2)
    cloud = np.clip((n - 0.47) * 9, 0, 1) * band
    cloud_col = np.array([255, 190, 170]) * 0.6 + np.array([120, 80, 130]) * 0.4
    img = img * (1 - 0.55 * cloud[..., None]) + cloud_col * 0.55 * cloud[..., None]
    # Sea: dark teal, lighter towards the horizon, with a shimmering sun path.
    sea_mask = (yy >= horizon) & (yy < shore)
    t = np.clip((yy - horizon) / (shore - horizon), 0, 1)
    sea = np.stack([lerp(150, 30, t), lerp(120, 70, t), lerp(140, 104, t)], axis=-1)
    ripples = Image.fromarray((rng.random((H // 2, W // 32)) * 255).astype(np.uint8), "L")
    rip = np.asarray(ripples.resize((W, H), Image.BICUBIC), np.float64) / 255
    path_w = sun_r * (1.0 + 2.6 * t)
    path = np.exp(-((xx - sun_c[0]) / path_w) ** 2) * np.clip((rip - 0.45) * 4, 0, 1)
    sea = sea + path[..., None] * (np.array([255, 226, 170]) - sea) * 0.85
    sea = sea + ((rip - 0.5) * 14)[..., None]
    img = np.where(sea_mask[..., None], sea, img)
    # Surf line and wet sand, then dry sand with a little grain.
    wave = shore + 6 * np.sin(xx / 90.0) + 4 * np.sin(xx / 37.0 + 1.3)
    sand_t = np.clip((yy - wave) / (H - shore), 0, 1)
    sand = np.stack([lerp(196, 236, sand_t), lerp(150, 200, sand_t), lerp(120, 150, sand_t)],
                    axis=-1)
    grain = rng.normal(0, 5, (H, W))[..., None]
    sand = sand + grain
    foam = np.clip(1 - np.abs(yy - wave) / 5.0, 0, 1)[..., None]
    is_sand = (yy >= wave)[..., None]
    img = np.where(is_sand, sand, img)
    img = img * (1 - foam) + np.array([250, 240, 230]) * foam
    out = Image.fromarray(np.clip(img + 0.5, 0, 255).astype(np.uint8), "RGB")
    # A palm silhouette on the left, drawn with polygons.
    s = SS
    layer = Image.new("RGBA", (W * s, H * s), (0, 0, 0, 0))
    d = ImageDraw.Draw(layer)
    dark = (44, 30, 40, 255)
    base = np.array([W * 0.12, H * 0.93]) * s
    topp = np.array([W * 0.19, H * 0.20]) * s
    trunk = bezier(base, base + np.array([40, -200]) * s, topp + np.array([-70, 120]) * s, topp,
                   30)
    for k in range(len(trunk) - 1):
        wdt = lerp(26, 12, k / len(trunk)) * s
        d.line([tuple(trunk[k]), tuple(trunk[k + 1])], fill=dark, width=int(wdt))
    # Fronds: spines that rise a little and droop towards the tip, with leaflets on both
    # sides angled towards the tip.
    for ang, length in ((-178, 250), (-150, 230), (-118, 170), (-70, 180), (-35, 240),
                        (-5, 260), (160, 190), (25, 200)):
        a = math.radians(ang)
        dirv = np.array([math.cos(a), math.sin(a)])
        tip = topp + (dirv + np.array([0.0, 0.45])) * length * s
        mid = topp + (dirv * 0.55 + np.array([0.0, -0.18])) * length * s
        spine = bezier(topp, mid, mid + (tip - mid) * 0.3, tip, 32)
        for k in range(len(spine) - 1):
            d.line([tuple(spine[k]), tuple(spine[k + 1])], fill=dark,
                   width=int(lerp(9, 3, k / len(spine)) * s))
        for k in range(2, len(spine) - 1):
            tdir = spine[k + 1] - spine[k]
            tdir /= np.linalg.norm(tdir)
            nvec = np.array([-tdir[1], tdir[0]])
            leaf = 46 * s * math.sin(math.pi * (k + 4) / (len(spine) + 4))
            for side in (-1.0, 1.0):
                v = side * nvec * 0.75 + tdir * 0.45 + np.array([0.0, 0.35])
                v /= np.linalg.norm(v)
                p_end = spine[k] + v * leaf
                d.line([tuple(spine[k]), tuple(p_end)], fill=dark, width=int(5 * s))
    for k, (dx, dy) in enumerate(((-14, 12), (6, 16), (-2, 30))):
        q = topp + np.array([dx, dy]) * s
        d.ellipse([q[0] - 10 * s, q[1] - 10 * s, q[0] + 10 * s, q[1] + 10 * s], fill=dark)
    layer = down(layer, (W, H))
    out = out.convert("RGBA")
    out.alpha_composite(layer)
    return out.convert("RGB")


def make_background(out):
    d = os.path.join(out, "background_beach")
    img = beach_image()
    os.makedirs(d, exist_ok=True)
    img.save(os.path.join(d, "beach.jpg"), format="JPEG", quality=90, optimize=True,
             subsampling="4:2:0")
    # Thumbnail: the backdrop with a head-and-shoulders silhouette cut-out.
    th = img.resize((THUMB_PX * 16 // 9, THUMB_PX), Image.LANCZOS)
    off = (th.width - THUMB_PX) // 2
    th = th.crop((off, 0, off + THUMB_PX, THUMB_PX)).convert("RGBA")
    s = SS
    sil = Image.new("RGBA", (THUMB_PX * s, THUMB_PX * s), (0, 0, 0, 0))
    dd = ImageDraw.Draw(sil)
    c = THUMB_PX * s / 2
    col = (70, 86, 110, 255)
    dd.ellipse([c - 46 * s, 70 * s, c + 46 * s, 182 * s], fill=col)
    dd.rounded_rectangle([c - 100 * s, 190 * s, c + 100 * s, 300 * s], radius=60 * s, fill=col)
    dd.rectangle([c - 22 * s, 170 * s, c + 22 * s, 200 * s], fill=col)
    th.alpha_composite(down(sil, (THUMB_PX, THUMB_PX)))
    save_png(th.convert("RGB"), os.path.join(d, "thumbnail.png"))
    save_json({
        "format_version": FORMAT_VERSION,
        "id": "dev.kestrel.samples.background_beach",
        "name": "Sunset beach",
        "author": AUTHOR,
        "thumbnail": "thumbnail.png",
        "requires": ["segmentation"],
        "layers": [{"name": "beach", "kind": "background", "texture": "beach.jpg"}],
    }, os.path.join(d, "manifest.json"))
    return img


# ---------------------------------------------------------------------------------------------


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "samples", "effects"))
    ap.add_argument("--preview", help="also write debug previews (UV overlay) to this folder")
    args = ap.parse_args()
    face = Face()
    make_cat_ears(args.out, face)
    make_glasses(args.out, face)
    make_lipstick(args.out, face)
    tex = make_face_paint(args.out, face)
    beach = make_background(args.out)
    make_vintage_lut(args.out, beach)
    if args.preview:
        os.makedirs(args.preview, exist_ok=True)
        tpl = Image.new("RGBA", (PAINT_PX, PAINT_PX), (255, 255, 255, 255))
        dr = ImageDraw.Draw(tpl)
        px = face.uv * (PAINT_PX - 1)
        for a, b, c in face.tris:
            dr.polygon([tuple(px[a]), tuple(px[b]), tuple(px[c])], outline=(150, 170, 220))
        tpl.alpha_composite(tex)
        tpl.save(os.path.join(args.preview, "face_paint_on_uv.png"))
    print("wrote sample effects to %s" % args.out)


if __name__ == "__main__":
    sys.exit(main())
