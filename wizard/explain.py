"""``bringup explain``: detect what each input is, parse it, judge it, print findings.

For support staff and operators who only have a paste: the input may include the command line
it came from (``$ nvidia-smi -q``), shell prompts, or be cut short. Unknown input is said to be
unknown, with the list of kinds bringup reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from wizard.kinds import KINDS, Kind, load_all
from wizard.model import Finding, Verdict, overall

MIN_CONFIDENCE = 0.3
"""Below this, the best detector's guess is not trusted and the input is reported as unknown."""

COMMANDS = ("nvidia-smi", "dmesg", "journalctl", "lspci", "cat", "nvcc", "python", "python3", "dcgmi",
            "all_reduce_perf", "all_gather_perf", "free", "lscpu", "numactl", "swapon", "lsmod", "edac-util",
            "ras-mc-ctl", "torchrun", "mpirun", "srun", "sudo", "grep", "tail", "head", "less")
PROMPT_RE = re.compile(
    r"^\s*(?:"
    r"\S+@\S+[$#]\s*\S"                      # user@host:~$ cmd  /  root@host:~# cmd
    r"|\[[^\]]*@[^\]]*\][$#]\s*\S"            # [user@login1 ~]$ cmd
    r"|[$>]\s+\S"                              # $ cmd, > cmd
    r"|#\s+(?:" + "|".join(re.escape(c) for c in COMMANDS) + r")\b"  # "# dmesg" (a root prompt), not "# nThread 1"
    r")")


@dataclass
class Explained:
    """One input's result: its kind (or ``None``), the findings and the overall verdict."""

    input: str
    kind: str | None
    title: str = ""
    findings: list[Finding] = field(default_factory=list)
    confidence: float = 0.0

    @property
    def verdict(self) -> Verdict:
        return overall(self.findings) if self.findings else Verdict.UNKNOWN

    def to_dict(self) -> dict[str, Any]:
        return {"input": self.input, "kind": self.kind, "title": self.title, "verdict": self.verdict.value,
                "confidence": round(self.confidence, 2), "findings": [f.to_dict() for f in self.findings]}


def strip_command_lines(text: str) -> str:
    """Drop leading shell-prompt lines (``$ nvidia-smi -q``, ``root@h:~# dmesg``) of a paste."""
    lines = text.splitlines()
    while lines and (PROMPT_RE.match(lines[0]) or not lines[0].strip()):
        lines.pop(0)
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


DETECT_HEAD_CHARS = 32 * 1024
"""Detectors see at most this much of an input: the format shows in its head, and a huge log
must not cost every detector a full scan (the judge still reads all of it)."""


def detect(text: str) -> tuple[Kind | None, float]:
    """The most confident kind for ``text`` (a detector that raises counts as 0)."""
    kinds = load_all()
    if len(text) > DETECT_HEAD_CHARS:
        cut = text.rfind("\n", 0, DETECT_HEAD_CHARS)
        text = text[: cut + 1 if cut > 0 else DETECT_HEAD_CHARS]
    best: Kind | None = None
    best_score = 0.0
    for k in kinds.values():
        try:
            score = float(k.detect(text))
        except Exception:  # noqa: BLE001 - a detector bug must not stop the others
            score = 0.0
        if score > best_score:
            best, best_score = k, score
    if best_score < MIN_CONFIDENCE:
        return None, best_score
    return best, best_score


def explain_text(text: str, name: str = "-", expectations: Mapping[str, Any] | None = None,
                 kind: str | None = None) -> Explained:
    """Detect (or take ``kind``), parse and judge one input. Never raises."""
    exp = dict(expectations or {})
    body = strip_command_lines(text)
    if kind is not None:
        k = load_all().get(kind)
        score = 1.0 if k else 0.0
    else:
        k, score = detect(body)
    if k is None:
        known = ", ".join(sorted(f"{x.title}" for x in load_all().values()))
        return Explained(name, None, "", [Finding(
            "explain.unknown_input", Verdict.UNKNOWN, "bringup does not recognise this input", "input",
            tuple(body.splitlines()[:5]),
            f"Give bringup the raw output of one of: {known}.", "")], score)
    try:
        findings = list(k.judge(body, exp))
    except Exception as exc:  # noqa: BLE001 - judges should not raise; if one does, say so
        findings = [Finding(f"explain.{k.name}", Verdict.UNKNOWN, f"judging this {k.title} crashed: {exc!r}",
                            "input", tuple(body.splitlines()[:5]),
                            "This is a bringup bug: please report it with the input.", "")]
    if not findings:
        findings = [Finding(f"explain.{k.name}", Verdict.UNKNOWN, f"nothing to judge in this {k.title}",
                            "input", tuple(body.splitlines()[:5]), "", "")]
    return Explained(name, k.name, k.title, findings, score)
