/* kopt's own device helpers, compiled once per architecture with NVRTC and cached:
 * input generation (turning cuRAND's uniform/normal numbers into each dtype and
 * distribution), filling (NaN poisoning, memset steps), an L2 flush that only reads, and
 * the microbenchmarks for the device's ceilings. */
#include "compile_int.h"

#include <stdlib.h>

static const char runtime_source[] =
"#include <cuda_fp16.h>\n"
"#include <cuda_bf16.h>\n"
"#define GRID_STRIDE(i, n) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;"
" i < (n); i += (long long)gridDim.x * blockDim.x)\n"
"enum { F32, F16, BF16, F64, I32, I64 };\n"
"enum { NORMAL, UNIFORM, INT };\n"
"__device__ void store(void *dst, long long i, int dtype, double v) {\n"
"  switch (dtype) {\n"
"  case F32: ((float *)dst)[i] = (float)v; break;\n"
"  case F16: ((__half *)dst)[i] = __double2half(v); break;\n"
"  case BF16: ((__nv_bfloat16 *)dst)[i] = __double2bfloat16(v); break;\n"
"  case F64: ((double *)dst)[i] = v; break;\n"
"  case I32: ((int *)dst)[i] = (int)v; break;\n"
"  case I64: ((long long *)dst)[i] = (long long)v; break;\n"
"  }\n"
"}\n"
"__device__ double shape(double u, int dist, double a, double b) {\n"
"  if (dist == NORMAL) return a + b * u;\n"
"  if (dist == UNIFORM) return a + (b - a) * u;\n"
"  double v = floor(a + u * (b - a + 1.0));\n"
"  return v > b ? b : v;\n"
"}\n"
"extern \"C\" __global__ void kopt_from_f32(const float *src, void *dst, long long n, int dtype,"
" int dist, double a, double b) {\n"
"  GRID_STRIDE(i, n) store(dst, i, dtype, shape((double)src[i], dist, a, b));\n"
"}\n"
"extern \"C\" __global__ void kopt_from_f64(const double *src, void *dst, long long n, int dtype,"
" int dist, double a, double b) {\n"
"  GRID_STRIDE(i, n) store(dst, i, dtype, shape(src[i], dist, a, b));\n"
"}\n"
"extern \"C\" __global__ void kopt_set_value(void *dst, long long n, int dtype, double v) {\n"
"  GRID_STRIDE(i, n) store(dst, i, dtype, v);\n"
"}\n"
"extern \"C\" __global__ void kopt_fill_bits(void *dst, long long n, int width,"
" unsigned long long bits) {\n"
"  GRID_STRIDE(i, n) {\n"
"    if (width == 2) ((unsigned short *)dst)[i] = (unsigned short)bits;\n"
"    else if (width == 4) ((unsigned *)dst)[i] = (unsigned)bits;\n"
"    else if (width == 8) ((unsigned long long *)dst)[i] = bits;\n"
"    else ((unsigned char *)dst)[i] = (unsigned char)bits;\n"
"  }\n"
"}\n"
"/* Reads the buffer (evicting the L2 with clean lines) and writes nothing useful. */\n"
"extern \"C\" __global__ void kopt_l2_flush(const float4 *buf, long long n, float *sink) {\n"
"  float s = 0.f;\n"
"  GRID_STRIDE(i, n) { float4 v = __ldcg(buf + i); s += v.x + v.y + v.z + v.w; }\n"
"  if (s == 1234567.f) *sink = s;\n"
"}\n"
"extern \"C\" __global__ void kopt_bw_copy(const float4 *src, float4 *dst, long long n) {\n"
"  GRID_STRIDE(i, n) dst[i] = src[i];\n"
"}\n"
"extern \"C\" __global__ void kopt_bw_read(const float4 *src, long long n, float *sink) {\n"
"  float s = 0.f;\n"
"  GRID_STRIDE(i, n) { float4 v = src[i]; s += v.x + v.y + v.z + v.w; }\n"
"  if (s == 1234567.f) *sink = s;\n"
"}\n"
"extern \"C\" __global__ void kopt_bw_write(float4 *dst, long long n) {\n"
"  GRID_STRIDE(i, n) dst[i] = make_float4(1.f, 2.f, 3.f, 4.f);\n"
"}\n"
"/* An order-independent 64-bit checksum of a buffer of 16-bit units (every dtype is a\n"
" * whole number of them): the sum of a mix of each unit with its index. */\n"
"extern \"C\" __global__ void kopt_checksum(const unsigned short *p, long long n,\n"
"                                          unsigned long long *out) {\n"
"  unsigned long long s = 0;\n"
"  GRID_STRIDE(i, n) {\n"
"    unsigned long long x = ((unsigned long long)p[i] + 1) * 0x9e3779b97f4a7c15ull;\n"
"    x ^= (unsigned long long)i * 0xbf58476d1ce4e5b9ull;\n"
"    s += x ^ (x >> 29);\n"
"  }\n"
"  atomicAdd(out, s);\n"
"}\n"
"/* Does nothing: its event-bracketed time is the cost of the bracket itself. */\n"
"extern \"C\" __global__ void kopt_empty(void) {}\n"
"/* 8 independent FMA chains per thread: iters * 8 * 2 FLOP per thread. */\n"
"extern \"C\" __global__ void kopt_fma_f32(float *out, int iters, float a, float b) {\n"
"  float x[8];\n"
"  for (int k = 0; k < 8; k++) x[k] = threadIdx.x * 0.001f + k;\n"
"  for (int it = 0; it < iters; it++) {\n"
"#pragma unroll\n"
"    for (int k = 0; k < 8; k++) x[k] = fmaf(x[k], a, b);\n"
"  }\n"
"  float s = 0.f;\n"
"  for (int k = 0; k < 8; k++) s += x[k];\n"
"  if (s == 1234567.f) out[threadIdx.x] = s;\n"
"}\n";

static const char *runtime_names[] = {
    "kopt_from_f32", "kopt_from_f64", "kopt_set_value", "kopt_fill_bits", "kopt_l2_flush",
    "kopt_bw_copy", "kopt_bw_read", "kopt_bw_write", "kopt_fma_f32", "kopt_empty", "kopt_checksum",
};

kopt_status kopt_compile_runtime(kopt_compiled **out, kopt_ctx *ctx, const kopt_compile_opts *o)
{
    kopt_vars none = KOPT_VARS_INIT;
    kopt__nvrtc_job job = {0};

    job.source = runtime_source;
    job.path = "kopt_runtime.cu";
    job.params = &none;
    job.names = runtime_names;
    job.nnames = (int)(sizeof(runtime_names) / sizeof(runtime_names[0]));
    return kopt__compile_nvrtc(out, ctx, &job, o);
}
