#!/usr/bin/env bash
# Issue 29: workers that show CUDA only their GPU (--one-gpu, KOPT_WORKER_ONE_GPU=0 is the old
# view) on first and warm tuning runs; issue 31: the wheel's driver-only check on a GPU.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
O=$OUT/d40; mkdir -p $O; S=$OUT/summary.txt; : > $S
say() { echo "$*" | tee -a $S; }
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-gpu/CMakeCache.txt)
[ "$src" != "$PWD" ] && [ ! -e "$src" ] && { mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; }
NG=$(nvidia-smi -L | wc -l)
say "== env: $(nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader | head -1), $NG GPUs; nproc $(nproc)"
say "== the wheel, driver only  [t=$(el)]"
KOPT_WHEEL=$(ls $PWD/dist/*.whl) timeout 120 bash tests/python/test_wheel.sh . > $O/wheel.txt 2>&1; say "   rc $? $(grep -c '^ok' $O/wheel.txt) ok: $(grep -E 'FAIL|skipped|driver only|all passed' $O/wheel.txt | tr '\n' ';')"
ARGS=(examples/sgemm examples/sgemm/tune.cu --sizes M=2048,N=2048,K=2048 --strategy random --seed 7 --budget 512 --no-progress --json)
tune() { # label gpus [env...] -- [opts]
  local l=$1 g=$2; shift 2; local envs=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  local c=${CACHE:-/tmp/c-$l}; [ -z "${CACHE:-}" ] && rm -rf $c
  local t=$(date +%s.%N)
  env "${envs[@]}" KOPT_CACHE_DIR=$c KOPT_TUNE_TRACE=$O/$l.trace timeout 150 build-gpu/kopt tune "${ARGS[@]}" --gpus $g --db /tmp/$l.db "$@" > $O/$l.json 2> $O/$l.log
  local rc=$? w; w=$(python3 -c "import time; print('%.1f' % (time.time() - $t))")
  say "$l: rc $rc wall $w s; $(python3 .carry/trace40.py $O/$l.json $O/$l.trace 2>&1 | tail -3)"
  [ -z "${CACHE:-}" ] && rm -rf $c
}
ALL=$(seq -s, 0 $((NG - 1)))
OLD=KOPT_WORKER_ONE_GPU=0
say "== sgemm 2048, random seed 7, budget 512  [t=$(el)]"
tune g$NG-first-allgpus $ALL $OLD --
tune g$NG-first-onegpu $ALL --
rm -rf /tmp/cw; CACHE=/tmp/cw tune g$NG-fill $ALL -- > /dev/null
for r in 1 2; do
  CACHE=/tmp/cw tune g$NG-warm-allgpus-$r $ALL $OLD --
  CACHE=/tmp/cw tune g$NG-warm-onegpu-$r $ALL --
done
CACHE=/tmp/cw tune g1-warm-allgpus 0 $OLD --
CACHE=/tmp/cw tune g1-warm-onegpu 0 --

say "== done in $(el) s"
(cd $OUT && tar czf d40.tgz d40 && rm -rf d40)
