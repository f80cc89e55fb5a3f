#!/usr/bin/env bash
# CLI tests of `kopt profile` that need no GPU: --static on the transpose example (text and
# --json) names the SASS/resource tools it ran and the metric tools it skipped, with why;
# --tool runs one tool; --list-tools lists the registry; --tool-stats on an empty store;
# usage errors (unknown tool: exit 2; missing problem: exit 9).
# usage: test_profile.sh /path/to/kopt /path/to/examples   (prints "ktest: N passed, M failed")
set -u

KOPT=${1:?usage: test_profile.sh KOPT_BINARY EXAMPLES_DIR}
EXAMPLES=${2:?usage: test_profile.sh KOPT_BINARY EXAMPLES_DIR}
KOPT=$(cd "$(dirname "$KOPT")" && pwd)/$(basename "$KOPT")
EXAMPLES=$(cd "$EXAMPLES" && pwd)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ktest-profile-XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
export KOPT_CACHE_DIR="$WORK/cache"
export KOPT_DB="$WORK/kopt.db"
cd "$WORK" || exit 1

passed=0 failed=0 case_failed=0 current=""
OUT="$WORK/stdout" ERR="$WORK/stderr"
begin() { current=$1; case_failed=0; }
fail() { echo "$current: $*" >&2; case_failed=1; }
end() {
    if [ "$case_failed" = 0 ]; then passed=$((passed + 1)); echo "ok   $current"
    else
        failed=$((failed + 1)); echo "FAIL $current"
        echo "---- stdout:" >&2; head -60 "$OUT" >&2; echo "---- stderr:" >&2; cat "$ERR" >&2
    fi
}
run() { "$KOPT" "$@" >"$OUT" 2>"$ERR"; rc=$?; }
expect_rc() { [ "$rc" = "$1" ] || fail "exit code $rc, expected $1"; }
has() { grep -q -- "$1" "$OUT" || fail "output lacks '$1'"; }
# json PYTHON-EXPRESSION: true when the expression over the parsed output `d` is true
json() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$OUT" "$1" || fail "JSON check failed: $1"; }

T="$EXAMPLES/transpose"
# nvdisasm decides whether SASS tools run or are skipped; both are checked
if "$KOPT" profile "$T" "$T/fast.cu" --static >"$WORK/probe" 2>&1 && grep -q "nvdisasm not found" "$WORK/probe"; then
    sass=0
else
    sass=1
fi

begin "profile --static (text)"
run profile "$T" "$T/fast.cu" --static
expect_rc 0
has "mode       static"
has "kernel   transpose_fast"
has "registers"
has "metrics    skipped"
has "class      memory-bound"
has "sector_efficiency: needs measured metrics"
has "bank_conflicts: needs measured metrics"
has "tools run "
grep "^tools run" "$OUT" | grep -q "register_spills" || fail "register_spills (resources) did not run"
if [ "$sass" = 1 ]; then
    has "sass       nvdisasm: counted"
    grep "^tools run" "$OUT" | grep -q "non_vectorized_loads" || fail "non_vectorized_loads (SASS) did not run"
else
    has "non_vectorized_loads: needs"
fi
end

begin "profile --static --json"
run profile "$T" "$T/fast.cu" --static --json
expect_rc 0
json 'd["mode"] == "static" and d["metrics_source"] is None'
json 'd["kernels"][0]["name"] == "transpose_fast" and d["kernels"][0]["resources"]["registers"] > 0'
json 'd["kernels"][0]["grid"] == [256, 256, 1] and d["kernels"][0]["profiled"] is False'
json 'any(s.startswith("bank_conflicts: needs measured metrics") for s in d["tools_skipped"])'
json '"register_spills" in d["tools_run"] and not any(s.startswith("register_spills:") for s in d["tools_skipped"])'
json 'd["class"]["final"] == "memory-bound" and len(d["class"]["reasoning"]) > 20'
json 'all(f["tool"] in d["tools_run"] and 0 <= f["gain"] <= 1 and f["why"] for f in d["findings"])'
if [ "$sass" = 1 ]; then
    json '"non_vectorized_loads" in d["tools_run"] and d["kernels"][0]["sass"]["instructions"] > 0'
    json 'd["sass"] == "ok"'
else
    json 'any(s.startswith("non_vectorized_loads:") for s in d["tools_skipped"])'
fi
end

begin "profile --static --tool (one tool, class ignored)"
run profile "$T" "$T/fast.cu" --static --json --tool unfused_fp
expect_rc 0
json 'd["tools_run"] in (["unfused_fp"], []) and all(f["tool"] == "unfused_fp" for f in d["findings"])'
end

begin "profile --list-tools"
run profile --list-tools --json
expect_rc 0
json 'len(d) >= 10 and {"bank_conflicts", "register_spills", "non_vectorized_loads"} <= {t["name"] for t in d}'
end

begin "profile --tool-stats on an empty store"
run profile --tool-stats --db "$WORK/empty.db"
expect_rc 0
has "no findings stored"
end

begin "profile usage errors"
run profile "$T" "$T/fast.cu" --static --tool no_such_tool
expect_rc 2
run profile "$WORK/no-such-problem" --static
expect_rc 9
run profile
expect_rc 2
end

echo "ktest: $passed passed, $failed failed"
[ "$failed" = 0 ]
