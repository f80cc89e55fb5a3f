#!/usr/bin/env python3
"""Unit tests of the PyTorch worker's timing loop (libexec/kopt_torch_timing.py) without a
GPU: a fake torch records the order of what each timed run puts on the stream (prepare,
L2 flush, hold, e0, the call, e1), so the tests check that every run of every subject is
bracketed the same way, that a run the host was too slow to queue is counted as exposed
and grows the hold, and that the hold is sized from the host's issue time; the pure
helpers against hand-computed values; and the CPU path with the real torch when there is
one; libkopt's clock (include/kopt/clock.h) on the wall clock, its samples reported on a
pipe from C; and the tamper check (kopt_torch_guard.py) against replaced functions.
Usage: test_torch_timing.py REPO_ROOT [LIBKOPT]"""
import os
import sys
import time

sys.path.insert(0, os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "libexec"))
import kopt_torch_timing as kt  # noqa: E402

failed = 0


def check(cond, what):
    global failed
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failed += 1


class FakeEvent:
    def __init__(self, log, ms, done):
        self.log, self.ms, self.done = log, ms, done

    def record(self):
        self.log.append("event")

    def query(self):
        return self.done[0]

    def elapsed_time(self, other):
        return self.ms[0]


class FakeTensor:
    def __init__(self, log, name):
        self.log, self.name = log, name

    def zero_(self):
        self.log.append("flush")

    def add_(self, v):
        self.log.append("tiny")


class FakeCuda:
    def __init__(self, log, ms, done):
        self.log, self.ms, self.done = log, ms, done
        self.holds = []

    def get_device_properties(self, dev):
        return type("P", (), {"clock_rate": 1000})()     # 1000 cycles per ms

    def Event(self, enable_timing=True):
        return FakeEvent(self.log, self.ms, self.done)

    def _sleep(self, cycles):
        self.holds.append(cycles)
        self.log.append("hold")

    def synchronize(self, dev):
        self.log.append("sync")

    def current_stream(self):
        return FakeStream()


class FakeTorch:
    int32 = "int32"

    def __init__(self, ms=0.5, done=False):
        self.log = []
        self.ms, self.done = [ms], [done]
        self.cuda = FakeCuda(self.log, self.ms, self.done)

    def empty(self, n, dtype=None, device=None):
        return FakeTensor(self.log, "fbuf")

    def zeros(self, n, device=None):
        return FakeTensor(self.log, "one")


class Dev:
    type = "cuda"


class FakeStream:
    cuda_stream = 0


TM = {"warmup_ms": 0, "budget_ms": 5, "min_reps": 10, "max_reps": 20, "min_warmup": 3,
      "flush_l2": True}


def runs_of(log):
    """The log cut into runs: each ends at its second event."""
    runs, cur, ev = [], [], 0
    for x in log:
        if x == "sync":
            continue
        cur.append(x)
        if x == "event":
            ev += 1
            if ev == 2:
                runs.append(cur)
                cur, ev = [], 0
    return runs


def test_every_run_bracketed_the_same_way():
    t = FakeTorch(ms=0.5)
    calls, slots, rounds = [], [], []
    f = kt.time_subject(t, Dev(), lambda i: (t.log.append("call"), calls.append(i))[1] or 7,
                        TM, 50 << 20, lambda what: None,
                        prepare=lambda i: (t.log.append("prepare"), slots.append(i)),
                        refresh=lambda r: (t.log.append("refresh"), rounds.append(r)), slots=2)
    runs = runs_of([x for x in t.log if x != "refresh"])
    subject = [r for r in runs if "call" in r]
    tiny = [r for r in runs if "tiny" in r]
    check(all(r == ["prepare", "flush", "hold", "event", "call", "event"] for r in subject),
          "every run of the subject: prepare, flush, hold, e0, call, e1 (%d runs)" % len(subject))
    check(all(r == ["flush", "hold", "event", "tiny", "event"] for r in tiny) and tiny,
          "the bracket's cost is measured the same way, around a one-element kernel")
    check(len(f["samples_ms"]) == 10 and f["warmup_runs"] == 3,
          "min_reps and the warm-up respected: %d samples" % len(f["samples_ms"]))
    check(f["exposed_runs"] == 0 and f["bracket"] == "cuda events behind a hold",
          "no run exposed while the GPU is held")
    check(abs(f["event_overhead_ms"] - 0.5) < 1e-12, "overhead: the median of its brackets")
    check(all(h >= kt.HOLD_FLOOR_MS * 1000 for h in t.cuda.holds), "holds at least the floor")
    check(calls == slots and set(calls) == {0, 1} and calls[:4] == [0, 1, 0, 0],
          "runs rotate between the input sets, each prepared for its own set: %s" % calls[:8])
    first_timed = t.log.index("refresh")
    check(rounds == list(range(f["rounds"])) and f["rounds"] >= 1 and
          t.log[first_timed + 1:first_timed + 3] == ["prepare", "flush"],
          "the inputs are refreshed before every chunk of timed runs, outside the brackets")
    check(f["clock"].endswith("(not protected)"), "torch's events say they are not protected")


def test_exposed_run_grows_the_hold():
    t = FakeTorch(ms=0.5, done=True)     # e0 already done when the host queued e1
    f = kt.time_subject(t, Dev(), lambda i: None, TM, 50 << 20, lambda what: None)
    check(f["exposed_runs"] == len(f["samples_ms"]) and f["exposed_warmup_runs"] == 3,
          "runs whose e0 completed before the host was done are counted as exposed")
    check(f["hold_ms"] == kt.HOLD_CAP_MS, "the hold doubles up to its cap (%.3f ms)" % f["hold_ms"])


