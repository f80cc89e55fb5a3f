"""Shared by the kopt optimize test scripts (test_optimize.py, test_optimize_gpus.py): checks
and their tally, one `kopt optimize` run with its --json document, store queries, and the
scripts' ending (the scratch folder kept when something failed, the tally, the exit code)."""
import json
import shutil
import sqlite3
import subprocess
import sys

FAILED = []
PASSED = [0]


def check(cond, what):
    if cond:
        PASSED[0] += 1
        print("ok   " + what)
    else:
        FAILED.append(what)
        print("FAIL " + what)


def optimize(kopt, db, args, env, cwd):
    """Run `kopt optimize --db DB ARGS...`: (the process, its --json document or {})."""
    p = subprocess.run([kopt, "optimize", "--db", db, *args], capture_output=True, text=True,
                       env=env, cwd=cwd, timeout=300)
    doc = {}
    if "--json" in args:
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            print(p.stdout[-2000:], p.stderr[-2000:])
    return p, doc


def rows(db, query, *args):
    con = sqlite3.connect(db)
    try:
        return con.execute(query, args).fetchall()
    finally:
        con.close()


def run(body, tmp):
    """Run the script's checks (body), then end it: `tmp` removed unless a check failed."""
    try:
        body()
    finally:
        if not FAILED:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("kept " + tmp)
    print("%d passed, %d failed" % (PASSED[0], len(FAILED)))
    sys.exit(1 if FAILED else 0)
