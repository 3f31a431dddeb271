"""Host identity from DMI (/sys/class/dmi/id): vendor, product, serial, BIOS version."""

from __future__ import annotations

from typing import Any, Mapping

from wizard.checks.common import Outputs, missing
from wizard.model import Finding, Verdict

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
                               "confirm this step (d).",
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
                        "this step (d).", SRC_DMI)]
    product = " ".join(x for x in (f.get("sys_vendor", ""), f.get("product_name", "")) if x) or "unknown product"
    serial = f.get("product_serial", "")
    if not serial:
        why = o.file_errors.get(DMI_BASE + "product_serial", "") or "not exposed"
        return [Finding("grounding.serials", Verdict.UNKNOWN, f"{product}; serial number unreadable ({why})",
                        "host", ev, "Run bringup as root to read the serial (the file is root-only), or "
                        "record it from the chassis label.", SRC_DMI)]
    return [Finding("grounding.serials", Verdict.PASS, f"{product}, serial {serial}", "host", ev, "", SRC_DMI)]
