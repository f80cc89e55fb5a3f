#!/usr/bin/env bash
# One device call that diagnoses the workbench on the GPU machine. Sections (arguments, in
# order; default: env evalcost): servecost (kopt eval --server with kopt serve's workers started ahead), pincost (context and pinned-buffer cost, bench/probe/pin_cost.c), suite (scripts/test.sh, whole), env (GPU, clocks, `kopt devices --measure`), evalcost
# (`kopt eval` wall time, step by step, small examples, warm and cold compile cache),
# unit (every unit and CLI test), units:REGEX (those unit tests, verbose), gpu (the GPU test
# scripts, each bounded by $GPU_T s), kb (KernelBench-style load_inline harness, cold and
# warm). Usage on the GPU machine, from the repo root, with build/ carried:
#   bash bench/gpu_diag.sh env evalcost gpu
# Full logs are tarred to $OUT/diag.tgz (or /tmp/kopt-out); a short summary is printed last.
set -u
FINAL=${OUT:-/tmp/kopt-out}; O=$FINAL/diag; mkdir -p "$O"
B=${KOPT_BUILD:-build}; K=${KOPT_BIN:-$PWD/$B/kopt}
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$B/CMakeCache.txt")
# the carried build names its source folder by absolute path: make it resolve here
if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; fi
export KOPT_CACHE_DIR=${KOPT_CACHE_DIR:-/tmp/kopt-cache} KOPT_DB=${KOPT_DB:-/tmp/kopt-diag.db}
S=$O/summary.txt; : > "$S"
say() { echo "$*" | tee -a "$S"; }
steps() { python3 - "$@" <<'PY'
import json, sys
for f in sys.argv[1:]:
    try: d = json.load(open(f))
    except Exception as e: print(f, "unreadable", e); continue
    w = d.get("wall_ms", {}); r = w.get("reference_setup_steps") or {}; c = w.get("candidate_setup_steps") or {}
    fmt = lambda s: " ".join("%s=%.0f" % (k, v) for k, v in s.items() if isinstance(v, (int, float)) and v)
    print("%-28s %-3s total=%.0f compile=%.0f verify=%.0f time=%.0f compare=%.0f | ref[%s] | cand[%s]" % (
        f.split("/")[-1], d.get("verdict"), w.get("total", 0), w.get("compile", 0), w.get("verify", 0),
        w.get("time", 0), w.get("compare") or 0, fmt(r), fmt(c)))
    for who, st in (d.get("trace") or {}).items():
        if not who.endswith("_at"):   # WHO_at: when each step ran, not how long
            print("   trace %-10s %s" % (who, fmt(st)))
PY
}
for sec in ${*:-env evalcost}; do
  case $sec in
  env)
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$O/env.txt" 2>&1
    { date -u; uname -r; nproc; } >> "$O/env.txt"; cat "$O/env.txt" >> "$S"
    $K devices --measure > "$O/devices.txt" 2>&1; $K devices --json > "$O/devices.json" 2>&1
    grep -E "GPU|fp64|fp32|DRAM copy" "$O/devices.txt" | tee -a "$S";;
  evalcost)
    say "== kopt eval wall time (ms), warm compile cache unless named cold"
    for p in vector_add softmax; do
      $K eval examples/$p examples/$p/fast.cu --json > /dev/null 2>&1   # warm the compile cache
      for i in 1 2 3; do
        s=$(date +%s%N); $K eval examples/$p examples/$p/fast.cu --json > "$O/ev_${p}_$i.json" 2>/dev/null
        echo "$p run $i: process wall $(( ($(date +%s%N) - s) / 1000000 )) ms" >> "$O/ev_wall.txt"
      done
      rm -rf /tmp/kopt-cold; s=$(date +%s%N)
      KOPT_CACHE_DIR=/tmp/kopt-cold $K eval examples/$p examples/$p/fast.cu --json > "$O/ev_${p}_cold.json" 2>/dev/null
      echo "$p cold: process wall $(( ($(date +%s%N) - s) / 1000000 )) ms" >> "$O/ev_wall.txt"
    done
    steps "$O"/ev_*.json | tee -a "$S"; cat "$O/ev_wall.txt" | tee -a "$S";;
  suite)   # the README's test command, whole, as a contributor runs it
    s=$(date +%s); timeout "${SUITE_T:-580}" scripts/test.sh > "$O/suite.log" 2>&1
    say "scripts/test.sh exit $? in $(( $(date +%s) - s )) s"
    grep -E "tests passed|Failed|\*\*\*|skipped:|Total Test" "$O/suite.log" | head -30 | tee -a "$S"
    cp "$O/suite.log" "$FINAL/suite.log";;
  install)  # programs built here against the installed kopt (carried in $B/install-check),
             # run on this GPU: same verdict as kopt eval (tests/install/test_install.sh)
    KOPT_INSTALL_WORK=$B/install-check KOPT_BUILD_WORKER=$PWD/$B/kopt-worker \
      bash tests/install/test_install.sh "$B" . > "$O/install.log" 2>&1
    say "install test (prebuilt programs) exit $?"; grep -E "path:|skipped|^ok|FAIL|verdict|ktest" "$O/install.log" | tee -a "$S";;
  servecost)  # kopt eval --server: workers started ahead by kopt serve; back to back and with
               # a 1 s gap (a search loop's model time) in which the pool refills
    $K serve --socket /tmp/kopt-diag.sock --idle-exit 300 2> "$O/serve.err" & sp=$!
    for _ in $(seq 100); do [ -S /tmp/kopt-diag.sock ] && break; sleep 0.1; done
    for p in softmax vector_add; do
      $K eval --server=/tmp/kopt-diag.sock examples/$p examples/$p/fast.cu --json > /dev/null 2>&1   # warm
      for gap in 0 1; do
        for i in 1 2 3 4 5; do
          sleep $gap; s=$(date +%s%N)
          $K eval --server=/tmp/kopt-diag.sock examples/$p examples/$p/fast.cu --json > "$O/sv_${p}_g${gap}_$i.json" 2>/dev/null
          echo "$p served, gap ${gap}s, run $i: process wall $(( ($(date +%s%N) - s) / 1000000 )) ms" >> "$O/sv_wall.txt"
        done
      done
    done
    kill $sp; wait $sp; tail -4 "$O/serve.err" | tee -a "$S"
    steps "$O"/sv_*_g1_[12].json | tee -a "$S"; cat "$O/sv_wall.txt" | tee -a "$S";;
  quickcost)  # softmax: one warm and one cold-cache kopt eval, process wall and steps
    for k in warm cold; do
      [ $k = cold ] && rm -rf /tmp/kopt-cold && export KOPT_CACHE_DIR=/tmp/kopt-cold
      s=$(date +%s%N); $K eval examples/softmax examples/softmax/fast.cu --json > "$O/q_$k.json" 2>/dev/null
      say "softmax $k: process wall $(( ($(date +%s%N) - s) / 1000000 )) ms"; steps "$O/q_$k.json" | tee -a "$S"
    done;;
  unit)
    ctest --test-dir "$B" -L 'unit|cli' -j8 --timeout 300 --output-on-failure > "$O/test_unit_cli.log" 2>&1
    say "unit+cli exit $?"; grep -E "tests passed|Failed|\*\*\*" "$O/test_unit_cli.log" | head -20 | tee -a "$S";;
  units:*)
    for t in $(ls "$B"/tests/ | grep -E "${sec#units:}"); do
      [ -x "$B/tests/$t" ] || continue
      timeout 300 "$B/tests/$t" > "$O/unit_$t.log" 2>&1; say "$t exit $?"
      grep -E "FAIL|here|ktest:" "$O/unit_$t.log" | head -12 | tee -a "$S"
    done;;
  gpu)
    for t in ${GPU_TESTS:-examples planted profile adversarial}; do
      s=$(date +%s); f=tests/gpu/test_$t.sh; [ $t = adversarial ] && f=tests/adversarial/test_adversarial.sh
      timeout "${GPU_T:-300}" bash $f "$K" > "$O/gpu_$t.log" 2>&1
      say "gpu_$t exit $? in $(( $(date +%s) - s )) s: $(tail -1 "$O/gpu_$t.log")"
      grep -E "^FAIL" -A1 "$O/gpu_$t.log" | head -6 | tee -a "$S"
    done;;
  pincost)  # a worker's context and the pinned output buffer: plain, prefaulted, huge pages
    cc -O2 -o /tmp/pin_cost bench/probe/pin_cost.c -ldl -lpthread 2>/dev/null || cp "$B/probe_pin_cost" /tmp/pin_cost
    { for f in enabled shmem_enabled defrag; do echo "thp $f: $(cat /sys/kernel/mm/transparent_hugepage/$f 2>&1)"; done
      grep -i huge /proc/meminfo; /tmp/pin_cost 640; /tmp/pin_cost 1280; } > "$O/pincost.txt" 2>&1
    cat "$O/pincost.txt" | tee -a "$S" > /dev/null; cat "$O/pincost.txt";;
  probe)   # which NVRTC is found, and whether its log carries ptxas's resource report
    cc -O2 -o /tmp/nvrtc_log bench/probe/nvrtc_log.c -ldl 2>/dev/null || cp "$B/probe_nvrtc_log" /tmp/nvrtc_log
    { echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"; ldconfig -p | grep -E "nvrtc|curand"; /tmp/nvrtc_log
      for l in /usr/local/cuda/lib64/libnvrtc.so.13 $(python3 -c "import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))" 2>/dev/null)/nvidia/cu13/lib/libnvrtc.so.13; do
        [ -e "$l" ] && /tmp/nvrtc_log "$l"; done; } > "$O/probe_nvrtc.txt" 2>&1
    head -30 "$O/probe_nvrtc.txt" | tee -a "$S";;
  overhead)  # what a kopt process costs around the evaluation
    for args in "devices" "eval examples/softmax examples/softmax/fast.cu --no-store --json" \
                "eval examples/softmax examples/softmax/fast.cu --json" "eval examples/softmax examples/softmax/fast.cu --json --precision 0"; do
      s=$(date +%s%N); $K $args > "$O/overhead.json" 2>/dev/null
      say "kopt $args: $(( ($(date +%s%N) - s) / 1000000 )) ms$(steps "$O/overhead.json" 2>/dev/null | grep -o ' total=[0-9]*.*time=[0-9]*')"
    done
    KOPT_PIN_OUTPUTS=1 $K eval examples/softmax examples/softmax/fast.cu --json > "$O/ev_softmax_pinned.json" 2>/dev/null
    steps "$O/ev_softmax_pinned.json" | tee -a "$S";;
  sanitize)  # the slow initcheck candidate, with progress on stderr
    for tool in memcheck initcheck; do
      s=$(date +%s); timeout "${SAN_T:-120}" $K eval examples/vector_add tests/adversarial/sanitize_uninitialized.cu --sanitize=$tool --budget-ms 20 --timeout 5 --json > "$O/san_$tool.json" 2> "$O/san_$tool.err" &
      pid=$!; while kill -0 $pid 2>/dev/null; do sleep 15; echo "== $(( $(date +%s) - s )) s" >> "$O/san_ps.txt"; ps -eo pid,pgid,etime,pcpu,rss,args --sort=start_time | grep -E "kopt|sanitizer" | grep -v grep | cut -c1-200 >> "$O/san_ps.txt"; done
      wait $pid; say "sanitize_uninitialized --sanitize=$tool: exit $? in $(( $(date +%s) - s )) s: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["verdict"], d.get("sanitizer"))' "$O/san_$tool.json" 2>&1 | cut -c1-300)"
    done
    tail -20 "$O/san_ps.txt" | tee -a "$S";;
  kb)
    rm -rf /tmp/kb_build /root/.cache/torch_extensions
    for k in cold warm; do
      s=$(date +%s%N); PYTHONUNBUFFERED=1 timeout 300 python3 bench/kernelbench_style.py examples/softmax/fast.cu /tmp/kb_build > "$O/kb_$k.log" 2>&1
      say "load_inline harness $k: process wall $(( ($(date +%s%N) - s) / 1000000 )) ms; $(tail -1 "$O/kb_$k.log")"
    done;;
  esac
done
tar czf "$FINAL/diag.tgz" -C "$FINAL" diag && cp "$S" "$FINAL/summary.txt" && rm -rf "$O"
