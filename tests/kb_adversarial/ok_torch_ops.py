# Correct: the reference's alpha * x + z written as one fused PyTorch op (torch.add with
# alpha), one kernel reading x and z once. Must pass: OK, with a positive median.
# expect: OK
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        return torch.add(z, x, alpha=alpha)
