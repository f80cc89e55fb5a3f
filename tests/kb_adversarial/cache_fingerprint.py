# Caches by a fingerprint of the contents (16 sampled elements of each input, read back to
# the host) and recomputes only when it changes: it notices kopt's refresh of the timed
# buffers without relying on pointers or PyTorch's version counter, so every output it
# returns, the final check call's included, is right. Within a round of timed runs it
# launches no kernel of its own (only the tiny sampling copy), so its median is far below
# what moving the problem's bytes takes: SUSPECT. (The read-back synchronizes inside the
# bracket, so its samples are exposed to the host; they are still a small fraction of the
# bound at this test's sizes.)
# expect: SUSPECT
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
