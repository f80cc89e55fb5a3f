#!/usr/bin/env python3
"""On a GPU: eval and profile through kopt mcp (the official Python SDK's client) give the
same verdict as the CLI and a median within 15% of kopt eval --json's (two measurements of
the same kernel), for the fast candidate of vector_add, softmax and sgemm. Skips (exit 77)
without the SDK or without a GPU (the CLI's verdict SKIPPED).
usage: test_mcp_gpu.py KOPT REPO_ROOT"""
import json, os, shutil, subprocess, sys, tempfile

kopt, root = sys.argv[1:3]
try:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
except ImportError as e:
    print("skipped: the Python MCP SDK is not installed: %s" % e)
    sys.exit(77)
tmp = tempfile.mkdtemp(prefix="kopt-mcp-gpu-")
db = os.path.join(tmp, "kopt.db")
cases = ["vector_add", "softmax", "sgemm"]
cli = {}
for c in cases:
    r = subprocess.run([kopt, "eval", "examples/%s" % c, "examples/%s/fast.cu" % c, "--json",
                        "--db", db], capture_output=True, text=True, cwd=root)
    cli[c] = json.loads(r.stdout)
    if cli[c]["verdict"] == "SKIPPED":
        print("skipped: no GPU (%s)" % cli[c]["message"][:160])
        sys.exit(77)
passed = failed = 0


def check(ok, what):
    global passed, failed
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    passed, failed = passed + bool(ok), failed + (not ok)


async def main():
    params = StdioServerParameters(command=kopt, args=["mcp", "--db", db], cwd=root)
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        for c in cases:
            res = await s.call_tool("eval", {"problem": "examples/%s" % c,
                                             "candidate_path": "examples/%s/fast.cu" % c})
            m, k = res.structuredContent, cli[c]
            mm, km = m["timing"]["median_ms"], k["timing"]["median_ms"]
            check(m["verdict"] == k["verdict"] == "OK" and abs(mm - km) <= 0.15 * km,
                  "%s: eval through MCP %s %.4f ms, kopt eval %s %.4f ms" % (c, m["verdict"], mm, k["verdict"], km))
            res = await s.call_tool("profile", {"problem": "examples/%s" % c,
                                                "candidate_path": "examples/%s/fast.cu" % c})
            p = res.structuredContent
            check(not res.isError and p["evaluation"]["verdict"] == "OK" and p["metrics"],
                  "%s: profile through MCP: OK, %d kernel launch(es) measured, %d finding(s)" %
                  (c, len(p["metrics"]), len(p["findings"])))


anyio.run(main)
shutil.rmtree(tmp, ignore_errors=True)
print("ktest: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
