# Shared by the test scripts that run independent cases side by side (tests/cli/test_kb.sh,
# tests/cli/test_kb_sandbox.sh, tests/gpu/test_kb_adversarial.sh): a case file's header
# lines, its needs, and a runner that starts cases N at a time. Each case writes into a
# folder and files of its own; the script reports them afterwards in a fixed order, so its
# output reads the same whatever order they finished in. Evaluations whose verdict depends
# on a timing (SUSPECT, the speed-of-light bound) are not given to run_jobs with N > 1:
# the script runs them one at a time, after the rest.
# Usage: source tests/lib/cases.sh   (python: $PY, default python3)
# shellcheck shell=bash

# how many cases at a time: $KOPT_TEST_JOBS, else the number of cores; at least 1
jobs_default() {
  local n=${KOPT_TEST_JOBS:-$(nproc 2>/dev/null || echo 2)}
  case $n in '' | *[!0-9]*) n=2 ;; esac
  [ "$n" -ge 1 ] || n=1
  echo "$n"
}

# FILE KEY: the value of the file's first "# KEY:" or "// KEY:" line (empty if none)
hdr() {
  sed -n "s@^\(#\|//\) $2: *@@p" "$1" | head -1
}

# WHAT...: 0 when every need is met: program:NAME (on PATH), gpus:N (torch sees N GPUs at
# least), else a Python module that imports
has_needs() {
  local n
  for n in $1; do
    case $n in
      program:*) command -v "${n#program:}" >/dev/null 2>&1 || return 1 ;;
      gpus:*) "${PY:-python3}" -c "import sys, torch; sys.exit(0 if torch.cuda.device_count() >= ${n#gpus:} else 1)" \
                >/dev/null 2>&1 || return 1 ;;
      *) "${PY:-python3}" -c "import $n" >/dev/null 2>&1 || return 1 ;;
    esac
  done
}

# VALUE "A|B|C": 0 when VALUE is one of them
in_list() {
  local IFS='|' w
  for w in $2; do [ "$1" = "$w" ] && return 0; done
  return 1
}

# N FUNC ARG...: FUNC ARG for every ARG, each in the background, at most N at a time (in
# the order given: put the longest first); returns once all of them have ended
run_jobs() {
  local n=$1 fn=$2 a
  shift 2
  for a in "$@"; do
    while [ "$(jobs -rp | wc -l)" -ge "$n" ]; do wait -n; done
    "$fn" "$a" &
  done
  wait
}
