#!/usr/bin/env bash
# device: sgemm tuning first runs (fresh compile cache each), budget 512: gpus0 once, gpus4 with variants
# usage: tunevar.sh "LABEL:GPUS:CT:CPUS:ENV=.." ...   (CT empty: kopt's default; CPUS: taskset -c list)
cd "$(dirname "$0")/.."
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-gpu/CMakeCache.txt)
[ "$src" != "$PWD" ] && [ ! -e "$src" ] && { mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; }
K=$PWD/build-gpu/kopt; W=/tmp/tv; rm -rf $W; mkdir -p $W $OUT/tv
one() {  # label gpus ct cpus env...
  local label=$1 gpus=$2 ct=$3 cpus=$4; shift 4
  ${cpus:+taskset -c $cpus} env "$@" KOPT_CACHE_DIR=$W/$label.cache timeout 120 $K tune examples/sgemm examples/sgemm/tune.cu \
    --sizes M=2048,N=2048,K=2048 --strategy random --seed 7 --budget 512 --no-progress --json \
    --db $W/$label.db --gpus $gpus ${ct:+--compile-threads $ct} > $OUT/tv/$label.json 2> $OUT/tv/$label.log
  python3 - $OUT/tv/$label.json $label <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    sl = "; ".join("%s %d jobs %.2f s" % (s.get("device"), s["evaluations"], s["busy_s"]) for s in d.get("slots") or [])
    print("%-10s cpus %s tune %6.2f s  eval %s  compile_wait %s  ct %s helpers %s  | %s" % (sys.argv[2], d.get("cpus_usable"), d["elapsed_s"], d.get("eval_s"), d.get("compile_wait_s"), d.get("compile_threads"), d.get("compile_helpers"), sl))
except Exception as e:
    print(sys.argv[2], "FAILED", e)
PY
}
for v in "$@"; do
  IFS=: read -r label gpus ct cpus envs <<< "$v"
  one "$label" "$gpus" "$ct" "$cpus" $envs
done 2>&1 | tee -a $OUT/tv/summary.txt
