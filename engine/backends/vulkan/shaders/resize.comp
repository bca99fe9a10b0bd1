// RESIZE on F32, NHWC: nearest (four rounding modes) or bilinear, with the coordinate modes of
// ks__resize_coord (asymmetric, align_corners, half_pixel, pytorch_half_pixel,
// tf_half_pixel_for_nn). The ratios come from the core's geometry (ks__resize_geometry). Source
// coordinates are formed exactly as the CPU reference kernel forms them
// (engine/backends/cpu/ref/conv_resize.c), each operation rounded to float (`precise`: no fused
// multiply-add), so nearest-neighbour picks the same pixels.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { STORE x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { STORE y[]; };

// Must match pc_resize in backend.c.
layout(push_constant) uniform P {
    uint count; // n * oh * ow * c
    int ih, iw, c, oh, ow;
    int mode;       // 0 nearest, 1 bilinear
    int coord;      // ks__resize_coord
    int round_mode; // nearest: 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil
    float ratio_h, ratio_w;
} p;

#include "act.glsl"

float source_coord(int o, int n, float ratio) {
    precise float of = float(o);
    precise float r;
    if (p.coord == 2) // half_pixel
        r = (of + 0.5) * ratio - 0.5;
    else if (p.coord == 3) // pytorch_half_pixel
        r = n > 1 ? (of + 0.5) * ratio - 0.5 : 0.0;
    else if (p.coord == 4) // tf_half_pixel_for_nn
        r = (of + 0.5) * ratio;
    else // asymmetric, align_corners
        r = of * ratio;
    return r;
}

// C's roundf: half away from zero (GLSL's round() may pick either way at .5).
float round_away(float v) {
    float a = abs(v), f = floor(a);
    precise float fr = a - f;
    float r = fr >= 0.5 ? f + 1.0 : f;
    return v < 0.0 ? -r : r;
}

int nearest_index(float src, int n) {
    float f = floor(src), r;
    if (p.round_mode == 0) {
        precise float fr = src - f;
        r = fr == 0.5 ? f : round_away(src);
    } else if (p.round_mode == 1) {
        r = round_away(src);
    } else if (p.round_mode == 2) {
        r = f;
    } else {
        r = ceil(src);
    }
    if (!(r >= 0.0)) return 0;
    if (r >= float(n - 1)) return n - 1;
    return int(r);
}

void main() {
    uint i = ks_index();
    if (i >= p.count) return;
    int ch = int(i % uint(p.c));
    uint r = i / uint(p.c);
    int ox = int(r % uint(p.ow));
    r /= uint(p.ow);
    int oy = int(r % uint(p.oh));
    int n = int(r / uint(p.oh));
    float fy = source_coord(oy, p.oh, p.ratio_h), fx = source_coord(ox, p.ow, p.ratio_w);
    if (p.mode == 0) {
        int iy = nearest_index(fy, p.ih), ix = nearest_index(fx, p.iw);
        y[i] = x[uint(((n * p.ih + iy) * p.iw + ix) * p.c + ch)];
        return;
    }
    // bilinear: clamp like ONNX Runtime, lower index floored, upper ceiled (TFLite)
    fy = fy < 0.0 ? 0.0 : (fy > float(p.ih - 1) ? float(p.ih - 1) : fy);
    fx = fx < 0.0 ? 0.0 : (fx > float(p.iw - 1) ? float(p.iw - 1) : fx);
    int y0 = min(int(floor(fy)), p.ih - 1), y1 = min(int(ceil(fy)), p.ih - 1);
    int x0 = min(int(floor(fx)), p.iw - 1), x1 = min(int(ceil(fx)), p.iw - 1);
    precise float dy = fy - float(y0);
    precise float dx = fx - float(x0);
    uint row0 = uint((n * p.ih + y0) * p.iw), row1 = uint((n * p.ih + y1) * p.iw);
    float v00 = float(x[(row0 + uint(x0)) * uint(p.c) + uint(ch)]);
    float v01 = float(x[(row0 + uint(x1)) * uint(p.c) + uint(ch)]);
    float v10 = float(x[(row1 + uint(x0)) * uint(p.c) + uint(ch)]);
    float v11 = float(x[(row1 + uint(x1)) * uint(p.c) + uint(ch)]);
    y[i] = STORE(v00 * (1.0 - dy) * (1.0 - dx) + v10 * dy * (1.0 - dx) + v01 * (1.0 - dy) * dx +
           v11 * dy * dx);
}
