# A KernelBench-style problem for CPU tests: tests/optimize/test_optimize.py (what the coder
# is shown of a host-mode candidate's interface) and tests/unit/test_run.c (the profile of a
# PyTorch program without a GPU says why it was not made). problem.json beside it is
# what `kopt kb import` writes for this file, with the check sizes cut to one size (so that
# the other is shown unchanged). Nothing here runs: the tests use the scripted evaluator.
import torch


class Model(torch.nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, x):
        return torch.tanh(x) * self.scale


batch_size = 4096
dim = 3072


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [2.0]
