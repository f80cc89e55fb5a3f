#!/usr/bin/env bash
# One device call for KernelBench support (issue 14), on the GPU machine from the repo root
# with build/ carried:  bash bench/kb_session.sh [own] [kb30]
# own (the default):
# Imports kopt's own KernelBench-style problems (bench/kernelbench/problems), then runs
# kopt bench three times: each problem's reference against itself (speedup ~1.0x, eager
# only), the kopt-native host-mode candidates (bench/kernelbench/candidates/*.cu) against
# eager AND torch.compile, and the KernelBench-native ModelNew candidates (*.py: load_inline,
# Triton) against eager. Stays under 8 minutes (each step bounded); logs and JSON go to
# $OUT/kb (or /tmp/kopt-out/kb); a short table is printed last.
# evalcost: wall time per candidate, side by side: kopt eval of a kopt-native candidate
# (compile cache cold, then warm) on examples/softmax (CUDA reference) and on the imported
# 2_row_softmax (PyTorch reference), against KernelBench's own harness shape
# (bench/kernelbench_style.py: load_inline compile + 5 checks + 100 timed runs), cold and
# warm. About a minute.
# kb30: KernelBench's own files, level 1 problems 1-20 and level 2 problems 1-10, copied
# (not committed) to $KB_DIR/level1 and $KB_DIR/level2 (default kb_src/ in the repo root,
# carried as untracked files): imported, then each reference against itself (eager only,
# one trial: their inputs reach 6 GB). About 4-5 minutes: run it as its own call.
set -u
SECTIONS=${*:-own}
FINAL=${OUT:-/tmp/kopt-out}; O=$FINAL/kb; mkdir -p "$O"
B=${KOPT_BUILD:-build}; K=${KOPT_BIN:-$PWD/$B/kopt}
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$B/CMakeCache.txt")
# the carried build names its source folder by absolute path: make it resolve here
if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; fi
export KOPT_CACHE_DIR=/tmp/kopt-kb-cache KOPT_DB=/tmp/kopt-kb.db
export KOPT_TORCH_WORKER=$PWD/libexec/kopt_torch_worker.py
rm -f /tmp/kopt-kb.db*; rm -rf /tmp/kopt-kb-problems
T0=$(date +%s)
S=$O/summary.txt; : > "$S"
say() { echo "$*" | tee -a "$S"; }
say "== env: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1); $(python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' 2>&1 | tail -1); ninja: $(command -v ninja || echo none)"
if [[ " $SECTIONS " == *" own "* ]]; then
say "== import"
timeout 120 "$K" kb import bench/kernelbench/problems --out /tmp/kopt-kb-problems > "$O/import.txt" 2>&1
say "import exit $? ($(grep -c '^imported' "$O/import.txt") imported)"; cat "$O/import.txt" >> "$S"
EO="--budget-ms 50 --trials 2 --timeout 60"
run() {   # label, seconds, args...
  local label=$1 secs=$2; shift 2
  local t=$(date +%s)
  timeout "$secs" "$K" bench /tmp/kopt-kb-problems $EO "$@" > "$O/$label.txt" 2> "$O/$label.err"
  say "== $label: exit $? in $(( $(date +%s) - t )) s"
  cat "$O/$label.txt" >> "$S"
}
run reference 90 --kind reference --no-compile
run native 210 --candidates bench/kernelbench/candidates --kind cu
run modelnew 120 --candidates bench/kernelbench/candidates --kind py --no-compile
# the whole native suite as JSON, from the store (resume of a finished suite evaluates nothing)
suite=$(sed -n 's/^suite \([0-9]*\):.*/\1/p' "$O/native.txt" | head -1)
[ -n "$suite" ] && timeout 60 "$K" bench --resume "$suite" --json > "$O/native.json" 2>> "$O/native.err"
fi
if [[ " $SECTIONS " == *" evalcost "* ]]; then
  ms() { local s=$(date +%s%N) rc; "$@" > /dev/null 2>&1; rc=$?; echo "$(( ($(date +%s%N) - s) / 1000000 )) ms (exit $rc)"; }
  [ -d /tmp/kopt-kb-problems ] || timeout 120 "$K" kb import bench/kernelbench/problems --out /tmp/kopt-kb-problems > /dev/null 2>&1
  rm -rf /tmp/kopt-kb-cache /tmp/kb_build /root/.cache/torch_extensions
  for k in cold warm; do
    say "evalcost $k: kopt eval examples/softmax fast.cu: $(ms timeout 120 "$K" eval examples/softmax examples/softmax/fast.cu --no-store)"
    say "evalcost $k: kopt eval 2_row_softmax (PyTorch reference) .cu: $(ms timeout 120 "$K" eval /tmp/kopt-kb-problems/2_row_softmax bench/kernelbench/candidates/2_row_softmax.cu --no-store)"
    say "evalcost $k: KernelBench-style harness (load_inline) examples/softmax/fast.cu: $(ms timeout 300 python3 bench/kernelbench_style.py examples/softmax/fast.cu /tmp/kb_build)"
  done
fi
if [[ " $SECTIONS " == *" kb30 "* ]]; then
  KB=${KB_DIR:-kb_src}; rm -rf /tmp/kopt-kb30
  for l in level1 level2; do
    timeout 120 "$K" kb import "$KB/$l" --out /tmp/kopt-kb30 --prefix "${l#level}_" > "$O/import_$l.txt" 2>&1
    say "import $l: exit $? ($(grep -c '^imported' "$O/import_$l.txt") imported)"; grep -v '^imported' "$O/import_$l.txt" >> "$S"
  done
  t=$(date +%s)
  timeout 330 "$K" bench /tmp/kopt-kb30 --kind reference --no-compile --trials 1 --budget-ms 30 --timeout 120 > "$O/kb30.txt" 2> "$O/kb30.err"
  say "== kb30 reference vs itself: exit $? in $(( $(date +%s) - t )) s"; cat "$O/kb30.txt" >> "$S"
fi
tail -n 30 "$O"/*.err > "$O/errors_tail.txt" 2>/dev/null
say "== total $(( $(date +%s) - T0 )) s"
echo
echo "=================== short table ==================="
for f in reference native modelnew kb30; do
  [ -f "$O/$f.txt" ] || continue
  echo "-- $f"; grep -vE '^  ' "$O/$f.txt" | grep -E '^[0-9]|^suite|^vs ' ; grep -E '^ +geomean' "$O/$f.txt"
done
