#!/usr/bin/env bash
# CLI tests of `kopt tune` that need no GPU: a small template and problem are made in a
# temporary folder, `--space` describes their space, and a complete cache of synthetic
# measurements (made below from the --space JSON, with a known optimum) is replayed:
# every strategy finds the optimum within a budget of the valid points; --json has the
# result's fields; --record/--export-kt/--export-t4/--out files are written and parse;
# bad inputs give clear messages and exit codes; a replay killed with SIGKILL midway
# resumes with --resume without evaluating anything stored again and reaches the same best
# as an uninterrupted run; SIGINT prints the best so far and the resume command.
# usage: test_tune.sh /path/to/kopt /path/to/examples   (prints "ktest: N passed, M failed")
set -u

KOPT=${1:?usage: test_tune.sh KOPT_BINARY EXAMPLES_DIR}
EXAMPLES=${2:?usage: test_tune.sh KOPT_BINARY EXAMPLES_DIR}
KOPT=$(cd "$(dirname "$KOPT")" && pwd)/$(basename "$KOPT")
EXAMPLES=$(cd "$EXAMPLES" && pwd)

if ! command -v python3 >/dev/null 2>&1; then
    echo "skipped: python3 is needed to make and read the caches"
    exit 0
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ktest-tune-XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
export KOPT_CACHE_DIR="$WORK/cache"
export KOPT_DB="$WORK/default.db"
cd "$WORK" || exit 1

passed=0 failed=0 case_failed=0 current=""
OUT="$WORK/stdout" ERR="$WORK/stderr"
begin() { current=$1; case_failed=0; }
fail() { echo "$current: $*" >&2; case_failed=1; }
end() {
    if [ "$case_failed" = 0 ]; then passed=$((passed + 1)); echo "ok   $current"
    else
        failed=$((failed + 1)); echo "FAIL $current"
        echo "---- stdout:" >&2; head -80 "$OUT" >&2; echo "---- stderr:" >&2; head -40 "$ERR" >&2
    fi
}
run() { "$KOPT" "$@" >"$OUT" 2>"$ERR"; rc=$?; }
expect_rc() { [ "$rc" = "$1" ] || fail "exit code $rc, expected $1"; }
has() { grep -q -E -- "$1" "$OUT" || fail "stdout lacks /$1/"; }
has_err() { grep -q -E -- "$1" "$ERR" || fail "stderr lacks /$1/"; }
# json PYTHON-EXPRESSION [FILE]: true when the expression over the parsed JSON `d` is true
json() {
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' \
        "${2:-$OUT}" "$1" || fail "JSON check failed: $1"
}

has_gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    has_gpu=1
fi

