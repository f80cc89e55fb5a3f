#!/usr/bin/env bash
# device, the session's last call: --json of the examples before (build-before30) and after
# (build-gpu), the wheel in a fresh venv (dist/*.whl), then the whole suite in the time left.
cd "$(dirname "$0")/.."
T0=$(date +%s)
[ -d build-before30 ] || tar xJf .carry/before30.txz
for b in build-gpu build-before30; do
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' $b/CMakeCache.txt)
  [ "$src" != "$PWD" ] && [ ! -e "$src" ] && { mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; }
done
rm -rf build; cp -a build-gpu build; rm -rf build/Testing
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
J=$OUT/json; mkdir -p $J
for e in softmax vector_add reduce_sum transpose layernorm; do
  for b in before30:build-before30 after:build; do
    timeout 60 ${b#*:}/kopt eval examples/$e examples/$e/fast.cu --json --seed 11 > $J/$e-${b%%:*}.json 2> $J/$e-${b%%:*}.err
  done
  python3 .carry/jsoncmp.py $J/$e-before30.json $J/$e-after.json "eval $e" | tee -a $OUT/json.txt
done
for b in before30:build-before30 after:build; do
  timeout 40 ${b#*:}/kopt profile examples/softmax examples/softmax/fast.cu --json > $J/prof-${b%%:*}.json 2> $J/prof-${b%%:*}.err
done
python3 .carry/jsoncmp.py $J/prof-before30.json $J/prof-after.json "profile softmax" | tee -a $OUT/json.txt
echo "json done at $(( $(date +%s) - T0 )) s"
if ls dist/*.whl > /dev/null 2>&1 && [ -f scripts/wheel_gpu_check.sh ]; then
  timeout 90 bash scripts/wheel_gpu_check.sh dist/*.whl > $OUT/wheel.txt 2>&1; echo "wheel rc=$? at $(( $(date +%s) - T0 )) s"
  tail -15 $OUT/wheel.txt
fi
export KOPT_WHEEL=$(ls $PWD/dist/*.whl | head -1)   # the suite's wheel.test_wheel installs the carried wheel
left=$(( 585 - ($(date +%s) - T0) ))
echo "suite with ${left}s"
timeout $left scripts/test.sh -j8 --timeout 400 > $OUT/suite.log 2>&1; echo "suite rc=$? at $(( $(date +%s) - T0 )) s"
gzip -c build/Testing/Temporary/LastTest.log > $OUT/LastTest.log.gz 2>/dev/null
cp build/Testing/Temporary/CTestCostData.txt $OUT/ 2>/dev/null
grep -E "tests passed|Total Test|\*\*\*Failed|\*\*\*Timeout|Failed  " $OUT/suite.log | tail -15
grep -cE "Test +#" $OUT/suite.log
