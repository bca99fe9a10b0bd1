// CONV2D with one group (not depthwise or grouped: those take conv2d.comp) as an implicit GEMM:
// the output is an M x N matrix (M = n * oh * ow pixels, N = oc channels, NHWC), the product of
// the im2col view of x (M x K, K = kh * kw * ic, never stored) and the OHWI weights (N x K).
// Each work group computes a 32 x 32 tile of it; each of its 64 invocations a 4 x 4 block
// (pixels tm + 8i, channels tn + 8j, strided so that neighbouring invocations write neighbouring
// channels). K advances in chunks of 16: the group stages the chunk's 32 x 16 inputs and 32 x 16
// weights in shared memory (neighbouring invocations load neighbouring k: contiguous channels of
// an NHWC pixel and of an OHWI weight row), then every invocation does its 16 x 16 products from
// there, 4 + 4 loads for 16 multiply-adds instead of conv2d.comp's 2 loads for 1.
//
// Built twice (engine/CMakeLists.txt): conv2d_gemm, and conv2d_gemm4 with -DKS_VEC4 for
// convolutions whose input channels are a multiple of 4 (backend.c checks; tensors start 16-byte
// aligned on the device). There each staging load is a vector: four channels of one tap of x and
// four consecutive k of a weight row, 2 + 2 loads per invocation and chunk instead of 8 + 8, and
// the tap's index arithmetic once per four channels. The products and their order are the same,
// so both give the same bits.
//
// Same operands, push constants and arithmetic as conv2d.comp (backend.c picks one per node):
// taps outside the image add nothing, the sum runs over k in the same order in float, then
// bias, residual and the fused activation. p.count is the element count n * oh * ow * oc; the
// dispatch has one group of 64 per tile (backend.c: ceil(M / 32) * ceil(oc / 32) groups).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"

layout(local_size_x = 64) in;

