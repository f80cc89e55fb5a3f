"""kopt optimize end to end on the CPU: a scripted `command:` LLM (scripted_llm.py, answering
from tests/optimize/<example>/: a compile error first, then a wrong kernel, then correct
ones of increasing speed) and the scripted evaluator (outcomes written in the kernels).

Checks: the debugger repairs the broken kernels and the search reaches the last stage;
greedy, beam, best-of-n and the ablation switches run; kill -9 in the middle then --resume
gives the same tree with nothing evaluated twice; a propose/evaluate round trip; a manual
round trip (prompt files answered by the script); --replay rebuilds the tree; kopt's own
overhead per iteration (printed; must be <= 50 ms). The code-search tool: the scripted
coder asks for searches, gets hits from the real CUTLASS headers (skipped, saying so,
without the nvidia-cutlass package) and then answers with code; the bound per node; a
replay rebuilds the same tree without CUTLASS; a CuTe compile error reaches the debugger
summarized; --start with a good and two bad files. --propose on a tree whose root was never
evaluated asks nothing, writes no prompt and exits 19; --evaluate asks nothing. The coder of
a problem with a PyTorch reference (kb_tanh/problem) sees include/kopt/candidate.h verbatim
(or, without it, a prompt saying it could not be read) and the sizes as named values at the
benchmark and the check sizes.

Usage: python3 test_optimize.py KOPT   (exit 1 on a failure)
"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

from optlib import check, optimize, rows, run

KOPT = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TMP = tempfile.mkdtemp(prefix="kopt-optimize-test-")


def llm(example):
    return "command:%s %s %s" % (sys.executable, os.path.join(HERE, "scripted_llm.py"),
                                 os.path.join(HERE, example))


def kopt(db, *args, env=None, cwd=TMP):
    e = dict(os.environ, KOPT_PROMPTS=os.path.join(ROOT, "prompts"))
    e.update(env or {})
    return optimize(KOPT, db, args, e, cwd)


def fresh_db(name):
    return os.path.join(TMP, name + ".db")


def verdicts(doc):
    return [n.get("verdict") for n in doc.get("nodes", [])]


def best_speedup(doc):
    return (doc.get("best") or {}).get("speedup", 0.0)


def test_mcts_repairs():
    db = fresh_db("mcts")
    p, doc = kopt(db, os.path.join(ROOT, "examples/softmax"), "--evaluator", "fake", "--llm",
                  llm("softmax"), "--iterations", "10", "--json")
    check(p.returncode == 0, "mcts run exits 0 (%s)" % p.stderr.strip()[-300:])
    v = verdicts(doc)
    check("COMPILE_ERROR" in v and "WRONG" in v, "mcts: the compile error and the wrong kernel "
          "are in the tree with their verdicts")
    repaired = [n for n in doc.get("nodes", []) if n["kind"] == "repair" and n.get("verdict") == "OK"]
    check(len(repaired) >= 1, "mcts: the debugger repaired a broken kernel into a correct one")
    check(best_speedup(doc) >= 2.8, "mcts: reaches the last stage (best %.2fx >= 2.8x)"
          % best_speedup(doc))
    path = doc.get("path", [])
    check(len(path) >= 3 and path[0]["kind"] == "root" and
          any(s.get("predicted_gain", 0) > 0 and s.get("realized_gain", 0) > 1 for s in path),
          "mcts: the path has plans with predicted and realized gains")
    oh = doc.get("stats", {}).get("overhead_ms_per_iter", 1e9)
    print("     kopt overhead per iteration: %.2f ms (wall %.0f ms, LLM %.0f ms)" %
          (oh, doc["stats"]["wall_ms"], doc["stats"]["llm_ms"]))
    check(0 < oh <= 50, "overhead per iteration %.2f ms <= 50 ms" % oh)
    # a second run on the same store sees the search memory of the first
    p2, doc2 = kopt(db, os.path.join(ROOT, "examples/softmax"), "--evaluator", "fake", "--llm",
                    llm("softmax"), "--iterations", "1", "--json")
    with sqlite3.connect(db) as con:
        prompts = str(con.execute("SELECT count(*) FROM opt_memory").fetchone()[0])
    check(p2.returncode == 0 and prompts.isdigit() and int(prompts) > 3,
          "search memory rows kept in the store across runs (%s)" % prompts)
    return db, doc


def test_policies():
    for pol in ("greedy", "beam", "best-of-n"):
        p, doc = kopt(fresh_db(pol), os.path.join(ROOT, "examples/softmax"), "--evaluator",
                      "fake", "--llm", llm("softmax"), "--search", pol, "--iterations", "6",
                      "--json")
        check(p.returncode == 0 and doc.get("policy") == pol and best_speedup(doc) > 1.0,
              "--search %s runs and improves (%.2fx)" % (pol, best_speedup(doc)))
    p, doc = kopt(fresh_db("ablate"), os.path.join(ROOT, "examples/softmax"), "--evaluator",
                  "fake", "--llm", llm("softmax"), "--search", "greedy", "--no-tools",
                  "--no-memory", "--no-tune", "--iterations", "8", "--json")
    check(p.returncode == 0 and not any(n["kind"] == "tune" for n in doc.get("nodes", [])),
          "--no-tools --no-memory --no-tune run, and no tune node is made")
    p, doc = kopt(fresh_db("tune"), os.path.join(ROOT, "examples/softmax"), "--evaluator",
                  "fake", "--llm", llm("softmax"), "--search", "greedy", "--iterations", "12",
                  "--tune-after", "1", "--json")
    tunes = [n for n in doc.get("nodes", []) if n["kind"] == "tune"]
    check(p.returncode == 0 and tunes and tunes[0].get("verdict") == "OK",
          "the templatizer makes a tune node that is tuned and evaluated")
    p, doc = kopt(fresh_db("va"), os.path.join(ROOT, "examples/vector_add"), "--evaluator",
                  "fake", "--llm", llm("vector_add"), "--search", "greedy", "--iterations", "5",
                  "--no-tune", "--json")
    check(p.returncode == 0 and best_speedup(doc) >= 1.08,
          "vector_add: greedy reaches the fast kernel (%.2fx)" % best_speedup(doc))
    p, doc = kopt(fresh_db("budget"), os.path.join(ROOT, "examples/softmax"), "--evaluator",
                  "fake", "--llm", llm("softmax"), "--max-llm-calls", "3", "--json")
    st = doc.get("stats", {})
    check(p.returncode == 0 and "max-llm-calls" in st.get("stop_reason", "") and
          st.get("pending") == 0 and st.get("llm_requests", 99) <= 4,
          "an LLM budget stops the search, what was proposed is still evaluated (%s)" %
          st.get("stop_reason"))
    p, _ = kopt(fresh_db("bad"), os.path.join(ROOT, "examples/softmax"), "--search", "nope")
    check(p.returncode == 2, "a bad --search is a usage error")


def test_replay(db, doc):
    p, rdoc = kopt(db, "--replay", str(doc["tree_id"]), "--json")
    check(p.returncode == 0 and rdoc.get("signature") == doc.get("signature") and
          rdoc.get("tree_id") != doc.get("tree_id"),
          "--replay rebuilds the same tree (signature %s)" % (rdoc.get("signature", "")[:12]))


KILL_ARGS = ["--evaluator", "fake", "--llm", "LLM", "--iterations", "6"]


def kill_args():
    return [os.path.join(ROOT, "examples/softmax")] + [llm("softmax") if a == "LLM" else a
                                                      for a in KILL_ARGS]


def tree_rows(db):
    """What a resume must rebuild beyond the signature: every node's row (with its place in
    the expansions) and the search memory the tree wrote, in order."""
    nodes = rows(db, "SELECT node, parent, state, verdict, source_hash, json_extract(node_json,"
                 " '$.kind'), json_extract(node_json, '$.expansion'), json_extract(node_json, "
                 "'$.proposal') FROM opt_nodes WHERE tree_id=1 ORDER BY node")
    memory = rows(db, "SELECT node, plan_kind, verdict, round(realized_gain, 6) FROM opt_memory "
                  "WHERE tree_id=1 ORDER BY id")
    return nodes, memory


def test_kill_resume():
    args = kill_args()
    ref_db = fresh_db("ref")
    _, ref = kopt(ref_db, *args, "--json")
    test_kill_points(ref_db, ref)
    db = fresh_db("killed")
    log = os.path.join(TMP, "evals.log")
    env = dict(os.environ, KOPT_PROMPTS=os.path.join(ROOT, "prompts"), KOPT_SCRIPT_SLEEP="0.1",
               KOPT_FAKE_EVAL_LOG=log)
    kills = 0
    tree = None
    for delay in (0.8, 1.3, 1.9):
        cmd = [KOPT, "optimize", "--db", db] + (["--resume", str(tree), "--evaluator", "fake",
                                                  "--llm", llm("softmax")] if tree else args)
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=env, cwd=TMP)
        time.sleep(delay)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        tree = tree or 1
    p, res = kopt(db, "--resume", "1", "--evaluator", "fake", "--llm", llm("softmax"), "--json",
                  env={"KOPT_FAKE_EVAL_LOG": log})
    check(kills >= 1, "the search was killed with SIGKILL %d times mid-run" % kills)
    check(p.returncode == 0 and res.get("signature") == ref.get("signature"),
          "kill -9 + --resume: the same final tree as an uninterrupted run")
    lines = [l.split() for l in open(log)] if os.path.exists(log) else []
    hashes = [l[1] for l in lines]
    check(len(hashes) > 0 and len(hashes) == len(set(hashes)),
          "no candidate evaluated twice across kills (%d evaluations)" % len(hashes))


# kill -9 at exact points (KOPT_TEST_KILL_AFTER_SAVE=NODE[:K]: the process kills itself
# right after its K-th write of node NODE), one kill a process, each resumed by the next:
# the tree's creation (the root), an expansion with one of its two proposals written (the
# second not yet), a round of two repairs with one written, a node's outcome written before
# its search-memory row, an expansion of a later node. At each the store once kept half of
# a decision (a resume then lost the expansion's second proposal); now each decision is
# stored whole or not at all. The outcome killed before it was committed ("3:2") is the one
# evaluation done again: an evaluation and the store's record of it cannot be one step.
KILL_POINTS = ("0", "1", "3", "3:2", "13")
KILL_AGAIN = ["n3"]


def test_kill_points(ref_db, ref):
    db = fresh_db("kill-points")
    log = os.path.join(TMP, "evals-points.log")
    killed = []
    for i, point in enumerate(KILL_POINTS):
        cmd = kill_args() if i == 0 else ["--resume", "1", "--evaluator", "fake", "--llm",
                                          llm("softmax")]
        p, _ = kopt(db, *cmd, env={"KOPT_TEST_KILL_AFTER_SAVE": point,
                                   "KOPT_FAKE_EVAL_LOG": log})
        if p.returncode == -signal.SIGKILL:
            killed.append(point)
    p, res = kopt(db, "--resume", "1", "--evaluator", "fake", "--llm", llm("softmax"), "--json",
                  env={"KOPT_FAKE_EVAL_LOG": log})
    check(len(killed) == len(KILL_POINTS), "kill -9 at exact points: killed at %s of %s" %
          (",".join(killed), ",".join(KILL_POINTS)))
    check(p.returncode == 0 and res.get("signature") == ref.get("signature"),
          "kill -9 at exact points + --resume: the same final tree as an uninterrupted run")
    got, want = tree_rows(db), tree_rows(ref_db)
    check(got[0] == want[0], "kill -9 at exact points: the same node rows (expansions and "
          "proposals included, %d of %d)" % (len(got[0]), len(want[0])))
    check(got[1] == want[1], "kill -9 at exact points: the same search memory (%d rows of %d)"
          % (len(got[1]), len(want[1])))
    lines = [l.split() for l in open(log)] if os.path.exists(log) else []
    again = sorted(set(l[0] for l in lines if lines.count(l) > 1))
    check(len(lines) > 0 and again == KILL_AGAIN and
          len(set(l[1] for l in lines)) == len(lines) - len(KILL_AGAIN),
          "kill -9 at exact points: evaluated twice only what was killed before its outcome "
          "was stored (%s; %d evaluations)" % (",".join(again) or "none", len(lines)))


def exchanges(db, tree):
    return rows(db, "SELECT count(*) FROM llm_exchanges WHERE run_id=?", tree)[0][0]


def test_propose_evaluate():
    db = fresh_db("split")
    base = [os.path.join(ROOT, "examples/softmax"), "--llm", llm("softmax")]
    # a new tree: its root is not evaluated, so nothing is proposed (exit 19)
    p, doc = kopt(db, *base, "--propose", "--json")
    check(p.returncode == 19 and doc.get("stats", {}).get("root_unevaluated") and
          doc["stats"]["pending"] == 1 and exchanges(db, 1) == 0,
          "--propose on a new tree: nothing asked, exit 19 (exit %d)" % p.returncode)
    p, doc = kopt(db, "--resume", "1", "--evaluate", "--evaluator", "fake", "--json")
    check(p.returncode == 0 and doc["stats"]["evaluated"] == 1 and doc["stats"]["pending"] == 0
          and exchanges(db, 1) == 0, "--evaluate evaluates the root and asks nothing")
    p, doc = kopt(db, "--resume", "1", "--propose", "--llm", llm("softmax"), "--json")
    pend = doc.get("stats", {}).get("pending", 0)
    check(p.returncode == 0 and pend >= 2 and doc["stats"]["evaluated"] == 0,
          "--propose leaves candidates pending and evaluates nothing (%d pending)" % pend)
    stored = json.loads(rows(db, "SELECT options_json FROM opt_trees WHERE tree_id=?", 1)[0][0])
    check(stored.get("rounds") is True,
          "a tree driven by --propose/--evaluate is stored as growing in rounds (%s)"
          % stored.get("rounds"))
    nodes, asked = len(doc.get("nodes", [])), exchanges(db, 1)
    p, doc = kopt(db, "--resume", "1", "--propose", "--llm", llm("softmax"), "--json")
    check(p.returncode == 0 and len(doc.get("nodes", [])) == nodes and exchanges(db, 1) == asked
          and "pending evaluation" in doc["stats"]["stop_reason"],
          "--propose again before an evaluation: nothing asked, no node added (%s)"
          % doc.get("stats", {}).get("stop_reason"))
    for _ in range(5):
        asked = exchanges(db, 1)
        p, doc = kopt(db, "--resume", "1", "--evaluate", "--evaluator", "fake", "--llm",
                      llm("softmax"), "--json")
        if p.returncode != 0 or doc["stats"]["pending"] != 0 or exchanges(db, 1) != asked:
            check(False, "--evaluate (even given --llm) evaluates what is pending and asks "
                  "nothing (exit %d, %d pending)" % (p.returncode, doc["stats"]["pending"]))
            break
        p, doc = kopt(db, "--resume", "1", "--propose", "--llm", llm("softmax"), "--json")
    p, doc = kopt(db, "--resume", "1", "--evaluate", "--evaluator", "fake", "--json")
    check(p.returncode == 0 and doc["stats"]["pending"] == 0 and doc["stats"]["llm_requests"] == 0
          and best_speedup(doc) > 1.2,
          "propose/evaluate round trips: evaluated, improved (%.2fx)" % best_speedup(doc))


def prompt_files(wd):
    return sorted(f for f in os.listdir(wd) if f.endswith(".prompt.md")) if os.path.isdir(wd) \
        else []


def test_propose_unevaluated_root():
    """--propose on a tree whose root was never evaluated writes no planner prompt (its
    current kernel would be "pending", its device unknown): it says to evaluate first and
    exits 19; --evaluate then proposes nothing; the next --propose plans from the root's
    outcome."""
    db = fresh_db("unevaluated")
    wd = os.path.join(TMP, "unevaluated-run")
    problem = os.path.join(ROOT, "examples/softmax")
    p, doc = kopt(db, problem, "--llm", "manual", "--workdir", wd, "--propose", "--json")
    check(p.returncode == 19 and not prompt_files(wd) and len(doc.get("nodes", [])) == 1 and
          "has not been evaluated" in p.stderr and "--resume 1 --evaluate" in p.stderr,
          "--propose --llm manual on a new tree: no prompt written, says to evaluate first, "
          "exit 19 (exit %d, prompts %s)" % (p.returncode, prompt_files(wd)))
    p, _ = kopt(fresh_db("unevaluated-start"), problem, "--llm", llm("softmax"), "--start",
                os.path.join(ROOT, "examples/softmax/fast.cu"), "--propose")
    check(p.returncode == 19 and "has not been evaluated" in p.stderr,
          "--propose with --start on a new tree: the same (exit %d)" % p.returncode)
    p, doc = kopt(db, "--resume", "1", "--llm", "manual", "--evaluate", "--evaluator", "fake",
                  "--json")
    check(p.returncode == 0 and doc["stats"]["evaluated"] == 1 and not prompt_files(wd) and
          not doc["stats"]["waiting"],
          "--evaluate --llm manual: the root evaluated, no prompt written (%s)" % prompt_files(wd))
    p, doc = kopt(db, "--resume", "1", "--llm", "manual", "--propose", "--json")
    planners = [f for f in prompt_files(wd) if "planner" in f]
    texts = [open(os.path.join(wd, f)).read() for f in planners]
    check(p.returncode == 0 and planners and
          all("## The current kernel: OK," in t and "pending" not in t.split("## The current "
              "kernel: ")[1].splitlines()[0] for t in texts),
          "then --propose: the planner prompts plan from the evaluated root (%s)" % planners)


def test_coder_contract():
    """The coder of a host-mode problem (a PyTorch reference) is shown kopt/candidate.h
    verbatim and the sizes as named values at the benchmark and the check sizes; without the
    header, the prompt says it could not be read instead of describing it."""
    problem = os.path.join(HERE, "kb_tanh", "problem")
    spec = json.load(open(os.path.join(problem, "problem.json")))
    header = open(os.path.join(ROOT, "include", "kopt", "candidate.h")).read()
    base = [problem, "--evaluator", "fake", "--llm", llm("kb_tanh"), "--search", "greedy",
            "--iterations", "1", "--no-tune", "--json"]
    db = fresh_db("contract")
    p, doc = kopt(db, *base)
    convs = conversations(db, doc.get("tree_id", 0), "coder")
    text = convs[0][0]["content"] if convs else ""
    check(p.returncode == 0 and header.strip() in text and "## The candidate ABI" in text,
          "coder prompt of a PyTorch-reference problem: include/kopt/candidate.h verbatim")
    planners = conversations(db, doc.get("tree_id", 0), "planner")
    ptext = planners[0][0]["content"] if planners else ""
    current = ptext.split("## The current kernel: ")[-1]
    check("## The reference kernel (do not change it)\n```python\n" in ptext and
          current.split("\n")[1] == "```python" and "```cuda" not in ptext,
          "a PyTorch reference and the root's source are fenced as python in the planner prompt")
    check("## How the candidate runs\nHost mode:" in text and '"libraries": ["cublas"]' in text
          and "## How the kernel is launched" not in text and
          "write the whole new .cu file" in text,
          "a host-mode coder prompt: its entry point and front matter keys, not a launch plan; "
          "the whole file asked for against a PyTorch program")
    main, _, at_check = text.partition("At the check sizes")
    want_main = ["    %s = %d" % (k, v) for k, v in spec["sizes"].items()]
    want_check = ["    %s = %d" % (k, spec["check_sizes"].get(k, v)) for k, v in
                  spec["sizes"].items()]
    check(all(l in main.split("## The problem's sizes")[-1] for l in want_main) and
          all(l in at_check for l in want_check),
          "coder prompt: the sizes as named values, at the benchmark and the check sizes (%s; %s)"
          % (want_main, want_check))
    empty = os.path.join(TMP, "no-include")
    os.makedirs(empty, exist_ok=True)
    db = fresh_db("contract-noheader")
    p, doc = kopt(db, *base, env={"KOPT_INCLUDE_DIR": empty})
    convs = conversations(db, doc.get("tree_id", 0), "coder")
    text = convs[0][0]["content"] if convs else ""
    check(p.returncode == 0 and text and "could not read the header" in text and
          "kopt_candidate_io;" not in text,
          "without kopt/candidate.h the coder prompt says so, and shows no invented ABI")
    db = fresh_db("contract-device")
    p, doc = kopt(db, os.path.join(ROOT, "examples/softmax"), *base[1:3], "--llm",
                  llm("softmax"), *base[5:])
    convs = conversations(db, doc.get("tree_id", 0), "coder")
    text = convs[0][0]["content"] if convs else ""
    check(p.returncode == 0 and text and "## The problem's sizes" in text and
          "## The candidate ABI" not in text and "## How the kernel is launched" in text and
          "write the whole new .cu file" not in text,
          "a device-mode problem's coder prompt: the sizes, no host-mode ABI")


def test_manual():
    db = fresh_db("manual")
    wd = os.path.join(TMP, "manual-run")
    base = ["--llm", "manual", "--evaluator", "fake", "--workdir", wd]
    p, doc = kopt(db, os.path.join(ROOT, "examples/softmax"), *base, "--iterations", "4", "--json")
    first = doc.get("stats", {}).get("waiting", 0)
    check(p.returncode == 0 and first >= 1 and
          os.path.exists(os.path.join(wd, "e1-p1-planner.prompt.md")),
          "manual: prompts written as files in the run's folder (%d waiting)" % first)
    rounds = 0
    while doc.get("stats", {}).get("waiting", 0) and rounds < 40:
        subprocess.run([sys.executable, os.path.join(HERE, "scripted_llm.py"),
                        os.path.join(HERE, "softmax"), "--answer", wd], check=True,
                       capture_output=True)
        p, doc = kopt(db, "--resume", "1", *base, "--json")
        rounds += 1
    replies = [f for f in os.listdir(wd) if f.endswith(".reply.md")]
    check(p.returncode == 0 and not doc["stats"]["waiting"] and best_speedup(doc) > 1.2,
          "manual round trip: %d rounds, %d replies, best %.2fx" % (rounds, len(replies),
                                                                    best_speedup(doc)))
    p, rdoc = kopt(db, "--replay", "1", "--json")
    check(p.returncode == 0 and rdoc.get("signature") == doc.get("signature"),
          "--replay of a manual run rebuilds its tree")


def conversations(db, tree, role):
    """The message lists of the role's requests in tree `tree`, oldest first."""
    return [json.loads(r[0]).get("messages", []) for r in
            rows(db, "SELECT request_json FROM llm_exchanges WHERE run_id=? AND role=? ORDER BY id",
                 tree, role)]


