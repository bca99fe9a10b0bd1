// Kestrel Effect Studio: the page. The project model is project.ts, the C runtime kestrel.ts,
// the per-kind fields schema.ts. Everything the page shows of an effect comes from the C code:
// validation messages from the C validator, the preview from the C renderer on WebGL 2.
import { Kestrel, Validation } from "./kestrel";
import { Project, Snapshot, emptyProject, packKfx, unpackKfx, imageSize, HISTORY_LIMIT } from "./project";
import { LAYER_FIELDS, LAYER_KINDS, Field, getPath, setPath, newLayer } from "./schema";
import { StickerBox, stickerBox, movedOffset, draggedScale, insideBox } from "./handles";
import {
  ACTIONS, BINDINGS, FLOAT_LIMIT, PARAM_TYPES, ParamType, animatedLayers, deleteParam, deleteState, describeRefs,
  floatRange, frameAssetName, frameTimeUs, nameProblem, naturalCompare, newParam, paramRefs, params, renameParam,
  renameState, spriteFrameAt, stateRefs, states, uniqueIn,
} from "./refs";

const BASE = new URL(".", document.baseURI).href;
const SAMPLES = ["cat_ears", "glasses_3d", "lipstick", "face_paint", "vintage_lut", "background_beach"];
const $ = <T extends HTMLElement = HTMLElement>(sel: string) => document.querySelector(sel) as T;

let ks: Kestrel;
let project = new Project(emptyProject());
let selected = -1;
let validation: Validation = { ok: false, messages: [] };
let frameSource: { rgba: Uint8ClampedArray; w: number; h: number } | null = null;
// The live source (camera or video file) while one plays; null for a photo. `refresh` makes the
// frame on show go through the landmarker, segmenter and renderer again (a paused video after
// an edit); a video file has its controls' state in `file`.
let live: {
  video: HTMLVideoElement;
  stop: () => void;
  source: "camera" | "file";
  refresh: () => void;
  file?: VideoFile;
} | null = null;
let liveFrames = 0; // frames of live sources processed so far (tests wait on it)
let landmarkerMode: "image" | "video" | "" = "";
let landmarkerFaces = 0;
let pending = Promise.resolve();
let lastFaces: number[][] = [];
// A still photo's faces are found once (when the photo or the landmarker changes); edits only
// re-render with them.
let facesFresh = false;
// The selfie segmenter (background layers' person mask), made like the landmarker: IMAGE mode for
// photos, VIDEO for the camera. When it cannot be made, segmenterError says why, the preview
// renders without a mask (background layers draw nothing) and the rest works as before.
let segmenterMode: "image" | "video" | "" = "";
let segmenterError = "";
// Which segmenter model the preview runs (a preview setting, not part of the package): the
// general one (256x256) or the landscape one (144x256, faster for 16:9 video).
type SegmenterModel = "general" | "landscape";
let segmenterModel: SegmenterModel = "general";
// The photo's mask is made once too (when the photo or the segmenter changes), and only while
// the effect needs one.
let maskFresh = false;

function status(text: string, error = false): void {
  const s = $("#status");
  s.textContent = text;
  s.classList.toggle("error", error);
}

// ---- storage (autosave) -----------------------------------------------------------------------
const DB = "kestrel-studio";
function idb(): Promise<IDBDatabase> {
  return new Promise((res, rej) => {
    const r = indexedDB.open(DB, 1);
    r.onupgradeneeded = () => r.result.createObjectStore("autosave");
    r.onsuccess = () => res(r.result);
    r.onerror = () => rej(r.error);
  });
}
async function autosave(s: Snapshot): Promise<void> {
  const db = await idb();
  await new Promise<void>((res, rej) => {
    const tx = db.transaction("autosave", "readwrite");
    tx.objectStore("autosave").put({ manifest: s.manifest, files: [...s.files.entries()], saved: Date.now() }, "current");
    tx.oncomplete = () => res();
    tx.onerror = () => rej(tx.error);
  });
  db.close();
}
async function loadAutosave(): Promise<Snapshot | null> {
  const db = await idb();
  const v: any = await new Promise((res, rej) => {
    const r = db.transaction("autosave").objectStore("autosave").get("current");
    r.onsuccess = () => res(r.result);
    r.onerror = () => rej(r.error);
  });
  db.close();
  return v ? { manifest: v.manifest, files: new Map(v.files) } : null;
}

// ---- preview ----------------------------------------------------------------------------------
// The photo's landmarker looks for up to 8 faces whatever the effect says (the renderer ignores
// faces past the effect's max_faces, keeping the first), so switching effects does not search
// the photo again; the camera's follows the effect's max_faces, as the SDK does.
async function ensureLandmarker(mode: "image" | "video"): Promise<void> {
  const maxFaces = mode === "image" ? 8 : Math.min(8, Math.max(1, Number(project.manifest.max_faces ?? 1)));
  if (landmarkerMode === mode && landmarkerFaces === maxFaces) return;
  await ks.createLandmarker(BASE, mode === "video", maxFaces);
  facesFresh = false;
  landmarkerMode = mode;
  landmarkerFaces = maxFaces;
}

async function ensureSegmenter(mode: "image" | "video"): Promise<void> {
  if (segmenterError || segmenterMode === mode) return;
  try {
    await ks.createSegmenter(BASE, mode === "video", segmenterModel === "landscape");
    segmenterMode = mode;
  } catch (e) {
    segmenterMode = "";
    segmenterError = String(e instanceof Error ? e.message : e);
    status(`no person mask: the segmenter failed (${segmenterError}); background layers draw nothing`, true);
  }
  maskFresh = false;
}

async function ensureModels(mode: "image" | "video"): Promise<void> {
  await ensureLandmarker(mode);
  await ensureSegmenter(mode);
}

// Another segmenter model: made at once (its bundle fetched once), the photo's mask made again,
// a paused video's frame processed again (a playing one gets it on its next frame).
async function setSegmenterModel(m: SegmenterModel): Promise<void> {
  segmenterModel = m;
  segmenterMode = "";
  segmenterError = "";
  maskFresh = false;
  ks.clearMask();
  await ensureSegmenter(live ? "video" : "image");
  if (!segmenterError) status(`person mask: the ${m} segmenter`);
  if (live) live.refresh();
  else if (frameSource && validation.ok) renderStill();
}

// A seek in a video file: the landmarker and the segmenter start over (VIDEO mode, new task
// states: the SDK's tasks have no reset call), so no tracking or mask smoothing crosses it.
async function restartTrackers(): Promise<void> {
  landmarkerMode = "";
  segmenterMode = "";
  await ensureModels("video");
}

async function loadPhoto(blob: Blob): Promise<void> {
  // No colour management: the pixels are the file's, as the native tools read them.
  const bmp = await createImageBitmap(blob, { colorSpaceConversion: "none", premultiplyAlpha: "none" });
  const c = document.createElement("canvas");
  c.width = bmp.width;
  c.height = bmp.height;
  const g = c.getContext("2d", { willReadFrequently: true })!;
  g.drawImage(bmp, 0, 0);
  frameSource = { rgba: g.getImageData(0, 0, c.width, c.height).data, w: c.width, h: c.height };
  facesFresh = false;
  maskFresh = false;
  ks.clearMask();
  stopLive();
  for (const id of ["#preview", "#overlay"]) {
    const cv = $<HTMLCanvasElement>(id);
    cv.width = c.width;
    cv.height = c.height;
  }
}

function stopLive(): void {
  if (!live) return;
  live.stop();
  live = null;
  $("#video-controls").hidden = true;
}

// Renders the current frame source once (photo) with the loaded effect.
function renderStill(readback = false): Uint8Array | undefined {
  if (!frameSource || !validation.ok) return undefined;
  const { rgba, w, h } = frameSource;
  const segment = !maskFresh && segmenterMode === "image" && ks.needsMask();
  let r = ks.frame(rgba, w, h, 0, !facesFresh, readback, segment);
  if (!facesFresh) {
    lastFaces = ks.faces().map((f) => f.landmarks);
    facesFresh = true;
  }
  // The timeline's frame (scrubbed or playing): the same faces and mask, the renderer started
  // over at time 0 and drawn at the frame's time, so every sprite shows where it is then.
  const tUs = previewTimeUs();
  if (tUs !== null) {
    ks.reset();
    ks.frame(rgba, w, h, 0, false, false, false);
    const r2 = ks.frame(rgba, w, h, tUs, false, readback, false);
    r = { ...r2, maskError: r.maskError };
  }
  if (segment) {
    maskFresh = true; // a failed run is not retried for this photo: its message stays shown
    if (r.maskError) status(`no person mask: ${r.maskError}`, true);
  }
  showTimings();
  drawOverlay();
  return r.out;
}

function showTimings(fps?: number): void {
  const t = ks.timings();
  // The segmenter's figure only while the effect needs a mask (else it does not run).
  const seg = !ks.needsMask()
    ? ""
    : t.mask
      ? ` · segmenter ${t.segment_ms.toFixed(1)} ms`
      : ` · no person mask${segmenterError ? ` (segmenter: ${segmenterError})` : ""}`;
  $("#timings").textContent =
    `faces ${t.faces} · landmarker ${t.detect_ms.toFixed(1)} ms${seg} · render ${t.render_ms.toFixed(1)} ms` +
    ` (${t.layers_drawn} layer draws, ${t.passes} passes)` + (fps ? ` · ${fps.toFixed(1)} fps` : "");
  showBudget();
}

function drawOverlay(): void {
  const ov = $<HTMLCanvasElement>("#overlay");
  const g = ov.getContext("2d")!;
  g.clearRect(0, 0, ov.width, ov.height);
  if ($<HTMLInputElement>("#show-landmarks").checked) {
    g.fillStyle = "#3f3";
    for (const lm of lastFaces) for (let i = 0; i < lm.length; i += 2) g.fillRect(lm[i] - 1, lm[i + 1] - 1, 2, 2);
  }
  drawHandles(g);
}

