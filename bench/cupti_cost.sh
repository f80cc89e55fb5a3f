#!/usr/bin/env bash
# Where the CUPTI roofline set's time goes (issue 4, goal < 100 ms per candidate once set
# up): for a few candidates, the roofline set, a hardware-counter-only set and a
# SASS-instrumented-only set, each bracketed 5 times in one worker (--repeat 5): the first
# bracket's steps, and the median of the later brackets. Usage, on the GPU machine from the
# repository root with build/ carried (or $KOPT_BUILD): bash bench/cupti_cost.sh > OUT.txt
K=${KOPT_BIN:-$PWD/${KOPT_BUILD:-build}/kopt}
HW=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__inst_executed_pipe_tensor.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_pipe_fp64.sum
SASS=smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum
for pc in softmax:fast vector_add:reference sgemm:fast transpose:fast; do
  p=${pc%%:*}; c=examples/$p/${pc##*:}.cu
  for variant in roofline hw sass; do
    case $variant in
      roofline) args=(--set roofline);;
      hw) args=(--metrics "$HW");;
      sass) args=(--metrics "$SASS");;
    esac
    $K profile examples/$p "$c" --json --no-store --repeat 5 "${args[@]}" > /tmp/cc.json 2>/tmp/cc.err
    python3 - "$p" "$variant" /tmp/cc.json <<'PY'
import json, sys
p, v, f = sys.argv[1:]
try:
    d = json.load(open(f))
    for s in d.get("metric_sets", []):
        st = s["steps_ms"]
        print("%-10s %-9s passes=%d open=%.0f | first bracket: begin=%.0f launches+sync=%.0f stop=%.0f decode=%.0f eval=%.0f collect=%.0f | later brackets (median)=%s ms  kernel=%.3f ms" % (
            p, v, s["passes"], s["setup_ms"], st[0], st[1], st[2], st[3], st[4], s["collect_ms"],
            "%.1f" % s["repeat_ms"] if s.get("repeat_ms") else "-", d.get("median_ms", 0)))
    if not d.get("metric_sets"):
        print(p, v, "no sets:", d.get("metrics_note"))
except Exception as e:
    print(p, v, "failed:", e, open(f).read()[:300])
PY
  done
done
