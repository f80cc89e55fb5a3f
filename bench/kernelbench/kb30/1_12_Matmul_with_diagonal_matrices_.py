# KernelBench-native candidate (ModelNew, inline CUDA through load_inline, as KernelBench's
# harness takes it) for level 1 problem 12, imported as 1_12_Matmul_with_diagonal_matrices_:
# diag(A) @ B as a row scaling, out[i][j] = A[i] * B[i][j], float4 when the rows allow.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void row_scale4(const float *a, const float4 *b, float4 *c, int cols4)
{
    long long row = blockIdx.y;
    float k = a[row];
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < cols4; j += gridDim.x * blockDim.x) {
        float4 v = b[row * cols4 + j];
        v.x *= k; v.y *= k; v.z *= k; v.w *= k;
        c[row * cols4 + j] = v;
    }
}

__global__ void row_scale(const float *a, const float *b, float *c, int cols)
{
    long long row = blockIdx.y;
    for (int j = blockIdx.x * blockDim.x + threadIdx.x; j < cols; j += gridDim.x * blockDim.x)
        c[row * cols + j] = a[row] * b[row * cols + j];
}

torch::Tensor diag_scale(torch::Tensor a, torch::Tensor b)
{
    TORCH_CHECK(a.is_cuda() && b.is_cuda() && b.dim() == 2 && a.size(0) == b.size(0),
                "diag_scale: A (N), B (N, M) on the GPU");
    auto ac = a.contiguous().to(torch::kFloat32);
    auto bc = b.contiguous().to(torch::kFloat32);
    auto c = torch::empty_like(bc);
    int rows = (int)bc.size(0), cols = (int)bc.size(1);
    auto stream = at::cuda::getCurrentCUDAStream();
    if (cols % 4 == 0) {
        dim3 grid((cols / 4 + 255) / 256, rows);
        row_scale4<<<grid, 256, 0, stream>>>(ac.data_ptr<float>(),
            (const float4 *)bc.data_ptr<float>(), (float4 *)c.data_ptr<float>(), cols / 4);
    } else {
        dim3 grid((cols + 255) / 256, rows);
        row_scale<<<grid, 256, 0, stream>>>(ac.data_ptr<float>(), bc.data_ptr<float>(),
                                            c.data_ptr<float>(), cols);
    }
    return c;
}
"""

cpp_src = "torch::Tensor diag_scale(torch::Tensor a, torch::Tensor b);"

ext = load_inline(name="kopt_kb30_diag_scale", cpp_sources=cpp_src, cuda_sources=cuda_src,
                  functions=["diag_scale"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return ext.diag_scale(A, B)
