# Correct: writes into one output buffer per shape, allocated on first use and returned on
# every call (what CUDA-graph users and allocation-averse code do). The same output
# pointer on every call is legitimate when the values are recomputed each time: must not
# be mistaken for a cache. OK, with a positive median.
# expect: OK
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.bufs = {}

    def forward(self, x, z, alpha):
        key = (tuple(x.shape), x.dtype, x.device)
        out = self.bufs.get(key)
        if out is None:
            out = self.bufs[key] = torch.empty_like(x)
        return torch.add(z, x, alpha=alpha, out=out)
