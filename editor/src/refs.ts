// Parameters, states and sprite sequences as format 1.1 defines them (docs/effects-format.md 4.3,
// 4.4 "sprite", 4.5), and the references between them: layers bind parameters by name
// (color_param, intensity_param, texture_param), triggers and initial_state name states, state
// actions name layers. Renames keep every reference; deletions report what still refers, so the
// page can refuse or remove the references with the user's consent. Pure functions of the
// manifest (no DOM), used by main.ts inside Project.edit.
import type { Json } from "./project";

export const PARAM_TYPES = ["color", "float", "enum", "image"] as const;
export type ParamType = (typeof PARAM_TYPES)[number];
// The validator's actions (effects_format/src/effect.c k_actions); start_animation only for a
// layer whose sprite has two or more frames.
export const ACTIONS = ["show_layer", "hide_layer", "start_animation"] as const;
// Layer keys that bind a parameter, and the parameter type each needs.
export const BINDINGS: Record<string, ParamType> = { color_param: "color", intensity_param: "float", texture_param: "image" };
export const FLOAT_LIMIT = 1e6; // |min|, |max| of a float parameter (the validator's range)

export interface Ref {
  layer: number; // index in layers[]
  name: string; // the layer's name
  key: string; // color_param, intensity_param or texture_param
}

export function params(m: Json): any[] {
  return Array.isArray(m.parameters) ? m.parameters : [];
}
export function states(m: Json): any[] {
  return Array.isArray(m.states) ? m.states : [];
}

// Why `name` cannot name an entry of `list` (other than the one at `self`), or "" when it can.
export function nameProblem(list: any[], name: string, what: string, self = -1): string {
  if (!name.trim()) return `a ${what} needs a name`;
  if (name !== name.trim()) return `a ${what} name cannot start or end with a space`;
  if (new TextEncoder().encode(name).length > 255) return `a ${what} name is at most 255 bytes`;
  const j = list.findIndex((x, i) => i !== self && x?.name === name);
  return j >= 0 ? `“${name}” is already the name of another ${what}` : "";
}

export function uniqueIn(list: any[], base: string): string {
  const names = new Set(list.map((x) => x?.name));
  if (!names.has(base)) return base;
  for (let i = 2; ; i++) if (!names.has(`${base}_${i}`)) return `${base}_${i}`;
}

// The layers that bind parameter `name`.
export function paramRefs(m: Json, name: string): Ref[] {
  const out: Ref[] = [];
  (m.layers ?? []).forEach((l: any, i: number) => {
    for (const key of Object.keys(BINDINGS)) if (l?.[key] === name) out.push({ layer: i, name: l.name, key });
  });
  return out;
}

export function describeRefs(refs: Ref[]): string {
  return refs.map((r) => `layer “${r.name}” (${r.key})`).join(", ");
}

// The triggers that enter state `name`, and whether it is the initial state.
export function stateRefs(m: Json, name: string): { triggers: number[]; initial: boolean } {
  const triggers: number[] = [];
  (m.triggers ?? []).forEach((t: any, i: number) => t?.state === name && triggers.push(i));
  return { triggers, initial: m.initial_state === name };
}

export function renameParam(m: Json, from: string, to: string): void {
  for (const p of params(m)) if (p.name === from) p.name = to;
  for (const l of m.layers ?? []) for (const key of Object.keys(BINDINGS)) if (l[key] === from) l[key] = to;
}

// Removes parameter `name` and every binding to it (the layers fall back to their constants).
export function deleteParam(m: Json, name: string): void {
  m.parameters = params(m).filter((p) => p.name !== name);
  if (!m.parameters.length) delete m.parameters;
  for (const l of m.layers ?? []) for (const key of Object.keys(BINDINGS)) if (l[key] === name) delete l[key];
}

export function renameState(m: Json, from: string, to: string): void {
  for (const s of states(m)) if (s.name === from) s.name = to;
  for (const t of m.triggers ?? []) if (t.state === from) t.state = to;
  if (m.initial_state === from) m.initial_state = to;
}

// Removes state `name`, the triggers that enter it and, when it is, initial_state.
export function deleteState(m: Json, name: string): void {
  m.states = states(m).filter((s) => s.name !== name);
  if (Array.isArray(m.triggers)) m.triggers = m.triggers.filter((t: any) => t.state !== name);
  if (m.initial_state === name) delete m.initial_state;
}

export function newParam(type: ParamType, name: string): any {
  switch (type) {
    case "color":
      return { name, type, default: "#C8102E" };
    case "float":
      return { name, type, min: 0, max: 1, default: 0.5 };
    case "enum":
      return { name, type, options: ["a", "b"], default: "a" };
    case "image":
      return { name, type };
  }
}

// A float parameter's [min, max] with the format's defaults.
export function floatRange(p: any): [number, number] {
  return [typeof p.min === "number" ? p.min : 0, typeof p.max === "number" ? p.max : 1];
}

// Layers whose sprite has two or more frames (the ones start_animation may name).
export function animatedLayers(m: Json): string[] {
  return (m.layers ?? []).filter((l: any) => (l?.sprite?.frames?.length ?? 0) >= 2).map((l: any) => l.name);
}

// Frame file names in the order a designer numbers them: "walk_2" before "walk_10".
export function naturalCompare(a: string, b: string): number {
  return a.localeCompare(b, "en", { numeric: true, sensitivity: "base" }) || (a < b ? -1 : a > b ? 1 : 0);
}

// A package file name for an imported frame: `dir/file`, characters outside [A-Za-z0-9._-]
// replaced (the zip name rules: no `..`, `\`, `:`, control bytes), unique ignoring case among
// `taken` unless the bytes there are the same file.
export function frameAssetName(dir: string, file: string, taken: Map<string, Uint8Array>, data: Uint8Array): string {
  const clean = (s: string) => s.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "_") || "frame";
  const base = `${clean(dir)}/${clean(file)}`;
  const lower = new Map([...taken.keys()].map((k) => [k.toLowerCase(), k]));
  const same = (n: string) => {
    const k = lower.get(n.toLowerCase());
    if (k === undefined) return true; // free
    const d = taken.get(k)!;
    return k === n && d.length === data.length && d.every((v, i) => v === data[i]);
  };
  if (same(base)) return base;
  const dot = base.lastIndexOf(".");
  const [stem, ext] = dot > base.indexOf("/") ? [base.slice(0, dot), base.slice(dot)] : [base, ""];
  for (let i = 2; ; i++) if (same(`${stem}_${i}${ext}`)) return `${stem}_${i}${ext}`;
}

// The frame a sprite shows `t_us` after its animation started (ar_render/src/renderer.c
// ks__ar_sprite_frame): fps default 30, loop default true; a non-looping one holds its last.
export function spriteFrameAt(sprite: any, tUs: number): number {
  const n = sprite?.frames?.length ?? 0;
  if (n <= 1) return 0;
  const fps = typeof sprite.fps === "number" ? sprite.fps : 30;
  const k = Math.floor((Math.max(0, tUs) * fps) / 1e6);
  return sprite.loop === false ? Math.min(k, n - 1) : k % n;
}

// The time (us after the animation starts) in the middle of frame k.
export function frameTimeUs(sprite: any, k: number): number {
  const fps = typeof sprite?.fps === "number" ? sprite.fps : 30;
  return Math.round(((k + 0.5) * 1e6) / fps);
}
