"""One table from the replay statistics of kopt (kopt_replay_stats.py) and Kernel Tuner
(kt_replay.py) on the same recorded space (issue 5, point 11): rows strategy (tool),
columns unique evaluations to reach 90/95/98 % of the exhaustive optimum (mean / median
over seeds; a seed that does not reach it counts as budget + 1) and the fraction of seeds
that reach each. Optionally adds the live wall time per configuration (kt_live_sgemm.py and
kopt tune --json results).

    python3 bench/kt/compare.py bench/results/kopt-replay-sgemm.json \
        bench/results/kt-replay-sgemm.json --out bench/results/DATE-kt-comparison.md \
        [--live-kt kt-live.json] [--live-kopt kopt-live.json]
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convergence  # noqa: E402

TOOL_LABEL = {"kopt": "kopt", "kernel_tuner": "Kernel Tuner"}


def live_rows(path, label):
    d = json.load(open(path))
    if "per_config_ms" in d:   # kt_live_sgemm.py
        s = d["per_config_ms"]
        return [f"| {label} | {d.get('strategy', '')} | {d.get('evaluated', '')} | {d.get('wall_s', 0):.1f} | "
                f"{s['total']:.1f} | {s.get('compile_time', 0):.1f} | {s.get('benchmark_time', 0):.1f} | "
                f"{s.get('framework_time', 0) + s.get('strategy_time', 0):.1f} | {d.get('best_ms', 0):.4g} |"]
    shape = d["shapes"][0] if "shapes" in d else d   # kopt tune --json
    n = int(shape.get("evaluated", 0)) or 1
    wall = float(shape.get("elapsed_s", 0))
    best = (shape.get("best") or {}).get("outcome", {}).get("time_ms") or (shape.get("best") or {}).get("time_ms", 0)
    return [f"| {label} | {shape.get('strategy', '')} | {n} | {wall:.1f} | {1000 * wall / n:.1f} | "
            f"(pipelined: {1000 * float(shape.get('compile_wait_s', 0)) / n:.1f} waiting) | "
            f"{1000 * float(shape.get('eval_s', 0)) / n:.1f} | – | {best or 0:.4g} |"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", help="JSON files from kopt_replay_stats.py / kt_replay.py")
    ap.add_argument("--out", required=True, help="markdown file to write")
    ap.add_argument("--live-kt", help="kt_live_sgemm.py result JSON")
    ap.add_argument("--live-kopt", help="kopt tune --json result of the live run on the same space")
    a = ap.parse_args(argv)

    docs = [json.load(open(p)) for p in a.results]
    optima = {round(d["optimum_ms"], 9) for d in docs}
    budgets = {d["budget"] for d in docs}
    spaces = {d["space_points"] for d in docs}
    notes = []
    if len(optima) > 1:
        notes.append(f"WARNING: the inputs disagree on the optimum ({sorted(optima)} ms): not the same data")
    if len(spaces) > 1:
        notes.append(f"WARNING: the inputs searched spaces of different sizes ({sorted(spaces)})")
    if len(budgets) > 1:
        notes.append(f"WARNING: different budgets ({sorted(budgets)}); 'not reached' counts as each one's budget + 1")
    budget = max(budgets)
    rows = []
    for d in docs:
        tool = TOOL_LABEL.get(d["tool"], d["tool"])
        for name, rec in d["strategies"].items():
            if "summary" in rec:
                label = f"{name} ({tool})" + ("" if rec["status"] == "ok" else " [incomplete]")
                rows.append((label, rec["summary"], rec))
    # best first: by mean evaluations to 95 %, then 90 %
    rows.sort(key=lambda r: (r[1].get("0.95", {}).get("mean", 1e18), r[1].get("0.90", {}).get("mean", 1e18)))
    d0 = docs[0]
    lines = [
        "# Strategy comparison: kopt and Kernel Tuner on the same recorded space", "",
        f"Space: `{d0['cache']}` ({d0['device']}, sizes {d0.get('sizes', '')}), {d0['space_points']} "
        f"configurations kopt's strategies may propose ({d0['ok_points']} ran OK), exhaustive optimum "
        f"{d0['optimum_ms']:.6g} ms at {d0['optimum_params']}. Budget {budget} unique evaluations, seeds "
        f"{d0['seeds'][0]}..{d0['seeds'][-1]} per strategy. A cell gives the evaluations needed to reach "
        f"X % of the optimum (optimum time / best time so far), mean / median over the seeds; a seed that "
        f"does not reach it within the budget counts as {budget + 1} ('>{budget}'). 'reached' is the number "
        f"of seeds that did.", "",
    ]
    lines += [f"> {n}" for n in notes] + ([""] if notes else [])
    lines.append(convergence.markdown_table([(r[0], r[1]) for r in rows], budget))
    skipped = [f"{name} ({TOOL_LABEL.get(d['tool'], d['tool'])}): {rec.get('error', '')}"
               for d in docs for name, rec in d["strategies"].items() if rec["status"] != "ok"]
    if skipped:
        lines += ["", "Did not run (or not on every seed): " + "; ".join(skipped)]
    for d in docs:
        if d["tool"] == "kernel_tuner":
            lines += ["", f"Kernel Tuner {d.get('version', '')}: simulation mode, search space restricted to "
                          f"'{d.get('restrict', '')}' points; replay checks: {d.get('replay_checks', {})}."]
    if a.live_kt or a.live_kopt:
        lines += ["", "## Live: wall time per evaluated configuration (same template, space and sizes)", "",
                  "| tool | strategy | configurations | wall s | ms per config | compile ms/config | "
                  "benchmark ms/config | framework+strategy ms/config | best ms |", "|---|---|---|---|---|---|---|---|---|"]
        if a.live_kopt:
            lines += live_rows(a.live_kopt, "kopt")
        if a.live_kt:
            lines += live_rows(a.live_kt, "Kernel Tuner")
    with open(a.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {a.out} ({len(rows)} rows)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
