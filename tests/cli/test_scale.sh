#!/usr/bin/env bash
# CLI tests of scale-out (docs/scale.md) that need no GPU: `kopt tune --gpus` on CPU
# stand-ins (KOPT_SCALE_STANDIN=MS: each evaluation sleeps MS and returns a time that is a
# hash of the point) spreads the evaluations over every slot, stores each point once with
# the device that measured it, finds the same best as one slot, and is faster by at least
# 0.85 x N; what held the slots back is said (compiles: KOPT_SCALE_STANDIN_COMPILE=MS stands
# in for them; rounds of one point); mixed device models re-time the finalists on slot 0; bad --gpus values are
# usage errors; kopt bench --gpus evaluates each problem once on one of the GPUs; a tune
# confined to one core (taskset, as mpirun binds ranks) with 2 compile threads warns. Then
# MPI: `mpirun --oversubscribe -np 3` of kopt with stand-ins (rank 0 searches and stores,
# ranks 1 and 2 evaluate) finds the same best; and with rank 2 killed
# (SIGKILL) mid-run nothing is lost (every point of the budget is stored, the killed rank's
# evaluation in flight is done by rank 1) and nothing is evaluated twice. Without mpirun
# the MPI cases print "skipped: no MPI".
# usage: test_scale.sh /path/to/kopt /path/to/examples   (prints "ktest: N passed, M failed")
set -u

KOPT=${1:?usage: test_scale.sh KOPT_BINARY EXAMPLES_DIR}
EXAMPLES=${2:?usage: test_scale.sh KOPT_BINARY EXAMPLES_DIR}
KOPT=$(cd "$(dirname "$KOPT")" && pwd)/$(basename "$KOPT")
EXAMPLES=$(cd "$EXAMPLES" && pwd)
PROB=$EXAMPLES/sgemm
TMPL=$EXAMPLES/sgemm/tune.cu

if ! command -v python3 >/dev/null 2>&1; then
    echo "skipped: python3 is needed to read the results"
    exit 0
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/ktest-scale-XXXXXX") || exit 1
trap 'rm -rf "$WORK"' EXIT
export KOPT_CACHE_DIR="$WORK/cache"
export KOPT_DB="$WORK/default.db"
unset KOPT_SCALE_STANDIN_MODELS KOPT_SCALE_STANDIN_LOG KOPT_NO_MPI
cd "$WORK" || exit 1

passed=0 failed=0 case_failed=0 current=""
OUT="$WORK/stdout" ERR="$WORK/stderr"
begin() { current=$1; case_failed=0; }
fail() { echo "$current: $*" >&2; case_failed=1; }
end() {
    if [ "$case_failed" = 0 ]; then passed=$((passed + 1)); echo "ok   $current"
    else
        failed=$((failed + 1)); echo "FAIL $current"
        echo "---- stdout:" >&2; head -60 "$OUT" >&2; echo "---- stderr:" >&2; head -40 "$ERR" >&2
    fi
}
has() { grep -Eq -- "$1" "$OUT" || fail "stdout lacks /$1/"; }
expect_rc() { [ "$rc" = "$1" ] || fail "exit code $rc, expected $1"; }
# a query's rows as sqlite3 prints them (columns joined by |)
sql() { python3 -c 'import sqlite3, sys
for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2]):
    print("|".join("" if v is None else str(v) for v in r))' "$1" "$2"; }
# tune with stand-ins: MS, then kopt tune arguments
standin() {
    local ms=$1; shift
    KOPT_SCALE_STANDIN=$ms "$KOPT" tune "$PROB" "$TMPL" --strategy random --no-progress "$@" \
        >"$OUT" 2>"$ERR"
    rc=$?
}

# ---- one host, several GPUs (stand-ins) ----------------------------------------------------

begin "--gpus 0,1,2,3: every slot evaluates, each point stored once with its device"
standin 10 --gpus 0,1,2,3 --budget 40 --db "$WORK/g4.db"
expect_rc 0
has "stopped \(budget\) after 40 evaluations \(40 new"
[ "$(grep -Ec '^ +stand-in [0-3] |^slots +stand-in 0 ' "$OUT")" = 4 ] || fail "not 4 slot lines"
[ "$(sql g4.db 'select count(*), count(distinct label) from tune_evals')" = "40|40" ] ||
    fail "the store does not hold 40 distinct points"
[ "$(sql g4.db 'select count(distinct device_index) from tune_evals')" = 4 ] ||
    fail "not every device measured"
nodev="select count(*) from tune_evals where device_name is null or host is null"
[ "$(sql g4.db "$nodev")" = 0 ] ||
    fail "a row lacks its device"
[ "$(sql g4.db 'pragma user_version')" -ge 9 ] || fail "the store is not at schema version 9 or later"
sql g4.db 'select devices from tune_runs' | grep -q "stand-in 3: kopt stand-in@" ||
    fail "the tuning run does not list its devices"
