#!/usr/bin/env bash
# One device call for issue 29 on a machine of several GPUs (nvidia-h200-x4, else x2): kopt
# optimize's expansions per minute on 1 GPU and on every GPU (bench/optimize_gpus.sh, 48
# expansions, the scripted model, a PyTorch-reference problem), plain; then, with
# ISSUE29_AB=1, the same with the other GPUs' warm start off (KOPT_OPTIMIZE_WARM=0) and with
# the per-GPU gate off (KOPT_GATE=off), to see what each saves. From the repo root with the
# CPU machine's build carried as build-gpu:
#   bash bench/issue29_call.sh            (ISSUE29_LIMIT: seconds per bench run, default 240)
# Each run's files go to $OUT/opt-LABEL (tarred into $OUT/issue29.tgz); the speed-ups last.
set -u
cd "$(dirname "$0")/.."
: "${OUT:=/tmp/kopt-out}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,power.limit --format=csv,noheader 2>/dev/null || echo "no GPU here"
echo "cpus: $(nproc)"; date -u
B=build-gpu; [ -d "$B" ] || B=build
runs="plain"
[ "${ISSUE29_AB:-0}" = 1 ] && runs="plain nowarm nogate"
for label in $runs; do
  env=()
  case $label in
    nowarm) env=(KOPT_OPTIMIZE_WARM=0) ;;
    nogate) env=(KOPT_GATE=off) ;;
  esac
  s0=$(date +%s)
  env "${env[@]}" OPT_ARGS=-v OPT_OUT="$OUT/opt-$label" OPT_ITERS=48 KOPT_BUILD=$B \
    timeout "${ISSUE29_LIMIT:-240}" bash bench/optimize_gpus.sh > "$OUT/opt-$label.txt" 2>&1
  echo "== $label: rc=$? in $(( $(date +%s) - s0 )) s"
  grep -E "expansions/min|speed-up" "$OUT/opt-$label.txt"
done
(cd "$OUT" && tar czf issue29.tgz opt-* 2>/dev/null && rm -rf opt-plain opt-nowarm opt-nogate)
