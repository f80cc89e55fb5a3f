#!/usr/bin/env python3
"""kopt report in a real browser (Debian's Chromium, headless), without a GPU: a store of
recorded H200 work (make_store: an eval run and a profile run imported from
tests/data/cupti/h200, the H200's measured ceilings) plus a tuning replay
(tests/data/tune/h200/softmax.json) and a recorded optimize run (kopt optimize with the
scripted model and the scripted evaluator of tests/optimize). For each run's page: no network reference; loaded in
Chromium with no console error; the dumped DOM has as many roofline points, findings rows and
tuning dots as the store says it should (counted here from the store with sqlite3, not from
the page); the optimize page's search tree has a node and a panel per stored node, an edge
per non-root node, the best path as kopt optimize --json gives it, node areas growing with
visits, and a #node-N address opens that node's panel with its diff; a screenshot is written
and is not blank.
usage: test_report.py KOPT MAKE_STORE REPO_ROOT"""
import json, os, re, shutil, sqlite3, struct, subprocess, sys, tempfile, zlib

kopt, make_store, root = sys.argv[1:4]
chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if not chromium:
    print("skipped: chromium is not installed (apt-get install chromium)")
    sys.exit(77)
passed = failed = 0


def check(ok, what):
    global passed, failed
    print(("ok    " if ok else "FAIL  ") + what)
    passed, failed = passed + bool(ok), failed + (not ok)


def browser(args, url):
    return subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                           "--hide-scrollbars", "--enable-logging=stderr", "--v=0",
                           "--virtual-time-budget=3000"] + args + [url],
                          capture_output=True, text=True, timeout=120)


