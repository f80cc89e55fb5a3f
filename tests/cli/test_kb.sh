#!/usr/bin/env bash
# CLI tests of KernelBench support without a GPU: kopt kb import (the repo's own problems,
# and its error messages for constructs it cannot map), kopt eval of ModelNew candidates
# against a PyTorch reference on the CPU build of PyTorch (KOPT_TORCH_DEVICE=cpu: correct,
# wrong, input-mutating), and kopt bench (its metrics, --json, the stored suite, --resume
# after kill -9, --optimize with a scripted model). The "no PyTorch" message is checked
# with a stub torch package, so it runs everywhere; the rest prints "skipped: no torch" where PyTorch is not installed.
# Each kopt command here starts PyTorch workers of its own (seconds each) and nothing is
# timed against a bound (no verdict here depends on a timing), so the steps that do not
# need each other run side by side, $KOPT_TEST_JOBS at a time (default: the number of
# cores; tests/lib/cases.sh): first the imports, then the evaluations and suites, each
# step with its own store, scratch folder and log; the logs are printed in a fixed order.
# usage: test_kb.sh /path/to/kopt /path/to/repo
set -u
K=$1; REPO=$2
# shellcheck source=tests/lib/cases.sh
source "$REPO/tests/lib/cases.sh"        # run_jobs, jobs_default
JOBS=$(jobs_default)
# which path the GPU-dependent cases take (said where they run)
if "$K" devices > /dev/null 2>&1; then export KOPT_TEST_GPU=1; else export KOPT_TEST_GPU=0; fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ktest-kb-XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
export KOPT_DB=$WORK/kopt.db KOPT_CACHE_DIR=$WORK/cache KOPT_TORCH_WORKER=$REPO/libexec/kopt_torch_worker.py
passed=0; failed=0; skipped=0
# in a step, each result is also counted in the step's tally file (read back by report)
ok() { echo "ok   $1"; passed=$((passed + 1)); [ -z "${TALLY:-}" ] || echo ok >> "$TALLY"; }
bad() { echo "FAIL $1: $2"; failed=$((failed + 1)); [ -z "${TALLY:-}" ] || echo FAIL >> "$TALLY"; }
has() { grep -q -- "$2" "$1" || { echo "  missing '$2' in:"; sed 's/^/    /' "$1" | head -20; return 1; }; }

# -- no PyTorch: a stub package that cannot be imported
mkdir -p "$WORK/stub/torch"; echo 'raise ImportError("stub torch for the test")' > "$WORK/stub/torch/__init__.py"
PYTHONPATH=$WORK/stub "$K" kb import "$REPO/bench/kernelbench/problems/2_row_softmax.py" --out "$WORK/none" > "$WORK/o" 2>&1
rc=$?
if [ $rc = 1 ] && has "$WORK/o" "PyTorch is not installed" && has "$WORK/o" "0 of 1 file(s) imported"; then
  ok "import without PyTorch says so (exit 1)"; else bad "import without PyTorch" "exit $rc"; fi
"$K" kb import > "$WORK/o" 2>&1; rc=$?
if [ $rc = 2 ] && has "$WORK/o" "usage: kopt kb import"; then ok "import usage"; else bad "import usage" "exit $rc"; fi

if ! python3 -c 'import torch' >/dev/null 2>&1; then
  echo "skipped: no torch (pip install torch runs the import, CPU evaluation and bench tests)"
  echo "ktest: $passed passed, $failed failed, 1 skipped"
  [ $failed = 0 ]; exit $?
fi

# ---- the steps --------------------------------------------------------------------------
# s_NAME runs in the background (step NAME) in a subshell: its store is $KOPT_DB =
# $WORK/db/NAME.db, its scratch folder $D, its output the log $WORK/log/NAME; it reads only
# what the files below and the import steps wrote. A step that did not reach its end (its
# .end file) is reported as a failure.

