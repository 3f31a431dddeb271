"""Input kinds for ``bringup explain``: what a pasted or saved output is, and how to judge it.

A :class:`Kind` pairs a detector (text -> confidence 0..1) with a judge (text + expectations ->
findings). Parser modules register their kinds here; :mod:`wizard.explain` picks the most
confident kind for each input. The same judge functions back the live/snapshot checks of the
health stage, so a paste and a capture bundle are judged by one set of rules.

Conventions for judges:
* never raise: unreadable input gives an ``unknown`` finding with the raw lines as evidence;
* ``expectations`` is the plan answers plus ``acknowledged`` (a set of event keys the operator
  acknowledged with a reason) and ``boot_only`` (bool: the input is this boot's log only);
* finding ids are ``<stage>.<topic>`` (``health.xid``, ``health.ecc``...), subjects name the GPU
  as :func:`wizard.rules.common.gpu_subject` does.
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


KINDS: dict[str, Kind] = {}


def register_kind(kind: Kind) -> Kind:
    if kind.name in KINDS:
        raise ValueError(f"duplicate kind {kind.name}")
    KINDS[kind.name] = kind
    return kind


_LOADED = False


def load_all() -> dict[str, Kind]:
    """Import every parser module that registers kinds (once); returns the registry."""
    global _LOADED
    if _LOADED:
        return KINDS
    import importlib
    import pkgutil

    import wizard.rules as rules_pkg
    import wizard.parsers as pkg

    # parsers register kinds (and some probes); a few check modules register the probes they read
    for package in (pkg, rules_pkg):
        for m in pkgutil.iter_modules(package.__path__):
            importlib.import_module(f"{package.__name__}.{m.name}")
    _LOADED = True
    return KINDS
