#!/usr/bin/env bash
# kopt optimize --gpus with and without one environment setting (bench/optimize_gpus.sh
# twice: 1 GPU and every GPU each time), to time a change that has a switch back, e.g.
#   bash bench/optimize_ab.sh KOPT_PREPARE_WAIT=1     (the step waits for its compiles ahead)
#   bash bench/optimize_ab.sh KOPT_PIN_WORKERS=0      (workers see every GPU)
#   bash bench/optimize_ab.sh OPT_ARGS=--overlap      (the next step asked meanwhile)
# From the repo root with a build carried (KOPT_BUILD, OPT_ITERS as optimize_gpus.sh);
# results in $OUT/optab/{with,without}/, both summaries last.
set -u
[ $# -eq 1 ] && [[ "$1" == *=* ]] || { echo "usage: bench/optimize_ab.sh NAME=VALUE" >&2; exit 2; }
O=${OUT:-/tmp/kopt-out}/optab; mkdir -p "$O"
env "$1" OPT_OUT="$O/with" bash bench/optimize_gpus.sh > "$O/with.txt" 2>&1
OPT_OUT="$O/without" bash bench/optimize_gpus.sh > "$O/without.txt" 2>&1
for w in with without; do
  echo "== $w $1"
  cat "$O/$w/summary.txt" 2>/dev/null; tail -1 "$O/$w.txt"
done
