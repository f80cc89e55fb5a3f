#!/usr/bin/env bash
# Issue 29, session 42: kopt optimize --gpus expansions per minute (1 GPU vs all), then the
# tune run with each GPU's first workers started with the ceilings (prestart) against
# KOPT_TUNE_PRESTART=0, first and warm compile cache, all GPUs and one.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
O=$OUT/d42; mkdir -p $O; S=$OUT/summary-${PART:-all}.txt; : > $S
say() { echo "$*" | tee -a $S; }
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-gpu/CMakeCache.txt)
[ "$src" != "$PWD" ] && [ ! -e "$src" ] && { mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; }
NG=$(nvidia-smi -L | wc -l)
say "== env: $(nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader | head -1), $NG GPUs; nproc $(nproc)"
mono() { python3 -c 'import time; print(time.monotonic())'; }
if [ "${PART:-all}" != tune ]; then
say "== optimize --gpus, expansions per minute  [t=$(el)]"
KOPT_BUILD=build-gpu OPT_ITERS=${OPT_ITERS:-24} timeout ${OPT_LIMIT:-300} bash bench/optimize_gpus.sh 2>&1 | tail -4 | tee -a $S
(cd $OUT && tar czf optgpus.tgz optgpus 2>/dev/null; rm -rf optgpus)
[ "${PART:-all}" = opt ] && exit 0
fi
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
tune g$NG-pre $ALL KOPT_X=1 --
tune g$NG-nopre $ALL KOPT_TUNE_PRESTART=0 --
tune g1-pre 0 KOPT_X=1 --
tune g1-nopre 0 KOPT_TUNE_PRESTART=0 --
say "== warm compile cache (new store)  [t=$(el)]"
rm -rf /tmp/cw; CACHE=/tmp/cw tune g$NG-fill $ALL KOPT_X=1 --
CACHE=/tmp/cw tune g$NG-warm-pre $ALL KOPT_X=1 --
CACHE=/tmp/cw tune g$NG-warm-nopre $ALL KOPT_TUNE_PRESTART=0 --
CACHE=/tmp/cw tune g1-warm-pre 0 KOPT_X=1 --
CACHE=/tmp/cw tune g1-warm-nopre 0 KOPT_TUNE_PRESTART=0 --
if [ "$(el)" -lt ${REPEAT_BY:-480} ]; then
  CACHE=/tmp/cw tune g$NG-warm-pre-2 $ALL KOPT_X=1 --
  CACHE=/tmp/cw tune g$NG-warm-nopre-2 $ALL KOPT_TUNE_PRESTART=0 --
fi
say "== warm compile cache, warm store (the ceilings stored)  [t=$(el)]"
if [ "$(el)" -lt ${REPEAT_BY:-480} ]; then
  cp /tmp/g$NG-warm-pre.db /tmp/g$NG-ws-pre.db; cp /tmp/g$NG-warm-pre.db /tmp/g$NG-ws-nopre.db
  cp /tmp/g1-warm-pre.db /tmp/g1-ws-pre.db
  CACHE=/tmp/cw tune g$NG-ws-pre $ALL KOPT_X=1 -- --fresh
  CACHE=/tmp/cw tune g$NG-ws-nopre $ALL KOPT_TUNE_PRESTART=0 -- --fresh
  CACHE=/tmp/cw tune g1-ws-pre 0 KOPT_X=1 -- --fresh
fi
rm -rf /tmp/cw
say "== done in $(el) s"
(cd $OUT && tar czf d42.tgz d42 2>/dev/null; rm -rf d42)
