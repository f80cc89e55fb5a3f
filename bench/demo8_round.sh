#!/usr/bin/env bash
# Issue 13, demonstration 8: a frontier model (a helper agent of the session, playing the
# LLM through manual mode) in the loop. This is the GPU half of one round: evaluate every
# pending node of the manual trees (round 0: create them from the naive references).
# The CPU half, here: kopt optimize --resume T --llm manual --propose --db DB --workdir W,
# with the replies written beside the prompts. Run on the device machine from the repo root
# with build/ carried:  bash bench/demo8_round.sh ROUND
# The store travels in the tree ($D/demo8.db); the updated copy comes back in $OUT.
set -u
R=${1:?round}; D=${DEMO_DIR:-bench/results/2026-11-25-demo8}; K=$PWD/${KOPT_BUILD:-build}/kopt
FINAL=${OUT:-/tmp/kopt-out}; mkdir -p "$FINAL"
export KOPT_CACHE_DIR=/tmp/kopt-cache KOPT_PROMPTS=$PWD/prompts
DB=/tmp/demo8.db; rm -f $DB*; [ -f "$D/demo8.db" ] && cp "$D/demo8.db" $DB
t=1
for E in softmax layernorm; do
  if [ "$R" = 0 ]; then
    $K optimize examples/$E --llm manual --evaluate --db $DB --workdir "$D/$E" --json \
      > "$FINAL/r$R-$E.json" 2> "$FINAL/r$R-$E.err"
  else
    $K optimize --resume $t --llm manual --evaluate --db $DB --workdir "$D/$E" --json \
      > "$FINAL/r$R-$E.json" 2> "$FINAL/r$R-$E.err"
  fi
  echo "$E (tree $t) exit $?: $(grep -E '^best|^stop' "$FINAL/r$R-$E.err" | tr '\n' ' ')"
  t=$((t + 1))
done
cp $DB "$FINAL/demo8.db"
for E in softmax layernorm; do sed -n '/^path:/,/^kopt overhead/p' "$FINAL/r$R-$E.err"; done