# -- import the repo's own problems
s_import() {
"$K" kb import "$REPO/bench/kernelbench/problems" --out "$WORK/p" > "$D/o" 2>&1; rc=$?
if [ $rc = 0 ] && has "$D/o" "6 of 6 file(s) imported into $WORK/p; 6 with check sizes" && has "$D/o" "1_matmul_relu  (work counts: bytes 6815744, flops 805306368)" &&
   has "$D/o" "2_row_softmax  (work counts: bytes 67108864; no FLOP count)" &&
   python3 - "$WORK/p" <<'PY'
import json, sys
d = sys.argv[1]
p = json.load(open(d + "/5_linear_gelu_norm/problem.json"))
names = [(t["name"], t["pytorch"], t["shape"]) for t in p["tensors"]]
assert names[0] == ("x", "input:0", ["tokens", "in_features"]), names
assert ("p_fc_weight", "param:fc.weight", ["out_features", "in_features"]) in names, names
assert names[-1] == ("out", "output:0", ["tokens", "out_features"]), names
assert p["reference"] == {"pytorch": "model.py"} and p["work"]["flops"] > 0
s = json.load(open(d + "/3_scale_add/problem.json"))
alpha = [t for t in s["tensors"] if t["name"] == "alpha"][0]
assert alpha["shape"] == [] and alpha["dtype"] == "f32", alpha   # the non-tensor input
c = json.load(open(d + "/6_conv_bias_relu/problem.json"))
assert any(t["pytorch"] == "param:bias" for t in c["tensors"]) and "flops" in c["work"]
PY
then ok "import: sizes, inputs, parameters, outputs, work counts"; else bad "import of the repo's problems" "exit $rc"; fi

# -- check sizes at import: every one of the repo's problems takes its shapes from its
# globals, so each gets a smaller, odd set that differs from the main one, and the shapes
# are written so that they follow it (height and width, equal at the main sizes, apart)
if has "$D/o" "check sizes rows=2047 cols=1023 (main rows=4096 cols=2048)" && python3 - "$WORK/p" <<'PY'
import json, os, sys
d = sys.argv[1]
for name in sorted(os.listdir(d)):
    p = json.load(open(os.path.join(d, name, "problem.json")))
    s, c = p["sizes"], p.get("check_sizes")
    assert c, (name, "no check_sizes")
    assert set(c) <= set(s), (name, c, s)
    for k, v in c.items():
        assert v % 2 == 1 and v != s[k] and v < s[k], (name, k, v, s[k])
    def numel(sz):
        n = 0
        for t in p["tensors"]:
            m = 1
            for e in t["shape"]:
                m *= e if isinstance(e, int) else eval(e, {}, sz)
            n += m
        return n
    main, check = numel(s), numel(dict(s, **c))
    assert check * 4 <= main, (name, main, check)   # a quarter of the main set at most
conv = json.load(open(d + "/6_conv_bias_relu/problem.json"))
c = conv["check_sizes"]
assert c["height"] != c["width"] and "kernel_size" not in c, c
assert conv["tensors"][0]["shape"] == ["batch_size", "in_channels", "height", "width"], conv["tensors"][0]
assert conv["tensors"][-1]["shape"] == ["batch_size", "out_channels", "height", "width"], conv["tensors"][-1]
assert json.load(open(d + "/4_row_sum/problem.json"))["check_sizes"].get("reduce_dim") is None
PY
then ok "import: check sizes for every problem, odd, smaller, with shapes that follow them"
else bad "import check sizes" "$(grep -A1 imported "$D/o" | head -12)"; fi
}
s_import_json() {
"$K" kb import "$REPO/bench/kernelbench/problems/1_matmul_relu.py" --out "$WORK/p1" --json > "$D/o.json" 2> "$D/e"; rc=$?
if [ $rc = 0 ] && python3 -c '
import json, sys
d = json.loads(open(sys.argv[1]).readline())
assert d["sizes"] == {"M": 1024, "K": 512, "N": 768}, d
c = d["check_sizes"]
assert sorted(c) == ["K", "M", "N"] and all(v % 2 for v in c.values()), d
assert "check_sizes_error" not in d, d
' "$D/o.json"; then ok "import --json: the check sizes in each file's line"
else bad "import --json check sizes" "exit $rc $(cat "$D/o.json")"; fi
}

