#!/usr/bin/env bash
# The benchmark scripts keep working: each parses (bash -n), names no file of the tree that
# is gone (tests/..., examples/..., bench/... paths written in them), and runs kopt from
# $KOPT_BIN or the build folder, never from a folder fixed in the script.
# Usage: test_bench_scripts.sh REPO_ROOT
cd "${1:?repo root}" || exit 2
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
[ $fail = 0 ] && echo "ok: $(ls bench/*.sh | wc -l) benchmark scripts"
exit $fail
