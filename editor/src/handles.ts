// On-canvas handles of a sticker (docs/editor.md "Handles"): where the renderer draws the sprite,
// computed as ar_render/src/layer_sticker.c lays it out (so the box drawn over the preview is the
// sprite's), and the anchor edits that dragging the box or a corner makes. Pure geometry: the
// page (main.ts) draws the handles and turns drags into undoable edits.

// The schema's ranges (docs/effects-format.schema.json, "anchor").
export const OFFSET_MIN = -100;
export const OFFSET_MAX = 100;
export const SCALE_MIN = 0.001;
export const SCALE_MAX = 1000;

export interface StickerBox {
  c: [number, number]; // sprite centre (canvas pixels): anchor point moved by the offset
  anchor: [number, number]; // mean of the anchor landmarks
  fw: number; // face width in pixels (landmarks 234 to 454)
  ax: [number, number]; // face x axis (unit), towards image right for a frontal face
  ay: [number, number]; // face y axis (unit), down
  w: number; // sprite width and height in pixels
  h: number;
  corners: [number, number][]; // top-left, top-right, bottom-left, bottom-right (face axes)
}

const num = (v: unknown, def: number) => (typeof v === "number" && Number.isFinite(v) ? v : def);

// The sprite's box on one face (landmarks x0, y0, x1, y1, ... in canvas pixels), or null when
// the layer has no usable anchor or the face is degenerate. `aspect` is height / width of the
// sprite's first frame.
export function stickerBox(layer: any, lm: number[], aspect: number): StickerBox | null {
  const ids: unknown[] = Array.isArray(layer?.anchor?.landmarks) ? layer.anchor.landmarks : [];
  const n = lm.length / 2;
  if (!ids.length || n <= 454 || !ids.every((k) => Number.isInteger(k) && (k as number) >= 0 && (k as number) < n))
    return null;
  const dx = lm[2 * 454] - lm[2 * 234], dy = lm[2 * 454 + 1] - lm[2 * 234 + 1];
  const fw = Math.hypot(dx, dy);
  if (!(fw > 1e-3)) return null;
  const ax: [number, number] = [dx / fw, dy / fw];
  const ay: [number, number] = [-ax[1], ax[0]];
  let mx = 0, my = 0;
  for (const k of ids as number[]) {
    mx += lm[2 * k];
    my += lm[2 * k + 1];
  }
  const anchor: [number, number] = [mx / ids.length, my / ids.length];
  const off = Array.isArray(layer.anchor.offset) ? layer.anchor.offset : [0, 0];
  const ox = num(off[0], 0), oy = num(off[1], 0);
  const c: [number, number] = [
    anchor[0] + fw * (ox * ax[0] + oy * ay[0]),
    anchor[1] + fw * (ox * ax[1] + oy * ay[1]),
  ];
  const w = num(layer.anchor.scale, 1) * fw, h = w * (aspect > 0 ? aspect : 1);
  const corners: [number, number][] = [];
  for (let k = 0; k < 4; k++) {
    const sx = k & 1 ? 0.5 : -0.5, sy = k >> 1 ? 0.5 : -0.5;
    corners.push([c[0] + sx * w * ax[0] + sy * h * ay[0], c[1] + sx * w * ax[1] + sy * h * ay[1]]);
  }
  return { c, anchor, fw, ax, ay, w, h, corners };
}

const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));
const round3 = (v: number) => Math.round(v * 1000) / 1000;

// The offset after dragging the box by (dx, dy) canvas pixels from where it was at `b` with
// offset `off0`: the move in face widths along the face's axes, clamped to the schema's range
// and rounded to 0.001 face widths.
export function movedOffset(b: StickerBox, off0: [number, number], dx: number, dy: number): [number, number] {
  const ox = off0[0] + (dx * b.ax[0] + dy * b.ax[1]) / b.fw;
  const oy = off0[1] + (dx * b.ay[0] + dy * b.ay[1]) / b.fw;
  return [round3(clamp(ox, OFFSET_MIN, OFFSET_MAX)), round3(clamp(oy, OFFSET_MIN, OFFSET_MAX))];
}

// The scale after dragging a corner from `p0` to `p` (canvas pixels): the sprite grows with the
// distance from its centre, clamped to the schema's range and rounded to 0.001.
export function draggedScale(b: StickerBox, scale0: number, p0: [number, number], p: [number, number]): number {
  const d0 = Math.hypot(p0[0] - b.c[0], p0[1] - b.c[1]);
  const d = Math.hypot(p[0] - b.c[0], p[1] - b.c[1]);
  if (!(d0 > 1e-3)) return scale0;
  return clamp(round3((scale0 * d) / d0), SCALE_MIN, SCALE_MAX);
}

// Whether point p lies inside the box (in face axes).
export function insideBox(b: StickerBox, p: [number, number]): boolean {
  const rx = p[0] - b.c[0], ry = p[1] - b.c[1];
  const u = rx * b.ax[0] + ry * b.ax[1], v = rx * b.ay[0] + ry * b.ay[1];
  return Math.abs(u) <= b.w / 2 && Math.abs(v) <= b.h / 2;
}