# -- a problem whose shapes are literals (or that has no globals) gets none, and says why
mkdir -p "$WORK/lit"
cat > "$WORK/lit/literal.py" <<'PY'
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x * 2
batch = 16
def get_inputs():
    return [torch.randn(16, 32)]
def get_init_inputs():
    return []
PY
cat > "$WORK/lit/noglobals.py" <<'PY'
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(8, 24)]
def get_init_inputs():
    return []
PY
s_literal() {   # the folder (text) and the one file (--json), side by side, each its own --out
"$K" kb import "$WORK/lit" --out "$WORK/litout" > "$D/o" 2>&1 & p1=$!
"$K" kb import "$WORK/lit/literal.py" --out "$WORK/litout_json" --json > "$D/o.json" 2> "$D/e" & p2=$!
wait $p1; rc=$?; wait $p2
if [ $rc = 0 ] && has "$D/o" "2 of 2 file(s) imported into $WORK/litout; 0 with check sizes" &&
   has "$D/o" "no check sizes: no tensor's shape follows the integer globals (batch): the shapes are literals" &&
   has "$D/o" "no check sizes: the module has no integer globals" &&
   ! grep -q check_sizes "$WORK/litout/literal/problem.json" "$WORK/litout_json/literal/problem.json" && python3 -c '
import json, sys
d = json.loads(open(sys.argv[1]).readline())
assert d["check_sizes"] is None and "literals" in d["check_sizes_error"], d
' "$D/o.json"; then ok "import: literal shapes get no check sizes, and the reason"
else bad "import literal shapes" "exit $rc"; fi
}

# -- constructs the importer cannot map: named with the file
mkdir -p "$WORK/badkb"
cat > "$WORK/badkb/no_inputs.py" <<'PY'
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x
def get_init_inputs():
    return []
PY
cat > "$WORK/badkb/dict_out.py" <<'PY'
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return {"y": x}
def get_inputs():
    return [torch.randn(4)]
def get_init_inputs():
    return []
PY
cat > "$WORK/badkb/bool_in.py" <<'PY'
import torch
class Model(torch.nn.Module):
    def forward(self, x, flag):
        return x
def get_inputs():
    return [torch.randn(4), True]
def get_init_inputs():
    return []
PY
cat > "$WORK/badkb/complex_in.py" <<'PY'
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x.real
def get_inputs():
    return [torch.randn(4, dtype=torch.complex64)]
def get_init_inputs():
    return []
PY
s_errors() {
"$K" kb import "$WORK/badkb" --out "$WORK/badout" > "$D/o" 2>&1; rc=$?
if [ $rc = 1 ] && has "$D/o" "no_inputs.py: no get_inputs" && has "$D/o" "dict_out.py: forward returns dict" &&
   has "$D/o" "bool_in.py: get_inputs() item 1 (flag) is a bool" &&
   has "$D/o" "complex_in.py: get_inputs() item 0 (x) has dtype torch.complex64" &&
   has "$D/o" "0 of 4 file(s) imported"; then
  ok "import: unmappable constructs named with their file"; else bad "import errors" "exit $rc"; fi
}

# -- kopt eval on the CPU build: ModelNew against the PyTorch reference, small sizes (on
# the problem s_import wrote)
export KOPT_TORCH_DEVICE=cpu
P=$WORK/p/3_scale_add; SZ="--size batch=64 --size width=96 --trials 2 --no-compile"
cat > "$WORK/good.py" <<'PY'
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        return torch.addcmul(z, x, torch.full_like(x, alpha))
PY
cat > "$WORK/wrong.py" <<'PY'
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        return alpha * z + x
PY
cat > "$WORK/mutates.py" <<'PY'
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        z.add_(alpha * x)
        return z.clone()
