#!/usr/bin/env python3
"""kopt's PyTorch worker: runs a problem's PyTorch reference (a KernelBench-style `Model`),
its torch.compile baseline, and candidates that need Python (a `ModelNew` file, or a kopt-native
host-mode shared object called through ctypes), for the parent's evaluation (src/eval/torch.c).

Two uses:
  kopt_torch_worker.py worker      one job, the protocol of kopt's C worker (src/eval/worker_int.h):
                                   the job as a JSON line on stdin, then a "go" line; events as
                                   JSON lines on fd 3; every run's outputs copied into the shared
                                   buffer on fd 4 at the offsets the job gives
  kopt_torch_worker.py import SRC OUT [--atol A] [--rtol R] [--prefix P] [--device D]
                                   KernelBench problem files (a file or a folder) -> kopt
                                   problem folders (docs/kernelbench.md); one JSON line per file
                                   on stdout
The parent compares the outputs; this process never sees another subject's outputs. A
candidate's worker locks itself down (kopt_torch_sandbox.py) once the candidate is built and
before it first runs: docs/kernelbench.md, "The sandbox", says what runs before and after.
"""
import ctypes
import errno
import hashlib
import importlib.util
import inspect
import json
import mmap
import os
import re
import shutil
import sys
import threading
import time
import traceback

import kopt_torch_sandbox  # beside this file (sys.path[0] when run as a script)
import kopt_torch_timing

EVENT_FD = 3
SHM_FD = 4

# kopt's dtype codes (include/kopt/problem.h) and roles
DTYPES = ["f32", "f16", "bf16", "f64", "i32", "i64"]
ROLE_INPUT, ROLE_OUTPUT, ROLE_INOUT, ROLE_SCRATCH = 0, 1, 2, 3


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
        self.sandbox = None

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
        spawned = job.get("spawned_ms", 0)
        import torch  # noqa: the slow part of the start
        self.torch = torch
        tj = job["torch"]
        dev = tj.get("device") or os.environ.get("KOPT_TORCH_DEVICE") or "cuda"
        if dev.startswith("cuda") and not torch.cuda.is_available():
            raise WorkerError("nodevice", "PyTorch %s sees no CUDA device" % torch.__version__)
        self.device = torch.device(dev)
        self.cuda = self.device.type == "cuda"
        info = {"name": "cpu", "torch": torch.__version__, "exec_ms": 0.0}
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
        info["context_ms"] = time.time() * 1e3 - t0
        if spawned > 0:
            info["exec_ms"] = t0 - spawned
        self.shm = None
        size = int(job.get("shm_size", 0))
        if size:
            self.shm = mmap.mmap(SHM_FD, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            self.shm_t = torch.frombuffer(self.shm, dtype=torch.uint8, count=size)
        t1 = time.time() * 1e3
        self.mod = load_module(tj["model"], "kopt_reference_model")
        self.subject = tj.get("subject", "reference")
        self.init_seed = int(tj.get("init_seed", 1234))
        if job.get("sandbox"):
            self.sandbox = kopt_torch_sandbox.Sandbox(job["sandbox"])
        if self.subject == "modelnew":
            self.cand_mod = load_module(tj["file"], "kopt_candidate_model")
        elif self.subject == "host":
            if self.sandbox:   # as kopt's C worker: the context up, its constructors confined
                if self.cuda:
                    torch.zeros(1, device=self.device)
                self.sandbox.lockdown("before the shared object was loaded",
                                      kopt_torch_sandbox.cuda_timer_functions() if self.cuda
                                      else [])
            self.lib = ctypes.CDLL(tj["so"])
            self.entry = self.lib.kopt_candidate_run
            self.entry.restype = ctypes.c_int
            self.entry.argtypes = [ctypes.POINTER(CIO)]
        info["candidate_ms"] = time.time() * 1e3 - t1
        info["setup_ms"] = time.time() * 1e3 - t0
        return info

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    # -- one phase
    def make_subject(self, ph):
        """The subject built at a phase's sizes: (model, the reference's parameters and
        buffers by name)."""
        torch = self.torch
        set_sizes(self.mod, ph.get("sizes"))
        torch.manual_seed(self.init_seed)
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
            torch.manual_seed(self.init_seed)
            try:
                model = cls(*init).to(self.device)
            except Exception as e:
                raise WorkerError("launch", "ModelNew(*get_init_inputs()) failed: %s: %s"
                                  % (type(e).__name__, e))
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
                              % " and ".join(jit) if jit else "before the first call")

    def check_sandbox(self):
        """After the candidate ran: what it changed that it must leave alone is TAMPER."""
        msg = self.sandbox.check() if self.sandbox else None
        if msg:
            raise WorkerError("tamper", msg)

    def inputs(self, seed):
        """get_inputs() under the seed, its factory calls made on the device itself (the
        same seed gives the same inputs in every process; KernelBench's 6 GB inputs take
        milliseconds there, seconds on the host plus the copy)."""
        torch = self.torch
        torch.manual_seed(seed)
        with torch.device(self.device):
            vals = list(self.mod.get_inputs())
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
            if list(o.shape) != list(s["shape"]):
                raise WorkerError("wrong", "output '%s' has shape %s, expected %s"
                                  % (s["name"], list(o.shape), s["shape"]))
            if o.dtype != want:
                raise WorkerError("wrong", "output '%s' has dtype %s, expected %s"
                                  % (s["name"], o.dtype, want))
            n = s["bytes"]
            if n:
                src = o.detach().contiguous().reshape(-1).view(torch.uint8)
                self.shm_t[offset:offset + n].copy_(src)
            offset += n

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
            inputs = self.inputs(int(tr["seed"]))
            host = self.host_args(inputs) if self.subject == "host" else None
            try:
                self.poison(host)
                outs = self.run_once(inputs, host)
                self.sync()
            except WorkerError:
                raise
            except Exception as e:  # the subject's own failure
                raise classify(e, self.subject)
            self.check_sandbox()
            self.copy_outputs(outs, int(tr["offset"]))
            if tr.get("check_inputs"):
                sums["trial %d" % i] = self.input_sums(inputs)
            self.progress("trial %d" % i)

    def timing(self, ph, tm, po):
        """The timed runs, the same loop for every subject (kopt_torch_timing.py)."""
        inputs = self.inputs(int(tm["seed"]))
        host = self.host_args(inputs) if self.subject == "host" else None
        try:
            outs, fields = kopt_torch_timing.time_subject(
                self.torch, self.device, lambda: self.run_once(inputs, host), tm,
                getattr(self, "l2", 0), self.progress,
                prepare=(lambda: self.poison(host)) if host is not None else None)
        except WorkerError:
            raise
        except Exception as e:
            raise classify(e, self.subject)
        self.check_sandbox()
        self.copy_outputs(outs, int(tm["offset"]))
        po["input_sums"]["timed"] = self.input_sums(inputs)
        po.update(fields)

    def run(self, job):
        """Every size set's subject built first, then the lockdown, then the runs."""
        phases = []
        built = []
        for i, ph in enumerate(job["phases"]):
            self.phase = i
            try:
                built.append(self.make_subject(ph))
            except WorkerError:
                raise
            except Exception as e:
                raise WorkerError("launch" if self.subject == "modelnew" else "harness",
                                  "building the %s failed: %s: %s"
                                  % (self.subject, type(e).__name__, e))
        self.lock_candidate(job, built)
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


