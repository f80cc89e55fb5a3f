#!/usr/bin/env bash
# Issue 29, session 41: where a tune run's wall goes on every GPU of the host and on one;
# A/B of the trials checked during the timing (KOPT_EARLY_CHECKS) and of each worker seeing
# only its GPU (KOPT_WORKER_ONE_GPU); then optimize --gpus expansions per minute.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
O=$OUT/d41; mkdir -p $O; S=$OUT/summary.txt; : > $S
say() { echo "$*" | tee -a $S; }
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-gpu/CMakeCache.txt)
[ "$src" != "$PWD" ] && [ ! -e "$src" ] && { mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; }
NG=$(nvidia-smi -L | wc -l)
say "== env: $(nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader | head -1), $NG GPUs; nproc $(nproc); $(git rev-parse --short HEAD 2>/dev/null)"
mono() { python3 -c 'import time; print(time.monotonic())'; }
# sanity: one evaluation with the early checks, one without; same checks
for e in 1 0; do
  KOPT_EARLY_CHECKS=$e build-gpu/kopt eval examples/sgemm examples/sgemm/fast.cu --json > $O/eval$e.json 2> $O/eval$e.err
  python3 - $O/eval$e.json $e <<'PY' | tee -a $S
import json, sys
d = json.load(open(sys.argv[1])); t = json.loads(d["trace"]) if isinstance(d.get("trace"), str) else d.get("trace", {})
print("   eval early=%s: %s, %d checks, %d failing, early_checks %s ms, parent integrity %.1f compare %.1f cand_run %.1f" % (
    sys.argv[2], d["verdict"], len(d.get("checks", [])), sum(1 for c in d.get("checks", []) if c.get("mismatches")),
    t.get("during_candidate_run", {}).get("early_checks"), t["parent"].get("integrity_checks", 0), t["parent"].get("compare", 0), t["parent"].get("candidate_run", 0)))
PY
done
ARGS=(examples/sgemm examples/sgemm/tune.cu --sizes M=2048,N=2048,K=2048 --strategy random --seed 7 --budget ${BUDGET:-512} --no-progress --json)
tune() { # label gpus [env...] -- [opts]
  local l=$1 g=$2; shift 2; local envs=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  local c=${CACHE:-/tmp/c-$l}; [ -z "${CACHE:-}" ] && rm -rf $c
  local a b; a=$(mono)
  env "${envs[@]}" KOPT_CACHE_DIR=$c KOPT_TUNE_TRACE=$O/$l.trace timeout 150 build-gpu/kopt tune "${ARGS[@]}" --gpus $g --db /tmp/$l.db "$@" > $O/$l.json 2> $O/$l.log
  local rc=$?; b=$(mono)
  say "$l: rc $rc ${envs[*]}"; python3 bench/results/2026-11-28-h100x4-early-checks/trace41.py $O/$l.json $O/$l.trace $a $b 2>&1 | tee -a $S
  [ -z "${CACHE:-}" ] && rm -rf $c
}
ALL=$(seq -s, 0 $((NG - 1)))
say "== first runs (empty compile cache, new store), sgemm 2048, random seed 7, budget ${BUDGET:-512}  [t=$(el)]"
tune g$NG-new-1 $ALL --
tune g$NG-old $ALL KOPT_EARLY_CHECKS=0 KOPT_WORKER_ONE_GPU=0 --
tune g$NG-allgpu $ALL KOPT_WORKER_ONE_GPU=0 --
[ -n "${REPEAT:-}" ] && tune g$NG-new-2 $ALL --
tune g1-new 0 --
tune g1-old 0 KOPT_EARLY_CHECKS=0 KOPT_WORKER_ONE_GPU=0 --
say "== warm compile cache (new store)  [t=$(el)]"
rm -rf /tmp/cw; CACHE=/tmp/cw tune g$NG-fill $ALL --
CACHE=/tmp/cw tune g$NG-warm $ALL --
CACHE=/tmp/cw tune g$NG-warm-old $ALL KOPT_EARLY_CHECKS=0 KOPT_WORKER_ONE_GPU=0 --
CACHE=/tmp/cw tune g1-warm 0 --
CACHE=/tmp/cw tune g1-warm-old 0 KOPT_EARLY_CHECKS=0 KOPT_WORKER_ONE_GPU=0 --
rm -rf /tmp/cw
say "== optimize --gpus, expansions per minute  [t=$(el)]"
if [ "$(el)" -lt ${OPT_BY:-330} ]; then
  KOPT_BUILD=build-gpu OPT_ITERS=${OPT_ITERS:-32} timeout $(( ${LIMIT:-560} - $(el) )) bash bench/optimize_gpus.sh 2>&1 | tail -4 | tee -a $S
else say "   skipped: $(el) s used"; fi
say "== done in $(el) s"
(cd $OUT && tar czf d41.tgz d41 optgpus 2>/dev/null; rm -rf d41 optgpus)
