#!/usr/bin/env bash
# kopt serve and kopt eval --server: a served evaluation prints what a local one prints
# (the verdict, the same JSON fields, the exit code), on the client's stdout and stderr, in
# the client's folder and with its KOPT_* settings; errors name what failed; a bad request
# does not stop the server. On a GPU machine the served evaluation runs on the GPU (its
# workers came from the pool); without one both say SKIPPED.
# Usage: test_serve.sh KOPT EXAMPLES_DIR
K=${1:?kopt}; EX=${2:?examples}
T=$(mktemp -d); trap 'kill $SP 2>/dev/null; wait $SP 2>/dev/null; rm -rf "$T"' EXIT
export KOPT_CACHE_DIR=$T/cache; unset KOPT_SERVER
fail=0; ok() { echo "ok   $*"; }; bad() { echo "FAIL $*"; fail=1; }
S=$T/serve.sock
"$K" serve --socket "$S" --idle-exit 120 2> "$T/serve.err" & SP=$!
for _ in $(seq 50); do [ -S "$S" ] && break; sleep 0.1; done
[ -S "$S" ] && ok "kopt serve listens" || { bad "no socket: $(cat "$T/serve.err")"; exit 1; }
for _ in $(seq 50); do grep -q "listening on" "$T/serve.err" && break; sleep 0.1; done
grep -q "listening on $S (4 workers started ahead" "$T/serve.err" && ok "the pool: 4 workers by default" \
  || bad "default pool: $(cat "$T/serve.err")"
"$K" serve --help > "$T/help.txt" 2>&1
grep -q "default 4: two evaluations'" "$T/help.txt" && grep -q "replaced once" "$T/help.txt" &&
  grep -q "ready ones first" "$T/help.txt" && grep -q "fresh" "$T/help.txt" &&
  grep -q "serving" "$T/help.txt" \
  && ok "kopt serve --help describes the pool" || bad "serve --help: $(cat "$T/help.txt")"
for w in 0 9; do
  "$K" serve --socket "$T/w$w.sock" --workers $w > /dev/null 2> "$T/w.err"; c=$?
  [ $c = 2 ] && grep -q "1 to 8 workers" "$T/w.err" && ok "--workers $w refused (exit 2)" \
    || bad "--workers $w: exit $c, $(cat "$T/w.err")"
done

mkdir -p "$T/client" && cd "$T/client" || exit 1
KOPT_DB=$T/client/served.db "$K" eval --server="$S" --json "$EX/softmax" "$EX/softmax/fast.cu" > served.json 2> served.err; sc=$?
KOPT_DB=$T/client/local.db "$K" eval --json "$EX/softmax" "$EX/softmax/fast.cu" > local.json 2> local.err; lc=$?
[ $sc = $lc ] && ok "same exit code ($sc)" || bad "exit codes: served $sc, local $lc"
python3 - served.json local.json <<'PY' && ok "same verdict and fields" || bad "served and local JSON differ"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
assert a["verdict"] == b["verdict"], (a["verdict"], b["verdict"])
assert sorted(a) == sorted(b), set(a) ^ set(b)
assert a["kernels"] == b["kernels"]
print("  verdict", a["verdict"])
PY
[ -s served.db ] && ok "stored where the client's KOPT_DB says" || bad "no store at the client's KOPT_DB"
[ ! -e local.db ] || [ -s local.db ] || bad "local store missing"

KOPT_SERVER=$S "$K" eval "$EX/softmax" missing.cu > miss.out 2> miss.err; c=$?
[ $c = 9 ] && grep -q "missing.cu" miss.err && ok "an error reaches the client's stderr (exit 9)" \
  || bad "missing candidate: exit $c, stderr: $(cat miss.err)"
"$K" eval --server="$T/none.sock" "$EX/softmax" > none.out 2> none.err; c=$?
[ $c = 10 ] && grep -q "no kopt serve answers on $T/none.sock" none.err && ok "no server by name: exit 10, says where" \
  || bad "no server: exit $c, $(cat none.err)"
KOPT_SERVER=$T/none.sock KOPT_DB=$T/client/fallback.db "$K" eval "$EX/softmax" > fb.out 2>&1; c=$?
[ $c = $lc ] && grep -q "^verdict" fb.out && ok "\$KOPT_SERVER with no server: evaluated here" || bad "fallback: exit $c"
python3 -c "
import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b'not json\n'); print(s.recv(100).decode().strip())" "$S" > badreq.txt 2>&1
grep -q '"exit": 2' badreq.txt && ok "a malformed request is refused (exit 2)" || bad "malformed request: $(cat badreq.txt)"
KOPT_DB=$T/client/served.db "$K" eval --server="$S" "$EX/vector_add" > again.out 2>&1; c=$?
[ $c = $lc ] && ok "the server goes on after a bad request" || bad "after a bad request: exit $c"
grep -q "kopt serve: eval ([0-9]* arguments) exit $sc in [0-9]* ms; workers taken: [0-9]* (.*); pool: 4 idle, [0-9]* ready, [0-9]* started in all" "$T/serve.err" \
  && ok "each request's line says the workers it took and the pool after" || bad "serve log: $(cat "$T/serve.err")"
kill -TERM $SP; wait $SP; [ ! -e "$S" ] && ok "SIGTERM stops it and removes the socket" || bad "socket left behind"
grep -q "listening on $S" "$T/serve.err" || bad "serve did not say where it listens"
[ $fail = 0 ] && echo "ktest: serve passed" || echo "ktest: serve FAILED"
exit $fail
