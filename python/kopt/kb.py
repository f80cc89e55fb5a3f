"""KernelBench: import problem files (a PyTorch Model with get_inputs/get_init_inputs) into
kopt problems (kopt_kb_import, include/kopt/kb.h)."""
from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from typing import List, Optional, Union

from . import _lib

PathLike = Union[str, "os.PathLike[str]"]


class _Opts(ctypes.Structure):
    # kopt_kb_import_opts
    _fields_ = [("atol", ctypes.c_double), ("rtol", ctypes.c_double),
                ("prefix", ctypes.c_char_p), ("device", ctypes.c_char_p),
                ("timeout_s", ctypes.c_double)]


class _Record(ctypes.Structure):
    # kopt_kb_import_record
    _fields_ = [("file", ctypes.c_char_p), ("problem", ctypes.c_char_p),
                ("error", ctypes.c_char_p), ("has_flops", ctypes.c_int),
                ("bytes", ctypes.c_double), ("flops", ctypes.c_double),
                ("sizes", ctypes.c_char_p), ("check_sizes", ctypes.c_char_p),
                ("check_sizes_note", ctypes.c_char_p), ("check_sizes_error", ctypes.c_char_p)]


@dataclass
class Imported:
    """One KernelBench file's outcome: the problem folder written, or why not."""
    file: str
    problem: Optional[str]
    error: Optional[str]
    bytes: float
    flops: Optional[float]
    sizes: Optional[str]
    check_sizes: Optional[str]

    @property
    def ok(self) -> bool:
        return self.problem is not None


def _s(b: Optional[bytes]) -> Optional[str]:
    return b.decode("utf-8", "replace") if b is not None else None


def import_(path: PathLike, out: PathLike, *, atol: float = 1e-2, rtol: float = 1e-2,
            prefix: Optional[str] = None, device: Optional[str] = None,
            timeout_s: float = 1800.0) -> List[Imported]:
    """Import a KernelBench problem file (or a folder of them) into `out`, one problem folder
    per file (`kopt kb import PATH --out DIR`). Needs Python with PyTorch (the modules run
    on the CPU by default). Raises KoptError when the importer could not run."""
    L = _lib.lib()
    f = L.lib.kopt_kb_import
    f.restype = ctypes.c_int
    f.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.POINTER(_Opts),
                  ctypes.POINTER(ctypes.POINTER(_Record)), ctypes.POINTER(ctypes.c_int)]
    L.lib.kopt_kb_import_free.argtypes = [ctypes.POINTER(_Record), ctypes.c_int]
    opts = _Opts(atol, rtol, prefix.encode() if prefix else None,
                 device.encode() if device else None, timeout_s)
    recs = ctypes.POINTER(_Record)()
    n = ctypes.c_int(0)

    def go() -> List[Imported]:
        ctx = L.lib.kopt_ctx_new()
        try:
            rc = f(ctx, os.fspath(path).encode(), os.fspath(out).encode(), ctypes.byref(opts),
                   ctypes.byref(recs), ctypes.byref(n))
            if rc != 0:
                raise L.error(ctx, rc)
            res = []
            for i in range(n.value):
                r = recs[i]
                res.append(Imported(_s(r.file) or "", _s(r.problem), _s(r.error), r.bytes,
                                    r.flops if r.has_flops else None, _s(r.sizes),
                                    _s(r.check_sizes)))
            return res
        finally:
            L.lib.kopt_kb_import_free(recs, n.value)
            L.lib.kopt_ctx_free(ctx)

    return _lib.run_interruptible(go)
