# kopt's restatement of KernelBench level 2, problem 9 (same computation, sizes and input
# distributions; written for kopt's tests): relu((x W^T + b - s) * m).
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features, subtract_value, multiply_value):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.subtract_value = subtract_value
        self.multiply_value = multiply_value

    def forward(self, x):
        return torch.relu((self.linear(x) - self.subtract_value) * self.multiply_value)


batch_size = 1024
in_features = 8192
out_features = 8192
subtract_value = 2.0
multiply_value = 1.5


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, subtract_value, multiply_value]
