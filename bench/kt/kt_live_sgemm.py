"""Kernel Tuner, live on the GPU, on kopt's SGEMM template (issue 5, point 11): the same
kernel source (examples/sgemm/tune.cu), the same params, constraints, launch plan and sizes
as `kopt tune examples/sgemm examples/sgemm/tune.cu`, tuned by Kernel Tuner's brute force
(or random sampling with as many evaluations as kopt's run), recording the wall time per
evaluated configuration (Kernel Tuner reports compile_time, verification_time,
benchmark_time, strategy_time and framework_time per configuration), then one
configuration (the best) checked against numpy.

How kopt's template becomes Kernel Tuner's problem:
  - params (front matter "params": lists, ranges, powers of two) -> tune_params, in order;
    Kernel Tuner passes them as -D macros, as kopt does;
  - constraints -> one restriction (kopt's expressions evaluated with the problem's sizes);
  - the launch's block expression -> a derived tunable `block_size_x` pinned to the
    expression by the restriction (so the space has exactly kopt's valid points), or the
    param itself when the block is a plain param name;
  - the grid expressions -> a callable problem_size with grid divisors of 1 (so the grid is
    exactly kopt's), the "smem" expression -> smem_args (dynamic shared memory; above 48 KB
    the kernel's attribute is raised before launch, as kopt does);
  - args: tensors as numpy arrays (problem.json dtypes and init), integer expressions as
    int32 (the kernel's `int` parameters).
Kernel Tuner compiles with NVRTC to PTX for the device (its default), with -std=c++17 as
kopt uses; it times the mean of 7 launches without flushing the L2 (kopt: median, with
flush), so best times differ slightly by method; the wall time per configuration is the
point of comparison.

Device (no package registry there; wheels from bench/kt/fetch_wheels.sh):
    python3 -m pip install -q --no-index --no-deps --target /tmp/ktenv bench/kt/wheels/*.whl
    PYTHONPATH=/tmp/ktenv python3 bench/kt/kt_live_sgemm.py --out $OUT/kt-live-sgemm.json
CPU-only check (imports, space, arguments; no GPU): add --dry-run.
"""
import argparse
import json
import os
import re
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kopt_expr  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32, "i64": np.int64}
SMEM_DEFAULT_LIMIT = 48 * 1024


def front_matter(path):
    text = open(path).read()
    m = re.search(r"/\*@kopt\s*(\{.*?\})\s*\*/", text, re.S)
    if not m:
        raise ValueError(f"{path}: no /*@kopt {{...}} */ front matter")
    return text, json.loads(m.group(1))


def param_values(name, spec):
    """A param's values from kopt's forms: a list, {"values": [..]}, {"range": [a, b(, step)]},
    {"pow2": [lo, hi]}."""
    if isinstance(spec, list):
        return [int(v) for v in spec]
    if "values" in spec:
        return [int(v) for v in spec["values"]]
    if "range" in spec:
        r = spec["range"]
        step = r[2] if len(r) > 2 else 1
        return list(range(int(r[0]), int(r[1]) + 1, int(step)))
    if "pow2" in spec:
        lo, hi = spec["pow2"]
        out, v = [], 1
        while v <= hi:
            if v >= lo:
                out.append(v)
            v *= 2
        return out
    raise ValueError(f"param '{name}': unknown form {spec}")


def parse_sizes(text, sizes):
    for kv in (text or "").split(","):
        if kv.strip():
            k, v = kv.split("=", 1)
            sizes[k.strip()] = int(v)
    return sizes


