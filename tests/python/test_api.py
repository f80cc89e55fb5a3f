"""The Python API (python/kopt) over the build tree's libkopt: eval and its typed result,
errors with kopt's message, the ABI check, a session, profile, tune (replay, and Ctrl-C
stopping it with what was done stored), optimize with a Python callable as the model
(fake evaluator), kb import (needs torch), bench in-process (the same document as kopt
bench --json; resumed; its errors; Ctrl-C stopping a suite of ModelNew candidates, needs
torch). Without a GPU evaluations are SKIPPED (static);
on one they must be OK. Run: python3 -m pytest tests/python (KOPT_LIB: the libkopt.so)."""
import contextlib
import ctypes
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import kopt  # noqa: E402
from kopt import _lib, _serve  # noqa: E402

SOFTMAX = os.path.join(ROOT, "examples", "softmax")
FAST = os.path.join(SOFTMAX, "fast.cu")


def has_gpu():
    return os.path.exists("/dev/nvidiactl") and os.system("nvidia-smi -L >/dev/null 2>&1") == 0


def cmake_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        for line in f:
            if line.startswith("project(kopt VERSION"):
                return line.split()[2]
    return None


def test_version_matches_cmake():
    assert kopt.version() == cmake_version()
    assert kopt.__version__ == kopt.version()


def test_abi_mismatch_refused(monkeypatch):
    monkeypatch.setattr(_lib, "ABI_VERSION", _lib.ABI_VERSION + 1)
    with pytest.raises(kopt.KoptError) as e:
        _lib._Lib()
    assert "ABI version %d" % (_lib.ABI_VERSION - 1) in str(e.value)
    assert e.value.status == "unsupported"


def test_eval_result_is_typed_and_matches_json(tmp_path):
    r = kopt.eval(SOFTMAX, FAST, db=str(tmp_path / "k.db"))
    assert r.verdict == ("OK" if has_gpu() else "SKIPPED"), r.message
    assert r.kernels and r.kernels[0].name == "softmax_fast" and r.kernels[0].registers > 0
    assert r.arch.startswith("sm_") and r.sizes == {"B": 8192, "N": 4096}
    assert r.run_id >= 1
    for k in r.json:   # every field of kopt eval --json is an attribute
        if not k.startswith("_"):
            assert hasattr(r, k) or k in r.extra, k
    if has_gpu():
        assert r.timing.median_ms > 0 and r.speedup > 0 and r.device.name
    else:
        assert r.timing is None and "no GPU" in r.message


def test_eval_source_text_and_no_store():
    with open(FAST) as f:
        r = kopt.eval(SOFTMAX, source=f.read(), db=None)
    assert r.run_id == 0 and r.kernels[0].name == "softmax_fast"


def test_errors_carry_kopts_message(tmp_path):
    with pytest.raises(kopt.KoptError) as e:
        kopt.eval(SOFTMAX, FAST, trials=99, db=None)
    assert str(e.value) == "arguments.trials: 1 to 16" and e.value.status == "invalid input"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "problem.json").write_text('{"name": "x", "sizes": {"N": "many"}}')
    with pytest.raises(kopt.KoptError) as e:
        kopt.eval(str(bad), FAST, db=None)
    assert "problem.json" in str(e.value), str(e.value)


def test_session(tmp_path):
    db = str(tmp_path / "k.db")
    want = "OK" if has_gpu() else "SKIPPED"
    with kopt.Session(SOFTMAX, trials=1, db=db) as s:
        rs = [s.eval(FAST), s.eval(os.path.join(SOFTMAX, "reference.cu"), tag="ref")]
    assert [r.verdict for r in rs] == [want, want]
    assert rs[1].session == {"evaluations": 2} and rs[0].run_id == rs[1].run_id
    n = sqlite3.connect(db).execute("select count(*) from evaluations").fetchone()[0]
    assert n == (2 if has_gpu() else n)   # SKIPPED evaluations may or may not be stored
    with pytest.raises(kopt.KoptError):
        s.eval(FAST)


