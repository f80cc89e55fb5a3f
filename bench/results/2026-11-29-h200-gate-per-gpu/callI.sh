#!/usr/bin/env bash
# device (1 GPU): waiting-51 at f924353: part $1 of the whole suite (R or E), then optimize 48
# on 1 GPU with the gate per GPU ($2 = on) or KOPT_GATE=off ($2 = off)
cd "$(dirname "$0")/.."
export KOPT_WHEEL=$(ls $PWD/dist/*.whl)
if [ "$1" = R ]; then timeout 330 bash .carry/suite.sh -j8 --timeout 320 -R "kb|torch|python|serve_session"
else timeout 380 bash .carry/suite.sh -j8 --timeout 360 -E "kb|torch|python|serve_session"; fi
mv $OUT/suite.log $OUT/suite-$1.log; mv $OUT/LastTest.log.gz $OUT/LastTest-$1.log.gz; mv $OUT/CTestCostData.txt $OUT/Cost-$1.txt
g=$2
s0=$(date +%s)
if [ $g = off ]; then export KOPT_GATE=off; else unset KOPT_GATE; fi
OPT_OUT=$OUT/opt-$g OPT_ITERS=48 KOPT_BUILD=build-gpu timeout 150 bash bench/optimize_gpus.sh > $OUT/opt-$g.txt 2>&1
echo "gate $g: rc=$? in $(( $(date +%s) - s0 )) s"
python3 bench/probe/trace_overlap.py $OUT/opt-$g/g1.evaluations.jsonl > $OUT/overlap-$g.txt 2>&1
python3 bench/results/2026-11-28-opt-trace-gate/timeline.py $OUT/opt-$g/g1.evaluations.jsonl --steps > $OUT/steps-$g.txt 2>&1
(cd $OUT && tar czf opt-$g.tgz opt-$g && rm -rf opt-$g)
echo "== gate $g"; grep -E "expansions/min|workers started ahead" $OUT/opt-$g.txt; tail -5 $OUT/steps-$g.txt; grep -iE "gate|census" $OUT/overlap-$g.txt | head -6
