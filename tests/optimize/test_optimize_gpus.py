"""kopt optimize --gpus on the CPU (docs/scale.md): the search spread over W GPUs, here CPU
stand-ins (the scripted evaluator behind a delay per "GPU": KOPT_SCALE_STANDIN=MS, each
evaluation logged as it starts and ends in KOPT_SCALE_STANDIN_LOG), with the scripted
`command:` LLM of test_optimize.py (KOPT_SCRIPT_LINEAGE=1: children of different parents
differ, so a wide step has work for every GPU).

Checks: (a) --gpus with one GPU gives the same tree (signature) as the plain search, for
each policy, and records the GPU per node (JSON and store); (b) with 4 stand-ins the
evaluations overlap (4 in flight at once in the log, evaluation time well under the sum of
the delays), every evaluation is stored once (opt_nodes with its device), the picks of a
step differ, the best is the plain search's best, --replay rebuilds the tree; (c) kill -9
while 2 of 4 outcomes had arrived, then again with 2 in flight, then --resume: the same
tree as an uninterrupted run, nothing evaluated twice, nothing lost (every evaluation that
started and never ended is done later, the search memory is whole); (d) bad --gpus values
are usage errors that say what is wrong; (e) --overlap: the model is asked while a step's
candidates are evaluated (asks between a stand-in's start and done; never without it), the
tree is the same whatever the GPUs' delays and on one GPU with or without a thread of its
own, --replay rebuilds it, a kill -9 while the next step is being asked and again while two
steps are pending, then --resume, gives the uninterrupted tree; --overlap with manual
replies, --propose or --evaluate is refused, and a resumed tree keeps what it began with; a
kill right after a templatizer's node is written, in a step that also expands, resumes to
the uninterrupted tree (the step is stored whole).

Usage: python3 test_optimize_gpus.py KOPT   (exit 1 on a failure)
"""
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

from optlib import check, optimize, rows, run

KOPT = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROBLEM = os.path.join(ROOT, "examples/softmax")
TMP = tempfile.mkdtemp(prefix="kopt-optimize-gpus-test-")
LLM = "command:%s %s %s" % (sys.executable, os.path.join(HERE, "scripted_llm.py"),
                            os.path.join(HERE, "softmax"))
BASE_ENV = {"KOPT_PROMPTS": os.path.join(ROOT, "prompts"), "KOPT_SCRIPT_LINEAGE": "1"}
for k in ("KOPT_SCALE_STANDIN", "KOPT_SCALE_STANDIN_LOG", "KOPT_SCALE_STANDIN_STAGGER",
          "KOPT_SCALE_STANDIN_MODELS", "KOPT_FAKE_EVAL_LOG"):
    os.environ.pop(k, None)


def env_of(extra):
    e = dict(os.environ, **BASE_ENV)
    e.update(extra or {})
    return e


def kopt(db, *args, env=None):
    return optimize(KOPT, db, args, env_of(env), TMP)


def db_path(name):
    return os.path.join(TMP, name + ".db")


def log_events(path, warm=False):
    """(what, gpu, node, hash) per line of a stand-in log: its evaluations, or (warm) its
    getting ready beside the root ("warm-start", "warm-done")."""
    if not os.path.exists(path):
        return []
    out = []
    for line in open(path):
        w = line.split()
        if len(w) == 5 and w[0].startswith("warm-") == warm:
            out.append((w[0], int(w[1]), w[3], w[4]))
    return out


def peak_in_flight(events):
    n = peak = 0
    for what, _, _, _ in events:
        n += 1 if what == "start" else -1
        peak = max(peak, n)
    return peak


def evaluated(doc):
    """The nodes a GPU evaluated (a node that took a twin's outcome records none)."""
    return [n for n in doc.get("nodes", []) if "gpu" in n]


# ---- (a) one GPU: the plain search's tree ------------------------------------------------------

