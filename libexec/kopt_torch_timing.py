"""kopt's PyTorch worker, the timed runs: one loop for every subject (PyTorch eager, its
torch.compile, a ModelNew, a kopt-native host-mode shared object), so that their times
compare (docs/kernelbench.md, "Baselines and timing").

Each timed run, on the GPU:
  outputs poisoned (host mode), the L2 flushed (a buffer of twice its size zeroed),
  a *hold* kernel (torch.cuda._sleep) that keeps the GPU busy while the host queues
  event e0, the subject's call and event e1, then the next run.
The sample is e0 -> e1: the GPU's time from the first to the last of the call's kernels,
never the host's time to issue them (Python, ctypes, torch.compile's guards), whatever the
subject and however busy the CPU is. A run whose e0 had already completed when the host
finished queuing e1 was exposed to the host's speed: the hold grows and the run is counted
("exposed_runs"). The event bracket's own cost is measured the same way, around a
one-element kernel, and the parent subtracts one value (the reference's) from every subject.
On the CPU (KOPT_TORCH_DEVICE=cpu, the tests): a wall clock around the call, no flush, no hold.
"""
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


class Clock:
    """The bracket of one timed run: CUDA events behind a hold on the GPU, or a wall clock
    on the CPU. `run(fn)` returns (fn's result, mark); `ms(mark)` reads a mark once the
    device is synchronized."""

    def __init__(self, torch, device, flush_bytes):
        self.torch = torch
        self.cuda = device.type == "cuda"
        self.device = device
        self.fbuf = None
        self.hold = 1.0           # ms; the first runs are warm-up, sized from there on
        self.issue = []           # the host's time to queue e0, the call, e1 (ms)
        self.exposed = 0
        self.cycles_per_ms = 2.0e6
        if self.cuda:
            p = torch.cuda.get_device_properties(device)
            clk = getattr(p, "clock_rate", 0) or 0    # kHz: cycles per ms
            if clk > 0:
                self.cycles_per_ms = float(clk)
            if flush_bytes:
                self.fbuf = torch.empty(max(flush_bytes, 1 << 20) // 4, dtype=torch.int32,
                                        device=device)
            self.pool = [torch.cuda.Event(enable_timing=True) for _ in range(2 * CHUNK)]
            self.next = 0

    def begin_chunk(self):
        self.next = 0

    def run(self, fn, prepare=None):
        if prepare is not None:   # outside the bracket (host mode: the outputs poisoned)
            prepare()
        if not self.cuda:
            t0 = time.perf_counter()
            out = fn()
            return out, (time.perf_counter() - t0) * 1e3
        torch = self.torch
        if self.fbuf is not None:
            self.fbuf.zero_()
        torch.cuda._sleep(int(self.hold * self.cycles_per_ms))
        e0, e1 = self.pool[self.next], self.pool[self.next + 1]
        self.next = (self.next + 2) % len(self.pool)
        t0 = time.perf_counter()
        e0.record()
        out = fn()
        e1.record()
        issue = (time.perf_counter() - t0) * 1e3
        if e0.query():            # the GPU got to e0 before the host was done: exposed
            self.exposed += 1
            self.hold = min(HOLD_CAP_MS, max(2 * self.hold, hold_ms_for(issue)))
        self.issue.append(issue)
        return out, (e0, e1)

    def size_hold(self):
        """After the warm-up: the hold for the slowest issue seen (the last 16 runs)."""
        if self.cuda and self.issue:
            self.hold = hold_ms_for(max(self.issue[-16:]))

    def ms(self, mark):
        return mark[0].elapsed_time(mark[1]) if isinstance(mark, tuple) else mark

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize(self.device)


def time_subject(torch, device, call, tm, l2_bytes, progress, prepare=None):
    """The timed runs of `call` (a function of no arguments running the subject once) under
    the timing object `tm` of the job; `prepare` runs before each, outside the bracket. Returns (outputs of the last run, the phase's timing
    fields for the result)."""
    warmup_ms = float(tm.get("warmup_ms", 25))
    budget_ms = float(tm.get("budget_ms", 100))
    min_reps = int(tm.get("min_reps", 10))
    max_reps = int(tm.get("max_reps", 1000))
    min_warm = int(tm.get("min_warmup", 3))
    precision = float(tm.get("precision", 0) or 0)
    flush = bool(tm.get("flush_l2")) and device.type == "cuda"
    clock = Clock(torch, device, 2 * l2_bytes if flush else 0)

    warm, est = 0, 0.0
    t0 = time.time()
    while warm < min_warm or (time.time() - t0) * 1e3 < warmup_ms:
        clock.begin_chunk()
        outs, mark = clock.run(call, prepare)
        clock.sync()
        ms = clock.ms(mark)
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
        overhead = median([clock.ms(m) for m in marks])
    clock.exposed = 0
    samples, total = [], 0.0
    look_from = max(min_reps, 50) if precision > 0 else max_reps + 1
    tw = time.time()
    while len(samples) < max_reps and (len(samples) < min_reps or total < budget_ms) and \
            not (len(samples) >= look_from and median_known(samples, precision)):
        chunk = reps_for_chunk(len(samples), est, budget_ms, total, min_reps, max_reps)
        chunk = min(chunk, CHUNK)
        clock.begin_chunk()
        marks = []
        for _ in range(chunk):
            outs, mark = clock.run(call, prepare)
            marks.append(mark)
        clock.sync()
        for m in marks:
            ms = clock.ms(m)
            samples.append(ms)
            total += ms
        progress("timing")
    fields = {
        "samples_ms": samples,
        "warmup_runs": warm,
        "event_overhead_ms": overhead,
        "timing_wall_ms": (time.time() - tw) * 1e3,
        "bracket": "cuda events behind a hold" if clock.cuda else "wall clock",
        "issue_ms": median(clock.issue[-len(samples):]) if samples else 0.0,
        "hold_ms": clock.hold if clock.cuda else 0.0,
        "exposed_runs": clock.exposed,
        "exposed_warmup_runs": exposed_warm,
    }
    return outs, fields
