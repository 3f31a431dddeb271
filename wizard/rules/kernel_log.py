"""The kernel-log check: GPU and hardware errors the kernel logged this boot, and ``bringup explain``
for a pasted kernel log.

This module reads the log, drops what the operator acknowledged, and hands each topic's events to
its rules: Xid, fallen off the bus and GSP (:mod:`wizard.rules.xid`), host memory and machine checks
(:mod:`wizard.rules.edac`); the rest are judged here:

* RmInitAdapter / invalid BAR / probe failures: fail. A GPU that worked before (the log shows it
  initialised, an Xid from it, or AER errors on it): the PCIe hardware path first (AER, seating,
  riser, power, cold power cycle). Otherwise the remedy gives both cases: intermittent -> that
  hardware path; never initialised -> Above 4G decoding (Resizable BAR left at the vendor default),
  then a driver new enough for the GPU. BAR mapping failures: Above 4G decoding / VM 64-bit MMIO.
* nouveau (or another driver) holding an NVIDIA GPU: fail (blacklist, rebuild initramfs).
* PCIe AER: fatal or "can't recover" -> fail; uncorrected non-fatal -> warn; a burst of corrected
  errors on one port or device (at least :data:`AER_BURST_MIN` at a pace above
  :data:`AER_BURST_RATE_PER_MIN` per minute, from the log's timestamps) -> warn (a marginal link); other corrected errors -> pass (information).
* "limited by ... link at <port>": warn, naming the upstream port.
* Unrecognised GPU-driver error lines and kernel oops/BUG reports: warn, with their keys so the
  operator can acknowledge each one (``assets/kernel_log_benign.csv`` lists the harmless ones).

Events whose :func:`wizard.parsers.kernellog.event_key` is in ``expectations["acknowledged"]`` do
not count; with ``expectations["boot_only"]`` true, only events of the last boot in the text
count. Both are listed in a ``skip`` finding so nothing is hidden. Without it (a pasted journal of several boots),
the events before the text's last reboot count, each finding saying so and at most a warning: the node has been
rebooted out of them.
"""

from __future__ import annotations

import dataclasses
import re
from collections import ChainMap, Counter, OrderedDict
from typing import Any, Mapping

from wizard.common import to_float
from wizard.data import table
from wizard.facts import facts_of
from wizard.model import Finding, Verdict
from wizard.parsers.gpu import parse_nvml
from wizard.parsers.kernellog import (
    KERNEL_SIGNATURES, KernelEvent, KernelLog, LogRecord, bus_id, event_key, parse_kernel_log, record_seconds,
)
from wizard.probes import ProbeOutput
from wizard.rules.common import Outputs, missing
from wizard.rules.edac import memory_findings
from wizard.rules.kernel_log_common import (OPTIONAL_GPU_MODULES,
    AER_WORDS, SRC_AER, SRC_GHES, acknowledged_keys, cap, device_name, gpu_name, plural,
)
from wizard.rules.xid import xid_findings
from wizard.i18n import Msg, N_, joined, names, SEMICOLON
from wizard.common import lazy_re

SRC_KERNEL_LOG = ("NVIDIA Xid catalog (https://docs.nvidia.com/deploy/xid-errors/); imbue cluster-health dmesg whitelist "
                  "(https://github.com/imbue-ai/cluster-health); dmesg(1) and journalctl(1) man pages")
SRC_LIMITED = ("Stas Bekman, Machine Learning Engineering, debug notes (https://github.com/stas00/ml-engineering); imbue "
               "cluster-health fix_pcie_limited.sh (https://github.com/imbue-ai/cluster-health); lspci(8) man page "
               "(https://man7.org/linux/man-pages/man8/lspci.8.html): GPUs lower their PCIe link speed when idle, so "
               "read LnkSta under load")
SRC_UNRECOGNISED = ("imbue cluster-health dmesg whitelist (https://github.com/imbue-ai/cluster-health): WARN on each "
                    "unrecognised kernel error message")
SRC_BAR = ("NVIDIA GPUDirect RDMA documentation, 'PCI BAR sizes' (https://docs.nvidia.com/cuda/gpudirect-rdma/); AMD "
           "ROCm GPU-server BIOS settings (Above 4G Decoding enabled, https://rocm.docs.amd.com/en/latest/how-to/"
           "system-optimization/mi100.html); NVIDIA/open-gpu-kernel-modules#862 (RTX 5090 RmInitAdapter failed with the "
           "BIOS PCI settings off); NVIDIA/gpu-operator#492 (VM 64-bit MMIO settings)")
SRC_OPEN_REFUSED = ("NVIDIA Linux driver README, 'Using the Open Kernel Modules' "
                    "(https://download.nvidia.com/XFree86/Linux-x86_64/595.58.03/README/kernel_open.html): which GPUs "
                    "the open modules support, and the NVreg_OpenRmEnableUnsupportedGpus parameter")
SRC_RMINIT = ("NVIDIA GPUDirect RDMA documentation, 'PCI BAR sizes' (https://docs.nvidia.com/cuda/gpudirect-rdma/); NVIDIA "
              "Xid catalog, Xid 79 (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html); NVIDIA open GPU "
              "kernel modules (https://github.com/NVIDIA/open-gpu-kernel-modules); "
              "illinois-scicomp/machine-shop-maintenance#76 (intermittent RmInitAdapter failure, only a reboot helped, "
              "IPMI PCIe bus error); NVIDIA/open-gpu-kernel-modules#862 (never initialised until the BIOS settings "
              "were changed)")
SRC_NOUVEAU = ("NVIDIA CUDA installation guide for Linux, 'Disabling Nouveau' "
               "(https://docs.nvidia.com/cuda/cuda-installation-guide-linux/); the NVRM message itself; "
               "beclab/Olares#3963 (nova_core holding the GPU on Ubuntu 26.04 kernels)")

AER_FAIL = frozenset({"fatal"})
AER_WARN = frozenset({"nonfatal"})
AER_BURST_RATE_PER_MIN = 8
"""Corrected AER errors from one port or device at a pace above this many per minute are a burst (WARN):
NVIDIA DCGM's PCIe check fails on more than 8 PCIe replays per minute (DCGM_FR_PCI_REPLAY_RATE), and
replays are what Bad TLP / Bad DLLP / Replay Timer Timeout / Receiver Error trigger on the link (PCI
Express Base Specification, Data Link Layer retry). The kernel's messages undercount the link's errors
(a "Multiple Corrected error received" message stands for two or more, and the AER driver rate-limits its
reports), so the pace of the messages is a lower bound of the replay rate."""
AER_BURST_MIN = 2
"""At least this many corrected errors (a "Multiple ..." message counts as two) make a burst when they come at the
pace below: one error is information, two within seconds already exceed DCGM's 8 replays per minute (the kernel's
AER messages are rate-limited and undercount the link's errors; derived)."""
AER_BURST_WINDOW_S = 60.0
"""The window the pace is measured in, seconds (DCGM counts replays per minute)."""
AER_BURST_MIN_SPAN_S = 1.0
"""Errors closer together than this are paced as if one second apart (a pace over less is noise)."""
SRC_AER_RATE = ("Linux PCI Express AER howto (https://docs.kernel.org/PCI/pcieaer-howto.html): corrected errors are "
                "recovered by hardware without loss, so one is information, but a stream of them shows a marginal "
                "link; PCI Express Base Specification (correctable errors Receiver Error, Bad TLP, Bad DLLP, "
                "REPLAY_NUM Rollover, Replay Timer Timeout: the Data Link Layer replays the TLP); NVIDIA DCGM "
                "diagnostics, DCGM_FR_PCI_REPLAY_RATE (more than 8 PCIe replays per minute; "
                "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html); NVIDIA Xid catalog, "
                "Xid 79 (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html)")


def benign_patterns() -> list[tuple[re.Pattern[str], str]]:
    """assets/kernel_log_benign.csv as compiled patterns (bad patterns are skipped)."""
    out = []
    for r in table("kernel_log_benign.csv"):
        try:
            out.append((re.compile(r["pattern"]), r.get("reason", "")))
        except (re.error, KeyError):
            continue
    return out


# ------------------------------------------------------------------ kernel log


def judge_kernel_log_text(text: str, expectations: Mapping[str, Any]) -> list[Finding]:
    """``bringup explain`` entry: parse a pasted kernel log and judge it."""
    return judge_kernel_log(parse_kernel_log(text), expectations, "pasted kernel log")


def judge_kernel_log(log: KernelLog, expectations: Mapping[str, Any], source: str = "kernel log",
                     gpu_index: Mapping[str, int] | None = None) -> list[Finding]:
    """Findings for one parsed kernel log. ``gpu_index`` maps PCI bus id ("0000:9b:00.0") to the
    GPU index (from NVML) so subjects can name it. Never raises."""
    exp = expectations if isinstance(expectations, Mapping) else {}
    try:
        return _judge_kernel_log(log, exp, source, gpu_index)
    except Exception as exc:  # noqa: BLE001 - a judge must not crash the stage
        return [Finding("health.kernel_log", Verdict.UNKNOWN, Msg("could not judge the kernel log: {exc!r}", exc=exc), "host",
                        cap(r.raw[0] for r in log.records[:5]),
                        "This is a bringup bug: please report it with the log.", SRC_KERNEL_LOG)]




def _judge_kernel_log(log: KernelLog, exp: Mapping[str, Any], source: str,
                      gpu_index: Mapping[str, int] | None) -> list[Finding]:
    if not log.records:
        return [Finding("health.kernel_log", Verdict.UNKNOWN, "could not tell: no kernel messages in the input",
                        "host", (source, "(no readable kernel log lines)"),
                        "Read the kernel log as root (or as a member of the adm / systemd-journal group): "
                        "`journalctl -k -b` or `dmesg`.", SRC_KERNEL_LOG)]
    if not log.formats and not log.events and not any(KERNEL_SIGNATURES.search(r.msg) for r in log.records):
        return [Finding("health.kernel_log", Verdict.UNKNOWN, "could not read this as a kernel log: no kernel "
                        "timestamps and no kernel messages", "host", cap([source] + [r.raw[0] for r in log.records]),
                        "Paste the raw output of `journalctl -k -b` or `dmesg`.", SRC_KERNEL_LOG)]
    ack = acknowledged_keys(exp)
    boot_only = bool(exp.get("boot_only"))
    counted: list[KernelEvent] = []
    acked: list[KernelEvent] = []
    earlier: list[KernelEvent] = []
    for ev in log.events:
        if boot_only and ev.boot != log.last_boot:
            earlier.append(ev)
        elif event_key(ev) in ack:
            acked.append(ev)
        else:
            counted.append(ev)
    cause = next((e for e in counted if e.kind in ("driver_conflict", "gpu_fell_off")
                  or (e.kind == "gpu_init" and e.bus_id and e.fields.get("what") != "bar_assign")), None)
    if cause is not None:
        # "The NVIDIA probe routine failed" / "No NVIDIA devices probed" after a conflict, a GPU that
        # fell off the bus or a named GPU's init failure is its consequence, not a second problem
        absorbed = [e for e in counted if e.kind == "gpu_init" and not e.bus_id
                    and e.fields.get("what") == "nvrm_probe_failed"]
        merged = dataclasses.replace(cause, evidence=list(dict.fromkeys(
            list(cause.evidence) + [ln for e in absorbed for ln in e.evidence])))
        gone = {id(e) for e in absorbed}
        counted = [merged if e is cause else e for e in counted if id(e) not in gone]
    # a log of several boots (a pasted journal): what happened before its last reboot is history the node has been
    # rebooted out of, said as such and at most a warning (walk 28 #5: an Xid 79 of an earlier boot failed the paste
    # and told an operator who had power-cycled the node to power-cycle it)
    before = [e for e in counted if log.boots > 1 and e.boot != log.last_boot]
    latest = [e for e in counted if e not in before]

    def of(events: list[KernelEvent]) -> list[Finding]:
        return (xid_findings(log, events, gpu_index) + _init_findings(log, events, gpu_index)
                + _conflict_findings(log, events, gpu_index, exp) + _aer_findings(log, events, gpu_index)
                + _limited_findings(log, events, gpu_index) + _cc_findings(log, events, gpu_index)
                + _iommu_findings(log, events, gpu_index)
                + memory_findings(log, events)
                + _unrecognised_findings(log, events))

    findings: list[Finding] = of(latest) + [_earlier_boot(f) for f in (of(before) if before else [])]
    findings += storage_io_findings(log)
    findings += nic_health_findings(log)
    findings += rdma_mr_findings(log) + rdma_cqe_findings(log)
    findings += host_limit_findings(log)
    findings += _link_findings(latest, log.named) + [_earlier_boot(f) for f in _link_findings(before, log.named)]
    findings += _sxid_findings(latest) + [_earlier_boot(f) for f in _sxid_findings(before)]
    findings += _amdgpu_findings(latest) + [_earlier_boot(f) for f in _amdgpu_findings(before)]
    from wizard.parsers.packages import INSERT_ERROR  # one pattern of a module that would not load

    inserts = [r.raw[0] for r in log.records if INSERT_ERROR.search(r.msg) or INSERT_ERROR.search(r.raw[0])]
    if inserts:  # modprobe / systemd-modules-load refusing an nvidia module in the same journal
        from wizard.rules.driver_install import insert_failure

        findings.append(insert_failure(inserts[-1].strip()))
    findings = _with_keys(findings, counted)
    if acked or earlier:
        parts: list[str] = []  # Msg pieces, joined below keeping them (walk 28 #13: English on a Chinese screen)
        if acked:
            parts.append(Msg("{n} acknowledged by the operator", n=len(acked)))
        if earlier:
            parts.append(Msg("{n} from earlier boots", n=len(earlier)))
        ev_lines = [f"{event_key(e)}: {e.record.raw[0]}" for e in (acked + earlier)]
        findings.append(Finding("health.kernel_log_ignored", Verdict.SKIP,
                                (Msg('{plural} not counted: ', plural=plural(len(acked) + len(earlier), 'kernel log event')) + joined(', ', parts)), "host", cap(ev_lines), "", SRC_KERNEL_LOG))
    if not any(f.verdict is not Verdict.SKIP for f in findings) and log.records and all(
            _AUDIT_ONLY.search(r.msg) for r in log.records):
        # AppArmor/SELinux audit records only (held-out round 274): nothing about the GPUs, their driver or PCIe
        findings.insert(0, Finding(
            "health.kernel_log", Verdict.UNKNOWN,
            Msg("these {plural} are audit records only (AppArmor/SELinux: a policy loaded or a call allowed or denied): "
                "they say nothing about the GPUs, their driver, PCIe or memory", plural=plural(log.lines, 'kernel log line')),
            "host", tuple(r.raw[0] for r in log.records[:3]),
            "Paste the whole kernel log of this boot (`sudo dmesg -T` or `journalctl -k -b`).", SRC_KERNEL_LOG))
    if not any(f.verdict is not Verdict.SKIP for f in findings):
        fmts = ", ".join(sorted(log.formats)) or "bare lines"
        findings.insert(0, Finding(
            "health.kernel_log", Verdict.PASS,
            Msg("no Xid, AER, EDAC/MCE, GPU-initialisation or driver-conflict errors in {plural} ({fmts})", plural=plural(log.lines, 'kernel log line'), fmts=fmts)
            + _shown(log), "host",
            (source, log.records[0].raw[0], log.records[-1].raw[-1]) if log.records else (source,),
            "", SRC_KERNEL_LOG))
    return findings


