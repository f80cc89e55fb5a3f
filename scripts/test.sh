#!/usr/bin/env bash
# Run every test (unit, CLI, GPU) with CTest, then repeat the reason of each skipped test,
# which CTest itself does not print (the GPU tests say "skipped: no GPU" without one).
# Usage: scripts/test.sh [ctest args], e.g. -L unit, or -j 3 (tests side by side; the GPU
# tests that time or profile still run alone: RUN_SERIAL)
cd "$(dirname "$0")/.."
ctest --test-dir build --output-on-failure "$@"
rc=$?
log=build/Testing/Temporary/LastTest.log
if [ -f "$log" ]; then
  awk '/^[0-9]+\/[0-9]+ Testing: /{name=$3; said=0} /^ *skipped: / && !said {sub(/^ */, ""); print name ": " $0; said=1}' "$log"
fi
exit $rc
