// The fields of format 1.1 (docs/effects-format.md, docs/effects-format.schema.json) as typed
// inspector controls, per layer kind. Ranges come from the schema.

export type FieldType =
  | { t: "text" }
  | { t: "number"; min: number; max: number; step: number }
  | { t: "unit" } // number in [0, 1], a slider
  | { t: "bool" }
  | { t: "enum"; options: string[] }
  | { t: "color" }
  | { t: "asset"; accept: RegExp }
  | { t: "assets"; accept: RegExp } // a list (sprite frames)
  | { t: "landmarks" } // list of landmark indices 0..477
  | { t: "offset" } // [x, y], face widths
  | { t: "param"; ptype: "color" | "float" | "image" }; // a parameter of that type, by name

export interface Field {
  path: string; // dotted path inside the layer ("anchor.scale")
  label: string;
  type: FieldType;
  def?: unknown; // schema default, shown when absent
}

const IMG = /\.(png|jpe?g)$/i;
const common: Field[] = [
  { path: "visible", label: "visible", type: { t: "bool" }, def: true },
  { path: "opacity", label: "opacity", type: { t: "unit" }, def: 1 },
  { path: "blend", label: "blend", type: { t: "enum", options: ["normal", "multiply", "overlay", "soft_light"] }, def: "normal" },
  { path: "shader", label: "custom shader (GLSL ES 3.00)", type: { t: "asset", accept: /\.(glsl|frag)$/i } },
];
const anchor: Field[] = [
  { path: "anchor.landmarks", label: "anchor landmarks", type: { t: "landmarks" } },
  { path: "anchor.offset", label: "offset (face widths)", type: { t: "offset" }, def: [0, 0] },
  { path: "anchor.scale", label: "scale (face widths)", type: { t: "number", min: 0.001, max: 1000, step: 0.01 }, def: 1 },
];
const sprite: Field[] = [
  { path: "sprite.frames", label: "frames", type: { t: "assets", accept: IMG } },
  { path: "sprite.fps", label: "fps", type: { t: "number", min: 0.1, max: 240, step: 0.1 }, def: 30 },
  { path: "sprite.loop", label: "loop", type: { t: "bool" }, def: true },
];

export const LAYER_FIELDS: Record<string, Field[]> = {
  sticker: [...anchor, ...sprite, ...common],
  face_texture: [
    { path: "texture", label: "UV texture", type: { t: "asset", accept: IMG } },
    { path: "texture_param", label: "texture parameter", type: { t: "param", ptype: "image" } },
    ...common,
  ],
  makeup: [
    { path: "region", label: "region", type: { t: "enum", options: ["lips", "eyeshadow", "eyeliner", "blush", "eyebrows", "foundation"] } },
    { path: "color", label: "colour", type: { t: "color" } },
    { path: "color_param", label: "colour parameter", type: { t: "param", ptype: "color" } },
    { path: "intensity", label: "intensity", type: { t: "unit" }, def: 1 },
    { path: "intensity_param", label: "intensity parameter", type: { t: "param", ptype: "float" } },
    { path: "texture", label: "coverage mask (face UV)", type: { t: "asset", accept: IMG } },
    ...common,
  ],
  beauty: [
    { path: "smoothing", label: "smoothing", type: { t: "unit" }, def: 0 },
    { path: "whitening", label: "whitening", type: { t: "unit" }, def: 0 },
    { path: "face_slim", label: "face slim", type: { t: "unit" }, def: 0 },
    { path: "eye_enlarge", label: "eye enlarge", type: { t: "unit" }, def: 0 },
    { path: "intensity", label: "intensity", type: { t: "unit" }, def: 1 },
    { path: "intensity_param", label: "intensity parameter", type: { t: "param", ptype: "float" } },
    ...common,
  ],
  lut: [
    { path: "lut", label: "LUT (512x512 PNG)", type: { t: "asset", accept: IMG } },
    { path: "intensity", label: "intensity", type: { t: "unit" }, def: 1 },
    { path: "intensity_param", label: "intensity parameter", type: { t: "param", ptype: "float" } },
    ...common,
  ],
  background: [
    { path: "mode", label: "mode", type: { t: "enum", options: ["replace", "blur"] }, def: "replace" },
    { path: "texture", label: "background image", type: { t: "asset", accept: IMG } },
    { path: "texture_param", label: "texture parameter", type: { t: "param", ptype: "image" } },
    { path: "blur_radius", label: "blur radius (frame heights)", type: { t: "number", min: 0.001, max: 0.25, step: 0.001 }, def: 0.02 },
    ...common,
  ],
  mesh3d: [
    { path: "mesh", label: "mesh (glb)", type: { t: "asset", accept: /\.glb$/i } },
    { path: "texture", label: "base colour texture", type: { t: "asset", accept: IMG } },
    ...anchor,
    ...common,
  ],
};

export const LAYER_KINDS = Object.keys(LAYER_FIELDS);

// What a new layer of each kind starts with (assets are filled in from the package when one
// fits; the validator says what is still missing).
export function newLayer(kind: string, name: string, files: Map<string, Uint8Array>): any {
  const img = [...files.keys()].find((n) => IMG.test(n)) ?? "";
  switch (kind) {
    case "sticker":
      return { name, kind, anchor: { landmarks: [1], offset: [0, 0], scale: 0.5 }, sprite: { frames: img ? [img] : [] } };
    case "face_texture":
      return { name, kind, texture: img };
    case "makeup":
      return { name, kind, region: "lips", color: "#B0213A", intensity: 0.7 };
    case "beauty":
      return { name, kind, smoothing: 0.5, whitening: 0.2 };
    case "lut":
      return { name, kind, lut: img, intensity: 1 };
    case "background":
      return { name, kind, mode: "blur", blur_radius: 0.02 };
    case "mesh3d":
      return { name, kind, mesh: [...files.keys()].find((n) => /\.glb$/i.test(n)) ?? "", anchor: { landmarks: [168], offset: [0, 0], scale: 1 } };
  }
  return { name, kind };
}

export function getPath(o: any, path: string): any {
  return path.split(".").reduce((v, k) => (v == null ? undefined : v[k]), o);
}
export function setPath(o: any, path: string, value: any): void {
  const keys = path.split(".");
  let v = o;
  for (const k of keys.slice(0, -1)) {
    if (v[k] == null || typeof v[k] !== "object") v[k] = {};
    v = v[k];
  }
  const last = keys[keys.length - 1];
  if (value === undefined) delete v[last];
  else v[last] = value;
}
