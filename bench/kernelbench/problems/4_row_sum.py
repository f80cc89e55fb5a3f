# kopt's own KernelBench-style problem (reduction): the sum of each row, keeping the dim.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return torch.sum(x, dim=self.dim, keepdim=True)


n_rows = 8192
n_cols = 1024
reduce_dim = 1


def get_inputs():
    return [torch.rand(n_rows, n_cols)]


def get_init_inputs():
    return [reduce_dim]
