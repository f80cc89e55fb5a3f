#!/usr/bin/env bash
# One device call for scale-out (issue 17, docs/scale.md), on the GPU machine from the repo
# root with build/ carried:  bash bench/scale_session.sh
# A fixed-budget `kopt tune` (examples/sgemm/tune.cu at 2048^3, strategy random, the same
# seed and budget everywhere, a fresh compile cache and store per run):
#   1gpu        one GPU, the plain path (no --gpus)
#   gpus0       one GPU through the dispatcher (--gpus 0): should match 1gpu
#   gpusN       --gpus 0..N-1 for N = 2, 4, 8 where the machine has that many GPUs; the
#               speed-up over gpus0 and its efficiency (goal >= 0.85 x N). Compile threads
#               and lookahead are kopt's defaults (a share of the usable CPUs over the GPUs,
#               the lookahead twice the threads: docs/scale.md, "Compile depth"; each run's
#               line says them); SCALE_CT=K gives K per GPU instead (1gpu: K)
#   mpi2        mpirun -np 2 on the one GPU: rank 0 searches and stores, rank 1 evaluates
# SCALE_WARM=1: all runs share one compile cache, filled first by an untimed run, so the
# speed-ups are the GPUs' alone (compilation shared and done); each run's GPU utilization
# is sampled (nvidia-smi, 200 ms) and its mean per GPU printed.
#   mpikill     mpirun -np 3 (ranks 1 and 2 share GPU 0), rank 2 killed (SIGKILL) once
#               a third of the budget is stored: the run must still store every point of
#               the budget once, and rank 1 must have done rank 2's evaluation in flight
# MPI runs need OpenMPI's mpirun (PATH, /usr/local/mpi/bin, /opt/hpcx/ompi/bin, next to
# mpi4py's mpicc) and its libmpi.so.40; without them they print "skipped: no MPI". Results go to $OUT/scale (or /tmp/kopt-out/scale): each
# run's log and JSON, summary.txt, and a short table printed last. Each run is bounded;
# the whole session stays under 8 minutes on an H100 (SCALE_BUDGET, default 48, scales it).
# SCALE_SHORT=1 leaves out the plain-path run (1gpu) and GPU 1 alone (gpu1); SCALE_NS="4"
# runs only those GPU counts (default "2 4 8"). SCALE_CPUS=LIST (taskset -c's list, e.g.
# 0-95) holds every run, its compile helpers and workers to those CPUs: a host with fewer
# CPUs per GPU (kopt's default compile threads follow them). The speed-up
# is of the tuning run (kopt tune's elapsed_s); that of the whole process (kopt's start,
# the ceilings, the final check of the winner included) is printed beside it.
set -u
FINAL=${OUT:-/tmp/kopt-out}; O=$FINAL/scale; mkdir -p "$O"
B=${KOPT_BUILD:-build}; K=${KOPT_BIN:-$PWD/$B/kopt}
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$B/CMakeCache.txt" 2>/dev/null)
# the carried build names its source folder by absolute path: make it resolve here
if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; fi
BUDGET=${SCALE_BUDGET:-48}
PROB=examples/sgemm TMPL=examples/sgemm/tune.cu
TUNE_ARGS=(--sizes M=2048,N=2048,K=2048 --strategy random --seed 7 --budget "$BUDGET"
           --no-progress --json)
W=/tmp/kopt-scale; rm -rf "$W"; mkdir -p "$W"
T0=$(date +%s)
S=$O/summary.txt; : > "$S"
say() { echo "$*" | tee -a "$S"; }
TABLE=$O/table.txt; : > "$TABLE"
row() { printf '%-10s %-6s %-4s %8s %8s %9s %s\n' "$@" >> "$TABLE"; }
row run gpus rc "wall s" "tune s" "speed-up" "note"

NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
# CUDA_VISIBLE_DEVICES=1,2,3: those GPUs only (kopt numbers them 0..2, as CUDA does)
[ -n "${CUDA_VISIBLE_DEVICES:-}" ] && [ "$NGPU" -gt 0 ] && NGPU=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
# a dry run of this script without a GPU: KOPT_SCALE_STANDIN=MS (CPU stand-ins) and
# SCALE_FAKE_GPUS=N (how many to pretend)
[ -n "${KOPT_SCALE_STANDIN:-}" ] && NGPU=${SCALE_FAKE_GPUS:-1}
HOLD=()
if [ -n "${SCALE_CPUS:-}" ]; then
  command -v taskset > /dev/null || { echo "SCALE_CPUS: no taskset on this machine" >&2; exit 2; }
  taskset -c "$SCALE_CPUS" true 2> /dev/null || { echo "SCALE_CPUS=$SCALE_CPUS: not a CPU list taskset takes on this machine" >&2; exit 2; }
  HOLD=(taskset -c "$SCALE_CPUS")
fi
say "== env: $(nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv,noheader 2>/dev/null | head -1 || true); $NGPU GPU(s); $(nproc) CPUs${SCALE_CPUS:+, runs held to $("${HOLD[@]}" nproc) (CPUs $SCALE_CPUS)}; budget $BUDGET"
if [ "$NGPU" = 0 ]; then
  say "skipped: no GPU"
  row all - - - - - "skipped: no GPU"
  cat "$TABLE"; exit 0
fi

