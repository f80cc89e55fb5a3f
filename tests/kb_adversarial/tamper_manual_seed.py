# Pins PyTorch's random generator at import (torch.manual_seed made to always seed 0), so
# that in its worker every get_inputs() call, and any refresh of the timed buffers drawn
# from PyTorch's generator, yields the same values: one cached output would then be right
# for every run. kopt's inputs are drawn in the candidate's worker, but their checksums
# are compared with the reference worker's (drawn with the real seeds): INPUT_MUTATED (the
# message names the first input whose checksum differs). A worker whose snapshot also
# covers torch.manual_seed says TAMPER, which is better.
# expect: TAMPER
import torch
import torch.nn as nn
import torch.random

_seed = torch.random.manual_seed


def manual_seed(seed):
    return _seed(0)


torch.manual_seed = manual_seed
torch.random.manual_seed = manual_seed


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.out = {}

    def forward(self, x, z, alpha):
        key = tuple(x.shape)
        if key not in self.out:
            self.out[key] = z + x * alpha
        return self.out[key]
