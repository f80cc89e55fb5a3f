# Replaces torch.cuda.Event.elapsed_time, at import, with a version that divides by 1000,
# and computes correctly: issue 26's first find (verdict OK, median 0.0 ms). kopt's timed
# runs no longer read torch.cuda.Event (libkopt's CUDA events, bound through ctypes before
# this file is imported), and the worker snapshots torch.cuda.Event and its methods before
# the import and compares them after it: a replaced timing object is TAMPER, named.
# expect: TAMPER
# expect-text: elapsed_time|timing
import torch
import torch.nn as nn

_elapsed = torch.cuda.Event.elapsed_time


def _elapsed_fast(self, end_event):
    return _elapsed(self, end_event) / 1000.0


torch.cuda.Event.elapsed_time = _elapsed_fast


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        return z + x * alpha
