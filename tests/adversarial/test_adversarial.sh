#!/usr/bin/env bash
# Every candidate in tests/adversarial/ cheats in one known way; each must get the verdict
# named by its "// expect:" line, on the problem named by its "// problem:" line, with the
# extra kopt eval options of its "// options:" line, if any. A "// slow: WHY" line bounds
# its evaluation to $KOPT_SLOW_LIMIT seconds (default 60): past that it is reported as
# skipped, with the reason, not passed (initcheck on the H100 machine, 2026-11-25, did not
# finish in 240 s; on the H200 it did).
# The correct candidate runs first and alone: it measures the device's ceilings into the
# test's store, which every other case starts from (a copy each). The cases whose verdict
# no timing decides then run $KOPT_ADV_JOBS at a time (default half the cores, 2 to 6);
# the ones a timing or a run's interleaving decides (OK, SUSPECT, RACE) run one at a time.
source "$(dirname "$0")/../gpu/lib.sh" "$1"
source "$(dirname "$0")/../lib/cases.sh"        # hdr, in_list, run_jobs
cores=$(nproc 2>/dev/null || echo 4)
JOBS=${KOPT_ADV_JOBS:-$(( cores / 2 < 2 ? 2 : cores / 2 > 6 ? 6 : cores / 2 ))}
mkdir -p "$TMP/case"
run_case() {   # FILE: its lines of expect's output into $TMP/case/NAME.out
  local f=$1 name prob want opts slow
  name=$(basename "$f" .cu)
  prob=$(hdr "$f" problem); want=$(hdr "$f" expect); opts=$(hdr "$f" options)
  slow=$(hdr "$f" slow)
  [ -f "$TMP/case/$name.db" ] || cp "$TMP/kopt.db" "$TMP/case/$name.db" 2>/dev/null
  # shellcheck disable=SC2086  # options are words
  # a compile cache of its own: tamper_files.cu overwrites every binary in its cache, and
  # a case beside it would load a cubin made invalid while it ran (tamper_fork.cu got
  # CUDA_ERROR_INVALID_IMAGE for its reference on the H100, 2026-11-27)
  KOPT_CACHE_DIR=$TMP/case/$name.cache KOPT_DB=$TMP/case/$name.db LIMIT_S=${slow:+${KOPT_SLOW_LIMIT:-60}} LIMIT_WHY=$slow \
    expect "$want" "$prob" "$f" --budget-ms 20 --timeout 5 $opts > "$TMP/case/$name.out" 2>&1
}
first=tests/adversarial/library_own_kernels.cu
parallel=() serial=()
for f in tests/adversarial/*.cu; do
  [ "$f" = "$first" ] && continue
  # the compute-sanitizer cases first: the longest
  if in_list "$(hdr "$f" expect)" "OK|SUSPECT|RACE"; then serial+=("$f")
  elif [ "$(hdr "$f" expect)" = SANITIZER ]; then parallel=("$f" "${parallel[@]}")
  else parallel+=("$f"); fi
done
t0=$SECONDS
KOPT_DB=$TMP/kopt.db expect "$(hdr "$first" expect)" "$(hdr "$first" problem)" "$first" \
  --budget-ms 20 --timeout 5
run_jobs "$JOBS" run_case "${parallel[@]}"
for f in "${serial[@]}"; do run_case "$f"; done
for f in "${parallel[@]}" "${serial[@]}"; do
  out=$TMP/case/$(basename "$f" .cu).out
  cat "$out"
  if grep -q '^ok ' "$out"; then passed=$((passed + 1))
  elif grep -q '^skipped: ' "$out"; then skipped=$((skipped + 1))
  else failed=$((failed + 1)); grep -q '^FAIL' "$out" || echo "FAIL  $f: no result"; fi
done
echo "      $((${#parallel[@]} + ${#serial[@]} + 1)) candidate(s) in $((SECONDS - t0)) s ($JOBS at a time where no timing decides)"
finish
