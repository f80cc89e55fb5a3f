#!/usr/bin/env bash
# device: kb/torch/python tests of the suite, then optimize A/B of --overlap (24 expansions)
cd "$(dirname "$0")/.."
export KOPT_WHEEL=$(ls $PWD/dist/*.whl)
timeout 300 bash .carry/suite.sh -j8 --timeout 280 -R "kb|torch|python|serve_session"
mv $OUT/suite.log $OUT/suiteR.log; mv $OUT/LastTest.log.gz $OUT/LastTestR.log.gz; rm -f $OUT/CTestCostData.txt
s0=$(date +%s)
OPT_ITERS=24 timeout 280 bash bench/optimize_ab.sh OPT_ARGS=--overlap > $OUT/ab.txt 2>&1; echo "ab rc=$? in $(( $(date +%s) - s0 )) s"
cat $OUT/ab.txt | tail -40
cd $OUT && tar czf optab.tgz optab && rm -rf optab
