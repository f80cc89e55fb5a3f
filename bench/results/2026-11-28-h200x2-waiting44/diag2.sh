#!/usr/bin/env bash
# device: optimize --gpus (worker traces), then the kb/torch/python tests, on the carried build
cd "$(dirname "$0")/.."
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-gpu/CMakeCache.txt)
[ "$src" != "$PWD" ] && [ ! -e "$src" ] && { mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; }
rm -rf build; cp -a build-gpu build; rm -rf build/Testing
export KOPT_WHEEL=$(ls $PWD/dist/*.whl)
OPT_ITERS=${OPT_ITERS:-24} OPT_OUT=$OUT/opt timeout 200 bash bench/optimize_gpus.sh > $OUT/opt.txt 2>&1
cat $OUT/opt/summary.txt; tail -1 $OUT/opt.txt
cd $OUT && tar czf opt.tgz opt && rm -rf opt; cd - >/dev/null
s0=$(date +%s)
timeout 330 scripts/test.sh -j8 --timeout 300 -R "kb|torch|python|serve_session" > $OUT/suite.log 2>&1; echo "tests rc=$? in $(( $(date +%s) - s0 )) s"
gzip -c build/Testing/Temporary/LastTest.log > $OUT/LastTest.log.gz 2>/dev/null
grep -E "tests passed|\*\*\*|Failed|Timeout" $OUT/suite.log | tail -8
