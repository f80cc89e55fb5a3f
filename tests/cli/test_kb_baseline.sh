#!/usr/bin/env bash
# The torch.compile baseline of `kopt eval` on the CPU build of PyTorch (KOPT_TORCH_DEVICE=cpu;
# docs/kernelbench.md, "Baselines and timing"): timed by default and stored
# (torch_baselines), taken from the store by the next run (compile_cached, the same number,
# no compile worker), not at other sizes, not of another torch version (the deferred
# worker: started once the reference said which torch it runs), none with --no-compile;
# every speedup against eager, torch.compile and the faster of the two (baseline_ms,
# speedup_best). The key, the drift rule and the store's round trip are unit-tested
# (tests/unit/test_torch_baseline.c). Prints "skipped: no torch" without PyTorch.
# usage: test_kb_baseline.sh /path/to/kopt /path/to/repo
set -u
K=$1; REPO=$2
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ktest-kbb-XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
export KOPT_DB=$WORK/kopt.db KOPT_CACHE_DIR=$WORK/cache KOPT_TORCH_WORKER=$REPO/libexec/kopt_torch_worker.py
export KOPT_TORCH_DEVICE=cpu
# What is tested is where the baseline comes from, not torch.compile (whose C++ build takes
# 10-20 s a size on two CPUs): with TORCH_COMPILE_DISABLE=1 torch.compile gives the model
# back as it is, and its worker checks and times it as it would a compiled one.
export TORCH_COMPILE_DISABLE=1
passed=0; failed=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
has() { grep -q -- "$2" "$1" || { echo "  missing '$2' in:"; sed 's/^/    /' "$1" | head -30; return 1; }; }
sql() { python3 -c '
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
print("\n".join("|".join(map(str, r)) for r in db.execute(sys.argv[2])))
db.commit()' "$KOPT_DB" "$1"; }

if ! python3 -c 'import torch' >/dev/null 2>&1; then
  echo "skipped: no torch (pip install torch runs these tests)"
  echo "ktest: 0 passed, 0 failed, 1 skipped"
  exit 0
fi

mkdir -p "$WORK/src"
cat > "$WORK/src/tb.py" <<'PY'
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 2
rows = 64
cols = 96
def get_inputs():
    return [torch.randn(rows, cols)]
def get_init_inputs():
    return []
PY
printf 'import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.tanh(x) * 2\n' > "$WORK/good.py"
"$K" kb import "$WORK/src/tb.py" --out "$WORK/p" > "$WORK/o" 2>&1 ||
  { echo "FAIL import: $(tail -3 "$WORK/o")"; echo "ktest: 0 passed, 1 failed"; exit 1; }
P=$WORK/p/tb
OPTS="--trials 1 --reps 5:10 --budget-ms 5 --no-check-sizes"

# -- 1. the first run times torch.compile, and stores it under its key
"$K" eval "$P" "$WORK/good.py" $OPTS --json > "$WORK/1.json" 2> "$WORK/1.err"; rc=$?
if [ $rc = 0 ] && python3 - "$WORK/1.json" "$KOPT_DB" <<'PY'
import json, sqlite3, sys, torch
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "OK", d["message"]
p = d["pytorch"]
assert p["compile_ms"] > 0 and p["compile_cached"] is False, p
assert p["torch_version"] == torch.__version__ and p["compile_measured_at"], p
assert "compile" in d["trace"] or "reference" not in d["trace"], "no compile worker ran"
assert p["baseline_ms"] == min(p["eager_ms"], p["compile_ms"]), p
assert p["baseline"] == ("compile" if p["compile_ms"] < p["eager_ms"] else "eager"), p
assert abs(p["speedup_best"] - p["baseline_ms"] / d["timing"]["median_ms"]) < 1e-9 * p["speedup_best"], p
rows = sqlite3.connect(sys.argv[2]).execute(
    "select device, torch_version, sizes, median_ms, eager_ms, measured_at, eval_id, run_id"
    " from torch_baselines").fetchall()
assert len(rows) == 1, rows
dev, tv, sizes, med, eager, at, eid, rid = rows[0]
assert (dev, tv, sizes) == ("cpu", torch.__version__, "rows=64,cols=96"), rows
assert med == p["compile_ms"] and eager == p["eager_ms"] and at == p["compile_measured_at"], (rows, p)
last = sqlite3.connect(sys.argv[2]).execute("select max(id), max(run_id) from evaluations").fetchone()
assert (eid, rid) == last, (rows, last)
PY
then ok "eval: torch.compile timed by default, the faster baseline, stored under its key"
else bad "first eval" "exit $rc $(tail -3 "$WORK/1.err")"; fi

# -- 2. the next run takes it from the store: the same number, no compile worker (--compile:
# the default, still accepted)
"$K" eval "$P" "$WORK/good.py" $OPTS --compile > "$WORK/2.out" 2> "$WORK/2.err"; rc=$?
if [ $rc = 0 ] && has "$WORK/2.out" "^compile    cached: measured .* with torch .*, not timed again" &&
   has "$WORK/2.out" "^baseline   [0-9.]* ms: the faster of eager and torch.compile" &&
   has "$WORK/2.out" "^speedup    [0-9.]*x over the faster baseline" &&
   python3 - "$WORK/1.json" "$KOPT_DB" <<'PY'
import json, sqlite3, sys
first = json.load(open(sys.argv[1]))["pytorch"]
db = sqlite3.connect(sys.argv[2])
d = json.loads(db.execute("select result_json from evaluations order by id desc limit 1").fetchone()[0])
p = d["pytorch"]
assert p["compile_cached"] is True, p
assert p["compile_ms"] == first["compile_ms"], (p["compile_ms"], first["compile_ms"])
assert p["compile_measured_at"] == first["compile_measured_at"], p
assert "compile" not in d["trace"] and "reference" in d["trace"], "a compile worker ran"
assert p["baseline_ms"] == min(p["eager_ms"], p["compile_ms"]) and p["speedup_best"] > 0, p
assert db.execute("select count(*) from torch_baselines").fetchone()[0] == 1
PY
then ok "eval: the next run takes it from the store (compile_cached, the same number)"
else bad "cached eval" "exit $rc $(tail -3 "$WORK/2.err")"; fi

# -- 3. other sizes: another key, timed and stored
"$K" eval "$P" $OPTS --size rows=32 --json > "$WORK/3.json" 2> "$WORK/3.err"; rc=$?
if [ $rc = 0 ] && python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))["pytorch"]
assert p["compile_ms"] > 0 and p["compile_cached"] is False, p
' "$WORK/3.json" && [ "$(sql "select count(*) from torch_baselines where sizes = 'rows=32,cols=96'")" = 1 ]; then
  ok "eval: at other sizes the stored baseline is not used"
