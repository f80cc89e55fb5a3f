#!/usr/bin/env bash
# kopt serve on the GPU (docs/eval.md): examples/softmax sent five times back to back and
# twice with a 1 s gap. Each served evaluation is OK, with a seed of its own, and takes two
# workers from the pool, which is at its size again when the evaluation returns (each
# replacement was started when its worker was taken, not after the answer); no worker is
# used twice (14 taken, 14 more started). Nothing is timed here: how ready the taken workers were is
# printed, not judged (bench/serve_b2b.sh times it). Without a GPU: "skipped: no GPU".
# usage: test_serve.sh /path/to/kopt   (from the repo root)
source "$(dirname "$0")/lib.sh" "$1"
S=$TMP/serve.sock
"$K" serve --socket "$S" --idle-exit 300 2> "$TMP/serve.err" & SP=$!
trap 'kill $SP 2>/dev/null; wait $SP 2>/dev/null; rm -rf "$TMP"' EXIT
check() {   # name, condition (0: ok)
  if [ "$2" = 0 ]; then passed=$((passed + 1)); echo "ok    $1"
  else failed=$((failed + 1)); echo "FAIL  $1"; fi
}
for _ in $(seq 100); do [ -S "$S" ] && break; sleep 0.1; done
check "kopt serve listens with 4 workers" \
  "$(grep -q "listening on $S (4 workers" "$TMP/serve.err"; echo $?)"
sleep 2   # the first evaluation, too, finds its workers ready
for i in 1 2 3 4 5 g1 g2; do
  case $i in g*) sleep 1;; esac
  "$K" eval --server="$S" --json examples/softmax examples/softmax/fast.cu > "$TMP/sv_$i.json" 2> "$TMP/sv_$i.err"
done
python3 - "$TMP" <<'PY'
import json, sys
runs = [json.load(open("%s/sv_%s.json" % (sys.argv[1], i))) for i in "1 2 3 4 5 g1 g2".split()]
print("verdicts", " ".join(r["verdict"] for r in runs))
print("seeds", " ".join(str(r["seed"]) for r in runs))
PY
check "7 served evaluations OK" \
  "$(python3 -c 'import json,sys; sys.exit(any(json.load(open(f))["verdict"] != "OK" for f in sys.argv[1:]))' "$TMP"/sv_*.json; echo $?)"
check "each with a fresh seed" \
  "$(python3 -c 'import json,sys; s=[json.load(open(f))["seed"] for f in sys.argv[1:]]; sys.exit(len(set(s)) != len(s))' "$TMP"/sv_*.json; echo $?)"
kill -TERM $SP; wait $SP
grep "kopt serve: eval" "$TMP/serve.err" | sed 's/^/      /'
check "each took 2 workers from the pool" \
  "$([ "$(grep -c 'exit 0 in .* ms; workers taken: 2 (' "$TMP/serve.err")" = 7 ]; echo $?)"
check "the pool at 4 idle when each evaluation returns (refilled at take)" \
  "$([ "$(grep -c 'pool: 4 idle' "$TMP/serve.err")" = 7 ]; echo $?)"
check "a worker used once: 4 + 14 started" \
  "$(tail -n 1 <(grep 'kopt serve: eval' "$TMP/serve.err") | grep -q ', 18 started in all'; echo $?)"
echo "      taken ready (informative, not judged): $(grep -o 'workers taken: 2 ([0-9]* ready' "$TMP/serve.err" | grep -o '[0-9]* ready' | tr '\n' ' ')"
finish