def test_one_gpu():
    base = [PROBLEM, "--evaluator", "fake", "--llm", LLM, "--json"]
    for pol, extra in (("mcts", ["--iterations", "8"]), ("greedy", ["--iterations", "6"]),
                       ("beam", ["--iterations", "6"]), ("best-of-n", ["--iterations", "4"])):
        _, plain = kopt(db_path("plain-" + pol), *base, "--search", pol, *extra)
        db = db_path("one-" + pol)
        p, one = kopt(db, *base, "--search", pol, *extra, "--gpus", "0",
                      env={"KOPT_SCALE_STANDIN": "0"})
        check(p.returncode == 0 and plain.get("signature") and
              one.get("signature") == plain.get("signature") and one.get("width") == 1,
              "--gpus 0 (%s): the same tree as without --gpus (%d nodes)" %
              (pol, len(one.get("nodes", []))))
        if pol == "mcts":
            ev = evaluated(one)
            stored = rows(db, "SELECT count(*) FROM opt_nodes WHERE device_index = 0 AND "
                          "device_name = 'kopt stand-in' AND state = 'done'")[0][0]
            check(ev and all(n["gpu"] == 0 and n.get("gpu_name") == "kopt stand-in" for n in ev)
                  and stored == len(ev) and one.get("gpus", [{}])[0].get("evaluations") == len(ev),
                  "--gpus 0: each evaluated node records its GPU, in the JSON and the store "
                  "(%d nodes)" % len(ev))
            check(not any("gpu" in n for n in plain.get("nodes", [])) and
                  not plain.get("gpus"), "without --gpus the scripted evaluator records no GPU")
    # the scripted evaluator alone (no $KOPT_SCALE_STANDIN) is a stand-in without delay too
    _, plain = kopt(db_path("plain-mcts2"), *base, "--iterations", "5")
    p, one = kopt(db_path("one-fake"), *base, "--iterations", "5", "--gpus", "3")
    check(p.returncode == 0 and one.get("signature") == plain.get("signature") and
          all(n["gpu"] == 3 for n in evaluated(one)) and evaluated(one),
          "--evaluator fake --gpus 3: stand-in 3, the same tree")


# ---- (b) four stand-ins --------------------------------------------------------------------------

