// The open project: manifest.json as a plain JSON object (unknown keys kept, as the format's
// compatibility rule asks) plus the package's files. Edits go through Project.edit, which
// records an undo step; files are immutable byte arrays shared between steps.
import { unzipSync, zipSync, strToU8, strFromU8 } from "fflate";

export type Json = any;
export interface Snapshot {
  manifest: Json;
  files: Map<string, Uint8Array>;
}

export const HISTORY_LIMIT = 200; // undo steps kept (the issue asks for at least 100)

export class Project {
  manifest: Json;
  files: Map<string, Uint8Array>;
  private undoStack: Snapshot[] = [];
  private redoStack: Snapshot[] = [];
  private lastGroup = ""; // the group of the newest undo step (see edit)
  onChange: () => void = () => {};

  constructor(s: Snapshot) {
    this.manifest = s.manifest;
    this.files = s.files;
  }

  snapshot(): Snapshot {
    return { manifest: structuredClone(this.manifest), files: new Map(this.files) };
  }

  // Applies `f` to the manifest (and files) as one undoable step. Edits of one `group` (a drag
  // on the preview: many small edits) that follow each other make a single step: undo goes back
  // to before the first.
  edit(f: (m: Json, files: Map<string, Uint8Array>) => void, group = ""): void {
    if (!group || group !== this.lastGroup) {
      this.undoStack.push(this.snapshot());
      if (this.undoStack.length > HISTORY_LIMIT) this.undoStack.shift();
      this.redoStack = [];
    }
    this.lastGroup = group;
    f(this.manifest, this.files);
    this.onChange();
  }

  // Replaces the whole project (open, template) as one undoable step.
  replace(s: Snapshot): void {
    this.edit((_m, _f) => {
      this.manifest = s.manifest;
      this.files = s.files;
    });
  }

  canUndo(): boolean {
    return this.undoStack.length > 0;
  }
  canRedo(): boolean {
    return this.redoStack.length > 0;
  }
  undoDepth(): number {
    return this.undoStack.length;
  }
  undo(): void {
    const s = this.undoStack.pop();
    if (!s) return;
    this.lastGroup = "";
    this.redoStack.push(this.snapshot());
    this.manifest = s.manifest;
    this.files = s.files;
    this.onChange();
  }
  redo(): void {
    const s = this.redoStack.pop();
    if (!s) return;
    this.lastGroup = "";
    this.undoStack.push(this.snapshot());
    this.manifest = s.manifest;
    this.files = s.files;
    this.onChange();
  }
}

// A .kfx: manifest.json first (readers may stream), then the assets in name order; PNG/JPEG/glb
// are stored (already compressed), text is deflated.
export function packKfx(s: Snapshot): Uint8Array {
  const entries: Record<string, [Uint8Array, { level: 0 | 6 }]> = {};
  entries["manifest.json"] = [strToU8(JSON.stringify(s.manifest, null, 2) + "\n"), { level: 6 }];
  for (const name of [...s.files.keys()].sort()) {
    if (name === "manifest.json") continue;
    const binary = /\.(png|jpe?g|glb)$/i.test(name);
    entries[name] = [s.files.get(name)!, { level: binary ? 0 : 6 }];
  }
  return zipSync(entries, { mtime: new Date("2026-01-01T00:00:00Z") });
}

// Reads a package that the C validator has already accepted (never call it before).
export function unpackKfx(bytes: Uint8Array): Snapshot {
  const all = unzipSync(bytes);
  const files = new Map<string, Uint8Array>();
  let manifest: Json = null;
  for (const [name, data] of Object.entries(all)) {
    if (name.endsWith("/")) continue;
    if (name === "manifest.json") manifest = JSON.parse(strFromU8(data));
    else files.set(name, data);
  }
  if (!manifest) throw new Error("manifest.json missing");
  return { manifest, files };
}

export function emptyProject(): Snapshot {
  return {
    manifest: {
      format_version: "1.1.0",
      id: "dev.kestrel.studio.untitled",
      name: "Untitled effect",
      requires: ["face_landmarks"],
      max_faces: 1,
      layers: [],
    },
    files: new Map(),
  };
}

// Width and height of a PNG (IHDR) or baseline/progressive JPEG (SOFn) from its header, or null.
export function imageSize(d: Uint8Array): [number, number] | null {
  const v = new DataView(d.buffer, d.byteOffset, d.byteLength);
  if (d.length >= 24 && d[0] === 0x89 && d[1] === 0x50 && d[2] === 0x4e && d[3] === 0x47)
    return [v.getUint32(16), v.getUint32(20)];
  if (d.length >= 4 && d[0] === 0xff && d[1] === 0xd8) {
    let i = 2;
    while (i + 9 < d.length) {
      if (d[i] !== 0xff) return null;
      const marker = d[i + 1];
      if (marker === 0xff) {
        i++; // fill byte
        continue;
      }
      const len = v.getUint16(i + 2);
      const sof = marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc;
      if (sof) return [v.getUint16(i + 7), v.getUint16(i + 5)];
      if (len < 2) return null;
      i += 2 + len;
    }
  }
  return null;
}
