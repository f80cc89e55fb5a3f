#!/usr/bin/env bash
# On the GPU machine, from the repo root: the whole suite (or part of it) with the CPU
# machine's build carried as build-gpu (moved to build, its source folder linked where the
# CMake cache expects it) and the carried wheel (dist/) for test_wheel. Usage:
#   SUITE_ARGS="-j 6" SUITE_LIMIT=550 bash bench/gpu_suite.sh A     every test
#   ... bash bench/gpu_suite.sh R | E     the PyTorch/Python/serve tests | the rest
#   ... bash bench/gpu_suite.sh 'REGEX'   the tests whose names match REGEX
# Full log in $OUT/suite-LABEL.log; a short summary last.
set -u
cd "$(dirname "$0")/.."
: "${OUT:=/tmp/kopt-out}"
part=${1:?A, R, E or a test-name regex}
carried=${SUITE_CARRIED:-build-gpu}     # the carried build folder, if any
if [ -d "$carried" ]; then
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$carried/CMakeCache.txt")
  if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then
    mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; fi
  rm -rf build && mv "$carried" build
fi
export KOPT_WHEEL=$(ls "$PWD"/dist/*.whl 2>/dev/null | head -1)
P="kb|torch|python|serve_session"
case $part in
  A) label=A; sel=() ;;
  R) label=R; sel=(-R "$P") ;;
  E) label=E; sel=(-E "$P") ;;
  *) label=sel; sel=(-R "$part") ;;
esac
t0=$(date +%s)
timeout "${SUITE_LIMIT:-550}" scripts/test.sh "${sel[@]}" ${SUITE_ARGS:-} > "$OUT/suite-$label.log" 2>&1
rc=$?
echo "suite $label: rc=$rc in $(( $(date +%s) - t0 )) s"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|\*\*\*|Total Test" "$OUT/suite-$label.log" | tail -15
grep -E "Test +#" "$OUT/suite-$label.log" | awk '{print $(NF-1), $4}' | sort -rn | head -8
grep -E ": skipped" "$OUT/suite-$label.log" | head -12
