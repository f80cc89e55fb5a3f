"""kopt llm end to end against fault_server.py (no network, no model): retries and their
limits, timeouts, broken bodies, typed outcomes, the Anthropic dialect, parallel requests,
the command and replay backends, the store, and a planted fake API key that must appear in
no output, no record file and not in the database.

Usage: python3 test_llm_cli.py KOPT   (prints 'N passed, M failed'; exit 1 on a failure)
"""
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time

import fault_server
from llmtest import Checks

KOPT = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_OPENAI_KEY = "sk-kopt-FAKE-7f3a9c1e5b2d4a6f8e0c"
FAKE_ANTHROPIC_KEY = "sk-ant-kopt-FAKE-0d9e8c7b6a5f4e3d2c1b"
TMP = tempfile.mkdtemp(prefix="kopt-llm-test-")
DB = os.path.join(TMP, "k.db")
RECORD = os.path.join(TMP, "record.jsonl")
FAST = ["--llm-backoff", "0.05", "--llm-backoff-max", "5", "--llm-retries", "2",
        "--llm-timeout", "1.5", "--db", DB, "--llm-record", RECORD]

check = Checks()
KEYS = {"OPENAI_API_KEY": FAKE_OPENAI_KEY, "ANTHROPIC_API_KEY": FAKE_ANTHROPIC_KEY}


def kopt(*args, stdin=None):
    t0 = time.monotonic()
    p = check.kopt(KOPT, args, KEYS, stdin=stdin, timeout=60)
    return p, time.monotonic() - t0


def ping(base, *extra, n=None):
    """kopt llm ping --json against base; returns (rc, first reply dict or {}, doc, stderr)."""
    args = ["llm", "ping", "--llm", base, "--json", *FAST, *extra]
    if n:
        args += ["-n", str(n)]
    p, wall = kopt(*args)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = {}
    reply = (doc.get("replies") or [{}])[0]
    return p.returncode, reply, doc, p.stderr, wall


def main():
    srv, port = fault_server.start()
    url = lambda sc: "openai:fault-model@http://127.0.0.1:%d/%s/v1" % (port, sc)
    try:
        run_usage()
        run_http_cases(url, port)
        run_parallel(url)
        run_command_and_replay(port)
        run_key_checks(srv)
    finally:
        srv.shutdown()
        shutil.rmtree(TMP, ignore_errors=True)
    return check.summary()


