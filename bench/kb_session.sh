#!/usr/bin/env bash
# One device call for KernelBench support (issue 14), on the GPU machine from the repo root
# with build/ carried:  bash bench/kb_session.sh [own] [kb30]
# own (the default):
# Imports kopt's own KernelBench-style problems (bench/kernelbench/problems), then runs
# kopt bench three times: each problem's reference against itself (speedup ~1.0x, eager
# only), the kopt-native host-mode candidates (bench/kernelbench/candidates/*.cu) against
# eager AND torch.compile, and the KernelBench-native ModelNew candidates (*.py: load_inline,
# Triton) against eager. Stays under 8 minutes (each step bounded); logs and JSON go to
# $OUT/kb (or /tmp/kopt-out/kb); a short table is printed last.
# evalcost: wall time per candidate, side by side: kopt eval of a kopt-native candidate
# (compile cache cold, then warm) on examples/softmax (CUDA reference) and on the imported
# 2_row_softmax (PyTorch reference), against KernelBench's own harness shape
# (bench/kernelbench_style.py: load_inline compile + 5 checks + 100 timed runs), cold and
# warm; then the same kopt-native evaluations through kopt serve (workers started ahead, as
# inside a search loop), three each; then 5 evaluations inside one evaluation session and 5
# one-shot of the same candidates (bench/probe/session_cost.c: the reference runs once per
# session). About two minutes.
# kb30: KernelBench's own files, level 1 problems 1-20 and level 2 problems 1-10, copied
# (not committed) to $KB_DIR/level1 and $KB_DIR/level2 (default kb_src/ in the repo root,
# carried): imported, then three suites, one trial each (their inputs reach 6.4 GB): each
# reference against itself (eager only: about 1.00x expected), the kopt-native candidates
# of bench/kernelbench/kb30 (*.cu) against eager and torch.compile, and its ModelNew
# candidates (*.py, load_inline, built in the background during the first two) against
# eager. Bounded to under 8 minutes: run it as its own call; the tables come last.
# kb30ref and kb30cand run its two halves (the reference suite; the candidates' suites),
# each alone under 8 minutes with wider bounds: the way to get every row if kb30's one
# call cuts a suite short (a suite past its bound prints the rows it finished). Expect
# 15-30 s for each problem whose outputs reach GBs (every output slot is copied to the
# host and compared there), a few seconds for the others.
# KB30_LEVELS (default "level1 level2") limits kb30* to some levels, e.g. KB30_LEVELS=level2
# bash bench/kb_session.sh kb30cand: only level 2's problems and candidates.
set -u
SECTIONS=${*:-own}
FINAL=${OUT:-/tmp/kopt-out}; O=$FINAL/kb; mkdir -p "$O"
B=${KOPT_BUILD:-build}; K=${KOPT_BIN:-$PWD/$B/kopt}
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$B/CMakeCache.txt")
# the carried build names its source folder by absolute path: make it resolve here
if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; fi
export KOPT_CACHE_DIR=/tmp/kopt-kb-cache KOPT_DB=/tmp/kopt-kb.db
export KOPT_TORCH_WORKER=$PWD/libexec/kopt_torch_worker.py
rm -f /tmp/kopt-kb.db*; rm -rf /tmp/kopt-kb-problems
T0=$(date +%s)
S=$O/summary.txt; : > "$S"
say() { echo "$*" | tee -a "$S"; }
say "== env: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1); $(python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)' 2>&1 | tail -1); ninja: $(command -v ninja || echo none)"
if [[ " $SECTIONS " == *" own "* ]]; then
say "== import"
timeout 120 "$K" kb import bench/kernelbench/problems --out /tmp/kopt-kb-problems > "$O/import.txt" 2>&1
say "import exit $? ($(grep -c '^imported' "$O/import.txt") imported)"; cat "$O/import.txt" >> "$S"
EO="--budget-ms 50 --trials 2 --timeout 60"
run() {   # label, seconds, args...
  local label=$1 secs=$2; shift 2
  local t=$(date +%s)
  timeout "$secs" "$K" bench /tmp/kopt-kb-problems $EO "$@" > "$O/$label.txt" 2> "$O/$label.err"
  say "== $label: exit $? in $(( $(date +%s) - t )) s"
  cat "$O/$label.txt" >> "$S"
}
run reference 90 --kind reference --no-compile
run native 210 --candidates bench/kernelbench/candidates --kind cu
run modelnew 120 --candidates bench/kernelbench/candidates --kind py --no-compile
# the whole native suite as JSON, from the store (resume of a finished suite evaluates nothing)
suite=$(sed -n 's/^suite \([0-9]*\):.*/\1/p' "$O/native.txt" | head -1)
[ -n "$suite" ] && timeout 60 "$K" bench --resume "$suite" --json > "$O/native.json" 2>> "$O/native.err"
fi
if [[ " $SECTIONS " == *" evalcost "* ]]; then
  ms() { local s=$(date +%s%N) rc; "$@" > /dev/null 2>&1; rc=$?; echo "$(( ($(date +%s%N) - s) / 1000000 )) ms (exit $rc)"; }
  [ -d /tmp/kopt-kb-problems ] || timeout 120 "$K" kb import bench/kernelbench/problems --out /tmp/kopt-kb-problems > /dev/null 2>&1
  rm -rf /tmp/kopt-kb-cache /tmp/kb_build /root/.cache/torch_extensions
  for k in cold warm; do
    say "evalcost $k: kopt eval examples/softmax fast.cu: $(ms timeout 120 "$K" eval examples/softmax examples/softmax/fast.cu --no-store)"
    say "evalcost $k: kopt eval 2_row_softmax (PyTorch reference) .cu: $(ms timeout 120 "$K" eval /tmp/kopt-kb-problems/2_row_softmax bench/kernelbench/candidates/2_row_softmax.cu --no-store)"
    say "evalcost $k: KernelBench-style harness (load_inline) examples/softmax/fast.cu: $(ms timeout 300 python3 bench/kernelbench_style.py examples/softmax/fast.cu /tmp/kb_build)"
  done
  # inside a search loop: kopt serve keeps workers started ahead; each evaluation after a
  # 1 s gap (what compiling the next candidate leaves), the cache warm
  "$K" serve --socket /tmp/kopt-kb.sock --idle-exit 120 2> "$O/serve.err" & sp=$!
  sleep 2
  for pc in "examples/softmax examples/softmax/fast.cu" \
            "/tmp/kopt-kb-problems/2_row_softmax bench/kernelbench/candidates/2_row_softmax.cu"; do
    read -r pp cc <<< "$pc"
    timeout 120 "$K" eval --server=/tmp/kopt-kb.sock "$pp" "$cc" --no-store > /dev/null 2>&1
    for i in 1 2 3; do
      sleep 1
      say "evalcost served: kopt eval --server $(basename "$pp") $(basename "$cc"): $(ms timeout 120 "$K" eval --server=/tmp/kopt-kb.sock "$pp" "$cc" --no-store)"
    done
  done
  kill "$sp" 2> /dev/null; wait "$sp" 2> /dev/null
  # inside a session (kopt tune, kopt optimize): the reference runs once at the session's
  # seed; each further candidate starts only its own worker (bench/probe/session_cost.c:
  # 5 evaluations in one session, then 5 one-shot, of the same kopt-native candidate, each
  # after a gap of KB_GAP_MS (default 3000 ms: what a model's answer or a compile leaves,
  # in which the next candidate's worker is started ahead)
  SC=$B/session_cost
  [ -x "$SC" ] || cc -O2 -Iinclude -o "$SC" bench/probe/session_cost.c -L"$B" -lkopt -Wl,-rpath,"$PWD/$B" 2> "$O/session_cost_build.err"
  for pc in "examples/softmax examples/softmax/fast.cu" \
            "/tmp/kopt-kb-problems/2_row_softmax bench/kernelbench/candidates/2_row_softmax.cu"; do
    read -r pp cc <<< "$pc"
    timeout 150 "$SC" "$pp" "$cc" 5 "${KB_GAP_MS:-3000}" > "$O/session_$(basename "$pp").txt" 2>&1
    while read -r line; do say "evalcost in-session $(basename "$pp"): $line"; done < "$O/session_$(basename "$pp").txt"
  done
