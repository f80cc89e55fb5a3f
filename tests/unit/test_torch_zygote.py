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

# the input digests (tensor_digest): the same bytes the same digest, any byte changed another,
# in every chunk (chunk=5 words: a 64-word tensor has 13 chunks) and on the byte path
g = torch.Generator().manual_seed(7)
x = torch.randn(8, 8, generator=g)
d = kw.tensor_digest(torch, x, chunk=5)
check(d == kw.tensor_digest(torch, x.clone(), chunk=5), "a digest: the same bytes, the same")
changed = []
for i in range(x.numel()):
    y = x.clone().reshape(-1)
    y.view(torch.uint8)[4 * i + (i % 4)] ^= 1
    changed.append(kw.tensor_digest(torch, y.reshape(8, 8), chunk=5) != d)
check(all(changed), "a digest: one bit changed in any word of any chunk changes it (%d of %d)"
      % (sum(changed), len(changed)))
h = x.reshape(-1)[:7].to(torch.float16)          # 14 bytes: the byte path
k = h.clone()
k.view(torch.uint8)[13] ^= 0x80
check(kw.tensor_digest(torch, h, chunk=3) != kw.tensor_digest(torch, k, chunk=3),
      "a digest of an odd byte count: its last byte changed changes it")
check(kw.tensor_digest(torch, x) == kw.tensor_digest(torch, x.clone()) and
      kw.tensor_digest(torch, x) != d, "the default chunk: the same bytes the same digest")

# a worker started ahead warms torch's kernels (warm_ahead): its time, and a failure is not
# the evaluation's
ms = kw.warm_ahead(torch, "cpu")
check(isinstance(ms, float) and ms >= 0, "warm_ahead on the CPU: %r ms" % ms)


class Broken:   # a torch whose first kernel fails
    float16 = torch.float16

    def randn(self, *a, **k):
        raise RuntimeError("CUDA error: out of memory")


check(isinstance(kw.warm_ahead(Broken(), "cuda:0"), float), "warm_ahead: a failure is left alone")

# the host gate (HostGate): a worker started ahead waits to make its context while a worker
# of another GPU on the host is in its measured run (unpinned: any worker), up to its limit;
# measured runs never wait
import tempfile, threading, time  # noqa: E402
gate_dir = os.path.join(tempfile.mkdtemp(), "gates")
os.environ["KOPT_GATE"] = gate_dir
os.environ["KOPT_GATE_WAIT_MS"] = "20000"
os.environ.pop("KOPT_WORKER_PINNED", None)
holder, other, waiter = kw.HostGate(), kw.HostGate(), kw.HostGate()
check(holder.fd is not None and os.path.exists(os.path.join(gate_dir, "any")),
      "the gate's folder is made where KOPT_GATE says, a file for unpinned workers in it")
holder.measuring(True)
both = threading.Thread(target=other.measuring, args=(True,), daemon=True)
both.start()
both.join(5)
check(not both.is_alive(), "two measured runs hold the gate at once")
other.measuring(False)
done = threading.Event()
t = threading.Thread(target=lambda: (waiter.wait_quiet(), done.set()), daemon=True)
t.start()
check(not done.wait(0.3), "a worker started ahead waits while a measured run holds the gate")
holder.measuring(False)
check(done.wait(5), "and goes on once the measured run let it go")
holder.measuring(True)
job_r, job_w = os.pipe()
done.clear()
t = threading.Thread(target=lambda: (waiter.wait_quiet(job_fd=job_r), done.set()), daemon=True)
t.start()
check(not done.wait(0.3), "a worker started ahead waits for the gate while no job has come")
os.write(job_w, b'{"job": 1}\n')
check(done.wait(5), "and stops waiting once its job comes, though a measured run holds the gate")
check(os.read(job_r, 100) == b'{"job": 1}\n', "the job is left to read")
holder.measuring(False)
os.environ["KOPT_GATE_WAIT_MS"] = "50"
holder.measuring(True)
done.clear()
t = threading.Thread(target=lambda: (waiter.wait_quiet(), done.set()), daemon=True)
t.start()
check(done.wait(10), "the wait ends at its limit while a measured run still holds the gate")
holder.measuring(False)
import fcntl  # noqa: E402
fcntl.flock(holder.fd, fcntl.LOCK_EX)   # held alone (as a candidate could): runs do not wait
both = threading.Thread(target=other.measuring, args=(True,), daemon=True)
both.start()
both.join(5)
check(not both.is_alive(), "a measured run never waits, even on a gate held alone")
fcntl.flock(holder.fd, fcntl.LOCK_UN)
# pinned workers: a GPU's own measured runs are not waited for, another GPU's are
pinned = {}
for gpu in ("0", "1"):
    os.environ["KOPT_WORKER_PINNED"] = gpu
    pinned[gpu] = (kw.HostGate(), kw.HostGate())
del os.environ["KOPT_WORKER_PINNED"]
check(sorted(os.listdir(gate_dir)) == ["any", "gpu0", "gpu1"], "a file per GPU (%s)" %
      sorted(os.listdir(gate_dir)))
os.environ["KOPT_GATE_WAIT_MS"] = "20000"
pinned["0"][0].measuring(True)
t0 = time.monotonic()
pinned["0"][1].wait_quiet()
check(time.monotonic() - t0 < 5, "a worker ahead on GPU 0 does not wait for GPU 0's measured run")
done.clear()
t = threading.Thread(target=lambda: (pinned["1"][1].wait_quiet(), done.set()), daemon=True)
t.start()
check(not done.wait(0.3), "a worker ahead on GPU 1 waits while GPU 0's measured run holds it")
pinned["0"][0].measuring(False)
check(done.wait(5), "and goes on once GPU 0's run let it go")
holder.measuring(True)
done.clear()
t = threading.Thread(target=lambda: (pinned["1"][1].wait_quiet(), done.set()), daemon=True)
t.start()
check(not done.wait(0.3), "a pinned worker ahead waits for an unpinned worker's measured run")
holder.measuring(False)
check(done.wait(5), "until it ends")
os.environ["KOPT_GATE"] = "off"
check(kw.HostGate().fd is None, "KOPT_GATE=off: no gate")
os.environ["KOPT_GATE"] = os.path.join(gate_dir, "any", "not-a-folder")
g = kw.HostGate()
check(g.fd is None, "a gate file that cannot be made: no gate")
g.wait_quiet()
g.measuring(True)
del os.environ["KOPT_GATE"], os.environ["KOPT_GATE_WAIT_MS"]
sys.exit(1 if failed else 0)
