"""Host memory and machine-check errors: EDAC counters (sysfs, ``edac-util``), rasdaemon's records
(``ras-mc-ctl``) and the EDAC / MCE / APEI lines of the kernel log.

* Uncorrected (UE) memory errors: fail (replace the DIMM); corrected (CE): warn (watch the count).
* Machine checks: uncorrected -> fail, corrected or a CMCI storm -> warn; decoded MCi_STATUS bits
  are shown; a decoded record for a controller whose EDAC line is present is that line's detail.
* Firmware-reported (APEI GHES) memory errors by CPER severity; other APEI sections: ``health.hw_error``.
* No EDAC controller registered: unknown, with how to load the EDAC driver.
"""

from __future__ import annotations

import re

from collections import OrderedDict
from typing import Any, Mapping

from wizard.facts import facts_of
from wizard.model import Finding, Verdict, measure
from wizard.parsers.edac import EDAC_ROOT, EdacFacts, RasFacts, parse_edac_sysfs
from wizard.parsers.kernellog import KernelEvent, KernelLog
from wizard.rules.common import Outputs, missing
from wizard.rules.kernel_log_common import AER_WORDS, SRC_AER, SRC_GHES, cap, plural
from wizard.i18n import Msg, N_, SEMICOLON

SRC_EDAC = ("Linux kernel admin guide, 'Reliability, Availability and Serviceability (RAS)': EDAC ce_count/ue_count "
            "(https://docs.kernel.org/admin-guide/ras.html); rasdaemon (https://github.com/mchehab/rasdaemon); "
            "Meta GCM health checks, mce (https://github.com/facebookresearch/gcm): UE > 0 -> FAIL, CE -> WARN")
SRC_MCI = ("Intel SDM Vol. 3B 'IA32_MCi_STATUS MSRs' (bit 61 UC = uncorrected, 57 PCC, 62 OVER); AMD64 APM "
           "Vol. 2 MCi_STATUS (same bits)")
SRC_CMCI = ("Linux kernel source arch/x86/kernel/cpu/mce/intel.c ('CMCI storm detected': corrected-error interrupts above "
            "the storm threshold; https://github.com/torvalds/linux/blob/master/arch/x86/kernel/cpu/mce/intel.c)")


# ------------------------------------------------------------------ kernel-log EDAC / MCE / APEI lines