else bad "other sizes" "exit $rc $(sql 'select sizes from torch_baselines') $(tail -3 "$WORK/3.err")"; fi

# -- 4. another torch version's baseline is never used: the compile worker waits for the
# reference's version, then runs
sql "update torch_baselines set torch_version = '0.0.1-other'" > /dev/null
"$K" eval "$P" $OPTS --json -v > "$WORK/4.json" 2> "$WORK/4.err"; rc=$?
if [ $rc = 0 ] && has "$WORK/4.err" "the cached one is of torch 0.0.1-other, the reference runs" &&
   python3 - "$WORK/4.json" "$KOPT_DB" <<'PY'
import json, sqlite3, sys, torch
d = json.load(open(sys.argv[1]))
p = d["pytorch"]
assert d["verdict"] == "OK" and p["compile_ms"] > 0 and p["compile_cached"] is False, p
assert "compile" in d["trace"] or "reference" not in d["trace"], "no compile worker ran"
rows = sqlite3.connect(sys.argv[2]).execute(
    "select torch_version from torch_baselines where sizes = 'rows=64,cols=96' order by id").fetchall()
assert rows == [("0.0.1-other",), (torch.__version__,)], rows
PY
then ok "eval: a baseline of another torch version is not used (timed again, stored beside it)"
else bad "torch version" "exit $rc $(tail -3 "$WORK/4.err")"; fi

# -- 5. --no-compile: no torch.compile, no faster-of-the-two
"$K" eval "$P" "$WORK/good.py" $OPTS --no-compile --json > "$WORK/5.json" 2> "$WORK/5.err"; rc=$?
if [ $rc = 0 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
p = d["pytorch"]
assert d["verdict"] == "OK" and p["eager_ms"] > 0 and p["speedup_eager"] > 0, p
for k in ("compile_ms", "speedup_compile", "baseline_ms", "baseline", "speedup_best", "compile_measured_at"):
    assert p[k] is None, (k, p)
assert p["compile_cached"] is False and "compile" not in p["brackets"], p
' "$WORK/5.json"; then ok "eval --no-compile: compile_ms and the best baseline are null"
else bad "--no-compile" "exit $rc $(tail -3 "$WORK/5.err")"; fi

# -- 6. no room in host memory for the compile worker's output buffer: not timed, said so
KOPT_HOST_MEMORY_GB=0.000001 "$K" eval "$P" "$WORK/good.py" $OPTS --size rows=48 --json > "$WORK/6.json" 2> "$WORK/6.err"; rc=$?
if [ $rc = 0 ] && has "$WORK/6.err" "may be killed for memory" && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
p = d["pytorch"]
assert d["verdict"] == "OK" and p["compile_ms"] is None, p
assert "not timed: its output buffer" in p["compile_note"], p
' "$WORK/6.json"; then ok "eval: no compile worker where its output buffer would not fit in host memory (said in compile_note)"
else bad "host memory" "exit $rc $(tail -3 "$WORK/6.err")"; fi

echo "ktest: $passed passed, $failed failed"
[ $failed = 0 ]