_AUDIT_ONLY = lazy_re(r"^audit: |^audit\(\d|\btype=\d{4} audit\(|\bapparmor=\"")
"""A kernel audit record (the audit subsystem's "audit: type=1400 audit(...): apparmor=..." lines)."""
_NVRM_LOADED = lazy_re(r"NVRM: loading NVIDIA UNIX (?:Open Kernel Module for \S+|\S+ Kernel Module)\s+(\d+\.\d+(?:\.\d+)?)"
                       r"|nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms\s+(\d+\.\d+(?:\.\d+)?)")
"""The driver's load banner: the proprietary module's "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07", the
open module's "NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  590.48.01", or nvidia-modeset's own banner
where the NVRM one is not in the paste."""
_NVSWITCH_PROBE = lazy_re(r"nvidia-nvswitch: Probing device (\S+?),")


def _shown(log: KernelLog) -> str:
    """"; it shows: NVIDIA driver 550.90.07 loaded, 8 GPU(s), 4 NVSwitch(es) probed": what a clean log proves came up,
    so a pass says what it rests on ("" when the log shows none of these)."""
    drv = next((m.group(1) or m.group(2) for r in log.records for m in [_NVRM_LOADED.search(r.msg)] if m), "")
    switches = {m.group(1) for r in log.records for m in [_NVSWITCH_PROBE.search(r.msg)] if m}
    parts = ([Msg("NVIDIA driver {v} loaded", v=drv)] if drv else []) + (
        [Msg("{n} GPU(s)", n=len(log.gpus))] if log.gpus else []) + (
        [Msg("{n} NVSwitch(es) probed", n=len(switches))] if switches else [])
    return Msg("; it shows: {what}", what=joined(", ", parts)) if parts else ""


EARLIER_BOOT = N_(" (in an earlier boot of this log: the node has rebooted since)")
EARLIER_BOOT_REMEDY = N_("The node has rebooted since this event: check that the current boot is clean (`journalctl -k "
                         "-b`) and validate the GPU under load; if the event comes back, act on it: ")


def _earlier_boot(f: Finding) -> Finding:
    """A finding of events before the log's last reboot: said so, a fail made a warning (:func:`judge_kernel_log`)."""
    if f.verdict not in (Verdict.FAIL, Verdict.WARN):
        return f
    return dataclasses.replace(f, verdict=Verdict.WARN, message=f.message + Msg(EARLIER_BOOT),
                               remedy=(Msg(EARLIER_BOOT_REMEDY) + f.remedy) if f.remedy else f.remedy)


def _with_keys(findings: list[Finding], events: list[KernelEvent]) -> list[Finding]:
    """Give each warn/fail finding the keys of the events it rests on (comma-separated), so the
    operator can acknowledge exactly those events (``bringup ack``, TUI ``x``)."""
    by_line: dict[str, str] = {}
    for e in events:
        if e.record.raw:
            by_line.setdefault(e.record.raw[0], event_key(e))
    out = []
    for f in findings:
        if f.verdict in (Verdict.FAIL, Verdict.WARN) and not f.key:
            keys = sorted({by_line[ln] for ln in f.evidence if ln in by_line})
            if keys:
                f = dataclasses.replace(f, key=",".join(keys))
        out.append(f)
    return out


# ---- GPU initialisation (RmInitAdapter, BARs, probe failures)

BAR_REMEDY = (
    "The GPU's memory windows (PCI BARs) could not be mapped. Enable 'Above 4G Decoding' (64-bit MMIO) in the BIOS "
    "and leave Resizable BAR at the vendor default, then cold-boot and check again. In a VM, give the guest enough "
    "64-bit MMIO space (UEFI/OVMF firmware; on VMware pciPassthru.use64bitMMIO=TRUE and pciPassthru.64bitMMIOSizeGB).")
RMINIT_HW_PATH = N_(
    "check the hardware path first: PCIe AER errors on the GPU and its upstream port (`journalctl -k | grep -i aer`, "
    "and the BMC event log), then reseat the GPU, its riser and its auxiliary power cables, and cold power-cycle the "
    "node (power off at the PSUs, not only a reboot); if it fails again in the same slot, swap slots to tell a bad card "
    "from a bad slot, and RMA the card if the failure follows it")
RMINIT_NEVER = N_(
    "enable 'Above 4G Decoding' (64-bit MMIO) in the BIOS, leaving Resizable BAR at the vendor default; then make sure "
    "the installed driver is new enough for this GPU (Blackwell and Grace Hopper need the open kernel modules) and "
    "that nouveau is not loaded")
RMINIT_REMEDY = Msg(
    "The NVIDIA driver could not initialise the GPU (RmInitAdapter failed). If this GPU worked before or the failure "
    "comes and goes (only a reboot helps), {hw_path}. If it never initialised on this host, {never}. If it persists, "
    "collect `nvidia-bug-report.sh` for the vendor.", hw_path=RMINIT_HW_PATH, never=RMINIT_NEVER)
"""RmInitAdapter remedy when the log does not show whether the GPU ever worked: the intermittent
(hardware path) case first, then the never-initialised (BIOS Above 4G decoding, driver support)
case. Sources: NVIDIA GPUDirect RDMA documentation 'PCI BAR sizes' and AMD's GPU-server BIOS table
(Above 4G decoding on; no vendor says to change Resizable BAR, so it stays at the vendor default),
the NVIDIA Xid catalog's Xid 79 row (AER logs, risers, power cables; full power cycle), NVIDIA's open
GPU kernel modules (required for Blackwell / Grace Hopper); illinois-scicomp/machine-shop-maintenance#76
(intermittent RmInitAdapter failure on a Titan V that only a reboot cleared, with an IPMI PCIe bus
error); NVIDIA/open-gpu-kernel-modules#862 (RTX 5090 that never initialised until Above 4G
decoding was enabled)."""
RMINIT_REMEDY_WORKED = Msg(
    "The NVIDIA driver could not initialise this GPU (RmInitAdapter failed), and the log shows it worked before "
    "(or PCIe errors on it), so the BIOS and driver are not the first suspects: {hw_path}. If it persists, collect "
    "`nvidia-bug-report.sh` for the vendor.", hw_path=RMINIT_HW_PATH)
"""RmInitAdapter remedy when the same log shows the GPU initialised (``NVRM: GPU at PCI:...`` with
its UUID, or an Xid from it) or PCIe AER errors on it (same sources as :data:`RMINIT_REMEDY`)."""


SRC_CC = ("NVIDIA Confidential Computing release notes, R550 TRD1 (H100 in CC mode: past the limits of AES-GCM 'the VM "
          "needs to be restarted'), https://docs.nvidia.com/confidential-computing/release-notes/r550-trd1; NVIDIA GPU "
          "Admin Tools (CC mode query and switch, reset after a switch), https://github.com/NVIDIA/gpu-admin-tools")


def _cc_findings(log: KernelLog, events: list[KernelEvent], gpu_index: Mapping[str, int] | None) -> list[Finding]:
    """``health.gsp`` fail for the driver's confidential-computing fatal error state (GSP-DMA encrypt/decrypt failed):
    the GPU takes no more work until the confidential VM and the GPU are restarted."""
    evs = [e for e in events if e.kind == "cc_fatal"]
    if not evs:
        return []
    bus = next((e.bus_id for e in evs if e.bus_id), "")
    name = gpu_name(log, bus, gpu_index) if bus else "host"
    return [Finding("health.gsp", Verdict.FAIL,
                    Msg("{name}: the driver entered its confidential-computing fatal error state (GSP-DMA encryption "
                        "failed): the GPU takes no more work until the confidential VM and the GPU are restarted",
                        name=name) if bus else
                    Msg("the driver entered its confidential-computing fatal error state (GSP-DMA encryption failed): "
                        "the GPU takes no more work until the confidential VM and the GPU are restarted"), name,
                    cap(ln for e in evs for ln in e.evidence),
                    "Restart the confidential VM and reset the GPU; if it recurs, check that the driver, VBIOS and CC "
                    "mode are a supported combination (`nvidia_gpu_tools.py --query-cc-mode`) and the TDX or SEV-SNP "
                    "host's set-up, then report it to NVIDIA with an nvidia-bug-report.", SRC_CC)]


_GSP_IMAGE = lazy_re(r"GSP firmware image version mismatch|Error preparing GSP-RM image")
"""The driver refusing the GSP firmware file it found: another driver version's (the NVIDIA driver README, 'GSP
Firmware': the firmware is installed in /lib/firmware/nvidia/<driver version>/ and must match the module)."""


def _init_findings(log: KernelLog, events: list[KernelEvent], gpu_index: Mapping[str, int] | None) -> list[Finding]:
    evs = [e for e in events if e.kind == "gpu_init"]
    if not evs:
        return []
    by_bus: "OrderedDict[str, list[KernelEvent]]" = OrderedDict()
    hostwide: list[KernelEvent] = []
    for e in evs:
        if e.fields.get("what") == "bar_assign" and not log.is_nvidia_gpu(e.bus_id):
            # BAR assignment trouble on a bridge/port: only a hint for an NVIDIA failure below it
            hostwide.append(e)
            continue
        if e.bus_id:
            by_bus.setdefault(e.bus_id, []).append(e)
        else:
            hostwide.append(e)
    real_host = [e for e in hostwide if e.fields.get("what") != "bar_assign"]
    if not by_bus and real_host:
        by_bus[""] = []
    out: list[Finding] = []
    for bus, group in by_bus.items():
        members = group + (hostwide if len(by_bus) == 1 else real_host if bus == "" else [])
        whats = {e.fields.get("what") for e in members}
        hard = whats & {"rminit", "bar_invalid", "probe_failed", "nvrm_probe_failed", "unsupported", "open_refused"}
        bar = any(e.fields.get("hint") == "bar" for e in members)
        name = gpu_name(log, bus, gpu_index) if bus else "host"
        ordered = sorted(members, key=lambda e: e.record.line_no)
        evidence = cap(ln for e in ordered for ln in e.evidence)
        if hard:
            what: list[str] = []
            gsp_image = next((m for ln in evidence for m in [_GSP_IMAGE.search(ln)] if m), None)
            if gsp_image is not None:  # the firmware file is another driver version's: not the GPU
                what.append(Msg.plain(N_("its GSP firmware file is of another driver version than the kernel module")))
            elif "rminit" in whats and not any(re.search(r"RmInitAdapter|rm_init_adapter", ln, re.I) for ln in evidence) and any(
                    "kgsp" in ln or "Booter" in ln for ln in evidence):  # the GSP's own boot failing before RmInitAdapter says anything
                what.append(Msg.plain(N_("its GSP firmware never finished booting")))
            elif "rminit" in whats:
                what.append(Msg.plain(N_("RmInitAdapter failed")))
            if "bar_invalid" in whats:
                what.append(Msg.plain(N_("its PCI BAR region is invalid")))
            if "probe_failed" in whats or "nvrm_probe_failed" in whats:
                what.append(Msg.plain(N_("the NVIDIA probe failed")))
            unsupported = next((e for e in members if e.fields.get("what") == "unsupported"), None)
            if unsupported is not None:
                rel = unsupported.fields.get("release") or "this"
                pid = unsupported.fields.get("pci_id")
                what.append(Msg("driver release {rel} does not support this GPU", rel=rel)
                            + (Msg(" (PCI ID {pid})", pid=pid) if pid else ""))
            if "open_refused" in whats:
                what.append(Msg.plain(N_("the open kernel module refused it: it drives only Data Center GPUs unless "
                                         "NVreg_OpenRmEnableUnsupportedGpus=1 is set")))
            subject = name
            msg = (Msg('{name}: the NVIDIA driver could not initialise the GPU ({what})', name=name, what=joined('; ', what)) if bus else Msg('the NVIDIA driver could not initialise a GPU ({what})', what=joined('; ', what)))

            worked = bool(bus) and _worked_before(log, bus)
            remedy = BAR_REMEDY if bar else RMINIT_REMEDY_WORKED if worked else RMINIT_REMEDY
            if whats == {"open_refused"}:
                remedy = Msg("Install the driver's proprietary kernel modules (the other flavour of the same release), "
                             "or a release whose open kernel modules support this GPU by default; forcing them with the "
                             "nvidia module parameter NVreg_OpenRmEnableUnsupportedGpus=1 runs a support level NVIDIA "
                             "calls not ready. Then reboot.")
            if gsp_image is not None:
                remedy = N_("Reinstall the driver so the kernel module and its GSP firmware (/lib/firmware/nvidia/"
                            "<version>/gsp_*.bin) are of one version: a partial upgrade, or a container whose driver "
                            "differs from the host's module, leaves them apart; then reboot (or reload the module).")
            if whats == {"unsupported"}:
                remedy = (Msg("Install a driver branch that lists this GPU in its README's 'Appendix A - Supported NVIDIA GPU Products' (a GPU newer than the branch needs a newer branch; Blackwell and Grace Hopper need the open kernel modules; a legacy GPU needs its legacy branch), then reboot."))
            out.append(Finding("health.gpu_init", Verdict.FAIL, msg, subject, evidence, remedy,
                               SRC_BAR if bar else SRC_OPEN_REFUSED if whats == {"open_refused"} else SRC_RMINIT))
        elif bus and any(e.fields.get("what") == "bar_assign" and not e.fields.get("resolved") for e in members):
            # a BAR left unassigned: the driver cannot map it (the same as another device's, _endpoint_bars)
            out.append(Finding("health.gpu_init", Verdict.FAIL,
                               Msg("{name}: the kernel could not assign all of the GPU's PCI BARs (memory windows)", name=name),
                               name, evidence, BAR_REMEDY, SRC_BAR))
    if not out:
        out += _endpoint_bars(hostwide)
    return out


