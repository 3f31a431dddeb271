"""``explain`` kinds for host files: /proc/cmdline, /proc/driver/nvidia/version, lsmod and
/proc/modules, /etc/os-release. Each judge feeds the same check the health/BIOS/OS stages use."""

from __future__ import annotations

import re
from wizard.common import lazy_re


_CMDLINE_TOKENS = ("BOOT_IMAGE=", "root=", " ro", "quiet", "console=", "iommu", "init=", "rd.")


def detect_cmdline(text: str) -> float:
    """Confidence that ``text`` is /proc/cmdline: one line of boot parameters (a ``#`` heading above it, as a paste's
    "## kernel cmdline", is left out)."""
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if len(lines) != 1 or "=" not in lines[0]:
        return 0.0
    hits = sum(t in " " + lines[0] for t in _CMDLINE_TOKENS)
    return min(1.0, 0.3 * hits)


def detect_driver_version(text: str) -> float:
    """1.0 for /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15 ..."); 0.8 for
    another "NVRM version:" line (nvidia-container-cli info prints "NVRM version:   384.130" and claims its own
    output with more confidence)."""
    if re.search(r"^[ \t]*NVRM version:\s*NVIDIA\b", text, re.M):
        return 1.0
    return 0.8 if re.search(r"^[ \t]*NVRM version:", text, re.M) else 0.0


_LSMOD_LINE = lazy_re(r"^[A-Za-z0-9_]+\s+\d{4,}\s+\d+(\s+\S+)?\s*$")
"""One lsmod line: name, size in bytes (a loaded module's core is thousands of bytes: four digits or more, which keeps a
short table of name and small counts, such as ``sinfo -o '%P %D ...'``, from reading as lsmod), use count, users."""


def detect_modules(text: str) -> float:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return 0.0
    if lines[0].split()[:3] == ["Module", "Size", "Used"]:
        return 1.0
    proc = sum(1 for ln in lines if re.match(r"^\S+ \d+ \d+ \S+ (Live|Loading|Unloading) 0x", ln))
    ls = sum(1 for ln in lines if _LSMOD_LINE.match(ln))
    return max(proc, ls) / len(lines) * 0.9


def detect_os_release(text: str) -> float:
    return 0.9 if re.search(r"^(PRETTY_NAME|VERSION_ID)=", text, re.M) and re.search(r"^ID=", text, re.M) else 0.0


_VERSION_LINE = lazy_re(r"^\s*(NVIDIA-SMI|Driver Version|CUDA Version)\s*:?\s*(\d+(?:\.\d+){1,2})\s*$", re.I)


def smi_version_lines(text: str) -> dict[str, tuple[str, str]]:
    """nvidia-smi's header values written one per line ("NVIDIA-SMI 550.54.14", "Driver Version: 550.54.14",
    "CUDA Version: 12.4"), as issue templates ask for them: label (lower case) -> (value, line)."""
    out: dict[str, tuple[str, str]] = {}
    for ln in text[:20000].splitlines()[:200]:
        m = _VERSION_LINE.match(ln)
        if m:
            out.setdefault(m.group(1).lower(), (m.group(2), ln.strip()))
    return out


def detect_smi_versions(text: str) -> float:
    """0.85 when most of a short text is nvidia-smi's header values, one per line, with the driver's version."""
    if "Version" not in text[:4000] and "NVIDIA-SMI" not in text[:4000]:  # cheap first
        return 0.0
    head = text[:4000]
    lines = [ln for ln in head.splitlines()[:40] if ln.strip()]
    v = smi_version_lines(head)
    if not lines or len(lines) > 12 or not ({"driver version", "nvidia-smi"} & set(v)):
        return 0.0
    return 0.85 if len(v) >= 2 and len(v) >= 0.5 * len(lines) else 0.0
