"""kopt's verbs as Python functions over libkopt (the tools of include/kopt/mcp.h called
in-process: the run API the CLI uses, the same checks and sandbox, results stored in `db`).
Errors raise KoptError with kopt's message; Ctrl-C stops a run after its current evaluation
(what was done stays stored) and raises KeyboardInterrupt."""
from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Union

from . import _lib
from ._serve import own_server
from .result import Result

PathLike = Union[str, "os.PathLike[str]"]

#: The store every call records into unless told otherwise (as the CLI: ./kopt.db).
DEFAULT_DB = "kopt.db"


def _candidate_args(candidate: Optional[PathLike], source: Optional[str]) -> Dict[str, Any]:
    if candidate is not None and source is not None:
        raise _lib.KoptError("give candidate (a file) or source (its text), not both", "invalid input")
    if candidate is not None:
        return {"candidate_path": os.fspath(candidate)}
    if source is not None:
        return {"candidate_source": source}
    return {}


def _common(sizes: Optional[Dict[str, int]], seed: Optional[int], trials: Optional[int],
            device: Optional[int]) -> Dict[str, Any]:
    return {"sizes": dict(sizes) if sizes else None, "seed": seed, "trials": trials,
            "device": device}


def eval(problem: PathLike, candidate: Optional[PathLike] = None, *,
         source: Optional[str] = None, sizes: Optional[Dict[str, int]] = None,
         seed: Optional[int] = None, trials: Optional[int] = None, device: Optional[int] = None,
         no_timing: bool = False, db: Optional[str] = DEFAULT_DB) -> Result:
    """Evaluate a candidate (a .cu file, a KernelBench ModelNew .py, or `source`: CUDA text)
    against the problem's reference, as `kopt eval` does: compiled, checked on fresh random
    inputs at the problem's sizes and check sizes, timed, placed on the roofline. Without a
    candidate the reference alone is timed. Without a GPU the verdict is SKIPPED (compiled,
    resources reported). `db`: the store (None: nothing stored)."""
    args = {"problem": os.fspath(problem), **_candidate_args(candidate, source),
            **_common(sizes, seed, trials, device), "no_timing": no_timing or None}
    return Result.from_json(_lib.call("eval", args, db=db))


@dataclass
class Finding:
    """A micro-tool's advice: what it saw, why it matters, what to change, estimated gain."""
    tool: str = ""
    kernel: str = ""
    title: str = ""
    seen: Optional[str] = None
    why: Optional[str] = None
    change: Optional[str] = None
    gain: float = 0.0
    gain_how: Optional[str] = None
    confidence: float = 0.0


@dataclass
class Profile:
    """kopt profile's result: the correctness check, the metrics and the ranked findings."""
    evaluation: Optional[Result]
    findings: List[Finding]
    metrics: Optional[Any]
    run_id: int = 0
    profile_id: int = 0
    stopped: bool = False
    static_only: bool = False
    sass_note: str = ""
    metrics_note: str = ""
    static_note: str = ""
    json: Dict[str, Any] = field(default_factory=dict, repr=False)


def profile(problem: PathLike, candidate: Optional[PathLike] = None, *,
            source: Optional[str] = None, static: bool = False, parent: Optional[str] = None,
            sizes: Optional[Dict[str, int]] = None, seed: Optional[int] = None,
            trials: Optional[int] = None, device: Optional[int] = None,
            db: Optional[str] = DEFAULT_DB) -> Profile:
    """Profile a candidate as `kopt profile` does: correct first, then compile info, SASS,
    hardware metrics, the roofline class and the micro-tools' findings ranked by estimated
    gain. `static`: no GPU work. `parent`: the candidate it came from ("reference" or a
    path): its findings that no longer fire are recorded as resolved."""
    args = {"problem": os.fspath(problem), **_candidate_args(candidate, source),
            **_common(sizes, seed, trials, device), "static": static or None, "parent": parent}
    d = _lib.call("profile", args, db=db)
    ev = d.get("evaluation")
    return Profile(evaluation=Result.from_json(ev) if ev else None,
                   findings=[Finding(**{k: v for k, v in f.items()
                                        if k in Finding.__dataclass_fields__})
                             for f in d.get("findings") or []],
                   metrics=d.get("metrics"), run_id=d.get("run_id", 0),
                   profile_id=d.get("profile_id", 0), stopped=bool(d.get("stopped")),
                   static_only=bool(d.get("static_only")), sass_note=d.get("sass_note", ""),
                   metrics_note=d.get("metrics_note", ""), static_note=d.get("static_note", ""),
                   json=d)


