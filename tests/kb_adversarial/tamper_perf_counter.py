# Slows the host clock a thousandfold at import (time.perf_counter, perf_counter_ns) and
# computes correctly: any timing read from the host clock would shrink (issue 26's second
# find). The worker snapshots time.perf_counter, perf_counter_ns, monotonic and time before
# the import and compares after it: TAMPER, named.
# expect: TAMPER
# expect-text: perf_counter|timing
import time

import torch
import torch.nn as nn

_pc, _pc_ns = time.perf_counter, time.perf_counter_ns
time.perf_counter = lambda: _pc() / 1000.0
time.perf_counter_ns = lambda: _pc_ns() // 1000


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        return torch.add(z, x, alpha=alpha)