PY
s_eval_good() {
"$K" eval "$P" "$WORK/good.py" $SZ --reps 3:5 --budget-ms 5 --json > "$D/o.json" 2> "$D/e"; rc=$?
if [ $rc = 0 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["verdict"] == "OK", d["message"]
assert d["sizes"] == {"batch": 64, "width": 96}, d["sizes"]
assert d["check_sizes"] == {"batch": 1023, "width": 2047}, d["check_sizes"]   # from the import
assert d["pytorch"]["eager_ms"] > 0 and d["speedup"] > 0, d["pytorch"]
assert [c["sizes"] for c in d["checks"]] == ["main"] * 3 + ["check"] * 2, d["checks"]
assert all(c["mismatches"] == 0 for c in d["checks"])
b = d["pytorch"]["brackets"]   # both timed by the same loop (on the CPU: no hold)
assert set(b) == {"candidate", "eager"} and all(v["exposed_runs"] == 0 for v in b.values()), b
assert d["pytorch"]["timer"].startswith("libkopt"), d["pytorch"]["timer"]   # the C clock
for w in ("reference_setup_steps", "candidate_setup_steps"):   # a duration, not a clock reading
    assert 0 <= d["wall_ms"][w]["exec"] < 600000, d["wall_ms"][w]
t = d["trace"]   # every second accounted for: the parent steps sum to the total
assert abs(sum(t["parent"].values()) - d["wall_ms"]["total"]) < 1, (t["parent"], d["wall_ms"])
for s in ("workers_ready", "reference_run", "candidate_run", "compare"):
    assert s in t["parent"], t["parent"]
for w in ("reference", "candidate"):   # and each worker, from import torch to the checked call
    for s in ("import_torch", "trial_run", "output_transfer", "timed_runs", "checked_call"):
        assert t[w].get(s, -1) >= 0, (w, t[w])
pa = t["parent_at"]   # when each step ran: one monotonic clock for the parent and its workers, from at_base_ms
assert isinstance(t["at_base_ms"], int) and min(a for a, b in pa.values()) >= 0, t["at_base_ms"]
assert set(pa) == set(t["parent"]) and all(a <= b for a, b in pa.values()), (pa, t["parent"])
span = max(b for a, b in pa.values()) - min(a for a, b in pa.values())
assert abs(span - d["wall_ms"]["total"]) < 1, (span, d["wall_ms"]["total"])
for w in ("reference", "candidate"):
    assert set(t[w + "_at"]) == set(k for k in t[w] if not k.startswith("ahead_")) | \
        set(k for k in t[w + "_at"] if k.startswith("ahead_")), (w, t[w + "_at"], t[w])
cc, run = t["candidate_at"]["checked_call"], pa["candidate_run"]
assert abs(cc[1] - cc[0] - t["candidate"]["checked_call"]) < 0.01, (cc, t["candidate"])
assert run[0] <= cc[0] <= cc[1] <= run[1], ("the checked call outside the candidate run", cc, run)
' "$D/o.json"; then ok "eval: a correct ModelNew on the CPU (sizes overridden), timed by libkopt's clock, every step traced"; else bad "eval good" "exit $rc $(cat "$D/e") $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["message"], d["wall_ms"], d["pytorch"].get("timer"))' "$D/o.json" 2>&1)"; fi
}
s_eval_wrong() {
"$K" eval "$P" "$WORK/wrong.py" $SZ --no-time > "$D/o" 2>&1; rc=$?
if [ $rc = 1 ] && has "$D/o" "WRONG: out differs from the PyTorch reference"; then ok "eval: a wrong ModelNew is WRONG"; else bad "eval wrong" "exit $rc"; fi
}
s_eval_mutates() {
"$K" eval "$P" "$WORK/mutates.py" $SZ --no-time > "$D/o" 2>&1; rc=$?
if [ $rc = 12 ] && has "$D/o" "INPUT_MUTATED: the candidate changed its input 'z'"; then ok "eval: writing an input is caught"; else bad "eval mutates" "exit $rc"; fi
}
s_eval_native() {
if [ "$KOPT_TEST_GPU" = 1 ]; then
  # a GPU is here: the kopt-native candidate runs against the reference on the GPU's PyTorch
  KOPT_TORCH_DEVICE= "$K" eval "$P" "$REPO/bench/kernelbench/candidates/3_scale_add.cu" $SZ --no-time > "$D/o" 2>&1; rc=$?
  if [ $rc = 0 ] && has "$D/o" "OK: correct"; then echo "  (host-mode .cu: a GPU is here, run against the reference on it)"; ok "eval: a kopt-native candidate is OK on the GPU"
  else bad "eval native on the GPU" "exit $rc $(tail -3 "$D/o")"; fi
else
  "$K" eval "$P" "$REPO/bench/kernelbench/candidates/3_scale_add.cu" $SZ --no-time > "$D/o" 2>&1; rc=$?
  if [ $rc = 0 ] && has "$D/o" "SKIPPED: no GPU here"; then echo "  (host-mode .cu on the CPU: compiled, then skipped: no GPU)"; ok "eval: a kopt-native candidate compiles and says skipped"
  else bad "eval native without GPU" "exit $rc"; fi
fi
}

