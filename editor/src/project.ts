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
  onChange: () => void = () => {};

  constructor(s: Snapshot) {
    this.manifest = s.manifest;
    this.files = s.files;
  }

  snapshot(): Snapshot {
    return { manifest: structuredClone(this.manifest), files: new Map(this.files) };
  }

  // Applies `f` to the manifest (and files) as one undoable step.
  edit(f: (m: Json, files: Map<string, Uint8Array>) => void): void {
    const before = this.snapshot();
    f(this.manifest, this.files);
    this.undoStack.push(before);
    if (this.undoStack.length > HISTORY_LIMIT) this.undoStack.shift();
    this.redoStack = [];
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
    this.redoStack.push(this.snapshot());
    this.manifest = s.manifest;
    this.files = s.files;
    this.onChange();
  }
  redo(): void {
    const s = this.redoStack.pop();
    if (!s) return;
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
