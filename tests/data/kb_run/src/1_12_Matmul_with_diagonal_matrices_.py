# kopt's restatement of KernelBench level 1, problem 12 (same computation, sizes and input
# distributions; written for kopt's tests): diag(A) @ B without forming the diagonal matrix,
# i.e. row i of B scaled by A[i].
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return A.unsqueeze(1) * B


M = 4096
N = 4096


def get_inputs():
    return [torch.rand(N), torch.rand(N, M)]


def get_init_inputs():
    return []
