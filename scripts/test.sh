#!/usr/bin/env bash
# Run every test (unit, CLI, GPU) with CTest, then repeat the reason of each skipped test,
# which CTest itself does not print (the GPU tests say "skipped: no GPU" without one).
# Usage: scripts/test.sh [ctest args], e.g. -L unit, or -j 8 (tests side by side, the
# longest first by their COST). The tests that time or profile run alone (RUN_SERIAL).
# KOPT_TEST_PLACE=1 places the tests on a machine's GPUs instead (tests/gpu/placement/
# place.cmake): the ones that time or profile get a GPU to themselves (one GPU: in turn,
# while the CPU-only tests go on beside them; several: spread over GPUs 1..N-1 while the
# rest use GPU 0). Not yet the default: it has not run on a GPU machine yet.
# The KernelBench CLI tests also run their own independent steps side
# by side, $KOPT_TEST_JOBS at a time (default: the number of cores; tests/lib/cases.sh).
cd "$(dirname "$0")/.."
args=()
# the GPUs the tests may use: CUDA_VISIBLE_DEVICES's list where it is set (indices only),
# else every GPU nvidia-smi lists
if [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then
  read -ra ids <<< "$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' ' ')"
  for i in "${ids[@]}"; do
    case $i in '' | *[!0-9]*) echo "placement: off (CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES is not a list of indices)"; ids=(); break ;; esac
  done
else
  read -ra ids <<< "$(seq 0 $(( $(nvidia-smi -L 2>/dev/null | grep -c '^GPU ') - 1 )) | tr '\n' ' ')"
fi
gpus=${#ids[@]}
ctest_minor=$(ctest --version | sed -n '1s/^ctest version 3\.\([0-9]*\).*/\1/p')
if [ "${KOPT_TEST_PLACE:-0}" = 1 ] && [ "$gpus" -gt 0 ] && [ "${ctest_minor:-0}" -ge 18 ] &&
   mkdir -p build/Testing; then
  spec=build/Testing/kopt-gpus.json
  if [ "$gpus" = 1 ]; then
    list="{\"id\": \"${ids[0]}\", \"slots\": 8}"
    echo "placement: 1 GPU (${ids[0]}); the tests that time or profile take it in turn, the CPU-only tests run beside them"
  else
    list=$(printf '{"id": "%s", "slots": 1}\n' "${ids[@]:1}" | paste -sd, -)
    echo "placement: $gpus GPUs (${ids[*]}); the tests that time or profile spread over ${ids[*]:1}, the rest on ${ids[0]}"
  fi
  printf '{"version": {"major": 1, "minor": 0}, "local": [{"gpus": [%s]}]}\n' "$list" > "$spec"
  export KOPT_TEST_GPUS=$gpus KOPT_TEST_SHARED_GPU=${ids[0]}
  args=(--resource-spec-file "$spec")
elif [ "$gpus" -gt 0 ]; then
  echo "placement: off (KOPT_TEST_PLACE=${KOPT_TEST_PLACE:-0}, ctest 3.${ctest_minor:-?}): the tests that time or profile run alone"
fi
ctest --test-dir build --output-on-failure "${args[@]}" "$@"
rc=$?
log=build/Testing/Temporary/LastTest.log
if [ -f "$log" ]; then
  awk '/^[0-9]+\/[0-9]+ Testing: /{name=$3; said=0} /^ *skipped: / && !said {sub(/^ */, ""); print name ": " $0; said=1}' "$log"
fi
exit $rc
