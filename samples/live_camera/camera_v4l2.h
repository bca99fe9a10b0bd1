/* Minimal V4L2 webcam capture (Linux): YUYV frames converted to RGBA8, memory-mapped buffers.
 *
 *     camera *cam = NULL;
 *     if (camera_open("/dev/video0", 640, 480, &cam) == 0) {
 *         const uint8_t *rgba; int64_t t_us;
 *         while (camera_read(cam, &rgba, &t_us) == 1) { ... }
 *         camera_close(cam);
 *     }
 *
 * The driver may pick another size than asked: see camera_width/camera_height. Errors are
 * printed to stderr; functions return 0 (camera_read: 1) on success. */
#ifndef SAMPLE_CAMERA_V4L2_H
#define SAMPLE_CAMERA_V4L2_H

#include <stdint.h>

typedef struct camera camera;

int camera_open(const char *device, int width, int height, camera **out);
/* Waits (up to 1 s) for the next frame: 1 with *rgba (owned by the camera, valid until the next
 * call) and its capture time (CLOCK_MONOTONIC microseconds), 0 on a timeout, -1 on an error. */
int camera_read(camera *cam, const uint8_t **rgba, int64_t *capture_us);
int camera_width(const camera *cam);
int camera_height(const camera *cam);
void camera_close(camera *cam);

#endif /* SAMPLE_CAMERA_V4L2_H */
