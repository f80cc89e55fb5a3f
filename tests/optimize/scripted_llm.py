#!/usr/bin/env python3
"""A scripted LLM for kopt optimize's tests (the `command:` backend, or manual mode).

It answers from a fixed list of kernels in a folder (tests/optimize/<example>/):
N.cu is stage N of the optimization; a kernel that fails names its repair with a line
`kopt-fix: FILE`; template.cu is the templatizer's answer. Every kernel carries
`kopt-step: NAME` (which file it is) and, for the fake evaluator, `kopt-test: ...`.
What it answers depends only on the prompt (the marker of the kernel in it), so the same
tree asks the same questions and gets the same answers: a killed search resumes to the
same tree.

  command:  python3 scripted_llm.py DIR            (request JSON on stdin, reply on stdout)
  manual:   python3 scripted_llm.py DIR --answer MANUAL_DIR   (writes every missing reply)
Environment: KOPT_SCRIPT_SLEEP=seconds to wait before answering (kill tests).
KOPT_SCRIPT_SEARCH="Q1;Q2;...": when the prompt describes the code-search tool, the coder
(and the roles in KOPT_SCRIPT_SEARCH_ROLES, comma-separated) first asks for these searches,
one a turn (```cute-search blocks), then answers with the code once every query was
answered or kopt says no searches are left; KOPT_SCRIPT_SEARCH_GREEDY=1 keeps asking even
then (the bound test). "@ROOT@" in a kernel of the list is the repository's folder.
KOPT_SCRIPT_LINEAGE=1: every kernel the coder or debugger writes ends with a comment naming
(a hash of) the kernel it came from, so children of different parents differ (the tests of
a wide search, where twins would otherwise leave GPUs idle). KOPT_SCRIPT_FRESH=1: every
kernel the coder or debugger writes also ends with a mark of its own, so that every
expansion has a kernel to evaluate (bench/optimize_gpus.sh: expansions per minute on
several GPUs); not deterministic, so not for the resume tests; KOPT_SCRIPT_FRESH=prompt marks
it with a hash of the request instead: a kernel of its own wherever the prompt differs, and
the same again for the same tree (the --overlap resume test). KOPT_SCRIPT_LOG=PATH: each
request appends "ask ROLE PID" to PATH when it comes and "answered ROLE PID" before its
reply (one write each, O_APPEND: the stand-in GPUs' log may be the same file, which shows
the tests of --overlap whether the model was asked while candidates were evaluated).
"""
import hashlib
import json
import os
import re
import sys
import time
import uuid


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(path):
    with open(path) as f:
        return f.read()


def load(d, name):
    """A kernel of the list. A stub with `kopt-from: PATH` (relative to the repository) is
    that file with the stub's marker lines put after its front matter."""
    p = os.path.join(d, name)
    if not os.path.exists(p):
        return None
    text = read(p).replace("@ROOT@", ROOT)
    src = marker(text, "from")
    if not src:
        return text
    body = read(os.path.join(ROOT, src))
    marks = "".join(l + "\n" for l in text.splitlines() if "kopt-from:" not in l)
    at = body.index("*/") + 3 if body.startswith("/*@kopt") else 0
    return body[:at] + marks + body[at:]


def marker(text, key):
    m = re.search(r"kopt-%s: (\S+)" % key, text)
    return m.group(1) if m else None


def line_value(src, key, default=""):
    m = re.search(r"kopt-%s: (.*)" % key, src)
    return m.group(1).strip() if m else default


def vary(src, j):
    """Proposal j > 1: the same kernel, a little slower (fake times), marked as a variant."""
    def slower(m):
        return "time=%.4f" % (float(m.group(1)) * (1.0 + 0.1 * (j - 1)))
    return re.sub(r"time=([0-9.]+)", slower, src, count=1) + "\n// variant %d\n" % j


def fenced(src, prose=True):
    head = "Here is the kernel.\n\n" if prose else ""
    return head + "```cuda\n" + src + "```\n" + ("\nIt follows the plan.\n" if prose else "")


def lineage(src, parent, text=""):
    """src with the mark of the kernel it came from (KOPT_SCRIPT_LINEAGE=1) and one of its
    own (KOPT_SCRIPT_FRESH=1: random; =prompt: a hash of the whole request), else src."""
    fresh = os.environ.get("KOPT_SCRIPT_FRESH")
    if fresh == "1":
        src = src.rstrip("\n") + "\n// fresh: %s\n" % uuid.uuid4().hex[:12]
    elif fresh == "prompt":
        src = src.rstrip("\n") + "\n// fresh: %s\n" % hashlib.sha1(text.encode()).hexdigest()[:12]
    if os.environ.get("KOPT_SCRIPT_LINEAGE") != "1":
        return src
    return src.rstrip("\n") + "\n// lineage: %s\n" % hashlib.sha1(parent.encode()).hexdigest()[:12]