def test_profile_static():
    p = kopt.profile(SOFTMAX, FAST, static=True, db=None)
    assert p.static_only and p.evaluation is None
    assert all(f.tool and f.title for f in p.findings)


def test_tune_replay(tmp_path):
    d = kopt.tune(replay=os.path.join(ROOT, "tests/data/tune/h200/sgemm.json"),
                  strategy="forest", budget=30, db=str(tmp_path / "k.db"))
    assert d.run_id >= 1 and not d.interrupted and d.best


def test_progress_reaches_a_python_callback(tmp_path):
    """progress=: a tune's evaluations (done of the budget, str() the line to print), an
    optimize's search lines and model rounds, a bench's rows as they finish, reach the
    callback as kopt.Progress; a caller
    built against the version 1 options (no progress fields) is still served."""
    seen = []
    kopt.tune(replay=os.path.join(ROOT, "tests/data/tune/h200/sgemm.json"), strategy="random",
              budget=12, db=str(tmp_path / "k.db"), progress=seen.append)
    evals = [p for p in seen if p.total == 12]
    assert evals and all(isinstance(p, kopt.Progress) for p in seen), seen
    assert [p.done for p in evals] == sorted(p.done for p in evals) and evals[-1].done == 12
    assert str(evals[-1]).startswith("[12/12] "), str(evals[-1])
    calls = []

    def broken(p):
        calls.append(p)
        raise ValueError("progress broke")

    with pytest.raises(ValueError, match="progress broke"):   # raised once the tune is done
        kopt.tune(replay=os.path.join(ROOT, "tests/data/tune/h200/sgemm.json"),
                  strategy="random", budget=5, db=str(tmp_path / "k.db"), progress=broken)
    assert len(calls) == 1, calls
    sys.path.insert(0, os.path.join(ROOT, "tests", "optimize"))
    import scripted_llm
    script = os.path.join(ROOT, "tests", "optimize", "softmax")
    lines = []
    kopt.optimize(SOFTMAX, lambda p: scripted_llm.answer(script, p.role, p.text),
                  evaluator="fake", iterations=1, workdir=str(tmp_path / "t"),
                  db=str(tmp_path / "k.db"), progress=lambda p: lines.append(str(p)))
    assert any(l.startswith("iter 1/1 | n") for l in lines), lines
    assert any(l.endswith("asking the model 2 prompt(s) (planner)") for l in lines), lines
    db = str(tmp_path / "k.db")
    with pytest.raises(ValueError, match="progress broke"):   # raised when the search is done
        kopt.optimize(SOFTMAX, lambda p: scripted_llm.answer(script, p.role, p.text),
                      evaluator="fake", iterations=1, workdir=str(tmp_path / "t5"), db=db,
                      progress=broken)
    tree = sqlite3.connect(db).execute("select max(tree_id) from opt_trees").fetchone()[0]
    d = _lib.call("optimize_tree", {"tree": tree}, db=db)
    assert len(calls) == 2 and len(d["nodes"]) > 1, (calls, len(d["nodes"]))
    rows = []
    p, c = _bench_suite(tmp_path)
    kopt.bench(p, c, db=None, progress=lambda x: rows.append(x.message))
    assert any(r.startswith("softmax ") for r in rows), rows   # each row as it finishes
    assert any(r.startswith("vector_add ") and "MISSING" in r for r in rows), rows

    class V1(ctypes.Structure):   # kopt_mcp_opts as version 1 had it
        _fields_ = [("version", ctypes.c_int), ("db_path", ctypes.c_char_p),
                    ("examples_dir", ctypes.c_char_p), ("cache_dir", ctypes.c_char_p),
                    ("max_tune_budget", ctypes.c_int), ("replay_delay_ms", ctypes.c_double)]
    L = _lib.lib()
    v1 = V1(1, None, os.path.join(ROOT, "examples").encode(), None, 500, 0.0)
    ctx, out = L.lib.kopt_ctx_new(), ctypes.c_void_p()
    try:
        rc = L.lib.kopt_mcp_call(ctx, ctypes.cast(ctypes.pointer(v1),
                                                  ctypes.POINTER(_lib._McpOpts)),
                                 b"list_problems", b"{}", None, ctypes.byref(out), None)
        assert rc == 0, L.lib.kopt_errmsg(ctx)
        names = [p["name"] for p in json.loads(L.take(out.value))["problems"]]
    finally:
        L.lib.kopt_ctx_free(ctx)
    assert "softmax" in names, names