@dataclass
class Document:
    """A result kopt gives as a JSON document (kopt tune --json, an optimize tree): `json`
    holds it; its top-level fields read as attributes too (doc.run_id)."""
    json: Dict[str, Any]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["json"][name]
        except KeyError:
            raise AttributeError(name) from None


def tune(problem: Optional[PathLike] = None, template: Optional[PathLike] = None, *,
         replay: Optional[str] = None, strategy: Optional[str] = None,
         budget: Optional[int] = None, seed: Optional[int] = None,
         sizes: Optional[Dict[str, int]] = None, device: Optional[int] = None,
         db: Optional[str] = DEFAULT_DB, replay_delay_ms: float = 0.0,
         progress: Optional[_lib.ProgressCallback] = None) -> Document:
    """Tune a template's params (`kopt tune`): live on the GPU, or `replay` a recording (a
    cache file or a stored tuning run's id) without one. Without a GPU a live tune gives the
    search space with "skipped": true and the reason. Ctrl-C stops after the current
    evaluation; the outcomes so far stay stored (resume with kopt tune --resume).
    `replay_delay_ms`: a replay sleeps this long before each evaluation (tests).
    `progress`: called with each kopt.Progress (evaluations done of the budget, the line
    kopt tune prints), e.g. progress=print."""
    args = {"problem": os.fspath(problem) if problem is not None else None,
            "template": os.fspath(template) if template is not None else None,
            "replay": replay, "strategy": strategy, "budget": budget, "seed": seed,
            "sizes": dict(sizes) if sizes else None, "device": device}
    return Document(_lib.call("tune", args, db=db, replay_delay_ms=replay_delay_ms,
                              progress=progress))


@dataclass
class Prompt:
    """A prompt of kopt optimize's agents waiting for the model's reply."""
    name: str
    role: str          # planner, coder, debugger, templatizer
    text: str          # ends with the role's reply contract


Model = Callable[[Prompt], str]


#: A round's model calls in flight at once when `parallel` is not given (the CLI's cap for a
#: step's requests asked together, kopt_llm_call_together).
TOGETHER_MAX = 16


def _answer_round(tree: int, waiting: List[Dict[str, Any]], model: Callable[["Prompt"], str],
                  parallel: Optional[int], db: str) -> None:
    """The model's replies to one round's prompts, each stored (optimize_reply) on this
    thread as it comes. Up to `parallel` (else TOGETHER_MAX) calls run at once on worker
    threads; a call that raises does not lose the others' replies: they are stored, then
    the first error is raised. Ctrl-C stops waiting (the replies so far stay stored)."""
    def ask(p: Dict[str, Any]) -> str:
        return model(Prompt(p.get("name", ""), p.get("role", ""), p.get("text", "")))

    def store(p: Dict[str, Any], reply: str) -> None:
        _lib.call("optimize_reply", {"tree": tree, "name": p["name"], "text": reply}, db=db)

    n = min(parallel or TOGETHER_MAX, len(waiting))
    if n <= 1:
        for p in waiting:
            store(p, ask(p))
        return
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=n,
                                                 thread_name_prefix="kopt-model")
    first: Optional[BaseException] = None
    try:
        asked = {pool.submit(ask, p): p for p in waiting}
        for f in concurrent.futures.as_completed(asked):
            try:
                reply = f.result()
            except Exception as e:   # noqa: BLE001 (the model's own error, raised below)
                first = first or e
                continue
            try:
                store(asked[f], reply)
            except _lib.KoptError as e:   # a reply the contract refuses: kopt's message
                first = first or e
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    if first is not None:
        if hasattr(first, "add_note"):   # Python 3.11+: which tree keeps what was stored
            first.add_note("kopt: optimize tree %d keeps the replies stored so far "
                           "(kopt optimize --resume %d)" % (tree, tree))
        raise first