# ---- a problem and a template ---------------------------------------------------------------
P="$WORK/scale"
mkdir -p "$P"
cat > "$P/problem.json" <<'EOF'
{
  "name": "scale",
  "description": "y = 2 x over N f32 values (a tuning test)",
  "sizes": {"N": 1048576},
  "tensors": [
    {"name": "x", "dtype": "f32", "shape": ["N"], "role": "input",
     "init": {"dist": "uniform", "low": -1, "high": 1}},
    {"name": "y", "dtype": "f32", "shape": ["N"], "role": "output"}
  ],
  "reference": {"source": "reference.cu",
    "launches": [{"kernel": "scale_ref", "grid": ["cdiv(N,256)"], "block": [256],
                  "args": ["x", "y", "N"]}]},
  "tolerance": {"atol": 1e-6, "rtol": 1e-6},
  "work": {"flops": "N", "bytes": "8*N", "compute": "fp32"}
}
EOF
cat > "$P/reference.cu" <<'EOF'
extern "C" __global__ void scale_ref(const float *x, float *y, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        y[i] = 2.0f * x[i];
}
EOF
cat > "$P/tune.cu" <<'EOF'
/*@kopt
{
  "launches": [{"kernel": "scale_tuned", "grid": ["cdiv(N, THREADS * VEC * UNROLL)"],
                "block": ["THREADS"], "args": ["x", "y", "N"]}],
  "params": {
    "THREADS": {"pow2": [32, 1024], "role": "threads"},
    "VEC":     {"values": [1, 2, 4], "role": "vector"},
    "UNROLL":  {"range": [1, 4]}
  },
  "constraints": ["THREADS * VEC * UNROLL <= 4096"]
}
*/
// y = 2 x: each thread handles UNROLL groups of VEC consecutive elements.
extern "C" __global__ void scale_tuned(const float *x, float *y, int N)
{
    long long base = ((long long)blockIdx.x * THREADS * UNROLL) * VEC + threadIdx.x * VEC;
#pragma unroll
    for (int u = 0; u < UNROLL; u++)
#pragma unroll
        for (int v = 0; v < VEC; v++) {
            long long i = base + (long long)u * THREADS * VEC + v;
            if (i < N)
                y[i] = 2.0f * x[i];
        }
}
EOF
cat > "$P/fixed.cu" <<'EOF'
/*@kopt
{
  "launches": [{"kernel": "scale_ref", "grid": ["cdiv(N,THREADS)"], "block": ["THREADS"],
                "args": ["x", "y", "N"]}],
  "params": {"THREADS": 128}
}
*/
extern "C" __global__ void scale_ref(const float *x, float *y, int N)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N)
        y[i] = 2.0f * x[i];
}
EOF

# make_cache SPACE_JSON OUT.json: a complete cache of synthetic measurements for the space
# (every valid point: a smooth time with one optimum, a few failures, energy and power), and
# the facts the tests check against in OUT.json.facts.
make_cache() {
    python3 - "$1" "$2" <<'EOF'
import itertools, json, sys
space = json.load(open(sys.argv[1]))
sp = space["space"]
names = [p["name"] for p in sp["params"]]
values = [p["values"] for p in sp["params"]]
assert names == ["THREADS", "VEC", "UNROLL"], names
entries, valid = [], []
for ti, vi, ui in itertools.product(*[range(len(v)) for v in values]):
    t, v, u = values[0][ti], values[1][vi], values[2][ui]
    if t * v * u > 4096:
        continue            # pruned by the constraint: the replay answers it from the space
    label = "THREADS=%d,VEC=%d,UNROLL=%d" % (t, v, u)
    valid.append(label)
    e = {"params": label}
    if t == 32 and u == 4:
        e.update(state="compile_error", message="synthetic: too many registers")
    elif v == 2 and u == 3:
        e.update(state="failed", verdict="WRONG", message="synthetic: wrong results")
    else:
        # optimum: THREADS=256 (ti 3), VEC=4 (vi 2), UNROLL=2 (ui 1)
        time = 0.05 + 0.004 * (ti - 3) ** 2 + 0.006 * (vi - 2) ** 2 + 0.003 * (ui - 1) ** 2
        power = 200.0 + 20.0 * ti
        e.update(state="ok", verdict="OK", time_ms=round(time, 6),
                 energy_mj=round(time * power, 6), power_w=power, compile_ms=300.0,
                 eval_ms=40.0, registers=16 + 4 * u * v, spill_bytes=0, smem_bytes=0)
    entries.append(e)
key = dict(space["shapes"][0]["key"])
key["device"] = "Synthetic GPU"
key["device_uuid"] = "GPU-00000000-test"
cache = {"format": "kopt-tune-cache", "version": 1, "key": key,
         "template": "scale/tune.cu",
         "params": {n: v for n, v in zip(names, values)}, "entries": entries}
json.dump(cache, open(sys.argv[2], "w"), indent=1)
ok = [e for e in entries if e["state"] == "ok"]
best = min(ok, key=lambda e: e["time_ms"])
# time/energy Pareto set: no other point is at least as good in both and better in one
pareto = [e["params"] for e in ok
          if not any((o["time_ms"] <= e["time_ms"] and o["energy_mj"] <= e["energy_mj"]) and
                     (o["time_ms"] < e["time_ms"] or o["energy_mj"] < e["energy_mj"])
                     for o in ok)]
facts = {"points": 72, "valid": len(valid), "ok": len(ok), "best": best["params"],
         "best_ms": best["time_ms"], "pareto": sorted(pareto)}
json.dump(facts, open(sys.argv[2] + ".facts", "w"))
EOF
}
fact() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$CACHE.facts" "$1"; }

