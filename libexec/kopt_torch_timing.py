"""kopt's PyTorch worker, the timed runs: one loop for every subject (PyTorch eager, its
torch.compile, a ModelNew, a kopt-native host-mode shared object), so that their times
compare (docs/kernelbench.md, "Baselines and timing").

Each timed run, on the GPU:
  outputs poisoned (host mode), the L2 flushed (a buffer of twice its size zeroed),
  a *hold* kernel (torch.cuda._sleep) that keeps the GPU busy while the host queues
  event e0, the subject's call and event e1, then the next run.
The events are libkopt's (include/kopt/clock.h, bound through ctypes before the candidate
is imported: LibClock): recorded, read and kept in C, and each phase's samples written to
the event pipe from C, so no Python object a candidate can replace takes part in a sample.
Without libkopt (it could not be loaded) torch's events stand in, and the result says the
timer was not protected.

The runs cannot be remembered: they rotate between `slots` input sets (two where memory
allows), whose contents the caller refreshes in place (same buffers, new random values)
before every chunk of runs, so a candidate that caches its outputs by buffer, by call count
or by anything but the values computes them again, or returns stale outputs at the checked
call the worker makes afterwards on freshly refreshed inputs.
The sample is e0 -> e1: the GPU's time from the first to the last of the call's kernels,
never the host's time to issue them (Python, ctypes, torch.compile's guards), whatever the
subject and however busy the CPU is. A run whose e0 had already completed when the host
finished queuing e1 was exposed to the host's speed: the hold grows and the run is counted
("exposed_runs"). The event bracket's own cost is measured the same way, around a
one-element kernel, and the parent subtracts one value (the reference's) from every subject.
On the CPU (KOPT_TORCH_DEVICE=cpu, the tests): a wall clock around the call, no flush, no hold.
"""
import ctypes
import json
import math
import time

HOLD_FLOOR_MS = 0.02     # the least hold: the launch of e0 and a one-kernel call
HOLD_CAP_MS = 5.0        # a call that takes longer than this to issue is host-bound
CHUNK = 64               # timed runs between two synchronizations


def hold_ms_for(issue_ms, cap_ms=HOLD_CAP_MS):
    """How long the GPU must be held for a call the host issues in `issue_ms`: twice that,
    at least HOLD_FLOOR_MS, at most cap_ms."""
    if not issue_ms or issue_ms != issue_ms or issue_ms < 0:
        issue_ms = 0.0
    return min(cap_ms, max(HOLD_FLOOR_MS, 2.0 * issue_ms + HOLD_FLOOR_MS))


def median(xs):
    s = sorted(xs)
    n = len(s)
    if not n:
        return 0.0
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def median_known(samples, precision):
    """1 when the median is known to within `precision` (a fraction): the half-width of its
    distribution-free 95% interval (order statistics n/2 -+ 0.98 sqrt(n)) over the median."""
    n = len(samples)
    half = 0.98 * math.sqrt(n)
    lo, hi = int(math.floor(n / 2.0 - half)), int(math.ceil(n / 2.0 + half))
    if n < 8 or lo < 0 or hi > n - 1:
        return False
    s = sorted(samples)
    med = median(s)
    return med > 0 and 0.5 * (s[hi] - s[lo]) <= precision * med


def reps_for_chunk(n_done, est_ms, budget_ms, total_ms, min_reps, max_reps):
    """How many timed runs the next chunk takes: no more than the budget (and min_reps)
    asks for at the estimated time per run, at most CHUNK, at least 1."""
    chunk = CHUNK
    if est_ms > 0:
        want = int(math.ceil((budget_ms - total_ms) / est_ms))
        want = max(want, min_reps - n_done)
        chunk = max(1, min(chunk, want))
    return max(1, min(chunk, max_reps - n_done))


class LibClock:
    """libkopt's clock (include/kopt/clock.h) through ctypes: bound once, before any
    candidate is imported; the worker's tamper check (kopt_torch_guard.py) watches these
    attributes. `path`: libkopt.so."""
    NAMES = ("kopt_clock_new", "kopt_clock_begin", "kopt_clock_end", "kopt_clock_read",
             "kopt_clock_report", "kopt_clock_free", "kopt_clock_census_begin",
             "kopt_clock_census_end", "kopt_clock_error")

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        vp, ci = ctypes.c_void_p, ctypes.c_int
        sig = {"kopt_clock_new": (vp, [ci, ci]), "kopt_clock_begin": (ci, [vp, ci, vp]),
               "kopt_clock_end": (ci, [vp, ci, vp]),
               "kopt_clock_read": (ci, [vp, ci, ci, ctypes.POINTER(ctypes.c_double)]),
               "kopt_clock_report": (ci, [vp, ci, ci]), "kopt_clock_free": (None, [vp]),
               "kopt_clock_census_begin": (ci, []),
               "kopt_clock_census_end": (ci, [ctypes.c_char_p, ctypes.c_size_t]),
               "kopt_clock_error": (ctypes.c_char_p, [])}
        for name in self.NAMES:
            f = getattr(lib, name)
            f.restype, f.argtypes = sig[name]
            setattr(self, name[5:], f)        # self.clock_new, ...
        self.lib = lib
        self.path = path

    def functions(self):
        """[(name, address)] of the C functions a sample goes through (the sandbox's watch)."""
        return [(n, ctypes.cast(getattr(self, n[5:]), ctypes.c_void_p).value)
                for n in ("kopt_clock_begin", "kopt_clock_end", "kopt_clock_read",
                          "kopt_clock_report")]

    def attributes(self):
        """The names of this object's bound functions (the tamper check watches them)."""
        return [n[5:] for n in self.NAMES]

    def error(self):
        return (self.clock_error() or b"").decode(errors="replace")

    def census_begin(self):
        if self.clock_census_begin() != 0:
            raise OSError(self.error())

    def census_end(self):
        buf = ctypes.create_string_buffer(1 << 16)
        if self.clock_census_end(buf, len(buf)) != 0:
            raise OSError(self.error())
        return json.loads(buf.value.decode(errors="replace"))


