#!/usr/bin/env bash
# kopt serve on the GPU (docs/eval.md): examples/softmax sent five times back to back and
# twice with a 1 s gap, then a candidate wrong at the check sizes. Each served evaluation
# is OK, with a seed of its own; the first takes two workers from the pool and its
# reference's becomes the pool's serving worker, in which every later evaluation runs its
# reference (reference_served), taking only the candidate's worker; the pool is at its
# size again when each evaluation returns (replacements started before the answer); no
# candidate's worker is used twice (4 + 2 + 7 started); the wrong candidate is still WRONG
# against the served reference. Nothing is timed here: how ready the taken workers were is
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
"$K" eval --server="$S" --json examples/softmax tests/gpu/candidates/softmax_wrong_second_size.cu \
  > "$TMP/wrong.json" 2> "$TMP/wrong.err"
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
check "every reference in the pool's serving worker" \
  "$(python3 -c 'import json,sys; sys.exit(not all(json.load(open(f))["reference_served"] for f in sys.argv[1:]))' "$TMP"/sv_*.json; echo $?)"
check "the first took 2 workers from the pool, the next ones 1 (the candidate's)" \
  "$([ "$(grep -c 'exit 0 in .* ms; workers taken: 2 (' "$TMP/serve.err")" = 1 ] &&
     [ "$(grep -c 'exit 0 in .* ms; workers taken: 1 (' "$TMP/serve.err")" = 6 ]; echo $?)"
check "the pool at 4 idle when each evaluation returns" \
  "$([ "$(grep -c 'pool: 4 idle' "$TMP/serve.err")" = 8 ]; echo $?)"
check "a candidate's worker used once: 4 + 2 + 7 started" \
  "$(tail -n 1 <(grep 'kopt serve: eval' "$TMP/serve.err") | grep -q ', 13 started in all'; echo $?)"
# right at the benchmark size, wrong at the check size: test_planted.sh expects the same verdict
echo "      wrong candidate: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["verdict"], d.get("reference_served"))' "$TMP/wrong.json")"
check "a wrong candidate is SHAPE_SPECIFIC against the served reference" \
  "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d["verdict"] == "SHAPE_SPECIFIC" and d["reference_served"]))' "$TMP/wrong.json"; echo $?)"
echo "      taken ready (informative, not judged): $(grep -o 'workers taken: [12] ([0-9]* ready' "$TMP/serve.err" | grep -o '[0-9]* ready' | tr '\n' ' ')"
finish
