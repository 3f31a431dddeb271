"""Distributed launcher output: torchrun / ``torch.distributed.elastic`` failure summaries and agent lines, and the
DeepSpeed launcher (``deepspeed/launcher/runner.py`` and ``launch.py``) lines.

What is read:

- torchrun's ``ChildFailedError`` summary (the format of "torch.distributed.elastic Error Propagation",
  https://pytorch.org/docs/stable/elastic/errors.html): ``Failures:`` and ``Root Cause (first observed failure):``
  entries with ``time``, ``host``, ``rank (local_rank)``, ``exitcode (pid)``, ``error_file`` and ``traceback``;
- the elastic agent's lines: ``failed (exitcode: N) local_rank: R (pid: P) of binary: ...``, ``Sending process P
  closing signal SIGTERM``, ``worker group successfully finished`` / ``Local worker group finished
  (WorkerState.SUCCEEDED)``, the launch configs (``min_nodes``, ``max_nodes``, ``nproc_per_node``) and the
  ``Setting OMP_NUM_THREADS`` start-up warning;
- DeepSpeed's launcher: ``Unable to find hostfile``, ``WORLD INFO DICT``, ``nnodes=, num_local_procs=, node_rank=``,
  ``dist_world_size=``, ``Setting CUDA_VISIBLE_DEVICES=``, ``Process P exits successfully.``, ``Killing subprocess
  P`` and ``[...] exits with return code = N``.

A negative exit code is the signal that ended the process (Python's ``subprocess.Popen.returncode``: "A negative
value -N indicates that the child was terminated by signal N (POSIX only)"). Pure, never raises.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wizard.common import to_int, sat_int
from wizard.parsers._frozen import build_set as _set
from wizard.common import lazy_re


@dataclass(frozen=True)
class RankExit:
    """One rank (or process) that ended with a non-zero code.

    ``exitcode`` < 0 is a signal (-9 = SIGKILL). ``rank``/``local_rank``/``host`` are None/"" when the line does
    not say. ``traceback`` is the summary's traceback field ("Signal 9 (SIGKILL) received by PID ..." or the
    hint "To enable traceback see: ..."); ``root_cause`` marks the "Root Cause (first observed failure)" entry.
    """

    exitcode: int
    rank: int | None = None
    local_rank: int | None = None
    host: str = ""
    time: str = ""
    error_file: str = ""
    traceback: str = ""
    root_cause: bool = False
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class LauncherLog:
    """What a launcher paste shows. ``tool`` is "torchrun", "deepspeed" or "" (not a launcher output)."""

    tool: str = ""
    exits: list[RankExit] = field(default_factory=list)
    """From the ChildFailedError summary; else the agent's ``failed (exitcode: ...)`` lines; else DeepSpeed's
    ``exits with return code`` lines."""
    succeeded: list[str] = field(default_factory=list)
    """Lines that prove processes ended well: DeepSpeed ``Process P exits successfully.``, torchrun ``worker group
    successfully finished`` / ``(WorkerState.SUCCEEDED)`` (one per agent, i.e. per node)."""
    agents_succeeded: int = 0
    processes_succeeded: int = 0
    sigterm_sent: list[str] = field(default_factory=list)
    nnodes: int | None = None
    procs_per_node: int | None = None
    world_size: int | None = None
    visible_devices: str = ""
    no_hostfile: bool = False
    plan: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    """Python exception lines of the ranks' own tracebacks in the paste (``NameError: ...``), not the launcher's
    ChildFailedError."""
    has_summary: bool = False
    rendezvous_errors: list[str] = field(default_factory=list)
    """The elastic agent's rendezvous failing (``RendezvousConnectionError``, ``RendezvousTimeoutError``,
    ``DistNetworkError``/``DistStoreError``, c10d's "The client socket has timed out after Ns while trying to connect to
    HOST:PORT"): the ranks never met."""
    rendezvous_endpoint: str = ""
    port_in_use: int | None = None
    """The TCP port the rendezvous store could not listen on because another process holds it (c10d's "The server
    socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use)"; EADDRINUSE, bind(2))."""
    problems: list[str] = field(default_factory=list)


_CHILD_FAILED = lazy_re(r"torch\.distributed\.elastic\.multiprocessing\.errors\.ChildFailedError")
_ROOT = lazy_re(r"Root Cause \(first observed failure\)")
_ENTRY = lazy_re(r"^\s*\[(\d+)\]:\s*$")
_FIELD = lazy_re(r"^\s*(time|host|rank|exitcode|error_file|traceback)\s*:\s*(.*?)\s*$")
_RANK = lazy_re(r"^(-?\d+)\s*\(local_rank:\s*(-?\d+)\)")
_EXITCODE = lazy_re(r"^(-?\d+)")
_AGENT_FAILED = lazy_re(r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: \d+\)")
_SIGTERM_SENT = lazy_re(r"Sending process \d+ closing signal SIG\w+"  # torchrun's agent
                          r"|multiprocessing/spawn\.py:\d+\] Terminating process \d+ via signal SIG\w+")
