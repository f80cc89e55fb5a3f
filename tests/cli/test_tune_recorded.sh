#!/usr/bin/env bash
# kopt's strategies on real measurements, without a GPU: every complete cache recorded on
# an H200 (tests/data/tune/h200/*.json, see its README) is replayed exhaustively to find
# its optimum, then each strategy runs for seeds 1..3 with a budget below the space size (100
# of the 120-point spaces, 150 of transpose's 328 and of sgemm's 1064) and must end within
# 2% of that optimum; the exhaustive replay must evaluate exactly the recorded OK + failed
# points. The budgets follow what bench/kt/kopt_replay_stats.py measured over 10 seeds
# (bench/results/2026-11-22-kt-comparison-*.md): on seeds 1-3 every strategy gets within
# 2% well inside them, so a strategy that regresses fails. Where a recording holds static
# findings (transpose, sgemm: recorded with --findings), profile_guided must take a
# different path with them than with them stripped, on at least one of seeds 1-3 (on
# transpose most findings ask for moves that are not valid there, so paths often agree).
# usage: test_tune_recorded.sh /path/to/kopt /path/to/repo-root
set -u
KOPT=${1:?usage: test_tune_recorded.sh KOPT ROOT}
ROOT=${2:?usage: test_tune_recorded.sh KOPT ROOT}
command -v python3 >/dev/null 2>&1 || { echo "skipped: python3 is needed to read the results"; exit 0; }
cd "$ROOT" || exit 1
shopt -s nullglob
caches=(tests/data/tune/h200/*.json)
[ ${#caches[@]} -gt 0 ] || { echo "FAIL  no recorded caches in tests/data/tune/h200"; exit 1; }
export KOPT_CACHE_DIR=$(mktemp -d) && trap 'rm -rf "$KOPT_CACHE_DIR"' EXIT
passed=0 failed=0
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
for c in "${caches[@]}"; do
  n=$(basename "$c" .json)
  "$KOPT" tune --replay "$c" --strategy exhaustive --budget 0 --json --no-progress > "$KOPT_CACHE_DIR/ex.json" 2> "$KOPT_CACHE_DIR/ex.err"
  opt=$(field "$KOPT_CACHE_DIR/ex.json" 'd["best"]["outcome"]["time_ms"]' 2>/dev/null)
  want=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for e in d["entries"] if e["state"] != "pruned"))' "$c")
  got=$(field "$KOPT_CACHE_DIR/ex.json" 'd["evaluated"] + d["cached"]' 2>/dev/null)
  if [ -n "$opt" ] && [ "$got" = "$want" ]; then
    passed=$((passed + 1)); echo "ok    $n: exhaustive replay, $got points, optimum $opt ms"
  else
    failed=$((failed + 1)); echo "FAIL  $n: exhaustive replay gave '$got' points (want $want), optimum '$opt'"; tail -3 "$KOPT_CACHE_DIR/ex.err"; continue
  fi
  budget=150; [ "$want" -lt 200 ] && budget=100
  for s in $("$KOPT" tune --list-strategies | awk '{print $1}'); do
    [ "$s" = exhaustive ] && continue
    for seed in 1 2 3; do
      "$KOPT" tune --replay "$c" --strategy "$s" --seed $seed --budget $budget --json --no-progress > "$KOPT_CACHE_DIR/s.json" 2>/dev/null
      best=$(field "$KOPT_CACHE_DIR/s.json" 'd["best"]["outcome"]["time_ms"]' 2>/dev/null)
      if [ -n "$best" ] && python3 -c "import sys; sys.exit(0 if $opt / $best >= 0.98 else 1)"; then
        passed=$((passed + 1))
      else
        failed=$((failed + 1)); echo "FAIL  $n: $s seed $seed ended at '$best' ms, optimum $opt ms"
      fi
    done
  done
  echo "ok    $n: every strategy within 2% of the optimum (seeds 1-3, budget $budget)"
  # recorded findings must steer profile_guided: with them stripped, its path must change
  if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if any(e.get("findings") for e in d["entries"]) else 1)' "$c"; then
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for e in d["entries"]: e["findings"] = []
json.dump(d, open(sys.argv[2], "w"))' "$c" "$KOPT_CACHE_DIR/plain.json"
    differ=0
    for seed in 1 2 3; do
      for v in "$c" "$KOPT_CACHE_DIR/plain.json"; do
        "$KOPT" tune --replay "$v" --template "examples/$n/tune.cu" --strategy profile_guided --seed $seed --budget 40 \
          --json --no-progress 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["evaluated_points"])'
      done > "$KOPT_CACHE_DIR/paths.txt"
      [ "$(sed -n 1p "$KOPT_CACHE_DIR/paths.txt")" != "$(sed -n 2p "$KOPT_CACHE_DIR/paths.txt")" ] && differ=$((differ + 1))
    done
    if [ "$differ" -ge 1 ]; then
      passed=$((passed + 1)); echo "ok    $n: recorded findings change profile_guided's path ($differ of 3 seeds)"
    else
      failed=$((failed + 1)); echo "FAIL  $n: profile_guided took the same path without the recorded findings ($differ of 3 seeds differ)"
    fi
  fi
done
# KOPT_TUNE_TRACE names the run's steps around the search, in order, on one clock
c=${caches[0]}
rm -f "$KOPT_CACHE_DIR/run.trace"
KOPT_TUNE_TRACE=$KOPT_CACHE_DIR/run.trace "$KOPT" tune --replay "$c" --strategy random --seed 1 \
  --budget 20 --json --no-progress > /dev/null 2>&1
if python3 - "$KOPT_CACHE_DIR/run.trace" <<'PY'
import json, sys
steps = [json.loads(l) for l in open(sys.argv[1])]
steps = [s for s in steps if "step" in s]
names = [s["step"] for s in steps]
want = ["ceilings", "scale_open", "depth_open", "search", "record", "final_check", "close"]
assert names == want, names
assert all(s["end_ms"] >= s["start_ms"] > 0 for s in steps), steps
assert all(a["end_ms"] <= b["start_ms"] for a, b in zip(steps, steps[1:])), steps
PY
then passed=$((passed + 1)); echo "ok    KOPT_TUNE_TRACE: the run's steps, in order"
else failed=$((failed + 1)); echo "FAIL  KOPT_TUNE_TRACE: the run's steps"; fi
echo "ktest: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
