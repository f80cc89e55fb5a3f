#!/usr/bin/env bash
# GPU session: what a tuning evaluation costs per configuration, by evaluation mode. On the
# device machine from the repository root with build/ carried (or $KOPT_BUILD). Sections (arguments):
#   test            the evaluation-session GPU test (tests/unit/test_eval_session_gpu.c)
#   cost:P:N:MODE   kopt tune examples/P, N random points (seed 1, nothing stored or cached
#                   from earlier), MODE session (the default) or one-shot (--one-shot)
# Prints one line per section; full outputs go to $OUT/w and are tarred to $OUT/cost.tgz.
set -u
K=${KOPT_BIN:-$PWD/${KOPT_BUILD:-build}/kopt}
FINAL=${OUT:-/tmp/kopt-out}; O=$FINAL/w; mkdir -p "$O"
export KOPT_CACHE_DIR=${KOPT_CACHE_DIR:-/tmp/kopt-cache}
for s in "$@"; do
  case $s in
    test)
      timeout 300 ${KOPT_BUILD:-build}/tests/test_eval_session_gpu > "$O/test_session.log" 2>&1
      echo "test_eval_session_gpu exit $?"; tail -12 "$O/test_session.log";;
    cost:*)
      IFS=: read -r _ p n mode <<< "$s"
      extra=(); [ "$mode" = one-shot ] && extra=(--one-shot)
      $K tune examples/$p examples/$p/tune.cu --strategy random --budget "$n" --seed 1 \
        --fresh --no-store --compile-threads 12 --json --no-progress "${extra[@]}" \
        > "$O/cost_${p}_$mode.json" 2> "$O/cost_${p}_$mode.err"
      python3 - "$O/cost_${p}_$mode.json" "$p" "$mode" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(sys.argv[2], sys.argv[3], "unreadable:", e); sys.exit()
n = d.get("evaluated", 0); el = d.get("elapsed_s", 0)
pts = [p for p in d.get("evaluated_points", []) if isinstance(p, dict)]
ev = [p.get("eval_ms", 0) for p in pts if p.get("state") == "ok"]
b = d.get("best") or {}; o = b.get("outcome") or {}; f = d.get("final_check") or {}
print("cost %-10s %-8s evaluated=%d failed=%s elapsed=%.1fs -> %.3f s/config (eval stage %.3f s, compile wait %.1fs) best %.4f ms | final %s %.4f ms" % (
    sys.argv[2], sys.argv[3], n, d.get("failed"), el, el / max(n, 1),
    d.get("eval_s", 0) / max(n, 1), d.get("compile_wait_s", 0), o.get("time_ms", 0),
    f.get("verdict"), f.get("median_ms", 0) or 0))
PY
      ;;
  esac
done
tar czf "$FINAL/cost.tgz" -C "$FINAL" w && rm -rf "$O"
true
