#!/usr/bin/env bash
# Issue 29 on a several-GPU machine: where a first tuning run's start goes (prepare trace),
# cold NVRTC in fresh processes, compile helpers niced or not; issue 31: what a driver-only
# check can use there. Carry build-gpu and .carry. From the repo root.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
O=$OUT/d40; mkdir -p $O; S=$OUT/summary.txt; : > $S
say() { echo "$*" | tee -a $S; }
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-gpu/CMakeCache.txt)
[ "$src" != "$PWD" ] && [ ! -e "$src" ] && { mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; }
NG=$(nvidia-smi -L | wc -l)
say "== env: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $NG GPUs; nproc $(nproc); git $(git rev-parse --short HEAD 2>/dev/null)"
say "== issue 31 probes: id $(id -u); unshare: $(unshare -m --propagation private true 2>&1 && echo ok)"
python3 - <<'PY' 2>&1 | sed 's/^/   /' | tee -a $S
import glob, os
try:
    import nvidia; roots = list(nvidia.__path__)
except Exception as e:
    roots = []; print("no nvidia package:", e)
for r in roots:
    for f in sorted(glob.glob(r + "/*/lib/lib*rand*") + glob.glob(r + "/*/lib/libnvrtc*")):
        print(f, os.path.getsize(f))
PY
say "   ldconfig nvrtc/curand: $(ldconfig -p | grep -E 'libnvrtc.so.13 |libcurand.so.10 ' | sed 's/.*=> //' | tr '\n' ' ')"
say "== NVRTC: fresh processes' first compile at once (bench/probe/nvrtc_threads.py --cold)  [t=$(el)]"
timeout 150 python3 bench/probe/nvrtc_threads.py 2 --cold 1,8,16,$(( $(nproc) - 2 )) 2>&1 | sed 's/^/   /' | tee -a $S
ARGS=(examples/sgemm examples/sgemm/tune.cu --sizes M=2048,N=2048,K=2048 --strategy random --seed 7 --budget 512 --no-progress --json)
tune() { # label gpus [env...] -- [opts]
  local l=$1 g=$2; shift 2; local envs=(); while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  rm -rf /tmp/c-$l
  local t=$(date +%s.%N)
  env "${envs[@]}" KOPT_CACHE_DIR=/tmp/c-$l KOPT_TUNE_TRACE=$O/$l.trace timeout 150 build-gpu/kopt tune "${ARGS[@]}" --gpus $g --db /tmp/$l.db "$@" > $O/$l.json 2> $O/$l.log
  local rc=$? w; w=$(python3 -c "import time; print('%.1f' % (time.time() - $t))")
  say "$l: rc $rc wall $w s; $(python3 .carry/trace40.py $O/$l.json $O/$l.trace 2>&1 | tail -3)"
  rm -rf /tmp/c-$l
}
say "== first runs (empty compile cache), sgemm 2048, random seed 7, budget 512  [t=$(el)]"
ALL=$(seq -s, 0 $((NG - 1)))
tune g1 0 --
tune g$NG $ALL --
tune g$NG-nonice $ALL KOPT_COMPILE_NICE=0 --
tune g$NG-ct16 $ALL -- --compile-threads 16
say "== done in $(el) s"
(cd $OUT && tar czf d40.tgz d40 && rm -rf d40)
