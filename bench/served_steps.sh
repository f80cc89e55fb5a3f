#!/usr/bin/env bash
# Processes that evaluate through a kopt serve's session (issue 27 item 3): `kopt bench
# --server` of the kb_speed problems (a row softmax and an RMSNorm of 6.4 / 7.5 GB, the 33 MB
# row softmax), run N times as new processes, as the steps of a search driven from outside
# (kopt optimize --resume --evaluate) or a bench run again; and the same bench without a
# server once, for comparison. Prints each process's wall time and what the server's log
# said (reference run or reused, where its time went).
# usage (GPU machine, repo root, build carried; after bench/kb_speed.sh imported the
# problems into /tmp/kopt-kbs-problems): bash bench/served_steps.sh [BUILD] [N]
set -u
B=${1:-build}; N=${2:-3}; K=$PWD/$B/kopt
O=${OUT:-/tmp/kopt-out}/served_steps; mkdir -p "$O"
P=/tmp/kopt-kbs-problems; C=/tmp/kopt-served-cands; rm -rf "$C"; mkdir -p "$C"
for f in bench/kernelbench/big/candidates/7_big_softmax.cu bench/kernelbench/big/candidates/8_big_rmsnorm.cu \
         bench/kernelbench/candidates/2_row_softmax.cu; do ln -s "$PWD/$f" "$C/$(basename "$f")"; done
export KOPT_TORCH_WORKER=$PWD/libexec/kopt_torch_worker.py KOPT_DB=/tmp/kopt-served.db \
       KOPT_CACHE_DIR=/tmp/kopt-served-cache
S=/tmp/kopt-served-$$.sock
"$K" serve --socket "$S" --idle-exit 600 --sessions 4 2> "$O/serve.err" & sp=$!
trap 'kill $sp 2>/dev/null; wait $sp 2>/dev/null' EXIT
for _ in $(seq 100); do grep -q listening "$O/serve.err" && break; sleep 0.1; done
run() {   # LABEL ARGS...
  local l=$1; shift; local s=$(date +%s%N)
  timeout 300 "$K" bench "$P" --candidates "$C" --no-compile "$@" > "$O/$l.txt" 2>&1
  local rc=$?
  echo "$l: $(( ($(date +%s%N) - s) / 1000000 )) ms, exit $rc, $(grep -c ' OK ' "$O/$l.txt") OK row(s)"
}
run local_once
for i in $(seq "$N"); do run "served_$i" --server="$S"; done
echo "-- the server's log"
sed 's/^kopt serve: eval ([0-9]* arguments) //' "$O/serve.err" | cut -c1-400
