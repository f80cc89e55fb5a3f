#!/usr/bin/env python3
"""Unit tests of the PyTorch zygote (libexec/kopt_torch_zygote.py) without a GPU: what it
imports before forking leaves a forked child free to use CUDA (torch marks a fork "bad" once
the parent initialised the CUDA driver, as importing torch.utils.cpp_extension does), and
its self-check sees a poisoned fork; a worker pinned to its GPU names the job's device as
its own cuda:0. Without torch: "skipped: no torch" (after the device check).
Usage: test_torch_zygote.py REPO_ROOT"""
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "libexec"))
failed = 0


def check(cond, what):
    global failed
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failed += 1


# a worker kopt pinned to GPU N (src/eval/pin.c) names the job's cuda:N as cuda:0
import kopt_torch_worker as kw  # noqa: E402
os.environ.pop("KOPT_WORKER_PINNED", None)
check(kw.local_device("cuda:3") == "cuda:3", "not pinned: the job's device as it is")
os.environ["KOPT_WORKER_PINNED"] = "3"
check([kw.local_device(d) for d in ("cuda:3", "cuda:1", "cuda:30", "cuda", "cpu")] ==
      ["cuda:0", "cuda:1", "cuda:30", "cuda", "cpu"], "pinned to GPU 3: cuda:3 is cuda:0")
err = kw.classify(RuntimeError("CUDA error: invalid device ordinal"), "modelnew")
check(err.kind == "crash" and "sees only the GPU" in str(err),
      "pinned: a candidate naming another GPU crashes with why (got %s: %s)" % (err.kind, err))
del os.environ["KOPT_WORKER_PINNED"]
err = kw.classify(RuntimeError("CUDA error: invalid device ordinal"), "modelnew")
check(err.kind == "crash" and "sees only the GPU" not in str(err),
      "not pinned: the CUDA error as it is (got %s)" % err)



class FakeCuda:   # what cache_to_release reads of torch.cuda
    def __init__(self, reserved, total):
        self.reserved, self.total = reserved, total

    def get_device_properties(self, device):
        return type("P", (), {"total_memory": self.total})

    def memory_reserved(self, device):
        return self.reserved


def fake_torch(reserved, total):
    return type("T", (), {"cuda": FakeCuda(reserved, total)})


check(not kw.cache_to_release(fake_torch(64 << 20, 140 << 30), "cuda:0"),
      "a streaming reference keeps 64 MB cached on a 140 GB device")
check(kw.cache_to_release(fake_torch(20 << 30, 140 << 30), "cuda:0"),
      "a streaming reference gives back 20 GB cached on a 140 GB device")
check(kw.cache_to_release(fake_torch(2 << 30, 140 << 30), "cuda:0"),
      "a streaming reference gives back 2 GB cached (over 1 GB) on a 140 GB device")
check(kw.cache_to_release(fake_torch(200 << 20, 2 << 30), "cuda:0"),
      "a streaming reference gives back 200 MB cached on a 2 GB device")
check(kw.cache_to_release(fake_torch(0, None), "cuda:0"),
      "a device whose memory cannot be read: the cache given back")

try:
    import torch  # noqa: F401
except Exception:
    print("skipped: no torch (python3 cannot import torch)")
    sys.exit(1 if failed else 77)
import kopt_torch_zygote as kz  # noqa: E402

kz.preload()
check(kz.fork_poisoned() is None, "after the zygote's imports a forked child may use CUDA")
import torch.utils.cpp_extension  # noqa: E402,F401   what the zygote must not import
check(kz.fork_poisoned() is not None, "the self-check sees a fork poisoned by an import")
sys.exit(1 if failed else 0)
