/* The effect editor's WebAssembly API (editor/wasm/glue.c; docs/editor.md). Not a public SDK
 * header: the page calls these through Emscripten's ccall (editor/src/kestrel.ts).
 *
 * Every int function returns a ks_status (0 = OK) unless it says otherwise; the message of the
 * last failure is ksw_last_error(). Returned strings are JSON in static storage, valid until
 * the next call of the same function. The WebGL 2 context must be current for ksw_load_effect,
 * ksw_unload_effect and ksw_render.
 *
 * Thread safety: single-threaded (the page's main thread). */
#ifndef KESTREL_EDITOR_GLUE_H
#define KESTREL_EDITOR_GLUE_H

#include <stddef.h>
#include <stdint.h>

const char *ksw_last_error(void);
uint32_t ksw_version(void);
/* Validates a .kfx in memory: {"ok":bool,"status":..,"messages":[{"path":..,"message":..}],..}.
 * Does not keep data. */
const char *ksw_validate(const uint8_t *data, size_t size_bytes);
/* Opens the previewed effect (data not kept) and creates its renderer; on failure the previous
 * effect stays. */
int ksw_load_effect(const uint8_t *data, size_t size_bytes);
void ksw_unload_effect(void);
/* Face landmarker from the bundles in models_dir (Emscripten's file system). */
int ksw_landmarker_create(const char *models_dir, int video, int max_faces, int full_range);
/* Faces of a tight RGBA8 frame, kept for ksw_render: returns their count, or -status. */
int ksw_detect(const uint8_t *rgba, int width_px, int height_px, double timestamp_us);
void ksw_clear_faces(void);
/* Selfie segmenter (landscape == 0: the general model, selfie_segmenter.ksb; else the landscape
 * one, selfie_segmenter_landscape.ksb; in models_dir), as ks-ar makes it: u8 mask at the image's
 * size. video != 0: VIDEO mode (mask smoothing; timestamps must increase). */
int ksw_segmenter_create(const char *models_dir, int video, int landscape);
/* 1 when the loaded effect requires "segmentation" (background layers), else 0. */
int ksw_effect_needs_mask(void);
/* Person mask of a tight RGBA8 frame, kept for ksw_render (used there for a frame of the same
 * size while the effect needs a mask). On failure no mask is kept. */
int ksw_segment(const uint8_t *rgba, int width_px, int height_px, double timestamp_us);
void ksw_clear_mask(void);
/* Renders into the canvas with the kept faces and mask; readback (width*height*4 bytes) may be
 * NULL. */
int ksw_render(const uint8_t *rgba, int width_px, int height_px, double timestamp_us,
               uint8_t *readback);
int ksw_enter_state(const char *state);
void ksw_reset(void);
const char *ksw_timings_json(void);
const char *ksw_faces_json(void);

#endif