// ---- on-canvas handles (stickers, meshes) -----------------------------------------------------
// The selected sticker's box on the first face, as the renderer lays the sprite out: drag inside
// it to move (anchor.offset), drag a corner to scale (anchor.scale). A drag is one undo step;
// a press without a move is a click (anchoring a sticker to a landmark).
const HANDLE_CSS_PX = 7; // corner handle half-size, in CSS pixels
function spriteAspect(l: any): number {
  const f = l?.sprite?.frames?.[0];
  const d = typeof f === "string" ? project.files.get(f) : undefined;
  const wh = d ? imageSize(d) : null;
  return wh && wh[0] > 0 ? wh[1] / wh[0] : 1;
}
// A sticker's box is its sprite's; a mesh3d layer (with anchor landmarks) gets a guide square
// `scale` face widths wide around where its anchor puts the mesh origin (its offset and scale
// act in the canonical face space; on a near-frontal face a drag maps to them the same way).
function selectedStickerBox(): StickerBox | null {
  const l = layers()[selected];
  if (!l || !lastFaces.length) return null;
  if (l.kind === "sticker") return stickerBox(l, lastFaces[0], spriteAspect(l));
  if (l.kind === "mesh3d") return stickerBox(l, lastFaces[0], 1);
  return null;
}
// Canvas pixels per CSS pixel of the preview.
function canvasScale(): number {
  const cv = $<HTMLCanvasElement>("#preview");
  const r = cv.getBoundingClientRect();
  return r.width > 0 ? cv.width / r.width : 1;
}
function drawHandles(g: CanvasRenderingContext2D): void {
  const b = selectedStickerBox();
  if (!b) return;
  const s = canvasScale(), hs = HANDLE_CSS_PX * s;
  g.save();
  g.lineWidth = 1.5 * s;
  g.strokeStyle = "#2b7fff";
  g.setLineDash([5 * s, 4 * s]);
  const [tl, tr, bl, br] = b.corners;
  g.beginPath();
  g.moveTo(tl[0], tl[1]);
  g.lineTo(tr[0], tr[1]);
  g.lineTo(br[0], br[1]);
  g.lineTo(bl[0], bl[1]);
  g.closePath();
  g.stroke();
  g.setLineDash([]);
  g.fillStyle = "#fff";
  for (const [x, y] of b.corners) {
    g.fillRect(x - hs, y - hs, 2 * hs, 2 * hs);
    g.strokeRect(x - hs, y - hs, 2 * hs, 2 * hs);
  }
  g.beginPath(); // the move handle: the sprite centre
  g.arc(b.c[0], b.c[1], hs, 0, 2 * Math.PI);
  g.fill();
  g.stroke();
  g.restore();
}
type Drag = {
  kind: "move" | "scale";
  box: StickerBox; // at the press (the face may move under a camera: the drag keeps its frame)
  p0: [number, number];
  offset0: [number, number];
  scale0: number;
  layer: number;
  group: string;
  moved: boolean;
};
let drag: Drag | null = null;
let drags = 0;
let suppressClick = false;
function canvasPoint(e: MouseEvent): [number, number] {
  const cv = $<HTMLCanvasElement>("#preview");
  const r = cv.getBoundingClientRect();
  return [((e.clientX - r.left) * cv.width) / r.width, ((e.clientY - r.top) * cv.height) / r.height];
}
function handleAt(p: [number, number]): "move" | "scale" | null {
  const b = selectedStickerBox();
  if (!b) return null;
  const hs = HANDLE_CSS_PX * canvasScale() * 1.5;
  if (b.corners.some(([x, y]) => Math.abs(p[0] - x) <= hs && Math.abs(p[1] - y) <= hs)) return "scale";
  if (insideBox(b, p) || Math.hypot(p[0] - b.c[0], p[1] - b.c[1]) <= hs) return "move";
  return null;
}
function wireHandles(): void {
  const cv = $<HTMLCanvasElement>("#preview");
  cv.addEventListener("pointerdown", (e) => {
    suppressClick = false;
    const p = canvasPoint(e);
    const kind = handleAt(p);
    const b = selectedStickerBox();
    if (!kind || !b || e.button !== 0) return;
    const a = layers()[selected].anchor ?? {};
    const off = Array.isArray(a.offset) ? a.offset : [0, 0];
    drag = {
      kind,
      box: b,
      p0: p,
      offset0: [Number(off[0]) || 0, Number(off[1]) || 0],
      scale0: typeof a.scale === "number" ? a.scale : 1,
      layer: selected,
      group: `drag-${++drags}`,
      moved: false,
    };
    cv.setPointerCapture(e.pointerId);
  });
  cv.addEventListener("pointermove", (e) => {
    const p = canvasPoint(e);
    if (!drag) {
      const h = handleAt(p);
      cv.style.cursor = h === "scale" ? "nwse-resize" : h === "move" ? "move" : "";
      return;
    }
    const dx = p[0] - drag.p0[0], dy = p[1] - drag.p0[1];
    // under 3 CSS pixels it is still a click
    if (!drag.moved && Math.hypot(dx, dy) < 3 * canvasScale()) return;
    drag.moved = true;
    const d = drag;
    if (d.kind === "move") {
      const off = movedOffset(d.box, d.offset0, dx, dy);
      project.edit((m) => {
        const a = (m.layers[d.layer].anchor ??= {});
        a.offset = off;
      }, d.group);
    } else {
      const sc = draggedScale(d.box, d.scale0, d.p0, p);
      project.edit((m) => {
        const a = (m.layers[d.layer].anchor ??= {});
        a.scale = sc;
      }, d.group);
    }
  });
  const end = (e: PointerEvent) => {
    if (!drag) return;
    suppressClick = drag.moved;
    drag = null;
    if (cv.hasPointerCapture(e.pointerId)) cv.releasePointerCapture(e.pointerId);
  };
  cv.addEventListener("pointerup", end);
  cv.addEventListener("pointercancel", end);
}

async function startWebcam(): Promise<void> {
  const stream = await navigator.mediaDevices.getUserMedia({ video: { width: 640, height: 480 } });
  const video = document.createElement("video");
  video.srcObject = stream;
  video.muted = true;
  await video.play();
  await startLive(video, () => stream.getTracks().forEach((t) => t.stop()), "camera", {
    stamp: () => performance.now() * 1000,
    refresh: () => {},
  });
}

// A video file's state behind its controls (docs/editor.md "Preview"): play/pause, the seek bar
// and one-frame steps.
interface VideoFile {
  // One frame, in seconds: the shortest gap between presented frames' media times
  // (requestVideoFrameCallback, divided by the frames presented in between) while it plays;
  // 1/30 s until then, or in a browser without requestVideoFrameCallback (measured false).
  frameDur: number;
  measured: boolean;
  duration: number; // s; 0 while unknown
  userPaused: boolean; // paused by the controls (an end of the file then does not loop)
  resets: number; // landmarker/segmenter restarts so far (one per seek)
  processed: number; // media time (s) of the last frame processed, -1 before the first
  // The position the controls last sought, in whole microseconds (-1 once it plays): steps count
  // from it, so that a step forward and one back land on the very microsecond they left (from
  // currentTime, a step and its reverse could come back a microsecond short and show the frame
  // before when a frame starts exactly there).
  pos: number;
  shown: number; // media time (s) of the frame on show (requestVideoFrameCallback), -1 unknown
}
const DEFAULT_FRAME_S = 1 / 30;

function once(el: EventTarget, ev: string, timeoutMs: number): Promise<void> {
  return new Promise((res) => {
    const t = setTimeout(res, timeoutMs);
    el.addEventListener(ev, () => (clearTimeout(t), res()), { once: true });
  });
}

// A recording (MediaRecorder's WebM) has no duration in its header; Chromium finds it when asked
// to seek past the end. Returns the duration in seconds, 0 when still unknown.
async function probeDuration(video: HTMLVideoElement): Promise<number> {
  if (Number.isFinite(video.duration)) return video.duration;
  video.pause();
  let seeked = once(video, "seeked", 3000);
  video.currentTime = 1e101;
  await seeked;
  seeked = once(video, "seeked", 3000);
  video.currentTime = 0;
  await seeked;
  await video.play().catch(() => {});
  return Number.isFinite(video.duration) ? video.duration : 0;
}

// A local video file as the preview source: played (muted, looping) and each new frame run
// through the same VIDEO-mode path as the camera, timestamps from the video's currentTime (kept
// increasing across loops and seeks, as VIDEO mode requires). Paused, the frame on show is
// processed once (and again after an edit). Every seek (the seek bar, a step, the loop back to
// the start) is a discontinuity: the SDK's tasks export no reset, so the landmarker and the
// segmenter are made afresh (VIDEO mode, a new task state), and the frame after the seek is
// searched from scratch, without the tracking and the mask smoothing of the frames before it.
async function startVideoFile(file: Blob, label: string): Promise<void> {
  const url = URL.createObjectURL(file);
  const video = document.createElement("video");
  video.muted = true;
  video.loop = true;
  video.playsInline = true;
  video.src = url;
  const vf: VideoFile = {
    frameDur: DEFAULT_FRAME_S, measured: false, duration: 0, userPaused: false, resets: 0, processed: -1,
    pos: -1, shown: -1,
  };
  let stopped = false;
  // a file without a known duration (a recording) does not loop by itself
  video.addEventListener("ended", () => {
    if (stopped || vf.userPaused) return;
    video.currentTime = 0;
    video.play().catch(() => {});
  });
  try {
    await video.play();
  } catch (e) {
    URL.revokeObjectURL(url);
    throw new Error(`${label}: not a video this browser plays (${e instanceof Error ? e.message : e})`);
  }
  vf.duration = await probeDuration(video);
  video.addEventListener("durationchange", () => {
    if (Number.isFinite(video.duration)) vf.duration = video.duration;
  });
  let discontinuity = false;
  video.addEventListener("seeking", () => (discontinuity = true));
  for (const ev of ["seeked", "play", "pause"]) video.addEventListener(ev, () => !stopped && showVideoTime());
  video.addEventListener("play", () => (vf.pos = -1));
  // the frame duration, from the media times of consecutive presented frames
  type FrameMeta = { mediaTime: number; presentedFrames: number };
  const v = video as HTMLVideoElement & { requestVideoFrameCallback?: (cb: (now: number, m: FrameMeta) => void) => number };
  if (v.requestVideoFrameCallback) {
    let prev: FrameMeta | null = null;
    const onFrame = (_now: number, m: FrameMeta) => {
      if (stopped) return;
      // a busy page skips callbacks: the frames presented in between share the gap
      const k = prev ? m.presentedFrames - prev.presentedFrames : 0;
      if (prev && k >= 1 && k <= 8) {
        const d = (m.mediaTime - prev.mediaTime) / k;
        if (d >= 1 / 240 && d <= 1 / 4 && (!vf.measured || d < vf.frameDur - 1e-6)) {
          vf.frameDur = d;
          vf.measured = true;
        }
      }
      prev = { mediaTime: m.mediaTime, presentedFrames: m.presentedFrames };
      vf.shown = m.mediaTime;
      v.requestVideoFrameCallback!(onFrame);
    };
    v.requestVideoFrameCallback(onFrame);
  }
  let lastMedia = -1, base = 0, lastStamp = -1, force = false;
  const stamp = () => {
    if (video.seeking) return null; // the frame on show is not the sought one yet
    const t = video.currentTime;
    if (t === lastMedia && !force) return null; // no new frame since the last one
    force = false;
    if (t < lastMedia) base += lastMedia - t + DEFAULT_FRAME_S; // looped or sought back: the clock goes on
    lastMedia = t;
    vf.processed = t;
    if (vf.duration < t) vf.duration = t; // no duration known: the bar spans what has played
    const us = Math.max(Math.round((base + t) * 1e6), lastStamp + 1);
    lastStamp = us;
    return us;
  };
  const stop = () => {
    stopped = true;
    video.pause();
    video.removeAttribute("src");
    video.load();
    URL.revokeObjectURL(url);
  };
  await startLive(video, stop, "file", {
    stamp,
    refresh: () => (force = true),
    file: vf,
    discontinuity: () => {
      const d = discontinuity;
      discontinuity = false;
      return d;
    },
  });
  $("#video-controls").hidden = false;
  showVideoTime();
  status(`video ${label}: ${video.videoWidth}x${video.videoHeight}`);
}

