#!/usr/bin/env bash
# 4 GPUs (issue 29): optimize --gpus 1 vs all with and without --overlap (24 expansions),
# then the sgemm tuning run first (cold cache) and warm, 1 vs 4 GPUs (scale_session)
cd "$(dirname "$0")/.."
nvidia-smi -L; nproc
export KOPT_BUILD=build-gpu
for a in "--overlap" ""; do
  l=opt$(echo "$a" | tr -d ' -'); s0=$(date +%s)
  OPT_ITERS=24 OPT_ARGS="$a" OPT_OUT=$OUT/$l timeout 170 bash bench/optimize_gpus.sh > $OUT/$l.txt 2>&1
  echo "== optimize $a: rc=$? in $(( $(date +%s) - s0 )) s"; grep -E "^g[0-9]|search:|speed-up" $OUT/$l.txt
done
s0=$(date +%s)
OUT=$OUT/first SCALE_BUDGET=512 SCALE_SHORT=1 SCALE_NS=4 timeout 120 bash bench/scale_session.sh > $OUT/first.txt 2>&1
echo "== scale first: rc=$? in $(( $(date +%s) - s0 )) s"; tail -8 $OUT/first.txt
s0=$(date +%s)
OUT=$OUT/warm SCALE_WARM=1 SCALE_BUDGET=512 SCALE_SHORT=1 SCALE_NS=4 timeout 110 bash bench/scale_session.sh > $OUT/warm.txt 2>&1
echo "== scale warm: rc=$? in $(( $(date +%s) - s0 )) s"; tail -8 $OUT/warm.txt
cd $OUT && tar czf all.tgz opt* first warm *.txt 2>/dev/null && rm -rf opt first warm optoverlap