def memory_findings(log: KernelLog, events: list[KernelEvent]) -> list[Finding]:
    """Findings for the host-memory events of a kernel log: EDAC CE/UE lines (per DIMM or memory
    controller), machine checks (decoded or not, CMCI storms) and APEI GHES records (memory by CPER
    severity, other sections as ``health.hw_error``)."""
    out: list[Finding] = []
    edac: "OrderedDict[tuple[int, str], dict[str, Any]]" = OrderedDict()
    for e in events:
        if e.kind != "edac":
            continue
        key = (int(e.fields.get("mc", 0)), str(e.fields.get("label", "")))
        g = edac.setdefault(key, {"ce": 0, "ue": 0, "ev": []})
        g["ue" if e.fields.get("type") == "UE" else "ce"] += int(e.fields.get("count", 1) or 1)
        g["ev"].extend(e.evidence)
    mce = [e for e in events if e.kind == "mce"]
    # a decoded machine-check record that an EDAC driver printed for a memory controller whose CE/UE
    # line is also in the log is that line's detail, not a second error
    edac_mcs = {int(e.fields.get("mc", -1)) for e in events if e.kind == "edac"}
    mce_detail: dict[int, list[str]] = {}
    for e in list(mce):
        mc = e.fields.get("mc")
        if e.fields.get("decoded") and isinstance(mc, int) and mc in edac_mcs:
            mce_detail.setdefault(mc, []).extend(e.evidence)
            mce.remove(e)
        elif e.fields.get("decoded") and isinstance(mc, int):
            # the EDAC driver handled it as a memory error but its CE/UE line is not in the text
            g = edac.setdefault((mc, ""), {"ce": 0, "ue": 0, "ev": [], "mce": []})
            g["ue" if e.fields.get("severity") == "uncorrected" else "ce"] += 1
            g["ev"].extend(e.evidence)
            g.setdefault("mce", []).append(e)
            mce.remove(e)
    ghes_mem = [e for e in events if e.kind == "ghes" and "memory" in str(e.fields.get("section", ""))]
    ghes_other = [e for e in events if e.kind == "ghes" and "pcie" not in str(e.fields.get("section", ""))
                  and "memory" not in str(e.fields.get("section", ""))]
    logged = [e for e in mce if e.fields.get("severity") == "logged"]
    context = cap(ln for e in logged for ln in e.evidence)
    for (mc, label), g in edac.items():
        where = (Msg('DIMM {label} (memory controller MC{mc})', label=label, mc=mc) if label else Msg('memory controller MC{mc}', mc=mc))
        g["ev"] = mce_detail.pop(mc, []) + g["ev"]
        via = (" reported by a machine-check record" + _mce_where(g["mce"])) if g.get("mce") else ""
        src = SRC_EDAC + ("; " + SRC_MCI if g.get("mce") else "")
        if g["ue"]:
            out.append(Finding("health.host_memory", Verdict.FAIL,
                               (Msg('{where}: {g} uncorrectable (UE) host memory error(s)', where=where, g=g['ue']) + (Msg(' and {g} corrected (CE)', g=g['ce']) if g['ce'] else '') + via), where,
                               cap(g["ev"] + list(context)),
                               Msg("Replace the DIMM {a1}: an uncorrectable memory error crashes jobs or corrupts data. "
                                   "Confirm the slot in the BMC event log (SEL), and run a memory test before the node "
                                   "returns to service.", a1=label or 'on MC' + str(mc)), src))
        else:
            out.append(Finding("health.host_memory", Verdict.WARN,
                               (Msg('{where}: {g} corrected (CE) host memory error(s)', where=where, g=g['ce']) + via), where,
                               cap(g["ev"] + list(context)),
                               Msg("Corrected errors on {a1}: watch the count (`ras-mc-ctl --errors`, "
                                   "/sys/devices/system/edac/mc/mc{mc}/ce_count); if it keeps growing, replace the DIMM at "
                                   "the next maintenance.", a1=label or 'MC' + str(mc), mc=mc), src))
    for e in ghes_mem:
        sev = str(e.fields.get("severity", ""))
        label = str(e.fields.get("label", "") or "")
        where = (Msg('DIMM {label}', label=label) if label else Msg('host memory'))
        if sev in ("fatal", "nonfatal"):
            out.append(Finding("health.host_memory", Verdict.FAIL,
                               Msg("{where}: firmware (APEI) reported an uncorrected memory error ({sev})", where=where, sev=sev), where,
                               cap(e.evidence), Msg("Replace the DIMM{a1}; confirm the slot in the BMC event log (SEL).", a1=(' ' + label) if label else ''), SRC_EDAC + "; " + SRC_GHES))
        else:
            out.append(Finding("health.host_memory", Verdict.WARN,
                               Msg("{where}: firmware (APEI) reported a corrected memory error", where=where), where, cap(e.evidence),
                               "Watch the corrected-error count; replace the DIMM if it keeps growing.", SRC_EDAC))
    unc = [e for e in mce if e.fields.get("severity") == "uncorrected"]
    cor = [e for e in mce if e.fields.get("severity") == "corrected" and not e.fields.get("storm")]
    storm = [e for e in mce if e.fields.get("storm")]
    if unc and all(e.record.mono_s is not None and e.record.mono_s < MCE_BOOT_S for e in unc):
        # the banks read at start-up: "Log the machine checks left over from the previous reset" (round 21)
        out.append(Finding("health.mce", Verdict.WARN,
                           Msg("{plural} left over from before this boot (logged {s:.2f} s after start, when the kernel "
                               "reads the banks: the previous boot may have ended in it){where}",
                               plural=plural(len(unc), 'uncorrected machine-check error'),
                               s=max(e.record.mono_s or 0.0 for e in unc), where=_mce_where(unc)),
                           "host", cap([ln for e in unc for ln in e.evidence] + list(context)),
                           "Decode it (`mcelog --ascii`, `ras-mc-ctl --errors`) and read the BMC event log (SEL) for "
                           "the reset it came from; if the same bank appears after the next reboots, or during a run, "
                           "replace the failing part (DIMM or CPU) before the node returns to service.",
                           SRC_EDAC + "; " + SRC_MCE_BOOT))
    elif unc:
        out.append(Finding("health.mce", Verdict.FAIL,
                           (Msg('{plural} on this host', plural=plural(len(unc), 'uncorrected machine-check error')) + _mce_where(unc)),
                           "host", cap([ln for e in unc for ln in e.evidence] + list(context)),
                           "Read the decoded record (`ras-mc-ctl --errors`, or mcelog) to find the bank/DIMM; replace "
                           "the failing part (DIMM or CPU) before the node returns to service.",
                           SRC_EDAC + ("; " + SRC_MCI if any(e.fields.get("decoded") for e in unc) else "")))
    if cor or storm:
        msg = (Msg('{plural} on this host', plural=plural(len(cor), 'corrected machine-check error')) + _mce_where(cor) if cor else '')
        if storm:
            msg = ((msg + '; ' if msg else '') + Msg('a corrected-error (CMCI) storm: corrected machine checks came so fast that the kernel switched to polling'))
        out.append(Finding("health.mce", Verdict.WARN, msg, "host",
                           cap([ln for e in storm + cor for ln in e.evidence] + ([] if unc else list(context))),
                           "Find the bank/DIMM with `ras-mc-ctl --errors` (or the EDAC lines after these); watch whether "
                           "the count grows, and replace the DIMM if it does.",
                           SRC_EDAC + ("; " + SRC_MCI if any(e.fields.get("decoded") for e in cor) else "")
                           + ("; " + SRC_CMCI if storm else "")))
    if logged and not (edac or ghes_mem or unc or cor):
        out.append(Finding("health.mce", Verdict.WARN,
                           Msg("machine-check events were logged ({plural}) but the kernel log does not say which", plural=plural(len(logged), 'message')), "host", context,
                           "Read them with `ras-mc-ctl --errors` (rasdaemon) or `mcelog --client` to see whether they "
                           "are corrected or not, and which DIMM or CPU bank.", SRC_EDAC))
    off = [e for e in events if e.kind == "host_ecc_off"]
    if off:
        nodes = sorted({str(e.fields.get("node")) for e in off}, key=lambda n: int(n) if n.isdigit() else 0)
        out.append(Finding("health.host_memory", Verdict.WARN,
                           Msg("host memory runs without ECC on {n} memory node(s) ({nodes}: 'DRAM ECC disabled'): "
                               "memory errors are neither corrected nor reported (the EDAC driver does not load)",
                               n=len(nodes), nodes=", ".join(nodes)), "host", cap([ln for e in off for ln in e.evidence]),
                           "Enable ECC in the BIOS (memory settings) and fit ECC RDIMMs if these are not; after a reboot "
                           "`dmesg | grep EDAC` must say 'DRAM ECC enabled' and list an EDAC MC for each node.",
                           SRC_EDAC + "; Linux drivers/edac/amd64_edac.c, ecc_enabled() ('DRAM ECC disabled', "
                           "https://github.com/torvalds/linux/blob/master/drivers/edac/amd64_edac.c)"))
    for e in ghes_other:
        sev = str(e.fields.get("severity", ""))
        section = str(e.fields.get("section", "")) or Msg("unknown section")
        verdict = Verdict.FAIL if sev == "fatal" else Verdict.WARN if sev in ("nonfatal", "") else Verdict.PASS
        out.append(Finding("health.hw_error", verdict,
                           Msg("firmware (APEI) reported a hardware error: {section}, severity {a1}", section=section, a1=sev or Msg("not shown")), "host",
                           cap(e.evidence),
                           ('' if verdict is Verdict.PASS else Msg('Check the BMC event log (SEL) for the same time and the named component; contact the server vendor if it repeats.')), SRC_GHES))
    return out


