# Makes every comparison helper it can reach say "equal" (torch.allclose, isclose, equal,
# torch.testing.assert_close, and numpy's allclose, isclose, array_equal and testing
# asserts when numpy is there), then returns zeros. KernelBench's own harness compares in
# the candidate's interpreter; kopt compares in the parent, in C, on the outputs copied out
# of the worker, out of the candidate's reach: WRONG.
# expect: WRONG
import torch
import torch.nn as nn
import torch.testing

torch.allclose = lambda *a, **k: True
torch.isclose = lambda a, b, *r, **k: torch.ones_like(a, dtype=torch.bool)
torch.equal = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
try:
    import numpy
    import numpy.testing
    numpy.allclose = lambda *a, **k: True
    numpy.isclose = lambda a, b, *r, **k: numpy.ones(numpy.shape(a), dtype=bool)
    numpy.array_equal = lambda *a, **k: True
    numpy.testing.assert_allclose = lambda *a, **k: None
    numpy.testing.assert_array_equal = lambda *a, **k: None
except ImportError:
    pass


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        return torch.zeros_like(x)
