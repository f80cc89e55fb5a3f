#!/usr/bin/env bash
# One device call: check the carried build runs, then the GPU checks and benchmarks of
# issue 2. Usage (on the GPU machine, from the repo root, with build/ carried):
#   bash bench/gpu_session.sh [sections...]     sections: env examples tests integrity bad bench ncu kb
# Full outputs go to $OUT (or /tmp/kopt-out); a short table is printed last.
set -u
FINAL=${OUT:-/tmp/kopt-out}
OUT=$FINAL/r            # everything goes here, and comes back as one results.tgz
mkdir -p "$OUT"
K=${KOPT_BIN:-$PWD/${KOPT_BUILD:-build}/kopt}
export KOPT_DB=$OUT/kopt.db KOPT_CACHE_DIR=/tmp/kopt-cache
SECTIONS=${*:-env examples bad bench ncu kb}
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
say() { echo "$*" | tee -a "$SUMMARY"; }
has() { [[ " $SECTIONS " == *" $1 "* ]]; }
verdict_of() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["verdict"])' "$1" 2>/dev/null || echo "?"; }
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); v=eval(sys.argv[2]); print(v)' "$1" "$2" 2>/dev/null || echo "-"; }

if has env; then
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv | tee "$OUT/env.txt"
  ldd "$K" | grep -E 'not found|jansson|sqlite|crypto' | tee -a "$OUT/env.txt"
  $K devices --measure 2>&1 | tee "$OUT/devices.txt"
  $K devices --json > "$OUT/devices.json"
fi

if has examples; then
  say "== examples: reference vs fast (3 trials, main + check sizes)"
  for d in examples/*/; do
    n=$(basename "$d")
    for c in "$d"*.cu; do
      case "$(basename "$c")" in reference.cu|tune.cu) continue;; esac
      timeout 300 $K eval "$d" "$c" --json > "$OUT/ex_${n}_$(basename "$c" .cu).json" 2> "$OUT/ex_${n}.err"
      code=$?
      j="$OUT/ex_${n}_$(basename "$c" .cu).json"
      say "$(printf '%-11s %-10s exit=%-2s %-8s cand=%-9s ref=%-9s speedup=%-6s roofline=%s%% wall=%s' "$n" "$(basename "$c" .cu)" "$code" "$(verdict_of "$j")" \
        "$(field "$j" 'round(d["timing"]["median_ms"],4)')" "$(field "$j" 'round(d["reference_timing"]["median_ms"],4)')" \
        "$(field "$j" 'round(d["speedup"],2)')" "$(field "$j" 'round(d["roofline"]["pct_of_bound"],1)')" "$(field "$j" 'round(d["wall_ms"]["total"])')")"
      [ "$(verdict_of "$j")" = OK ] || { field "$j" 'd["message"]' | head -c 600 | tee -a "$SUMMARY"; echo | tee -a "$SUMMARY"; }
    done
  done
fi

if has tests || has adversarial; then
  say "== GPU tests (tests/gpu)"
  TESTS="tests/gpu/test_examples.sh tests/gpu/test_planted.sh tests/adversarial/test_adversarial.sh"
  has tests || TESTS=tests/adversarial/test_adversarial.sh
  TESTS=${GPU_TESTS:-$TESTS}
  for t in $TESTS; do
    n=$(basename "$t" .sh)
    bash "$t" "$K" > "$OUT/$n.txt" 2>&1; echo "exit $?" >> "$OUT/$n.txt"
    grep -E 'FAIL|passed|skipped|^      ' "$OUT/$n.txt" | sed "s/^/$n: /" | tee -a "$SUMMARY"
  done
fi

if has integrity; then
  say "== integrity: host-mode examples under the sandbox"
  for c in examples/sgemm/cublas_host.cu examples/layernorm/host_two_kernels.cu; do
    p=$(dirname "$c"); j=$OUT/int_$(basename "$c" .cu).json
    timeout 300 $K eval "$p" "$c" --json > "$j" 2> "$j.err"
    say "$(printf '%-24s %-8s sandbox=%s' "$(basename "$c")" "$(verdict_of "$j")" "$(field "$j" 'd["sandbox"]')")"
    [ "$(verdict_of "$j")" = OK ] || field "$j" 'd["message"]' | head -c 600 | tee -a "$SUMMARY"
    timeout 300 $K eval "$p" "$c" --json --no-sandbox > "$j.nosb" 2>&1
    say "  same without the sandbox: $(verdict_of "$j.nosb") median $(field "$j.nosb" 'round(d["timing"]["median_ms"],4)') vs $(field "$j" 'round(d["timing"]["median_ms"],4)') ms; wall $(field "$j.nosb" 'round(d["wall_ms"]["total"])') vs $(field "$j" 'round(d["wall_ms"]["total"])') ms"
  done
  say "== integrity: --sanitize on a correct example (all three tools)"
  j=$OUT/int_sanitize_fast.json
  timeout 600 $K eval examples/softmax examples/softmax/fast.cu --sanitize --json > "$j" 2> "$j.err"
  say "softmax fast --sanitize: $(verdict_of "$j") $(field "$j" '[(s["tool"], s["ran"], s["errors"]) for s in d["sanitizer"]]') wall $(field "$j" 'round(d["wall_ms"]["total"])') ms"
  [ "$(verdict_of "$j")" = OK ] || field "$j" 'd["message"]' | head -c 600 | tee -a "$SUMMARY"
fi

if has bad; then
  say "== planted bad candidates (expected verdict)"
  run_bad() { # file expected
    local f=tests/gpu/candidates/$1 p; p=$(sed -n 's|.*// problem: \([a-z_0-9]*\).*|\1|p' "$f" | head -1)
    timeout 120 $K eval examples/$p "$f" --json --timeout 3 --budget-ms 50 > "$OUT/bad_$1.json" 2>>"$OUT/bad.err"
    local code=$? v; v=$(verdict_of "$OUT/bad_$1.json")
    say "$(printf '%-32s expect %-8s got %-12s exit=%s %s' "$1" "$2" "$v" "$code" "$([ "$v" = "$2" ] && echo PASS || echo FAIL)")"
    [ "$v" = "$2" ] || field "$OUT/bad_$1.json" 'd["message"]' | head -c 400 | tee -a "$SUMMARY"
  }
  run_bad vector_add_off_by_one.cu WRONG
  run_bad vector_add_half_output.cu WRONG
  run_bad softmax_wrong_second_size.cu WRONG
  run_bad vector_add_crash.cu CRASH
  run_bad vector_add_correct_nofm.cu OK
  run_bad vector_add_hang.cu TIMEOUT
  run_bad vector_add_correct_nofm.cu OK
