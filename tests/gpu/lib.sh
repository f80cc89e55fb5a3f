# Shared by the GPU test scripts: skip without a GPU, run kopt eval, check verdicts.
# Usage: source tests/gpu/lib.sh KOPT_BINARY
K=${1:?path to kopt}
# placed by ctest on a GPU of its own (scripts/test.sh, tests/gpu/placement/): that one only
if [[ "${CTEST_RESOURCE_GROUP_0_GPUS:-}" =~ ^id:([0-9]+), ]]; then
  export CUDA_VISIBLE_DEVICES=${BASH_REMATCH[1]}
  echo "on GPU ${BASH_REMATCH[1]} (ctest's placement)"
fi
TMP=$(mktemp -d)
export KOPT_CACHE_DIR=${KOPT_CACHE_DIR:-$TMP/cache} KOPT_DB=$TMP/kopt.db
trap 'rm -rf "$TMP"' EXIT
if ! "$K" devices >/dev/null 2>&1; then
  echo "skipped: no GPU ($("$K" devices 2>&1 | head -1))"
  exit 77
fi
passed=0 failed=0 skipped=0
verdict_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$1" 2>/dev/null || echo "?"; }
# expect VERDICT[|VERDICT...] PROBLEM CANDIDATE [kopt eval options...]
expect() {
  local want=$1 prob=$2 cand=$3 out got; shift 3
  out=$TMP/$(basename "${cand:-reference}" .cu).$RANDOM.json
  local t0=$SECONDS
  if [ -n "${LIMIT_S:-}" ]; then
    # bounded, in a session of its own, so that whatever it started (compute-sanitizer
    # keeps a process group of its own) goes with it when the bound is reached
    setsid "$K" eval "$prob" ${cand:+"$cand"} --json "$@" > "$out" 2> "$out.err" &
    local pid=$!
    while kill -0 "$pid" 2>/dev/null && [ $((SECONDS - t0)) -lt "$LIMIT_S" ]; do sleep 1; done
    if kill -0 "$pid" 2>/dev/null; then
      pkill -KILL -s "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
      skipped=$((skipped + 1))
      echo "skipped: $cand: not finished in $LIMIT_S s on this machine (${LIMIT_WHY:-slow}); set KOPT_SLOW_LIMIT to wait longer"
      return
    fi
    wait "$pid"
  else
    "$K" eval "$prob" ${cand:+"$cand"} --json "$@" > "$out" 2> "$out.err"
  fi
  got=$(verdict_of "$out")
  if [[ "|$want|" == *"|$got|"* ]]; then
    passed=$((passed + 1)); echo "ok    $want  ${cand:-$prob (reference)}  ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1)); echo "FAIL  expected $want, got $got: $cand"
    python3 -c 'import json,sys; print("      " + json.load(open(sys.argv[1]))["message"])' "$out" 2>/dev/null || cat "$out.err"
  fi
}
finish() {
  if [ "$skipped" -gt 0 ]; then echo "$passed passed, $failed failed, $skipped skipped"; else echo "$passed passed, $failed failed"; fi
  [ "$failed" = 0 ]
}
