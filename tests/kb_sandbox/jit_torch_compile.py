# torch.compile compiles at the first call (Inductor runs a C++ compiler on the CPU): the
# warm-up before the lockdown compiles it, and the locked-down calls run what it built.
# expect: OK
# expect-text: torch._dynamo
# needs: program:g++
import torch


@torch.compile
def fused(x, z, alpha):
    return torch.addcmul(z, x, torch.full_like(x, alpha))


class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        return fused(x, z, alpha)
