#!/usr/bin/env bash
# device (x4): concurrency probe of worker steps (1/2/4 GPUs), then the suite's kb/torch/python part on waiting-47
cd "$(dirname "$0")/.."
nvidia-smi -L; nproc; lscpu | grep -E "^(Thread|Core|Socket|NUMA node\(s\))"
timeout 100 python3 .carry/probe_ctx.py 6 $PWD/build-gpu/libkopt.so 2>&1 | tee $OUT/probe.txt
export KOPT_WHEEL=$(ls $PWD/dist/*.whl)
timeout 330 bash .carry/suite.sh -j8 --timeout 300 -R "kb|torch|python|serve_session"
mv $OUT/suite.log $OUT/suiteR.log; mv $OUT/LastTest.log.gz $OUT/LastTestR.log.gz; rm -f $OUT/CTestCostData.txt
cat $OUT/probe.txt
