# kopt's own KernelBench-style problem (elementwise, with a non-tensor input): y = alpha*x + z.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, z, alpha):
        return alpha * x + z


batch = 2048
width = 4096


def get_inputs():
    return [torch.randn(batch, width), torch.randn(batch, width), 0.75]


def get_init_inputs():
    return []
