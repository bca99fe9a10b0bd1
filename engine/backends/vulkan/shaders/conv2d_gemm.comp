// CONV2D with one group (not depthwise or grouped: those take conv2d.comp) as an implicit GEMM:
// the output is an M x N matrix (M = n * oh * ow pixels, N = oc channels, NHWC), the product of
// the im2col view of x (M x K, K = kh * kw * ic, never stored) and the OHWI weights (N x K).
// Each work group computes a TM x TN tile of it (specialization constants 0 and 1: 16, 32 or 64
// each; 32 x 32 unless backend.c picks another for the layer's shape); each of its 64 invocations,
// an 8 x 8 grid, a TM/8 x TN/8 block (pixels tm + 8i, channels tn + 8j, strided so that
// neighbouring invocations write neighbouring channels). K advances in chunks of 16: the group
// stages the chunk's TM x 16 inputs and TN x 16 weights in shared memory (neighbouring
// invocations load neighbouring k: contiguous channels of an NHWC pixel and of an OHWI weight
// row), then every invocation does its products from there (at 32 x 32, 4 + 4 loads for 16
// multiply-adds instead of conv2d.comp's 2 loads for 1). With PREFETCH (specialization constant
// 2, on unless KS_VK_PREFETCH=0) each invocation loads the next chunk from the buffers into
// registers before it multiplies the current one, so that the loads' latency overlaps the
// arithmetic: on small layers the chain of chunks is what a group waits on.
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
// dispatch has one group of 64 per tile (backend.c: ceil(M / TM) * ceil(oc / TN) groups). The
// products and their order do not depend on the tile or on PREFETCH: every choice gives the same
// bits.
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

// Must match k_tiles in backend.c.
layout(constant_id = 0) const int TM = 32; // pixels per tile: 16, 32 or 64
layout(constant_id = 1) const int TN = 32; // output channels per tile: 16, 32 or 64
layout(constant_id = 2) const bool PREFETCH = true;
const int KC = 16;     // k per chunk
const int RM = TM / 8; // per invocation: pixels
const int RN = TN / 8; // and channels
// one column of padding: the chunk is written k-major by 16 invocations at once
shared float xs[KC][TM + 1];
shared float ws[KC][TN + 1];

#ifdef KS_VEC4
// Staging: invocation tid loads k = k0 + 4 kq .. k0 + 4 kq + 3 (four channels of one tap) of
// rows rl + 16s of both tiles.
const int RS = 16;
#define SV vec4
#else
// Staging: invocation tid loads k = k0 + kl of rows rl + 4s of both tiles.
const int RS = 4;
#define SV float
#endif
const int SX = TM / RS, SW = TN / RS; // rows of x and of w each invocation stages
SV xr[SX], wr[SW];                    // the chunk in flight, between the buffers and xs / ws
int oy0[SX], ox0[SX], nrow[SX];       // per staged pixel: its window's corner; nrow -1: past M
int rl, kq, k_total, n0;

// The chunk from k0 into xr / wr (zeros past K, M and oc).
void load_chunk(int k0) {
#ifdef KS_VEC4
    int k = k0 + 4 * kq; // k_total is a multiple of 4: a vector is wholly in or out
#else
    int k = k0 + kq;
#endif
    bool kin = k < k_total;
    int c = k % p.icg, t = k / p.icg;
    int dy = (t / p.kw) * p.dh, dx = (t % p.kw) * p.dw;
    for (int s = 0; s < SX; s++) {
        int iy = oy0[s] + dy, ix = ox0[s] + dx;
        bool inside = kin && nrow[s] >= 0 && iy >= 0 && iy < p.ih && ix >= 0 && ix < p.iw;
#ifdef KS_VEC4
        xr[s] = inside ? vec4(x4[uint(((nrow[s] + iy) * p.iw + ix) * (p.ic / 4) + c / 4)]) : vec4(0.0);
#else
        xr[s] = inside ? float(x[uint(((nrow[s] + iy) * p.iw + ix) * p.ic + c)]) : 0.0;
#endif
    }
    for (int s = 0; s < SW; s++) {
        int co = n0 + rl + RS * s;
#ifdef KS_VEC4
        wr[s] = kin && co < p.oc ? w4[uint(co * (k_total / 4) + k / 4)] : vec4(0.0);
#else
        wr[s] = kin && co < p.oc ? w[uint(co * k_total + k)] : 0.0;
#endif
    }
}

// xr / wr into shared memory.
void store_chunk() {
    for (int s = 0; s < SX; s++) {
#ifdef KS_VEC4
        for (int e = 0; e < 4; e++)
            xs[4 * kq + e][rl + RS * s] = xr[s][e];
#else
        xs[kq][rl + RS * s] = xr[s];
#endif
    }
    for (int s = 0; s < SW; s++) {
#ifdef KS_VEC4
        for (int e = 0; e < 4; e++)
            ws[4 * kq + e][rl + RS * s] = wr[s][e];
#else
        ws[kq][rl + RS * s] = wr[s];
#endif
    }
}

void main() {
    int tid = int(gl_LocalInvocationID.x);
    int m_total = int(p.count / uint(p.oc));
    int tiles_n = (p.oc + TN - 1) / TN;
    uint tile = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    int m0 = int(tile / uint(tiles_n)) * TM;
    n0 = int(tile % uint(tiles_n)) * TN;
    if (m0 >= m_total) return; // the dispatch's spare groups: the whole group leaves

    kq = tid % (64 / RS);
    rl = tid / (64 / RS);
    for (int s = 0; s < SX; s++) {
        int m = m0 + rl + RS * s;
        nrow[s] = -1;
        if (m < m_total) {
            int ox = m % p.ow, r = m / p.ow;
            oy0[s] = (r % p.oh) * p.sh - p.pt;
            ox0[s] = ox * p.sw - p.pl;
            nrow[s] = (r / p.oh) * p.ih;
        }
    }
    k_total = p.kh * p.kw * p.icg;
    int tm = tid / 8, tn = tid % 8;
    float acc[RM][RN];
    for (int i = 0; i < RM; i++)
        for (int j = 0; j < RN; j++)
            acc[i][j] = 0.0;

    load_chunk(0);
    for (int k0 = 0; k0 < k_total; k0 += KC) {
        store_chunk();
        barrier();
        bool more = k0 + KC < k_total;
        if (PREFETCH && more) load_chunk(k0 + KC); // in flight during the products below
        for (int kk = 0; kk < KC; kk++) {
            float a[RM], b[RN];
            for (int i = 0; i < RM; i++)
                a[i] = xs[kk][tm + 8 * i];
            for (int j = 0; j < RN; j++)
                b[j] = ws[kk][tn + 8 * j];
            for (int i = 0; i < RM; i++)
                for (int j = 0; j < RN; j++)
                    acc[i][j] += a[i] * b[j];
        }
        barrier();
        if (!PREFETCH && more) load_chunk(k0 + KC);
    }

    for (int i = 0; i < RM; i++) {
        int m = m0 + tm + 8 * i;
        if (m >= m_total) continue;
        for (int j = 0; j < RN; j++) {
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
