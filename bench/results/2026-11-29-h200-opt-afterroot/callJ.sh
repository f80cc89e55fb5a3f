#!/usr/bin/env bash
# device (1 GPU): main + waiting-52 (bench/optimize_gpus.sh gives the rate after the root):
# optimize 48 on one GPU, plain and with --overlap; cuobjdump's SASS read of one candidate timed
cd "$(dirname "$0")/.."
nvidia-smi -L; nproc
for m in plain overlap; do
  s0=$(date +%s)
  a=-v; [ $m = overlap ] && a="-v --overlap"
  OPT_ARGS="$a" OPT_OUT=$OUT/opt-$m OPT_ITERS=48 KOPT_BUILD=build-gpu timeout 150 bash bench/optimize_gpus.sh > $OUT/opt-$m.txt 2>&1
  echo "$m: rc=$? in $(( $(date +%s) - s0 )) s"
done
so=$(ls -t /tmp/optg-g1.cache/compile/*.so 2>/dev/null | head -1); echo "candidate: $so"
for i in 1 2 3; do /usr/bin/time -f "cuobjdump -sass %e s" cuobjdump -sass "$so" > /dev/null; done 2>&1
for i in 1 2; do /usr/bin/time -f "cuobjdump -elf %e s" cuobjdump -elf "$so" > /dev/null; done 2>&1
cd $OUT && tar czf opt.tgz opt-plain opt-overlap && rm -rf opt-plain opt-overlap
grep -hE "expansions/min|search:" $OUT/opt-plain.txt $OUT/opt-overlap.txt
