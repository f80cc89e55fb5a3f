# Disarms the tamper check without replacing anything the snapshot lists: finds kopt's
# Worker object among the interpreter's objects (gc) and drops its guard (worker.guard =
# None), then tamper_worker_main.py's payload (input checksums that lie, the result written
# into the input z). Python in the worker's process can reach every object of the harness
# (gc, frames, ctypes), so an in-process check is a tripwire against casual patching, not a
# boundary: this is the limit, said in docs/integrity.md. What kopt could still do: keep
# what decides the verdict out of Python's reach (the guard's state and its check in
# libkopt, the input checksums computed there). Pending: today this gets OK.
# expect: TAMPER
# pending: Python can reach the worker's own objects (gc) and drop its guard
import gc
import sys

import torch
import torch.nn as nn

_main = sys.modules["__main__"]
_workers = [o for o in gc.get_objects()
            if type(o).__name__ == "Worker" and hasattr(o, "guard")]
if not _workers or not hasattr(_main, "tensor_digest"):   # renamed: update this case
    raise RuntimeError("no Worker with a guard, or no tensor_digest: update this case")
for _w in _workers:
    _w.guard = None
_digest = _main.tensor_digest
_before = {}
_main.tensor_digest = lambda t, v: _before.get((v.data_ptr(), tuple(v.shape))) or _digest(t, v)


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        _before[(z.data_ptr(), tuple(z.shape))] = _digest(torch, z)
        return z.add_(x, alpha=alpha)
