#!/usr/bin/env bash
# session 42, second 4-GPU call: contexts at once; first-run compile knobs; the optimize
# batch change (branch search-batch): its GPU tests and expansions per minute
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
S=$OUT/summary-call4.txt; : > $S; say() { echo "$*" | tee -a $S; }
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-gpu/CMakeCache.txt)
[ "$src" != "$PWD" ] && [ ! -e "$src" ] && { mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; }
say "== env: $(nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader | head -1), $(nvidia-smi -L | wc -l) GPUs; nproc $(nproc)"
say "== contexts made at once  [t=$(el)]"
for v in "1" "2" "4" "8" "8 narrow" "8 initonly" "4 initonly" "1 initonly" "8"; do
  timeout 60 python3 .carry/ctxbench.py $v 2>&1 | tail -1 | tee -a $S
done
say "== optimize --gpus with every pending candidate in one batch  [t=$(el)]"
KOPT_BUILD=build-gpu OPT_ITERS=24 timeout 240 bash bench/optimize_gpus.sh 2>&1 | tail -3 | tee -a $S
(cd $OUT && tar czf optgpus.tgz optgpus 2>/dev/null; rm -rf optgpus)
say "== the GPU tests of optimize --gpus on the branch  [t=$(el)]"
rm -rf build; cp -a build-gpu build; rm -rf build/Testing
timeout 200 scripts/test.sh -j4 --timeout 180 -R "cli.test_optimize_gpus|cli.test_optimize$|gpu_scale" > $OUT/tests.log 2>&1
grep -E "tests passed|Test +#|skipped" $OUT/tests.log | tee -a $S
say "== first runs: compile helpers' priority and count  [t=$(el)]"
O=$OUT/d42b; mkdir -p $O
mono() { python3 -c 'import time; print(time.monotonic())'; }
ARGS=(examples/sgemm examples/sgemm/tune.cu --sizes M=2048,N=2048,K=2048 --strategy random --seed 7 --budget 512 --no-progress --json)
tune() { local l=$1; shift; local envs=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  rm -rf /tmp/c-$l; local a b; a=$(mono)
  env "${envs[@]}" KOPT_CACHE_DIR=/tmp/c-$l KOPT_TUNE_TRACE=$O/$l.trace timeout 100 build-gpu/kopt tune "${ARGS[@]}" --db /tmp/$l.db "$@" > $O/$l.json 2> $O/$l.log
  local rc=$?; b=$(mono); say "$l: rc $rc ${envs[*]} $*"
  python3 bench/results/2026-11-28-h100x4-early-checks/trace41.py $O/$l.json $O/$l.trace $a $b 2>&1 | head -4 | tee -a $S; rm -rf /tmp/c-$l; }
ALL=0,1,2,3
[ "$(el)" -lt 430 ] && tune g4-default KOPT_X=1 -- --gpus $ALL
[ "$(el)" -lt 440 ] && tune g4-nice19 KOPT_COMPILE_NICE=19 -- --gpus $ALL
[ "$(el)" -lt 450 ] && tune g4-threads32 KOPT_X=1 -- --gpus $ALL --compile-threads 32
say "== done in $(el) s"
(cd $OUT && tar czf d42b.tgz d42b 2>/dev/null; rm -rf d42b)
