set -u
export KOPT_CACHE_DIR=/tmp/kopt-cache
GPU_TESTS="tests/gpu/test_examples.sh tests/gpu/test_profile.sh" bash bench/gpu_session.sh tests cupti > /tmp/gs.log 2>&1; tail -30 /tmp/gs.log
bash bench/cupti_cost.sh > $OUT/cupti_cost.txt 2>&1; cat $OUT/cupti_cost.txt
build-dev/kopt tune examples/softmax examples/softmax/tune.cu --strategy random --objective time-energy --budget 8 --fresh --no-store --json --no-progress > $OUT/tune_energy.json 2> $OUT/tune_energy.err
python3 -c '
import json; d=json.load(open("'$OUT'/tune_energy.json")); b=d["best"]
print("energy tune:", d["stop"], d["evaluated"], "best", b["label"], b["outcome"]["time_ms"], "ms", b["outcome"]["energy_mj"], "mJ", b["outcome"]["power_w"], "W; pareto", [(p["label"], round(p["outcome"]["time_ms"],4), round(p["outcome"]["energy_mj"],2)) for p in d["pareto"]], "final", d["final_check"])'
tail -2 $OUT/tune_energy.err