def run_http_cases(url, port):
    p, _ = kopt("llm", "ping", "--llm", url("ok"), *FAST)
    check(p.returncode == 0 and "latency " in p.stdout and "tokens   prompt 11, completion 5"
          in p.stdout and "reply    echo: Reply with one word" in p.stdout
          and "model    fault-model" in p.stdout, "ping text: " + p.stdout + p.stderr)
    rc, r, doc, err, _ = ping(url("ok"))
    check(rc == 0 and r.get("outcome") == "ok", "ok: %s %s" % (rc, err))
    check(r.get("text", "").startswith("echo: Reply with one word"), "ok: the prompt went out")
    check(r.get("usage", {}).get("prompt_tokens") == 11 and r["usage"]["cached_tokens"] == 0,
          "ok: usage")
    check(doc.get("last_exchange_id", 0) >= 1, "ok: stored")

    rc, r, doc, err, wall = ping(url("429-once"))
    check(rc == 0 and r.get("outcome") == "ok" and r.get("attempts") == 2,
          "429 then ok after a retry: %s" % r)
    check(r.get("latency_ms", 0) >= 950, "429: Retry-After 1 honoured (%.0f ms)"
          % r.get("latency_ms", 0))

    rc, r, doc, err, wall = ping(url("429-long"))
    check(rc == 10 and r.get("outcome") == "rate_limited" and r.get("attempts") == 1,
          "429 asking for 120 s: stop at once: %s" % r)
    check("more than the 5 s limit" in (r.get("error") or "") and wall < 10, "429-long message")

    # scenario: exit code, outcome, attempts (2 retries allowed), text (None: not checked)
    cases = {
        "500-once": (0, "ok", 2, "after the 500"),
        "503-always": (10, "server_error", 3, None),
        "stall": (10, "timeout", 3, None),             # past --llm-timeout 1.5 each time
        "stall-once": (0, "ok", 2, "after the stall"),  # a timeout is retried
        "truncated": (10, "truncated", 3, None),
        "reset": (10, "network", 3, None),             # closed with no answer
        # typed outcomes, not retried
        "invalid-json": (10, "malformed", 1, None),
        "html": (10, "malformed", 1, None),
        "refusal": (10, "refusal", 1, "I cannot help with that."),
        "empty-choices": (10, "empty", 1, None),
        "bad-utf8": (10, "bad_utf8", 1, None),
        "huge": (10, "too_large", 1, None),
    }
    seen = {}
    for sc, (want_rc, want, attempts, text) in cases.items():
        rc, r, doc, err, wall = seen[sc] = ping(url(sc))
        check(rc == want_rc and r.get("outcome") == want and r.get("attempts") == attempts
              and (text is None or r.get("text") == text),
              "%s -> %s after %d attempt(s): %s" % (sc, want, attempts, {
                  k: r.get(k) for k in ("outcome", "attempts", "error", "text")}))
    err = seen["503-always"][3]
    check("openai: HTTP 503: server_error: Service unavailable" in err, "503 message: " + err)
    check(seen["stall"][4] < 12, "stall: bounded (%.1f s)" % seen["stall"][4])

    rc, r, doc, err, _ = ping(url("length"), "--max-tokens", "7")
    check(rc == 0 and r.get("outcome") == "length" and r.get("finish_reason") == "length"
          and r.get("text") == "__global__ void partial(", "finish_reason length: %s" % r)
    check(r.get("usage", {}).get("completion_tokens") == 7, "length: max_tokens sent")

    rc, r, doc, err, _ = ping(url("401"))
    check(rc == 10 and r.get("outcome") == "http_error" and r.get("attempts") == 1
          and r.get("http_status") == 401, "401: no retry: %s" % r)
    check("openai: HTTP 401: invalid_request_error: Incorrect API key provided: [redacted]"
          in err, "401 message names backend, status, provider message: " + err)

    rc, r, doc, err, _ = ping(url("400"))
    check(rc == 10 and r.get("attempts") == 1 and "HTTP 400" in (r.get("error") or ""),
          "400: no retry")

    # the price table: a model with a known price gets a cost
    rc, r, doc, err, _ = ping("openai:gpt-4o-mini@http://127.0.0.1:%d/ok/v1" % port)
    check(r.get("cost_known") is True and abs(r.get("cost", 0) - (11 * 0.15 + 5 * 0.6) / 1e6)
          < 1e-12, "cost of gpt-4o-mini: %s" % r.get("cost"))
    prices = os.path.join(TMP, "prices.json")
    with open(prices, "w") as f:
        json.dump({"fault-model": {"input": 1000, "output": 2000}}, f)
    rc, r, doc, err, _ = ping(url("ok"), "--llm-prices", prices, "-n", "3", "--max-cost",
                              "0.02", "--llm-parallel", "1")
    outcomes = [x.get("outcome") for x in doc.get("replies", [])]
    # 11 * 1000 + 5 * 2000 per million = 0.021 USD: the first call spends the budget
    check(outcomes == ["ok", "budget", "budget"] and rc == 10, "--max-cost stops: %s"
          % outcomes)
    check("--max-cost" in doc.get("spent", {}).get("why", ""), "budget why")

    # Anthropic: its headers, its body, its errors
    aurl = lambda sc: "anthropic:claude-fault@http://127.0.0.1:%d/%s" % (port, sc)
    rc, r, doc, err, _ = ping(aurl("anthropic-ok"))
    check(rc == 0 and r.get("text", "").startswith("claude says: Reply")
          and r.get("usage", {}).get("prompt_tokens") == 11
          and r["usage"].get("cached_tokens") == 4, "anthropic ok: %s" % r)
    rc, r, doc, err, _ = ping(aurl("anthropic-529"))
    check(rc == 10 and r.get("outcome") == "server_error" and r.get("attempts") == 3,
          "anthropic 529 retried: %s" % r)
    check("anthropic: HTTP 529: overloaded_error: Overloaded" in err, "anthropic 529 message")
    rc, r, doc, err, _ = ping(aurl("anthropic-401"))
    check(rc == 10 and r.get("attempts") == 1 and
          "anthropic: HTTP 401: authentication_error: invalid x-api-key" in err,
          "anthropic 401 not retried: " + err)
    rc, r, doc, err, _ = ping(aurl("anthropic-max"))
    check(r.get("outcome") == "length", "anthropic max_tokens -> length")

    # nothing listens here: a clear network error
    rc, r, doc, err, _ = ping("openai:m@http://127.0.0.1:9/v1", "--llm-retries", "0")
    check(rc == 10 and r.get("outcome") == "network" and "127.0.0.1:9" in err,
          "connection refused: " + err)