# ---- the space --------------------------------------------------------------------------------
begin "tune --space (text)"
run tune "$P" "$P/tune.cu" --space
expect_rc 0
has "^space      3 params, 72 points; 6[0-9] valid"
has "param    THREADS +32,64,128,256,512,1024"
has "param    VEC +1,2,4"
has "param    UNROLL +1,2,3,4"
has "require  THREADS \* VEC \* UNROLL <= 4096"
has "pruned   [0-9]+: .*THREADS \* VEC \* UNROLL <= 4096"
end

begin "tune --space --json"
run tune "$P" "$P/tune.cu" --space --json
expect_rc 0
cp "$OUT" "$WORK/space.json"
# the count kopt gives is checked against an independent count of the constraint
json 'd["space"]["points"] == 72 and d["space"]["valid_exact"] is True'
json 'd["space"]["valid"] == sum(1 for t in (32,64,128,256,512,1024) for v in (1,2,4) for u in (1,2,3,4) if t*v*u <= 4096)'
json '[p["name"] for p in d["space"]["params"]] == ["THREADS", "VEC", "UNROLL"]'
json 'd["space"]["pruned"][0]["count"] == 72 - d["space"]["valid"]'
json 'len(d["shapes"][0]["key"]["template_hash"]) == 64 and d["shapes"][0]["key"]["sizes"] == "N=1048576"'
end

begin "tune --space with two shapes"
run tune "$P" "$P/tune.cu" --space --json --sizes N=4096 --sizes N=65536
expect_rc 0
json '[s["sizes"] for s in d["shapes"]] == ["N=4096", "N=65536"]'
end

CACHE="$WORK/scale.cache.json"
make_cache "$WORK/space.json" "$CACHE" || { echo "could not make the cache" >&2; exit 1; }
NVALID=$(fact valid)
BEST=$(fact best)

# ---- without a GPU ------------------------------------------------------------------------------
if [ "$has_gpu" = 0 ]; then
    begin "tune without a GPU: says so, prints the space, exits as skipped"
    run tune "$P" "$P/tune.cu" --db "$WORK/nogpu.db"
    expect_rc 0
    has_err "tuning needs a GPU"
    has "^space      3 params, 72 points"
    has "SKIPPED"
    run tune "$P" "$P/tune.cu" --json --db "$WORK/nogpu.db"
    expect_rc 0
    json 'd["skipped"] is True and d["reason"] and d["space"]["points"] == 72'
    end
fi

# ---- replay: every strategy finds the optimum of the small space --------------------------------
begin "tune --list-strategies"
run tune --list-strategies --json
expect_rc 0
cp "$OUT" "$WORK/strategies.json"
json '{"exhaustive", "random", "annealing"} <= {s["name"] for s in d}'
json 'all(s["summary"] for s in d)'
end

STRATEGIES=$(python3 -c 'import json,sys; print(" ".join(s["name"] for s in json.load(open(sys.argv[1]))))' "$WORK/strategies.json" 2>/dev/null)
for s in $STRATEGIES; do
    begin "tune --replay --strategy $s reaches the optimum within $NVALID evaluations"
    run tune --replay "$CACHE" --strategy "$s" --budget "$NVALID" --seed 3 --json
    expect_rc 0
    json "d['best'] is not None and d['best']['label'] == '$BEST'"
    json "d['evaluated'] + d['cached'] <= $NVALID and d['mode'] == 'replay'"
    end
done

