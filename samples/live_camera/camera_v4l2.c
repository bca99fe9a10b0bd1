/* V4L2 capture (see camera_v4l2.h). */
#include "camera_v4l2.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/videodev2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#define NUM_BUFFERS 4

struct camera {
    const char *device;
    int fd, width, height, streaming;
    size_t stride_bytes;
    void *buffers[NUM_BUFFERS];
    size_t buffer_sizes[NUM_BUFFERS];
    uint32_t num_buffers;
    uint8_t *rgba;
};

static int xioctl(int fd, unsigned long request, void *arg) {
    int rc;
    do {
        rc = ioctl(fd, request, arg);
    } while (rc < 0 && errno == EINTR);
    return rc;
}

static int fail(const camera *cam, const char *what) {
    fprintf(stderr, "%s: %s: %s\n", cam->device, what, strerror(errno));
    return -1;
}

int camera_open(const char *device, int width, int height, camera **out) {
    camera *cam = calloc(1, sizeof(*cam));
    if (!cam) return -1;
    cam->device = device;
    cam->fd = open(device, O_RDWR | O_NONBLOCK);
    if (cam->fd < 0) {
        fail(cam, "cannot open");
        goto error;
    }
    struct v4l2_capability cap = {0};
    if (xioctl(cam->fd, VIDIOC_QUERYCAP, &cap) < 0 ||
        !(cap.capabilities & V4L2_CAP_VIDEO_CAPTURE) || !(cap.capabilities & V4L2_CAP_STREAMING)) {
        fprintf(stderr, "%s: not a streaming video capture device\n", device);
        goto error;
    }
    struct v4l2_format fmt = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE};
    fmt.fmt.pix.width = (uint32_t)width;
    fmt.fmt.pix.height = (uint32_t)height;
    fmt.fmt.pix.pixelformat = V4L2_PIX_FMT_YUYV; /* what nearly every UVC webcam offers */
    fmt.fmt.pix.field = V4L2_FIELD_NONE;
    if (xioctl(cam->fd, VIDIOC_S_FMT, &fmt) < 0) {
        fail(cam, "VIDIOC_S_FMT");
        goto error;
    }
    if (fmt.fmt.pix.pixelformat != V4L2_PIX_FMT_YUYV || fmt.fmt.pix.width < 2 ||
        fmt.fmt.pix.height < 1 || fmt.fmt.pix.width > 8192 || fmt.fmt.pix.height > 8192 ||
        fmt.fmt.pix.bytesperline < fmt.fmt.pix.width * 2) {
        fprintf(stderr, "%s: the camera does not offer YUYV frames\n", device);
        goto error;
    }
    cam->width = (int)fmt.fmt.pix.width;
    cam->height = (int)fmt.fmt.pix.height;
    cam->stride_bytes = fmt.fmt.pix.bytesperline;
    struct v4l2_requestbuffers req = {
        .count = NUM_BUFFERS, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE, .memory = V4L2_MEMORY_MMAP};
    if (xioctl(cam->fd, VIDIOC_REQBUFS, &req) < 0 || req.count < 2) {
        fail(cam, "VIDIOC_REQBUFS");
        goto error;
    }
    cam->num_buffers = req.count < NUM_BUFFERS ? req.count : NUM_BUFFERS;
    for (uint32_t i = 0; i < cam->num_buffers; i++) {
        struct v4l2_buffer buf = {
            .index = i, .type = V4L2_BUF_TYPE_VIDEO_CAPTURE, .memory = V4L2_MEMORY_MMAP};
        if (xioctl(cam->fd, VIDIOC_QUERYBUF, &buf) < 0) {
            fail(cam, "VIDIOC_QUERYBUF");
            goto error;
        }
        cam->buffers[i] =
            mmap(NULL, buf.length, PROT_READ | PROT_WRITE, MAP_SHARED, cam->fd, buf.m.offset);
        if (cam->buffers[i] == MAP_FAILED) {
            cam->buffers[i] = NULL;
            fail(cam, "mmap");
            goto error;
        }
        cam->buffer_sizes[i] = buf.length;
        if (xioctl(cam->fd, VIDIOC_QBUF, &buf) < 0) {
            fail(cam, "VIDIOC_QBUF");
            goto error;
        }
    }
    enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (xioctl(cam->fd, VIDIOC_STREAMON, &type) < 0) {
        fail(cam, "VIDIOC_STREAMON");
        goto error;
    }
    cam->streaming = 1;
    cam->rgba = malloc((size_t)cam->width * (size_t)cam->height * 4);
    if (!cam->rgba) goto error;
    *out = cam;
    return 0;
error:
    camera_close(cam);
    return -1;
}

static uint8_t clamp_u8(int v) {
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* YUYV (Y0 U Y1 V per pixel pair, BT.601 limited range) to RGBA. */
static void yuyv_to_rgba(const uint8_t *src, size_t src_stride, int w, int h, uint8_t *dst) {
    for (int y = 0; y < h; y++) {
        const uint8_t *s = src + (size_t)y * src_stride;
        uint8_t *d = dst + (size_t)y * (size_t)w * 4;
        for (int x = 0; x + 1 < w; x += 2, s += 4, d += 8) {
            int u = s[1] - 128, v = s[3] - 128;
            for (int k = 0; k < 2; k++) {
                int c = 298 * (s[2 * k] - 16);
                d[4 * k + 0] = clamp_u8((c + 409 * v + 128) >> 8);
                d[4 * k + 1] = clamp_u8((c - 100 * u - 208 * v + 128) >> 8);
                d[4 * k + 2] = clamp_u8((c + 516 * u + 128) >> 8);
                d[4 * k + 3] = 255;
            }
        }
    }
}

int camera_read(camera *cam, const uint8_t **rgba, int64_t *capture_us) {
    struct pollfd pfd = {.fd = cam->fd, .events = POLLIN};
    int rc = poll(&pfd, 1, 1000);
    if (rc == 0 || (rc < 0 && errno == EINTR)) return 0;
    if (rc < 0) return fail(cam, "poll");
    struct v4l2_buffer buf = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE, .memory = V4L2_MEMORY_MMAP};
    if (xioctl(cam->fd, VIDIOC_DQBUF, &buf) < 0) return errno == EAGAIN ? 0 : fail(cam, "DQBUF");
    if (buf.index < cam->num_buffers && buf.bytesused >= cam->stride_bytes * (size_t)cam->height)
        yuyv_to_rgba(cam->buffers[buf.index], cam->stride_bytes, cam->width, cam->height,
                     cam->rgba);
    *capture_us = (int64_t)buf.timestamp.tv_sec * 1000000 + buf.timestamp.tv_usec;
    if (xioctl(cam->fd, VIDIOC_QBUF, &buf) < 0) return fail(cam, "VIDIOC_QBUF");
    *rgba = cam->rgba;
    return 1;
}

int camera_width(const camera *cam) {
    return cam->width;
}

int camera_height(const camera *cam) {
    return cam->height;
}

void camera_close(camera *cam) {
    if (!cam) return;
    enum v4l2_buf_type type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
    if (cam->streaming) xioctl(cam->fd, VIDIOC_STREAMOFF, &type);
    for (uint32_t i = 0; i < cam->num_buffers; i++)
        if (cam->buffers[i]) munmap(cam->buffers[i], cam->buffer_sizes[i]);
    if (cam->fd >= 0) close(cam->fd);
    free(cam->rgba);
    free(cam);
}
