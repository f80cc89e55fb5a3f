# Correct: KernelBench's own style, a CUDA kernel through torch.utils.cpp_extension.
# load_inline, compiled at import (before the lockdown; ninja and nvcc run then). The
# CUDA source includes no PyTorch header (it compiles in seconds); the binding takes the
# tensors' pointers and the caller's stream as integers. float4 for the bulk, a scalar
# tail for the odd check sizes. OK, with a positive median.
# expect: OK
# needs: program:ninja
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <cuda_runtime.h>
#include <cstdint>

__global__ void scale_add4(const float4 *x, const float4 *z, float4 *out, float a, long long n4)
{
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n4;
         i += (long long)gridDim.x * blockDim.x) {
        float4 u = x[i], v = z[i];
        out[i] = make_float4(a * u.x + v.x, a * u.y + v.y, a * u.z + v.z, a * u.w + v.w);
    }
}

__global__ void scale_add1(const float *x, const float *z, float *out, float a, long long from,
                           long long n)
{
    long long i = from + blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = a * x[i] + z[i];
}

int scale_add_launch(int64_t x, int64_t z, int64_t out, double alpha, int64_t n, int64_t stream)
{
    cudaStream_t st = (cudaStream_t)stream;
    long long n4 = n / 4;
    if (n4)
        scale_add4<<<1056, 256, 0, st>>>((const float4 *)x, (const float4 *)z, (float4 *)out,
                                         (float)alpha, n4);
    if (n > 4 * n4)
        scale_add1<<<1, 256, 0, st>>>((const float *)x, (const float *)z, (float *)out,
                                      (float)alpha, 4 * n4, n);
    return (int)cudaGetLastError();
}
"""

cpp_src = ("int scale_add_launch(int64_t x, int64_t z, int64_t out, double alpha, int64_t n, "
           "int64_t stream);")

ext = load_inline(name="kopt_kbadv_scale_add", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["scale_add_launch"], verbose=False)


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        x, z = x.contiguous(), z.contiguous()
        out = torch.empty_like(x)
        rc = ext.scale_add_launch(x.data_ptr(), z.data_ptr(), out.data_ptr(), float(alpha),
                                  x.numel(), torch.cuda.current_stream(x.device).cuda_stream)
        if rc:
            raise RuntimeError("scale_add_launch: CUDA error %d" % rc)
        return out
