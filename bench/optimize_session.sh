#!/usr/bin/env bash
# GPU session for issue 13 (kopt optimize), on the device machine from the repository root
# with build/ carried: the demonstrations 1-5 and 7 of the issue with the live evaluator and
# the scripted command: LLM (tests/optimize/scripted_llm.py answering from
# tests/optimize/<example>/: a compile error, a wrong kernel, then correct kernels of
# increasing speed ending at examples/<example>/fast.cu), on softmax and vector_add:
#   1 mcts from the reference to within 10% of fast.cu, the debugger repairing the broken ones
#   2 greedy on the same script, and greedy with --no-tools --no-memory --no-tune
#   3 kill -9 in the middle, --resume: nothing lost, no evaluation repeated
#   4 a propose/evaluate round trip and a manual-mode round trip
#   5 --replay rebuilds the tree without GPU or LLM (same signature)
#   7 kopt's own overhead per iteration (outside LLM and GPU time)
# Usage: bench/optimize_session.sh [EXAMPLE...]   (default: softmax vector_add)
# One example takes several minutes on a GPU: give one per call under a 10-minute limit.
# Env: OPT_EXTRA (more kopt optimize options for every run, e.g. "--no-profile --budget-ms 30"),
# OPT_ITERS (10), OPT_KILL_AFTER (seconds, 25), OPT_EVALUATOR=fake for a dry run of the
# script on a CPU (kernels' scripted outcomes). Outputs and a summary table go to $OUT.
set -u
K=${KOPT_BIN:-$PWD/${KOPT_BUILD:-build}/kopt}
FINAL=${OUT:-/tmp/kopt-out}; O=$FINAL/optimize; mkdir -p "$O"
export KOPT_CACHE_DIR=/tmp/kopt-cache KOPT_PROMPTS=$PWD/prompts
ITERS=${OPT_ITERS:-10}
EV="${OPT_EVALUATOR:+--evaluator $OPT_EVALUATOR} ${OPT_EXTRA:-}"
EXAMPLES=${*:-softmax vector_add}
SCRIPT=tests/optimize/scripted_llm.py
TABLE=$O/table.txt
: > "$TABLE"
# sqlite3's command-line shell is not on every GPU machine: queries through python3
q() { python3 -c 'import sqlite3,sys; [print("|".join("" if v is None else str(v) for v in r)) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])]' "$@"; }
j() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@" 2>/dev/null || echo "?"; }
row() { printf '%-11s %-34s %s\n' "$@" | tee -a "$TABLE"; }

