/* FFmpeg video reader/writer (see video_io.h). */
#include "video_io.h"

#include <stdio.h>
#include <stdlib.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>

static void print_av_error(const char *path, const char *what, int err) {
    char msg[AV_ERROR_MAX_STRING_SIZE] = {0};
    av_strerror(err, msg, sizeof(msg));
    fprintf(stderr, "%s: %s: %s\n", path, what, msg);
}

/* ---- reader ---------------------------------------------------------------------------------- */

struct video_reader {
    const char *path;
    AVFormatContext *format;
    AVCodecContext *decoder;
    AVPacket *packet;
    AVFrame *frame;
    struct SwsContext *sws;
    int stream, width, height;
    int flushing; /* the demuxer is at its end: drain the decoder */
    int64_t num_frames;
    uint8_t *rgba;
};

int video_reader_open(const char *path, video_reader **out) {
    av_log_set_level(AV_LOG_ERROR); /* no per-file banners from the codecs */
    video_reader *r = calloc(1, sizeof(*r));
    if (!r) return -1;
    r->path = path;
    const AVCodec *codec = NULL;
    int err = avformat_open_input(&r->format, path, NULL, NULL);
    if (err < 0) {
        print_av_error(path, "cannot open", err);
        goto error;
    }
    if ((err = avformat_find_stream_info(r->format, NULL)) < 0 ||
        (err = av_find_best_stream(r->format, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0)) < 0) {
        print_av_error(path, "no video stream", err);
        goto error;
    }
    r->stream = err;
    r->decoder = avcodec_alloc_context3(codec);
    r->packet = av_packet_alloc();
    r->frame = av_frame_alloc();
    if (!r->decoder || !r->packet || !r->frame) goto error;
    avcodec_parameters_to_context(r->decoder, r->format->streams[r->stream]->codecpar);
    if ((err = avcodec_open2(r->decoder, codec, NULL)) < 0) {
        print_av_error(path, "cannot open the decoder", err);
        goto error;
    }
    r->width = r->decoder->width;
    r->height = r->decoder->height;
    if (r->width <= 0 || r->height <= 0 || r->width > 8192 || r->height > 8192) {
        fprintf(stderr, "%s: unsupported frame size %dx%d\n", path, r->width, r->height);
        goto error;
    }
    r->rgba = malloc((size_t)r->width * (size_t)r->height * 4);
    if (!r->rgba) goto error;
    *out = r;
    return 0;
error:
    video_reader_close(r);
    return -1;
}

/* The next decoded frame into r->frame: 1, 0 at the end, -1 on an error. */
static int decode_next(video_reader *r) {
    for (;;) {
        int err = avcodec_receive_frame(r->decoder, r->frame);
        if (err == 0) return 1;
        if (err == AVERROR_EOF) return 0;
        if (err != AVERROR(EAGAIN)) {
            print_av_error(r->path, "decoding", err);
            return -1;
        }
        if (r->flushing) return 0;
        err = av_read_frame(r->format, r->packet);
        if (err == AVERROR_EOF) {
            r->flushing = 1;
            avcodec_send_packet(r->decoder, NULL);
            continue;
        }
        if (err < 0) {
            print_av_error(r->path, "reading", err);
            return -1;
        }
        if (r->packet->stream_index == r->stream) err = avcodec_send_packet(r->decoder, r->packet);
        av_packet_unref(r->packet);
        if (err < 0 && err != AVERROR(EAGAIN)) {
            print_av_error(r->path, "decoding", err);
            return -1;
        }
    }
}

int video_reader_read(video_reader *r, const uint8_t **rgba, int64_t *pts_us) {
    int got = decode_next(r);
    if (got <= 0) return got;
    AVFrame *f = r->frame;
    if (f->width != r->width || f->height != r->height) {
        fprintf(stderr, "%s: frame size changed to %dx%d\n", r->path, f->width, f->height);
        return -1;
    }
    r->sws =
        sws_getCachedContext(r->sws, f->width, f->height, (enum AVPixelFormat)f->format, r->width,
                             r->height, AV_PIX_FMT_RGBA, SWS_BILINEAR, NULL, NULL, NULL);
    if (!r->sws) {
        fprintf(stderr, "%s: cannot convert pixel format %d to RGBA\n", r->path, f->format);
        return -1;
    }
    uint8_t *dst[4] = {r->rgba};
    int dst_stride[4] = {r->width * 4};
    sws_scale(r->sws, (const uint8_t *const *)f->data, f->linesize, 0, f->height, dst, dst_stride);
    int num, den;
    video_reader_frame_rate(r, &num, &den);
    int64_t pts = f->best_effort_timestamp;
    *pts_us = pts == AV_NOPTS_VALUE
                  ? av_rescale(r->num_frames, 1000000LL * den, num)
                  : av_rescale_q(pts, r->format->streams[r->stream]->time_base, AV_TIME_BASE_Q);
    r->num_frames++;
    *rgba = r->rgba;
    av_frame_unref(f);
    return 1;
}

int video_reader_rewind(video_reader *r) {
    int err = av_seek_frame(r->format, r->stream, 0, AVSEEK_FLAG_BACKWARD);
    if (err < 0) {
        print_av_error(r->path, "cannot seek to the start", err);
        return -1;
    }
    avcodec_flush_buffers(r->decoder);
    r->flushing = 0;
    return 0;
}

int video_reader_width(const video_reader *r) {
    return r->width;
}

int video_reader_height(const video_reader *r) {
    return r->height;
}