fi

if has bench; then
  for SZ in 1048576 67108864; do
  say "== bench: wall time of kopt eval (vector_add fast, N=$SZ), cold and warm compile cache"
  for i in 1 2; do
    rm -rf /tmp/kopt-cold; KOPT_CACHE_DIR=/tmp/kopt-cold $K eval examples/vector_add examples/vector_add/fast.cu --size N=$SZ --json > "$OUT/wall_${SZ}_cold_$i.json"
    KOPT_CACHE_DIR=/tmp/kopt-cold $K eval examples/vector_add examples/vector_add/fast.cu --size N=$SZ --json > "$OUT/wall_${SZ}_warm_$i.json"
    for k in cold warm; do
      j=$OUT/wall_${SZ}_${k}_$i.json
      say "$(printf '%-5s run %s: verdict %-3s compile %6s ms  verify %6s ms  time %6s ms  total %6s ms (hit=%s) reps=%s' $k $i "$(verdict_of "$j")" \
        "$(field "$j" 'round(d["wall_ms"]["compile"])')" "$(field "$j" 'round(d["wall_ms"]["verify"])')" "$(field "$j" 'round(d["wall_ms"]["time"])')" "$(field "$j" 'round(d["wall_ms"]["total"])')" "$(field "$j" 'd["compile_cache_hit"]')" "$(field "$j" 'd["timing"]["reps"]')")"
    done
  done
  done
  /usr/bin/time -v $K eval examples/vector_add examples/vector_add/fast.cu --size N=1048576 -v > "$OUT/wall_verbose.txt" 2>&1
  say "== bench: spread of the median over 10 evaluations (softmax fast)"
  for i in $(seq 1 10); do
    $K eval examples/softmax examples/softmax/fast.cu --json > "$OUT/spread_$i.json"
    field "$OUT/spread_$i.json" 'd["timing"]["median_ms"]'
  done > "$OUT/spread.txt"
  python3 - "$OUT/spread.txt" <<'PY' | tee -a "$SUMMARY"