# -- kopt bench: a tiny suite (3 problems: one correct candidate, one wrong, one missing)
mkdir -p "$WORK/kb3" "$WORK/c3"
for n in 1 2 3; do
cat > "$WORK/kb3/t$n.py" <<PY
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.tanh(x) * $n
rows = 32
cols = 48
def get_inputs():
    return [torch.randn(rows, cols)]
def get_init_inputs():
    return []
PY
done
s_import_kb3() { "$K" kb import "$WORK/kb3" --out "$WORK/s3" > /dev/null 2>&1; }
printf 'import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.tanh(x)\n' > "$WORK/c3/t1.py"
printf 'import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.tanh(x)\n' > "$WORK/c3/t2.py"
nevals() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from evaluations').fetchone()[0])" "$KOPT_DB"; }
s_bench() {
"$K" bench "$WORK/s3" --candidates "$WORK/c3" --no-compile --trials 1 --reps 3:5 --budget-ms 5 > "$D/o" 2>&1; rc=$?
if [ $rc = 0 ] && has "$D/o" "^t1 .* OK" && has "$D/o" "^t2 .* WRONG" && has "$D/o" "^t3 .* MISSING" &&
   has "$D/o" "3 problem(s), 1 correct (correctness rate 33.3%)" && has "$D/o" "fast_0 0.333" &&
   has "$D/o" "over the 1 correct and timed problem(s)"; then
  ok "bench: verdicts, correctness rate, fast_0"; else bad "bench" "exit $rc"; fi
suite=$(sed -n 's/^suite \([0-9]*\):.*/\1/p' "$D/o")
evals_before=$(nevals)
"$K" bench --resume "$suite" --json > "$D/o.json" 2> "$D/e"; rc=$?
if [ $rc = 0 ] && python3 -c '
import json, sys, math
d = json.load(open(sys.argv[1]))
e = d["vs_eager"]
assert [r["verdict"] for r in d["rows"]] == ["OK", "WRONG", "MISSING"], d["rows"]
s = d["rows"][0]["speedup_eager"]
assert abs(e["geomean_speedup_correct"] - s) < 1e-9 and abs(e["geomean_speedup_all_failures_as_1"] - s ** (1 / 3)) < 1e-9, e
assert e["fast_p"]["fast_0"] == 1 / 3 and d["vs_compile"] is None
# the speed-of-light guard: no device, so no bound; every row says which times it flagged
assert d["speed_of_light"] == {"rows_with_bound": 0, "times_below_bound": 0}, d["speed_of_light"]
assert all(r["sol_flags"] == [] for r in d["rows"]), d["rows"]
' "$D/o.json" && [ "$(nevals)" = "$evals_before" ]; then
  ok "bench --resume of a finished suite: the stored rows, no evaluation again, --json metrics"
else bad "bench resume json" "exit $rc $(head -5 "$D/e")"; fi

# -- kill -9 in the middle, then --resume: the rows done are kept, the rest evaluated (a
# candidates folder of its own: the one above stays as s_bench read it)
cp -r "$WORK/c3" "$D/c3"
printf 'import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return 3 * torch.tanh(x)\n' > "$D/c3/t3.py"
"$K" bench "$WORK/s3" --candidates "$D/c3" --no-compile --trials 1 --reps 3:5 --budget-ms 5 > "$D/k" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  n=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from bench_rows where suite_id>$suite').fetchone()[0])" "$KOPT_DB" 2>/dev/null || echo 0)
  [ "$n" -ge 1 ] && break; sleep 0.1
done
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
s2=$(sed -n 's/^suite \([0-9]*\):.*/\1/p' "$D/k")
before=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from bench_rows where suite_id=$s2').fetchone()[0])" "$KOPT_DB")
"$K" bench --resume "$s2" --trials 1 --reps 3:5 --budget-ms 5 > "$D/o" 2>&1; rc=$?
if [ $rc = 0 ] && [ "$before" -ge 1 ] && [ "$before" -lt 3 ] && has "$D/o" "(resumed)" &&
   has "$D/o" "^t3 .* OK" && has "$D/o" "3 problem(s), 2 correct"; then
  ok "bench: killed with kill -9 after $before row(s), resumed to the end"
else bad "bench kill -9 resume" "exit $rc, rows before $before"; fi
}