def cutlass():
    p = subprocess.run([KOPT, "cute", "info"], capture_output=True, text=True)
    return p.returncode == 0, (p.stdout + p.stderr).strip().splitlines()[-1:] or [""]


def test_code_search():
    found, why = cutlass()
    if not found:
        print("skipped: no CUTLASS headers (%s): the code search on the real headers is not "
              "tested (pip install nvidia-cutlass)" % why[0])
        return
    db = fresh_db("search")
    env = {"KOPT_SCRIPT_SEARCH": "make_tma_copy;TiledMMA",
           "KOPT_CACHE_DIR": os.path.join(TMP, "cache")}
    p, doc = kopt(db, os.path.join(ROOT, "examples/softmax"), "--evaluator", "fake", "--llm",
                  llm("cute"), "--search", "greedy", "--iterations", "2", "--no-tune", "--json",
                  env=env)
    nodes = doc.get("nodes", [])
    plans = [n for n in nodes if n["kind"] == "plan"]
    check(p.returncode == 0 and nodes and nodes[0].get("tools") == "cute-search",
          "search: the tool is described when CUTLASS is found (%s)" % p.stderr.strip()[-300:])
    check(len(plans) == 2 and all(n.get("searches") == 2 and "make_tma_copy (4 hits)" in
                                  n.get("queries", "") for n in plans),
          "search: each coder asked two searches, each answered with hits (%s)" %
          [n.get("queries") for n in plans])
    tree = doc.get("tree_id", 0)
    recs = rows(db, "SELECT key, turn, query, nhits, hits_json, result FROM opt_searches WHERE "
                "tree_id=? ORDER BY key, turn", tree)
    check(len(recs) == 4 == doc.get("stats", {}).get("searches"),
          "search: 4 searches counted and stored with the exchange (%d rows)" % len(recs))
    top = {}
    for key, turn, q, nhits, hits, result in recs:
        top[q] = [h["file"] for h in json.loads(hits)["hits"]][:3] if hits else []
    check("include/cute/atom/copy_traits_sm90_tma.hpp" in top.get("make_tma_copy", []) and
          "include/cute/atom/mma_atom.hpp" in top.get("TiledMMA", []),
          "search: the hits come from the real headers, the expected file in the top 3 (%s)" % top)
    convs = [m for m in conversations(db, tree, "coder") if len(m) == 3]
    fed = convs and "## include/cute/atom/copy_traits_sm90_tma.hpp:" in convs[0][2]["content"] \
        and "```cute-search" in convs[0][1]["content"] and convs[0][1]["role"] == "assistant"
    check(bool(fed), "search: the hits are fed back in the next turn of the same conversation")
    check(all(not n.get("failure") for n in plans) and best_speedup(doc) >= 2.4,
          "search: after searching the coder answers with code, the tree reaches stage 2 "
          "(best %.2fx)" % best_speedup(doc))
    print("     code search: %d searches in %.0f ms (index opened once; built in a fresh cache)" %
          (doc["stats"]["searches"], doc["stats"]["search_ms"]))
    # the replay needs no CUTLASS: each search is answered from the record
    p, rdoc = kopt(db, "--replay", str(tree), "--json", env={"CUTLASS_PATH": "/nonexistent"})
    check(p.returncode == 0 and rdoc.get("signature") == doc.get("signature") and
          rdoc["stats"]["searches"] == 4 and
          [n.get("queries") for n in rdoc["nodes"]] == [n.get("queries") for n in nodes],
          "search: --replay (without CUTLASS) rebuilds the same tree with the same searches")


