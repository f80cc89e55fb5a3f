/* kopt's own device helpers, compiled once per architecture with NVRTC and cached:
 * input generation (turning cuRAND's uniform/normal numbers into each dtype and
 * distribution), filling (NaN poisoning, memset steps), an L2 flush that only reads, and
 * the microbenchmarks for the device's ceilings. */
#include "compile_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/core_int.h"

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
"/* Inputs without cuRAND, for runs under compute-sanitizer (which loads and instruments every\n"
" * kernel of cuRAND's module, minutes for initcheck): a counter hash (splitmix64) of the\n"
" * seed and the index gives uniforms in (0, 1]; pairs become normals by Box-Muller. */\n"
"__device__ double kopt_u01(unsigned long long seed, long long i) {\n"
"  unsigned long long z = seed + 0x9e3779b97f4a7c15ULL * (unsigned long long)(i + 1);\n"
"  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL; z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;\n"
"  z ^= z >> 31;\n"
"  return ((double)(z >> 11) + 1.0) * (1.0 / 9007199254740992.0);\n"
"}\n"
"extern \"C\" __global__ void kopt_hash_random(double *dst, long long n, unsigned long long seed,"
" int normal) {\n"
"  GRID_STRIDE(i, n) {\n"
"    if (!normal) { dst[i] = kopt_u01(seed, i); continue; }\n"
"    long long j = i & ~1LL;\n"
"    double r = sqrt(-2.0 * log(kopt_u01(seed, j))), t = 6.283185307179586 * kopt_u01(seed, j + 1);\n"
"    dst[i] = (i & 1) ? r * sin(t) : r * cos(t);\n"
"  }\n"
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
"}\n"
"/* ---- ceilings: L2, shared memory, FP64, tensor cores ---- */\n"
"/* L2 bandwidth: `iters` passes over a buffer that fits in L2, loaded with ld.global.cg\n"
" * (L2 only, not L1); n is a multiple of 4 * the thread count. 16 * n * iters bytes. */\n"
"__device__ __forceinline__ uint4 ld_cg(const uint4 *p) {\n"
"  uint4 v;\n"
"  asm volatile(\"ld.global.cg.v4.u32 {%0,%1,%2,%3}, [%4];\"\n"
"               : \"=r\"(v.x), \"=r\"(v.y), \"=r\"(v.z), \"=r\"(v.w) : \"l\"(p));\n"
"  return v;\n"
"}\n"
"extern \"C\" __global__ void kopt_l2_read(const uint4 *buf, long long n, int iters,\n"
"                                        unsigned *sink) {\n"
"  long long stride = (long long)gridDim.x * blockDim.x;\n"
"  long long start = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
"  unsigned acc = 0;\n"
"  for (int it = 0; it < iters; it++) {\n"
"    for (long long i = start; i < n; i += 4 * stride) {\n"
"      uint4 a = ld_cg(buf + i), b = ld_cg(buf + i + stride);\n"
"      uint4 c = ld_cg(buf + i + 2 * stride), d = ld_cg(buf + i + 3 * stride);\n"
"      acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w;\n"
"      acc ^= c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;\n"
"    }\n"
"  }\n"
"  if (acc == 0x9e3779b9u) sink[0] = acc;\n"
"}\n"
"/* Shared-memory bandwidth: each warp reads 32 consecutive 16-byte words per load (no bank\n"
" * conflicts), 8 loads per iteration. 128 * blockDim * gridDim * iters bytes. */\n"
"extern \"C\" __global__ void __launch_bounds__(1024, 2) kopt_smem_read(int iters, unsigned *sink) {\n"
"  __shared__ uint4 buf[2048];\n"
"  for (int i = threadIdx.x; i < 2048; i += blockDim.x)\n"
"    buf[i] = make_uint4(i, i * 3u, i * 5u, i * 7u);\n"
"  __syncthreads();\n"
"  unsigned a0 = 0, a1 = 0, a2 = 0, a3 = 0, idx = threadIdx.x;\n"
"  for (int it = 0; it < iters; it++) {\n"
"#pragma unroll\n"
"    for (int k = 0; k < 8; k++) {\n"
"      uint4 v = buf[(idx + k * 256) & 2047];\n"
"      a0 ^= v.x; a1 ^= v.y; a2 ^= v.z; a3 ^= v.w;\n"
"    }\n"
"    idx += 32;\n"
"  }\n"
"  if ((a0 ^ a1 ^ a2 ^ a3) == 0x9e3779b9u) sink[0] = a0;\n"
"}\n"
"/* FP64 FMA: 8 independent chains per thread, iters * 16 FLOP per thread. */\n"
"extern \"C\" __global__ void kopt_fma_f64(double *out, int iters, double a, double b) {\n"
"  double x[8];\n"
"  for (int k = 0; k < 8; k++) x[k] = threadIdx.x * 0.001 + k;\n"
"  for (int it = 0; it < iters; it++) {\n"
"#pragma unroll\n"
"    for (int k = 0; k < 8; k++) x[k] = fma(x[k], a, b);\n"
"  }\n"
"  double s = 0.0;\n"
"  for (int k = 0; k < 8; k++) s += x[k];\n"
"  if (s == 1234567.0) out[threadIdx.x] = s;\n"
"}\n"
"/* Tensor cores through mma.sync (sm_80+; fp8 sm_89+): each warp keeps 8 independent\n"
" * accumulator tiles and multiplies the same finite operands into them. Per warp and\n"
" * iteration: 8 instructions of 2*M*N*K FLOP (f64: 16x8x16 on sm_90, 8x8x4 before). */\n"
"#define MMA_LOOP(body)                                                   \\\n"
"  for (int it = 0; it < iters; it++) {                                   \\\n"
"    _Pragma(\"unroll\") for (int j = 0; j < 8; j++) { body; }              \\\n"
"  }\n"
"extern \"C\" __global__ void kopt_mma_f16(float *out, int iters) {\n"
"  float d[8][4] = {};\n"
"#if __CUDA_ARCH__ >= 800\n"
"  unsigned a = 0x3c003800u ^ (threadIdx.x & 0x00ff00ffu), b = 0x38003c00u;\n"
"  MMA_LOOP(asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 \"\n"
"           \"{%0,%1,%2,%3}, {%4,%4,%4,%4}, {%5,%5}, {%0,%1,%2,%3};\"\n"
"           : \"+f\"(d[j][0]), \"+f\"(d[j][1]), \"+f\"(d[j][2]), \"+f\"(d[j][3]) : \"r\"(a), \"r\"(b)))\n"
"#endif\n"
"  float s = 0.f;\n"
"  for (int j = 0; j < 8; j++) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];\n"
"  if (s == 1234567.f) out[threadIdx.x] = s;\n"
"}\n"
"extern \"C\" __global__ void kopt_mma_bf16(float *out, int iters) {\n"
"  float d[8][4] = {};\n"
"#if __CUDA_ARCH__ >= 800\n"
"  unsigned a = 0x3f803f00u ^ (threadIdx.x & 0x007f007fu), b = 0x3f003f80u;\n"
"  MMA_LOOP(asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 \"\n"
"           \"{%0,%1,%2,%3}, {%4,%4,%4,%4}, {%5,%5}, {%0,%1,%2,%3};\"\n"
"           : \"+f\"(d[j][0]), \"+f\"(d[j][1]), \"+f\"(d[j][2]), \"+f\"(d[j][3]) : \"r\"(a), \"r\"(b)))\n"
"#endif\n"
"  float s = 0.f;\n"
"  for (int j = 0; j < 8; j++) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];\n"
"  if (s == 1234567.f) out[threadIdx.x] = s;\n"
"}\n"
"extern \"C\" __global__ void kopt_mma_tf32(float *out, int iters) {\n"
"  float d[8][4] = {};\n"
"#if __CUDA_ARCH__ >= 800\n"
"  unsigned a = 0x3f800000u ^ (threadIdx.x << 13), b = 0x3f000000u;\n"
"  MMA_LOOP(asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 \"\n"
"           \"{%0,%1,%2,%3}, {%4,%4,%4,%4}, {%5,%5}, {%0,%1,%2,%3};\"\n"
"           : \"+f\"(d[j][0]), \"+f\"(d[j][1]), \"+f\"(d[j][2]), \"+f\"(d[j][3]) : \"r\"(a), \"r\"(b)))\n"
"#endif\n"
"  float s = 0.f;\n"
"  for (int j = 0; j < 8; j++) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];\n"
"  if (s == 1234567.f) out[threadIdx.x] = s;\n"
"}\n"
"extern \"C\" __global__ void kopt_mma_fp8(float *out, int iters) {\n"
"  float d[8][4] = {};\n"
"#if __CUDA_ARCH__ >= 890\n"
"  unsigned a = 0x38303830u ^ (threadIdx.x & 0x07070707u), b = 0x30383038u;\n"
"  MMA_LOOP(asm volatile(\"mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 \"\n"
"           \"{%0,%1,%2,%3}, {%4,%4,%4,%4}, {%5,%5}, {%0,%1,%2,%3};\"\n"
"           : \"+f\"(d[j][0]), \"+f\"(d[j][1]), \"+f\"(d[j][2]), \"+f\"(d[j][3]) : \"r\"(a), \"r\"(b)))\n"
"#endif\n"
"  float s = 0.f;\n"
"  for (int j = 0; j < 8; j++) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];\n"
"  if (s == 1234567.f) out[threadIdx.x] = s;\n"
"}\n"
"extern \"C\" __global__ void kopt_mma_f64(double *out, int iters) {\n"
"  double d[8][4] = {};\n"
"#if __CUDA_ARCH__ >= 900\n"
"  double a = 1.0 + threadIdx.x * 1e-3, b = 0.5;\n"
"  MMA_LOOP(asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 \"\n"
"           \"{%0,%1,%2,%3}, {%4,%4,%4,%4,%4,%4,%4,%4}, {%5,%5,%5,%5}, {%0,%1,%2,%3};\"\n"
"           : \"+d\"(d[j][0]), \"+d\"(d[j][1]), \"+d\"(d[j][2]), \"+d\"(d[j][3]) : \"d\"(a), \"d\"(b)))\n"
"#elif __CUDA_ARCH__ >= 800\n"
"  double a = 1.0 + threadIdx.x * 1e-3, b = 0.5;\n"
"  MMA_LOOP(asm volatile(\"mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 \"\n"
"           \"{%0,%1}, {%2}, {%3}, {%0,%1};\"\n"
"           : \"+d\"(d[j][0]), \"+d\"(d[j][1]) : \"d\"(a), \"d\"(b)))\n"
"#endif\n"
"  double s = 0.0;\n"
"  for (int j = 0; j < 8; j++) s += d[j][0] + d[j][1] + d[j][2] + d[j][3];\n"
"  if (s == 1234567.0) out[threadIdx.x] = s;\n"
"}\n"
"/* Tensor cores through wgmma (sm_90a): each warpgroup (128 threads) issues m64n256 wgmmas\n"
" * with both operands in shared memory, 4 per commit group, one group in flight while the\n"
" * next is issued. Operands are finite values of magnitude 0.5..1 with random signs and\n"
" * mantissas (the power drawn, and so the clock, is that of real data). Per warpgroup and\n"
" * iteration: 4 wgmmas of 2*64*256*K FLOP (K = 16 f16/bf16, 8 tf32, 32 fp8). */\n"
"enum { WG_F16, WG_BF16, WG_TF32, WG_FP8 };\n"
"#define WG_D \"{\" \\\n"
"  \"%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,\" \\\n"
"  \"%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,\" \\\n"
"  \"%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,\" \\\n"
"  \"%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63,\" \\\n"
"  \"%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,\" \\\n"
"  \"%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,\" \\\n"
"  \"%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,\" \\\n"
"  \"%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127\" \\\n"
"  \"}\"\n"
"#define WG_ACC8(i) \"+f\"(d[i]), \"+f\"(d[i + 1]), \"+f\"(d[i + 2]), \"+f\"(d[i + 3]), \\\n"
"  \"+f\"(d[i + 4]), \"+f\"(d[i + 5]), \"+f\"(d[i + 6]), \"+f\"(d[i + 7])\n"
"#define WG_ACC WG_ACC8(0), WG_ACC8(8), WG_ACC8(16), WG_ACC8(24), WG_ACC8(32), WG_ACC8(40), \\\n"
"  WG_ACC8(48), WG_ACC8(56), WG_ACC8(64), WG_ACC8(72), WG_ACC8(80), WG_ACC8(88), WG_ACC8(96), \\\n"
"  WG_ACC8(104), WG_ACC8(112), WG_ACC8(120)\n"
"#define WG_ARGS \", %128, %129, p, 1, 1\"\n"
"#define WG_OP(instr, tail) asm volatile(\"{ .reg .pred p; setp.ne.b32 p, %130, 0; \" instr \" \" \\\n"
"  WG_D WG_ARGS tail \"; }\" : WG_ACC : \"l\"(da), \"l\"(db), \"r\"(1))\n"
"template <int KIND> __device__ __forceinline__ void wg_mma(float *d, unsigned long long da,\n"
"                                                         unsigned long long db) {\n"
"#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n"
"  if (KIND == WG_F16)\n"
"    WG_OP(\"wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16\", \", 0, 0\");\n"
"  else if (KIND == WG_BF16)\n"
"    WG_OP(\"wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16\", \", 0, 0\");\n"
"  else if (KIND == WG_TF32)\n"
"    WG_OP(\"wgmma.mma_async.sync.aligned.m64n256k8.f32.tf32.tf32\", \"\");\n"
"  else\n"
"    WG_OP(\"wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3\", \"\");\n"
"#endif\n"
"}\n"
"/* A shared-memory matrix descriptor without swizzling: 8-row core matrices of 16 bytes,\n"
" * 128 B apart along K (leading offset) and 256 B apart along M/N (stride offset). */\n"
"__device__ __forceinline__ unsigned long long wg_desc(const void *smem) {\n"
"  unsigned addr = (unsigned)__cvta_generic_to_shared(smem);\n"
"  return (unsigned long long)((addr & 0x3ffff) >> 4) | ((unsigned long long)(128 >> 4) << 16) |\n"
"         ((unsigned long long)(256 >> 4) << 32);\n"
"}\n"
"template <int KIND> __device__ void wg_loop(float *out, int iters) {\n"
"#if defined(__CUDA_ARCH_FEAT_SM90_ALL)\n"
"  /* A: 64 rows x 32 B = 2 KB; B: 256 rows x 32 B = 8 KB */\n"
"  __shared__ __align__(1024) unsigned tile[2560];\n"
"  const unsigned keep[4] = {0x83ff83ffu, 0x807f807fu, 0x807fffffu, 0x87878787u};\n"
"  const unsigned set[4] = {0x38003800u, 0x3f003f00u, 0x3f000000u, 0x30303030u};\n"
"  for (unsigned i = threadIdx.x; i < 2560; i += blockDim.x) {\n"
"    unsigned h = (i + 1) * 0x9e3779b9u;\n"
"    h ^= h >> 15; h *= 0x85ebca6bu; h ^= h >> 13;\n"
"    tile[i] = (h & keep[KIND]) | set[KIND];\n"
"  }\n"
"  asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
"  __syncthreads();\n"
"  float d[128];\n"
"#pragma unroll\n"
"  for (int i = 0; i < 128; i++) d[i] = 0.f;\n"
"  unsigned long long da = wg_desc(tile), db = wg_desc(tile + 512);\n"
"  asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");\n"
"  for (int it = 0; it < iters; it++) {\n"
"    wg_mma<KIND>(d, da, db);\n"
"    wg_mma<KIND>(d, da, db);\n"
"    wg_mma<KIND>(d, da, db);\n"
"    wg_mma<KIND>(d, da, db);\n"
"    asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");\n"
"    asm volatile(\"wgmma.wait_group.sync.aligned 1;\" ::: \"memory\");\n"
"  }\n"
"  asm volatile(\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");\n"
"  float s = 0.f;\n"
"#pragma unroll\n"
"  for (int i = 0; i < 128; i++) s += d[i];\n"
"  if (s == 1234567.f) out[threadIdx.x] = s;\n"
"#endif\n"
"}\n"
"extern \"C\" __global__ void __launch_bounds__(256, 1) kopt_wgmma_f16(float *o, int n) { wg_loop<WG_F16>(o, n); }\n"
"extern \"C\" __global__ void __launch_bounds__(256, 1) kopt_wgmma_bf16(float *o, int n) { wg_loop<WG_BF16>(o, n); }\n"
"extern \"C\" __global__ void __launch_bounds__(256, 1) kopt_wgmma_tf32(float *o, int n) { wg_loop<WG_TF32>(o, n); }\n"
"extern \"C\" __global__ void __launch_bounds__(256, 1) kopt_wgmma_fp8(float *o, int n) { wg_loop<WG_FP8>(o, n); }\n";