def png_not_blank(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return False
    at, idat = 8, b""
    while at < len(data):
        n, kind = struct.unpack(">I4s", data[at:at + 8])
        if kind == b"IDAT":
            idat += data[at + 8:at + 8 + n]
        at += 12 + n
    pixels = zlib.decompress(idat)
    return len(set(pixels[::7])) > 16   # many distinct byte values: drawn, not one color


tmp = tempfile.mkdtemp(prefix="kopt-report-test-")
try:
    db = os.path.join(tmp, "kopt.db")
    env = dict(os.environ, KOPT_CACHE_DIR=os.path.join(tmp, "cache"))
    ids = dict(line.split() for line in subprocess.run(
        [make_store, db, root], check=True, capture_output=True, text=True).stdout.split("\n")
        if line.strip())
    subprocess.run([kopt, "tune", "--replay", os.path.join(root, "tests/data/tune/h200/softmax.json"),
                    "--db", db, "--budget", "60", "--no-progress"], check=True,
                   capture_output=True, env=env, cwd=root)
    con = sqlite3.connect(db)
    ids["tune"] = str(con.execute("SELECT max(id) FROM runs WHERE kind='tune'").fetchone()[0])
    opt = subprocess.run([kopt, "optimize", os.path.join(root, "examples/softmax"), "--db", db,
                          "--evaluator", "fake", "--iterations", "6", "--json", "--llm",
                          "command:%s %s %s" % (sys.executable, os.path.join(root, "tests/optimize/scripted_llm.py"),
                                                os.path.join(root, "tests/optimize/softmax"))],
                         check=True, capture_output=True, text=True, cwd=tmp,
                         env=dict(env, KOPT_PROMPTS=os.path.join(root, "prompts")))
    opt_doc = json.loads(opt.stdout)
    ids["optimize"] = str(opt_doc["tree_id"])
    con = sqlite3.connect(db)

    def expected_points(run):
        n = {"eval": 0, "kernel": 0}
        for (rj,) in con.execute("SELECT result_json FROM evaluations WHERE run_id=?", (run,)):
            r = (json.loads(rj) or {}).get("roofline") if rj else None
            if r and (r.get("flops") or 0) > 0 and (r.get("bytes") or 0) > 0 and \
                    (r.get("achieved_gflops") or 0) > 0:
                n["eval"] += 1
        for (mj,) in con.execute("SELECT metrics_json FROM profiles WHERE run_id=?", (run,)):
            for k in json.loads(mj or "[]"):
                m = k["metrics"]
                g = lambda x: m.get("smsp__sass_thread_inst_executed_op_%s_pred_on.sum" % x, 0)
                fl = g("fadd") + g("fmul") + 2 * g("ffma") + g("dadd") + g("dmul") + 2 * g("dfma")
                by = m.get("dram__bytes_read.sum", 0) + m.get("dram__bytes_write.sum", 0)
                if fl > 0 and by > 0 and m.get("gpu__time_duration.sum", 0) > 0:
                    n["kernel"] += 1
        return n

    for kind in ("eval", "profile", "tune", "optimize"):
        run = int(ids[kind])
        page = os.path.join(tmp, "report-%s.html" % kind)
        r = subprocess.run([kopt, "report", str(run), "--db", db, "-o", page],
                           capture_output=True, text=True)
        check(r.returncode == 0 and os.path.getsize(page) > 1000,
              "%s run %d: kopt report wrote %s" % (kind, run, os.path.basename(page)))
        html = open(page).read()
        refs = [u for u in re.findall(r"(?:src|href)=\"([^\"#][^\"]*)\"", html)]
        check(not refs and "<link" not in html and not re.search(r"https?://(?!www\.w3\.org/2000/svg)", html),
              "%s: self-contained (no external script, style, link or URL)" % kind)
        dom = browser(["--dump-dom"], "file://" + page)
        errors = [l for l in dom.stderr.splitlines()
                  if "Uncaught" in l or ("CONSOLE" in l and "ERROR" in l.upper())]
        check(dom.returncode == 0 and "</html>" in dom.stdout and not errors,
              "%s: loads in Chromium with no console error%s" % (kind, (": " + errors[0]) if errors else ""))
        d = dom.stdout
        if kind in ("eval", "profile"):
            want = expected_points(run)
            got = {k: len(re.findall(r'<circle class="pt %s"' % k, d)) for k in want}
            check(got == want and sum(got.values()) > 0,
                  "%s: roofline points in the DOM %s, the store says %s" % (kind, got, want))
            roofs = len(re.findall(r'<line class="roof compute"', d))
            check(roofs >= 5 and '<line class="roof mem"' in d,
                  "%s: the measured DRAM roof and %d compute ceilings drawn" % (kind, roofs))
        if kind == "profile":
            nf = con.execute("SELECT count(*) FROM findings f JOIN profiles p ON p.id=f.profile_id"
                             " WHERE p.run_id=?", (run,)).fetchone()[0]
            rows = len(re.findall(r'<tr class="finding"', d))
            realized = len(re.findall(r'<td class="n">-?\d+% <span class="note">\(profile', d))
            nres = con.execute("SELECT count(*) FROM resolutions r JOIN profiles p ON "
                               "p.id=r.later_profile WHERE p.run_id=? AND r.realized_gain IS NOT NULL",
                               (run,)).fetchone()[0]
            check(rows == nf > 0, "profile: %d findings ranked, the store has %d" % (rows, nf))
            check(realized == nres > 0, "profile: %d realized gains shown, %d resolutions stored" % (realized, nres))
        if kind == "tune":
            ok = con.execute("SELECT count(*) FROM tune_evals e JOIN tune_runs t ON t.id=e.run_id "
                             "WHERE t.run_id=? AND e.state='ok'", (run,)).fetchone()[0]
            dots = len(re.findall(r'<circle class="ev"', d))
            check(dots == ok > 0, "tune: %d evaluations on the best-so-far chart, the store has %d" % (dots, ok))
            check('<path class="best"' in d and "Parameter space explored" in d,
                  "tune: best-so-far line and the parameter space")
        if kind == "optimize":
            nn = con.execute("SELECT count(*) FROM opt_nodes WHERE tree_id=?", (run,)).fetchone()[0]
            circles = re.findall(r'<circle class="tn ([a-z]+)( path)?" data-node="(\d+)" cx="[^"]*" cy="[^"]*" r="([^"]*)"', d)
            edges = len(re.findall(r'<line class="te', d))
            path_edges = len(re.findall(r'<line class="te path', d))
            panels = len(re.findall(r'<div class="nd" id="nd-\d+"', d))
            want_path = len(opt_doc["path"])
            check(len(circles) == nn > 5 and edges == nn - 1 and panels == nn,
                  "optimize: %d nodes, %d edges, %d panels drawn; the store has %d nodes" % (len(circles), edges, panels, nn))
            check(sum(1 for c in circles if c[1]) == want_path > 1 and path_edges == want_path - 1,
                  "optimize: the path to the best (%d nodes, %d edges) highlighted, as kopt optimize --json says (%d)"
                  % (sum(1 for c in circles if c[1]), path_edges, want_path))
            verdict = {int(c[2]): c[0] for c in circles}
            stored = {n["id"]: n.get("verdict") for n in opt_doc["nodes"]}
            check(all((verdict[i] == "ok") == (stored[i] == "OK") for i in stored) and "fail" in verdict.values(),
                  "optimize: nodes colored by verdict (%s)" % sorted(set(verdict.values())))
            radius = {int(c[2]): float(c[3]) for c in circles}
            visits = {n["id"]: n["visits"] for n in opt_doc["nodes"]}
            check(all(radius[a] >= radius[b] for a in visits for b in visits if visits[a] > visits[b])
                  and radius[0] > min(radius.values()), "optimize: node size grows with visits")
            bid = opt_doc["best"]["id"]
            check(re.search(r'<div class="nd" id="nd-%d" hidden(="")?>' % bid, d) is not None,
                  "optimize: the node panels start hidden")
            sel = browser(["--dump-dom"], "file://%s#node-%d" % (page, bid)).stdout
            m = re.search(r'<div class="nd" id="nd-%d"( hidden(="")?)?>(.*?)</div>' % bid, sel, re.S)
            check(m and not m.group(1) and '<span class="add">' in m.group(3) and "plan" in m.group(3),
                  "optimize: selecting n%d shows its plan and diff against its parent (script ran)" % bid)
        shot = os.path.join(tmp, "shot-%s.png" % kind)
        browser(["--screenshot=" + shot, "--window-size=1200,1600"], "file://" + page)
        check(os.path.exists(shot) and os.path.getsize(shot) > 10000 and png_not_blank(shot),
              "%s: screenshot written and not blank (%d bytes)" % (kind, os.path.getsize(shot) if os.path.exists(shot) else 0))
    r = subprocess.run([kopt, "report", "--last", "--kind", "profile", "--db", db, "--json"],
                       capture_output=True, text=True)
    check(r.returncode == 0 and json.loads(r.stdout)["run"]["id"] == int(ids["profile"]),
          "kopt report --last --kind profile --json gives the profile run's document")
    r = subprocess.run([kopt, "report", "999", "--db", db], capture_output=True, text=True)
    check(r.returncode == 9 and "999" in r.stderr, "kopt report of a missing run: exit 9 naming it")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
print("ktest: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
