#!/usr/bin/env python3
"""Does the CUDA driver's control plane slow down when every GPU of a host works at once?

Issue 29: on 4 GPUs an optimize evaluation takes 2.3x as long as on one, in the steps that
start processes, make contexts, pin and map memory and enable CUPTI (not in the timed runs).
This times a worker's life without kopt, as each evaluation lives it: a fresh process makes
its context on its GPU, allocates and clears device memory, pins host memory, exports the
allocation for another process (IPC), turns CUPTI's kernel activity on and off around a
memset as the kernel census does (where libcupti.so.13 is found) and ends. L lanes (one per
GPU, or several per GPU) each start R such processes one after another, all lanes at once;
with --pinned each process sees only its GPU (CUDA_VISIBLE_DEVICES = the GPU's index), as
kopt's workers do (src/eval/pin.c).

  python3 bench/driver_contention.py [--lanes L] [--rounds R] [--pinned] [--torch]

--torch: the process also imports torch and makes its first CUDA tensor (a PyTorch worker's
start). Prints one line: the mean ms of each step over every process, and the wall. Run it with
--lanes 1 and --lanes N (N GPUs), with and without --pinned, and compare the step times.
"""
import argparse
import ctypes
import json
import mmap
import os
import subprocess
import sys
import time

STEPS = ("start", "init", "context", "alloc", "memset", "host_register", "ipc_export",
         "cupti", "torch", "teardown", "exit")
CUPTI_DIRS = ("", "/usr/local/cuda/lib64/", "/usr/local/cuda/extras/CUPTI/lib64/",
              "/usr/local/cuda/targets/x86_64-linux/lib/")
KIND_CONCURRENT_KERNEL = 10          # CUpti_ActivityKind


def cupti_census(memset):
    """What an evaluation's kernel census does (src/profile/cupti.c): libcupti loaded, its
    activity callbacks registered, concurrent-kernel activity on around a GPU operation,
    flushed and off. False when libcupti.so.13 is not found."""
    lib = None
    for d in CUPTI_DIRS:
        try:
            lib = ctypes.CDLL(d + "libcupti.so.13")
            break
        except OSError:
            continue
    if lib is None:
        return False
    keep = []
    requested_t = ctypes.CFUNCTYPE(None, ctypes.POINTER(ctypes.c_void_p),
                                   ctypes.POINTER(ctypes.c_size_t),
                                   ctypes.POINTER(ctypes.c_size_t))
    completed_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_void_p,
                                   ctypes.c_size_t, ctypes.c_size_t)

    def requested(buf, size, most):
        b = ctypes.create_string_buffer(1 << 20)
        keep.append(b)
        buf[0] = ctypes.cast(b, ctypes.c_void_p)
        size[0] = 1 << 20
        most[0] = 0

    def completed(ctx, stream, buf, size, valid):
        pass

    cbs = (requested_t(requested), completed_t(completed))
    keep.append(cbs)
    for name, r in (("cuptiActivityRegisterCallbacks", lib.cuptiActivityRegisterCallbacks(*cbs)),
                    ("cuptiActivityEnable", lib.cuptiActivityEnable(KIND_CONCURRENT_KERNEL))):
        if r != 0:
            raise SystemExit("%s: CUPTI error %d" % (name, r))
    memset()
    lib.cuptiActivityFlushAll(0)
    lib.cuptiActivityDisable(KIND_CONCURRENT_KERNEL)
    return True