def tensor_digest(torch, v):
    """A position-weighted checksum of a tensor's bytes, computed where the tensor is (no
    copy of a 6 GB input to the host), in chunks: any change to any byte changes it but for
    a 2^-64-ish coincidence of the weighted sums."""
    b = v.detach().contiguous().reshape(-1).view(torch.uint8)
    n = b.numel()
    total = 0
    chunk = 1 << 24
    for start in range(0, n, chunk):
        c = b[start:start + chunk].to(torch.int64)
        pos = torch.arange(start, start + c.numel(), device=c.device, dtype=torch.int64)
        w = (pos % 1000003) * 2654435761 + 1
        total = (total * 1315423911 + int((c * w).sum().item()) + int(c.sum().item())) \
            & 0xffffffffffffffff
    return "%016x-%d" % (total, n)


def classify(e, subject):
    msg = "%s: %s" % (type(e).__name__, e)
    low = msg.lower()
    if isinstance(e, OSError) and e.errno == errno.EFBIG:   # Python ignores SIGXFSZ
        return WorkerError("tamper", "the %s wrote a file larger than the sandbox allows: %s"
                           % ("candidate" if subject in ("modelnew", "host") else subject, msg))
    if "out of memory" in low:
        return WorkerError("oom", msg)
    if "illegal" in low or "device-side assert" in low or "cuda error" in low or \
            "misaligned" in low:
        return WorkerError("crash", msg)
    if subject in ("modelnew", "host"):
        return WorkerError("crash", msg)
    return WorkerError("harness", msg)


def worker_main():
    w = None
    job = None
    try:
        if "--ahead" in sys.argv:   # started before its job (a session's next candidate):
            import torch  # noqa: F401  the slow part of the start, while the parent works
        line = sys.stdin.readline()
        if not line:                # the session ended before a job came
            return 0
        job = json.loads(line)
        w = Worker()
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
        phases = w.run(job)
        ev = {"event": "result", "device": info, "phases": phases, "kernels": []}
        if w.sandbox and w.sandbox.report is not None:
            ev["sandbox"] = w.sandbox.report
        w.emit(ev)
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


def probe(torch, mod, init, seed, dev):
    """Build the model and its inputs on `dev` and run forward once under PyTorch's FLOP
    counter: (model, inputs, output, flops)."""
    from torch.utils.flop_counter import FlopCounterMode
    with torch.device(dev):
        torch.manual_seed(seed)
        model = mod.Model(*init).to(dev)
        torch.manual_seed(seed)
        inputs = [v.to(dev) if isinstance(v, torch.Tensor) else v for v in mod.get_inputs()]
    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        out = model(*inputs)
    return model, inputs, out, int(counter.get_total_flops())


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
    counts = ["bytes"] + (["flops"] if flops > 0 else [])
    work = {"bytes": nbytes}
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
        "tensors": tensors,
        "reference": {"pytorch": "model.py"},
        "tolerance": {"atol": args.atol, "rtol": args.rtol},
        "work": work,
        "seed": seed,
    }
    with open(os.path.join(dest, "problem.json"), "w") as f:
        f.write(problem_text(prob))
    return {"file": path, "problem": dest, "name": name, "counts": counts, "bytes": nbytes,
            "flops": flops, "tensors": len(tensors)}


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
