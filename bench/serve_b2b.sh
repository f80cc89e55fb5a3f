#!/usr/bin/env bash
# kopt serve, back to back (issue 27): examples/softmax fast.cu through `kopt eval --server`,
# N back-to-back requests (default 5) and M with a 1 s gap (default 3), after one warm-up.
# Prints one line per request: the client's process wall time, the served evaluation's
# total, how long the parent waited for its workers (trace workers_ready), the candidate's
# and the reference's kernel times (so replacements made during the timed runs would
# show), and the serve log's line (how ready the taken workers were, the pool after).
# `--workers 2` gives the pool one evaluation's workers (the old default). SESSION (default
# 0) more requests back to back in one served session (`kopt eval --server --session`: the
# reference's run reused, the candidate's worker serving). Under each request, the steps of
# 5 ms or more: the parent's, then the candidate's and reference's worker setup steps.
# Run on the GPU machine from the repo root with build/ carried (or $KOPT_BUILD / $KOPT_BIN):
#   bash bench/serve_b2b.sh [--workers N] [B2B] [GAPPED] [SESSION]
# Outputs go to $OUT/serve_b2b_default or _wN (or under /tmp/kopt-out).
set -u
K=${KOPT_BIN:-$PWD/${KOPT_BUILD:-build}/kopt}
W=(); tag=default; [ "${1:-}" = --workers ] && { W=(--workers "$2"); tag=w$2; shift 2; }
NB=${1:-5}; NG=${2:-3}; NS=${3:-0}
O=${OUT:-/tmp/kopt-out}/serve_b2b_$tag; mkdir -p "$O"
export KOPT_CACHE_DIR=${KOPT_CACHE_DIR:-/tmp/kopt-cache} KOPT_DB=${KOPT_DB:-/tmp/kopt-serve-b2b.db}
S=/tmp/kopt-b2b-$$.sock
"$K" serve --socket "$S" --idle-exit 300 "${W[@]}" 2> "$O/serve.err" & sp=$!
trap 'kill $sp 2>/dev/null; wait $sp 2>/dev/null' EXIT
for _ in $(seq 100); do grep -q listening "$O/serve.err" && break; sleep 0.1; done
head -1 "$O/serve.err"
sleep 2   # the pool's first workers make their contexts
one() {   # label [extra eval arguments]
  local s e l=$1
  shift
  s=$(date +%s%N)
  "$K" eval --server="$S" "$@" examples/softmax examples/softmax/fast.cu --json > "$O/$l.json" 2> "$O/$l.err"
  e=$(date +%s%N)
  python3 - "$O/$l.json" "$l" $(( (e - s) / 1000000 )) "$(grep 'kopt serve: eval' "$O/serve.err" | tail -1 | sed 's/.*; workers/workers/')" <<'PY'
import json, sys
f, label, wall, log = sys.argv[1:5]
try:
    d = json.load(open(f))
except Exception as e:
    print("%-8s wall %5s ms  unreadable: %s" % (label, wall, e)); sys.exit()
w = d.get("wall_ms") or {}; tr = (d.get("trace") or {}).get("parent") or {}
t = d.get("timing") or {}; rt = d.get("reference_timing") or {}
print("%-8s wall %5s ms  %-3s eval %4.0f ms  workers_ready %4.0f ms  kernel %.4f ms (ref %.4f) | %s" % (
    label, wall, d.get("verdict"), w.get("total") or 0, tr.get("workers_ready") or 0,
    t.get("median_ms") or 0, rt.get("median_ms") or 0, log))
big = lambda d: " ".join("%s %.0f" % (k, v) for k, v in (d or {}).items()
                         if isinstance(v, (int, float)) and v >= 5)
print("         parent: %s | candidate setup: %s | reference setup: %s" % (
    big(tr), big(w.get("candidate_setup_steps")), big(w.get("reference_setup_steps"))))
PY
}
one warmup   # compiles into the cache; the pool learns the buffer size
sleep 2
for i in $(seq "$NB"); do one "b2b_$i"; done
for i in $(seq "$NG"); do sleep 1; one "gap1s_$i"; done
for i in $(seq "$NS"); do one "session_$i" --session=b2b; done