def test_four():
    log = os.path.join(TMP, "four.log")
    db = db_path("four")
    args = [PROBLEM, "--evaluator", "fake", "--llm", LLM, "--iterations", "8"]
    p, doc = kopt(db, *args, "--gpus", "0,1,2,3", "--json", "-v",
                  env={"KOPT_SCALE_STANDIN": "150", "KOPT_SCALE_STANDIN_LOG": log})
    _, plain = kopt(db_path("four-plain"), *args, "--json")
    ev = log_events(log)
    ends = [e for e in ev if e[0] == "done"]
    nodes = doc.get("nodes", [])
    check(p.returncode == 0 and doc.get("width") == 4 and doc["stats"]["pending"] == 0 and
          len(nodes) > 10, "4 stand-ins: the run ends, width 4, nothing pending (%d nodes%s)"
          % (len(nodes), "" if p.returncode == 0 else "; " + p.stderr.strip()[-300:]))
    check(peak_in_flight(ev) == 4,
          "4 stand-ins: 4 evaluations in flight at once (peak %d in the log)" % peak_in_flight(ev))
    # the root runs alone on GPU 0; GPUs 1-3 get ready meanwhile, once each
    lines = [l.split() for l in open(log)] if os.path.exists(log) else []
    root_done = next((i for i, w in enumerate(lines) if w[0] == "done"), len(lines))
    warm_at = [i for i, w in enumerate(lines) if w[0] == "warm-start"]
    warm = log_events(log, warm=True)
    check(sorted(e[1] for e in warm if e[0] == "warm-start") == [1, 2, 3] and
          sorted(e[1] for e in warm if e[0] == "warm-done") == [1, 2, 3] and
          [w[1] for w in lines if w[0] == "start"][:1] == ["0"] and
          all(i < root_done for i in warm_at),
          "4 stand-ins: GPUs 1-3 get ready once each while the root is evaluated on GPU 0 "
          "(warm %s, root done at line %d)" % ([(e[0], e[1]) for e in warm], root_done))
    log0 = os.path.join(TMP, "four-nowarm.log")
    p0, doc0 = kopt(db_path("four-nowarm"), *args, "--gpus", "0,1,2,3", "--json",
                    env={"KOPT_SCALE_STANDIN": "20", "KOPT_SCALE_STANDIN_LOG": log0,
                         "KOPT_OPTIMIZE_WARM": "0"})
    check(p0.returncode == 0 and not log_events(log0, warm=True) and log_events(log0) and
          doc0.get("signature") == doc.get("signature"),
          "KOPT_OPTIMIZE_WARM=0: no GPU gets ready ahead, the same tree")
    check(sorted(set(e[1] for e in ends)) == [0, 1, 2, 3],
          "4 stand-ins: every GPU evaluated (%s)" % sorted(set(e[1] for e in ends)))
    n_ev = len(evaluated(doc))
    eval_ms = doc.get("stats", {}).get("eval_ms", 1e9)
    check(n_ev >= 8 and eval_ms < 0.6 * 150 * n_ev,
          "4 stand-ins: %d evaluations of 150 ms took %.0f ms of evaluation time (< 60%% of "
          "one after another)" % (n_ev, eval_ms))
    prep_ms = doc.get("stats", {}).get("prepare_ms", -1)
    check(0 <= prep_ms <= eval_ms, "4 stand-ins: the compiles ahead are a part of the "
          "evaluation time (%.0f of %.0f ms)" % (prep_ms, eval_ms))
    hashes = [e[3] for e in ends]
    check(len(hashes) == len(set(hashes)) == n_ev,
          "4 stand-ins: every candidate evaluated once (%d evaluations, %d evaluated nodes)" %
          (len(hashes), n_ev))
    st = rows(db, "SELECT count(*), sum(state = 'done'), count(device_index), "
              "count(DISTINCT device_index) FROM opt_nodes WHERE tree_id = ?", doc.get("tree_id"))
    check(st and st[0][0] == len(nodes) and st[0][1] == len(nodes) and st[0][2] == n_ev and
          st[0][3] == 4, "4 stand-ins: the store holds every node once, done, each evaluation "
          "with its GPU (%s)" % (st,))
    # the picks of a step differ: the progress says which expansions a step made
    exp = {}
    for n in nodes:
        if n["kind"] in ("plan", "tune"):
            exp.setdefault(n["expansion"], n["parent"])
    steps = [tuple(int(x) for x in w.split("expansions ")[1].split(" ")[0].split("-"))
             for w in p.stderr.splitlines() if "| expansions " in w]
    picks = [[exp.get(e) for e in range(a, b + 1)] for a, b in steps]
    check(len(exp) == 8 and steps and max(len(x) for x in picks) >= 3 and
          all(len(set(x)) == len(x) for x in picks),
          "4 stand-ins: 8 expansions, a step picks up to 4 different nodes (%s)" % picks)
    best, pbest = doc.get("best", {}), plain.get("best", {})
    check(best.get("speedup", 0) >= 2.8 and best.get("hash") == pbest.get("hash"),
          "4 stand-ins: the best found is the plain search's best (%.2fx)" %
          best.get("speedup", 0))
    out = subprocess.run([KOPT, "optimize", "--db", db, "--resume", str(doc.get("tree_id")),
                          "--evaluate", "--evaluator", "fake", "--gpus", "0,1,2,3"],
                         capture_output=True,
                         text=True, env=env_of({"KOPT_SCALE_STANDIN": "0"}), cwd=TMP)
    check(out.returncode == 0 and ", width 4" in out.stdout and
          "gpus: gpu 0 (kopt stand-in)" in out.stdout and " gpu " in out.stdout.split("path:")[-1],
          "text output: the width, a gpus line, the GPU of each step of the path")
    p, rdoc = kopt(db, "--replay", str(doc.get("tree_id")), "--json")
    check(p.returncode == 0 and rdoc.get("signature") == doc.get("signature") and
          rdoc.get("width") == 4, "--replay of a 4-wide tree rebuilds it (one by one, no GPU)")


# ---- (c) kill -9 mid-batch, --resume ------------------------------------------------------------

def kill_when(proc, cond, settle=0.0):
    """SIGKILL proc once cond() holds (`settle` seconds later); 1 when killed so, 0 when
    proc ended or a minute passed first (then it is killed anyway)."""
    deadline = time.time() + 60
    while time.time() < deadline and proc.poll() is None:
        if cond():
            time.sleep(settle)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return 1
        time.sleep(0.01)
    proc.kill()
    proc.wait()
    return 0


