# kopt's restatement of KernelBench level 1, problem 4 (same computation, sizes and input
# distributions; written for kopt's tests): an M x K matrix times a K x 1 vector.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 256 * 8
K = 131072 * 8


def get_inputs():
    return [torch.rand(M, K), torch.rand(K, 1)]


def get_init_inputs():
    return []
