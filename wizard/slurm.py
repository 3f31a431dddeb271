"""Slurm: drain a node whose health check fails, resume one that bringup drained once it passes.

``bringup check --profile health --slurm`` does what LBNL NHC's ``node-mark-offline`` / ``node-mark-online`` helpers
do for Slurm (https://github.com/mej/nhc, helpers/): it reads the node's state and reason
(``scontrol show node -o NODE``), then

* unhealthy (a finding fails): ``scontrol update NodeName=NODE State=DRAIN Reason="bringup: <first failure>"``,
  unless the node is already drained or down for another reason (an operator's reason is kept, never overwritten;
  a node bringup drained gets its reason refreshed when the failure changed);
* healthy: ``scontrol update NodeName=NODE State=RESUME`` only when the node is drained *and* its reason starts
  with ``bringup:`` (:data:`REASON_PREFIX`): an operator's drain is never undone, and a node that is not drained is
  left alone.

The node is ``$SLURMD_NODENAME`` (slurmd sets it for ``HealthCheckProgram``, prologs and epilogs), else the short host
name (``hostname -s``), as NHC names it. Every ``scontrol`` runs with an argv list (never a shell) and a time limit;
the reason is at most :data:`MAX_REASON_CHARS` printable ASCII characters, without quotes.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
from dataclasses import dataclass
from typing import Mapping, Sequence

from wizard.model import Finding
from wizard.parsers.scheduler import NodeState, parse_show_node

REASON_PREFIX = "bringup:"
"""Every reason bringup sets starts with this; only such a drain is bringup's to resume (NHC's ``NHC:`` leader)."""
MAX_REASON_CHARS = 64
"""Longest reason bringup sets (judgement: ``sinfo -R`` shows reasons in a 20-character column by default and
operators read them in one line; the finding id in the reason leads to the whole finding)."""
SCONTROL_TIMEOUT_S = 15.0
"""Limit of one ``scontrol`` call, seconds (judgement: slurmctld answers in milliseconds; a controller that does
not answer within this is down, and the health check must not hang on it)."""
OFFLINE_FLAGS = frozenset({"DRAIN", "DRAINED", "DRAINING", "DOWN", "FAIL", "FAILING", "MAINT", "REBOOT_REQUESTED",
                           "REBOOT_ISSUED", "POWER_DOWN", "POWERED_DOWN", "POWERING_DOWN"})
"""Node state words (``scontrol show node`` State=BASE+FLAG+...) that mean it takes no new jobs already."""


class SlurmError(Exception):
    """``scontrol`` is missing, failed, timed out, or printed no state for the node (the message says which)."""


@dataclass(frozen=True)
class Outcome:
    """What ``--slurm`` did: ``action`` is ``drain``, ``resume`` or ``none``; ``argv`` the scontrol update it ran
    (empty for none); ``why`` one line for the operator; ``before`` the node as it was."""

    node: str
    action: str
    why: str
    before: NodeState | None = None
    argv: tuple[str, ...] = ()
    reason: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"node": self.node, "action": self.action, "why": self.why, "reason": self.reason,
                "argv": list(self.argv), "state_before": self.before.state if self.before else None,
                "reason_before": self.before.reason if self.before else None}


def node_name(environ: Mapping[str, str] | None = None) -> str:
    """``$SLURMD_NODENAME`` when set (slurmd sets it for its health check, prolog and epilog), else the short host
    name (what ``hostname -s`` prints: the host name up to its first dot)."""
    env = os.environ if environ is None else environ
    name = (env.get("SLURMD_NODENAME") or "").strip()
    return name or socket.gethostname().split(".", 1)[0]


def short_reason(finding: Finding) -> str:
    """``bringup: <id>: <message>`` for the first failing finding, cut to :data:`MAX_REASON_CHARS` characters of
    printable ASCII without quotes, backslashes or line breaks (what the machine printed never reaches scontrol's
    argument as anything but plain words)."""
    fid = finding.id.split(".", 1)[-1] if finding.id.startswith("health.") else finding.id
    message, subject = finding.message, finding.subject
    if subject and subject != "host" and message.startswith(subject):
        message = message[len(subject):].lstrip(" :")
    gpu = ""
    if subject and subject != "host":  # "GPU 3 (0000:9b:00.0, serial ...)" -> "GPU 3"; "GPU (0000:02:00.0)" -> "GPU 02:00.0"
        m = re.search(r"GPU (\d+)", subject) or re.search(r"(?:[0-9a-fA-F]{4,8}:)?([0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)", subject)
        gpu = f" GPU {m.group(1)}" if m else f" {subject}"
    return _clean(f"{REASON_PREFIX} {fid}{gpu}: {message}")


def _clean(text: str) -> str:
    text = re.sub(r"[^ -~]|[\"'`\\]", " ", text)
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) > MAX_REASON_CHARS:
        text = text[:MAX_REASON_CHARS - 3].rstrip() + "..."
    return text


def _scontrol(argv: Sequence[str], timeout_s: float) -> str:
    try:
        r = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s,
                           env={**os.environ, "LC_ALL": "C", "LANG": "C"})
    except FileNotFoundError:
        raise SlurmError(f"{argv[0]} not found: --slurm needs Slurm's client commands on PATH") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"`{' '.join(argv)}` did not answer within {timeout_s:g} s (is slurmctld up?)") from None
    except OSError as exc:
        raise SlurmError(f"could not run {argv[0]}: {exc.strerror or exc}") from None
    if r.returncode != 0:
        why = (r.stderr.strip() or r.stdout.strip() or f"exit status {r.returncode}").splitlines()[-1][:300]
        raise SlurmError(f"`{' '.join(argv)}` failed: {why}")
    return r.stdout


def offline(node: NodeState) -> bool:
    """Takes no new jobs already (drained, down, failing, in maintenance, rebooting, powered down)."""
    return bool(node.words & OFFLINE_FLAGS)


def ours(node: NodeState) -> bool:
    """The reason is one bringup set."""
    return node.reason.startswith(REASON_PREFIX)


def show_node(node: str, scontrol: str = "scontrol", timeout_s: float = SCONTROL_TIMEOUT_S) -> NodeState:
    """The node's state and reason (``scontrol show node -o NODE``).

    Raises:
        SlurmError: scontrol missing, failing (an unknown node), timing out, or printing no state.
    """
    text = _scontrol([scontrol, "show", "node", "-o", node], timeout_s)
    st = parse_show_node(text)
    if st is None:
        raise SlurmError(f"`scontrol show node -o {node}` printed no State: {text.strip()[:200]!r}")
    return st


def decide(node: str, healthy: bool, before: NodeState, failure: Finding | None, scontrol: str = "scontrol",
           reason: str = "") -> Outcome:
    """What to do (nothing is run here): drain an unhealthy node that is not already offline for another reason;
    resume a healthy node that bringup drained; leave everything else as it is. The drain reason is
    :func:`short_reason` of ``failure``, else ``reason`` (cleaned the same way), else "bringup: health check failed"."""
    if healthy:
        if before.drained and ours(before):
            return Outcome(node, "resume", f"healthy: resuming {node}, drained by bringup ({before.reason})", before,
                           (scontrol, "update", f"NodeName={node}", "State=RESUME"))
        if before.drained:
            why = (f"healthy, but {node} was drained by someone else ({before.reason or 'no reason given'}): "
                   "left drained")
            return Outcome(node, "none", why, before)
        return Outcome(node, "none", f"healthy: {node} is {before.state}, nothing to change", before)
    reason = short_reason(failure) if failure is not None else _clean(reason or f"{REASON_PREFIX} health check failed")
    if offline(before) and not ours(before):
        return Outcome(node, "none", f"unhealthy, but {node} is already {before.state} "
                       f"({before.reason or 'no reason given'}): its reason is kept", before, reason=reason)
    if before.drained and ours(before) and before.reason == reason:
        return Outcome(node, "none", f"unhealthy: {node} is already drained for this ({reason})", before,
                       reason=reason)
    return Outcome(node, "drain", f"unhealthy: draining {node} ({reason})", before,
                   (scontrol, "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"), reason)


def apply(healthy: bool, failure: Finding | None, node: str | None = None, scontrol: str = "scontrol",
          timeout_s: float = SCONTROL_TIMEOUT_S, reason: str = "") -> Outcome:
    """Read the node's state, decide (:func:`decide`) and run the ``scontrol update`` it calls for.

    Raises:
        SlurmError: a scontrol call failed (missing, unknown node, no controller, timeout, permission denied).
    """
    name = node or node_name()
    before = show_node(name, scontrol, timeout_s)
    out = decide(name, healthy, before, failure, scontrol, reason)
    if out.argv:
        try:
            _scontrol(out.argv, timeout_s)
        except SlurmError:
            # another run (slurmd's periodic check, a prolog) may have done it meanwhile: Slurm then refuses a
            # RESUME of a node that is no longer drained ("Invalid node state specified"); done is done
            now = show_node(name, scontrol, timeout_s)
            if (out.action == "resume" and not now.drained) or (out.action == "drain" and now.drained):
                return Outcome(name, out.action, out.why + " (already done by another run)", before, out.argv,
                               out.reason)
            raise
    return out