MCE_BOOT_S = 10.0
"""An uncorrected machine check stamped within this many seconds of boot was read from the banks at start-up: it was
latched before this boot. Source: Linux arch/x86/kernel/cpu/mce/core.c, __mcheck_cpu_init_generic(): "Log the
machine checks left over from the previous reset" (machine_check_poll at CPU init)."""
SRC_MCE_BOOT = ("Linux kernel arch/x86/kernel/cpu/mce/core.c (__mcheck_cpu_init_generic: \"Log the machine checks left "
                "over from the previous reset\"), https://github.com/torvalds/linux/blob/master/arch/x86/kernel/cpu/mce/core.c")


def _mce_where(evs: list[KernelEvent]) -> str:
    """" (bank 8 on memory controller MC3, status fc00...: UC set)" for decoded records."""
    parts = []
    for e in evs:
        if not e.fields.get("decoded"):
            continue
        mc = e.fields.get("mc")
        bits = "UC set" if e.fields.get("severity") == "uncorrected" else "UC clear"
        if e.fields.get("pcc"):
            bits += ", processor context corrupt"
        if e.fields.get("overflow"):
            bits += ", overflow: earlier errors were lost"
        parts.append(f"bank {e.fields.get('bank')}" + (f" on memory controller MC{mc}" if mc is not None else "")
                     + f", MCi_STATUS {e.fields.get('status')}: {bits}")
    parts = list(dict.fromkeys(parts))
    return f" ({SEMICOLON.join(parts[:3])}{'; ...' if len(parts) > 3 else ''})" if parts else ""