def test_search_bound():
    """The bound per node, and the tool with no CUTLASS found (--cute: described anyway)."""
    env = {"KOPT_SCRIPT_SEARCH": "q1;q2;q3;q4;q5", "CUTLASS_PATH": "/nonexistent"}
    base = [os.path.join(ROOT, "examples/softmax"), "--evaluator", "fake", "--llm", llm("cute"),
            "--search", "greedy", "--iterations", "2", "--no-tune", "--json"]
    db = fresh_db("bound")
    p, doc = kopt(db, *base, "--cute", "--max-searches", "2", env=env)
    plans = [n for n in doc.get("nodes", []) if n["kind"] == "plan"]
    check(p.returncode == 0 and len(plans) == 2 and
          all(n.get("searches") == 2 and not n.get("failure") for n in plans),
          "bound: --max-searches 2 runs two searches per node, then the coder gives code (%s)" %
          [(n.get("searches"), n.get("failure")) for n in plans])
    recs = rows(db, "SELECT key, count(*), max(result) FROM opt_searches WHERE tree_id=? "
                "GROUP BY key", doc.get("tree_id", 0))
    check(len(recs) == 2 and all(r[1] == 2 and "No CUTLASS headers were found" in r[2]
                                  for r in recs),
          "bound: two stored per node; without CUTLASS the tool answers saying so")
    convs = conversations(db, doc.get("tree_id", 0), "coder")
    last = max(convs, key=len) if convs else []
    check(len(last) == 5 and "No searches left (2 of 2 used)" in last[4]["content"],
          "bound: the last search turn tells the coder no searches are left")
    p, doc = kopt(fresh_db("greedy-search"), *base, "--cute", "--max-searches", "2",
                  env=dict(env, KOPT_SCRIPT_SEARCH_GREEDY="1"))
    plans = [n for n in doc.get("nodes", []) if n["kind"] == "plan"]
    check(p.returncode == 0 and plans and all(n.get("failure") == "search_limit" and
                                              n.get("searches") == 2 for n in plans),
          "bound: a coder that keeps searching past the bound fails with search_limit (%s)" %
          [n.get("failure") for n in plans])
    # manual mode: a search turn is a prompt file of its own (NAME.turn2.prompt.md) holding
    # the conversation so far
    wd = os.path.join(TMP, "manual-search")
    mbase = [os.path.join(ROOT, "examples/softmax"), "--llm", "manual", "--evaluator", "fake",
             "--workdir", wd, "--search", "greedy", "--iterations", "1", "--no-tune", "--cute",
             "--max-searches", "1", "--json"]
    db = fresh_db("manual-search")
    p, doc = kopt(db, *mbase, env=env)
    for _ in range(10):
        if not doc.get("stats", {}).get("waiting"):
            break
        subprocess.run([sys.executable, os.path.join(HERE, "scripted_llm.py"),
                        os.path.join(HERE, "cute"), "--answer", wd], check=True,
                       capture_output=True, env=dict(os.environ, **env))
        p, doc = kopt(db, "--resume", str(doc["tree_id"]), *mbase[1:], env=env)
    turn2 = os.path.join(wd, "e1-p1-coder.turn2.prompt.md")
    plans = [n for n in doc.get("nodes", []) if n["kind"] == "plan"]
    check(p.returncode == 0 and os.path.exists(turn2) and "## Code search results" in
          open(turn2).read() and plans and plans[0].get("searches") == 1,
          "manual: a search turn is written as its own prompt file and answered")
    p, rdoc = kopt(db, "--replay", str(doc.get("tree_id", 0)), "--json", env=env)
    check(p.returncode == 0 and rdoc.get("signature") == doc.get("signature"),
          "manual: --replay of a run with search turns rebuilds its tree")
    # --cute off, and auto without CUTLASS: the tool is not described, nothing is searched
    for extra, what in ((["--no-cute"], "--no-cute"), ([], "auto without CUTLASS")):
        db = fresh_db("nocute%d" % len(extra))
        p, doc = kopt(db, *base, *extra, env=env)
        prompts = [m[0]["content"] for m in conversations(db, doc.get("tree_id", 0), "coder")]
        check(p.returncode == 0 and prompts and not any("cute-search" in t for t in prompts) and
              doc["stats"]["searches"] == 0 and not doc["nodes"][0].get("tools"),
              "%s: the prompts do not describe the tool, nothing is searched" % what)


