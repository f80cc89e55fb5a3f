"""The Python API (python/kopt) over the build tree's libkopt: eval and its typed result,
errors with kopt's message, the ABI check, a session, profile, tune (replay, and Ctrl-C
stopping it with what was done stored), optimize with a Python callable as the model
(fake evaluator), kb import (needs torch). Without a GPU evaluations are SKIPPED (static);
on one they must be OK. Run: python3 -m pytest tests/python (KOPT_LIB: the libkopt.so)."""
import os
import signal
import sqlite3
import sys
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import kopt  # noqa: E402
from kopt import _lib  # noqa: E402

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
