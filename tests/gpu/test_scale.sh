#!/usr/bin/env bash
# GPU test of scale-out (docs/scale.md): a small live `kopt tune --gpus all` (every GPU of
# the machine, one session each) stores every point once, each row with the GPU that
# measured it (index, name, UUID, clocks), uses every GPU when there are several, and finds
# a correct winner that passes the final check; --gpus 0 stores the same points as a run
# without --gpus; no run stores a point as kopt's own ERROR (each session's workers, started
# ahead, serve its first point); KOPT_TUNE_TRACE writes each evaluation's steps; the
# compile threads and lookahead are the defaults for the usable CPUs and the GPUs, and the
# plain path (no --gpus) compiles in helper processes too. Then `kopt optimize --gpus all` with the live evaluator and the scripted
# model (tests/optimize/scripted_llm.py): every GPU's session evaluates and profiles on its
# own thread, each evaluated node records its GPU, its evaluation is stored (committed on
# the search's thread) with the same device, and the search improves on the reference.
# Without a GPU: "skipped: no GPU" (exit 77).
# usage: test_scale.sh /path/to/kopt   (from the repo root)
source "$(dirname "$0")/lib.sh" "$1"
ngpu=$("$K" devices --json 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len(d["devices"]) if isinstance(d, dict) else len(d))' 2>/dev/null || echo 1)
q() { python3 -c 'import sqlite3,sys
for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]):
    print("|".join("" if v is None else str(v) for v in r))' "$1" "$2"; }
check() {   # name, condition (0: ok)
  if [ "$2" = 0 ]; then passed=$((passed + 1)); echo "ok    $1"
  else failed=$((failed + 1)); echo "FAIL  $1"; fi
}
ARGS=(examples/sgemm examples/sgemm/tune.cu --sizes M=1024,N=1024,K=1024 --strategy random
      --seed 3 --budget 16 --no-progress --json)

"$K" tune "${ARGS[@]}" --gpus all --db "$TMP/all.db" > "$TMP/all.json" 2> "$TMP/all.err"
check "tune --gpus all ($ngpu GPU(s)) exits 0" $?
check "16 points stored once each" \
  "$([ "$(q "$TMP/all.db" 'select count(*), count(distinct label) from tune_evals')" = "16|16" ]; echo $?)"
check "every row names its GPU and clocks" \
  "$([ "$(q "$TMP/all.db" "select count(*) from tune_evals where device_index is null or device_name is null or (state = 'ok' and clock_mhz is null)")" = 0 ]; echo $?)"
check "every GPU's ceilings measured (at once) and stored" \
  "$([ "$(q "$TMP/all.db" 'select count(*) from devices where ceilings_json is not null')" = "$ngpu" ]; echo $?)"
check "every GPU evaluated" \
  "$([ "$(q "$TMP/all.db" 'select count(distinct device_index) from tune_evals')" = "$ngpu" ]; echo $?)"
check "compile helper processes did the compiling (one per compile thread)" \
  "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["compile_helpers"] >= 1 else 1)' "$TMP/all.json"; echo $?)"
check "the winner passes the final check" \
  "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["final_check"] and d["final_check"]["verdict"] == "OK" else 1)' "$TMP/all.json"; echo $?)"

# the plain path (one GPU, no --gpus) from an empty compile cache: it compiles too
KOPT_CACHE_DIR=$TMP/plain.cache KOPT_TUNE_TRACE=$TMP/plain.trace "$K" tune "${ARGS[@]}" \
  --db "$TMP/plain.db" > "$TMP/plain.json" 2> "$TMP/plain.err"
"$K" tune "${ARGS[@]}" --gpus 0 --db "$TMP/one.db" > "$TMP/one.json" 2> "$TMP/one.err"
check "--gpus 0 evaluates the same points as a run without --gpus" \
  "$([ "$(q "$TMP/plain.db" 'select label from tune_evals order by label')" = "$(q "$TMP/one.db" 'select label from tune_evals order by label')" ]; echo $?)"
# kopt's own failures are not the points': each session's workers, started ahead (warm),
# must still be there for its first point (a warming thread that ended took them along,
# and the first point of every GPU was stored as an ERROR: "the problem's reference failed")
check "no point stored as kopt's own ERROR (plain, --gpus 0, --gpus all)" \
  "$([ "$(for d in plain one all; do q "$TMP/$d.db" "select count(*) from tune_evals where verdict = 'ERROR'"; done | tr '\n' ' ')" = "0 0 0 " ]; echo $?)"
# compile depth (docs/scale.md): the threads a share of the usable CPUs over the GPUs, the
# rounds twice as deep, and a helper process per thread on one GPU as on several
check "compile depth: the defaults for the usable CPUs, helpers on the plain path too" \
  "$(python3 - "$TMP/plain.json" "$TMP/one.json" "$TMP/all.json" "$ngpu" <<'PY'; echo $?
