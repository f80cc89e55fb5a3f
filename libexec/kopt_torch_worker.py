#!/usr/bin/env python3
"""kopt's PyTorch worker: runs a problem's PyTorch reference (a KernelBench-style `Model`),
its torch.compile baseline, and candidates that need Python (a `ModelNew` file, or a kopt-native
host-mode shared object called through ctypes), for the parent's evaluation (src/eval/torch.c).

Two uses:
  kopt_torch_worker.py worker      one job, the protocol of kopt's C worker (src/eval/worker_int.h):
                                   the job as a JSON line on stdin, then a "go" line; events as
                                   JSON lines on fd 3; every run's outputs copied into the shared
                                   buffer on fd 4 at the offsets the job gives, or, when the
                                   job streams (job["stream"], below), compared run by run
                                   by the reference's worker
  kopt_torch_worker.py import SRC OUT [--atol A] [--rtol R] [--prefix P] [--device D]
                                   KernelBench problem files (a file or a folder) -> kopt
                                   problem folders (docs/kernelbench.md); one JSON line per file
                                   on stdout
The parent compares the outputs, or has the reference's worker compare them on the GPU
(kopt_torch_compare.py): a streaming subject copies each run's outputs into its export buffer
(two slots: trial 0's stays for the repeat), says {"event": "outputs", "phase", "run",
"offset"} and waits for "next" on stdin (the parent stops it while the reference reads);
the streaming reference copies nothing, and after its result takes commands on stdin
({"op": "open" | "compare" | "repeat" | "close"}) and answers each with a "compared" event.
A candidate's process never sees another subject's outputs. A
candidate's worker locks itself down (kopt_torch_sandbox.py) once the candidate is built and
before it first runs: docs/kernelbench.md, "The sandbox", says what runs before and after.
"""
import ctypes
import errno
import fcntl
import hashlib
import importlib.util
import inspect
import json
import mmap
import os
import re
import select
import shutil
import sys
import threading
import time
import traceback

import kopt_torch_guard    # beside this file (sys.path[0] when run as a script)
import kopt_torch_sandbox
import kopt_torch_timing

EVENT_FD = 3
SHM_FD = 4
FORKED = False      # set by kopt_torch_zygote.py in a worker it forked (torch imported there)

# kopt's dtype codes (include/kopt/problem.h) and roles
DTYPES = ["f32", "f16", "bf16", "f64", "i32", "i64"]
ROLE_INPUT, ROLE_OUTPUT, ROLE_INOUT, ROLE_SCRATCH = 0, 1, 2, 3


def local_device(dev):
    """The job's device ("cuda:N", kopt's numbering) as this process names it: kopt starts
    the worker for GPU N with only that GPU visible (CUDA_VISIBLE_DEVICES, and
    KOPT_WORKER_PINNED=N: src/eval/pin.c), where it is cuda:0."""
    pinned = os.environ.get("KOPT_WORKER_PINNED")
    if pinned and dev.startswith("cuda:") and dev[5:] == pinned:
        return "cuda:0"
    return dev


class CTensor(ctypes.Structure):
    """kopt_candidate_tensor (include/kopt/candidate.h)"""
    _fields_ = [("name", ctypes.c_char_p), ("data", ctypes.c_void_p),
                ("dtype", ctypes.c_int), ("ndim", ctypes.c_int),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("count", ctypes.c_int64)]


class CIO(ctypes.Structure):
    """kopt_candidate_io (include/kopt/candidate.h)"""
    _fields_ = [("abi", ctypes.c_int), ("ntensors", ctypes.c_int),
                ("tensors", ctypes.POINTER(CTensor)), ("nsizes", ctypes.c_int),
                ("size_names", ctypes.POINTER(ctypes.c_char_p)),
                ("size_values", ctypes.POINTER(ctypes.c_int64)),
                ("stream", ctypes.c_void_p)]


class WorkerError(Exception):
    """An outcome the parent classifies: kind is crash, oom, launch, wrong, harness, nodevice."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


def torch_dtype(torch, code):
    return [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32,
            torch.int64][code]


def dtype_code(torch, dt):
    table = {torch.float32: 0, torch.float16: 1, torch.bfloat16: 2, torch.float64: 3,
             torch.int32: 4, torch.int64: 5}
    return table.get(dt)


def load_module(path, name):
    """Import the Python file at `path` as a fresh module."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise WorkerError("harness", "%s: not a Python file" % path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def set_sizes(mod, sizes):
    """The problem's sizes are the module's integer globals: set them before get_inputs()."""
    for k, v in (sizes or {}).items():
        if hasattr(mod, k) and isinstance(getattr(mod, k), int) and \
                not isinstance(getattr(mod, k), bool):
            setattr(mod, k, int(v))


def as_outputs(torch, out, who):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, (tuple, list)) and all(isinstance(o, torch.Tensor) for o in out):
        return list(out)
    raise WorkerError("wrong", "the %s's forward returned %s, not a tensor or a tuple of tensors"
                      % (who, type(out).__name__))


# ---- the worker -------------------------------------------------------------------------------

