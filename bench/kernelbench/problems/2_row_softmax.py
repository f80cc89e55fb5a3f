# kopt's own KernelBench-style problem (level 1 style): softmax along each row.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


rows = 4096
cols = 2048


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return []
