# lazy_output.py's deferred output (computed when the worker first touches it, outside the
# timed bracket) plus a stand-in kernel inside the bracket that keeps the GPU busy for
# twice what moving the problem's bytes takes at 3 TB/s: the median looks plausible (above
# the speed-of-light bound), the values are right, and the real work never ran in a timed
# window. On this memory-bound problem it is no faster than an honest kernel; on a
# compute-bound one (a matmul) the same trick would report any time it likes. What the
# harness does: it accepts only outputs whose type is exactly torch.Tensor (a subclass's
# __torch_function__ would run the candidate's code inside the worker's own checks), and
# any other is WRONG, naming the type.
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
    def __init__(self):
        super().__init__()
        self.cycles_per_ms = None

    def forward(self, x, z, alpha):
        if self.cycles_per_ms is None:
            p = torch.cuda.get_device_properties(x.device)
            self.cycles_per_ms = float(getattr(p, "clock_rate", 0) or 1.98e6)   # kHz
        ms = 2.0 * 3 * x.numel() * x.element_size() / 3.0e9   # 2x the bytes at 3 TB/s
        torch.cuda._sleep(int(ms * self.cycles_per_ms))
        return Deferred.of(x, z, alpha)