// ---- video file controls ----------------------------------------------------------------------
let seekHeld = false; // the seek bar is being dragged: the time does not move its thumb
function videoCtl(): { video: HTMLVideoElement; vf: VideoFile } | null {
  return live?.file ? { video: live.video, vf: live.file } : null;
}
function showVideoTime(): void {
  const c = videoCtl();
  if (!c) return;
  const { video, vf } = c;
  $("#video-time").textContent = `${video.currentTime.toFixed(3)} / ${vf.duration.toFixed(3)} s`;
  const bar = $<HTMLInputElement>("#video-seek");
  bar.max = String(vf.duration || 1);
  if (!seekHeld) bar.value = String(video.currentTime);
  $("#video-play").textContent = video.paused ? "Play" : "Pause";
  const step = `${(vf.frameDur * 1000).toFixed(1)} ms${vf.measured ? "" : " (1/30 s: no frame times from the browser yet)"}`;
  $("#video-back").title = `One frame back: ${step}`;
  $("#video-fwd").title = `One frame forward: ${step}`;
}
// Seeks to t seconds, kept inside the file (half a frame short of its end, so that a paused
// file does not end and loop).
function videoSeek(t: number): void {
  const c = videoCtl();
  if (!c) return;
  const end = c.vf.duration > 0 ? Math.max(0, c.vf.duration - c.vf.frameDur / 2) : Infinity;
  const us = Math.round(Math.max(0, Math.min(t, end)) * 1e6);
  c.vf.pos = us;
  // a quarter microsecond in: the browser's microsecond clock gets `us` whether it rounds or
  // truncates the seconds it is given
  c.video.currentTime = (us + 0.25) / 1e6;
  showVideoTime();
}
function videoStep(dir: 1 | -1): void {
  const c = videoCtl();
  if (!c) return;
  c.vf.userPaused = true;
  c.video.pause();
  const now = Math.round(c.video.currentTime * 1e6);
  const from = c.vf.pos >= 0 && Math.abs(now - c.vf.pos) <= 1 ? c.vf.pos : now;
  videoSeek((from + dir * Math.round(c.vf.frameDur * 1e6)) / 1e6);
}
function videoPlayPause(): void {
  const c = videoCtl();
  if (!c) return;
  if (c.video.paused) {
    c.vf.userPaused = false;
    c.video.play().catch((e) => status(`video: ${e}`, true));
  } else {
    c.vf.userPaused = true;
    c.video.pause();
  }
  showVideoTime();
}