class Brackets:
    """`n` brackets of one kind: libkopt's (protected; it keeps the samples by `series`, as
    in clock.h) or torch's events / the wall clock (the fallback, which keeps nothing: the
    returned samples are the record). begin/end/read by mark."""
    WARMUP, OVERHEAD, TIMED = 0, 1, 2

    def __init__(self, torch, cuda, n, lib=None):
        self.torch, self.cuda, self.lib = torch, cuda, lib
        self.handle = None
        if lib is not None:
            self.handle = lib.clock_new(n, 1 if cuda else 0)
            if not self.handle:
                raise OSError("libkopt's clock: " + lib.error())
            self.stream = torch.cuda.current_stream().cuda_stream if cuda else None
            self.ms_buf = ctypes.c_double()
        elif cuda:
            self.pool = [torch.cuda.Event(enable_timing=True) for _ in range(2 * n)]
        else:
            self.t = [0.0] * (2 * n)

    def begin(self, m):
        if self.handle:
            if self.lib.clock_begin(self.handle, m, self.stream) != 0:
                raise RuntimeError("libkopt's clock: " + self.lib.error())
        elif self.cuda:
            self.pool[2 * m].record()
        else:
            self.t[2 * m] = time.perf_counter() * 1e3

    def end(self, m):
        """1 when the bracket's start had already completed (the run was exposed)."""
        if self.handle:
            rc = self.lib.clock_end(self.handle, m, self.stream)
            if rc < 0:
                raise RuntimeError("libkopt's clock: " + self.lib.error())
            return rc
        if self.cuda:
            self.pool[2 * m + 1].record()
            return 1 if self.pool[2 * m].query() else 0
        self.t[2 * m + 1] = time.perf_counter() * 1e3
        return 0

    def read(self, m, series):
        if self.handle:
            if self.lib.clock_read(self.handle, m, series, ctypes.byref(self.ms_buf)) != 0:
                raise RuntimeError("libkopt's clock: " + self.lib.error())
            return self.ms_buf.value
        return self.pool[2 * m].elapsed_time(self.pool[2 * m + 1]) if self.cuda else \
            self.t[2 * m + 1] - self.t[2 * m]

    def report(self, fd, phase):
        """libkopt writes the phase's kept samples on `fd` (the event pipe)."""
        if self.handle and self.lib.clock_report(self.handle, fd, phase) != 0:
            raise RuntimeError("libkopt's clock: " + self.lib.error())

    def close(self):
        if self.handle:
            self.lib.clock_free(self.handle)
            self.handle = None

    def name(self):
        if self.handle:
            return "libkopt"
        return ("torch.cuda.Event" if self.cuda else "time.perf_counter") + " (not protected)"


