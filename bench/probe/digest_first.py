#!/usr/bin/env python3
"""Probe: what an evaluation's input digests cost in a fresh worker process (the candidate
worker's `input_digests` step, ~110 ms an evaluation on an H200 for a 48 MB input), and how
much of it is first-use loading that a worker started ahead can do beforehand
(kopt_torch_worker.warm_ahead). Each configuration runs in a fresh process: CUDA context,
inputs as get_inputs() makes them (randn 4096 x 3072 on the device), then 4 digests timed.
Run on the GPU machine from the repo root: python3 bench/probe/digest_first.py"""
import json
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
sys.path.insert(0, "libexec")
import torch, kopt_torch_worker as kw
warm, chunk = sys.argv[1] == "1", int(sys.argv[2])
torch.zeros(1, device="cuda")
w = kw.warm_ahead(torch, "cuda:0") if warm else 0.0
t = time.monotonic()
x = torch.randn(4096, 3072, device="cuda"); torch.cuda.synchronize()
inputs_ms = (time.monotonic() - t) * 1e3
ms = []
for i in range(4):
    t = time.monotonic(); kw.tensor_digest(torch, x, chunk=chunk); ms.append((time.monotonic() - t) * 1e3)
print(json.dumps({"warm_ms": w, "inputs_ms": inputs_ms, "digests_ms": ms}))
"""

rows = []
for warm in ("0", "1"):
    for chunk in (1 << 25, 1 << 22):
        for rep in range(2):
            out = subprocess.run([sys.executable, "-c", CHILD, warm, str(chunk)],
                                 capture_output=True, text=True, timeout=120)
            if out.returncode:
                print(out.stderr[-2000:])
                sys.exit(1)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            r.update(warm=warm, chunk=chunk)
            rows.append(r)
print("%-6s %-9s %9s %9s %s" % ("warmed", "chunk", "warm ms", "inputs ms", "digests ms (1st..4th)"))
for r in rows:
    print("%-6s %-9d %9.1f %9.1f %s" % (r["warm"], r["chunk"], r["warm_ms"], r["inputs_ms"],
                                        " ".join("%.1f" % v for v in r["digests_ms"])))
