"""libkopt through ctypes: finding and loading the library, its ABI check, and calls that
take JSON and give JSON (kopt_mcp_call, kopt_mcp_session_*; include/kopt/mcp.h), run on a
thread so that Ctrl-C (KeyboardInterrupt) can stop a run cleanly."""
from __future__ import annotations

import ctypes
import json
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

#: The libkopt binary interface this package is written for (KOPT_ABI_VERSION, kopt/core.h).
ABI_VERSION = 1

_HERE = os.path.dirname(os.path.abspath(__file__))
_SONAME = "libkopt.so.0"


class KoptError(Exception):
    """kopt failed: its message (naming the file and field, "problem.json: sizes.N: ...")
    and its status ("invalid input", ...)."""

    def __init__(self, message: str, status: str = "error") -> None:
        super().__init__(message)
        self.message = message
        self.status = status


#: kopt_mcp_opts.progress: (user, progress, total, message)
_ProgressFn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_double, ctypes.c_double,
                               ctypes.c_char_p)


class _McpOpts(ctypes.Structure):
    # kopt_mcp_opts (include/kopt/mcp.h), version 2
    _fields_ = [("version", ctypes.c_int), ("db_path", ctypes.c_char_p),
                ("examples_dir", ctypes.c_char_p), ("cache_dir", ctypes.c_char_p),
                ("max_tune_budget", ctypes.c_int), ("replay_delay_ms", ctypes.c_double),
                ("progress", _ProgressFn), ("progress_user", ctypes.c_void_p)]


@dataclass(frozen=True)
class Progress:
    """A long call's progress (a tune's evaluations, an optimize step's lines, a bench's
    rows; what an MCP client's progress notifications carry): `done` of `total`
    (0: not known) and what is going on. str() is the line to show: print works."""
    done: float
    total: float
    message: str

    def __str__(self) -> str:
        if self.total > 0:
            return "[%g/%g] %s" % (self.done, self.total, self.message)
        return self.message


ProgressCallback = Callable[[Progress], None]


class ProgressGuard:
    """A progress callback called until it first raises: that error is kept in `error` (to
    be raised when the call is done) and it is not called again, so a broken callback
    neither stops a run half-way nor leaves a pipe undrained. None: a callback that does
    nothing."""

    def __init__(self, fn: Optional[ProgressCallback]) -> None:
        self.fn = fn
        self.error: Optional[BaseException] = None

    def __call__(self, p: Progress) -> None:
        if self.fn is None or self.error is not None:
            return
        try:
            self.fn(p)
        except Exception as e:   # noqa: BLE001 (raised when the call is done)
            self.error = e

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error


def _nvidia_lib_dirs() -> list:
    """The lib folders of NVIDIA's pip packages (nvidia-cuda-nvrtc, nvidia-curand, ...):
    CUDA 13's share nvidia/cu13/lib, CUDA 12's have one folder each."""
    dirs = []
    try:
        import nvidia  # namespace package of NVIDIA's wheels
        roots = list(getattr(nvidia, "__path__", []))
    except ImportError:
        roots = []
    for root in roots:
        for sub in ("cu13/lib", "cuda_nvrtc/lib", "curand/lib", "cuda_runtime/lib"):
            d = os.path.join(root, sub)
            if os.path.isdir(d) and d not in dirs:
                dirs.append(d)
    return dirs


def _nvidia_bin_dirs() -> list:
    try:
        import nvidia
        roots = list(getattr(nvidia, "__path__", []))
    except ImportError:
        roots = []
    out = []
    for root in roots:
        for sub in ("cu13/bin", "cuda_nvcc/bin"):
            d = os.path.join(root, sub)
            if os.path.isfile(os.path.join(d, "nvcc")):
                out.append(d)
    return out


