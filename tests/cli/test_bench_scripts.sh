#!/usr/bin/env bash
# The benchmark scripts keep working: each parses (bash -n), names no file of the tree that
# is gone (tests/..., examples/..., bench/... paths written in them), and runs kopt from
# $KOPT_BIN or the build folder, never from a folder fixed in the script. With KOPT (kopt's
# binary), bench/scale_session.sh runs on CPU stand-ins held to one CPU (SCALE_CPUS): every
# run must see one usable CPU, and a CPU list taskset refuses must stop it before any run.
# Usage: test_bench_scripts.sh REPO_ROOT [KOPT]
cd "${1:?repo root}" || exit 2
KOPT=${2:-}
fail=0
for f in bench/*.sh; do
  bash -n "$f" || { echo "FAIL $f: does not parse"; fail=1; }
  for p in $(grep -oE '(tests|examples|bench)/[A-Za-z0-9_./-]+\.(cu|sh|py|json)' "$f" | sort -u); do
    [ -e "$p" ] || { echo "FAIL $f names $p, which does not exist"; fail=1; }
  done
  if grep -nE '(^|[^{A-Za-z_])build-[a-z]+/' "$f"; then
    echo "FAIL $f runs kopt from a fixed build folder (use \$KOPT_BIN or \${KOPT_BUILD:-build})"; fail=1
  fi
done
if [ -n "$KOPT" ] && command -v taskset > /dev/null; then
  o=$(mktemp -d); trap 'rm -rf "$o"' EXIT
  ss() { OUT=$o KOPT_BIN=$KOPT KOPT_SCALE_STANDIN=5 SCALE_FAKE_GPUS=2 SCALE_SHORT=1 SCALE_NS=2 \
         SCALE_MPI=0 SCALE_BUDGET=8 timeout 100 bash bench/scale_session.sh; }
  SCALE_CPUS=0 ss > "$o/held.txt" 2>&1
  rc=$?
  n=$(grep -c "usable CPUs 1\$" "$o/scale/summary.txt" 2>/dev/null)
  if [ $rc != 0 ] || [ "${n:-0}" != 2 ] || ! grep -q "runs held to 1 (CPUs 0)" "$o/scale/summary.txt"; then
    echo "FAIL scale_session.sh SCALE_CPUS=0: rc $rc, runs that saw one usable CPU: ${n:-0} of 2"
    cat "$o/held.txt"; fail=1
  fi
  rm -rf "$o/scale"
  SCALE_CPUS=4096 ss > "$o/bad.txt" 2>&1
  rc=$?
  if [ $rc != 2 ] || ! grep -q "SCALE_CPUS=4096: not a CPU list" "$o/bad.txt" || [ -e "$o/scale/gpus0.json" ]; then
    echo "FAIL scale_session.sh SCALE_CPUS=4096: rc $rc (want 2, before any run)"; cat "$o/bad.txt"; fail=1
  fi
  [ $fail = 0 ] && echo "ok: scale_session.sh SCALE_CPUS holds its runs to the CPUs named"
elif [ -n "$KOPT" ]; then
  echo "skipped: scale_session.sh SCALE_CPUS (no taskset)"
fi
[ $fail = 0 ] && echo "ok: $(ls bench/*.sh | wc -l) benchmark scripts"
exit $fail
