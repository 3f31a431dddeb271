"""Input kinds for ``bringup explain``: what a pasted or saved output is, and how to judge it.

A :class:`Kind` pairs a detector (text -> confidence 0..1, in the parser module) with a judge
(text + expectations -> findings, in :mod:`wizard.rules.pasted`). Every kind is listed in
:data:`wizard.registry.KINDS`; :mod:`wizard.explain` picks the most confident kind for each input. The same judge functions back the live/snapshot checks of the
health stage, so a paste and a capture bundle are judged by one set of rules.

Conventions for judges:
* never raise: unreadable input gives an ``unknown`` finding with the raw lines as evidence;
* ``expectations`` is the plan answers plus ``acknowledged`` (a set of event keys the operator
  acknowledged with a reason) and ``boot_only`` (bool: the input is this boot's log only);
* finding ids are ``<stage>.<topic>`` (``health.xid``, ``health.ecc``...), subjects name the GPU
  as :func:`wizard.common.gpu_subject` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from wizard.model import Finding

Detector = Callable[[str], float]
Judge = Callable[[str, Mapping[str, Any]], "list[Finding]"]


@dataclass(frozen=True)
class Kind:
    """One input format.

    Attributes:
        name: stable id used in ``explain --json`` (``"nvidia-smi-q-x"``, ``"kernel-log"``, ...).
        title: what an operator calls it (``"nvidia-smi -q -x (XML)"``).
        detect: text -> confidence in [0, 1]; 0 = certainly not this kind.
        judge: text + expectations -> findings.
        commands: command lines that produce it (shown when an input is not recognised).
    """

    name: str
    title: str
    detect: Detector
    judge: Judge
    commands: tuple[str, ...] = ()
