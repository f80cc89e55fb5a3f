"""Read a tuning cache, kopt's own JSON or Kernel Tuner's, into one Python form; and write
kopt's cache as a Kernel Tuner cache file (for when `kopt tune --export-kt` is not at hand).

kopt's format: {"format": "kopt-tune-cache", "version": 1, "key": {...}, "template": "..",
"params": {"BM": [..], ...}, "entries": [{"params": "BM=64,BN=32", "state": "ok",
"time_ms": .., "compile_ms": .., "eval_ms": .., ...}]}.
Kernel Tuner's: {"device_name", "kernel_name", "problem_size", "tune_params_keys",
"tune_params", "objective", "cache": {"v1,v2": {params..., "time": ms | error name, ...}}}.

The mapping of kopt's states to Kernel Tuner's error markers: pruned -> InvalidConfig,
compile_error -> CompilationFailedConfig, resources and failed -> RuntimeFailedConfig.

    python3 bench/kt/kopt_cache_to_kt.py KOPT_CACHE.json OUT_KT_CACHE.json [--kernel-name K]
"""
import argparse
import json
import math
import sys

STATE_TO_KT = {
    "pruned": "InvalidConfig",
    "compile_error": "CompilationFailedConfig",
    "resources": "RuntimeFailedConfig",
    "failed": "RuntimeFailedConfig",
}
KT_ERRORS = {"ErrorConfig", "InvalidConfig", "CompilationFailedConfig", "RuntimeFailedConfig"}


def _num(text):
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return text


def _read_json_lenient(path):
    """Kernel Tuner caches may lack their closing braces (a run that was killed)."""
    with open(path) as f:
        text = f.read().strip()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        if text.endswith(","):
            text = text[:-1]
        return json.loads(text + "}\n}")


class Cache:
    """A complete recorded space. points: dict tuple(values) -> entry dict with
    state ('ok', 'pruned', 'compile_error', 'resources', 'failed'), time_ms (ok only),
    compile_ms, eval_ms."""

    def __init__(self):
        self.fmt = None
        self.device = ""
        self.kernel_name = "kopt_template"
        self.problem_size = [1]
        self.sizes = ""
        self.tune_params = {}
        self.points = {}
        self.raw = None

    @property
    def keys(self):
        return list(self.tune_params.keys())

    def ok_points(self):
        return {p: e for p, e in self.points.items() if e["state"] == "ok"}

    def optimum(self):
        """(values, time_ms) of the fastest OK point."""
        best = min(self.ok_points().items(), key=lambda kv: kv[1]["time_ms"])
        return best[0], best[1]["time_ms"]

    def constraint_valid(self):
        """Points kopt's strategies may propose: recorded and not pruned."""
        return {p for p, e in self.points.items() if e["state"] != "pruned"}