fi
ref30=0; cand30=0
[[ " $SECTIONS " == *" kb30 "* || " $SECTIONS " == *" kb30ref "* ]] && ref30=1
[[ " $SECTIONS " == *" kb30 "* || " $SECTIONS " == *" kb30cand "* ]] && cand30=1
if [ $ref30 = 1 ] || [ $cand30 = 1 ]; then
  KB=${KB_DIR:-kb_src}; C30=bench/kernelbench/kb30; rm -rf /tmp/kopt-kb30
  # the ModelNew candidates' load_inline extensions build in the background meanwhile (torch
  # caches them by name and source: the ModelNew suite then loads them); the timing now
  # holds the GPU while the host queues each run, so this CPU load does not reach the times
  LEVELS=${KB30_LEVELS:-level1 level2}
  pfx=""; for l in $LEVELS; do pfx="$pfx ${l#level}_"; done
  [ $cand30 = 1 ] && ( for f in "$C30"/*.py; do
      case " $pfx " in *" $(basename "$f" | cut -d_ -f1)_ "*) ;; *) continue ;; esac
      timeout 300 python3 -c 'import importlib.util as u, sys; s = u.spec_from_file_location("m", sys.argv[1]); m = u.module_from_spec(s); s.loader.exec_module(m); print("built", sys.argv[1])' "$f"
    done ) > "$O/kb30_prebuild.txt" 2>&1 &
  pre=$!; [ $cand30 = 1 ] || pre=
  for l in $LEVELS; do
    timeout 120 "$K" kb import "$KB/$l" --out /tmp/kopt-kb30 --prefix "${l#level}_" > "$O/import_$l.txt" 2>&1
    say "import $l: exit $? ($(grep -c '^imported' "$O/import_$l.txt") imported)"; grep -v '^imported' "$O/import_$l.txt" >> "$S"
  done
  # one trial (inputs and outputs reach 6.4 GB; each slot of outputs is copied to the host)
  KO="--trials 1 --budget-ms 30 --timeout 120"
  # bounds: both halves in one call under 8 minutes, or each half alone with more room
  if [ $ref30 = 1 ] && [ $cand30 = 1 ]; then TR=170 TN=140 TM=55; else TR=420 TN=300 TM=100; fi
  # a caller with less time: KB30_REF_BOUND, KB30_CAND_BOUND, KB30_MODELNEW_BOUND (seconds)
  TR=${KB30_REF_BOUND:-$TR} TN=${KB30_CAND_BOUND:-$TN} TM=${KB30_MODELNEW_BOUND:-$TM}
  suite30() {   # label, bound (s), title, kopt bench args...
    local label=$1 secs=$2 title=$3 t=$(date +%s) rc; shift 3
    timeout "$secs" "$K" bench /tmp/kopt-kb30 "$@" $KO > "$O/$label.txt" 2> "$O/$label.err"; rc=$?
    say "== $title: exit $rc in $(( $(date +%s) - t )) s"; cat "$O/$label.txt" >> "$S"
    # cut at its bound: the workers of the problem under way run on (their own process
    # groups) until their next write; let them end before anything else is timed
    [ $rc = 124 ] && { say "   ($label cut at ${secs} s: the rows above are the ones finished)"; sleep 10; }
  }
  [ $ref30 = 1 ] && suite30 kb30 $TR "kb30 reference vs itself" --kind reference --no-compile
  if [ $cand30 = 1 ]; then
    suite30 kb30_native $TN "kb30 kopt-native candidates vs eager and torch.compile" --candidates "$C30" --kind cu
    # a build still going holds its lock: the ModelNew worker waits on it
    [ -n "$pre" ] && timeout 20 tail --pid=$pre -f /dev/null; cat "$O/kb30_prebuild.txt" >> "$S"
    suite30 kb30_modelnew $TM "kb30 ModelNew candidates vs eager" --candidates "$C30" --kind py --no-compile
    suite=$(sed -n 's/^suite \([0-9]*\):.*/\1/p' "$O/kb30_native.txt" | head -1)
    [ -n "$suite" ] && timeout 15 "$K" bench --resume "$suite" --json > "$O/kb30_native.json" 2>> "$O/kb30_native.err"
  fi
fi
tail -n 30 "$O"/*.err > "$O/errors_tail.txt" 2>/dev/null
say "== total $(( $(date +%s) - T0 )) s"
echo
echo "=================== short table ==================="
for f in reference native modelnew kb30 kb30_native kb30_modelnew; do
  [ -f "$O/$f.txt" ] || continue
  echo "-- $f"; grep -vE '^  no candidate for|^[0-9_A-Za-z]+ +MISSING' "$O/$f.txt" | grep -E '^[0-9]|^suite|^vs |^  |^speed of light' | grep -vE '^ +geomean' | cut -c1-220; grep -E '^ +geomean' "$O/$f.txt"
done
