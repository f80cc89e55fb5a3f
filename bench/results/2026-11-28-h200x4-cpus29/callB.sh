#!/usr/bin/env bash
# device (x4): the probe, sgemm first-run variants, then the rest of the suite on waiting-47
cd "$(dirname "$0")/.."
timeout 100 python3 .carry/probe_ctx.py 6 $PWD/build-gpu/libkopt.so > $OUT/probe.txt 2>&1
timeout 150 bash .carry/tunevar.sh "gpus0:0::" "g4def:0,1,2,3::" "g4ct40:0,1,2,3:40:" "g4ct48:0,1,2,3:48:" "g4nice19:0,1,2,3::KOPT_COMPILE_NICE=19"
export KOPT_WHEEL=$(ls $PWD/dist/*.whl)
timeout 400 bash .carry/suite.sh -j8 --timeout 380 -E "kb|torch|python|serve_session"
cd $OUT && tar czf tv.tgz tv && rm -rf tv/*.json tv/*.log
cat $OUT/probe.txt; cat $OUT/tv/summary.txt