static const char *runtime_names[] = {
    "kopt_from_f32", "kopt_from_f64", "kopt_set_value", "kopt_fill_bits", "kopt_l2_flush",
    "kopt_bw_copy", "kopt_bw_read", "kopt_bw_write", "kopt_fma_f32", "kopt_empty", "kopt_checksum",
    "kopt_l2_read", "kopt_smem_read", "kopt_fma_f64", "kopt_mma_f16", "kopt_mma_bf16",
    "kopt_mma_tf32", "kopt_mma_fp8", "kopt_mma_f64", "kopt_wgmma_f16", "kopt_wgmma_bf16",
    "kopt_wgmma_tf32", "kopt_wgmma_fp8", "kopt_hash_random",
};

const char *kopt__runtime_source(void)
{
    return runtime_source;
}

/* The runtime kernels compiled ahead of time by the build (nvcc, KOPT_PREBUILT_RUNTIME_ARCHS):
 * `dir`/ARCH.cubin, taken only when `dir`/source.sha256 is the hash of this source. */
/* A folder of cubins built from this source (its source.sha256 says so). */
static int has_sources(const char *dir, void *want)
{
    char *sums = dir ? kopt_path_join(dir, "source.sha256") : NULL, have[65];
    FILE *f = sums ? fopen(sums, "r") : NULL;
    int ok = f && fscanf(f, "%64s", have) == 1 && strcmp(have, (const char *)want) == 0;

    if (f)
        fclose(f);
    free(sums);
    return ok;
}

