#!/usr/bin/env bash
# CLI tests of the kopt binary: help and usage exit codes, invalid problem files (exit 9),
# and `kopt eval` of an example on this machine (SKIPPED without a GPU, text and --json),
# plus a candidate that does not compile (exit 3, annotated log).
# usage: test_cli.sh /path/to/kopt /path/to/examples   (prints "ktest: N passed, M failed")
set -u

KOPT=${1:?usage: test_cli.sh KOPT_BINARY EXAMPLES_DIR}
EXAMPLES=${2:?usage: test_cli.sh KOPT_BINARY EXAMPLES_DIR}
KOPT=$(cd "$(dirname "$KOPT")" && pwd)/$(basename "$KOPT")
EXAMPLES=$(cd "$EXAMPLES" && pwd)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ktest-cli-XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
export KOPT_CACHE_DIR="$WORK/cache"
export KOPT_DB="$WORK/kopt.db"
cd "$WORK" || exit 1

passed=0
failed=0
case_failed=0
current=""
OUT="$WORK/stdout"
ERR="$WORK/stderr"

begin() { current=$1; case_failed=0; }
fail() {
    echo "$current: $*" >&2
    case_failed=1
}
end() {
    if [ "$case_failed" = 0 ]; then
        passed=$((passed + 1)); echo "ok   $current"
    else
        failed=$((failed + 1)); echo "FAIL $current"
        echo "---- stdout of the last command:" >&2; cat "$OUT" >&2
        echo "---- stderr of the last command:" >&2; cat "$ERR" >&2
    fi
}
# run CMD...: runs kopt with the arguments, stdout/stderr to $OUT/$ERR, status in $rc
run() { "$KOPT" "$@" >"$OUT" 2>"$ERR"; rc=$?; }
expect_rc() { [ "$rc" = "$1" ] || fail "exit status $rc, expected $1"; }
expect_out() { grep -q -E -- "$1" "$OUT" || fail "stdout lacks /$1/"; }
expect_err() { grep -q -E -- "$1" "$ERR" || fail "stderr lacks /$1/"; }
expect_out_fixed() { grep -q -F -- "$1" "$OUT" || fail "stdout lacks '$1'"; }

has_gpu=0
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    has_gpu=1
fi

# ---- help and usage ------------------------------------------------------------------------
begin "kopt --help"
run --help
expect_rc 0
expect_out "^usage: kopt <verb>"
expect_out "eval"
end

begin "kopt --version"
run --version
expect_rc 0
expect_out "^kopt [0-9]+\.[0-9]+"
expect_out "^worker /.*/kopt-worker \(beside the program\)$"
end

begin "kopt --version with KOPT_WORKER naming nothing"
KOPT_WORKER=$WORK/no-such-worker run --version
expect_rc 10
expect_err "KOPT_WORKER=.*/no-such-worker is not an executable file"
end

begin "kopt without a verb"
run
expect_rc 2
end

begin "kopt eval --help"
run eval --help
expect_rc 0
expect_out "^usage: kopt eval PROBLEM"
expect_out "exit codes"
expect_out "SHAPE_SPECIFIC"
end

begin "unknown verb"
run frobnicate
expect_rc 2
expect_err "unknown verb 'frobnicate'"
end

begin "kopt eval without arguments"
run eval
expect_rc 2
expect_err "usage: kopt eval"
end

begin "kopt eval with an unknown option"
run eval --no-such-option "$EXAMPLES/softmax"
expect_rc 2
end

begin "kopt eval with a bad --size"
run eval --size N=abc "$EXAMPLES/vector_add"
expect_rc 2
expect_err "the value is not an integer"
end

begin "kopt eval with too many arguments"
run eval "$EXAMPLES/softmax" a.cu b.cu
expect_rc 2
end

# ---- invalid input files (exit 9) -----------------------------------------------------------
begin "kopt eval of an invalid problem.json"
mkdir -p badproblem
printf '{"name": "bad",\n "sizes": {"N": 10},,\n}\n' > badproblem/problem.json
run eval badproblem
expect_rc 9
expect_err "badproblem/problem\.json:2:[0-9]+: invalid JSON"
end

begin "kopt eval of a problem with a bad field"
mkdir -p badfield
cat > badfield/problem.json <<'EOF'
{"name": "bad", "sizes": {"N": 10},
 "tensors": [{"name": "y", "dtype": "f8", "shape": ["N"], "role": "output"}],
 "reference": {"source": "ref.cu", "launches": [{"kernel": "k", "grid": [1], "block": [1],
               "args": ["y"]}]}}
EOF
run eval badfield
expect_rc 9
expect_err "badfield/problem\.json: tensors\[0\]\.dtype: unknown dtype 'f8'"
end

begin "kopt eval of a missing problem folder"
run eval "$WORK/no-such-problem"
expect_rc 9
expect_err "no-such-problem: no such problem folder or file"
end

begin "kopt eval of a candidate with a bad front matter"
printf '/*@kopt {"params": {"N": 1}} */\n' > badfm.cu
run eval "$EXAMPLES/vector_add" badfm.cu --no-store
expect_rc 9
expect_err "badfm\.cu: params\.N: 'N' is already a size name"
end

# ---- an example, evaluated on this machine ---------------------------------------------------
begin "kopt eval softmax fast.cu (text)"
run eval "$EXAMPLES/softmax" "$EXAMPLES/softmax/fast.cu" --no-store
if [ "$has_gpu" = 1 ]; then
    expect_rc 0
    expect_out "^verdict    OK"
else
    expect_rc 0
    expect_out "^verdict    SKIPPED"
    expect_out "^device     none"
fi
expect_out "^problem    softmax"
expect_out "^  kernel   softmax_fast: [1-9][0-9]* registers"
[ -e "$WORK/kopt.db" ] && fail "--no-store wrote a store"
[ -d "$KOPT_CACHE_DIR/compile" ] || fail "no compile cache under \$KOPT_CACHE_DIR"
end

begin "kopt eval softmax fast.cu --json"
run eval "$EXAMPLES/softmax" "$EXAMPLES/softmax/fast.cu" --no-store --json
expect_rc 0
if command -v python3 >/dev/null 2>&1; then
    want=SKIPPED
    [ "$has_gpu" = 1 ] && want=OK
    python3 - "$OUT" "$want" <<'EOF' || fail "the --json output is not what was expected"
import json, sys
with open(sys.argv[1]) as f:
    r = json.load(f)
assert r["verdict"] == sys.argv[2], r["verdict"]
ks = r["kernels"]
assert len(ks) >= 1, ks
assert all(k["registers"] > 0 for k in ks), ks
assert any(k["name"] == "softmax_fast" for k in ks), ks
assert r["compile_cache_hit"] is True, "the second run should hit the compile cache"
EOF
else
    echo "  skipped: python3 not available for the JSON check"
fi
end

begin "kopt eval of a candidate that does not compile"
cat > broken.cu <<'EOF'
extern "C" __global__ void vector_add_ref(const float *a, const float *b, float *c, long long N)
{
    long long i = blockIdx.x * blockDim.x + threadIdx.x +;
    if (i < N) c[i] = a[i] + b[i];
}
EOF
run eval "$EXAMPLES/vector_add" broken.cu --no-store
expect_rc 3
expect_out "^verdict    COMPILE_ERROR"
expect_out "^compile    FAILED"
expect_out "broken\.cu\(3\): error"
expect_out_fixed "      3 |     long long i = blockIdx.x * blockDim.x + threadIdx.x +;"
end

echo "ktest: $passed passed, $failed failed"
[ "$failed" = 0 ]