def load(path):
    raw = _read_json_lenient(path)
    c = Cache()
    c.raw = raw
    if raw.get("format") == "kopt-tune-cache":
        c.fmt = "kopt"
        key = raw.get("key", {})
        c.device = key.get("device", "") or "unknown device"
        c.sizes = key.get("sizes", "")
        sizes = [_num(kv.split("=", 1)[1]) for kv in c.sizes.split(",") if "=" in kv]
        c.problem_size = sizes or [1]
        tmpl = raw.get("template") or key.get("problem") or "kopt_template"
        c.kernel_name = str(tmpl).rsplit("/", 1)[-1].replace(".cu", "") or "kopt_template"
        c.tune_params = {k: list(v) for k, v in raw["params"].items()}
        names = c.keys
        for e in raw.get("entries", []):
            label = e["params"]
            vals = dict(kv.split("=", 1) for kv in label.split(","))
            if set(vals) != set(names):
                raise ValueError(f"{path}: entry '{label}' does not name the params {names}")
            point = tuple(_num(vals[n]) for n in names)
            state = e.get("state", "ok")
            t = e.get("time_ms")
            if state == "ok" and (t is None or not math.isfinite(float(t)) or float(t) <= 0):
                raise ValueError(f"{path}: entry '{label}' is ok but has no time_ms")
            c.points[point] = {
                "state": state,
                "time_ms": float(t) if state == "ok" else None,
                "compile_ms": float(e.get("compile_ms", 0.0) or 0.0),
                "eval_ms": float(e.get("eval_ms", 0.0) or 0.0),
                "energy_mj": float(e.get("energy_mj", 0.0) or 0.0),
                "power_w": float(e.get("power_w", 0.0) or 0.0),
            }
    elif "cache" in raw and "tune_params_keys" in raw:
        c.fmt = "kt"
        c.device = raw.get("device_name", "")
        c.kernel_name = raw.get("kernel_name", "kopt_template")
        c.problem_size = raw.get("problem_size", [1])
        c.tune_params = {k: list(raw["tune_params"][k]) for k in raw["tune_params_keys"]}
        names = c.keys
        objective = raw.get("objective", "time")
        if isinstance(objective, list):
            objective = objective[0]
        for e in raw["cache"].values():
            point = tuple(e[n] for n in names)
            err = next((v for v in e.values() if isinstance(v, str) and v in KT_ERRORS), None)
            if err is None:
                state, t = "ok", float(e[objective])
            else:
                state = {"InvalidConfig": "pruned", "CompilationFailedConfig": "compile_error"}.get(err, "failed")
                t = None
            c.points[point] = {"state": state, "time_ms": t,
                               "compile_ms": float(e.get("compile_time", 0.0) or 0.0),
                               "eval_ms": float(e.get("verification_time", 0.0) or 0.0)
                               + float(e.get("benchmark_time", 0.0) or 0.0),
                               "energy_mj": 0.0, "power_w": 0.0}
    else:
        raise ValueError(f"{path}: neither a kopt tune cache nor a Kernel Tuner cache")
    if not c.ok_points():
        raise ValueError(f"{path}: no configuration ran OK; nothing to compare against")
    return c


def kt_key(point):
    """Kernel Tuner's cache key of a point: its values joined by commas."""
    return ",".join(str(v) for v in point)


def to_kt_dict(c, kernel_name=None):
    """The Kernel Tuner cache of `c` (a dict ready for json.dump)."""
    names = c.keys
    out = {
        "device_name": c.device,
        "kernel_name": kernel_name or c.kernel_name,
        "problem_size": c.problem_size,
        "tune_params_keys": names,
        "tune_params": c.tune_params,
        "objective": "time",
        "cache": {},
    }
    for point, e in c.points.items():
        entry = dict(zip(names, point))
        if e["state"] == "ok":
            entry["time"] = e["time_ms"]
            entry["times"] = [e["time_ms"]]
            if e.get("energy_mj"):
                entry["nvml_energy"] = e["energy_mj"] / 1000.0
                entry["nvml_power"] = e["power_w"]
        else:
            entry["time"] = STATE_TO_KT.get(e["state"], "RuntimeFailedConfig")
        entry["compile_time"] = e["compile_ms"]
        entry["verification_time"] = 0
        entry["benchmark_time"] = e["eval_ms"]
        entry["strategy_time"] = 0
        entry["framework_time"] = 0
        out["cache"][kt_key(point)] = entry
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cache", help="kopt tune cache JSON")
    ap.add_argument("out", help="Kernel Tuner cache JSON to write")
    ap.add_argument("--kernel-name", default=None)
    a = ap.parse_args(argv)
    c = load(a.cache)
    with open(a.out, "w") as f:
        json.dump(to_kt_dict(c, a.kernel_name), f, indent=1)
        f.write("\n")
    print(f"{a.out}: {len(c.points)} points ({len(c.ok_points())} ok), optimum {c.optimum()[1]:.6g} ms",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