class Clock:
    """The bracket of one timed run: events behind a hold on the GPU, or a wall clock on
    the CPU. `run(fn)` returns (fn's result, mark); `ms(mark, series)` reads a mark once
    the device is synchronized."""

    def __init__(self, torch, device, flush_bytes, lib=None):
        self.torch = torch
        self.cuda = device.type == "cuda"
        self.device = device
        self.fbuf = None
        self.hold = 1.0           # ms; the first runs are warm-up, sized from there on
        self.issue = []           # the host's time to queue e0, the call, e1 (ms)
        self.exposed = 0
        self.cycles_per_ms = 2.0e6
        self.next = 0
        if self.cuda:
            p = torch.cuda.get_device_properties(device)
            clk = getattr(p, "clock_rate", 0) or 0    # kHz: cycles per ms
            if clk > 0:
                self.cycles_per_ms = float(clk)
            if flush_bytes:
                self.fbuf = torch.empty(max(flush_bytes, 1 << 20) // 4, dtype=torch.int32,
                                        device=device)
        self.brackets = Brackets(torch, self.cuda, CHUNK, lib)

    def begin_chunk(self):
        self.next = 0

    def run(self, fn, prepare=None):
        if prepare is not None:   # outside the bracket (host mode: the outputs poisoned)
            prepare()
        m = self.next
        self.next = (self.next + 1) % CHUNK
        if not self.cuda:
            self.brackets.begin(m)
            out = fn()
            self.brackets.end(m)
            return out, m
        torch = self.torch
        if self.fbuf is not None:
            self.fbuf.zero_()
        torch.cuda._sleep(int(self.hold * self.cycles_per_ms))
        t0 = time.perf_counter()
        self.brackets.begin(m)
        out = fn()
        exposed = self.brackets.end(m)
        issue = (time.perf_counter() - t0) * 1e3
        if exposed:               # the GPU got to e0 before the host was done
            self.exposed += 1
            self.hold = min(HOLD_CAP_MS, max(2 * self.hold, hold_ms_for(issue)))
        self.issue.append(issue)
        return out, m

    def size_hold(self):
        """After the warm-up: the hold for the slowest issue seen (the last 16 runs)."""
        if self.cuda and self.issue:
            self.hold = hold_ms_for(max(self.issue[-16:]))

    def ms(self, mark, series=Brackets.TIMED):
        return self.brackets.read(mark, series)

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize(self.device)


def time_subject(torch, device, call, tm, l2_bytes, progress, prepare=None, lib=None,
                 refresh=None, slots=1, check=None, report=None):
    """The timed runs of `call(slot)` (runs the subject once on input set `slot`) under the
    timing object `tm` of the job; `prepare(slot)` runs before each, outside the bracket;
    `refresh(round)` renews every input set's contents before each chunk of timed runs;
    `check()` after each chunk (raises on tampering); `report(brackets)` hands the clock's
    samples to the event pipe before the brackets are freed. Returns the phase's timing
    fields for the result."""
    warmup_ms = float(tm.get("warmup_ms", 25))
    budget_ms = float(tm.get("budget_ms", 100))
    min_reps = int(tm.get("min_reps", 10))
    max_reps = int(tm.get("max_reps", 1000))
    min_warm = int(tm.get("min_warmup", 3))
    precision = float(tm.get("precision", 0) or 0)
    flush = bool(tm.get("flush_l2")) and device.type == "cuda"
    clock = Clock(torch, device, 2 * l2_bytes if flush else 0, lib)
    slots = max(1, int(slots))

    def prep(slot):
        return (lambda: prepare(slot)) if prepare is not None else None

    try:
        warm, est = 0, 0.0
        t0 = time.time()
        while warm < min_warm or (time.time() - t0) * 1e3 < warmup_ms:
            clock.begin_chunk()
            slot = warm % slots
            _, mark = clock.run(lambda: call(slot), prep(slot))
            clock.sync()
            ms = clock.ms(mark, Brackets.WARMUP)
            est = ms if warm == 0 else min(est, ms)
            warm += 1
            if warm >= 1000:
                break
        clock.size_hold()
        exposed_warm = clock.exposed
        progress("warm-up")
        overhead = 0.0
        if clock.cuda:          # the event bracket around a one-element kernel, the same way
            one = torch.zeros(1, device=device)
            clock.begin_chunk()
            marks = [clock.run(lambda: one.add_(0))[1] for _ in range(CHUNK // 2)]
            clock.sync()
            overhead = median([clock.ms(m, Brackets.OVERHEAD) for m in marks])
        clock.exposed = 0
        samples, total, rounds = [], 0.0, 0
        look_from = max(min_reps, 50) if precision > 0 else max_reps + 1
        tw = time.time()
        while len(samples) < max_reps and (len(samples) < min_reps or total < budget_ms) and \
                not (len(samples) >= look_from and median_known(samples, precision)):
            chunk = reps_for_chunk(len(samples), est, budget_ms, total, min_reps, max_reps)
            chunk = min(chunk, CHUNK)
            if refresh is not None:
                refresh(rounds)
            rounds += 1
            clock.begin_chunk()
            marks = []
            for j in range(chunk):
                slot = j % slots
                _, mark = clock.run(lambda: call(slot), prep(slot))
                marks.append(mark)
            clock.sync()
            if check is not None:
                check()
            for m in marks:
                ms = clock.ms(m, Brackets.TIMED)
                samples.append(ms)
                total += ms
            progress("timing")
        fields = {
            "samples_ms": samples,
            "warmup_runs": warm,
            "event_overhead_ms": overhead,
            "timing_wall_ms": (time.time() - tw) * 1e3,
            "bracket": "cuda events behind a hold" if clock.cuda else "wall clock",
            "clock": clock.brackets.name(),
            "rounds": rounds,
            "input_slots": slots,
            "issue_ms": median(clock.issue[-len(samples):]) if samples else 0.0,
            "hold_ms": clock.hold if clock.cuda else 0.0,
            "exposed_runs": clock.exposed,
            "exposed_warmup_runs": exposed_warm,
        }
        if report is not None:
            report(clock.brackets)
        return fields
    finally:
        clock.brackets.close()
