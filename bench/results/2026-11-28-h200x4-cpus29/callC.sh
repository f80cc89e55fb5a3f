#!/usr/bin/env bash
# device (x4): the suite's last test on waiting-47 (gpu_adversarial), sgemm first runs on 2 GPUs
# with 8/16/24/32 CPUs per GPU (taskset), then optimize --gpus 48 expansions on 1 and 4 GPUs
cd "$(dirname "$0")/.."
export KOPT_WHEEL=$(ls $PWD/dist/*.whl)
timeout 150 bash .carry/suite.sh -j8 --timeout 140 -R "^gpu_adversarial$"
mv $OUT/suite.log $OUT/suiteAdv.log; rm -f $OUT/CTestCostData.txt $OUT/LastTest.log.gz
timeout 160 bash .carry/tunevar.sh "gpus0:0:::" "g2c16:0,1::0-15:" "g2c32:0,1::0-31:" "g2c48:0,1::0-47:" "g2c64:0,1::0-63:" "g4c64:0,1,2,3::0-63:"
s0=$(date +%s)
OPT_ITERS=48 KOPT_BUILD=build-gpu OPT_OUT=$OUT/opt48 timeout 260 bash bench/optimize_gpus.sh > $OUT/opt48.txt 2>&1; echo "opt rc=$? in $(( $(date +%s) - s0 )) s"
cd $OUT && tar czf tvC.tgz tv opt48 && rm -rf tv/*.json tv/*.log opt48/*.db opt48/*.vmstat opt48/*.apps opt48/*.gpu
grep -E "tests passed|Failed|\*\*\*Timeout" $OUT/suiteAdv.log; cat $OUT/tv/summary.txt; tail -12 $OUT/opt48.txt
