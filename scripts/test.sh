#!/usr/bin/env bash
# Run every test (unit, CLI, GPU) with CTest, then repeat the reason of each skipped test,
# which CTest itself does not print (the GPU tests say "skipped: no GPU" without one).
# Usage: scripts/test.sh [ctest args], e.g. -L unit, or -j 8 (tests side by side, the
# longest first by their COST; the GPU tests that time or profile still run alone:
# RUN_SERIAL). The KernelBench CLI tests also run their own independent steps side by
# side, $KOPT_TEST_JOBS at a time (default: the number of cores; tests/lib/cases.sh).
cd "$(dirname "$0")/.."
ctest --test-dir build --output-on-failure "$@"
rc=$?
log=build/Testing/Temporary/LastTest.log
if [ -f "$log" ]; then
  awk '/^[0-9]+\/[0-9]+ Testing: /{name=$3; said=0} /^ *skipped: / && !said {sub(/^ */, ""); print name ": " $0; said=1}' "$log"
fi
exit $rc
