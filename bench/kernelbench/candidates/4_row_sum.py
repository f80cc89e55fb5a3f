# KernelBench-native candidate for 4_row_sum: ModelNew with a Triton kernel, one program
# per row.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_sum_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, cols, BLOCK):
        m = start + offs < cols
        acc += tl.load(x_ptr + row * cols + start + offs, mask=m, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty((x.shape[0], 1), device=x.device, dtype=x.dtype)
        row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=1024)
        return out
