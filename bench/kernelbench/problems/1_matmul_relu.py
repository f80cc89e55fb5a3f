# kopt's own KernelBench-style problem (level 1 style): C = relu(A @ B).
import torch
import torch.nn as nn


class Model(nn.Module):
    """Multiplies an M x K matrix by a K x N matrix and clamps negatives to zero."""

    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.relu(torch.matmul(A, B))


M = 1024
K = 512
N = 768


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
