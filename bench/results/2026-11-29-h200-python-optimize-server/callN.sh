#!/usr/bin/env bash
# One device call: nvidia-smi, then (R) the Python optimize bench (own server vs here) and
# the suite's part R, or (E) the suite's part E.
set -u
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader
date -u
if [ "${1:?R or E}" = R ]; then
  B=build-gpu; [ -d build-gpu ] || B=build
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' $B/CMakeCache.txt)
  if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then
    mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; fi
  mkdir -p "$OUT/pyopt"
  KOPT_LIB=$PWD/$B/libkopt.so.0 timeout 240 python3 bench/python_optimize.py "$OUT/pyopt" \
    > "$OUT/pyopt/table.txt" 2> "$OUT/pyopt/steps.txt"
  echo "bench rc=$?"
  (cd "$OUT/pyopt" && tar czf work.tgz work && rm -rf work)
  cat "$OUT/pyopt/steps.txt" | grep -E "step|Error|error" | tail -30
  cat "$OUT/pyopt/table.txt"
fi
bash .carry/suite.sh "$1"