# -- kopt bench --optimize: kopt optimize per problem (a scripted command: LLM, the scripted
# evaluator for the search), then its best kernel evaluated as the row's candidate (each
# run in a folder of its own, where it writes its runs' files)
LLM="command:python3 $REPO/tests/optimize/scripted_llm.py $REPO/tests/optimize/kb_tanh"
OPT="--optimize --evaluator fake --no-compile --trials 1 --reps 3:5 --budget-ms 5"
s_optimize() {
if [ "$KOPT_TEST_GPU" = 1 ]; then echo "  (bench --optimize: a GPU is here: its rows run)"; fi
(cd "$D" && KOPT_PROMPTS=$REPO/prompts "$K" bench "$WORK/s3" $OPT --iterations 1 --llm "$LLM") > "$D/o" 2>&1; rc=$?
so=$(sed -n 's/^suite \([0-9]*\):.*/\1/p' "$D/o")
(cd "$D" && "$K" bench --resume "$so" --json) > "$D/o.json" 2> "$D/e"; rc2=$?
if [ $rc = 0 ] && [ $rc2 = 0 ] && has "$D/o" "kopt optimize's best per problem (1 iteration(s)" && python3 -c '
import json, os, sys
d = json.load(open(sys.argv[1]))
assert d["options"]["optimize"]["iterations"] == 1, d["options"]
for r in d["rows"]:
    o = r["optimize"]
    assert r["kind"] == "optimize" and o["best_node"] == 1 and o["best_ms"] == 0.5, r
    assert r["candidate"].endswith("/%s.cu" % r["problem"]), r["candidate"]
    src = open(os.path.join(sys.argv[2], r["candidate"])).read()
    assert "kopt-step: 1" in src and "kopt_candidate_run" in src
    # a host-mode kernel: without a GPU compiled, not run; with one, run against the CPU
    # build of PyTorch as this test sets it: either way a verdict with its reason
    if os.environ.get("KOPT_TEST_GPU") == "1":
        assert r["verdict"] and r.get("message"), r
    else:
        assert r["verdict"] == "SKIPPED", r
' "$D/o.json" "$D"; then
  ok "bench --optimize: a tree per problem, its best kernel the row's candidate; resumed without a model"
else bad "bench --optimize" "exit $rc/$rc2 $(tail -5 "$D/o") $(head -3 "$D/e")"; fi
}
s_optimize_overlap() {
(cd "$D" && KOPT_PROMPTS=$REPO/prompts "$K" bench "$WORK/s3" $OPT --iterations 2 --overlap --llm "$LLM" --json) > "$D/o.json" 2> "$D/e"; rc=$?
if [ $rc = 0 ] && python3 - "$D/o.json" "$KOPT_DB" <<'PY'
import json, sqlite3, sys
d = json.load(open(sys.argv[1]))
db = sqlite3.connect(sys.argv[2])
trees = [r["optimize"]["tree"] for r in d["rows"]]
assert len(trees) == 3, d["rows"]
for t in trees:
    o = json.loads(db.execute("SELECT options_json FROM opt_trees WHERE tree_id = ?",
                              (t,)).fetchone()[0])
    assert o.get("overlap") is True and o["iterations"] == 2, o
PY
then ok "bench --optimize --overlap: each problem's tree grows with --overlap (stored with it)"
else bad "bench --optimize --overlap" "exit $rc $(tail -3 "$D/e")"; fi
}
s_optimize0() {
(cd "$D" && KOPT_PROMPTS=$REPO/prompts "$K" bench "$WORK/s3" $OPT --iterations 0 --llm "$LLM") > "$D/o" 2>&1; rc=$?
if [ $rc = 0 ] && has "$D/o" "^t1 .* OK" && has "$D/o" "3 problem(s), 3 correct"; then
  ok "bench --optimize: nothing better found, the reference is kept (OK against itself)"
else bad "bench --optimize fallback" "exit $rc"; fi
}