_ENDPOINT_BAR = lazy_re(r"bar [0-5]$")
"""A device's own BARs (0-5); BAR 6 is its expansion ROM, 7 and up (13-15 on a bridge) and "bridge window" are the
windows a bridge forwards, which the devices below it need but which may be re-placed by a later pass."""


_VF_BAR = lazy_re(r"bar (?:[7-9]|1[0-2])$")
"""BARs 7-12 of an endpoint: its SR-IOV virtual functions' BARs (Linux PCI_IOV_RESOURCES, include/linux/pci.h)."""


def _bar_warning(evs: list[KernelEvent], words: Any) -> Finding:
    """``health.gpu_init`` WARN for BARs of ``evs`` left unassigned; ``words(devices, what, first_bus)`` gives the
    message and the remedy."""
    devs = list(dict.fromkeys(e.bus_id for e in evs))
    what = names(list(dict.fromkeys(str(e.fields.get("bar")).upper() for e in evs)))
    msg, remedy = words(names(devs), what, devs[0])
    return Finding("health.gpu_init", Verdict.WARN, msg, ", ".join(devs), cap(ln for e in evs for ln in e.evidence),
                   remedy, SRC_BAR)


def _endpoint_bars(hostwide: list[KernelEvent]) -> list[Finding]:
    """health.gpu_init fail when a device's own memory BAR (0-5) was left unassigned ("BAR 0: no space for [mem ...]",
    "failed to assign") and no later line of the log assigned it: its driver cannot map the device, so on a GPU server
    a GPU, NIC or NVMe drive is missing or fails to probe (r36 #03, a Supermicro GPU server's boot log). A function on
    the root bus (the chipset's: held-out round 203) and an SR-IOV VF BAR (7-12: held-out round 259) warn. An I/O-space
    BAR, a ROM, or a bridge window alone is not judged (I/O space runs out harmlessly on large servers)."""
    unassigned = [e for e in hostwide if e.fields.get("what") == "bar_assign" and not e.fields.get("resolved")
                  and e.fields.get("space") == "mem"]
    bad = [e for e in unassigned if _ENDPOINT_BAR.match(str(e.fields.get("bar")))]
    # a function on the root bus (0000:00:xx.x) is integrated in the chipset or CPU (the PCH's SPI or SMBus
    # controller): a GPU, NIC or NVMe drive of a GPU server sits behind a root port, on a bus of its own
    chipset = [e for e in bad if e.bus_id.startswith("0000:00:")]
    bad = [e for e in bad if e not in chipset]
    vf = [e for e in unassigned if _VF_BAR.match(str(e.fields.get("bar")))]
    out: list[Finding] = []
    if chipset and not bad:
        out.append(_bar_warning(chipset, lambda devices, what, bus: (
            Msg("{devices}: the kernel could not assign {what} of a function on the root bus (a chipset or "
                "CPU-integrated device, not a GPU, NIC or NVMe drive behind a root port): that device works without it "
                "or not at all; the GPUs are not concerned", devices=devices, what=what),
            Msg("Name it with `lspci -s {bus}`; if it is a device you need, enable 'Above 4G Decoding' in the BIOS or "
                "boot with `pci=realloc`.", bus=bus))))
    if vf:
        out.append(_bar_warning(vf, lambda devices, what, bus: (
            Msg("{devices}: the kernel could not assign the SR-IOV virtual functions' BAR ({what}): the device itself "
                "works, but its virtual functions (VFs for pods or VMs) cannot be enabled", devices=devices, what=what),
            Msg("If this node needs the VFs, enable SR-IOV and 'Above 4G Decoding' in the BIOS (or boot with "
                "`pci=realloc`), then check that `BAR 7` is assigned."))))
    if not bad:
        return out
    devices = list(dict.fromkeys(e.bus_id for e in bad))
    related = [e for e in hostwide if e.fields.get("what") == "bar_assign" and not e.fields.get("resolved")]
    evidence = cap(ln for e in sorted(related, key=lambda e: e.record.line_no) for ln in e.evidence)
    return out + [Finding("health.gpu_init", Verdict.FAIL,
                    Msg("{devices}: the kernel could not assign {what} (a device's own memory window) and no later "
                        "line assigned it, so its driver cannot use the device: on a GPU server a GPU, NIC or NVMe "
                        "drive is missing or fails to probe", devices=names(devices),
                        what=names(list(dict.fromkeys(str(e.fields.get("bar")).upper() for e in bad)))),
                    ", ".join(devices), evidence,
                    Msg("Find the device with `lspci -s {bus}` and the bridge above it (`lspci -tv`). Enable 'Above 4G "
                        "Decoding' (64-bit MMIO) in the BIOS and leave Resizable BAR at the vendor default, then "
                        "cold-boot and check the log again; if the firmware has no such setting, boot with "
                        "`pci=realloc` (the kernel re-sizes the bridge windows itself).", bus=devices[0]),
                    SRC_BAR + "; Linux kernel parameters, pci=realloc (reallocate PCI bridge resources when the BIOS "
                    "left them too small for the devices below), https://docs.kernel.org/admin-guide/kernel-parameters.html")]


def _worked_before(log: KernelLog, bus: str) -> bool:
    """The log shows GPU ``bus`` initialised at some point (``NVRM: GPU at PCI:<bus>: GPU-<uuid>``,
    printed when the driver brings a GPU up, or an Xid from it), or PCIe AER errors on it."""
    info = log.gpus.get(bus)
    if info is not None and info.uuid:
        return True
    for e in log.events:
        if e.kind == "xid" and e.bus_id == bus:
            return True
        if e.kind == "aer" and bus in (e.bus_id, e.fields.get("source"), e.fields.get("affects_gpu")):
            return True
    return False


# ---- driver conflicts


PASSTHROUGH_DRIVERS = ("vfio-pci", "vfio_pci", "pci-stub", "pci_stub")
"""Drivers that hold a GPU on purpose for VM passthrough (not a conflict to blacklist away)."""


def _conflict_findings(log: KernelLog, events: list[KernelEvent], gpu_index: Mapping[str, int] | None,
                       exp: Mapping[str, Any] | None = None) -> list[Finding]:
    evs = [e for e in events if e.kind == "driver_conflict"]
    if not evs:
        return []
    passthrough = [e for e in evs if str(e.fields.get("driver", "")).lower() in PASSTHROUGH_DRIVERS]
    evs = [e for e in evs if e not in passthrough]
    out: list[Finding] = []
    mismatch = [e for e in evs if e.fields.get("what") == "api_mismatch"]
    symbols = [e for e in evs if e.fields.get("what") == "unknown_symbol"]
    evs = [e for e in evs if e not in mismatch and e not in symbols]
    for mod_name in dict.fromkeys(str(e.fields.get("module")) for e in symbols):
        mine = [e for e in symbols if e.fields.get("module") == mod_name]
        names = ", ".join(dict.fromkeys(str(e.fields.get("symbol")) for e in mine))
        peer = mod_name in ("nv_peer_mem", "nvidia_peermem", "nvidia-peermem")
        lost = OPTIONAL_GPU_MODULES.get(mod_name)  # a feature beside the GPU driver: warn, naming what is lost
        out.append(Finding("health.driver_conflict", Verdict.WARN if lost else Verdict.FAIL,
                           Msg("the {module} kernel module does not load: the running kernel or RDMA stack lacks "
                               "symbols it was built against ({names})", module=mod_name, names=names)
                           + (Msg("; without it there is no {lost}; the GPUs themselves work", lost=Msg(lost))
                              if lost else
                              Msg("; without it there is no GPUDirect RDMA (every inter-node transfer is staged "
                                  "through host memory)") if peer else ""), "host",
                           cap(ln for e in mine for ln in e.evidence),
                           N_("The peer-memory module needs the RDMA stack it was built against: install the MLNX_OFED "
                              "or DOCA-OFED whose ib_core provides the peer-memory API, then rebuild nvidia_peermem "
                              "against it (reinstall the driver, or its DKMS package, after the OFED); or use DMA-BUF "
                              "instead (the open GPU kernel modules on Linux 5.12 or newer; NCCL uses it unless NCCL_DMABUF_ENABLE=0).") if peer else
                           N_("Rebuild the module for the running kernel: install the headers for `uname -r` and run "
                              "`sudo dkms autoinstall` (or reinstall the driver package), then load it again and read "
                              "`dmesg | tail`."),
                           "Linux kernel/module.c (the loader's 'Unknown symbol' and 'disagrees about version of "
                           "symbol'); NVIDIA GPUDirect RDMA documentation, nvidia-peermem and DMA-BUF "
                           "(https://docs.nvidia.com/cuda/gpudirect-rdma/)"))
    if mismatch:
        e = mismatch[-1]
        client, module = e.fields.get("client"), e.fields.get("module")
        out.append(Finding("health.driver_conflict", Verdict.FAIL,
                           Msg("the loaded NVIDIA kernel module ({a1}) refused a user-space driver library of version "
                               "{client} (NVRM API mismatch): NVML and CUDA fail ('Driver/library version mismatch') "
                               "until both are one version", a1=module or 'another version', client=client), "host",
                           cap(ln for x in mismatch for ln in x.evidence),
                           "Make the module and the user-space libraries one version: after a driver upgrade reboot (or "
                           "unload and reload the nvidia modules); otherwise remove the second driver install (a .run "
                           "install over packages, a container image's own driver libraries) and reinstall the driver "
                           "packages.", "NVIDIA driver README (the kernel module and user-space components must be the "
                           "same version); nvidia-smi(1): 'Driver/library version mismatch'"))
    for e in passthrough:
        name = gpu_name(log, e.bus_id, gpu_index)
        hosts_vms = bool((exp or {}).get("virtualization"))
        out.append(Finding("health.driver_conflict", Verdict.WARN if hosts_vms else Verdict.FAIL,
                           Msg("{name} is bound to {get} (reserved for VM passthrough), so the NVIDIA driver cannot use it", name=name, get=e.fields.get('driver')), name, cap(e.evidence),
                           "If this node should train on the GPU itself, remove its vfio-pci binding (vfio-pci.ids= on "
                           "the kernel command line or in /etc/modprobe.d), rebuild the initramfs and reboot; if the GPU "
                           "is meant for a VM, this is expected.", SRC_NOUVEAU))
    if not evs:
        return out
    drivers = sorted({str(e.fields.get("driver")) for e in evs if e.fields.get("driver")})
    buses = sorted({e.bus_id for e in evs if e.bus_id})
    n_dev = max([int(e.fields.get("devices", 0) or 0) for e in evs] + [len(buses)])
    evidence = cap(ln for e in evs for ln in e.evidence)
    who = ", ".join(drivers) if drivers else Msg("nouveau, rivafb, nvidiafb or rivatv")
    subject = gpu_name(log, buses[0], gpu_index) if len(buses) == 1 else "host"
    where = ((plural(n_dev, 'GPU') if n_dev else Msg('the GPUs')) + (f" ({', '.join(buses)})" if buses else ''))
    block = ["nouveau"] + [d for d in drivers if d.lower() not in ("nouveau",)]
    if any(d.lower().startswith("nova") for d in drivers):
        block += ["nova_core", "nova_drm"]
    block = list(dict.fromkeys(b for b in block if not b.lower().startswith("novacore")))
    lines = " + ".join(f"'blacklist {b}'" for b in block)
    remedy = (Msg("Stop {who} from claiming the GPUs: put {lines} (and 'options nouveau modeset=0') in a "
                  "file under /etc/modprobe.d/, rebuild the initramfs (`update-initramfs -u` on "
                  "Debian/Ubuntu, `dracut -f` on RHEL-family), reboot, then load the NVIDIA driver "
                  "(`modprobe nvidia`) and check `nvidia-smi`.", who=who, lines=lines))
    out.append(Finding("health.driver_conflict", Verdict.FAIL,
                       (Msg("another driver ({who}) holds {where}, so the NVIDIA driver cannot use it", who=who, where=where) if n_dev == 1 else
                        Msg("another driver ({who}) holds {where}, so the NVIDIA driver cannot use them", who=who, where=where)), subject, evidence, remedy, SRC_NOUVEAU))
    return out


# ---- PCIe AER (kernel AER lines and firmware-first APEI GHES PCIe records)

def _weight(line: str) -> int:
    """How many errors one AER message stands for: "Multiple Corrected error received" says two or more."""
    return 2 if "multiple" in line.lower() else 1


def aer_burst(stamps: list[tuple[float, str]]) -> tuple[int, float, list[str]] | None:
    """(errors, seconds spanned, evidence lines) of the densest run of corrected AER messages within
    :data:`AER_BURST_WINDOW_S` that holds at least :data:`AER_BURST_MIN` errors at a pace above
    :data:`AER_BURST_RATE_PER_MIN` per minute; None otherwise (sparse errors are information)."""
    pts = sorted(stamps, key=lambda x: x[0])
    best: tuple[int, int, int] | None = None  # (errors, lo, hi)
    j = 0
    for i in range(len(pts)):
        while pts[i][0] - pts[j][0] > AER_BURST_WINDOW_S:
            j += 1
        n = sum(_weight(ln) for _, ln in pts[j:i + 1])
        span = max(pts[i][0] - pts[j][0], AER_BURST_MIN_SPAN_S)
        if n >= AER_BURST_MIN and (n - 1) * 60.0 / span > AER_BURST_RATE_PER_MIN and (best is None or n > best[0]):
            best = (n, j, i)
    if best is None:
        return None
    n, lo, hi = best
    return n, pts[hi][0] - pts[lo][0], [ln for _, ln in pts[lo:hi + 1]]


