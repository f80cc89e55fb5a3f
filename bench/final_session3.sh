#!/usr/bin/env bash
# Last device call of the third session: the evaluation-session test, per-config cost with
# the threaded output check, two shapes with --out and the winner checked by kopt eval, and
# every GPU test script. On the device machine from the repository root, build-dev/ carried.
S=$SECONDS; export KOPT_CACHE_DIR=/tmp/kopt-cache; mkdir -p $OUT/f
bash bench/eval_cost.sh test cost:softmax:40:session cost:sgemm:100:session 2>&1 | grep -v "^  \(vector\|fast\)"
K=build-dev/kopt
$K tune examples/softmax examples/softmax/tune.cu --strategy forest --budget 12 --sizes B=4096,N=2048 --sizes B=1024,N=8192 --out $OUT/f/best.cu --no-store --no-progress > $OUT/f/shapes.txt 2>&1; echo "shapes exit $?"; tail -5 $OUT/f/shapes.txt
$K eval examples/softmax $OUT/f/best-2.cu --size B=1024 --size N=8192 --no-store 2>&1 | grep -E "^verdict|^time" | head -3
build-dev/tests/test_cupti_gpu 2>&1 | tail -1
for t in tests/gpu/test_examples.sh tests/gpu/test_planted.sh tests/gpu/test_profile.sh tests/adversarial/test_adversarial.sh; do R=$((580 - (SECONDS - S))); [ $R -gt 20 ] || { echo "no time for $t"; continue; }; n=$(basename $t .sh); timeout $R bash $t $K > $OUT/f/$n.txt 2>&1; echo "$n exit $?: $(grep -E 'passed' $OUT/f/$n.txt | tail -1)"; grep -E "^FAIL" -A1 $OUT/f/$n.txt | head -6; done
tar czf $OUT/final.tgz -C $OUT f && rm -rf $OUT/f; echo total $((SECONDS-S))