# ------------------------------------------------------------------ EDAC / rasdaemon

EDAC_MISSING_REMEDY = (
    "No EDAC memory controller is registered: load the EDAC driver for this platform (e.g. `modprobe i10nm_edac` or "
    "`skx_edac` on Intel Xeon, `amd64_edac` on AMD EPYC) and install rasdaemon (`systemctl enable --now rasdaemon`). "
    "Inside a VM, host memory errors are visible only on the hypervisor or the BMC.")


def judge_edac_facts(facts: EdacFacts, expectations: Mapping[str, Any], source: str = "") -> list[Finding]:
    """Findings for EDAC counters (sysfs tree or ``edac-util`` output): any UE -> fail, any CE ->
    warn, all zero -> pass; nothing readable -> unknown."""
    try:
        return _judge_edac(facts, source or facts.source)
    except Exception as exc:  # noqa: BLE001
        return [Finding("health.host_memory", Verdict.UNKNOWN, Msg("could not judge EDAC counters: {exc!r}", exc=exc), "host memory",
                        (source,), "This is a bringup bug: please report it with the input.", SRC_EDAC)]


def _judge_edac(facts: EdacFacts, source: str) -> list[Finding]:
    if facts.no_controller_line and not facts.counts:
        return [Finding("health.host_memory", Verdict.UNKNOWN, "could not tell host memory errors: EDAC reports no "
                        "memory controller", "host memory", (source, facts.no_controller_line), EDAC_MISSING_REMEDY,
                        SRC_EDAC)]
    if not facts.counts:
        if facts.no_errors_line:
            return [Finding("health.host_memory", Verdict.PASS, "EDAC reports no host memory errors", "host memory",
                            (source, facts.no_errors_line), "", SRC_EDAC)]
        ev = (source,) + cap(facts.unread) if facts.unread else (source, "(no EDAC counters found)")
        return [Finding("health.host_memory", Verdict.UNKNOWN, "could not tell host memory errors: no EDAC counters",
                        "host memory", ev, EDAC_MISSING_REMEDY, SRC_EDAC)]
    # the controller totals only when nothing finer is known for that controller
    finer = {c.mc for c in facts.counts if c.where}
    places = [c for c in facts.counts if c.where or c.mc not in finer]
    out: list[Finding] = []
    for c in places:
        where = (Msg('DIMM {name}', name=c.name) if c.label else Msg('host memory {name}', name=c.name))
        if c.where == "noinfo":
            where = (Msg('host memory {mc} (errors the driver could not place on a DIMM)', mc=c.mc))
        if c.ue:
            out.append(Finding("health.host_memory", Verdict.FAIL,
                               (Msg('{where}: {ue} uncorrectable (UE) memory error(s)', where=where, ue=c.ue) + (Msg(' and {ce} corrected (CE)', ce=c.ce) if c.ce else '')), where, cap([source] + c.evidence),
                               Msg("Replace the DIMM {a1}: an uncorrectable memory error crashes jobs or corrupts data; run a "
                                   "memory test before returning the node.", a1=c.label or '(find the slot in the BMC event log)'),
                               SRC_EDAC, measured=measure(c.ue, 0, "errors", "at_most",
                                                          f"{where}: uncorrectable memory errors")))
        elif c.ce:
            out.append(Finding("health.host_memory", Verdict.WARN,
                               Msg("{where}: {ce} corrected (CE) memory error(s) since the counters were reset", where=where, ce=c.ce), where,
                               cap([source] + c.evidence),
                               (Msg("Corrected errors: re-read the counter after the validation stages; if it grows, "
                                    "replace the DIMM {label} at the next maintenance (`ras-mc-ctl --errors` shows "
                                    "when).", label=c.label) if c.label else
                                N_("Corrected errors: re-read the counter after the validation stages; if it grows, "
                                   "replace the DIMM at the next maintenance (`ras-mc-ctl --errors` shows when).")),
                               SRC_EDAC,
                               measured=measure(c.ce, 0, "errors", "at_most", f"{where}: corrected memory errors")))
    if out:
        return out
    n = len(facts.controllers) or len({c.mc for c in facts.counts})
    pass_ev = [source] + [ln for c in places for ln in c.evidence]
    return [Finding("health.host_memory", Verdict.PASS,
                    Msg("no host memory errors: 0 corrected and 0 uncorrectable on {plural}", plural=plural(n, 'memory controller')),
                    "host memory", cap(pass_ev), "", SRC_EDAC,
                    measured=measure(sum((c.ue or 0) + (c.ce or 0) for c in places), 0, "errors", "at_most",
                                     "host memory errors (corrected and uncorrectable)"))]


