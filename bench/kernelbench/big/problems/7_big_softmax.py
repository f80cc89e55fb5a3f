# kopt's own KernelBench-style problem at the size of level 1's softmax: a row softmax over
# 4096 x 393216 fp32 (6.4 GB in, 6.4 GB out), for the evaluation-speed benchmark (issue 27).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)


batch_size = 4096
dim = 393216


def get_inputs():
    return [torch.rand(batch_size, dim)]


def get_init_inputs():
    return []
