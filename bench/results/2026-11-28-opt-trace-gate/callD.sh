#!/usr/bin/env bash
# device (x4): suite -R part on waiting-48, then optimize 48 on 1 and 4 GPUs with trace_overlap
cd "$(dirname "$0")/.."
nvidia-smi -L; nproc
export KOPT_WHEEL=$(ls $PWD/dist/*.whl)
timeout 300 bash .carry/suite.sh -j8 --timeout 280 -R "kb|torch|python|serve_session"
mv $OUT/suite.log $OUT/suiteR.log; mv $OUT/LastTest.log.gz $OUT/LastTestR.log.gz; rm -f $OUT/CTestCostData.txt
s0=$(date +%s)
OPT_ITERS=48 KOPT_BUILD=build-gpu timeout 240 bash bench/optimize_gpus.sh > $OUT/optgpus.txt 2>&1
echo "optimize_gpus rc=$? in $(( $(date +%s) - s0 )) s"
python3 bench/probe/trace_overlap.py $OUT/optgpus/g4.evaluations.jsonl > $OUT/overlap4.txt 2>&1
python3 bench/probe/trace_overlap.py $OUT/optgpus/g1.evaluations.jsonl > $OUT/overlap1.txt 2>&1
cd $OUT && tar czf optgpus.tgz optgpus && rm -rf optgpus
tail -8 $OUT/optgpus.txt; cat $OUT/overlap4.txt; echo ---; cat $OUT/overlap1.txt | head -30
