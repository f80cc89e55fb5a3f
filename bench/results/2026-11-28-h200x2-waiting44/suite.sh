#!/usr/bin/env bash
# device: run the suite from the carried build-gpu (as build/), results to $OUT
cd "$(dirname "$0")/.."
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-gpu/CMakeCache.txt)
[ "$src" != "$PWD" ] && [ ! -e "$src" ] && { mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; }
rm -rf build; cp -a build-gpu build; rm -rf build/Testing   # as a fresh machine: no cost data of the CPU machine
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
free -g | head -2; nproc
s0=$(date +%s)
scripts/test.sh "$@" > $OUT/suite.log 2>&1; rc=$?
echo "suite rc=$rc in $(( $(date +%s) - s0 )) s"
cp build/Testing/Temporary/CTestCostData.txt $OUT/ 2>/dev/null
gzip -c build/Testing/Temporary/LastTest.log > $OUT/LastTest.log.gz 2>/dev/null
grep -E "tests passed|Total Test time|\*\*\*|Failed|Timeout" $OUT/suite.log | tail -30
grep -E "^ *[0-9]+/[0-9]+ Test" $OUT/suite.log | awk '{print $NF, $(NF-1), $4}' | sort -rn | head -20
