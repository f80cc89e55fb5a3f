# The honest candidate: plain PyTorch. It must pass, locked down before its first call.
# expect: OK
# expect-text: "when": "before the first call"
import torch


class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        return torch.addcmul(z, x, torch.full_like(x, alpha))