#ifdef KS_VEC4
layout(std430, set = 0, binding = 0) readonly buffer X { STORE4 x4[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { vec4 w4[]; };
#else
layout(std430, set = 0, binding = 0) readonly buffer X { STORE x[]; };
layout(std430, set = 0, binding = 1) readonly buffer W { float w[]; };
#endif
layout(std430, set = 0, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, set = 0, binding = 3) readonly buffer Res { STORE res[]; };
layout(std430, set = 0, binding = 4) readonly buffer Slope { float slope[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Y { STORE y[]; };

// Must match pc_conv in backend.c.
layout(push_constant) uniform P {
    uint count; // n * oh * ow * oc
    int ih, iw, ic, oh, ow, oc;
    int kh, kw, icg, ocg;
    int sh, sw, dh, dw, pt, pl;
    int act;
    uint flags; // 1 bias, 2 residual, 4 slopes
    float alpha;
} p;

#include "act.glsl"

const int TM = 32; // pixels per tile
const int TN = 32; // output channels per tile
const int KC = 16; // k per chunk
// one column of padding: the chunk is written k-major by 16 invocations at once
shared float xs[KC][TM + 1];
shared float ws[KC][TN + 1];

void main() {
    int tid = int(gl_LocalInvocationID.x);
    int m_total = int(p.count / uint(p.oc));
    int tiles_n = (p.oc + TN - 1) / TN;
    uint tile = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    int m0 = int(tile / uint(tiles_n)) * TM, n0 = int(tile % uint(tiles_n)) * TN;
    if (m0 >= m_total) return; // the dispatch's spare groups: the whole group leaves

#ifdef KS_VEC4
    // Staging: invocation tid loads k = k0 + 4 kq .. k0 + 4 kq + 3 (four channels of one tap)
    // of rows rl + 16s (s = 0, 1) of both tiles.
    const int SR = 2;
    int kq = tid % 4, rl = tid / 4;
#else
    // Staging: invocation tid loads k = k0 + kl of rows rl + 4s (s = 0..7) of both tiles.
    const int SR = 8;
    int kl = tid % KC, rl = tid / KC;
#endif
    int oy0[SR], ox0[SR], nrow[SR]; // per staged pixel: its window's corner; nrow -1: past M
    for (int s = 0; s < SR; s++) {
        int m = m0 + rl + (TM / SR) * s;
        nrow[s] = -1;
        if (m < m_total) {
            int ox = m % p.ow, r = m / p.ow;
            oy0[s] = (r % p.oh) * p.sh - p.pt;
            ox0[s] = ox * p.sw - p.pl;
            nrow[s] = (r / p.oh) * p.ih;
        }
    }
    int k_total = p.kh * p.kw * p.icg;
    int tm = tid / 8, tn = tid % 8;
    float acc[4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0.0;

    for (int k0 = 0; k0 < k_total; k0 += KC) {
#ifdef KS_VEC4
        int k = k0 + 4 * kq; // k_total is a multiple of 4: a vector is wholly in or out
        bool kin = k < k_total;
        int c = k % p.icg, t = k / p.icg;
        int dy = (t / p.kw) * p.dh, dx = (t % p.kw) * p.dw;
        for (int s = 0; s < SR; s++) {
            int row = rl + (TM / SR) * s;
            vec4 v = vec4(0.0);
            int iy = oy0[s] + dy, ix = ox0[s] + dx;
            if (kin && nrow[s] >= 0 && iy >= 0 && iy < p.ih && ix >= 0 && ix < p.iw)
                v = vec4(x4[uint(((nrow[s] + iy) * p.iw + ix) * (p.ic / 4) + c / 4)]);
            int co = n0 + row;
            vec4 wv = kin && co < p.oc ? w4[uint(co * (k_total / 4) + k / 4)] : vec4(0.0);
            for (int e = 0; e < 4; e++) {
                xs[4 * kq + e][row] = v[e];
                ws[4 * kq + e][row] = wv[e];
            }
        }
#else
        int k = k0 + kl;
        bool kin = k < k_total;
        int c = k % p.icg, t = k / p.icg;
        int dy = (t / p.kw) * p.dh, dx = (t % p.kw) * p.dw;
        for (int s = 0; s < 8; s++) {
            float v = 0.0;
            int iy = oy0[s] + dy, ix = ox0[s] + dx;
            if (kin && nrow[s] >= 0 && iy >= 0 && iy < p.ih && ix >= 0 && ix < p.iw)
                v = float(x[uint(((nrow[s] + iy) * p.iw + ix) * p.ic + c)]);
            xs[kl][rl + 4 * s] = v;
            int co = n0 + rl + 4 * s;
            ws[kl][rl + 4 * s] = kin && co < p.oc ? w[uint(co * k_total + k)] : 0.0;
        }
#endif
        barrier();
        for (int kk = 0; kk < KC; kk++) {
            float a[4], b[4];
            for (int i = 0; i < 4; i++)
                a[i] = xs[kk][tm + 8 * i];
            for (int j = 0; j < 4; j++)
                b[j] = ws[kk][tn + 8 * j];
            for (int i = 0; i < 4; i++)
                for (int j = 0; j < 4; j++)
                    acc[i][j] += a[i] * b[j];
        }
        barrier();
    }

    for (int i = 0; i < 4; i++) {
        int m = m0 + tm + 8 * i;
        if (m >= m_total) continue;
        for (int j = 0; j < 4; j++) {
            int co = n0 + tn + 8 * j;
            if (co >= p.oc) continue;
            uint o = uint(m) * uint(p.oc) + uint(co);
            float v = acc[i][j];
            if ((p.flags & 1u) != 0u) v += bias[co];
            if ((p.flags & 2u) != 0u) v += float(res[o]);
            float al = (p.flags & 4u) != 0u ? slope[co] : p.alpha;
            y[o] = ks_act_store(v, p.act, al);
        }
    }
}
