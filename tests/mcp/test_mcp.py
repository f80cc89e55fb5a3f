#!/usr/bin/env python3
"""kopt mcp driven by the official Python MCP SDK's client (PyPI mcp), without a GPU:
initialize (protocol version), tools/list (each tool with an input schema), every tool that
needs no GPU (list_problems; eval, whose SKIPPED without a GPU is a valid verdict, or OK on
one; profile --static; tune replaying an H200 recording; list_runs; get_run; device),
resources (list, read kopt://run/ID, an unknown one), invalid params naming the field, and,
over the raw pipe, malformed requests (parse error, invalid request, method not found) and
cancellation: a slow tune replay cancelled midway, no result sent for it, and the server
answering the next request. usage: test_mcp.py KOPT MAKE_STORE REPO_ROOT"""
import json, os, select, shutil, subprocess, sys, tempfile, time

kopt, make_store, root = sys.argv[1:4]
try:
    import anyio
    from mcp import ClientSession, StdioServerParameters, types
    from mcp.client.stdio import stdio_client
    from mcp.shared.exceptions import McpError
except ImportError as e:
    print("skipped: the Python MCP SDK is not installed (python3 -m pip install mcp): %s" % e)
    sys.exit(77)
passed = failed = 0
SOFTMAX = os.path.join(root, "tests/data/tune/h200/softmax.json")


def check(ok, what):
    global passed, failed
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    passed, failed = passed + bool(ok), failed + (not ok)


tmp = tempfile.mkdtemp(prefix="kopt-mcp-test-")
db = os.path.join(tmp, "kopt.db")
env = dict(os.environ, KOPT_CACHE_DIR=os.path.join(tmp, "cache"))
subprocess.run([make_store, db, root], check=True, capture_output=True)


async def sdk():
    params = StdioServerParameters(command=kopt, args=["mcp", "--db", db, "--examples",
                                   os.path.join(root, "examples")], env=env, cwd=root)
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        init = await s.initialize()
        check(init.protocolVersion == types.LATEST_PROTOCOL_VERSION == "2025-11-25",
              "initialize: protocol %s (the SDK's latest: %s)" % (init.protocolVersion, types.LATEST_PROTOCOL_VERSION))
        tools = {t.name: t for t in (await s.list_tools()).tools}
        want = {"list_problems", "eval", "profile", "tune", "bench", "list_runs", "get_run", "device"}
        check(want <= set(tools) and all(t.inputSchema.get("type") == "object" for t in tools.values()),
              "tools/list: %s, each with an object input schema" % sorted(tools))
        res = await s.call_tool("list_problems", {})
        names = [p["name"] for p in res.structuredContent["problems"]]
        check(not res.isError and "softmax" in names and res.content[0].text.startswith("8 problem"),
              "list_problems: %s" % names)
        soft = [p for p in res.structuredContent["problems"] if p["name"] == "softmax"][0]
        check(any(t.endswith("tune.cu") for t in soft["templates"]) and soft["candidates"],
              "list_problems: softmax's candidates and template told apart")
        src = open(os.path.join(root, "examples/vector_add/fast.cu")).read()
        res = await s.call_tool("eval", {"problem": "examples/vector_add", "candidate_source": src})
        v = (res.structuredContent or {}).get("verdict")
        check(not res.isError and v in ("SKIPPED", "OK") and res.content[0].text.startswith(v),
              "eval (source text): verdict %s: %s" % (v, res.content[0].text[:120]))
        run_id = (res.structuredContent or {}).get("run_id")
        res = await s.call_tool("eval", {"problem": "examples/vector_add",
                                         "candidate_path": "examples/vector_add/fast.cu", "trials": 1})
        check(not res.isError and res.structuredContent["verdict"] == v, "eval (path): verdict %s" % v)
        lines = []

        async def on_progress(p, total, msg):
            lines.append(msg or "")

        res = await s.call_tool("bench", {"problems": "examples/vector_add", "kind": "reference",
                                          "trials": 1, "no_compile": True},
                                progress_callback=on_progress)
        b = res.structuredContent or {}
        check(not res.isError and [r["verdict"] for r in b.get("rows", [])] == [v] and
              b.get("suite") == b.get("run_id") and res.content[0].text.startswith("suite "),
              "bench (kind reference): kopt bench --json's document: %s" % res.content[0].text[:120])
        check(any(l.startswith("vector_add ") and v in l for l in lines),
              "bench: its row as a progress message (%d messages: %s)" % (len(lines), lines[:3]))
        res = await s.call_tool("bench", {"problems": "examples/vector_add"})
        check(res.isError and "arguments.candidates: required" in res.content[0].text,
              "bench without candidates: a tool error naming the field")
        res = await s.call_tool("eval", {"problem": "examples/vector_add",
                                         "candidate_source": "__global__ void broken( {"})
        check(not res.isError and res.structuredContent["verdict"] == "COMPILE_ERROR",
              "eval: a broken candidate is COMPILE_ERROR, as on the command line")
        res = await s.call_tool("profile", {"problem": "examples/softmax", "static": True})
        check(not res.isError and "findings" in res.structuredContent, "profile (static): %s" % res.content[0].text[:100])
        res = await s.call_tool("tune", {"replay": SOFTMAX, "budget": 40, "strategy": "random"})
        sc = res.structuredContent or {}
        check(not res.isError and sc.get("mode") == "replay" and sc.get("best", {}).get("outcome", {}).get("time_ms", 0) > 0,
              "tune (replay): %s" % res.content[0].text)
        tune_run = sc.get("run_id")
        res = await s.call_tool("list_runs", {"limit": 50})
        kinds = [r["kind"] for r in res.structuredContent["runs"]]
        check(not res.isError and "tune" in kinds and "eval" in kinds, "list_runs: %s" % kinds)
        res = await s.call_tool("get_run", {"id": tune_run})
        tr = res.structuredContent["tune_runs"]
        check(not res.isError and len(tr) == 1 and len(tr[0]["evals"]) == 40,
              "get_run: the tune run with its 40 recorded outcomes")
        res = await s.call_tool("get_run", {"id": 999999})
        check(res.isError and "999999" in res.content[0].text, "get_run of a missing run: a tool error naming it")
        res = await s.call_tool("device", {})
        check(not res.isError and "available" in res.structuredContent and
              len(res.structuredContent.get("stored_devices", [])) >= 1,
              "device: %s; stored devices with ceilings" % res.content[0].text[:80])
        try:
            await s.call_tool("eval", {"problem": 7})
            check(False, "invalid params: no error")
        except McpError as e:
            check(e.error.code == -32602 and "arguments.problem" in e.error.message,
                  "invalid params: -32602 %s" % e.error.message)
        try:
            await s.call_tool("no_such_tool", {})
            check(False, "unknown tool: no error")
        except McpError as e:
            check(e.error.code == -32602 and "no_such_tool" in e.error.message, "unknown tool: -32602")
        rl = (await s.list_resources()).resources
        check(any(str(x.uri) == "kopt://run/%d" % tune_run for x in rl), "resources/list: %d runs" % len(rl))
        rd = await s.read_resource("kopt://run/%d" % run_id)
        doc = json.loads(rd.contents[0].text)
        check(doc["run"]["id"] == run_id and len(doc["evaluations"]) == 1, "resources/read kopt://run/%d" % run_id)
        rd = await s.read_resource("kopt://profile/1")
        check(json.loads(rd.contents[0].text)["id"] == 1, "resources/read kopt://profile/1")
        try:
            await s.read_resource("kopt://evaluation/424242")
            check(False, "unknown resource: no error")
        except McpError as e:
            check(e.error.code == -32002, "resources/read of a missing evaluation: -32002")
        await s.send_ping()
        check(True, "ping")