static kopt_compiled *prebuilt_in(const char *dir, const char *arch, const char *want)
{
    char *cubin = NULL;
    kopt_compiled *c = NULL;

    if (has_sources(dir, (void *)want) &&
        asprintf(&cubin, "%s/%s.cubin", dir, arch) >= 0 && access(cubin, R_OK) == 0 &&
        (c = calloc(1, sizeof(*c)))) {
        snprintf(c->key, sizeof(c->key), "%s", want);
        snprintf(c->arch, sizeof(c->arch), "%s", arch);
        snprintf(c->compiler, sizeof(c->compiler), "nvcc (prebuilt)");
        c->binary_path = cubin;
        c->log = strdup("");
        c->cache_hit = 1;
        cubin = NULL;
    }
    free(cubin);
    return c;
}

typedef struct prebuilt_probe {
    const char *arch, *want;
    kopt_compiled *found;
} prebuilt_probe;

static int has_prebuilt(const char *dir, void *arg)
{
    prebuilt_probe *pr = arg;

    return (pr->found = prebuilt_in(dir, pr->arch, pr->want)) != NULL;
}

/* Where the build or the install put the prebuilt cubins: $KOPT_RUNTIME_DIR; beside
 * libkopt.so (the install's libexec/kopt/kopt-runtime, relocatable); the same seen from an
 * installed program that has libkopt built in (bin/kopt: kopt_self_lib() is NULL there; the
 * wheel's kopt CLI compiled the runtime with NVRTC, which needs the toolkit's headers);
 * beside the running program (the build tree's kopt; libexec/kopt/kopt-worker); the
 * configured install path; the build tree. */