class Worker:
    def __init__(self):
        self.events = os.fdopen(EVENT_FD, "w", buffering=1)
        self.lock = threading.Lock()
        self.phase = 0
        self.trace = {}
        self.at = {}             # step -> [first start, last end], CLOCK_MONOTONIC ms (trace_at)
        self.sandbox = None
        self.clock = None        # libkopt's clock (kopt_torch_timing.LibClock), or None:
        self.clock_error = ""    # why not
        self.guard = None        # the tamper check, once the candidate is about to load

    def step(self, name, t0):
        """Add the wall time since t0 (time.monotonic()) to step `name` of the trace (ms),
        and keep when it ran (trace_at: its first start and last end on the monotonic clock,
        the parent's kopt_now_ms, so steps of workers on several GPUs can be lined up);
        returns now, the next step's start."""
        now = time.monotonic()
        self.trace[name] = self.trace.get(name, 0.0) + (now - t0) * 1e3
        self.at[name] = [self.at[name][0] if name in self.at else round(t0 * 1e3, 3),
                         round(now * 1e3, 3)]
        return now

    def emit(self, obj):
        with self.lock:
            self.events.write(json.dumps(obj) + "\n")
            self.events.flush()

    def heartbeat(self, what, stop, cap_s=900):
        """Progress events every 10 s while `stop` is unset (at most cap_s): loading the
        candidate compiles it (load_inline can take minutes) before the first event, and
        the parent takes a silent worker for a hung one."""
        t0 = time.time()
        while not stop.wait(10) and time.time() - t0 < cap_s:
            self.emit({"event": "progress", "phase": 0, "what": what})

    def progress(self, what):
        self.emit({"event": "progress", "phase": self.phase, "what": what})

    # -- setup
    def setup(self, job):
        t0 = time.time() * 1e3
        # the parent's clock is CLOCK_MONOTONIC (kopt_now_ms), as time.monotonic() on Linux
        spawned = job.get("spawned_ms", 0)
        since_job = time.monotonic() * 1e3 - spawned
        ts = time.monotonic()
        import torch  # noqa: the slow part of the start
        ts = self.step("import_torch", ts)
        self.torch = torch
        self.manual_seed = torch.manual_seed   # kopt's own, whatever a candidate patches
        tj = job["torch"]
        dev = local_device(tj.get("device") or os.environ.get("KOPT_TORCH_DEVICE") or "cuda")
        if dev.startswith("cuda") and not torch.cuda.is_available():
            raise WorkerError("nodevice", "PyTorch %s sees no CUDA device" % torch.__version__)
        self.device = torch.device(dev)
        self.cuda = self.device.type == "cuda"
        info = {"name": "cpu", "torch": torch.__version__, "exec_ms": 0.0}
        if FORKED:
            info["forked"] = True
        if self.cuda:
            torch.cuda.set_device(self.device)
            p = torch.cuda.get_device_properties(self.device)
            info.update({"name": p.name, "cc_major": p.major, "cc_minor": p.minor,
                         "sm_count": p.multi_processor_count,
                         "l2_bytes": getattr(p, "L2_cache_size", 50 << 20),
                         "total_mem": p.total_memory,
                         # the speed-of-light guard's peak bandwidth (kHz, bits)
                         "clock_khz": getattr(p, "clock_rate", 0),
                         "mem_clock_khz": getattr(p, "memory_clock_rate", 0),
                         "mem_bus_width": getattr(p, "memory_bus_width", 0)})
            self.l2 = info["l2_bytes"]
            self.stream = torch.cuda.current_stream()
        ts = self.step("context", ts)
        info["context_ms"] = time.time() * 1e3 - t0
        if spawned > 0:
            info["exec_ms"] = since_job
        self.shm = None
        self.export = None       # the GPU export buffer of a streaming subject
        self.streaming = job.get("stream") or None
        size = int(job.get("shm_size", 0))
        if size:
            self.shm = mmap.mmap(SHM_FD, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            self.shm_t = torch.frombuffer(self.shm, dtype=torch.uint8, count=size)
        ts = self.step("output_buffer_map", ts)
        if self.streaming and self.streaming.get("export") and self.cuda:
            import kopt_torch_compare
            torch.zeros(1, device=self.device)     # the context current for the driver calls
            try:
                self.export = kopt_torch_compare.Export(torch, self.device,
                                                        int(self.streaming["export"]))
            except (OSError, ValueError) as e:
                raise WorkerError("harness", "the export buffer for the comparison on the GPU: "
                                  "%s" % e)
            info["export"] = {"handle": self.export.handle, "bytes": self.export.nbytes}
            ts = self.step("export_buffer", ts)
        if self.shm is not None and self.cuda:
            info["pin_error"] = self.pin_outputs(size)
            t2 = ts
            ts = self.step("output_buffer_pin", ts)
            info["pin_ms"] = (ts - t2) * 1e3
        t1 = time.time() * 1e3
        self.bind_clock(tj.get("libkopt"))
        self.mod = load_module(tj["model"], "kopt_reference_model")
        ts = self.step("load_model_file", ts)
        self.subject = tj.get("subject", "reference")
        if self.subject in ("modelnew", "host"):
            self.guard = kopt_torch_guard.Guard(
                torch, [("kopt_torch_timing", kopt_torch_timing),
                        ("kopt_torch_guard", kopt_torch_guard),
                        ("kopt_torch_sandbox", kopt_torch_sandbox),
                        ("kopt's worker", sys.modules[__name__])],
                [("libkopt's " + n, self.clock, n) for n in self.clock.attributes()]
                if self.clock else [])
            self.guard_check = self.guard.check
        self.init_seed = int(tj.get("init_seed", 1234))
        if job.get("sandbox"):
            self.sandbox = kopt_torch_sandbox.Sandbox(job["sandbox"])
        if self.subject == "modelnew":
            self.cand_mod = load_module(tj["file"], "kopt_candidate_model")
            self.check_guard("importing it")
        elif self.subject == "host":
            if self.sandbox:   # as kopt's C worker: the context up, its constructors confined
                if self.cuda:
                    torch.zeros(1, device=self.device)
                self.sandbox.lockdown("before the shared object was loaded", self.watched())
            self.lib = ctypes.CDLL(tj["so"])
            self.check_guard("loading it")
            self.entry = self.lib.kopt_candidate_run
            self.entry.restype = ctypes.c_int
            self.entry.argtypes = [ctypes.POINTER(CIO)]
        self.step("load_candidate", ts)
        info["candidate_ms"] = time.time() * 1e3 - t1
        info["setup_ms"] = time.time() * 1e3 - t0
        return info

    def pin_outputs(self, size):
        """Page-lock the shared output buffer (as kopt's C worker does): the outputs then
        reach it by DMA at the bus's rate (GB-scale outputs: 2.7 GB/s through pageable
        memory on an H100, about ten times that pinned). Returns "" or why not (the copies
        then go through pageable memory, as before)."""
        try:
            addr = ctypes.addressof(ctypes.c_char.from_buffer(self.shm))
            err = self.torch.cuda.cudart().cudaHostRegister(addr, size, 0)
        except (AttributeError, RuntimeError, TypeError, ValueError) as e:
            return "%s: %s" % (type(e).__name__, e)
        code = int(getattr(err, "value", err))
        return "" if code == 0 else "cudaHostRegister returned %d" % code

    def bind_clock(self, path):
        """libkopt's clock, bound before any candidate code is imported (a failure is said
        with the result: the timer was then torch's, not protected)."""
        if not path:
            self.clock_error = "the job names no libkopt.so"
            return
        try:
            self.clock = kopt_torch_timing.LibClock(path)
        except (OSError, AttributeError) as e:
            self.clock_error = "libkopt's clock could not be loaded: %s" % e

    def watched(self):
        """The machine code the sandbox watches: the driver's event functions, libkopt's
        clock."""
        if not self.cuda:
            return []
        return kopt_torch_sandbox.cuda_timer_functions() + \
            (self.clock.functions() if self.clock else [])

    def check_guard(self, when):
        """TAMPER when the candidate replaced something kopt's timing and checks use, or
        left another CUDA stream current (kopt's flush, hold and refreshes would run on
        it). The check is the one bound when the guard was made (a replaced Guard.check is
        not called)."""
        name = self.guard_check() if self.guard else None
        if not name and self.guard and self.cuda and \
                self.torch.cuda.current_stream(self.device) != self.stream:
            name = "the current CUDA stream"
        if name:
            raise WorkerError("tamper", "the candidate replaced %s (%s), which kopt's timing "
                              "and checks rely on" % (name, when))

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    # -- one phase
    def make_subject(self, ph):
        """The subject built at a phase's sizes: (model, the reference's parameters and
        buffers by name)."""
        torch = self.torch
        set_sizes(self.mod, ph.get("sizes"))
        self.manual_seed(self.init_seed)
        init = self.mod.get_init_inputs()
        ref = self.mod.Model(*init).to(self.device)
        model = None
        if self.subject in ("reference", "host"):
            model = ref
        elif self.subject == "compile":
            model = torch.compile(ref)
        elif self.subject == "modelnew":
            cls = getattr(self.cand_mod, "ModelNew", None) or getattr(self.cand_mod, "Model", None)
            if cls is None:
                raise WorkerError("launch", "the candidate defines no class ModelNew (nor Model)")
            set_sizes(self.cand_mod, ph.get("sizes"))
            self.manual_seed(self.init_seed)
            try:
                model = cls(*init).to(self.device)
            except Exception as e:
                raise WorkerError("launch", "ModelNew(*get_init_inputs()) failed: %s: %s"
                                  % (type(e).__name__, e))
            self.check_guard("building it")
        state = dict(ref.named_parameters())
        state.update(dict(ref.named_buffers()))
        return model, state

    def use_subject(self, built, ph):
        """Run at a phase's sizes from now on: its model, and its sizes in the modules'
        globals (get_inputs() and a forward may read them)."""
        self.model, self.state = built
        self.tensors = ph["tensors"]
        self.job_sizes = ph.get("sizes", {})
        set_sizes(self.mod, self.job_sizes)
        if self.subject == "modelnew":
            set_sizes(self.cand_mod, self.job_sizes)

    def lock_candidate(self, job, built):
        """A ModelNew's worker locks down before its forward first runs. Triton and
        torch.compile compile at a kernel's first call (they run ptxas and a C compiler),
        so a candidate that loaded either is called once per size set first, on inputs of
        a seed no trial uses, its outputs discarded."""
        if not self.sandbox or self.subject != "modelnew":
            return
        jit = [m for m in ("triton", "torch._dynamo") if m in sys.modules]
        for i, (b, ph) in enumerate(zip(built, job["phases"]) if jit else []):
            self.phase = i
            self.use_subject(b, ph)
            self.progress("warm-up before the lockdown (%s)" % ", ".join(jit))
            inputs = self.inputs((int(ph["trials"][0]["seed"]) + 500) % (1 << 64))
            try:
                self.run_once(inputs)
                self.sync()
            except WorkerError:
                raise
            except Exception as e:
                raise classify(e, self.subject)
        self.sandbox.lockdown("after one warm-up call per size set (the candidate loaded %s)"
                              % " and ".join(jit) if jit else "before the first call",
                              self.watched())

    def check_sandbox(self, when="after a call"):
        """After the candidate ran: what it changed that it must leave alone is TAMPER."""
        msg = self.sandbox.check() if self.sandbox else None
        if msg:
            raise WorkerError("tamper", msg)
        self.check_guard(when)

    def inputs(self, seed):
        """get_inputs() under the seed, its factory calls made on the device itself (the
        same seed gives the same inputs in every process; KernelBench's 6 GB inputs take
        milliseconds there, seconds on the host plus the copy). Then the generator is
        seeded with a hash of the seed: the reference's and the candidate's workers still
        draw the same numbers in forward (a dropout), but a candidate reading
        torch.initial_seed() learns nothing of which inputs it is given (a trial's, a timed
        round's, the checked call's)."""
        torch = self.torch
        self.manual_seed(seed)
        with torch.device(self.device):
            vals = list(self.mod.get_inputs())
        digest = hashlib.sha256(b"kopt inputs %d" % seed).digest()
        self.manual_seed(int.from_bytes(digest[:8], "little") >> 1)
        return [v.to(self.device) if isinstance(v, torch.Tensor) else v for v in vals]

    def host_args(self, inputs):
        """Tensors in problem order for the host-mode entry point; outputs poisoned."""
        torch = self.torch
        ts = []
        outs = []
        for t in self.tensors:
            src = t.get("pytorch", "")
            kind, _, key = src.partition(":")
            dt = torch_dtype(torch, t["dtype"])
            if kind == "input":
                v = inputs[int(key)]
                if not isinstance(v, torch.Tensor):
                    v = torch.tensor(v, dtype=dt, device=self.device)
                ts.append(v.contiguous())
            elif kind in ("param", "buffer"):
                ts.append(self.state[key].detach().contiguous())
            elif t["role"] == ROLE_SCRATCH:   # the candidate's own buffers: garbage
                ts.append(torch.full(t["shape"], float("nan") if dt.is_floating_point else -1,
                                     dtype=dt, device=self.device))
            else:
                fill = float("nan") if dt.is_floating_point else 0x7fa5a5a5
                o = torch.full(t["shape"], fill, dtype=dt, device=self.device)
                ts.append(o)
                outs.append(o)
        return ts, outs

    def call_host(self, ts):
        """The host-mode entry point on the problem's tensors (the io block built once per
        phase: only the data pointers change between runs)."""
        if not hasattr(self, "_io_keep"):
            arr = (CTensor * len(ts))()
            keep = []
            for i, (t, spec) in enumerate(zip(ts, self.tensors)):
                shp = (ctypes.c_int64 * max(1, len(spec["shape"])))(*spec["shape"])
                name = spec["name"].encode()
                keep += [shp, name]
                arr[i] = CTensor(name, t.data_ptr(), spec["dtype"], len(spec["shape"]), shp,
                                 spec["count"])
            sizes = self.job_sizes
            names = (ctypes.c_char_p * max(1, len(sizes)))(*[k.encode() for k in sizes])
            vals = (ctypes.c_int64 * max(1, len(sizes)))(*[int(v) for v in sizes.values()])
            io = CIO(1, len(ts), arr, len(sizes), names, vals,
                     self.stream.cuda_stream if self.cuda else None)
            self._io_keep = (arr, keep, names, vals, io)
        else:
            arr = self._io_keep[0]
            for i, t in enumerate(ts):
                arr[i].data = t.data_ptr()
        rc = self.entry(ctypes.byref(self._io_keep[4]))
        if rc != 0:
            raise WorkerError("crash", "kopt_candidate_run returned %d" % rc)

    def poison(self, host_ts):
        """Host mode: the outputs filled with NaN (integers 0x7fa5a5a5) before every run,
        outside the timed bracket."""
        if host_ts is not None:
            for o in host_ts[1]:
                o.fill_(float("nan") if o.dtype.is_floating_point else 0x7fa5a5a5)

    def run_once(self, inputs, host_ts=None):
        """One forward (or host call); returns the outputs."""
        torch = self.torch
        if self.subject == "host":
            ts, outs = host_ts
            self.call_host(ts)
            return outs
        with torch.no_grad():
            return self.model(*inputs)

    def copy_outputs(self, outs, offset):
        torch = self.torch
        outs = as_outputs(torch, outs, "candidate" if self.subject in ("modelnew", "host")
                          else "reference")
        specs = [t for t in self.tensors if t["role"] in (ROLE_OUTPUT, ROLE_INOUT)]
        if len(outs) != len(specs):
            raise WorkerError("wrong", "forward returned %d tensor(s), the problem has %d output(s)"
                              % (len(outs), len(specs)))
        for o, s in zip(outs, specs):
            want = torch_dtype(torch, s["dtype"])
            if type(o) is not torch.Tensor and type(o) is not torch.nn.Parameter:
                raise WorkerError("wrong", "output '%s' is a %s, not a plain torch.Tensor (a "
                                  "subclass would run its own code in kopt's checks)"
                                  % (s["name"], type(o).__name__))
            if list(o.shape) != list(s["shape"]):
                raise WorkerError("wrong", "output '%s' has shape %s, expected %s"
                                  % (s["name"], list(o.shape), s["shape"]))
            if o.dtype != want:
                raise WorkerError("wrong", "output '%s' has dtype %s, expected %s"
                                  % (s["name"], o.dtype, want))
            if o.device != self.device and not (o.device.type == self.device.type and
                                                self.device.index is None):
                raise WorkerError("wrong", "output '%s' is on %s, expected %s (the outputs "
                                  "must be computed on the problem's device)"
                                  % (s["name"], o.device, self.device))
            n = s["bytes"]
            if n and self.export is not None:
                src = o.detach().contiguous().reshape(-1).view(torch.uint8)
                self.export.tensor[offset:offset + n].copy_(src)
            elif n and self.shm is not None:
                src = o.detach().contiguous().reshape(-1).view(torch.uint8)
                self.shm_t[offset:offset + n].copy_(src)
            offset += n

    def hand_over(self, run, offset):
        """A streaming subject: the run's outputs are in the export buffer; the parent has the
        reference compare them (this process stopped meanwhile), then says "next"."""
        if not self.streaming or self.subject == "reference":
            return
        self.sync()
        self.emit({"event": "outputs", "phase": self.phase, "run": run, "offset": offset})
        line = sys.stdin.readline()
        if line.strip() != "next":
            raise WorkerError("harness", "the parent went away while the outputs were compared")

    def input_sums(self, inputs):
        """A digest of each input tensor (the parent compares the candidate's with the
        reference's: a candidate that writes an input is caught)."""
        torch = self.torch
        sums = []
        for t in self.tensors:
            if t["role"] != ROLE_INPUT or not t.get("pytorch", "").startswith("input:"):
                continue
            v = inputs[int(t["pytorch"].split(":")[1])]
            if isinstance(v, torch.Tensor):
                h = tensor_digest(torch, v)
            else:
                h = hashlib.sha256(repr(v).encode()).hexdigest()[:16]
            sums.append({"tensor": t["name"], "sum": h})
        return sums

    def trials(self, ph, sums):
        for i, tr in enumerate(ph["trials"]):
            ts = time.monotonic()
            inputs = self.inputs(int(tr["seed"]))
            host = self.host_args(inputs) if self.subject == "host" else None
            self.sync()
            ts = self.step("trial_inputs", ts)
            try:
                self.poison(host)
                outs = self.run_once(inputs, host)
                self.sync()
            except WorkerError:
                raise
            except Exception as e:  # the subject's own failure
                raise classify(e, self.subject)
            ts = self.step("trial_run", ts)
            self.check_sandbox()
            ts = self.step("guard_checks", ts)
            self.copy_outputs(outs, int(tr["offset"]))
            ts = self.step("output_transfer", ts)
            self.hand_over(i, int(tr["offset"]))
            ts = self.step("compare_wait", ts)
            if tr.get("check_inputs"):
                sums["trial %d" % i] = self.input_sums(inputs)
                self.step("input_digests", ts)
            self.progress("trial %d" % i)

    def refill(self, xs, seed):
        """New contents for an input set, in place (the same buffers): get_inputs() under
        `seed`, copied into `xs`."""
        torch = self.torch
        for old, new in zip(xs, self.inputs(seed)):
            if isinstance(old, torch.Tensor) and isinstance(new, torch.Tensor):
                old.copy_(new)

    def input_slots(self, xs):
        """How many input sets the timed runs rotate between: two where the device has room
        for a second set and a refresh's transient copy, else one."""
        torch = self.torch
        if not self.cuda:
            return 2
        need = sum(v.numel() * v.element_size() for v in xs if isinstance(v, torch.Tensor))
        need += sum(int(t.get("bytes", 0)) for t in self.tensors
                    if t["role"] in (ROLE_OUTPUT, ROLE_INOUT))
        try:
            free = torch.cuda.mem_get_info(self.device)[0]
        except Exception:
            return 1
        return 2 if 2 * need < 0.4 * free else 1

    def timing(self, ph, tm, po):
        """The timed runs, the same loop for every subject (kopt_torch_timing.py), on input
        sets refreshed before every chunk; then one checked call on inputs of the timing
        seed (never seen before in these buffers), its kernels counted (CUPTI), its outputs
        compared by the parent with the reference's for the same inputs."""
        seed = int(tm["seed"])
        ts = time.monotonic()
        sets = [self.inputs(round_seed())]
        nslots = self.input_slots(sets[0])
        sets += [self.inputs(round_seed()) for _ in range(1, nslots)]
        host = self.subject == "host"
        hosts = [self.host_args(x) for x in sets] if host else None
        self.sync()
        ts = self.step("timing_inputs", ts)

        def refresh(r):
            for i, x in enumerate(sets):
                self.refill(x, round_seed())
                if host:
                    hosts[i] = self.host_args(x)

        def report(brackets):
            brackets.report(EVENT_FD, self.phase)

        try:
            fields = kopt_torch_timing.time_subject(
                self.torch, self.device,
                lambda i: self.run_once(sets[i], hosts[i] if host else None), tm,
                getattr(self, "l2", 0), self.progress,
                prepare=(lambda i: self.poison(hosts[i])) if host else None,
                lib=self.clock, refresh=refresh, slots=nslots,
                check=lambda: self.check_sandbox("in the timed runs"), report=report)
            ts = self.step("timed_runs", ts)   # the input refreshes between chunks included
            self.refill(sets[0], seed)
            if host:
                hosts[0] = self.host_args(sets[0])
                self.poison(hosts[0])
            self.sync()
            ts = self.step("timing_inputs", ts)
            outs = self.census(po, lambda: self.run_once(sets[0], hosts[0] if host else None))
            ts = self.step("checked_call", ts)
        except WorkerError:
            raise
        except Exception as e:
            raise classify(e, self.subject)
        if self.clock is None:
            fields["clock_error"] = self.clock_error
        self.check_sandbox("after the timed runs")
        ts = self.step("guard_checks", ts)
        self.copy_outputs(outs, int(tm["offset"]))
        ts = self.step("output_transfer", ts)
        self.hand_over(len(ph["trials"]), int(tm["offset"]))
        ts = self.step("compare_wait", ts)
        po["input_sums"]["timed"] = self.input_sums(sets[0])
        self.step("input_digests", ts)
        po.update(fields)

    def census(self, po, call):
        """One call of the subject with CUPTI's kernel activity on (the GPU, libkopt's clock
        loaded): po["kernels"] the names of the kernels it launched, or po["census_error"]."""
        counting = False
        if self.cuda and self.clock is not None:
            self.sync()
            try:
                self.clock.census_begin()
                counting = True
            except OSError as e:
                po["census_error"] = str(e)
        elif self.cuda:
            po["census_error"] = self.clock_error
        try:
            outs = call()
            self.sync()
        finally:
            if counting:
                try:
                    po["kernels"] = self.clock.census_end()
                except (OSError, ValueError) as e:
                    po["census_error"] = str(e)
        return outs

    def run(self, job):
        """Every size set's subject built first, then the lockdown, then the runs."""
        phases = []
        built = []
        for i, ph in enumerate(job["phases"]):
            self.phase = i
            ts = time.monotonic()
            try:
                built.append(self.make_subject(ph))
                self.sync()
                self.step("build_model", ts)
            except WorkerError:
                raise
            except Exception as e:
                raise WorkerError("launch" if self.subject == "modelnew" else "harness",
                                  "building the %s failed: %s: %s"
                                  % (self.subject, type(e).__name__, e))
        self.built = built
        ts = time.monotonic()
        self.lock_candidate(job, built)
        self.step("warmup_and_lockdown", ts)
        for i, ph in enumerate(job["phases"]):
            self.phase = i
            if hasattr(self, "_io_keep"):
                del self._io_keep
            po = {"input_sums": {}}
            phases.append(po)
            self.use_subject(built[i], ph)
            self.progress("setup")
            self.trials(ph, po["input_sums"])
            if isinstance(ph.get("timing"), dict):
                self.timing(ph, ph["timing"], po)
        return phases


    # -- the streaming reference's comparisons
    def serve_compares(self, job):
        """After its result, a streaming reference compares subjects' outputs with its own,
        one command line at a time, until EOF: "open" a subject's export buffer, "compare"
        one run's outputs (this worker runs the reference again on that run's inputs: its
        seed from this worker's own job), "repeat" (a subject's two slots with each other:
        two runs on trial 0's inputs), "close"."""
        import kopt_torch_compare as kc
        torch = self.torch
        peer = None
        if self.cuda:
            torch.cuda.empty_cache()       # the subjects' room on the device
        for line in sys.stdin:
            t0 = time.monotonic()
            try:
                cmd = json.loads(line)
                op = cmd.get("op")
            except ValueError:
                continue
            ev = {"event": "compared", "op": op}
            try:
                if op == "open":
                    if peer is not None:
                        peer.close()
                    peer = kc.Peer(torch, self.device, cmd)
                elif op == "close":
                    if peer is not None:
                        peer.close()
                    peer = None
                elif op in ("compare", "repeat"):
                    if peer is None:
                        raise ValueError("no subject's buffer is open")
                    ev["checks"] = self.compare_run(kc, peer, job, cmd)
                else:
                    raise ValueError("unknown command %r" % op)
            except Exception as e:   # said to the parent: the evaluation is an ERROR
                ev["error"] = ("%s: %s" % (type(e).__name__, e))[:2000]
            if self.cuda and cache_to_release(torch, self.device):
                torch.cuda.empty_cache()
            ev["ms"] = (time.monotonic() - t0) * 1e3
            self.emit(ev)
        if peer is not None:
            peer.close()

    def compare_run(self, kc, peer, job, cmd):
        """One run's outputs in the subject's buffer at cmd["offset"] against the reference's
        own for the same inputs ("compare"), or against the subject's at cmd["against"]
        ("repeat"); per output: the tolerance the parent gives."""
        torch = self.torch
        p = int(cmd["phase"])
        ph = job["phases"][p]
        self.phase = p
        self.use_subject(self.built[p], ph)
        specs = [t for t in self.tensors if t["role"] in (ROLE_OUTPUT, ROLE_INOUT)]
        tols = cmd.get("tolerances") or []
        if len(tols) != len(specs):
            raise ValueError("%d tolerances for %d outputs" % (len(tols), len(specs)))
        if cmd["op"] == "compare":
            run = int(cmd["run"])
            trials = ph["trials"]
            seed = int(trials[run]["seed"]) if run < len(trials) else int(ph["timing"]["seed"])
            with torch.no_grad():
                want = as_outputs(torch, self.run_once(self.inputs(seed)), "reference")
            self.sync()
        checks = []
        off = int(cmd["offset"])
        against = int(cmd.get("against", 0))
        for i, (s, tol) in enumerate(zip(specs, tols)):
            dt = torch_dtype(torch, s["dtype"])
            got = peer.view(off, int(s["bytes"]), dt, s["shape"])
            w = want[i] if cmd["op"] == "compare" else \
                peer.view(against, int(s["bytes"]), dt, s["shape"])
            c = kc.compare(torch, got, w.detach(), DTYPES[int(s["dtype"])], float(tol[0]),
                           float(tol[1]))
            c["tensor"] = s["name"]
            checks.append(c)
            off += int(s["bytes"])
            against += int(s["bytes"])
        return checks


CACHE_KEPT = 0.05, 1 << 30   # what a streaming reference keeps cached: a share of the
                             # device's memory, at most this many bytes


def cache_to_release(torch, device):
    """Whether the streaming reference's cached blocks are worth giving back between two
    commands (the subjects' room on the device): only above CACHE_KEPT's bound. Each
    release frees them and the next command allocates them again, driver calls that every
    GPU's workers wait on when several GPUs evaluate at once."""
    try:
        total = torch.cuda.get_device_properties(device).total_memory
        return torch.cuda.memory_reserved(device) > min(CACHE_KEPT[0] * total, CACHE_KEPT[1])
    except Exception:
        return True


def round_seed():
    """The seed of an input set in a round of timed runs: from the OS, so that neither its
    value nor the generator's state tells a candidate a timed round from the checked call
    (whose seed, the parent's, the reference's worker uses too)."""
    return int.from_bytes(os.urandom(8), "little") >> 1


def tensor_digest(torch, v, chunk=1 << 22):
    """A position-weighted checksum of a tensor's bytes, computed where the tensor is (no
    copy of a 6 GB input to the host), in chunks of `chunk` words (each chunk's int64
    temporaries, 32 MB, are reused from torch's cache by the next): any change to any byte
    changes it but for a 2^-64-ish coincidence of the weighted sums. Every process must use
    the same chunk: the digest depends on it."""
    b = v.detach().contiguous().reshape(-1).view(torch.uint8)
    n = b.numel()
    if n % 4 == 0 and n:          # 32-bit words: a quarter of the elements to weigh
        b = b.view(torch.int32)
    total = torch.zeros((), dtype=torch.int64, device=b.device)
    for start in range(0, b.numel(), chunk):   # int64 arithmetic wraps: the sums mod 2^64
        c = b[start:start + chunk].to(torch.int64)
        pos = torch.arange(start, start + c.numel(), device=c.device, dtype=torch.int64)
        w = (pos % 1000003) * 2654435761 + 1
        total = total * 1315423911 + (c * w).sum() + c.sum()
    return "%016x-%d" % (int(total.item()) & 0xffffffffffffffff, n)


def warm_ahead(torch, dev):
    """In a worker started ahead, once its CUDA context is made: torch's kernels that an
    evaluation's first calls would otherwise load (CUDA loads a kernel's module at its
    first launch) while the evaluation waits, loaded now, while the parent still works:
    those of the input digests and of the inputs' random factories. Nothing here depends
    on the job or the candidate; a failure only leaves the loading to the evaluation.
    CUPTI is not started here: the census starts it after the timed runs, never before.
    Returns the milliseconds it took."""
    t0 = time.monotonic()
    try:
        x = torch.randn(1024, device=dev)
        torch.rand(1024, device=dev)
        tensor_digest(torch, x)
        tensor_digest(torch, x[:3].to(torch.float16))  # an odd byte count: the byte path
        if str(dev).startswith("cuda"):
            torch.cuda.synchronize()
    except Exception:
        pass
    return (time.monotonic() - t0) * 1e3


def classify(e, subject):
    msg = "%s: %s" % (type(e).__name__, e)
    low = msg.lower()
    if isinstance(e, OSError) and e.errno == errno.EFBIG:   # Python ignores SIGXFSZ
        return WorkerError("tamper", "the %s wrote a file larger than the sandbox allows: %s"
                           % ("candidate" if subject in ("modelnew", "host") else subject, msg))
    if "out of memory" in low:
        return WorkerError("oom", msg)
    if "invalid device ordinal" in low and os.environ.get("KOPT_WORKER_PINNED"):
        return WorkerError("crash", msg + " [kopt's worker sees only the GPU it evaluates on, as "
                           "cuda:0 (the inputs' device): code that names another GPU cannot "
                           "run here]")
    if "illegal" in low or "device-side assert" in low or "cuda error" in low or \
            "misaligned" in low:
        return WorkerError("crash", msg)
    if subject in ("modelnew", "host"):
        return WorkerError("crash", msg)
    return WorkerError("harness", msg)


class HostGate:
    """A folder per user and host that every kopt worker on the host shares, with a file per
    GPU, so that a worker started ahead makes its CUDA context while no other GPU's worker
    is in its measured run (issue 29: on 4 GPUs, contexts made on other GPUs slowed a
    candidate's census 22 -> 108 ms, its digests and trial runs too, since the driver makes
    contexts under a lock other calls wait on). A measured run holds its GPU's file shared
    (the GPU it is pinned to, KOPT_WORKER_PINNED; "any" unpinned); a worker started ahead
    waits, up to $KOPT_GATE_WAIT_MS (default 1500), until no measured run holds another
    GPU's file, or until its job comes, then makes its context. Its own GPU's runs are not
    waited for: on 1 x H200 a context beside them left the census at 28-36 ms against 23,
    and waiting for them cost the next evaluation 79 ms. An unpinned worker waits for every
    file. Nothing ever waits on the gate: it only moves the ahead workers' contexts into the
    gaps between other GPUs' measured runs. $KOPT_GATE names the folder, or "off"."""

    def __init__(self):
        self.fd = None
        self.dir = None
        self.others = {}    # file name -> fd, the other GPUs' files seen so far
        path = os.environ.get("KOPT_GATE", "")
        if path == "off":
            return
        if not path:
            base = "/dev/shm" if os.path.isdir("/dev/shm") else "/tmp"
            path = os.path.join(base, "kopt-gpu-gates-%d" % os.getuid())
        pinned = os.environ.get("KOPT_WORKER_PINNED", "")
        self.key = "gpu" + pinned if pinned.isdigit() else "any"
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
            self.fd = os.open(os.path.join(path, self.key), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                              0o600)
            self.dir = path
        except OSError:
            self.fd = None      # no gate: contexts are made at once, as without it

    def measuring(self, on):
        """Hold this GPU's file shared (on) or let it go: a measured run. Never waits: where
        the file is held alone (a worker's test of it, or a candidate holding it on purpose),
        the run goes on without the gate."""
        if self.fd is not None:
            try:
                fcntl.flock(self.fd, (fcntl.LOCK_SH | fcntl.LOCK_NB) if on else fcntl.LOCK_UN)
            except OSError:
                pass

    def busy(self):
        """Whether a measured run holds a file this worker's context would slow: another
        GPU's (an unpinned worker: any)."""
        try:
            names = os.listdir(self.dir)
        except OSError:
            return False
        for name in names:
            if name == self.key and name != "any":
                continue
            fd = self.others.get(name)
            if fd is None:
                try:
                    fd = self.others[name] = os.open(os.path.join(self.dir, name),
                                                     os.O_RDONLY | os.O_CLOEXEC)
                except OSError:
                    continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
            except OSError:
                return True
        return False

    def wait_quiet(self, job_fd=None):
        """Wait until no other GPU's worker is in a measured run, the wait's limit, or (job_fd)
        until the worker's job is there to read: an evaluation waiting for this worker must
        not wait for the gate too. Nothing is read from job_fd."""
        if self.fd is None:
            return
        try:
            limit = float(os.environ.get("KOPT_GATE_WAIT_MS", "1500")) / 1e3
        except ValueError:
            limit = 1.5
        end = time.monotonic() + limit
        while self.busy() and time.monotonic() < end:
            if job_fd is None:
                time.sleep(0.002)
            elif select.select([job_fd], [], [], 0.002)[0]:
                return      # the job came (or the parent went away): no more waiting


def worker_main():
    w = None
    job = None
    gate = HostGate()
    try:
        ahead = [a for a in sys.argv if a.startswith("--ahead=")]
        warmed = None
        ahead_at = {}   # when the worker started ahead made its context and warmed (trace_at)
        if ahead:   # started before its job (a session's next candidate): torch's import, the
            import torch  # noqa: F401  slow part of the start, while the parent works,
            dev = local_device(ahead[0].partition("=")[2])  # and the context of "--ahead=cuda:N"
            if dev.startswith("cuda") and torch.cuda.is_available():
                tg = time.monotonic()
                gate.wait_quiet(job_fd=sys.stdin.fileno())
                t0 = time.monotonic()
                ahead_at["ahead_gate"] = [round(tg * 1e3, 3), round(t0 * 1e3, 3)]
                torch.cuda.set_device(torch.device(dev))
                torch.zeros(1, device=dev)
                t1 = time.monotonic()
                ahead_at["ahead_context"] = [round(t0 * 1e3, 3), round(t1 * 1e3, 3)]
                if os.environ.get("KOPT_WORKER_WARM", "1") != "0":
                    warmed = warm_ahead(torch, dev)
                    ahead_at["ahead_warm"] = [round(t1 * 1e3, 3), round(time.monotonic() * 1e3, 3)]
        line = sys.stdin.readline()
        if not line:                # the session ended before a job came
            return 0
        job = json.loads(line)
        w = Worker()
        w.at.update(ahead_at)
        if warmed is not None:   # done before the job came: not part of the evaluation's time
            w.trace["ahead_warm"] = warmed
        stop = threading.Event()
        beat = threading.Thread(target=w.heartbeat, args=("loading", stop), daemon=True)
        beat.start()
        try:
            info = w.setup(job)
        finally:
            stop.set()
            beat.join()
        w.emit({"event": "hello", "device": info})
        if not sys.stdin.readline():   # the parent's "go", or EOF: it went away
            return 0
        if job.get("program_profile"):   # kopt profile: the program's kernels, no checks
            import kopt_torch_program
            w.emit({"event": "result", "device": info, "phases": [], "kernels": [],
                    "program": kopt_torch_program.record(w, job), "trace": w.trace,
                    "trace_at": w.at})
            return 0
        gate.measuring(True)
        try:
            phases = w.run(job)
        finally:
            gate.measuring(False)
        ev = {"event": "result", "device": info, "phases": phases, "kernels": [],
              "trace": w.trace, "trace_at": w.at}
        if w.sandbox and w.sandbox.report is not None:
            ev["sandbox"] = w.sandbox.report
        w.emit(ev)
        if w.streaming and w.subject == "reference":
            w.serve_compares(job)
        return 0
    except WorkerError as e:
        ev = {"event": "error", "kind": e.kind, "message": str(e)[:4000]}
    except Exception as e:   # setup: the problem's or the candidate's file did not load
        traceback.print_exc()
        kind = "launch" if job and job.get("torch", {}).get("subject") == "modelnew" else "harness"
        ev = {"event": "error", "kind": kind,
              "message": ("%s: %s" % (type(e).__name__, e))[:4000]}
    if w is not None:
        if job and len(job.get("phases", [])) > 1:
            ev["phase"] = job["phases"][w.phase].get("label", "main")
        if w.sandbox and w.sandbox.report is not None:
            ev["sandbox"] = w.sandbox.report
        w.emit(ev)
    else:
        os.write(EVENT_FD, (json.dumps(ev) + "\n").encode())
    return 0


# ---- import ---------------------------------------------------------------------------------

class ImportProblem(Exception):
    pass


def ident(s):
    s = re.sub(r"[^A-Za-z0-9_]", "_", s)
    return s if re.match(r"[A-Za-z_]", s) else "t_" + s


def probe(torch, mod, init, seed, dev, count=True):
    """Build the model and its inputs on `dev` and run forward once under PyTorch's FLOP
    counter (count=False: without it): (model, inputs, output, flops)."""
    from torch.utils.flop_counter import FlopCounterMode
    with torch.device(dev):
        torch.manual_seed(seed)
        model = mod.Model(*init).to(dev)
        torch.manual_seed(seed)
        inputs = [v.to(dev) if isinstance(v, torch.Tensor) else v for v in mod.get_inputs()]
    if not count:
        with torch.no_grad():
            return model, inputs, model(*inputs), 0
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        out = model(*inputs)
    return model, inputs, out, int(counter.get_total_flops())


# ---- check sizes at import ----------------------------------------------------------------
# A second, smaller, odd size set (problem.json "check_sizes") at which the worker runs every
# candidate too, so that one written for the benchmark's shapes is caught (SHAPE_SPECIFIC).
# The sizes are the module's integer globals; a set is kept only when the model builds and
# runs there (probed on the meta device: no memory) and every tensor's shape there is what
# problem.json's shape expression gives (docs/kernelbench.md, "Check sizes").

CHECK_CAP_BYTES = 256 << 20     # the check set's tensors, all together, at most this
CHECK_CPU_BYTES = 1 << 30       # a probe falls back to the CPU only for problems this small
# globals that configure the model rather than size its tensors: never changed (an
# axis-like "*_dim" only when small: KernelBench also names a row length "dim")
CONFIG_NAME = re.compile(r"kernel|stride|pad|dilation|group|head|pool|window|eps|axis", re.I)
AXIS_NAME = re.compile(r"(^|_)dims?$", re.I)


class CheckFail(Exception):
    """Why one candidate check set does not do (said in check_sizes_error)."""


def structural(name, v):
    """A global that is not a tensor dimension by its name or value: left unchanged."""
    return v <= 1 or CONFIG_NAME.search(name) is not None or \
        (AXIS_NAME.search(name) is not None and v <= 8)


def layout(torch, model, inputs, out):
    """A probe's tensors in problem.json's order (inputs, parameters and buffers, outputs):
    [(what, dtype, shape)], a Python number as shape (); and their bytes."""
    ents, nbytes = [], 0
    for i, v in enumerate(inputs):
        if isinstance(v, torch.Tensor):
            ents.append(("input %d" % i, str(v.dtype), tuple(v.shape)))
            nbytes += v.numel() * v.element_size()
        else:
            ents.append(("input %d" % i, type(v).__name__, ()))
    for key, t in list(model.named_parameters()) + list(model.named_buffers()):
        ents.append((key, str(t.dtype), tuple(t.shape)))
        nbytes += t.numel() * t.element_size()
    outs = [out] if isinstance(out, torch.Tensor) else list(out)
    for i, o in enumerate(outs):
        ents.append(("output %d" % i, str(o.dtype), tuple(o.shape)))
        nbytes += o.numel() * o.element_size()
    return ents, nbytes


def sizes_text(sizes):
    return " ".join("%s=%d" % kv for kv in sizes.items())


def first_line(e):
    t = str(e).strip().splitlines()
    return "%s: %s" % (type(e).__name__, t[0][:200] if t else "")


def probe_at(torch, mod, over, seed, devices):
    """The layout of the model built and run with the module's globals overridden by `over`
    (restored afterwards), on the first of `devices` where it runs; raises CheckFail."""
    saved = {k: getattr(mod, k) for k in over if hasattr(mod, k)}
    err = None
    for dev in devices:
        set_sizes(mod, over)
        try:
            torch.manual_seed(seed)
            init = mod.get_init_inputs()
            model, inputs, out, _ = probe(torch, mod, init, seed, torch.device(dev),
                                          count=False)
            return layout(torch, model, inputs, out)
        except Exception as e:
            err = err or e
        finally:
            for k, v in saved.items():
                setattr(mod, k, v)
    raise CheckFail("at %s the model does not run: %s" % (sizes_text(over), first_line(err)))


class Expr:
    """A tensor dim as problem.json writes it: `text`, over the sizes `names`."""

    def __init__(self, text, names, value):
        self.text, self.names, self.value = text, names, value


def fit_b(ds, ss, a, q):
    """The b, nearest 0, with (a*S + b) / q (C's integer arithmetic, the numerator positive)
    giving ds[i] at S = ss[i] for every i; or None."""
    lo = max(q * d - a * v for d, v in zip(ds, ss))
    hi = min(q * d - a * v + q - 1 for d, v in zip(ds, ss))
    if lo > hi:
        return None
    b = 0 if lo <= 0 <= hi else lo if lo > 0 else hi
    return b if a * min(ss) + b > 0 else None


def affine(name, a, b, q):
    t = name if a == 1 else "%d*%s" % (a, name)
    if b:
        t += " %s %d" % ("+" if b > 0 else "-", abs(b))
    if q > 1:
        t = "%s / %d" % ("(%s)" % t if b or a > 1 else t, q)
    return Expr(t, {name}, lambda v: (a * v[name] + b) // q)


def same_layout(main_ents, ents, over):
    """CheckFail unless a probe at `over` has the main sizes' tensors (names, dtypes, ranks)."""
    if len(main_ents) != len(ents):
        raise CheckFail("at %s the model has %d tensors, not %d"
                        % (sizes_text(over), len(ents), len(main_ents)))
    for (w0, t0, s0), (w1, t1, s1) in zip(main_ents, ents):
        if (w0, t0, len(s0)) != (w1, t1, len(s1)):
            raise CheckFail("at %s %s is %s %s, where the main sizes give %s %s %s"
                            % (sizes_text(over), w1, t1, list(s1), w0, t0, list(s0)))


def dim_exprs(points, sizes, check, fitted=True):
    """Each tensor's shape as a list of literals and Exprs that gives every point's layout
    at its sizes: points[0] is the main set's (sizes, layout), points[1] the check set's,
    any further ones fix fitted expressions. A dim is a literal, a size's name, a product of
    two, or (fitted=True) one size's (a*S + b) / q, the simplest first. Raises CheckFail
    naming the first dim that follows none."""
    vals = [v for v, _ in points]
    out = []
    for i, (what, _, sh0) in enumerate(points[0][1]):
        shape = []
        for j in range(len(sh0)):
            ds = [ents[i][2][j] for _, ents in points]
            same = [k for k in sizes if all(v[k] == d for v, d in zip(vals, ds))]
            e = None
            if len(set(ds)) == 1:   # a literal, or a size the check set keeps
                kept = [k for k in same if k not in check]
                shape.append(Expr(kept[0], {kept[0]}, lambda v, k=kept[0]: v[k])
                             if len(kept) == 1 and ds[0] > 1 else ds[0])
                continue
            if same:
                e = Expr(same[0], {same[0]}, lambda v, k=same[0]: v[k])
            for k in ([] if e else check):
                for m in sizes:
                    if m != k and all(v[k] * v[m] == d for v, d in zip(vals, ds)):
                        e = Expr("%s*%s" % (k, m), {k, m}, lambda v, k=k, m=m: v[k] * v[m])
                        break
                if e:
                    break
            for q in (range(1, 9) if fitted and not e else []):
                for a in range(1, 9):
                    if q > 1 and a > 1 and (a % q == 0 or q % a == 0):
                        continue
                    for k in check:
                        b = fit_b(ds, [v[k] for v in vals], a, q)
                        if b is not None:
                            e = affine(k, a, b, q)
                            break
                    if e:
                        break
                if e:
                    break
            if e is None:
                raise CheckFail("%s dim %d is %d at the main sizes and %d at %s: not a size, "
                                "nor a simple expression of one" % (what, j, ds[0], ds[1],
                                                                    sizes_text(check)))
            shape.append(e)
        out.append(shape)
    return out


def odd_value(v, f):
    """v scaled by f, odd, at least 3, and not v."""
    n = max(3, int(round(v * f)))
    n = n if n % 2 else n - 1 if n > 3 else n + 1
    if n == v:
        n = v - 2 if v - 2 >= 3 else v + 2
    return n


def scaled(sizes, names, f, tied):
    """Check values for `names`: each scaled by f and made odd; all different (tied: sizes
    equal at the main set stay equal)."""
    out, used, by_main = {}, set(), {}
    for k in sorted(names, key=lambda k: -sizes[k]):
        if tied and sizes[k] in by_main:
            out[k] = by_main[sizes[k]]
            continue
        n, step = odd_value(sizes[k], f), 0
        while n in used or n == sizes[k]:
            step += 1
            n += 2 * step if step % 2 else -2 * step
            if n < 3:
                n = 3 + 2 * step
        used.add(n)
        out[k] = by_main[sizes[k]] = n
    return {k: out[k] for k in names}


def find_check_sizes(torch, mod, sizes, seed, devices, main_ents, main_bytes):
    """(check sizes, each tensor's shape as literals and Exprs, a note naming the shape sizes
    kept unchanged or None); raises CheckFail saying why there is no check set. Tries every
    shape size scaled (all different, then those equal at the main sizes kept equal), at the
    largest scale whose tensors fit the budget; then only the sizes that work alone."""
    limit = min(main_bytes / 4.0, CHECK_CAP_BYTES)
    cands = [k for k in sizes if not structural(k, sizes[k])]
    dims = {d for _, _, s in main_ents for d in s}
    if not cands:
        raise CheckFail("the module has no integer globals: its shapes are literals"
                        if not sizes else "its integer globals (%s) configure the model (kernel "
                        "sizes, strides, flags): none is a shape size to change"
                        % ", ".join(sorted(sizes)))
    ladder = [0.5 / 2 ** (i / 2.0) for i in range(28)]

    def attempt(names, tied, budget):
        """The largest-scale set of `names` that runs with shapes following the sizes and
        fits the budget (budget=False: the first that runs)."""
        err, best, seen = None, None, []
        for f in ladder:
            check = scaled(sizes, names, f, tied)
            if check in seen:
                continue
            seen.append(check)
            try:
                ents, nbytes = probe_at(torch, mod, check, seed, devices)
                same_layout(main_ents, ents, check)
                dim_exprs([(sizes, main_ents), (dict(sizes, **check), ents)], sizes, check)
            except CheckFail as e:
                err = err or e
                continue
            if best is None or nbytes < best[2]:
                best = (check, ents, nbytes)
            if nbytes <= limit or not budget:
                break
        if best is None:
            raise err
        if budget and best[2] > max(limit, min(main_bytes, CHECK_CAP_BYTES)):
            raise CheckFail("at %s the tensors still take %.1f MB (the main sizes' %.1f MB)"
                            % (sizes_text(best[0]), best[2] / 1e6, main_bytes / 1e6))
        return best[0], shapes(best[0], best[1])

    def shapes(check, ents):
        """The shape expressions; where a dim is not a size's name, a product of two or a
        literal, fitted over the check set shifted by 1..7 (every residue of a division by
        up to 8) and confirmed at two more sets."""
        points = [(sizes, main_ents), (dict(sizes, **check), ents)]
        try:
            return dim_exprs(points, sizes, check, fitted=False)
        except CheckFail:
            pass
        series, err = [], None
        for shift in (1, 2, 3, 4, 5, 6, 7, 9, 10):
            over = {k: v + shift for k, v in check.items()}
            try:
                e2, _ = probe_at(torch, mod, over, seed, devices)
                same_layout(main_ents, e2, over)
                series.append((dict(sizes, **over), e2))
            except CheckFail as e:
                err = err or e
        if len(series) < 3:
            raise CheckFail("the shapes at %s follow the sizes only through a fitted "
                            "expression, and the model does not run at enough nearby sizes to "
                            "fit one: %s" % (sizes_text(check), err))
        exprs = dim_exprs(points + series[:-2], sizes, check)
        for vals, e2 in series[-2:]:
            for (what, _, sh), ex in zip(e2, exprs):
                want = [e if isinstance(e, int) else e.value(vals) for e in ex]
                if want != list(sh):
                    raise CheckFail("at %s %s is %s, not %s as the shape fitted at nearby sizes "
                                    "says" % (sizes_text({k: vals[k] for k in check}), what,
                                              list(sh), want))
        return exprs

    def solve(names, budget=True):
        err = None
        for tied in (False, True):
            try:
                check, exprs = attempt(names, tied, budget)
            except CheckFail as e:
                err = err or e
                continue
            moved = {n for sh in exprs for e in sh if not isinstance(e, int)
                     for n in e.names} & set(check)
            if not moved:
                raise CheckFail("no tensor's shape follows %s" % ", ".join(names))
            if moved != set(check):       # a global that sizes nothing: left as it is
                return solve([k for k in names if k in moved], budget)
            return check, exprs
        raise err

    def ordered(check):
        return {k: check[k] for k in sizes if k in check}   # as the module lists them

    try:
        check, exprs = solve(cands)
        return ordered(check), exprs, None
    except CheckFail as e:
        first = e
    # only the sizes that work alone (a global also written into a tuple, a size that must
    # divide another, ...), then as many of them together as work
    alone, why = [], {}
    for k in sorted(cands, key=lambda k: -sizes[k]):
        try:
            solve([k], budget=False)
            alone.append(k)
        except CheckFail as e:
            why[k] = str(e)
    if not alone:
        if all(why[k].startswith("no tensor's shape follows") for k in cands):
            raise CheckFail("no tensor's shape follows the integer globals (%s): the shapes are "
                            "literals in get_inputs() or the model" % ", ".join(cands))
        if all(sizes[k] not in dims for k in cands):
            raise CheckFail("no integer global is a tensor dimension (the shapes are literals "
                            "in get_inputs() or the model): %s" % first)
        raise CheckFail("no shape size can change: %s" % first)
    try:
        check, exprs = solve(alone)
    except CheckFail:
        kept = []
        for k in alone:
            try:
                solve(kept + [k], budget=False)
                kept.append(k)
            except CheckFail as e:
                why[k] = "not with %s: %s" % (", ".join(kept), e)
        check, exprs = solve(kept)
    pinned = [k for k in cands if k not in check and sizes[k] in dims]
    note = None
    if pinned:
        note = "kept at the main sizes: " + "; ".join(
            "%s (%s)" % (k, why.get(k, "no tensor follows it with the others changed"))
            for k in pinned)
    return ordered(check), exprs, note


def import_one(path, out_dir, args):
    import torch
    base = os.path.basename(path)
    name = args.prefix + re.sub(r"[^A-Za-z0-9_-]", "_", os.path.splitext(base)[0])
    try:
        mod = load_module(path, "kb_import_" + re.sub(r"\W", "_", name))
    except Exception as e:
        raise ImportProblem("%s: cannot be imported: %s: %s" % (path, type(e).__name__, e))
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(mod, attr):
            raise ImportProblem("%s: no %s (a KernelBench problem defines class Model, "
                                "get_inputs() and get_init_inputs())" % (path, attr))
    sizes = {k: v for k, v in vars(mod).items()
             if isinstance(v, int) and not isinstance(v, bool) and not k.startswith("_")
             and re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", k) and v >= 0}
    seed = 1234
    torch.manual_seed(seed)
    init = mod.get_init_inputs()
    for i, v in enumerate(init):
        if not isinstance(v, (int, float, bool, tuple, list, str)) and v is not None:
            raise ImportProblem("%s: get_init_inputs() item %d is a %s: only numbers, strings, "
                                "tuples and lists are passed to Model()"
                                % (path, i, type(v).__name__))
    # shapes, dtypes and FLOPs on the meta device first (no memory, no arithmetic: level-1
    # problems have 6 GB inputs); where an op has no meta kernel, on the real device
    devices = ["meta", args.device] if args.device != "meta" else ["meta"]
    for n_try, dev in enumerate(devices):
        try:
            model, inputs, out, flops = probe(torch, mod, init, seed, torch.device(dev))
            break
        except ImportProblem:
            raise
        except Exception:
            if n_try == len(devices) - 1:
                raise
    try:
        params = list(inspect.signature(model.forward).parameters)
    except (TypeError, ValueError):
        params = []
    tensors = []
    used = set()

    def unique(n):
        n = ident(n)
        while n in used:
            n += "_"
        used.add(n)
        return n

    # a dim equal to exactly one size's value is written as that size
    by_value = {}
    for k, v in sizes.items():
        by_value.setdefault(v, []).append(k)

    def shape_of(t):
        return [by_value[d][0] if len(by_value.get(d, [])) == 1 and d > 1 else d
                for d in t.shape]

    def dt_name(t, what):
        c = dtype_code(torch, t.dtype)
        if c is None:
            raise ImportProblem("%s: %s has dtype %s, which kopt cannot map (f32, f16, bf16, "
                                "f64, i32, i64)" % (path, what, t.dtype))
        return DTYPES[c]

    nbytes = 0
    for i, v in enumerate(inputs):
        pname = params[i] if i < len(params) and params[i] not in ("args", "kwargs") else "in%d" % i
        what = "get_inputs() item %d (%s)" % (i, pname)
        if isinstance(v, bool):
            raise ImportProblem("%s: %s is a bool: not supported" % (path, what))
        if isinstance(v, torch.Tensor):
            tensors.append({"name": unique(pname), "dtype": dt_name(v, what),
                            "shape": shape_of(v), "role": "input", "pytorch": "input:%d" % i})
            nbytes += v.numel() * v.element_size()
        elif isinstance(v, int):
            tensors.append({"name": unique(pname), "dtype": "i64", "shape": [], "role": "input",
                            "pytorch": "input:%d" % i})
        elif isinstance(v, float):
            tensors.append({"name": unique(pname), "dtype": "f32", "shape": [], "role": "input",
                            "pytorch": "input:%d" % i})
        else:
            raise ImportProblem("%s: %s is a %s: kopt maps tensors, ints and floats"
                                % (path, what, type(v).__name__))
    for key, t in list(model.named_parameters()) + list(model.named_buffers()):
        kind = "param" if any(key == k for k, _ in model.named_parameters()) else "buffer"
        tensors.append({"name": unique("p_" + key), "dtype": dt_name(t, "%s %s" % (kind, key)),
                        "shape": shape_of(t), "role": "input", "pytorch": "%s:%s" % (kind, key)})
        nbytes += t.numel() * t.element_size()
    if isinstance(out, torch.Tensor):
        outs = [out]
    elif isinstance(out, (tuple, list)) and out and all(isinstance(o, torch.Tensor) for o in out):
        outs = list(out)
    else:
        raise ImportProblem("%s: forward returns %s: kopt maps a tensor or a tuple of tensors"
                            % (path, type(out).__name__))
    for i, o in enumerate(outs):
        n = "out" if len(outs) == 1 else "out%d" % i
        tensors.append({"name": unique(n), "dtype": dt_name(o, "output %d" % i),
                        "shape": shape_of(o), "role": "output", "pytorch": "output:%d" % i})
        nbytes += o.numel() * o.element_size()
    # the check sizes: a smaller, odd size set where the model still builds and runs and
    # every shape follows the sizes; the shapes then written as those expressions
    main_ents, _ = layout(torch, model, inputs, out)
    del model, inputs, out
    probe_devs = ["meta"] + ([args.device] if args.device != "meta" and
                             nbytes <= CHECK_CPU_BYTES else [])
    check, check_err, check_note = None, None, None
    try:
        check, exprs, check_note = find_check_sizes(torch, mod, sizes, seed, probe_devs,
                                                    main_ents, nbytes)
        for t, ex in zip(tensors, exprs):
            t["shape"] = [e if isinstance(e, int) else e.text for e in ex]
    except CheckFail as e:
        check_err = str(e)
    except Exception as e:      # kopt's own failure: the problem is still imported
        check_err = "the search for check sizes failed: %s" % first_line(e)
    counts = ["bytes"] + (["flops"] if flops > 0 else [])
    work = {"bytes": bytes_expr(tensors, sizes, nbytes)}
    if flops > 0:
        work["flops"] = flops
    if any(o.dtype in (torch.float16, torch.bfloat16) for o in outs):
        work["compute"] = "fp16" if outs[0].dtype == torch.float16 else "bf16"
    dest = os.path.join(out_dir, name)
    os.makedirs(dest, exist_ok=True)
    shutil.copyfile(path, os.path.join(dest, "model.py"))
    prob = {
        "name": name,
        "description": "KernelBench problem %s; work counts: %s" % (
            base, ", ".join(counts) + ("" if flops > 0 else
                                       " (no FLOP count: FlopCounterMode counts none of its ops)")),
        "sizes": sizes,
        **({"check_sizes": check} if check else {}),
        "tensors": tensors,
        "reference": {"pytorch": "model.py"},
        "tolerance": {"atol": args.atol, "rtol": args.rtol},
        "work": work,
        "seed": seed,
    }
    with open(os.path.join(dest, "problem.json"), "w") as f:
        f.write(problem_text(prob))
    rec = {"file": path, "problem": dest, "name": name, "counts": counts, "bytes": nbytes,
           "flops": flops, "tensors": len(tensors), "sizes": sizes}
    if check:
        rec["check_sizes"] = check
        if check_note:
            rec["check_sizes_note"] = check_note
    else:
        rec["check_sizes_error"] = check_err
    return rec


ELEM_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "f64": 8, "i32": 4, "i64": 8}


def bytes_expr(tensors, sizes, nbytes):
    """The bytes the tensors move as an expression over the sizes (so the speed-of-light
    bound follows --size and the check sizes), when it gives `nbytes` at the problem's own
    sizes; else the number."""
    terms = []
    for t in tensors:
        if not t["shape"] or not t["pytorch"].split(":")[0] in ("input", "param", "buffer",
                                                               "output"):
            continue
        dims = [str(d) if isinstance(d, int) or re.match(r"^\w+$", d) else "(%s)" % d
                for d in t["shape"]]
        terms.append("*".join(["%d" % ELEM_BYTES[t["dtype"]]] + dims))
    if not terms:
        return nbytes
    text = " + ".join(terms)
    try:
        value = eval(re.sub(r"(?<![/])/(?!/)", "//", text), {"__builtins__": {}}, dict(sizes))
    except Exception:
        return nbytes
    return text if value == nbytes else nbytes


def problem_text(prob):
    """problem.json as people write it: one line per field, one line per tensor."""
    lines = []
    for k, v in prob.items():
        if k == "tensors":
            body = ",\n".join("    " + json.dumps(t) for t in v)
            lines.append('  "tensors": [\n%s\n  ]' % body)
        else:
            lines.append("  %s: %s" % (json.dumps(k), json.dumps(v)))
    return "{\n" + ",\n".join(lines) + "\n}\n"


def import_main(argv):
    import argparse
    ap = argparse.ArgumentParser(prog="kopt kb import")
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--atol", type=float, default=1e-2)
    ap.add_argument("--rtol", type=float, default=1e-2)
    ap.add_argument("--prefix", default="")
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args(argv)
    try:
        import torch  # noqa
    except Exception as e:
        print(json.dumps({"file": args.src, "error": "PyTorch is not installed for %s (%s): "
                          "kopt kb import runs the problems' Python" % (sys.executable, e)}))
        return 2
    if os.path.isdir(args.src):
        def natural(name):   # "2_x" before "10_x", as KernelBench numbers its problems
            return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]
        files = [os.path.join(args.src, f)
                 for f in sorted(os.listdir(args.src), key=natural)
                 if f.endswith(".py") and not f.startswith("_")]
    else:
        files = [args.src]
    bad = 0
    for f in files:
        try:
            rec = import_one(f, args.out, args)
        except ImportProblem as e:
            rec = {"file": f, "error": str(e)}
            bad += 1
        except Exception as e:
            rec = {"file": f, "error": "%s: running it failed: %s: %s"
                   % (f, type(e).__name__, str(e).splitlines()[0] if str(e) else "")}
            bad += 1
        print(json.dumps(rec), flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) >= 2 and sys.argv[1] == "import":
        sys.exit(import_main(sys.argv[2:]))
    if len(sys.argv) >= 2 and sys.argv[1] == "worker":
        sys.exit(worker_main())
    sys.stderr.write(__doc__)
    sys.exit(2)
