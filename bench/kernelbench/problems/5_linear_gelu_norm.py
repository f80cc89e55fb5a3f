# kopt's own KernelBench-style problem (level 2 style, with parameters): a linear layer,
# GELU, then LayerNorm over the features.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x):
        return self.norm(torch.nn.functional.gelu(self.fc(x)))


tokens = 2048
in_features = 1024
out_features = 512


def get_inputs():
    return [torch.randn(tokens, in_features)]


def get_init_inputs():
    return [in_features, out_features]