void video_reader_frame_rate(const video_reader *r, int *num, int *den) {
    AVRational rate = r->format->streams[r->stream]->avg_frame_rate;
    if (rate.num <= 0 || rate.den <= 0) rate = r->format->streams[r->stream]->r_frame_rate;
    if (rate.num <= 0 || rate.den <= 0 || rate.num / rate.den > 1000) rate = (AVRational){25, 1};
    *num = rate.num;
    *den = rate.den;
}

void video_reader_close(video_reader *r) {
    if (!r) return;
    sws_freeContext(r->sws);
    av_frame_free(&r->frame);
    av_packet_free(&r->packet);
    avcodec_free_context(&r->decoder);
    avformat_close_input(&r->format);
    free(r->rgba);
    free(r);
}

/* ---- writer ---------------------------------------------------------------------------------- */

struct video_writer {
    const char *path;
    AVFormatContext *format;
    AVCodecContext *encoder;
    AVStream *stream;
    AVFrame *frame;
    AVPacket *packet;
    struct SwsContext *sws;
    int width, height, header_written;
    int64_t num_frames;
};

/* Sends `frame` (NULL: flush) and writes every packet the encoder has ready. */
static int encode(video_writer *w, const AVFrame *frame) {
    int err = avcodec_send_frame(w->encoder, frame);
    while (err >= 0) {
        err = avcodec_receive_packet(w->encoder, w->packet);
        if (err == AVERROR(EAGAIN) || err == AVERROR_EOF) return 0;
        if (err < 0) break;
        w->packet->duration = 1; /* one frame; else the last frame of an MP4 has no length */
        av_packet_rescale_ts(w->packet, w->encoder->time_base, w->stream->time_base);
        w->packet->stream_index = w->stream->index;
        err = av_interleaved_write_frame(w->format, w->packet);
    }
    print_av_error(w->path, "encoding", err);
    return -1;
}

int video_writer_open(const char *path, int width, int height, int fps_num, int fps_den,
                      video_writer **out) {
    av_log_set_level(AV_LOG_ERROR);
    video_writer *w = calloc(1, sizeof(*w));
    if (!w) return -1;
    w->path = path;
    w->width = width;
    w->height = height;
    int err = avformat_alloc_output_context2(&w->format, NULL, NULL, path);
    if (err < 0) {
        print_av_error(path, "unknown container (use .mp4, .mkv or .avi)", err);
        goto error;
    }
    const AVCodec *codec = avcodec_find_encoder_by_name("libx264");
    if (!codec) codec = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
    if (!codec) {
        fprintf(stderr, "%s: this FFmpeg has neither libx264 nor an MPEG-4 encoder\n", path);
        goto error;
    }
    w->encoder = avcodec_alloc_context3(codec);
    w->stream = avformat_new_stream(w->format, NULL);
    w->frame = av_frame_alloc();
    w->packet = av_packet_alloc();
    if (!w->encoder || !w->stream || !w->frame || !w->packet) goto error;
    /* 4:2:0 needs even sizes: an odd last row/column is dropped. */
    w->encoder->width = width & ~1;
    w->encoder->height = height & ~1;
    w->encoder->pix_fmt = AV_PIX_FMT_YUV420P;
    w->encoder->time_base = (AVRational){fps_den, fps_num};
    w->encoder->framerate = (AVRational){fps_num, fps_den};
    w->encoder->gop_size = 12;
    if (codec->id == AV_CODEC_ID_H264) {
        av_opt_set(w->encoder->priv_data, "preset", "veryfast", 0);
        av_opt_set(w->encoder->priv_data, "crf", "18", 0);
    } else {
        w->encoder->bit_rate = 8000000;
    }
    if (w->format->oformat->flags & AVFMT_GLOBALHEADER)
        w->encoder->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    if ((err = avcodec_open2(w->encoder, codec, NULL)) < 0) {
        print_av_error(path, "cannot open the encoder", err);
        goto error;
    }
    avcodec_parameters_from_context(w->stream->codecpar, w->encoder);
    w->stream->time_base = w->encoder->time_base;
    w->frame->format = w->encoder->pix_fmt;
    w->frame->width = w->encoder->width;
    w->frame->height = w->encoder->height;
    if ((err = av_frame_get_buffer(w->frame, 0)) < 0 ||
        (err = avio_open(&w->format->pb, path, AVIO_FLAG_WRITE)) < 0 ||
        (err = avformat_write_header(w->format, NULL)) < 0) {
        print_av_error(path, "cannot start the file", err);
        goto error;
    }
    w->header_written = 1;
    w->sws = sws_getContext(width, height, AV_PIX_FMT_RGBA, w->frame->width, w->frame->height,
                            w->encoder->pix_fmt, SWS_BILINEAR, NULL, NULL, NULL);
    if (!w->sws) goto error;
    *out = w;
    return 0;
error:
    video_writer_close(w);
    return -1;
}

int video_writer_write(video_writer *w, const uint8_t *rgba) {
    if (av_frame_make_writable(w->frame) < 0) return -1;
    const uint8_t *src[4] = {rgba};
    int src_stride[4] = {w->width * 4};
    sws_scale(w->sws, src, src_stride, 0, w->height, w->frame->data, w->frame->linesize);
    w->frame->pts = w->num_frames++;
    return encode(w, w->frame);
}

const char *video_writer_codec_name(const video_writer *w) {
    return w->encoder->codec->name;
}

int video_writer_close(video_writer *w) {
    if (!w) return 0;
    int rc = 0;
    if (w->header_written) {
        rc = encode(w, NULL);
        if (av_write_trailer(w->format) < 0) rc = -1;
    }
    if (w->format && w->format->pb) avio_closep(&w->format->pb);
    sws_freeContext(w->sws);
    av_packet_free(&w->packet);
    av_frame_free(&w->frame);
    avcodec_free_context(&w->encoder);
    avformat_free_context(w->format);
    free(w);
    return rc;
}
