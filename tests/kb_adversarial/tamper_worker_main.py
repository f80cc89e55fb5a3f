# Patches the worker itself through sys.modules['__main__'] (kopt_torch_worker.py runs as a
# script): its input checksum function returns the digest each input had *before* forward
# wrote to it, so computing the output in place into the input z (saving an allocation)
# would no longer be INPUT_MUTATED. The outputs are right; only kopt's own check is
# disarmed. The worker snapshots its own classes and functions before the import and
# compares them after it and after every call: TAMPER, named.
# expect: TAMPER
# expect-text: tensor_digest|timing
import sys

import torch
import torch.nn as nn

_main = sys.modules["__main__"]
if not hasattr(_main, "tensor_digest"):   # renamed: this case must be updated
    raise RuntimeError("__main__ has no tensor_digest: update tamper_worker_main.py")
_digest = _main.tensor_digest
_before = {}


def tensor_digest(torch_mod, v):
    key = (v.data_ptr(), tuple(v.shape))
    return _before.get(key) or _digest(torch_mod, v)


_main.tensor_digest = tensor_digest


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        _before[(z.data_ptr(), tuple(z.shape))] = _digest(torch, z)
        return z.add_(x, alpha=alpha)   # in place: the input z is the output
