#!/usr/bin/env bash
# Issue 29, one device call on a 4-GPU machine: the scale benchmark of
# bench/results/2026-11-26-h200x4-scale-warmfix (bench/scale_session.sh's runs) for main and the
# two branches side by side, from the repo root with the three builds carried:
#   build-main   main at the branches' base (b09d8fc)
#   build-depth  branch compile-depth
#   build-otg    branch optimize-tune-gpus (its kopt tune is compile-depth's: a repeat)
# (made by .carry/prep29.sh). Every run: kopt tune examples/sgemm examples/sgemm/tune.cu
# --sizes M=2048,N=2048,K=2048 --strategy random --seed 7 --budget 512, a fresh store, kopt's
# default compile threads and lookahead; "first": an empty compile cache of its own; "warm":
# one compile cache filled first by an untimed run (compile-depth, 4 GPUs), shared by all.
# g1 = --gpus 0, g4 = --gpus 0,1,2,3 (as gpus0/gpus4 of scale_session.sh). Order: main's and
# compile-depth's runs first, interleaved (the same conditions for both), then
# optimize-tune-gpus's, then compile-depth's plain path (no --gpus: helpers on one GPU). A run
# that would not end within the call's 590 s (SCALE29_LIMIT, default 570 s for the runs) is
# skipped and says so. Results: $OUT/scale29.tgz (each run's JSON, log, GPU utilization),
# $OUT/table.txt and $OUT/summary.txt; the table is printed last.
# Without a GPU, a dry run: KOPT_SCALE_STANDIN=MS SCALE29_FAKE_GPUS=4 (CPU stand-ins).
# usage (device, 4 GPUs, from the repo root; run's timeout_s 600):
#   carry: build-main build-depth build-otg .carry/scale29.sh     command: bash .carry/scale29.sh
set -u
T0=$(date +%s)
LIMIT=${SCALE29_LIMIT:-570}
FINAL=${OUT:-/tmp/kopt-out}; O=$FINAL/scale29; rm -rf "$O"; mkdir -p "$O"
W=/tmp/kopt-scale29; rm -rf "$W"; mkdir -p "$W"
S=$O/summary.txt; : > "$S"
ROWS=$O/rows.tsv; : > "$ROWS"
say() { echo "$*" | tee -a "$S"; }
elapsed() { echo $(( $(date +%s) - T0 )); }
PROB=examples/sgemm TMPL=examples/sgemm/tune.cu
ARGS=(--sizes M=2048,N=2048,K=2048 --strategy random --seed 7 --budget "${SCALE29_BUDGET:-512}"
      --no-progress --json)

# each carried build names its source folder by absolute path: make it resolve here
for b in build-main build-depth build-otg; do
  [ -x "$b/kopt" ] || { say "$b: missing (carry it: .carry/prep29.sh makes it)"; continue; }
  src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$b/CMakeCache.txt" 2>/dev/null)
  if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then
    mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"
  fi
done

NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
[ -n "${CUDA_VISIBLE_DEVICES:-}" ] && [ "$NGPU" -gt 0 ] && NGPU=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
[ -n "${KOPT_SCALE_STANDIN:-}" ] && NGPU=${SCALE29_FAKE_GPUS:-4}
N=$(( NGPU < 4 ? NGPU : 4 ))
say "== env: $(nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader 2>/dev/null | head -1); $NGPU GPU(s), $(nproc) CPUs ($(nproc --all) online), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); $(free -g | awk '/^Mem/ {print $2 " GiB"}')"
for b in build-main build-depth build-otg; do
  [ -x "$b/kopt" ] && say "   $b: $(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$b/CMakeCache.txt")"
done
if [ "$N" = 0 ]; then say "skipped: no GPU"; exit 0; fi
[ "$N" -lt 4 ] && say "note: only $N GPU(s): the multi-GPU runs use $N"
G1=0 GN=$(seq -s, 0 $((N - 1)))