begin "tune --replay --json has the result's fields"
run tune --replay "$CACHE" --strategy exhaustive --budget 0 --json
expect_rc 0
json 'set(d) >= {"key", "strategy", "stop", "evaluated", "cached", "failed", "best", "convergence", "pareto", "shapes"}'
json "d['key']['device'] == 'Synthetic GPU' and d['key']['sizes'] == 'N=1048576' and d['strategy'] == 'exhaustive'"
json "d['evaluated'] == $NVALID and d['cached'] == 0 and d['stop'] in ('finished', 'exhausted')"
json "d['failed'] == $NVALID - $(fact ok)"
json "d['best']['params'] == {'THREADS': 256, 'VEC': 4, 'UNROLL': 2} and abs(d['best']['outcome']['time_ms'] - $(fact best_ms)) < 1e-9"
json 'd["best"]["outcome"]["state"] == "ok" and d["best"]["outcome"]["energy_mj"] > 0'
# convergence: improving objective, evaluation counts increasing, ending at the best
json 'all(a["objective"] > b["objective"] and a["evaluations"] < b["evaluations"] for a, b in zip(d["convergence"], d["convergence"][1:]))'
json 'abs(d["convergence"][-1]["objective"] - d["best"]["outcome"]["time_ms"]) < 1e-12'
json 'len(d["shapes"]) == 1 and d["shapes"][0]["best"]["label"] == d["best"]["label"]'
end

begin "tune --replay --objective energy and the time/energy Pareto set"
run tune --replay "$CACHE" --strategy exhaustive --budget 0 --objective time-energy --json
expect_rc 0
PARETO=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pareto"])' "$CACHE.facts")
json "sorted(p['label'] for p in d['pareto']) == $PARETO"
json 'all(p["outcome"]["energy_mj"] > 0 for p in d["pareto"])'
run tune --replay "$CACHE" --strategy exhaustive --budget 0 --objective energy --json
expect_rc 0
json 'd["best"]["outcome"]["energy_mj"] == min(p["outcome"]["energy_mj"] for p in d["pareto"])'
end

begin "tune --replay (text): table of the best configuration"
run tune --replay "$CACHE" --strategy exhaustive --budget 0
expect_rc 0
has "^device     Synthetic GPU \(replayed"
has "^best per shape:"
has "N=1048576 .* $BEST"
end

# ---- files --------------------------------------------------------------------------------------
begin "tune --replay --record/--export-kt/--export-t4/--out"
run tune --replay "$CACHE" --strategy exhaustive --budget 0 --json --record "$WORK/rec.json" \
    --export-kt "$WORK/kt.json" --export-t4 "$WORK/t4.json" --out "$WORK/best.cu"
expect_rc 0
json "d['format'] == 'kopt-tune-cache' and len(d['entries']) == $NVALID" "$WORK/rec.json"
json "d['key']['template_hash'] and list(d['params']) == ['THREADS', 'VEC', 'UNROLL']" "$WORK/rec.json"
# Kernel Tuner's cache: every point, the ones the constraint prunes as InvalidConfig
json "d['tune_params_keys'] == ['THREADS', 'VEC', 'UNROLL'] and len(d['cache']) == 72" "$WORK/kt.json"
json "sum(e['time'] == 'InvalidConfig' for e in d['cache'].values()) == 72 - $NVALID" "$WORK/kt.json"
json "d['cache']['256,4,2']['time'] == $(fact best_ms)" "$WORK/kt.json"
json "any(abs(e['time'] - $(fact best_ms)) < 1e-9 for e in d['cache'].values() if isinstance(e.get('time'), float))" "$WORK/kt.json"
json "len(d['results']) == $NVALID and d['schema_version']" "$WORK/t4.json"
[ -s "$WORK/best.cu" ] || fail "--out wrote nothing"
grep -q "tuned by kopt" "$WORK/best.cu" || fail "--out lacks the note"
grep -q "Synthetic GPU" "$WORK/best.cu" || fail "--out note lacks the device"
# the written candidate is a ready candidate: no longer a template
"$KOPT" tune "$P" "$WORK/best.cu" --space >/dev/null 2>"$WORK/err2"
[ $? = 9 ] || fail "the --out file is still a template"
grep -q "not a template" "$WORK/err2" || fail "no 'not a template' message for the --out file"
# the recorded cache replays to the same best
run tune --replay "$WORK/rec.json" --template "$P/tune.cu" --strategy exhaustive --budget 0 --json
expect_rc 0
json "d['best']['label'] == '$BEST'"
end