"""The launcher stopping its other workers: torchrun's elastic agent, and torch.multiprocessing.spawn's
ProcessContext.join (torch/multiprocessing/spawn.py) once one process has exited with an error."""
_AGENT_OK = lazy_re(r"worker group successfully finished|Local worker group finished \((?:WorkerState\.)?SUCCEEDED\)")
_LAUNCH_CFG = lazy_re(r"launcher\.api: \[INFO\]\s+(min_nodes|max_nodes|nproc_per_node)\s*:\s*(\d+)"
                         r"|launcher\.api:(?:\[INFO\])?\s+(min_nodes|max_nodes|nproc_per_node)\s*:\s*(\d+)")
_WORKER_EVENT_OK = lazy_re(r'"name": "torchelastic\.worker\.status\.SUCCEEDED", "source": "WORKER"')
_OMP = lazy_re(r"Setting OMP_NUM_THREADS environment variable for each process")
_DS_TAG = lazy_re(r"\[(?:launch|runner)\.py:\d+:\w+\]")
_DS_OK = lazy_re(r"\[launch\.py:\d+:\w+\] Process \d+ exits successfully")
_DS_RC = lazy_re(r"exits with return code = (-?\d+)")
_DS_LOCAL_RANK = lazy_re(r"--local_rank=(\d+)")
_DS_KILL = lazy_re(r"\[launch\.py:\d+:sigkill_handler\] Killing subprocess \d+")
_DS_NNODES = lazy_re(r"nnodes=(\d+), num_local_procs=(\d+), node_rank=(\d+)")
_DS_WORLD = lazy_re(r"dist_world_size=(\d+)")
_DS_CVD = lazy_re(r"Setting CUDA_VISIBLE_DEVICES=([\d,]*)")
_DS_WORLD_INFO = lazy_re(r"WORLD INFO DICT: (\{.*\})")
_NO_HOSTFILE = lazy_re(r"Unable to find hostfile, will proceed with training with local resources only")
_EXC = lazy_re(r"^([A-Za-z_][\w.]*(?:Error|Exception|Interrupt)): ?(.*)$")
_RDZV = lazy_re(r"\b(?:Rendezvous(?:Connection|Timeout|Closed)Error|DistNetworkError|DistStoreError)\b"
                r"|\[c10d\][^\n]*(?:socket has timed out|[Cc]onnection refused|failed to connect)"
                r"|server socket has failed to (?:listen|bind)|connect\(\) timed out\. Original timeout was")
"""torch.distributed.elastic.rendezvous.api's errors, torch.distributed's store/network errors, and c10d's socket
lines (torch/csrc/distributed/c10d/socket.cpp)."""
_IN_USE = lazy_re(r"failed to bind to \S*?:(\d{1,5})\b[^\n]*(?:errno: 98|Address already in use)")
_RDZV_TO = lazy_re(r"(?:trying to connect to|connect to)\s+\(?([\w.:\[\]-]+?:\d{1,5})\)?")


def _summary(lines: list[str], log: LauncherLog) -> None:
    cur: dict[str, object] | None = None
    root = False
    entries: list[dict[str, object]] = []
    for raw in lines:
        if _ROOT.search(raw):
            root = True
            continue
        if _ENTRY.match(raw):
            cur = {"root": root, "lines": [raw.rstrip()]}
            entries.append(cur)
            continue
        m = _FIELD.match(raw)
        if m and (cur is None or m.group(1) in cur):
            # an excerpt that starts inside an entry, or an entry whose "[N]:" line was cut (a field repeats)
            cur = {"root": root, "lines": []}
            entries.append(cur)
        if m and cur is not None:
            cur[m.group(1)] = m.group(2)
            lines_l = cur["lines"]
            if isinstance(lines_l, list):
                lines_l.append(raw.rstrip())
    for e in entries:
        mcode = _EXITCODE.match(str(e.get("exitcode", "")))
        if not mcode:
            continue
        code = sat_int(mcode.group(1))
        rm = _RANK.match(str(e.get("rank", "")))
        lines_e = e.get("lines", [])
        log.exits.append(RankExit(
            exitcode=code, rank=to_int(rm.group(1)) if rm else None, local_rank=to_int(rm.group(2)) if rm else None,
            host=str(e.get("host", "")), time=str(e.get("time", "")), error_file=str(e.get("error_file", "")),
            traceback=str(e.get("traceback", "")), root_cause=bool(e.get("root")),
            lines=tuple(lines_e) if isinstance(lines_e, list) else ()))


