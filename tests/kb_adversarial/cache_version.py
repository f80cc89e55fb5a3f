# Caches per buffer and recomputes only when a buffer's contents changed, as PyTorch's own
# version counter tells (tensor._version, bumped by every in-place write: kopt's copy_
# refresh included). Its outputs are right, the final check call included (recomputed after
# the refresh), but almost every timed run returns the cached tensor without launching a
# kernel: a median at or below zero after the event overhead, or below the problem's
# speed-of-light bound, is SUSPECT.
# expect: SUSPECT
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}   # (pointers, shape) -> (versions, output): one entry per buffer pair

    def forward(self, x, z, alpha):
        key = (x.data_ptr(), z.data_ptr(), tuple(x.shape), float(alpha))
        ver = (x._version, z._version)
        hit = self.cache.get(key)
        if hit is not None and hit[0] == ver:
            return hit[1]
        out = torch.add(z, x, alpha=alpha)
        self.cache[key] = (ver, out)
        return out