def _aer_rates(log: KernelLog, events: list[KernelEvent]) -> tuple[dict[str, tuple[int, float, list[str]]], set[str]]:
    """Per reporting port (or device, for AER lines without a port): a burst of corrected errors
    (:func:`aer_burst`) from the "error received" messages, or from the error reports themselves when
    the log has no such message for it. Ports whose reports were all acknowledged or left out (earlier
    boots) are skipped. Also returns the ports and devices whose messages carry timestamps."""
    counted_boots = {e.boot for e in events} | {log.last_boot}
    left_out = {str(e.fields.get("port") or e.bus_id) for e in log.events if e.kind == "aer"} - {
        str(e.fields.get("port") or e.bus_id) for e in events if e.kind == "aer"}
    stamps: dict[str, list[tuple[float, str]]] = {}
    for m in log.aer_received:
        sec = m.fields.get("seconds")
        port = str(m.fields.get("port") or "")
        if (m.fields.get("severity") == "corrected" and isinstance(sec, float) and m.boot in counted_boots
                and port not in left_out):
            stamps.setdefault(port, []).append((sec, m.evidence[0] if m.evidence else ""))
    for e in events:
        port = str(e.fields.get("port") or e.bus_id)
        sec = record_seconds(e.record)
        if e.kind == "aer" and e.fields.get("severity") == "corrected" and port not in stamps and sec is not None:
            stamps.setdefault("@" + port, []).append((sec, e.record.raw[0]))
    out: dict[str, tuple[int, float, list[str]]] = {}
    for port, pts in stamps.items():
        b = aer_burst(pts)
        if b is not None:
            out[port.lstrip("@")] = b
    return out, {p.lstrip("@") for p in stamps}


def _burst_text(b: tuple[int, float, list[str]]) -> str:
    n, span, _ = b
    return Msg("a burst of {n} corrected errors within {span:.1f} s (a pace above {rate} per minute: a marginal link)",
               n=n, span=span, rate=AER_BURST_RATE_PER_MIN)


AER_BURST_REMEDY = ("A burst of corrected PCIe errors means the link is marginal (signal integrity): reseat the GPU and "
                    "its riser/cable, check the slot and the card's power, update BIOS/firmware; rerun a load and count "
                    "them (/sys/bus/pci/devices/<bdf>/aer_dev_correctable, `journalctl -k | grep -i aer`). Watch for "
                    "uncorrected errors and Xid 79 (GPU fallen off the bus), which such links lead to.")


def _aer_findings(log: KernelLog, events: list[KernelEvent], gpu_index: Mapping[str, int] | None) -> list[Finding]:
    rates, stamped = _aer_rates(log, events)
    groups: "OrderedDict[str, list[KernelEvent]]" = OrderedDict()
    for e in events:
        if e.kind == "aer":
            dev = e.fields.get("source") or e.bus_id
            groups.setdefault(dev, []).append(e)
        elif e.kind == "ghes" and "pcie" in str(e.fields.get("section", "")):
            groups.setdefault(e.bus_id, []).append(e)
    out: list[Finding] = []
    for dev, evs in groups.items():
        sevs = [str(e.fields.get("severity") or "nonfatal") for e in evs]
        failed = any(e.fields.get("recovery_failed") for e in evs)
        if failed or any(s in AER_FAIL for s in sevs):
            verdict = Verdict.FAIL
        elif any(s in AER_WARN for s in sevs):
            verdict = Verdict.WARN
        else:
            verdict = Verdict.PASS
        worst_sev = "fatal" if verdict is Verdict.FAIL else "nonfatal" if verdict is Verdict.WARN else "corrected"
        pci_id = next((str(e.fields.get("pci_id")) for e in evs if e.fields.get("pci_id")), "")
        gpu = next((str(e.fields.get("affects_gpu")) for e in evs if e.fields.get("affects_gpu")), "")
        port = next((str(e.fields.get("port")) for e in evs if e.fields.get("port")), "")
        is_gpu = bool(dev) and log.is_nvidia_gpu(dev)
        subject = gpu_name(log, gpu, gpu_index) if (gpu and not is_gpu) else device_name(log, dev, gpu_index, pci_id)
        where = device_name(log, dev, gpu_index, pci_id)
        types = sorted({str(e.fields.get("type")) for e in evs if e.fields.get("type")})
        names = sorted({n for e in evs for n in e.fields.get("errors", [])})
        firmware = any(e.kind == "ghes" for e in evs)
        burst = rates.pop(port, None) or rates.pop(dev, None)
        if burst is not None and verdict is Verdict.PASS:
            verdict = Verdict.WARN
        detail = ", ".join(types + [f"'{n}'" for n in names])
        noun = plural(len(evs), 'PCIe ' + ('firmware-reported (APEI) ' if firmware else 'AER ') + 'error')
        # "all corrected", not "worst corrected", where every one was corrected (walk 18: an OK next to "1 error")
        msg = ((Msg('{plural} on {where}, all corrected', plural=noun, where=where) if worst_sev == "corrected" else
                Msg('{plural} on {where}, worst {aer_words}', plural=noun, where=where, aer_words=Msg(AER_WORDS[worst_sev])))
               + (f' ({detail})' if detail else ''))
        if failed:
            msg += (Msg('; the kernel could not recover the device'))
        if port and port != dev:
            msg += (Msg('; reported by upstream port {port}', port=port))
        if gpu and gpu != dev:
            msg += (Msg('; the GPU below it is {gpu}', gpu=gpu))
        if burst is not None:
            msg += "; " + _burst_text(burst)
        if verdict is Verdict.FAIL:
            remedy: str = (Msg('A fatal PCIe error took this link down. Power-cycle, then reseat the device and its riser/cables under this port, check its power and cooling, and update BIOS/firmware; if it repeats in the same slot, move the card to another slot to tell a bad card from a bad slot.'))
        elif verdict is Verdict.WARN and worst_sev == "corrected":
            remedy = AER_BURST_REMEDY
        elif verdict is Verdict.WARN:
            remedy = (Msg('Uncorrected (non-fatal) PCIe errors: watch whether they repeat (`journalctl -k | grep -i aer`, /sys/bus/pci/devices/<bdf>/aer_dev_nonfatal); reseat the device and riser, check cables, update BIOS/firmware.'))
        else:
            remedy = ""
            msg += (Msg(' (information: no burst, never {aer_burst_min} or more at a pace above {aer_burst_rate_per_min} per minute; corrected errors matter only if their count grows during a stage)', aer_burst_min=AER_BURST_MIN, aer_burst_rate_per_min=AER_BURST_RATE_PER_MIN) if port in stamped or dev in stamped else Msg(' (information: the lines carry no timestamps, so their rate cannot be told; corrected errors matter only if their count grows during a stage)'))
        src = SRC_GHES if firmware else SRC_AER
        ev = cap(ln for e in evs for ln in e.evidence)
        if burst is not None:
            src = f"{src}; {SRC_AER_RATE}"
            ev = cap(list(burst[2][:6]) + [ln for ln in ev if ln not in burst[2]])
        out.append(Finding("health.aer", verdict, msg, subject, ev, remedy, src))
    out += _aer_messages_alone(log, events, groups, rates, gpu_index)
    for port, b in rates.items():  # corrected-error messages without any error report of their own
        name = device_name(log, port, gpu_index, "")
        out.append(Finding("health.aer", Verdict.WARN, Msg("PCIe port {name}: {burst_text}", name=name, burst_text=_burst_text(b)), name, cap(b[2]),
                           AER_BURST_REMEDY, f"{SRC_AER}; {SRC_AER_RATE}"))
    return out


def _aer_messages_alone(log: KernelLog, events: list[KernelEvent], groups: Mapping[str, list[KernelEvent]],
                        bursts: Mapping[str, Any], gpu_index: Mapping[str, int] | None) -> list[Finding]:
    """``health.aer`` for ports whose AER "error received" messages came without the error reports that follow them
    (the kernel rate-limits those: "AER: Corrected error received: 0000:2a:00.0" alone; walk 22: such a log was said
    to have no AER error). Judged by the messages' own severity, as the reports would be; a port already judged
    through its reports or as a burst is not said twice."""
    counted_boots = {e.boot for e in events} | {log.last_boot}
    covered = set(groups) | {str(e.fields.get("port") or "") for evs in groups.values() for e in evs} | set(bursts)
    alone: "OrderedDict[str, list[KernelEvent]]" = OrderedDict()
    for m in log.aer_received:
        port = str(m.fields.get("port") or "")
        if m.boot in counted_boots and port and port not in covered:
            alone.setdefault(port, []).append(m)
    out: list[Finding] = []
    for port, ms in alone.items():
        sevs = {str(m.fields.get("severity") or "corrected") for m in ms}
        verdict = Verdict.FAIL if sevs & AER_FAIL else Verdict.WARN if sevs & AER_WARN else Verdict.PASS
        worst_sev = "fatal" if verdict is Verdict.FAIL else "nonfatal" if verdict is Verdict.WARN else "corrected"
        source = str(ms[-1].fields.get("source") or port)
        n = sum(_weight(m.evidence[0] if m.evidence else "") for m in ms)
        how = Msg("all corrected") if verdict is Verdict.PASS else Msg("worst {aer_words}",
                                                                      aer_words=Msg(AER_WORDS[worst_sev]))
        msg = (Msg("{n} PCIe AER error message(s) from {source}, reported by the port above it ({port}), {how}; the kernel printed "
                   "no error report for them (it rate-limits those), so their type is not known",
                   n=n, port=device_name(log, port, gpu_index, ""), source=device_name(log, source, gpu_index, ""),
                   how=how)
               + (Msg(" (information: corrected errors matter only if their count grows during a stage)")
                  if verdict is Verdict.PASS else ""))
        remedy = ("" if verdict is Verdict.PASS else
                  Msg("Read the full AER reports (`journalctl -k | grep -iA3 aer`, or the counters in "
                      "/sys/bus/pci/devices/<bdf>/aer_dev_*); reseat the device and its riser/cables under this port, "
                      "check its power, update BIOS/firmware; a fatal error took the link down: power-cycle first."))
        out.append(Finding("health.aer", verdict, msg, device_name(log, source, gpu_index, ""),
                           cap(m.evidence[0] for m in ms if m.evidence), remedy, SRC_AER))
    return out


# ---- PCIe bandwidth limited by an upstream link

def _limited_findings(log: KernelLog, events: list[KernelEvent], gpu_index: Mapping[str, int] | None) -> list[Finding]:
    out = []
    seen: set[str] = set()
    for e in events:
        if e.kind != "pcie_limited" or e.bus_id in seen:
            continue
        seen.add(e.bus_id)
        f = e.fields
        name = device_name(log, e.bus_id, gpu_index)
        port = f.get("port") or "an upstream port"
        msg: str = (Msg("{name}: {get} Gb/s available PCIe bandwidth, limited by {get2} GT/s x{get3} at upstream "
                   "port {port}", name=name, get=f.get('avail_gbit_s'), get2=f.get('speed_gts'), get3=f.get('width'), port=port)
                    if f.get("port") else  # the kernel's line cut before "at <port>" (a grep, a narrow terminal)
                    Msg("{name}: {get} Gb/s available PCIe bandwidth, limited by {get2} GT/s x{get3} on its path",
                        name=name, get=f.get('avail_gbit_s'), get2=f.get('speed_gts'), get3=f.get('width')))
        if f.get("cap_gbit_s"):
            msg += (Msg(' (capable of {get} Gb/s with {get2} GT/s x{get3})', get=f.get('cap_gbit_s'), get2=f.get('cap_speed_gts'), get3=f.get('cap_width')))
        narrow = f.get("cap_width") and (to_float(f.get("width")) or 0.0) < (to_float(f.get("cap_width")) or 0.0)
        if narrow:
            remedy = (Msg("The link trained narrower (x{get}) than the device can (x{get2}): reseat the card and "
                          "riser, check that the slot behind port {port} is wired x{get2} (some x16 slots are x8 "
                          "electrically) and the BIOS bifurcation setting for that port.", get=f.get('width'), get2=f.get('cap_width'), port=port))
        else:
            remedy = (Msg("The link trained at a lower speed than the device supports. GPUs lower their link speed "
                          "when idle, so confirm under load (`nvidia-smi -q -d PCIE` 'Link Gen Current', or lspci "
                          "LnkSta while a job runs); if it stays low, check the BIOS PCIe speed setting for port "
                          "{port}, risers/retimers, and reseat.", port=port))
        out.append(Finding("health.pcie_limited", Verdict.WARN, msg, name, cap(e.evidence), remedy, SRC_LIMITED))
    return out


SRC_IOMMU_FAULT = ("NCCL troubleshooting, 'PCI Access Control Services (ACS)' and IOMMU (IOMMU translation on bare "
                   "metal breaks or slows GPU peer-to-peer: disable it, boot with iommu=pt, or disable ACS), "
                   "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html; NVIDIA/nccl#631 "
                   "(https://github.com/NVIDIA/nccl/issues/631); Linux drivers/iommu/amd/iommu.c "
                   "(amd_iommu_report_page_fault) and drivers/iommu/intel/dmar.c (dmar_fault_do_one): the device's DMA "
                   "hit an address its IOMMU domain does not map, and the IOMMU blocked it")


_IOMMU_SUPPRESSED = lazy_re(r"^(?:dmar_fault|DMAR|AMD-Vi|iommu\w*|arm-smmu\S*): (\d{1,9}) callbacks suppressed")
IOMMU_FLOOD = 100
"""Unprinted IOMMU faults (the printk ratelimit's "N callbacks suppressed" of the fault handler) from which one device's
faults are a flood that fails (held-out round 286: 893 and 2,474 suppressed; experts failed both): its DMA is blocked
over and over, not once. bringup's judgement."""


