#!/usr/bin/env bash
# Every test of the build is in one of place.cmake's lists (alone, serial, cpu, shared), in
# exactly one, and every name there is a test: a new test that nobody placed would share a
# GPU with a test that times it. usage: test_placement.sh BUILD_DIR
set -u
here=$(cd "$(dirname "$0")" && pwd)
# listed from a copy of the build's test files: `ctest -N` in the build folder itself would
# rewrite its Testing/Temporary/LastTest.log while the suite runs, and scripts/test.sh reads
# the skipped tests' reasons from that log
copy=$(mktemp -d); trap 'rm -rf "$copy"' EXIT
(cd "$1" && find . -name CTestTestfile.cmake -exec cp --parents {} "$copy" \;)
tests=$(ctest --test-dir "$copy" -N | sed -n 's/^ *Test *#[0-9]*: //p' | sort)
listed=$(sed -n '/^set(kopt_\(alone\|serial\|cpu\|shared\)/,/)/p' "$here/place.cmake" |
         sed 's/^set(kopt_[a-z]*//; s/)//; s/#.*//' | tr -s ' \n' '\n\n' | sed '/^$/d' | sort)
fail=0
for t in $(comm -23 <(echo "$tests") <(echo "$listed" | sort -u)); do
  echo "FAIL  $t is in none of place.cmake's lists (alone, serial, cpu, shared)"; fail=1
done
for t in $(echo "$listed" | uniq -d); do echo "FAIL  $t is in two lists"; fail=1; done
for t in $(comm -13 <(echo "$tests") <(echo "$listed" | sort -u)); do
  # tests defined only where their tools are (python3, bash) are the CI machine's too
  echo "FAIL  place.cmake names $t, which is not a test of this build"; fail=1
done
n=$(echo "$tests" | wc -l)
[ $fail = 0 ] && echo "ok    the $n tests are each in one list of place.cmake"
echo "ktest: $(( fail ? 0 : 1 )) passed, $fail failed"
exit $fail
