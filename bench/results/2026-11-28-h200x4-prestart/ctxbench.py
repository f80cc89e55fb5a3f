# How long N processes take to make their CUDA contexts when they start at once: each
# calls cuInit and cuDevicePrimaryCtxRetain (as kopt's worker) on GPU i % G; prints each
# one's cuInit and context times (ms) and the wall. Variants by argv: N [narrow] [initonly]
import ctypes, os, sys, time, multiprocessing as mp
def child(i, ngpu, narrow, initonly, t0, q):
    if narrow:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(i % ngpu)
    cu = ctypes.CDLL("libcuda.so.1")
    a = time.monotonic()
    assert cu.cuInit(0) == 0
    b = time.monotonic()
    if not initonly:
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        assert cu.cuDeviceGet(ctypes.byref(dev), 0 if narrow else i % ngpu) == 0
        assert cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
        assert cu.cuCtxSetCurrent(ctx) == 0
    c = time.monotonic()
    q.put((i, (a - t0) * 1e3, (b - a) * 1e3, (c - b) * 1e3, (c - t0) * 1e3))
if __name__ == "__main__":
    n = int(sys.argv[1]); narrow = "narrow" in sys.argv; initonly = "initonly" in sys.argv
    ngpu = int(os.popen("nvidia-smi -L | wc -l").read())
    mp.set_start_method("spawn"); q = mp.Queue()
    t0 = time.monotonic()
    ps = [mp.Process(target=child, args=(i, ngpu, narrow, initonly, t0, q)) for i in range(n)]
    for p in ps: p.start()
    r = sorted(q.get() for _ in ps)
    for p in ps: p.join()
    print("N=%d %s%s: wall %.0f ms; cuInit %s; context %s" % (n, "narrow " if narrow else "",
          "initonly" if initonly else "", max(x[4] for x in r),
          " ".join("%.0f" % x[2] for x in r), " ".join("%.0f" % x[3] for x in r)))
