// PAD on F32 up to rank 6: constant, reflect, edge or symmetric, negative pads crop. The
// geometry is the core's (ks__pad_geometry); out-of-range coordinates map into the input as in
// the CPU reference kernel (engine/backends/cpu/ref/data.c, pad_map).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "prec.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { STORE x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { STORE y[]; };

// Must match pc_pad in backend.c.
layout(push_constant) uniform P {
    uint count;
    int mode; // 0 constant, 1 reflect, 2 edge, 3 symmetric
    int rank;
    float value;
    int out_dims[6];
    int in_dims[6];
    int before[6];
} p;

#include "act.glsl"

// i outside [0, n), n >= 1; reflection repeats with period 2(n-1) (reflect) or 2n (symmetric).
int pad_map(int i, int n) {
    if (p.mode == 2 || n == 1) return i < 0 ? 0 : n - 1;
    int period = p.mode == 1 ? 2 * (n - 1) : 2 * n;
    int m = i >= 0 ? i % period : period - 1 - (-i - 1) % period; // GLSL's % wants i >= 0
    if (m >= n) m = p.mode == 1 ? period - m : period - 1 - m;
    return m;
}

void main() {
    uint i = ks_index();
    if (i >= p.count) return;
    uint r = i;
    int src = 0, stride = 1;
    bool border = false;
    for (int d = p.rank - 1; d >= 0; d--) {
        int o = int(r % uint(p.out_dims[d]));
        r /= uint(p.out_dims[d]);
        int j = o - p.before[d], n = p.in_dims[d];
        if (j < 0 || j >= n) {
            if (p.mode == 0)
                border = true;
            else
                j = pad_map(j, n);
        }
        src += j * stride;
        stride *= n;
    }
    if (border) // (a select of 16-bit values would need Float16)
        y[i] = STORE(p.value);
    else
        y[i] = x[src];
}
