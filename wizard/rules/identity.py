"""Host identity from DMI (/sys/class/dmi/id): vendor, product, serial, BIOS version."""

from __future__ import annotations

from typing import Any, Mapping

from wizard.rules.common import Outputs, missing
from wizard.model import WAITS_FOR_GPUS, Finding, Verdict
from wizard.i18n import Msg

DMI_BASE = "/sys/class/dmi/id/"
SRC_DMI = "SMBIOS/DMI via /sys/class/dmi/id (kernel Documentation/ABI/testing/sysfs-class-dmi)"


def dmi_fields(files: Mapping[str, str | None]) -> dict[str, str]:
    """path -> content of the dmi probe -> {field: value} for readable, non-empty fields."""
    out = {}
    for path, content in files.items():
        if path.startswith(DMI_BASE) and content is not None and content.strip():
            out[path[len(DMI_BASE):]] = content.strip()
    return out


def dmi_identity(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    o = out.get("dmi")
    if o is None or (not o.ok and not o.files):
        return [missing("grounding.serials", o, "the DMI identity",
                        remedy="Read the chassis serial from its label and put it in the note when you "
                               "confirm this step (d on the step's screen).",
                        source=SRC_DMI)]
    files = o.files
    f = dmi_fields(files)
    ev = tuple(f"{DMI_BASE}{k}:{v}" for k, v in sorted(f.items()))
    ev += tuple(f"{p}: <{e}>" for p, e in sorted(o.file_errors.items()))
    if not f:
        ev = ev or (f"{o.source}: no readable file",)
        return [Finding("grounding.serials", Verdict.UNKNOWN,
                        "no DMI identity exposed (a virtual machine or a container?)", "host", ev,
                        "Read the chassis serial from its label and put it in the note when you confirm "
                        "this step (d on the step's screen).", SRC_DMI)]
    product = " ".join(x for x in (f.get("sys_vendor", ""), f.get("product_name", "")) if x) or "unknown product"
    serial = f.get("product_serial", "")
    if not serial:
        why = o.file_errors.get(DMI_BASE + "product_serial", "") or "not exposed"
        return [Finding("grounding.serials", Verdict.UNKNOWN, Msg("{product}; serial number unreadable ({why})", product=product, why=why),
                        "host", ev, "Run bringup as root to read the serial (the file is root-only), or "
                        "record it from the chassis label.", SRC_DMI)]
    return [Finding("grounding.serials", Verdict.PASS, Msg("{product}, serial {serial}", product=product, serial=serial), "host", ev, "", SRC_DMI)]


SRC_SERIALS = ("GPU serial numbers through NVML (nvmlDeviceGetSerial, NVML API reference, https://docs.nvidia.com/deploy/nvml-api/) "
               "/ nvidia-smi -q -x <serial>; recorded with the build at first sight and compared on every later check")


def gpu_serials_seen(out: Outputs) -> dict[str, str]:
    """PCI bus id (sysfs form) -> GPU serial, from nvidia-smi -q -x (else NVML); {} if none readable."""
    from wizard.common import normalise_bus_id
    from wizard.rules.smi import doc_from_outputs

    try:
        doc, _ = doc_from_outputs(out)
    except Exception:  # noqa: BLE001 - no GPU facts is not an error here
        return {}
    seen: dict[str, str] = {}
    for g in (doc.gpus if doc is not None else []):
        serial = (g.serial or "").strip()
        if g.bus_id and serial and serial.upper() not in ("N/A", "[N/A]", "0", "0000000000000"):
            seen[normalise_bus_id(g.bus_id)] = serial
    return seen


def gpu_serials(out: Outputs, expectations: Mapping[str, Any]) -> list[Finding]:
    """GPU serials against the ones recorded with this build (``expectations["gpu_serials"]``,
    bus id -> {"serial", "at"}): a changed serial means the GPU in that slot was swapped."""
    from wizard.common import gpu_subject
    from wizard.rules.gpu_presence import _no_gpu

    if _no_gpu(out):
        return [Finding("grounding.gpu_serials", Verdict.SKIP,
                        "GPU serials not recorded: no NVIDIA GPU on the PCI bus (see health.gpu_pci)", "host", (),
                        "", SRC_SERIALS, waits_for=WAITS_FOR_GPUS)]
    seen = gpu_serials_seen(out)
    if not seen:
        return [Finding("grounding.gpu_serials", Verdict.UNKNOWN,
                        "GPU serials not readable yet: they need the driver (nvidia-smi or NVML)", "host", (),
                        "Come back to this step once the driver & CUDA stage is done.", SRC_SERIALS)]
    recorded = expectations.get("gpu_serials") or {}
    findings = []
    for bus, serial in sorted(seen.items()):
        rec = recorded.get(bus) if isinstance(recorded, Mapping) else None
        subject = gpu_subject(None, bus, serial)
        if rec is None:
            findings.append(Finding("grounding.gpu_serials", Verdict.PASS, Msg("{subject}: serial {serial} recorded", subject=subject, serial=serial),
                                    subject, (f"{bus}: serial {serial}",), "", SRC_SERIALS))
        elif rec.get("serial") != serial:
            findings.append(Finding(
                "grounding.gpu_serials", Verdict.WARN,
                Msg("GPU ({bus}): serial is now {serial}, recorded {get} on {get2}: the GPU in this slot was "
                    "replaced", bus=bus, serial=serial, get=rec.get('serial'), get2=rec.get('at', '?')), subject,
                (f"{bus}: recorded {rec.get('serial')} ({rec.get('at', '?')})", f"{bus}: now {serial}"),
                "If the swap was intended (an RMA replacement), confirm this step with a note naming the RMA "
                "case; bringup then records the new serial. If not, find out who moved GPUs.", SRC_SERIALS))
        else:
            findings.append(Finding("grounding.gpu_serials", Verdict.PASS,
                                    Msg("{subject}: same serial as recorded on {get}", subject=subject, get=rec.get('at', '?')), subject,
                                    (f"{bus}: serial {serial}",), "", SRC_SERIALS))
    for bus in sorted(set(recorded) - set(seen)) if isinstance(recorded, Mapping) else []:
        findings.append(Finding("grounding.gpu_serials", Verdict.WARN,
                                Msg("GPU ({bus}) with serial {get} was recorded and is not seen now", bus=bus, get=recorded[bus].get('serial')), f"GPU ({bus})", (f"{bus}: recorded {recorded[bus].get('serial')}",),
                                "Check health.gpu_pci and health.gpu_count: a GPU that fell off the bus or was "
                                "removed shows up here first.", SRC_SERIALS))
    return findings
