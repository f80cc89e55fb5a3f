#!/usr/bin/env python3
"""kopt's PyTorch zygote: imports torch and kopt's worker once, then forks a worker per
request, so that an evaluation session's workers start in tens of milliseconds instead of
the seconds of `import torch` (src/eval/zygote.c starts and speaks to it; docs/kernelbench.md,
"Workers forked ready-imported").

It never initialises CUDA (a forked child could not use it): each child makes its own
context, as a worker started by exec does. Protocol, on the SOCK_SEQPACKET socket at fd 3:
  zygote -> parent  {"ready": true, "torch": version, "pid": its pid} once imported
  parent -> zygote  {"id": N, "args": [...], "env": {...}, "sandbox": {...} | null,
                     "lib": libkopt path | null} with four descriptors (SCM_RIGHTS): the
                     job pipe's read end, the event pipe's write end, the output buffer and
                     the log
  zygote -> parent  {"id": N, "pid": child} once forked (or {"id": N, "error": text})
  zygote -> parent  {"exit": pid, "status": wait status} when a child ends
The child becomes what `kopt_torch_worker.py worker ARGS` would be started as: the four
descriptors as fds 0, 1 and 2 (log), 3 and 4, its own process group, killed with its
parent, the request's environment exactly, and the sandbox kopt's C start applies before
exec (kopt_sandbox_enter in libkopt). The parent closing the socket ends the zygote, and its
children with it.
"""
import ctypes
import json
import os
import select
import signal
import socket
import sys

PR_SET_PDEATHSIG = 1
SOCK_FD = 3


def preload():
    """What every worker imports before its job: imported here once, forked with. Not
    torch.utils.cpp_extension: importing it asks torch.cuda.is_available(), which
    initialises the CUDA driver and marks every later fork "bad" (torch then refuses CUDA in
    the child: "Cannot re-initialize CUDA in forked subprocess")."""
    import torch  # noqa: F401
    import torch.nn  # noqa: F401
    import kopt_torch_worker  # noqa: F401
    import kopt_torch_timing  # noqa: F401
    import kopt_torch_compare  # noqa: F401
    return torch.__version__


def fork_poisoned():
    """Whether a child forked now could use CUDA: torch marks a fork bad once this process
    initialised the driver. Asked of a real child, so whatever did it is caught."""
    import torch
    bad = getattr(torch._C, "_cuda_isInBadFork", None)
    if bad is None:
        return None
    pid = os.fork()
    if pid == 0:
        os._exit(3 if bad() else 0)
    _, status = os.waitpid(pid, 0)
    return "a forked child could not use CUDA (this process initialised the CUDA driver " \
           "while importing)" if os.waitstatus_to_exitcode(status) == 3 else None


def child(sock, req, fds):
    """In the forked child: become the worker of the request; never returns."""
    code = 121
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        sock.detach()                 # fd 3 is the event pipe's from here on
        os.setpgid(0, 0)
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        job_r, ev_w, shm, log = fds
        for src, dst in ((job_r, 0), (log, 1), (log, 2), (ev_w, 3), (shm, 4)):
            os.dup2(src, dst)
        os.closerange(5, 65536)
        os.environ.clear()
        os.environ.update(req.get("env") or {})
        sb = req.get("sandbox")
        if sb:
            lib = ctypes.CDLL(req["lib"])
            lib.kopt_sandbox_enter.argtypes = [ctypes.c_char_p, ctypes.c_double,
                                               ctypes.c_double, ctypes.c_int]
            tmp = sb.get("tmpdir") or ""
            lib.kopt_sandbox_enter(tmp.encode(), float(sb.get("cpu_s") or 0),
                                   float(sb.get("fsize_mb") or 0), int(bool(sb.get("no_network"))))
            # the C call set them for C's getenv; Python's copy of the environment too
            libc = ctypes.CDLL(None)
            libc.getenv.restype = ctypes.c_char_p
            net = libc.getenv(b"KOPT_SANDBOX_NETWORK")
            if tmp:
                for k in ("TMPDIR", "TMP", "TEMP"):
                    os.environ[k] = tmp
                os.chdir(tmp)
            if net:
                os.environ["KOPT_SANDBOX_NETWORK"] = net.decode()
        import tempfile
        tempfile.tempdir = None
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        import kopt_torch_worker
        kopt_torch_worker.FORKED = True
        sys.argv = [kopt_torch_worker.__file__] + list(req.get("args") or [])
        code = kopt_torch_worker.worker_main()
    except BaseException as e:   # noqa: B902  the child must end here whatever happened
        try:
            os.write(2, ("kopt zygote child: %s: %s\n" % (type(e).__name__, e)).encode())
        except OSError:
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:
            pass
        os._exit(code if isinstance(code, int) else 121)


def send(sock, obj):
    sock.send(json.dumps(obj).encode())


def reap(sock):
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        send(sock, {"exit": pid, "status": status})


def main():
    sock = socket.socket(fileno=SOCK_FD)
    try:
        version = preload()
        poisoned = fork_poisoned()
    except Exception as e:
        send(sock, {"ready": False, "error": "%s: %s" % (type(e).__name__, e)})
        return 1
    if poisoned:                      # the parent starts its workers by exec
        send(sock, {"ready": False, "error": poisoned})
        return 1
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    send(sock, {"ready": True, "torch": version, "pid": os.getpid()})
    while True:
        ready, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in ready:
            os.read(wake_r, 4096)
        if sock in ready:
            try:
                msg, fds, _, _ = socket.recv_fds(sock, 1 << 20, 8)
            except InterruptedError:
                continue
            if not msg:                   # the parent went away: so do we
                return 0
            try:
                req = json.loads(msg)
            except ValueError as e:
                for fd in fds:
                    os.close(fd)
                send(sock, {"id": -1, "error": "bad request: %s" % e})
                continue
            if len(fds) != 4:
                for fd in fds:
                    os.close(fd)
                send(sock, {"id": req.get("id"), "error": "4 descriptors expected, got %d"
                            % len(fds)})
                continue
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                child(sock, req, fds)
            for fd in fds:
                os.close(fd)
            send(sock, {"id": req.get("id"), "pid": pid})
        reap(sock)


if __name__ == "__main__":
    sys.exit(main())