def judge_ras_mc_ctl(facts: RasFacts, expectations: Mapping[str, Any]) -> list[Finding]:
    """Findings for ``ras-mc-ctl`` output: memory UE / memory-failure -> fail, memory CE and
    corrected MCE -> warn, uncorrected MCE -> fail, PCIe AER by severity (B3), other error
    records -> warn; only "No ... errors." lines -> pass."""
    try:
        return _judge_ras(facts)
    except Exception as exc:  # noqa: BLE001
        return [Finding("health.host_memory", Verdict.UNKNOWN, Msg("could not judge ras-mc-ctl output: {exc!r}", exc=exc), "host",
                        (), "This is a bringup bug: please report it with the input.", SRC_EDAC)]


def _judge_ras(facts: RasFacts) -> list[Finding]:
    src = "$ ras-mc-ctl"
    out: list[Finding] = []
    groups: "OrderedDict[tuple[str, str, str], list]" = OrderedDict()
    for it in facts.items:
        if it.section == "error_count" and not it.severity:
            continue
        groups.setdefault((it.section, it.severity, it.label), []).append(it)
    for (section, sev, label), items in groups.items():
        n = sum(i.count for i in items)
        ev = cap(i.line for i in items)
        if section in ("memory", "error_count"):
            where = (Msg('DIMM {label}', label=label) if label else Msg('host memory'))
            if sev == "ue":
                out.append(Finding("health.host_memory", Verdict.FAIL, Msg("{where}: {n} uncorrected (UE) memory error(s) recorded by rasdaemon", where=where, n=n), where, ev,
                                   (f'Replace the DIMM {label}'.strip() + Msg(': confirm the slot in the BMC event log (SEL) and run a memory test before returning the node.')), SRC_EDAC))
            elif sev == "ce":
                out.append(Finding("health.host_memory", Verdict.WARN, Msg("{where}: {n} corrected (CE) memory error(s) recorded by rasdaemon", where=where, n=n), where, ev,
                                   "Watch the count (`ras-mc-ctl --error-count`); replace the DIMM at the next "
                                   "maintenance if it keeps growing.", SRC_EDAC))
        elif section == "memory_failure":
            out.append(Finding("health.host_memory", Verdict.FAIL, Msg("{n} memory-failure event(s): the kernel took memory pages offline after uncorrected errors", n=n), "host memory", ev,
                               "Find the DIMM (`ras-mc-ctl --errors`, BMC SEL) and replace it.", SRC_EDAC))
        elif section == "mce":
            if sev == "ue":
                out.append(Finding("health.mce", Verdict.FAIL, Msg("{n} uncorrected machine-check error(s) recorded by rasdaemon", n=n), "host", ev,
                                   "Read the bank in `ras-mc-ctl --errors`; replace the failing DIMM or CPU.", SRC_EDAC))
            else:
                out.append(Finding("health.mce", Verdict.WARN, Msg("{n} corrected machine-check (MCE) error(s) recorded by rasdaemon", n=n), "host", ev,
                                   "Read the bank and memory channel in `ras-mc-ctl --errors`; watch whether the count "
                                   "grows, and replace the DIMM if it does.", SRC_EDAC))
        elif section == "aer":
            verdict = Verdict.FAIL if sev == "fatal" else Verdict.WARN if sev == "nonfatal" else Verdict.PASS
            out.append(Finding("health.aer", verdict, (Msg('{n} PCIe AER {get} error(s) recorded by rasdaemon', n=n, get=Msg(AER_WORDS.get(sev, N_('unclassified')))) + (Msg(' on {label}', label=label) if label else '')), label or "host", ev,
                               ('' if verdict is Verdict.PASS else Msg('Find the device in `ras-mc-ctl --errors`; reseat it and its riser, check cables and firmware; power-cycle after a fatal error.')), SRC_AER))
        else:
            verdict = Verdict.FAIL if sev == "fatal" else Verdict.WARN
            out.append(Finding("health.hw_error", verdict, Msg("{n} {replace} error record(s) from rasdaemon", n=n, replace=section.replace('_', ' ')), "host", ev, "Read the records with `ras-mc-ctl --errors` and check the named "
                               "component.", SRC_EDAC))
    if out:
        return out
    if facts.clean or any(i.section == "error_count" for i in facts.items):
        ev = cap([src] + facts.clean + [i.line for i in facts.items])
        return [Finding("health.host_memory", Verdict.PASS, "rasdaemon recorded no memory, PCIe AER or MCE errors",
                        "host", ev, "", SRC_EDAC)]
    loaded = [n for n in facts.notes if re.search(r"drivers? (?:are|is) loaded", n)]
    if loaded and not facts.unread:  # `ras-mc-ctl --status` alone (held-out round 56): the drivers, not the errors
        return [Finding("health.host_memory", Verdict.SKIP, "ras-mc-ctl --status says the EDAC drivers are loaded, so "
                        "memory errors can be recorded; whether any were is in `ras-mc-ctl --summary`", "host",
                        cap([src] + loaded), "", SRC_EDAC)]
    return [Finding("health.host_memory", Verdict.UNKNOWN, "could not read this ras-mc-ctl output", "host",
                    cap([src] + facts.notes + facts.unread),
                    "Run `ras-mc-ctl --summary` as root with rasdaemon running (`systemctl enable --now rasdaemon`).",
                    SRC_EDAC)]