anyio.run(sdk)


# ---- the raw pipe: malformed requests, cancellation -------------------------------------
def raw():
    p = subprocess.Popen([kopt, "mcp", "--db", db], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, cwd=root, text=True, bufsize=1,
                         env=dict(env, KOPT_TUNE_REPLAY_DELAY_MS="50"))

    def send(m):
        p.stdin.write((m if isinstance(m, str) else json.dumps(m)) + "\n")
        p.stdin.flush()

    def recv(timeout=30):
        r, _, _ = select.select([p.stdout], [], [], timeout)
        return json.loads(p.stdout.readline()) if r else None

    send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    m = recv()
    check(m and m["result"]["protocolVersion"] == "2025-06-18", "raw: an older supported version is accepted")
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for line, code, what in (("{not json", -32700, "parse error"), ("[1, 2]", -32600, "a batch"),
                             ('{"jsonrpc": "1.0", "id": 5, "method": "ping"}', -32600, "jsonrpc 1.0"),
                             ('{"jsonrpc": "2.0", "id": 6, "method": "frobnicate"}', -32601, "unknown method"),
                             ('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"arguments": {}}}', -32602, "no tool name")):
        send(line)
        m = recv()
        check(m and m.get("error", {}).get("code") == code, "raw: %s gives %d: %s" % (what, code, m and m["error"]["message"]))
    send({"jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": {
        "name": "tune", "arguments": {"replay": SOFTMAX, "budget": 100, "strategy": "random"},
        "_meta": {"progressToken": "tok"}}})
    progress = []
    t0 = time.time()
    while len(progress) < 3 and time.time() - t0 < 30:
        m = recv()
        if m and m.get("method") == "notifications/progress":
            progress.append(m["params"])
    check(len(progress) >= 3 and progress[-1]["progressToken"] == "tok" and progress[-1]["total"] == 100,
          "raw: progress notifications during the tune (%s)" % (progress[-1]["message"] if progress else "none"))
    send({"jsonrpc": "2.0", "id": 11, "method": "ping"})
    got_ping = False
    t0 = time.time()
    while not got_ping and time.time() - t0 < 10:
        m = recv()
        got_ping = m and m.get("id") == 11
    check(got_ping, "raw: ping answered while the tune runs")
    send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 10, "reason": "test"}})
    send({"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "list_runs", "arguments": {"kind": "tune", "limit": 1}}})
    answer, tune_result = None, False
    t0 = time.time()
    while answer is None and time.time() - t0 < 30:
        m = recv()
        if m and m.get("id") == 10:
            tune_result = True
        if m and m.get("id") == 12:
            answer = m
    check(answer is not None and not tune_result, "raw: after cancelling the tune, no result for it and the next call answered")
    run = answer and answer["result"]["structuredContent"]["runs"][0]
    check(run and run["status"] == "interrupted", "raw: the cancelled tune's run is recorded as interrupted")
    p.stdin.close()
    check(p.wait(timeout=30) == 0, "raw: the server exits 0 at the end of its input")


raw()
shutil.rmtree(tmp, ignore_errors=True)
print("ktest: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
