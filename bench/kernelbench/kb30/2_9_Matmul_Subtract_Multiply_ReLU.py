# KernelBench-native candidate (ModelNew, inline CUDA through load_inline) for level 2
# problem 9, imported as 2_9_Matmul_Subtract_Multiply_ReLU: the same nn.Linear (declared
# as the Model declares it, so the seed gives the same weights), its GEMM without the bias
# (torch.mm, plain FP32 as eager), then one fused in-place pass for bias, subtract,
# multiply and ReLU instead of eager's three elementwise kernels after addmm.
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_src = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void epilogue(float *y, const float *bias, long long n, int cols, float sub,
                         float mul)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = fmaxf((y[i] + bias[i % cols] - sub) * mul, 0.f);
}

torch::Tensor bias_sub_mul_relu_(torch::Tensor y, torch::Tensor bias, double sub, double mul)
{
    TORCH_CHECK(y.is_cuda() && y.is_contiguous() && y.scalar_type() == torch::kFloat32,
                "a contiguous f32 tensor on the GPU");
    auto b = bias.contiguous();
    long long n = y.numel();
    int cols = (int)y.size(-1);
    epilogue<<<(unsigned)((n + 255) / 256), 256, 0, at::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), b.data_ptr<float>(), n, cols, (float)sub, (float)mul);
    return y;
}
"""

cpp_src = ("torch::Tensor bias_sub_mul_relu_(torch::Tensor y, torch::Tensor bias, double sub, "
           "double mul);")

ext = load_inline(name="kopt_kb30_bias_sub_mul_relu", cpp_sources=cpp_src,
                  cuda_sources=cuda_src, functions=["bias_sub_mul_relu_"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, subtract_value, multiply_value):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value

    def forward(self, x):
        y = torch.mm(x, self.linear.weight.t())
        return ext.bias_sub_mul_relu_(y, self.linear.bias, self.subtract_value,
                                      self.multiply_value)
