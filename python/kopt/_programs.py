"""The console entry points `kopt` and `kopt-worker`: the programs the wheel carries
(kopt/bin/kopt, kopt/libexec/kopt/kopt-worker), run with NVIDIA's pip packages made known
(NVRTC, cuRAND, nvcc) when they are installed."""
from __future__ import annotations

import os
import sys

from . import _lib

_HERE = os.path.dirname(os.path.abspath(__file__))
_PLACES = {"kopt": ("bin", "kopt"), "kopt-worker": ("libexec", "kopt", "kopt-worker")}


def program(name: str) -> str:
    """The path of one of the wheel's programs ("kopt", "kopt-worker"); in a checkout
    (python/kopt beside build/), the build tree's."""
    p = os.path.join(_HERE, *_PLACES[name])
    if os.access(p, os.X_OK):
        return p
    built = os.path.join(_HERE, "..", "..", "build", name)
    if os.access(built, os.X_OK):
        return os.path.abspath(built)
    raise _lib.KoptError("the %s program is not installed (looked at %s)" % (name, p),
                         "not found")


def _exec(name: str) -> None:
    _lib.cuda_environment()
    try:
        path = program(name)
    except _lib.KoptError as e:
        sys.stderr.write("kopt: %s\n" % e)
        sys.exit(1)
    os.execv(path, [name] + sys.argv[1:])


def kopt_main() -> None:
    _exec("kopt")


def worker_main() -> None:
    _exec("kopt-worker")
