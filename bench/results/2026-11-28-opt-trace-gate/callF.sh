#!/usr/bin/env bash
# device (x2 or x4): optimize 48 on 1 and N GPUs, host gate on (default) and off, with trace_overlap
cd "$(dirname "$0")/.."
nvidia-smi -L; nproc
for g in on off; do
  s0=$(date +%s)
  if [ $g = off ]; then export KOPT_GATE=off; else unset KOPT_GATE; fi
  OPT_OUT=$OUT/opt-$g OPT_ITERS=48 KOPT_BUILD=build-gpu timeout 270 bash bench/optimize_gpus.sh > $OUT/opt-$g.txt 2>&1
  echo "gate $g: optimize_gpus rc=$? in $(( $(date +%s) - s0 )) s"
  for f in $OUT/opt-$g/g*.evaluations.jsonl; do python3 bench/probe/trace_overlap.py $f; done > $OUT/overlap-$g.txt 2>&1
done
unset KOPT_GATE
cd $OUT && tar czf opt.tgz opt-on opt-off && rm -rf opt-on opt-off
for g in on off; do echo "== gate $g"; grep -E "expansions/min|speed-up" $OUT/opt-$g.txt; cat $OUT/overlap-$g.txt; done
