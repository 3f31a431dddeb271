"""Rules built from other rules, for the steps whose findings several rules report together, and
the two combinators the registry uses: :func:`only` (a rule restricted to some finding ids) and
:func:`needs_gpu` (skipped where the PCI bus shows no NVIDIA GPU).

Every function here has the rule signature ``(facts, plan) -> list[Finding]``.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from wizard.model import WAITS_FOR_GPUS, Finding, Verdict
from wizard.rules import driver_install as ds
from wizard.rules import nvlink, pcie, smi
from wizard.rules.identity import dmi_identity, gpu_serials
from wizard.i18n import Msg

Check = Callable[[Mapping[str, Any], Mapping[str, Any]], "list[Finding]"]


def only(check: Check, *ids: str) -> Check:
    """``check`` restricted to the findings with ``ids`` (a check that also reports other
    topics serves several steps); nothing left -> one ``unknown`` saying so."""

    def wrapped(outputs: Mapping[str, Any], plan: Mapping[str, Any]) -> list[Finding]:
        found = [f for f in check(outputs, plan) if f.id in ids]
        if found:
            return found
        return [Finding(ids[0], Verdict.UNKNOWN, Msg("nothing reported for {a1}", a1=ids[0]), "host", (),
                        "Run the check again; if it stays empty, attach a capture bundle to a bug report.", "")]

    wrapped.__name__ = f"only_{check.__name__}"
    wrapped.__doc__ = f"{check.__doc__ or check.__name__} Restricted to: {', '.join(ids)}."
    return wrapped


def needs_gpu(check: Check) -> Check:
    """``check`` turned into ``skip`` where the PCI bus (probe ``pci``) shows no NVIDIA GPU, keeping
    what it observed in the message: a missing nvidia-smi is not news when there is no GPU."""
    import dataclasses

    from wizard.rules.gpu_presence import _no_gpu  # lazy: gpu_presence imports the rules this module joins

    def wrapped(outputs: Mapping[str, Any], plan: Mapping[str, Any]) -> list[Finding]:
        found = check(outputs, plan)
        if not _no_gpu(outputs):
            return found
        # a finding the check itself skipped already says why (walk 38 #8: "not checked: no NVIDIA GPU ...; observed:
        # AER count check skipped: no NVIDIA GPU ..."): it stands as said; the others keep what they observed, in
        # pieces (the observed message shown translated)
        return [dataclasses.replace(f, verdict=Verdict.SKIP, remedy="", waits_for=WAITS_FOR_GPUS,
                                    message=f.message if f.verdict is Verdict.SKIP else
                                    Msg("not checked: no NVIDIA GPU on the PCI bus (see health.gpu_pci); observed: ")
                                    + f.message) for f in found]

    wrapped.__name__ = f"needs_gpu_{check.__name__}"
    wrapped.__doc__ = f"{check.__doc__ or check.__name__} Skipped when no NVIDIA GPU is on the PCI bus."
    return wrapped


def fabric_manager(out: Mapping[str, Any], plan: Mapping[str, Any]) -> list[Finding]:
    """health.fabric from nvidia-smi -q -x; ``skip`` where no GPU reports an NVLink fabric
    (PCIe-only or bridge-only systems need no Fabric Manager)."""
    findings = smi.topic_check("health.fabric")(out, plan)
    if len(findings) == 1 and findings[0].verdict is Verdict.UNKNOWN and "nothing to judge" in findings[0].message:
        return [Finding("health.fabric", Verdict.SKIP,
                        "no GPU reports an NVLink fabric (no NVSwitch): Fabric Manager is not needed", "host",
                        findings[0].evidence, "", nvlink.SRC_A3)]
    return findings


def fabric_manager_all(out: Mapping[str, Any], plan: Mapping[str, Any]) -> list[Finding]:
    """GPU-side fabric registration (health.fabric) plus the host side: the nvidia-fabricmanager
    service, its version against the driver and NSCQ (driver.fabric_manager, driver.nscq)."""
    gpu_side = fabric_manager(out, plan)
    host_side = ds.fabric_manager_setup(out, plan)
    if all(f.verdict is Verdict.SKIP for f in host_side) and all(f.verdict is Verdict.SKIP for f in gpu_side):
        return host_side
    return gpu_side + [f for f in host_side if f.verdict is not Verdict.SKIP or not gpu_side]


def persistence(out: Mapping[str, Any], plan: Mapping[str, Any]) -> list[Finding]:
    """The nvidia-persistenced service (driver.persistenced) and each GPU's persistence mode
    (health.persistence, from nvidia-smi -q -x / NVML)."""
    return ds.persistenced(out, plan) + smi.topic_check("health.persistence")(out, plan)


def identity_and_serials(out: Mapping[str, Any], plan: Mapping[str, Any]) -> list[Finding]:
    """The machine's DMI identity (grounding.serials) and every GPU's serial against the record
    (grounding.gpu_serials)."""
    return dmi_identity(out, plan) + gpu_serials(out, plan)


def pcie_errors(out: Mapping[str, Any], plan: Mapping[str, Any]) -> list[Finding]:
    """PCIe errors on GPU links: AER status bits from lspci (health.pcie_aer), the sysfs AER counters
    (health.pcie_aer_counters) and nvidia-smi's replay counter (health.pcie_replay)."""
    return (pcie.pcie_aer(out, plan) + pcie.aer_counters(out, plan)
            + smi.topic_check("health.pcie_replay")(out, plan))