// Runs the landmarker (VIDEO mode), the segmenter when the effect needs a mask, and the renderer
// on every new frame of `video` until another source replaces it. `stamp` gives the frame's
// timestamp in microseconds, or null when there is no new frame yet; `discontinuity` says that
// the source jumped (a seek) since it was last asked: the trackers start over first.
interface LiveOptions {
  stamp: () => number | null;
  refresh: () => void;
  file?: VideoFile;
  discontinuity?: () => boolean;
}
async function startLive(video: HTMLVideoElement, stop: () => void, source: "camera" | "file", o: LiveOptions): Promise<void> {
  stopLive();
  clearScrub();
  live = { video, stop, source, refresh: o.refresh, file: o.file };
  await ensureModels("video");
  ks.reset();
  const c = document.createElement("canvas");
  const g = c.getContext("2d", { willReadFrequently: true })!;
  let t0 = performance.now();
  let frames = 0;
  let fps = 0;
  const tick = () => {
    if (!live || live.video !== video) return;
    if (o.discontinuity?.()) {
      if (o.file) o.file.resets++;
      restartTrackers()
        .catch((e) => status(String(e instanceof Error ? e.message : e), true))
        .then(() => requestAnimationFrame(tick));
      return;
    }
    if (o.file) showVideoTime();
    const w = video.videoWidth, h = video.videoHeight;
    const ts = w && h && validation.ok ? o.stamp() : null;
    if (ts !== null) {
      if (c.width !== w || c.height !== h) {
        c.width = w;
        c.height = h;
        for (const id of ["#preview", "#overlay"]) {
          $<HTMLCanvasElement>(id).width = w;
          $<HTMLCanvasElement>(id).height = h;
        }
      }
      g.drawImage(video, 0, 0);
      const rgba = g.getImageData(0, 0, w, h).data;
      try {
        const segment = segmenterMode === "video" && ks.needsMask();
        const r = ks.frame(rgba, w, h, ts, true, false, segment);
        if (r.maskError) status(`no person mask: ${r.maskError}`, true);
        lastFaces = ks.faces().map((f) => f.landmarks);
        frames++;
        const now = performance.now();
        if (now - t0 > 1000) {
          fps = (frames * 1000) / (now - t0);
          frames = 0;
          t0 = now;
        }
        showTimings(fps);
        drawOverlay();
        liveFrames++;
      } catch (e) {
        status(String(e), true);
      }
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}

// Validates the project with the C validator and, when valid, reloads the preview's effect.
function refresh(): void {
  const bytes = packKfx(project);
  validation = ks.validate(bytes);
  showMessages();
  if (validation.ok) {
    try {
      ks.loadEffect(bytes);
      status(`valid · ${validation.layers} layer(s) · ${(bytes.length / 1024).toFixed(0)} KB`);
    } catch (e) {
      validation = { ok: false, messages: [{ path: "", message: String((e as Error).message) }] };
      showMessages();
    }
  } else {
    status("not valid: see Validation", true);
  }
  showBudget(bytes.length);
}

function showMessages(v: Validation = validation): void {
  const ul = $("#messages");
  ul.innerHTML = "";
  if (v.ok) {
    const li = document.createElement("li");
    li.className = "ok";
    li.textContent = "The C validator accepts this package.";
    ul.append(li);
  }
  for (const m of v.messages) {
    const li = document.createElement("li");
    li.textContent = m.message;
    li.dataset.path = m.path;
    ul.append(li);
  }
  markInvalidFields();
}

// ---- budget -----------------------------------------------------------------------------------
// What a phone can take (docs/editor.md "Budget"): limits the user sets (kept in localStorage,
// for every project), a warning for each figure over its limit.
interface BudgetLimits {
  package_mb: number;
  texture_mb: number;
  draw_calls: number;
}
const BUDGET_DEFAULTS: BudgetLimits = { package_mb: 5, texture_mb: 64, draw_calls: 30 };
const LIMITS_KEY = "kestrel-studio-budget-limits";
function loadLimits(): BudgetLimits {
  const l = { ...BUDGET_DEFAULTS };
  try {
    const v = JSON.parse(localStorage.getItem(LIMITS_KEY) ?? "{}");
    for (const k of Object.keys(l) as (keyof BudgetLimits)[]) if (typeof v[k] === "number" && v[k] > 0) l[k] = v[k];
  } catch {
    // unreadable: the defaults
  }
  return l;
}
let limits = loadLimits();
let lastPkgBytes = 0;
function saveLimits(): void {
  try {
    localStorage.setItem(LIMITS_KEY, JSON.stringify(limits));
  } catch {
    // storage refused (private mode): the limits last for this page
  }
}
function showLimits(): void {
  for (const el of document.querySelectorAll<HTMLInputElement>("[data-limit]"))
    el.value = String(limits[el.dataset.limit as keyof BudgetLimits]);
}

function showBudget(pkgBytes = lastPkgBytes): void {
  lastPkgBytes = pkgBytes;
  let texBytes = 0;
  for (const [n, d] of project.files) {
    if (!/\.(png|jpe?g)$/i.test(n)) continue;
    const wh = imageSize(d);
    if (wh) texBytes += wh[0] * wh[1] * 4; // decoded RGBA8
  }
  const layers = (project.manifest.layers ?? []) as any[];
  // draw calls: the last preview frame's layer draws (one per layer and face) and passes
  const t = ks && validation.ok ? ks.timings() : null;
  const draws = t ? t.layers_drawn + t.passes : 0;
  const atMax = t ? drawsAtMaxFaces(t, layers) : null;
  const MB = 1048576;
  const faces = (n: number) => `${n} face${n === 1 ? "" : "s"}`;
  // the limit is checked on the larger figure (the effect at its max faces, when known)
  const worst = Math.max(draws, atMax?.draws ?? draws);
  const figs: [string, string, number, number, string][] = [
    ["package", `package ${(pkgBytes / 1024).toFixed(0)} KB`, pkgBytes / MB, limits.package_mb, "MB"],
    ["textures", `textures ${(texBytes / MB).toFixed(1)} MB (RGBA8)`, texBytes / MB, limits.texture_mb, "MB"],
    ["draws", `${t ? draws : "–"} draw calls on this preview${t ? ` (${faces(Math.min(t.faces, atMax?.maxFaces ?? t.faces))})` : ""}`, worst, limits.draw_calls, "per frame"],
    [
      "draws-max",
      atMax?.draws != null
        ? `${atMax.draws} at max faces (${atMax.maxFaces})`
        : `– at max faces (${atMax?.maxFaces ?? "?"}: needs a face in the preview)`,
      0,
      Infinity,
      "",
    ],
  ];
  const box = $("#budget");
  box.innerHTML = "";
  const warn = $("#budget-warnings");
  warn.innerHTML = "";
  for (const [key, text, value, limit, unit] of figs) {
    const sp = document.createElement("span");
    sp.dataset.budget = key;
    sp.textContent = text;
    if (key === "draws") sp.dataset.value = String(t ? draws : "");
    if (key === "draws-max") sp.dataset.value = String(atMax?.draws ?? "");
    const over = value > limit;
    sp.classList.toggle("over", over);
    box.append(sp, " · ");
    if (over) {
      const li = document.createElement("li");
      li.dataset.budget = key;
      const v = unit === "MB" ? `${value.toFixed(2)} MB` : `${value}`;
      const where = key === "draws" && atMax && value > draws ? ` (at max faces, ${atMax.maxFaces})` : "";
      li.textContent = `${key}: ${v}${where} is over the limit of ${limit} ${unit}`;
      warn.append(li);
    }
  }
  box.append(`${layers.length} layers · ${layers.filter((l) => l.visible !== false).length} visible`);
}

// Draw calls of the last preview frame counted again for the effect's max_faces (format 1.1's
// `max_faces`, 1-8, default 1), as ks_ar_stats would count them on a frame with that many faces.
// The renderer draws a per-face layer (sticker, makeup, face_texture, beauty, mesh3d) once per
// face and a frame-wide one (lut, background) once; its full-frame passes are per layer, not per
// face (ar_render/src/gles3: each layer's draw loops over the faces inside one pass). So: the
// frame-wide layers' draws and the passes as they are, the per-face draws scaled from the
// preview's faces to max_faces. Null draws when the preview frame had no face (its per-face
// layers and their passes were not drawn: nothing to scale).
const FRAME_WIDE_KINDS = new Set(["lut", "background"]);
function drawsAtMaxFaces(t: { layers_drawn: number; passes: number; faces: number }, ls: any[]) {
  const maxFaces = Math.min(8, Math.max(1, Math.round(Number(project.manifest.max_faces ?? 1)) || 1));
  const shown = Math.min(t.faces, maxFaces); // the renderer takes the first max_faces faces
  if (shown < 1) return { maxFaces, draws: null };
  const frameWide = ls.filter((l) => FRAME_WIDE_KINDS.has(l?.kind) && l.visible !== false).length;
  const perFace = Math.max(0, t.layers_drawn - frameWide) / shown;
  return { maxFaces, draws: Math.round(t.layers_drawn - perFace * shown + perFace * maxFaces) + t.passes };
}

// The validator's path "layers[2].anchor.scale" marks that layer's field in the inspector.
function markInvalidFields(): void {
  for (const el of document.querySelectorAll<HTMLElement>("#inspector .field")) {
    el.classList.remove("invalid");
    el.querySelector(".msg")?.remove();
  }
  for (const m of validation.messages) {
    const mm = /^layers\[(\d+)\]\.?(.*)$/.exec(m.path);
    if (!mm || Number(mm[1]) !== selected) continue;
    const sub = mm[2].replace(/\[\d+\]$/, "");
    for (const el of document.querySelectorAll<HTMLElement>("#inspector .field")) {
      if (el.dataset.field && sub.startsWith(el.dataset.field)) {
        el.classList.add("invalid");
        const d = document.createElement("div");
        d.className = "msg";
        d.textContent = m.message;
        el.append(d);
      }
    }
  }
}

// ---- panels -----------------------------------------------------------------------------------
function layers(): any[] {
  if (!Array.isArray(project.manifest.layers)) project.manifest.layers = [];
  return project.manifest.layers;
}

function uniqueName(base: string): string {
  const names = new Set(layers().map((l) => l.name));
  if (!names.has(base)) return base;
  for (let i = 2; ; i++) if (!names.has(`${base}_${i}`)) return `${base}_${i}`;
}

function renderLayerList(): void {
  const ol = $("#layers");
  ol.innerHTML = "";
  layers().forEach((l, i) => {
    const li = document.createElement("li");
    li.className = "layer" + (i === selected ? " selected" : "") + (l.visible === false ? " hidden-layer" : "");
    li.dataset.index = String(i);
    li.innerHTML =
      `<button class="vis" title="show/hide">${l.visible === false ? "○" : "●"}</button>` +
      `<span class="kind">${l.kind}</span><input class="rename" />` +
      `<button class="up" title="move up">↑</button><button class="down" title="move down">↓</button>` +
      `<button class="dup" title="duplicate">dup</button><button class="del" title="remove">✕</button>`;
    const name = li.querySelector<HTMLInputElement>("input.rename")!;
    name.value = l.name ?? "";
    name.addEventListener("focus", () => select(i, false));
    name.addEventListener("change", () => renameLayer(i, name.value));
    li.addEventListener("click", (e) => {
      const b = (e.target as HTMLElement).closest("button");
      if (!b) return select(i);
      if (b.classList.contains("vis")) project.edit(() => (layers()[i].visible = layers()[i].visible === false));
      else if (b.classList.contains("up") && i > 0) moveLayer(i, i - 1);
      else if (b.classList.contains("down") && i < layers().length - 1) moveLayer(i, i + 1);
      else if (b.classList.contains("dup")) duplicateLayer(i);
      else if (b.classList.contains("del")) removeLayer(i);
    });
    ol.append(li);
  });
}

function renameLayer(i: number, name: string): void {
  const old = layers()[i].name;
  if (!name || name === old) return;
  project.edit((m) => {
    m.layers[i].name = name;
    // actions name layers: keep them pointing at the renamed one
    for (const s of m.states ?? []) for (const a of s.actions ?? []) if (a.layer === old) a.layer = name;
  });
}
function moveLayer(from: number, to: number): void {
  project.edit((m) => {
    const [l] = m.layers.splice(from, 1);
    m.layers.splice(to, 0, l);
  });
  selected = to;
  renderAll();
}
function duplicateLayer(i: number): void {
  project.edit((m) => {
    const copy = structuredClone(m.layers[i]);
    copy.name = uniqueName(`${m.layers[i].name}_copy`);
    m.layers.splice(i + 1, 0, copy);
  });
  select(i + 1);
}
function removeLayer(i: number): void {
  const name = layers()[i].name;
  project.edit((m) => {
    m.layers.splice(i, 1);
    for (const s of m.states ?? []) s.actions = (s.actions ?? []).filter((a: any) => a.layer !== name);
  });
  selected = Math.min(selected, layers().length - 1);
  renderAll();
}

function select(i: number, rerenderList = true): void {
  if (i !== selected) clearScrub();
  selected = i;
  if (rerenderList) renderLayerList();
  else for (const li of document.querySelectorAll("#layers li")) li.classList.toggle("selected", (li as HTMLElement).dataset.index === String(i));
  renderInspector();
  drawOverlay();
}

function colorToHex(c: unknown): string {
  if (typeof c === "string") return c.slice(0, 7);
  if (Array.isArray(c)) return "#" + c.slice(0, 3).map((v) => Math.round(Number(v) * 255).toString(16).padStart(2, "0")).join("");
  return "#000000";
}

function fieldControl(layer: any, i: number, f: Field): HTMLElement {
  const wrap = document.createElement("div");
  wrap.className = "field";
  wrap.dataset.field = f.path;
  const label = document.createElement("label");
  label.textContent = f.label + " ";
  wrap.append(label);
  const cur = getPath(layer, f.path);
  const value = cur === undefined ? f.def : cur;
  const set = (v: unknown) => project.edit((m) => setPath(m.layers[i], f.path, v));
  const assetNames = (re: RegExp) => [...project.files.keys()].filter((n) => re.test(n)).sort();
  let input: HTMLInputElement | HTMLSelectElement;
  switch (f.type.t) {
    case "bool": {
      const x = document.createElement("input");
      x.type = "checkbox";
      x.checked = value !== false;
      x.addEventListener("change", () => set(x.checked));
      input = x;
      break;
    }
    case "unit":
    case "number": {
      const x = document.createElement("input");
      x.type = f.type.t === "unit" ? "range" : "number";
      x.min = String(f.type.t === "unit" ? 0 : f.type.min);
      x.max = String(f.type.t === "unit" ? 1 : f.type.max);
      x.step = String(f.type.t === "unit" ? 0.01 : f.type.step);
      x.value = String(value ?? 0);
      x.addEventListener("change", () => set(Number(x.value)));
      input = x;
      break;
    }
    case "enum": {
      const x = document.createElement("select");
      for (const o of f.type.options) x.add(new Option(o, o));
      x.value = String(value ?? "");
      x.addEventListener("change", () => set(x.value));
      input = x;
      break;
    }
    case "color": {
      const x = document.createElement("input");
      x.type = "color";
      x.value = colorToHex(value);
      x.addEventListener("change", () => set(x.value.toUpperCase()));
      input = x;
      break;
    }
    case "asset": {
      const x = document.createElement("select");
      x.add(new Option("(none)", ""));
      for (const n of assetNames(f.type.accept)) x.add(new Option(n, n));
      if (value && ![...x.options].some((o) => o.value === value)) x.add(new Option(`${value} (missing)`, String(value)));
      x.value = String(value ?? "");
      x.addEventListener("change", () => set(x.value || undefined));
      input = x;
      break;
    }
    case "assets": {
      const x = document.createElement("input");
      x.value = Array.isArray(value) ? value.join(", ") : "";
      x.title = "comma-separated asset names, in frame order";
      x.addEventListener("change", () => set(x.value.split(",").map((s) => s.trim()).filter(Boolean)));
      input = x;
      break;
    }
    case "param": {
      // the parameters of the type this key binds (docs/effects-format.md 4.3), by name
      const x = document.createElement("select");
      x.add(new Option("(none)", ""));
      const pt = f.type.ptype;
      for (const p of params(project.manifest)) if (p?.type === pt) x.add(new Option(`${p.name} (${pt})`, p.name));
      if (value && ![...x.options].some((o) => o.value === value)) x.add(new Option(`${value} (missing)`, String(value)));
      x.value = String(value ?? "");
      x.title = `a ${pt} parameter (add one under Parameters)`;
      x.addEventListener("change", () => set(x.value || undefined));
      input = x;
      break;
    }
    case "landmarks": {
      const x = document.createElement("input");
      x.value = Array.isArray(value) ? value.join(", ") : "";
      x.title = "landmark indices 0..477 (or click a landmark on the preview)";
      x.addEventListener("change", () => set(x.value.split(",").map((s) => s.trim()).filter(Boolean).map(Number)));
      input = x;
      break;
    }
    case "offset": {
      const x = document.createElement("input");
      x.value = Array.isArray(value) ? value.join(", ") : "0, 0";
      x.addEventListener("change", () => set(x.value.split(",").map((s) => Number(s.trim()))));
      input = x;
      break;
    }
    default: {
      const x = document.createElement("input");
      x.value = value == null ? "" : String(value);
      x.addEventListener("change", () => set(x.value === "" ? undefined : x.value));
      input = x;
    }
  }
  input.name = f.path;
  label.append(input);
  return wrap;
}

function renderInspector(): void {
  const box = $("#inspector");
  box.innerHTML = "";
  const l = layers()[selected];
  if (!l) {
    box.innerHTML = '<p class="hint">Select a layer.</p>';
    return;
  }
  const h = document.createElement("p");
  h.innerHTML = `<b>${l.kind}</b> layer`;
  box.append(h);
  for (const f of LAYER_FIELDS[l.kind] ?? []) {
    box.append(fieldControl(l, selected, f));
    if (f.path === "sprite.loop") box.append(timeline(l, selected));
  }
  if (l.kind === "sticker") {
    const p = document.createElement("p");
    p.className = "hint";
    p.textContent = "Click a landmark on the preview to anchor this sticker to it.";
    box.append(p);
  }
  markInvalidFields();
}

function renderEffectFields(): void {
  for (const el of document.querySelectorAll<HTMLInputElement>("[data-mfield]")) {
    const v = project.manifest[el.dataset.mfield!];
    el.value = v == null ? "" : String(v);
  }
}

function renderAssets(): void {
  const ul = $("#assets");
  ul.innerHTML = "";
  for (const [n, d] of [...project.files.entries()].sort()) {
    const li = document.createElement("li");
    li.textContent = `${n} (${(d.length / 1024).toFixed(1)} KB)`;
    ul.append(li);
  }
}

function renderTriggers(): void {
  const ul = $("#triggers");
  ul.innerHTML = "";
  const states: any[] = project.manifest.states ?? [];
  (project.manifest.triggers ?? []).forEach((t: any, i: number) => {
    const li = document.createElement("li");
    li.className = "trigger";
    const on = document.createElement("select");
    for (const o of ["face_found", "face_lost", "mouth_open", "blink", "brow_raise", "smile"]) on.add(new Option(o, o));
    on.value = t.on;
    on.addEventListener("change", () => project.edit((m) => (m.triggers[i].on = on.value)));
    const th = document.createElement("input");
    th.type = "number";
    th.min = "0.001";
    th.max = "1";
    th.step = "0.05";
    th.value = String(t.threshold ?? 0.5);
    th.addEventListener("change", () => project.edit((m) => (m.triggers[i].threshold = Number(th.value))));
    const st = document.createElement("select");
    for (const s of states) st.add(new Option(s.name, s.name));
    st.value = t.state;
    st.addEventListener("change", () => project.edit((m) => (m.triggers[i].state = st.value)));
    const del = document.createElement("button");
    del.textContent = "✕";
    del.addEventListener("click", () => project.edit((m) => m.triggers.splice(i, 1)));
    li.append(on, " ≥ ", th, " → ", st, del);
    ul.append(li);
  });
  const sim = $("#simulate");
  sim.innerHTML = "";
  for (const s of states) {
    const b = document.createElement("button");
    b.className = "sim";
    b.dataset.state = s.name;
    b.textContent = `enter “${s.name}”`;
    b.addEventListener("click", () => {
      if (scrub || playing) {
        clearScrub(); // the state applies at the effect's start, not at a timeline frame
        renderStill();
      }
      ks.enterState(s.name);
      renderStill();
    });
    sim.append(b);
  }
}

// ---- parameters and states (docs/effects-format.md 4.3, 4.5) ------------------------------------
// A refused edit changes nothing: the status line says why and the panels show the kept values.
function refuse(msg: string): void {
  renderAll();
  status(msg, true);
}
function button(text: string, cls: string, title: string, onClick: () => void): HTMLButtonElement {
  const b = document.createElement("button");
  b.textContent = text;
  b.className = cls;
  b.title = title;
  b.addEventListener("click", onClick);
  return b;
}
// "#RRGGBBAA" and [r, g, b, a] keep their alpha when the colour picker (RGB only) changes.
function alphaSuffix(c: unknown): string {
  if (typeof c === "string" && /^#[0-9a-fA-F]{8}$/.test(c)) return c.slice(7).toUpperCase();
  if (Array.isArray(c) && c.length === 4) return Math.round(Math.min(1, Math.max(0, Number(c[3]))) * 255).toString(16).padStart(2, "0").toUpperCase();
  return "";
}

/* One row of the Parameters or States panel: the <li> (class, index and name in its dataset) and
 * its name field, which calls onRename with the new text. */
function namedItem(cls: string, index: number, value: unknown, inputCls: string, title: string,
  onRename: (v: string) => void): [HTMLLIElement, HTMLInputElement] {
  const li = document.createElement("li");
  li.className = cls;
  li.dataset.index = String(index);
  li.dataset.name = String(value ?? "");
  const name = document.createElement("input");
  name.className = inputCls;
  name.value = String(value ?? "");
  name.title = title;
  name.addEventListener("change", () => onRename(name.value));
  return [li, name];
}

function renderParams(): void {
  const ul = $("#params");
  ul.innerHTML = "";
  params(project.manifest).forEach((p: any, i: number) => {
    const [li, name] = namedItem("param", i, p?.name, "pname",
      "name (layers bind it by name; a rename updates them)", (v) => renameParamUI(i, v));
    const type = document.createElement("select");
    type.className = "ptype";
    for (const t of PARAM_TYPES) type.add(new Option(t, t));
    type.value = String(p?.type ?? "");
    type.addEventListener("change", () => changeParamType(i, type.value as ParamType));
    const row = document.createElement("div");
    row.className = "row";
    row.append(name, type, button("✕", "pdel", "remove this parameter", () => removeParam(i)));
    li.append(row, paramDefault(p, i));
    const refs = paramRefs(project.manifest, p?.name);
    if (refs.length) {
      const h = document.createElement("div");
      h.className = "hint";
      h.textContent = `bound by ${describeRefs(refs)}`;
      li.append(h);
    }
    ul.append(li);
  });
}

// The typed default of parameter i: a colour picker, min/max and a slider, options and a menu,
// an image asset.
function paramDefault(p: any, i: number): HTMLElement {
  const row = document.createElement("div");
  row.className = "row";
  const setP = (f: (q: any) => void) => project.edit((m) => f(m.parameters[i]));
  const input = (cls: string, type = "text") => {
    const x = document.createElement("input");
    x.className = cls;
    x.type = type;
    return x;
  };
  switch (p?.type) {
    case "color": {
      const x = input("pdefault", "color");
      x.value = colorToHex(p.default);
      x.addEventListener("change", () => setP((q) => (q.default = x.value.toUpperCase() + alphaSuffix(q.default))));
      row.append("default ", x);
      break;
    }
    case "float": {
      const [lo, hi] = floatRange(p);
      const def = typeof p.default === "number" ? p.default : lo;
      const mn = input("pmin", "number"), mx = input("pmax", "number");
      mn.value = String(lo);
      mx.value = String(hi);
      const onRange = () => {
        const a = Number(mn.value), b = Number(mx.value);
        if (!Number.isFinite(a) || !Number.isFinite(b) || Math.abs(a) > FLOAT_LIMIT || Math.abs(b) > FLOAT_LIMIT)
          return refuse(`parameter “${p.name}”: min and max are numbers in [-${FLOAT_LIMIT}, ${FLOAT_LIMIT}]`);
        if (!(a < b)) return refuse(`parameter “${p.name}”: min (${a}) must be below max (${b})`);
        setP((q) => {
          q.min = a;
          q.max = b;
          q.default = Math.min(b, Math.max(a, typeof q.default === "number" ? q.default : a));
        });
      };
      mn.addEventListener("change", onRange);
      mx.addEventListener("change", onRange);
      const sl = input("pdefault", "range"), nv = input("pvalue", "number");
      for (const x of [sl, nv]) {
        x.min = String(lo);
        x.max = String(hi);
        x.step = String((hi - lo) / 100);
        x.value = String(def);
        x.addEventListener("change", () => {
          const v = Number(x.value);
          if (!Number.isFinite(v) || v < lo || v > hi) return refuse(`parameter “${p.name}”: the default is a number in [${lo}, ${hi}]`);
          setP((q) => (q.default = v));
        });
      }
      row.append("min ", mn, " max ", mx, " default ", sl, nv);
      break;
    }
    case "enum": {
      const opts: string[] = Array.isArray(p.options) ? p.options.map(String) : [];
      const o = input("poptions");
      o.value = opts.join(", ");
      o.title = "options, comma-separated (1 to 32)";
      o.addEventListener("change", () => {
        const list = o.value.split(",").map((s) => s.trim()).filter(Boolean);
        if (!list.length || list.length > 32) return refuse(`parameter “${p.name}”: an enum has 1 to 32 options`);
        if (new Set(list).size !== list.length) return refuse(`parameter “${p.name}”: options must differ`);
        setP((q) => {
          q.options = list;
          if (!list.includes(q.default)) q.default = list[0];
        });
      });
      const d = document.createElement("select");
      d.className = "pdefault";
      for (const v of opts) d.add(new Option(v, v));
      d.value = String(p.default ?? opts[0] ?? "");
      d.addEventListener("change", () => setP((q) => (q.default = d.value)));
      row.append("options ", o, " default ", d);
      break;
    }
    case "image": {
      const d = document.createElement("select");
      d.className = "pdefault";
      d.add(new Option("(none)", ""));
      for (const n of [...project.files.keys()].filter((n) => /\.(png|jpe?g)$/i.test(n)).sort()) d.add(new Option(n, n));
      if (p.default && ![...d.options].some((x) => x.value === p.default)) d.add(new Option(`${p.default} (missing)`, String(p.default)));
      d.value = String(p.default ?? "");
      d.addEventListener("change", () => setP((q) => (d.value ? (q.default = d.value) : delete q.default)));
      row.append("default ", d);
      break;
    }
  }
  return row;
}

function renameParamUI(i: number, name: string): void {
  const list = params(project.manifest);
  const old = list[i]?.name;
  if (name === old) return;
  const problem = nameProblem(list, name, "parameter", i);
  if (problem) return refuse(`parameter not renamed: ${problem}`);
  const n = paramRefs(project.manifest, old).length;
  project.edit((m) => renameParam(m, old, name));
  status(`renamed parameter “${old}” to “${name}”${n ? `; ${n} binding(s) follow` : ""}`);
}

function changeParamType(i: number, type: ParamType): void {
  const p = params(project.manifest)[i];
  if (!p || p.type === type) return;
  const bad = paramRefs(project.manifest, p.name).filter((r) => BINDINGS[r.key] !== type);
  if (bad.length) return refuse(`parameter “${p.name}” stays ${p.type}: it is bound by ${describeRefs(bad)}, which needs a ${BINDINGS[bad[0].key]} parameter; unbind it first`);
  project.edit((m) => (m.parameters[i] = newParam(type, p.name)));
}

function removeParam(i: number): void {
  const p = params(project.manifest)[i];
  if (!p) return;
  const refs = paramRefs(project.manifest, p.name);
  if (refs.length && !confirm(`Parameter “${p.name}” is bound by ${describeRefs(refs)}.\nRemove it and these bindings? (The layers keep their own values.)`)) {
    status(`kept parameter “${p.name}”: it is bound by ${describeRefs(refs)}`, true);
    return;
  }
  project.edit((m) => deleteParam(m, p.name));
  status(`removed parameter “${p.name}”${refs.length ? ` and ${refs.length} binding(s)` : ""}`);
}

function renderStates(): void {
  const m = project.manifest;
  const list = states(m);
  const sel = $<HTMLSelectElement>("#initial-state");
  sel.innerHTML = "";
  sel.add(new Option("(none)", ""));
  for (const s of list) sel.add(new Option(String(s?.name), String(s?.name)));
  if (m.initial_state != null && !list.some((s) => s?.name === m.initial_state)) sel.add(new Option(`${m.initial_state} (missing)`, String(m.initial_state)));
  sel.value = String(m.initial_state ?? "");
  const ul = $("#states");
  ul.innerHTML = "";
  const layerNames: string[] = layers().map((l) => String(l?.name));
  const animated = animatedLayers(m);
  list.forEach((s: any, i: number) => {
    const [li, name] = namedItem("state", i, s?.name, "sname",
      "name (triggers and the initial state follow a rename)", (v) => renameStateUI(i, v));
    const row = document.createElement("div");
    row.className = "row";
    row.append(name, button("+ action", "add-action", "add an action to this state", () => addAction(i)), button("✕", "sdel", "remove this state", () => removeState(i)));
    const ol = document.createElement("ol");
    ol.className = "actions";
    (Array.isArray(s?.actions) ? s.actions : []).forEach((a: any, j: number) => {
      const ai = document.createElement("li");
      ai.className = "action";
      ai.dataset.index = String(j);
      const act = document.createElement("select");
      act.className = "aaction";
      for (const k of ACTIONS) act.add(new Option(k, k));
      act.value = String(a?.action ?? "");
      act.addEventListener("change", () => setAction(i, j, act.value, a?.layer));
      const lay = document.createElement("select");
      lay.className = "alayer";
      for (const n of a?.action === "start_animation" ? animated : layerNames) lay.add(new Option(n, n));
      if (a?.layer != null && ![...lay.options].some((o) => o.value === a.layer)) lay.add(new Option(`${a.layer} (not usable)`, String(a.layer)));
      lay.value = String(a?.layer ?? "");
      lay.addEventListener("change", () => setAction(i, j, a?.action, lay.value));
      ai.append(act, lay, button("✕", "adel", "remove this action", () => project.edit((mm) => mm.states[i].actions.splice(j, 1))));
      ol.append(ai);
    });
    li.append(row, ol);
    ul.append(li);
  });
}

function addAction(i: number): void {
  const first = layers()[0]?.name;
  if (first == null) return refuse("add a layer first: actions show, hide or animate a layer");
  project.edit((m) => (m.states[i].actions ??= []).push({ action: "show_layer", layer: first }));
}
function setAction(i: number, j: number, action: string, layer: string): void {
  if (action === "start_animation" && !animatedLayers(project.manifest).includes(layer)) {
    const a = animatedLayers(project.manifest)[0];
    if (a == null) return refuse("start_animation needs a layer whose sprite has two or more frames; there is none");
    layer = a;
  }
  project.edit((m) => (m.states[i].actions[j] = { ...m.states[i].actions[j], action, layer }));
}

function renameStateUI(i: number, name: string): void {
  const list = states(project.manifest);
  const old = list[i]?.name;
  if (name === old) return;
  const problem = nameProblem(list, name, "state", i);
  if (problem) return refuse(`state not renamed: ${problem}`);
  const r = stateRefs(project.manifest, old);
  project.edit((m) => renameState(m, old, name));
  const follow = r.triggers.length + (r.initial ? 1 : 0);
  status(`renamed state “${old}” to “${name}”${follow ? `; ${r.triggers.length} trigger(s)${r.initial ? " and the initial state" : ""} follow` : ""}`);
}

function removeState(i: number): void {
  const s = states(project.manifest)[i];
  if (!s) return;
  const r = stateRefs(project.manifest, s.name);
  const what = [r.triggers.length ? `the target of ${r.triggers.length} trigger(s)` : "", r.initial ? "the initial state" : ""].filter(Boolean).join(" and ");
  if (what && !confirm(`State “${s.name}” is ${what}.\nRemove it${r.triggers.length ? " and those triggers" : ""}${r.initial ? " (no initial state then)" : ""}?`)) {
    status(`kept state “${s.name}”: it is ${what}`, true);
    return;
  }
  project.edit((m) => deleteState(m, s.name));
  status(`removed state “${s.name}”${r.triggers.length ? ` and ${r.triggers.length} trigger(s)` : ""}`);
}

// ---- sprite timeline ----------------------------------------------------------------------------
// The selected sticker's frames as thumbnails (reorder by dragging or with the arrows, delete),
// frame-sequence import (several PNG/JPEG files: the frames in name order), and a scrubber and
// play/pause that show a frame in the preview: the renderer picks the sprite frame from the
// frame's timestamp (ks__ar_sprite_frame), so a still photo rendered at the frame's time shows it.
let scrub: { layer: number; frame: number } | null = null;
let playing: { layer: number; t0: number } | null = null;
const thumbUrls = new WeakMap<Uint8Array, string>();
function thumbUrl(d: Uint8Array, name: string): string {
  let u = thumbUrls.get(d);
  if (!u) {
    const type = /\.png$/i.test(name) ? "image/png" : "image/jpeg";
    u = URL.createObjectURL(new Blob([d as Uint8Array<ArrayBuffer>], { type }));
    thumbUrls.set(d, u);
  }
  return u;
}

// The time (us after the animation starts) the preview renders at, or null for the effect's start.
function previewTimeUs(): number | null {
  if (playing) return (performance.now() - playing.t0) * 1000;
  const l = scrub ? layers()[scrub.layer] : null;
  const n = l?.sprite?.frames?.length ?? 0;
  if (!scrub || !n) return null;
  return frameTimeUs(l.sprite, Math.min(scrub.frame, n - 1));
}
function currentFrame(): number {
  const li = playing?.layer ?? scrub?.layer ?? selected;
  const l = layers()[li];
  const t = previewTimeUs();
  return l?.sprite && t !== null ? spriteFrameAt(l.sprite, t) : 0;
}
function stopPlay(): void {
  playing = null;
  const b = document.querySelector<HTMLButtonElement>("#play-btn");
  if (b) b.textContent = "▶ play";
}
function clearScrub(): void {
  scrub = null;
  stopPlay();
}
function showFrame(k: number): void {
  for (const t of document.querySelectorAll<HTMLElement>("#frames .thumb")) t.classList.toggle("current", t.dataset.index === String(k));
  const s = document.querySelector<HTMLInputElement>("#scrub");
  if (s) s.value = String(k);
  const lab = document.querySelector("#frame-label");
  const n = layers()[selected]?.sprite?.frames?.length ?? 0;
  if (lab) lab.textContent = `frame ${k + 1} / ${n}`;
}
function scrubTo(k: number): void {
  stopPlay();
  scrub = { layer: selected, frame: k };
  renderStill();
  showFrame(k);
}
function togglePlay(): void {
  if (playing) {
    const k = currentFrame();
    stopPlay();
    scrub = { layer: selected, frame: k }; // hold the frame it paused on
    renderStill();
    showFrame(k);
    return;
  }
  const l = layers()[selected];
  if (!frameSource || live) return status("play works on a photo (a camera or video already animates)", true);
  if ((l?.sprite?.frames?.length ?? 0) < 2) return status("play needs two or more frames", true);
  playing = { layer: selected, t0: performance.now() };
  $<HTMLButtonElement>("#play-btn").textContent = "❚❚ pause";
  const tick = () => {
    if (!playing) return;
    if (live || selected !== playing.layer) return stopPlay();
    renderStill();
    showFrame(currentFrame());
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}

function timeline(l: any, li: number): HTMLElement {
  const box = document.createElement("div");
  box.id = "timeline";
  const frames: string[] = Array.isArray(l.sprite?.frames) ? l.sprite.frames : [];
  const n = frames.length;
  const head = document.createElement("div");
  head.className = "row";
  const imp = document.createElement("label");
  imp.className = "btn";
  imp.textContent = "Import frames…";
  const fi = document.createElement("input");
  fi.type = "file";
  fi.id = "frames-input";
  fi.multiple = true;
  fi.accept = "image/png,image/jpeg,.png,.jpg,.jpeg";
  fi.hidden = true;
  fi.addEventListener("change", async () => {
    if (fi.files?.length) await importFrames([...fi.files], li);
    fi.value = "";
  });
  imp.append(fi);
  const play = button(playing ? "❚❚ pause" : "▶ play", "", "play the animation in the preview (photo)", () => togglePlay());
  play.id = "play-btn";
  play.disabled = n < 2;
  const lab = document.createElement("span");
  lab.id = "frame-label";
  const fps = typeof l.sprite?.fps === "number" ? l.sprite.fps : 30;
  const dur = document.createElement("span");
  dur.className = "hint";
  dur.textContent = `${(n / fps).toFixed(2)} s at ${fps} fps, ${l.sprite?.loop === false ? "holds the last frame" : "loops"}`;
  head.append(imp, play, lab, dur);
  const strip = document.createElement("div");
  strip.id = "frames";
  frames.forEach((f, k) => {
    const t = document.createElement("div");
    t.className = "thumb";
    t.dataset.index = String(k);
    t.draggable = true;
    t.title = f;
    const d = project.files.get(f);
    const img = document.createElement("img");
    img.alt = f;
    if (d) img.src = thumbUrl(d, f);
    const cap = document.createElement("div");
    cap.textContent = `${k + 1}${d ? "" : " (missing)"}`;
    const bt = document.createElement("div");
    bt.append(
      button("◀", "fleft", "move earlier", () => k > 0 && moveFrame(li, k, k - 1)),
      button("▶", "fright", "move later", () => k < n - 1 && moveFrame(li, k, k + 1)),
      button("✕", "fdel", "delete this frame", () => deleteFrame(li, k)),
    );
    t.append(img, cap, bt);
    t.addEventListener("click", (e) => {
      if (!(e.target as HTMLElement).closest("button")) scrubTo(k);
    });
    t.addEventListener("dragstart", (e) => e.dataTransfer?.setData("text/x-kestrel-frame", String(k)));
    t.addEventListener("dragover", (e) => e.preventDefault());
    t.addEventListener("drop", (e) => {
      const from = e.dataTransfer?.getData("text/x-kestrel-frame");
      if (from === undefined || from === "") return; // files: the timeline's drop below
      e.preventDefault();
      e.stopPropagation();
      if (Number(from) !== k) moveFrame(li, Number(from), k);
    });
    strip.append(t);
  });
  const sc = document.createElement("input");
  sc.type = "range";
  sc.id = "scrub";
  sc.min = "0";
  sc.max = String(Math.max(0, n - 1));
  sc.step = "1";
  sc.disabled = n < 2;
  sc.title = "show this frame in the preview";
  sc.addEventListener("input", () => scrubTo(Number(sc.value)));
  const hint = document.createElement("p");
  hint.className = "hint";
  hint.textContent = "Drop or import several PNG/JPEG files to make them the frames (in name order).";
  box.append(head, strip, sc, hint);
  // files dropped on the timeline become the frames (not plain assets, as elsewhere on the page)
  box.addEventListener("dragover", (e) => {
    e.preventDefault();
    box.classList.add("dragover");
  });
  box.addEventListener("dragleave", () => box.classList.remove("dragover"));
  box.addEventListener("drop", async (e) => {
    box.classList.remove("dragover");
    const fl = e.dataTransfer?.files;
    if (!fl || !fl.length) return;
    e.preventDefault();
    e.stopPropagation();
    await importFrames([...fl], li);
  });
  queueMicrotask(() => showFrame(scrub?.layer === li || playing?.layer === li ? currentFrame() : 0));
  return box;
}

async function importFrames(files: File[], li: number): Promise<void> {
  const imgs = files.filter((f) => /\.(png|jpe?g)$/i.test(f.name) || /^image\/(png|jpeg)$/.test(f.type));
  if (!imgs.length) return refuse("frames: no PNG or JPEG file among those");
  if (imgs.length > 256) return refuse(`frames: ${imgs.length} files, a sprite has at most 256 frames`);
  imgs.sort((a, b) => naturalCompare(a.name, b.name));
  const read = await Promise.all(imgs.map(async (f) => [f.name, new Uint8Array(await f.arrayBuffer())] as const));
  const l = layers()[li];
  if (!l) return;
  const dir = String(l.name ?? "frames");
  clearScrub();
  project.edit((m, fs) => {
    const names: string[] = [];
    for (const [n, d] of read) {
      const name = frameAssetName(dir, n, fs, d);
      fs.set(name, d);
      names.push(name);
    }
    m.layers[li].sprite = { ...(m.layers[li].sprite ?? {}), frames: names };
  });
  status(`${read.length} frame(s) imported into “${dir}”, in name order`);
}

function moveFrame(li: number, from: number, to: number): void {
  project.edit((m) => {
    const f = m.layers[li].sprite.frames;
    const [x] = f.splice(from, 1);
    f.splice(to, 0, x);
  });
  if (scrub?.layer === li && scrub.frame === from) scrub.frame = to;
}

// True when some string of the manifest names `file`.
function referenced(v: any, file: string): boolean {
  if (v === file) return true;
  if (v && typeof v === "object") return Object.values(v).some((x) => referenced(x, file));
  return false;
}

function deleteFrame(li: number, k: number): void {
  const l = layers()[li];
  const frames: string[] = l?.sprite?.frames ?? [];
  if (frames.length <= 1) return refuse("a sprite needs at least one frame: import or pick another before deleting this one");
  // start_animation needs two or more frames: down to one, the actions that animate it go too
  const anims = states(project.manifest).flatMap((s) => (s.actions ?? []).filter((a: any) => a.action === "start_animation" && a.layer === l.name).map(() => s.name));
  if (frames.length === 2 && anims.length && !confirm(`With one frame left “${l.name}” is no longer animated, and ${anims.length} start_animation action(s) (state ${[...new Set(anims)].join(", ")}) need an animation.\nDelete the frame and those actions?`)) {
    status(`kept the frame: “${l.name}” is animated by state ${[...new Set(anims)].join(", ")}`, true);
    return;
  }
  project.edit((m, fs) => {
    const [gone] = m.layers[li].sprite.frames.splice(k, 1);
    if (frames.length === 2)
      for (const s of states(m)) s.actions = (s.actions ?? []).filter((a: any) => !(a.action === "start_animation" && a.layer === l.name));
    if (!referenced(m, gone)) fs.delete(gone); // the file goes with its last use (undo brings it back)
  });
  if (scrub?.layer === li) scrub.frame = Math.min(scrub.frame > k ? scrub.frame - 1 : scrub.frame, frames.length - 2);
}

function renderAll(): void {
  if (selected >= layers().length) selected = layers().length - 1;
  renderEffectFields();
  renderLayerList();
  renderInspector();
  renderAssets();
  renderParams();
  renderStates();
  renderTriggers();
  drawOverlay();
  $<HTMLButtonElement>("#undo-btn").disabled = !project.canUndo();
  $<HTMLButtonElement>("#redo-btn").disabled = !project.canRedo();
}

// Every change: validate + reload the preview, redraw the panels, autosave.
// The panels redraw at once; validation, preview and autosave run once for a burst of edits.
let refreshQueued = false;
function changed(): void {
  renderAll();
  if (refreshQueued) return;
  refreshQueued = true;
  pending = pending.then(async () => {
    await new Promise((r) => setTimeout(r, 0));
    refreshQueued = false;
    refresh();
    if (frameSource && !live) {
      await ensureModels("image");
      renderStill();
    } else if (live) live.refresh(); // a paused video shows the edit on its frame
    await autosave(project.snapshot());
  }).catch((e) => status(String(e), true));
}

function showStudio(): void {
  $("#start").hidden = true;
  $("#studio").hidden = false;
}

let opens = 0; // projects opened so far (tests wait for an open to finish with it)
function openSnapshot(s: Snapshot, asNewHistory: boolean): void {
  opens++;
  clearScrub();
  if (asNewHistory) {
    project = new Project(s);
    project.onChange = changed;
    changed();
  } else project.replace(s);
  selected = layers().length ? 0 : -1;
  showStudio();
}

// Opening a package: the C validator first; a refused package leaves the open project as it is.
async function openBytes(bytes: Uint8Array, label: string): Promise<boolean> {
  const v = ks.validate(bytes);
  // A refused package changes nothing: not the project, not the preview's effect (the C
  // renderer keeps its effect when a load fails), not the project's validation state.
  if (!v.ok) {
    showMessages(v);
    status(`${label}: not opened: ${v.messages[0]?.message ?? v.status}`, true);
    return false;
  }
  let s: Snapshot;
  try {
    // The renderer parses what the validator only checks the shape of (glb meshes, shaders):
    // a package it cannot create is refused too, and the open project's effect comes back.
    ks.loadEffect(bytes);
    s = unpackKfx(bytes);
  } catch (e) {
    const msg = (e as Error).message;
    showMessages({ ok: false, messages: [{ path: "", message: msg }] });
    status(`${label}: not opened: ${msg}`, true);
    return false;
  }
  openSnapshot(s, false);
  status(`opened ${label}`);
  return true;
}

function exportKfx(): Uint8Array | null {
  const bytes = packKfx(project);
  const v = ks.validate(bytes);
  validation = v;
  showMessages();
  if (!v.ok) {
    status("export refused: the C validator rejects this package (see Validation)", true);
    return null;
  }
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([bytes as Uint8Array<ArrayBuffer>], { type: "application/zip" }));
  const base = String(project.manifest.id ?? "effect").split(".").pop() || "effect";
  a.download = `${base}.kfx`;
  document.body.append(a);
  a.click();
  a.remove();
  status(`exported ${a.download}`);
  return bytes;
}

// ---- wiring -----------------------------------------------------------------------------------
function wire(): void {
  for (const k of LAYER_KINDS) $<HTMLSelectElement>("#add-kind").add(new Option(k, k));
  $("#add-layer").addEventListener("click", () => {
    const kind = $<HTMLSelectElement>("#add-kind").value;
    project.edit((m, files) => {
      if (!Array.isArray(m.layers)) m.layers = [];
      m.layers.push(newLayer(kind, uniqueName(kind), files));
    });
    select(layers().length - 1);
  });
  $("#undo-btn").addEventListener("click", () => project.undo());
  $("#redo-btn").addEventListener("click", () => project.redo());
  document.addEventListener("keydown", (e) => {
    if (!(e.ctrlKey || e.metaKey) || (e.target as HTMLElement).tagName === "INPUT") return;
    if (e.key.toLowerCase() === "z") {
      e.preventDefault();
      if (e.shiftKey) project.redo();
      else project.undo();
    } else if (e.key.toLowerCase() === "y") {
      e.preventDefault();
      project.redo();
    }
  });
  $("#export-btn").addEventListener("click", () => exportKfx());
  $("#home-btn").addEventListener("click", () => {
    $("#start").hidden = false;
    $("#studio").hidden = true;
  });
  $("#new-empty").addEventListener("click", () => openSnapshot(emptyProject(), false));
  $<HTMLInputElement>("#open-input").addEventListener("change", async (e) => {
    const f = (e.target as HTMLInputElement).files?.[0];
    if (f) await openBytes(new Uint8Array(await f.arrayBuffer()), f.name);
    (e.target as HTMLInputElement).value = "";
  });
  const addFiles = async (files: FileList | File[]) => {
    const read = await Promise.all([...files].map(async (f) => [f.name, new Uint8Array(await f.arrayBuffer())] as const));
    project.edit((_m, fs) => read.forEach(([n, d]) => fs.set(n, d)));
  };
  $<HTMLInputElement>("#asset-input").addEventListener("change", async (e) => {
    const fl = (e.target as HTMLInputElement).files;
    if (fl) await addFiles(fl);
    (e.target as HTMLInputElement).value = "";
  });
  const openVideo = (f: File) => startVideoFile(f, f.name).catch((e) => status(String(e instanceof Error ? e.message : e), true));
  document.addEventListener("dragover", (e) => e.preventDefault());
  document.addEventListener("drop", async (e) => {
    e.preventDefault();
    const fl = e.dataTransfer?.files;
    if (!fl || !fl.length) return;
    if (fl.length === 1 && /\.kfx$/i.test(fl[0].name)) await openBytes(new Uint8Array(await fl[0].arrayBuffer()), fl[0].name);
    else if (fl.length === 1 && fl[0].type.startsWith("video/")) await openVideo(fl[0]);
    else await addFiles(fl);
  });
  for (const el of document.querySelectorAll<HTMLInputElement>("[data-mfield]")) {
    el.addEventListener("change", () =>
      project.edit((m) => (m[el.dataset.mfield!] = el.type === "number" ? Number(el.value) : el.value)),
    );
  }
  for (const t of PARAM_TYPES) $<HTMLSelectElement>("#add-param-type").add(new Option(t, t));
  $("#add-param").addEventListener("click", () => {
    const type = $<HTMLSelectElement>("#add-param-type").value as ParamType;
    project.edit((m) => {
      const list = params(m);
      list.push(newParam(type, uniqueIn(list, `${type}_param`)));
      m.parameters = list;
    });
  });
  $("#add-state").addEventListener("click", () =>
    project.edit((m) => {
      const list = states(m);
      list.push({ name: uniqueIn(list, "state"), actions: [] });
      m.states = list;
    }),
  );
  $<HTMLSelectElement>("#initial-state").addEventListener("change", (e) => {
    const v = (e.target as HTMLSelectElement).value;
    project.edit((m) => (v ? (m.initial_state = v) : delete m.initial_state));
  });
  $("#add-trigger").addEventListener("click", () =>
    project.edit((m) => {
      if (!Array.isArray(m.states) || !m.states.length) {
        m.states = [{ name: "idle", actions: [] }, { name: "active", actions: [] }];
        m.initial_state = "idle";
      }
      (m.triggers ??= []).push({ on: "mouth_open", threshold: 0.35, state: m.states[m.states.length - 1].name });
    }),
  );
  $("#photo-btn").addEventListener("click", async () => {
    await loadPhoto(await (await fetch(`${BASE}gen/images/astronaut.png`)).blob());
    changed();
  });
  $<HTMLInputElement>("#photo-input").addEventListener("change", async (e) => {
    const f = (e.target as HTMLInputElement).files?.[0];
    if (!f) return;
    try {
      await loadPhoto(f);
      changed();
    } catch (err) {
      status(`${f.name}: not an image this browser decodes`, true);
    }
  });
  $("#webcam-btn").addEventListener("click", () => startWebcam().catch((e) => status(`webcam: ${e}`, true)));
  $<HTMLInputElement>("#video-input").addEventListener("change", async (e) => {
    const f = (e.target as HTMLInputElement).files?.[0];
    if (f) await openVideo(f);
    (e.target as HTMLInputElement).value = "";
  });
  $("#show-landmarks").addEventListener("change", () => drawOverlay());
  $<HTMLSelectElement>("#segmenter-model").addEventListener("change", (e) => {
    const m = (e.target as HTMLSelectElement).value as SegmenterModel;
    pending = pending.then(() => setSegmenterModel(m)).catch((err) => status(String(err), true));
  });
  $("#video-play").addEventListener("click", videoPlayPause);
  $("#video-back").addEventListener("click", () => videoStep(-1));
  $("#video-fwd").addEventListener("click", () => videoStep(1));
  const bar = $<HTMLInputElement>("#video-seek");
  bar.addEventListener("pointerdown", () => (seekHeld = true));
  bar.addEventListener("pointerup", () => (seekHeld = false));
  bar.addEventListener("input", () => videoSeek(Number(bar.value)));
  bar.addEventListener("change", () => {
    seekHeld = false;
    videoSeek(Number(bar.value));
  });
  // Anchor by clicking: the nearest landmark of the first face becomes the sticker's anchor.
  wireHandles();
  showLimits();
  for (const el of document.querySelectorAll<HTMLInputElement>("[data-limit]")) {
    el.addEventListener("change", () => {
      const v = Number(el.value);
      if (Number.isFinite(v) && v > 0) {
        limits = { ...limits, [el.dataset.limit!]: v };
        saveLimits();
      }
      showLimits();
      showBudget();
    });
  }
  $("#limit-defaults").addEventListener("click", () => {
    limits = { ...BUDGET_DEFAULTS };
    saveLimits();
    showLimits();
    showBudget();
  });
  $("#preview").addEventListener("click", (e) => {
    if (suppressClick) {
      suppressClick = false; // the end of a drag, not a click
      return;
    }
    const l = layers()[selected];
    if (!l || l.kind !== "sticker" || !lastFaces.length) return;
    const cv = e.currentTarget as HTMLCanvasElement;
    const r = cv.getBoundingClientRect();
    const x = ((e.clientX - r.left) * cv.width) / r.width, y = ((e.clientY - r.top) * cv.height) / r.height;
    const lm = lastFaces[0];
    let best = 0, bd = Infinity;
    for (let k = 0; k < lm.length / 2; k++) {
      const d = (lm[2 * k] - x) ** 2 + (lm[2 * k + 1] - y) ** 2;
      if (d < bd) [best, bd] = [k, d];
    }
    project.edit((m) => {
      m.layers[selected].anchor = { ...(m.layers[selected].anchor ?? {}), landmarks: [best] };
    });
  });
}

async function templates(): Promise<void> {
  const box = $("#templates");
  for (const name of SAMPLES) {
    const d = document.createElement("div");
    d.className = "template";
    d.dataset.name = name;
    d.innerHTML = `<img alt="" src="${BASE}gen/samples/${name}.png" /><span>${name.replace(/_/g, " ")}</span>`;
    d.addEventListener("click", async () => {
      const r = await fetch(`${BASE}gen/samples/${name}.kfx`);
      await openBytes(new Uint8Array(await r.arrayBuffer()), `${name}.kfx`);
    });
    box.append(d);
  }
}

const snaps = new Map<string, Uint8ClampedArray>();
function readCanvasPixels(): Uint8ClampedArray {
  const cv = $<HTMLCanvasElement>("#preview");
  const c = document.createElement("canvas");
  c.width = cv.width;
  c.height = cv.height;
  const g = c.getContext("2d", { willReadFrequently: true })!;
  g.drawImage(cv, 0, 0);
  return g.getImageData(0, 0, c.width, c.height).data;
}

async function main(): Promise<void> {
  wire();
  await templates();
  ks = await Kestrel.create(BASE, $<HTMLCanvasElement>("#preview"));
  await loadPhoto(await (await fetch(`${BASE}gen/images/astronaut.png`)).blob());
  await ensureModels("image");
  const saved = await loadAutosave().catch(() => null);
  if (saved) {
    openSnapshot(saved, true);
    status("restored the autosaved project");
  } else {
    project.onChange = changed;
    $("#start").hidden = false;
  }
  (window as any).__studio = {
    ready: true,
    historyLimit: HISTORY_LIMIT,
    manifest: () => structuredClone(project.manifest),
    files: () => [...project.files.keys()].sort(),
    validation: () => validation,
    undoDepth: () => project.undoDepth(),
    opens: () => opens,
    idle: () => pending,
    // Renders the photo once more and keeps the canvas pixels (read back from the WebGL
    // canvas) under `key`; tests compare snapshots in the page (no pixel arrays cross over).
    snap: async (key: string) => {
      await pending;
      renderStill();
      snaps.set(key, readCanvasPixels());
      return true;
    },
    snapPhoto: (key: string) => {
      snaps.set(key, frameSource!.rgba);
      return true;
    },
    diff: (a: string, b: string) => {
      const x = snaps.get(a)!, y = snaps.get(b)!;
      let n = 0;
      for (let i = 0; i < x.length; i += 4) if (x[i] !== y[i] || x[i + 1] !== y[i + 1] || x[i + 2] !== y[i + 2]) n++;
      return n;
    },
    // Pixels whose RGB differ by more than tol between snapshots a and b, inside the box
    // [x, y, w, h] and outside it, with the pixel counts: {inside, insideTotal, outside, outsideTotal}.
    diffBox: (a: string, b: string, box: number[], tol: number) => {
      const x = snaps.get(a)!, y = snaps.get(b)!, w = frameSource!.w;
      const r = { inside: 0, insideTotal: 0, outside: 0, outsideTotal: 0 };
      for (let i = 0; i < x.length; i += 4) {
        const px = (i / 4) % w, py = Math.floor(i / 4 / w);
        const inBox = px >= box[0] && px < box[0] + box[2] && py >= box[1] && py < box[1] + box[3];
        const m = Math.max(Math.abs(x[i] - y[i]), Math.abs(x[i + 1] - y[i + 1]), Math.abs(x[i + 2] - y[i + 2]));
        const d = m > tol ? 1 : 0;
        if (inBox) (r.inside += d), r.insideTotal++;
        else (r.outside += d), r.outsideTotal++;
      }
      return r;
    },
    // Centroid [x, y] of the pixels whose RGB differ by more than tol between snapshots a and
    // b, with their count: [x, y, n].
    diffCentroid: (a: string, b: string, tol: number) => {
      const x = snaps.get(a)!, y = snaps.get(b)!, w = frameSource!.w;
      let sx = 0, sy = 0, n = 0;
      for (let i = 0; i < x.length; i += 4) {
        const m = Math.max(Math.abs(x[i] - y[i]), Math.abs(x[i + 1] - y[i + 1]), Math.abs(x[i + 2] - y[i + 2]));
        if (m <= tol) continue;
        sx += (i / 4) % w;
        sy += Math.floor(i / 4 / w);
        n++;
      }
      return n ? [sx / n, sy / n, n] : [0, 0, 0];
    },
    // PSNR (dB, RGB) of snapshot `key` against a PNG (base64), decoded without colour management.
    psnrPng: async (key: string, b64: string) => {
      const px = snaps.get(key)!;
      const blob = await (await fetch(`data:image/png;base64,${b64}`)).blob();
      const bmp = await createImageBitmap(blob, { colorSpaceConversion: "none", premultiplyAlpha: "none" });
      const c = document.createElement("canvas");
      c.width = bmp.width;
      c.height = bmp.height;
      const g = c.getContext("2d", { willReadFrequently: true })!;
      g.drawImage(bmp, 0, 0);
      const ref = g.getImageData(0, 0, c.width, c.height).data;
      if (ref.length !== px.length) return -1;
      let se = 0;
      for (let i = 0; i < ref.length; i += 4) for (let k = 0; k < 3; k++) se += (ref[i + k] - px[i + k]) ** 2;
      const mse = se / ((ref.length / 4) * 3);
      return mse === 0 ? 99 : 10 * Math.log10((255 * 255) / mse);
    },
    exportBytes: () => {
      const b = exportKfx();
      return b ? Array.from(b) : null;
    },
    openBytes: (a: number[], label: string) => openBytes(new Uint8Array(a), label),
    timings: () => ks.timings(),
    segmenterError: () => segmenterError,
    faces: () => lastFaces,
    landmarkerBench: async (n: number) => {
      // VIDEO-mode landmarker time per frame on the photo (tracking: the detector runs once).
      await ensureLandmarker("video");
      const { rgba, w, h } = frameSource!;
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        ks.frame(rgba, w, h, i * 33333, true);
        times.push(ks.timings().detect_ms);
      }
      landmarkerMode = "";
      await ensureLandmarker("image");
      return times;
    },
    segmenterBench: async (n: number) => {
      // VIDEO-mode segmenter time per frame on the photo (with background_beach loaded).
      await ensureSegmenter("video");
      const { rgba, w, h } = frameSource!;
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        ks.frame(rgba, w, h, i * 33333, false, false, true);
        times.push(ks.timings().segment_ms);
      }
      segmenterMode = "";
      await ensureSegmenter("image");
      return times;
    },
    // Faces of the photo are searched again at the next render (a new landmarker run).
    redetect: () => {
      facesFresh = false;
    },
    liveFrames: () => liveFrames,
    // The selected sticker's box on the preview (canvas pixels), as its handles are drawn.
    handleBox: () => selectedStickerBox(),
    liveSource: () => live?.source ?? "",
    // The video file's controls: time and duration (s), paused, the frame step, seeks so far.
    video: () => {
      const c = videoCtl();
      if (!c) return null;
      const { video, vf } = c;
      return {
        time: video.currentTime, paused: video.paused, seeking: video.seeking, duration: vf.duration,
        frameDur: vf.frameDur, measured: vf.measured, resets: vf.resets, processed: vf.processed, shown: vf.shown,
      };
    },
    segmenterModel: () => segmenterModel,
    // Keeps the preview canvas as it is now (a live source's last frame) under `key`.
    snapShown: (key: string) => {
      snaps.set(key, readCanvasPixels());
      return true;
    },
    limits: () => ({ ...limits }),
    // The timeline: the frame of the selected sprite the preview shows, and whether it plays.
    previewFrame: () => ({ frame: currentFrame(), playing: !!playing, scrubbing: !!scrub }),
  };
}

main().catch((e) => status(`failed to start: ${e}`, true));