def test_keyboard_interrupt_stops_tune_and_keeps_what_was_done(tmp_path):
    db = str(tmp_path / "k.db")
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        kopt.tune(replay=os.path.join(ROOT, "tests/data/tune/h200/sgemm.json"),
                  strategy="random", budget=200, db=db, replay_delay_ms=25)
    timer.cancel()
    c = sqlite3.connect(db)
    status = c.execute("select status from runs where kind = 'tune'").fetchone()[0]
    n = c.execute("select count(*) from tune_evals").fetchone()[0]
    assert status == "interrupted" and 0 < n < 200, (status, n)


def test_optimize_with_a_python_model(tmp_path):
    """A whole search (fake evaluator: outcomes scripted in the sources, no GPU) with a
    Python callable as the model: tests/optimize's scripted replies, as the MCP test's."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "optimize"))
    import scripted_llm
    script = os.path.join(ROOT, "tests", "optimize", "softmax")
    roles = []

    def model(p):
        roles.append(p.role)
        return scripted_llm.answer(script, p.role, p.text)

    d = kopt.optimize(SOFTMAX, model, evaluator="fake", iterations=2,
                      workdir=str(tmp_path / "tree"), db=str(tmp_path / "k.db"))
    assert d.tree_id >= 1 and "planner" in roles and "coder" in roles, roles
    assert d.stats["stop_reason"] == "2 iterations done", d.stats
    with pytest.raises(kopt.KoptError) as e:   # a reply the contract refuses: kopt's message
        kopt.optimize(SOFTMAX, lambda p: "", evaluator="fake", iterations=1,
                      workdir=str(tmp_path / "tree2"), db=str(tmp_path / "k.db"))
    assert "arguments.text: empty reply" in str(e.value)


def test_optimize_asks_a_round_at_once(tmp_path):
    """A round's prompts go to the Python model at once (as the CLI asks a step's requests
    together), one at a time with parallel=1; a call that raises loses none of the other
    replies (they are stored) and its error is raised; a bad parallel is refused."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "optimize"))
    import scripted_llm
    script = os.path.join(ROOT, "tests", "optimize", "softmax")
    db = str(tmp_path / "k.db")
    lock = threading.Lock()
    seen = {"now": 0, "peak": 0}

    def counted(p, meet=None):
        with lock:
            seen["now"] += 1
            seen["peak"] = max(seen["peak"], seen["now"])
        try:
            if meet is not None:
                meet.wait()   # both of the round's calls in flight, or BrokenBarrierError
            return scripted_llm.answer(script, p.role, p.text)
        finally:
            with lock:
                seen["now"] -= 1

    meet = threading.Barrier(2, timeout=10)
    d = kopt.optimize(SOFTMAX, lambda p: counted(p, meet), evaluator="fake", iterations=1,
                      workdir=str(tmp_path / "t1"), db=db)
    assert d.stats["stop_reason"] == "1 iterations done" and seen["peak"] == 2, (d.stats, seen)
    seen["peak"] = 0
    d = kopt.optimize(SOFTMAX, counted, evaluator="fake", iterations=1, parallel=1,
                      workdir=str(tmp_path / "t2"), db=db)
    assert d.stats["stop_reason"] == "1 iterations done" and seen["peak"] == 1, (d.stats, seen)

    def flaky(p):
        if p.name == "e1-p1-planner":
            raise RuntimeError("model down")
        return scripted_llm.answer(script, p.role, p.text)

    with pytest.raises(RuntimeError, match="model down") as e:
        kopt.optimize(SOFTMAX, flaky, evaluator="fake", iterations=1,
                      workdir=str(tmp_path / "t3"), db=db)
    tree = sqlite3.connect(db).execute("select max(tree_id) from opt_trees").fetchone()[0]
    if sys.version_info >= (3, 11):
        assert e.value.__notes__ == ["kopt: optimize tree %d keeps the replies stored so far "
                                     "(kopt optimize --resume %d)" % (tree, tree)]
    left = _lib.call("optimize_prompts", {"tree": tree}, db=db).get("prompts") or []
    assert [p["name"] for p in left] == ["e1-p1-planner"], left   # e1-p2's reply was stored
    for bad in (0, -2, 1.5, True):
        with pytest.raises(kopt.KoptError) as e:
            kopt.optimize(SOFTMAX, flaky, evaluator="fake", parallel=bad, db=db)
        assert "arguments.parallel" in str(e.value) and e.value.status == "invalid input"


