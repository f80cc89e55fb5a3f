#!/usr/bin/env bash
# KernelBench at search speed (issue 27): what one evaluation of a PyTorch-reference problem
# costs, step by step, for one or more builds side by side in one device call.
# usage (GPU machine, repo root, builds carried): bash bench/kb_speed.sh [BUILD ...]
#   BUILD: a build folder (default build). A folder with its own libexec/ (a copy of an
#   older tree's worker scripts) uses those; otherwise the tree's libexec/.
# Problems: bench/kernelbench/big/problems (a row softmax over 4096 x 393216 fp32 and an
# RMSNorm over 112 x 64 x 512 x 512 fp32: 6.4 and 7.5 GB in and out) with their host-mode
# candidates, and bench/kernelbench/problems/2_row_softmax (33 MB) as the small one.
# Sections (KBS_SECTIONS, default "oneshot session"):
#   oneshot  kopt eval PROBLEM CANDIDATE --json --no-store, once per problem: the process
#            wall, the verdict, wall_ms and the trace (parent steps and each worker's);
#            --no-compile where the build knows it (the torch.compile baseline is its own
#            cost, cached in the store: not what this compares), KBS_EVAL_ARGS appended
#   session  bench/probe/session_cost: KBS_SESSION_N (default 2) evaluations of the same
#            candidate inside one evaluation session (the reference's run reused), each
#            one's wall time
# The problems are imported once, by the last build given; each build has its own compile
# cache (cold for each). Logs and JSON under $OUT/kb_speed (or /tmp/kopt-out/kb_speed); a
# table is printed last.
set -u
FINAL=${OUT:-/tmp/kopt-out}; O=$FINAL/kb_speed; mkdir -p "$O"
SECTIONS=${KBS_SECTIONS:-oneshot session}
BUILDS=("$@"); [ ${#BUILDS[@]} = 0 ] && BUILDS=(build)
TO=${KBS_TIMEOUT:-240}
S=$O/summary.txt; : > "$S"
say() { echo "$*" | tee -a "$S"; }
say "== $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1); $(date -u +%FT%TZ); shmem THP: $(cat /sys/kernel/mm/transparent_hugepage/shmem_enabled 2>/dev/null)"
CASES="big/problems/7_big_softmax.py:big/candidates/7_big_softmax.cu
big/problems/8_big_rmsnorm.py:big/candidates/8_big_rmsnorm.cu
problems/2_row_softmax.py:candidates/2_row_softmax.cu"
P=/tmp/kopt-kbs-problems; rm -rf "$P"; mkdir -p "$P"
while IFS=: read -r prob cand; do
  timeout 300 "$PWD/${BUILDS[-1]}/kopt" kb import "bench/kernelbench/$prob" --out "$P" >> "$O/import.txt" 2>&1 ||
    say "import of $prob failed: $(tail -2 "$O/import.txt")"
done <<< "$CASES"
for B in "${BUILDS[@]}"; do
  L=$(basename "$B"); K=$PWD/$B/kopt
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$B/CMakeCache.txt" 2>/dev/null)
  if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; fi
  LIBX=$PWD/libexec; [ -d "$B/libexec" ] && LIBX=$PWD/$B/libexec
  export KOPT_TORCH_WORKER=$LIBX/kopt_torch_worker.py LD_LIBRARY_PATH=$PWD/$B${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export KOPT_DB=/tmp/kopt-kbs-$L.db KOPT_CACHE_DIR=/tmp/kopt-kbs-cache-$L
  EXTRA=(); "$K" eval --help 2>&1 | grep -q -- --no-compile && EXTRA=(--no-compile)
  read -r -a more <<< "${KBS_EVAL_ARGS:-}"; EXTRA+=("${more[@]}")
  if [[ " $SECTIONS " == *" oneshot "* ]]; then
    while IFS=: read -r prob cand; do
      n=$(basename "$prob" .py); j=$O/oneshot_${L}_$n.json
      s0=$(date +%s%N)
      timeout "$TO" "$K" eval "$P/$n" "bench/kernelbench/$cand" --json --no-store "${EXTRA[@]}" > "$j" 2> "$O/oneshot_${L}_$n.err"
      rc=$?
      say "oneshot $L $n: $(( ($(date +%s%N) - s0) / 1000000 )) ms process wall (exit $rc)"
    done <<< "$CASES"
  fi
  if [[ " $SECTIONS " == *" session "* ]]; then
    SC=/tmp/session_cost_$L
    cc -O2 -Iinclude -o "$SC" bench/probe/session_cost.c -L"$B" -lkopt -Wl,-rpath,"$PWD/$B" 2> "$O/session_cost_build_$L.err" ||
      say "$L: session_cost did not build: $(head -3 "$O/session_cost_build_$L.err")"
    while IFS=: read -r prob cand; do
      n=$(basename "$prob" .py)
      timeout "$TO" "$SC" "$P/$n" "bench/kernelbench/$cand" "${KBS_SESSION_N:-2}" 0 0 > "$O/session_${L}_$n.txt" 2>&1
      grep -v '^  trace ' "$O/session_${L}_$n.txt" | while read -r line; do say "session $L $n: $line"; done
    done <<< "$CASES"
  fi
done
# the table: one row per one-shot evaluation, the steps that took the most
python3 - "$O" <<'EOF' | tee -a "$S"
import glob, json, os, sys
o = sys.argv[1]
print("%-8s %-15s %-8s %8s %8s %8s %8s %8s  %s" % ("build", "problem", "verdict", "kernel", "total", "verify",
      "compare", "time", "largest steps (ms: parent | reference | candidate)"))
for f in sorted(glob.glob(o + "/oneshot_*.json")):
    lab, prob = os.path.basename(f)[8:-5].split("_", 1)
    try:
        r = json.load(open(f))
    except Exception:
        print("%-8s %-15s (no JSON: see %s)" % (lab, prob[:15], f[:-5] + ".err"))
        continue
    w = r.get("wall_ms") or {}
    t = r.get("trace") or {}
    top = lambda d: ", ".join("%s %.0f" % kv for kv in sorted((d or {}).items(), key=lambda kv: -kv[1])[:4])
    med = (r.get("timing") or {}).get("median_ms")
    g = lambda k: "%8.0f" % w[k] if isinstance(w.get(k), (int, float)) else "%8s" % "-"
    print("%-8s %-15s %-8s %8s %s %s %s %s  %s | %s | %s" % (lab, prob[:15], r.get("verdict"),
          "%.2f" % med if med else "-", g("total"), g("verify"), g("compare"), g("time"),
          top(t.get("parent")), top(t.get("reference")), top(t.get("candidate"))))
EOF
