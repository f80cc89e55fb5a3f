# A candidate that loads Triton, which compiles a kernel at its first call (running ptxas
# and a C compiler): it is called once per size set before the lockdown, then locked down.
# expect: OK
# expect-text: after one warm-up call per size set (the candidate loaded triton)
# needs: triton
import torch
import triton  # noqa: F401  (what the worker looks for)


class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        return torch.addcmul(z, x, torch.full_like(x, alpha))
