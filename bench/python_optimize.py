#!/usr/bin/env python3
"""kopt.optimize (the Python API) on a PyTorch-reference problem, its steps evaluated in the
process (server=False) and in its own kopt serve (the default): the wall and each step's
time. The problem is tests/optimize/kb_tanh/problem; the model is the scripted one, answering
kb_tanh/1.cu at scale 2 (correct for this problem) with a mark of its own at every expansion
(KOPT_SCRIPT_FRESH=1), so every expansion has a candidate to evaluate.
From the repo root, with a build:
  KOPT_LIB=build/libkopt.so.0 python3 bench/python_optimize.py [OUT_DIR]
Environment: PYOPT_ITERS (default 8), PYOPT_RUNS ("here,own": which runs, in order;
"overlap": overlap=True, the whole search as one kopt optimize --overlap process: its wall
only, no steps),
PYOPT_PROFILE=1 profiles correct candidates (default: no_profile, as a search for speed
would). Each step's time goes to stderr as it ends; OUT_DIR/python_optimize.json is written
after each run (each run: wall, each step's ms and count evaluated; of the steps that
evaluated, the root's, the first after it (a server's session opens there) and the median
of the later ones; the best speedup); a table last on stdout. Needs a GPU: says "skipped: no GPU" without one."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "optimize"))
import kopt  # noqa: E402
from kopt import _lib  # noqa: E402
import scripted_llm  # noqa: E402


def has_gpu():
    return subprocess.call("nvidia-smi -L >/dev/null 2>&1", shell=True) == 0


def one_run(label, server, llm, work, iters, profile, overlap=False):
    steps = []
    real_call = _lib.call

    def timed(tool, args, **kw):
        if tool != "optimize_step":
            return real_call(tool, args, **kw)
        t0 = time.monotonic()
        d = real_call(tool, args, **kw)
        n = (d.get("stats") or {}).get("evaluated", 0)
        steps.append(((time.monotonic() - t0) * 1e3, n))
        sys.stderr.write("%s: step %d: %.0f ms, %d evaluated\n" % (label, len(steps),
                                                                  steps[-1][0], n))
        sys.stderr.flush()
        return d

    def model(p):
        return scripted_llm.answer(llm, p.role, p.text)

    _lib.call = timed
    t0 = time.monotonic()
    try:
        d = kopt.optimize(os.path.join(ROOT, "tests/optimize/kb_tanh/problem"), model,
                          iterations=iters, server=server, no_profile=not profile,
                          overlap=overlap,
                          workdir=os.path.join(work, label), db=os.path.join(work, label + ".db"))
    finally:
        _lib.call = real_call
    wall = time.monotonic() - t0
    best = (d.json.get("best") or {}).get("speedup")
    # the steps that evaluated something: the root's, the first served one (it opens the
    # server's session: the reference runs there), then the later ones; the others only
    # turned replies into prompts (~20 ms)
    ev = [ms for ms, n in steps if n > 0]
    later = ev[2:]
    return {"label": label, "server": server, "wall_s": wall,
            "steps_ms": [ms for ms, _ in steps], "steps_evaluated": [n for _, n in steps],
            "root_step_ms": ev[0] if ev else None,
            "first_served_step_ms": ev[1] if len(ev) > 1 else None,
            "later_steps_median_ms": statistics.median(later) if later else None,
            "best_speedup": best, "stop_reason": (d.json.get("stats") or {}).get("stop_reason")}


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("OUT", "/tmp/kopt-out")
    os.makedirs(out, exist_ok=True)
    if not has_gpu():
        print("skipped: no GPU")
        return 0
    iters = int(os.environ.get("PYOPT_ITERS", "8"))
    runs = os.environ.get("PYOPT_RUNS", "here,own").split(",")
    profile = os.environ.get("PYOPT_PROFILE") == "1"
    os.environ["KOPT_SCRIPT_FRESH"] = "1"
    os.environ.pop("KOPT_SERVER", None)
    llm, work = tempfile.mkdtemp(), tempfile.mkdtemp()
    src = open(os.path.join(ROOT, "tests/optimize/kb_tanh/1.cu")).read()
    if "n, 1.0f);" not in src:
        print("bench: kb_tanh/1.cu changed: set its scale here")
        return 1
    with open(os.path.join(llm, "1.cu"), "w") as f:
        f.write(src.replace("n, 1.0f);", "n, 2.0f);"))
    results = []
    try:
        for label in runs:
            server = {"here": False, "own": None, "overlap": None}[label]
            results.append(one_run(label, server, llm, work, iters, profile,
                                   overlap=label == "overlap"))
            with open(os.path.join(out, "python_optimize.json"), "w") as f:
                json.dump({"iterations": iters, "profile": profile, "runs": results}, f,
                          indent=1)
    finally:
        shutil.rmtree(llm, ignore_errors=True)
        shutil.copytree(work, os.path.join(out, "work"), dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns("*.so", "*.cubin"))
        shutil.rmtree(work, ignore_errors=True)
    print("%-6s %8s %10s %14s %16s %8s" % ("run", "wall_s", "root_ms", "1st_served_ms",
                                           "later_median_ms", "best"))
    for r in results:
        print("%-6s %8.1f %10.0f %14.0f %16.0f %8s" % (
            r["label"], r["wall_s"], r["root_step_ms"] or 0, r["first_served_step_ms"] or 0,
            r["later_steps_median_ms"] or 0, r["best_speedup"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
