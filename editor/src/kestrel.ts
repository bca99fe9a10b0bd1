// The browser's door to Kestrel's C runtime (editor/wasm/glue.c, compiled by Emscripten).
// Every call goes to the same C code as the native SDK: the validator, the face landmarker, the
// selfie segmenter and the GLES 3 renderer running on WebGL 2.

export interface ValidationMessage {
  path: string; // JSON path in manifest.json ("layers[2].anchor.scale"), "" when none
  message: string;
}
export interface Validation {
  ok: boolean;
  status?: string;
  messages: ValidationMessage[];
  name?: string;
  layers?: number;
  assets?: number;
  asset_bytes?: number;
  largest_texture_px?: number;
}
export interface Timings {
  detect_ms: number;
  segment_ms: number; // the last segmenter run (the photo's mask is made once)
  mask: number; // 1: the last render had a person mask
  render_ms: number;
  render_cpu_ms: number;
  layers_drawn: number;
  passes: number;
  faces: number;
  landmarker_calls?: number;
  landmarker_total_ms?: number;
  segmenter_calls?: number;
  segmenter_total_ms?: number;
}
export interface Face {
  id: number;
  box: [number, number, number, number];
  landmarks: number[]; // x0, y0, x1, y1, ...
}

// The Emscripten module object (only what is used here).
interface EmModule {
  ccall(name: string, ret: string | null, types: string[], args: unknown[]): any;
  _malloc(n: number): number;
  _free(p: number): void;
  HEAPU8: Uint8Array;
  FS: { mkdir(p: string): void; writeFile(p: string, d: Uint8Array): void };
  GL: {
    createContext(c: HTMLCanvasElement, a: object): number;
    makeContextCurrent(h: number): boolean;
  };
}

export class Kestrel {
  private constructor(
    private m: EmModule,
    private glHandle: number,
  ) {}

  // Loads the module and its WebGL 2 context on `canvas` (preserveDrawingBuffer so the preview
  // can be read back; no alpha so the canvas shows exactly the rendered RGB).
  static async create(base: string, canvas: HTMLCanvasElement): Promise<Kestrel> {
    const factory = (await import(/* @vite-ignore */ `${base}gen/wasm/kestrel_editor.js`)).default;
    const m: EmModule = await factory({
      locateFile: (p: string) => `${base}gen/wasm/${p}`,
      print: (s: string) => console.log(s),
      printErr: (s: string) => console.warn(s),
    });
    const h = m.GL.createContext(canvas, {
      majorVersion: 2,
      minorVersion: 0,
      alpha: false,
      depth: true,
      stencil: false,
      antialias: false,
      premultipliedAlpha: false,
      preserveDrawingBuffer: true,
    });
    if (!h) throw new Error("WebGL 2 is not available in this browser");
    m.GL.makeContextCurrent(h);
    return new Kestrel(m, h);
  }

  private withBytes<T>(data: Uint8Array, f: (ptr: number, n: number) => T): T {
    const p = this.m._malloc(Math.max(1, data.length));
    try {
      this.m.HEAPU8.set(data, p);
      return f(p, data.length);
    } finally {
      this.m._free(p);
    }
  }

  lastError(): string {
    return this.m.ccall("ksw_last_error", "string", [], []);
  }

  validate(pkg: Uint8Array): Validation {
    return JSON.parse(
      this.withBytes(pkg, (p, n) => this.m.ccall("ksw_validate", "string", ["number", "number"], [p, n])),
    );
  }

  loadEffect(pkg: Uint8Array): void {
    this.m.GL.makeContextCurrent(this.glHandle);
    const st = this.withBytes(pkg, (p, n) =>
      this.m.ccall("ksw_load_effect", "number", ["number", "number"], [p, n]),
    );
    if (st !== 0) throw new Error(this.lastError());
  }