# field of a JSON result ("-" when missing)
jget() { python3 -c 'import json,sys
try:
    d = json.load(open(sys.argv[1])); v = eval(sys.argv[2], {"d": d})
    print("-" if v is None else ("%.2f" % v if isinstance(v, float) else v))
except Exception:
    print("-")' "$1" "$2"; }

# estimated walls (s) by kind, raised to what a build measured: a run is skipped when it
# would end past the limit
declare -A EST=([g1-first]=60 [gN-first]=30 [g1-warm]=42 [gN-warm]=22 [fill]=30 [plain-first]=55)
# run LABEL BUILD KIND(g1|gN|plain|fill) CACHE(first|warm) [kopt tune options]
run() {
  local label=$1 build=$2 kind=$3 cache=$4; shift 4
  local key=$kind-$cache; [ "$kind" = fill ] && key=fill
  local est=${EST[$key]:-60} left=$(( LIMIT - $(elapsed) ))
  if [ ! -x "$build/kopt" ]; then
    say "$label: skipped ($build missing)"; printf '%s\t%s\t%s\t%s\tskipped\n' "$label" "$build" "$kind" "$cache" >> "$ROWS"; return
  fi
  if [ "$est" -gt "$left" ]; then
    say "$label: skipped: ~${est} s would not fit in the ${left} s left"
    printf '%s\t%s\t%s\t%s\tskipped (time)\n' "$label" "$build" "$kind" "$cache" >> "$ROWS"; return
  fi
  if [ "$cache" = warm ]; then export KOPT_CACHE_DIR=$W/warm.cache
  else export KOPT_CACHE_DIR=$W/$label.cache; rm -rf "$KOPT_CACHE_DIR"; fi
  nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits -lms 200 \
      > "$O/$label.util" 2> /dev/null & local smi=$!
  local t=$(date +%s.%N)
  timeout "$left" "$build/kopt" tune "$PROB" "$TMPL" "${ARGS[@]}" --db "$W/$label.db" "$@" \
      > "$O/$label.json" 2> "$O/$label.log"
  local rc=$?
  kill "$smi" 2> /dev/null; wait "$smi" 2> /dev/null
  local wall; wall=$(python3 -c "import time; print('%.1f' % (time.time() - $t))")
  local j=$O/$label.json
  local util; util=$(awk -F', *' '{s[$1]+=$2; n[$1]++} END {for (g in s) printf "gpu%s %.0f%% ", g, s[g]/n[g]}' "$O/$label.util" 2>/dev/null)
  say "$label ($build, ${*:-no --gpus}, $cache cache): exit $rc, wall $wall s, tune $(jget "$j" 'd["elapsed_s"]') s, $(jget "$j" 'd["evaluated"]') evaluated, $(jget "$j" 'd["failed"]') failed, best $(jget "$j" 'd["best"]["label"]')"
  say "   compile threads $(jget "$j" 'd.get("compile_threads")'), lookahead $(jget "$j" 'd.get("lookahead")'), helpers $(jget "$j" 'd.get("compile_helpers")'), usable CPUs $(jget "$j" 'd.get("cpus_usable")'); compile wait $(jget "$j" 'd["compile_wait_s"]') s; gpu_time $(jget "$j" '" ".join("%s %.2f" % (k, v) for k, v in d["gpu_time"].items() if k != "gpus")'); slots $(jget "$j" '"; ".join("gpu%s %d jobs %.1f s busy" % (s["device"], s["evaluations"], s["busy_s"]) for s in d.get("slots") or [])'); util ${util:--}"
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$build" "$kind" "$cache" "$rc" "$wall" >> "$ROWS"
  [ "$cache" = first ] && rm -rf "$KOPT_CACHE_DIR"
  # later runs of this kind expect at least this wall
  local w=${wall%.*}; [ "$rc" = 0 ] && [ "$((w + 3))" -gt "${EST[$key]:-0}" ] && EST[$key]=$((w + 3))
}

say "== first runs (empty compile cache each), main and compile-depth side by side"
run main-g1-first build-main g1 first --gpus $G1
run depth-g1-first build-depth g1 first --gpus $G1
run main-g$N-first build-main gN first --gpus "$GN"
run depth-g$N-first build-depth gN first --gpus "$GN"
say "== warm cache: one untimed run fills it (compile-depth, $N GPUs), then main and compile-depth"
run fill build-depth fill warm --gpus "$GN"
run main-g1-warm build-main g1 warm --gpus $G1
run depth-g1-warm build-depth g1 warm --gpus $G1
run main-g$N-warm build-main gN warm --gpus "$GN"
run depth-g$N-warm build-depth gN warm --gpus "$GN"
say "== optimize-tune-gpus (its kopt tune is compile-depth's)"
run otg-g1-first build-otg g1 first --gpus $G1
run otg-g$N-first build-otg gN first --gpus "$GN"
run otg-g1-warm build-otg g1 warm --gpus $G1
run otg-g$N-warm build-otg gN warm --gpus "$GN"
say "== compile-depth's plain path (no --gpus): compile helpers on one GPU too"
run depth-plain-first build-depth plain first
say "== runs done at $(elapsed) s"

# the table: tune s, speed-up over the same build's 1-GPU run of the same cache kind (and
# its efficiency), the same run's speed-up over main's, the compile depth, failed points
python3 - "$O" "$ROWS" "$N" "$(nproc)" > "$O/table.txt" <<'PY'
import json, os, sys
O, rows_path, N, nproc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rows = [l.rstrip("\n").split("\t") for l in open(rows_path) if l.strip()]
res = {}
for r in rows:
    label, build, kind, cache = r[:4]
    d = {}
    if len(r) >= 6:
        try:
            d = json.load(open(os.path.join(O, label + ".json")))
        except Exception:
            d = {}
    res[label] = (build, kind, cache, r[4:], d)
def tune_s(label):
    x = res.get(label)
    return x[4].get("elapsed_s") if x else None
def gpus_of(kind):
    return N if kind in ("gN", "fill") else 1
print("%-18s %8s %9s %6s %8s %7s %9s %4s %7s %s" % ("run", "tune s", "speed-up", "eff", "vs main",
      "threads", "lookahead", "fail", "wall s", "note"))
for label, (build, kind, cache, st, d) in res.items():
    if len(st) < 2:
        print("%-18s %s" % (label, st[0] if st else "?"))
        continue
    rc, wall = st
    t = d.get("elapsed_s")
    n = gpus_of(kind)
    prefix = label.split("-")[0]
    sp = eff = vs = "-"
    base = tune_s("%s-g1-%s" % (prefix, cache)) if kind == "gN" else None
    if t and base:
        sp = "%.2fx" % (base / t)
        eff = "%.2f" % (base / t / n)
    elif t and kind == "g1":
        sp = "1.00x"
    if t and prefix != "main" and kind in ("g1", "gN"):
        m = tune_s(label.replace(prefix + "-", "main-", 1))
        if m:
            vs = "%.2fx" % (m / t)
    ct, la = d.get("compile_threads"), d.get("lookahead")
    note = ""
    if ct is None and d:   # main says neither: its rule (4 a GPU up to the CPUs, 8 ahead a GPU)
        ct, la, note = "%d*" % max(2, min(4 * n, nproc)), "%d*" % (8 * n), "* main's rule"
    if kind == "fill":
        note = "untimed fill of the warm cache"
    if rc != "0":
        note = ("timeout " if rc in ("124", "137") else "exit %s " % rc) + note
    print("%-18s %8s %9s %6s %8s %7s %9s %4s %7s %s" % (label, "%.2f" % t if t else "-", sp, eff, vs,
          ct if ct is not None else "-", la if la is not None else "-",
          d.get("failed", "-"), wall, note))
print("speed-up: over the same build's g1 run of the same cache kind (eff = speed-up / %d); "
      "vs main: main's tune s of the same run over this one's" % N)
PY
say "== done in $(elapsed) s"
cp "$O/table.txt" "$S" "$FINAL/" 2> /dev/null
( cd "$FINAL" && tar czf scale29.tgz scale29 && rm -rf scale29 )
echo
echo "issue 29: sgemm 2048^3, random, seed 7, budget ${SCALE29_BUDGET:-512}, $N GPU(s) (full outputs: scale29.tgz)"
cat "$FINAL/table.txt"
