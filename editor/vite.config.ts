// Vite builds editor/ into editor/dist/ (scripts/editor --build-only). The WebAssembly runtime,
// the face landmarker bundle, the sample effects and the sample photo are copied by
// scripts/editor into public/gen/ and land in dist/gen/ as plain static files.
import { defineConfig } from "vite";

export default defineConfig({
  base: "./",
  build: { outDir: "dist", emptyOutDir: true, target: "es2022", chunkSizeWarningLimit: 2048 },
});
