"""The lockdown of kopt's PyTorch worker: libkopt's kopt_sandbox_lockdown() (include/kopt/
sandbox.h), called through ctypes once the candidate is built and before it first runs
(docs/kernelbench.md, "The sandbox"). The job's "sandbox" object names libkopt.so ("lib", or
"lib_error" when the parent found none) and the limits counted from the lockdown on.

After the lockdown a forbidden system call (a new process, execve, a network socket, a
signal to another process, ptrace, a clock change) never runs: libkopt's SIGSYS handler
writes a "tamper" event on the event pipe and ends the worker. check() after each call
sees a changed signal handler (one that would swallow SIGSYS) or patched timer code.
"""
import ctypes
import json

NO_WX, END_CHILDREN = 1, 2   # KOPT_SANDBOX_* (include/kopt/sandbox.h)

HINT = ("; a candidate runs locked down from its first call on: compile (load_inline, "
        "Triton) at import or in __init__, and start no processes")


class Opts(ctypes.Structure):
    """kopt_sandbox_opts (include/kopt/sandbox.h)"""
    _fields_ = [("cpu_s", ctypes.c_double), ("fsize_mb", ctypes.c_double),
                ("as_extra_mb", ctypes.c_double), ("flags", ctypes.c_int32),
                ("hint", ctypes.c_char_p)]


class Sandbox:
    def __init__(self, spec):
        self.lock = (spec or {}).get("lockdown") or {}
        self.lib = None          # libkopt, once locked down
        self.report = None       # what was applied (the result's "sandbox"), once tried

    def _load(self):
        path = self.lock.get("lib")
        if not path:
            raise OSError(self.lock.get("lib_error") or "the job names no libkopt.so")
        lib = ctypes.CDLL(path)
        lib.kopt_ctx_new.restype = ctypes.c_void_p
        lib.kopt_ctx_new.argtypes = []
        lib.kopt_ctx_free.argtypes = [ctypes.c_void_p]
        lib.kopt_errmsg.restype = ctypes.c_char_p
        lib.kopt_errmsg.argtypes = [ctypes.c_void_p]
        lib.kopt_sandbox_lockdown.restype = ctypes.c_int
        lib.kopt_sandbox_lockdown.argtypes = [ctypes.c_void_p, ctypes.POINTER(Opts),
                                              ctypes.c_char_p, ctypes.c_size_t]
        lib.kopt_sandbox_watch.argtypes = [ctypes.c_char_p, ctypes.c_void_p]
        lib.kopt_sandbox_check.restype = ctypes.c_int
        lib.kopt_sandbox_check.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        return lib

    def lockdown(self, when, watch=()):
        """Lock this process down; `when` says at which step (for the report), `watch` is
        [(name, address)] of functions whose code must not change. Returns the report; on
        failure it says "locked": false and why, and the process goes on unconfined."""
        try:
            lib = self._load()
        except (OSError, AttributeError) as e:
            self.report = {"locked": False, "when": when,
                           "error": "libkopt's lockdown could not be loaded: %s" % e}
            return self.report
        for name, addr in watch:
            lib.kopt_sandbox_watch(name.encode(), addr)
        opts = Opts(float(self.lock.get("cpu_s", 0)), float(self.lock.get("fsize_mb", 0)),
                    float(self.lock.get("as_extra_mb", 0)),
                    END_CHILDREN | (NO_WX if self.lock.get("no_wx") else 0), HINT.encode())
        buf = ctypes.create_string_buffer(4096)
        ctx = lib.kopt_ctx_new()
        rc = lib.kopt_sandbox_lockdown(ctx, ctypes.byref(opts), buf, len(buf))
        try:
            rep = json.loads(buf.value.decode() or "{}")
        except ValueError:
            rep = {}
        rep["locked"] = rc == 0
        rep["when"] = when
        rep["lib"] = self.lock.get("lib")
        if rc != 0:
            rep["error"] = (lib.kopt_errmsg(ctx) or b"").decode(errors="replace")
        lib.kopt_ctx_free(ctx)
        self.lib = lib if rc == 0 else None
        self.report = rep
        return rep

    def check(self):
        """After a candidate's call: None, or what it changed that it must leave alone."""
        if self.lib is None:
            return None
        buf = ctypes.create_string_buffer(512)
        if self.lib.kopt_sandbox_check(buf, len(buf)):
            return buf.value.decode(errors="replace")
        return None


def cuda_timer_functions():
    """[(name, address)] of the driver's event functions that the timing relies on."""
    try:
        cu = ctypes.CDLL("libcuda.so.1")
        return [(n, ctypes.cast(getattr(cu, n), ctypes.c_void_p).value)
                for n in ("cuEventRecord", "cuEventElapsedTime", "cuEventQuery")]
    except (OSError, AttributeError):
        return []