def test_optimize_resumes_a_tree_and_spreads_over_gpus(tmp_path):
    """resume: a search whose model failed at its second round goes on from the stored tree
    (the prompts left waiting asked first) and ends as the same search run at one go (its
    signature); what a resumed tree keeps is refused with resume, and so is another
    problem; gpus: every step evaluates on the tree's GPUs (the fake evaluator's stand-ins
    name the GPU of each node), not only the first."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "optimize"))
    import scripted_llm
    script = os.path.join(ROOT, "tests", "optimize", "softmax")
    db = str(tmp_path / "k.db")
    calls = []

    def model(p):
        calls.append(p.name)
        return scripted_llm.answer(script, p.role, p.text)

    whole = kopt.optimize(SOFTMAX, model, evaluator="fake", iterations=2,
                          workdir=str(tmp_path / "whole"), db=db)
    rounds = []

    def fails_second_round(p):
        if p.role == "coder" and "e1" not in p.name:
            raise RuntimeError("model down")
        rounds.append(p.name)
        return scripted_llm.answer(script, p.role, p.text)

    with pytest.raises(RuntimeError, match="model down"):
        kopt.optimize(SOFTMAX, fails_second_round, evaluator="fake", iterations=2,
                      workdir=str(tmp_path / "cut"), db=db)
    tree = sqlite3.connect(db).execute("select max(tree_id) from opt_trees").fetchone()[0]
    left = [p["name"] for p in _lib.call("optimize_prompts", {"tree": tree}, db=db)["prompts"]]
    assert left and all("coder" in n for n in left), left
    del calls[:]
    d = kopt.optimize(SOFTMAX, model, resume=tree, db=db)
    assert d.tree_id == tree and d.stats["stop_reason"] == "2 iterations done", d.stats
    assert calls[:len(left)] == left or sorted(calls[:len(left)]) == sorted(left), (calls, left)
    assert d.signature == whole.signature, (d.signature, whole.signature)
    d = kopt.optimize(None, model, resume=tree, iterations=3, db=db)   # a larger budget
    assert d.stats["stop_reason"] == "3 iterations done", d.stats

    for bad, what in (({"search": "greedy"}, "search"), ({"workdir": "x"}, "workdir"),
                      ({"no_tune": True}, "no_tune")):
        with pytest.raises(kopt.KoptError, match="resume: %s: set when a tree starts" % what):
            kopt.optimize(None, model, resume=tree, db=db, **bad)
    with pytest.raises(kopt.KoptError, match="resume: tree %d searches problem softmax" % tree):
        kopt.optimize(os.path.join(ROOT, "examples", "vector_add"), model, resume=tree, db=db)
    with pytest.raises(kopt.KoptError, match="987654"):
        kopt.optimize(None, model, resume=987654, db=db)
    with pytest.raises(kopt.KoptError, match="problem: required"):
        kopt.optimize(None, model, db=db)

    d = kopt.optimize(SOFTMAX, model, evaluator="fake", iterations=3, gpus="0,1",
                      workdir=str(tmp_path / "wide"), db=db)
    used = sorted({n["gpu"] for n in d.nodes if "gpu" in n})
    assert d.width == 2 and used == [0, 1], (d.width, used)


def test_optimize_overlap_runs_the_whole_search_in_one_process(tmp_path):
    """overlap=True: the search is one kopt optimize --overlap process whose model is the
    Python callable (through the relay): the same kind of tree (overlap on, its iterations
    done), the model asked from the relay's threads with prompts as manual mode writes them
    and named as manual mode names them,
    progress gets the search's lines, options reach kopt optimize as flags (a bad one is
    kopt's error); a model that raises stops the search and its error is raised with a note
    naming the tree, which a later call resumes."""
    sys.path.insert(0, os.path.join(ROOT, "tests", "optimize"))
    import scripted_llm
    script = os.path.join(ROOT, "tests", "optimize", "softmax")
    db = str(tmp_path / "k.db")
    asked, lines = [], []

    names = []

    def model(p):
        asked.append((p.role, threading.current_thread().name, p.text))
        names.append(p.name)
        return scripted_llm.answer(script, p.role, p.text)

    d = kopt.optimize(SOFTMAX, model, evaluator="fake", iterations=3, overlap=True,
                      workdir=str(tmp_path / "t1"), db=db, progress=lambda p: lines.append(str(p)))
    assert d.overlap and d.stats["stop_reason"] == "3 iterations done", d.json
    # named as manual mode and the step-by-step search name them (not by node: n0-planner)
    manual = re.compile(r"^(e\d+-p\d+-(planner|coder)|e\d+-n\d+-templatizer|n\d+-debugger)"
                        r"(\.turn\d+)?$")
    assert "e1-p1-planner" in names and "n1-debugger" in names, names
    assert not [n for n in names if not manual.match(n)], names
    roles = {r for r, _, _ in asked}
    assert {"planner", "coder"} <= roles and all(t == "kopt-model" for _, t, _ in asked), asked
    assert all("reply contract" in x.lower() or "reply" in x.lower() for _, _, x in asked)
    assert any("iter 3/3" in l for l in lines), lines[-5:]
    stored = sqlite3.connect(db).execute("select count(*) from llm_exchanges where run_id = ?",
                                         (d.tree_id,)).fetchone()[0]
    assert stored == len(asked), (stored, len(asked))   # each exchange stored, as a model's
    def bad_progress(p):
        raise ValueError("progress broke")

    with pytest.raises(ValueError, match="progress broke"):   # raised when done, no hang
        kopt.optimize(SOFTMAX, model, evaluator="fake", iterations=1, overlap=True, db=db,
                      workdir=str(tmp_path / "t0"), progress=bad_progress)
    with pytest.raises(kopt.KoptError, match="no-such-flag"):
        kopt.optimize(SOFTMAX, model, evaluator="fake", iterations=1, overlap=True, db=db,
                      no_such_flag=3)

    def fails(p):
        if p.role == "coder":
            raise RuntimeError("model down")
        return scripted_llm.answer(script, p.role, p.text)

    with pytest.raises(RuntimeError, match="model down") as e:
        kopt.optimize(SOFTMAX, fails, evaluator="fake", iterations=3, overlap=True,
                      workdir=str(tmp_path / "t2"), db=db)
    tree = sqlite3.connect(db).execute("select max(tree_id) from opt_trees").fetchone()[0]
    if sys.version_info >= (3, 11):
        assert "resume=%d" % tree in e.value.__notes__[0], e.value.__notes__
    d = kopt.optimize(None, model, resume=tree, overlap=True, db=db)
    assert d.tree_id == tree and d.stats["stop_reason"] == "3 iterations done", d.json


def test_optimize_step_compiles_its_candidates_ahead_for_the_server(tmp_path, monkeypatch):
    """On a GPU: a step of kopt.optimize (a resumed kopt optimize) compiles its candidates in
    parallel before the first has been evaluated in its process (the arch from the device),
    so its own server finds every candidate but a step's first in the compile cache. Every
    kernel differs (KOPT_SCRIPT_FRESH=1): without the compiles ahead the server compiles each
    one itself and none is a cache hit. Every one is correct: a step's first, which the server
    and the step would both compile, is compiled once (the compile cache's lock per key)."""
    if not has_gpu():
        pytest.skip("skipped: no GPU (the compiles ahead of a step that a server evaluates)")
    try:
        import torch  # noqa: F401
    except ImportError:
        pytest.skip("no torch")
    monkeypatch.delenv("KOPT_SERVER", raising=False)
    monkeypatch.setenv("KOPT_SCRIPT_FRESH", "1")
    monkeypatch.setenv("KOPT_CACHE_DIR", str(tmp_path / "cache"))
    sys.path.insert(0, os.path.join(ROOT, "tests", "optimize"))
    import scripted_llm
    llm = tmp_path / "llm"   # kb_tanh's kernel at its problem's scale: correct
    llm.mkdir()
    src = open(os.path.join(ROOT, "tests/optimize/kb_tanh/1.cu")).read()
    assert "n, 1.0f);" in src
    (llm / "1.cu").write_text(src.replace("n, 1.0f);", "n, 2.0f);"))
    llm = str(llm)
    db = str(tmp_path / "k.db")
    kopt.optimize(os.path.join(ROOT, "tests/optimize/kb_tanh/problem"),
                  lambda p: scripted_llm.answer(llm, p.role, p.text), iterations=4,
                  no_profile=True, workdir=str(tmp_path / "t"), db=db)
    rows = sqlite3.connect(db).execute(
        "select tag, compile_cache_hit, verdict from evaluations where tag like 'n%' and "
        "tag != 'n0' order by id").fetchall()
    log = (tmp_path / "t" / "serve.log").read_text()
    assert log.count("kopt serve: eval") == len(rows) >= 4, (rows, log)
    hits = [r for r in rows if r[1]]
    assert len(hits) >= len(rows) // 2, rows
    # every kernel is correct: none is called TAMPER because the server and the step both
    # compiled it and the second nvcc rewrote the .so under it (the compile cache's lock)
    assert all(r[2] == "OK" for r in rows), rows


def test_optimize_steps_in_its_own_server(tmp_path, monkeypatch):
    """kopt.optimize on a PyTorch problem evaluates its steps' candidates in a kopt serve of
    its own (the reference's workers and run kept between steps): the server's log names
    each candidate stored with a node, its socket answers at every round and is gone after
    the call; no_profile reaches the planner; a server that ended between steps is started
    again (RuntimeWarning) and the search goes on in it; server=False, and a server that
    cannot start (RuntimeWarning), evaluate here; the server argument's errors name it."""
    try:
        import torch  # noqa: F401
    except ImportError:
        pytest.skip("no torch")
    if not has_gpu():
        monkeypatch.setenv("KOPT_TORCH_DEVICE", "cpu")
    monkeypatch.delenv("KOPT_SERVER", raising=False)
    sys.path.insert(0, os.path.join(ROOT, "tests", "optimize"))
    import scripted_llm
    recs = kopt.kb.import_(os.path.join(ROOT, "tests/data/kb_small/scale_add.py"),
                           str(tmp_path / "p"))
    assert len(recs) == 1 and recs[0].ok, recs
    problem = recs[0].problem
    llm = tmp_path / "llm"   # a host-mode kernel (on a GPU it fails the check: no matter)
    llm.mkdir()
    shutil.copy(os.path.join(ROOT, "tests/optimize/kb_tanh/1.cu"), llm / "1.cu")
    db = str(tmp_path / "k.db")
    servers, alive, prompts = [], [], []
    real = kopt.api.own_server

    @contextlib.contextmanager
    def spy(device, log_dir):
        with real(device, log_dir) as srv:
            servers.append(srv)
            yield srv

    def model(p):
        srv = servers[-1] if servers else None
        alive.append(bool(srv and srv.proc and _serve._answers(srv.sock)))
        prompts.append(p.text)
        return scripted_llm.answer(str(llm), p.role, p.text)

    def tagged():
        return sqlite3.connect(db).execute("select count(*) from evaluations where tag like "
                                           "'n%' and tag != 'n0'").fetchone()[0]

    monkeypatch.setattr(kopt.api, "own_server", spy)
    d = kopt.optimize(problem, model, iterations=2, no_profile=True,
                      workdir=str(tmp_path / "t1"), db=db)
    log = (tmp_path / "t1" / "serve.log").read_text()
    served = log.count("kopt serve: eval")
    srv = servers[0]
    assert len(servers) == 1 and srv.starts == 1 and alive and all(alive), (alive, log)
    assert not os.path.exists(srv.sock) and not _serve._answers(srv.sock), srv.sock
    assert served >= 1 and served == tagged(), (served, tagged(), log, d.json)
    assert any("profiling is off (--no-profile)" in t for t in prompts), prompts[0]

    before = tagged()   # the server ends while the model thinks: started again, goes on

    def ends_it(p):
        if p.role == "coder" and servers[-1].starts == 1:
            servers[-1].proc.kill()
            servers[-1].proc.wait()
        return model(p)

    with pytest.warns(RuntimeWarning, match="own kopt serve ended"):
        d = kopt.optimize(problem, ends_it, iterations=1, no_profile=True,
                          workdir=str(tmp_path / "t4"), db=db)
    log = (tmp_path / "t4" / "serve.log").read_text()
    assert servers[-1].starts == 2 and log.count("listening on") == 2, log
    assert log.count("kopt serve: eval") == tagged() - before >= 1, (log, d.json)

    before = tagged()   # server=False: evaluated here, no server started
    kopt.optimize(problem, model, iterations=1, server=False, no_profile=True,
                  workdir=str(tmp_path / "t2"), db=db)
    assert len(servers) == 2 and tagged() > before and not (tmp_path / "t2" / "serve.log").exists()

    before = tagged()   # a server that cannot start: a warning, evaluated here
    monkeypatch.setattr(_serve, "kopt_program", lambda: str(tmp_path / "no-such-kopt"))
    with pytest.warns(RuntimeWarning, match="own kopt serve did not start"):
        kopt.optimize(problem, model, iterations=1, no_profile=True,
                      workdir=str(tmp_path / "t3"), db=db)
    assert len(servers) == 3 and servers[2].failed and servers[2].proc is None, servers
    assert tagged() > before

    for bad in ("", 3):
        with pytest.raises(kopt.KoptError, match="arguments.server"):
            kopt.optimize(problem, model, iterations=1, server=bad, db=db)
    none = str(tmp_path / "none.sock")
    with pytest.raises(kopt.KoptError, match="arguments.server: no kopt serve answers on " +
                       none):
        kopt.optimize(problem, model, iterations=1, server=none, db=db)


def test_kb_import(tmp_path):
    try:
        import torch  # noqa: F401
    except ImportError:
        pytest.skip("no torch")
    recs = kopt.kb.import_(os.path.join(ROOT, "tests/data/kb_small/scale_add.py"),
                           str(tmp_path / "p"))
    assert len(recs) == 1 and recs[0].ok, recs
    r = kopt.eval(recs[0].problem, os.path.join(ROOT, "tests/data/kb_small/scale_add_new.py"),
                  db=None)
    # on a GPU the tiny problem may run below the timer's own cost: SUSPECT, but checked correct
    assert r.verdict in ("OK", "SKIPPED") or (r.verdict == "SUSPECT" and
                                              r.message.startswith("correct")), r.message


def _bench_suite(tmp_path):
    """softmax (its candidate: fast.cu as softmax.cu) and vector_add (no candidate: MISSING)."""
    p, c = tmp_path / "p", tmp_path / "c"
    p.mkdir()
    c.mkdir()
    for name in ("softmax", "vector_add"):
        os.symlink(os.path.join(ROOT, "examples", name), str(p / name))
    with open(FAST) as f:
        (c / "softmax.cu").write_text(f.read())
    return str(p), str(c)


def _stable(x):
    """A bench document without what differs from run to run: ids, measured numbers."""
    if isinstance(x, dict):
        return {k: _stable(v) for k, v in x.items()
                if k not in ("suite", "run_id", "eval_id", "_summary")}
    if isinstance(x, list):
        return [_stable(v) for v in x]
    return None if isinstance(x, float) else x


def test_bench_in_process_is_kopt_bench_json(tmp_path):
    p, c = _bench_suite(tmp_path)
    db = str(tmp_path / "k.db")
    d = kopt.bench(p, c, trials=1, db=db)
    want = "OK" if has_gpu() else "SKIPPED"
    assert [(r["problem"], r["verdict"]) for r in d.rows] == [("softmax", want),
                                                               ("vector_add", "MISSING")]
    assert d.suite == d.run_id >= 1 and d.vs_eager["problems"] == 2, d.json
    prog = os.path.join(os.path.dirname(_lib.lib().path), "kopt")
    out = subprocess.run([prog, "bench", p, "--candidates", c, "--trials", "1", "--json",
                          "--db", str(tmp_path / "cli.db")], stdout=subprocess.PIPE,
                         check=True, text=True).stdout
    assert _stable(d.json) == _stable(json.loads(out))
    r = kopt.bench(resume=d.suite, db=db)     # the stored rows, nothing evaluated again
    assert r.rows == d.rows and r.suite == d.suite and r.run_id > d.run_id
    n = sqlite3.connect(db).execute("select count(*) from bench_rows").fetchone()[0]
    assert n == 2


def test_bench_options_errors_and_no_store(tmp_path):
    p, c = _bench_suite(tmp_path)
    d = kopt.bench(p, c, kind="cu", no_check_sizes=True, no_compile=True, db=None)
    assert d.suite == 0 and d.options == {"kind": "cu", "no_compile": True,
                                          "no_check_sizes": True}
    assert d.rows[0]["shape_check"] in ("skipped", "not_run") and d.vs_compile is None
    with pytest.raises(kopt.KoptError) as e:
        kopt.bench(str(tmp_path / "none"), c, db=None)
    assert str(e.value) == "arguments.problems: no folder '%s'" % (tmp_path / "none")
    with pytest.raises(kopt.KoptError) as e:
        kopt.bench(p, c, reps="3", db=None)
    assert "arguments.reps: MIN:MAX" in str(e.value) and e.value.status == "invalid input"
    with pytest.raises(kopt.KoptError) as e:
        kopt.bench(resume=1, db=str(tmp_path / "empty.db"))
    assert "no bench suite 1" in str(e.value)


def test_keyboard_interrupt_stops_bench_and_keeps_what_was_done(tmp_path, monkeypatch):
    """Twelve ModelNew problems (PyTorch on the CPU without a GPU: seconds each; enough that
    a GPU does not finish them all before the signal); Ctrl-C during
    the first evaluation: it finishes and is stored, the suite stops, the run is
    interrupted, and resuming it finishes the rest."""
    try:
        import torch  # noqa: F401
    except ImportError:
        pytest.skip("no torch")
    if not has_gpu():
        monkeypatch.setenv("KOPT_TORCH_DEVICE", "cpu")
    src, cands = tmp_path / "kb", tmp_path / "c"
    src.mkdir()
    cands.mkdir()
    for i in range(12):
        (src / ("t%d.py" % i)).write_text(
            "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
            "        return torch.tanh(x) * %d\n"
            "def get_inputs():\n    return [torch.randn(32, 48)]\n"
            "def get_init_inputs():\n    return []\n" % (i + 1))
        (cands / ("t%d.py" % i)).write_text(
            "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
            "        return torch.tanh(x) * %d\n" % (i + 1))
    recs = kopt.kb.import_(str(src), str(tmp_path / "p"))
    assert len(recs) == 12 and all(r.ok for r in recs), recs
    db = str(tmp_path / "k.db")
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        kopt.bench(str(tmp_path / "p"), str(cands), no_compile=True, trials=1, reps="3:5",
                   budget_ms=5, db=db)
    timer.cancel()
    c = sqlite3.connect(db)
    suite, status = c.execute("select id, status from runs where kind = 'bench'").fetchone()
    n = c.execute("select count(*) from bench_rows").fetchone()[0]
    assert status == "interrupted" and 1 <= n < 12, (status, n)
    d = kopt.bench(resume=suite, no_compile=True, trials=1, reps="3:5", budget_ms=5, db=db)
    assert [r["problem"] for r in d.rows] == ["t%d" % i for i in range(12)]
    assert all(r["verdict"] == "OK" for r in d.rows), [r["message"] for r in d.rows]
