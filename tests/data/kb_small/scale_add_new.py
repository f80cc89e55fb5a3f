# A correct ModelNew of scale_add.py (one torch.add instead of a multiply and an add).
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x, z):
        return torch.add(z, x, alpha=2.0)