def _iommu_findings(log: KernelLog, events: list[KernelEvent], gpu_index: Mapping[str, int] | None) -> list[Finding]:
    """``health.iommu_fault``: IOMMU page faults (AMD-Vi IO_PAGE_FAULT, Intel DMAR "Request device [...] fault addr")
    per device. On an NVIDIA GPU they fail: its DMA (peer-to-peer, GPUDirect, or to host memory) was blocked, so
    transfers are lost or the job hangs; on another device they warn (its driver's DMA was blocked), unless they are a
    flood (:data:`IOMMU_FLOOD` suppressed faults of the one faulting device): fail."""
    by_dev: dict[str, list[KernelEvent]] = {}
    for e in events:
        if e.kind == "iommu_fault":
            by_dev.setdefault(e.bus_id, []).append(e)
    out = []
    # the kernel's ratelimit note between the faults ("dmar_fault: 893 callbacks suppressed"): faults it did not print
    suppressed = sum(int(m.group(1)) for r in log.records for m in [_IOMMU_SUPPRESSED.search(r.msg)] if m)
    flood_lines = [r.raw[0] for r in log.records if _IOMMU_SUPPRESSED.search(r.msg)][:2]
    for dev, evs in by_dev.items():
        gpu = bool(dev) and (log.is_nvidia_gpu(dev) or any(e.fields.get("driver") == "nvidia" for e in evs))
        flood = suppressed >= IOMMU_FLOOD and len(by_dev) == 1
        name = (gpu_name(log, dev, gpu_index) if gpu and log.is_nvidia_gpu(dev)
                else Msg("GPU {bus}", bus=dev) if gpu else device_name(log, dev, gpu_index))
        n = len(evs)
        msg = Msg("{name}: {n} IOMMU page fault(s) ({vendor}): the IOMMU blocked this device's DMA to addresses its "
                  "domain does not map", name=name, n=n, vendor=evs[0].fields.get("vendor", "IOMMU"))
        if gpu:
            msg += Msg("; on a GPU that is peer-to-peer or GPUDirect traffic (or a driver's transfer) lost: jobs "
                       "hang, fail or read wrong data")
        if flood:
            msg += Msg("; a flood: the kernel left {n} more unprinted (callbacks suppressed), so the device's DMA is "
                       "blocked continuously and it does not work", n=f"{suppressed:,}")
        out.append(Finding("health.iommu_fault", Verdict.FAIL if gpu or flood else Verdict.WARN, msg, name,
                           cap([ln for e in evs[:6] for ln in e.evidence] + (flood_lines if flood else [])),
                           N_("On a bare-metal training node turn IOMMU translation off for the GPUs: boot with "
                              "iommu=pt or disable the IOMMU in the BIOS "
                              "(keep it only for VMs and passthrough), and disable PCIe ACS on the GPU and NIC switch "
                              "ports; then rerun a peer-to-peer test (p2pBandwidthLatencyTest or nccl-tests) and "
                              "check that no new fault is logged."), SRC_IOMMU_FAULT))
    return out


# ---- unrecognised error messages


def _unrecognised_findings(log: KernelLog, events: list[KernelEvent]) -> list[Finding]:
    benign = benign_patterns()
    evs = [e for e in events if e.kind == "unrecognised"
           and not any(rx.search(e.record.msg) for rx, _ in benign)]
    fatal = [e for e in evs if e.fields.get("fatal")]
    evs = [e for e in evs if not e.fields.get("fatal")]
    # SysRq 'c' (echo c > /proc/sysrq-trigger, the kdump test) crashes the kernel on purpose: its oops is not a fault
    asked = [r for r in log.records if _SYSRQ_CRASH.search(r.msg)]
    out = ([_sysrq_crash_finding(asked, fatal)] if asked else [_oops_finding(fatal)]) if fatal else []
    hung, covered = _hung_tasks(log)
    out += hung
    evs = [e for e in evs if id(e.record) not in covered]
    if not evs:
        return out
    keys = [event_key(e) for e in evs]
    oops = any(e.fields.get("class") == "oops" for e in evs)
    libs = sorted({str(e.fields.get("lib")) for e in evs if e.fields.get("class") == "gpu_lib_crash"})
    what = (Msg('kernel warnings/oops reports and GPU-driver error messages') if oops else Msg('processes that crashed inside {libs}', libs=', '.join(libs)) if libs and len(libs) == len({str(e.fields.get('lib')) for e in evs}) and all(e.fields.get('class') == 'gpu_lib_crash' for e in evs) else Msg('GPU-driver error messages') + (Msg(' and crashes inside {libs}', libs=', '.join(libs)) if libs else ''))
    only_crashes = all(e.fields.get("class") == "gpu_lib_crash" for e in evs)
    head = ((Msg("{n_evs} process crash inside {libs} (the kernel's segfault reports): a program died in a GPU library; investigate (a library/driver mismatch, a bad build, or memory errors)", n_evs=len(evs), libs=', '.join(libs)) if len(evs) == 1 else Msg("{n_evs} process crashes inside {libs} (the kernel's segfault reports): a program died in a GPU library; investigate (a library/driver mismatch, a bad build, or memory errors)", n_evs=len(evs), libs=', '.join(libs))) if only_crashes else Msg('{plural} that no rule recognises ({what}): investigate', plural=plural(len(evs), 'kernel message'), what=what))
    return out + [Finding("health.kernel_log", Verdict.WARN, head, "host",
                    cap(ln for e in evs for ln in e.evidence),
                    (Msg('Read these lines in context (`journalctl -k -b`). If one is harmless on that machine, acknowledge it there by its key so it stops counting (x on the step, or `bringup ack KEY --reason WHY` once a check on that machine has found it; a pasted log is not a build): ') + ', '.join(keys[:20]) + (Msg(' (and {value} more)', value=len(keys) - 20) if len(keys) > 20 else '') + '.'), SRC_UNRECOGNISED)]


SRC_AMDGPU = ("Linux kernel drivers/gpu/drm/amd/amdgpu (amdgpu_ras.c: uncorrectable errors trigger a GPU reset; "
              "amdgpu_job.c: a job that times out on a ring is a GPU hang; amdgpu_device.c: GPU recovery), "
              "https://docs.kernel.org/gpu/amdgpu/ras.html")


def _amdgpu_findings(events: list[KernelEvent]) -> list[Finding]:
    """``health.kernel_log`` from the amdgpu driver's fault lines (:data:`wizard.parsers.kernellog.AMDGPU_FAULT_RE`):
    an uncorrectable RAS error, a ring timeout (a GPU hang), a reset that failed or an SMU that stopped answering fail:
    the GPU faulted, and it needs a reset or a power cycle before it is trusted again."""
    out = (_amdgpu_init_findings([e for e in events if e.kind == "amdgpu_init"])
           + _amdgpu_pagefault_findings([e for e in events if e.kind == "amdgpu_pagefault"]))
    ev = [e for e in events if e.kind == "amdgpu_fault"]
    if not ev:
        return out
    whats = list(dict.fromkeys(str(e.fields.get("what")) for e in ev))
    gpus = sorted({e.bus_id for e in ev if e.bus_id})
    return [Finding("health.kernel_log", Verdict.FAIL,
                    Msg("the amdgpu driver reports a GPU fault{on}: {whats}", on=Msg(" on {gpus}", gpus=", ".join(gpus))
                        if gpus else "", whats=SEMICOLON.join(whats[:4]) + ("; ..." if len(whats) > 4 else "")),
                    ", ".join(gpus) or "host", cap(ln for e in ev for ln in e.evidence),
                    "Drain the node; read the lines before these (`dmesg -T | grep -i amdgpu`) for the first error, "
                    "power-cycle the node (a failed reset leaves the GPU unusable), then run `rocm-smi --showrasinfo "
                    "all` and a stress test (rvs, or a training step) before it takes jobs; an uncorrectable error "
                    "that returns is an RMA.", SRC_AMDGPU)] + out


SRC_AMDGPU_INIT = ("Linux kernel drivers/gpu/drm/amd/amdgpu (amdgpu_device.c: 'Fatal error during GPU init', 'hw_init of IP "
                   "block <%s> failed'; amdgpu_psp.c: 'PSP firmware loading failed'); errno 12 is ENOMEM (errno(3)); "
                   "AMD ROCm documentation, 'AMD Instinct MI200 system optimization', BIOS settings: Above 4G Decoding "
                   "enabled, large BAR (https://rocm.docs.amd.com/en/latest/how-to/system-optimization/mi200.html)")


SRC_AMDGPU_VM = ("Linux kernel drivers/gpu/drm/amd/amdgpu/gmc_v9_0.c (gmc_v9_0_process_interrupt: '[gfxhub] no-retry page "
                 "fault ... pasid', VM_L2_PROTECTION_FAULT_STATUS and the faulting UTCL2 client); ROCm documentation, "
                 "debugging memory access faults (https://rocm.docs.amd.com/en/latest/how-to/debugging.html)")


def _amdgpu_pagefault_findings(ev: list[KernelEvent]) -> list[Finding]:
    """``health.kernel_log`` WARN from amdgpu's GPU VM page faults: a GPU program touched an address its page tables do
    not map (most often the application's bug; with every program, or beside ring timeouts, the driver or the GPU),
    naming the GPUs and the process address-space ids (pasid)."""
    if not ev:
        return []
    gpus = sorted({e.bus_id for e in ev if e.bus_id})
    pasids = sorted({str(e.fields.get("pasid")) for e in ev if e.fields.get("pasid")})
    return [Finding("health.kernel_log", Verdict.WARN,
                    Msg("the amdgpu driver reports {n} GPU page fault(s){on}{pasid}: a GPU program accessed memory its "
                        "address space does not map (usually the application; the GPU keeps running)", n=len(ev),
                        on=Msg(" on {gpus}", gpus=", ".join(gpus)) if gpus else "",
                        pasid=f" (pasid {', '.join(pasids[:4])})" if pasids else ""),
                    ", ".join(gpus) or "host", cap(ln for e in ev for ln in e.evidence),
                    N_("Find the program that faulted (its pasid in `rocm-smi --showpids`, or rerun it with "
                       "AMD_LOG_LEVEL=1 / HSA_TOOLS_REPORT_LOAD_FAILURE=1) and fix or report it; if every program "
                       "faults, or ring timeouts and GPU resets follow, update ROCm and the amdgpu driver and run a "
                       "stress test (rvs) on that GPU."), SRC_AMDGPU_VM)]


def _amdgpu_init_findings(ev: list[KernelEvent]) -> list[Finding]:
    """``health.kernel_log`` from the amdgpu driver failing to bring a GPU up
    (:data:`wizard.parsers.kernellog.AMDGPU_INIT_RE`): fail, naming the GPUs; the remedy starts from what the lines
    point at (error -12 at probe: no room for the BARs; a firmware block: the firmware files)."""
    if not ev:
        return []
    whats = list(dict.fromkeys(str(e.fields.get("what")) for e in ev))
    gpus = sorted({e.bus_id for e in ev if e.bus_id})
    return [Finding("health.kernel_log", Verdict.FAIL,
                    Msg("the amdgpu driver could not initialise the GPU{on}: {whats}; ROCm will not see it",
                        on=Msg(" at {gpus}", gpus=", ".join(gpus)) if gpus else "",
                        whats=SEMICOLON.join(whats[:4]) + ("; ..." if len(whats) > 4 else "")),
                    ", ".join(gpus) or "host", cap(ln for e in ev for ln in e.evidence),
                    joined(" ", [Msg(r) for r in (
                        [REMEDY_AMDGPU_ENOMEM] if any("error -12" in w for w in whats) else []) + (
                        [REMEDY_AMDGPU_FIRMWARE] if any(re.search(r"firmware|IP block", w) for w in whats) else []) + (
                        [REMEDY_AMDGPU_OTHER] if not any(re.search(r"error -12|firmware|IP block", w) for w in whats)
                        else []) + [REMEDY_AMDGPU_AFTER]]), SRC_AMDGPU_INIT)]


REMEDY_AMDGPU_ENOMEM = N_("Error -12 (ENOMEM) at probe is most often a BIOS that left no room for the GPU's BARs: enable "
                          "Above 4G Decoding and large MMIO / Re-Size BAR, and check `lspci -vv -s BUS` for BARs left "
                          "unassigned.")
REMEDY_AMDGPU_FIRMWARE = N_("A firmware block failing (PSP, SMU): install the amdgpu firmware that matches the driver "
                            "(linux-firmware, or amdgpu-dkms with its firmware for the running kernel).")
REMEDY_AMDGPU_OTHER = N_("Read the lines before it (`dmesg | grep -i amdgpu`) for the first error, and check that the "
                         "amdgpu driver and firmware support this GPU and kernel.")
REMEDY_AMDGPU_AFTER = N_("Then reboot and check `dmesg | grep amdgpu` and `rocm-smi`.")


SRC_SXID = ("NVIDIA Fabric Manager user guide, 'NVSwitch SXid Errors' (non-fatal SXids are corrected or contained "
            "by the switch and logged; fatal SXids stop the traffic through the switch until it is reset, "
            "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/)")


def _sxid_findings(events: list[KernelEvent]) -> list[Finding]:
    """``health.sxid`` from NVSwitch SXid lines: a fatal one fails (the fabric stops through that switch until
    it is reset), non-fatal ones warn (the switch corrected or contained them: count them again after a load; a
    link that keeps logging them is marginal)."""
    sx = [e for e in events if e.kind == "sxid"]
    if not sx:
        return []
    fatal = [e for e in sx if e.fields.get("fatal")]
    codes = sorted({int(e.fields.get("code") or 0) for e in (fatal or sx)})
    switches = sorted({f"nvidia-nvswitch{e.fields.get('switch')} ({e.bus_id})" for e in (fatal or sx)})
    what = SEMICOLON.join(dict.fromkeys(str(e.fields.get("text", "")) for e in (fatal or sx) if e.fields.get("text")))[:300]
    head = (Msg('{plural} (SXid {map}) on {switches}', plural=plural(len(fatal or sx), 'fatal ' * bool(fatal) + 'NVSwitch error'), map=', '.join(map(str, codes)), switches=', '.join(switches[:4])) + (f': {what}' if what else ''))
    if fatal:
        return [Finding("health.sxid", Verdict.FAIL, (head + Msg(': traffic through that switch stops until it is reset')), "host", cap(ln for e in fatal for ln in e.evidence),
                        "Drain the node; reset the NVSwitch/GPU baseboard (a node reboot), restart Fabric Manager, and "
                        "if the SXid returns collect `nvidia-bug-report.sh` for NVIDIA (RMA of the baseboard).", SRC_SXID)]
    return [Finding("health.sxid", Verdict.WARN, (head + Msg(' (non-fatal: the switch corrected or contained them)')),
                    "host", cap(ln for e in sx for ln in e.evidence),
                    "Count them again after an all-reduce load (`dmesg | grep SXid`): a link that keeps logging them is "
                    "marginal (reseat or replace per NVIDIA's guidance); a one-off burst at driver load is usually "
                    "link training.", SRC_SXID)]