# field of a tune --json output (python3 reads it); "-" when missing
jget() { python3 -c 'import json,sys
try:
    d = json.load(open(sys.argv[1]))
    v = eval(sys.argv[2], {"d": d})
    print(v if not isinstance(v, float) else "%.2f" % v)
except Exception:
    print("-")' "$1" "$2"; }

# tune LABEL SECONDS [prefix command...] -- [kopt tune options]: one fresh run
tune() {
  local label=$1 secs=$2; shift 2
  local pre=() ; while [ $# -gt 0 ] && [ "$1" != "--" ]; do pre+=("$1"); shift; done; shift
  # SCALE_WARM=1: every run shares one compile cache, filled by an untimed run first (the
  # GPUs' share alone); else each run compiles from a fresh cache (what a first run costs)
  if [ -n "${SCALE_WARM:-}" ]; then export KOPT_CACHE_DIR=$W/warm.cache
  else export KOPT_CACHE_DIR=$W/$label.cache; fi
  # each GPU's utilization, sampled every 200 ms while the run goes
  nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 200 \
      > "$O/$label.util" 2> /dev/null & local smi=$!
  local t=$(date +%s.%N)
  timeout "$secs" "${pre[@]}" "${HOLD[@]}" "$K" tune "$PROB" "$TMPL" "${TUNE_ARGS[@]}" --db "$W/$label.db" \
      ${CT:+--compile-threads "$CT"} "$@" > "$O/$label.json" 2> "$O/$label.log"
  RC=$?
  kill "$smi" 2> /dev/null; wait "$smi" 2> /dev/null
  say "   GPU utilization (mean % while it ran): $(awk -F', *' '{s[$1]+=$2; n[$1]++} END {for (g in s) printf "gpu%s %.0f  ", g, s[g]/n[g]}' "$O/$label.util")"
  WALL=$(python3 -c "import time; print('%.1f' % (time.time() - $t))")
  TUNE_S=$(jget "$O/$label.json" 'd["elapsed_s"]')
  say "$label: exit $RC, wall $WALL s, tune $TUNE_S s, best $(jget "$O/$label.json" 'd["best"]["label"] if "label" in d["best"] else d["best"]["params"]'), $(jget "$O/$label.json" 'd["evaluated"]') evaluated ($(jget "$O/$label.json" 'd["failed"]') failed), compile wait $(jget "$O/$label.json" 'd["compile_wait_s"]') s"
  # the compile depth the run used ("-" from a build before it was said)
  say "   compile threads $(jget "$O/$label.json" 'd["compile_threads"]'), lookahead $(jget "$O/$label.json" 'd["lookahead"]'), helpers $(jget "$O/$label.json" 'd["compile_helpers"]'), usable CPUs $(jget "$O/$label.json" 'd["cpus_usable"]')"
  # where the time went: evaluating (all slots), and each slot's device, jobs and busy time
  say "   eval $(jget "$O/$label.json" 'd["eval_s"]') s; slots: $(jget "$O/$label.json" '"; ".join("%s%s/r%s %d jobs %.1f s busy" % (s["kind"], s.get("device"), s.get("rank"), s["evaluations"], s["busy_s"]) for s in d.get("slots") or [])')"
}
# rows of a store: "count|distinct labels|ranks"
stored() { python3 -c 'import sqlite3,sys
c = sqlite3.connect(sys.argv[1])
n, d = c.execute("select count(*), count(distinct label) from tune_evals").fetchone()
r = ",".join(str(x[0]) for x in c.execute("select distinct rank from tune_evals order by 1"))
g = ",".join(str(x[0]) for x in c.execute("select distinct device_index from tune_evals order by 1"))
print("%d|%d|%s|gpu %s" % (n, d, r, g))' "$1" 2>/dev/null || echo "0|0|"; }

if [ -n "${SCALE_WARM:-}" ]; then
  say "== warm: one untimed run fills the shared compile cache (every GPU, the default compile threads)"
  tune fill 240 -- --gpus "$(seq -s, 0 $((NGPU - 1)))"
fi
# ---- one GPU, with and without the dispatcher ---------------------------------------------------
say "== 1gpu (plain) and gpus0 (--gpus 0)"
if [ -z "${SCALE_SHORT:-}" ]; then
  CT=${SCALE_CT:-} tune 1gpu 150 --
  row 1gpu 1 "$RC" "$WALL" "$TUNE_S" - "stored $(stored "$W/1gpu.db")"
fi
tune gpus0 150 -- --gpus 0
W1=$WALL
T1=$TUNE_S
row gpus0 1 "$RC" "$WALL" "$TUNE_S" 1.00 "stored $(stored "$W/gpus0.db")"
same=$(python3 -c 'import json,sys; a,b=(json.load(open(p)) for p in sys.argv[1:]); print("same best" if a["best"]["params"]==b["best"]["params"] else "other best")' "$O/1gpu.json" "$O/gpus0.json" 2>/dev/null)
say "1gpu vs gpus0: $same"

# the second GPU alone: its own pace, to tell a slow GPU from a slow dispatcher
if [ "$NGPU" -ge 2 ] && [ -z "${SCALE_SHORT:-}" ]; then
  tune gpu1 150 -- --gpus 1
  row gpu1 1 "$RC" "$WALL" "$TUNE_S" - "GPU 1 alone; stored $(stored "$W/gpu1.db")"
fi
# ---- N GPUs of this host ------------------------------------------------------------------------
for N in ${SCALE_NS:-2 4 8}; do
  [ "$NGPU" -ge "$N" ] || { say "gpus$N: skipped (this machine has $NGPU GPU(s))"; continue; }
  list=$(seq -s, 0 $((N - 1)))
  CT=${SCALE_CT:+$((SCALE_CT * N))} tune "gpus$N" 150 -- --gpus "$list"
  sp=$(python3 -c "t1, tn = float('$T1'), float('$TUNE_S'); s = t1 / tn; print('%.2f (eff %.2f)' % (s, s / $N))" 2>/dev/null || echo -)
  spw=$(python3 -c "t1, tn = float('$W1'), float('$WALL'); s = t1 / tn; print('%.2f (eff %.2f)' % (s, s / $N))" 2>/dev/null || echo -)
  say "gpus$N: speed-up over gpus0 $sp (goal: efficiency >= 0.85); of the whole process (setup and final check included) $spw"
  row "gpus$N" "$N" "$RC" "$WALL" "$TUNE_S" "${sp%% *}" "${sp#* }; process wall ${spw}"
done

# ---- MPI on this host -----------------------------------------------------------------------------
# mpirun: on the PATH, in the usual prefixes, or next to the mpicc mpi4py was built with
mpi4py_bin=$(python3 -c 'import mpi4py, os; print(os.path.dirname(mpi4py.get_config().get("mpicc", "")))' 2>/dev/null)
MPIRUN=$(command -v mpirun || ls /usr/local/mpi/bin/mpirun /opt/hpcx/ompi/bin/mpirun \
         /usr/lib64/openmpi/bin/mpirun ${mpi4py_bin:+"$mpi4py_bin/mpirun"} 2>/dev/null | head -1)
if [ -n "$MPIRUN" ] && ! "$MPIRUN" --version 2>&1 | grep -q "Open MPI"; then
  say "mpi: $MPIRUN is not OpenMPI's ($("$MPIRUN" --version 2>&1 | head -1)): kopt loads libmpi.so.40"
  MPIRUN=""
fi
[ "${SCALE_MPI:-1}" = 0 ] && { say "mpi: not run (SCALE_MPI=0)"; MPIRUN=""; }
if [ -z "$MPIRUN" ]; then
  say "mpi: skipped: no MPI (no OpenMPI mpirun on this machine)"
  row mpi2 - - - - - "skipped: no MPI"
  row mpikill - - - - - "skipped: no MPI"
else
  MPIDIR=$(dirname "$(dirname "$(readlink -f "$MPIRUN")")")
  for lib in "$MPIDIR/lib/libmpi.so.40" "$MPIDIR/lib/x86_64-linux-gnu/libmpi.so.40"; do
    [ -e "$lib" ] && export KOPT_MPI_LIB=$lib
  done
  say "== mpi: $("$MPIRUN" --version 2>&1 | head -1) at $MPIRUN${KOPT_MPI_LIB:+, $KOPT_MPI_LIB}"
  MPI=("$MPIRUN" --allow-run-as-root --oversubscribe --bind-to none --enable-recovery
       --mca orte_abort_on_non_zero_status 0 -x KOPT_CACHE_DIR -x KOPT_SCALE_LOST_S
       -x PATH -x LD_LIBRARY_PATH ${KOPT_MPI_LIB:+-x KOPT_MPI_LIB}
       ${KOPT_SCALE_STANDIN:+-x KOPT_SCALE_STANDIN})
  export KOPT_SCALE_LOST_S=10
  tune mpi2 150 "${MPI[@]}" -np 2 --
  row mpi2 1 "$RC" "$WALL" "$TUNE_S" "$(python3 -c "print('%.2f' % (float('$T1') / float('$TUNE_S')))" 2>/dev/null || echo -)" "2 ranks; stored $(stored "$W/mpi2.db")"

  # the kill: rank 2 killed once a third of the budget is stored
  ( tune mpikill 200 "${MPI[@]}" -np 3 --; echo "$RC $WALL $TUNE_S" > "$W/mpikill.rc" ) &
  bg=$!
  victim=""
  for _ in $(seq 1500); do
    n=$(stored "$W/mpikill.db" | cut -d'|' -f1)
    if [ "${n:-0}" -ge $((BUDGET / 3)) ]; then
      for p in $(pgrep -f "kopt tune $PROB"); do
        tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=2' && victim=$p
      done
      break
    fi
    sleep 0.2
  done
  if [ -n "$victim" ]; then kill -9 "$victim"; say "mpikill: killed rank 2 (pid $victim) after $n stored"; else say "mpikill: rank 2 not found to kill"; fi
  wait "$bg"
  read -r RC WALL TUNE_S < "$W/mpikill.rc"
  st=$(stored "$W/mpikill.db")
  lost=$(jget "$O/mpikill.json" '[s["rank"] for s in d["slots"] if s["lost"]]')
  verdict="LOST SOMETHING"
  [ "${st%%|*}" = "$BUDGET" ] && [ "$(echo "$st" | cut -d'|' -f2)" = "$BUDGET" ] && [ "$lost" = "[2]" ] && verdict="nothing lost"
  say "mpikill: exit $RC; stored $st (want $BUDGET|$BUDGET); lost ranks $lost: $verdict"
  row mpikill 1 "$RC" "$WALL" "$TUNE_S" - "3 ranks, rank 2 killed; stored $st; $verdict"
fi

say "== done in $(( $(date +%s) - T0 )) s"
cat "$S" > /dev/null
echo
echo "scale-out session (budget $BUDGET, sgemm 2048^3, random, seed 7):"
cat "$TABLE" | tee "$O/table_final.txt"
