#!/usr/bin/env bash
# Live checks of kopt tune on the GPU that the recordings do not cover: two shapes with
# --out (and the written winner evaluated by kopt eval), SIGINT during a live run then
# --resume, profile_guided with static findings, and a short reduce_sum search.
# On the device machine from the repository root with build/ carried (or $KOPT_BUILD); output in $OUT.
set -u
K=${KOPT_BIN:-$PWD/${KOPT_BUILD:-build}/kopt}; O=${OUT:-/tmp/kopt-out}; export KOPT_CACHE_DIR=/tmp/kopt-cache
$K tune examples/softmax examples/softmax/tune.cu --sizes B=8192,N=4096 --sizes B=4096,N=8192 \
  --strategy random --budget 6 --fresh --no-store --out "$O/best.cu" --no-progress 2>&1 | tail -8
$K eval examples/softmax "$O/best-2.cu" --size B=4096 --size N=8192 2>&1 | grep -E "^verdict|^time|candidate"
$K tune examples/softmax examples/softmax/tune.cu --strategy annealing --budget 40 --db /tmp/s.db --no-progress > "$O/int.txt" 2>&1 &
pid=$!; sleep 20; kill -INT $pid; wait $pid; echo "exit after SIGINT: $?"; tail -6 "$O/int.txt"
$K tune examples/softmax examples/softmax/tune.cu --resume --db /tmp/s.db --json --no-progress > "$O/resume.json" 2>"$O/resume.err"
python3 -c 'import json; d=json.load(open("'"$O"'/resume.json")); print("resume:", d["stop"], "stored_before", d["stored_before"], "new", d["evaluated"], "cached", d["cached"], "reevaluated", d["reevaluated"], "best", d["best"]["label"])'
$K tune examples/softmax examples/softmax/tune.cu --strategy profile_guided --budget 6 --fresh --no-store --record "$O/pg.json" --no-progress > /dev/null 2>&1
python3 -c 'import json; d=json.load(open("'"$O"'/pg.json")); print("profile_guided findings:", [(e["params"], [f["tool"] for f in e.get("findings", [])]) for e in d["entries"] if e["state"]=="ok"][:4])'
$K tune examples/reduce_sum examples/reduce_sum/tune.cu --strategy annealing --budget 40 --fresh --no-store --json --no-progress > "$O/reduce.json" 2>/dev/null
python3 -c 'import json; d=json.load(open("'"$O"'/reduce.json")); print("reduce_sum:", d["stop"], d["evaluated"], d["best"]["label"], d["best"]["outcome"]["time_ms"], d["final_check"])'
