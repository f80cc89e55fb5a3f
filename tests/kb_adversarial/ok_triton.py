# Correct: a Triton kernel (compiled at its first call per shape, before the lockdown: the
# worker calls a candidate that loaded Triton once per size set first), masked for the odd
# check sizes. OK, with a positive median.
# expect: OK
# needs: triton
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_add_kernel(x_ptr, z_ptr, out_ptr, alpha, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    z = tl.load(z_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * alpha + z, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        x, z = x.contiguous(), z.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        scale_add_kernel[(triton.cdiv(n, 4096),)](x, z, out, alpha, n, BLOCK=4096)
        return out
