#!/usr/bin/env python3
"""Circles between the source files of one folder: file A calls file B when an undefined
symbol of A's object is defined by B's. Reads the objects of a CMake build (nm), prints each
strongly connected group of two or more files per folder; exit 1 when any exists (outside
the folders --except names), 2 when the build has no objects (77 and a "skipped" line
with --skip-without-objects, as the test runs it).
Usage: scripts/file_cycles.py [build-dir] [folder ...] [--except folder ...]
(default build, every folder; e.g. --except cli: its circles are listed, not failed on).
ctest runs it on the build (unit.test_file_cycles, tests/CMakeLists.txt)."""
import collections, os, subprocess, sys

def objects(build):
    for root, _, files in os.walk(build):
        for f in files:
            if f.endswith(".c.o") and "CMakeFiles" in root and "/tests/" not in root:
                yield os.path.join(root, f)

def symbols(obj):
    out = subprocess.run(["nm", "--defined-only", "-g", obj], capture_output=True, text=True).stdout
    defined = {l.split()[-1] for l in out.splitlines() if l.strip()}
    out = subprocess.run(["nm", "-u", obj], capture_output=True, text=True).stdout
    undefined = {l.split()[-1] for l in out.splitlines() if l.strip()}
    return defined, undefined

def sccs(graph):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    def visit(v):
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop(); on.discard(w); group.append(w)
                if w == v: break
            out.append(group)
    for v in list(graph):
        if v not in index: visit(v)
    return out

def main():
    args, allowed = sys.argv[1:], set()
    skip = "--skip-without-objects" in args    # as a test: a build copied without objects
    args = [a for a in args if a != "--skip-without-objects"]
    while "--except" in args:
        i = args.index("--except")
        if i + 1 >= len(args):
            sys.exit("file_cycles: --except needs a folder")
        allowed.add(args[i + 1]); del args[i:i + 2]
    build = args[0] if args else "build"
    want = set(args[1:])
    files = {}
    for obj in objects(build):
        rel = obj.split("CMakeFiles/", 1)[1].split("/", 1)[1][:-2]   # e.g. src/eval/eval.c
        if "/" not in rel: continue
        folder = rel.rsplit("/", 1)[0]
        if want and folder not in want: continue
        files[rel] = symbols(obj)
    by_folder = collections.defaultdict(list)
    for rel in files: by_folder[rel.rsplit("/", 1)[0]].append(rel)
    if not files:
        if skip:
            print("skipped: no object files under %s (a build copied without them)" % build)
            return 77
        print("file_cycles: no objects under %s (build it first)" % build)
        return 2
    found = excused = 0
    for folder, rels in sorted(by_folder.items()):
        owner = {s: r for r in rels for s in files[r][0]}
        graph = {r: sorted({owner[s] for s in files[r][1] if s in owner and owner[s] != r}) for r in rels}
        for g in sccs(graph):
            if len(g) > 1:
                found += 1
                excused += folder in allowed
                print("circle in %s%s: %s" % (folder, " (allowed)" if folder in allowed else "",
                                              " <-> ".join(sorted(os.path.basename(x) for x in g))))
    print("%d circle(s) in %d folder(s)%s" % (found, len(by_folder),
                                             ", %d allowed" % excused if excused else ""))
    return 1 if found > excused else 0

sys.exit(main())
