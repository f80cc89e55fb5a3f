# Computes for its first six calls at each shape, then returns the last output without
# computing: issue 26's fourth find (OK). The trials (three calls a shape, the repeat
# included) and the first warm-up runs compute; the rest replay. kopt's final check call
# after the timed runs is on a buffer refreshed with the timing seed's inputs, and its
# output is compared with the reference's for those inputs: WRONG at the timed run.
# (Computing anew for each new shape keeps it right at the check sizes.)
# expect: WRONG
# expect-text: (timed)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = {}
        self.last = {}

    def forward(self, x, z, alpha):
        key = tuple(x.shape)
        self.calls[key] = self.calls.get(key, 0) + 1
        if self.calls[key] > 6:
            return self.last[key]
        self.last[key] = z + x * alpha
        return self.last[key]