# ---- bad inputs ---------------------------------------------------------------------------------
begin "tune usage errors (exit 2)"
run tune "$P"
expect_rc 2
run tune "$P" "$P/tune.cu" --strategy no_such --space
expect_rc 2
has_err "unknown strategy 'no_such'"
run tune "$P" "$P/tune.cu" --objective speed
expect_rc 2
has_err "--objective 'speed'"
run tune "$P" "$P/tune.cu" --space --sizes N=abc
expect_rc 2
has_err "--sizes 'N=abc'"
run tune "$P" "$P/tune.cu" --space --sizes Q=5
expect_rc 2
has_err "size 'Q' is not one of"
run tune "$P" "$P/tune.cu" --resume --fresh
expect_rc 2
run tune --replay "$CACHE" --sizes N=4096
expect_rc 2
has_err "holds measurements at N=1048576"
end

begin "tune invalid inputs (exit 9)"
run tune "$WORK/no-such-problem" "$P/tune.cu" --space
expect_rc 9
has_err "no-such-problem"
run tune "$P" "$WORK/no-such.cu" --space
expect_rc 9
has_err "no-such\.cu"
run tune "$P" "$P/fixed.cu" --space
expect_rc 9
has_err "fixed\.cu is not a template"
run tune --replay "$WORK/no-such-cache.json"
expect_rc 9
has_err "no-such-cache\.json"
# a cache for another template source (one comment added)
sed 's|^// y = 2 x|// y = 2 x (edited)|' "$P/tune.cu" > "$P/tune2.cu"
run tune --replay "$CACHE" --template "$P/tune2.cu"
expect_rc 9
has_err "template_hash"
# a field that is wrong
python3 - "$CACHE" "$WORK/bad.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1])); c["entries"][1]["state"] = "great"
json.dump(c, open(sys.argv[2], "w"))
EOF
run tune --replay "$WORK/bad.json" --template "$P/tune.cu"
expect_rc 9
has_err "bad\.json: entries\[1\]\.state"
# a template with a bad constraint names it
sed 's|"THREADS \* VEC \* UNROLL <= 4096"|"THREADS * WIDTH <= 4096"|' "$P/tune.cu" > "$P/tune3.cu"
run tune "$P" "$P/tune3.cu" --space
expect_rc 9
has_err "WIDTH"
end

# wait_progress LOG PERCENT: until the run's progress lines (one per 10% of the budget on a
# non-terminal stderr) reach PERCENT, at most 20 s
wait_progress() {
    local i=0
    while [ $i -lt 200 ]; do
        python3 - "$1" "$2" <<'EOF' && return 0
import re, sys
done = [int(a) * 100 >= int(sys.argv[2]) * int(b)
        for a, b in re.findall(r"kopt tune: (\d+)/(\d+) evals", open(sys.argv[1]).read())]
sys.exit(0 if any(done) else 1)
EOF
        sleep 0.1; i=$((i + 1))
    done
    fail "no progress in $1"
}

