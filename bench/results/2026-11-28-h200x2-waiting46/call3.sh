#!/usr/bin/env bash
# device: digest probe, kb/torch/python suite, optimize A/B of KOPT_WORKER_WARM (waiting-46)
cd "$(dirname "$0")/.."
export KOPT_WHEEL=$(ls $PWD/dist/*.whl)
timeout 60 python3 bench/probe/digest_first.py > $OUT/digest_first.txt 2>&1; cat $OUT/digest_first.txt
timeout 300 bash .carry/suite.sh -j8 --timeout 280 -R "kb|torch|python|serve_session"
mv $OUT/suite.log $OUT/suiteR.log; mv $OUT/LastTest.log.gz $OUT/LastTestR.log.gz; rm -f $OUT/CTestCostData.txt
s0=$(date +%s)
OPT_ITERS=24 timeout 230 bash bench/optimize_ab.sh KOPT_WORKER_WARM=0 > $OUT/ab.txt 2>&1; echo "ab rc=$? in $(( $(date +%s) - s0 )) s"
grep -E "^==|^g[12] |evaluations, mean|candidate worker|speed-up" $OUT/ab.txt
cd $OUT && tar czf optab.tgz optab && rm -rf optab