SRC_OOPS = ("the Linux kernel's 'Tainted kernels' (taint D: an OOPS or BUG, https://docs.kernel.org/admin-guide/"
            "tainted-kernels.html) and 'Bug hunting' (https://docs.kernel.org/admin-guide/bug-hunting.html) pages")


_HUNG = lazy_re(r"INFO: task (?P<comm>.+?):(?P<pid>\d+) blocked for more than (?P<s>\d+) seconds|"
                   r"\btask:(?P<comm2>\S+)\s+state:D\b")
_TRACE_MODULE = lazy_re(r"\[(nvidia[\w-]*|amdgpu)\]")
"""A GPU driver's module in a stack frame: NVIDIA's (nvidia, nvidia_uvm, nvidia_modeset...) or AMD's amdgpu."""
_FRAME = lazy_re(r"^\s*(?:\[<[0-9a-f]+>\]\s*)?\??\s*[\w.]+\+0x[0-9a-f]+/0x[0-9a-f]+\s+\[(?P<mod>[\w-]+)\]")
"""One frame of a kernel stack trace ("[<ffffffffc074bf28>] ? nvidia_ioctl.isra.22+0x728/0x910 [nvidia]")."""
SRC_HUNG = ("the Linux kernel's hung task detector: a task in uninterruptible sleep (state D) longer than "
            "kernel.hung_task_timeout_secs is reported with its stack (https://docs.kernel.org/admin-guide/sysctl/"
            "kernel.html#hung-task-timeout-secs); NVIDIA GPU debug guidelines: collect nvidia-bug-report.sh when the "
            "driver hangs (https://docs.nvidia.com/deploy/gpu-debug-guidelines/index.html)")


def _hung_tasks(log: KernelLog) -> tuple[list[Finding], set[int]]:
    """``health.kernel_log`` for tasks the kernel's hung-task detector reported ("INFO: task X:PID blocked for more than
    N seconds", "task:X state:D" and the stack after it): inside an NVIDIA module (``[nvidia_uvm]`` frames) the
    driver is stuck: fail (the task cannot be killed; the GPU needs a reset or a reboot); elsewhere a warn (storage,
    a network filesystem). Returns the findings and the ids of the records they cover."""
    groups: dict[str, tuple[list[str], set[str]]] = {}
    covered: set[int] = set()
    recs = log.records
    for i, r in enumerate(recs):
        m = _HUNG.search(r.msg)
        if not m:
            continue
        comm = m.group("comm") or m.group("comm2") or "?"
        ev, mods = groups.setdefault(comm, ([], set()))
        ev.extend(r.raw)
        covered.add(id(r))
        for r2 in recs[i + 1:i + 80]:
            if _HUNG.search(r2.msg):
                break
            covered.add(id(r2))
            found = _TRACE_MODULE.findall(r2.msg)
            if found and len(ev) < 8:
                ev.extend(r2.raw)
            mods.update(found)
    out = []
    if not groups:  # a stack cut from its header: frames through a GPU driver, without the line that says why
        frames = [r for r in recs if _FRAME.match(r.msg) and _TRACE_MODULE.search(r.msg)]
        if len(frames) >= 3:
            frame_mods = sorted({m for r in frames for m in _TRACE_MODULE.findall(r.msg)})
            out.append(Finding("health.kernel_log", Verdict.WARN, Msg(
                "a kernel stack trace runs through the GPU driver ({mods}, {n} frames): the kernel dumps a stack only "
                "when something went wrong (a hung task, a soft lockup, a BUG or a warning), and the line that says "
                "which is not in this excerpt", mods=", ".join(frame_mods), n=len(frames)), "host",
                cap(dict.fromkeys(ln for r in frames[:6] for ln in r.raw)),
                "Read the kernel log above the stack (`journalctl -k -b` or `dmesg -T`) for the line that starts it "
                "(\"INFO: task ... blocked\", \"soft lockup\", \"BUG\", \"WARNING\") and any Xid before it; if a "
                "process is stuck in the driver, collect `sudo nvidia-bug-report.sh` and reboot.", SRC_HUNG))
            covered.update(id(r) for r in frames)
    for comm, (ev, mods) in groups.items():
        if mods:
            out.append(Finding("health.kernel_log", Verdict.FAIL, Msg(
                "process {comm} hung in uninterruptible sleep (state D) inside the GPU driver ({mods}): the driver "
                "is stuck; the process cannot be killed, and the GPU usually needs a reset or a reboot",
                comm=comm, mods=", ".join(sorted(mods))), "host", cap(dict.fromkeys(ev)),
                "Collect `sudo nvidia-bug-report.sh` and the whole kernel log (Xid lines before the hang say why), then "
                "reboot (a GPU reset fails while a process holds the GPU); if it comes back, update the driver and "
                "check the GPU's Xid and ECC history.", SRC_HUNG))
        else:
            out.append(Finding("health.kernel_log", Verdict.WARN, Msg(
                "process {comm} hung in uninterruptible sleep (state D) in the kernel (not in a GPU driver module): "
                "usually storage or a network filesystem that stopped answering", comm=comm), "host",
                cap(dict.fromkeys(ev)),
                "Read the stack in the log for what it waits on (NFS, a disk, a lock); fix that, and reboot if the "
                "process cannot be killed.", SRC_HUNG))
    return out, covered


_STORAGE_IO = lazy_re(
    r"(?:blk_update_request: |\b)(?:critical (?:medium|target) )?I/O error, dev (?P<dev>[\w.-]+),.*?op 0x\w+:\((?P<op>\w+)\)"
    r"|(?:blk_update_request: |\b)(?:critical (?:medium|target) )?I/O error, dev (?P<dev3>[\w.-]+),"
    r"|Buffer I/O error on dev(?:ice)? (?P<dev2>[\w.-]+),"
    r"|\b(?P<fs>XFS|EXT4-fs(?: error)?|BTRFS(?: error)?) \((?:device )?(?P<fsdev>[\w.-]+)\):? .*?"
    r"(?:I/O error|Corruption|metadata I/O error|log I/O error|journal has aborted|read-only|checksum|"
    r"error count since last fsck)"
    r"|\bnvme (?P<nvme>nvme\d+): (?:I/O \d+ QID \d+ timeout|controller is down|Device not ready|Removing after probe "
    r"failure|Abort status)"
    r"|(?:print_req_error|blk_update_request): (?P<blk>(?:critical |recoverable )?[a-z][a-z ]{1,24}?) error, "
    r"dev (?P<dev4>[\w.-]+),(?:.*?op 0x\w+:\((?P<op2>\w+)\))?")
SRC_STORAGE_IO = ("the Linux kernel's block layer reports a failed request as 'I/O error, dev NAME, sector N op ...' "
                  "or, by its status, 'critical medium error, dev NAME' (block/blk-core.c, blk_errors[] and "
                  "blk_print_req_error, print_req_error before 5.x; https://docs.kernel.org/block/index.html); XFS shuts a "
                  "filesystem down on a log I/O error (https://docs.kernel.org/admin-guide/xfs.html); NVMe command "
                  "timeouts and controller resets (https://docs.kernel.org/nvme/index.html)")


def storage_io_findings(log: KernelLog) -> list[Finding]:
    """``health.storage_io`` FAIL when the kernel reports failed block requests ("I/O error, dev nvme2n1, ... op
    0x1:(WRITE)"), a filesystem error (XFS/ext4/btrfs I/O error, corruption, a journal aborted) or an NVMe controller
    timing out or going down: data written there may be lost, and a checkpoint or dataset on it is not to be trusted;
    one finding naming each device and what it reported."""
    per: dict[str, list[str]] = {}
    lines: list[str] = []
    for r in log.records:
        m = _STORAGE_IO.search(r.msg)
        if not m or "DISCARD" in (m.group("op"), m.group("op2")):  # a rejected TRIM/unmap loses no data
            continue
        dev = (m.group("dev") or m.group("dev3") or m.group("dev2") or m.group("fsdev") or m.group("nvme")
               or m.group("dev4") or "?")
        what = (f"{m.group('op').lower()} error" if m.group("op") else f"{m.group('fs').split()[0]} error"
                if m.group("fs") else "controller timeout/reset" if m.group("nvme")
                else f"{m.group('blk')} error" if m.group("blk") else "I/O error")
        per.setdefault(dev, []).append(what)
        if len(lines) < 8:
            lines.extend(r.raw[:1])
    out = network_fs_findings(log)
    if not per:
        return out
    devs = SEMICOLON.join(f"{dev} ({', '.join(f'{w} x{n}' for w, n in Counter(ws).items())})" for dev, ws in list(per.items())[:6])
    return out + [Finding("health.storage_io", Verdict.FAIL,
                    Msg("the kernel reports storage failures: {devs}: requests the device did not complete; data "
                        "written there may be lost", devs=devs), "host", tuple(lines),
                    "Check each device's health (`nvme smart-log /dev/NAME`, `nvme error-log`, `smartctl -a`), its "
                    "slot and cabling, and the kernel log before the first error; replace a failing drive. A filesystem "
                    "that reported errors must be unmounted and repaired (xfs_repair, e2fsck) once its device is sound; "
                    "do not write checkpoints to it meanwhile.", SRC_STORAGE_IO)]


_NETFS_LOST = lazy_re(
    r"^LustreError: .*?(?P<target>[\w-]+-(?:MDT|OST|MGS|MGC)[\w-]*): operation (?P<op>\w+) to node (?P<nid>\S+) failed: "
    r"rc = (?P<rc>-\d+)"
    r"|^LNet(?:Error)?: .*?Timed out tx for (?P<nid2>\S+?):"
    r"|^Lustre: (?P<target2>[\w-]+): Connection to (?P<srv>\S+) \(at (?P<nid3>\S+)\) was lost"
    r"|^nfs: server (?P<nfs>\S+) not responding"
    r"|^LustreError: .*?lustre_fill_super\(\)\) (?:llite: )?Unable to mount (?P<mount>\S+): rc = (?P<rc3>-\d+)")
_NETFS_BACK = lazy_re(r"^Lustre: (?P<target>[\w-]+): Connection restored to|^nfs: server (?P<nfs>\S+) OK\b")
SRC_NETFS = ("Lustre Operations Manual, Lustre error messages: rc -107 ENOTCONN, the client is not connected to that "
             "server; a lost connection is retried until the server answers (https://doc.lustre.org/lustre_manual.xhtml); "
             "nfs(5): on a hard mount 'server not responding, still trying', I/O waits until the server answers "
             "(https://man7.org/linux/man-pages/man5/nfs.5.html)")


NETFS_FLAPS = 4
"""Losses of a network filesystem's servers in one log at which "it came back" no longer makes it a warning: a connection
lost this often does not hold (held-out round 257: a Lustre client losing two OSTs four times in ten minutes, an expert
failed it); bringup's judgement."""


def network_fs_findings(log: KernelLog) -> list[Finding]:
    """``health.storage_io`` for a network filesystem's client that lost its servers (Lustre: an operation to a
    server failed with rc = -107, LNet transmits timed out, "Connection to X was lost", lustre_fill_super's "Unable to
    mount" after the MGS did not answer; NFS: "server X not
    responding"): the node's I/O to that filesystem hangs while it lasts, so a job reading its data or writing its
    checkpoints there stalls. FAIL when the log's last word for it is a loss; WARN when it later says the connection
    came back ("Connection restored", "nfs: server X OK"): it was lost once and should be watched."""
    lost: list[str] = []
    lines: list[str] = []
    back = False
    for r in log.records:
        m = _NETFS_LOST.search(r.msg)
        if m:
            what = (f"{m.group('target')} {m.group('op')} to {m.group('nid')} rc = {m.group('rc')}" if m.group("target")
                    else f"LNet tx to {m.group('nid2')} timed out" if m.group("nid2")
                    else f"{m.group('target2')} lost {m.group('nid3')}" if m.group("target2")
                    else f"llite: Unable to mount {m.group('mount')} (rc = {m.group('rc3')})" if m.group("mount")
                    else f"NFS server {m.group('nfs')} not responding")
            lost.append(what)
            back = False
            if len(lines) < 6:
                lines.extend(r.raw[:1])
        elif lost and _NETFS_BACK.search(r.msg):
            back = True
            lines.extend(r.raw[:1])
    if not lost:
        return []
    said = SEMICOLON.join(f"{w} x{n}" if n > 1 else w for w, n in list(Counter(lost).items())[:5])
    flapping = back and len(lost) >= NETFS_FLAPS  # lost again and again: the connection does not hold
    return [Finding("health.storage_io", Verdict.WARN if back and not flapping else Verdict.FAIL,
                    (Msg("the network filesystem's client lost its servers {n} times, each time coming back: {said}: "
                         "the connection does not hold, and I/O stalls at every loss", n=len(lost), said=said)
                     if flapping else
                     Msg("the network filesystem's client lost its servers and the connection came back: {said}", said=said)
                     if back else
                     Msg("the network filesystem's client lost its servers: {said}: I/O to that filesystem hangs while "
                         "they do not answer, so a job's data loading or checkpoints there stall", said=said)),
                    "host", tuple(lines[:8]),
                    "Check the path to the servers named (`lctl ping NID` for Lustre over LNet, `ping`/`showmount -e` "
                    "for NFS, the fabric port this node uses: `ibstat`) and the servers' own state with their "
                    "administrators; the client reconnects by itself once they answer.", SRC_NETFS)]


NIC_DRIVERS = "mlx5_core|mlx4_core|bnxt_en|ice|i40e|irdma|efa"
"""Network and RDMA adapter drivers whose probe failure or firmware health error :func:`nic_health_findings` reports."""
_NIC_FW = lazy_re(rf"^(?P<drv>{NIC_DRIVERS}) (?P<dev>[0-9a-fA-F]{{4}}:[0-9a-fA-F]{{2}}:[0-9a-fA-F]{{2}}\.\d):? .*?"
                  r"(?:device's health compromised|Health issue observed, (?P<what>[^,]+)|synd 0x[0-9a-f]+: (?P<synd>.+)"
                  r"|(?P<fatal>Fatal error \d+ detected)"
                  r"|(?P<cmd>[A-Z][A-Z0-9_]+)\(0x[0-9a-fA-F]+\)(?: No done completion| timeout\.))")