def wait_and_kill(proc, log, skip, want):
    """SIGKILL proc once the log (past its first `skip` lines) shows its current batch in
    state `want`: "arrived" (4 started since the GPUs were last idle, 2 of them done, 2 in
    flight) or "flight" (2 or more in flight, none of them done yet). 1 when killed so."""
    def in_state():
        n, started, ended = 0, 0, 0
        for what, _, _, _ in log_events(log)[skip:]:
            if what == "start":
                if n == 0:
                    started = ended = 0
                n += 1
                started += 1
            else:
                n -= 1
                ended += 1
        return (want == "arrived" and started == 4 and ended == 2 and n == 2) or \
               (want == "flight" and n >= 2 and ended == 0)
    return kill_when(proc, in_state, settle=0.05)


def test_kill_resume():
    args = ["--evaluator", "fake", "--llm", LLM, "--iterations", "6", "--gpus", "0,1,2,3"]
    _, ref = kopt(db_path("kill-ref"), PROBLEM, *args, "--json",
                  env={"KOPT_SCALE_STANDIN": "0"})
    db = db_path("killed")
    log = os.path.join(TMP, "killed.log")
    # the i-th stand-in takes 300 + 250 i ms: outcomes arrive apart
    env = env_of({"KOPT_SCALE_STANDIN": "300", "KOPT_SCALE_STANDIN_STAGGER": "250",
                  "KOPT_SCALE_STANDIN_LOG": log})
    kills, cut = [], []
    for i, want in enumerate(("arrived", "flight")):
        cmd = [KOPT, "optimize", "--db", db] + (["--resume", "1"] if i else [PROBLEM]) + args
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=env, cwd=TMP)
        kills.append(wait_and_kill(proc, log, cut[-1] if cut else 0, want))
        cut.append(len(log_events(log)))
        if want == "arrived":
            arrived = rows(db, "SELECT count(*) FROM opt_nodes WHERE state = 'pending' AND "
                           "node_json LIKE '%\"arrived\":true%'")[0][0]
            check(arrived >= 1, "killed with outcomes stored but not backed up (%d arrived)"
                  % arrived)
    check(kills == [1, 1], "killed twice with SIGKILL: 2 of 4 outcomes in, then 2 "
          "evaluations in flight (%s)" % kills)
    p, res = kopt(db, "--resume", "1", *args, "--json",
                  env={"KOPT_SCALE_STANDIN": "300", "KOPT_SCALE_STANDIN_LOG": log})
    check(p.returncode == 0 and res.get("signature") == ref.get("signature") and
          res["stats"]["pending"] == 0,
          "kill -9 twice + --resume: the same tree as an uninterrupted run (%d nodes)" %
          len(res.get("nodes", [])))
    ev = log_events(log)
    done = collections.Counter(e[3] for e in ev if e[0] == "done")
    started = set(e[3] for e in ev if e[0] == "start")
    check(done and max(done.values()) == 1,
          "nothing evaluated twice across the kills (%d evaluations)" % sum(done.values()))
    check(started == set(done) and len(done) == len(evaluated(res)),
          "nothing lost: every evaluation cut by a kill was done later, every evaluated node "
          "has one (%d started, %d done, %d nodes)" % (len(started), len(done),
                                                        len(evaluated(res))))
    before = ev[:cut[-1]]
    cut_off = set(e[3] for e in before if e[0] == "start") - \
        set(e[3] for e in before if e[0] == "done")
    check(len(cut_off) >= 2 and cut_off <= set(done),
          "the %d evaluations cut by the kills were done by the resume" % len(cut_off))
    mem = [rows(d, "SELECT count(*) FROM opt_memory WHERE tree_id = 1")[0][0]
           for d in (db_path("kill-ref"), db)]
    check(mem[0] > 0 and mem[0] == mem[1], "the search memory is whole after the kills "
          "(%d rows, %d uninterrupted)" % (mem[1], mem[0]))


# ---- (d) bad --gpus values -------------------------------------------------------------------------