class Template:
    """kopt's template and problem in the terms Kernel Tuner takes."""

    def __init__(self, problem_dir, template_path, sizes_text=None, launch_index=0):
        self.problem = json.load(open(os.path.join(problem_dir, "problem.json")))
        self.source, self.fm = front_matter(template_path)
        self.sizes = parse_sizes(sizes_text, {k: int(v) for k, v in self.problem["sizes"].items()})
        if len(self.fm["launches"]) != 1:
            raise ValueError("only single-launch templates are supported by this script")
        self.launch = self.fm["launches"][launch_index]
        self.kernel_name = self.launch["kernel"]
        self.params = {n: param_values(n, s) for n, s in self.fm["params"].items()}
        self.constraints = [kopt_expr.compile_expr(c) for c in self.fm.get("constraints", [])]
        self.constraint_text = list(self.fm.get("constraints", []))
        self.grid = [kopt_expr.compile_expr(g) for g in self.launch["grid"]]
        self.block = [kopt_expr.compile_expr(b) for b in self.launch["block"]]
        self.block_text = [str(b).strip() for b in self.launch["block"]]
        self.smem = kopt_expr.compile_expr(self.launch["smem"]) if self.launch.get("smem") else None
        if len(self.block) > 3 or len(self.grid) > 3:
            raise ValueError("grid and block have at most 3 dimensions")

    def env(self, p):
        e = dict(self.sizes)
        e.update(p)
        return e

    def valid(self, p, max_smem=None):
        """kopt's constraints (an evaluation error counts as failing, as in kopt)."""
        try:
            e = self.env(p)
            if not all(c(e) for c in self.constraints):
                return False
            if max_smem is not None and self.smem is not None and self.smem(e) > max_smem:
                return False
            return True
        except (ZeroDivisionError, KeyError):
            return False

    def kt_problem(self, max_smem=None):
        """tune_params, restrictions, block_size_names, problem_size, grid divisors, smem_args."""
        from constraint import FunctionConstraint
        import itertools
        names = list(self.params)
        tune_params = dict(self.params)
        block_names, derived = [], []
        for d, (f, text) in enumerate(zip(self.block, self.block_text)):
            if text in self.params:
                block_names.append(text)
                continue
            dname = "block_size_" + "xyz"[d]
            vals = set()
            for combo in itertools.product(*self.params.values()):
                p = dict(zip(names, combo))
                if self.valid(p, max_smem):
                    vals.add(int(f(self.env(p))))
            tune_params[dname] = sorted(vals) or [1]
            block_names.append(dname)
            derived.append((dname, f))
        all_names = list(tune_params)

        def restriction(*values):
            p = dict(zip(all_names, values))
            base = {n: p[n] for n in names}
            if not self.valid(base, max_smem):
                return False
            e = self.env(base)
            return all(p[dn] == f(e) for dn, f in derived)

        def problem_size(p):
            e = self.env({n: int(p[n]) for n in names})
            return tuple(int(g(e)) for g in self.grid)

        smem_args = None
        if self.smem is not None:
            smem_args = {"size": lambda p: int(self.smem(self.env({n: int(p[n]) for n in names})))}
        ndiv = len(self.grid)
        grid_div = [(lambda p: 1) if i < ndiv else None for i in range(3)]
        return dict(tune_params=tune_params, restrictions=[FunctionConstraint(restriction)],
                    block_size_names=block_names, problem_size=problem_size,
                    grid_div_x=grid_div[0], grid_div_y=grid_div[1] or (lambda p: 1),
                    grid_div_z=grid_div[2] or (lambda p: 1), smem_args=smem_args)

    def arguments(self, seed=1234):
        """Kernel arguments: tensors as numpy arrays, integer expressions as int32."""
        rng = np.random.default_rng(seed)
        tensors = {t["name"]: t for t in self.problem["tensors"]}
        args, arrays = [], {}
        for a in self.launch["args"]:
            if isinstance(a, str) and a in tensors:
                t = tensors[a]
                shape = tuple(int(kopt_expr.evaluate(s, self.sizes)) for s in t["shape"])
                dt = DTYPES[t["dtype"]]
                init = t.get("init")
                if t.get("role") == "output" or not init:
                    arr = np.zeros(shape, dtype=dt)
                elif init.get("dist") == "uniform":
                    arr = rng.uniform(init.get("low", 0), init.get("high", 1), shape).astype(dt)
                elif init.get("dist") == "int":
                    arr = rng.integers(init.get("low", 0), init.get("high", 1) + 1, shape).astype(dt)
                else:
                    arr = rng.normal(init.get("mean", 0), init.get("std", 1), shape).astype(dt)
                arrays[a] = arr
                args.append(arr)
            elif isinstance(a, dict):
                (kind, value), = a.items()
                args.append(DTYPES.get(kind, np.int32)(value))
            else:
                args.append(np.int32(kopt_expr.evaluate(a, self.sizes)))
        return args, arrays


def raise_dynamic_smem_limit():
    """Kernel Tuner launches with the dynamic shared memory size it is given but does not
    raise the kernel's limit above the 48 KB default; kopt does (cuFuncSetAttribute). Wrap
    the backends' run_kernel so configurations using more run, as they do under kopt."""
    try:
        from kernel_tuner.backends import nvcuda
        from cuda.bindings import driver
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        orig = nvcuda.CudaFunctions.run_kernel

        def run_kernel(self, func, gpu_args, threads, grid, stream=None):
            if self.smem_size > SMEM_DEFAULT_LIMIT:
                driver.cuFuncSetAttribute(func, attr, int(self.smem_size))
            return orig(self, func, gpu_args, threads, grid, stream)
        nvcuda.CudaFunctions.run_kernel = run_kernel
    except ImportError:
        pass
    try:
        from kernel_tuner.backends import cupy as ktcupy
        import cupy
        orig_c = ktcupy.CupyFunctions.run_kernel

        def run_kernel_c(self, func, gpu_args, threads, grid, stream=None):
            if self.smem_size > SMEM_DEFAULT_LIMIT:
                cupy.cuda.driver.funcSetAttribute(func.ptr, 8, int(self.smem_size))  # MAX_DYNAMIC_SHARED_SIZE_BYTES
            return orig_c(self, func, gpu_args, threads, grid, stream)
        ktcupy.CupyFunctions.run_kernel = run_kernel_c
    except ImportError:
        pass


