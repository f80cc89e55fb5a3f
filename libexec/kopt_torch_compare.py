"""kopt's comparison of a subject's outputs with the PyTorch reference's where they are (the GPU),
for kopt_torch_worker.py: a candidate (or the torch.compile baseline) copies each run's outputs
into an export buffer that the reference's worker opens (CUDA IPC on the GPU; the parent's
mapping of the subject's shared buffer with the CPU build of PyTorch), and the reference's
worker compares them with its own outputs for the same inputs. No gigabytes go to the host.

`compare` has the semantics of kopt's C comparison (src/eval/verify.c, kopt__compare), element
by element in float64: NaN only where the reference is NaN, infinities equal, otherwise
|got - want| <= atol + rtol * |want|; integers exactly equal or within the same bound. It
returns the count outside, the first such index with both values, and the largest absolute
and relative errors, as the C function does (tests/unit/test_torch_compare.py checks both
on the same data).
"""
import ctypes
import math
import mmap
import os
import warnings

CHUNK = 1 << 25          # elements per step: float64 temporaries of 256 MB
INTS = ("i32", "i64")


def _num(x):
    """A float for JSON: infinities and NaN as strings (jansson reads no bare Infinity)."""
    x = float(x)
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _chunk_terms(torch, gc, wc, is_int, atol, rtol):
    """bad, abs_err, rel_err and the mask of errors that count for the relative maximum,
    one chunk, as kopt__compare computes them."""
    inf = float("inf")
    if is_int:
        gi, wi = gc.to(torch.int64), wc.to(torch.int64)
        gd, wd = gi.to(torch.float64), wi.to(torch.float64)
        eq = gi == wi
        abs_e = torch.where(eq, torch.zeros_like(gd), (gd - wd).abs())
        rel = torch.where(wi != 0, abs_e / wd.abs(),
                          torch.where(gi != 0, torch.full_like(gd, inf), torch.zeros_like(gd)))
        bad = ~eq & (abs_e > atol + rtol * wd.abs())
        counts = (wi != 0) | (abs_e == 0)
        return bad, abs_e, rel, counts, gd, wd
    gd, wd = gc.to(torch.float64), wc.to(torch.float64)
    gn, wn = gd.isnan(), wd.isnan()
    nan = gn | wn
    infs = (gd.isinf() | wd.isinf()) & ~nan
    fin = ~(nan | infs)
    abs_f = (gd - wd).abs()
    bad = torch.where(nan, gn != wn, torch.where(infs, gd != wd, abs_f > atol + rtol * wd.abs()))
    big = torch.full_like(gd, inf)
    zero = torch.zeros_like(gd)
    odd = torch.where(bad, big, zero)           # NaN or infinity: inf when it fails, else 0
    abs_e = torch.where(fin, abs_f, odd)
    rel_f = torch.where(wd != 0, abs_f / wd.abs(), torch.where(abs_f != 0, big, zero))
    rel = torch.where(fin, rel_f, odd)
    counts = (wd != 0) | (abs_e == 0)           # NaN != 0: a NaN reference counts, as in C
    return bad, abs_e, rel, counts, gd, wd


def _all_close(torch, gc, wc, atol, rtol):
    """A float chunk's common case in a few passes: (max_abs, max_rel) when every element is
    finite and within the tolerance, else None (the exact terms then decide). The same
    numbers as _chunk_terms gives for such a chunk."""
    d = gc.to(torch.float64, copy=True)
    wa = wc.to(torch.float64, copy=True)
    d.sub_(wa).abs_()                 # NaN and infinities fail the test below
    wa.abs_()
    if not bool((d <= wa * rtol + atol).all()):
        return None
    max_abs = d.max()
    rel = torch.where(wa != 0, d.div_(wa), torch.zeros_like(d))
    return max_abs, rel.max()


def compare(torch, got, want, dtype, atol, rtol, chunk=CHUNK):
    """Compare two tensors of the same element count (any device, `dtype` kopt's code name).
    Returns {count, mismatches, max_abs, max_rel, first_index, first_got, first_want} with
    the non-finite floats as strings (_num)."""
    g, w = got.reshape(-1), want.reshape(-1)
    n = w.numel()
    is_int = dtype in INTS
    mism = torch.zeros((), dtype=torch.int64, device=w.device)
    max_abs = torch.zeros((), dtype=torch.float64, device=w.device)
    max_rel = torch.zeros((), dtype=torch.float64, device=w.device)
    for s in range(0, n, chunk):
        close = None if is_int else _all_close(torch, g[s:s + chunk], w[s:s + chunk], atol, rtol)
        if close is not None:
            max_abs = torch.maximum(max_abs, close[0])
            max_rel = torch.maximum(max_rel, close[1])
            continue
        bad, abs_e, rel, counts, _, _ = _chunk_terms(torch, g[s:s + chunk], w[s:s + chunk],
                                                     is_int, atol, rtol)
        mism += bad.sum()
        max_abs = torch.maximum(max_abs, abs_e.max())
        max_rel = torch.maximum(max_rel, torch.where(counts, rel, torch.zeros_like(rel)).max())
    out = {"count": n, "mismatches": int(mism.item()), "max_abs": _num(max_abs.item()),
           "max_rel": _num(max_rel.item()), "first_index": -1, "first_got": 0.0,
           "first_want": 0.0}
    if out["mismatches"]:
        for s in range(0, n, chunk):            # the first failing chunk, then its index
            bad, _, _, _, gd, wd = _chunk_terms(torch, g[s:s + chunk], w[s:s + chunk], is_int,
                                                atol, rtol)
            idx = bad.nonzero()
            if idx.numel():
                i = int(idx[0, 0].item())
                out["first_index"] = s + i
                out["first_got"] = _num(gd[i].item())
                out["first_want"] = _num(wd[i].item())
                break
    return out


