"""Typed results: an evaluation's document (kopt eval --json, field for field) as
dataclasses. Every field of the JSON is an attribute; nested objects are dataclasses where
their shape is fixed, dicts otherwise; `json` keeps the whole document."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Type, TypeVar

T = TypeVar("T")


def _build(cls: Type[T], d: Optional[Dict[str, Any]]) -> Optional[T]:
    """A dataclass from a JSON object: known fields by name (nested ones built too), the
    rest kept in its `extra` dict."""
    if d is None:
        return None
    names = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    kw: Dict[str, Any] = {}
    extra: Dict[str, Any] = {}
    for k, v in d.items():
        f = names.get(k)
        if f is None or k in ("extra", "json"):
            extra[k] = v
            continue
        sub = _NESTED.get((cls.__name__, k))
        if sub is not None and isinstance(v, list):
            kw[k] = [_build(sub, x) if isinstance(x, dict) else x for x in v]
        elif sub is not None and isinstance(v, dict):
            kw[k] = _build(sub, v)
        else:
            kw[k] = v
    obj = cls(**kw)
    if "extra" in names:
        obj.extra = extra  # type: ignore[attr-defined]
    return obj


@dataclass
class Device:
    name: str = ""
    uuid: str = ""
    cc: str = ""
    sm_count: int = 0
    l2_bytes: int = 0
    clock_khz: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Check:
    """One comparison of one output tensor with the reference's (a size set, a run)."""
    tensor: str = ""
    sizes: str = ""
    run: str = ""
    seed: int = 0
    elements: int = 0
    mismatches: int = 0
    max_abs_err: Optional[float] = None
    max_rel_err: Optional[float] = None
    atol: float = 0.0
    rtol: float = 0.0
    first_mismatch: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Kernel:
    """A compiled kernel's resources."""
    name: str = ""
    registers: int = 0
    static_smem: int = 0
    stack_frame: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Timing:
    """Times of the timed runs, ms (CUDA events, the bracket's own cost subtracted)."""
    reps: int = 0
    warmup_runs: int = 0
    median_ms: Optional[float] = None
    mean_ms: Optional[float] = None
    min_ms: Optional[float] = None
    max_ms: Optional[float] = None
    p10_ms: Optional[float] = None
    p90_ms: Optional[float] = None
    raw_median_ms: Optional[float] = None
    event_overhead_ms: Optional[float] = None
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Roofline:
    flops: Optional[float] = None
    bytes: Optional[float] = None
    achieved_gbs: Optional[float] = None
    achieved_gflops: Optional[float] = None
    bound_ms: Optional[float] = None
    pct_of_bound: Optional[float] = None
    limiter: str = ""
    compute_ceiling: str = ""
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass
class Result:
    """An evaluation: the same fields as `kopt eval --json` (docs/cli.md), plus run_id (the
    stored run; 0 without a store). `ok` is verdict == "OK"."""
    verdict: str = "ERROR"
    message: str = ""
    reference_only: bool = False
    problem_hash: str = ""
    candidate_hash: str = ""
    arch: str = ""
    seed: int = 0
    sizes: Dict[str, int] = field(default_factory=dict)
    check_sizes: Optional[Dict[str, int]] = None
    device: Optional[Device] = None
    ceilings: Optional[Dict[str, Any]] = None
    checks: List[Check] = field(default_factory=list)
    kernels: List[Kernel] = field(default_factory=list)
    timing: Optional[Timing] = None
    reference_timing: Optional[Timing] = None
    speedup: Optional[float] = None
    reference_reused: bool = False
    worker_ahead: bool = False
    worker_forked: bool = False
    reference_served: bool = False
    pytorch: Optional[Dict[str, Any]] = None
    census: Optional[Dict[str, Any]] = None
    energy: Optional[Dict[str, Any]] = None
    roofline: Optional[Roofline] = None
    reference_roofline: Optional[Roofline] = None
    fast_roofline: Optional[Roofline] = None
    wall_ms: Dict[str, Any] = field(default_factory=dict)
    trace: Optional[Dict[str, Any]] = None
    compile_cache_hit: bool = False
    compile_log: Optional[str] = None
    worker_log: Optional[str] = None
    sandbox: Optional[Any] = None
    gpu_kernels: Optional[List[str]] = None
    sanitizer: Optional[Any] = None
    run_id: int = 0
    session: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = field(default_factory=dict)
    json: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return self.verdict == "OK"

    @property
    def median_ms(self) -> Optional[float]:
        """The candidate's median time, ms (None when not timed)."""
        return self.timing.median_ms if self.timing else None

    @classmethod
    def from_json(cls, doc: Dict[str, Any]) -> "Result":
        r = _build(cls, {k: v for k, v in doc.items() if k != "_summary"})
        assert r is not None
        r.json = doc
        return r


_NESTED = {("Result", "device"): Device, ("Result", "checks"): Check,
           ("Result", "kernels"): Kernel, ("Result", "timing"): Timing,
           ("Result", "reference_timing"): Timing, ("Result", "roofline"): Roofline,
           ("Result", "reference_roofline"): Roofline, ("Result", "fast_roofline"): Roofline}
