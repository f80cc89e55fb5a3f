"""Shared by the LLM end-to-end tests: checks that end with the line 'N passed, M failed',
kopt runs whose outputs are kept, and the search of every output and file for a key."""
import os
import subprocess


class Checks:
    def __init__(self):
        self.passed = self.failed = 0
        self.outputs = []          # everything kopt printed

    def __call__(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL:", what, flush=True)
        return cond

    def kopt(self, kopt, args, env, stdin=None, timeout=240):
        """Run kopt with `env` added to the environment (KOPT_LLM removed)."""
        full = dict(os.environ, **env)
        full.pop("KOPT_LLM", None)
        p = subprocess.run([kopt, *args], input=stdin, capture_output=True, text=True,
                           env=full, timeout=timeout)
        self.outputs.extend([p.stdout, p.stderr])
        return p

    def no_keys(self, keys, paths):
        """No key in any output kept so far, nor in any of `paths` that exists."""
        leaks = [o[:200] for o in self.outputs if any(k in o for k in keys)]
        self(not leaks, "a key in an output: %s" % leaks)
        for path in paths:
            if os.path.exists(path):
                with open(path, "rb") as f:
                    data = f.read()
                self(not any(k.encode() in data for k in keys), "a key in " + path)

    def summary(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed else 0