def _server_choice(server: Union[None, bool, PathLike], evaluator: Optional[str],
                   options: Dict[str, Any]) -> Union[None, bool, str]:
    """What optimize_step is told about a server: a path or True/False as given; None (the
    default) means its own server ("own") when the evaluator is live, no gpus are given
    and $KOPT_SERVER is not set, else nothing (optimize_step then uses $KOPT_SERVER when a
    server answers there)."""
    if server is None:
        env = os.environ.get("KOPT_SERVER", "")
        live = evaluator in (None, "live")
        return "own" if live and not options.get("gpus") and env in ("", "0") else None
    if isinstance(server, bool):
        return server
    if isinstance(server, (str, os.PathLike)) and os.fspath(server):
        return os.fspath(server)
    raise _lib.KoptError("arguments.server: want None, True, False or a kopt serve socket's "
                         "path (got %r)" % (server,), "invalid input")


def _problem_file(p: PathLike) -> str:
    p = os.fspath(p)
    return os.path.realpath(os.path.join(p, "problem.json") if os.path.isdir(p) else p)


def _resumed(tree: int, problem: Optional[PathLike], started: Dict[str, Any],
             db: str) -> Dict[str, Any]:
    """The stored tree to go on with (optimize_tree's document); refused when an option only
    a new tree takes is given, or `problem` is another problem than the tree's."""
    given = sorted(k for k, v in started.items() if v is not None)
    if given:
        raise _lib.KoptError("resume: %s: set when a tree starts; tree %d keeps its own "
                             "(with resume give model, iterations, device, gpus, parallel, "
                             "server, no_profile)" % (", ".join(given), tree), "invalid input")
    doc = _lib.call("optimize_tree", {"tree": tree}, db=db)
    stored = doc.get("problem_path") or ""
    if problem is not None and os.path.exists(stored) and \
            _problem_file(problem) != _problem_file(stored):
        raise _lib.KoptError("resume: tree %d searches problem %s (%s), not %s"
                             % (tree, doc.get("problem"), stored, os.fspath(problem)),
                             "invalid input")
    return doc


def _optimize_whole(problem: Optional[PathLike], model: Model, cli: Dict[str, Any],
                    server: Union[None, bool, PathLike], resume: Optional[int], db: str,
                    progress: Optional[_lib.ProgressCallback]) -> Document:
    """optimize(..., overlap=True): the whole search as one `kopt optimize --overlap` process
    whose model is `model`, reached through the relay (python/kopt/_relay.py)."""
    from ._relay import Relay
    from ._serve import kopt_program
    proc: Optional[subprocess.Popen] = None
    guard = _lib.ProgressGuard(progress)

    def stop_search(_e: BaseException) -> None:   # the model raised: end after this step
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)

    relay = Relay(lambda name, role, text: model(Prompt(name, role, text)), stop_search)
    try:
        argv = [kopt_program(), "optimize"] + ([os.fspath(problem)] if resume is None else
                                    ["--resume", str(resume)])
        argv += ["--overlap", "--json", "--db", db, "--llm", relay.command(),
                 "--llm-timeout", "86400", "--llm-retries", "0"] + (["-v"] if progress else [])
        for k, v in cli.items():
            if v is None or v is False:
                continue
            flag = "--" + k.replace("_", "-")
            argv += [flag] if v is True else [flag, str(v)]
        env = dict(os.environ)
        if server is False:
            env.pop("KOPT_SERVER", None)
        elif server is True:
            argv.append("--server")
        elif server is not None:
            argv.append("--server=" + os.fspath(server))
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        err: List[str] = []

        def read_err() -> None:   # drained to the end, whatever the callback does
            for raw in proc.stderr:
                line = raw.decode("utf-8", "replace").rstrip("\n")
                err.append(line)
                guard(_lib.Progress(0, 0, line))

        reader = threading.Thread(target=read_err, name="kopt-optimize-stderr", daemon=True)
        reader.start()
        try:
            out = proc.stdout.read()
            proc.wait()
        except KeyboardInterrupt:   # the search ends after its current evaluation
            proc.send_signal(signal.SIGINT)
            proc.wait()
            raise
        reader.join()
    finally:
        relay.close()
    try:
        doc = json.loads(out.decode("utf-8")) if out.strip() else None
    except ValueError:
        doc = None
    tree = (doc or {}).get("tree_id")
    if relay.error is None:
        guard.raise_error()
    if relay.error is not None:
        if hasattr(relay.error, "add_note") and tree:
            relay.error.add_note("kopt: optimize tree %d keeps what was done (kopt.optimize("
                                 "None, model, resume=%d)" % (tree, tree))
        raise relay.error
    if proc.returncode != 0 or not isinstance(doc, dict):
        said = [l for l in err if l and not l.startswith(("iter ", " ", "usage:"))]
        raise _lib.KoptError("kopt optimize exited with %d: %s" % (
            proc.returncode, " | ".join(said[:3] or err[-3:]) or "it printed nothing"),
            "invalid input" if proc.returncode == 2 else "error")
    return Document(doc)


