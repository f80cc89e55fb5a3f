#!/usr/bin/env bash
# Issue 29: a tune run on every GPU of the machine and on one, with two environments side by
# side (A and B: e.g. B="KOPT_TUNE_PRESTART=go" against the default), as first runs (empty
# compile cache, new store), warm (a filled compile cache, new store) and warm store (the
# ceilings stored, --fresh). From the repo root on the GPU machine with a build carried:
#   A="KOPT_X=1" B="KOPT_TUNE_PRESTART=go" bash bench/tune_gpus_ab.sh
# KOPT_BUILD (default build), BUDGET (512), AB_OUT ($OUT/tune_ab). sgemm 2048, random, seed
# 7; each run's lines from bench/tune_trace_summary.py, a table last.
set -u
O=${AB_OUT:-${OUT:-/tmp/kopt-out}/tune_ab}; mkdir -p "$O"; S=$O/summary.txt; : > "$S"; : > "$O/walls.txt"
B_=${KOPT_BUILD:-build}; K=$PWD/$B_/kopt
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$B_/CMakeCache.txt" 2>/dev/null)
if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; fi
NG=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$NG" -ge 1 ] || { echo "skipped: no GPU"; exit 0; }
ALL=$(seq -s, 0 $((NG - 1)))
read -ra ENV_A <<< "${A:-KOPT_X=1}"; read -ra ENV_B <<< "${B:-KOPT_TUNE_PRESTART=go}"
ARGS=(examples/sgemm examples/sgemm/tune.cu --sizes M=2048,N=2048,K=2048 --strategy random
      --seed 7 --budget "${BUDGET:-512}" --no-progress --json)
say() { echo "$*" | tee -a "$S"; }
mono() { python3 -c 'import time; print(time.monotonic())'; }
tune() { # label gpus cache db env... -- [opts]
  local l=$1 g=$2 c=$3 db=$4; shift 4; local envs=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done; shift
  local a b; a=$(mono)
  env "${envs[@]}" KOPT_CACHE_DIR="$c" KOPT_TUNE_TRACE="$O/$l.trace" timeout 150 "$K" tune \
    "${ARGS[@]}" --gpus "$g" --db "$db" "$@" > "$O/$l.json" 2> "$O/$l.log"
  local rc=$?; b=$(mono)
  echo "$l $(python3 -c "print($b - $a)")" >> "$O/walls.txt"
  say "$l: rc $rc ${envs[*]}"
  python3 bench/tune_trace_summary.py "$O/$l.json" "$O/$l.trace" "$a" "$b" 2>&1 | head -5 | tee -a "$S"
}
say "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1), $NG GPUs, $(nproc) CPUs; A: ${ENV_A[*]}; B: ${ENV_B[*]}"
for v in A B; do
  declare -n E=ENV_$v
  for g in "$ALL" 0; do n=$([ "$g" = 0 ] && echo 1 || echo "$NG")
    rm -rf /tmp/ab-c; tune "g$n-first-$v" "$g" /tmp/ab-c "/tmp/ab-g$n-$v.db" "${E[@]}" --
    rm -f "/tmp/ab-g$n-$v.db"
    tune "g$n-warm-$v" "$g" /tmp/ab-c "/tmp/ab-g$n-$v.db" "${E[@]}" --
    tune "g$n-store-$v" "$g" /tmp/ab-c "/tmp/ab-g$n-$v.db" "${E[@]}" -- --fresh
    rm -rf /tmp/ab-c "/tmp/ab-g$n-$v.db"
  done
done
python3 - "$O" "$NG" <<'PY' | tee -a "$S"
import json, sys
o, ng = sys.argv[1], sys.argv[2]
walls = dict((l.split()[0], float(l.split()[1])) for l in open(o + "/walls.txt") if l.strip())
def t(l):
    try: return json.load(open("%s/%s.json" % (o, l)))["elapsed_s"]
    except Exception: return float("nan")
nan = float("nan")
print("search (wall)  1 GPU            %s GPUs           ratio of the search (of the wall)" % ng)
for r in ("first", "warm", "store"):
    for v in ("A", "B"):
        l1, ln = "g1-%s-%s" % (r, v), "g%s-%s-%s" % (ng, r, v)
        a, b, wa, wb = t(l1), t(ln), walls.get(l1, nan), walls.get(ln, nan)
        print("%-5s %s     %6.2f s (%5.2f)  %6.2f s (%5.2f)  %5.2fx (%4.2fx)" % (
            r, v, a, wa, b, wb, a / b if b else nan, wa / wb if wb else nan))
PY
