#!/usr/bin/env bash
# The recorded KernelBench run (issue 28: five level-1/level-2 problems, a frontier model
# answering through manual mode, mcts with 2 proposals, 3 rounds on an H100;
# bench/results/2026-11-27-h100-kb-manual) replayed without a GPU or a model: each tree is
# rebuilt by `kopt optimize --replay T PROBLEM --llm replay:T@order` from the recorded store
# (tests/data/kb_run/kb.db.gz: its replies in order, role by role; its outcomes by source
# hash) and must come out node
# for node as recorded (id, parent, kind, state, verdict, source hash, time) with the same
# best node; the only nodes beyond the recording may be unanswered repairs of candidates
# that failed in the last round (their debugger was never asked in the recording). A regression test of the search: a change in selection, expansion, repair or
# backup shows here. The store and problems are kopt's restatements of the KernelBench
# files (tests/data/kb_run/README.md). Usage: test_kb_replay.sh KOPT REPO
set -u
K=${1:?kopt}; REPO=${2:?repo}
D=$REPO/tests/data/kb_run
T=$(mktemp -d "${TMPDIR:-/tmp}/ktest-kbreplay-XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
export KOPT_CACHE_DIR=$T/cache KOPT_PROMPTS=$REPO/prompts
unset KOPT_SERVER KOPT_DB
fail=0 n=0
while IFS=$'\t' read -r tree problem expansions; do
  n=$((n + 1))
  gzip -dc "$D/kb.db.gz" > "$T/kb.db"
  "$K" optimize --replay "$tree" "$D/problems/$problem" --llm "replay:$tree@order" --rounds \
    --iterations "$expansions" --db "$T/kb.db" --json > "$T/$tree.json" 2> "$T/$tree.err"
  rc=$?
  if msg=$(python3 - "$D/trees.json" "$tree" "$T/$tree.json" <<'PY'
import json, sys
want = next(t for t in json.load(open(sys.argv[1])) if t["tree"] == int(sys.argv[2]))
got = json.load(open(sys.argv[3]))
keys = ("id", "parent", "kind", "state", "verdict", "hash")
g = {n["id"]: n for n in got["nodes"]}
diff = []
for w in want["nodes"]:
    h = g.get(w["id"])
    if h is None:
        diff.append("node %d missing" % w["id"]); continue
    for k in keys:
        if h.get(k) != w.get(k):
            diff.append("node %d %s: %r, recorded %r" % (w["id"], k, h.get(k), w.get(k)))
    if abs((h.get("time_ms") or 0) - (w.get("time_ms") or 0)) > 1e-9 * max(1, w.get("time_ms") or 0):
        diff.append("node %d time %r, recorded %r" % (w["id"], h.get("time_ms"), w.get("time_ms")))
# Beyond the recording: only the repairs the search asks for after the last evaluated
# round (a failed candidate's debugger, never answered in the recording): no reply.
recorded = {w["id"]: w for w in want["nodes"]}
for h in got["nodes"]:
    if h["id"] in recorded:
        continue
    p = recorded.get(h["parent"]) or g.get(h["parent"], {})
    if h["kind"] != "repair" or h.get("verdict") != "no_reply" or p.get("verdict") == "OK":
        diff.append("node %d (%s, %s of n%s) is not in the recording" % (
            h["id"], h["kind"], h.get("verdict"), h["parent"]))
if (got.get("best") or {}).get("id") != want["best"]:
    diff.append("best %r, recorded %r" % ((got.get("best") or {}).get("id"), want["best"]))
print("; ".join(diff[:4]) if diff else "%d nodes, best n%s" % (len(want["nodes"]), want["best"]))
sys.exit(1 if diff else 0)
PY
  ) && [ $rc = 0 ]; then
    echo "ok   tree $tree ($problem): rebuilt as recorded: $msg"
  else
    echo "FAIL tree $tree ($problem): exit $rc: $msg $(tail -2 "$T/$tree.err")"; fail=1
  fi
done < <(python3 -c '
import json, sys
for t in json.load(open(sys.argv[1])):
    print("%d\t%s\t%d" % (t["tree"], t["problem"], t["expansions"]))' "$D/trees.json")
[ "$n" -ge 5 ] || { echo "FAIL only $n recorded trees in $D/trees.json"; fail=1; }
echo "ktest: kb replay $([ $fail = 0 ] && echo passed || echo FAILED)"
exit $fail
