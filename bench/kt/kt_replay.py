"""Kernel Tuner's search strategies replayed on a recorded kopt tuning space (issue 5,
point 11): how many unique evaluations each strategy needs to reach 90/95/98 % of the
exhaustive optimum, over several seeds, in Kernel Tuner's simulation mode.

The cache may be a Kernel Tuner cache (`kopt tune ... --export-kt FILE`) or kopt's own
cache JSON (converted here, see kopt_cache_to_kt.py). Kernel Tuner is given a dummy kernel,
the cache's tune_params and problem_size, simulation_mode=True and the budget as
strategy_options max_fevals. Its search space is restricted to the points kopt's own
strategies may propose (--restrict constraints, the default): the points recorded and not
pruned by kopt's constraints or device limits; configurations that failed to compile or
ran out of resources stay in the space and cost an evaluation, as they do in kopt.
Kernel Tuner's strategies take no seed: Python's `random` and numpy's global generator are
seeded before each run (both are what its strategies draw from).

Checks that Kernel Tuner really replays the cache: no GPU backend module gets imported,
every result's time is the cached time of its configuration, the first visit of a
configuration reports the cached compile time, and the cache file is left unchanged.

    python3 bench/kt/kt_replay.py CACHE.json --budget 200 --seeds 10 \
        --out bench/results/kt-replay-sgemm.json [--md bench/results/kt-replay-sgemm.md]
"""
import argparse
import hashlib
import json
import math
import os
import random
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import convergence  # noqa: E402
import kopt_cache_to_kt  # noqa: E402

DEFAULT_STRATEGIES = ["random_sample", "simulated_annealing", "genetic_algorithm", "diff_evo", "pso",
                      "greedy_ils", "bayes_opt", "basinhopping", "mls", "firefly_algorithm",
                      "dual_annealing"]
BACKEND_MODULES = ("kernel_tuner.backends.nvcuda", "kernel_tuner.backends.cupy",
                   "kernel_tuner.backends.pycuda", "kernel_tuner.backends.opencl",
                   "kernel_tuner.backends.hip", "kernel_tuner.backends.compiler",
                   "cupy", "pycuda", "cuda.bindings")


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def prepare_kt_file(cache, src_path, workdir):
    """A Kernel Tuner cache file for `cache`: the file itself when it already is one,
    else a converted copy in workdir."""
    if cache.fmt == "kt" and src_path.endswith(".json"):
        return src_path
    path = os.path.join(workdir, "kt_cache.json")
    with open(path, "w") as f:
        json.dump(kopt_cache_to_kt.to_kt_dict(cache), f)
    return path


def make_restriction(cache, mode):
    """Kernel Tuner restrictions (a list) that leave the space kopt's strategies search."""
    from constraint import FunctionConstraint
    if mode == "none":
        return None
    allowed = cache.constraint_valid() if mode == "constraints" else set(cache.ok_points())

    def in_space(*values):
        return tuple(values) in allowed
    return [FunctionConstraint(in_space)]


def seed_latin_hypercube():
    """Kernel Tuner's Latin-hypercube samples (diff_evo's and others' initial populations)
    come from scipy's LatinHypercube built without a seed, i.e. from OS entropy. Give it a
    generator drawn from numpy's seeded global state so that a seed fixes the whole run."""
    import inspect
    import scipy.stats.qmc as qmc
    if getattr(qmc.LatinHypercube, "_kopt_seeded", False):
        return
    base = qmc.LatinHypercube
    kw = "rng" if "rng" in inspect.signature(base).parameters else "seed"

    class SeededLatinHypercube(base):
        _kopt_seeded = True

        def __init__(self, *args, **kwargs):
            if kwargs.get("rng") is None and kwargs.get("seed") is None:
                kwargs[kw] = np.random.default_rng(np.random.randint(0, 2**31 - 1))
            super().__init__(*args, **kwargs)
    qmc.LatinHypercube = SeededLatinHypercube