end

begin "--gpus 0,1,2 evaluates the same points and finds the same best as one slot"
standin 2 --budget 30 --no-store --json
cp "$OUT" one.json
standin 2 --gpus 0,1,2 --budget 30 --no-store --json
cp "$OUT" three.json
expect_rc 0
python3 - one.json three.json <<'EOF' || fail "results differ"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
assert a["best"] == b["best"], (a["best"], b["best"])
# the same points (in the order their outcomes arrived: with 3 slots, not the asking order)
assert sorted(map(str, a["evaluated_points"])) == sorted(map(str, b["evaluated_points"])), \
    "other points"
assert len(b["slots"]) == 3 and sum(s["evaluations"] for s in b["slots"]) == 30, b["slots"]
assert len(a["slots"]) == 1 and a["slots"][0]["evaluations"] == 30, a["slots"]
EOF
end

begin "4 slots are at least 0.85 x 4 faster than 1 at a fixed budget"
standin 60 --budget 32 --no-store --json
cp "$OUT" t1.json
standin 60 --gpus 0,1,2,3 --budget 32 --no-store --json
cp "$OUT" t4.json
python3 - t1.json t4.json <<'EOF' || fail "speed-up below 0.85 x 4"
import json, sys
t1, t4 = (json.load(open(p))["elapsed_s"] for p in sys.argv[1:3])
s = t1 / t4
print("  1 slot %.2f s, 4 slots %.2f s: speed-up %.2f (efficiency %.2f)" % (t1, t4, s, s / 4))
assert s >= 0.85 * 4
EOF
end

begin "held back: said when the slots waited for compiles, or for rounds of one point"
KOPT_SCALE_STANDIN_COMPILE=200 standin 20 --gpus 0,1,2,3 --budget 16 --compile-threads 1 \
    --no-store --json
cp "$OUT" hb_compile.json
KOPT_SCALE_STANDIN=20 "$KOPT" tune "$PROB" "$TMPL" --strategy annealing --gpus 0,1,2,3 \
    --budget 24 --seed 3 --no-progress --no-store --json >"$OUT" 2>"$ERR"
cp "$OUT" hb_rounds.json
KOPT_SCALE_STANDIN_COMPILE=200 standin 20 --gpus 0,1,2,3 --budget 16 --compile-threads 1 \
    --no-store
has "^held back the GPUs were busy [0-9]+% of the run and waited [0-9]+% for compiles: 1 compile thread"
python3 - hb_compile.json hb_rounds.json <<'EOF' || fail "held back not said as it should be"
import json, sys
c, r = (json.load(open(p)) for p in sys.argv[1:3])
g = c["gpu_time"]
print("  compile-bound: busy %.2f, compile wait %.2f, idle %.2f" % (g["busy"], g["compile_wait"], g["idle"]))
# 16 stand-in compiles of 200 ms on one thread (3.2 s) against 16 x 20 ms of evaluation
assert g["gpus"] == 4 and g["compile_wait"] > 0.5 and g["busy"] < 0.3, g
assert "for compiles" in c["held_back"], c["held_back"]
g = r["gpu_time"]
print("  rounds of one: busy %.2f, idle %.2f: %s" % (g["busy"], g["idle"], r["held_back"]))
# annealing proposes one point a round: one slot of four works at a time
assert g["busy"] < 0.5 and "annealing proposed 1.0 new point(s) a round for 4 GPUs" in r["held_back"], r
EOF
end

begin "mixed models: the finalists are re-timed on slot 0"
KOPT_SCALE_STANDIN_MODELS="Model A,Model B" standin 2 --gpus 0,1 --budget 20 --db "$WORK/mix.db"
expect_rc 0
has "mixed +the GPUs differ \(slot 0: Model A, slot 1: Model B\)"
has "4 finalist\(s\) re-timed on slot 0"
best=$(sql mix.db "select best_label from tune_runs")
[ "$(sql mix.db "select device_index from tune_evals where label='$best'")" = 0 ] ||
    fail "the best was not measured on slot 0"
end

begin "bad --gpus values are usage errors"
standin 1 --gpus 0,0 --budget 2 --no-store
expect_rc 2
grep -q "named twice" "$ERR" || fail "no 'named twice'"
standin 1 --gpus x --budget 2 --no-store
expect_rc 2
grep -q "not a GPU index" "$ERR" || fail "no 'not a GPU index'"
end

