"""Prometheus metrics of a check, for node-exporter's textfile collector (``bringup check --prometheus FILE``).

One file per check, in the Prometheus text format, written through the ``prometheus_client`` library
(:func:`prometheus_client.write_to_textfile`: the text goes to ``FILE.<pid>.<thread>`` in the same directory, then
``rename(2)`` puts it in place, so the collector, which reads only ``*.prom`` files, sees the old file or the new one,
never half of one). The file is made mode 0644 whatever bringup's private umask: node-exporter runs as another user
(Debian's package: ``prometheus``) and must read it; it holds what the exporter serves anyway.

What it holds (every series has a ``node`` label: this host's name, or the capture bundle's host with
``--snapshot``):

- ``bringup_check{id,step,node}``: each finding id of the check, valued by :data:`VERDICT_CODE` (0 pass, 1 warn,
  2 fail, 3 unknown, 4 skip); several findings with the same id and step: the worst of them
  (:func:`wizard.model.worst`: fail > warn > unknown > pass > skip). The codes name verdicts, they are not a
  severity scale (unknown is 3, fail 2): alert on ``== 2``, not on a maximum.
- ``bringup_findings{verdict,node}``: how many findings had each verdict (all five, zeros included).
- ``bringup_check_timestamp_seconds``, ``bringup_check_duration_seconds``, ``bringup_info{version,source}``.
- the newest validation figures the build's store holds (:func:`validation_figures`, read with
  :func:`wizard.report.validation_doc`, never re-parsed from logs), in base units: GEMM FLOP/s per device,
  all-reduce bus bandwidth in bytes/s at the sweep's largest message (and that size), host-to-device copy
  bytes/s per device, a soak's (``node.soak``) last-interval GEMM FLOP/s per device and all-reduce bus bandwidth
  (``bringup_validation_soak_*``), and when that run started; each with ``step`` and ``device_type`` (``gpu`` or ``cpu``: a
  CPU run's figures prove the software path, they are never GPU figures). A ``--snapshot`` check has none: a
  capture bundle holds no validation run.
"""

from __future__ import annotations

import datetime as _dt
import errno
import math
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from wizard import __version__
from wizard.fileedit import refuse_non_regular
from wizard.model import Finding, Verdict, worst
from wizard.store import ActionRun

VERDICT_CODE = {Verdict.PASS: 0, Verdict.WARN: 1, Verdict.FAIL: 2, Verdict.UNKNOWN: 3, Verdict.SKIP: 4}
"""The value of ``bringup_check`` for each verdict (:class:`wizard.model.Verdict`). Codes, not a severity scale."""
CODES_TEXT = ", ".join(f"{c} {v.value}" for v, c in sorted(VERDICT_CODE.items(), key=lambda x: x[1]))

FILE_MODE = 0o644
"""The metrics file's mode: readable by node-exporter's own user."""
GB = 1e9
"""The validation script's GB/s are decimal: 1 GB/s = 1e9 bytes/s (assets/scripts/bringup_validate.py, Units)."""
TERA = 1e12
"""The validation script's TFLOPS: 1 TFLOPS = 1e12 floating-point operations per second."""


class MetricsError(Exception):
    """The metrics file cannot be written (a missing directory, no permission, a full disk) or the build's
    validation results cannot be read; the message says which file and why."""


# ------------------------------------------------------------------ validation figures


@dataclass
class RunFigures:
    """The figures of one validation run (the newest of its step): device_type ``gpu`` or ``cpu``; started_at as
    stored (ISO 8601); gemm_tflops and h2d_gb_s per device (the results table's subject); allreduce: (largest
    message size in bytes, busbw in GB/s) or None; soak_gemm_tflops (per device) and soak_busbw_gb_s: a soak's
    (``node.soak``) last interval."""

    step: str
    run: int
    device_type: str
    started_at: str
    gemm_tflops: dict[str, float] = field(default_factory=dict)
    h2d_gb_s: dict[str, float] = field(default_factory=dict)
    allreduce: tuple[int, float] | None = None
    soak_gemm_tflops: dict[str, float] = field(default_factory=dict)
    soak_busbw_gb_s: float | None = None

    @property
    def empty(self) -> bool:
        return (not self.gemm_tflops and not self.h2d_gb_s and self.allreduce is None and not self.soak_gemm_tflops
                and self.soak_busbw_gb_s is None)