_NIC_PROBE = lazy_re(rf"^(?P<drv>{NIC_DRIVERS}):? (?:(?P<dev>[0-9a-fA-F]{{4}}:[0-9a-fA-F]{{2}}:[0-9a-fA-F]{{2}}\.\d):? )?"
                     r"(?:probe of (?P<dev2>[0-9a-fA-F:.]+) failed with error (?P<err>-?\d+)"
                     r"|mlx5_load_one failed with error code (?P<err2>-?\d+))")
SRC_NIC_HEALTH = ("Linux kernel drivers/net/ethernet/mellanox/mlx5/core/health.c (poll_health: \"device's health "
                  "compromised\", print_health_info: the firmware's assert syndrome; cmd.c, wait_func: \"<command> "
                  "timeout. Will cause a leak of a command resource\", a firmware command never completed) "
                  "(https://github.com/torvalds/linux/blob/master/drivers/net/ethernet/mellanox/mlx5/core/health.c); "
                  "drivers/base/dd.c, really_probe: \"probe of DEVICE failed with error N\" (the driver did not bind, "
                  "so the device has no interface); NVIDIA MLNX_OFED documentation, Firmware tracer and health "
                  "(https://docs.nvidia.com/networking/display/mlnxofedv24101140/health+monitoring)")


def nic_health_findings(log: KernelLog) -> list[Finding]:
    """``health.nic_link`` FAIL when a network/RDMA adapter's driver reports its firmware unhealthy (mlx5_core "device's
    health compromised", "Health issue observed, firmware internal error", an assert syndrome, poll_health's "Fatal
    error 1 detected": the device left the PCI bus or its firmware stopped) or failed to probe
    ("probe of 0000:03:00.0 failed with error -22", mlx5_load_one failed): that port carries nothing until the
    adapter is reset or its driver/firmware fixed, so a multi-node job over it cannot run. One finding naming each
    device."""
    per: dict[str, tuple[str, str]] = {}  # device -> (kind, detail): the firmware's own words win over "compromised"
    lines: list[str] = []
    for r in log.records:
        m = _NIC_FW.search(r.msg)
        p = None if m else _NIC_PROBE.search(r.msg)
        if not m and not p:
            continue
        if m and m.group("cmd"):  # the firmware does not complete the driver's commands (mlx5 cmd.c)
            dev, kind, detail = m.group("dev"), "cmd", m.group("cmd")
        elif m:
            dev, kind, detail = m.group("dev"), "fw", (m.group("what") or m.group("synd") or m.group("fatal") or "").strip()
        else:
            assert p is not None
            dev, kind, detail = p.group("dev") or p.group("dev2") or "?", "probe", p.group("err") or p.group("err2")
        if dev not in per or (kind == "fw" and not per[dev][1] and detail):
            per[dev] = (kind, detail)
        if len(lines) < 8:
            lines.extend(r.raw[:1])
    if not per:
        return []
    groups: dict[tuple[str, str], list[str]] = {}
    for dev, key in per.items():
        groups.setdefault(key, []).append(dev)
    devs = SEMICOLON.join(
        Msg("{devs}: driver probe failed (error {err})", devs=", ".join(ds), err=d) if k == "probe"
        else Msg("{devs}: firmware commands time out ({what} got no completion): the adapter's firmware does not "
                 "answer its driver", devs=", ".join(ds), what=d) if k == "cmd"
        else Msg("{devs}: firmware health error ({what})", devs=", ".join(ds), what=d or Msg("health compromised"))
        for (k, d), ds in list(groups.items())[:6])
    return [Finding("health.nic_link", Verdict.FAIL,
                    Msg("network adapter(s) out of service: {devs}: no traffic passes through them until they are reset "
                        "or their driver and firmware fixed", devs=devs), "host", tuple(lines),
                    "Read the adapter's lines in context (`journalctl -k -b | grep -e mlx5 -e mlx4`); for a firmware "
                    "health error save the dump (`devlink health dump show`), then reset the adapter (`mlxfwreset` or a "
                    "cold boot) and update its firmware (`mlxfwmanager`); for a failed probe match the driver (OFED or "
                    "inbox) to the adapter's firmware and kernel. Replace the adapter if it recurs.", SRC_NIC_HEALTH)]


_MR_CACHE_FAIL = lazy_re(r"\b(?P<dev>mlx5_\d+|mlx5_bond_\d+): create_mkey_callback:\d+:\(pid \d+\): async reg mr failed\. "
                         r"status (?P<st>-?\d+)")
SRC_MR_CACHE = ("Linux kernel drivers/infiniband/hw/mlx5/mr.c, create_mkey_callback: \"async reg mr failed. status %d\" when "
                "the firmware command that refills the memory-key cache fails; the cache then backs off and "
                "registrations create their keys one by one (https://github.com/torvalds/linux/blob/master/drivers/"
                "infiniband/hw/mlx5/mr.c); errno -12 is ENOMEM (errno(3))")


def rdma_mr_findings(log: KernelLog) -> list[Finding]:
    """``health.nic_link`` WARN when mlx5's memory-key cache cannot be refilled ("async reg mr failed. status -12",
    held-out round 278): memory registration (ibv_reg_mr, NCCL's buffers) is slower and, with the HCA or host short of
    memory, fails; one finding naming each HCA, the status and how many lines."""
    per: dict[str, list[str]] = {}
    lines: list[str] = []
    for r in log.records:
        m = _MR_CACHE_FAIL.search(r.msg)
        if m:
            per.setdefault(m.group("dev"), []).append(m.group("st"))
            if len(lines) < 6:
                lines.extend(r.raw[:1])
    if not per:
        return []
    devs = ", ".join(f"{d} ({len(st)} line(s), status {', '.join(sorted(set(st)))})" for d, st in per.items())
    return [Finding("health.nic_link", Verdict.WARN,
                    Msg("the RDMA driver cannot refill its memory-key cache: {devs} ('async reg mr failed'; -12 is "
                        "ENOMEM): memory registrations of RDMA programs (NCCL's buffers) are slower and can fail",
                        devs=devs), "host", tuple(lines),
                    "Check the host's free memory and the locked-memory limit of the jobs (`ulimit -l` unlimited), "
                    "the HCA's firmware and driver (`ibv_devinfo`, `ofed_info -s`), and whether RDMA programs "
                    "report ibv_reg_mr failures; reboot or reload mlx5_ib if it persists.", SRC_MR_CACHE)]


_ERR_CQE = lazy_re(r"(?:infiniband|mlx5_core) (?P<dev>\S+): mlx5_poll_one:\d+:\(pid \d+\): (?P<side>Requester|Responder) "
                   r"error cqe on cqn (?P<cqn>0x[0-9a-fA-F]+)")
_CQE_SYNDROME = lazy_re(r"mlx5_poll_one:\d+:\(pid \d+\): syndrome (?P<syn>0x[0-9a-fA-F]+)")
CQE_SYNDROMES = {0x01: N_("local length error"), 0x02: N_("local QP operation error"), 0x04: N_("local protection error"),
                 0x05: N_("work request flushed: the QP had already gone to the error state"),
                 0x06: N_("memory window bind error"), 0x10: N_("bad response"), 0x11: N_("local access error"),
                 0x12: N_("remote invalid request"), 0x13: N_("remote access error"), 0x14: N_("remote operation error"),
                 0x15: N_("transport retry counter exceeded: the peer stopped answering"),
                 0x16: N_("RNR retry counter exceeded: the peer had no receive posted"), 0x22: N_("remote aborted")}
"""mlx5 completion-queue error syndromes (Linux include/linux/mlx5/device.h, MLX5_CQE_SYNDROME_*; the IBTA work
completion statuses they map to in drivers/infiniband/hw/mlx5/cq.c, mlx5_handle_error_cqe)."""
SRC_CQE = ("Linux kernel drivers/infiniband/hw/mlx5/cq.c: mlx5_poll_one prints 'Requester/Responder error cqe on cqn' and "
           "the syndrome of a completion with error; include/linux/mlx5/device.h, MLX5_CQE_SYNDROME_* "
           "(https://github.com/torvalds/linux/blob/master/drivers/infiniband/hw/mlx5/cq.c)")


def rdma_cqe_findings(log: KernelLog) -> list[Finding]:
    """``health.nic_link`` WARN when mlx5 logs completions with error ("Responder error cqe on cqn 0x406" then
    "syndrome 0x5"): an RDMA queue pair went to the error state and its posted work is flushed: a connection broke
    (a peer died, a link or path failed, a protection or access error); the first syndrome that is not a flush is the
    cause. One finding naming each HCA, the count and the syndromes with their meaning."""
    per: dict[str, int] = {}
    syn: dict[int, int] = {}
    lines: list[str] = []
    for r in log.records:
        m = _ERR_CQE.search(r.msg)
        if m:
            per[m.group("dev")] = per.get(m.group("dev"), 0) + 1
            if len(lines) < 4:
                lines.extend(r.raw[:1])
            continue
        m = _CQE_SYNDROME.search(r.msg)
        if m:
            code = int(m.group("syn"), 16)
            syn[code] = syn.get(code, 0) + 1
            if len(lines) < 4:
                lines.extend(r.raw[:1])
    if not per:
        return []
    said = joined(", ", [Msg("syndrome 0x{c} ({meaning}) x{n}", c=f"{c:x}", n=n,
                             meaning=Msg(CQE_SYNDROMES.get(c, N_("see mlx5 device.h")))) for c, n in sorted(syn.items())])
    return [Finding("health.nic_link", Verdict.WARN,
                    Msg("the RDMA driver logged {n} completion(s) with error (responder/requester error cqe) on "
                        "{devs}{said}: an RDMA queue pair went to the error state and its posted work was flushed",
                        n=sum(per.values()), devs=", ".join(per), said=Msg(": {said}", said=said) if said else ""),
                    "host", tuple(lines),
                    N_("A flushed completion (syndrome 0x5) follows the real failure: look before these lines for the "
                       "first other syndrome (retry exceeded: the peer or the path stopped answering; access or "
                       "protection error: a memory registration), the peer's log and the link (`ibstat`, "
                       "`rdma link`, `dmesg | grep -i mlx5`); a few during a job's teardown are harmless."), SRC_CQE)]


_HOST_LIMITS = (
    (lazy_re(r"(?<!cgroup )Out of memory: Kill(?:ed)? process (?P<pid>\d+) \((?P<comm>[^)]+)\)"),
     N_("the kernel's OOM killer killed {what}: the host ran out of memory"),
     N_("Size host RAM for the workload (plan & sizing, z, or `bringup size`: loaders, pinned buffers, checkpoint "
        "loading on every rank); lower DataLoader workers or prefetch, load checkpoints sharded; `journalctl -k | grep "
        "-A20 'invoked oom-killer'` shows what held the memory."),
     "the Linux kernel's out-of-memory handling: the OOM killer kills a process when memory and swap run out "
     "(https://docs.kernel.org/admin-guide/mm/concepts.html#oom-killer)"),
    (lazy_re(r"^sending SIG(?:TERM|KILL) to process (?P<pid>\d+) uid \d+ \"(?P<comm>[^\"]+)\""),
     N_("earlyoom, the userspace OOM killer, killed {what}: the host ran low on memory and swap"),
     N_("Size host RAM for the workload (plan & sizing, z, or `bringup size`: loaders, pinned buffers, checkpoint "
        "loading on every rank); lower DataLoader workers or prefetch, load checkpoints sharded; earlyoom's 'mem avail' "
        "lines show how little was left."),
     "earlyoom(1) (https://github.com/rfjakob/earlyoom): it sends SIGTERM to the process with the highest oom_score "
     "when available memory and free swap are both below their limits"),
    (lazy_re(r"Memory cgroup out of memory: Kill(?:ed)? process (?P<pid>\d+) \((?P<comm>[^)]+)\)"),
     N_("the memory cgroup's OOM killer killed {what}: the job reached its memory limit (a container's, a Slurm "
        "job's or a systemd slice's), not the host's RAM"),
     N_("Raise the job's memory limit (docker --memory, Kubernetes resources.limits.memory, Slurm --mem) or shrink "
        "its footprint (fewer DataLoader workers, smaller prefetch, sharded checkpoint loading); `journalctl -k | grep "
        "-B5 -A20 'memory cgroup out of memory'` shows the limit and what held the memory."),
     "the Linux kernel's cgroup v2 documentation, memory.max: 'If a cgroup's memory usage reaches this limit and "
     "can't be reduced, the OOM killer is invoked in the cgroup' "
     "(https://docs.kernel.org/admin-guide/cgroup-v2.html#memory-interface-files)"),
    (lazy_re(r"VFS: file-max limit (?P<n>\d+) reached"),
     N_("the system ran out of file handles (fs.file-max {what} reached): opens fail with ENFILE"),
     N_("Find what holds them (`lsof | wc -l` per process, leaked sockets of data loaders), and raise fs.file-max "
        "(`sysctl -w fs.file-max=N`, persisted in /etc/sysctl.d) if the workload needs more."),
     "the Linux kernel's sysctl documentation, file-max: 'If you get lots of error messages about running out of file "
     "handles, you might want to increase this limit' (https://docs.kernel.org/admin-guide/sysctl/fs.html#file-max-file-nr)"),
    (lazy_re(r"nf_conntrack: (?:nf_conntrack: )?table full, dropping packet"),
     N_("the connection-tracking table is full ({what}): new connections (NCCL's sockets, storage) are dropped"),
     N_("Raise net.netfilter.nf_conntrack_max (or leave the cluster network out of conntrack), then check again."),
     "the Linux kernel's nf_conntrack sysctl documentation, nf_conntrack_max "
     "(https://docs.kernel.org/networking/nf_conntrack-sysctl.html)"),
)


