#!/usr/bin/env python3
"""On a GPU: eval and profile through kopt mcp (the official Python SDK's client) give the
same verdict as the CLI, and times within the CLI's own run-to-run spread, for the fast
candidate of vector_add, softmax and sgemm. The spread is measured here: kopt eval runs 3
times; the MCP median must lie within [min, max] of those, widened by the larger of their
relative spread and 5%. The profile's evaluation is held to the same band, and its
verdict to kopt profile --json's. Prints "skipped: no GPU" and exits 77 without a GPU (the
CLI's verdict SKIPPED) or without the SDK.
usage: test_mcp_gpu.py KOPT REPO_ROOT"""
import json, os, shutil, subprocess, sys, tempfile

kopt, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
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
passed = failed = 0


def check(ok, what):
    global passed, failed
    print(("ok    " if ok else "FAIL  ") + what, flush=True)
    passed, failed = passed + bool(ok), failed + (not ok)


def cli_json(*args):
    r = subprocess.run([kopt, *args, "--json", "--db", db], capture_output=True, text=True,
                       cwd=root, timeout=300)
    try:
        return json.loads(r.stdout)
    except ValueError:
        print("kopt %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr[-500:]))
        return {}


def find(doc, key):
    """The first value of `key` anywhere in a JSON document (depth first)."""
    if isinstance(doc, dict):
        if key in doc:
            return doc[key]
        doc = list(doc.values())
    if isinstance(doc, list):
        for v in doc:
            got = find(v, key)
            if got is not None:
                return got
    return None


cli, band = {}, {}
for c in cases:
    runs = [cli_json("eval", "examples/%s" % c, "examples/%s/fast.cu" % c) for _ in range(3)]
    if runs[0].get("verdict") == "SKIPPED":
        print("skipped: no GPU (%s)" % runs[0].get("message", "")[:160])
        sys.exit(77)
    cli[c] = runs
    ms = [r.get("timing", {}).get("median_ms", 0) for r in runs]
    lo, hi = min(ms), max(ms)
    tol = max(0.05, (hi - lo) / lo if lo > 0 else 1)
    band[c] = (lo * (1 - tol), hi * (1 + tol))
    print("     %s: kopt eval x3: %s ms; accepted band %.4f..%.4f ms" %
          (c, ", ".join("%.4f" % x for x in ms), band[c][0], band[c][1]))
    check(all(r.get("verdict") == "OK" for r in runs), "%s: kopt eval x3 all OK" % c)


async def main():
    params = StdioServerParameters(command=kopt, args=["mcp", "--db", db], cwd=root)
    async with stdio_client(params) as (r, w), ClientSession(r, w) as s:
        await s.initialize()
        for c in cases:
            lo, hi = band[c]
            res = await s.call_tool("eval", {"problem": "examples/%s" % c,
                                             "candidate_path": "examples/%s/fast.cu" % c})
            m = res.structuredContent or {}
            mm = m.get("timing", {}).get("median_ms", 0)
            check(not res.isError and m.get("verdict") == cli[c][0]["verdict"] and lo <= mm <= hi,
                  "%s: eval through MCP %s %.4f ms; the CLI %s in %.4f..%.4f ms" %
                  (c, m.get("verdict"), mm, cli[c][0]["verdict"], lo, hi))
            res = await s.call_tool("profile", {"problem": "examples/%s" % c,
                                                "candidate_path": "examples/%s/fast.cu" % c})
            p = res.structuredContent or {}
            pe = p.get("evaluation") or {}
            pm = pe.get("timing", {}).get("median_ms", 0)
            cp = cli_json("profile", "examples/%s" % c, "examples/%s/fast.cu" % c)
            cv = find(cp, "verdict")
            check(not res.isError and pe.get("verdict") == cv == "OK" and p.get("metrics") and
                  lo <= pm <= hi,
                  "%s: profile through MCP %s %.4f ms, %d kernel launch(es), %d finding(s); "
                  "kopt profile %s" % (c, pe.get("verdict"), pm, len(p.get("metrics") or []),
                                       len(p.get("findings") or []), cv))


anyio.run(main)
shutil.rmtree(tmp, ignore_errors=True)
print("ktest: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