import json, sys
def threads(cpus, gpus):
    n = min(16, max(2, (cpus - gpus) // gpus)) * gpus
    return min(max(cpus, 2) if n > cpus else n, 64)
for path, gpus in zip(sys.argv[1:4], (1, 1, int(sys.argv[4]))):
    d = json.load(open(path))
    t, l, c = d["compile_threads"], d["lookahead"], d["cpus_usable"]
    print("  %s: %d GPU(s), %d usable CPUs: %d compile threads, lookahead %d, %d helper(s)"
          % (path.split("/")[-1], gpus, c, t, l, d["compile_helpers"]), file=sys.stderr)
    assert t == threads(c, gpus) and l == max(2 * t, 8 * gpus), (t, l, c, gpus)
plain = json.load(open(sys.argv[1]))
assert plain["compile_helpers"] >= 1, plain["compile_helpers"]
PY
)"
check "KOPT_TUNE_TRACE: one line per evaluated point, with the session's steps, one per compile done ahead, one per step of the run" \
  "$(python3 - "$TMP/plain.trace" "$TMP/plain.db" <<'PY'; echo $?
import json, sqlite3, sys
every = [json.loads(l) for l in open(sys.argv[1])]
lines = [l for l in every if "point" in l]
prep = [l for l in every if "prepare" in l]
steps = {l["step"]: l for l in every if "step" in l}
assert len(lines) + len(prep) + sum(1 for l in every if "step" in l) == len(every), every[:3]
for s in ("ceilings", "scale_open", "depth_open", "search", "record", "final_check", "close"):
    assert s in steps and steps[s]["end_ms"] >= steps[s]["start_ms"] > 0, (s, steps)
# the evaluations lie inside the search
assert all(steps["search"]["start_ms"] <= l["start_ms"] <= steps["search"]["end_ms"]
           for l in lines), (steps["search"], lines[0]["start_ms"])
n = sqlite3.connect(sys.argv[2]).execute("select count(*) from tune_evals where state = 'ok'").fetchone()[0]
assert n >= 1 and len(lines) >= n, (len(lines), n)
assert all("workers_ready" in l["trace"]["parent"] and l["eval_ms"] > 0 for l in lines), lines[0]
# the run starts from an empty compile cache: its points are compiled ahead
assert len({l["prepare"] for l in prep}) >= n, (len(prep), n)
assert all(l["end_ms"] >= l["start_ms"] > 0 for l in prep), prep[:1]
assert sum(1 for l in prep if l["compile_ms"] > 0 and not l["cache_hit"]) >= n // 2, prep[:1]
PY
)"

# kopt optimize --gpus all, live: one session per GPU, evaluations committed on the search's
# thread (docs/scale.md, "kopt optimize --gpus"); each evaluation ran on the GPU it names
# (its worker pinned there: docs/scale.md, "Each worker sees its own GPU")
KOPT_PROMPTS=$PWD/prompts KOPT_SCRIPT_LINEAGE=1 "$K" optimize examples/softmax --gpus all \
  --llm "command:python3 tests/optimize/scripted_llm.py tests/optimize/softmax" \
  --iterations 4 --search greedy --no-tune --workdir "$TMP/opt" --db "$TMP/opt.db" --json -v \
  > "$TMP/opt.json" 2> "$TMP/opt.err"
check "optimize --gpus all ($ngpu GPU(s)) exits 0" $?
# every GPU but the first gets ready (its reference evaluated, dropped) while the root runs
if [ "$ngpu" -gt 1 ]; then
  ready=$(grep -c "made ready beside the root" "$TMP/opt.err")
  check "optimize --gpus all: the other $((ngpu - 1)) GPU(s) made ready beside the root ($ready)" \
    "$([ "$ready" = $((ngpu - 1)) ] && ! grep -q "not made ready ahead" "$TMP/opt.err"; echo $?)"
else
  echo "skipped: getting the other GPUs ready beside the root needs 2 GPUs (this machine has 1)"
fi
check "optimize --gpus all: each evaluated node names its GPU, its evaluation is stored on it, measured there" \
  "$(python3 - "$TMP/opt.json" "$TMP/opt.db" "$ngpu" <<'PY'; echo $?
import json, os, sqlite3, subprocess, sys
d = json.load(open(sys.argv[1]))
db = sqlite3.connect(sys.argv[2])
# each worker is pinned to its GPU (src/eval/pin.c): the UUID its CUDA reported is that of
# the GPU kopt gave it (nvidia-smi's index = kopt's ordinal where CUDA_VISIBLE_DEVICES is unset)
smi = None
if "CUDA_VISIBLE_DEVICES" not in os.environ:
    out = subprocess.run(["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.split()
    smi = out if len(out) == int(sys.argv[3]) else None
ev = [n for n in d["nodes"] if "gpu" in n]
assert d["width"] == int(sys.argv[3]) and len(ev) >= 3, (d["width"], len(ev))
for n in ev:
    assert n.get("gpu_name"), n
    if n.get("eval_id"):
        dev, uuid = db.execute("select device_index, device_uuid from evaluations where id = ?",
                               (n["eval_id"],)).fetchone()
        assert dev == n["gpu"], (n["id"], dev, n["gpu"])
        assert smi is None or uuid == smi[dev], (n["id"], dev, uuid, smi)
assert sum(1 for n in ev if n.get("eval_id")) >= 3
stored = db.execute("select count(*) from opt_nodes where device_index is not null").fetchone()[0]
assert stored == len(ev), (stored, len(ev))
assert d["best"]["speedup"] > 1.0, d["best"]
PY
)"

echo "ktest: $passed passed, $failed failed"
[ "$failed" = 0 ]
