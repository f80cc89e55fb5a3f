"""The tamper check of kopt's PyTorch worker: what the harness relies on, remembered before
the candidate is imported and compared after its import and after each of its calls
(docs/integrity.md, "The PyTorch path"). A candidate's Python runs in the worker's process
and could replace any function; the ones kopt's timing, checksums and output copies use
must still be kopt's own when it returns, or the verdict is TAMPER naming what changed.

Remembered: the clocks (time.*), torch's event, stream and synchronization functions, the
tensor methods the harness calls, json/os/ctypes functions on the reporting path, every
function and class (with its methods and their code objects) of kopt's own worker modules,
and libkopt's clock functions bound through ctypes (object and address). The sandbox's
watch (kopt_torch_sandbox.py) covers the machine code of the driver's event functions and
libkopt's clock.
"""
import ctypes
import inspect
import json
import os
import time
import types

_static = inspect.getattr_static      # bound before any candidate exists
_MISSING = object()

TIME_FUNCS = ("perf_counter", "perf_counter_ns", "time", "time_ns", "monotonic",
              "monotonic_ns", "sleep")
TORCH_CUDA_FUNCS = ("synchronize", "_sleep", "current_stream", "Event", "Stream",
                    "set_device", "mem_get_info", "get_device_properties")
EVENT_METHODS = ("record", "elapsed_time", "query", "synchronize", "wait")
# torch._dynamo (imported by a candidate that uses torch.compile) wraps these with
# functools.wraps: a wrapper of kopt's original is not a replacement (the worker calls the
# original it bound, so a disguised replacement changes nothing either)
WRAPPED_BY_TORCH = ("manual_seed",)
TENSOR_METHODS = ("zero_", "copy_", "fill_", "data_ptr", "contiguous", "view", "reshape",
                  "to", "sum", "numel", "element_size", "detach")


def _entries_of_module(label, mod, out):
    """Every function and class defined in a module of kopt's, with their methods."""
    for name, val in list(vars(mod).items()):
        if isinstance(val, types.FunctionType) and val.__module__ == mod.__name__:
            out.append((label + "." + name, mod, name, val))
        elif isinstance(val, type) and val.__module__ == mod.__name__:
            out.append((label + "." + name, mod, name, val))
            for k, v in list(vars(val).items()):
                if isinstance(v, (types.FunctionType, staticmethod, classmethod, property)):
                    out.append((label + "." + name + "." + k, val, k, v))


class Guard:
    """Remembered objects: (label, owner, attribute, value, code object or None)."""

    def __init__(self, torch, modules, bound=()):
        """`modules`: [(label, module)] of kopt's own; `bound`: [(label, owner, attribute)]
        naming ctypes functions of libkopt's (their object and address are remembered)."""
        raw = []
        for n in TIME_FUNCS:
            raw.append(("time." + n, time, n, _static(time, n, _MISSING)))
        for n in ("dumps", "loads"):
            raw.append(("json." + n, json, n, _static(json, n, _MISSING)))
        for n in ("write", "fdopen", "read"):
            raw.append(("os." + n, os, n, _static(os, n, _MISSING)))
        for n in ("CDLL", "cast", "byref", "c_double"):
            raw.append(("ctypes." + n, ctypes, n, _static(ctypes, n, _MISSING)))
        cuda = torch.cuda
        for n in TORCH_CUDA_FUNCS:
            raw.append(("torch.cuda." + n, cuda, n, _static(cuda, n, _MISSING)))
        for n in EVENT_METHODS:
            raw.append(("torch.cuda.Event." + n, cuda.Event, n,
                        _static(cuda.Event, n, _MISSING)))
        for n in TENSOR_METHODS:
            raw.append(("torch.Tensor." + n, torch.Tensor, n,
                        _static(torch.Tensor, n, _MISSING)))
        for n in ("frombuffer", "empty", "zeros", "full", "manual_seed"):
            raw.append(("torch." + n, torch, n, _static(torch, n, _MISSING)))
        for label, mod in modules:
            _entries_of_module(label, mod, raw)
        self.entries = []
        for label, owner, attr, val in raw:
            fn = val.__func__ if isinstance(val, (staticmethod, classmethod)) else val
            code = getattr(fn, "__code__", None) if isinstance(fn, types.FunctionType) else None
            self.entries.append((label, owner, attr, val, code))
        for label, owner, attr in bound:
            f = _static(owner, attr)
            self.entries.append((label, owner, attr, f, None))
        self.addresses = [(label, owner, attr,
                           ctypes.cast(_static(owner, attr), ctypes.c_void_p).value)
                          for label, owner, attr in bound]

    def check(self):
        """None, or the name of the first remembered object that is no longer kopt's."""
        for label, owner, attr, val, code in self.entries:
            now = _static(owner, attr, _MISSING)
            if now is not val:
                if attr in WRAPPED_BY_TORCH and getattr(now, "__wrapped__", None) is val:
                    continue
                return label
            fn = now.__func__ if isinstance(now, (staticmethod, classmethod)) else now
            if code is not None and getattr(fn, "__code__", None) is not code:
                return label + ".__code__"
        for label, owner, attr, addr in self.addresses:
            if ctypes.cast(_static(owner, attr), ctypes.c_void_p).value != addr:
                return label + " (its address)"
        return None
