"""kopt for Python: evaluate, profile, tune and optimize CUDA kernels (and KernelBench
ModelNew programs) from Python, over libkopt (ctypes; no second implementation).

    import kopt
    r = kopt.eval("examples/softmax", "examples/softmax/fast.cu")
    print(r.verdict, r.speedup)

See docs/python.md. The package refuses a libkopt of another ABI version (KoptError)."""
from __future__ import annotations

from . import kb
from ._lib import ABI_VERSION, KoptError, Progress
from .api import (DEFAULT_DB, Document, Finding, Profile, Prompt, bench, eval, optimize,
                  profile, run_cli, tune, version)
from .result import Check, Device, Kernel, Result, Roofline, Timing
from .session import Session

__all__ = ["ABI_VERSION", "KoptError", "Progress", "Result", "Check", "Device", "Kernel", "Roofline",
           "Timing", "Session", "Document", "Finding", "Profile", "Prompt", "DEFAULT_DB",
           "eval", "profile", "tune", "optimize", "bench", "kb", "version", "run_cli",
           "__version__"]


def __getattr__(name: str):
    if name == "__version__":   # libkopt's own (checked at first use)
        return version()
    raise AttributeError(name)