def cuda_environment() -> None:
    """Point kopt (and the workers it starts) at NVIDIA's pip packages when they are
    installed: $KOPT_CUDA_LIBS for NVRTC and cuRAND (tried after a toolkit's), nvcc on
    $PATH when no toolkit provides one, $CUDA_HOME for its headers."""
    libs = _nvidia_lib_dirs()
    if libs and not os.environ.get("KOPT_CUDA_LIBS"):
        os.environ["KOPT_CUDA_LIBS"] = os.pathsep.join(libs)
    bins = _nvidia_bin_dirs()
    have_nvcc = any(os.access(os.path.join(p, "nvcc"), os.X_OK)
                    for p in os.environ.get("PATH", "").split(os.pathsep) if p) or \
        os.path.exists("/usr/local/cuda/bin/nvcc")
    if bins and not have_nvcc:
        os.environ["PATH"] = os.pathsep.join(bins + [os.environ.get("PATH", "")])
        if not os.environ.get("CUDA_HOME"):
            os.environ["CUDA_HOME"] = os.path.dirname(bins[0])


def library_path() -> str:
    """Where libkopt is: $KOPT_LIB, else the wheel's kopt/lib/, else a build tree's build/
    (a checkout: python/kopt beside build/)."""
    env = os.environ.get("KOPT_LIB")
    if env:
        return env
    for cand in (os.path.join(_HERE, "lib", _SONAME),
                 os.path.join(_HERE, "..", "..", "build", _SONAME)):
        if os.path.exists(cand):
            return os.path.abspath(cand)
    raise KoptError("libkopt not found (looked at %s/lib/%s and the build tree); set $KOPT_LIB"
                    % (_HERE, _SONAME), "not found")


class _Lib:
    def __init__(self) -> None:
        cuda_environment()
        self.path = library_path()
        try:
            lib = ctypes.CDLL(self.path)
        except OSError as e:
            raise KoptError("cannot load libkopt (%s): %s" % (self.path, e), "not found")
        if not hasattr(lib, "kopt_abi_version"):
            raise KoptError("%s is a libkopt without kopt_abi_version(): an older kopt than "
                            "this package (ABI %d); install matching versions"
                            % (self.path, ABI_VERSION), "unsupported")
        lib.kopt_abi_version.restype = ctypes.c_int
        abi = lib.kopt_abi_version()
        lib.kopt_version_string.restype = ctypes.c_char_p
        self.version = lib.kopt_version_string().decode()
        if abi != ABI_VERSION:
            raise KoptError("%s has ABI version %d (kopt %s), this package needs %d: install "
                            "the kopt wheel that matches it" % (self.path, abi, self.version,
                                                                 ABI_VERSION), "unsupported")
        vp = ctypes.c_void_p
        cp = ctypes.c_char_p
        lib.kopt_ctx_new.restype = vp
        lib.kopt_ctx_free.argtypes = [vp]
        lib.kopt_errmsg.restype = cp
        lib.kopt_errmsg.argtypes = [vp]
        lib.kopt_status_str.restype = cp
        lib.kopt_status_str.argtypes = [ctypes.c_int]
        out = ctypes.POINTER(vp)
        lib.kopt_mcp_call.restype = ctypes.c_int
        lib.kopt_mcp_call.argtypes = [vp, ctypes.POINTER(_McpOpts), cp, cp,
                                      ctypes.POINTER(ctypes.c_int), out, out]
        lib.kopt_mcp_session_open.restype = ctypes.c_int
        lib.kopt_mcp_session_open.argtypes = [out, vp, ctypes.POINTER(_McpOpts), cp]
        lib.kopt_mcp_session_eval.restype = ctypes.c_int
        lib.kopt_mcp_session_eval.argtypes = [vp, vp, cp, out]
        lib.kopt_mcp_session_close.argtypes = [vp]
        self.lib = lib
        self.libc = ctypes.CDLL(None)
        self.libc.free.argtypes = [vp]

    def take(self, p: Optional[int]) -> Optional[str]:
        """A malloc'd string from the library, read and freed."""
        if not p:
            return None
        s = ctypes.string_at(p).decode("utf-8", "replace")
        self.libc.free(p)
        return s

    def error(self, ctx: int, rc: int) -> KoptError:
        msg = (self.lib.kopt_errmsg(ctx) or b"").decode("utf-8", "replace")
        status = (self.lib.kopt_status_str(rc) or b"error").decode()
        return KoptError(msg or status, status)