def debugger_run(script, name):
    """One greedy iteration on examples/softmax whose coder answers from SCRIPT (a failing
    candidate): the run, its JSON and the first debugger prompt ("" when none)."""
    db = fresh_db(name)
    p, doc = kopt(db, os.path.join(ROOT, "examples/softmax"), "--evaluator", "fake", "--llm",
                  llm(script), "--search", "greedy", "--iterations", "1", "--no-tune",
                  "--no-cute", "--json")
    convs = conversations(db, doc.get("tree_id", 0), "debugger")
    return p, doc, convs[0][0]["content"] if convs else ""


def test_cute_debugger():
    p, doc, text = debugger_run("cute", "cutedebug")
    raw = open(os.path.join(ROOT, "tests/data/cute/broken_cute.nvcc.log")).read()
    check(p.returncode == 0 and "first error: cute/algorithm/gemm.hpp:408: static assertion "
          "failed" in text and "from the candidate: broken_cute.cu:25" in text,
          "cute: the debugger gets the first error and the candidate line that led there")
    check(text and "detected during" not in text and raw.splitlines()[0] not in text,
          "cute: the compile log from inside CuTe is summarized, not dumped whole")
    repaired = [n for n in doc.get("nodes", []) if n["kind"] == "repair" and n.get("verdict") == "OK"]
    check(len(repaired) == 1, "cute: the debugger repaired it")