def per_config_stats(results, names):
    """Mean milliseconds per unique evaluated configuration of each timing Kernel Tuner
    reports, plus their sum ('total')."""
    keys = ["compile_time", "verification_time", "benchmark_time", "strategy_time", "framework_time"]
    seen, rows = set(), []
    for r in results:
        k = tuple(r[n] for n in names)
        if k in seen:
            continue
        seen.add(k)
        rows.append(r)
    out = {k: (sum(float(r.get(k, 0) or 0) for r in rows) / len(rows) if rows else 0.0) for k in keys}
    out["total"] = sum(out[k] for k in keys)
    return out, rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problem", default=os.path.join(REPO, "examples", "sgemm"))
    ap.add_argument("--template", default=os.path.join(REPO, "examples", "sgemm", "tune.cu"))
    ap.add_argument("--sizes", help="K=V,K=V overrides of the problem's sizes (as kopt tune --sizes)")
    ap.add_argument("--strategy", default="brute_force", help="brute_force (default) or random_sample, ...")
    ap.add_argument("--max-fevals", type=int, default=0,
                    help="evaluation budget (e.g. the number kopt evaluated); 0: the whole space")
    ap.add_argument("--time-limit", type=float, default=0,
                    help="seconds for the search (Kernel Tuner's time_limit); 0: none. The device runs "
                         "a command for at most 10 minutes")
    ap.add_argument("--iterations", type=int, default=7, help="Kernel Tuner's timed launches per config")
    ap.add_argument("--backend", default="nvcuda", choices=["nvcuda", "cupy"], help="Kernel Tuner lang")
    ap.add_argument("--max-smem", type=int, default=232448, help="opt-in shared memory per block (bytes)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cache", help="also write Kernel Tuner's cache file here")
    ap.add_argument("--out", default="kt-live-sgemm.json")
    ap.add_argument("--dry-run", action="store_true", help="build the problem and the space only (no GPU)")
    a = ap.parse_args(argv)
    if a.strategy == "brute_force" and (a.max_fevals or a.time_limit):
        ap.error("Kernel Tuner's brute_force takes no budget: use --strategy random_sample with "
                 "--max-fevals (the whole space, in random order, when it is the space's size)")

    t_import = time.perf_counter()
    import kernel_tuner
    from kernel_tuner.searchspace import Searchspace
    t_import = time.perf_counter() - t_import

    tm = Template(a.problem, a.template, a.sizes)
    kp = tm.kt_problem(a.max_smem)
    t0 = time.perf_counter()
    space = Searchspace(kp["tune_params"], kp["restrictions"], 1024)
    t_space = time.perf_counter() - t0
    args, arrays = tm.arguments()
    names = list(kp["tune_params"])
    sample = dict(zip(names, space.list[0])) if space.size else {}
    info = {
        "tool": "kernel_tuner", "version": getattr(kernel_tuner, "__version__", "unknown"),
        "problem": tm.problem["name"], "template": os.path.relpath(a.template, REPO), "kernel": tm.kernel_name,
        "sizes": tm.sizes, "tune_params": kp["tune_params"], "block_size_names": kp["block_size_names"],
        "space_points": space.size, "strategy": a.strategy, "iterations": a.iterations, "backend": a.backend,
        "import_s": t_import, "space_build_s": t_space,
        "args": [f"{type(x).__name__}{list(x.shape) if hasattr(x, 'shape') and x.ndim else ''}"
                 f"{'' if hasattr(x, 'shape') and x.ndim else '=' + str(x)}" for x in args],
    }
    if sample:
        info["sample_config"] = sample
        info["sample_launch"] = {"grid": kp["problem_size"](sample),
                                 "block": [sample[b] for b in kp["block_size_names"]],
                                 "smem": kp["smem_args"]["size"](sample) if kp["smem_args"] else 0}
    # the same checks tune_kernel makes before it starts: argument types against the kernel's
    # signature, and the block size names
    import warnings
    from kernel_tuner import core, util
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # Kernel Tuner only warns about a mismatch
        core.KernelSource(tm.kernel_name, tm.source, "CUDA", None).check_argument_lists(tm.kernel_name, args)
    util.check_block_size_names(kp["block_size_names"])
    info["argument_check"] = "ok"
    print(json.dumps({k: v for k, v in info.items() if k != "tune_params"}, default=str), file=sys.stderr)
    if a.dry_run:
        info["dry_run"] = True
        with open(a.out, "w") as f:
            json.dump(info, f, indent=1, default=str)
        return 0

    raise_dynamic_smem_limit()
    strategy_options = {}
    if a.max_fevals:
        strategy_options["max_fevals"] = a.max_fevals
    if a.time_limit:
        strategy_options["time_limit"] = a.time_limit
    np.random.seed(a.seed)
    import random
    random.seed(a.seed)
    t0 = time.perf_counter()
    results, env = kernel_tuner.tune_kernel(
        tm.kernel_name, tm.source, kp["problem_size"], args, kp["tune_params"],
        grid_div_x=kp["grid_div_x"], grid_div_y=kp["grid_div_y"], grid_div_z=kp["grid_div_z"],
        restrictions=kp["restrictions"], block_size_names=kp["block_size_names"], smem_args=kp["smem_args"],
        lang="NVCUDA" if a.backend == "nvcuda" else "CuPy", compiler_options=["--std=c++17"],
        iterations=a.iterations, strategy=a.strategy, strategy_options=strategy_options or None,
        cache=a.cache, quiet=True, verbose=False)
    wall = time.perf_counter() - t0
    stats, rows = per_config_stats(results, names)
    ok = [r for r in rows if "__error__" not in r and isinstance(r.get("time"), (int, float))]
    best = min(ok, key=lambda r: r["time"]) if ok else None
    info.update({
        "wall_s": wall, "evaluated": len(rows), "ok": len(ok), "failed": len(rows) - len(ok),
        "wall_ms_per_config": 1000 * wall / max(1, len(rows)), "per_config_ms": stats,
        "env_totals_ms": {k: env.get(k) for k in ("total_compile_time", "total_verification_time",
                                                   "total_benchmark_time", "total_strategy_time",
                                                   "total_framework_time", "overhead_time")},
        "device": env.get("device_name"),
        "best_ms": best["time"] if best else None,
        "best_params": {n: best[n] for n in tm.params} if best else None,
    })
    if best:
        flops = 2.0 * tm.sizes.get("M", 0) * tm.sizes.get("N", 0) * tm.sizes.get("K", 0)
        info["best_tflops"] = flops / (best["time"] * 1e-3) / 1e12 if flops else None
        # verification of the best configuration against numpy (float64 accumulation)
        params = {n: best[n] for n in names}
        t0 = time.perf_counter()
        out = kernel_tuner.run_kernel(
            tm.kernel_name, tm.source, kp["problem_size"], args, params,
            grid_div_x=kp["grid_div_x"], grid_div_y=kp["grid_div_y"], grid_div_z=kp["grid_div_z"],
            block_size_names=kp["block_size_names"], smem_args=kp["smem_args"],
            lang="NVCUDA" if a.backend == "nvcuda" else "CuPy", compiler_options=["--std=c++17"], quiet=True)
        outputs = [t["name"] for t in tm.problem["tensors"] if t.get("role") in ("output", "inout")]
        tol = tm.problem.get("tolerance", {"atol": 1e-3, "rtol": 1e-3})
        checks = {}
        if tm.problem["name"] == "sgemm":
            ref = (arrays["A"].astype(np.float64) @ arrays["B"].astype(np.float64))
            got = out[tm.launch["args"].index("C")]
            err = np.abs(got - ref)
            checks["C"] = {"allclose": bool(np.allclose(got, ref, atol=tol["atol"], rtol=tol["rtol"])),
                           "max_abs_err": float(err.max()), "max_ref": float(np.abs(ref).max())}
        else:
            checks = {o: "no numpy reference in this script" for o in outputs}
        info["verification"] = {"params": params, "checks": checks, "seconds": time.perf_counter() - t0,
                                "atol": tol["atol"], "rtol": tol["rtol"]}
    info["configs"] = [{**{n: r[n] for n in tm.params},
                        "time": r["time"] if not isinstance(r.get("time"), str) else None,
                        "error": str(r["__error__"]) if "__error__" in r else None,
                        **{k: r.get(k) for k in ("compile_time", "verification_time", "benchmark_time",
                                                 "strategy_time", "framework_time")}} for r in rows]
    with open(a.out, "w") as f:
        json.dump(info, f, indent=1, default=str)
    print(f"{len(rows)} configurations in {wall:.1f} s ({info['wall_ms_per_config']:.1f} ms each: "
          f"compile {stats['compile_time']:.1f}, benchmark {stats['benchmark_time']:.1f}, framework+strategy "
          f"{stats['framework_time'] + stats['strategy_time']:.1f}); best {info['best_ms']} ms {info['best_params']}; "
          f"verification {info.get('verification', {}).get('checks')}", file=sys.stderr)
    return 0 if best and all(c.get("allclose", True) for c in info["verification"]["checks"].values()
                             if isinstance(c, dict)) else 1


if __name__ == "__main__":
    sys.exit(main())
