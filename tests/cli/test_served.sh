#!/usr/bin/env bash
# Evaluations served by a running kopt serve (src/run/run_served.c; --server of kopt bench and
# kopt optimize) on the CPU build of PyTorch: a second kopt bench of the same problem, a new
# process, is evaluated in the server's session and reuses the reference's run, and its
# result is stored in the client's store as the first was; kopt optimize's candidates go to
# the server (its log names each) while the root is evaluated here; --server with no server
# is an error naming the socket, $KOPT_SERVER with none evaluates here; --server with --gpus
# is refused. Prints "skipped: no torch" without PyTorch. Usage: test_served.sh KOPT REPO
set -u
K=${1:?kopt}; REPO=${2:?repo}
T=$(mktemp -d "${TMPDIR:-/tmp}/ktest-served-XXXXXX") || exit 1
SP=""
cleanup() { [ -n "$SP" ] && kill "$SP" 2>/dev/null; wait 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
export KOPT_CACHE_DIR=$T/cache KOPT_DB=$T/kopt.db KOPT_TORCH_DEVICE=cpu KOPT_PROMPTS=$REPO/prompts
export KOPT_TORCH_WORKER=$REPO/libexec/kopt_torch_worker.py
unset KOPT_SERVER
fail=0; ok() { echo "ok   $*"; }; bad() { echo "FAIL $*"; fail=1; }
cd "$T" || exit 1
if ! python3 -c 'import torch' > /dev/null 2>&1; then
  echo "skipped: no torch (pip install torch runs the served evaluations)"
  echo "ktest: served passed"; exit 0
fi
mkdir -p kb cands llm
cp "$REPO/tests/data/kb_small/scale_add.py" kb/
cp "$REPO/tests/data/kb_small/scale_add_new.py" cands/scale_add.py
cp "$REPO/tests/optimize/kb_tanh/1.cu" llm/1.cu
"$K" kb import kb --out p > o 2>&1 || { bad "import: $(cat o)"; exit 1; }
O=(--trials 2 --reps 3:5 --budget-ms 5 --no-compile)
rows() { python3 -c "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])" "$KOPT_DB" "$1"; }

# no server: an error naming the socket, nothing evaluated; $KOPT_SERVER alone: evaluated here
"$K" bench p --candidates cands --server="$T/none.sock" "${O[@]}" > o 2> e; c=$?
if [ $c = 10 ] && grep -q "no kopt serve answers on $T/none.sock" e; then
  ok "bench --server with no server: exit 10, the socket named"
else bad "bench --server, no server: exit $c $(cat e)"; fi
KOPT_SERVER=$T/none.sock "$K" bench p --candidates cands "${O[@]}" > o 2> e; c=$?
if [ $c = 0 ] && grep -q "1 correct" o; then ok "\$KOPT_SERVER with no server: evaluated here"
else bad "\$KOPT_SERVER, no server: exit $c $(tail -3 o) $(cat e)"; fi
"$K" optimize p/scale_add --server="$T/none.sock" --gpus 0 --iterations 1 > o 2> e; c=$?
if [ $c = 2 ] && grep -q -- "--server with --gpus" e; then ok "optimize --server --gpus: refused"
else bad "optimize --server --gpus: exit $c $(cat e)"; fi

"$K" serve --socket "$T/s.sock" --idle-exit 200 2> serve.err & SP=$!
for _ in $(seq 100); do grep -q "listening on" serve.err 2>/dev/null && break; sleep 0.1; done
before=$(rows "select count(*) from evaluations")
"$K" bench p --candidates cands --server="$T/s.sock" "${O[@]}" > b1 2> b1.err; c1=$?
"$K" bench p --candidates cands --server="$T/s.sock" "${O[@]}" > b2 2> b2.err; c2=$?
after=$(rows "select count(*) from evaluations")
reused=$(rows "select json_extract(result_json, '$.reference_reused') from evaluations order by id desc limit 1")
n_served=$(grep -c "kopt serve: eval" serve.err)
if [ $c1 = 0 ] && [ $c2 = 0 ] && grep -q "1 correct" b1 && grep -q "1 correct" b2 &&
   [ "$n_served" = 2 ] && grep -q "evaluation 1, reference run" serve.err &&
   grep -q "evaluation 2, reference reused" serve.err && [ $((after - before)) = 2 ] &&
   [ "$reused" = 1 ]; then
  ok "two kopt bench processes: one server session, the second reused the reference; both stored here"
else bad "bench --server: exit $c1/$c2, served $n_served, stored $((after - before)), reused '$reused'
$(cat serve.err) $(tail -3 b2) $(cat b2.err)"; fi

# optimize: the root here, its candidates in the server (host-mode kernels: compiled and
# SKIPPED without a GPU, on the server as here)
"$K" optimize p/scale_add --server="$T/s.sock" --iterations 1 "${O[@]:0:6}" \
  --llm "command:python3 $REPO/tests/optimize/scripted_llm.py $T/llm" > opt 2> opt.err; c=$?
n_opt=$(( $(grep -c "kopt serve: eval" serve.err) - n_served ))
tagged=$(rows "select count(*) from evaluations where tag like 'n%' and tag != 'n0'")
if [ $c = 0 ] && [ "$n_opt" -ge 1 ] && [ "$tagged" = "$n_opt" ]; then
  ok "optimize --server: $n_opt candidate(s) evaluated by the server, stored here with their nodes"
else bad "optimize --server: exit $c, served $n_opt, stored $tagged $(tail -5 opt.err)"; fi

[ $fail = 0 ] && echo "ktest: served passed" || { echo "ktest: served FAILED"; exit 1; }
