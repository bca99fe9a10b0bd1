/* Video files in and out as RGBA8 frames, with FFmpeg's libraries (libavformat, libavcodec,
 * libswscale). Shared by samples/video_effects and samples/live_camera.
 *
 *     video_reader *in = NULL;
 *     if (video_reader_open("clip.mp4", &in)) return 1;       // prints why on failure
 *     const uint8_t *rgba; int64_t pts_us;
 *     while (video_reader_read(in, &rgba, &pts_us) == 1) { ...width * height * 4 bytes... }
 *     video_reader_close(in);
 *
 * The reader also opens still images (PNG, JPEG: one frame). Errors are printed to stderr with
 * the file name; functions return 0 on success, non-zero on failure. */
#ifndef SAMPLE_VIDEO_IO_H
#define SAMPLE_VIDEO_IO_H

#include <stdint.h>

typedef struct video_reader video_reader;

int video_reader_open(const char *path, video_reader **out);
/* Decodes the next frame: returns 1 with *rgba (tight rows, owned by the reader, valid until
 * the next call) and its presentation time in microseconds, 0 at the end, -1 on an error. */
int video_reader_read(video_reader *r, const uint8_t **rgba, int64_t *pts_us);
/* Seeks back to the first frame (to play a file in a loop). */
int video_reader_rewind(video_reader *r);
int video_reader_width(const video_reader *r);
int video_reader_height(const video_reader *r);
/* Frame rate as a fraction (25/1 when the file does not say). */
void video_reader_frame_rate(const video_reader *r, int *num, int *den);
void video_reader_close(video_reader *r);

typedef struct video_writer video_writer;

/* Creates `path` (container from the extension, e.g. .mp4/.mkv/.avi) with H.264 (libx264) when
 * this FFmpeg has it, else MPEG-4 part 2. Frames are width x height RGBA8 at fps_num/fps_den. */
int video_writer_open(const char *path, int width, int height, int fps_num, int fps_den,
                      video_writer **out);
/* Encodes one frame (tight RGBA rows); frames are timed 0, 1, 2... at the frame rate. */
int video_writer_write(video_writer *w, const uint8_t *rgba);
/* "libx264", "mpeg4", ... */
const char *video_writer_codec_name(const video_writer *w);
/* Flushes the encoder and finishes the file; frees the writer even on failure. */
int video_writer_close(video_writer *w);

#endif /* SAMPLE_VIDEO_IO_H */
