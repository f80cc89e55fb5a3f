#!/usr/bin/env bash
# Diagnose the suite on the GPU machine: env, unit+cli tests (parallel), GPU tests
# (serial, bounded), and where a `kopt eval` spends its wall time. Usage (on the GPU
# machine, from the repo root, with build/ carried): bash bench/gpu_diag.sh
# Full logs go to $OUT (or /tmp/kopt-out); a short table is printed last.
set -u
O=${OUT:-/tmp/kopt-out}; mkdir -p "$O"
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build/CMakeCache.txt)
# the carried build names its source folder by absolute path: make it resolve here
if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; fi
export KOPT_CACHE_DIR=/tmp/kopt-cache KOPT_DB=/tmp/kopt-diag.db
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$O/env.txt" 2>&1
{ date -u; uname -r; nproc; } >> "$O/env.txt"
K=$PWD/build/kopt
for i in 1 2 3; do /usr/bin/time -f "wall %e s" $K eval examples/softmax examples/softmax/fast.cu --json > "$O/eval_softmax_$i.json" 2>> "$O/eval_times.txt"; done
${DIAG_TESTS:-true} && { ctest --test-dir build -L 'unit|cli' -j8 --timeout 300 --output-on-failure > "$O/test_unit_cli.log" 2>&1; echo "unit+cli exit $?" >> "$O/summary.txt"; }
${DIAG_GPU:-true} && for t in examples planted profile adversarial; do
  s=$(date +%s); f=tests/gpu/test_$t.sh; [ $t = adversarial ] && f=tests/adversarial/test_adversarial.sh
  timeout ${GPU_T:-120} bash $f $K > "$O/test_gpu_$t.log" 2>&1
  echo "gpu_$t exit $? in $(( $(date +%s) - s )) s" >> "$O/summary.txt"; done
grep -hE "Failed|\*\*\*|FAIL" "$O"/test_*.log | head -40
cat "$O/eval_times.txt" "$O/summary.txt"