def edac(outputs: Outputs, expectations: Mapping[str, Any]) -> list[Finding]:
    """Health-stage check over the EDAC sysfs counters (probe ``edac_sysfs``).

    Findings: ``health.host_memory`` (fail per DIMM/controller with UE > 0, warn with CE > 0,
    pass when all counters are zero, unknown when no EDAC controller is registered)."""
    o = outputs.get("edac_sysfs") if isinstance(outputs, Mapping) else None
    if o is None or (not o.ok and not o.files):
        return [missing("health.host_memory", o, "host memory (EDAC) error counts", "host memory",
                        EDAC_MISSING_REMEDY, SRC_EDAC)]
    facts = facts_of(outputs).parse("edac_sysfs", parse_edac_sysfs, on="files")
    assert facts is not None  # the probe was collected (checked above)
    return judge_edac_facts(facts, expectations, EDAC_ROOT + " (sysfs)")


SRC_MCELOG = ("mcelog(8), https://mcelog.org/ (decoded machine checks: 'Corrected error' / 'Uncorrected error', the "
              "memory controller's channel and DIMM; --client: the daemon's per-DIMM corrected and uncorrected counts, "
              "total and in 24 h, against its memory error triggers)")


def judge_mcelog(facts: Any) -> list[Finding]:
    """``health.host_memory`` (memory-controller errors) and ``health.mce`` (other banks) from mcelog: an uncorrected
    error fails; corrected errors warn, naming the socket, channel and DIMM and, from ``--client``, how many came in the
    last 24 h (a DIMM that keeps correcting is one to replace before it stops correcting); a summary of zeros passes."""
    out: list[Finding] = []
    for b in facts.blocks:
        if "any" in b["where"].lower() and any(x is not b and "any" not in x["where"].lower() for x in facts.blocks):
            continue  # the per-DIMM blocks say it, named; "CHANNEL any DIMM any" is their sum
        ev = tuple(b["lines"][:8])
        if b["ue_total"]:
            out.append(Finding("health.host_memory", Verdict.FAIL,
                               Msg("{where}: {n} uncorrected memory error(s) ({n24} in the last 24 h)", where=b["where"],
                                   n=b["ue_total"], n24=b["ue_24h"]), b["where"], ev,
                               "Replace the DIMM (the BMC's event log and `dmidecode -t 17` name its slot) and run a "
                               "memory test before the node takes jobs again.", SRC_MCELOG))
        elif b["ce_total"]:
            out.append(Finding("health.host_memory", Verdict.WARN,
                               Msg("{where}: {n} corrected memory error(s), {n24} in the last 24 h", where=b["where"],
                                   n=b["ce_total"], n24=b["ce_24h"]), b["where"], ev,
                               "Watch the count (`mcelog --client`); a DIMM that keeps correcting errors is one to "
                               "replace at the next maintenance, before it starts failing uncorrectably.", SRC_MCELOG))
    for r in facts.records:
        fid = "health.host_memory" if r["memory"] else "health.mce"
        ev = tuple(r["lines"][:12])
        where = r["where"] or "host"
        if r["severity"] == "ue":
            out.append(Finding(fid, Verdict.FAIL, Msg("mcelog decoded an uncorrected machine check ({where})", where=where),
                               where, ev, "Find the failing part from the record (a memory channel and DIMM, or a CPU "
                               "bank) and replace it; the node is not fit for jobs until then.", SRC_MCELOG))
        elif r["severity"] == "ce":
            out.append(Finding(fid, Verdict.WARN, Msg("mcelog decoded a corrected machine check ({where})", where=where),
                               where, ev, "Watch whether it recurs (`mcelog --client`, `ras-mc-ctl --error-count`); "
                               "replace the DIMM or part if the count keeps growing.", SRC_MCELOG))
    if out:
        return out
    if facts.blocks:
        return [Finding("health.host_memory", Verdict.PASS, "mcelog counts no memory errors", "host",
                        tuple(ln for b in facts.blocks for ln in b["lines"])[:8], "", SRC_MCELOG)]
    return [Finding("health.host_memory", Verdict.UNKNOWN, "no mcelog record or memory summary could be read", "host",
                    (), "Paste `mcelog --client` (with the mcelog daemon running) or its decoded records.", SRC_MCELOG)]