def test_suspect_repair():
    """A SUSPECT candidate's debugger is told what SUSPECT means (right outputs, a time kopt
    does not trust) and what a repair must do; the repair is evaluated."""
    p, doc, text = debugger_run("suspect", "suspect")
    check(p.returncode == 0 and "## How it failed: SUSPECT\nSUSPECT: the outputs were right" in
          text and "problem's stated work inside the call" in text,
          "a SUSPECT candidate's debugger prompt says what SUSPECT means and what to repair")
    repaired = [n for n in doc.get("nodes", []) if n["kind"] == "repair" and n.get("verdict") == "OK"]
    check(len(repaired) == 1, "the SUSPECT candidate's repair is evaluated OK")


def test_template_reply():
    """A coder that answers with a template (front matter "params") gets a typed failure on
    that node; the run goes on (on the GPU it once ended the whole run)."""
    script = os.path.join(TMP, "template_llm.py")
    with open(script, "w") as f:
        f.write("import json, sys\n"
                "req = json.dumps(json.load(sys.stdin))\n"
                "if 'Role: planner' in req:\n"
                "    print('PLAN: make it a template\\nKIND: other\\nTOOL: none\\nGAIN: 1.1')\n"
                "else:\n"
                "    print('```cuda\\n' + open(%r).read() + '\\n```')\n"
                % os.path.join(ROOT, "examples/softmax/tune.cu"))
    p, doc = kopt(fresh_db("template"), os.path.join(ROOT, "examples/softmax"), "--evaluator",
                  "fake", "--llm", "command:%s %s" % (sys.executable, script), "--iterations",
                  "2", "--no-tune", "--json")
    nodes = doc.get("nodes", [])
    first = nodes[1] if len(nodes) > 1 else {}
    check(p.returncode == 0 and first.get("verdict") == "COMPILE_ERROR" and
          "is a template" in first.get("message", "") and
          all(n.get("verdict") != "OK" for n in nodes[1:]) and len(nodes) > 4,
          "a template where a kernel was asked for: COMPILE_ERROR on the node, the run goes on "
          "(%d node(s), exit %d)" % (len(nodes), p.returncode))


