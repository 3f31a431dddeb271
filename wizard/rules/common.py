"""Helpers shared by checks: the unknown finding for a probe that could not be read."""

from __future__ import annotations

from typing import Mapping

from wizard.model import Finding, Verdict
from wizard.probes import ProbeOutput

Outputs = Mapping[str, ProbeOutput]


def missing(fid: str, out: ProbeOutput | None, what: str, subject: str = "host",
            remedy: str = "", source: str = "") -> Finding:
    """An ``unknown`` finding for a probe that could not be collected, with its error as evidence."""
    if out is None:
        return Finding(fid, Verdict.UNKNOWN, f"could not tell {what}: probe not collected",
                       subject, ("(no probe output: it was not collected)",), remedy, source)
    return Finding(fid, Verdict.UNKNOWN, f"could not tell {what}: {out.error or 'no output'}",
                   subject, tuple(out.evidence_error()), remedy, source)


def garbled(fid: str, out: ProbeOutput, what: str, lines: list[str], subject: str = "host",
            source: str = "") -> Finding:
    """An ``unknown`` finding for output that could not be parsed, the raw lines as evidence."""
    ev = [out.source] + [ln for ln in lines[:20]]
    if len(lines) > 20:
        ev.append(f"... {len(lines) - 20} more unreadable lines")
    return Finding(fid, Verdict.UNKNOWN, f"could not read {what}: unexpected output", subject,
                   tuple(ev), "Run the command by hand and check its output; attach it to a bug report "
                   "if it looks normal.", source)


def gib(kib: int) -> float:
    """KiB -> GiB."""
    return kib / (1024 * 1024)


def normalise_bus_id(bus_id: str) -> str:
    """"00000000:9B:00.0" (NVML/nvidia-smi) or "9b:00.0" (lspci) -> "0000:9b:00.0" (sysfs form)."""
    b = bus_id.strip().lower()
    if b.count(":") == 1:
        b = "0000:" + b
    dom, _, rest = b.partition(":")
    if len(dom) > 4:
        dom = dom[-4:]
    return f"{dom}:{rest}"


def gpu_subject(index: int | str | None = None, bus_id: str = "", serial: str = "") -> str:
    """How findings name a GPU: "GPU 3 (0000:9b:00.0, serial 1654922005923)"; parts may be missing."""
    head = f"GPU {index}" if index not in (None, "") else "GPU"
    inner = ", ".join(x for x in (normalise_bus_id(bus_id) if bus_id else "",
                                  f"serial {serial}" if serial and serial.upper() not in ("N/A", "[N/A]") else "") if x)
    return f"{head} ({inner})" if inner else head
