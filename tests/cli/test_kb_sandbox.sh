#!/usr/bin/env bash
# The PyTorch worker's sandbox without a GPU (KOPT_TORCH_DEVICE=cpu): every ModelNew in
# tests/kb_sandbox/ against the problem 3_scale_add, each with the verdict and text its
# "# expect" lines name (cheats in forward: TAMPER; past a limit: TAMPER or TIMEOUT; honest
# ones: OK, with the lockdown in the report); then the controls: a cheat's command did not
# run, the same cheat passes with --no-sandbox (so the sandbox is what caught it), and a
# worker that cannot load libkopt says NOT SANDBOXED with its verdict.
# No verdict here depends on a timing (on the CPU there is no bound; the CPU limit counts
# CPU seconds, not wall time), so the evaluations run side by side, $KOPT_TEST_JOBS at a
# time (default: the number of cores; tests/lib/cases.sh), each with its own store and
# marker file; they are judged afterwards, in a fixed order.
# usage: test_kb_sandbox.sh /path/to/kopt /path/to/repo
set -u
K=$1; REPO=$2
DIR=$REPO/tests/kb_sandbox
# shellcheck source=tests/lib/cases.sh
source "$REPO/tests/lib/cases.sh"        # hdr, has_needs, run_jobs, jobs_default
JOBS=$(jobs_default)
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
export KOPT_TORCH_WORKER=$REPO/libexec/kopt_torch_worker.py
"$K" kb import "$REPO/bench/kernelbench/problems/3_scale_add.py" --out "$WORK/p" > "$WORK/o" 2>&1 ||
  { echo "FAIL import: $(tail -3 "$WORK/o")"; echo "ktest: 0 passed, 1 failed"; exit 1; }
P=$WORK/p/3_scale_add
SZ="--size batch=64 --size width=96 --trials 2 --reps 3:5 --budget-ms 5 --no-compile"

# the verdict, the message and the sandbox report of a --json result, one per line
summary() {
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(d["verdict"]); print(d["message"]); print(json.dumps(d.get("sandbox")))' "$1"
}

# One evaluation, ID: kopt eval's arguments after the problem; its files are $WORK/ID.out
# (stdout), .err, .s (seconds), .db (its store) and .marker (what its cheat would touch).
evaluate() {   # ID ARGS...
  local id=$1 t0=$SECONDS
  shift
  rm -f "$WORK/$id.marker"
  KOPT_TEST_MARKER=$WORK/$id.marker KOPT_DB=$WORK/$id.db "$K" eval "$P" "$@" \
    > "$WORK/$id.out" 2> "$WORK/$id.err" < /dev/null
  echo $((SECONDS - t0)) > "$WORK/$id.s"
}
run_one() {   # JOB: a case file (case:NAME) or one of the controls below
  local f
  case $1 in
    case:*) f=$DIR/${1#case:}.py
            # shellcheck disable=SC2046,SC2086  # options are words
            evaluate "${1#case:}" "$f" $SZ $(hdr "$f" args) --json ;;
    # without the sandbox, the subprocess cheat
    ns) evaluate ns "$DIR/cheat_subprocess.py" $SZ --no-sandbox --json ;;
    # a worker that cannot load libkopt (--json, then text), and a sandboxed one's text
    nl) KOPT_LIB=$WORK/no-such-libkopt.so evaluate nl "$DIR/honest.py" $SZ --json ;;
    nl2_txt) KOPT_LIB=/nonexistent evaluate nl2_txt "$DIR/honest.py" $SZ ;;
    nl_txt) evaluate nl_txt "$DIR/honest.py" $SZ ;;
  esac
}

