"""kopt.optimize's own `kopt serve`: started for one call on a private socket, so that the
steps of a search (each its own `kopt optimize --resume`) evaluate their candidates in one
server session, which keeps the reference's workers, run and outputs between steps. Ended
when the call returns or raises. When it cannot start, the steps evaluate in this process
and a RuntimeWarning says why."""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
import warnings
from typing import Iterator, Optional

from . import _lib
from ._programs import program

#: How long a starting server may take before its socket answers (its workers start after).
START_S = 30.0
#: The server ends itself after this long without a request (a call killed without cleanup).
IDLE_EXIT_S = 900


def kopt_program() -> str:
    """The kopt program that goes with the library in use: beside $KOPT_LIB when that is
    set (a build folder), else the package's (or the checkout's build tree's)."""
    lib = os.environ.get("KOPT_LIB")
    if lib:
        p = os.path.join(os.path.dirname(os.path.abspath(lib)), "kopt")
        if os.access(p, os.X_OK):
            return p
        raise _lib.KoptError("no kopt program beside $KOPT_LIB (%s)" % lib, "not found")
    return program("kopt")


def _answers(path: str) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)        # the server reads an empty request and goes on
        return True
    except OSError:
        return False
    finally:
        s.close()


def _start(device: Optional[int], log_path: str, sock: str) -> subprocess.Popen:
    argv = [kopt_program(), "serve", "--socket", sock, "--workers", "1", "--sessions", "1",
            "--idle-exit", str(IDLE_EXIT_S), "--device", str(device or 0)]
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    deadline = time.monotonic() + START_S
    while not _answers(sock):
        if proc.poll() is not None:
            raise _lib.KoptError("kopt serve exited (code %d) before it listened; its log: %s"
                                 % (proc.returncode, log_path), "error")
        if time.monotonic() > deadline:
            _end(proc)
            raise _lib.KoptError("kopt serve did not listen on %s within %.0f s; its log: %s"
                                 % (sock, START_S, log_path), "error")
        time.sleep(0.05)
    return proc


def _end(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


class OwnServer:
    """A kopt serve of kopt.optimize's own: `socket()` gives the socket of a live one before
    each step, starting it again when it has ended (its idle exit after IDLE_EXIT_S without
    a request, while a slow model thought; a crash), or None (every step evaluates in the
    process) once it cannot start; each of those says so with a RuntimeWarning."""

    def __init__(self, device: Optional[int], log_dir: Optional[str], private: str) -> None:
        self.device = device
        self.sock = os.path.join(private, "serve.sock")
        self.log_path = os.path.join(log_dir if log_dir and os.path.isdir(log_dir) else private,
                                     "serve.log")
        self.proc: Optional[subprocess.Popen] = None
        self.failed = False
        self.starts = 0

    def socket(self) -> Optional[str]:
        if self.failed:
            return None
        if self.proc is not None and self.proc.poll() is None and _answers(self.sock):
            return self.sock
        if self.proc is not None:
            _end(self.proc)
            warnings.warn("kopt.optimize: its own kopt serve ended (exit %s; its log: %s); "
                          "starting it again" % (self.proc.returncode, self.log_path),
                          RuntimeWarning, stacklevel=3)
            self.proc = None
        try:
            if os.path.exists(self.sock):
                os.unlink(self.sock)
            self.proc = _start(self.device, self.log_path, self.sock)
            self.starts += 1
            return self.sock
        except (_lib.KoptError, OSError) as e:
            self.failed = True
            warnings.warn("kopt.optimize: its own kopt serve did not start (%s); every step "
                          "evaluates in this process" % e, RuntimeWarning, stacklevel=3)
            return None

    def close(self) -> None:
        if self.proc is not None:
            _end(self.proc)


@contextlib.contextmanager
def own_server(device: Optional[int], log_dir: Optional[str]) -> Iterator[OwnServer]:
    """A kopt serve for the length of the `with`, started at once (`socket()` before each
    step). Its log is `log_dir`/serve.log (the tree's folder), else in its private folder,
    removed at the end with the socket."""
    private = tempfile.mkdtemp(prefix="kopt-serve-")
    srv = OwnServer(device, log_dir, private)
    try:
        srv.socket()
        yield srv
    finally:
        srv.close()
        shutil.rmtree(private, ignore_errors=True)