def run_usage():
    for args, rc, msg in ((["llm", "ping", "--llm-parallel", "0"], 2, "--llm-parallel 0"),
                          (["llm", "frob"], 2, "unknown command 'frob'"),
                          (["llm", "ask"], 2, "usage: kopt llm"),
                          (["llm", "ping", "--llm", "gpt-4o", "--no-store"], 10,
                           "want BACKEND:ARG"),
                          (["llm", "ping", "--no-store"], 10, "KOPT_LLM")):
        p, _ = kopt(*args)
        check(p.returncode == rc and msg in p.stderr, "%s: %d %s" % (args, p.returncode,
                                                                       p.stderr[:300]))


def run_parallel(url):
    rc, r, doc, err, _ = ping(url("slow"), "--llm-parallel", "4", n=4)
    texts = [x.get("text") for x in doc.get("replies", [])]
    check(rc == 0 and texts == ["slow answer"] * 4, "4 at once: %s" % texts)
    check(doc.get("wall_ms", 1e9) < 2500, "4 x 1 s in flight together: %.0f ms"
          % doc.get("wall_ms", 0))
    rc, r, doc, err, _ = ping(url("slow"), "--llm-parallel", "1", n=3)
    check(doc.get("wall_ms", 0) >= 2900, "--llm-parallel 1 serializes: %.0f ms"
          % doc.get("wall_ms", 0))


def run_command_and_replay(port):
    fake = "command:%s %s/fake_model.py" % (sys.executable, HERE)
    p, _ = kopt("llm", "ask", "--llm", fake, "--json", "--db", DB, "--llm-record", RECORD,
                "--run-id", "42", "--system", "be brief", "write a kernel")
    doc = json.loads(p.stdout or "{}")
    r = (doc.get("replies") or [{}])[0]
    check(p.returncode == 0 and r.get("text") == "fake reply to: write a kernel (system: be "
          "brief)", "command backend: %s %s" % (r, p.stderr))
    check(r.get("usage", {}).get("completion_tokens") == 9, "command backend usage: %s" % r)
    p, _ = kopt("llm", "ask", "--llm", fake + " --fail", "--db", DB, "hello")
    check(p.returncode == 10 and "exited with status 4: fake model: out of quota" in p.stderr,
          "command failure: " + p.stderr)
    # text output prints the whole reply; stdin prompt
    p, _ = kopt("llm", "ask", "--llm", fake, "--no-store", "-", stdin="from stdin")
    check(p.returncode == 0 and "fake reply to: from stdin" in p.stdout, "ask -: " + p.stdout)

    # replay the command's answer from the JSONL record (by hash), then from the store
    for spec in ("replay:" + RECORD, "replay:42"):
        p, _ = kopt("llm", "ask", "--llm", spec, "--json", "--db", DB, "--system", "be brief",
                    "write a kernel")
        r = (json.loads(p.stdout or "{}").get("replies") or [{}])[0]
        check(p.returncode == 0 and r.get("text") == "fake reply to: write a kernel (system: "
              "be brief)", "%s: %s %s" % (spec, r, p.stderr))
    p, _ = kopt("llm", "ask", "--llm", "replay:" + RECORD, "--no-store", "never asked")
    check(p.returncode == 10 and "no recorded answer" in p.stderr, "replay miss: " + p.stderr)

    db = sqlite3.connect(DB)
    rows = db.execute("SELECT run_id, role, backend, outcome, prompt_tokens, reply_text, "
                      "request_json FROM llm_exchanges ORDER BY id").fetchall()
    db.close()
    check(len(rows) > 20, "every exchange stored (%d rows)" % len(rows))
    check(any(r[0] == 42 and r[2] == "command" for r in rows), "run id stored")
    check(all(r[0] is None for r in rows if r[1] == "ping"), "ping stores run_id NULL")
    check(any(r[3] == "server_error" for r in rows) and any(r[3] == "timeout" for r in rows),
          "failed exchanges are stored too")


def run_key_checks(srv):
    # the keys did go out (the server saw them), so the check below is not vacuous
    sent = json.dumps(srv.log)
    check(FAKE_OPENAI_KEY in sent and FAKE_ANTHROPIC_KEY in sent, "the fake keys were sent")
    check.no_keys([FAKE_OPENAI_KEY, FAKE_ANTHROPIC_KEY], [DB, DB + "-wal", RECORD])
    check(os.path.getsize(RECORD) > 0, "the record file was written")


if __name__ == "__main__":
    sys.exit(main())