def search_turn(role, text):
    """A cute-search request when the script is set to search and the tool is described."""
    queries = [q for q in os.environ.get("KOPT_SCRIPT_SEARCH", "").split(";") if q]
    roles = os.environ.get("KOPT_SCRIPT_SEARCH_ROLES", "coder").split(",")
    if not queries or role not in roles or "```cute-search" not in text:
        return None
    answered = text.count("## Code search results")
    greedy = os.environ.get("KOPT_SCRIPT_SEARCH_GREEDY") == "1"
    if not greedy and ("No searches left" in text or answered >= len(queries)):
        return None
    q = queries[answered % len(queries)]
    return "I need to check the CuTe API first.\n\n```cute-search\n%s\n```\n" % q


def answer(d, role, text):
    ask = search_turn(role, text)
    if ask:
        return ask
    cur = marker(text, "step") or "0"
    k = int(re.match(r"\d+", cur).group(0)) if re.match(r"\d+", cur) else 0
    prop = re.search(r"proposal (\d+) of", text)
    j = int(prop.group(1)) if prop else 1
    nxt = load(d, "%d.cu" % (k + 1))
    if role == "planner":
        if nxt is None:
            return "PLAN: polish the kernel further (no better idea)\nKIND: other\nTOOL: none\nGAIN: 1.05\n"
        return ("Looking at the advice, the best next step is clear.\n\n"
                "**PLAN:** stage %d: %s\n**KIND:** %s\n**TOOL:** %s\n**GAIN:** %s\n"
                % (k + 1, line_value(nxt, "plan", "next stage"), line_value(nxt, "kind", "other"),
                   line_value(nxt, "tool", "none"), line_value(nxt, "gain", "1.5")))
    if role == "coder":
        m = re.search(r"## The current kernel\n```cuda\n(.*?)\n```\n\n## The plan", text, re.S)
        parent = m.group(1) if m else ""
        if nxt is None:
            cur_src = load(d, "template.cu" if cur.endswith("t") else "%s.cu" % cur) or ""
            return fenced(lineage(vary(cur_src, j + 1), parent, text))
        out = lineage(nxt if j == 1 else vary(nxt, j), parent, text)
        if k == 1 and j == 1 and m:
            # stage 2 as a grounded edit: the whole current kernel replaced
            return ("<<<<<<< SEARCH\n" + m.group(1) + "\n=======\n" + out.rstrip("\n") +
                    "\n>>>>>>> REPLACE\n")
        return fenced(out)
    if role == "debugger":
        m = re.search(r"## The failed candidate\n```cuda\n(.*?)\n```", text, re.S)
        failed = m.group(1) + "\n" if m else ""
        fix = marker(failed, "fix")
        src = load(d, fix) if fix else None
        return fenced(lineage(src, failed, text) if src is not None else failed, prose=False)
    if role == "templatizer":
        t = load(d, "template.cu")
        return fenced(t) if t else "I cannot make a template of this kernel."
    return "unknown role"


def log_line(what, role):
    path = os.environ.get("KOPT_SCRIPT_LOG")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.write(fd, ("%s %s %d\n" % (what, role or "-", os.getpid())).encode())
        os.close(fd)


def main():
    d = sys.argv[1]
    if len(sys.argv) > 3 and sys.argv[2] == "--answer":
        md, n = sys.argv[3], 0
        for f in sorted(os.listdir(md)):
            if not f.endswith(".prompt.md"):
                continue
            key = f[:-len(".prompt.md")]
            reply = os.path.join(md, key + ".reply.md")
            if os.path.exists(reply):
                continue
            role = key.rsplit("-", 1)[1].split(".")[0]   # e1-p1-coder.turn2 -> coder
            text = read(os.path.join(md, f))
            with open(reply, "w") as out:
                out.write(answer(d, role, text))
            n += 1
        print(n)
        return
    req = json.load(sys.stdin)
    log_line("ask", req.get("role", ""))
    delay = float(os.environ.get("KOPT_SCRIPT_SLEEP", "0") or 0)
    if delay:
        time.sleep(delay)
    text = "\n".join(m["content"] for m in req.get("messages", []))
    out = answer(d, req.get("role", ""), text)
    log_line("answered", req.get("role", ""))
    print(json.dumps({"text": out, "finish_reason": "stop", "model": "scripted",
                      "usage": {"prompt_tokens": len(text) // 4, "completion_tokens": len(out) // 4}}))


if __name__ == "__main__":
    main()
