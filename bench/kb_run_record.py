#!/usr/bin/env python3
"""Record a manual-mode kopt optimize run on KernelBench problems without KernelBench's files.

The run (issue 28, point 4) evaluated the problems imported from a KernelBench snapshot, so
the store and the prompt files hold each problem's model.py, which is not ours to commit.
This writes a copy in which every trace of those files is replaced by kopt's restatement of
the same problem (same computation, sizes and input distributions;
tests/data/kb_run/problems/NAME/model.py): the root's source and its hash in the store's
rows, the prompts (raw and JSON-escaped), the problem paths; then checks that no line of an
original is left. The search itself (plans, candidates, outcomes, replies) is unchanged, so
`kopt optimize --replay T PROBLEM --llm replay:T@order` rebuilds each tree from the copy
(tests/cli/test_kb_replay.sh).

usage: kb_run_record.py RUN_DIR ORIGINALS_DIR RESTATED_DIR OUT_DIR [ROUNDS_DIR]
  RUN_DIR        the run: kb.db and one prompt folder per problem (NAME/*.md)
  ORIGINALS_DIR  the imported KernelBench problems (NAME/model.py) the run used
  RESTATED_DIR   the restated problems (NAME/model.py), as the copy should name them
  OUT_DIR        where the copy goes: kb.db and NAME/*.md, and kb.db.gz: the copy cut to
                 what a replay reads (trees, nodes, replies, runs; the prompts' text is in
                 NAME/*.md), gzipped: tests/data/kb_run's fixture
  ROUNDS_DIR     the `kopt optimize --json` output of each round, rR-NAME.json: the last
                 round's trees, laundered the same way, go to OUT_DIR/trees.json (what the
                 replay must rebuild: each node's id, parent, kind, state, verdict, source
                 hash and time); every round's output, laundered, to OUT_DIR/rounds/
"""
import gzip
import hashlib
import json
import os
import shutil
import sqlite3
import sys


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def write_fixture(db, path):
    """The store cut to what `kopt optimize --replay` reads, gzipped."""
    tmp = path + ".tmp.db"
    shutil.copyfile(db, tmp)
    con = sqlite3.connect(tmp)
    for table in ("evaluations", "candidates", "profiles", "findings", "resolutions",
                  "torch_baselines", "tune_runs", "tune_evals"):
        con.execute("DELETE FROM %s" % table)
    con.execute("UPDATE llm_exchanges SET request_json='{}'")   # replayed in order
    con.commit()
    con.execute("VACUUM")
    con.close()
    with open(tmp, "rb") as f, gzip.GzipFile(path, "wb", 9, mtime=0) as g:
        shutil.copyfileobj(f, g)
    os.remove(tmp)


def main():
    run, orig, restated, out = sys.argv[1:5]
    names = sorted(d for d in os.listdir(orig) if os.path.isfile(os.path.join(orig, d, "model.py")))
    pairs = []   # (old, new) strings, longest first
    for n in names:
        old = open(os.path.join(orig, n, "model.py")).read()
        new = open(os.path.join(restated, n, "model.py")).read()
        pairs += [(old, new), (json.dumps(old)[1:-1], json.dumps(new)[1:-1]),
                  (json.dumps(old, ensure_ascii=False)[1:-1],
                   json.dumps(new, ensure_ascii=False)[1:-1]), (sha(old), sha(new)),
                  (os.path.abspath(os.path.join(orig, n)), os.path.join(restated, n))]
    pairs.sort(key=lambda p: -len(p[0]))

    def launder(text):
        for old, new in pairs:
            text = text.replace(old, new)
        return text

    os.makedirs(out, exist_ok=True)
    db = os.path.join(out, "kb.db")
    src = sqlite3.connect(os.path.join(run, "kb.db"))
    if os.path.exists(db):
        os.remove(db)
    src.execute("VACUUM INTO ?", (db,))
    src.close()
    con = sqlite3.connect(db)
    changed = 0
    for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND "
                                "name NOT LIKE 'sqlite_%'").fetchall():
        cols = [r[1] for r in con.execute("PRAGMA table_info(%s)" % table)
                if r[2].upper() in ("TEXT", "")]
        for (rowid, *vals) in con.execute("SELECT rowid, %s FROM %s" % (", ".join(cols), table)
                                          ).fetchall() if cols else []:
            for c, v in zip(cols, vals):
                if isinstance(v, str):
                    w = launder(v)
                    if w != v:
                        con.execute("UPDATE %s SET %s=? WHERE rowid=?" % (table, c), (w, rowid))
                        changed += 1
    con.commit()
    con.execute("VACUUM")
    con.close()
    for n in names:
        if not os.path.isdir(os.path.join(run, n)):
            continue
        os.makedirs(os.path.join(out, n), exist_ok=True)
        for f in sorted(os.listdir(os.path.join(run, n))):
            if f.endswith(".md"):
                text = open(os.path.join(run, n, f)).read()
                open(os.path.join(out, n, f), "w").write(launder(text))
    write_fixture(db, os.path.join(out, "kb.db.gz"))
    if len(sys.argv) > 5:
        rounds = sys.argv[5]
        trees = []
        for n in names:
            last = sorted((int(f[1:f.index("-")]), f) for f in os.listdir(rounds)
                          if f.endswith("-%s.json" % n) and f.startswith("r"))
            if not last:
                continue
            doc = json.loads(launder(open(os.path.join(rounds, last[-1][1])).read()))
            nodes = [{k: nd.get(k) for k in ("id", "parent", "kind", "state", "verdict", "hash",
                                             "time_ms", "expansion")} for nd in doc["nodes"]]
            trees.append({"tree": doc["tree_id"], "problem": n, "round": last[-1][0],
                          "expansions": max(nd["expansion"] or 0 for nd in nodes),
                          "best": (doc.get("best") or {}).get("id"), "nodes": nodes})
        with open(os.path.join(out, "trees.json"), "w") as f:
            json.dump(trees, f, indent=1)
        os.makedirs(os.path.join(out, "rounds"), exist_ok=True)
        for f in sorted(os.listdir(rounds)):
            if f.startswith("r") and f.endswith(".json"):
                with open(os.path.join(out, "rounds", f), "w") as g:
                    g.write(launder(open(os.path.join(rounds, f)).read()))
    # no line of an original (a docstring, a comment) may be left anywhere
    marks = set()
    for n in names:
        ours = open(os.path.join(restated, n, "model.py")).read()
        for line in open(os.path.join(orig, n, "model.py")).read().splitlines():
            line = line.strip()
            if len(line) > 30 and line not in ours and not line.startswith(
                    ("return", "def ", "class ", "import", "super(", "self.")):
                marks.add(line)
    dump = "\n".join(sqlite3.connect(db).iterdump())
    for root, _, files in os.walk(out):
        for f in files:
            if f.endswith(".md"):
                dump += open(os.path.join(root, f)).read()
    left = [m for m in marks if m in dump or json.dumps(m)[1:-1] in dump or
            json.dumps(m, ensure_ascii=False)[1:-1] in dump]
    if left:
        sys.exit("kb_run_record: lines of the originals are left: %s" % left[:3])
    print("kb_run_record: %d values rewritten; %d problems; %d distinctive lines of the "
          "originals checked absent" % (changed, len(names), len(marks)))


if __name__ == "__main__":
    main()