def test_start():
    base = [os.path.join(ROOT, "examples/softmax"), "--evaluator", "fake", "--llm",
            llm("softmax"), "--iterations", "3", "--no-tune", "--json"]
    for pol in ("greedy", "mcts"):
        p, doc = kopt(fresh_db("start-" + pol), *base, "--search", pol, "--start",
                      os.path.join(ROOT, "examples/softmax/fast.cu"))
        nodes = doc.get("nodes", [])
        check(p.returncode == 0 and len(nodes) > 2 and nodes[1]["kind"] == "start" and
              nodes[1].get("verdict") == "OK" and
              not any(n["parent"] == 0 for n in nodes[2:]) and
              any(n["parent"] == 1 for n in nodes[2:]),
              "--start (%s): the kernel is the root's first child and the search grows from it"
              % pol)
    bad = os.path.join(TMP, "bad_start.cu")
    open(bad, "w").write('extern "C" __global__ void softmax_ref(const float *x, float *y, '
                         'int B, int N) { y[0] = x[0] +; }\n')
    base = base[:-1]   # the failures print no JSON
    p, _ = kopt(fresh_db("start-bad"), *base, "--start", bad)
    if "not compiled before the search" in p.stderr:
        print("skipped: no NVRTC here: --start's compile check is not tested")
    else:
        check(p.returncode != 0 and "does not compile" in p.stderr and "expected an expression"
              in p.stderr, "--start with a file that does not compile: a clear error (%s)" %
              p.stderr.strip().splitlines()[:1])
    p, _ = kopt(fresh_db("start-other"), *base, "--start",
                os.path.join(ROOT, "examples/vector_add/reference.cu"))
    check(p.returncode != 0 and "is not a candidate of problem softmax" in p.stderr and
          "softmax_ref" in p.stderr,
          "--start with another problem's kernel: a clear error (%s)" %
          p.stderr.strip().splitlines()[:1])
    p, _ = kopt(fresh_db("start-resume"), "--resume", "1", "--start", bad)
    check(p.returncode == 2, "--start with --resume is a usage error")


def all_tests():
    db, doc = test_mcts_repairs()
    test_replay(db, doc)
    test_policies()
    test_kill_resume()
    test_propose_evaluate()
    test_propose_unevaluated_root()
    test_coder_contract()
    test_manual()
    test_code_search()
    test_search_bound()
    test_cute_debugger()
    test_suspect_repair()
    test_start()
    test_template_reply()


def main():
    run(all_tests, TMP)


if __name__ == "__main__":
    main()
