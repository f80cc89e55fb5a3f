#!/usr/bin/env python3
"""device probe (issue 29): which of a worker's per-process steps slow down when 1, 2, 4 GPUs
each run fresh worker-like processes at once. Each lane = one GPU running R fresh children
one after another; a child times: import torch, context, 1 GiB alloc+fill, host-register
64 MiB, a matmul burst, CUPTI census (libkopt) twice, free, and the parent times its exit."""
import json, os, subprocess, sys, time, threading, statistics
LIB = sys.argv[2] if len(sys.argv) > 2 else "build/libkopt.so"
CHILD = r'''
import time, json, os, sys, ctypes, mmap
t = {}; s = time.monotonic()
def st(n):
    global s
    now = time.monotonic(); t[n] = round((now - s) * 1e3, 1); s = now
import torch; st("import")
torch.zeros(1, device="cuda"); torch.cuda.synchronize(); st("context")
x = torch.empty(1 << 28, device="cuda"); x.uniform_(); torch.cuda.synchronize(); st("alloc_1g")
m = mmap.mmap(-1, 64 << 20); buf = (ctypes.c_char * (64 << 20)).from_buffer(m)
rt = torch.cuda.cudart(); rc = rt.cudaHostRegister(ctypes.addressof(buf), 64 << 20, 0); st("host_register")
a = torch.randn(2048, 2048, device="cuda")
for _ in range(20): a = a @ a * 1e-3
torch.cuda.synchronize(); st("matmuls")
lib = ctypes.CDLL(sys.argv[1]); lib.kopt_clock_census_end.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
b = ctypes.create_string_buffer(1 << 16)
r1 = lib.kopt_clock_census_begin(); y = a @ a; torch.cuda.synchronize(); st("census_call")
r2 = lib.kopt_clock_census_end(b, len(b)); st("census_end")
lib.kopt_clock_census_begin(); y = a @ a; torch.cuda.synchronize(); lib.kopt_clock_census_end(b, len(b)); st("census2")
rt.cudaHostUnregister(ctypes.addressof(buf)); del x, y, a; torch.cuda.empty_cache(); torch.cuda.synchronize(); st("free")
t["rc"] = [int(rc), r1, r2, b.value.decode()[:60]]
print(json.dumps(t), flush=True)
'''
def lane(g, R, out):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES=str(g))
    for _ in range(R):
        t0 = time.monotonic()
        p = subprocess.Popen([sys.executable, "-c", CHILD, LIB], env=env, stdout=subprocess.PIPE, text=True)
        line = p.stdout.readline(); t1 = time.monotonic(); p.wait(); t2 = time.monotonic()
        try:
            d = json.loads(line)
        except Exception:
            d = {"bad": line}
        d["exit"] = round((t2 - t1) * 1e3, 1); d["total"] = round((t2 - t0) * 1e3, 1)
        out.append(d)
R = int(sys.argv[1]) if len(sys.argv) > 1 else 6
steps = ["import", "context", "alloc_1g", "host_register", "matmuls", "census_call", "census_end", "census2", "free", "exit", "total"]
print("%-6s" % "gpus" + "".join("%14s" % s for s in steps))
for N in (1, 2, 4):
    outs = [[] for _ in range(N)]
    th = [threading.Thread(target=lane, args=(g, R, outs[g])) for g in range(N)]
    [x.start() for x in th]; [x.join() for x in th]
    rows = [d for o in outs for d in o[1:]]   # the first child of a lane: caches cold
    bad = [d for o in outs for d in o if "bad" in d]
    print("%-6d" % N + "".join("%14.1f" % statistics.median(d[s] for d in rows) for s in steps) + ("  BAD %d" % len(bad) if bad else ""))
    print("   rc sample:", rows[0].get("rc"))
