#!/usr/bin/env bash
# The kopt wheel on a GPU machine (no package registry needed): install WHEEL into a fresh
# virtual environment (--system-site-packages: the machine's torch and NVIDIA packages stay
# visible; --no-deps --no-index), then from there print kopt --version, run the README's
# one-liner (the verdict must be OK) and a kopt.Session over a few examples' candidates,
# printing a short table. Usage: scripts/wheel_gpu_check.sh WHEEL [VENV_DIR]
set -euo pipefail
whl=$(realpath "${1:?usage: wheel_gpu_check.sh WHEEL [VENV_DIR]}")
cd "$(dirname "$0")/.."
venv=${2:-$(mktemp -d)/venv}
python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install -q --no-deps --no-index --force-reinstall "$whl"
echo "== $("$venv/bin/kopt" --version | head -1), $(basename "$whl")"
"$venv/bin/kopt" --version | sed 's/^/   /'
echo "== the one-liner"
t0=$(date +%s%N)
verdict=$("$venv/bin/python" -c "import kopt; print(kopt.eval('examples/softmax', 'examples/softmax/fast.cu').verdict)")
echo "$verdict   ($(( ($(date +%s%N) - t0) / 1000000 )) ms)"
echo "== a session (one worker, the reference run once)"
"$venv/bin/python" - <<'PY'
import time
import kopt

print("kopt %s from %s" % (kopt.version(), kopt.__file__))
rows = []
for problem, cands in [("examples/softmax", ["fast.cu", "reference.cu"]),
                       ("examples/vector_add", None), ("examples/transpose", None)]:
    import os
    if cands is None:   # the example's kernels, not its tuning template
        cands = sorted(f for f in os.listdir(problem) if f.endswith(".cu") and f != "tune.cu")
    t = time.time()
    with kopt.Session(problem, trials=1) as s:
        for c in cands:
            t1 = time.time()
            try:
                r = s.eval(os.path.join(problem, c))
                v, m, sp = r.verdict, r.median_ms, r.speedup
            except kopt.KoptError as e:   # kopt's message; the other rows go on
                print("%s/%s: %s" % (problem, c, e))
                v, m, sp = "ERROR", None, None
            rows.append((os.path.basename(problem), c, v, m, sp, time.time() - t1))
print("%-12s %-16s %-9s %12s %8s %7s" % ("problem", "candidate", "verdict", "median ms",
                                          "speedup", "wall s"))
for p, c, v, m, sp, w in rows:
    print("%-12s %-16s %-9s %12s %8s %7.2f" % (p, c, v, "%.4f" % m if m else "-",
                                              "%.2fx" % sp if sp else "-", w))
bad = [r for r in rows if r[2] != "OK"]
print("session: %d evaluations, %d not OK" % (len(rows), len(bad)))
PY
[ "$verdict" = OK ] || { echo "FAIL: the one-liner printed $verdict, not OK" >&2; exit 1; }
echo "wheel GPU check: OK"