def test_hold_sized_from_issue_time():
    t = FakeTorch(ms=0.5)

    def slow(i):
        time.sleep(0.002)                # the host takes 2 ms to issue the call

    f = kt.time_subject(t, Dev(), slow, dict(TM, min_reps=3, max_reps=3), 0, lambda w: None)
    check(f["issue_ms"] >= 2.0 and f["hold_ms"] >= 2 * 2.0,
          "hold %.2f ms covers twice the issue time %.2f ms" % (f["hold_ms"], f["issue_ms"]))
    check("flush" not in t.log, "no flush without an L2 size to flush")


def test_helpers():
    check(kt.hold_ms_for(0) == kt.HOLD_FLOOR_MS and kt.hold_ms_for(1.0) == 2.0 + kt.HOLD_FLOOR_MS
          and kt.hold_ms_for(100) == kt.HOLD_CAP_MS and kt.hold_ms_for(float("nan")) ==
          kt.HOLD_FLOOR_MS, "hold_ms_for: floor, twice the issue time, cap, NaN")
    check(kt.median([3, 1, 2]) == 2 and kt.median([4, 1, 2, 3]) == 2.5 and kt.median([]) == 0,
          "median")
    check(kt.reps_for_chunk(0, 1.0, 5, 0, 10, 1000) == 10 and
          kt.reps_for_chunk(0, 0.001, 100, 0, 10, 1000) == kt.CHUNK and
          kt.reps_for_chunk(995, 0.001, 100, 0, 10, 1000) == 5, "reps_for_chunk")
    check(kt.median_known([1.0] * 50, 0.01) and not kt.median_known([1.0] * 5, 0.01) and
          not kt.median_known([1.0, 2.0] * 25, 0.01), "median_known")


def test_cpu_with_torch():
    try:
        import torch
    except Exception:
        print("skipped: no torch (the CPU path)")
        return
    x = torch.randn(64, 64)
    f = kt.time_subject(torch, torch.device("cpu"), lambda i: torch.tanh(x), TM, 0,
                        lambda w: None)
    check(f["bracket"] == "wall clock" and len(f["samples_ms"]) >= 10 and
          all(s > 0 for s in f["samples_ms"]) and f["hold_ms"] == 0 and
          f["event_overhead_ms"] == 0, "CPU: a wall clock, no hold, no overhead")


def test_libkopt_clock():
    """libkopt's clock keeps the samples in C and writes them on a pipe itself: the same
    numbers the loop returned, whatever the Python side does with its own copy."""
    lib_path = sys.argv[2] if len(sys.argv) > 2 else ""
    if not lib_path or not os.path.exists(lib_path):
        print("skipped: no libkopt given (the clock in C)")
        return
    try:
        import torch
    except Exception:
        print("skipped: no torch (libkopt's clock on the CPU)")
        return
    import json
    lib = kt.LibClock(lib_path)
    r, w = os.pipe()
    x = torch.randn(32, 32)
    f = kt.time_subject(torch, torch.device("cpu"), lambda i: torch.tanh(x), TM, 0,
                        lambda w_: None, lib=lib, report=lambda b: b.report(w, 3))
    os.close(w)
    ev = json.loads(os.read(r, 1 << 20).decode().splitlines()[0])
    os.close(r)
    check(ev["event"] == "clock" and ev["phase"] == 3 and ev["samples_ms"] == f["samples_ms"]
          and len(ev["samples_ms"]) >= 10 and f["clock"] == "libkopt",
          "libkopt's clock reports the same %d samples on the pipe" % len(ev["samples_ms"]))
    f["samples_ms"][0] = 0.0         # what a tampered report would do: the pipe has the truth
    check(ev["samples_ms"][0] > 0, "the C copy is not the Python list")
    check(all(isinstance(a, int) and a > 0 for _, a in lib.functions()),
          "the functions the sandbox watches have addresses")


def test_guard():
    try:
        import torch
    except Exception:
        print("skipped: no torch (the tamper check)")
        return
    import kopt_torch_guard as kg
    g = kg.Guard(torch, [("kopt_torch_timing", kt)])
    check(g.check() is None, "nothing replaced: the check passes")
    saved = time.perf_counter
    time.perf_counter = lambda: 0.0
    check(g.check() == "time.perf_counter", "a replaced time.perf_counter is named")
    time.perf_counter = saved
    saved = torch.cuda.Event.elapsed_time
    torch.cuda.Event.elapsed_time = lambda a, b: 0.0
    check(g.check() == "torch.cuda.Event.elapsed_time", "a replaced Event.elapsed_time is named")
    torch.cuda.Event.elapsed_time = saved
    code = kt.median.__code__
    kt.median.__code__ = (lambda xs: 0.0).__code__
    check(g.check() == "kopt_torch_timing.median.__code__", "new code in kopt's function is named")
    kt.median.__code__ = code
    saved = kt.Clock.run
    kt.Clock.run = lambda *a: None
    check(g.check() == "kopt_torch_timing.Clock.run", "a replaced method of kopt's is named")
    kt.Clock.run = saved
    check(g.check() is None, "all restored: the check passes again")


for t in (test_every_run_bracketed_the_same_way, test_exposed_run_grows_the_hold,
          test_hold_sized_from_issue_time, test_helpers, test_cpu_with_torch,
          test_libkopt_clock, test_guard):
    t()
print("ktest: %d failed" % failed)
sys.exit(1 if failed else 0)
