#!/usr/bin/env bash
# Every example's candidates verify (3 trials, main and check sizes) and are timed; the
# reference alone evaluates too. Candidates that include CuTe/CUTLASS are skipped, saying
# so, where kopt finds no CUTLASS.
source "$(dirname "$0")/lib.sh" "$1"
for d in examples/*/; do
  expect OK "$d" "" --budget-ms 20
  for c in "$d"*.cu; do
    [ "$(basename "$c")" = reference.cu ] && continue
    [ "$(basename "$c")" = tune.cu ] && continue   # a template: tests/unit/test_tune_templates.c
    if grep -qE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<(cute|cutlass)/' "$c" &&
       ! "$K" cute info >/dev/null 2>&1; then
      echo "skipped: $c: needs CUTLASS, and kopt finds none here (set CUTLASS_PATH; docs/cute.md)"
      continue
    fi
    expect OK "$d" "$c" --budget-ms 20
  done
done
finish
