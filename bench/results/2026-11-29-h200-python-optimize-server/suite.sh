#!/usr/bin/env bash
# On the GPU machine: part R (PyTorch/Python/serve tests) or E (the rest) of the whole suite,
# with the carried build-gpu as build and the carried wheel; full log to $OUT/suite-PART.log.
set -u
cd "$(dirname "$0")/.."
part=${1:?R or E}
if [ -d build-gpu ]; then
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' build-gpu/CMakeCache.txt)
  if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then
    mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; fi
  rm -rf build && mv build-gpu build
fi
export KOPT_WHEEL=$(ls "$PWD"/dist/*.whl | head -1)
P="kb|torch|python|serve_session"
t0=$(date +%s)
case $part in
  R) timeout "${SUITE_LIMIT:-550}" scripts/test.sh -R "$P" ${SUITE_ARGS:-} ;;
  E) timeout "${SUITE_LIMIT:-550}" scripts/test.sh -E "$P" ${SUITE_ARGS:-} ;;
  A) timeout "${SUITE_LIMIT:-550}" scripts/test.sh ${SUITE_ARGS:-} ;;
esac > "$OUT/suite-$part.log" 2>&1
rc=$?
echo "suite $part: rc=$rc in $(( $(date +%s) - t0 )) s"
grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|\*\*\*|Total Test" "$OUT/suite-$part.log" | tail -15
grep -E "Test +#" "$OUT/suite-$part.log" | sort -t' ' -k1 | awk '{print $(NF-1), $4}' | sort -rn | head -8
grep -E ": skipped" "$OUT/suite-$part.log" | head -12
