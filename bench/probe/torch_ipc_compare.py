# What comparing a GB-scale output on the GPU would cost against moving it to the host
# (issue 27, the next step): one process (the "candidate") makes an output tensor on the
# GPU and hands it to another (the "reference") through CUDA IPC (torch.multiprocessing's
# sharing of CUDA tensors); the reference opens it and compares it with its own outputs the
# way kopt's compare does (count of elements outside atol + rtol*|want|, the first failing
# index, the largest absolute error). Against: the same bytes copied device to host into
# pageable memory, into pinned memory, and into a page-locked shared mapping
# (cudaHostRegister of an mmap, what kopt's workers do). Prints one line per measurement.
# usage (GPU machine): python3 bench/probe/torch_ipc_compare.py [GB=6.4] [REPS=3]
import mmap
import ctypes
import sys
import time

import torch
import torch.multiprocessing as mp


def candidate(q, done, n, seed):
    torch.manual_seed(seed)
    out = torch.rand(n, device="cuda")
    out[n // 3] += 1.0                    # one element outside the tolerance
    torch.cuda.synchronize()
    q.put(out)                            # shared by CUDA IPC, not copied
    done.wait()                           # the owner keeps it alive until compared


def compare(got, want, atol=1e-5, rtol=1e-5):
    bad = (got - want).abs() > atol + rtol * want.abs()
    bad |= torch.isnan(got) != torch.isnan(want)
    count = int(bad.sum())
    first = int(bad.nonzero()[0, 0]) if count else -1   # only when some failed
    return count, first, float((got - want).abs().max())


def ms(t0):
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e3


def main():
    gb = float(sys.argv[1]) if len(sys.argv) > 1 else 6.4
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    n = int(gb * 1e9) // 4
    ctx = mp.get_context("spawn")
    torch.manual_seed(7)
    want = torch.rand(n, device="cuda")
    for r in range(reps):
        q, done = ctx.Queue(), ctx.Event()
        p = ctx.Process(target=candidate, args=(q, done, n, 7))
        p.start()
        t0 = time.perf_counter()
        got = q.get()
        t_open = ms(t0)
        t0 = time.perf_counter()
        count, first, maxerr = compare(got, want)
        t_cmp = ms(t0)
        print("ipc %d: %.1f GB opened in %.1f ms, compared on the GPU in %.1f ms (%d outside, "
              "first %d, max err %.3g)" % (r, gb, t_open, t_cmp, count, first, maxerr), flush=True)
        del got
        done.set()
        p.join()
    pageable = torch.empty(n, dtype=torch.float32)
    pinned = torch.empty(n, dtype=torch.float32, pin_memory=True)
    size = n * 4
    shm = mmap.mmap(-1, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    t0 = time.perf_counter()
    addr = ctypes.addressof(ctypes.c_char.from_buffer(shm))
    err = torch.cuda.cudart().cudaHostRegister(addr, size, 0)
    print("cudaHostRegister of a fresh %.1f GB shared mapping: %.0f ms (%s)"
          % (gb, ms(t0), err), flush=True)
    registered = torch.frombuffer(shm, dtype=torch.float32, count=n)
    for name, dst in (("pageable", pageable), ("pinned", pinned), ("registered mmap", registered)):
        for r in range(reps):
            t0 = time.perf_counter()
            dst.copy_(want)
            t = ms(t0)
            print("d2h %s %d: %.1f GB in %.0f ms (%.1f GB/s)" % (name, r, gb, t, gb / t * 1e3),
                  flush=True)


if __name__ == "__main__":
    main()