begin "kopt bench --gpus 0,1: every problem evaluated once, on one of the GPUs, stored"
nprob=$(ls -d "$EXAMPLES"/*/problem.json | wc -l)
KOPT_SCALE_STANDIN=1 "$KOPT" bench "$EXAMPLES" --kind reference --no-compile --trials 1 \
    --gpus 0,1 --db "$WORK/bench.db" --json >"$OUT" 2>"$ERR"
rc=$?
expect_rc 0
python3 - "$OUT" "$nprob" <<'EOF' || fail "bench rows are wrong"
import json, sys
d = json.load(open(sys.argv[1]))
names = [r["problem"] for r in d["rows"]]
assert len(names) == int(sys.argv[2]) == len(set(names)), names
assert all(r["gpu"] in (0, 1) for r in d["rows"]), [r.get("gpu") for r in d["rows"]]
EOF
brows=$(sql bench.db 'select count(*), count(distinct problem) from bench_rows')
[ "$brows" = "$nprob|$nprob" ] ||
    fail "the suite's rows are not stored once each"
end

begin "compile depth: threads a share of the usable CPUs over the GPUs, rounds twice the threads"
# the defaults (kopt_tune_default_compile_threads, _lookahead; docs/scale.md): the usable
# CPUs less one per GPU, shared over the GPUs, 2 to 16 a GPU, at most the CPUs (at least 2)
# and 64; the lookahead twice the threads, at least 8 a GPU; both said in --json and text
PIN=()      # a prefix of the kopt command (taskset)
depth() {   # LABEL EXPECT_THREADS EXPECT_LOOKAHEAD [tune options]: "-" expects the default
    local label=$1 want_t=$2 want_l=$3; shift 3
    KOPT_SCALE_STANDIN=1 "${PIN[@]}" "$KOPT" tune "$PROB" "$TMPL" --strategy random \
        --no-progress --budget 4 --no-store --json "$@" >"$OUT" 2>"$ERR"
    rc=$?
    cp "$OUT" "depth_$label.json"
    expect_rc 0
    python3 - "depth_$label.json" "$want_t" "$want_l" <<'EOF' || fail "$label: compile depth is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
gpus = len(d["slots"])
cpus = d["cpus_usable"]
def threads(cpus, gpus):
    per = min(16, max(2, (cpus - gpus) // gpus))
    n = per * gpus
    if n > cpus:
        n = max(cpus, 2)
    return min(n, 64)
want_t = threads(cpus, gpus) if sys.argv[2] == "-" else int(sys.argv[2])
want_l = max(2 * want_t, 8 * gpus) if sys.argv[3] == "-" else int(sys.argv[3])
print("  %s: %d GPU(s), %d usable CPU(s): %d compile threads, lookahead %d" %
      (sys.argv[1], gpus, cpus, d["compile_threads"], d["lookahead"]))
assert 1 <= cpus, cpus
assert d["compile_threads"] == want_t, (d["compile_threads"], want_t)
assert d["lookahead"] == want_l, (d["lookahead"], want_l)
assert d["compile_helpers"] == 0, d["compile_helpers"]   # stand-ins compile nothing
EOF
}
depth g4 - - --gpus 0,1,2,3
depth g1 - - --gpus 0
# as given: section 6 of bench/results/2026-11-26-h200x4-scale-warmfix, in one option each
depth g1_ct12 12 24 --gpus 0 --compile-threads 12
depth g4_ct48 48 96 --gpus 0,1,2,3 --compile-threads 48
depth g4_ct0 0 32 --gpus 0,1,2,3 --compile-threads 0
depth g2_la5 - 16 --gpus 0,1 --lookahead 5
depth g1_la40 - 40 --gpus 0 --lookahead 40
if command -v taskset >/dev/null 2>&1; then
    # one usable CPU: the minimum of 2 threads (the old default), 8 points a GPU
    PIN=(taskset -c 0)
    depth one_cpu_g1 2 8 --gpus 0
    depth one_cpu_g4 2 32 --gpus 0,1,2,3
    PIN=()
    python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["cpus_usable"] == 1' \
        depth_one_cpu_g1.json || fail "taskset -c 0: cpus_usable is not 1"
fi
standin 1 --budget 4 --no-store --gpus 0,1 --compile-threads 3
has "^compile +3 thread\(s\), 16 point\(s\) asked ahead \(as given; [0-9]+ usable CPU\(s\)\)"
end

begin "tune warns when its CPU affinity allows fewer CPUs than its compile threads"
if command -v taskset >/dev/null 2>&1 && [ "$(nproc --all)" -ge 2 ]; then
    KOPT_SCALE_STANDIN=5 taskset -c 0 "$KOPT" tune "$PROB" "$TMPL" --sizes M=256,N=256,K=256 \
        --strategy random --budget 3 --gpus 0 --compile-threads 2 --no-store --no-progress \
        > "$OUT" 2> "$ERR" || fail "exit $?: $(tail -3 "$ERR")"
    grep -q "may run on only 1 CPU" "$ERR" || fail "no warning on one core: $(tail -3 "$ERR")"
    KOPT_SCALE_STANDIN=5 "$KOPT" tune "$PROB" "$TMPL" --sizes M=256,N=256,K=256 \
        --strategy random --budget 3 --gpus 0 --compile-threads 2 --no-store --no-progress \
        > "$OUT" 2> "$ERR" || fail "exit $?: $(tail -3 "$ERR")"
    grep -q "may run on only" "$ERR" && fail "a warning with every CPU usable: $(tail -3 "$ERR")"
else
    echo "  skipped: taskset or a second CPU missing"
fi
end

# ---- MPI ranks on this machine ---------------------------------------------------------------

MPIRUN=$(command -v mpirun || true)
if [ -z "$MPIRUN" ]; then
    echo "skipped: no MPI (mpirun not found: apt-get install openmpi-bin)"
    echo "ktest: $passed passed, $failed failed"
    [ "$failed" = 0 ]
    exit
fi
MPI_ARGS=(--allow-run-as-root --oversubscribe --bind-to none --enable-recovery
          --mca orte_abort_on_non_zero_status 0)

begin "mpirun -np 3: rank 0 searches and stores, ranks 1 and 2 evaluate, same best"
timeout 120 "$MPIRUN" "${MPI_ARGS[@]}" -np 3 -x KOPT_SCALE_STANDIN=20 \
    "$KOPT" tune "$PROB" "$TMPL" --strategy random --budget 30 --db "$WORK/mpi.db" \
    --no-progress --json >"$OUT" 2>"$ERR"
rc=$?
expect_rc 0
cp "$OUT" mpi.json
standin 20 --budget 30 --no-store --json
python3 - mpi.json "$OUT" <<'EOF' || fail "the MPI run differs"
import json, sys
m, one = (json.load(open(p)) for p in sys.argv[1:3])
assert m["best"] == one["best"], (m["best"], one["best"])
ranks = sorted(s["rank"] for s in m["slots"])
assert ranks == [1, 2] and all(s["evaluations"] > 0 for s in m["slots"]), m["slots"]
EOF
[ "$(sql mpi.db 'select count(*), count(distinct label) from tune_evals')" = "30|30" ] ||
    fail "the store does not hold 30 distinct points"
[ "$(sql mpi.db 'select distinct rank from tune_evals order by rank' | paste -sd,)" = "1,2" ] ||
    fail "the rows do not name ranks 1 and 2"
end

begin "mpirun -np 3 with rank 2 killed mid-run: nothing lost, nothing evaluated twice"
LOG=$WORK/standin.log
: >"$LOG"
timeout 180 "$MPIRUN" "${MPI_ARGS[@]}" -np 3 -x KOPT_SCALE_STANDIN=250 -x KOPT_SCALE_LOST_S=3 \
    -x KOPT_SCALE_STANDIN_LOG="$LOG" \
    "$KOPT" tune "$PROB" "$TMPL" --strategy random --budget 30 --db "$WORK/kill.db" \
    --no-progress >"$OUT" 2>"$ERR" &
mpipid=$!
for _ in $(seq 300); do
    [ "$(grep -c '^done 2 ' "$LOG")" -ge 3 ] && break
    sleep 0.1
done
victim=$(awk '$1 == "start" && $2 == 2 {p = $3} END {print p}' "$LOG")
sleep 0.1                                   # rank 2 is inside its fourth evaluation
if [ -n "$victim" ]; then kill -9 "$victim"; else fail "rank 2 never started"; fi
wait "$mpipid"
rc=$?
[ "$rc" = 0 ] || fail "mpirun exit code $rc"
has "rank 2 .*LOST"
has "stopped \(budget\) after 30 evaluations \(30 new"
[ "$(sql kill.db 'select count(*), count(distinct label) from tune_evals')" = "30|30" ] ||
    fail "the store does not hold the 30 points once each"
python3 - "$LOG" <<'EOF' || fail "an evaluation was lost or done twice"
import sys, collections
start, done = collections.defaultdict(list), collections.Counter()
for line in open(sys.argv[1]):
    what, rank, pid, shape, point = line.split()
    (start[(shape, point)].append(rank) if what == "start" else done.update([(shape, point)]))
twice = [k for k, n in done.items() if n > 1]
assert not twice, "done twice: %s" % twice
assert len(done) == 30, "%d points done" % len(done)
orphans = [k for k, r in start.items() if "2" in r and k not in done]
assert not orphans, "started on rank 2, never done: %s" % orphans
requeued = [k for k, r in start.items() if r[:1] == ["2"] and "1" in r]
assert len(requeued) == 1, "the killed rank's point was not redone once: %s" % requeued
print("  rank 2's point in flight %s was done by rank 1" % (requeued[0],))
EOF
end

echo "ktest: $passed passed, $failed failed"
[ "$failed" = 0 ]
