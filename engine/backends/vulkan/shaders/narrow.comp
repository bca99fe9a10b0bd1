// Converts a tensor fp32 to fp16 on the device, for the fp16 modes' per-node precision (docs/vulkan.md,
// "Precision"): a node that runs in fp32 between fp16 ones reads and writes fp32 copies, which
// backend.c makes with this shader. The same in every variant (it ignores prec.glsl's STORE);
// finite values beyond fp16's range saturate, as the host's conversion does.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_16bit_storage : require
#include "prec.glsl"

layout(local_size_x = 64) in;

layout(std430, set = 0, binding = 0) readonly buffer X { float x[]; };
layout(std430, set = 0, binding = 1) writeonly buffer Y { float16_t y[]; };

// Must match pc_cast in backend.c.
layout(push_constant) uniform P {
    uint count;
} p;

#include "act.glsl"

void main() {
    uint i = ks_index();
    if (i >= p.count) return;
    float v = x[i];
    if (!isinf(v)) v = clamp(v, -65504.0, 65504.0);
    y[i] = float16_t(v);
}
