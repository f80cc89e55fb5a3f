#!/usr/bin/env python3
"""The PyTorch path's comparison on the device (libexec/kopt_torch_compare.py) against kopt's C
comparison (kopt__compare in libkopt, the host path) on the same data: every dtype, NaN on
either side or both, infinities equal and not, zeros in the reference, values exactly at
the tolerance, integers; in one chunk and across chunk boundaries. Both must give the same
count outside, first index and values there, and largest absolute and relative errors.
Runs on the CPU build of PyTorch ("skipped: no torch" without one).
Usage: test_torch_compare.py REPO_ROOT LIBKOPT"""
import ctypes
import math
import os
import sys

sys.path.insert(0, os.path.join(sys.argv[1], "libexec"))
try:
    import torch
except ImportError:
    print("skipped: no torch (the comparison on the device is PyTorch code)")
    sys.exit(77)
import kopt_torch_compare as kc  # noqa: E402

MAX_DIMS = 8
DTYPES = {"f32": (0, torch.float32), "f16": (1, torch.float16), "bf16": (2, torch.bfloat16),
          "f64": (3, torch.float64), "i32": (4, torch.int32), "i64": (5, torch.int64)}


class Init(ctypes.Structure):
    _fields_ = [("dist", ctypes.c_int), ("a", ctypes.c_double), ("b", ctypes.c_double)]


class BTensor(ctypes.Structure):     # kopt_btensor (include/kopt/problem.h)
    _fields_ = [("name", ctypes.c_char * 64), ("dtype", ctypes.c_int), ("role", ctypes.c_int),
                ("ndim", ctypes.c_int), ("shape", ctypes.c_int64 * MAX_DIMS),
                ("count", ctypes.c_int64), ("bytes", ctypes.c_size_t), ("init", Init),
                ("atol", ctypes.c_double), ("rtol", ctypes.c_double)]


class Check(ctypes.Structure):       # kopt_check (include/kopt/eval.h)
    _fields_ = [("tensor", ctypes.c_char * 64), ("sizes_label", ctypes.c_char * 16),
                ("run", ctypes.c_char * 24), ("seed", ctypes.c_uint64), ("count", ctypes.c_int64),
                ("mismatches", ctypes.c_int64), ("max_abs_err", ctypes.c_double),
                ("max_rel_err", ctypes.c_double), ("atol", ctypes.c_double),
                ("rtol", ctypes.c_double), ("first_index", ctypes.c_int64), ("ndim", ctypes.c_int),
                ("first_coord", ctypes.c_int64 * MAX_DIMS), ("first_got", ctypes.c_double),
                ("first_want", ctypes.c_double)]


lib = ctypes.CDLL(sys.argv[2])
lib.kopt__compare.argtypes = [ctypes.POINTER(BTensor), ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.POINTER(Check)]
lib.kopt__compare.restype = None
failed = 0


def check(cond, what):
    global failed
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failed += 1


def c_compare(got, want, code, atol, rtol):
    t = BTensor()
    t.name = b"out"
    t.dtype = code
    t.role = 1
    t.ndim = 1
    t.shape[0] = want.numel()
    t.count = want.numel()
    t.bytes = want.numel() * want.element_size()
    t.atol, t.rtol = atol, rtol
    c = Check()
    lib.kopt__compare(ctypes.byref(t), got.data_ptr(), want.data_ptr(), ctypes.byref(c))
    return c


def same(a, b):
    a, b = float(a), float(b)        # the device side's non-finite numbers are strings
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b or abs(a - b) <= 1e-12 * max(abs(a), abs(b))


def case(name, got, want, dt, atol=1e-2, rtol=1e-2, chunk=kc.CHUNK):
    code, _ = DTYPES[dt]
    c = c_compare(got.contiguous(), want.contiguous(), code, atol, rtol)
    d = kc.compare(torch, got, want, dt, atol, rtol, chunk=chunk)
    fields = [("count", c.count, d["count"]), ("mismatches", c.mismatches, d["mismatches"]),
              ("first_index", c.first_index, d["first_index"]),
              ("max_abs", c.max_abs_err, d["max_abs"]), ("max_rel", c.max_rel_err, d["max_rel"])]
    if c.mismatches:
        fields += [("first_got", c.first_got, d["first_got"]),
                   ("first_want", c.first_want, d["first_want"])]
    diff = [(f, a, b) for f, a, b in fields if not same(a, b)]
    check(not diff, "%s (%s, chunk %d): the same as kopt__compare%s" % (
        name, dt, chunk, "" if not diff else ": " + repr(diff)))
    return d


g = torch.Generator().manual_seed(7)
for dt in DTYPES:
    _, tdt = DTYPES[dt]
    n = 1000
    if dt in ("i32", "i64"):
        want = torch.randint(-50, 50, (n,), generator=g).to(tdt)
        got = want.clone()
        case("integers, equal", got, want, dt, atol=0, rtol=0)
        got[[3, 400, 999]] += torch.tensor([1, -7, 2], dtype=tdt)
        want[500] = 0
        got[500] = 5
        d = case("integers, four differ (one where the reference is 0)", got, want, dt,
                 atol=0, rtol=0)
        check(d["mismatches"] == 4 and d["first_index"] == 3, "integers: 4 outside, first at 3")
        case("integers, within atol", got, want, dt, atol=10, rtol=0, chunk=64)
        continue
    want = torch.randn(n, generator=g, dtype=torch.float64).to(tdt)
    got = (want.to(torch.float64) + 1e-3 * torch.randn(n, generator=g,
                                                       dtype=torch.float64)).to(tdt)
    case("close values", got, want, dt)
    case("close values", got, want, dt, chunk=97)
    odd = got.clone()
    w2 = want.clone()
    w2[10] = float("nan")
    odd[10] = float("nan")                 # NaN on both sides: fine
    odd[20] = float("nan")                 # NaN only in the candidate's
    w2[30] = float("nan")                  # NaN only in the reference's
    w2[40] = float("inf")
    odd[40] = float("inf")                 # equal infinities
    w2[50] = float("inf")
    odd[50] = float("-inf")                # opposite ones
    w2[60] = 0.0
    odd[60] = 0.5                          # the reference 0: relative error infinite
    w2[70] = 0.0
    odd[70] = 0.0
    odd[600] = (w2[600].to(torch.float64) + 3).to(tdt)
    d = case("NaN, infinities, zeros", odd, w2, dt)
    check(d["mismatches"] == 5 and d["first_index"] == 20,
          "NaN, infinities, zeros: 5 outside, first at 20 (%s)" % d["mismatches"])
    case("NaN, infinities, zeros", odd, w2, dt, chunk=33)
    edge = want.clone()
    e64 = want.to(torch.float64)
    step = (0.01 + 0.01 * e64.abs())
    edge = (e64 + step).to(tdt)            # at the bound, give or take the dtype's rounding
    case("at the tolerance", edge, want, dt)
    big = torch.randn(5000, generator=g, dtype=torch.float64).to(tdt)
    bgot = big.clone()
    bgot[4999] = (big[4999].to(torch.float64) + 1).to(tdt)
    d = case("one outside, in the last chunk", bgot, big, dt, chunk=1000)
    check(d["first_index"] == 4999, "the first failing index found in a later chunk")

print("%d failed" % failed)
sys.exit(1 if failed else 0)