def _number(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def validation_figures(runs: Sequence[ActionRun]) -> list[RunFigures]:
    """For each step, the figures of its newest run that stored any (``runs`` in the store's order, oldest first),
    from the stored results table and series (:func:`wizard.report.validation_doc`): GEMM TFLOPS and pinned
    host-to-device GB/s per device, the all-reduce busbw (GB/s) at the sweep's largest size (bytes), and a soak's
    last-interval GEMM TFLOPS per device and all-reduce busbw (GB/s)."""
    from wizard.report import validation_doc

    out: dict[str, RunFigures] = {}
    for run in reversed(list(runs)):
        if run.step_id in out:
            continue
        doc = validation_doc(run)
        if doc is None:
            continue
        fig = RunFigures(run.step_id, run.id, str(doc["device"]), str(run.started_at or ""))
        for row in doc["rows"]:
            value = _number(row.get("value"))
            device = str(row.get("subject") or "host")
            if value is None:
                continue
            if row.get("test") == "gemm" and row.get("metric") == "tflops":
                fig.gemm_tflops[device] = value
            elif row.get("test") == "h2d" and row.get("metric") == "gb_s":
                fig.h2d_gb_s[device] = value
        points = [(int(s), float(b)) for s, b in doc["series"]["points"] if _number(s) is not None and _number(b) is not None]
        if points:
            fig.allreduce = max(points)  # the largest message size
        for sk in doc.get("soak") or []:  # a soak's series: its last interval, what the machine sustained at the end
            last = _number((sk.get("last") or {}).get("value"))
            if last is None:
                continue
            if sk.get("test") == "soak_gemm" and sk.get("metric") == "tflops":
                fig.soak_gemm_tflops[str(sk.get("subject") or "host")] = last
            elif sk.get("test") == "soak_allreduce" and sk.get("metric") == "busbw_gb_s":
                fig.soak_busbw_gb_s = last
        if not fig.empty:
            out[run.step_id] = fig
    return sorted(out.values(), key=lambda f: f.step)


def build_runs(state_dir: Path) -> list[ActionRun]:
    """The action runs of the newest build under ``state_dir``, read-only (no lock, nothing written); ``[]`` when
    there is no build.

    Raises:
        MetricsError: the build file cannot be read (corrupt, newer, unreadable).
    """
    from wizard.store import Store, StoreError, list_builds

    try:
        builds = list_builds(state_dir)
        if not builds:
            return []
        store = Store.open(builds[-1].db, readonly=True)
        try:
            return store.action_runs()
        finally:
            store.close()
    except (StoreError, OSError) as exc:
        raise MetricsError(f"cannot read the validation results of the build in {state_dir}: {exc}") from None


# ------------------------------------------------------------------ the registry


def _unix(iso: str) -> float | None:
    try:
        t = _dt.datetime.fromisoformat(iso)
    except ValueError:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=_dt.timezone.utc)).timestamp()


