#!/usr/bin/env bash
# Every candidate in tests/adversarial/ cheats in one known way; each must get the verdict
# named by its "// expect:" line, on the problem named by its "// problem:" line, with the
# extra kopt eval options of its "// options:" line, if any. A "// slow: WHY" line bounds
# its evaluation to $KOPT_SLOW_LIMIT seconds (default 60): past that it is reported as
# skipped, with the reason, not passed (initcheck on the H100 machine, 2026-11-25, did not
# finish in 240 s; on the H200 it did).
source "$(dirname "$0")/../gpu/lib.sh" "$1"
for f in tests/adversarial/*.cu; do
  prob=$(sed -n 's|^// problem: *||p' "$f" | head -1)
  want=$(sed -n 's|^// expect: *||p' "$f" | head -1)
  opts=$(sed -n 's|^// options: *||p' "$f" | head -1)
  slow=$(sed -n 's|^// slow: *||p' "$f" | head -1)
  # shellcheck disable=SC2086  # options are words
  LIMIT_S=${slow:+${KOPT_SLOW_LIMIT:-60}} LIMIT_WHY=$slow expect "$want" "$prob" "$f" --budget-ms 20 --timeout 5 $opts
done
finish