for E in $EXAMPLES; do
  DB=$O/$E.db; rm -f "$DB"*
  LLM="command:python3 $SCRIPT tests/optimize/$E"
  # the example's fast kernel, for the 10% criterion
  $K eval examples/$E examples/$E/fast.cu --json > "$O/$E-fast.json" 2> "$O/$E-fast.err"
  fast=$(j "$O/$E-fast.json" '"%.2f" % (d.get("speedup") or 0)')

  # 1 + 7: mcts, live
  $K optimize $EV examples/$E --db "$DB" --llm "$LLM" --iterations "$ITERS" --json \
    --out "$O/$E-best.cu" > "$O/$E-mcts.json" 2> "$O/$E-mcts.err"
  T=$(j "$O/$E-mcts.json" 'd["tree_id"]')
  best=$(j "$O/$E-mcts.json" '"%.2f" % d["best"]["speedup"]')
  rep=$(j "$O/$E-mcts.json" 'sum(1 for n in d["nodes"] if n["kind"] == "repair" and n.get("verdict") == "OK")')
  fails=$(j "$O/$E-mcts.json" '",".join(sorted(set(n["verdict"] for n in d["nodes"] if n.get("verdict") not in (None, "OK"))))')
  ok10=$(python3 -c "print('yes' if $best >= 0.9 * $fast else 'NO')" 2>/dev/null || echo "?")
  row "$E" "1 mcts best / fast.cu" "${best}x / ${fast}x  within 10%: $ok10; repaired OK: $rep; failures: $fails"
  row "$E" "7 overhead per iteration" "$(j "$O/$E-mcts.json" '"%.2f ms (wall %.0f ms, LLM %.0f ms, GPU %.0f ms)" % (d["stats"]["overhead_ms_per_iter"], d["stats"]["wall_ms"], d["stats"]["llm_ms"], d["stats"]["eval_ms"])')"

  # 5: replay (no GPU, no LLM: CUDA_VISIBLE_DEVICES empty)
  CUDA_VISIBLE_DEVICES= $K optimize --db "$DB" --replay "$T" --json > "$O/$E-replay.json" 2> "$O/$E-replay.err"
  same=$( [ "$(j "$O/$E-replay.json" 'd["signature"]')" = "$(j "$O/$E-mcts.json" 'd["signature"]')" ] && echo yes || echo NO)
  row "$E" "5 replay, same tree" "$same"

  # 2: greedy, and greedy with the ablation switches
  $K optimize $EV examples/$E --db "$DB" --llm "$LLM" --search greedy --iterations "$ITERS" --json \
    > "$O/$E-greedy.json" 2> "$O/$E-greedy.err"
  $K optimize $EV examples/$E --db "$DB" --llm "$LLM" --search greedy --no-tools --no-memory --no-tune \
    --iterations "$ITERS" --json > "$O/$E-ablate.json" 2> "$O/$E-ablate.err"
  row "$E" "2 greedy / greedy ablated" "$(j "$O/$E-greedy.json" '"%.2f" % d["best"]["speedup"]')x / $(j "$O/$E-ablate.json" '"%.2f" % d["best"]["speedup"]')x"

  # 3: kill -9 in the middle, then --resume
  KOPT_SCRIPT_SLEEP=1 $K optimize $EV examples/$E --db "$DB" --llm "$LLM" --iterations "$ITERS" \
    > "$O/$E-killed.txt" 2>&1 &
  pid=$!; sleep "${OPT_KILL_AFTER:-25}"; kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
  TK=$(q "$DB" "SELECT max(tree_id) FROM opt_trees")
  q "$DB" "SELECT node, parent, source_hash, verdict FROM opt_nodes WHERE tree_id=$TK AND state='done' ORDER BY node" > "$O/$E-before.txt"
  $K optimize $EV --db "$DB" --resume "$TK" --llm "$LLM" --json > "$O/$E-resumed.json" 2> "$O/$E-resumed.err"
  q "$DB" "SELECT node, parent, source_hash, verdict FROM opt_nodes WHERE tree_id=$TK AND state='done' ORDER BY node" > "$O/$E-after.txt"
  kept=$(python3 -c "import sys; b=open(sys.argv[1]).read().splitlines(); a=open(sys.argv[2]).read().splitlines(); print('yes (%d of %d nodes before the kill)' % (len(b), len(a)) if a[:len(b)] == b else 'NO')" "$O/$E-before.txt" "$O/$E-after.txt")
  dup=$(q "$DB" "SELECT count(*) FROM (SELECT tag FROM evaluations WHERE tag LIKE 'n%' AND run_id IN (SELECT id FROM runs WHERE id=$TK OR parent_id=$TK) GROUP BY tag HAVING count(*) > 1)")
  row "$E" "3 kill -9 + resume" "nothing lost: $kept; evaluations repeated: $dup; best $(j "$O/$E-resumed.json" '"%.2f" % d["best"]["speedup"]')x"

  # 4: propose / evaluate, three rounds (each evaluate is one GPU call); the tree begins with
  # the reference evaluated (a --propose on a root never evaluated proposes nothing, exit 19)
  $K optimize $EV examples/$E --db "$DB" --evaluate --json > "$O/$E-e0.json" 2> "$O/$E-e0.err"
  TP=$(j "$O/$E-e0.json" 'd["tree_id"]')
  for r in 1 2 3; do
    $K optimize $EV --db "$DB" --resume "$TP" --propose --llm "$LLM" --json > "$O/$E-p$r.json" 2>> "$O/$E-p.err"
    $K optimize $EV --db "$DB" --resume "$TP" --evaluate --json > "$O/$E-e$r.json" 2> "$O/$E-e$r.err"
  done
  row "$E" "4 propose/evaluate x3" "best $(j "$O/$E-e3.json" '"%.2f" % d["best"]["speedup"]')x, pending $(j "$O/$E-e3.json" 'd["stats"]["pending"]')"

  # 4: manual mode, prompts answered by the script through the files
  WD=$O/$E-manual; rm -rf "$WD"
  $K optimize $EV examples/$E --db "$DB" --llm manual --workdir "$WD" --iterations 3 --json > "$O/$E-m0.json" 2> "$O/$E-m.err"
  TM=$(j "$O/$E-m0.json" 'd["tree_id"]'); r=0
  while [ "$(j "$O/$E-m$r.json" 'd["stats"]["waiting"]')" != "0" ] && [ $r -lt 30 ]; do
    python3 $SCRIPT tests/optimize/$E --answer "$WD" > /dev/null
    $K optimize $EV --db "$DB" --resume "$TM" --llm manual --workdir "$WD" --json > "$O/$E-m$((r+1)).json" 2>> "$O/$E-m.err"
    r=$((r+1))
  done
  row "$E" "4 manual round trip" "$r rounds, best $(j "$O/$E-m$r.json" '"%.2f" % d["best"]["speedup"]')x, waiting $(j "$O/$E-m$r.json" 'd["stats"]["waiting"]')"
done
echo; cat "$TABLE"
# one archive: the device tool brings back a limited number of files
tar czf "$FINAL/optimize.tgz" -C "$FINAL" optimize && cp "$TABLE" "$FINAL/table.txt" && rm -rf "$O"
