#!/usr/bin/env bash
# kopt optimize --gpus: expansions per minute on 1 GPU and on every GPU of the machine (issue
# 29, docs/scale.md), on a PyTorch-reference problem (tests/optimize/kb_tanh) with the
# scripted model answering a kernel no node has at every expansion (KOPT_SCRIPT_FRESH=1), so
# that every expansion is evaluated. From the repo root with a build carried:
#   bash bench/optimize_gpus.sh            (OPT_ITERS, default 48; KOPT_BUILD, default build;
#                                           OPT_OUT, default $OUT/optgpus; OPT_ARGS: more
#                                           options of kopt optimize, e.g. --overlap;
#                                           OPT_RUNS: the GPU counts run, default "1,N")
# Each run gets a fresh store, work folder and compile cache; results go to $OUT/optgpus
# (each run's log and JSON, its evaluations with their traces in LABEL.evaluations.jsonl,
# its store LABEL.db (the nodes' times: opt_nodes.updated_at), summary.txt), a table last. OPT_MONITOR=1 (the default) samples
# the host while each run goes (vmstat; nvidia-smi: each GPU's utilisation and the processes
# with a context on it, every 0.5 s) and sums it up: the CPUs' busy share, each GPU's
# utilisation, how many processes a GPU had at once, and any process on several GPUs.
# Each run's rate is given over its whole wall and after the root (from the root's evaluation
# done to the last node's): the root's evaluation is the same fixed cost on 1 and N GPUs.
set -u
O=${OPT_OUT:-${OUT:-/tmp/kopt-out}/optgpus}; mkdir -p "$O"
B=${KOPT_BUILD:-build}; K=$PWD/$B/kopt
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$B/CMakeCache.txt" 2>/dev/null)
if [ -n "$src" ] && [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; fi
NG=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$NG" -ge 1 ] || { echo "skipped: no GPU"; exit 0; }
ITERS=${OPT_ITERS:-48}
S=$O/summary.txt; : > "$S"
# the scripted model's kernel for this problem: kb_tanh/1.cu scales by 1 (the CPU tests judge
# it with the scripted evaluator); the live evaluator needs the model's scale, 2
L=$(mktemp -d); trap 'rm -rf "$L"' EXIT
sed 's/n, 1\.0f);/n, 2.0f);/' tests/optimize/kb_tanh/1.cu > "$L/1.cu"
grep -q 'n, 2.0f);' "$L/1.cu" || { echo "bench: kb_tanh/1.cu changed: set its scale here"; exit 1; }
mon_start() { # label: sample the host in the background
  [ "${OPT_MONITOR:-1}" = 1 ] || return 0
  vmstat -n 1 > "$O/$1.vmstat" 2>/dev/null & MON="$!"
  nvidia-smi --query-gpu=timestamp,index,utilization.gpu --format=csv,noheader,nounits \
    -lms 500 > "$O/$1.gpu" 2>/dev/null & MON="$MON $!"
  nvidia-smi --query-compute-apps=timestamp,gpu_uuid,pid --format=csv,noheader \
    -lms 500 > "$O/$1.apps" 2>/dev/null & MON="$MON $!"
}
mon_stop() { # label: stop the sampling, one line of what it saw
  [ "${OPT_MONITOR:-1}" = 1 ] || return 0
  kill $MON 2>/dev/null; wait $MON 2>/dev/null
  nvidia-smi --query-gpu=index,uuid --format=csv,noheader > "$O/$1.uuids" 2>/dev/null
  python3 - "$O/$1" <<'PY' | tee -a "$S"
import collections, statistics as st, sys
b = sys.argv[1]
busy = []
for line in open(b + ".vmstat"):
    f = line.split()
    if len(f) >= 15 and f[14].isdigit():
        busy.append(100 - int(f[14]))          # 100 - idle
util = collections.defaultdict(list)
for line in open(b + ".gpu"):
    f = [x.strip() for x in line.split(",")]
    if len(f) == 3 and f[2].isdigit():
        util[f[1]].append(int(f[2]))
index = dict((u.strip(), i.strip()) for i, u in (l.split(",") for l in open(b + ".uuids") if "," in l))
at = collections.defaultdict(set)          # (time, GPU) -> pids
gpus_of = collections.defaultdict(set)     # pid -> GPUs
for line in open(b + ".apps"):
    f = [x.strip() for x in line.split(",")]
    if len(f) == 3 and f[2].isdigit():
        g = index.get(f[1], f[1][:12])
        at[(f[0], g)].add(f[2]); gpus_of[f[2]].add(g)
most = collections.defaultdict(int)
for (t, g), p in at.items():
    most[g] = max(most[g], len(p))
multi = {p: sorted(g) for p, g in gpus_of.items() if len(g) > 1}
print("       host: CPUs busy %s; GPU utilisation %% (mean) %s; processes at once per GPU (most) %s; "
      "processes seen %d, on several GPUs %s" % (
      "%.0f%% mean, %d%% max" % (st.mean(busy), max(busy)) if busy else "-",
      {g: round(st.mean(v)) for g, v in sorted(util.items())}, dict(sorted(most.items())),
      len(gpus_of), multi or "none"))
PY
}
run() { # label gpus
  local l=$1 g=$2 t w
  rm -rf /tmp/optg-$l.*
  mon_start "$l"
  t=$(date +%s.%N)
  KOPT_CACHE_DIR=/tmp/optg-$l.cache KOPT_PROMPTS=$PWD/prompts KOPT_SCRIPT_FRESH=1 \
    timeout 600 "$K" optimize tests/optimize/kb_tanh/problem \
    --llm "command:python3 tests/optimize/scripted_llm.py $L" \
    --iterations "$ITERS" --no-profile --gpus "$g" --workdir /tmp/optg-$l.w \
    --db /tmp/optg-$l.db --json ${OPT_ARGS:-} > "$O/$l.json" 2> "$O/$l.log"
  local rc=$?
  w=$(python3 -c "import time; print('%.1f' % (time.time() - $t))")
  mon_stop "$l"
  cp "/tmp/optg-$l.db" "$O/$l.db" 2>/dev/null
  python3 - "$O/$l.json" "$w" "$ITERS" "$l" "$rc" <<'PY' | tee -a "$S"
import collections, json, sys
w, iters, label, rc = float(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("%-6s rc %s: no JSON (%s)" % (label, rc, e)); sys.exit(0)
ev = [n for n in d["nodes"] if n.get("verdict") not in (None, "no_code", "not_template")]
per = collections.Counter(n.get("gpu") for n in ev if n.get("gpu") is not None)
verdicts = collections.Counter(n.get("verdict") for n in ev)
print("%-6s rc %s wall %6.1f s  expansions %d  evaluated %d %s  per GPU %s  %.1f expansions/min" %
      (label, rc, w, iters, len(ev), dict(verdicts), dict(sorted(per.items())), iters * 60 / w))
st = d.get("stats", {})
print("       search: wall %.1f s, LLM %.1f s, evaluation %.1f s of which compiles ahead %.1f s" %
      tuple(st.get(k, 0) / 1000 for k in ("wall_ms", "llm_ms", "eval_ms", "prepare_ms")))
PY
  # where an evaluation's time went (the store's evaluations: wall_ms of each, mean)
  python3 - "/tmp/optg-$l.db" "$l" "$O/$l.evaluations.jsonl" "$t" "$ITERS" <<'PY' | tee -a "$S"
import datetime, json, sqlite3, statistics as st, sys
try:
    db = sqlite3.connect(sys.argv[1])
    rows = db.execute("SELECT result_json, device_index FROM evaluations ORDER BY id").fetchall()
    done = [r[0] for r in db.execute("SELECT updated_at FROM opt_nodes ORDER BY node")]
except Exception as e:
    print("       no evaluations read (%s)" % e); sys.exit(0)
# the search's rate once the root is evaluated (node 0's last update to the last node's): the
# root's evaluation (and the start-up before it) is the same fixed cost on 1 and N GPUs
def at(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
if len(done) > 1 and done[0]:
    root, last = at(done[0]), max(at(d) for d in done if d)
    if last > root:
        print("       after the root (done at +%.1f s): %s expansions in %.1f s, %.1f expansions/min"
              " after root" % (root - float(sys.argv[4]), sys.argv[5], last - root,
                               int(sys.argv[5]) * 60 / (last - root)))
walls = [json.loads(r[0]).get("wall_ms") or {} for r in rows if r[0]]
keys = ("total", "compile", "reference_worker_setup", "candidate_worker_setup", "verify", "time",
        "compare")
print("       %d evaluations, mean ms: %s" % (len(walls), ", ".join(
    "%s %.0f" % (k, st.mean(w.get(k) or 0 for w in walls)) for k in keys) if walls else "-"))
# the parent's steps of each evaluation (its trace), mean ms, the largest first
steps = {}
for r in rows:
    t = (json.loads(r[0]).get("trace") or {}) if r[0] else {}
    for k, v in (t.get("parent") or {}).items():
        steps.setdefault(k, []).append(v)
print("       steps, mean ms: %s" % ", ".join("%s %.0f" % (k, sum(v) / len(rows)) for k, v in
      sorted(steps.items(), key=lambda kv: -sum(kv[1]))[:10]))
# how many candidates found a worker started ahead for them (torch imported, context made)
res = [dict(json.loads(r[0]), device_index=r[1]) for r in rows if r[0]]
print("       candidate workers started ahead: %d of %d" %
      (sum(1 for j in res if j.get("worker_ahead")), len(res)))
# inside the workers: their own traces (the PyTorch worker's steps), mean ms per evaluation
# (median in brackets: a mean that is a few slow ones shows there); steps named ahead_* ran
# in a worker started ahead before its job came, off the evaluation's path: said apart
def mean_median(v):
    return "%.0f (%.0f)" % (sum(v) / len(rows), st.median(v + [0] * (len(rows) - len(v))))
for who in ("candidate", "reference", "compile"):
    steps = {}
    for r in rows:
        t = (json.loads(r[0]).get("trace") or {}) if r[0] else {}
        for k, v in (t.get(who) or {}).items():
            if isinstance(v, (int, float)):
                steps.setdefault(k, []).append(v)
    during = sorted(((k, v) for k, v in steps.items() if not k.startswith("ahead_")),
                    key=lambda kv: -sum(kv[1]))
    before = sorted((k, v) for k, v in steps.items() if k.startswith("ahead_"))
    if steps:
        print("       %s worker, mean ms: %s%s" % (who, ", ".join(
            "%s %s" % (k, mean_median(v)) for k, v in during[:12]),
            "; before its job: " + ", ".join("%s %s" % (k, mean_median(v)) for k, v in before)
            if before else ""))
# every evaluation's traces and times, one JSON line each, for a closer look later
with open(sys.argv[3], "w") as f:
    for j in res:
        row = {k: j.get(k) for k in ("verdict", "worker_ahead", "wall_ms", "trace", "device_index")}
        row["device_uuid"] = (j.get("device") or {}).get("uuid")
        f.write(json.dumps(row) + "\n")
PY
}
RUNS=",${OPT_RUNS:-1,$NG},"   # which GPU counts run: 1 and every GPU, or OPT_RUNS=$NG alone
case "$RUNS" in *,1,*) run g1 0 ;; esac
[ "$NG" -gt 1 ] && case "$RUNS" in *,$NG,*) run g$NG "$(seq -s, 0 $((NG - 1)))" ;; esac
python3 - "$S" <<'PY'
import re, sys
rows = {m.group(1): float(m.group(2)) for m in (re.match(r"(g\d+) .* ([0-9.]+) expansions/min", l) for l in open(sys.argv[1])) if m}
if "g1" in rows and len(rows) > 1:
    n = max(rows, key=lambda k: int(k[1:]))
    print("speed-up %s over g1: %.2fx (goal >= 3x on 4 GPUs)" % (n, rows[n] / rows["g1"]))
after, label = {}, None   # the same once the root is evaluated (a fixed cost on 1 and N GPUs)
for l in open(sys.argv[1]):
    m = re.match(r"(g\d+) ", l)
    label = m.group(1) if m else label
    m = re.search(r"([0-9.]+) expansions/min after root", l)
    if m and label:
        after[label] = float(m.group(1))
if "g1" in after and len(after) > 1:
    n = max(after, key=lambda k: int(k[1:]))
    print("speed-up %s over g1 after the root: %.2fx" % (n, after[n] / after["g1"]))
PY
