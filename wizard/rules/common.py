"""Helpers shared by rules: the unknown finding for a probe that could not be read or parsed."""

from __future__ import annotations

from typing import Mapping

from wizard.model import Finding, Verdict
from wizard.probes import ProbeOutput
from wizard.i18n import N_, Msg

Outputs = Mapping[str, ProbeOutput]


TOOL_INSTALLED_BY = {"lspci": ("pciutils", "os.tools")}
"""A command a probe runs that bringup's own action installs: command -> (package, the step whose action installs
it). A check that runs before that step (the BIOS stage's PCIe checks, before the OS stage's os.tools) says so
instead of sending the operator to a command that is not there yet."""


def missing(fid: str, out: ProbeOutput | None, what: str, subject: str = "host",
            remedy: str = "", source: str = "") -> Finding:
    """An ``unknown`` finding for a probe that could not be collected, with its error as evidence. When the error is
    a command that is not installed and one of bringup's steps installs it (:data:`TOOL_INSTALLED_BY`), the remedy
    starts with that step."""
    if out is None:
        return Finding(fid, Verdict.UNKNOWN, Msg("could not tell {what}: probe not collected", what=what),
                       subject, ("(no probe output: it was not collected)",), remedy, source)
    head, sep, name = out.error.partition("command not found: ")
    tool = name.strip() if sep and not head else ""
    if tool in TOOL_INSTALLED_BY:
        package, step = TOOL_INSTALLED_BY[tool]
        first = Msg("{tool} is not installed yet: the {step} step's action installs it ({package}); or install "
                    "{package} with the package manager. Then check this step again.", tool=tool, step=step,
                    package=package)
        remedy = first + " " + remedy if remedy else first
    why = Msg("command not found: {tool}", tool=name.strip()) if sep and not head else out.error or N_('no output')
    return Finding(fid, Verdict.UNKNOWN, Msg("could not tell {what}: {a1}", what=what, a1=why),
                   subject, tuple(out.evidence_error()), remedy, source)


REMEDY_MISSING = ("Run the check again (as root where the file needs it); if it stays unknown, attach "
                  "`bringup capture -o node.tar.gz` to a bug report.")


def missing_rerun(fid: str, out: ProbeOutput | None, what: str, remedy: str = REMEDY_MISSING,
                  source: str = "") -> Finding:
    """:func:`missing` with a remedy by default: run again (as root), else attach a capture."""
    return missing(fid, out, what, remedy=remedy or REMEDY_MISSING, source=source)


def garbled(fid: str, out: ProbeOutput, what: str, lines: list[str], subject: str = "host",
            source: str = "") -> Finding:
    """An ``unknown`` finding for output that could not be parsed, the raw lines as evidence."""
    ev = [out.source] + [ln for ln in lines[:20]]
    if len(lines) > 20:
        ev.append(f"... {len(lines) - 20} more unreadable lines")
    return Finding(fid, Verdict.UNKNOWN, Msg("could not read {what}: unexpected output", what=what), subject,
                   tuple(ev), "Run the command by hand and check its output; attach it to a bug report "
                   "if it looks normal.", source)


def gib(kib: int) -> float:
    """KiB -> GiB."""
    return kib / (1024 * 1024)