def parse_launcher(text: str) -> LauncherLog:
    """Read a launcher paste; never raises (unreadable text gives ``tool == ""``)."""
    log = LauncherLog()
    try:
        _parse(text, log)
    except Exception as e:  # noqa: BLE001 - a parser never raises
        log.problems.append(f"unreadable launcher output: {type(e).__name__}")
    return log


def _parse(text: str, log: LauncherLog) -> None:
    lines = text.splitlines()
    torch_seen = False
    ds_seen = False
    if _CHILD_FAILED.search(text) or _ROOT.search(text) or any(_FIELD.match(ln) for ln in lines):
        _summary(lines, log)
        _set(log, "has_summary", bool(log.exits) or bool(_CHILD_FAILED.search(text)))
        torch_seen = torch_seen or log.has_summary
    agent_exits: list[RankExit] = []
    ds_exits: list[RankExit] = []
    cfg: dict[str, int] = {}
    in_rank_tb = False
    for raw in lines:
        ln = raw.rstrip()
        m = _AGENT_FAILED.search(ln)
        if m:
            torch_seen = True
            agent_exits.append(RankExit(sat_int(m.group(1)), local_rank=sat_int(m.group(2)), lines=(ln,)))
            continue
        if _SIGTERM_SENT.search(ln):
            torch_seen = True
            log.sigterm_sent.append(ln)
            continue
        if _AGENT_OK.search(ln):
            torch_seen = True
            log.succeeded.append(ln)
            if "Local worker group finished" in ln:
                _set(log, "agents_succeeded", log.agents_succeeded + 1)
            continue
        if _WORKER_EVENT_OK.search(ln):
            torch_seen = True
            _set(log, "processes_succeeded", log.processes_succeeded + 1)
            continue
        m = _LAUNCH_CFG.search(ln)
        if m:
            torch_seen = True
            cfg[m.group(1) or m.group(3)] = sat_int(m.group(2) or m.group(4))
            log.plan.append(ln)
            continue
        if _OMP.search(ln):
            torch_seen = True
            log.plan.append(ln)
            continue
        if _DS_OK.search(ln):
            ds_seen = True
            log.succeeded.append(ln)
            _set(log, "processes_succeeded", log.processes_succeeded + 1)
            continue
        m = _DS_RC.search(ln)
        if m and (_DS_TAG.search(ln) or "sigkill_handler" in ln):
            ds_seen = True
            lr = _DS_LOCAL_RANK.search(ln)
            ds_exits.append(RankExit(sat_int(m.group(1)), local_rank=sat_int(lr.group(1)) if lr else None, lines=(ln,)))
            continue
        if _DS_KILL.search(ln):
            ds_seen = True
            continue
        m = _DS_NNODES.search(ln)
        if m:
            ds_seen = True
            _set(log, "nnodes", sat_int(m.group(1)))
            _set(log, "procs_per_node", sat_int(m.group(2)))
            log.plan.append(ln)
            continue
        m = _DS_WORLD.search(ln)
        if m and _DS_TAG.search(ln):
            ds_seen = True
            _set(log, "world_size", sat_int(m.group(1)))
            log.plan.append(ln)
            continue
        m = _DS_CVD.search(ln)
        if m and _DS_TAG.search(ln):
            ds_seen = True
            _set(log, "visible_devices", m.group(1))
            log.plan.append(ln)
            continue
        if _DS_WORLD_INFO.search(ln):
            ds_seen = True
            log.plan.append(ln)
            continue
        if _NO_HOSTFILE.search(ln):
            ds_seen = True
            _set(log, "no_hostfile", True)
            log.plan.append(ln)
            continue
        if _RDZV.search(ln):
            torch_seen = True
            log.rendezvous_errors.append(ln.strip())
            m = _IN_USE.search(ln)
            if m and log.port_in_use is None:
                _set(log, "port_in_use", sat_int(m.group(1)))
            m = _RDZV_TO.search(ln)
            if m and not log.rendezvous_endpoint:
                _set(log, "rendezvous_endpoint", m.group(1))
            continue
        if ln.startswith("Traceback (most recent call last)"):
            in_rank_tb = True
            continue
        m = _EXC.match(ln)
        if m and in_rank_tb:
            in_rank_tb = False
            if "ChildFailedError" not in m.group(1):
                log.exceptions.append(ln)
    if not log.exits:
        log.exits.extend(agent_exits or ds_exits)
    if "min_nodes" in cfg and cfg.get("min_nodes") == cfg.get("max_nodes"):
        _set(log, "nnodes", cfg["min_nodes"])
    if "nproc_per_node" in cfg:
        _set(log, "procs_per_node", cfg["nproc_per_node"])
    if log.world_size is None and log.nnodes and log.procs_per_node and "nproc_per_node" in cfg:
        _set(log, "world_size", log.nnodes * log.procs_per_node)
    _set(log, "tool", "deepspeed" if ds_seen and not torch_seen else "torchrun" if torch_seen else "")
    if ds_seen and torch_seen:
        _set(log, "tool", "torchrun" if log.has_summary else "deepspeed")