def check_registry(findings: Sequence[Finding], node: str, *, finished: float, duration_s: float,
                   source: str = "live", figures: Sequence[RunFigures] = ()) -> Any:
    """A :class:`prometheus_client.CollectorRegistry` holding one check's metrics (the module docstring lists
    them). ``finished``: Unix time (s) the check ended; ``duration_s``: how long it ran (s); ``source``:
    ``live`` or ``snapshot``; ``figures``: :func:`validation_figures`. Each finding's ``step`` labels its series
    (empty when unset)."""
    from prometheus_client import CollectorRegistry, Gauge, Info

    reg = CollectorRegistry()
    check = Gauge("bringup_check", f"Verdict of each finding id of the last bringup check: {CODES_TEXT} (codes, not "
                  "a severity scale). Several findings with the same id: the worst (fail > warn > unknown > pass > "
                  "skip).", ["id", "step", "node"], registry=reg)
    by_id: dict[tuple[str, str], list[Verdict]] = {}
    for f in findings:
        by_id.setdefault((f.id, f.step or ""), []).append(f.verdict)
    for (fid, step), verdicts in sorted(by_id.items()):
        check.labels(id=fid, step=step, node=node).set(VERDICT_CODE[worst(verdicts)])
    counts = Gauge("bringup_findings", "Findings of the last bringup check with each verdict.", ["verdict", "node"],
                   registry=reg)
    for v in VERDICT_CODE:
        counts.labels(verdict=v.value, node=node).set(sum(1 for f in findings if f.verdict is v))
    Gauge("bringup_check_timestamp_seconds", "Unix time the last bringup check finished and wrote these metrics.",
          ["node"], registry=reg).labels(node=node).set(finished)
    Gauge("bringup_check_duration_seconds", "Seconds the last bringup check command ran: start-up, probes and rules.",
          ["node"], registry=reg).labels(node=node).set(duration_s)
    Info("bringup", "The bringup that wrote these metrics; source: live (this host) or snapshot (a capture bundle).",
         ["node"], registry=reg).labels(node=node).info({"version": __version__, "source": source})
    if figures:
        _validation_gauges(reg, node, figures)
    return reg


def _validation_gauges(reg: Any, node: str, figures: Sequence[RunFigures]) -> None:
    from prometheus_client import Gauge

    of_run = "in the step's newest validation run that stored figures"
    cpu = "device_type cpu: a run on the CPU, never a GPU figure"
    run_labels = ["node", "step", "device_type"]
    dev_labels = ["node", "step", "device", "device_type"]
    made: dict[str, Any] = {}

    def gauge(name: str, text: str, labels: list[str]) -> Any:
        if name not in made:  # only the figures some run has: no empty families
            made[name] = Gauge(name, text, labels, registry=reg)
        return made[name]

    for fig in figures:
        labels = {"node": node, "step": fig.step, "device_type": fig.device_type}
        started = _unix(fig.started_at)
        if started is not None:
            gauge("bringup_validation_timestamp_seconds", "Unix time the validation run whose figures are exported "
                  f"for the step started: the step's newest run that stored figures ({cpu}).",
                  run_labels).labels(**labels).set(started)
        for device, tflops in fig.gemm_tflops.items():
            gauge("bringup_validation_gemm_flops_per_second", f"GEMM throughput of each device {of_run}, in "
                  f"floating-point operations per second (the run's TFLOPS x 1e12; {cpu}).",
                  dev_labels).labels(device=device, **labels).set(tflops * TERA)
        for device, gb_s in fig.h2d_gb_s.items():
            gauge("bringup_validation_h2d_bytes_per_second", f"Pinned host-to-device copy bandwidth of each device "
                  f"{of_run}, in bytes per second (GB/s x 1e9; {cpu}).",
                  dev_labels).labels(device=device, **labels).set(gb_s * GB)
        if fig.allreduce is not None:
            message_bytes, gb_s = fig.allreduce
            gauge("bringup_validation_allreduce_busbw_bytes_per_second", f"All-reduce bus bandwidth at the sweep's "
                  f"largest message {of_run}, in bytes per second (GB/s x 1e9; {cpu}).",
                  run_labels).labels(**labels).set(gb_s * GB)
            gauge("bringup_validation_allreduce_message_bytes", "The message size the all-reduce bus bandwidth was "
                  f"measured at (the sweep's largest), in bytes ({cpu}).", run_labels).labels(**labels).set(message_bytes)
        for device, tflops in fig.soak_gemm_tflops.items():
            gauge("bringup_validation_soak_gemm_flops_per_second", "GEMM throughput of each device in the last "
                  f"interval of the newest soak (node.soak) that stored figures, in floating-point operations per "
                  f"second (TFLOPS x 1e12; {cpu}).", dev_labels).labels(device=device, **labels).set(tflops * TERA)
        if fig.soak_busbw_gb_s is not None:
            gauge("bringup_validation_soak_allreduce_busbw_bytes_per_second", "All-reduce bus bandwidth in the last "
                  f"interval of the newest soak (node.soak) that stored figures, in bytes per second (GB/s x 1e9; "
                  f"{cpu}).", run_labels).labels(**labels).set(fig.soak_busbw_gb_s * GB)