# -- shapes it was not written for: a ModelNew that hard-codes the benchmark's shape (divides
# by the literal column count) is right at the main sizes and wrong at the imported check
# sizes: SHAPE_SPECIFIC (exit 18), OK with --no-check-sizes (KernelBench's rule); one that
# takes the shape from its input stays OK. In kopt bench it is a failure with its own column.
mkdir -p "$WORK/kbs" "$WORK/cs"
for n in mean_a mean_b; do
cat > "$WORK/kbs/$n.py" <<'PY'
import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x.mean(dim=1)
rows = 32
cols = 48
def get_inputs():
    return [torch.randn(rows, cols)]
def get_init_inputs():
    return []
PY
done
cp "$WORK/lit/literal.py" "$WORK/kbs/literal.py"
s_import_kbs() { "$K" kb import "$WORK/kbs" --out "$WORK/ps" > "$D/o" 2>&1; }
printf 'import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.sum(dim=1) / 48\n' > "$WORK/cs/mean_a.py"
printf 'import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.sum(dim=1) / x.shape[1]\n' > "$WORK/cs/mean_b.py"
printf 'import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x + x\n' > "$WORK/cs/literal.py"
SO="--trials 1 --reps 3:5 --budget-ms 5"
s_shape_a() {
"$K" eval "$WORK/ps/mean_a" "$WORK/cs/mean_a.py" $SO --no-time > "$D/o" 2>&1; rc=$?
if [ $rc = 18 ] && has "$D/o" "SHAPE_SPECIFIC: out differs from the PyTorch reference at the check sizes" &&
   has "$D/o" "written for one shape"; then ok "eval: a ModelNew hard-coding the main shape is SHAPE_SPECIFIC at the check sizes (exit 18)"
else bad "eval shape-specific" "exit $rc $(tail -3 "$D/o")"; fi
}
s_shape_a_nocheck() {
"$K" eval "$WORK/ps/mean_a" "$WORK/cs/mean_a.py" $SO --no-time --no-check-sizes > "$D/o" 2>&1; rc=$?
if [ $rc = 0 ] && has "$D/o" "OK: correct"; then ok "eval --no-check-sizes: the same candidate is OK (KernelBench's rule)"
else bad "eval --no-check-sizes" "exit $rc $(tail -3 "$D/o")"; fi
}
s_shape_b() {
"$K" eval "$WORK/ps/mean_b" "$WORK/cs/mean_b.py" $SO --no-time > "$D/o" 2>&1; rc=$?
if [ $rc = 0 ] && has "$D/o" "OK: correct"; then ok "eval: a ModelNew that takes its shape from the input is OK at both size sets"
else bad "eval honest at check sizes" "exit $rc $(tail -3 "$D/o")"; fi
}
# the suite run once: its text as it ran, its --json from the store (--resume of the
# finished suite prints the stored rows: the same JSON, without evaluating them again)
s_shape_bench() {
"$K" bench "$WORK/ps" --candidates "$WORK/cs" --no-compile $SO > "$D/o" 2>&1; rc=$?
sb=$(sed -n 's/^suite \([0-9]*\):.*/\1/p' "$D/o")
"$K" bench --resume "$sb" --json > "$D/o.json" 2> "$D/e"; rc2=$?
if [ $rc = 0 ] && [ $rc2 = 0 ] && has "$D/o" "verdict  *shapes  *cand ms" &&
   has "$D/o" "^mean_a .* SHAPE_SPECIFIC  *FAILED " && has "$D/o" "^mean_b .* OK  *ok " &&
   has "$D/o" "^literal .* OK  *none " && has "$D/o" "3 problem(s), 2 correct" &&
   has "$D/o" "1 row(s) correct at the benchmark's sizes but wrong at the problem's check sizes" && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
rows = [(r["problem"], r["verdict"], r["shape_check"]) for r in d["rows"]]
assert rows == [("literal", "OK", "none"), ("mean_a", "SHAPE_SPECIFIC", "failed"),
                ("mean_b", "OK", "ok")], rows
assert d["vs_eager"]["correct"] == 2 and d["shape_specific"] == 1, d
assert d["options"]["no_check_sizes"] is False, d["options"]
' "$D/o.json"; then ok "bench: SHAPE_SPECIFIC is a failure, with a shapes column and shape_check in --json"
else bad "bench shape check" "exit $rc/$rc2 $(head -8 "$D/o") $(head -3 "$D/e")"; fi
}
s_shape_nocheck() {
"$K" bench "$WORK/ps" --candidates "$WORK/cs" --no-compile $SO --no-check-sizes > "$D/o" 2>&1; rc=$?
s4=$(sed -n 's/^suite \([0-9]*\):.*/\1/p' "$D/o")
"$K" bench --resume "$s4" --json > "$D/o.json" 2> "$D/e"; rc2=$?
if [ $rc = 0 ] && [ $rc2 = 0 ] && has "$D/o" "^--no-check-sizes: candidates are checked at the benchmark's sizes only" &&
   has "$D/o" "^mean_a .* OK  *skipped " && has "$D/o" "3 problem(s), 3 correct" && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert [r["shape_check"] for r in d["rows"]] == ["none", "skipped", "skipped"], d["rows"]
assert d["options"]["no_check_sizes"] is True, d["options"]
' "$D/o.json"; then ok "bench --no-check-sizes: KernelBench's rule (the shape-specific candidate counts as correct), stored with the suite"
else bad "bench --no-check-sizes" "exit $rc/$rc2 $(head -8 "$D/o")"; fi
}
s_help() {
"$K" bench --help > "$D/o" 2>&1
if has "$D/o" "no-check-sizes  do not run candidates at the problems' check sizes" && has "$D/o" "SHAPE_SPECIFIC"; then
  ok "bench --help: check sizes, SHAPE_SPECIFIC and --no-check-sizes"; else bad "bench --help" "missing text"; fi
}

