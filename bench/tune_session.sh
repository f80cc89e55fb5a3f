#!/usr/bin/env bash
# GPU session for issue 5 (tuning), on the device machine from the repository root with
# build/ carried. Sections (arguments): record:P (exhaustive recording of P's template,
# resumable: the store is $TUNE_DB, default bench/results/tune-h200.db), kt (Kernel Tuner
# live on the SGEMM template, wheels in bench/kt/wheels), kopt200 (kopt random 200 on SGEMM,
# the same budget as the kt section), cublas (the cuBLAS SGEMM reference time).
# TUNE_TIME: wall-time limit per recording call (default 480 s); TUNE_EXTRA: more kopt tune
# arguments for record (e.g. --findings). Outputs go to $OUT.
set -u
K=${KOPT_BIN:-$PWD/${KOPT_BUILD:-build}/kopt}
FINAL=${OUT:-/tmp/kopt-out}; O=$FINAL/w; mkdir -p "$O" tests/data/tune/h200
DB=${TUNE_DB:-bench/results/tune-h200.db}
export KOPT_CACHE_DIR=/tmp/kopt-cache
sum() { python3 - "$@" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print(sys.argv[1], "unreadable:", e); sys.exit()
n = d.get("evaluated", 0); el = d.get("elapsed_s", 0)
b = d.get("best") or {}; o = b.get("outcome") or {}; f = d.get("final_check") or {}
print("%-10s stop=%s new=%s cached=%s failed=%s elapsed=%.0fs (%.2f s/eval, compile wait %.1fs) best=%s %.4f ms | final %s %.4f ms %.2fx ref %s%% roofline" % (
    d.get("problem"), d.get("stop"), n, d.get("cached"), d.get("failed"), el, el / max(n, 1),
    d.get("compile_wait_s", 0), b.get("label"), o.get("time_ms", 0), f.get("verdict"),
    f.get("median_ms", 0) or 0, f.get("speedup", 0) or 0,
    "%.1f" % f["pct_of_roofline"] if f.get("pct_of_roofline") else "-"))
PY
}
for s in "$@"; do
  case $s in
    record:*)
      p=${s#record:}
      $K tune examples/$p examples/$p/tune.cu --strategy exhaustive --budget 0 --resume \
        --time "${TUNE_TIME:-480}" --compile-threads 12 --lookahead 24 --db "$DB" \
        --record tests/data/tune/h200/$p.json --export-kt "$O/$p.kt.json" --json --no-progress ${TUNE_EXTRA:-} \
        > "$O/tune_$p.json" 2> "$O/tune_$p.err"
      echo "exit $?" >> "$O/tune_$p.err"
      sum "$O/tune_$p.json"; tail -3 "$O/tune_$p.err";;
    kopt200)
      $K tune examples/sgemm examples/sgemm/tune.cu --strategy random --budget "${SG_BUDGET:-100}" --seed 1 \
        --fresh --no-store --compile-threads 12 --json --no-progress > "$O/kopt200.json" 2> "$O/kopt200.err"
      sum "$O/kopt200.json";;
    kt)
      python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/ktenv bench/kt/wheels/*.whl >/dev/null 2>&1
      PYTHONPATH=/tmp/ktenv PYTHONUNBUFFERED=1 timeout 560 python3 bench/kt/kt_live_sgemm.py \
        --strategy random_sample --max-fevals "${SG_BUDGET:-100}" --time-limit 400 --seed 1 --out "$O/kt-live-sgemm.json" \
        > "$O/kt.log" 2>&1; echo "exit $?" >> "$O/kt.log"; tail -15 "$O/kt.log";;
    cublas)
      $K eval examples/sgemm examples/sgemm/cublas_host.cu --json --no-store > "$O/cublas.json" 2>/dev/null
      python3 -c 'import json; d=json.load(open("'"$O"'/cublas.json")); print("cublas sgemm", d["verdict"], d["timing"]["median_ms"], "ms")';;
  esac
done
[ -f "$DB" ] && cp "$DB" "$O/" ; ls tests/data/tune/h200/ && cp tests/data/tune/h200/*.json "$O/" 2>/dev/null
tar czf "$FINAL/tune-results.tgz" -C "$FINAL" w && rm -rf "$O"
true
