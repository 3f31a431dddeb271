"""The health profile: the cheap checks that say "this node must not take jobs", within a hard time limit.

``bringup check --profile health`` plays the part LBNL Node Health Check (NHC, https://github.com/mej/nhc) plays in
a cluster: Slurm runs it on every node every few minutes (``HealthCheckProgram``), or before and after each job (a
prolog or an epilog), so it must be fast and must never hang. It runs only the registry rules that
:data:`wizard.registry.PROFILES` names for the profile (driver loaded, nvidia-smi answering, GPU count against the plan
or the GPUs this node's build recorded, Xid / GPU fallen off the bus, ECC, row remapping, PCIe link degraded, NVLink
down, Fabric Manager, host memory errors, full filesystems), through the same probes, parsers and rules as a full
``check``; nothing imports torch.

The time limit is hard: every probe starts at once and any probe still running when the limit is reached is
stopped (its process group killed) and becomes a ``health.probe_timeout`` finding that fails: a GPU query that hangs
is itself the sign of a sick GPU (NHC stops a check that runs too long with its watchdog timer the same way). A
watchdog thread (:func:`start_watchdog`) is the backstop for what asyncio cannot interrupt (a read of a sysfs file
that blocks in the kernel).

Nothing is recorded: the profile reads the build's plan, acknowledgements and recorded GPU serials (read-only, no
lock) and changes no step status (it runs a subset of each step's rules, every few minutes).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from wizard.facts import facts_of
from wizard.hosts import Host
from wizard.model import Finding, Verdict, overall
from wizard.probes import TIMEOUT_ERROR, Probe, ProbeOutput, collect
from wizard.registry import PROBES, PROFILES, Rule, apply_rules, rules_of_profile
from wizard.i18n import Msg

DEFAULT_TIMEOUT_S = 10.0
"""The whole health check's limit, seconds (``--timeout``). LBNL NHC's own default is 30 s (its ``-t``); 10 s is
judgement: a prolog holds the job's start for as long as it runs, and a probe of the profile still running after
10 s is more likely hung than slow (give a node whose ``nvidia-smi -q -x`` is slow more with ``--timeout``)."""
MAX_TIMEOUT_S = 3600.0
"""The largest ``--timeout`` accepted, seconds."""
WATCHDOG_GRACE_S = 5.0
"""After the time limit, how long the run gets to stop its probes and report before the watchdog ends the process,
seconds (judgement: killing a process group and judging what was collected takes well under a second)."""
OVERRUN_ID = "health.probe_timeout"
SRC_TIMEOUT = ("LBNL Node Health Check README (a watchdog timer terminates a check that runs too long), "
               "https://github.com/mej/nhc; NVIDIA GPU Deployment and Management Guide (a query that hangs is a GPU "
               "that stopped answering), https://docs.nvidia.com/deploy/")



def profile_names() -> list[str]:
    """The profiles ``check --profile`` takes (:data:`wizard.registry.PROFILES`)."""
    return sorted(PROFILES)


def profile_probes(rules: Sequence[Rule]) -> list[Probe]:
    """Every probe ``rules`` read, each once, in order."""
    return [PROBES[n] for n in dict.fromkeys(p for r in rules for p in r.probes)]


def overrun_findings(outputs: Mapping[str, ProbeOutput], timeout_s: float) -> list[Finding]:
    """One failing ``health.probe_timeout`` finding per probe stopped at the time limit (``wizard.probes.collect``'s
    ``timeout_s``)."""
    out = []
    for name, o in outputs.items():
        if o.rc == 124 and o.error.startswith(TIMEOUT_ERROR):
            out.append(Finding(
                OVERRUN_ID, Verdict.FAIL, Msg("{source}: no answer within {timeout_s:g} s; stopped", source=o.source, timeout_s=timeout_s), "host",
                (f"{name}: {o.source}", f"error: {o.error}"),
                "A GPU query or a kernel log read that hangs is a node that must not take jobs: run the command by "
                "hand and look at the kernel log for Xid errors (`journalctl -k -b | grep -i xid`); if the node is "
                "only slow, give the health check more time (`--timeout S`).", SRC_TIMEOUT, step="health.gpu_count"))
    return out


def judge_profile(rules: Sequence[Rule], outputs: Mapping[str, ProbeOutput], plan: Mapping[str, Any]) -> list[Finding]:
    """Every rule of ``rules`` over one :class:`~wizard.facts.Facts` (each parser once), each finding tagged with its
    rule's step; a rule that raises (a bug) gives an ``unknown`` finding naming the exception
    (:func:`wizard.registry.apply_rules`)."""
    return apply_rules(rules, facts_of(outputs), plan)


@dataclass
class HealthResult:
    """One profile run: its findings (rules' and time-limit overruns), the worst verdict, the probe outputs, and
    how long it took (seconds)."""

    profile: str
    findings: list[Finding]
    verdict: Verdict
    outputs: dict[str, ProbeOutput]
    duration_s: float

    @property
    def healthy(self) -> bool:
        """No finding fails: the node may take jobs (warnings and unknowns are printed, not acted on)."""
        return self.verdict is not Verdict.FAIL

    @property
    def exit_code(self) -> int:
        """NHC's convention: 0 healthy, non-zero (2) when the node must not take jobs."""
        return 0 if self.healthy else 2

    def first_failure(self) -> Finding | None:
        return next((f for f in self.findings if f.verdict is Verdict.FAIL), None)


async def run_profile(host: Host, name: str, plan: Mapping[str, Any], timeout_s: float = DEFAULT_TIMEOUT_S
                      ) -> HealthResult:
    """Collect the probes of profile ``name`` within ``timeout_s`` seconds and judge them.

    Raises:
        KeyError: no such profile.
    """
    t0 = time.monotonic()
    rules = rules_of_profile(name)
    outputs = await collect(host, profile_probes(rules), plan, timeout_s=timeout_s,
                            timeout_note="the health check's time limit")
    findings = overrun_findings(outputs, timeout_s) + judge_profile(rules, outputs, plan)
    return HealthResult(name, findings, overall(findings), outputs, time.monotonic() - t0)


def build_expectations(state_dir: Path) -> dict[str, Any]:
    """What the newest build under ``state_dir`` expects, read-only (no lock, nothing written): its plan answers
    (re-validated), ``acknowledged`` event keys and recorded ``gpu_serials``, as
    :meth:`wizard.engine.Build.expectations` gives them. Without a planned ``gpu_count``, the number of GPUs the
    build recorded stands for it (a GPU that disappeared since then fails ``health.gpu_count``). ``{}`` when there
    is no build or it cannot be read (the checks then judge without a plan)."""
    from wizard.plan import valid_plan
    from wizard.store import Store, StoreError, list_builds

    try:
        builds = list_builds(state_dir) if state_dir.is_dir() else []
    except OSError:
        return {}
    if not builds:
        return {}
    try:
        store = Store.open(builds[-1].db, readonly=True)
    except (StoreError, OSError):
        return {}
    try:
        exp = valid_plan(store.plan())
        exp["acknowledged"] = frozenset(store.acks())
        serials = store.meta().get("gpu_serials")
    except Exception:  # noqa: BLE001 - a build being written or damaged: judge without it, never crash
        return {}
    finally:
        store.close()
    if isinstance(serials, dict):
        exp["gpu_serials"] = serials
        if exp.get("gpu_count") in (None, "") and serials:
            exp["gpu_count"] = len(serials)
    return exp


def start_watchdog(limit_s: float, on_fire: Callable[[], None]) -> threading.Timer:
    """A daemon timer that, ``limit_s`` seconds from now, calls ``on_fire`` and then ends the process with exit
    status 2 (unhealthy: something hung past every time limit). Cancel it when the run is done."""

    def fire() -> None:
        try:
            on_fire()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(2)

    t = threading.Timer(limit_s, fire)
    t.daemon = True
    t.start()
    return t
