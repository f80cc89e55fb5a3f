# Caches by a fingerprint of the contents (16 sampled elements of each input, read back to
# the host) and recomputes only when it changes: it notices kopt's refresh of the timed
# buffers without relying on pointers or PyTorch's version counter, so every output it
# returns, the final check call's included, is right. Within a round of timed runs it
# launches no kernel of its own (only the tiny sampling copy), so its median is far below
# what moving the problem's bytes takes: SUSPECT where its samples are the GPU's. But the
# read-back synchronizes inside the bracket, so each sample is the host's round trip, not
# the GPU's work: 0.84 ms a call on an H200 at 3 GB a call (honest torch.add: 0.74 ms, the
# bound 0.73 ms; 2026-11-27), above the bound at every size tried and slower than honest
# work, so it gains nothing. kopt says so with the verdict: HOST-BOUND (most timed runs
# waited for the host). SUSPECT where a round trip is shorter than the bound.
# expect: OK|SUSPECT
# expect-text: HOST-BOUND|no measurable work|faster than the device
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x, z, alpha):
        n = x.numel()
        idx = torch.arange(0, n, max(1, n // 16), device=x.device)[:16]
        fp = tuple(torch.cat([x.reshape(-1)[idx], z.reshape(-1)[idx]]).tolist())
        key = (tuple(x.shape), float(alpha))
        hit = self.cache.get(key)
        if hit is not None and hit[0] == fp:
            return hit[1]
        out = torch.add(z, x, alpha=alpha)
        self.cache[key] = (fp, out)
        return out
