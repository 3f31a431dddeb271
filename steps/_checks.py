"""Small helpers for wiring checks into steps."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from wizard.model import Finding, Verdict

Check = Callable[[Mapping[str, Any], Mapping[str, Any]], "list[Finding]"]


def only(check: Check, *ids: str) -> Check:
    """``check`` restricted to the findings with ``ids`` (a check that also reports other
    topics serves several steps); nothing left -> one ``unknown`` saying so."""

    def wrapped(outputs: Mapping[str, Any], plan: Mapping[str, Any]) -> list[Finding]:
        found = [f for f in check(outputs, plan) if f.id in ids]
        if found:
            return found
        return [Finding(ids[0], Verdict.UNKNOWN, f"nothing reported for {ids[0]}", "host", (),
                        "Run the check again; if it stays empty, attach a capture bundle to a bug report.", "")]

    wrapped.__name__ = f"only_{check.__name__}"
    wrapped.__doc__ = f"{check.__doc__ or check.__name__} Restricted to: {', '.join(ids)}."
    return wrapped


def needs_gpu(check: Check) -> Check:
    """``check`` turned into ``skip`` where the PCI bus (probe ``pci``) shows no NVIDIA GPU, keeping
    what it observed in the message: a missing nvidia-smi is not news when there is no GPU."""
    import dataclasses

    from wizard.rules.gpu_presence import _no_gpu

    def wrapped(outputs: Mapping[str, Any], plan: Mapping[str, Any]) -> list[Finding]:
        found = check(outputs, plan)
        if not _no_gpu(outputs):
            return found
        return [dataclasses.replace(f, verdict=Verdict.SKIP, remedy="",
                                    message=f"skipped: no NVIDIA GPU on the PCI bus (see health.gpu_pci); "
                                            f"observed: {f.message}") for f in found]

    wrapped.__name__ = f"needs_gpu_{check.__name__}"
    wrapped.__doc__ = f"{check.__doc__ or check.__name__} Skipped when no NVIDIA GPU is on the PCI bus."
    return wrapped
