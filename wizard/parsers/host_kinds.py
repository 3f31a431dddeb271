"""``explain`` kinds for host files: /proc/cmdline, /proc/driver/nvidia/version, lsmod and
/proc/modules, /etc/os-release. Each judge feeds the same check the health/BIOS/OS stages use."""

from __future__ import annotations

import re
from typing import Any, Mapping

from wizard.rules import gpu as gc
from wizard.rules import host as hc
from wizard.kinds import Kind, register_kind
from wizard.model import Finding, Verdict
from wizard.parsers.gpu import parse_driver_version
from wizard.probes import ProbeOutput

_CMDLINE_TOKENS = ("BOOT_IMAGE=", "root=", " ro", "quiet", "console=", "iommu", "init=", "rd.")


def _detect_cmdline(text: str) -> float:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) != 1 or "=" not in lines[0]:
        return 0.0
    hits = sum(t in " " + lines[0] for t in _CMDLINE_TOKENS)
    return min(1.0, 0.3 * hits)


def _judge_cmdline(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    out = {"cmdline": ProbeOutput("cmdline", "/proc/cmdline", text=text)}
    return hc.iommu(out, exp)


def _detect_driver_version(text: str) -> float:
    return 1.0 if re.search(r"^NVRM version:", text, re.M) else 0.0


def _judge_driver_version(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    d = parse_driver_version(text)
    if not d.version:
        return [Finding("driver.version", Verdict.UNKNOWN, "no driver version in this text", "host",
                        tuple(text.splitlines()[:3]), "Paste the whole of /proc/driver/nvidia/version.",
                        gc.SRC_A2)]
    return [Finding("driver.version", Verdict.PASS,
                    f"NVIDIA driver {d.version} loaded ({d.flavour} kernel module)", "host",
                    tuple(x for x in (d.line, d.gcc_line) if x), "", gc.SRC_A2)]


_LSMOD_LINE = re.compile(r"^[A-Za-z0-9_]+\s+\d+\s+\d+(\s+\S+)?\s*$")


def _detect_modules(text: str) -> float:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return 0.0
    if lines[0].split()[:3] == ["Module", "Size", "Used"]:
        return 1.0
    proc = sum(1 for ln in lines if re.match(r"^\S+ \d+ \d+ \S+ (Live|Loading|Unloading) 0x", ln))
    ls = sum(1 for ln in lines if _LSMOD_LINE.match(ln))
    return max(proc, ls) / len(lines) * 0.9


def _judge_modules(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    src = "/proc/modules" if re.search(r" (Live|Loading) 0x", text) else "lsmod"
    out = {"modules": ProbeOutput("modules", src, text=text)}
    return gc.nouveau(out, exp) + gc.driver(out, exp)


def _detect_os_release(text: str) -> float:
    return 0.9 if re.search(r"^(PRETTY_NAME|VERSION_ID)=", text, re.M) and re.search(r"^ID=", text, re.M) else 0.0


def _judge_os_release(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    return hc.os_release({"os_release": ProbeOutput("os_release", "/etc/os-release", text=text)}, exp)


register_kind(Kind("proc-cmdline", "/proc/cmdline", _detect_cmdline, _judge_cmdline, ("cat /proc/cmdline",)))
register_kind(Kind("proc-driver-nvidia-version", "/proc/driver/nvidia/version", _detect_driver_version,
                   _judge_driver_version, ("cat /proc/driver/nvidia/version",)))
register_kind(Kind("kernel-modules", "lsmod or /proc/modules", _detect_modules, _judge_modules,
                   ("lsmod", "cat /proc/modules")))
register_kind(Kind("os-release", "/etc/os-release", _detect_os_release, _judge_os_release,
                   ("cat /etc/os-release",)))
