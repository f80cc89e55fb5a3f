#!/usr/bin/env bash
# The PyTorch worker's sandbox without a GPU (KOPT_TORCH_DEVICE=cpu): every ModelNew in
# tests/kb_sandbox/ against the problem 3_scale_add, each with the verdict and text its
# "# expect" lines name (cheats in forward: TAMPER; past a limit: TAMPER or TIMEOUT; honest
# ones: OK, with the lockdown in the report); then the controls: a cheat's command did not
# run, the same cheat passes with --no-sandbox (so the sandbox is what caught it), and a
# worker that cannot load libkopt says NOT SANDBOXED with its verdict.
# usage: test_kb_sandbox.sh /path/to/kopt /path/to/repo
set -u
K=$1; REPO=$2
DIR=$REPO/tests/kb_sandbox
passed=0; failed=0; skipped=0
ok() { echo "ok   $1"; passed=$((passed + 1)); }
bad() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
if ! python3 -c 'import torch' >/dev/null 2>&1; then
  echo "skipped: no torch (pip install torch runs the PyTorch worker's sandbox tests)"
  echo "ktest: 0 passed, 0 failed, 1 skipped"
  exit 0
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ktest-kbsb-XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
export KOPT_DB=$WORK/kopt.db KOPT_CACHE_DIR=$WORK/cache KOPT_TORCH_DEVICE=cpu
export KOPT_TORCH_WORKER=$REPO/libexec/kopt_torch_worker.py KOPT_TEST_MARKER=$WORK/marker
"$K" kb import "$REPO/bench/kernelbench/problems/3_scale_add.py" --out "$WORK/p" > "$WORK/o" 2>&1 ||
  { echo "FAIL import: $(tail -3 "$WORK/o")"; echo "ktest: 0 passed, 1 failed"; exit 1; }
P=$WORK/p/3_scale_add
SZ="--size batch=64 --size width=96 --trials 2 --reps 3:5 --budget-ms 5"

# the verdict, the message and the sandbox report of a --json result, one per line
summary() {
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["verdict"]); print(d["message"]); print(json.dumps(d.get("sandbox")))' "$1"
}

for f in "$DIR"/*.py; do
  name=$(basename "$f" .py)
  expect=$(sed -n 's/^# expect: *//p' "$f")
  text=$(sed -n 's/^# expect-text: *//p' "$f")
  args=$(sed -n 's/^# args: *//p' "$f")
  need=$(sed -n 's/^# needs: *//p' "$f")
  if [ -n "$need" ]; then
    case $need in
      program:*) have=$(command -v "${need#program:}" || true) ;;
      *) have=$(python3 -c "import $need" >/dev/null 2>&1 && echo yes || true) ;;
    esac
    if [ -z "$have" ]; then echo "skip $name: needs $need"; skipped=$((skipped + 1)); continue; fi
  fi
  rm -f "$KOPT_TEST_MARKER"
  # shellcheck disable=SC2086
  "$K" eval "$P" "$f" $SZ $args --json > "$WORK/$name.json" 2> "$WORK/$name.err"
  if ! summary "$WORK/$name.json" > "$WORK/$name.sum" 2>/dev/null; then
    bad "$name" "no JSON result: $(tail -3 "$WORK/$name.err")"; continue
  fi
  verdict=$(sed -n 1p "$WORK/$name.sum")
  if [ "$verdict" != "$expect" ]; then
    bad "$name" "verdict $verdict, expected $expect: $(sed -n 2p "$WORK/$name.sum")"
  elif [ -n "$text" ] && ! grep -qF -- "$text" "$WORK/$name.sum"; then
    bad "$name" "'$text' not in: $(sed -n 2,3p "$WORK/$name.sum")"
  elif [ -e "$KOPT_TEST_MARKER" ]; then
    bad "$name" "its forbidden command ran (the marker file exists)"
  elif [ "$verdict" = OK ] && ! grep -qF '"locked": true' "$WORK/$name.sum"; then
    bad "$name" "OK without the lockdown: $(sed -n 3p "$WORK/$name.sum")"
  else
    ok "$name: $verdict"
  fi
done

# the report of an honest candidate: the limits counted from the lockdown, the network gone
if python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = d["sandbox"]
assert s["locked"] and s["seccomp"] and not s["no_wx"], s
assert s["file_size_limit_mb"] == 64 and 120 < s["cpu_limit_s"] < 200, s
assert s["cwd_private"] and s["network"] in ("namespace", "user+network namespace", "seccomp"), s
assert "NOT SANDBOXED" not in d["message"], d["message"]
' "$WORK/honest.json"; then ok "honest: the report names the limits and the lockdown"
else bad "honest report" "$(cat "$WORK/honest.sum")"; fi

# controls: without the sandbox the same cheats are not caught (the sandbox caught them)
rm -f "$KOPT_TEST_MARKER"
"$K" eval "$P" "$DIR/cheat_subprocess.py" $SZ --no-sandbox --json > "$WORK/ns.json" 2>/dev/null
if summary "$WORK/ns.json" > "$WORK/ns.sum" 2>/dev/null && [ "$(sed -n 1p "$WORK/ns.sum")" = OK ] &&
   [ -e "$KOPT_TEST_MARKER" ] && [ "$(sed -n 3p "$WORK/ns.sum")" = null ]; then
  ok "control: with --no-sandbox the subprocess cheat runs its command (and passes)"
else bad "control --no-sandbox" "$(cat "$WORK/ns.sum" 2>/dev/null)"; fi

# a worker that cannot install the lockdown says so with its verdict, never silently
KOPT_LIB=$WORK/no-such-libkopt.so "$K" eval "$P" "$DIR/honest.py" $SZ --json > "$WORK/nl.json" 2>/dev/null
if summary "$WORK/nl.json" > "$WORK/nl.sum" 2>/dev/null && [ "$(sed -n 1p "$WORK/nl.sum")" = OK ] &&
   grep -qF "[NOT SANDBOXED: the candidate ran without the lockdown (libkopt's lockdown could not be loaded: KOPT_LIB=" "$WORK/nl.sum" &&
   grep -qF '"locked": false' "$WORK/nl.sum"; then
  ok "no libkopt: the verdict says NOT SANDBOXED and why"
else bad "no libkopt" "$(cat "$WORK/nl.sum" 2>/dev/null)"; fi
"$K" eval "$P" "$DIR/honest.py" $SZ > "$WORK/nl.txt" 2>&1 </dev/null
KOPT_LIB=/nonexistent "$K" eval "$P" "$DIR/honest.py" $SZ > "$WORK/nl2.txt" 2>&1
if grep -q "^verdict    OK: .*NOT SANDBOXED" "$WORK/nl2.txt" && ! grep -q "NOT SANDBOXED" "$WORK/nl.txt" &&
   grep -q "^sandbox    .*\"locked\":true" "$WORK/nl.txt"; then
  ok "text output: the sandbox line, and NOT SANDBOXED on the verdict line when it failed"
else bad "text output" "$(grep -E '^(verdict|sandbox)' "$WORK/nl.txt" "$WORK/nl2.txt")"; fi

echo "ktest: $passed passed, $failed failed, $skipped skipped"
[ $failed = 0 ]