def test_bad_values():
    base = [PROBLEM, "--evaluator", "fake", "--llm", LLM]
    for spec, want in (("0,0", "GPU 0 named twice"), ("x", "'x' is not a GPU index"),
                       ("", "--gpus: empty"), ("1,", "ends with a comma"),
                       ("-1", "is not a GPU index"), ("0,,1", "'' is not a GPU index")):
        p, _ = kopt(db_path("bad"), *base, "--gpus", spec, env={"KOPT_SCALE_STANDIN": "0"})
        check(p.returncode == 2 and want in p.stderr,
              "--gpus '%s': usage error saying %r (%s)" % (spec, want, p.stderr.strip()[:120]))
    p, _ = kopt(db_path("bad"), "--replay", "1", "--gpus", "0")
    check(p.returncode == 2 and "a replay evaluates nothing" in p.stderr,
          "--gpus with --replay: usage error (%s)" % p.stderr.strip()[:100])
    # the live evaluator checks the GPUs that are there
    dev = subprocess.run([KOPT, "devices", "--json"], capture_output=True, text=True)
    try:
        count = len(json.loads(dev.stdout).get("devices", []))
    except ValueError:
        count = 0
    p, _ = kopt(db_path("bad"), PROBLEM, "--llm", LLM, "--gpus", str(count))
    check(p.returncode == 2 and "there is no GPU %d (%d here)" % (count, count) in p.stderr,
          "--gpus %d with %d GPU(s) here: usage error (%s)" % (count, count,
                                                               p.stderr.strip()[:100]))
    if count == 0:
        p, _ = kopt(db_path("bad"), PROBLEM, "--llm", LLM, "--gpus", "all")
        check(p.returncode == 2 and "--gpus all: no GPU here" in p.stderr,
              "--gpus all without a GPU: usage error (%s)" % p.stderr.strip()[:100])
    else:
        print("skipped: the case of --gpus all on a machine with no GPU (%d GPU(s) here)" % count)


# ---- (e) --overlap ------------------------------------------------------------------------------

def asks_in_flight(path):
    """(requests made while a stand-in evaluation was in flight, all requests) in a log that
    holds the stand-ins' lines and the scripted model's (KOPT_SCRIPT_LOG)."""
    n = during = asks = 0
    for line in open(path) if os.path.exists(path) else []:
        w = line.split()
        if w and w[0] == "start":
            n += 1
        elif w and w[0] == "done":
            n -= 1
        elif w and w[0] == "ask":
            asks += 1
            during += n > 0
    return during, asks


def pending_steps(db):
    """The steps of the pending nodes of tree 1, a set."""
    try:
        got = rows(db, "SELECT node_json FROM opt_nodes WHERE tree_id = 1 AND state = 'pending'")
    except Exception:       # the store being written: read again
        return set()
    return set(json.loads(r[0]).get("step", 0) for r in got)