  // Fetches a bundle of gen/models/ into the module's file system (/models), once.
  private async writeModel(base: string, name: string): Promise<void> {
    if (this.modelsWritten.has(name)) return;
    const r = await fetch(`${base}gen/models/${name}`);
    if (!r.ok) throw new Error(`${name}: HTTP ${r.status}`);
    const data = new Uint8Array(await r.arrayBuffer());
    if (!this.modelsWritten.size) this.m.FS.mkdir("/models");
    this.m.FS.writeFile(`/models/${name}`, data);
    this.modelsWritten.add(name);
  }
  private modelsWritten = new Set<string>();

  // Writes the landmarker bundle into the module's file system and creates the landmarker.
  async createLandmarker(base: string, video: boolean, maxFaces: number): Promise<void> {
    await this.writeModel(base, "face_landmarker.ksb");
    const st = this.m.ccall(
      "ksw_landmarker_create",
      "number",
      ["string", "number", "number", "number"],
      ["/models", video ? 1 : 0, maxFaces, 1],
    );
    if (st !== 0) throw new Error(this.lastError());
  }

  // Writes the selfie segmenter bundle and creates the segmenter (the person mask of background
  // layers), as ks-ar does: the general model (256x256) or the landscape one (144x256, faster for
  // 16:9 video).
  async createSegmenter(base: string, video: boolean, landscape = false): Promise<void> {
    await this.writeModel(base, landscape ? "selfie_segmenter_landscape.ksb" : "selfie_segmenter.ksb");
    const st = this.m.ccall(
      "ksw_segmenter_create",
      "number",
      ["string", "number", "number"],
      ["/models", video ? 1 : 0, landscape ? 1 : 0],
    );
    if (st !== 0) throw new Error(this.lastError());
  }

  // Whether the loaded effect requires a person mask ("segmentation": background layers).
  needsMask(): boolean {
    return this.m.ccall("ksw_effect_needs_mask", "number", [], []) === 1;
  }
  clearMask(): void {
    this.m.ccall("ksw_clear_mask", null, [], []);
  }

  // Runs the landmarker (detect) and the segmenter (segment; the mask is kept for later renders
  // until the next segment or clearMask) and renders the effect over `rgba` into the canvas.
  // Returns the number of faces and, when the segmenter failed, its message (the frame is then
  // rendered without a mask). With readback, the rendered RGBA8 frame is returned too.
  frame(rgba: Uint8ClampedArray, w: number, h: number, tUs: number, detect: boolean, readback = false, segment = false) {
    const n = w * h * 4;
    const p = this.m._malloc(n * (readback ? 2 : 1));
    try {
      this.m.HEAPU8.set(rgba, p);
      let faces = 0;
      let maskError = "";
      if (detect) {
        faces = this.m.ccall("ksw_detect", "number", ["number", "number", "number", "number"], [p, w, h, tUs]);
        if (faces < 0) throw new Error(this.lastError());
      }
      if (segment && this.m.ccall("ksw_segment", "number", ["number", "number", "number", "number"], [p, w, h, tUs]) !== 0)
        maskError = this.lastError();
      this.m.GL.makeContextCurrent(this.glHandle);
      const st = this.m.ccall(
        "ksw_render",
        "number",
        ["number", "number", "number", "number", "number"],
        [p, w, h, tUs, readback ? p + n : 0],
      );
      if (st !== 0) throw new Error(this.lastError());
      const out = readback ? this.m.HEAPU8.slice(p + n, p + 2 * n) : undefined;
      return { faces, out, maskError };
    } finally {
      this.m._free(p);
    }
  }

  enterState(name: string): void {
    if (this.m.ccall("ksw_enter_state", "number", ["string"], [name]) !== 0) throw new Error(this.lastError());
  }
  reset(): void {
    this.m.ccall("ksw_reset", null, [], []);
  }
  timings(): Timings {
    return JSON.parse(this.m.ccall("ksw_timings_json", "string", [], []));
  }
  faces(): Face[] {
    return JSON.parse(this.m.ccall("ksw_faces_json", "string", [], []));
  }
}
