#!/usr/bin/env python3
"""Which of a candidate worker's steps slow down while other workers make CUDA contexts or
run their census at the same moment (issue 29: on 4 GPUs an evaluation's steps are 2-5x
slower than on one, the CUPTI census above all)?

Reads the evaluations that bench/optimize_gpus.sh keeps (LABEL.evaluations.jsonl: each
evaluation's trace with its WHO_at objects, [start, end] of each step on the one monotonic
clock, as offsets from at_base_ms, and its device_index). For each step of the candidate's
worker it prints the step's median ms, split by what else was happening while it ran:
  alone          no other worker was making its context, nor in its census
  ctx other GPU  another GPU's worker was making its context (started ahead or not)
  ctx same GPU   a worker of the same GPU was making its context
  census other   another GPU's candidate was in its census (checked_call)

  python3 bench/probe/trace_overlap.py OUT/optgpus/g4.evaluations.jsonl [more.jsonl ...]
"""
import json
import statistics
import sys

STEPS = ("checked_call", "input_digests", "trial_inputs", "timed_runs", "trial_run", "compare_wait")
CONTEXT = ("ahead_context", "context")   # a worker started ahead, or one made for its job


def intervals(path):
    """[(gpu, who, step, start, end)] of every evaluation in one file, absolute ms."""
    out = []
    for line in open(path):
        row = json.loads(line)
        tr = row.get("trace") or {}
        base = tr.get("at_base_ms")
        if base is None:
            continue
        for key, at in tr.items():
            if key.endswith("_at") and isinstance(at, dict):
                for step, se in at.items():
                    if isinstance(se, list) and len(se) == 2:
                        out.append((row.get("device_index"), key[:-3], step, base + se[0],
                                    base + se[1]))
    return out


def overlaps(a, b, c, d):
    return a < d and c < b


def main(paths):
    for path in paths:
        iv = intervals(path)
        if not iv:
            print("%s: no trace_at (recorded before kopt wrote it, or no evaluation)" % path)
            continue
        ctx = [x for x in iv if x[1] in ("candidate", "reference", "reference_first_run")
               and x[2] in CONTEXT and x[4] - x[3] > 5]   # a worker forked warm: no context made
        census = [x for x in iv if x[1] == "candidate" and x[2] == "checked_call"]
        print("%s: %d evaluations on GPUs %s" % (path, len(census), sorted(set(
            x[0] for x in census if x[0] is not None))))
        print("  %-14s %18s %18s %18s %18s" % ("step (ms)", "alone", "ctx other GPU",
                                              "ctx same GPU", "census other"))
        for step in STEPS:
            groups = {"alone": [], "ctx other GPU": [], "ctx same GPU": [], "census other": []}
            for g, who, s, a, b in iv:
                if who != "candidate" or s != step:
                    continue
                other = [x for x in ctx if x[0] != g and overlaps(a, b, x[3], x[4])]
                same = [x for x in ctx if x[0] == g and overlaps(a, b, x[3], x[4])]
                cens = [x for x in census if x[0] != g and overlaps(a, b, x[3], x[4])]
                if other:
                    groups["ctx other GPU"].append(b - a)
                if same:
                    groups["ctx same GPU"].append(b - a)
                if cens:
                    groups["census other"].append(b - a)
                if not (other or same or cens):
                    groups["alone"].append(b - a)
            print("  %-14s" % step + "".join(
                "%18s" % ("%.1f (n=%d)" % (statistics.median(v), len(v)) if v else "-")
                for v in groups.values()))
        gate = [x[4] - x[3] for x in iv if x[2] == "ahead_gate"]
        if gate:   # a worker started ahead waited for no measured run on the host (HostGate)
            print("  ahead workers' wait at the host gate: median %.1f ms, max %.1f ms, "
                  "%d of %d waited > 1 ms" % (statistics.median(gate), max(gate),
                                             sum(g > 1 for g in gate), len(gate)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
