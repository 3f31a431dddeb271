"""DCGM diagnostics and the GPU burn-in as bringup actions: what runs, how long it takes, how its log is judged.

Levels (``dcgmi diag -r N``; NVIDIA's dcgmi diag reference, :data:`DCGMI_DIAG_URL`): 1 "quick deployment checks,
normally lasting seconds" (step ``health.dcgm_l1``), 2 "medium validation, normally lasting approximately two
minutes" (``gpu.dcgm_l2``), 3 "long hardware diagnostics, normally lasting approximately 15 minutes" and 4
"extended, longer-running hardware diagnostics" (``node.dcgm_l3``: the plan's ``dcgm_node_level`` 3 | 4 | long |
xlong picks one; "the names quick and short, medium, long, and xlong are aliases for levels 1 through 4"). Level 4
exists since DCGM 2.4.0 (:data:`SRC_L4`); the suite names since DCGM 2.3 (NVIDIA/DCGM
``nvvs/src/NvidiaValidationSuite.cpp``, DCGM 2.3.4: quick/short, medium, long; ``xlong`` in DCGM 2.4.5, the first
2.4 release in that public history). bringup passes the digit, which every DCGM release with that level accepts.

Every run is ``dcgmi diag -r N -j`` under :mod:`wizard.progress` (``dcgmi -j`` prints nothing until the end), so
the log says "dcgmi diag -r 2: 45 s elapsed of about 2 min" while it runs; the JSON document in the log is read
with :func:`wizard.parsers.dcgm.parse_dcgm_json` (a table, when dcgmi printed one, with ``parse_dcgm_text``) and
judged by :func:`wizard.rules.dcgm.judge` (one judge: per GPU and per test, ids by level).

dcgmi talks to the host engine (nv-hostengine, unit ``nvidia-dcgm``): when the ``driver_services`` probe says the
unit is there and not active, the run starts it first (``systemctl start nvidia-dcgm``; root); with no unit and no
nv-hostengine process, ``nv-hostengine`` (root). dcgmi's "Unable to connect to host engine" is ``unknown`` with
that remedy, not a GPU failure. Without ``dcgmi`` the resolvers return ``Resolved(manual=...)``: DCGM is not
installed, step ``driver.dcgm`` installs it, and bringup's own equivalents are named.

The burn-in (``gpu.stress``, ``bringup validate burnin --minutes M``): with DCGM, ``dcgmi diag -r
targeted_stress`` then ``-r targeted_power`` for half of ``burnin_minutes`` each (``-p
targeted_stress.test_duration=S``; the plugins' parameter, seconds, DCGM's own default 120: Targeted Stress and
Targeted Power plugin pages / NVIDIA/DCGM ``nvvs/include/PluginStrings.h``); else (or on the CPU) the validation
script's sustained GEMM (its ``soak`` in one process: GEMM on every visible GPU, no all-reduce) under NVML sampling,
judged by the soak's judge. A CPU run proves the software path only (``cpu-only``, never passed).
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from dataclasses import dataclass
from typing import Any, Mapping

from wizard.actions import ActionContext, Resolved
from wizard.model import Finding, Verdict
from wizard.progress import MARK, fmt_duration, strip_marked
from wizard.i18n import Msg
from wizard.common import lazy_re

DCGMI_DIAG_URL = "https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-diag.html"
SRC_LEVELS = (f"NVIDIA dcgmi diag reference ({DCGMI_DIAG_URL}): -r 1 quick deployment checks, normally seconds; 2 medium "
              "validation, approximately two minutes; 3 long hardware diagnostics, approximately 15 minutes; 4 extended, "
              "longer-running; quick/short, medium, long and xlong are aliases of levels 1-4")
SRC_L4 = ("NVIDIA DCGM 2.4 Memtest Diagnostic (https://docs.nvidia.com/datacenter/dcgm/2.4/user-guide/diag-cuda-mats.html):"
          " 'Beginning with 2.4.0 DCGM diagnostics support an additional level 4 diagnostics (-r 4)'")
SRC_HOSTENGINE = ("NVIDIA nv-hostengine reference (https://docs.nvidia.com/datacenter/dcgm/latest/reference/"
                  "command-line-reference/nv-hostengine.html): dcgmi talks to the host engine, which production "
                  "installations run under nvidia-dcgm.service; dcgmi's own words when it cannot: 'Error: Unable to "
                  "connect to host engine' (NVIDIA/DCGM dcgmi/Command.cpp)")
SRC_TARGETED = ("NVIDIA DCGM Targeted Stress plugin (https://docs.nvidia.com/datacenter/dcgm/latest/reference/diagnostics/"
                "plugins/targeted-stress.html) and Targeted Power plugin: canonical test names targeted_stress and "
                "targeted_power, parameter test_duration in seconds (default 120: NVIDIA/DCGM nvvs plugin sources)")
DCGMI = "dcgmi"
DCGM_UNIT = "nvidia-dcgm"


@dataclass(frozen=True)
class Level:
    """One DCGM diagnostic level: its number, DCGM's suite name, the expected duration (seconds) and how the
    documentation words it, the step it belongs to, bringup's own checks that cover part of its ground, and what
    they do not (``gaps``)."""

    level: int
    name: str
    expect_s: float
    about: str
    step: str
    equivalent: str
    gaps: str = ""


LEVELS: dict[int, Level] = {
    1: Level(1, "short", 30.0, "normally seconds (bringup shows progress against 30 s)", "health.dcgm_l1",
             "the Health stage's checks (health.gpu_count, health.ecc, health.row_remap, health.pcie_width, "
             "health.kernel_log, ...: `bringup check --stage health`)",
             "none of DCGM's own deployment checks (denylisted drivers, NVML and CUDA library loading, permissions)"),
    2: Level(2, "medium", 120.0, "approximately two minutes", "gpu.dcgm_l2",
             "gpu.validate (GEMM, memory pattern, host<->device copies, a training loop per GPU) and the burn-in "
             "gpu.stress (`bringup validate gpu`, `bringup validate burnin`)",
             "no DCGM memory test with its ECC/row-remap checks and no DCGM PCIe bandwidth/replay test"),
    3: Level(3, "long", 15 * 60.0, "approximately 15 minutes", "node.dcgm_l3",
             "node.validate (all-reduce sweep, P2P matrix) and node.soak (`bringup validate node`, "
             "`bringup validate soak --minutes M`)",
             "no memtest, targeted power, targeted stress, memory bandwidth or DCGM PCIe test"),
    4: Level(4, "xlong", 2 * 3600.0, "extended, longer-running (the reference gives no figure; bringup shows "
             "progress against 2 h, a judgement)", "node.dcgm_l3",
             "node.validate and a long node.soak (`bringup validate soak --minutes 120`)",
             "no memtest, targeted power, targeted stress, memory bandwidth or DCGM PCIe test"),
}
"""The levels bringup runs (:data:`SRC_LEVELS`; level 4: :data:`SRC_L4`)."""

NODE_LEVEL_NAMES = {"3": 3, "4": 4, "long": 3, "xlong": 4}
"""Values of the plan's ``dcgm_node_level`` and the level each selects (DCGM's aliases: :data:`SRC_LEVELS`)."""
DEFAULT_BURNIN_MINUTES = 10.0
"""Burn-in length when the plan has no ``burnin_minutes``: the same as the soak's default (a judgement: long enough
for clocks and temperatures to settle under load; DCGM's targeted stress and power default to 120 s each,
:data:`SRC_TARGETED`)."""
PROGRESS_EVERY_S = 15.0
"""Seconds between progress lines (the log of a 2 h level-4 run gets ~500 lines)."""

CONNECT_FAILED = lazy_re(r"Unable to connect to host engine|host engine is not running|"
                            r"unable to establish a connection to the specified host", re.I)
"""dcgmi's words when nv-hostengine cannot be reached (NVIDIA/DCGM dcgmi/Command.cpp; real output:
tests/data/public/dcgmi__unable-to-connect-host-engine.txt)."""
_ENDED = lazy_re(r"^# (?P<label>.+?): ended after .*, exit status (?P<rc>-?\d+)", re.M)


def node_level(plan: Mapping[str, Any]) -> int:
    """The level ``node.dcgm_l3`` runs: the plan's ``dcgm_node_level`` (3, 4, long, xlong), else 3."""
    return NODE_LEVEL_NAMES.get(str(plan.get("dcgm_node_level") or "3").strip().lower(), 3)


def burnin_minutes(plan: Mapping[str, Any]) -> float:
    m = plan.get("burnin_minutes")
    if isinstance(m, (int, float)) and not isinstance(m, bool) and m > 0:
        return float(m)
    return DEFAULT_BURNIN_MINUTES


def not_installed(level: int | None, what: str = "") -> str:
    """The manual text when ``dcgmi`` is not on PATH: DCGM is missing, how to install it, bringup's equivalents."""
    lv = LEVELS.get(level or 0)
    ran = Msg("level {level} has not run", level=level) if lv else Msg("{what} has not run",
                                                                       what=what or Msg("the DCGM diagnostic"))
    eq = (Msg(" Without DCGM, bringup's own checks cover part of it: {equivalent}; they run {gaps}, so they do not "
              "replace it.", equivalent=Msg.plain(lv.equivalent), gaps=Msg.plain(lv.gaps)) if lv else "")
    return (Msg("DCGM is not installed here (no `dcgmi` on PATH): {ran}. Install it with step driver.dcgm (press a on "
                "that step, or `bringup run driver.dcgm`), then run this step again.", ran=ran) + eq)


def _hostengine_running() -> bool:
    import psutil

    for p in psutil.process_iter(["name"]):
        try:
            if p.info.get("name") == "nv-hostengine":
                return True
        except (psutil.Error, AttributeError):
            continue
    return False


def hostengine_ops(ctx: ActionContext) -> tuple[list[dict[str, Any]], list[str]]:
    """The operations that start DCGM's host engine when the probes say it is not running (none when it runs or
    nothing can tell), and lines saying what was found. Reads the ``driver_services`` probe (``systemctl show``)."""
    from wizard.parsers.packages import parse_systemctl_show

    o = ctx.outputs.get("driver_services")
    unit = None
    if o is not None and o.text.strip() and o.rc != 127:
        try:
            unit = parse_systemctl_show(o.text).get(DCGM_UNIT)
        except Exception:  # noqa: BLE001 - an unreadable probe is "cannot tell", never a crash
            unit = None
    if unit is not None and unit.exists:
        if unit.running:
            return [], [f"{DCGM_UNIT} is active: dcgmi reaches its host engine"]
        return ([{"argv": ["systemctl", "start", DCGM_UNIT],
                  "detail": [f"{DCGM_UNIT} is {unit.active or 'not active'}: start DCGM's host engine first (root)"]}],
                [f"{DCGM_UNIT} is {unit.active or 'not active'}"])
    if o is not None and o.text.strip() and (unit is None or not unit.exists):
        binary = shutil.which("nv-hostengine")
        if binary and not _hostengine_running():
            return ([{"argv": [binary], "detail": ["no nvidia-dcgm unit and no nv-hostengine process: start the "
                                                   "host engine (it daemonizes; listens on 127.0.0.1:5555)"]}],
                    ["no nvidia-dcgm unit, nv-hostengine not running"])
    return [], ["could not tell whether DCGM's host engine runs (no systemctl answer)"]


def wrapped(ctx: ActionContext, label: str, expect_s: float, argv: list[str]) -> list[str]:
    """``argv`` under the progress wrapper (:mod:`wizard.progress`)."""
    return [ctx.python, "-m", "wizard.progress", "--label", label, "--expect-s", f"{expect_s:g}",
            "--every", f"{min(PROGRESS_EVERY_S, max(1.0, expect_s / 4)):g}", "--", *argv]


def _with_hostengine(ctx: ActionContext, ops: list[dict[str, Any]]) -> Resolved:
    start, _ = hostengine_ops(ctx)
    return Resolved(ops=start + ops, needs_root=bool(start), changes_system=bool(start))


def resolve_level(ctx: ActionContext, level: int) -> Resolved:
    """``dcgmi diag -r LEVEL -j`` under the progress wrapper, after starting the host engine if needed; manual
    (:func:`not_installed`) without ``dcgmi``."""
    dcgmi = shutil.which(DCGMI)
    if not dcgmi:
        return Resolved(manual=not_installed(level))
    lv = LEVELS[level]
    label = f"dcgmi diag -r {level}"
    op = {"argv": wrapped(ctx, label, lv.expect_s, [dcgmi, "diag", "-r", str(level), "-j"]),
          "detail": [f"runs {label} -j (level {level}, '{lv.name}'): {lv.about} (NVIDIA dcgmi diag reference); a "
                     f"progress line every few seconds, the JSON result at the end"]}
    return _with_hostengine(ctx, [op])


def resolve_l1(ctx: ActionContext) -> Resolved:
    return resolve_level(ctx, 1)


def resolve_l2(ctx: ActionContext) -> Resolved:
    return resolve_level(ctx, 2)


def resolve_node(ctx: ActionContext) -> Resolved:
    """Level 3, or 4 when the plan's ``dcgm_node_level`` says so (:func:`node_level`)."""
    return resolve_level(ctx, node_level(ctx.plan))


def resolve_burnin(ctx: ActionContext) -> Resolved:
    """The burn-in (module doc): DCGM's targeted stress and targeted power when ``dcgmi`` is installed and the run is
    on GPUs, else the validation script's sustained GEMM for ``burnin_minutes``."""
    from wizard import validate as v

    minutes = burnin_minutes(ctx.plan)
    dcgmi = shutil.which(DCGMI)
    if dcgmi and v.validate_device(ctx) != "cpu":
        secs = max(1, int(round(minutes * 60 / 2)))
        ops = []
        for test in ("targeted_stress", "targeted_power"):
            label = f"dcgmi diag -r {test}"
            ops.append({"argv": wrapped(ctx, label, float(secs), [dcgmi, "diag", "-r", test, "-p",
                                                                   f"{test}.test_duration={secs}", "-j"]),
                        "detail": [f"DCGM {test.replace('_', ' ')} on every GPU for {fmt_duration(secs)} "
                                   "(half of burnin_minutes each)"]})
        return _with_hostengine(ctx, ops)
    return v.resolve_gemm_burnin(ctx, minutes)


# ------------------------------------------------------------------ judging the log


def documents(log: str) -> list[Any]:
    """The DCGM results in an action's log, in order: each JSON document (``dcgmi diag -j``), or, when the log holds
    none, the table dcgmi printed. Lines starting with ``# `` (the progress wrapper's, the supervisor's) are not
    dcgmi's and are dropped first. Never raises."""
    from wizard.parsers.dcgm import detect_text, parse_dcgm_json, parse_dcgm_text

    text = strip_marked(log)
    out: list[Any] = []
    dec = json.JSONDecoder()
    for m in re.finditer(r"^\{", text, re.M):
        if out and m.start() < out[-1][0]:
            continue  # inside the document just read
        try:
            _, end = dec.raw_decode(text, m.start())
        except ValueError:
            continue
        out.append((m.start() + end, parse_dcgm_json(text[m.start():m.start() + end])))
    if out:
        return [d for _, d in out]
    try:
        if detect_text(text) > 0:
            return [parse_dcgm_text(text)]
    except Exception:  # noqa: BLE001 - garbage is "no result"
        pass
    return []


def _exit_statuses(log: str) -> list[tuple[str, int]]:
    return [(m.group("label"), int(m.group("rc"))) for m in _ENDED.finditer(log)]


def judge_diag(log: str, plan: Mapping[str, Any], level: int, fid: str | None = None) -> list[Finding]:
    """Findings of a DCGM run's log: each result document judged by :func:`wizard.rules.dcgm.judge` as level
    ``level`` (ids by level, or ``fid`` for all of them); a host engine dcgmi could not reach is ``unknown`` with
    the remedy; a non-zero exit status the results do not explain fails; no result at all is ``unknown``."""
    from wizard.rules import dcgm as rules

    step = fid or (LEVELS[level].step if level in LEVELS else "node.dcgm_l3")
    found: list[Finding] = []
    clean = strip_marked(log)
    if CONNECT_FAILED.search(clean):
        ev = tuple(ln.strip() for ln in clean.splitlines() if CONNECT_FAILED.search(ln))[:3]
        return [Finding(step, Verdict.UNKNOWN, "dcgmi could not reach DCGM's host engine (nv-hostengine): the "
                        "diagnostic did not run, so nothing is known about the GPUs", "host", ev,
                        Msg("Start the host engine: `sudo systemctl start {DCGM_UNIT}` (or `sudo nv-hostengine` where "
                            "there is no unit), check it with `dcgmi discovery -l`, then run this step again.", DCGM_UNIT=DCGM_UNIT),
                        SRC_HOSTENGINE)]
    for d in documents(log):
        d = dataclasses.replace(d, level=level) if level in LEVELS else d
        got = rules.judge(d, clean, plan)
        found.extend(dataclasses.replace(f, id=fid) if fid else f for f in got)
    bad = [(label, rc) for label, rc in _exit_statuses(log) if rc != 0]
    # dcgmi exits non-zero when a test reported a failure (DCGM_ST_NVVS_ERROR): a failing, warning or unknown finding
    # already says which; the judge's verdict on it stands
    explained = any(f.verdict in (Verdict.FAIL, Verdict.WARN, Verdict.UNKNOWN) for f in found)
    if not found:
        tail = tuple(ln for ln in log.splitlines() if ln.strip())[-6:]
        found.append(Finding(step, Verdict.UNKNOWN, (Msg('the run printed no DCGM result to judge') + (Msg(' ({bad} exited with status {bad2})', bad=bad[0][0], bad2=bad[0][1]) if bad else '')), "host", tail,
                             "Read the run's log; run `dcgmi diag -r N` by hand to see DCGM's own message.", SRC_LEVELS))
    elif bad and not explained:
        found.append(Finding(step, Verdict.FAIL, Msg("{a1} exited with status {a2} although its results show no failure", a1=bad[0][0], a2=bad[0][1]), "host", tuple(f"{MARK}{lb}: exit status {rc}" for lb, rc in bad),
                             "Read the run's log and DCGM's log (/var/log/nvidia-dcgm/nv-hostengine.log).", SRC_LEVELS))
    return found


def judge_l1(log: str, plan: Mapping[str, Any]) -> list[Finding]:
    """ActionSpec.judge of ``health.dcgm_l1``."""
    return judge_diag(log, plan, 1)


def judge_l2(log: str, plan: Mapping[str, Any]) -> list[Finding]:
    """ActionSpec.judge of ``gpu.dcgm_l2``."""
    return judge_diag(log, plan, 2)


def judge_node(log: str, plan: Mapping[str, Any]) -> list[Finding]:
    """ActionSpec.judge of ``node.dcgm_l3`` (level 3 or 4: the level the run's command line names)."""
    m = re.search(r"dcgmi diag -r ([34])\b", log)
    return judge_diag(log, plan, int(m.group(1)) if m else node_level(plan))


def _is_validation_log(log: str) -> bool:
    from wizard.parsers.validate import parse_events

    try:
        return bool(parse_events(log).events)
    except Exception:  # noqa: BLE001
        return False


def judge_burnin(log: str, plan: Mapping[str, Any]) -> list[Finding]:
    """ActionSpec.judge of ``gpu.stress``: the validation script's GEMM burn-in by the soak's judge (its ids
    ``soak.X`` become ``gpu.stress_X``), or DCGM's targeted stress / power by the DCGM judge (ids ``gpu.stress``)."""
    if _is_validation_log(log):
        from wizard.rules.validate import judge_soak

        return [dataclasses.replace(f, id="gpu.stress_" + f.id.split(".", 1)[1] if f.id.startswith("soak.") else f.id)
                for f in judge_soak(log, plan)]
    return judge_diag(log, plan, 0, fid="gpu.stress")


def results_burnin(log: str, plan: Mapping[str, Any]) -> dict[str, Any]:
    """ActionSpec.results of ``gpu.stress``: the soak's results table for the GEMM burn-in; none for DCGM's run
    (its findings name each GPU and test)."""
    if _is_validation_log(log):
        from wizard.rules.validate import results_soak

        return results_soak(log, plan)
    return {}
