# Shared by the GPU test scripts: skip without a GPU, run kopt eval, check verdicts.
# Usage: source tests/gpu/lib.sh KOPT_BINARY
K=${1:?path to kopt}
TMP=$(mktemp -d)
export KOPT_CACHE_DIR=${KOPT_CACHE_DIR:-$TMP/cache} KOPT_DB=$TMP/kopt.db
trap 'rm -rf "$TMP"' EXIT
if ! "$K" devices >/dev/null 2>&1; then
  echo "skipped: no GPU ($("$K" devices 2>&1 | head -1))"
  exit 77
fi
passed=0 failed=0
verdict_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$1" 2>/dev/null || echo "?"; }
# expect VERDICT[|VERDICT...] PROBLEM CANDIDATE [kopt eval options...]
expect() {
  local want=$1 prob=$2 cand=$3 out got; shift 3
  out=$TMP/$(basename "${cand:-reference}" .cu).$RANDOM.json
  local t0=$SECONDS
  "$K" eval "$prob" ${cand:+"$cand"} --json "$@" > "$out" 2> "$out.err"
  got=$(verdict_of "$out")
  if [[ "|$want|" == *"|$got|"* ]]; then
    passed=$((passed + 1)); echo "ok    $want  ${cand:-$prob (reference)}  ($((SECONDS - t0)) s)"
  else
    failed=$((failed + 1)); echo "FAIL  expected $want, got $got: $cand"
    python3 -c 'import json,sys; print("      " + json.load(open(sys.argv[1]))["message"])' "$out" 2>/dev/null || cat "$out.err"
  fi
}
finish() {
  echo "$passed passed, $failed failed"
  [ "$failed" = 0 ]
}
