#!/usr/bin/env bash
# 4 GPUs: optimize --gpus (1 vs all) and a first tune run (1 vs all), waiting-43's build
cd "$(dirname "$0")/.."
nvidia-smi -L; nproc
KOPT_BUILD=build-gpu OPT_ITERS=24 OPT_OUT=$OUT/opt bash bench/optimize_gpus.sh 2>&1 | tail -12
cp /tmp/optg-g1.db /tmp/optg-g4.db $OUT/opt/ 2>/dev/null
K=$PWD/build-gpu/kopt; NG=$(nvidia-smi -L | wc -l); ALL=$(seq -s, 0 $((NG-1)))
for g in "$ALL" 0; do
  rm -rf /tmp/c5c /tmp/c5.db
  KOPT_CACHE_DIR=/tmp/c5c timeout 100 $K tune examples/sgemm examples/sgemm/tune.cu --sizes M=2048,N=2048,K=2048 \
    --strategy random --seed 7 --budget 512 --no-progress --json --gpus "$g" --db /tmp/c5.db > $OUT/tune-$g.json 2>$OUT/tune-$g.log
  python3 -c "import json,sys; d=json.load(open('$OUT/tune-$g.json')); print('tune first --gpus $g: search %.2f s' % d['elapsed_s'])"
done
cd $OUT && tar czf c5.tgz opt tune-* && rm -rf opt tune-*
