#!/usr/bin/env bash
# device: optimize --gpus 1 and 2 with --no-tune, without and with --overlap (24 expansions)
cd "$(dirname "$0")/.."
for a in "--no-tune" "--no-tune --overlap"; do
  l=$(echo "$a" | tr -d ' -'); s0=$(date +%s)
  OPT_ITERS=24 OPT_ARGS="$a" OPT_OUT=$OUT/opt/$l timeout 200 bash bench/optimize_gpus.sh > $OUT/$l.txt 2>&1
  echo "== $a: rc=$? in $(( $(date +%s) - s0 )) s"; grep -E "^g[0-9]|search:|steps, mean|speed-up" $OUT/$l.txt
done
cd $OUT && tar czf opt.tgz opt && rm -rf opt
