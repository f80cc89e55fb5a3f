"""Write a synthetic, complete kopt tune cache, for testing the Kernel Tuner comparison
scripts without a GPU. The space is a real template's (params, constraints and source hash,
so `kopt tune --replay` accepts the file) or, without --template, a built-in SGEMM-like
one. The times come from a made-up model (a preferred value per param, pairwise
interactions, a rugged term and some failed compiles), not from any measurement: never
report numbers from it.

    python3 bench/kt/make_synthetic_cache.py OUT.json [--template examples/sgemm/tune.cu]
        [--problem examples/sgemm] [--sizes M=4096,...] [--seed 7] [--omit-pruned]
"""
import argparse
import hashlib
import itertools
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kopt_expr  # noqa: E402

BUILTIN_PARAMS = {
    "BM": [32, 64, 128, 256], "BN": [32, 64, 128, 256], "BK": [8, 16, 32],
    "TM": [2, 4, 8], "TN": [2, 4, 8], "VEC": [1, 2, 4], "STAGES": [1, 2, 3],
}
BUILTIN_CONSTRAINTS = ["(BM/TM)*(BN/TN) >= 32", "(BM/TM)*(BN/TN) <= 1024",
                       "STAGES*BK*(BM+BN)*4 <= 101376", "BK % VEC == 0"]


class Model:
    """time = base * prod_i (1 + w_i d_i^2) * (1 + sum_pairs c_ij d_i d_j) * rugged, where
    d_i is the distance of param i's value index from its preferred index (scaled to 0..1)."""

    def __init__(self, params, rng):
        self.n = [len(v) for v in params.values()]
        self.pref = [rng.randrange(n) for n in self.n]
        self.w = [0.3 + 1.2 * rng.random() for _ in self.n]
        k = len(self.n)
        self.c = {(i, j): 0.4 * (rng.random() - 0.5) for i in range(k) for j in range(i + 1, k)}
        self.salt = rng.random()

    def time_ms(self, idx):
        d = [abs(i - p) / max(1, n - 1) for i, p, n in zip(idx, self.pref, self.n)]
        t = 1.0
        for di, w in zip(d, self.w):
            t *= 1.0 + w * di * di
        t *= max(0.5, 1.0 + sum(c * d[i] * d[j] for (i, j), c in self.c.items()))
        h = hashlib.sha256((repr(idx) + repr(self.salt)).encode()).digest()
        t *= 1.0 + 0.08 * (h[0] / 255.0)       # rugged: per-point deviation up to 8 %
        return round(t, 6)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--template", help="a kopt template .cu (default: a built-in SGEMM-like space)")
    ap.add_argument("--problem", help="the problem folder (default: the template's folder)")
    ap.add_argument("--sizes", help="K=V,K=V overrides of the problem's sizes")
    ap.add_argument("--device", default="Synthetic GPU (made-up times)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--fail-rate", type=float, default=0.03, help="fraction of valid points that fail")
    ap.add_argument("--omit-pruned", action="store_true",
                    help="leave pruned points out (kopt's replay answers them from the constraints)")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    if a.template:
        import kt_live_sgemm
        prob_dir = a.problem or os.path.dirname(os.path.abspath(a.template))
        tm = kt_live_sgemm.Template(prob_dir, a.template, a.sizes)
        params, constraints, sizes = tm.params, tm.constraint_text, tm.sizes
        problem = tm.problem["name"]
        template_hash = hashlib.sha256(open(a.template, "rb").read()).hexdigest()
        valid = tm.valid
        tmpl_path = os.path.relpath(os.path.abspath(a.template), os.path.dirname(os.path.abspath(a.out)))
    else:
        params, constraints, sizes = BUILTIN_PARAMS, BUILTIN_CONSTRAINTS, {"M": 4096, "N": 4096, "K": 4096}
        problem, template_hash, tmpl_path = "sgemm", "1" * 64, "builtin-synthetic.cu"
        compiled = [kopt_expr.compile_expr(c) for c in constraints]

        def valid(p):
            e = dict(sizes, **p)
            return all(c(e) for c in compiled)
    model = Model(params, rng)
    names = list(params)
    entries = []
    for idx in itertools.product(*[range(len(v)) for v in params.values()]):
        p = {n: params[n][i] for n, i in zip(names, idx)}
        label = ",".join(f"{k}={v}" for k, v in p.items())
        if not valid(p):
            if not a.omit_pruned:
                entries.append({"params": label, "state": "pruned", "time_ms": 0, "message": "constraint fails"})
            continue
        e = {"params": label, "compile_ms": round(300 + 400 * rng.random(), 3)}
        r = rng.random()
        if r < a.fail_rate / 2:
            e.update(state="compile_error", time_ms=0, eval_ms=0, message="synthetic failure")
        elif r < a.fail_rate:
            e.update(state="resources", time_ms=0, eval_ms=0, message="synthetic spills")
        else:
            e.update(state="ok", time_ms=model.time_ms(idx), eval_ms=round(50 + 30 * rng.random(), 3))
        entries.append(e)
    doc = {
        "format": "kopt-tune-cache", "version": 1,
        "key": {"problem": problem, "problem_hash": "0" * 64, "template_hash": template_hash,
                "sizes": ",".join(f"{k}={v}" for k, v in sizes.items()), "device": a.device,
                "device_uuid": ""},
        "template": tmpl_path,
        "params": params,
        "constraints": constraints,
        "entries": entries,
    }
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    ok = sum(1 for e in entries if e["state"] == "ok")
    print(f"{a.out}: {len(entries)} entries, {ok} ok", file=sys.stderr)


if __name__ == "__main__":
    main()
