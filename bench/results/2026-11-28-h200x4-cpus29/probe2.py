#!/usr/bin/env python3
"""device probe 2 (issue 29): (a) a fresh worker-like process on GPU 0 times its first CUPTI census,
a 256 MiB alloc and a host-register, with GPUs 1-3 idle and then with GPUs 1-3 busy making and
ending torch contexts in fresh processes (the other GPUs' workers); (b) a fresh process's torch
context alone on 1 and 4 GPUs at once with CUDA_DEVICE_MAX_CONNECTIONS=1 against the default."""
import json, os, subprocess, sys, time, threading, statistics
LIB = sys.argv[1]
CHILD = r'''
import time, json, sys, ctypes, mmap
t = {}; s = time.monotonic()
def st(n):
    global s
    now = time.monotonic(); t[n] = round((now - s) * 1e3, 1); s = now
import torch; st("import")
torch.zeros(1, device="cuda"); torch.cuda.synchronize(); st("context")
if sys.argv[2] == "full":
    a = torch.randn(2048, 2048, device="cuda"); torch.cuda.synchronize(); st("first_kernel")
    lib = ctypes.CDLL(sys.argv[1]); lib.kopt_clock_census_end.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    b = ctypes.create_string_buffer(1 << 16)
    lib.kopt_clock_census_begin(); st("census_begin")
    y = a @ a; torch.cuda.synchronize(); st("census_call")
    lib.kopt_clock_census_end(b, len(b)); st("census_end")
    x = torch.empty(1 << 26, device="cuda"); torch.cuda.synchronize(); st("alloc_256m")
    m = mmap.mmap(-1, 64 << 20); buf = (ctypes.c_char * (64 << 20)).from_buffer(m)
    torch.cuda.cudart().cudaHostRegister(ctypes.addressof(buf), 64 << 20, 0); st("host_register")
print(json.dumps(t), flush=True)
'''
def child(g, mode, env_extra={}):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(g), **env_extra)
    t0 = time.monotonic()
    p = subprocess.Popen([sys.executable, "-c", CHILD, LIB, mode], env=env, stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline(); t1 = time.monotonic(); p.wait()
    d = json.loads(line) if line.strip() else {}
    d["exit"] = round((time.monotonic() - t1) * 1e3, 1)
    return d
def med(rows, k):
    v = [r[k] for r in rows if k in r]
    return statistics.median(v) if v else float("nan")
# (a)
keys = ["context", "first_kernel", "census_begin", "census_call", "census_end", "alloc_256m", "host_register", "exit"]
print("(a) GPU 0's fresh process, medians ms:  " + " ".join("%13s" % k for k in keys))
for busy in (False, True):
    stop = threading.Event()
    def churn(g):
        while not stop.is_set():
            child(g, "ctx")
    th = [threading.Thread(target=churn, args=(g,)) for g in (1, 2, 3)] if busy else []
    [x.start() for x in th]
    time.sleep(3 if busy else 0)
    rows = [child(0, "full") for _ in range(5)][1:]
    stop.set(); [x.join() for x in th]
    print("  others %-6s" % ("busy" if busy else "idle") + " " * 25 + " ".join("%13.1f" % med(rows, k) for k in keys))
# (b)
print("(b) torch context in a fresh process, median ms (lanes at once, 5 each)")
for conn in ({}, {"CUDA_DEVICE_MAX_CONNECTIONS": "1"}):
    for N in (4,):
        res = [[] for _ in range(N)]
        def lane(g):
            res[g] += [child(g, "ctx", conn) for _ in range(4)]
        th = [threading.Thread(target=lane, args=(g,)) for g in range(N)]
        [x.start() for x in th]; [x.join() for x in th]
        rows = [r for l in res for r in l[1:]]
        print("  %-32s N=%d context %7.1f exit %7.1f" % (conn or "default", N, med(rows, "context"), med(rows, "exit")))
