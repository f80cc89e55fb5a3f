#!/usr/bin/env bash
# Every candidate in tests/adversarial/ cheats in one known way; each must get the verdict
# named by its "// expect:" line, on the problem named by its "// problem:" line, with the
# extra kopt eval options of its "// options:" line, if any.
source "$(dirname "$0")/../gpu/lib.sh" "$1"
for f in tests/adversarial/*.cu; do
  prob=$(sed -n 's|^// problem: *||p' "$f" | head -1)
  want=$(sed -n 's|^// expect: *||p' "$f" | head -1)
  opts=$(sed -n 's|^// options: *||p' "$f" | head -1)
  # shellcheck disable=SC2086  # options are words
  expect "$want" "$prob" "$f" --budget-ms 20 --timeout 5 $opts
done
finish
