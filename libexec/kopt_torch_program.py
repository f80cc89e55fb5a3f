"""What a PyTorch program runs on the GPU, kernel by kernel (kopt profile of a PyTorch
reference, a ModelNew or a host-mode candidate that launches several kernels; issue 28).

Called by kopt's PyTorch worker (kopt_torch_worker.py) for a job with "program_profile":
the subject is built at the first size set and called on that set's first trial inputs,
warmed up, then
  1. timed: the median wall of one forward over several calls (CUDA events), nothing else
     running: "forward_ms";
  2. traced: one forward under torch.profiler (CUPTI activity): each kernel's name (as the
     driver gives it, demangled), grid, block, registers, shared memory, start and duration,
     and the torch op that launched it;
  3. bracketed: one more forward inside the NVTX range "kopt_profile", which ncu is told to
     profile (--nvtx --nvtx-include kopt_profile/) when kopt runs the worker under it; the
     parent joins ncu's metrics to the traced kernels by launch order.
The result is the "program" object of docs/formats.md ("program profile").
"""
import json
import os
import tempfile
import time

NVTX_RANGE = "kopt_profile"


def _forward(worker, inputs, host_ts):
    if host_ts is not None:
        worker.poison(host_ts)
    return worker.run_once(inputs, host_ts)


def _trace_kernels(torch, worker, inputs, host_ts):
    """One forward under torch.profiler: its kernels, in launch order."""
    from torch.profiler import ProfilerActivity, profile
    acts = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if worker.cuda else [])
    with profile(activities=acts) as prof:
        _forward(worker, inputs, host_ts)
        worker.sync()
    fd, path = tempfile.mkstemp(prefix="kopt-trace-", suffix=".json")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    finally:
        os.unlink(path)
    events = trace.get("traceEvents", []) if isinstance(trace, dict) else trace
    ops = {}
    for e in events:   # the torch op of each launch: cpu_op events, by External id
        if e.get("cat") == "cpu_op" and "External id" in e.get("args", {}):
            ops.setdefault(e["args"]["External id"], e.get("name", ""))
    kernels = []
    for e in events:
        if e.get("cat") != "kernel":
            continue
        a = e.get("args", {})
        kernels.append({
            "name": e.get("name", ""),
            "op": ops.get(a.get("External id"), ""),
            "grid": [int(v) for v in a.get("grid", [0, 0, 0])],
            "block": [int(v) for v in a.get("block", [0, 0, 0])],
            "registers": int(a.get("registers per thread", 0)),
            "static_smem": int(a.get("shared memory", 0)),
            "dynamic_smem": 0,
            "start_us": float(e.get("ts", 0.0)),
            "dur_us": float(e.get("dur", 0.0)),
        })
    kernels.sort(key=lambda k: k["start_us"])
    t0 = kernels[0]["start_us"] if kernels else 0.0
    for k in kernels:
        k["start_us"] = round(k["start_us"] - t0, 3)
    return kernels


def record(worker, job, reps=20):
    """The program object for the job's first size set (see the module's docstring)."""
    torch = worker.torch
    ph = job["phases"][0]
    worker.phase = 0
    built = worker.make_subject(ph)
    worker.lock_candidate({"phases": [ph]}, [built])   # a ModelNew: locked down as in eval
    worker.use_subject(built, ph)
    inputs = worker.inputs(int(ph["trials"][0]["seed"]))
    host_ts = worker.host_args(inputs) if worker.subject == "host" else None
    with torch.no_grad():
        for _ in range(3):                         # warm-up: caches, autotuners, lazy init
            _forward(worker, inputs, host_ts)
        worker.sync()
        times = []
        for _ in range(reps):
            if worker.cuda:
                a = torch.cuda.Event(enable_timing=True)
                b = torch.cuda.Event(enable_timing=True)
                a.record()
                _forward(worker, inputs, host_ts)
                b.record()
                b.synchronize()
                times.append(a.elapsed_time(b))
            else:                                  # the CPU build: the host's clock
                t = time.perf_counter()
                _forward(worker, inputs, host_ts)
                times.append((time.perf_counter() - t) * 1e3)
        times.sort()
        kernels = _trace_kernels(torch, worker, inputs, host_ts)
        nvtx = getattr(torch.cuda, "nvtx", None) if worker.cuda else None
        if nvtx:
            nvtx.range_push(NVTX_RANGE)
        _forward(worker, inputs, host_ts)
        worker.sync()
        if nvtx:
            nvtx.range_pop()
    prog = {"subject": worker.subject,
            "forward_ms": times[len(times) // 2] if times else None,
            "forward_reps": len(times),
            "sizes": ph.get("sizes", {}),
            "kernels": kernels}
    if worker.cuda:
        p = torch.cuda.get_device_properties(worker.device)
        prog["device"] = {"name": p.name, "cc_major": p.major, "cc_minor": p.minor,
                          "sm_count": p.multi_processor_count}
    return prog