static const kopt__shipped_place runtime_places[] = {
    {KOPT__AT_LIB_DIR, KOPT_LIB_TO_LIBEXEC "/kopt-runtime", NULL, 0},
    {KOPT__AT_EXE_DIR, KOPT_BIN_TO_LIB "/" KOPT_LIB_TO_LIBEXEC "/kopt-runtime", NULL, 0},
    {KOPT__AT_EXE_DIR, "kopt-runtime", NULL, 0},
    {KOPT__AT_PATH, KOPT_INSTALL_RUNTIME, NULL, 0},
    {KOPT__AT_PATH, KOPT_BUILD_RUNTIME, NULL, 0},
};

kopt_compiled *kopt__runtime_prebuilt(const char *arch)
{
    char want[65], *dir = NULL;
    prebuilt_probe pr = {arch, want, NULL};
    const kopt__shipped_spec spec = {
        NULL, NULL, "KOPT_RUNTIME_DIR", NULL, has_prebuilt, &pr, runtime_places,
        (int)(sizeof(runtime_places) / sizeof(runtime_places[0]))};

    kopt_sha256_hex(runtime_source, strlen(runtime_source), want);
    if (kopt__find_shipped(NULL, &spec, &dir, NULL) != KOPT_OK)
        return NULL;
    free(dir);
    return pr.found;
}