_lib: Optional[_Lib] = None
_lock = threading.Lock()


def lib() -> _Lib:
    """The loaded library (loaded and checked on first use)."""
    global _lib
    with _lock:
        if _lib is None:
            _lib = _Lib()
        return _lib


def mcp_opts(db: Optional[str], cache_dir: Optional[str] = None,
             examples_dir: Optional[str] = None, replay_delay_ms: float = 0.0,
             progress: Optional[ProgressCallback] = None) -> _McpOpts:
    """The library's options for a call; `progress` gets each Progress (from a thread of the
    call, through a ProgressGuard: the options' `progress_guard`)."""
    guard = progress if isinstance(progress, ProgressGuard) else ProgressGuard(progress)

    def relay(_user: Any, done: float, total: float, message: Optional[bytes]) -> None:
        guard(Progress(done, total, (message or b"").decode("utf-8", "replace")))

    fn = _ProgressFn(relay) if progress else _ProgressFn()
    o = _McpOpts(2, db.encode() if db else None,
                 examples_dir.encode() if examples_dir else None,
                 cache_dir.encode() if cache_dir else None, 1 << 30, replay_delay_ms, fn, None)
    o._keep = fn   # the C callback lives as long as the options
    o.progress_guard = guard
    return o


def run_interruptible(fn, stop: Optional[ctypes.c_int] = None):
    """fn() on a thread of its own; Ctrl-C sets `stop` (the call ends after its current
    evaluation, what it did stays stored), waits for it, then raises KeyboardInterrupt."""
    box: Dict[str, Any] = {}
    done = threading.Event()

    def body() -> None:
        try:
            box["value"] = fn()
        except BaseException as e:  # handed to the caller's thread
            box["error"] = e
        finally:
            done.set()

    t = threading.Thread(target=body, name="kopt-call", daemon=True)
    t.start()
    interrupted = False
    # an Event, not Thread.join: a join interrupted by Ctrl-C can take the thread for ended
    while not done.is_set():
        try:
            done.wait(0.1)
        except KeyboardInterrupt:
            interrupted = True
            if stop is not None:
                stop.value = 1
    if interrupted:
        raise KeyboardInterrupt
    if "error" in box:
        raise box["error"]
    return box.get("value")


def call(tool: str, args: Dict[str, Any], db: Optional[str] = None,
         cache_dir: Optional[str] = None, examples_dir: Optional[str] = None,
         replay_delay_ms: float = 0.0,
         progress: Optional[ProgressCallback] = None) -> Dict[str, Any]:
    """One of kopt's tools in-process (kopt_mcp_call): its structured result as a dict;
    `progress` gets the call's progress messages."""
    L = lib()
    opts = mcp_opts(db, cache_dir, examples_dir, replay_delay_ms, progress)
    text = json.dumps({k: v for k, v in args.items() if v is not None}).encode()
    stop = ctypes.c_int(0)

    def go() -> Dict[str, Any]:
        ctx = L.lib.kopt_ctx_new()
        out, summary = ctypes.c_void_p(), ctypes.c_void_p()
        try:
            rc = L.lib.kopt_mcp_call(ctx, ctypes.byref(opts), tool.encode(), text,
                                     ctypes.byref(stop), ctypes.byref(out),
                                     ctypes.byref(summary))
            if rc != 0:
                raise L.error(ctx, rc)
            doc = json.loads(L.take(out.value) or "{}")
            s = L.take(summary.value)
            if s is not None:
                doc.setdefault("_summary", s)
            return doc
        finally:
            L.lib.kopt_ctx_free(ctx)

    doc = run_interruptible(go, stop)
    if not isinstance(progress, ProgressGuard):   # a caller's own guard raises at its end
        opts.progress_guard.raise_error()
    return doc
