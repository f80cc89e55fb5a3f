#!/usr/bin/env python3
# Does NVRTC compile in parallel inside one process? Compiles examples/sgemm/tune.cu (one
# tile configuration, sm_90) N times on 1, 2, 4, 8 and 16 threads of one process, and on 8
# processes, through libnvrtc by ctypes (foreign calls release the GIL), and prints the
# wall time per compile for each. Used to explain compile-bound tuning runs
# (bench/results/2026-11-25-h100x2-scale). Usage: python3 bench/probe/nvrtc_threads.py [N]
import ctypes, ctypes.util, glob, multiprocessing, os, sys, threading, time

def find_nvrtc():
    cands = glob.glob("/usr/local/cuda*/lib64/libnvrtc.so*") + [ctypes.util.find_library("nvrtc") or ""]
    for c in cands:
        try:
            return ctypes.CDLL(c)
        except OSError:
            pass
    sys.exit("skipped: no libnvrtc")

LIB = find_nvrtc()
SRC = open(os.path.join(os.path.dirname(__file__), "../../examples/sgemm/tune.cu"), "rb").read()
OPTS = [b"--gpu-architecture=sm_90", b"-DBM=128", b"-DBN=128", b"-DBK=16", b"-DTM=8", b"-DTN=8",
        b"-DLANES_M=2", b"-DSTAGES=2", b"-DMINB=1"]

def compile_one():
    prog = ctypes.c_void_p()
    if LIB.nvrtcCreateProgram(ctypes.byref(prog), SRC, b"tune.cu", 0, None, None) != 0:
        sys.exit("nvrtcCreateProgram failed")
    arr = (ctypes.c_char_p * len(OPTS))(*OPTS)
    rc = LIB.nvrtcCompileProgram(prog, len(OPTS), arr)
    LIB.nvrtcDestroyProgram(ctypes.byref(prog))
    if rc != 0:
        sys.exit("nvrtcCompileProgram failed (%d)" % rc)

def many(k):
    for _ in range(k):
        compile_one()

def timed(workers, n, procs=False):
    per = n // workers
    kind = multiprocessing.Process if procs else threading.Thread
    ws = [kind(target=many, args=(per,)) for _ in range(workers)]
    t = time.time()
    for w in ws:
        w.start()
    for w in ws:
        w.join()
    return (time.time() - t) / (per * workers)

if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    compile_one()   # load and warm the library
    print("cpus %d, %d compiles each" % (os.cpu_count(), n))
    for t in (1, 2, 4, 8, 16):
        if t > n:
            break
        print("threads %2d: %.3f s per compile (wall)" % (t, timed(t, n)))
    p = min(8, n)
    print("processes %d: %.3f s per compile (wall)" % (p, timed(p, n, procs=True)))
