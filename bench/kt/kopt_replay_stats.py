"""kopt's search strategies replayed on a recorded tuning space (issue 5, point 11): the
same statistics as kt_replay.py (unique evaluations to reach 90/95/98 % of the exhaustive
optimum, mean and median over seeds, fraction of seeds that reach it), from

    kopt tune --replay CACHE.json --strategy S --seed N --budget B --json --no-progress

per strategy and seed. The convergence record is the JSON's shapes[0].convergence, a list
of {"evaluations": n, "objective": best} (evaluations done, new + cached, when each
improvement happened). The optimum is the fastest OK entry of the cache file itself.

    python3 bench/kt/kopt_replay_stats.py CACHE.json --kopt build-dev/kopt --budget 200 \
        --seeds 10 --out bench/results/kopt-replay-sgemm.json
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convergence  # noqa: E402
import kopt_cache_to_kt  # noqa: E402

DEFAULT_STRATEGIES = ["random", "annealing", "genetic", "diff_evolution", "pso", "greedy_ils", "forest",
                      "profile_guided"]


def list_strategies(kopt):
    """Names printed by `kopt tune --list-strategies` (first word of each line)."""
    p = subprocess.run([kopt, "tune", "--list-strategies"], capture_output=True, text=True)
    if p.returncode != 0:
        return None
    names = []
    for line in p.stdout.splitlines():
        w = line.strip().split()
        if w and w[0].replace("_", "").isalnum() and not w[0].endswith(":"):
            names.append(w[0])
    return names


def convergence_of(doc):
    """(improvements, unique evaluations) from kopt tune's --json output."""
    shape = doc["shapes"][0] if "shapes" in doc else doc
    conv = shape.get("convergence")
    if conv is None and "best_after" in shape:  # the result struct's own field names
        conv = [{"evaluations": e, "objective": v} for e, v in zip(shape["best_after"], shape["best_value"])]
    if conv is None:
        raise KeyError("no 'convergence' record in kopt tune --json output")
    imp = [(int(c["evaluations"]), float(c["objective"])) for c in conv]
    if "evaluated" in shape:
        unique = int(shape["evaluated"]) + int(shape.get("cached", 0))
    else:
        unique = len(shape.get("evaluated_points", []))
    return imp, unique, shape


def run_one(kopt, cache, strategy, seed, budget, extra):
    cmd = [kopt, "tune", "--replay", cache, "--strategy", strategy, "--seed", str(seed),
           "--budget", str(budget), "--json", "--no-progress"] + extra
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-400:]}")
    imp, unique, shape = convergence_of(json.loads(p.stdout))
    return imp, unique, wall, shape


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cache", help="kopt tune cache JSON (kopt tune --record)")
    ap.add_argument("--kopt", default="build-dev/kopt", help="kopt binary (default build-dev/kopt)")
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=10, help="seeds 1..N (default 10)")
    ap.add_argument("--strategies", default=None,
                    help="comma-separated kopt strategies (default: all but exhaustive)")
    ap.add_argument("--kopt-args", default="", help="extra arguments for kopt tune (e.g. '--template F')")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--out", required=True)
    ap.add_argument("--md", help="markdown table (default: OUT with .md)")
    a = ap.parse_args(argv)

    cache = kopt_cache_to_kt.load(a.cache)
    if cache.fmt != "kopt":
        ap.error(f"{a.cache}: kopt tune --replay needs kopt's own cache format")
    opt_point, optimum = cache.optimum()
    space = len(cache.constraint_valid())
    budget = min(a.budget, space)
    if a.strategies:
        strategies = [s for s in a.strategies.split(",") if s]
    else:
        listed = list_strategies(a.kopt)
        strategies = [s for s in (listed or DEFAULT_STRATEGIES) if s != "exhaustive"]
    extra = a.kopt_args.split()
    seeds = list(range(1, a.seeds + 1))
    out = {
        "tool": "kopt", "kopt": a.kopt, "cache": a.cache, "device": cache.device, "sizes": cache.sizes,
        "params": cache.tune_params, "points": len(cache.points), "space_points": space,
        "ok_points": len(cache.ok_points()), "optimum_ms": optimum,
        "optimum_params": dict(zip(cache.keys, opt_point)), "budget": budget, "seeds": seeds,
        "thresholds": list(convergence.THRESHOLDS), "strategies": {},
    }
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for strategy in strategies:
            rec = {"runs": []}
            futs = {seed: pool.submit(run_one, a.kopt, a.cache, strategy, seed, budget, extra) for seed in seeds}
            try:
                for seed in seeds:
                    imp, unique, wall, shape = futs[seed].result()
                    best = shape.get("best") or {}
                    rec["runs"].append(convergence.run_record(
                        seed, imp, optimum, budget, unique,
                        {"wall_s": wall, "stop": shape.get("stop"), "failed": shape.get("failed")}))
                    if imp and imp[-1][1] < optimum * (1 - 1e-9):
                        raise RuntimeError(f"seed {seed}: best {imp[-1][1]} is below the cache's optimum "
                                           f"{optimum}: not the same data ({best})")
                rec["status"] = "ok"
            except Exception as exc:
                rec["status"] = "error"
                rec["error"] = f"{type(exc).__name__}: {exc}"[:500]
            if rec["runs"]:
                rec["summary"] = convergence.summarize(rec["runs"], budget)
            out["strategies"][strategy] = rec
            s = rec.get("summary", {})
            print(f"{strategy:16s} {rec['status']:5s} runs={len(rec['runs'])} " + " ".join(
                f"{k}:{v['mean']:.1f}/{v['median']:.1f}" for k, v in s.items() if isinstance(v, dict))
                + (f"  {rec.get('error', '')}" if rec["status"] != "ok" else ""), file=sys.stderr)
    convergence.write_json(a.out, out)
    md = a.md or os.path.splitext(a.out)[0] + ".md"
    rows = [(f"{k} (kopt)", v["summary"]) for k, v in out["strategies"].items() if "summary" in v]
    with open(md, "w") as f:
        f.write(f"kopt replay on `{a.cache}` ({cache.device}, {space} points in the space, optimum "
                f"{optimum:.6g} ms), budget {budget} evaluations, seeds 1..{a.seeds}. '>{budget}' = not "
                f"reached, counted as {budget + 1}.\n\n")
        f.write(convergence.markdown_table(rows, budget) + "\n")
        failed = [f"{k}: {v['error']}" for k, v in out["strategies"].items() if v["status"] != "ok"]
        if failed:
            f.write("\nStrategies that did not run: " + "; ".join(failed) + "\n")
    print(f"wrote {a.out} and {md}", file=sys.stderr)
    return 0 if all(v["status"] == "ok" for v in out["strategies"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