def life(gpu, pinned, use_torch):
    """One process's life on GPU `gpu`: the step times (ms) as JSON on stdout."""
    t = {"start": (time.time() - float(os.environ["DC_T0"])) * 1e3}
    mark = time.monotonic()

    def step(name):
        nonlocal mark
        now = time.monotonic()
        t[name] = (now - mark) * 1e3
        mark = now

    cu = ctypes.CDLL("libcuda.so.1")

    def ok(r, what):
        if r != 0:
            raise SystemExit("%s: CUDA error %d" % (what, r))

    ok(cu.cuInit(0), "cuInit")
    step("init")
    dev, ctx = ctypes.c_int(), ctypes.c_void_p()
    ordinal = 0 if pinned else gpu
    ok(cu.cuDeviceGet(ctypes.byref(dev), ordinal), "cuDeviceGet")
    ok(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    ok(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    step("context")
    ptr = ctypes.c_uint64()
    size = 256 << 20
    ok(cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(size)), "cuMemAlloc")
    step("alloc")
    ok(cu.cuMemsetD8_v2(ptr, ctypes.c_ubyte(1), ctypes.c_size_t(size)), "cuMemsetD8")
    ok(cu.cuCtxSynchronize(), "cuCtxSynchronize")
    step("memset")
    buf = mmap.mmap(-1, 64 << 20)             # page-aligned, as a worker's shared buffer
    host = ctypes.c_void_p(ctypes.addressof(ctypes.c_char.from_buffer(buf)))
    ok(cu.cuMemHostRegister_v2(host, ctypes.c_size_t(64 << 20), 0), "cuMemHostRegister")
    step("host_register")
    handle = (ctypes.c_char * 64)()
    ok(cu.cuIpcGetMemHandle(handle, ptr), "cuIpcGetMemHandle")
    step("ipc_export")
    if cupti_census(lambda: (ok(cu.cuMemsetD8_v2(ptr, ctypes.c_ubyte(2), ctypes.c_size_t(size)),
                                "cuMemsetD8"), ok(cu.cuCtxSynchronize(), "cuCtxSynchronize"))):
        step("cupti")
    if use_torch:
        import torch
        torch.zeros(1, device="cuda:%d" % ordinal)
        torch.cuda.synchronize()
        step("torch")
    ok(cu.cuMemHostUnregister(host), "cuMemHostUnregister")
    ok(cu.cuMemFree_v2(ptr), "cuMemFree")
    ok(cu.cuDevicePrimaryCtxRelease_v2(dev), "cuDevicePrimaryCtxRelease")
    step("teardown")
    print(json.dumps(t), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lanes", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--pinned", action="store_true")
    ap.add_argument("--torch", action="store_true")
    ap.add_argument("--life", type=int, default=-1, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.life >= 0:
        return life(a.life, a.pinned, a.torch)
    try:
        ngpu = len(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
                   .strip().splitlines())
    except OSError:
        ngpu = 0
    if ngpu < 1:
        print("skipped: no GPU")
        return 0
    rows, t_wall = [], time.monotonic()
    running = {}                               # lane -> (process, round, t0)

    def launch(lane, rnd):
        gpu = lane % ngpu
        env = dict(os.environ, DC_T0=repr(time.time()))
        if a.pinned:
            env["CUDA_VISIBLE_DEVICES"] = str(gpu)
        argv = [sys.executable, __file__, "--life", str(gpu)] + \
            (["--pinned"] if a.pinned else []) + (["--torch"] if a.torch else [])
        running[lane] = (subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True),
                         rnd, time.monotonic())

    for lane in range(a.lanes):
        launch(lane, 0)
    while running:
        for lane, (p, rnd, t0) in list(running.items()):
            if p.poll() is None:
                continue
            out = p.stdout.read()
            del running[lane]
            if p.returncode != 0:
                print("lane %d round %d failed (%d): %s" % (lane, rnd, p.returncode, out))
                return 1
            r = json.loads(out.strip().splitlines()[-1])
            r["exit"] = (time.monotonic() - t0) * 1e3 - sum(r.get(k, 0) for k in STEPS)
            rows.append(r)
            if rnd + 1 < a.rounds:
                launch(lane, rnd + 1)
        time.sleep(0.002)
    wall = time.monotonic() - t_wall
    means = {k: sum(r.get(k, 0) for r in rows) / len(rows) for k in STEPS
             if any(k in r for r in rows)}
    print("lanes %d (%d GPUs) rounds %d %s%s: %d processes in %.2f s; mean ms: %s" % (
        a.lanes, ngpu, a.rounds, "pinned" if a.pinned else "all GPUs visible",
        " +torch" if a.torch else "", len(rows), wall,
        ", ".join("%s %.0f" % (k, v) for k, v in means.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