# ------------------------------------------------------------------ writing


def process_seconds() -> float:
    """Seconds this process has run (from its start, as the kernel records it), to the clock tick (10 ms)."""
    import psutil

    p = psutil.Process()
    try:
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - (p.create_time() - psutil.boot_time()))
    except (AttributeError, OSError):  # no CLOCK_BOOTTIME (not Linux): wall clock, to about a second
        return max(0.0, time.time() - p.create_time())


def _write_error(path: Path, exc: OSError) -> str:
    from wizard.store import free_bytes, is_disk_full

    parent = path.parent
    if is_disk_full(exc, parent):
        free = free_bytes(parent)
        return f"cannot write the metrics file {path}: the disk is full" + (f" ({free:,} bytes free)" if free is not None
                                                                           else "")
    if isinstance(exc, IsADirectoryError) or path.is_dir():
        return f"cannot write the metrics file {path}: it is a directory; give a file such as {path / 'bringup.prom'}"
    said = f"cannot write the metrics file {path} ({exc.strerror or exc})"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        who = "root may not write there either (lsattr -d, findmnt)" if os.geteuid() == 0 else "run as its owner or root"
        return f"{said}: its directory {parent} is not writable by this user; {who}, or give a file in another directory"
    return said


def write_check_metrics(path: str | os.PathLike[str], findings: Sequence[Finding], *, node: str | None = None,
                        state_dir: Path | None = None, snapshot: bool = False) -> list[str]:
    """Write the check's metrics to ``path`` atomically (a temporary file renamed into place; an old file stays
    whole until then) as mode 0644. ``node``: the host's name (default :func:`socket.gethostname`); ``state_dir``:
    where the build whose validation figures are exported lives (``None``: none, as with ``--snapshot``).
    Returns notes for the operator (a file node-exporter would not collect: not ``*.prom``).

    Raises:
        MetricsError: an empty path, a directory that does not exist, a directory that cannot be written, a full
            disk, a path that exists and is not a regular file (:func:`wizard.fileedit.refuse_non_regular`: a
            directory, FIFO, device, socket or symbolic link; nothing is written); or the build's results cannot
            be read.
    """
    from prometheus_client import write_to_textfile

    if not str(path).strip():
        raise MetricsError("--prometheus is empty: give a file, e.g. /var/lib/prometheus/node-exporter/bringup.prom")
    target = Path(path)
    try:
        refuse_non_regular(target)  # a device node, FIFO, socket, directory or symlink would be replaced by rename
    except OSError as exc:
        hint = (f"; give a file such as {target / 'bringup.prom'}" if target.is_dir() and not target.is_symlink()
                else "")
        raise MetricsError(f"cannot write the metrics file: {exc}{hint}") from None
    if not target.parent.is_dir():
        raise MetricsError(f"cannot write the metrics file {target}: its directory {target.parent} does not exist "
                           "(node-exporter's --collector.textfile.directory; create it first)")
    figures = validation_figures(build_runs(state_dir)) if state_dir is not None else []
    reg = check_registry(findings, node or socket.gethostname(), finished=time.time(), duration_s=process_seconds(),
                         source="snapshot" if snapshot else "live", figures=figures)
    old = os.umask(0o777 & ~FILE_MODE)
    try:
        write_to_textfile(str(target), reg)
    except OSError as exc:
        raise MetricsError(_write_error(target, exc)) from None
    finally:
        os.umask(old)
    if target.suffix != ".prom":
        return [f"wrote {target}, but node-exporter's textfile collector reads only *.prom files: name it "
                f"{target.stem}.prom to have it collected"]
    return []
