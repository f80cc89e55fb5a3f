#!/usr/bin/env bash
# kopt eval --server --session: evaluation sessions kept by kopt serve between requests, on
# the CPU build of PyTorch (KOPT_TORCH_DEVICE=cpu, as test_kb.sh; a small imported problem,
# --no-compile): the first request of a session runs the reference, the next reuse it (the
# same seed); another plan (--size) or another name opens a session of its own; --sessions
# bounds them (the least recently used closed), --session-idle closes idle ones; a request
# without --session is the one-shot evaluation (fresh seed each time, no session); --session
# without a server is a usage error. Prints "skipped: no torch" where PyTorch is missing.
# Usage: test_serve_session.sh KOPT REPO
set -u
K=${1:?kopt}; REPO=${2:?repo}
T=$(mktemp -d "${TMPDIR:-/tmp}/ktest-serve-session-XXXXXX") || exit 1
SPS=()
cleanup() { for p in "${SPS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
export KOPT_CACHE_DIR=$T/cache KOPT_DB=$T/kopt.db KOPT_TORCH_DEVICE=cpu
export KOPT_TORCH_WORKER=$REPO/libexec/kopt_torch_worker.py
unset KOPT_SERVER
fail=0; ok() { echo "ok   $*"; }; bad() { echo "FAIL $*"; fail=1; }
cd "$T" || exit 1

# -- without a server: --session is a usage error (before anything is loaded or run)
"$K" eval --session "$T/none" "$T/none.py" > o 2> e; c=$?
[ $c = 2 ] && grep -q -- "--session evaluates in a session that \`kopt serve\` keeps" e &&
  grep -q -- "--server" e && ok "--session without a server: usage error (exit 2), says why" \
  || bad "--session without a server: exit $c, $(cat e)"
"$K" eval --help > help.txt 2>&1
grep -q -- "--session\[=NAME\]" help.txt && grep -q "not a" help.txt && grep -q "final verdict" help.txt \
  && ok "kopt eval --help describes --session" || bad "eval --help: $(grep -A6 -- --session help.txt)"
"$K" serve --help > shelp.txt 2>&1
grep -q -- "--sessions N" shelp.txt && grep -q -- "--session-idle S" shelp.txt &&
  grep -q "least" shelp.txt && grep -q "recently used is closed" shelp.txt \
  && ok "kopt serve --help describes sessions" || bad "serve --help: $(cat shelp.txt)"
for n in 0 17 x; do
  "$K" serve --socket "$T/n.sock" --sessions $n > /dev/null 2> e; c=$?
  [ $c = 2 ] && grep -q "1 to 16 sessions" e && ok "--sessions $n refused (exit 2)" || bad "--sessions $n: exit $c, $(cat e)"
done
"$K" serve --socket "$T/n.sock" --session-idle 0 > /dev/null 2> e; c=$?
[ $c = 2 ] && ok "--session-idle 0 refused (exit 2)" || bad "--session-idle 0: exit $c, $(cat e)"

if ! python3 -c 'import torch' > /dev/null 2>&1; then
  echo "skipped: no torch (pip install torch runs the session evaluations)"
  [ $fail = 0 ] && echo "ktest: serve_session passed" || echo "ktest: serve_session FAILED"
  exit $fail
fi
"$K" kb import "$REPO/bench/kernelbench/problems/3_scale_add.py" --out "$T/p" > o 2>&1 \
  || { bad "import: $(cat o)"; exit 1; }
P=$T/p/3_scale_add
cat > good.py <<'PY'
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        return torch.addcmul(z, x, torch.full_like(x, alpha))
PY
cat > wrong.py <<'PY'
import torch
class ModelNew(torch.nn.Module):
    def forward(self, x, z, alpha):
        return alpha * z + x
PY
SZ=(--size batch=64 --size width=96 --trials 2 --no-compile --reps 3:5 --budget-ms 5)

serve() {   # serve SOCKET LOG ARGS...: start kopt serve, wait until it listens
  local s=$1 log=$2; shift 2
  "$K" serve --socket "$s" --idle-exit 300 "$@" 2> "$log" & SPS+=($!)
  for _ in $(seq 100); do grep -q "listening on" "$log" 2>/dev/null && return 0; sleep 0.1; done
  bad "kopt serve $*: $(cat "$log")"; return 1
}
# the result's session, seed and reference_reused as one line: "NAME K REUSED SEED VERDICT"
# ("none" when the result has no session)
summary() {
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = d.get("session")
print(" ".join(str(x) for x in ([s["name"], s["evaluations"], s["reference_reused"]] if s else ["none"]) +
      [d["seed"], d["reference_reused"], d["verdict"]]))' "$1" 2> /dev/null || echo "unreadable $(head -c 300 "$1")"
}

# -- server A: the default table (2 sessions)
SA=$T/a.sock; serve "$SA" "$T/a.err" || exit 1
"$K" eval --server="$SA" --session --json "$P" good.py "${SZ[@]}" > r1.json 2> r1.err; c1=$?
read -r n1 k1 u1 seed1 ru1 v1 <<< "$(summary r1.json)"
[ $c1 = 0 ] && [ "$n1 $k1 $u1 $ru1 $v1" = "default 1 False False OK" ] \
  && ok "the first --session request opens the session: the reference runs (evaluation 1)" \
  || bad "first session request: exit $c1, $(summary r1.json), $(cat r1.err)"
"$K" eval --server="$SA" --session "$P" good.py "${SZ[@]}" > r2.txt 2> r2.err; c2=$?
[ $c2 = 0 ] && grep -q "^session    default, evaluation 2: the reference's outputs and time from its first run, seed $seed1 fixed for the session" r2.txt &&
  grep -q "^verify     .* (seed $seed1)" r2.txt && grep -q "^stored     evaluation #" r2.txt && grep -q "^verdict    OK" r2.txt \
  && ok "the second reuses the reference's run, at the session's seed (text: its line; stored)" \
  || bad "second session request: exit $c2, $(cat r2.txt r2.err)"
"$K" eval --server="$SA" --session --json "$P" wrong.py "${SZ[@]}" > r3.json 2> r3.err; c3=$?
read -r n3 k3 u3 seed3 ru3 v3 <<< "$(summary r3.json)"
[ $c3 = 1 ] && [ "$n3 $k3 $u3 $seed3 $ru3 $v3" = "default 3 True $seed1 True WRONG" ] \
  && ok "a wrong candidate in the session is WRONG against the reused reference (every check kept)" \
  || bad "wrong in session: exit $c3, $(summary r3.json)"
"$K" eval --server="$SA" --session --json "$P" good.py --size batch=32 --size width=96 --trials 2 --no-compile --reps 3:5 --budget-ms 5 > r4.json 2> r4.err; c4=$?
read -r n4 k4 u4 seed4 ru4 v4 <<< "$(summary r4.json)"
[ $c4 = 0 ] && [ "$n4 $k4 $u4 $ru4 $v4" = "default 1 False False OK" ] && [ "$seed4" != "$seed1" ] &&
  python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["sizes"]["batch"] == 32' r4.json \
  && ok "another --size with the same name opens a session of its own (reference run, its own seed)" \
  || bad "another plan: exit $c4, $(summary r4.json)"
"$K" eval --server="$SA" --session --json "$P" good.py "${SZ[@]}" > r5.json 2> r5.err; c5=$?
read -r n5 k5 u5 seed5 ru5 v5 <<< "$(summary r5.json)"
[ $c5 = 0 ] && [ "$n5 $k5 $u5 $seed5 $ru5 $v5" = "default 4 True $seed1 True OK" ] \
  && ok "the first plan's session is still open beside it (--sessions 2): evaluation 4, reused" \
  || bad "back to the first plan: exit $c5, $(summary r5.json)"
for i in 1 2; do "$K" eval --server="$SA" --json "$P" good.py "${SZ[@]}" > n$i.json 2> n$i.err; done
read -r nn1 s1 r1x v1x <<< "$(summary n1.json)"; read -r nn2 s2 r2x v2x <<< "$(summary n2.json)"
[ "$nn1 $r1x $v1x" = "none False OK" ] && [ "$nn2 $r2x $v2x" = "none False OK" ] && [ "$s1" != "$s2" ] &&
  [ "$s1" != "$seed1" ] && [ "$s2" != "$seed1" ] \
  && ok "requests without --session: one-shot, no session, a fresh seed each time" \
  || bad "without --session: $(summary n1.json) / $(summary n2.json)"
"$K" eval --server="$SA" --session "$P" > o 2> e; c=$?
[ $c = 2 ] && grep -q -- "--session evaluates candidates" e \
  && ok "--session with no candidate: usage error (exit 2)" || bad "--session without a candidate: exit $c, $(cat e)"
"$K" eval --server="$SA" --session='bad name' "$P" good.py > o 2> e; c=$?
[ $c = 2 ] && grep -q "bad session name" e && ok "a bad session name: usage error" || bad "bad name: exit $c, $(cat e)"
grep -q "session default opened; session default: evaluation 1, reference run" "$T/a.err" &&
  grep -q "session default: evaluation 2, reference reused" "$T/a.err" \
  && ok "the server's request lines say what each did with the sessions" || bad "serve log: $(cat "$T/a.err")"

# -- server B: --sessions 1, names: another name opens its own session and closes the first
SB=$T/b.sock; serve "$SB" "$T/b.err" --sessions 1 || exit 1
"$K" eval --server="$SB" --session=a --json "$P" good.py "${SZ[@]}" > b1.json 2>&1
"$K" eval --server="$SB" --session=b --json "$P" good.py "${SZ[@]}" > b2.json 2>&1
"$K" eval --server="$SB" --session=a --json "$P" good.py "${SZ[@]}" > b3.json 2>&1
read -r bn1 bk1 bu1 bs1 _ <<< "$(summary b1.json)"; read -r bn2 bk2 bu2 bs2 _ <<< "$(summary b2.json)"
read -r bn3 bk3 bu3 bs3 _ <<< "$(summary b3.json)"
[ "$bn1 $bk1 $bu1" = "a 1 False" ] && [ "$bn2 $bk2 $bu2" = "b 1 False" ] && [ "$bs1" != "$bs2" ] \
  && ok "another name, same plan: a session of its own" || bad "names: $(summary b1.json) / $(summary b2.json)"
[ "$bn3 $bk3 $bu3" = "a 1 False" ] && [ "$bs3" != "$bs1" ] &&
  grep -q "session a closed (the least recently used of --sessions 1, after 1 evaluation)" "$T/b.err" \
  && ok "--sessions 1: opening b closed a (least recently used); a opens again, the reference run again" \
  || bad "eviction: $(summary b3.json); $(cat "$T/b.err")"

# -- server C: --session-idle 1 closes an idle session (its workers end)
SC=$T/c.sock; serve "$SC" "$T/c.err" --session-idle 1 || exit 1
"$K" eval --server="$SC" --session=idle --json "$P" good.py "${SZ[@]}" > c1.json 2>&1
read -r cn1 ck1 _ <<< "$(summary c1.json)"
for _ in $(seq 50); do grep -q "session idle closed after" "$T/c.err" && break; sleep 0.1; done
[ "$cn1 $ck1" = "idle 1" ] && grep -q "kopt serve: session idle closed after [0-9]* s idle (1 evaluation)" "$T/c.err" \
  && ok "--session-idle 1: the idle session is closed" || bad "idle: $(summary c1.json); $(cat "$T/c.err")"

for p in "${SPS[@]}"; do kill -TERM "$p"; wait "$p"; done; SPS=()
grep -q "kopt serve: stopped" "$T/a.err" && ok "the server stops with sessions open" || bad "stop: $(cat "$T/a.err")"
[ $fail = 0 ] && echo "ktest: serve_session passed" || echo "ktest: serve_session FAILED"
exit $fail