# ---- kill -9 and --resume ---------------------------------------------------------------------
# The replay evaluator waits KOPT_TUNE_REPLAY_DELAY_MS per evaluation (a test-only knob) so
# the run can be killed midway; every outcome is in the store before the next evaluation.
begin "tune --replay killed with SIGKILL resumes with zero re-evaluations"
BUDGET=$((NVALID * 2 / 3))
run tune --replay "$CACHE" --strategy random --seed 7 --budget "$BUDGET" --json --db "$WORK/whole.db"
expect_rc 0
cp "$OUT" "$WORK/whole.json"
KOPT_TUNE_REPLAY_DELAY_MS=60 "$KOPT" tune --replay "$CACHE" --strategy random --seed 7 \
    --budget "$BUDGET" --db "$WORK/killed.db" >/dev/null 2>"$WORK/killed.log" &
pid=$!
wait_progress "$WORK/killed.log" 30
{ kill -9 "$pid"; wait "$pid"; } 2>/dev/null
# what the store holds now, read directly (src/store: table tune_evals, one row per label)
python3 - "$WORK/killed.db" "$WORK/stored.json" <<'EOF' || fail "cannot read the store"
import json, sqlite3, sys
rows = sqlite3.connect(sys.argv[1]).execute("SELECT label FROM tune_evals").fetchall()
json.dump([r[0] for r in rows], open(sys.argv[2], "w"))
EOF
# resume with no strategy, seed or budget: they come from the stored run
run tune --replay "$CACHE" --db "$WORK/killed.db" --resume --json
expect_rc 0
cp "$OUT" "$WORK/resumed.json"
json 'd["resumed"] is True and d["strategy"] == "random" and d["seed"] == 7'
json "d['budget'] == $BUDGET"
json "0 < d['stored_before'] < $BUDGET"          # killed midway
json 'd["reevaluated"] == 0'                      # nothing stored was evaluated again
json 'd["cached"] == d["stored_before"]'          # every stored outcome answered from the store
python3 - "$WORK/whole.json" "$WORK/resumed.json" "$WORK/stored.json" <<'EOF' || fail "the resumed run differs from the uninterrupted one"
import json, sys
whole, res = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
stored = json.load(open(sys.argv[3]))
assert len(stored) == res["stored_before"], (len(stored), res["stored_before"])
assert not set(stored) & set(res["evaluated_points"]), "a stored point was evaluated again"
assert res["best"]["label"] == whole["best"]["label"], (res["best"], whole["best"])
# stored + newly evaluated = what the uninterrupted run evaluated, each point once
assert res["stored_before"] + res["evaluated"] == whole["evaluated"], (res, whole["evaluated"])
# the same seed proposes the same points: the killed run evaluated the first ones, the
# resumed run exactly the rest, so no point was evaluated twice
n = res["stored_before"]
assert len(set(whole["evaluated_points"])) == len(whole["evaluated_points"])
assert res["evaluated_points"] == whole["evaluated_points"][n:], (res["evaluated_points"], n)
EOF
# a second --resume finds the run finished: everything is answered from the store
run tune --replay "$CACHE" --db "$WORK/killed.db" --strategy random --seed 7 --budget "$BUDGET" --json
expect_rc 0
json 'd["evaluated"] == 0 and d["reevaluated"] == 0'
json "d['best']['label'] == '$BEST' or d['best']['label'] == '$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["best"]["label"])' "$WORK/whole.json")'"
end

begin "tune --resume without a stored run says so"
run tune --replay "$CACHE" --db "$WORK/empty.db" --resume --strategy exhaustive --json
expect_rc 0
has_err "no unfinished run"
json 'd["resumed"] is False'
end

begin "tune --replay interrupted by SIGINT prints the best so far and how to resume"
KOPT_TUNE_REPLAY_DELAY_MS=50 "$KOPT" tune --replay "$CACHE" --strategy exhaustive \
    --budget "$NVALID" --db "$WORK/int.db" >"$OUT" 2>"$ERR" &
pid=$!
wait_progress "$ERR" 20
kill -INT "$pid"
wait "$pid"
rc=$?
expect_rc 130
has "stopped \(interrupted\)"
has "^best per shape:"
has_err "--resume"
has_err "kopt tune --replay"
end

echo "ktest: $passed passed, $failed failed"
[ "$failed" = 0 ]
