# KernelBench-native candidate for 3_scale_add: ModelNew with a Triton kernel.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_add_kernel(x_ptr, z_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, alpha * x + z, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, z, alpha):
        x = x.contiguous()
        z = z.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        scale_add_kernel[(triton.cdiv(n, 4096),)](x, z, out, alpha, n, BLOCK=4096)
        return out
