#!/usr/bin/env python3
"""kopt mcp --http: the streamable HTTP transport (MCP 2025-11-25), driven by the official
Python SDK's streamable HTTP client, without a GPU: initialize (a session id), tools/list,
list_problems, a tune replay with progress notifications over the event stream, an
optimize tree started and stepped (scripted evaluator), resources; then over plain HTTP:
a foreign Origin is 403, a missing session id 400, an unknown one 404, GET 405, a DELETEd
session 404 afterwards, an unsupported MCP-Protocol-Version 400, a notification 202, a
cancelled tools/call's event stream ending with no result, and the server listening on
127.0.0.1 only. usage: test_mcp_http.py KOPT REPO_ROOT"""
import json, os, re, shutil, socket, subprocess, sys, tempfile, threading, time
import urllib.request, urllib.error

kopt, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
try:
    import anyio
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client
except ImportError as e:
    print("skipped: the Python MCP SDK is not installed (python3 -m pip install mcp): %s" % e)
    sys.exit(77)
passed = failed = 0
SOFTMAX = os.path.join(root, "tests/data/tune/h200/softmax.json")
tmp = tempfile.mkdtemp(prefix="kopt-mcp-http-test-")
db = os.path.join(tmp, "kopt.db")
env = dict(os.environ, KOPT_CACHE_DIR=os.path.join(tmp, "cache"), KOPT_TUNE_REPLAY_DELAY_MS="30",
           KOPT_PROMPTS=os.path.join(root, "prompts"))


def check(ok, what):
    global passed, failed
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    passed, failed = passed + bool(ok), failed + (not ok)


srv = subprocess.Popen([kopt, "mcp", "--http", "0", "--db", db, "--examples",
                        os.path.join(root, "examples")], stderr=subprocess.PIPE, text=True,
                       cwd=tmp, env=env)
line = srv.stderr.readline()
m = re.search(r"http://127\.0\.0\.1:(\d+)/mcp", line)
if not m:
    print("FAIL  kopt mcp --http did not say where it listens: %r" % line)
    srv.kill()
    sys.exit(1)
port = int(m.group(1))
URL = "http://127.0.0.1:%d/mcp" % port
check(True, "listening: %s" % line.strip())


async def sdk():
    async with streamablehttp_client(URL) as (r, w, get_sid), ClientSession(r, w) as s:
        init = await s.initialize()
        check(init.protocolVersion == "2025-11-25" and get_sid(),
              "initialize over HTTP: protocol %s, session %s" % (init.protocolVersion, get_sid()))
        tools = {t.name for t in (await s.list_tools()).tools}
        check({"eval", "optimize_step", "cute_search"} <= tools, "tools/list: %d tools" % len(tools))
        res = await s.call_tool("list_problems", {})
        check(not res.isError and "softmax" in [p["name"] for p in res.structuredContent["problems"]],
              "list_problems over HTTP")
        progress = []

        async def on_progress(p, total, msg):
            progress.append((p, total))

        res = await s.call_tool("tune", {"replay": SOFTMAX, "budget": 20, "strategy": "random"},
                                progress_callback=on_progress)
        check(not res.isError and res.structuredContent.get("mode") == "replay" and len(progress) >= 3,
              "tune over HTTP: %s; %d progress notifications on the event stream" % (res.content[0].text[:60], len(progress)))
        res = await s.call_tool("optimize_start", {"problem": os.path.join(root, "examples/softmax"),
                                                   "evaluator": "fake", "iterations": 1})
        tree = res.structuredContent["tree_id"]
        res = await s.call_tool("optimize_step", {"tree": tree})
        check(not res.isError and res.structuredContent["waiting"],
              "optimize_step over HTTP: %s" % res.content[0].text[:100])
        rl = [str(x.uri) for x in (await s.list_resources()).resources]
        check("kopt://optimize_tree/%d" % tree in rl, "resources/list over HTTP: %d" % len(rl))
        try:
            await s.call_tool("eval", {"problem": 7})
            check(False, "invalid params over HTTP: no error")
        except Exception as e:
            check("arguments.problem" in str(e), "invalid params over HTTP: %s" % e)


anyio.run(sdk)


