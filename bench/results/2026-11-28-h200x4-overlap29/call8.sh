#!/usr/bin/env bash
# 4 GPUs (issue 29): the sgemm tuning run warm, then first, 1 vs 4 GPUs, without MPI runs
# (call7's were cut by its timeouts and left ranks running into its warm measurement)
cd "$(dirname "$0")/.."
export KOPT_BUILD=build-gpu
nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader | head
s0=$(date +%s)
OUT=$OUT/warm SCALE_MPI=0 SCALE_WARM=1 SCALE_BUDGET=512 SCALE_SHORT=1 SCALE_NS=4 timeout 110 bash bench/scale_session.sh > $OUT/warm.txt 2>&1
echo "== scale warm: rc=$? in $(( $(date +%s) - s0 )) s"; grep -E "^gpus|^fill|slots|speed-up" $OUT/warm.txt
s0=$(date +%s)
OUT=$OUT/first SCALE_MPI=0 SCALE_BUDGET=512 SCALE_SHORT=1 SCALE_NS=4 timeout 100 bash bench/scale_session.sh > $OUT/first.txt 2>&1
echo "== scale first: rc=$? in $(( $(date +%s) - s0 )) s"; grep -E "^gpus|slots|speed-up" $OUT/first.txt
cd $OUT && tar czf all.tgz first warm *.txt 2>/dev/null && rm -rf first warm