# ---- running them -----------------------------------------------------------------------
step() {   # NAME: s_NAME in the background's subshell, into $WORK/log/NAME
  local t0=$SECONDS
  mkdir -p "$WORK/s/$1" "$WORK/db"
  ( D=$WORK/s/$1 TALLY=$WORK/log/$1.tally; export KOPT_DB=$WORK/db/$1.db; : > "$TALLY"
    "s_$1"; echo $((SECONDS - t0)) > "$WORK/log/$1.end" ) > "$WORK/log/$1" 2>&1 < /dev/null
}
report() {   # NAME...: their logs in this order; each result counted; a step cut short fails
  local n
  for n in "$@"; do
    cat "$WORK/log/$n"
    if [ -e "$WORK/log/$n.end" ]; then
      passed=$((passed + $(grep -c '^ok$' "$WORK/log/$n.tally")))
      failed=$((failed + $(grep -c '^FAIL$' "$WORK/log/$n.tally")))
    else
      bad "step $n" "did not reach its end ($(wc -l < "$WORK/log/$n.tally") result(s) before)"
    fi
  done
}
mkdir -p "$WORK/log"
t_all=$SECONDS
# the imports (the problems the other steps read), then the rest, the longest first
run_jobs "$JOBS" step import import_kb3 import_kbs import_json literal errors
run_jobs "$JOBS" step bench optimize shape_bench shape_nocheck optimize0 optimize_overlap \
  eval_good eval_native eval_wrong eval_mutates shape_a shape_a_nocheck shape_b help
report import import_json literal errors eval_good eval_wrong eval_mutates eval_native \
  import_kb3 bench optimize optimize0 optimize_overlap import_kbs shape_a shape_a_nocheck \
  shape_b shape_bench shape_nocheck help
echo "      $((SECONDS - t_all)) s for the steps after the stub import ($JOBS at a time)"

echo "ktest: $passed passed, $failed failed"
[ $failed = 0 ]