def test_overlap():
    args = [PROBLEM, "--evaluator", "fake", "--llm", LLM, "--iterations", "8"]
    log = os.path.join(TMP, "overlap.log")
    p, ov = kopt(db_path("overlap"), *args, "--gpus", "0,1", "--overlap", "--json",
                 env={"KOPT_SCALE_STANDIN": "400", "KOPT_SCALE_STANDIN_LOG": log,
                      "KOPT_SCRIPT_LOG": log})
    during, asks = asks_in_flight(log)
    check(p.returncode == 0 and ov.get("overlap") is True and ov["stats"]["pending"] == 0 and
          during >= 3, "--overlap on 2 stand-ins: %d of %d model requests made while "
          "candidates were evaluated%s" % (during, asks, "" if p.returncode == 0 else
                                           "; " + p.stderr.strip()[-300:]))
    plog = os.path.join(TMP, "plain-overlap.log")
    p, plain = kopt(db_path("plain-overlap"), *args, "--gpus", "0,1", "--json",
                    env={"KOPT_SCALE_STANDIN": "100", "KOPT_SCALE_STANDIN_LOG": plog,
                         "KOPT_SCRIPT_LOG": plog})
    during0, asks0 = asks_in_flight(plog)
    check(p.returncode == 0 and plain.get("overlap") is False and asks0 > 0 and during0 == 0,
          "without --overlap no request is made while candidates are evaluated (%d of %d)" %
          (during0, asks0))
    check(ov.get("signature") != plain.get("signature"),
          "--overlap grows another tree than the plain search (steps planned one step behind)")
    p, fast = kopt(db_path("overlap-0"), *args, "--gpus", "0,1", "--overlap", "--json",
                   env={"KOPT_SCALE_STANDIN": "0"})
    check(p.returncode == 0 and fast.get("signature") == ov.get("signature"),
          "--overlap: the same tree with stand-ins of 0 ms as of 400 ms")
    p, rep = kopt(db_path("overlap"), "--replay", str(ov.get("tree_id")), "--json")
    check(p.returncode == 0 and rep.get("signature") == ov.get("signature") and
          rep.get("overlap") is True, "--replay of an --overlap tree rebuilds it (one by one)")
    # kill -9 right after the templatizer's node is written in a step that also expands
    # (KOPT_TEST_KILL_AFTER_SAVE): the step is stored whole or not at all, so the resume
    # asks it again and grows the uninterrupted tree
    steps_of = collections.defaultdict(set)
    for n in fast.get("nodes", []):
        steps_of[n.get("step")].add(n["kind"])
    tune = [n["id"] for n in fast.get("nodes", []) if n["kind"] == "tune" and
            "plan" in steps_of[n.get("step")]]
    dbt = db_path("overlap-kill-tune")
    p, _ = kopt(dbt, *args, "--gpus", "0,1", "--overlap",
                env={"KOPT_SCALE_STANDIN": "0", "KOPT_TEST_KILL_AFTER_SAVE": str(tune[0])}
                if tune else {})
    p2, rt = kopt(dbt, "--resume", "1", "--evaluator", "fake", "--llm", LLM, "--gpus", "0,1",
                  "--json", env={"KOPT_SCALE_STANDIN": "0"})
    check(tune and p.returncode == -signal.SIGKILL and p2.returncode == 0 and
          rt.get("signature") == fast.get("signature"), "--overlap: kill -9 once the "
          "templatizer's node n%s is written, in a step with expansions, then --resume: the "
          "uninterrupted tree" % (tune[0] if tune else "?"))
    # one GPU: its own thread evaluates while this one asks, or (no --gpus, the scripted
    # evaluator) everything on this thread, the ask first: the same tree
    log1 = os.path.join(TMP, "overlap1.log")
    p, one = kopt(db_path("overlap-1"), *args, "--gpus", "0", "--overlap", "--json",
                  env={"KOPT_SCALE_STANDIN": "300", "KOPT_SCALE_STANDIN_LOG": log1,
                       "KOPT_SCRIPT_LOG": log1})
    p2, seq = kopt(db_path("overlap-seq"), *args, "--overlap", "--json")
    during1, asks1 = asks_in_flight(log1)
    check(p.returncode == 0 and p2.returncode == 0 and one.get("signature") ==
          seq.get("signature") and one.get("width") == 1 and during1 >= 3,
          "--overlap on one GPU: the same tree as on the search's thread alone, %d of %d "
          "requests made while a candidate was evaluated" % (during1, asks1))
    # kill -9 while the next step is being asked (one step pending, a request under way),
    # then while two steps are pending; --resume: the uninterrupted tree
    db, klog = db_path("overlap-killed"), os.path.join(TMP, "overlap-killed.log")
    # kernels marked by their prompt: fewer twins, so steps with kernels of their own are
    # pending at once; still the same tree for the same search
    fresh = {"KOPT_SCRIPT_FRESH": "prompt"}
    env = env_of(dict(fresh, KOPT_SCALE_STANDIN="700", KOPT_SCALE_STANDIN_LOG=klog,
                      KOPT_SCRIPT_LOG=klog, KOPT_SCRIPT_SLEEP="0.15"))
    kargs = ["--evaluator", "fake", "--llm", LLM, "--iterations", "14", "--gpus", "0,1"]
    p, whole = kopt(db_path("overlap-whole"), PROBLEM, "--overlap", *kargs, "--json",
                    env=dict(fresh, KOPT_SCALE_STANDIN="0"))

    def asking():
        lines = open(klog).read().split("\n") if os.path.exists(klog) else []
        last_start = max((i for i, l in enumerate(lines) if l.startswith("start")), default=-1)
        return (last_start >= 0 and any(l.startswith("ask") for l in lines[last_start:]) and
                len(pending_steps(db)) == 1 and asks_in_flight(klog)[0] > 0)

    def two_steps():
        # two steps pending, once the newer step's expansions are stored (its last part: a
        # kill inside a step's asking, between the templatizer's node and the expansions,
        # diverges without --overlap too) and hold a kernel of their own (not a twin, which
        # takes its outcome without an evaluation)
        try:
            nodes = [json.loads(r[0]) for r in rows(db, "SELECT node_json FROM opt_nodes "
                                                        "WHERE tree_id = 1")]
        except Exception:
            return False
        ps = set(j.get("step", 0) for j in nodes if j.get("state") == "pending")
        hashes = collections.Counter(j.get("hash") for j in nodes)
        return len(ps) >= 2 and any(j.get("step") == max(ps) and j["kind"] == "plan" and
                                    hashes[j.get("hash")] == 1 for j in nodes)

    kills = []
    for i, cond in enumerate((asking, two_steps)):
        cmd = [KOPT, "optimize", "--db", db] + (["--resume", "1"] if i else
                                                [PROBLEM, "--overlap"]) + kargs
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=env, cwd=TMP)
        kills.append(kill_when(proc, cond))
    check(kills == [1, 1], "--overlap: killed while a step was asked, then with two steps "
          "pending, the older being evaluated (%s)" % kills)
    at_kill = [json.loads(r[0]) for r in rows(db, "SELECT node_json FROM opt_nodes WHERE "
                                                  "tree_id = 1 AND state = 'pending'")]
    steps = sorted(set(j.get("step", 0) for j in at_kill))
    older = set("n%d" % j["id"] for j in at_kill if j.get("step") == steps[0] and
                not j.get("arrived") and j["kind"] != "tune")
    newer = set("n%d" % j["id"] for j in at_kill if j.get("step") == steps[-1] and
                j["kind"] == "plan")
    rlog = os.path.join(TMP, "overlap-resumed.log")
    # GPU 1 takes 8 times as long as GPU 0: GPU 0 would start a newer node before GPU 1 is
    # done with the older step, were they one batch
    p, res = kopt(db, "--resume", "1", *kargs, "--json",
                  env=dict(fresh, KOPT_SCALE_STANDIN="50", KOPT_SCALE_STANDIN_STAGGER="350",
                           KOPT_SCALE_STANDIN_LOG=rlog))
    done = collections.Counter(e[3] for e in log_events(klog) + log_events(rlog)
                               if e[0] == "done")
    check(p.returncode == 0 and res.get("signature") == whole.get("signature") and
          res.get("overlap") is True and done and max(done.values()) == 1,
          "--overlap: kill -9 twice + --resume (no --overlap given): the uninterrupted tree, "
          "nothing evaluated twice (%d nodes)" % len(res.get("nodes", [])))
    ev = log_events(rlog)
    last_old = max((i for i, e in enumerate(ev) if e[0] == "done" and e[2] in older), default=-1)
    first_new = min((i for i, e in enumerate(ev) if e[0] == "start" and e[2] in newer),
                    default=len(ev))
    check(older and newer and 0 <= last_old < first_new < len(ev),
          "--overlap resumed with steps %s pending: the older step's %d evaluations end before "
          "the newer step's %d begin, as in the uninterrupted search" %
          (steps, len(older), len(newer)))
    # what --overlap does not go with
    for extra, want in ((["--llm", "manual"], "not with manual replies"),
                        (["--propose"], "not with --propose")):
        a = [PROBLEM, "--evaluator", "fake", "--overlap"] + (extra if "manual" in extra else
                                                             ["--llm", LLM] + extra)
        p, _ = kopt(db_path("overlap-bad"), *a)
        check(p.returncode != 0 and want in p.stderr, "--overlap %s: refused, saying %r (%s)"
              % (" ".join(extra), want, p.stderr.strip()[-160:]))
    p, _ = kopt(db, "--resume", "1", "--evaluate", "--evaluator", "fake")
    check(p.returncode != 0 and "tree 1 grows with --overlap" in p.stderr and
          "not with --evaluate" in p.stderr, "--evaluate on an --overlap tree: refused (%s)"
          % p.stderr.strip()[-160:])
    p, _ = kopt(db_path("plain-overlap"), "--resume", "1", "--overlap", *kargs[:-2],
                "--iterations", "9")
    check(p.returncode == 0 and "began without --overlap" in p.stderr,
          "--resume --overlap of a plain tree: it goes on as it began, with a warning (%s)"
          % p.stderr.strip()[-200:])


def all_tests():
    test_one_gpu()
    test_four()
    test_kill_resume()
    test_bad_values()
    test_overlap()


def main():
    run(all_tests, TMP)


if __name__ == "__main__":
    main()