def optimize(problem: Optional[PathLike], model: Model, *, search: Optional[str] = None,
             iterations: Optional[int] = None, proposals: Optional[int] = None,
             evaluator: Optional[str] = None, workdir: Optional[str] = None,
             device: Optional[int] = None, max_rounds: int = 1000,
             parallel: Optional[int] = None, server: Union[None, bool, PathLike] = None,
             no_profile: bool = False, resume: Optional[int] = None, db: str = DEFAULT_DB,
             progress: Optional[_lib.ProgressCallback] = None, overlap: bool = False,
             **options: Any) -> Document:
    """Search for a faster kernel (`kopt optimize`) with a Python callable as the model: it
    is given each Prompt (the planner/coder/debugger prompts kopt writes) and returns the
    reply text, as the command backend's program would. The tree is stored in `db`. Other
    options are optimize_start's (docs/mcp.md): debug_attempts, no_tune, tune_budget,
    no_memory, objective, fake_ref_ms, start, gpus (the tree as wide as its GPUs; every
    step evaluates on them).
    `resume`: a stored tree's id: go on with it (its prompts still waiting are asked first;
    `problem` may be None, else it must be the tree's); `iterations` then sets its budget.
    Options only a new tree takes (search, proposals, evaluator, workdir, start, ...) are
    refused with it. Also `kopt optimize --resume TREE` goes on with the tree.
    A round's prompts are independent; `model` is called for them from several threads at
    once, as the CLI asks a step's requests together: all of them (at most 16) unless
    `parallel` (kopt optimize's --llm-parallel) caps it; parallel=1 calls it one prompt at a
    time. Each reply is stored as it comes; when a call raises, the others' replies are
    still stored, then the first error is raised.
    Each step is its own kopt optimize --resume; `server` says where its candidates are
    evaluated. None (default): in a kopt serve started for this call (private socket, its
    log serve.log in the tree's folder, ended when the call ends), which keeps the
    reference's workers, run and outputs between steps; not when the evaluator is fake,
    with gpus, or when $KOPT_SERVER is set (then used where a server answers). A server that
    ended between steps (its idle exit after 15 minutes without a request, while the model
    thought) is started again; if it cannot start, a RuntimeWarning says why and every step
    evaluates in this process. True or a socket path: a running kopt serve (kopt optimize
    --server). False: in this process. `no_profile`: correct candidates are not profiled
    (--no-profile: faster steps, no class or advice for the planner). `progress`: called
    with each kopt.Progress: the search's lines (as kopt optimize prints them) and, before
    each round, how many prompts go to the model; e.g. progress=print.
    `overlap=True`: the whole search as one kopt optimize --overlap process, which asks the
    model for the next step while this step's candidates are evaluated (on one GPU 1.8x the
    expansions per minute of a plain search, docs/scale.md); `model` is called through a
    relay (a Unix socket of this process; the command backend runs a small program per
    request, python/kopt/_relay.py), from several threads at once (`parallel` caps them:
    --llm-parallel). The options go to kopt optimize as its flags (no_tune: --no-tune);
    progress gets its stderr lines. A model that raises ends the search after its current
    step; its error is raised with a note naming the tree.
    Returns the tree's last step (best node, stats)."""
    if parallel is not None and (isinstance(parallel, bool) or not isinstance(parallel, int)
                                 or parallel < 1):
        raise _lib.KoptError("arguments.parallel: a whole number, 1 or more (got %r)"
                             % (parallel,), "invalid input")
    if problem is None and resume is None:
        raise _lib.KoptError("problem: required (or resume: a stored tree's id)",
                             "invalid input")
    gpus = options.get("gpus")
    if overlap:
        cli = {"search": search, "iterations": iterations, "proposals": proposals,
               "evaluator": evaluator, "workdir": workdir, "device": device,
               "llm_parallel": parallel, "no_profile": no_profile, **options}
        return _optimize_whole(problem, model, cli, server, resume, db, progress)
    if resume is not None:
        started = {"search": search, "proposals": proposals, "evaluator": evaluator,
                   "workdir": workdir, **{k: v for k, v in options.items() if k != "gpus"}}
        start = _resumed(resume, problem, started, db)
        evaluator = (start.get("options") or {}).get("evaluator")
    else:
        args = {"problem": os.fspath(problem), "search": search, "iterations": iterations,
                "proposals": proposals, "evaluator": evaluator, "workdir": workdir,
                "device": device, **options}
        start = _lib.call("optimize_start", args, db=db)
    tree = start["tree_id"]
    choice = _server_choice(server, evaluator, options)
    with contextlib.ExitStack() as stack:
        own = stack.enter_context(own_server(device, start.get("workdir") or
                                             (start.get("options") or {}).get("workdir"))) \
            if choice == "own" else None
        step = {"tree": tree, "device": device, "gpus": gpus, "server": choice,
                "no_profile": no_profile or None,
                "iterations": iterations if resume is not None else None}
        last: Dict[str, Any] = start
        guard = _lib.ProgressGuard(progress)   # one for the whole search, raised at its end
        for _ in range(max_rounds):   # a resumed tree's step gives its waiting prompts
            if own is not None:   # a live server (started again if it ended), else here
                step["server"] = own.socket() or False
            last = _lib.call("optimize_step", step, db=db, progress=guard if progress else None)
            waiting = _lib.call("optimize_prompts", {"tree": tree}, db=db).get("prompts") or []
            if not waiting:
                break
            roles = sorted({p.get("role", "") for p in waiting})
            guard(_lib.Progress(0, 0, "tree %d: asking the model %d prompt(s) (%s)"
                                % (tree, len(waiting), ", ".join(roles))))
            _answer_round(tree, waiting, model, parallel, db)
    guard.raise_error()
    last.setdefault("tree_id", tree)
    return Document(last)


