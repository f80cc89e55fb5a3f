#!/usr/bin/env bash
# device (1 GPU): waiting-51 (gate stops waiting when the job comes; call_together; warm):
# optimize 48 on 1 GPU with the gate on and KOPT_GATE=off; gate waits from the traces
cd "$(dirname "$0")/.."
nvidia-smi -L; nproc
for g in on off; do
  s0=$(date +%s)
  if [ $g = off ]; then export KOPT_GATE=off; else unset KOPT_GATE; fi
  OPT_OUT=$OUT/opt-$g OPT_ITERS=48 KOPT_BUILD=build-gpu timeout 150 bash bench/optimize_gpus.sh > $OUT/opt-$g.txt 2>&1
  echo "gate $g: rc=$? in $(( $(date +%s) - s0 )) s"
  python3 bench/probe/trace_overlap.py $OUT/opt-$g/g1.evaluations.jsonl > $OUT/overlap-$g.txt 2>&1
  python3 bench/results/2026-11-28-opt-trace-gate/timeline.py $OUT/opt-$g/g1.evaluations.jsonl --steps > $OUT/steps-$g.txt 2>&1
done
unset KOPT_GATE
cd $OUT && tar czf opt.tgz opt-on opt-off && rm -rf opt-on opt-off
for g in on off; do echo "== gate $g"; grep -E "expansions/min|workers started ahead" $OUT/opt-$g.txt; cat $OUT/steps-$g.txt; grep -iE "gate|census" $OUT/overlap-$g.txt | head -6; done