kopt_status kopt_runtime_prebuilt_dir(kopt_ctx *ctx, char **dir)
{
    char want[65];
    const kopt__shipped_spec spec = {
        NULL, NULL, "KOPT_RUNTIME_DIR", NULL, has_sources, want, runtime_places,
        (int)(sizeof(runtime_places) / sizeof(runtime_places[0]))};

    *dir = NULL;
    kopt_sha256_hex(runtime_source, strlen(runtime_source), want);
    if (kopt__find_shipped(NULL, &spec, dir, NULL) != KOPT_OK || !*dir)
        return kopt_seterr(ctx, KOPT_E_NOT_FOUND, "no prebuilt runtime kernels for this kopt");
    return KOPT_OK;
}

kopt_status kopt_compile_runtime(kopt_compiled **out, kopt_ctx *ctx, const kopt_compile_opts *o)
{
    kopt_vars none = KOPT_VARS_INIT;
    kopt__nvrtc_job job = {0};

    if (!(o && o->no_cache) &&
        (*out = kopt__runtime_prebuilt(o && o->arch ? o->arch : "sm_90a")) != NULL) {
        kopt_log(ctx, KOPT_LOG_INFO, "runtime kernels: %s (prebuilt)", (*out)->binary_path);
        return KOPT_OK;
    }

    job.source = runtime_source;
    job.path = "kopt_runtime.cu";
    job.params = &none;
    job.names = runtime_names;
    job.nnames = (int)(sizeof(runtime_names) / sizeof(runtime_names[0]));
    return kopt__compile_nvrtc(out, ctx, &job, o);
}