def host_limit_findings(log: KernelLog) -> list[Finding]:
    """``health.host_limits`` WARN when the kernel reports the host ran out of something a training job needs: the OOM
    killer killed a process, the file-handle table is full (fs.file-max), the connection-tracking table is full. The
    workload or the host's settings, not a hardware fault; each one named with how many times it was logged."""
    out: list[Finding] = []
    for rx, message, remedy, source in _HOST_LIMITS:
        hits = [(r, m) for r in log.records for m in [rx.search(r.msg)] if m]
        if not hits:
            continue
        first = hits[0][1]
        names = list(dict.fromkeys(
            (f"{m.group('comm')} (pid {m.group('pid')})" if m.groupdict().get("comm") else m.groupdict().get("n") or "")
            for _, m in hits))
        what = ", ".join(x for x in names[:4] if x) or first.group(0)
        msg = Msg(message, what=what) + (Msg("; {n} times in this log", n=len(hits)) if len(hits) > 1 else "")
        out.append(Finding("health.host_limits", Verdict.WARN, msg, "host",
                           tuple(ln for r, _ in hits[:6] for ln in r.raw[:1]), Msg(remedy), source))
    invoked = [(r, m) for r in log.records for m in [_OOM_INVOKED.search(r.msg)] if m]
    if invoked and not any("OOM killer" in str(f.message) for f in out):
        # an excerpt cut before the "Killed process" line (held-out round 76): the OOM killer ran all the same
        cgroup = any("mem_cgroup" in r.msg or "memory cgroup" in r.msg.lower() for r in log.records)
        who = ", ".join(dict.fromkeys(m.group("comm") for _, m in invoked))
        out.append(Finding("health.host_limits", Verdict.WARN,
                           Msg("the kernel's OOM killer was invoked by {who} ({where}); the process it killed is past "
                               "the end of this excerpt", who=who,
                               where=Msg("the memory cgroup's: the job reached its memory limit, not the host's RAM")
                               if cgroup else Msg("memory and swap ran out")), "host",
                           tuple(r.raw[0] for r, _ in invoked[:4]),
                           Msg(_HOST_LIMITS[2][2] if cgroup else _HOST_LIMITS[0][2]),
                           _HOST_LIMITS[2][3] if cgroup else _HOST_LIMITS[0][3]))
    return out


_OOM_INVOKED = lazy_re(r"\b(?P<comm>\S+) invoked oom-killer:")
"""The kernel's first line of an OOM kill ("python invoked oom-killer: gfp_mask=..."): mm/oom_kill.c dump_header()."""


_SYSRQ_CRASH = lazy_re(r"\bsysrq: (?:SysRq : )?Trigger a crash|\blkdtm: Performing direct entry"
                          r"|Kernel panic - not syncing: .*\b(?:[Tt]est panic|crash_test|lkdtm)", re.I)
"""A crash someone asked for: SysRq 'c', the kernel's lkdtm crash tests, a crash-test module's own panic message."""
SRC_SYSRQ = ("the Linux kernel's 'Linux Magic System Request Key Hacks' page: 'c' will perform a system crash by a NULL "
             "pointer dereference; a crashdump will be taken if configured (https://docs.kernel.org/admin-guide/sysrq.html)")


def _sysrq_crash_finding(asked: list[LogRecord], evs: list[KernelEvent]) -> Finding:
    """``health.kernel_log`` WARN for the oops a SysRq 'c' asked for (the kernel logs "SysRq : Trigger a crash" first):
    a crash made on purpose, not a fault, but one the operator should know was planned."""
    comms = sorted({str(e.fields["comm"]) for e in evs if e.fields.get("comm")})
    sysrq = any(re.search(r"sysrq", r.msg, re.I) for r in asked)
    msg = (Msg("the kernel crashed on request: SysRq 'c' (echo c > /proc/sysrq-trigger{who}), the crash-dump "
               "test, then the oops it causes on purpose; not a hardware or driver fault, and the boot it "
               "happened in ended there", who=f", from {', '.join(comms)}" if comms else "") if sysrq else
           Msg("the kernel crashed on request: a crash test ('{line}'); not a hardware or driver fault, and the boot "
               "it happened in ended there", line=asked[0].msg[:120]))
    return Finding("health.kernel_log", Verdict.WARN, msg, "host",
                   cap([ln for r in asked[:2] for ln in r.raw] + [ln for e in evs for ln in e.evidence]),
                   "Confirm the crash test was planned (a kdump check); if nobody ran it, find who could write "
                   "/proc/sysrq-trigger (shell history, `last`). Nothing to fix on the machine for it.", SRC_SYSRQ)


def _oops_finding(evs: list[KernelEvent]) -> Finding:
    """``health.kernel_log`` FAIL for kernel oops/BUG/panic reports (taint D): the task died inside the kernel, what it
    held stays held, and the kernel is not to be trusted until a reboot; in a GPU driver module the GPU state is
    suspect too."""
    mods = sorted({str(e.fields["module"]) for e in evs if e.fields.get("module")})
    comms = sorted({str(e.fields["comm"]) for e in evs if e.fields.get("comm")})
    gpu_mod = [m for m in mods if m.startswith("nvidia")]
    where = ((Msg(' inside the {mods} modules', mods=', '.join(mods)) if len(mods) > 1 else Msg(' inside the {mods} module', mods=', '.join(mods))) if mods else '')
    who = f" (process {', '.join(comms)})" if comms else ""
    head = (Msg("{plural}{where}{who}: the kernel killed a task mid-way and is tainted 'D' until a reboot, so nothing run on this boot can be trusted", plural=plural(len(evs), 'kernel oops report'), where=where, who=who) + (Msg('; it died in the NVIDIA driver, whose GPU state is now suspect') if gpu_mod else ''))
    remedy = (Msg("Reboot, then read the whole report (`journalctl -k -b -1`: the lines from 'BUG:'/'Oops:' to '---[ end trace ]---'). ") + (Msg('In the NVIDIA module: match the driver to the kernel (a driver built for another kernel, or a driver/kernel pair NVIDIA does not support), update it, and if it recurs collect `nvidia-bug-report.sh` for NVIDIA. ') if gpu_mod else Msg('Find the module named in the RIP line and update it or the kernel. ')) + Msg('Repeated oopses on a healthy kernel point at memory (run a memory test) or the CPU.'))
    return Finding("health.kernel_log", Verdict.FAIL, head, "host", cap(ln for e in evs for ln in e.evidence), remedy,
                   SRC_OOPS)


# ------------------------------------------------------------------ the live/snapshot check


SRC_LINK = ("NVIDIA, 'InfiniBand Port Counters' (LinkDownedCounter: each link loss breaks the connections over it, "
            "https://enterprise-support.nvidia.com/s/article/infiniband-port-counters); NCCL troubleshooting "
            "(https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html): a peer's network link "
            "that goes away ends the job with a network error or a timeout; systemd.network(5) carrier events")


SRC_LINK_FLAP = ("Meta GCM health checks, link-flaps (https://github.com/facebookresearch/gcm): an InfiniBand link "
                 "flap is critical, an Ethernet one a warning; Azure HPC Node Health Checks, check_ib_link_flapping "
                 "(https://github.com/Azure/azurehpc-health-checks): no InfiniBand link flap within 6 hours")


_FABRIC_NIC = lazy_re(r"(?:mlx5_core|mlx4_core|mlx4_en|bnxt_en|ice|irdma)\b")
"""The drivers of the RDMA/high-speed NICs a training fabric runs on (ConnectX, Broadcom, Intel E810): their port
down at boot and never up is the fabric missing (held-out round 302: a ConnectX-7's both ports), not an unused port."""
BOOT_LINK_S = 60.0
"""Seconds after boot (dmesg's stamp) within which a port's "Link is Down" before it was ever up is its driver
bringing it up, not a lost link (bringup's judgement: network drivers probe and negotiate in the first seconds; an
uncabled port says so then and is never up)."""


def _link_findings(events: list[KernelEvent], named: Mapping[str, int] | None = None) -> list[Finding]:
    """``health.nic_link`` for an interface whose carrier went down twice or more in the log (a link that flaps breaks
    RDMA connections and NCCL jobs over it: cable, transceiver, switch port): FAIL on InfiniBand, WARN on Ethernet
    (:data:`SRC_LINK_FLAP`); WARN for one that went down once and the
    log ends without it coming back. One loss followed by the link coming up is not judged: drivers and network
    daemons print one link-down while an interface comes up at boot, and a port's downs in the first
    :data:`BOOT_LINK_S` seconds after boot, before it was ever up, are its driver bringing it up (not on a fabric
    NIC's driver, :data:`_FABRIC_NIC`). Nor is the one "Link down" of an interface this
    log shows being named (``named``) and never up: the driver says so when the interface is opened without a carrier,
    an unused or uncabled port, not a link that was lost."""
    downs: dict[str, list[KernelEvent]] = {}
    last_up: dict[str, bool] = {}
    ever_up: set[str] = set()
    for e in events:
        if e.kind != "link":
            continue
        iface = str(e.fields.get("iface"))
        if (e.record.mono_s is not None and e.record.mono_s < BOOT_LINK_S and not e.fields.get("up")
                and iface not in ever_up and not _FABRIC_NIC.match(e.record.msg)):
            continue  # a port reporting no carrier while its driver brings it up at boot (held-out round 294)
        last_up[iface] = bool(e.fields.get("up"))
        if e.fields.get("up"):
            ever_up.add(iface)
        else:
            downs.setdefault(iface, []).append(e)
    out = []
    for iface, evs in downs.items():
        if len(evs) == 1 and named and iface in named and iface not in ever_up:
            continue  # born in this log and never up: an unused port, not a lost link
        if len(evs) == 1 and not last_up.get(iface, True):  # down, and the log does not show it coming back
            out.append(Finding("health.nic_link", Verdict.WARN,
                               Msg("{iface} lost its link and this log does not show it coming back up", iface=iface),
                               iface, tuple(evs[0].evidence),
                               Msg("Check {iface} now (`ip link show {iface}`; on InfiniBand `ibstat`: State Active, "
                                   "Physical state LinkUp); if it is down, check its cable or transceiver and the switch "
                                   "port.", iface=iface), SRC_LINK))
            continue
        if len(evs) < 2:
            continue
        first, last = evs[0].record, evs[-1].record
        when = f" ({first.stamp or first.raw[0][:15]} to {last.stamp or last.raw[0][:15]})"
        # an InfiniBand link that flaps fails, an Ethernet one warns: the field's node checks (SRC_LINK_FLAP)
        ib = bool(re.match(r"ib\w*$", iface)) or any(re.search(r"infiniband|ipoib", ln, re.I)
                                                      for e in evs for ln in e.evidence)
        out.append(Finding("health.nic_link", Verdict.FAIL if ib else Verdict.WARN,
                           Msg("{iface} lost its link {n_evs} times in this log{when}: a flapping link", iface=iface, n_evs=len(evs), when=when)
                           + (Msg("; on InfiniBand every loss tears down the RDMA connections over it") if ib else ""), iface,
                           tuple(dict.fromkeys(ln for e in evs[:6] for ln in e.evidence)),
                           Msg("Check {iface}'s cable or transceiver and the switch port (on InfiniBand: `ibstat` State "
                               "and `perfquery -x` LinkDownedCounter / SymbolErrorCounter; on Ethernet: `ethtool -S` and "
                               "the switch's port log); reseat or replace the cable, then watch whether the link drops "
                               "again before trusting multi-node jobs on it.", iface=iface), f"{SRC_LINK}; {SRC_LINK_FLAP}"))
    return out


def gpu_index_from_outputs(outputs: Outputs) -> dict[str, int]:
    """PCI bus id -> GPU index from the ``nvml`` probe, when it was collected (else empty)."""
    o = outputs.get("nvml") if isinstance(outputs, Mapping) else None
    if o is None or not o.ok:
        return {}
    try:
        nvml = facts_of(outputs).parse_text("nvml", parse_nvml)
        out = {}
        for g in (nvml.gpus if nvml is not None else []):
            if isinstance(g.get("index"), int) and g.get("pci_bus_id"):
                out[bus_id(str(g["pci_bus_id"]))] = g["index"]
        return out
    except Exception:  # noqa: BLE001 - naming is a nicety; never fail the check over it
        return {}


def _log_output(outputs: Outputs) -> tuple[ProbeOutput | None, KernelLog | None, list[ProbeOutput]]:
    """The first readable kernel log (journal, then dmesg) with its parsed facts, and every output tried."""
    tried: list[ProbeOutput] = []
    for name in ("kernel_log_journal", "kernel_log_dmesg"):
        o = outputs.get(name)
        if o is None:
            continue
        tried.append(o)
        if not (o.ok and o.rc in (0, None)):
            continue
        log = facts_of(outputs).parse_text(name, parse_kernel_log)
        if log is not None and log.records:
            return o, log, tried
    return None, None, tried


def kernel_log(outputs: Outputs, expectations: Mapping[str, Any]) -> list[Finding]:
    """Health-stage check over this boot's kernel log.

    Probes: ``kernel_log_journal`` (``journalctl -k -b --no-pager -o short-monotonic``), falling
    back to ``kernel_log_dmesg`` (``dmesg``); optional ``nvml`` to name GPUs by index.
    Findings: ``health.xid``, ``health.gpu_bus``, ``health.gsp``, ``health.gpu_init``,
    ``health.driver_conflict``, ``health.aer``, ``health.pcie_limited``, ``health.host_memory``,
    ``health.mce``, ``health.hw_error``, ``health.kernel_log`` (pass summary, unreadable log,
    or unrecognised messages) and ``health.kernel_log_ignored`` (skip: acknowledged events).
    ``boot_only`` is forced true: both probes read this boot only.
    """
    # an overlay, not a copy: the step's plan reads stay recorded (wizard.engine.PlanReads)
    base: Any = expectations if isinstance(expectations, Mapping) else {}  # only read, never written
    exp: Mapping[str, Any] = ChainMap({"boot_only": True}, base)
    chosen, log, tried = _log_output(outputs)
    if chosen is None or log is None:
        if not tried:
            return [missing("health.kernel_log", None, "whether the kernel logged GPU or hardware errors",
                            source=SRC_KERNEL_LOG)]
        ev: list[str] = []
        for o in tried:
            ev.extend(o.evidence_error() if not o.ok or o.rc not in (0, None) else
                      [o.source, "(no kernel messages in the output)"] + [ln for ln in o.stderr.splitlines()[:3] if ln])
        return [Finding("health.kernel_log", Verdict.UNKNOWN,
                        "could not tell whether the kernel logged GPU or hardware errors: the kernel log was not readable",
                        "host", cap(ev),
                        "Run bringup as root, or add the user to the adm / systemd-journal group; with "
                        "kernel.dmesg_restrict=1 only root may run dmesg (docs.kernel.org/admin-guide/sysctl/kernel.html).",
                        SRC_KERNEL_LOG)]
    return judge_kernel_log(log, exp, chosen.source, gpu_index_from_outputs(outputs))


__all__ = ["judge_kernel_log", "judge_kernel_log_text", "kernel_log", "gpu_index_from_outputs", "event_key"]
