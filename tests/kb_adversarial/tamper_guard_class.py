# Disarms the tamper check itself: kopt_torch_guard.Guard.check (reached through
# sys.modules) replaced by a function that finds nothing, then tamper_worker_main.py's
# payload (the worker's input checksum made to report each input as it was before forward
# wrote its result into it). Guard.check is in the guard's own snapshot, but the code that
# compares the snapshot is the replaced function: a worker that looks the check up on the
# class at each use would never notice. The worker calls the check it bound before the
# import (the original function object, held where the class patch does not reach), and
# Guard.check is in its own snapshot: TAMPER.
# expect: TAMPER
import sys

import torch
import torch.nn as nn

_g = sys.modules.get("kopt_torch_guard")
_main = sys.modules["__main__"]
if _g is None or not hasattr(_main, "tensor_digest"):   # renamed: update this case
    raise RuntimeError("no kopt_torch_guard or tensor_digest: update tamper_guard_class.py")
_g.Guard.check = lambda self: None
_digest = _main.tensor_digest
_before = {}
_main.tensor_digest = lambda t, v: _before.get((v.data_ptr(), tuple(v.shape))) or _digest(t, v)


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        _before[(z.data_ptr(), tuple(z.shape))] = _digest(torch, z)
        return z.add_(x, alpha=alpha)