DATALOADER_BUS_ERROR = lazy_re(r"DataLoader worker \(pid:? ?\d+\) is killed by signal: Bus error"
                                  r"|Unexpected bus error encountered in worker")
"""PyTorch's DataLoader when a worker process died of SIGBUS (torch/utils/data/_utils/signal_handling.py: "This might be
caused by insufficient shared memory (shm)")."""


def detect_launcher(text: str) -> float:
    """Confidence that ``text`` is launcher output (torchrun/elastic or DeepSpeed's launcher). A ChildFailedError
    summary scores below the kinds that judge a specific error (a CUDA or NCCL error in the same paste says more)."""
    if _ROOT.search(text) or _CHILD_FAILED.search(text):
        return 0.75
    if _AGENT_FAILED.search(text) or _SIGTERM_SENT.search(text) or _RDZV.search(text):
        return 0.7
    lines = text.splitlines()
    fields = sum(1 for ln in lines if _FIELD.match(ln))
    if fields >= 3 and re.search(r"^[ \t]*exitcode\s*:\s*-?\d+ \(pid: \d+\)", text, re.M):
        return 0.7
    if _DS_TAG.search(text) and (_DS_OK.search(text) or _DS_RC.search(text) or _DS_NNODES.search(text)
                                 or _DS_WORLD.search(text) or _DS_WORLD_INFO.search(text) or _NO_HOSTFILE.search(text)
                                 or _DS_KILL.search(text)):
        return 0.7
    if _AGENT_OK.search(text) or _LAUNCH_CFG.search(text) or DATALOADER_BUS_ERROR.search(text):
        return 0.7
    if _OMP.search(text) and "torch.distributed" in text:
        return 0.5
    return 0.0


# ------------------------------------------------------------------ a training job's step log


@dataclass(frozen=True)
class TrainingLog:
    """The step lines of a training job's log (torchtitan "step: 10 loss: 10.24 ... tps: 5,615", Megatron-DeepSpeed
    "iteration 34/ 10000 | ... lm_loss: 1.118E+01 | number of nan iterations: 0", DeepSpeed "step=40, skipped=2" /
    "SamplesPerSec=83.5", torchtune "1|2|Loss: 2.76"): ``steps`` (step, loss or None, line) in order, ``nan_lines``
    (a NaN/inf loss, or Megatron's nan-iteration count above 0), ``rates`` (throughput words as printed)."""

    steps: list[tuple[int, float | None, str]] = field(default_factory=list)
    nan_lines: list[str] = field(default_factory=list)
    rates: list[str] = field(default_factory=list)
    overflows: list[tuple[float, float, str]] = field(default_factory=list)
    """fp16 dynamic loss scaling skipping a step: (scale attempted, scale reduced to, line) (DeepSpeed's loss_scaler.py
    and stage2.py "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 64, reducing to 32")."""


_TL_STEP = lazy_re(r"\bstep[=:]\s*(\d{1,9})\b|\biteration\s+(\d{1,9})\s*/|\bglobal_step=(\d{1,9})|(?:^|[|:\s])\d{1,5}\|(\d{1,9})\|Loss:"
                   r"|timer\.py:\d+:stop\] \d+/(\d{1,9}),"
                   # "iter=150 loss=0.237" (ezpz, held-out round 331); a tqdm progress bar with the loss in its postfix
                   # (PyTorch Lightning: "| 4/32 [00:02<00:16,  1.72it/s, loss=4.28, ...]")
                   r"|\biter[=:]\s*(\d{1,9})\b|\|\s*(\d{1,9})/\d{1,9} \[[\d:<?]+,\s+[\d.]+(?:it/s|s/it)"
                   # NeMo/Lightning's "| global_step: 3 |", NeMo AutoModel's "| step 8 | epoch 0 | loss 0.78 |"
                   # (held-out round 351)
                   r"|\bglobal_step:\s*(\d{1,9})\b|\bstep\s+(\d{1,9})\s+\|"
                   # fairseq's train_inner lines: "epoch 001:    100 / 167138 loss=15.073, ..., num_updates=100, ..."
                   r"|\bnum_updates=(\d{1,9})\b"
                   # nanoGPT's "iter 1631: loss 4.0863, time 561.94ms", litgpt's "iter 76 step 38: loss 10.8259";
                   # "step 00000001/00000015 | ..."; TensorFlow's "loss = 9.66, step = 0" (held-out rounds 368/370)
                   r"|\biter\s+(\d{1,9})(?:\s+step\s+\d{1,9})?:\s|\bstep\s+(\d{1,9})/\d{1,9}\b|\bstep\s+=\s+(\d{1,9})\b", re.I)
