"""kopt.Session: many evaluations of one problem with one set of workers (kopt_run_session
through kopt_mcp_session_*): one seed, the reference run once, device-code candidates in
one long-lived worker. Its calls run on one thread of its own (kopt's workers end with the
thread that started them)."""
from __future__ import annotations

import concurrent.futures
import ctypes
import json
import os
from typing import Any, Dict, Optional, Union

from . import _lib
from .result import Result

PathLike = Union[str, "os.PathLike[str]"]


class Session:
    """Evaluate many candidates of one problem::

        with kopt.Session("examples/softmax") as s:
            for c in candidates:
                print(s.eval(c).verdict)

    Every evaluation is stored in `db` under one run. Trials share the session's seed: what a
    search needs to compare candidates; a final kopt.eval checks the winner on fresh inputs.
    """

    def __init__(self, problem: PathLike, *, sizes: Optional[Dict[str, int]] = None,
                 seed: Optional[int] = None, trials: Optional[int] = None,
                 device: Optional[int] = None, no_timing: bool = False,
                 db: Optional[str] = "kopt.db") -> None:
        self._L = _lib.lib()
        self._opts = _lib.mcp_opts(db)
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="kopt-session")
        self._h = ctypes.c_void_p()
        args = {"problem": os.fspath(problem), "sizes": dict(sizes) if sizes else None,
                "seed": seed, "trials": trials, "device": device,
                "no_timing": no_timing or None}
        text = json.dumps({k: v for k, v in args.items() if v is not None}).encode()

        def open_() -> None:
            ctx = self._L.lib.kopt_ctx_new()
            try:
                rc = self._L.lib.kopt_mcp_session_open(ctypes.byref(self._h), ctx,
                                                       ctypes.byref(self._opts), text)
                if rc != 0:
                    raise self._L.error(ctx, rc)
            finally:
                self._L.lib.kopt_ctx_free(ctx)

        try:
            self._wait(open_)
        except BaseException:
            self._pool.shutdown()
            raise
        self.evaluations = 0

    def _wait(self, fn):
        fut = self._pool.submit(fn)
        return _lib.run_interruptible(fut.result)

    def eval(self, candidate: Optional[PathLike] = None, *, source: Optional[str] = None,
             tag: Optional[str] = None) -> Result:
        """Evaluate one candidate (a file, or `source`: CUDA text) in the session."""
        if not self._h:
            raise _lib.KoptError("the session is closed", "invalid input")
        args: Dict[str, Any] = {}
        if candidate is not None:
            args["candidate_path"] = os.fspath(candidate)
        if source is not None:
            args["candidate_source"] = source
        if tag is not None:
            args["tag"] = tag
        text = json.dumps(args).encode()

        def go() -> Dict[str, Any]:
            ctx = self._L.lib.kopt_ctx_new()
            out = ctypes.c_void_p()
            try:
                rc = self._L.lib.kopt_mcp_session_eval(self._h, ctx, text, ctypes.byref(out))
                if rc != 0:
                    raise self._L.error(ctx, rc)
                return json.loads(self._L.take(out.value) or "{}")
            finally:
                self._L.lib.kopt_ctx_free(ctx)

        r = Result.from_json(self._wait(go))
        self.evaluations += 1
        return r

    def close(self) -> None:
        """End the workers and finish the run (also done by `with` and at exit)."""
        if self._h:
            h, self._h = self._h, ctypes.c_void_p()
            self._pool.submit(self._L.lib.kopt_mcp_session_close, h).result()
        self._pool.shutdown()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass
