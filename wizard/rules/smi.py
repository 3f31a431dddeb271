"""Health checks on what nvidia-smi (or NVML) says about each GPU.

Rules come from the checks catalogue (/work/shared/reference/checks-catalogue.md) rows A1 (GPU
count), A3 (Fabric Manager state on NVSwitch systems), A4 (persistence mode), A5 (VBIOS
consistency), A6 (ECC mode), B1 (PCIe width and generation), B4 (PCIe replays), B6 (ECC
counters), B7 (row remapping, retired pages), B10 (temperature against the GPU's own slowdown
threshold), B11 (clocks-event / throttle reasons), B12 (power limit and P-state) and B17 (stray
compute processes). Numbers live in ``assets/gpu_thresholds.csv``, ``assets/smi_clock_events.csv``
and ``assets/smi_gpu_classes.csv``, each row with its source.

Two deliberate choices, both from the shared cases:
* persistence mode off is a WARN on bare metal (catalogue A4; DCGM's deployment check flags it),
  and reported with the fix but not lowered inside a VM guest (nvidia-smi
  "Virtualization Mode" Pass-Through / vGPU), where the case authors judged real outputs with
  persistence off as healthy (A100 pass-through VM).
* a single reading cannot show a rate or "stays for 3 samples", so thresholds that need time
  (B4 replay rate, B10 under-load rule, B11 share of a stress stage) are applied to the one
  reading as the catalogue's single-reading fallback, and the finding says to sample again.

Never claimed here: that the CUDA version nvidia-smi prints must equal nvcc's (it is the
driver's newest supported CUDA; knowledge.md §1.1 and §9 #2).
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, Iterable, Mapping, Sequence

from wizard.rules.common import Outputs, garbled, missing
from wizard.common import gpu_subject, normalise_bus_id
from wizard.data import table
from wizard.model import Finding, Verdict, worst
from wizard.parsers.smi import GpuFacts, SmiDoc, parse_nvml_smi, parse_smi_xml, unreachable_gpus

# ------------------------------------------------------------------ sources

SRC_A1 = "checks-catalogue A1 (NVIDIA Health Validation gpu_count; Meta GCM gpu_num; AzNHC check_gpu_count)"
SRC_SMI = ("nvidia-smi man page (ERR!, 'No devices were found', 'couldn't communicate with the NVIDIA driver'); "
           "NVIDIA Xid catalog (Xid 79 fallen off the bus, 119/120 GSP)")
SRC_CUDA = ("nvidia-smi man page: 'CUDA Version' is the newest CUDA the driver supports; "
            "knowledge.md §1.1 (it need not equal nvcc's toolkit version)")
SRC_A3 = ("checks-catalogue A3; NVIDIA Fabric Manager user guide (GPUs finish fabric registration only with "
          "nvidia-fabricmanager running at the driver's exact version; 'In Progress' = FM not running)")
SRC_A4 = ("checks-catalogue A4 (DCGM level 1 warns); NVIDIA Driver Persistence doc (effect: client start-up "
          "latency; nvidia-persistenced is the supported way)")
SRC_A5 = "checks-catalogue A5 (Meta GCM vbios_mismatch; AzNHC check_gpu_vbios)"
SRC_A6 = "checks-catalogue A6 (ECC off on a data-center GPU -> FAIL; pending change -> WARN)"
SRC_B1 = ("checks-catalogue B1 (width below max -> FAIL; generation judged under load only); nvidia-smi man "
          "page and knowledge.md §3/§9 #19 (idle GPUs lower link speed)")
SRC_B2 = "checks-catalogue B2 (platform-limited PCIe bandwidth -> WARN)"
SRC_B4 = "checks-catalogue B4 (DCGM DCGM_FR_PCI_REPLAY_RATE: more than 8 replays per minute -> WARN)"
SRC_B6 = "checks-catalogue B6 (AzNHC check_gpu_ecc 20000000 10000; SRAM uncorrectable -> FAIL; RMA above 4)"
SRC_B7 = ("checks-catalogue B7 (pending remap -> reset then re-check; remap failure -> RMA); NVIDIA A100 GPU "
          "memory error management doc (row remapping); NVIDIA Dynamic Page Retirement doc")
SRC_B10 = "checks-catalogue B10 (margin to the GPU's own slowdown threshold; GCM 80/85 degC fallback)"
SRC_B12 = "checks-catalogue B12 (NVHV GPUPowerLimit / GPUPowerState; Autopilot gpupower)"
SRC_B17 = "checks-catalogue B17 (Meta GCM running_procs; Autopilot #68; DCGM #272)"
SRC_MIG = "NVIDIA MIG user guide (MIG mode; per-instance metrics); nvidia-smi prints N/A for fields MIG hides"
SRC_RESET = ("nvidia-smi -q 'GPU Reset Status' / 'GPU Recovery Action'; NVIDIA Xid catalog Xid 154 "
             "(None / Drain P2P / Drain and Reset / GPU Reset Required / Node Reboot Required)")

PERSISTENCE_OFF_VERDICT = Verdict.WARN
"""Verdict for persistence mode off on bare metal (or where the output does not say it comes from a
VM): checks-catalogue A4, "WARN if disabled (DCGM level 1 warns)"; DCGM's deployment check reports
it (DCGM 3.3 as Info; an older run in tests/data/public fails 'Persistence Mode' and skips every
hardware test)."""

PERSISTENCE_OFF_IN_VM_VERDICT = Verdict.PASS
"""Verdict for persistence mode off inside a VM guest (nvidia-smi "Virtualization Mode" Pass-Through
or vGPU): reported with the fix but not lowered, as the shared case collection judges the A100
pass-through VM with persistence off (tests/data/cases/expected.csv: pass); NVIDIA's Driver
Persistence doc names client start-up latency as the effect."""

POWER_LIMIT_TOLERANCE_W = 0.5
"""A power limit counts as lowered only when it is more than 0.5 W below the default: nvidia-smi
prints limits with two decimals and NVML in mW, so equal limits can differ by rounding (derived)."""

ERR_FIELDS_UNRESPONSIVE = 3
"""A GPU whose name, or at least 3 of its fields, read ERR! / 'GPU is lost' does not answer the
driver (FAIL); fewer is one unreadable sensor (WARN). Derived from the shared cases: the A40 case
shows ERR! in name, fan, temperature, P-state, power and ECC of the dead GPU; the gpud 525
table shows ERR! only in the fan of a working one."""

RESET_REMEDY = ("Stop every process on the GPU, then reset it (`sudo nvidia-smi -r -i <index>`) or reboot the "
                "node; NVIDIA says a reset is not guaranteed to work, so power-cycle if the GPU is still "
                "unhealthy, then check again.")

# ------------------------------------------------------------------ data


@functools.lru_cache(maxsize=None)
def thresholds() -> dict[str, float]:
    """``assets/gpu_thresholds.csv`` as name -> value (units in the file's ``unit`` column)."""
    return {r["name"]: float(r["value"]) for r in table("gpu_thresholds.csv")}


@functools.lru_cache(maxsize=None)
def threshold_source(name: str) -> str:
    for r in table("gpu_thresholds.csv"):
        if r["name"] == name:
            return r["source"]
    return ""


@functools.lru_cache(maxsize=None)
def clock_events() -> tuple[dict[str, str], ...]:
    """``assets/smi_clock_events.csv`` rows: reason, bit, label, idle_verdict, load_verdict, source."""
    return table("smi_clock_events.csv")


@functools.lru_cache(maxsize=None)
def _classes() -> tuple[tuple[str, str, str], ...]:
    return tuple((r["field"], r["match"], r["class"]) for r in table("smi_gpu_classes.csv"))


def gpu_class(g: GpuFacts) -> str:
    """"datacenter", "workstation", "consumer", "virtual" or "unknown" (``assets/smi_gpu_classes.csv``):
    by the Product Brand nvidia-smi prints, else by the product name."""
    brand = (g.text("brand") or "").strip().lower()
    if brand:
        for fld, match, cls in _classes():
            if fld == "brand" and match.lower() == brand:
                return cls
    name = g.name
    if name:
        for fld, match, cls in _classes():
            if fld == "name":
                try:
                    if re.search(match, name):
                        return "unknown" if cls == "notdatacenter" else cls
                except re.error:
                    continue
    return "unknown"


def in_vm(g: GpuFacts, plan: Mapping[str, Any]) -> bool:
    """This output comes from inside a VM: nvidia-smi's "Virtualization Mode" is Pass-Through or a
    vGPU mode (nvidia-smi man page). The plan's ``virtualization`` answer says whether the node
    *hosts* VMs, which does not change how the host sees its own GPUs, so it is not used here."""
    mode = (g.text("virtualization_mode") or "").lower()
    return bool(mode) and mode not in ("none", "host vgpu", "host vsga")


def load_state(g: GpuFacts) -> tuple[str, list[str]]:
    """("load" | "idle" | "unknown", evidence lines) from utilization, the Idle clocks-event reason
    and the P-state (thresholds in ``assets/gpu_thresholds.csv``)."""
    t = thresholds()
    util = g.num("utilization.gpu")
    ev = g.lines("utilization.gpu")
    if util is not None and util >= t["load_util_min_pct"]:
        return "load", ev
    if g.flag("clocks_event_reasons.gpu_idle"):
        return "idle", ev + g.lines("clocks_event_reasons.gpu_idle")
    if util is not None and util <= t["idle_util_max_pct"]:
        return "idle", ev
    p = g.text("pstate") or ""
    m = re.fullmatch(r"P(\d{1,2})", p.strip())
    if m and int(m.group(1)) >= t["idle_pstate_min"]:
        return "idle", ev + g.lines("pstate")
    return "unknown", ev + g.lines("pstate")


# ------------------------------------------------------------------ helpers


def subject(g: GpuFacts) -> str:
    return gpu_subject(g.index if g.index is not None else None, g.bus_id, g.serial)


def subjects(gpus: Sequence[GpuFacts]) -> str:
    if len(gpus) == 1:
        return subject(gpus[0])
    names = [subject(g) for g in gpus[:8]]
    more = f", +{len(gpus) - 8} more" if len(gpus) > 8 else ""
    return f"{len(gpus)} GPUs: " + "; ".join(names) + more


def _ev(g: GpuFacts, *lines: str | Iterable[str]) -> tuple[str, ...]:
    out: list[str] = []
    for item in (g.header, *lines):
        for ln in ([item] if isinstance(item, str) else list(item)):
            if ln and ln not in out:
                out.append(ln)
    return tuple(out[:24])


def _fmt(x: float | None) -> str:
    if x is None:
        return "?"
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def _pass_group(fid: str, gpus: list[tuple[GpuFacts, str, list[str]]], msg_one: str, msg_many: str,
                source: str, total: int | None = None) -> list[Finding]:
    """One ``pass`` finding for the GPUs in ``gpus`` ((gpu, detail, evidence lines)). ``{n}`` in
    ``msg_many`` reads "all 8" or "7 of 8" when ``total`` (the GPUs in the output) is given."""
    if not gpus:
        return []
    if len(gpus) == 1:
        g, detail, lines = gpus[0]
        return [Finding(fid, Verdict.PASS, f"{subject(g)}: {msg_one}{detail}", subject(g), _ev(g, lines), "", source)]
    ev: list[str] = []
    for g, _, lines in gpus:
        for ln in [g.header, *lines]:
            if ln and ln not in ev:
                ev.append(ln)
    details = sorted({d for _, d, _ in gpus})
    detail = details[0] if len(details) == 1 else ""
    n = len(gpus)
    n_txt = str(n) if total is None else (f"all {n}" if n >= total else f"{n} of {total}")
    return [Finding(fid, Verdict.PASS, f"{msg_many.format(n=n_txt)}{detail}", subjects([g for g, _, _ in gpus]),
                    tuple(ev[:24]), "", source)]


# ------------------------------------------------------------------ the judge


def judge_doc(doc: SmiDoc, plan: Mapping[str, Any] | None = None, before_tests: bool = False) -> list[Finding]:
    """Every finding one nvidia-smi/NVML output supports. Never raises.

    ``before_tests``: the health stage runs this just before active tests, where compute
    processes already on a GPU are a problem (B17); a pasted output may have been taken during
    a deliberate test, so there they are only reported.
    """
    plan = plan or {}
    try:
        return _judge(doc, plan, before_tests)
    except Exception as exc:  # noqa: BLE001 - a rule bug must not hide the input
        ev = doc.problems or [g.header for g in doc.gpus if g.header] or doc.error_lines or ["(see the input)"]
        return [Finding("health.nvidia_smi", Verdict.UNKNOWN, f"could not judge this {doc.command} output: {exc!r}",
                        "host", tuple(ev[:5]),
                        "This is a bringup bug: please report it with the input.", SRC_SMI)]


def _judge(doc: SmiDoc, plan: Mapping[str, Any], before_tests: bool) -> list[Finding]:
    out: list[Finding] = []
    out += _errors(doc)
    if doc.error_kind in ("refused", "no_driver", "no_devices", "nvml") and not doc.gpus:
        return out
    if not doc.gpus:
        if doc.problems:
            out.append(Finding("health.nvidia_smi", Verdict.UNKNOWN,
                               f"could not read this {doc.command} output", "host", tuple(doc.problems[:20]),
                               f"Run `{doc.command}` by hand and paste its whole output.", SRC_SMI))
        elif not out:
            ev = tuple(r.line for r in (doc.driver_version, doc.attached) if r is not None)
            out.append(Finding("health.nvidia_smi", Verdict.UNKNOWN, f"no GPU in this {doc.command} output",
                               "host", ev or ("(no GPU section in the input)",),
                               f"Paste the whole output of `{doc.command}`.", SRC_SMI))
        return out
    for rule in (_count, _driver, _responsive, _persistence, _vbios, _ecc_mode, _ecc, _row_remap, _retired,
                 _temperature, _clock_events, _power, _pcie_width, _pcie_gen, _replay, _fabric, _mig, _reset,
                 _cut_sections):
        out += rule(doc, plan)
    out += _processes(doc, plan, before_tests)
    return out


# ------------------------------------------------------------------ rules


def _errors(doc: SmiDoc) -> list[Finding]:
    ev = tuple(doc.error_lines[:10])
    if doc.error_kind == "refused":
        return [Finding("health.nvidia_smi", Verdict.UNKNOWN,
                        "refused to read this XML: it declares entities (nvidia-smi never does)", "input", ev,
                        "Paste the unmodified output of `nvidia-smi -q -x`.",
                        "XML entity declarations are refused so no input can expand or fetch entities")]
    if doc.error_kind == "no_driver":
        return [Finding("driver.nvidia_smi", Verdict.FAIL,
                        "nvidia-smi cannot talk to the NVIDIA driver: it is not loaded, or its libraries do not "
                        "match the kernel module", "host", ev,
                        "Check `lsmod | grep nvidia` and `dmesg | grep -i nvrm`. After a driver upgrade without a "
                        "reboot (or an unattended upgrade), reboot; otherwise reinstall the driver for the running "
                        "kernel and pin its packages so upgrades cannot split it.", SRC_SMI)]
    if doc.error_kind == "no_devices":
        return [Finding("driver.nvidia_smi", Verdict.FAIL,
                        "No devices were found: the driver is loaded but did not initialise any GPU", "host", ev,
                        "Compare with `lspci -d 10de:`; read `dmesg | grep -i -e NVRM -e RmInitAdapter`. Typical "
                        "causes: a driver too old for this GPU (new GPUs need a recent branch, and Blackwell the "
                        "open kernel modules), Above 4G decoding off in the BIOS (knowledge.md §3), or a GPU that "
                        "is not powered.", SRC_SMI)]
    if doc.error_kind == "nvml":
        return [Finding("health.nvml", Verdict.UNKNOWN, "NVML did not initialise, so no GPU health could be read",
                        "host", ev, "See the health.nvml finding for why NVML did not start.", SRC_SMI)]
    if doc.error_kind == "gpu_unreachable":
        named = unreachable_gpus(doc.error_lines)
        buses = list(dict.fromkeys(normalise_bus_id(b) for b, _, _ in named))
        reasons = list(dict.fromkeys(r for _, r, _ in named if r))
        lost = any("gpu is lost" in ln.lower() for ln in doc.error_lines)
        if buses:
            who = subjects_of(buses)
            msg = (f"nvidia-smi cannot reach {who}" + (f": {'; '.join(reasons)}" if reasons else "")
                   + " (no device handle: the driver lists the GPU but cannot open it)")
        else:
            who = "host"
            msg = f"nvidia-smi cannot reach {len(doc.error_lines)} GPU(s): 'GPU is lost' / no device handle"
        where = f" for {', '.join(buses)}" if buses else " for the GPU's PCI address"
        remedy = (("The driver says the GPU is lost and asks for a reboot: drain the node and power-cycle it (a full "
                   "power cycle, not only a reboot, if it is lost again). " if lost else "")
                  + f"Read `dmesg | grep -e NVRM -e Xid -e AER`{where}: Xid 79 (fallen off the bus) needs a full "
                  "power cycle. Check the GPU's power cables, seating and cooling (passively cooled cards need the "
                  "server's airflow); RMA the GPU if it happens again after a cold boot.")
        return [Finding("health.gpu_responsive", Verdict.FAIL, msg, who, ev, remedy,
                        SRC_SMI + "; NVML_ERROR_GPU_IS_LOST ('The GPU has fallen off the bus or has otherwise become "
                        "inaccessible', NVML API reference); knowledge.md section 6 Xid 79 row")]
    return []


def subjects_of(buses: Sequence[str]) -> str:
    """Subject for GPUs known only by PCI bus id: "GPU (0000:0b:00.0)" or "2 GPUs: ..."."""
    names = [gpu_subject(None, b) for b in buses]
    return names[0] if len(names) == 1 else f"{len(names)} GPUs: " + "; ".join(names[:8])


def _count(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    if all(g.implicit for g in doc.gpus) and doc.attached is None:
        return []  # a pasted section with no GPU header: nothing to count
    listed = len(doc.gpus)
    attached = doc.attached_count
    seen = attached if attached is not None else listed
    ev = [ln for ln in [doc.attached.line if doc.attached else ""] + [g.header for g in doc.gpus[:16]] if ln]
    try:
        want = int(plan.get("gpu_count")) if plan.get("gpu_count") not in (None, "") else None
    except (TypeError, ValueError):
        want = None
    if attached is not None and listed < attached:
        missing_n = attached - listed
        if doc.complete:
            return [Finding("health.gpu_count", Verdict.UNKNOWN,
                            f"the header says {attached} GPUs are attached but only {listed} is listed: "
                            f"{missing_n} GPU(s) unaccounted for", "host", tuple(ev),
                            f"Run `{doc.command}` without `-i` and compare with `lspci -d 10de:`; a GPU the "
                            "driver lists but cannot query is a fault (read `dmesg | grep -e NVRM -e Xid`).", SRC_A1)]
        return [Finding("health.gpu_count", Verdict.SKIP,
                        f"this paste shows {listed} of the {attached} attached GPUs (it looks cut); only those "
                        "are judged", "host", tuple(ev), f"Paste the whole `{doc.command}` output to judge every GPU.",
                        SRC_A1)]
    if want is not None and seen < want:
        if doc.fmt == "table" and not doc.complete:
            return [Finding("health.gpu_count", Verdict.UNKNOWN,
                            f"this nvidia-smi table shows {listed} GPUs but looks cut (no Processes section); the "
                            f"plan expects {want}", "host", tuple(ev), "Paste the whole `nvidia-smi` output.", SRC_A1)]
        return [Finding("health.gpu_count", Verdict.FAIL,
                        f"nvidia-smi sees {seen} GPUs; the plan expects {want}", "host", tuple(ev),
                        "Compare with `lspci -d 10de:`: a GPU on the bus that nvidia-smi does not list failed to "
                        "initialise (dmesg: NVRM/Xid); a GPU missing from lspci too is unseated, unpowered or "
                        "disabled in the BIOS.", SRC_A1)]
    if want is not None and seen > want:
        return [Finding("health.gpu_count", Verdict.WARN, f"nvidia-smi sees {seen} GPUs; the plan expects {want}",
                        "host", tuple(ev), "Correct the plan's GPU count, or check which GPU should not be here.",
                        SRC_A1)]
    msg = f"nvidia-smi lists {seen} GPU{'s' if seen != 1 else ''}"
    if want is not None:
        msg += f", as the plan expects"
    return [Finding("health.gpu_count", Verdict.PASS, msg, "host", tuple(ev), "", SRC_A1)]


def _driver(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    if doc.driver_version is None:
        return []
    msg = f"nvidia-smi talks to NVIDIA driver {doc.driver_version.raw}"
    ev = [doc.driver_version.line]
    if doc.cuda_version is not None:
        msg += (f"; that driver supports CUDA up to {doc.cuda_version.raw} (the driver's limit, not the installed "
                "toolkit: it need not equal nvcc's version)")
        if doc.cuda_version.line not in ev:
            ev.append(doc.cuda_version.line)
    return [Finding("driver.version", Verdict.PASS, msg, "host", tuple(ev), "", SRC_CUDA)]


def _err_fields(g: GpuFacts) -> list[str]:
    return [k for k, r in g.fields.items() if "ERR!" in r.raw or "GPU is lost" in r.raw]


def _responsive(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    out = []
    ok = []
    for g in doc.gpus:
        bad = _err_fields(g)
        if not g.errors and not bad:
            ok.append(g)
            continue
        name_bad = "name" in bad or any("GPU is lost" in e or "device handle" in e or '"handle"' in e for e in g.errors)
        if name_bad or len(bad) >= ERR_FIELDS_UNRESPONSIVE:
            out.append(Finding("health.gpu_responsive", Verdict.FAIL,
                               f"{subject(g)} does not respond: nvidia-smi prints ERR! / 'GPU is lost' for it",
                               subject(g), _ev(g, g.errors),
                               "Read `dmesg | grep -e NVRM -e Xid` for this PCI address. Xid 79 (fallen off the bus) "
                               "needs a full power cycle; Xid 119/120 (GSP) a GPU reset or reboot. Check its power "
                               "cables and seating; RMA the GPU if it comes back after a cold boot.", SRC_SMI))
        else:
            what = ", ".join(k.replace("fan.speed", "fan speed").replace("temperature.gpu", "temperature")
                             for k in bad) or "a field"
            out.append(Finding("health.gpu_responsive", Verdict.WARN,
                               f"{subject(g)}: nvidia-smi cannot read its {what} (ERR!)", subject(g), _ev(g, g.errors),
                               "A single sensor reading ERR! (often the fan on a passively cooled or riser-mounted "
                               "card): check the fan/cooling in the BMC and `dmesg | grep -e NVRM -e Xid`; if more "
                               "fields turn ERR!, treat the GPU as failing.", SRC_SMI))
    if out and ok:
        out += _pass_group("health.gpu_responsive", [(g, "", []) for g in ok], "answers nvidia-smi",
                           "the other GPUs ({n}) answer nvidia-smi", SRC_SMI)
    return out


def _persistence(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    on, off_bare, off_vm = [], [], []
    for g in doc.gpus:
        f = g.flag("persistence_mode")
        if f is True:
            on.append((g, "", g.lines("persistence_mode")))
        elif f is False:
            (off_vm if in_vm(g, plan) else off_bare).append(g)
    off = off_bare + off_vm
    out = _pass_group("health.persistence", on, "persistence mode is on", "persistence mode is on for {n} GPUs",
                      SRC_A4) if not off else []
    fix = ("Enable the NVIDIA persistence daemon so the driver stays initialised: "
           "`sudo systemctl enable --now nvidia-persistenced` (or `sudo nvidia-smi -pm 1`, the legacy way, lost at "
           "reboot).")
    for gpus, verdict, where in ((off_bare, PERSISTENCE_OFF_VERDICT, ""),
                                 (off_vm, PERSISTENCE_OFF_IN_VM_VERDICT, " inside a VM guest")):
        if not gpus:
            continue
        ev: list[str] = []
        for g in gpus:
            ev += [g.header, g.line("persistence_mode")] + (g.lines("virtualization_mode") if where else [])
        tail = ("; each CUDA start re-initialises the GPU (slower start-up), reported, not lowered, in a VM"
                if verdict is Verdict.PASS else
                "; each CUDA start re-initialises the GPU, and DCGM's deployment check flags it (some DCGM versions "
                "then skip every hardware test)")
        if not where and all(g.get("virtualization_mode") is None for g in gpus):
            tail += ("; this output does not say whether it comes from a VM guest (`nvidia-smi -q` 'Virtualization "
                     "Mode' does), where this is only a note")
        out.append(Finding("health.persistence", verdict,
                           f"persistence mode is off on {len(gpus)} of {len(doc.gpus)} GPU(s){where}{tail}",
                           subjects(gpus), tuple(x for x in dict.fromkeys(ev) if x), fix,
                           SRC_A4 + ("; shared case: A100 pass-through VM with persistence off judged pass" if where
                                     else "")))
    return out


def _vbios(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    groups: dict[str, list[GpuFacts]] = {}
    for g in doc.gpus:
        if g.text("vbios_version"):
            groups.setdefault(g.name or "?", []).append(g)
    out = []
    for name, gpus in groups.items():
        versions: dict[str, list[GpuFacts]] = {}
        for g in gpus:
            versions.setdefault((g.text("vbios_version") or "").upper(), []).append(g)
        ev = tuple(dict.fromkeys(x for g in gpus for x in (g.header, g.line("vbios_version")) if x))[:24]
        if len(versions) > 1:
            common = max(versions, key=lambda v: len(versions[v]))
            odd = [g for v, gs in versions.items() if v != common for g in gs]
            out.append(Finding("health.vbios", Verdict.WARN,
                               f"{len(versions)} different VBIOS versions on {len(gpus)} {name} GPUs: "
                               + ", ".join(f"{v} on {len(gs)}" for v, gs in versions.items()), subjects(odd), ev,
                               "Update the odd GPUs to the same VBIOS (the server vendor's firmware bundle); mixed "
                               "VBIOS versions make failures harder to compare across GPUs.", SRC_A5))
        else:
            v = next(iter(versions))
            msg = (f"all {len(gpus)} {name} GPUs run VBIOS {v}" if len(gpus) > 1 else f"{subject(gpus[0])}: VBIOS {v}")
            out.append(Finding("health.vbios", Verdict.PASS, msg, subjects(gpus), ev, "", SRC_A5))
    return out


def _ecc_mode(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    out, ok = [], []
    for g in doc.gpus:
        cur, pend = g.flag("ecc.mode.current"), g.flag("ecc.mode.pending")
        cls = gpu_class(g)
        lines = g.lines("ecc.mode.current", "ecc.mode.pending", "brand", "name")
        idx = g.index if g.index is not None else "<index>"
        if cur is None:
            if g.text("table.ecc") is None and (g.get("table.ecc") is not None) and cls == "datacenter":
                out.append(Finding("health.ecc_mode", Verdict.WARN,
                                   f"{subject(g)}: the table prints N/A for Volatile Uncorr. ECC, so ECC looks off "
                                   f"on this data-center GPU", subject(g), _ev(g, g.lines("table.ecc")),
                                   "Confirm with `nvidia-smi -q -d ECC`; if ECC is off, enable it (`sudo nvidia-smi "
                                   f"-i {idx} -e 1`) and reboot.", SRC_A6))
            continue
        if cur is False and pend is True:
            out.append(Finding("health.ecc_mode", Verdict.WARN,
                               f"{subject(g)}: ECC is off now and turns on at the next reboot (pending Enabled)",
                               subject(g), _ev(g, lines), "Reboot (or reset the GPU) to apply it, then check again.",
                               SRC_A6))
        elif cur is False and cls == "datacenter":
            out.append(Finding("health.ecc_mode", Verdict.FAIL,
                               f"{subject(g)}: ECC is off on a data-center GPU", subject(g), _ev(g, lines),
                               f"Enable ECC (`sudo nvidia-smi -i {idx} -e 1`), then reboot or reset the GPU and check "
                               "that it reads Enabled.", SRC_A6))
        elif cur is True and pend is False:
            out.append(Finding("health.ecc_mode", Verdict.WARN,
                               f"{subject(g)}: ECC is on but set to turn off at the next reboot (pending Disabled)",
                               subject(g), _ev(g, lines),
                               f"Undo the change (`sudo nvidia-smi -i {idx} -e 1`) unless it was meant.", SRC_A6))
        elif cur is False:
            ok.append((g, f" (ECC is optional on a {cls} GPU)" if cls != "unknown" else "", lines))
        else:
            ok.append((g, "", lines))
    on_ok = [t for t in ok if t[0].flag("ecc.mode.current") is not False]
    out += _pass_group("health.ecc_mode", on_ok, "ECC is on", "ECC is on for {n} GPUs", SRC_A6, total=len(doc.gpus))
    for t in ok:
        if t[0].flag("ecc.mode.current") is False:  # off where it is optional: said per GPU
            out += _pass_group("health.ecc_mode", [t], "ECC is off", "", SRC_A6)
    return out


def _sum(g: GpuFacts, *keys: str) -> float | None:
    vals = [g.num(k) for k in keys]
    vals = [v for v in vals if v is not None]
    return sum(vals) if vals else None


def _sram_unc(g: GpuFacts, ctr: str) -> float | None:
    v = g.num(f"ecc.errors.uncorrected.{ctr}.sram")
    if v is not None:
        return v
    return _sum(g, f"ecc.errors.uncorrected.{ctr}.sram.parity", f"ecc.errors.uncorrected.{ctr}.sram.secded")


def _ecc(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    t = thresholds()
    out, ok = [], []
    for g in doc.gpus:
        keys = [k for k in g.fields if k.startswith("ecc.errors.")]
        vals = {k: g.num(k) for k in keys}
        readable = {k: v for k, v in vals.items() if v is not None}
        lines = [g.fields[k].line for k in keys if vals.get(k) or k.endswith("thresholdExceeded")]
        mig = g.flag("mig.mode.current") is True
        vol_na = mig and not any(".volatile." in k for k in readable)
        note = " (volatile counters cannot be read while MIG is enabled)" if vol_na else ""
        exceeded = g.flag("ecc.errors.uncorrected.aggregate.sram.thresholdExceeded")
        if not readable and exceeded is None:
            if mig and keys:
                out.append(Finding("health.ecc", Verdict.SKIP,
                                   f"{subject(g)}: ECC counters cannot be read while MIG is enabled", subject(g),
                                   _ev(g, g.lines("mig.mode.current")), "", SRC_MIG))
            continue
        sram_unc = max((v for v in (_sram_unc(g, "volatile"), _sram_unc(g, "aggregate")) if v is not None), default=None)
        sram_unc_agg = _sram_unc(g, "aggregate")
        sram_cor = max((v for v in (g.num("ecc.errors.corrected.volatile.sram"),
                                    g.num("ecc.errors.corrected.aggregate.sram")) if v is not None), default=None)
        dram = {k: v for k, v in readable.items() if ".dram" in k or ".device_memory" in k}
        dram_max = max(dram.values(), default=None)
        unc_vol = max((v for v in (g.num("ecc.errors.uncorrected.volatile.dram"),
                                   g.num("ecc.errors.uncorrected.volatile.device_memory"),
                                   g.num("ecc.errors.uncorrected.volatile.total")) if v is not None), default=None)
        ev = _ev(g, lines or [g.fields[k].line for k in keys[:4]])
        problems: list[tuple[Verdict, str, str]] = []
        if exceeded:
            problems.append((Verdict.FAIL, "the SRAM uncorrectable-error threshold is exceeded",
                             "Drain the node and run NVIDIA field diagnostics; this GPU is an RMA candidate."))
        if sram_unc is not None and sram_unc > t["ecc_sram_uncorrectable_fail"]:
            rma = sram_unc_agg is not None and sram_unc_agg > t["ecc_sram_uncorrectable_aggregate_rma"]
            problems.append((Verdict.FAIL, f"{_fmt(sram_unc)} uncorrectable SRAM ECC error(s)",
                             RESET_REMEDY + (" Aggregate SRAM uncorrectable errors above "
                                             f"{_fmt(t['ecc_sram_uncorrectable_aggregate_rma'])}: RMA the GPU."
                                             if rma else " RMA the GPU if they return.")))
        if sram_cor is not None and sram_cor > t["ecc_sram_correctable_fail"]:
            problems.append((Verdict.FAIL, f"{_fmt(sram_cor)} corrected SRAM errors (limit "
                             f"{_fmt(t['ecc_sram_correctable_fail'])})", "RMA candidate: run NVIDIA field diagnostics."))
        if dram_max is not None and dram_max > t["ecc_dram_any_fail"]:
            problems.append((Verdict.FAIL, f"a DRAM ECC counter at {_fmt(dram_max)} (limit "
                             f"{_fmt(t['ecc_dram_any_fail'])})", "RMA candidate: run NVIDIA field diagnostics."))
        if unc_vol is not None and unc_vol > 0 and not any(v is Verdict.FAIL for v, _, _ in problems):
            problems.append((Verdict.WARN, f"{_fmt(unc_vol)} uncorrectable memory error(s) since the driver loaded",
                             "Look for Xid 48/63/64 in `dmesg` and at the row-remapping / retired-pages finding: "
                             "the GPU needs a reset if a remap or retirement is pending."))
        if problems:
            v = worst(p[0] for p in problems)
            out.append(Finding("health.ecc", v, f"{subject(g)}: " + "; ".join(p[1] for p in problems) + note,
                               subject(g), ev, " ".join(dict.fromkeys(p[2] for p in problems)), SRC_B6))
            continue
        nonzero = [f"{_fmt(v)} {k.replace('ecc.errors.', '').replace('.', ' ')}" for k, v in readable.items() if v]
        detail = ("; counts: " + ", ".join(nonzero) + f" (limits: DRAM {_fmt(t['ecc_dram_any_fail'])}, SRAM corrected "
                  f"{_fmt(t['ecc_sram_correctable_fail'])})") if nonzero else ": no errors"
        ok.append((g, detail + note, lines or [g.fields[k].line for k in keys[:2]]))
    out += _pass_group("health.ecc", ok, "ECC error counters within limits", "ECC error counters within limits on "
                       "{n} GPUs", SRC_B6, total=len(doc.gpus))
    return out


def _row_remap(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    out, ok = [], []
    for g in doc.gpus:
        keys = [k for k in g.fields if k.startswith("remapped_rows")]
        if not keys:
            continue
        corr, unc = g.num("remapped_rows.correctable"), g.num("remapped_rows.uncorrectable")
        pending, failure = g.flag("remapped_rows.pending"), g.flag("remapped_rows.failure")
        none_banks = g.num("remapped_rows.histogram.none")
        lines = [g.fields[k].line for k in keys if k != "remapped_rows.histogram.max"]
        if corr is None and unc is None and pending is None and failure is None:
            if g.flag("mig.mode.current") is True:
                out.append(Finding("health.row_remap", Verdict.SKIP,
                                   f"{subject(g)}: row-remap state cannot be read while MIG is enabled", subject(g),
                                   _ev(g, lines, g.lines("mig.mode.current")), "", SRC_MIG))
            continue
        idx = g.index if g.index is not None else "<index>"
        if failure:
            out.append(Finding("health.row_remap", Verdict.FAIL,
                               f"{subject(g)}: row remapping failed (Remapping Failure Occurred: Yes)", subject(g),
                               _ev(g, lines), "The GPU ran out of spare rows or could not remap: drain it and RMA it.",
                               SRC_B7))
        elif pending and unc:
            out.append(Finding("health.row_remap", Verdict.FAIL,
                               f"{subject(g)}: a row remap for {_fmt(unc)} uncorrectable error(s) is pending: the bad "
                               "rows stay in use until the GPU is reset" + (" (no remap failure, so not an RMA case)"
                                                                            if failure is False else ""),
                               subject(g), _ev(g, lines),
                               RESET_REMEDY.replace("<index>", str(idx)) + " If 'Remapping Failure Occurred' turns Yes, "
                               "RMA the GPU.", SRC_B7))
        elif pending:
            out.append(Finding("health.row_remap", Verdict.WARN,
                               f"{subject(g)}: a row remap is pending (correctable errors: {_fmt(corr)}): it takes "
                               "effect at the next GPU reset", subject(g), _ev(g, lines),
                               RESET_REMEDY.replace("<index>", str(idx)) + " Still pending after the reset: FAIL, "
                               "contact the vendor.", SRC_B7))
        elif none_banks:
            out.append(Finding("health.row_remap", Verdict.FAIL,
                               f"{subject(g)}: {_fmt(none_banks)} memory bank(s) have no spare rows left (Bank Remap "
                               "Availability 'None')", subject(g), _ev(g, lines),
                               "The next error in those banks cannot be remapped: plan the RMA.", SRC_B7 + " (derived)"))
        elif (corr or 0) + (unc or 0) > 0:
            out.append(Finding("health.row_remap", Verdict.WARN,
                               f"{subject(g)}: {_fmt(corr)} correctable and {_fmt(unc)} uncorrectable row remap(s) "
                               "done, none pending: the GPU memory has had errors", subject(g), _ev(g, lines),
                               "Nothing to do now; watch the counts and Xid 48/63/64 in the kernel log, and RMA if "
                               "remaps keep growing.", SRC_B7 + "; IBM Autopilot #55 (remap alone -> WARN)"))
        else:
            ok.append((g, "", lines[:4]))
    out += _pass_group("health.row_remap", ok, "no row remaps done or pending",
                       "no row remaps done or pending on {n} GPUs", SRC_B7, total=len(doc.gpus))
    return out


def _retired(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    t = thresholds()
    out, ok = [], []
    for g in doc.gpus:
        sbe, dbe = g.num("retired_pages.single_bit_ecc.count"), g.num("retired_pages.double_bit.count")
        pending = g.flag("retired_pages.pending")
        if pending is None:
            pending = g.flag("retired_pages.pending_retirement")
        if sbe is None and dbe is None and pending is None:
            continue
        total = (sbe or 0) + (dbe or 0)
        lines = g.lines("retired_pages.single_bit_ecc.count", "retired_pages.double_bit.count", "retired_pages.pending",
                        "retired_pages.pending_retirement")
        limit = t["retired_pages_fail"]
        if total >= limit and pending:
            out.append(Finding("health.retired_pages", Verdict.FAIL,
                               f"{subject(g)}: {_fmt(total)} retired pages and one more pending (limit {_fmt(limit)})",
                               subject(g), _ev(g, lines), "The GPU has nearly used up page retirement: RMA it.",
                               SRC_B7 + "; " + threshold_source("retired_pages_fail")))
        elif pending:
            out.append(Finding("health.retired_pages", Verdict.WARN,
                               f"{subject(g)}: a page is pending retirement ({_fmt(total)} retired so far)", subject(g),
                               _ev(g, lines), "Reboot or reset the GPU so the page is retired (a reboot fixes this; "
                               "no hardware service needed), then check again.", SRC_B7))
        elif total >= limit:
            out.append(Finding("health.retired_pages", Verdict.WARN,
                               f"{subject(g)}: {_fmt(total)} retired pages (limit {_fmt(limit)})", subject(g),
                               _ev(g, lines), "Close to the page-retirement limit: plan the RMA.", SRC_B7))
        else:
            ok.append((g, f" ({_fmt(total)} retired)" if total else "", lines))
    out += _pass_group("health.retired_pages", ok, "no page retirement pending",
                       "no page retirement pending on {n} GPUs", SRC_B7, total=len(doc.gpus))
    return out


def _temperature(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    t = thresholds()
    out, ok = [], []
    for g in doc.gpus:
        temp = g.num("temperature.gpu")
        if temp is None:
            continue
        slow, margin, slow_rel = g.num("temperature.slowdown"), g.num("temperature.gpu.tlimit"), \
            g.num("temperature.slowdown.tlimit")
        lines = g.lines("temperature.gpu", "temperature.slowdown", "temperature.gpu.tlimit", "temperature.slowdown.tlimit")
        if slow is not None:
            headroom, basis = slow - temp, f"{_fmt(temp)} C, its own slowdown threshold is {_fmt(slow)} C"
        elif margin is not None:
            headroom = margin - (slow_rel or 0)
            basis = (f"{_fmt(temp)} C, {_fmt(margin)} C below its T.Limit" +
                     (f"; slowdown at {_fmt(slow_rel)} C relative to T.Limit" if slow_rel is not None else ""))
        else:
            headroom, basis = None, f"{_fmt(temp)} C"
        if headroom is None:
            if temp >= t["temp_fallback_fail_c"] or temp >= t["temp_fallback_warn_c"]:
                v = Verdict.FAIL if temp >= t["temp_fallback_fail_c"] else Verdict.WARN
                out.append(Finding("health.temperature", v,
                                   f"{subject(g)}: {basis}; it reports no slowdown threshold, and the fallback limit is "
                                   f"{_fmt(t['temp_fallback_warn_c'])}/{_fmt(t['temp_fallback_fail_c'])} C",
                                   subject(g), _ev(g, lines), _COOLING, SRC_B10))
            else:
                ok.append((g, f" ({basis}; no threshold reported, below the {_fmt(t['temp_fallback_warn_c'])} C "
                              "fallback)", lines))
            continue
        if headroom < t["temp_margin_warn_c"]:
            where = "at or past" if headroom <= 0 else f"within {_fmt(headroom)} C of"
            out.append(Finding("health.temperature", Verdict.WARN,
                               f"{subject(g)}: {basis}: {where} its slowdown point (warn below "
                               f"{_fmt(t['temp_margin_warn_c'])} C); one reading, sample again under load",
                               subject(g), _ev(g, lines), _COOLING, SRC_B10))
        else:
            ok.append((g, f" ({basis}; {_fmt(headroom)} C of headroom)", lines))
    out += _pass_group("health.temperature", ok, "temperature within limits",
                       "temperature within limits on {n} GPUs", SRC_B10, total=len(doc.gpus))
    return out


_COOLING = ("Fix cooling rather than capping the GPU: check airflow, the BMC fan profile, inlet temperature and "
            "blanking panels. Locking clocks or lowering the power limit only hides it.")


def _clock_events(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    rows = clock_events()
    active_count: dict[str, int] = {}
    per_gpu: list[tuple[GpuFacts, list[dict[str, str]], str, list[str]]] = []
    for g in doc.gpus:
        readable = [r for r in rows if g.flag(f"clocks_event_reasons.{r['reason']}") is not None]
        if not readable:
            continue
        active = [r for r in readable if g.flag(f"clocks_event_reasons.{r['reason']}")]
        names = {r["reason"] for r in active}
        if names & {"hw_thermal_slowdown", "hw_power_brake_slowdown"}:
            active = [r for r in active if r["reason"] != "hw_slowdown"]  # the parent of the specific reason
        state, lines = load_state(g)
        for r in active:
            active_count[r["reason"]] = active_count.get(r["reason"], 0) + 1
        per_gpu.append((g, active, state, lines))
    out, ok = [], []
    n = len(per_gpu)
    for g, active, state, lines in per_gpu:
        judged = []
        for r in active:
            verdict = r["idle_verdict"] if state == "idle" else r["load_verdict"]
            if verdict in ("warn", "fail"):
                judged.append((Verdict.FAIL if verdict == "fail" else Verdict.WARN, r))
        ev_lines = [g.line(f"clocks_event_reasons.{r['reason']}") for r in active] + lines
        if not judged:
            ignored = [r["label"] for r in active]
            ok.append((g, f" (active: {', '.join(ignored)})" if ignored else "", ev_lines))
            continue
        v = worst(x for x, _ in judged)
        state_txt = {"idle": "while the GPU is idle", "load": "under load"}.get(state, "(load unknown)")
        parts = [f"{r['label']} active {state_txt} (on {active_count[r['reason']]} of {n} GPUs)" for _, r in judged]
        out.append(Finding("health.clock_events", v, f"{subject(g)}: " + "; ".join(parts), subject(g),
                           _ev(g, ev_lines), " ".join(dict.fromkeys(_event_remedy(r["reason"]) for _, r in judged)),
                           "; ".join(dict.fromkeys(r["source"] for _, r in judged))))
    out += _pass_group("health.clock_events", ok, "no clock slowdown reason active",
                       "no clock slowdown reason active on {n} GPUs",
                       "checks-catalogue B11; NVML clocks-event reasons")
    return out


def _event_remedy(reason: str) -> str:
    if reason == "hw_power_brake_slowdown":
        return ("An external power-brake signal from the platform is forcing the clocks down: check PSU health and "
                "redundancy and the power-capping policy in the BMC (`ipmitool sel list`, `ipmitool sdr`), and the "
                "baseboard power cabling; involve the server vendor if the brake stays asserted.")
    if reason in ("hw_thermal_slowdown", "sw_thermal_slowdown"):
        return _COOLING
    return ("HW slowdown without a thermal or power-brake sub-reason: check the power supply and cooling in the BMC, "
            "and `dmesg | grep -e NVRM -e Xid`.")


def _power(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    out, ok = [], []
    for g in doc.gpus:
        enforced = g.num("enforced.power.limit")
        if enforced is None:
            enforced = g.num("power.limit")
        default = g.num("power.default_limit")
        state, lines = load_state(g)
        p = (g.text("pstate") or "").strip()
        if state == "load" and gpu_class(g) == "datacenter" and re.fullmatch(r"P\d{1,2}", p) and p != "P0":
            out.append(Finding("health.pstate", Verdict.FAIL,
                               f"{subject(g)}: under load but in performance state {p}, not P0", subject(g),
                               _ev(g, g.lines("pstate"), lines),
                               "Read the clocks-event reasons and `dmesg`; check the power limit and that nothing "
                               "locked the clocks (`nvidia-smi -q -d CLOCK`).", SRC_B12))
        if enforced is None or default is None:
            continue
        plines = g.lines("enforced.power.limit", "power.limit", "power.default_limit")
        idx = g.index if g.index is not None else "<index>"
        if enforced < default - POWER_LIMIT_TOLERANCE_W:
            out.append(Finding("health.power_limit", Verdict.WARN,
                               f"{subject(g)}: power limit {_fmt(enforced)} W is below the default {_fmt(default)} W "
                               "(someone capped it)", subject(g), _ev(g, plines),
                               f"If nobody capped it on purpose, restore it (`sudo nvidia-smi -i {idx} -pl "
                               f"{_fmt(default)}`) and find what set it (a boot script, DCGM policy, the BMC).", SRC_B12))
        else:
            ok.append((g, f" ({_fmt(enforced)} W)", plines))
    out += _pass_group("health.power_limit", ok, "power limit at its default",
                       "power limit at the default on {n} GPUs", SRC_B12, total=len(doc.gpus))
    return out


def _pcie_width(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    out, ok = [], []
    for g in doc.gpus:
        cur, mx = g.num("pcie.link.width.current"), g.num("pcie.link.width.max")
        if cur is None or mx is None:
            continue
        lines = g.lines("pcie.link.width.current", "pcie.link.width.max")
        if cur >= mx:
            ok.append((g, f" (x{_fmt(cur)})", lines))
            continue
        state, slines = load_state(g)
        vm = in_vm(g, plan)
        msg = f"{subject(g)}: PCIe link is x{_fmt(cur)}, below its maximum x{_fmt(mx)}"
        if state == "load" and not vm:
            v, extra = Verdict.FAIL, " under load"
        elif vm:
            v, extra = Verdict.WARN, (" on a VM: the hypervisor or cloud platform may present it this way by "
                                      "design; confirm against the platform's baseline")
        else:
            v, extra = Verdict.WARN, (" (read while " + ("idle" if state == "idle" else "the load was unknown") +
                                      "; re-check under load)")
        out.append(Finding("health.pcie_width", v, msg + extra, subject(g), _ev(g, lines, slines),
                           "Re-read it under load (`nvidia-smi -q -d PCI` while a job runs). Still narrow: reseat "
                           "the GPU or riser, check the slot's lane setting in the BIOS and `sudo lspci -vv` "
                           "LnkSta/LnkCap; on a cloud VM compare with the instance type's documented link.", SRC_B1))
    out += _pass_group("health.pcie_width", ok, "PCIe link at full width", "full PCIe width on {n} GPUs", SRC_B1,
                       total=len(doc.gpus))
    return out


def _pcie_gen(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    out, ok = [], []
    for g in doc.gpus:
        cur = g.num("pcie.link.gen.gpucurrent")
        if cur is None:
            cur = g.num("pcie.link.gen.current")
        mx = g.num("pcie.link.gen.max")
        dev_max, host_max = g.num("pcie.link.gen.gpumax"), g.num("pcie.link.gen.hostmax")
        lines = g.lines("pcie.link.gen.current", "pcie.link.gen.gpucurrent", "pcie.link.gen.max",
                        "pcie.link.gen.gpumax", "pcie.link.gen.hostmax")
        if dev_max is not None and host_max is not None and host_max < dev_max:
            out.append(Finding("health.pcie_gen", Verdict.WARN,
                               f"{subject(g)}: the GPU supports PCIe Gen{_fmt(dev_max)} but the host side offers only "
                               f"Gen{_fmt(host_max)} (platform-limited bandwidth)", subject(g), _ev(g, lines),
                               "Move the GPU to a slot (or riser) of the GPU's generation, or check the slot's PCIe "
                               "speed setting in the BIOS; accept it only if this platform is built that way.", SRC_B2))
        if cur is None or mx is None:
            continue
        if cur >= mx:
            ok.append((g, f" (Gen{_fmt(cur)})", lines))
            continue
        state, slines = load_state(g)
        msg = f"{subject(g)}: PCIe link at Gen{_fmt(cur)}, below its maximum Gen{_fmt(mx)}"
        remedy = ("Re-read it under load (`nvidia-smi -q -d PCI` while a job runs). Still low under load: reseat the "
                  "GPU or riser and check the slot's PCIe speed setting in the BIOS.")
        if state == "idle":
            ok.append((g, f" (Gen{_fmt(cur)} now: idle GPUs lower the link speed to save power, normal; re-check "
                          "under load)", lines + slines))
        elif state == "load":
            v = Verdict.WARN if in_vm(g, plan) else Verdict.FAIL
            out.append(Finding("health.pcie_gen", v, msg + " under load", subject(g), _ev(g, lines, slines), remedy,
                               SRC_B1))
        else:
            out.append(Finding("health.pcie_gen", Verdict.UNKNOWN,
                               msg + ": cannot tell whether the GPU was idle (idle GPUs lower the speed); re-check "
                               "under load", subject(g), _ev(g, lines, slines), remedy, SRC_B1))
    out += _pass_group("health.pcie_gen", ok, "PCIe generation as expected",
                       "PCIe generation as expected on {n} GPUs", SRC_B1, total=len(doc.gpus))
    return out


def _replay(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    t = thresholds()
    out, ok = [], []
    bad_n = sum(1 for g in doc.gpus if (g.num("pcie.replay_counter") or 0) > t["replay_count_warn"]
                or (g.num("pcie.replay_rollover_counter") or 0) > 0)
    for g in doc.gpus:
        rep, roll = g.num("pcie.replay_counter"), g.num("pcie.replay_rollover_counter")
        if rep is None and roll is None:
            continue
        lines = g.lines("pcie.replay_counter", "pcie.replay_rollover_counter")
        if (rep or 0) > t["replay_count_warn"] or (roll or 0) > 0:
            out.append(Finding("health.pcie_replay", Verdict.WARN,
                               f"{subject(g)}: {_fmt(rep)} PCIe replays since reset" +
                               (f" and {_fmt(roll)} rollovers" if roll else "") +
                               f" (on {bad_n} of {len(doc.gpus)} GPUs); one reading has no rate, DCGM warns above "
                               f"{_fmt(t['replay_rate_warn_per_min'])} per minute", subject(g), _ev(g, lines),
                               "Read the counter again after a minute of load: a growing count points at a marginal "
                               "link (riser, slot, retimer); check `dmesg` for AER errors on this GPU's bus.", SRC_B4))
        else:
            ok.append((g, "", lines))
    out += _pass_group("health.pcie_replay", ok, "no PCIe replays", "no PCIe replays on {n} GPUs", SRC_B4, total=len(doc.gpus))
    return out


def _fabric(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    out, ok = [], []
    for g in doc.gpus:
        state = g.text("fabric.state")
        if state is None or state.lower() in ("not supported", "none"):
            continue
        status = g.text("fabric.status") or ""
        keys = [k for k in g.fields if k.startswith("fabric.")]
        lines = [g.fields[k].line for k in keys if g.text(k) is not None]
        remedy = ("Start Fabric Manager and enable it at boot (`sudo systemctl enable --now nvidia-fabricmanager`); its "
                  "version must equal the driver's exactly. On NVLink5 systems (B200) it also needs NVLSM and the "
                  "ib_umad module. Then reset the GPUs or reboot and check that State reads Completed.")
        summary = (g.text("fabric.health.summary") or "").lower()
        degraded = [g.line(k) for k in ("fabric.health.bandwidth", "fabric.health.route_unhealthy",
                                        "fabric.health.route_recovery_in_progress",
                                        "fabric.health.access_timeout_recovery")
                    if re.search(r"degraded|true|yes", g.text(k) or "", re.I)]
        if state.lower() != "completed":
            out.append(Finding("health.fabric", Verdict.FAIL,
                               f"{subject(g)}: NVLink fabric registration is '{state}', not Completed: Fabric Manager "
                               "is not running or does not match the driver", subject(g), _ev(g, lines), remedy, SRC_A3))
        elif status.lower() != "success":
            out.append(Finding("health.fabric", Verdict.FAIL,
                               f"{subject(g)}: NVLink fabric registration completed with status '{status}'", subject(g),
                               _ev(g, lines), remedy + " Read `journalctl -u nvidia-fabricmanager` for the error.",
                               SRC_A3))
        elif summary == "unhealthy" or degraded or summary == "limited capacity":
            v = Verdict.FAIL if summary == "unhealthy" else Verdict.WARN
            out.append(Finding("health.fabric", v, f"{subject(g)}: NVLink fabric health is degraded", subject(g),
                               _ev(g, lines, degraded),
                               "Read `nvidia-smi nvlink -s` and `journalctl -u nvidia-fabricmanager`; reset the GPUs "
                               "or reboot, and involve the vendor if links stay degraded.",
                               SRC_A3 + "; NVML nvmlGpuFabricInfo health mask"))
        else:
            ok.append((g, "", lines[:2]))
    out += _pass_group("health.fabric", ok, "NVLink fabric registration Completed / Success",
                       "NVLink fabric registration Completed / Success on {n} GPUs", SRC_A3, total=len(doc.gpus))
    return out


def _processes(doc: SmiDoc, plan: Mapping[str, Any], before_tests: bool) -> list[Finding]:
    out, ok = [], []
    for g in doc.gpus:
        procs = [p for p in g.processes if p.compute]
        if procs:
            desc = ", ".join(f"{p.name or '?'} (pid {p.pid}" + (f", {_fmt(p.used_mib)} MiB)" if p.used_mib is not None
                                                              else ")") for p in procs[:6])
            if before_tests:
                out.append(Finding("health.gpu_processes", Verdict.WARN,
                                   f"{subject(g)}: {len(procs)} compute process(es) already on the GPU: {desc}",
                                   subject(g), _ev(g, [ln for p in procs for ln in p.lines]),
                                   "Stop them, or wait until they finish, before the validation tests: they would "
                                   "share the GPU and skew or fail the results.", SRC_B17))
            else:
                out.append(Finding("health.gpu_processes", Verdict.PASS,
                                   f"{subject(g)}: {len(procs)} compute process(es) running: {desc} (fine if they are "
                                   "yours; stop them before validation tests)", subject(g),
                                   _ev(g, [ln for p in procs for ln in p.lines]),
                                   "Before running validation tests, stop other jobs on this GPU.", SRC_B17))
        elif g.processes_read or g.processes:
            ok.append((g, "", [ln for p in g.processes for ln in p.lines][:4]))
    out += _pass_group("health.gpu_processes", ok, "no compute processes", "no compute processes on {n} GPUs",
                       SRC_B17, total=len(doc.gpus))
    return out


def _mig(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    out = []
    for g in doc.gpus:
        cur, pend = g.flag("mig.mode.current"), g.flag("mig.mode.pending")
        lines = g.lines("mig.mode.current", "mig.mode.pending")
        idx = g.index if g.index is not None else "<index>"
        if cur is not None and pend is not None and cur != pend:
            out.append(Finding("health.mig", Verdict.WARN,
                               f"{subject(g)}: MIG mode change pending ({'on' if cur else 'off'} now, "
                               f"{'on' if pend else 'off'} after a reset)", subject(g), _ev(g, lines),
                               RESET_REMEDY.replace("<index>", str(idx)), SRC_MIG))
        elif cur:
            n = f" with {g.mig_devices} MIG device(s)" if g.mig_devices else ""
            out.append(Finding("health.mig", Verdict.PASS,
                               f"{subject(g)}: MIG is enabled{n}; some per-GPU fields (volatile ECC, row remapping, "
                               "utilization) cannot be read in this mode", subject(g), _ev(g, lines),
                               f"For whole-GPU training turn MIG off: `sudo nvidia-smi -i {idx} -mig 0`, then reset "
                               "the GPU.", SRC_MIG))
    return out


def _reset(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    out, ok = [], []
    for g in doc.gpus:
        req, drain = g.flag("reset_required"), g.flag("drain_and_reset_recommended")
        action = g.text("gpu_recovery_action")
        if req is None and drain is None and action is None:
            continue
        lines = g.lines("reset_required", "drain_and_reset_recommended", "gpu_recovery_action")
        act = (action or "").lower()
        idx = g.index if g.index is not None else "<index>"
        if req or re.search(r"reset|reboot", act):
            out.append(Finding("health.gpu_reset", Verdict.FAIL,
                               f"{subject(g)}: the driver asks for a GPU reset or reboot" +
                               (f" (recovery action: {action})" if action and act != "none" else ""),
                               subject(g), _ev(g, lines),
                               ("Reboot the node." if "reboot" in act else RESET_REMEDY.replace("<index>", str(idx))) +
                               " Read `dmesg | grep Xid` for the Xid that caused it.", SRC_RESET))
        elif drain or "drain" in act:
            out.append(Finding("health.gpu_reset", Verdict.WARN,
                               f"{subject(g)}: the driver recommends draining the GPU" +
                               (f" (recovery action: {action})" if action else ""), subject(g), _ev(g, lines),
                               "Let running jobs finish, move new work elsewhere, then reset the GPU.", SRC_RESET))
        else:
            ok.append((g, "", lines))
    out += _pass_group("health.gpu_reset", ok, "no reset or recovery action requested",
                       "no reset or recovery action requested on {n} GPUs", SRC_RESET, total=len(doc.gpus))
    return out


Q_BLOCK_START = "product name"
"""First label of a GPU block in the full ``nvidia-smi -q`` text; ``-q -d SECTION`` blocks start with
the selected section instead (nvidia-smi man page: -d selects which sections are displayed)."""
Q_BLOCK_END = ("processes", "capabilities")
"""Labels that close a GPU block of the full ``nvidia-smi -q`` text (every real full output in
tests/data ends each GPU with "Processes", 590-series drivers add "Capabilities" after it)."""
Q_TOPIC_SECTIONS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("health.pcie_width", ("pci",), "PCIe link width and generation"),
    ("health.clock_events", ("clocks event reasons",), "clock slowdown reasons"),
    ("health.ecc_mode", ("ecc mode",), "ECC mode"),
    ("health.ecc", ("ecc errors",), "ECC error counters"),
    ("health.retired_pages", ("retired pages",), "retired pages"),
    ("health.row_remap", ("remapped rows",), "row remapping (pending / failed remaps)"),
    ("health.temperature", ("temperature",), "temperature"),
    ("health.power_limit", ("power readings", "gpu power readings"), "power limit"),
)
"""Finding id, the ``nvidia-smi -q`` section(s) it reads, and what it judges: when a full ``-q``
GPU block stops before its last section, each topic whose section was not seen is ``unknown``
(not a silent pass), like the cut-XML rule for GPUs missing from a paste (DESIGN.md: ``unknown``
= could not tell, never silently counted as a pass)."""


def _cut_sections(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    """A full ``nvidia-smi -q`` text GPU block that ends before its closing "Processes" section was
    cut: say which topic sections were not seen (``unknown`` each)."""
    if doc.fmt != "text":
        return []
    out = []
    for g in doc.gpus:
        if g.implicit or not g.sections or g.sections[0] != Q_BLOCK_START:
            continue
        if any(x in g.sections for x in Q_BLOCK_END):
            continue
        for fid, labels, what in Q_TOPIC_SECTIONS:
            if any(x in g.sections for x in labels):
                continue
            title = " / ".join(x.title().replace("Ecc", "ECC").replace("Pci", "PCI") for x in labels)
            out.append(Finding(fid, Verdict.UNKNOWN,
                               f"{subject(g)}: {what} not judged: this nvidia-smi -q text has no '{title}' section "
                               f"for the GPU (it stops at '{g.last_line[:60]}', before its Processes section: the "
                               "paste looks cut)", subject(g), _ev(g, [g.last_line]),
                               "Paste the whole `nvidia-smi -q` output (or just the missing part: `nvidia-smi -q -d "
                               "PCIE,ECC,ROW_REMAPPER,PAGE_RETIREMENT,TEMPERATURE,POWER,PERFORMANCE -i <index>`).",
                               "DESIGN.md (unknown = could not tell, never counted as a pass); nvidia-smi man page "
                               "(-q sections, -d)"))
    return out


# ------------------------------------------------------------------ checks for the health stage

TOPICS: dict[str, tuple[str, ...]] = {
    "gpu_count": ("health.gpu_count", "health.gpu_responsive", "driver.nvidia_smi", "driver.version",
                  "health.nvidia_smi", "health.nvml"),
    "persistence": ("health.persistence",),
    "vbios": ("health.vbios",),
    "ecc": ("health.ecc_mode", "health.ecc"),
    "row_remap": ("health.row_remap", "health.retired_pages", "health.gpu_reset"),
    "thermal": ("health.temperature", "health.clock_events"),
    "power": ("health.power_limit", "health.pstate"),
    "pcie": ("health.pcie_width", "health.pcie_gen", "health.pcie_replay"),
    "fabric": ("health.fabric",),
    "processes": ("health.gpu_processes", "health.mig"),
}
"""Finding ids per health-stage topic (one step each); ``smi_health`` returns all of them."""


def doc_from_outputs(outputs: Outputs, prefer: str = "nvidia_smi_qx") -> tuple[SmiDoc | None, Finding | None]:
    """The SmiDoc the health checks judge: ``nvidia-smi -q -x`` (probe ``nvidia_smi_qx``), else the
    NVML probe (``nvml``); or an ``unknown`` finding when neither was collected."""
    order = [prefer] + [n for n in ("nvidia_smi_qx", "nvml") if n != prefer]
    tried = []
    for name in order:
        o = outputs.get(name)
        tried.append((name, o))
        if o is None:
            continue
        if name == "nvidia_smi_qx":
            text = o.text + ("\n" + o.stderr if o.stderr else "")
            if "<nvidia_smi_log" in o.text or (o.rc not in (None, 0, 124, 127) and not o.error.startswith("command not")
                                               and text.strip()):
                return parse_smi_xml(text), None
        elif name == "nvml" and o.ok:
            doc = parse_nvml_smi(o.text)
            if doc.gpus or doc.error_kind or not doc.problems:
                return doc, None
            return None, garbled("health.nvidia_smi", o, "the NVML probe output", doc.problems, source=SRC_SMI)
    name, o = tried[0]
    return None, missing("health.nvidia_smi", o, "the GPUs' health (nvidia-smi -q -x, NVML)",
                         remedy="Install the NVIDIA driver (it ships nvidia-smi and NVML), then check again.",
                         source=SRC_SMI)


def _no_gpu_on_bus(outputs: Outputs) -> bool:
    try:
        from wizard.rules.gpu import _no_gpu  # the PCI view the other GPU checks use
        return bool(_no_gpu(outputs))
    except Exception:  # noqa: BLE001 - without a PCI view, judge what nvidia-smi says
        return False


def _health(outputs: Outputs, plan: Mapping[str, Any], ids: tuple[str, ...] | None,
            prefer: str = "nvidia_smi_qx") -> list[Finding]:
    if _no_gpu_on_bus(outputs):
        pci = outputs.get("pci")
        return [Finding((ids or ("health.nvidia_smi",))[0], Verdict.SKIP,
                        "GPU health skipped: no NVIDIA GPU on the PCI bus (see health.gpu_pci)", "host",
                        (f"{pci.source}: no NVIDIA display or 3D controller" if pci is not None else "pci",),
                        "", SRC_A1)]
    doc, err = doc_from_outputs(outputs, prefer)
    if doc is None:
        assert err is not None
        return [err]
    findings = judge_doc(doc, plan, before_tests=True)
    if ids is None:
        return findings
    sel = [f for f in findings if f.id in ids]
    if not sel:
        first = findings[0] if findings else None
        if first is not None and first.verdict in (Verdict.FAIL, Verdict.UNKNOWN) and first.id in TOPICS["gpu_count"]:
            return [first]  # nvidia-smi itself failed: say so rather than nothing
        ev = doc.problems or [g.header for g in doc.gpus if g.header] or [f"({doc.command}: no such fields)"]
        return [Finding(ids[0], Verdict.UNKNOWN, f"{doc.command} reported nothing to judge for {ids[0]}", "host",
                        tuple(ev[:5]), f"Run `{doc.command}` by hand and check its output.", SRC_SMI)]
    return sel


def smi_health(outputs: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """All GPU health findings from ``nvidia-smi -q -x`` (probe ``nvidia_smi_qx``; the NVML probe
    ``nvml`` when nvidia-smi gave nothing), judged as just before active tests (B17: compute
    processes on a GPU are a WARN)."""
    return _health(outputs, plan, None)


def nvml_health(outputs: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """The same GPU health findings from the NVML probe (``nvml``), falling back to
    ``nvidia_smi_qx``."""
    return _health(outputs, plan, None, prefer="nvml")


def _topic(name: str, doc: str) -> Callable[[Outputs, Mapping[str, Any]], list[Finding]]:
    ids = TOPICS[name]

    def check(outputs: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
        return _health(outputs, plan, ids)

    check.__name__ = f"{name}_check"
    check.__doc__ = f"{doc} Probes: nvidia_smi_qx (else nvml). Finding ids: {', '.join(ids)}."
    return check


gpu_count_check = _topic("gpu_count", "Every planned GPU is listed and answers (A1).")
persistence_check = _topic("persistence", "Persistence mode per GPU (A4: WARN when off on bare metal; pass with "
                                          "a note inside a VM guest).")
vbios_check = _topic("vbios", "Same VBIOS on every GPU of a model (A5).")
ecc_check = _topic("ecc", "ECC on for data-center GPUs, error counters within limits (A6, B6).")
row_remap_check = _topic("row_remap", "No pending/failed row remap or page retirement; no reset requested (B7).")
thermal_check = _topic("thermal", "Temperature against the GPU's own slowdown threshold; throttle reasons (B10, B11).")
power_check = _topic("power", "Power limit at its default; P0 under load (B12).")
pcie_check = _topic("pcie", "PCIe width/generation against max, replay counter (B1, B2, B4).")
fabric_check = _topic("fabric", "NVLink fabric registration Completed on NVSwitch systems (A3).")
processes_check = _topic("processes", "No stray compute processes before tests; MIG state (B17).")


def topic_check(*ids: str) -> Callable[[Outputs, Mapping[str, Any]], list[Finding]]:
    """A check returning only the findings with ``ids`` (for a step about one topic)."""
    def check(outputs: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
        return _health(outputs, plan, tuple(ids))

    check.__name__ = "topic_check_" + "_".join(i.split(".")[-1] for i in ids)
    check.__doc__ = f"Findings {', '.join(ids)} from nvidia_smi_qx (else nvml)."
    return check