def run_one(kt, cache, kt_path, strategy, seed, budget, restrictions, opts):
    seed_latin_hypercube()
    random.seed(seed)
    np.random.seed(seed)
    strategy_options = {"max_fevals": budget}
    strategy_options.update(opts)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, env = kt.tune_kernel(
            cache.kernel_name, "__global__ void dummy() {}", tuple(cache.problem_size)
            if isinstance(cache.problem_size, list) else cache.problem_size, [],
            dict(cache.tune_params), restrictions=restrictions, strategy=strategy,
            strategy_options=strategy_options, cache=kt_path, simulation_mode=True,
            quiet=True, verbose=False, seed=seed)
    wall = time.perf_counter() - t0
    names = cache.keys
    seen, trace, mismatches = set(), [], 0
    for r in results:
        point = tuple(r[n] for n in names)
        rec = cache.points.get(point)
        if rec is None:
            raise RuntimeError(f"{strategy}: Kernel Tuner returned {point}, which the cache lacks")
        first = point not in seen
        if "__error__" in r:
            value = None
            if rec["state"] == "ok":
                mismatches += 1
        else:
            value = float(r["time"])
            if rec["state"] != "ok" or not math.isclose(value, rec["time_ms"], rel_tol=1e-9):
                mismatches += 1
            if first and not math.isclose(float(r.get("compile_time", -1)), rec["compile_ms"], rel_tol=1e-9,
                                          abs_tol=1e-9):
                mismatches += 1
        if first:
            seen.add(point)
            trace.append(value)
    return trace, wall, mismatches, env


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cache", help="Kernel Tuner cache (from kopt --export-kt) or kopt cache JSON")
    ap.add_argument("--budget", type=int, default=200, help="max_fevals per run (default 200)")
    ap.add_argument("--seeds", type=int, default=10, help="seeds 1..N (default 10)")
    ap.add_argument("--strategies", default=",".join(DEFAULT_STRATEGIES),
                    help="comma-separated Kernel Tuner strategy names")
    ap.add_argument("--restrict", choices=["constraints", "ok", "none"], default="constraints",
                    help="constraints: kopt's space (recorded, not pruned; default); ok: only configurations "
                         "that ran (what Kernel Tuner's own tune_cache does); none: the whole product")
    ap.add_argument("--strategy-options", default="{}",
                    help='JSON {"strategy": {option: value}} passed on to Kernel Tuner')
    ap.add_argument("--out", required=True, help="JSON result")
    ap.add_argument("--md", help="markdown table (default: OUT with .md)")
    a = ap.parse_args(argv)

    import kernel_tuner as kt
    cache = kopt_cache_to_kt.load(a.cache)
    opt_point, optimum = cache.optimum()
    valid = cache.constraint_valid() if a.restrict != "ok" else set(cache.ok_points())
    if a.restrict == "none":
        valid = set(cache.points)
    budget = min(a.budget, len(valid))
    per_strategy_opts = json.loads(a.strategy_options)
    before = sha256(a.cache)
    out = {
        "tool": "kernel_tuner", "version": getattr(kt, "__version__", "unknown"),
        "cache": a.cache, "device": cache.device, "sizes": cache.sizes,
        "params": cache.tune_params, "restrict": a.restrict,
        "points": len(cache.points), "space_points": len(valid), "ok_points": len(cache.ok_points()),
        "optimum_ms": optimum, "optimum_params": dict(zip(cache.keys, opt_point)),
        "budget": budget, "seeds": list(range(1, a.seeds + 1)),
        "thresholds": list(convergence.THRESHOLDS), "strategies": {},
    }
    with tempfile.TemporaryDirectory() as work:
        kt_path = prepare_kt_file(cache, a.cache, work)
        restrictions = make_restriction(cache, a.restrict)
        for strategy in [s for s in a.strategies.split(",") if s]:
            rec = {"runs": []}
            try:
                for seed in out["seeds"]:
                    trace, wall, mism, env = run_one(kt, cache, kt_path, strategy, seed, budget, restrictions,
                                                     per_strategy_opts.get(strategy, {}))
                    imp = convergence.improvements_from_trace(trace)
                    rec["runs"].append(convergence.run_record(
                        seed, imp, optimum, budget, len(trace),
                        {"wall_s": wall, "cache_mismatches": mism,
                         "simulated_time_s": env.get("simulated_time", 0) / 1000.0}))
                    if mism:
                        raise RuntimeError(f"{mism} results differ from the cache (not a pure replay)")
                rec["status"] = "ok"
            except Exception as exc:  # a strategy that does not run is reported, not fatal
                rec["status"] = "error"
                rec["error"] = f"{type(exc).__name__}: {exc}"[:500]
            if rec["runs"]:
                rec["summary"] = convergence.summarize(rec["runs"], budget)
            out["strategies"][strategy] = rec
            s = rec.get("summary", {})
            print(f"{strategy:22s} {rec['status']:5s} runs={len(rec['runs'])} " + " ".join(
                f"{k}:{v['mean']:.1f}/{v['median']:.1f}" for k, v in s.items() if isinstance(v, dict))
                + (f"  {rec.get('error', '')}" if rec["status"] != "ok" else ""), file=sys.stderr)
    loaded = [m for m in BACKEND_MODULES if m in sys.modules]
    out["replay_checks"] = {
        "gpu_backend_modules_loaded": loaded,
        "cache_file_unchanged": sha256(a.cache) == before,
        "result_mismatches": sum(r.get("cache_mismatches", 0) for s in out["strategies"].values()
                                 for r in s["runs"]),
    }
    convergence.write_json(a.out, out)
    md = a.md or os.path.splitext(a.out)[0] + ".md"
    rows = [(f"{k} (Kernel Tuner)", v["summary"]) for k, v in out["strategies"].items() if "summary" in v]
    with open(md, "w") as f:
        f.write(f"Kernel Tuner {out['version']} simulation mode on `{a.cache}` ({cache.device}, "
                f"{out['space_points']} points in the space, optimum {optimum:.6g} ms), budget {budget} "
                f"unique evaluations, seeds 1..{a.seeds}. Evaluations to reach X % of the optimum "
                f"(optimum time / best time so far); '>{budget}' = not reached, counted as {budget + 1}.\n\n")
        f.write(convergence.markdown_table(rows, budget) + "\n")
        failed = [f"{k}: {v['error']}" for k, v in out["strategies"].items() if v["status"] != "ok"]
        if failed:
            f.write("\nStrategies that did not run: " + "; ".join(failed) + "\n")
    print(f"wrote {a.out} and {md}; replay checks {out['replay_checks']}", file=sys.stderr)
    ok = not loaded and out["replay_checks"]["cache_file_unchanged"] and not out["replay_checks"]["result_mismatches"]
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