_TL_LOSS = lazy_re(r"(?:\b(?:lm[_ ])?|(?<=_))loss(?:\s*[=:]\s*|\s+)([-+]?(?:\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|nan|inf))\b",
                   re.I)
"""The loss a step line prints: "loss: 7.12", "lm loss: 2.23E+00", "loss=4.3", "loss 0.78 |", NeMo's
"reduced_train_loss: 9.76", modded-nanogpt's "val_loss:3.28"."""
_TL_NAN_ITERS = lazy_re(r"number of nan iterations:\s*([1-9]\d*)")
_TL_RATE = lazy_re(r"(?:tps:\s*[\d,]+|tflops:\s*[\d.]+|[\d.]+\s*TFLOPS|SamplesPerSec=[\d.]+|samples/sec[:=]\s*[\d.]+|"
                   r"[\d.]+s/it|[\d.]+it/s|mfu:?\s*[\d.]+%|tps\s+[\d,.]+|TFLOP/s/GPU\):\s*[\d.]+|step_avg:\s*[\d.]+ms|\bwps=[\d.]+|"
                   r"\b(?:iter )?time:?\s+[\d.]+ms|tokens-per-second\s+[\d,]+|global_step/sec:\s*[\d.]+|"
                   r"elapsed time per iteration \(ms\):\s*[\d.]+)", re.I)
_TL_GRAD_NAN = lazy_re(r"\bgrad(?:ient)?[ _-]?norm\s*[:=]?\s*(?:nan|inf)\b", re.I)
_TL_OVERFLOW = lazy_re(r"\bOVERFLOW! Rank \d+ Skipping step\. Attempted loss scale: ([\d.]+), reducing to ([\d.]+)")


def parse_training_log(text: str) -> TrainingLog:
    """Read a training job's step lines (see :class:`TrainingLog`); never raises."""
    t = TrainingLog()
    for raw in text.splitlines()[:50000]:
        s = raw.strip()
        o = _TL_OVERFLOW.search(s)
        if o:
            t.overflows.append((float(o.group(1)), float(o.group(2)), s))
        m = _TL_STEP.search(s)
        if _TL_GRAD_NAN.search(s):  # Megatron's "grad norm: nan" on a step line, or its own warning line
            t.nan_lines.append(s)
        if not m:
            continue
        step = sat_int(next(g for g in m.groups() if g))
        lm = _TL_LOSS.search(s)
        loss: float | None = None
        if lm:
            try:
                loss = float(lm.group(1))
            except ValueError:
                loss = None
            if lm.group(1).lower() in ("nan", "inf", "+inf", "-inf") or (loss is not None and loss != loss):
                t.nan_lines.append(s)
        if _TL_NAN_ITERS.search(s):
            t.nan_lines.append(s)
        if not lm and not _TL_RATE.search(s) and "skipped=" not in s:
            continue
        t.steps.append((step, loss, s))
        t.rates.extend(r.group(0) for r in _TL_RATE.finditer(s))
    return t


def detect_training_log(text: str) -> float:
    """0.6 for a training job's log with two or more step lines carrying a loss or a throughput (below the kinds that
    judge an error in the same paste)."""
    head = text[:400_000]
    low = head.lower()
    if not any(w in low for w in ("step", "iteration", "loss:", "timer.py", "num_updates=", "iter ", "overflow!")):
        return 0.0
    t = parse_training_log("\n".join(head.splitlines()[:2000]))
    if len({s for s, _, _ in t.steps}) >= 2 or len(t.overflows) >= 2:
        return 0.6
    # one step line past the first with its loss: the loop ran up to it (a log cut to the line that matters)
    return 0.5 if any(s >= 2 and loss is not None for s, loss, _ in t.steps) else 0.0
