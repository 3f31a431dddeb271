"""Judges for a pasted or saved output (``bringup explain``): text + expectations -> findings.

Each function here reads one explain kind's text with its parser and hands the facts to the same
rule the live check uses, so a paste and a capture bundle are judged by one set of rules. The
kinds themselves (name, detector, judge, commands) are listed in :data:`wizard.registry.KINDS`.
Judges never raise: unreadable text gives an ``unknown`` finding with the raw lines as evidence.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from wizard.model import Finding, Verdict
from wizard.parsers.dcgm import parse_dcgm_json, parse_dcgm_text
from wizard.parsers.edac import parse_edac_grep, parse_edac_sysfs, parse_edac_util, parse_ras_mc_ctl
from wizard.parsers.gpu import parse_driver_version
from wizard.parsers.platform import _lines
from wizard.probes import EDAC_ROOT, ProbeOutput
from wizard.rules import gpu_presence as gc
from wizard.rules import bios as hc  # iommu
from wizard.rules import os as os_rules  # os_release
from wizard.rules.smi import judge_doc


def _out(name: str, source: str, text: str, **kw: Any) -> dict[str, ProbeOutput]:
    """One pasted text as the output of probe ``name``."""
    return {name: ProbeOutput(name, source, text=text, **kw)}

# from wizard/parsers/cuda.py
def cuda_judge_nvcc(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.rules import driver_chain as chain

    return chain.judge_nvcc_text(text, exp)


# from wizard/parsers/cuda.py
def cuda_judge_torch(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.rules import driver_chain as chain

    return chain.judge_torch_text(text, exp)


# from wizard/parsers/dcgm.py
def dcgm_judge_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.rules import dcgm

    return dcgm.judge(parse_dcgm_text(text), text, exp)


# from wizard/parsers/dcgm.py
def dcgm_judge_json(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.rules import dcgm

    return dcgm.judge(parse_dcgm_json(text), text, exp)


# from wizard/parsers/edac.py
def edac_judge_edac_util(text: str, exp: Mapping[str, Any]) -> list:
    from wizard.rules import edac as events

    return events.judge_edac_facts(parse_edac_util(text), exp, "$ edac-util -v")


# from wizard/parsers/edac.py
def edac_judge_ras(text: str, exp: Mapping[str, Any]) -> list:
    from wizard.rules import edac as events

    return events.judge_ras_mc_ctl(parse_ras_mc_ctl(text), exp)


# from wizard/parsers/edac.py
def edac_judge_sysfs(text: str, exp: Mapping[str, Any]) -> list:
    from wizard.rules import edac as events

    return events.judge_edac_facts(parse_edac_sysfs(parse_edac_grep(text)), exp, EDAC_ROOT)


# from wizard/parsers/kernellog.py
def kernellog_judge(text: str, exp: Mapping[str, Any]) -> list:
    from wizard.rules import kernel_log as events

    return events.judge_kernel_log_text(text, exp)


# from wizard/parsers/nccl.py
def nccl_judge_tests(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.rules import nccl

    return nccl.judge_nccl_tests(text, exp)


# from wizard/parsers/nccl.py
def nccl_judge_log(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    from wizard.rules import nccl

    return nccl.judge_nccl_log(text, exp)


# from wizard/parsers/pcie.py
def pcie_judge_lspci(text: str, exp: "Mapping[str, Any]") -> list:
    from wizard.rules import pcie
    from wizard.probes import ProbeOutput

    out = {"lspci_vvv": ProbeOutput("lspci_vvv", "lspci -vv (pasted)", text=text)}
    return pcie.lspci_all(out, exp)


# from wizard/parsers/pcie.py
def pcie_judge_iommu(text: str, exp: "Mapping[str, Any]") -> list:
    from wizard.rules import gpu_presence
    from wizard.probes import ProbeOutput

    return gpu_presence.iommu_groups({"lspci_iommu_groups": ProbeOutput("lspci_iommu_groups", "IOMMU group listing (pasted)",
                                                                 text=text)}, exp)


# from wizard/parsers/platform.py
def platform_judge_mokutil(text: str, exp: Mapping[str, Any]) -> list:
    from wizard.rules import bios as bios_rules

    return bios_rules.secure_boot(_out("mokutil_sb_state", "$ mokutil --sb-state (pasted)", text, rc=0), exp)


# from wizard/parsers/platform.py
def platform_judge_dmidecode(text: str, exp: Mapping[str, Any]) -> list:
    from wizard.rules import bios as bios_rules

    return bios_rules.memory_channels(_out("dmidecode_17", "$ dmidecode -t 17 (pasted)", text, rc=0), exp)


# from wizard/parsers/platform.py
def platform_judge_timedatectl(text: str, exp: Mapping[str, Any]) -> list:
    from wizard.rules import os as pc

    return pc.time_sync(_out("timedatectl", "$ timedatectl (pasted)", text, rc=0), exp)


# from wizard/parsers/platform.py
def platform_judge_chronyc(text: str, exp: Mapping[str, Any]) -> list:
    from wizard.rules import os as pc

    return pc.time_sync(_out("chronyc_tracking", "$ chronyc tracking (pasted)", text, rc=0), exp)


# from wizard/parsers/platform.py
def platform_judge_cpu_power(text: str, exp: Mapping[str, Any]) -> list:
    from wizard.rules import bios as bios_rules

    idle: dict[str, str | None] = {}
    freq: dict[str, str | None] = {}
    for ln in _lines(text):
        p, sep, v = ln.partition(":")
        if sep and p.startswith("/sys/"):
            (freq if "/cpufreq/" in p or "/intel_pstate/" in p else idle)[p.strip()] = v + "\n"
    src = "sysfs listing (pasted)"
    return bios_rules.power_profile({"cpuidle": ProbeOutput("cpuidle", src, text=text, files=idle),
                             "cpufreq": ProbeOutput("cpufreq", src, text=text, files=freq)}, exp)


# from wizard/parsers/platform.py
def platform_judge_fstab(text: str, exp: Mapping[str, Any]) -> list:
    from wizard.rules import os as pc

    return pc.fstab_table(text, exp)


# from wizard/parsers/topology.py
def as_probe(probe: str, source: str, rule: Callable[[Mapping[str, Any], Mapping[str, Any]], list[Finding]]
             ) -> Callable[[str, Mapping[str, Any]], list[Finding]]:
    """A judge that hands the pasted text to ``rule`` as the output of ``probe`` (the same rule the live
    check runs on that probe)."""
    def judge(text: str, exp: Mapping[str, Any]) -> list[Finding]:
        return rule({probe: ProbeOutput(probe, source, text=text)}, exp)

    judge.__name__ = f"judge_{probe}"
    return judge


# from wizard/parsers/host_kinds.py
def host_kinds_judge_cmdline(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    out = {"cmdline": ProbeOutput("cmdline", "/proc/cmdline", text=text)}
    return hc.iommu(out, exp)


# from wizard/parsers/host_kinds.py
def host_kinds_judge_driver_version(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    d = parse_driver_version(text)
    if not d.version:
        return [Finding("driver.version", Verdict.UNKNOWN, "no driver version in this text", "host",
                        tuple(text.splitlines()[:3]), "Paste the whole of /proc/driver/nvidia/version.",
                        gc.SRC_A2)]
    return [Finding("driver.version", Verdict.PASS,
                    f"NVIDIA driver {d.version} loaded ({d.flavour} kernel module)", "host",
                    tuple(x for x in (d.line, d.gcc_line) if x), "", gc.SRC_A2)]


# from wizard/parsers/host_kinds.py
def host_kinds_judge_modules(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    src = "/proc/modules" if re.search(r" (Live|Loading) 0x", text) else "lsmod"
    out = {"modules": ProbeOutput("modules", src, text=text)}
    return gc.nouveau(out, exp) + gc.driver(out, exp)


# from wizard/parsers/host_kinds.py
def host_kinds_judge_os_release(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    return os_rules.os_release({"os_release": ProbeOutput("os_release", "/etc/os-release", text=text)}, exp)


# from wizard/parsers/smi_kinds.py
def smi_kinds_judge(parse):
    def judge(text: str, exp: Mapping[str, Any]) -> list[Finding]:
        return judge_doc(parse(text), exp, before_tests=False)
    return judge