# ---- plain HTTP --------------------------------------------------------------------------------
def http(method, body=None, headers=None, stream=False):
    h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    h.update(headers or {})
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    req = urllib.request.Request(URL, data=data, headers=h, method=method)
    try:
        r = urllib.request.urlopen(req, timeout=30)
        return r.status, dict(r.headers), (r if stream else r.read().decode())
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}
code, hdr, body = http("POST", INIT)
sid = hdr.get("Mcp-Session-Id")
check(code == 200 and sid and re.fullmatch(r"[0-9a-f]{32}", sid), "raw: initialize gives a session id")
S = {"Mcp-Session-Id": sid}
code, _, _ = http("POST", {"jsonrpc": "2.0", "method": "notifications/initialized"}, S)
check(code == 202, "raw: a notification is 202 Accepted")
code, _, body = http("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, {"Origin": "http://evil.example"})
check(code == 403, "raw: a foreign Origin is 403")
code, _, body = http("POST", {"jsonrpc": "2.0", "id": 2, "method": "ping"}, dict(S, Origin="http://localhost:3000"))
check(code == 200 and json.loads(body)["id"] == 2, "raw: a loopback Origin is served")
code, _, body = http("POST", {"jsonrpc": "2.0", "id": 3, "method": "ping"})
check(code == 400 and "Mcp-Session-Id" in body, "raw: no session id is 400")
code, _, _ = http("POST", {"jsonrpc": "2.0", "id": 4, "method": "ping"}, {"Mcp-Session-Id": "0" * 32})
check(code == 404, "raw: an unknown session is 404")
code, _, _ = http("POST", {"jsonrpc": "2.0", "id": 5, "method": "ping"}, dict(S, **{"MCP-Protocol-Version": "1999-01-01"}))
check(code == 400, "raw: an unsupported MCP-Protocol-Version is 400")
code, _, body = http("POST", b"{not json", S)
check(code == 400 and json.loads(body)["error"]["code"] == -32700, "raw: a parse error is 400 with -32700")
code, hdr, _ = http("GET", None, S)
check(code == 405 and "POST" in hdr.get("Allow", ""), "raw: GET is 405 (no server-initiated stream)")

# cancellation: the tools/call's event stream ends with no result
events, done = [], threading.Event()


def reader():
    code, hdr, r = http("POST", {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "tune", "arguments": {"replay": SOFTMAX, "budget": 200, "strategy": "random"},
        "_meta": {"progressToken": "p"}}}, S, stream=True)
    events.append(hdr.get("Content-Type"))
    for raw in r:
        line = raw.decode().strip()
        if line.startswith("data: "):
            events.append(json.loads(line[6:]))
    done.set()


threading.Thread(target=reader, daemon=True).start()
t0 = time.time()
while sum(isinstance(e, dict) for e in events) < 3 and time.time() - t0 < 30:
    time.sleep(0.05)
code, _, _ = http("POST", {"jsonrpc": "2.0", "method": "notifications/cancelled",
                           "params": {"requestId": 9, "reason": "test"}}, S)
done.wait(30)
msgs = [e for e in events if isinstance(e, dict)]
check(code == 202 and done.is_set() and events and events[0] == "text/event-stream" and len(msgs) >= 3 and
      all(e.get("method") == "notifications/progress" for e in msgs),
      "raw: a cancelled tools/call: %d progress events, then the stream ends with no result" % len(msgs))
code, _, _ = http("DELETE", None, S)
code2, _, _ = http("POST", {"jsonrpc": "2.0", "id": 6, "method": "ping"}, S)
check(code == 200 and code2 == 404, "raw: DELETE ends the session (then 404)")

# loopback only: another address of this host is not served
other = None
try:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(("192.0.2.1", 9))   # no packet is sent: picks the outgoing interface
    other = s.getsockname()[0]
    s.close()
except OSError:
    pass
if other and not other.startswith("127."):
    try:
        socket.create_connection((other, port), timeout=3).close()
        check(False, "raw: reachable on %s:%d" % (other, port))
    except OSError:
        check(True, "raw: not reachable on %s (loopback only)" % other)
else:
    print("skipped: no non-loopback address to check the bind against")

srv.terminate()
check(srv.wait(timeout=30) == 0, "SIGTERM: the server stops, exit 0")
if not failed:
    shutil.rmtree(tmp, ignore_errors=True)
print("ktest: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
