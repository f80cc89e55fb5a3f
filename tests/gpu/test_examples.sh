#!/usr/bin/env bash
# Every example's candidates verify (3 trials, main and check sizes) and are timed; the
# reference alone evaluates too.
source "$(dirname "$0")/lib.sh" "$1"
for d in examples/*/; do
  expect OK "$d" "" --budget-ms 20
  for c in "$d"*.cu; do
    [ "$(basename "$c")" = reference.cu ] && continue
    [ "$(basename "$c")" = tune.cu ] && continue   # a template: tests/unit/test_tune_templates.c
    expect OK "$d" "$c" --budget-ms 20
  done
done
finish
