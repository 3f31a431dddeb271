"""Are the diagnostic tools bringup relies on installed? (lspci from pciutils.)"""

from __future__ import annotations

from typing import Any, Mapping

from wizard.rules.common import Outputs, missing
from wizard.model import Finding, Verdict
from wizard.i18n import Msg

SRC_LSPCI = "lspci(8) man page, https://man7.org/linux/man-pages/man8/lspci.8.html (pciutils)"


def lspci(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    o = out.get("lspci_version")
    if o is None:
        return [missing("os.tools", o, "whether lspci is installed", source=SRC_LSPCI)]
    if o.rc == 127 or o.error.startswith("command not found"):
        return [Finding("os.tools", Verdict.FAIL, "lspci is not installed", "host", tuple(o.evidence_error()),
                        "Run this step's action: it installs pciutils with the distribution's package "
                        "manager.", SRC_LSPCI)]
    if o.error or o.rc != 0:
        return [missing("os.tools", o, "whether lspci works", source=SRC_LSPCI)]
    first = (o.text.strip().splitlines() or [""])[0]
    return [Finding("os.tools", Verdict.PASS, Msg("lspci is installed ({first})", first=first), "host", (o.source, first), "",
                    SRC_LSPCI)]