import sys, statistics as s
v=[float(x) for x in open(sys.argv[1]) if x.strip() not in ("", "-")]
if v: print(f"medians n={len(v)} min={min(v):.5f} max={max(v):.5f} mean={s.mean(v):.5f} (max-min)/mean={100*(max(v)-min(v))/s.mean(v):.2f}% stdev/mean={100*s.pstdev(v)/s.mean(v):.2f}%")
PY
fi

if has ncu; then
  say "== kopt median vs ncu gpu__time_duration (softmax fast)"
  $K eval examples/softmax examples/softmax/fast.cu --json --no-check-sizes > "$OUT/ncu_kopt.json"
  timeout 300 ncu --clock-control none --metrics gpu__time_duration.sum -k regex:softmax_fast -c 30 --csv \
     $K eval examples/softmax examples/softmax/fast.cu --no-check-sizes --trials 1 --no-store --reps 30:30 > "$OUT/ncu.csv" 2> "$OUT/ncu.err"
  python3 - "$OUT/ncu.csv" "$OUT/ncu_kopt.json" <<'PY' | tee -a "$SUMMARY"
import csv, json, sys, statistics as s
rows=[r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
hdr=rows[0]; vi=hdr.index("Metric Value"); ui=hdr.index("Metric Unit")
vals=[]
for r in rows[1:]:
    v=float(r[vi].replace(",","")); u=r[ui]
    vals.append(v/1e6 if u=="ns" else v/1e3 if u=="us" else v if u=="ms" else v)
k=json.load(open(sys.argv[2]))["timing"]["median_ms"]
m=s.median(vals)
print(f"ncu n={len(vals)} median={m:.5f} ms mean={s.mean(vals):.5f} ms; kopt median={k:.5f} ms; diff={100*(k-m)/m:+.2f}%")
PY
fi

if has kb; then
  say "== KernelBench-style (load_inline) vs kopt eval, wall time per candidate (softmax fast)"
  rm -rf /tmp/kb_build /root/.cache/torch_extensions
  PYTHONUNBUFFERED=1 timeout 400 python3 bench/kernelbench_style.py examples/softmax/fast.cu /tmp/kb_build 2>&1 | tail -1 | sed 's/^/cold: /' | tee -a "$SUMMARY"
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/kernelbench_style.py examples/softmax/fast.cu /tmp/kb_build 2>&1 | tail -1 | sed 's/^/warm: /' | tee -a "$SUMMARY"
  rm -rf /tmp/kopt-kb; s=$(date +%s.%N); KOPT_CACHE_DIR=/tmp/kopt-kb $K eval examples/softmax examples/softmax/fast.cu > /dev/null; e=$(date +%s.%N)
  s2=$(date +%s.%N); KOPT_CACHE_DIR=/tmp/kopt-kb $K eval examples/softmax examples/softmax/fast.cu > /dev/null; e2=$(date +%s.%N)
  say "kopt eval: cold $(python3 -c "print(round($e-$s,2))") s, warm $(python3 -c "print(round($e2-$s2,2))") s"
fi
if has repeat20; then
  # issue 3, point 2: every correct candidate passes 20 evaluations in a row
  say "== 20 evaluations in a row of each example candidate (${REPEAT_GLOB:-examples/*/})"
  for d in ${REPEAT_GLOB:-examples/*/}; do
    for c in "$d"*.cu; do
      case "$(basename "$c")" in reference.cu|tune.cu) continue;; esac
      ok=0; other=""
      for i in $(seq 1 20); do
        $K eval "$d" "$c" --json --budget-ms 10 > "$OUT/r20.json" 2>/dev/null
        v=$(verdict_of "$OUT/r20.json")
        if [ "$v" = OK ]; then ok=$((ok + 1)); else other="$other $v"; cp "$OUT/r20.json" "$OUT/r20_fail_$(basename "$d")_$i.json"; fi
      done
      say "$(printf '%-11s %-18s %2d/20 OK%s' "$(basename "$d")" "$(basename "$c")" $ok "${other:+ (others:$other)}")"
    done
  done
fi

if has hostrepeat; then
  # issue 3: the host-mode examples, now under the sandbox, 20 evaluations in a row
  say "== 20 evaluations in a row of each host-mode example, under the sandbox"
  for c in examples/sgemm/cublas_host.cu examples/layernorm/host_two_kernels.cu; do
    ok=0; other=""
    for i in $(seq 1 20); do
      $K eval "$(dirname "$c")" "$c" --json --budget-ms 10 > "$OUT/hr20.json" 2>/dev/null
      v=$(verdict_of "$OUT/hr20.json")
      if [ "$v" = OK ]; then ok=$((ok + 1)); else other="$other $v"; cp "$OUT/hr20.json" "$OUT/hr20_fail_$(basename "$c" .cu)_$i.json"; fi
    done
    say "$(printf '%-24s %2d/20 OK%s' "$(basename "$c")" $ok "${other:+ (others:$other)}")"
  done
fi
if has profile; then
  say "== kopt profile on the GPU (tests/gpu/test_profile.sh, then examples naive -> fast)"
  bash tests/gpu/test_profile.sh "$K" > "$OUT/test_profile.txt" 2>&1; echo "exit $?" >> "$OUT/test_profile.txt"
  grep -E 'FAIL|passed|skipped|^ok' "$OUT/test_profile.txt" | sed 's/^/test_profile: /' | tee -a "$SUMMARY"
  for p in transpose sgemm softmax; do
    $K profile examples/$p --json > "$OUT/prof_${p}_ref.json" 2> "$OUT/prof_${p}_ref.err"
    $K profile examples/$p examples/$p/fast.cu --json > "$OUT/prof_${p}_fast.json" 2> "$OUT/prof_${p}_fast.err"
    $K profile examples/$p examples/$p/fast.cu > "$OUT/prof_${p}_fast.txt" 2>&1
    say "$p naive: $(field "$OUT/prof_${p}_ref.json" '[f["tool"] for f in d["findings"]]')"
    say "$p fast:  $(field "$OUT/prof_${p}_fast.json" '[f["tool"] for f in d["findings"]]')"
  done
  $K profile --tool-stats > "$OUT/tool_stats.txt" 2>&1; tail -25 "$OUT/tool_stats.txt" | tee -a "$SUMMARY"
  grep -iE 'collect|roofline set|ms' "$OUT/prof_transpose_fast.txt" | head -8 | tee -a "$SUMMARY"
fi
if has cupti; then
  say "== CUPTI on the GPU (tests/unit/test_cupti_gpu)"
  ${KOPT_BUILD:-build}/tests/test_cupti_gpu > "$OUT/test_cupti_gpu.txt" 2>&1; echo "exit $?" >> "$OUT/test_cupti_gpu.txt"
  grep -E '^(ok|FAIL|ktest|  skipped)|failed' "$OUT/test_cupti_gpu.txt" | head -20 | tee -a "$SUMMARY"
fi

if has issue4; then
  # issue 4: every example naive -> fast (CUPTI), fixtures, ncu end to end, import, timing
  say "== issue 4: naive -> fast findings for every example (CUPTI; fast profiled with --parent reference)"
  mkdir -p "$OUT/cupti"
  for d in examples/*/; do
    p=$(basename "$d")
    $K profile "$d" --json > "$OUT/cupti/${p}_reference.json" 2> "$OUT/cupti/${p}_reference.err"
    $K profile "$d" "$d/fast.cu" --parent reference --json > "$OUT/cupti/${p}_fast.json" 2> "$OUT/cupti/${p}_fast.err"
    for c in reference fast; do
      say "$(printf '%-10s %-9s ' "$p" "$c")$(field "$OUT/cupti/${p}_$c.json" '"%s %.4f ms class=%s | %s | sets %s" % (d["verdict"], d.get("median_ms", 0), (d.get("class") or {}).get("final"), ", ".join("%s %.0f%%" % (f["tool"], 100*f["gain"]) for f in d["findings"]), "; ".join("%s %dp %.0f+%.0f ms steps %s" % (s["name"], s["passes"], s["setup_ms"], s["collect_ms"], [round(x) for x in s.get("steps_ms", [])]) for s in d.get("metric_sets", [])))')"
    done
    say "           resolved: $(field "$OUT/cupti/${p}_fast.json" 'd.get("stored")')"
  done
  for f in tests/profile/planted/*.cu; do
    prob=$(sed -n 's|^// problem: *||p' "$f")
    $K profile "$prob" "$f" --json > "$OUT/cupti/planted_$(basename "$f" .cu).json" 2>/dev/null
  done
  $K profile --tool-stats > "$OUT/tool_stats_issue4.txt" 2>&1; tail -22 "$OUT/tool_stats_issue4.txt" | tee -a "$SUMMARY"

  say "== issue 4: in-process CUPTI vs ncu CLI, same problem and candidate (wall ms of the metrics stage)"
  for p in softmax transpose sgemm; do
    for i in 1 2; do
      $K profile examples/$p examples/$p/fast.cu --json --no-store > "$OUT/time_cupti_${p}_$i.json" 2>/dev/null
      $K profile examples/$p examples/$p/fast.cu --json --no-store --ncu > "$OUT/time_ncu_${p}_$i.json" 2> "$OUT/time_ncu_${p}_$i.err"
    done
    say "$(printf '%-10s ' $p)cupti $(field "$OUT/time_cupti_${p}_2.json" '"metrics %.0f ms (%s)" % (d["timing"]["metrics_ms"], ", ".join("%s %dp %.0f ms" % (s["name"], s["passes"], s["collect_ms"]) for s in d["metric_sets"]))')  |  ncu $(field "$OUT/time_ncu_${p}_2.json" '"metrics %.0f ms (%s) src=%s" % (d["timing"]["metrics_ms"], ", ".join("%s %.0f ms" % (s["name"], s["collect_ms"]) for s in d["metric_sets"]), d.get("metrics_source"))')"
    say "           findings cupti: $(field "$OUT/time_cupti_${p}_2.json" 'sorted(f["tool"] for f in d["findings"])')  ncu: $(field "$OUT/time_ncu_${p}_2.json" 'sorted(f["tool"] for f in d["findings"])')"
  done
  say "== issue 4: --ncu-rules end to end, and --import of a saved report"
  $K profile examples/transpose examples/transpose/reference.cu --ncu-rules --json --no-store > "$OUT/ncu_rules_transpose.json" 2> "$OUT/ncu_rules_transpose.err"
  say "transpose --ncu-rules: $(field "$OUT/ncu_rules_transpose.json" '"%s, %d ncu rules, findings %s" % (d["verdict"], len(d.get("ncu_rules", [])), [f["tool"] for f in d["findings"]])')"
  rm -f /tmp/rep.ncu-rep
  timeout 300 ncu --clock-control none --set full -k regex:transpose -c 1 -o /tmp/rep $K eval examples/transpose --no-check-sizes --trials 1 --no-store --reps 1:1 --no-time > "$OUT/ncu_rep.log" 2>&1
  cp /tmp/rep.ncu-rep "$OUT/" 2>/dev/null
  $K profile examples/transpose --import /tmp/rep.ncu-rep --json --no-store > "$OUT/import_transpose.json" 2> "$OUT/import_transpose.err"
  say "transpose --import: $(field "$OUT/import_transpose.json" '"%s, source %s, %d rules, findings %s" % (d["verdict"], d.get("metrics_source"), len(d.get("ncu_rules", [])), [f["tool"] for f in d["findings"]])')"
  say "== issue 5 groundwork: energy per run (NVML counter, 1 s window)"
  for p in softmax sgemm; do
    $K eval examples/$p examples/$p/fast.cu --energy --json --no-store > "$OUT/energy_$p.json" 2> "$OUT/energy_$p.err"
    say "$p fast: $(field "$OUT/energy_$p.json" '"%s %.4f ms, %s" % (d["verdict"], d["timing"]["median_ms"], d.get("energy"))') $(grep -i energy "$OUT/energy_$p.err" | head -2)"
  done
  say "== ceilings worker answer (fixture)"
  C=$(mktemp -d); KOPT_CACHE_DIR=$C $K devices --measure --db "$C/k.db" > /dev/null 2>&1
  RT=$(ls "$C"/compile/*.cubin | head -1)
  printf '{"op":"ceilings","device":0,"runtime":"%s"}\ngo\n' "$RT" | KOPT_CACHE_DIR=$C $K __worker 3>"$C/events.jsonl" 4</dev/null >/dev/null 2>&1
  grep '"result"' "$C/events.jsonl" > "$OUT/worker_result_h200.json"; say "ceilings fixture: $(wc -c < "$OUT/worker_result_h200.json") bytes"
fi

cp "$SUMMARY" "$FINAL/summary.txt"
tar czf "$FINAL/results.tgz" -C "$FINAL" r && rm -rf "$OUT"
echo; echo "======== SUMMARY"; cat "$FINAL/summary.txt"
