#!/usr/bin/env bash
# device: gpu_kb_adversarial (+ torch_zygote unit) on the carried build, then optimize --gpus with worker traces
cd "$(dirname "$0")/.."
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-gpu/CMakeCache.txt)
[ "$src" != "$PWD" ] && [ ! -e "$src" ] && { mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; }
rm -rf build; cp -a build-gpu build; rm -rf build/Testing
s0=$(date +%s)
scripts/test.sh -j4 --timeout 300 -R "gpu_kb_adversarial|unit.test_torch_zygote" > $OUT/suite.log 2>&1; echo "tests rc=$? in $(( $(date +%s) - s0 )) s"
gzip -c build/Testing/Temporary/LastTest.log > $OUT/LastTest.log.gz 2>/dev/null
grep -E "tests passed|\*\*\*|Failed" $OUT/suite.log | tail -5
zcat $OUT/LastTest.log.gz | grep -E "output_other_gpu|^ktest" 
OPT_ITERS=${OPT_ITERS:-16} OPT_OUT=$OUT/opt timeout 300 bash bench/optimize_gpus.sh > $OUT/opt.txt 2>&1
cat $OUT/opt/summary.txt; tail -1 $OUT/opt.txt
cd $OUT && tar czf opt.tgz opt && rm -rf opt