cases=() todo=()
for f in "$DIR"/*.py; do
  name=$(basename "$f" .py)
  need=$(hdr "$f" needs)
  if [ -n "$need" ] && ! has_needs "$need"; then
    echo "skip $name: needs $need"; skipped=$((skipped + 1)); continue
  fi
  cases+=("$name")
  # torch.compile and Triton compile at the first call, the longest: started first
  case $name in jit_*) todo=("case:$name" ${todo[@]+"${todo[@]}"}) ;; *) todo+=("case:$name") ;; esac
done
t_all=$SECONDS
run_jobs "$JOBS" run_one ${todo[@]+"${todo[@]}"} ns nl nl2_txt nl_txt

for name in ${cases[@]+"${cases[@]}"}; do
  f=$DIR/$name.py
  expect=$(hdr "$f" expect)
  text=$(hdr "$f" expect-text)
  if ! summary "$WORK/$name.out" > "$WORK/$name.sum" 2>/dev/null; then
    bad "$name" "no JSON result: $(tail -3 "$WORK/$name.err")"; continue
  fi
  verdict=$(sed -n 1p "$WORK/$name.sum")
  if [ "$verdict" != "$expect" ]; then
    bad "$name" "verdict $verdict, expected $expect: $(sed -n 2p "$WORK/$name.sum")"
  elif [ -n "$text" ] && ! grep -qF -- "$text" "$WORK/$name.sum"; then
    bad "$name" "'$text' not in: $(sed -n 2,3p "$WORK/$name.sum")"
  elif [ -e "$WORK/$name.marker" ]; then
    bad "$name" "its forbidden command ran (the marker file exists)"
  elif [ "$verdict" = OK ] && ! grep -qF '"locked": true' "$WORK/$name.sum"; then
    bad "$name" "OK without the lockdown: $(sed -n 3p "$WORK/$name.sum")"
  else
    ok "$name: $verdict  ($(cat "$WORK/$name.s") s)"
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
' "$WORK/honest.out"; then ok "honest: the report names the limits and the lockdown"
else bad "honest report" "$(cat "$WORK/honest.sum")"; fi

# controls: without the sandbox the same cheats are not caught (the sandbox caught them)
if summary "$WORK/ns.out" > "$WORK/ns.sum" 2>/dev/null && [ "$(sed -n 1p "$WORK/ns.sum")" = OK ] &&
   [ -e "$WORK/ns.marker" ] && [ "$(sed -n 3p "$WORK/ns.sum")" = null ]; then
  ok "control: with --no-sandbox the subprocess cheat runs its command (and passes)"
else bad "control --no-sandbox" "$(cat "$WORK/ns.sum" 2>/dev/null)"; fi

# a worker that cannot install the lockdown says so with its verdict, never silently
if summary "$WORK/nl.out" > "$WORK/nl.sum" 2>/dev/null && [ "$(sed -n 1p "$WORK/nl.sum")" = OK ] &&
   grep -qF "[NOT SANDBOXED: the candidate ran without the lockdown (libkopt's lockdown could not be loaded: KOPT_LIB=" "$WORK/nl.sum" &&
   grep -qF '"locked": false' "$WORK/nl.sum"; then
  ok "no libkopt: the verdict says NOT SANDBOXED and why"
else bad "no libkopt" "$(cat "$WORK/nl.sum" 2>/dev/null)"; fi
cat "$WORK/nl_txt.out" "$WORK/nl_txt.err" > "$WORK/nl.txt"     # stdout and stderr, as 2>&1
cat "$WORK/nl2_txt.out" "$WORK/nl2_txt.err" > "$WORK/nl2.txt"
if grep -q "^verdict    OK: .*NOT SANDBOXED" "$WORK/nl2.txt" && ! grep -q "NOT SANDBOXED" "$WORK/nl.txt" &&
   grep -q "^sandbox    .*\"locked\":true" "$WORK/nl.txt"; then
  ok "text output: the sandbox line, and NOT SANDBOXED on the verdict line when it failed"
else bad "text output" "$(grep -E '^(verdict|sandbox)' "$WORK/nl.txt" "$WORK/nl2.txt")"; fi

echo "      ${#cases[@]} case(s) and 4 controls in $((SECONDS - t_all)) s ($JOBS at a time)"
echo "ktest: $passed passed, $failed failed, $skipped skipped"
[ $failed = 0 ]
