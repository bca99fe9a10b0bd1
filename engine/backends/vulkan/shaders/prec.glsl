// The precision variants (docs/vulkan.md, "Precision"). engine/CMakeLists.txt compiles every
// shader three times: plain (fp32), with -DKS_FP16_STORAGE (fp16 tensors, fp32 arithmetic) and
// with -DKS_FP16_STORAGE -DKS_FP16_ARITH (fp16 tensors and fp16 arithmetic). Included right
// after #version, before any declaration (#extension must come first).
//
// STORE: the element type of every tensor buffer (STORE4: four of them, for vector loads). AF: the type of elementwise arithmetic (binary
// and unary ops, fused activations) and of the products of convolutions and matrix products.
// Every sum (dot products, bias and residual adds, pooling, softmax, reductions), coordinates and
// interpolation weights stay float in every variant.
#ifdef KS_FP16_STORAGE
#extension GL_EXT_shader_16bit_storage : require
#define STORE float16_t
#define STORE4 f16vec4
#else
#define STORE float
#define STORE4 vec4
#endif
#ifdef KS_FP16_ARITH
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#define AF float16_t
#else
#define AF float
#endif
