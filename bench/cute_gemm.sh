#!/usr/bin/env bash
# One device call that verifies and times examples/gemm_bf16/cute_wgmma.cu against cuBLAS
# (cublas_host.cu) and the hand-written fast.cu at 8192^3 with `kopt eval`, in one run on
# one GPU. Also checks the TMA path at sizes with edge tiles and a K tail, and counts the
# WGMMA/TMA instructions in the compiled candidate, and profiles the first variant (kopt
# profile, CUPTI) unless CUTE_PROFILE=0. The candidate file itself comes first (its own
# params); CUTE_VARIANTS="BN:BK:STAGES:CLUSTER:PERSISTENT:B_KFIRST ..." adds copies of it with
# other params.
# Usage on the GPU machine, from the repo root, with build/ carried and CUTLASS reachable
# ($CUTLASS_PATH, or WHEEL=path/to/nvidia_cutlass-*.whl to install it under /tmp):
#   bash bench/cute_gemm.sh
# Results: each eval's JSON and stderr, env, SASS counts in $OUT/cute.tgz (folder cute/); the
# table in $OUT/table.txt and printed last.
set -u
FINAL=${OUT:-/tmp/kopt-out}; W=$(mktemp -d); O=$W/cute; mkdir -p "$O" "$FINAL"
B=${KOPT_BUILD:-build}; K=${KOPT_BIN:-$PWD/$B/kopt}; P=examples/gemm_bf16
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$B/CMakeCache.txt")
# the carried build names its source folder by absolute path: make it resolve here
if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; fi
export KOPT_CACHE_DIR=${KOPT_CACHE_DIR:-/tmp/kopt-cache} KOPT_DB=${KOPT_DB:-/tmp/kopt-cute.db}
if [ -n "${WHEEL:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/cutlass-site "$WHEEL" \
    > "$O/pip.txt" 2>&1 || { echo "wheel install failed"; cat "$O/pip.txt"; exit 1; }
  export CUTLASS_PATH=/tmp/cutlass-site
fi
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
  nvcc --version | tail -2; $K cute info; } > "$O/env.txt" 2>&1
cat "$O/env.txt"
S8="--size M=8192 --size N=8192 --size K=8192"
variants=${CUTE_VARIANTS-"256:64:4:1:1:1 256:64:4:2:0:1 256:64:4:2:1:0"}
cands=("$P/cute_wgmma.cu")
for v in $variants; do   # one copy of the candidate per variant, its params as defaults
  IFS=: read -r bn bk st cl pe kf <<< "$v"; f=$P/cute_${bn}_${bk}_${st}_${cl}_${pe}_${kf}.tmp.cu
  pm="\"params\": {\"BN\": $bn, \"BK\": $bk, \"STAGES\": $st, \"CLUSTER\": $cl, \"PERSISTENT\": $pe, \"B_KFIRST\": $kf}"
  sed "s/\"params\": {[^}]*}/$pm/" $P/cute_wgmma.cu > "$f"
  grep -qF "$pm" "$f" || { echo "variant $v: front matter not rewritten"; exit 1; }
  cands+=("$f")
done
i=0; for f in "${cands[@]}"; do echo "variant $i: $f $(grep -o '"params": {[^}]*}' "$f")" | tee -a "$O/table.txt"; i=$((i + 1)); done
ev() {   # name, args...: one kopt eval, its JSON and stderr kept, a table line
  local n=$1; shift
  "$K" eval "$@" --json > "$O/$n.json" 2> "$O/$n.err"; local rc=$?
  python3 - "$O/$n.json" "$n" "$rc" <<'PY' | tee -a "$O/table.txt"
import json, sys
f, n, rc = sys.argv[1:]
try: d = json.load(open(f))
except Exception as e: print("%-22s rc=%s unreadable: %s" % (n, rc, e)); sys.exit()
t = (d.get("timing") or {}).get("median_ms") or 0
sz = d.get("sizes") or {}
flops = 2.0 * sz.get("M", 0) * sz.get("N", 0) * sz.get("K", 0)
checks = d.get("checks") or []
bad = sum(1 for c in checks if c.get("mismatches"))
err = max([c.get("max_rel_err", 0) or 0 for c in checks] or [0])
ks = ", ".join("%s %dr %dspill" % (k.get("name", "?").split("<")[0], k.get("registers", 0),
               k.get("spill_stores", 0)) for k in d.get("kernels") or [])
print("%-22s %-8s %s checks=%d failing=%d maxrel=%.2g median=%.4f ms %.1f TFLOP/s | %s" % (
    n, d.get("verdict"), "x".join(str(sz.get(k)) for k in ("M", "N", "K")), len(checks), bad, err,
    t, flops / t / 1e9 if t else 0, ks))
PY
}
# 1. correctness of every variant at sizes with partial tiles in M and N and a K tail (the
#    TMA path: N, K multiples of 8; an odd number of tile rows; fewer k tiles than stages),
#    compiled in parallel; then the problem's default sizes
i=0
for f in "${cands[@]}"; do
  ( export KOPT_DB=$W/edge_$i.db   # one store each: kopt guards its store against writers
    ev "edge_$i" $P "$f" --size M=1100 --size N=1032 --size K=520 --no-time --trials 2
    ev "small_$i" $P "$f" --size M=300 --size N=264 --size K=72 --no-time --trials 2 ) &
  i=$((i + 1))
done
KOPT_DB=$W/cublas.db ev cublas_compile $P $P/cublas_host.cu --no-time --no-check-sizes &
wait
i=0
for f in "${cands[@]}"; do ev "default_$i" $P "$f" --no-time; i=$((i + 1)); done
# 2. 8192^3, cuBLAS first and last, every variant and fast.cu between
ev cublas_8192_a $P $P/cublas_host.cu $S8
i=0
for f in "${cands[@]}"; do ev "cute_8192_$i" $P "$f" $S8; i=$((i + 1)); done
ev fast_8192 $P $P/fast.cu $S8
ev cute_8192_0b $P "${cands[0]}" $S8
ev cublas_8192_b $P $P/cublas_host.cu $S8
# 3. what the compiler made of each CuTe variant (one file per compiled .so, in no set
#    order): WGMMA, TMA, barriers, local memory
for s in "$KOPT_CACHE_DIR"/compile/*.so; do
  grep -q gemm_tma_wgmma "$s.log" 2>/dev/null || continue
  cuobjdump -sass "$s" 2>/dev/null | grep -o -E "HGMMA\.[A-Z0-9x.]*|UTMALDG[A-Z0-9.]*|SYNCS\.[A-Z.]*|USETMAXREG[A-Z.]*| LDL| STL" \
    | sort | uniq -c > "$O/sass_$(basename "$s" .so | cut -c1-12).txt"
done
if [ "${CUTE_PROFILE:-1}" != 0 ]; then   # where the first variant's time goes (CUPTI metrics)
  timeout 90 "$K" profile $P "${cands[0]}" $S8 > "$O/profile_0.txt" 2>&1
  echo "== kopt profile (first variant) exit $?"; grep -v "^ *$" "$O/profile_0.txt" | tail -40 | cut -c1-200
fi
rm -f "${cands[@]:1}"
echo "== SASS instruction counts per compiled CuTe candidate"; head -20 "$O"/sass_*.txt
(cd "$W" && tar czf "$FINAL/cute.tgz" cute); cp "$O/table.txt" "$FINAL/table.txt"
echo "== summary (median over kopt eval's timed runs, L2 flushed between runs)"
cat "$O/table.txt"
