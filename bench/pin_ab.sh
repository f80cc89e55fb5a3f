#!/usr/bin/env bash
# Workers pinned to their GPU (src/eval/pin.c) against workers that see every GPU
# (KOPT_PIN_WORKERS=0), on a machine with several GPUs (issue 29): first the driver's
# control plane without kopt (bench/driver_contention.py: one process life after another,
# one lane per GPU at once, then one lane alone), then kopt optimize --gpus on a PyTorch
# problem (bench/optimize_gpus.sh: 1 GPU and every GPU, expansions per minute, each run's
# steps and the host's load). From the repo root with a build carried:
#   bash bench/pin_ab.sh        (KOPT_BUILD, default build; OPT_ITERS, default 24;
#                                ROUNDS, default 6; results in $OUT/pin_ab, a table last)
set -u
O=${OUT:-/tmp/kopt-out}/pin_ab; mkdir -p "$O"
NG=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$NG" -ge 1 ] || { echo "skipped: no GPU"; exit 0; }
R=${ROUNDS:-6}
T=$O/table.txt; : > "$T"
for args in "--lanes 1" "--lanes $NG" "--lanes $NG --pinned" "--lanes $NG --torch" \
            "--lanes $NG --torch --pinned"; do
  timeout 300 python3 bench/driver_contention.py $args --rounds "$R" 2>&1 | tail -1 | tee -a "$T"
done
for pin in 1 0; do
  KOPT_PIN_WORKERS=$pin OPT_ITERS=${OPT_ITERS:-24} OPT_OUT=$O/opt_pin$pin \
    bash bench/optimize_gpus.sh > "$O/opt_pin$pin.txt" 2>&1
  echo "== optimize, KOPT_PIN_WORKERS=$pin" >> "$T"
  grep -E "expansions/min|speed-up|host:|steps, mean" "$O/opt_pin$pin.txt" >> "$T"
done
cat "$T"