def bench(problems: Optional[PathLike] = None, candidates: Optional[PathLike] = None, *,
          kind: Optional[str] = None, no_compile: bool = False, no_check_sizes: bool = False,
          resume: Optional[int] = None, trials: Optional[int] = None,
          budget_ms: Optional[float] = None, precision: Optional[float] = None,
          reps: Optional[str] = None, no_flush: bool = False, timeout: Optional[float] = None,
          device: Optional[int] = None, arch: Optional[str] = None,
          gpus: Optional[str] = None, db: Optional[str] = DEFAULT_DB,
          progress: Optional[_lib.ProgressCallback] = None) -> Document:
    """A KernelBench suite, as `kopt bench PROBLEMS --candidates DIR --json` (the MCP tool
    bench in-process): every problem folder under `problems` evaluated with its candidate
    from `candidates` (NAME.cu, or a NAME.py ModelNew) against PyTorch eager and
    torch.compile; per-problem verdicts and speedups, fast_p, geometric means. Every row is
    stored in `db` as it finishes; `resume` (a suite's id) continues a stored suite (no
    folders then). The options are kopt bench's flags: kind (auto, cu, py, reference),
    no_compile, no_check_sizes, trials, budget_ms, precision (percent), reps ("MIN:MAX"),
    no_flush, timeout (s), device, arch, gpus ("all" or "0,2,5"). Ctrl-C stops after the
    current evaluation (the rows so far stay stored: resume) and raises KeyboardInterrupt.
    `progress`: called with each kopt.Progress: each line of kopt bench's text (its head,
    each row as it finishes, the metrics)."""
    args = {"problems": os.fspath(problems) if problems is not None else None,
            "candidates": os.fspath(candidates) if candidates is not None else None,
            "kind": kind, "no_compile": no_compile or None,
            "no_check_sizes": no_check_sizes or None, "resume": resume, "trials": trials,
            "budget_ms": budget_ms, "precision": precision, "reps": reps,
            "no_flush": no_flush or None, "timeout": timeout, "device": device, "arch": arch,
            "gpus": gpus}
    return Document(_lib.call("bench", args, db=db, progress=progress))


def version() -> str:
    """libkopt's version (kopt --version's)."""
    return _lib.lib().version


def run_cli(argv: List[str]) -> int:
    """The kopt program of this package with `argv` (its exit code)."""
    from ._programs import program
    return subprocess.call([program("kopt")] + list(argv), stdout=sys.stdout, stderr=sys.stderr)
