# Remembers its output per (x.data_ptr(), z.data_ptr(), shape) and returns it without
# computing when the same buffers come back: issue 26's third find (OK, median 0.0 ms).
# Across trials the inputs are fresh tensors (a buffer comes back only for the repeat of
# trial 0, with the same values), so the trials pass; in the timed runs the two rotating
# buffers keep their addresses while kopt refreshes their contents in place, and the final
# check call, on a buffer refreshed with the timing seed's inputs, gets an output computed
# for other values: WRONG at the timed run.
# expect: WRONG
# expect-text: (timed)
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x, z, alpha):
        key = (x.data_ptr(), z.data_ptr(), tuple(x.shape), float(alpha))
        out = self.cache.get(key)
        if out is None:
            out = z + x * alpha
            self.cache[key] = out
        return out
