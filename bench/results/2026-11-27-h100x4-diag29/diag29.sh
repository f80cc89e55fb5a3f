#!/usr/bin/env bash
# Issue 29 on a 4-GPU machine, one call: why a first tuning run is host-bound, and the
# optimize --gpus rate. Carry: build-main (main + cgroup-aware CPU count), build-otg
# (optimize-tune-gpus rebased on main), .carry/. From the repo root.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
O=$OUT/d29; mkdir -p $O; S=$OUT/summary.txt; : > $S
say() { echo "$*" | tee -a $S; }
for b in build-main build-otg; do
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' $b/CMakeCache.txt)
  [ "$src" != "$PWD" ] && [ ! -e "$src" ] && { mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; }
done
say "== env: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $(nvidia-smi -L | wc -l) GPUs; nproc $(nproc), online $(nproc --all)"
say "   lscpu: $(lscpu | grep -E '^(Socket|Core|Thread|Model name|CPU\(s\))' | sed 's/  */ /g' | tr '\n' ';')"
say "   /proc/self/cgroup: $(tr '\n' ' ' < /proc/self/cgroup)"
for f in /sys/fs/cgroup/cpu.max /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us /sys/fs/cgroup/cpuset.cpus.effective; do
  [ -r $f ] && say "   $f: $(cat $f)"
done
g=$(sed -n 's/^0:://p' /proc/self/cgroup); [ -r /sys/fs/cgroup$g/cpu.max ] && say "   own group cpu.max: $(cat /sys/fs/cgroup$g/cpu.max)"
stat() { cat /sys/fs/cgroup/cpu.stat 2>/dev/null | tr '\n' ' '; cat /sys/fs/cgroup/cpu/cpu.stat 2>/dev/null | tr '\n' ' '; }
say "   cpu.stat: $(stat)"
say "== pure CPU loop, P processes of 1.5 s work each (throughput vs 1)"
python3 - <<'PY' | tee -a $S
import multiprocessing as mp, time
def work(_):
    t = time.process_time(); x = 0
    for i in range(12_000_000): x += i
    return time.process_time() - t
for p in (1, 16, 32, 64):
    with mp.Pool(p) as pool:
        t = time.time(); cpu = sum(pool.map(work, range(p))); w = time.time() - t
    print("   procs %2d: wall %.2f s, cpu %.1f s, effective CPUs %.1f" % (p, w, cpu, cpu / w))
PY
say "== NVRTC sgemm compiles, P processes (bench/probe/nvrtc_threads.py)"
timeout 120 python3 bench/probe/nvrtc_threads.py 2 --procs 1,8,16,32,60 2>&1 | sed 's/^/   /' | tee -a $S
say "   cpu.stat: $(stat)   [t=$(el)]"
ARGS=(examples/sgemm examples/sgemm/tune.cu --sizes M=2048,N=2048,K=2048 --strategy random --seed 7 --budget 512 --no-progress --json)
tune() { # label build cache-dir [opts]
  local l=$1 b=$2 c=$3; shift 3; rm -rf $c
  local s0; s0=$(stat)
  local t=$(date +%s.%N)
  KOPT_CACHE_DIR=$c KOPT_TUNE_TRACE=$O/$l.trace timeout 120 $b/kopt tune "${ARGS[@]}" --db /tmp/$l.db "$@" > $O/$l.json 2> $O/$l.log
  local rc=$? w; w=$(python3 -c "import time; print('%.1f' % (time.time() - $t))")
  say "$l: rc $rc wall $w s; $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print("tune %.2f s, %d evaluated, compile threads %s, helpers %s, cpus_usable %s, compile wait %.1f s" % (d["elapsed_s"], d["evaluated"], d.get("compile_threads"), d.get("compile_helpers"), d.get("cpus_usable"), d["compile_wait_s"]))' $O/$l.json 2>&1 | tail -1)"
  say "   cpu.stat after: $(stat)"
  rm -rf $c
}
say "== first runs (empty cache), sgemm 2048, random seed 7, budget 512  [t=$(el)]"
tune g4-default build-main /tmp/c1 --gpus 0,1,2,3
tune g4-shm build-main /dev/shm/c2 --gpus 0,1,2,3
tune g4-ct16 build-main /tmp/c3 --gpus 0,1,2,3 --compile-threads 16
tune g4-ct32 build-main /tmp/c4 --gpus 0,1,2,3 --compile-threads 32
say "== optimize --gpus, kb_tanh (PyTorch reference), scripted model, 16 iterations, --no-profile  [t=$(el)]"
opt() { # label build gpus [opts]
  local l=$1 b=$2 g=$3; shift 3; rm -rf /tmp/$l.*
  local t=$(date +%s.%N)
  KOPT_CACHE_DIR=/tmp/oc-$l KOPT_PROMPTS=$PWD/prompts KOPT_SCRIPT_LINEAGE=1 timeout 150 $b/kopt optimize "$@" --gpus $g \
    --workdir /tmp/$l.w --db /tmp/$l.db --json > $O/$l.json 2> $O/$l.log
  local rc=$? w; w=$(python3 -c "import time; print('%.1f' % (time.time() - $t))")
  say "$l: rc $rc wall $w s; $(python3 -c '
import json,sys,collections; d=json.load(open(sys.argv[1])); w=float(sys.argv[2])
ev=[n for n in d["nodes"] if n.get("verdict") not in (None,"no_code","not_template")]
c=collections.Counter(n.get("gpu") for n in ev)
print("%d nodes evaluated, per GPU %s, %.1f expansions/min (16 / wall), best %s" % (len(ev), dict(c), 16*60/w, (d.get("best") or {}).get("speedup")))' $O/$l.json $w 2>&1 | tail -1)"
}
P=(tests/optimize/kb_tanh/problem --llm "command:python3 tests/optimize/scripted_llm.py tests/optimize/kb_tanh" --iterations 16 --no-profile)
opt opt-g1 build-main 0 "${P[@]}"
opt opt-g4 build-main 0,1,2,3 "${P[@]}"
say "== optimize-tune-gpus: a tune node's tuning over every GPU (softmax, tune budget 64)  [t=$(el)]"
PT=(examples/softmax --llm "command:python3 tests/optimize/scripted_llm.py tests/optimize/softmax" --iterations 4 --search greedy --tune-after 0 --tune-budget 64 --no-profile)
opt otg-main-g4 build-main 0,1,2,3 "${PT[@]}"
opt otg-g4 build-otg 0,1,2,3 "${PT[@]}"
for l in otg-main-g4 otg-g4; do
  say "   $l tune_evals per device: $(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("select group_concat(d||\":\"||n) from (select device_index d, count(*) n from tune_evals group by 1)").fetchone()[0])' /tmp/$l.db 2>&1 | tail -1); tune node: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([(n.get("verdict"), n.get("speedup")) for n in d["nodes"] if n["kind"]=="tune"])' $O/$l.json 2>&1 | tail -1)"
done
say "== done in $(el) s"
(cd $OUT && tar czf d29.tgz d29 && rm -rf d29)
