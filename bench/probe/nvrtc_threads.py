#!/usr/bin/env python3
# Does NVRTC compile in parallel inside one process? Compiles examples/sgemm/tune.cu (one
# tile configuration, sm_90) N times on 1, 2, 4, 8 and 16 threads of one process, and on
# 1, 2, 4, 8 and 16 processes (each warmed by one compile first, then timed from a common
# start), through libnvrtc by ctypes (foreign calls release the GIL), and prints the wall
# time per compile for each. Every compile has its own -DKOPT_SALT=k, so nothing a compiler
# might keep between identical programs is reused. Used to explain compile-bound tuning runs
# (bench/results/2026-11-25-h100x2-scale). Usage: python3 bench/probe/nvrtc_threads.py [N]
# [--procs P1,P2,...]: only processes, P of them, each compiling N/P... at least 2 (a host of
# many CPUs: does NVRTC scale to all of them?); [--cold P1,P2,...]: P fresh processes compile
# their first program at once (NVRTC's start in each: what a tuning run's first round pays)
import ctypes, ctypes.util, glob, multiprocessing, os, sys, threading, time

# as kopt does (src/cuda/loader.c): where a GPU driver is installed, NVRTC would otherwise
# answer a program it has seen from the driver's compute cache (0.015 s "compiles" on the
# H100 machine, 2026-11-25: that run measured the cache, not the compiler)
os.environ.setdefault("CUDA_CACHE_DISABLE", "1")

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

SALT = [0]
SALT_LOCK = threading.Lock()

def compile_one():
    with SALT_LOCK:
        SALT[0] += 1
        salt = b"-DKOPT_SALT=%d%d" % (os.getpid(), SALT[0])
    opts = OPTS + [salt]
    prog = ctypes.c_void_p()
    if LIB.nvrtcCreateProgram(ctypes.byref(prog), SRC, b"tune.cu", 0, None, None) != 0:
        sys.exit("nvrtcCreateProgram failed")
    arr = (ctypes.c_char_p * len(opts))(*opts)
    rc = LIB.nvrtcCompileProgram(prog, len(opts), arr)
    LIB.nvrtcDestroyProgram(ctypes.byref(prog))
    if rc != 0:
        sys.exit("nvrtcCompileProgram failed (%d)" % rc)

def many(k):
    for _ in range(k):
        compile_one()

def timed(workers, n):
    per = n // workers
    ws = [threading.Thread(target=many, args=(per,)) for _ in range(workers)]
    t = time.time()
    for w in ws:
        w.start()
    for w in ws:
        w.join()
    return (time.time() - t) / (per * workers)

def proc_main(per, ready, go, done):
    compile_one()          # this process's own warm-up, not timed
    ready.release()
    go.wait()
    many(per)
    done.put(time.time())

def cold_main(go, done):
    go.wait()
    t = time.time()
    compile_one()          # this process's first compile: NVRTC's own start included
    done.put(time.time() - t)

def cold_procs(workers):
    """P fresh processes (libnvrtc loaded, nothing compiled) compile once each, all at once:
    the slowest and the median first compile."""
    mp = multiprocessing.get_context("spawn")   # fresh programs, as kopt's helpers are
    go = mp.Event()
    done = mp.Queue()
    ps = [mp.Process(target=cold_main, args=(go, done)) for _ in range(workers)]
    for p in ps:
        p.start()
    time.sleep(1.0 + 0.05 * workers)   # every child has loaded libnvrtc
    go.set()
    ts = sorted(done.get() for _ in ps)
    for p in ps:
        p.join()
    return ts[len(ts) // 2], ts[-1]

def timed_procs(workers, n):
    per = n // workers
    ready = multiprocessing.Semaphore(0)
    go = multiprocessing.Event()
    done = multiprocessing.Queue()
    ps = [multiprocessing.Process(target=proc_main, args=(per, ready, go, done))
          for _ in range(workers)]
    for p in ps:
        p.start()
    for _ in ps:
        ready.acquire()
    t = time.time()
    go.set()
    end = max(done.get() for _ in ps)
    for p in ps:
        p.join()
    return (end - t) / (per * workers)

if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 32
    if "--cold" in sys.argv:      # before this process compiles: the children start cold
        for p in [int(x) for x in sys.argv[sys.argv.index("--cold") + 1].split(",")]:
            med, worst = cold_procs(p)
            print("cold processes %2d: first compile median %.2f s, slowest %.2f s" %
                  (p, med, worst))
        sys.exit(0)
    compile_one()   # load and warm the library
    if "--procs" in sys.argv:
        procs = [int(p) for p in sys.argv[sys.argv.index("--procs") + 1].split(",")]
        print("cpus %d (usable %d), at least 2 compiles a process" % (os.cpu_count(),
              len(os.sched_getaffinity(0))))
        for p in procs:
            k = max(n, 2 * p)
            w = timed_procs(p, k)
            print("processes %2d: %.3f s per compile (wall), %.1f compiles/s, %.2f s each" %
                  (p, w, 1 / w, w * p))
        sys.exit(0)
    print("cpus %d, %d compiles each" % (os.cpu_count(), n))
    for t in (1, 2, 4, 8, 16):
        if t > n:
            break
        print("threads %2d: %.3f s per compile (wall)" % (t, timed(t, n)))
    for p in (1, 2, 4, 8, 16):
        if p > n:
            break
        print("processes %2d: %.3f s per compile (wall)" % (p, timed_procs(p, n)))