# ---- the export buffer ------------------------------------------------------------------------

class IpcHandle(ctypes.Structure):
    """CUipcMemHandle: 64 opaque bytes"""
    _fields_ = [("reserved", ctypes.c_char * 64)]


class Driver:
    """The CUDA driver's allocation and IPC calls (libcuda, which every GPU machine has), on the
    context PyTorch made current on this thread."""

    def __init__(self):
        self.lib = ctypes.CDLL("libcuda.so.1")
        for name, args in (("cuMemAlloc_v2", [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]),
                           ("cuMemFree_v2", [ctypes.c_uint64]),
                           ("cuIpcGetMemHandle", [ctypes.POINTER(IpcHandle), ctypes.c_uint64]),
                           ("cuIpcOpenMemHandle_v2", [ctypes.POINTER(ctypes.c_uint64), IpcHandle,
                                                      ctypes.c_uint]),
                           ("cuIpcCloseMemHandle", [ctypes.c_uint64]),
                           ("cuMemGetAddressRange_v2", [ctypes.POINTER(ctypes.c_uint64),
                                                        ctypes.POINTER(ctypes.c_size_t),
                                                        ctypes.c_uint64])):
            f = getattr(self.lib, name)
            f.argtypes = args
            f.restype = ctypes.c_int

    @staticmethod
    def _check(rc, what):
        if rc != 0:
            raise OSError("%s: CUDA driver error %d" % (what, rc))

    def alloc(self, n):
        p = ctypes.c_uint64()
        self._check(self.lib.cuMemAlloc_v2(ctypes.byref(p), n), "cuMemAlloc(%d)" % n)
        return p.value

    def handle(self, ptr):
        h = IpcHandle()
        self._check(self.lib.cuIpcGetMemHandle(ctypes.byref(h), ptr), "cuIpcGetMemHandle")
        return ctypes.string_at(ctypes.addressof(h), 64).hex()   # NULs included

    def open(self, hexh):
        raw = bytes.fromhex(hexh)
        if len(raw) != 64:
            raise ValueError("an IPC handle has 64 bytes, this one %d" % len(raw))
        h = IpcHandle()
        ctypes.memmove(ctypes.addressof(h), raw, 64)
        p = ctypes.c_uint64()
        self._check(self.lib.cuIpcOpenMemHandle_v2(ctypes.byref(p), h, 1), "cuIpcOpenMemHandle")
        return p.value

    def size(self, ptr):
        base, n = ctypes.c_uint64(), ctypes.c_size_t()
        self._check(self.lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(n), ptr),
                    "cuMemGetAddressRange")
        return n.value - (ptr - base.value)

    def close(self, ptr):
        self.lib.cuIpcCloseMemHandle(ptr)


class _DeviceBytes:
    """Raw device memory as a CUDA array of bytes, for torch.as_tensor (no copy)."""

    def __init__(self, ptr, n):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 3, "strides": None, "stream": None}


def device_bytes(torch, ptr, n, device):
    return torch.as_tensor(_DeviceBytes(ptr, n), device=device)


class Export:
    """A subject's export buffer on the GPU: its own allocation (not PyTorch's cache, so its
    handle names exactly it), `slots` runs' outputs of `slot` bytes each."""

    def __init__(self, torch, device, nbytes):
        self.driver = Driver()
        self.nbytes = nbytes
        self.ptr = self.driver.alloc(nbytes)
        self.tensor = device_bytes(torch, self.ptr, nbytes, device)
        self.handle = self.driver.handle(self.ptr)


class Peer:
    """The reference's view of a subject's export buffer: opened from its IPC handle (GPU) or
    mapped from the file the parent names (the CPU build of PyTorch), checked to be as large
    as the parent says, read-only by convention, closed before the subject goes."""

    def __init__(self, torch, device, spec):
        self.torch = torch
        self.ptr = None
        self.map = None
        need = int(spec["bytes"])
        if spec.get("handle"):
            self.driver = Driver()
            self.ptr = self.driver.open(spec["handle"])
            have = self.driver.size(self.ptr)
            if have < need:
                self.close()
                raise ValueError("the subject's export buffer has %d bytes, %d expected"
                                 % (have, need))
            self.tensor = device_bytes(torch, self.ptr, need, device)
        else:
            fd = os.open(spec["path"], os.O_RDONLY)
            try:
                if os.fstat(fd).st_size < need:
                    raise ValueError("the subject's output buffer has %d bytes, %d expected"
                                     % (os.fstat(fd).st_size, need))
                self.map = mmap.mmap(fd, need, mmap.MAP_SHARED, mmap.PROT_READ)
            finally:
                os.close(fd)
            with warnings.catch_warnings():   # read-only memory: kopt never writes it
                warnings.simplefilter("ignore")
                self.tensor = torch.frombuffer(self.map, dtype=torch.uint8, count=need)
            if device.type != "cpu":
                self.tensor = self.tensor.to(device)

    def view(self, offset, nbytes, dtype, shape):
        """Bytes [offset, offset+nbytes) as a tensor of dtype and shape (copied only when the
        offset is not aligned to the element)."""
        b = self.tensor[offset:offset + nbytes]
        esize = self.torch.empty((), dtype=dtype).element_size()
        if offset % esize:
            b = b.clone()
        return b.view(dtype).view(shape)

    def close(self):
        if self.ptr is not None:
            self.tensor = None
            self.driver.close(self.ptr)
            self.ptr = None
        if self.map is not None:
            self.tensor = None
            try:
                self.map.close()
            except BufferError:        # a view still alive: unmapped when it goes
                pass
            self.map = None
