#!/usr/bin/env bash
# Issue 29: a first tuning run with the compile zygote and niced helpers against the old start
# (KOPT_COMPILE_FORK=0 KOPT_COMPILE_NICE=0), on every GPU of the host and on one.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
O=$OUT/d40; mkdir -p $O; S=$OUT/summary.txt; : > $S
say() { echo "$*" | tee -a $S; }
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-gpu/CMakeCache.txt)
[ "$src" != "$PWD" ] && [ ! -e "$src" ] && { mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; }
NG=$(nvidia-smi -L | wc -l)
say "== env: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $NG GPUs; nproc $(nproc)"
ARGS=(examples/sgemm examples/sgemm/tune.cu --sizes M=2048,N=2048,K=2048 --strategy random --seed 7 --budget ${BUDGET:-512} --no-progress --json)
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
say "== first runs (empty compile cache), sgemm 2048, random seed 7, budget ${BUDGET:-512}  [t=$(el)]"
for r in ${ROUNDS:-1}; do
tune g$NG-old-$r $ALL KOPT_COMPILE_FORK=0 KOPT_COMPILE_NICE=0 --
tune g$NG-new-$r $ALL --
done
if [ -n "${WARM:-}" ]; then   # the compile cache of a first run, a second run on it (new store)
  rm -rf /tmp/cw; CACHE=/tmp/cw tune g$NG-first $ALL --; CACHE=/tmp/cw tune g$NG-warm $ALL --
  CACHE=/tmp/cw tune g1-warm 0 --; rm -rf /tmp/cw
fi
[ -n "${ONE:-}" ] && { tune g1-old 0 KOPT_COMPILE_FORK=0 KOPT_COMPILE_NICE=0 --; tune g1-new 0 --; }
[ -n "${COLD:-}" ] && { say "== NVRTC cold first compiles  [t=$(el)]"; timeout 120 python3 bench/probe/nvrtc_threads.py 2 --cold 1,16,32,$(( $(nproc) - 4 )) 2>&1 | sed 's/^/   /' | tee -a $S; }
say "== done in $(el) s"
(cd $OUT && tar czf d40.tgz d40 && rm -rf d40)
