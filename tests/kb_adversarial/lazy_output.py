# Returns a torch.Tensor subclass whose values are computed only when something first uses
# it (its __torch_function__ runs on the worker's first look at it: the shape check or the
# copy of the outputs, after the timed bracket). isinstance(out, torch.Tensor) holds, the
# shape, dtype and device are right and so are the values, each computed from the inputs
# as they are when the worker reads the output. The timed calls launch nothing. The worker
# takes only outputs of exactly torch.Tensor (a subclass would run its own code in kopt's
# checks): WRONG, naming the type.
# expect: WRONG
import torch
import torch.nn as nn


class Deferred(torch.Tensor):
    @staticmethod
    def of(x, z, alpha):
        t = torch.Tensor._make_subclass(Deferred, torch.empty_like(x))
        t._job = (x, z, alpha)
        return t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        for a in list(args) + list(kwargs.values()):
            job = getattr(a, "_job", None) if isinstance(a, Deferred) else None
            if job is not None:
                a._job = None
                x, z, alpha = job
                with torch._C.DisableTorchFunctionSubclass():
                    torch.add(z, x, alpha=alpha, out=a)
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **kwargs)


class ModelNew(nn.Module):
    def forward(self, x, z, alpha):
        return Deferred.of(x, z, alpha)
