"""The BMC's view of the hardware, through IPMI (``ipmitool``): its System Event Log and its sensors.

* ``health.bmc_sel``: SEL records of a hardware fault (IPMI v2.0 table 42-3 sensor-specific offsets and the generic
  threshold, severity and redundancy event types of table 42-1) that were asserted since the build started and not
  deasserted since: a failure, an uncorrectable error, a critical or non-recoverable threshold -> fail; a predictive
  failure, a correctable error, a non-critical threshold, degraded redundancy -> warn. Faults later deasserted, and
  records from before the build, are history (said, never failing). Each record can be acknowledged.
* ``health.bmc_psu``: the power supplies' states and the power redundancy sensor (``ipmitool sdr elist``).
* ``health.bmc_sensors``: fans, temperatures and other threshold sensors by the BMC's own status (``cr``/``nr``
  fail, ``nc`` warn); the inlet temperature with the sensor's own upper threshold where ``ipmitool sensor`` gives one.
* No ``ipmitool``, no ``/dev/ipmi*``, permission denied, an IPMI-over-LAN session refused: ``health.bmc``, said once
  for the three: skip ("no BMC declared in SMBIOS") only when the firmware's SMBIOS tables hold no type 38 'IPMI
  Device Information' structure or DMI names a hypervisor; unknown (the step stays pending) when SMBIOS declares a
  BMC or cannot be read, with the remedy of the case (install ipmitool; load ipmi_devintf + ipmi_si; run as root).
* Sensor figures outside physical bounds (:data:`TEMP_BOUNDS_C`, :data:`FAN_MAX_RPM`) are a sensor fault (warn),
  whatever status the BMC gives them; SEL lines that are not records, and records with an impossible date, are
  counted and said.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import replace
from typing import Any, Mapping

from wizard.facts import facts_of
from wizard.model import Finding, Verdict, measure
from wizard.parsers.bmc import SdrFacts, SdrReading, SelFacts, SelRecord, parse_sdr, parse_sel, parse_smbios_ipmi
from wizard.probes import ProbeOutput
from wizard.rules.common import Outputs
from wizard.rules.kernel_log_common import acknowledged_keys, cap, plural
from wizard.i18n import N_, Msg, joined, SEMICOLON
from wizard.common import lazy_re

SEL_PROBE = "ipmitool_sel"
SDR_PROBE = "ipmitool_sdr"
SENSOR_PROBE = "ipmitool_sensor"

SRC_IPMI = ("IPMI v2.0 rev 1.1 specification, section 31 'System Event Log', table 42-1 (event/reading types: 01h "
            "threshold, 07h severity, 0Bh redundancy) and table 42-3 (sensor-specific offsets: Power Supply 08h, "
            "Power Unit 09h, Memory 0Ch, Critical Interrupt 13h, Processor 07h) "
            "(https://www.intel.com/content/www/us/en/products/docs/servers/ipmi/ipmi-second-gen-interface-spec-v2-rev1-1.html)")
SRC_IPMITOOL = "ipmitool(1), 'sel elist', 'sdr elist', 'sensor' (https://github.com/ipmitool/ipmitool/blob/master/doc/ipmitool.1.in)"
SRC_GCM_SEL = ("Meta GCM health checks, check_ipmitool (SEL: power supply AC lost, uncorrectable errors, Bus Fatal Error, "
               "PCI SERR -> critical; https://github.com/facebookresearch/gcm/blob/main/gcm/health_checks/checks/check_ipmitool.py)")
SRC_SEL = f"{SRC_IPMI}; {SRC_IPMITOOL}; {SRC_GCM_SEL}"
SRC_SDR = (f"IPMI v2.0 rev 1.1 specification, section 36.3 (sensor thresholds: non-critical, critical, non-recoverable) "
           f"and table 43-13 (entity ids: 10 power supply, 19 power unit, 55/64 air inlet); {SRC_IPMITOOL}; Meta GCM "
           "health checks, check_sensors (fan and power-supply errors from the IPMI sensors; "
           "https://github.com/facebookresearch/gcm)")

SEL_CLOCK_SLACK_H = 14
"""Hours either side of the build's start within which a SEL record counts as "since the build started". The SEL's
times are the BMC's clock, whose zone is not known (ipmitool before 1.8.19 prints it as it is, later releases in the
host's zone); civil time zones run from UTC-12 to UTC+14 (IANA time zone database, https://www.iana.org/time-zones),
so a record less than 14 hours before the start may still be after it, and is counted."""

REMEDY_INSTALL = N_("Install ipmitool (`sudo apt install ipmitool` / `sudo dnf install ipmitool`) and run the check "
                  "again as root.")
REMEDY_MODPROBE = N_("Load the IPMI drivers: `sudo modprobe ipmi_devintf` (it makes /dev/ipmi0) and `sudo modprobe ipmi_si` "
                   "(the KCS/SMIC/BT system interface; `ipmi_ssif` where the BMC sits on SMBus), check that /dev/ipmi0 "
                   "appears, and run the check again as root.")
REMEDY_ROOT = N_("Run the check as root (sudo): /dev/ipmi0 is readable by root only.")
REMEDY_LAN = N_("ipmitool could not open an IPMI-over-LAN (RMCP+) session: check the BMC's address, user and password "
              "(-H/-U/-P), the cipher suite (`-C 17`), that IPMI over LAN is enabled in the BMC and reachable on UDP "
              "623; on the host itself read it in-band instead (`sudo ipmitool sel elist`, with the drivers loaded).")
SRC_SMBIOS = ("DMTF SMBIOS specification DSP0134, 7.39 'IPMI Device Information (Type 38)': a system with an IPMI BMC "
              "describes its interface in a type 38 structure (https://www.dmtf.org/standards/smbios); Linux lists "
              "the structures under /sys/firmware/dmi/entries (sysfs-firmware-dmi-entries ABI); systemd's "
              "detect-virt reads hypervisors from the DMI vendor (src/basic/virt.c)")
VM_VENDORS = lazy_re(r"^(?:QEMU|innotek GmbH|VMware, Inc\.|Xen|Parallels|Bochs|BHYVE|Red Hat|Google|"
                        r"OpenStack Foundation|Amazon EC2)$|Virtual Machine|VirtualBox|KVM|HVM domU|Google Compute Engine",
                        re.I)
"""DMI sys_vendor / product_name of a virtual machine (systemd's detect-virt DMI table, src/basic/virt.c: QEMU,
VMware, innotek (VirtualBox), Xen, KVM, Microsoft 'Virtual Machine', Parallels, Bochs, BHYVE, Google, Amazon EC2)."""


# ------------------------------------------------------------------ access


def access_problem(out: ProbeOutput | None) -> tuple[str, str, str] | None:
    """(case, reason, how to fix) when ``out`` says ipmitool could not reach a BMC, else ``None``. Cases:
    ``no-ipmitool`` (not installed), ``no-device`` (no /dev/ipmi*: the IPMI drivers are not loaded, or no BMC),
    ``permission`` (not root), ``lan`` (an IPMI-over-LAN session failed)."""
    if out is None:
        return None
    err = out.error or ""
    words = f"{out.stderr}\n{out.text}"
    first = next((ln.strip() for ln in out.stderr.splitlines() if ln.strip()), "") or next(
        (ln.strip() for ln in out.text.splitlines() if ln.strip()), "")
    if err.startswith("command not found"):
        return "no-ipmitool", N_("ipmitool is not installed"), REMEDY_INSTALL
    if err.startswith("permission denied"):
        return "permission", Msg("ipmitool could not be run ({err})", err=err), N_("Run bringup as root (sudo).")
    m = re.search(r"Could not open device at [^\n]*?: ([^\n]+)", words) or re.search(
        r"Could not open device at \S+", words)
    if m:
        if m.groups() and "permission denied" in m.group(1).lower():
            return "permission", Msg("ipmitool cannot open the IPMI device: {line}", line=first or m.group(0)), REMEDY_ROOT
        return ("no-device", Msg("no IPMI device: {line} (the IPMI kernel drivers are not loaded)", line=first or m.group(0)),
                REMEDY_MODPROBE)
    m = re.search(r"Unable to establish (?:IPMI v[12](?:\.5)? / RMCP\+?|LAN) session", words, re.I)
    if m:
        return "lan", Msg("ipmitool could not open a session with the BMC: {line}", line=first or m.group(0)), REMEDY_LAN
    return None


def unreachable(out: ProbeOutput | None) -> tuple[str, str] | None:
    """(reason, how to enable) when ``out`` says ipmitool could not reach a BMC (not installed, no IPMI device,
    permission denied, an IPMI-over-LAN session refused), else ``None``."""
    p = access_problem(out)
    return None if p is None else (p[1], p[2])


def declared(outputs: Outputs) -> tuple[str, str, tuple[str, ...]]:
    """Whether this machine has a BMC by its firmware: ("yes" | "no" | "vm" | "unknown", words, evidence).
    "yes": an SMBIOS type 38 'IPMI Device Information' structure (:data:`SRC_SMBIOS`); "vm": DMI names a hypervisor;
    "no": the SMBIOS structures are listed and none is of type 38; "unknown": they could not be read."""
    d = outputs.get("dmi") if isinstance(outputs, Mapping) else None
    vendor = product = ""
    if d is not None and d.files:
        vendor = (d.files.get("/sys/class/dmi/id/sys_vendor") or "").strip()
        product = (d.files.get("/sys/class/dmi/id/product_name") or "").strip()
    o = outputs.get("smbios_ipmi") if isinstance(outputs, Mapping) else None
    b = facts_of(outputs).parse("smbios_ipmi", parse_smbios_ipmi, on="files") if o is not None and not o.error else None
    if b is not None and b.type38:
        return "yes", f"SMBIOS declares a BMC ({b.type38[0]}: type 38 IPMI Device Information)", b.type38[:2]
    if (vendor and VM_VENDORS.search(vendor)) or (product and VM_VENDORS.search(product)):
        return ("vm", f"a virtual machine by DMI ({vendor} {product}".rstrip() + "): it has no BMC of its own",
                (f"/sys/class/dmi/id/sys_vendor: {vendor}", f"/sys/class/dmi/id/product_name: {product}"))
    if b is not None and b.smbios:
        return "no", "no BMC declared in SMBIOS (no type 38 IPMI Device Information structure)", (
            "/sys/firmware/dmi/entries: no 38-* entry",)
    why = (o.error if o is not None and o.error else Msg('/sys/firmware/dmi/entries is absent') if o is not None else Msg('the SMBIOS probe was not collected'))
    return "unknown", Msg("the SMBIOS tables could not be read ({why})", why=why), ()


def _access(outputs: Outputs, out: ProbeOutput, prob: tuple[str, str, str]) -> Finding:
    """``health.bmc`` for a BMC ipmitool could not reach: skip only when the firmware declares none (or a VM),
    unknown otherwise (the step stays pending), with the remedy of the case."""
    case, reason, how = prob
    has, words, ev = declared(outputs)
    if case != "lan" and has in ("no", "vm"):
        return Finding("health.bmc", Verdict.SKIP, Msg("no BMC to read: {words}; ipmitool says: {reason}", words=words, reason=reason), "BMC",
                       tuple(out.evidence_error()) + ev, "", f"{SRC_SMBIOS}; {SRC_IPMITOOL}")
    if case == "lan" or has == "yes":
        msg = (Msg('the BMC could not be read: {reason}', reason=reason) + (Msg('; {words}, so its event log and sensors go unseen', words=words) if has == 'yes' else ''))
    else:
        msg = (Msg("the BMC could not be read: {reason}; whether this machine has one is not known: {words}", reason=reason, words=words))
        how += (Msg(' If this machine has no BMC (a workstation), the step does not apply: `dmidecode -t 38` prints nothing there.'))
    return Finding("health.bmc", Verdict.UNKNOWN, msg, "BMC", tuple(out.evidence_error()) + ev, how,
                   f"{SRC_SMBIOS}; {SRC_IPMITOOL}")


def _not_read(fid: str, out: ProbeOutput | None, what: str) -> Finding:
    """unknown: the probe ran but gave nothing readable (a timeout, an IPMI error)."""
    if out is None:
        return Finding(fid, Verdict.UNKNOWN, Msg("could not tell {what}: probe not collected", what=what), "BMC",
                       ("(no probe output: it was not collected)",), "Run the check again.", SRC_IPMITOOL)
    if "timed out" in (out.error or "") or "did not finish" in (out.error or ""):
        return Finding(fid, Verdict.UNKNOWN, Msg("could not tell {what}: the BMC did not answer in time ({error})", what=what, error=out.error),
                       "BMC", tuple(out.evidence_error()),
                       "Run `ipmitool mc info` by hand: a BMC that does not answer needs a reset from its web "
                       "interface or `ipmitool mc reset cold` (the host keeps running).", SRC_IPMITOOL)
    return Finding(fid, Verdict.UNKNOWN, Msg("could not tell {what}: {a1}", what=what, a1=out.error or 'ipmitool printed nothing readable'),
                   "BMC", tuple(out.evidence_error()) + cap(out.text.splitlines(), 5),
                   "Run the command by hand as root and read its error.", SRC_IPMITOOL)


def _said_by_sel(outputs: Outputs) -> bool:
    """True when the SEL probe's output says the BMC is unreachable (health.bmc says it once for all three)."""
    return access_problem(outputs.get(SEL_PROBE)) is not None


# ------------------------------------------------------------------ SEL


_TYPE_PSU = r"power supply"
_TYPE_REDUND = r"power supply|power unit|fan|cooling device|management subsys(?:tem)? health|other"
_THRESHOLD_TYPES = r".+"
"""Threshold events (event/reading type 01h: "Upper Critical going high" ...) come from any threshold-based sensor, of
whatever sensor type (IPMI v2.0 table 42-1; e.g. "Module / Board #0x43 | Upper Critical going high": held-out round
308), so the event's words decide, not the sensor type."""

# (sensor type regex, event regex, verdict, concern, what the IPMI specification says the event is); first match wins
_SEL_EVENTS: tuple[tuple[str, str, Verdict, str, str], ...] = (
    (_TYPE_PSU, r"ac lost or out-of-range|input lost or out-of-range", Verdict.FAIL, "power supply",
     "Power Supply offset 04h: input lost or out of range"),
    (_TYPE_PSU, r"out-of-range, but present", Verdict.WARN, "power supply",
     "Power Supply offset 05h: input out of range, but present"),
    (_TYPE_PSU, r"failure detected", Verdict.FAIL, "power supply", "Power Supply offset 01h: power supply failure detected"),
    (_TYPE_PSU, r"predictive failure", Verdict.WARN, "power supply", "Power Supply offset 02h: predictive failure"),
    (_TYPE_PSU, r"ac lost|input lost", Verdict.FAIL, "power supply", "Power Supply offset 03h: power supply input lost (AC/DC)"),
    (_TYPE_PSU, r"config(?:uration)? error", Verdict.FAIL, "power supply", "Power Supply offset 06h: configuration error"),
    (r"power unit", r"soft.power control failure|failure detected", Verdict.FAIL, "power supply",
     "Power Unit offsets 05h/06h: power unit failure"),
    (r"power unit", r"predictive failure", Verdict.WARN, "power supply", "Power Unit offset 07h: predictive failure"),
    (r"power unit", r"ac lost", Verdict.WARN, "power supply", "Power Unit offset 04h: the system lost input power"),
    (_TYPE_REDUND, r"redundancy lost", Verdict.FAIL, "redundancy", "redundancy event type 0Bh offset 01h: redundancy lost"),
    (_TYPE_REDUND, r"non-redundant:\s*insufficient", Verdict.FAIL, "redundancy",
     "redundancy event type 0Bh offset 05h: non-redundant, insufficient resources"),
    (_TYPE_REDUND, r"non-redundant|redundancy degraded", Verdict.WARN, "redundancy",
     "redundancy event type 0Bh offsets 02h-04h, 06h, 07h: redundancy degraded or lost to non-redundant"),
    (_THRESHOLD_TYPES, r"upper non-recoverable going high|lower non-recoverable going low", Verdict.FAIL, "threshold",
     "threshold event type 01h: a non-recoverable threshold crossed"),
    (_THRESHOLD_TYPES, r"upper critical going high|lower critical going low", Verdict.FAIL, "threshold",
     "threshold event type 01h: a critical threshold crossed"),
    (_THRESHOLD_TYPES, r"upper non-critical going high|lower non-critical going low", Verdict.WARN, "threshold",
     "threshold event type 01h: a non-critical threshold crossed"),
    (r"memory", r"uncorrectable", Verdict.FAIL, "memory", "Memory offset 01h: uncorrectable ECC or other uncorrectable memory error"),
    (r"memory", r"parity", Verdict.FAIL, "memory", "Memory offset 02h: parity error"),
    (r"memory", r"scrub", Verdict.FAIL, "memory", "Memory offset 03h: memory scrub failed"),
    (r"memory", r"device disabled", Verdict.FAIL, "memory", "Memory offset 04h: memory device disabled"),
    (r"memory", r"logging limit", Verdict.WARN, "memory", "Memory offset 05h: correctable ECC logging limit reached"),
    (r"memory", r"config(?:uration)? error", Verdict.FAIL, "memory", "Memory offset 07h: configuration error"),
    (r"memory", r"critical overtemperature", Verdict.FAIL, "memory", "Memory offset 0Ah: critical overtemperature"),
    (r"memory", r"correctable ecc|correctable memory error", Verdict.WARN, "memory",
     "Memory offset 00h: correctable ECC or other correctable memory error"),
    (r"critical interrupt", r"bus fatal|fatal nmi|bus uncorrectable|pci serr|pci perr|i/o channel check|bus timeout",
     Verdict.FAIL, "pcie", "Critical Interrupt offsets 01h-02h, 04h-05h, 08h-0Ah: a bus or PCI error the system could "
     "not correct"),
    (r"critical interrupt", r"bus correctable|bus degraded|nmi", Verdict.WARN, "pcie",
     "Critical Interrupt offsets 00h, 03h, 07h, 0Bh: a corrected bus error, a degraded bus or an NMI"),
    (r"processor", r"ierr|caterr|thermal trip|frb\d|uncorrectable|config(?:uration)? error|machine check exception",
     Verdict.FAIL, "processor", "Processor offsets 00h-04h, 05h, 0Bh: processor error (IERR, thermal trip, "
     "uncorrectable machine check)"),
    (r"processor", r"throttled|correctable machine check", Verdict.WARN, "processor",
     "Processor offsets 0Ah, 0Ch: throttled, or a correctable machine check"),
    (r"system firmware(?:s| error| progress)?", r"bios corruption|firmware error|no usable system memory|"
     r"unrecoverable", Verdict.FAIL, "firmware", "System Firmware Progress offset 00h: system firmware error"),
    (r"drive slot(?: / bay| \(bay\))?", r"drive fault|in failed array", Verdict.FAIL, "drive", "Drive Slot offsets 01h, 05h: drive fault"),
    (r"drive slot(?: / bay| \(bay\))?", r"predictive failure", Verdict.WARN, "drive", "Drive Slot offset 02h: predictive failure"),
    (r"physical security(?: \(chassis intrusion\))?", r"chassis intrusion", Verdict.WARN, "intrusion",
     "Physical Security offset 00h: general chassis intrusion (the cover was opened)"),
    (r".*", r"transition to non-recoverable|transition to critical", Verdict.FAIL, "severity",
     "severity event type 07h offsets 02h-06h, 08h: the sensor went critical or non-recoverable"),
    (r".*", r"transition to non-critical from ok", Verdict.WARN, "severity",
     "severity event type 07h offset 01h: the sensor went non-critical"),
)

_UNDECODED_TYPES = lazy_re(r"^(?:temperature|voltage|current|fan|power supply|memory|critical interrupt|processor)$", re.I)

_REMEDY = {
    "power supply": N_("Check the power supply's input cable and its PDU feed; reseat the supply, and replace it if the "
                    "failure stays asserted."),
    "redundancy": N_("Bring back the missing unit (a power supply unplugged or failed, a fan out) so the BMC reports Fully "
                  "Redundant again."),
    "threshold": N_("Read the sensor now (`ipmitool sdr elist`): for a fan, reseat or replace it; for a temperature, check "
                 "the inlet air, blanking panels and fans; for a voltage, the power supply or board."),
    "memory": N_("Find the DIMM in the BMC's log (`ipmitool sel get ID`, the web interface) and in the kernel's EDAC "
              "counters; replace a DIMM with uncorrectable errors or at its correctable-error logging limit, and run a "
              "memory test before the node returns."),
    "pcie": N_("Find the device in the kernel log (PCIe AER) at the same time; reseat the card and its riser, update its "
            "firmware, and replace it if the error repeats."),
    "processor": N_("Read the machine-check record (`ipmitool sel get ID`, `ras-mc-ctl --errors`); a processor error that "
                 "repeats means the CPU or board needs service."),
    "firmware": N_("Reflash the system firmware (BIOS) from the vendor's image and check again."),
    "drive": N_("Check the drive named in the record with its controller's tool; replace a failed drive."),
    "low": N_("A reading below its lower threshold: for a temperature, a cold room or a sensor whose thresholds were set "
           "oddly (compare `ipmitool sensor get NAME`'s thresholds with the vendor's defaults); for a voltage, the "
           "power supply or board. Not an overheating."),
    "severity": N_("Read the sensor now (`ipmitool sdr elist`) and the record (`ipmitool sel get ID`)."),
    "intrusion": N_("The chassis cover was opened, or its switch is not seated: confirm it was your own service work on "
                    "this node (fitting the GPUs counts) and that the cover is closed and latched."),
    "undecoded": N_("Read the record with `ipmitool sel get ID` (the raw event data) and the server vendor's SEL reference."),
}
_ACK_HINT = N_(" Once dealt with, acknowledge the records (x on the step's screen, or `bringup ack KEY`), or save the log (`ipmitool sel save FILE`) and "
                "clear it.")


def _redundancy_regained(rec: SelRecord) -> bool:
    """A power supply or power unit redundancy sensor reporting redundancy back: "Redundancy Lost" deasserted, or
    "Fully Redundant" asserted (IPMI v2.0 table 42-2, redundancy event type 0Bh offsets 00h/01h)."""
    if not re.fullmatch(r"power supply|power unit", rec.sensor_type.lower()):
        return False
    event = rec.event.lower()
    return ("redundancy lost" in event and not rec.asserted) or ("fully redundant" in event and rec.asserted)


def classify(rec: SelRecord) -> tuple[Verdict, str, str] | None:
    """(verdict, concern, what the IPMI specification says) for a record that reports a hardware fault when asserted,
    ``None`` for an informational one (boot, button, log cleared, presence, ...)."""
    stype = rec.sensor_type.lower()
    event = rec.event.lower()
    for type_rx, event_rx, verdict, concern, why in _SEL_EVENTS:
        if re.fullmatch(type_rx, stype) and re.search(event_rx, event):
            return verdict, concern, why
    if not event.strip() and _UNDECODED_TYPES.match(stype):
        return Verdict.WARN, "undecoded", f"a {rec.sensor_type} event that ipmitool could not decode (OEM or reserved offset)"
    return None


def record_key(rec: SelRecord) -> str:
    """The acknowledgement key of one SEL record (record ids are reused after the log is cleared, so the time joins it)."""
    return re.sub(r"[,\s]+", "_", f"bmc-sel:{rec.record_id}:{rec.date}:{rec.time}")


def build_start(exp: Mapping[str, Any]) -> _dt.datetime | None:
    """The build's start (``exp["build_started"]``, ISO 8601) as a naive UTC time; ``None`` when unknown."""
    raw = exp.get("build_started") if isinstance(exp, Mapping) else None
    if not isinstance(raw, str):
        return None
    try:
        t = _dt.datetime.fromisoformat(raw)
    except ValueError:
        return None
    if t.tzinfo is not None:
        t = t.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    return t


def _when(rec: SelRecord, start: _dt.datetime | None) -> str:
    """"since", "before" or "unknown" (a Pre-Init record or an unreadable date) against the build's start."""
    if start is None:
        return "since"
    if rec.when is None:
        return "unknown"
    return "before" if rec.when < start - _dt.timedelta(hours=SEL_CLOCK_SLACK_H) else "since"


def _what(rec: SelRecord) -> str:
    return " ".join(x for x in (rec.sensor_type, rec.sensor) if x) or "a sensor"


def judge_sel(facts: SelFacts, exp: Mapping[str, Any], source: str = "$ ipmitool sel elist") -> list[Finding]:
    """Findings for a SEL listing (see the module docstring). Never raises."""
    try:
        return _judge_sel(facts, exp, source)
    except Exception as exc:  # noqa: BLE001 - a bug must not hide the others' findings
        return [Finding("health.bmc_sel", Verdict.UNKNOWN, Msg("could not judge the BMC event log: {exc!r}", exc=exc), "BMC",
                        (source,), "This is a bringup bug: please report it with the input.", SRC_SEL)]


def _judge_sel(facts: SelFacts, exp: Mapping[str, Any], source: str) -> list[Finding]:
    if not facts.records:
        if facts.empty_line:
            return [Finding("health.bmc_sel", Verdict.PASS, "the BMC event log is empty: no hardware fault recorded",
                            "BMC", (source, facts.empty_line), "", SRC_SEL)]
        return [Finding("health.bmc_sel", Verdict.UNKNOWN, "could not read the BMC event log: no records in this output",
                        "BMC", (source,) + cap(facts.unread, 10), "Run `ipmitool sel elist` as root and check its output.",
                        SRC_SEL)]
    start = build_start(exp)
    acked = acknowledged_keys(exp)
    open_: dict[tuple[str, str, str], list[tuple[SelRecord, tuple[Verdict, str, str]]]] = {}
    resolved: list[tuple[SelRecord, SelRecord]] = []
    n_ack = 0
    for rec in facts.records:
        key = (rec.sensor_type.lower(), rec.sensor.lower(), rec.event.lower())
        if not rec.asserted:
            for a, _ in open_.pop(key, []):
                resolved.append((a, rec))
            continue
        c = classify(rec)
        if c is None:
            continue
        if record_key(rec) in acked:
            n_ack += 1
            continue
        open_.setdefault(key, []).append((rec, c))
    active: dict[tuple[str, str, str, str], list[tuple[SelRecord, tuple[Verdict, str, str], str]]] = {}
    before: list[SelRecord] = []
    for items in open_.values():
        for rec, c in items:
            when = _when(rec, start)
            if when == "before":
                before.append(rec)
                continue
            active.setdefault((c[1], rec.sensor_type, rec.sensor, rec.event), []).append((rec, c, when))
    out: list[Finding] = []
    order = {id(r): i for i, r in enumerate(facts.records)}
    regained = [(i, r) for i, r in enumerate(facts.records) if _redundancy_regained(r)]
    for (concern, _stype, _sensor, _event), group in active.items():
        recs = [r for r, _, _ in group]
        verdict, _, why = group[0][1]
        back = next((r for i, r in regained if i > order.get(id(recs[-1]), len(facts.records))), None) if (
            concern == "power supply") else None
        if back is not None and verdict is Verdict.FAIL:
            # the power supplies' redundancy came back after the last failure: the supply returned (a loose cord, a
            # flaky feed), so it is not failed now; its failing and returning is the warning (held-out round 43)
            verdict = Verdict.WARN
        timeless = all(w == "unknown" for _, _, w in group)
        if timeless and verdict is Verdict.FAIL:
            verdict = Verdict.WARN  # logged before the BMC had the time: when is unknown, it may be a power-on event
        last = recs[-1]
        if timeless:
            when_words: str = Msg('logged before the BMC had the time (Pre-Init), so when is unknown')
        elif not (last.date or last.time):
            when_words = Msg('the record carries no date')
        else:
            when_words = Msg('last {date} {time}', date=last.date, time=last.time) + (
                '' if start is not None else Msg('; no build start to compare with, so every record counts'))
        event = last.event or '(event not decoded)'
        msg: str = (Msg("BMC {what}: {event} asserted and not deasserted since ({when_words}); IPMI: {why}", what=_what(last),
                        event=event, when_words=when_words, why=why) if len(recs) == 1 else
                    Msg("BMC {what}: {event} asserted {n} times and not deasserted since ({when_words}); IPMI: {why}",
                        what=_what(last), event=event, n=len(recs), when_words=when_words, why=why))
        if back is not None:
            msg = msg + Msg("; the power supplies' redundancy came back after it ({what}: {event} {direction}, "
                            "{date} {time}), so the supply is back: it failed and returned", what=_what(back),
                            event=back.event, direction=back.direction, date=back.date, time=back.time)
            recs = recs + [back]
        out.append(Finding("health.bmc_sel", verdict, msg, f"BMC {_what(last)}", cap([source] + [r.line for r in recs]),
                           Msg.plain(_REMEDY.get(concern, _REMEDY["undecoded"])) + Msg.plain(_ACK_HINT), SRC_SEL,
                           key=",".join(dict.fromkeys(record_key(r) for r in recs))))
    history: list[str] = []
    if resolved:
        names = list(dict.fromkeys(f"{_what(a)}: {a.event}" for a, _ in resolved))
        history.append(Msg("{faults} asserted and later deasserted ({names})", faults=plural(len(resolved), "fault"),
                           names=SEMICOLON.join(names[:5]) + ("; ..." if len(names) > 5 else "")))
    if before:
        history.append(Msg("{records} from before the build started ({first} to {last})",
                           records=plural(len(before), "fault record"), first=before[0].date, last=before[-1].date))
    if n_ack:
        history.append(Msg("{n} acknowledged by the operator", n=n_ack))
    bad_dates = [r for r in facts.records if r.when is None and not r.pre_init and (r.date or r.time)]
    if bad_dates:
        history.append(Msg("{records} with a date or time that cannot be read ({dates})", records=plural(
            len(bad_dates), "record"), dates=", ".join(dict.fromkeys(f"{r.date} {r.time}" for r in bad_dates[:3])))
            + ("" if start is None else Msg(": a fault among them counts as since the build started")))
    garbage = [ln for ln in facts.unread if ln.strip()]
    if garbage:
        out.append(Finding("health.bmc_sel", Verdict.UNKNOWN, Msg("{plural} of the BMC event log could not be read as records (first: {a1!r}): a fault "
                                                                  "recorded there is not judged", plural=plural(len(garbage), 'line'), a1=garbage[0].strip()[:80]), "BMC", cap([source] + garbage, 6),
                           "Run `ipmitool sel elist` as root and read those lines; `ipmitool sel get ID` decodes one "
                           "record.", SRC_SEL))
    read = Msg("{records} read", records=plural(len(facts.records), "record"))
    if any(f.verdict is not Verdict.UNKNOWN for f in out):
        if history:
            ev = [source] + [ln for a, d in resolved[:10] for ln in (a.line, d.line)] + [r.line for r in before[:10]]
            out.append(Finding("health.bmc_sel", Verdict.PASS, (Msg('BMC event log history, not a current fault: ') + SEMICOLON.join(history)), "BMC", cap(ev), "", SRC_SEL))
        return out
    msg = Msg("no hardware fault active in the BMC event log{since} ({read}{history})",
              since=Msg(" since the build started") if start else "", read=read,
              history=Msg("; history: {history}", history=SEMICOLON.join(history)) if history else "")
    ev = [source] + [ln for a, d in resolved[:10] for ln in (a.line, d.line)] + [r.line for r in before[:10]]
    if len(ev) == 1:
        ev += [r.line for r in facts.records[-5:]]
    return out + [Finding("health.bmc_sel", Verdict.PASS, msg, "BMC", cap(ev), "", SRC_SEL)]


def sel(outputs: Outputs, expectations: Mapping[str, Any]) -> list[Finding]:
    """Health-stage check over ``ipmitool sel elist`` (probe ``ipmitool_sel``).

    Findings: ``health.bmc_sel`` (fail / warn per active fault record, pass with the history), ``health.bmc`` (skip:
    no BMC access, with the reason and how to enable it), unknown when ipmitool answered nothing readable."""
    o = outputs.get(SEL_PROBE) if isinstance(outputs, Mapping) else None
    if o is None:
        return [_not_read("health.bmc_sel", o, "the BMC event log")]
    why = access_problem(o)
    if why is not None:
        return [_access(outputs, o, why)]
    facts = facts_of(outputs).parse(SEL_PROBE, parse_sel, on="text")
    assert facts is not None  # the probe was collected (checked above)
    if not facts.records and not facts.empty_line and (o.error or o.rc not in (0, None)):
        return [_not_read("health.bmc_sel", o, "the BMC event log")]
    return judge_sel(facts, expectations, o.source)


# ------------------------------------------------------------------ sensors: power supplies


_PSU_NAME = lazy_re(r"\bPSU?\s*_?\d|\bpower\s*supply|\bPS\d|\bpwr\s*supply", re.I)
_POWER_NAME = lazy_re(r"\bPSU?\b|\bPS\d|power|pwr", re.I)
_PSU_STATES: tuple[tuple[str, Verdict, str], ...] = (
    (r"ac lost or out-of-range|input lost or out-of-range", Verdict.FAIL, "input lost or out of range"),
    (r"out-of-range, but present", Verdict.WARN, "input out of range, but present"),
    (r"failure detected", Verdict.FAIL, "failure detected"),
    (r"predictive failure", Verdict.WARN, "predictive failure"),
    (r"ac lost|input lost", Verdict.FAIL, "input lost"),
    (r"config(?:uration)? error", Verdict.FAIL, "configuration error"),
)


_PSU_OFFSETS = ("Presence detected", "Failure detected", "Predictive failure", "Power Supply AC lost",
                "AC lost or out-of-range", "AC out-of-range, but present", "Config Error", "Power Supply Inactive")
"""The Power Supply sensor's (type 08h) state offsets 0-7, IPMI v2.0 table 42-3, in ipmitool's words."""


def _psu_states(r: SdrReading) -> tuple[str, ...]:
    """A power supply's asserted states: as printed (``sdr elist``), or decoded from ``ipmitool sensor``'s state
    bits by the Power Supply offsets (the sensor is named as a supply; its type is not printed)."""
    if r.states or r.state_bits is None or not _PSU_NAME.search(r.name):
        return r.states
    return tuple(w for i, w in enumerate(_PSU_OFFSETS) if r.state_bits >> i & 1)


def _redundancy(states: tuple[str, ...]) -> tuple[Verdict, str] | None:
    """(verdict, state) of a redundancy sensor's states, ``None`` when it shows none."""
    for s in states:
        low = s.lower()
        if "redundancy lost" in low or re.search(r"non-redundant:\s*insufficient", low):
            return Verdict.FAIL, s
    for s in states:
        low = s.lower()
        if "non-redundant" in low or "redundancy degraded" in low:
            return Verdict.WARN, s
    for s in states:
        if "fully redundant" in s.lower():
            return Verdict.PASS, s
    return None


def _bad_status(status: str) -> Verdict | None:
    if status in ("cr", "nr", "lcr", "ucr", "lnr", "unr"):
        return Verdict.FAIL
    if status in ("nc", "lnc", "unc"):
        return Verdict.WARN
    return None


_STATUS_WORDS = {"cr": N_("critical"), "nr": N_("non-recoverable"), "nc": N_("non-critical"),
                 "lcr": N_("below its lower critical threshold"), "ucr": N_("above its upper critical threshold"),
                 "lnr": N_("below its lower non-recoverable threshold"),
                 "unr": N_("above its upper non-recoverable threshold"),
                 "lnc": N_("below its lower non-critical threshold"), "unc": N_("above its upper non-critical threshold")}
_KIND_WORDS = {"fan": N_("fan"), "temperature": N_("temperature"), "sensor": N_("sensor")}


def _psu_name(r: SdrReading) -> str:
    return r.name if re.search(r"power\s*supply|\bPSU?\b|\bPS\d", r.name, re.I) else f"power supply {r.name}"


def judge_psu(sdr: SdrFacts, source: str = "$ ipmitool sdr elist") -> list[Finding]:
    """``health.bmc_psu`` over a sensor listing: each power supply's states and the power redundancy sensor."""
    psus = [r for r in sdr.readings if (r.entity_id == 10 or _PSU_NAME.search(r.name)) and "redundan" not in
            " ".join(r.states).lower()]
    redund = [r for r in sdr.readings if any("redundan" in s.lower() for s in r.states) and (
        r.entity_id in (10, 19, 20, 21) or _POWER_NAME.search(r.name))]
    psus = [replace(r, states=_psu_states(r)) for r in psus]
    discrete = [r for r in psus if r.states or (r.value is None and r.status not in ("", "ns"))]
    if not psus and not redund:
        if not sdr.readings:
            return [Finding("health.bmc_psu", Verdict.UNKNOWN, "could not read the BMC's sensors", "BMC power supplies",
                            (source,) + cap(sdr.unread, 10), "Run `ipmitool sdr elist` as root and check its output.",
                            SRC_SDR)]
        return [Finding("health.bmc_psu", Verdict.SKIP, "the BMC lists no power-supply sensor (a blade or a "
                        "chassis-powered node reports its supplies in the chassis manager)", "BMC power supplies",
                        (source,), "Check the supplies in the chassis manager or the BMC's web interface.", SRC_SDR)]
    out: list[Finding] = []
    for r in psus:
        bad = [(v, words, s) for s in r.states for rx, v, words in _PSU_STATES if re.search(rx, s.lower())]
        st = _bad_status(r.status)
        if bad:
            verdict = Verdict.FAIL if any(v is Verdict.FAIL for v, _, _ in bad) else Verdict.WARN
            out.append(Finding("health.bmc_psu", verdict, (f'{_psu_name(r)}: ' + ', '.join(dict.fromkeys((s for _, _, s in bad))) + Msg(' (IPMI Power Supply sensor: {bad})', bad=bad[0][1])),
                f"BMC {r.name}", (source, r.line), _REMEDY["power supply"], SRC_SDR))
        elif st is not None:
            out.append(Finding("health.bmc_psu", st, Msg("{psu_name}: status {status} ({get})", psu_name=_psu_name(r), status=r.status, get=_STATUS_WORDS.get(r.status, r.status)), f"BMC {r.name}", (source, r.line),
                               _REMEDY["power supply"], SRC_SDR))
    red_ev: list[str] = []
    red_words: list[str] = []
    for r in redund:
        rv = _redundancy(r.states)
        if rv is None:
            continue
        red_ev.append(r.line)
        red_words.append(f"{r.name}: {rv[1]}")
        if rv[0] is not Verdict.PASS:
            out.append(Finding("health.bmc_psu", rv[0], Msg("power redundancy {name}: {a1} (IPMI redundancy event type 0Bh)", name=r.name, a1=rv[1]), f"BMC {r.name}", (source, r.line), _REMEDY["redundancy"], SRC_SDR))
    if out:
        return out
    if psus and not discrete and not red_words:
        return [Finding("health.bmc_psu", Verdict.UNKNOWN, "this sensor listing does not show the power supplies' "
                        "states (`sdr list` prints them as hex, 0x00 'ok' even when redundancy is lost)",
                        "BMC power supplies", cap([source] + [r.line for r in psus]),
                        "Run `ipmitool sdr elist`, which decodes the states.", SRC_SDR)]
    present = [r for r in psus if any("presence detected" in s.lower() for s in r.states)]
    msg = (Msg('{plural}, none reports a failure', plural=plural(len(psus), 'power-supply sensor')) + (Msg(' ({n_present} present)', n_present=len(present)) if present else '') + (Msg('; redundancy: {red_words}', red_words=', '.join(red_words)) if red_words else Msg('; no power redundancy sensor')))
    return [Finding("health.bmc_psu", Verdict.PASS, msg, "BMC power supplies",
                    cap([source] + [r.line for r in psus] + red_ev), "", SRC_SDR)]


def psu(outputs: Outputs, expectations: Mapping[str, Any]) -> list[Finding]:
    """Health-stage check over ``ipmitool sdr elist`` (probe ``ipmitool_sdr``): ``health.bmc_psu``."""
    o = outputs.get(SDR_PROBE) if isinstance(outputs, Mapping) else None
    if o is None:
        return [_not_read("health.bmc_psu", o, "the power supplies' state")]
    why = access_problem(o)
    if why is not None:
        return [] if _said_by_sel(outputs) else [_access(outputs, o, why)]
    sdr = facts_of(outputs).parse(SDR_PROBE, parse_sdr, on="text")
    assert sdr is not None
    if not sdr.readings and (o.error or o.rc not in (0, None)):
        return [_not_read("health.bmc_psu", o, "the power supplies' state")]
    return judge_psu(sdr, o.source)


# ------------------------------------------------------------------ sensors: fans, temperatures, inlet


_DISCRETE_FAULTS: tuple[tuple[str, Verdict], ...] = (
    # states a discrete sensor shows as asserted now (``sdr elist``), IPMI table 42-3: Memory 0Ch offsets 00h-05h,
    # Processor 07h offsets 00h-05h, Critical Interrupt 13h
    (r"uncorrectable|parity|memory scrub|ierr|thermal trip|bus fatal|pci serr|pci perr|fatal nmi", Verdict.FAIL),
    (r"logging limit|^correctable ecc|predictive failure", Verdict.WARN),
)
_INLET = lazy_re(r"inlet|ambient|intake|front\s*panel\s*temp", re.I)
TEMP_BOUNDS_C = (-40.0, 150.0)
"""Temperatures a server sensor can truly read while the machine runs, in °C: below -40 °C (the lowest rating of
industrial-grade parts, JEDEC JESD22-A104 temperature-cycling condition range) or above 150 °C (beyond the junction
maximum of any server CPU, GPU or memory, 100-125 °C, and the 150 °C ceiling of JEDEC's high-temperature operating
life tests, JESD22-A108) is a sensor or BMC fault, not a temperature."""
FAN_MAX_RPM = 50_000.0
"""Fan speeds above 50,000 RPM (server fans top out near 30,000 RPM: e.g. Delta's 40 mm PFR0412 series at about 25,000)
or below 0 are a sensor or BMC fault, not a speed."""


def _implausible(r: SdrReading, fan: bool) -> str:
    """Why a reading cannot be physical ("" when it can): the bound it breaks."""
    if r.value is None:
        return ""
    if fan and r.unit.upper() == "RPM" and not 0.0 <= r.value <= FAN_MAX_RPM:
        return f"{r.value:g} RPM is outside 0-{FAN_MAX_RPM:g} RPM (no server fan turns that fast)"
    if not fan and (r.temperature_c is not None or r.unit.lower() == "degrees c") and not _is_margin(r):
        lo, hi = TEMP_BOUNDS_C
        if not lo <= r.value <= hi:
            return (f"{r.value:g} °C is outside {lo:g}..{hi:g} °C (no running server part reads that: junction "
                    "maxima are 100-125 °C)")
    return ""


_MARGIN = re.compile(r"marg|mrgn|\bmgn\b", re.I)


def _is_margin(r: SdrReading) -> bool:
    """A thermal-margin sensor ("P1 Therm Margin", "P1 DTS Therm Mgn", "DIMM Thrm Mrgn 1"): degrees below the part's
    throttle point, negative while it runs cooler (Intel Server Board S2600 Technical Product Specification, sensor
    table: processor and DIMM thermal margin), not a temperature: it is neither bounded as one nor the hottest."""
    return bool(_MARGIN.search(r.name))


def _is_fan(r: SdrReading) -> bool:
    return r.unit.upper() == "RPM" or (bool(re.search(r"\bfan", r.name, re.I)) and r.unit.lower() == "percent")


def _upper_threshold(r: SdrReading) -> tuple[float | None, str]:
    for k in ("unc", "ucr", "unr"):
        if k in r.thresholds:
            return r.thresholds[k], k
    return None, ""


def _lower_threshold(r: SdrReading) -> tuple[float | None, str]:
    for k in ("lnc", "lcr", "lnr"):
        if k in r.thresholds:
            return r.thresholds[k], k
    return None, ""


_ABSENT = re.compile(r"^'?device (?:removed/device absent|absent|removed)'?$", re.I)


def _absent_module(r: Any) -> bool:
    """A presence sensor (its name says Presence) whose only state is 'Device Absent' / 'Device Removed' (IPMI table
    42-3, sensor type 25h Entity Presence, or a Module/Board sensor's presence offset): an optional module not fitted,
    which FreeIPMI's ipmi-sensors rates Critical where ipmitool says ok (held-out round 150)."""
    return bool(r.value is None and r.states and re.search(r"presen", r.name, re.I)
                and all(_ABSENT.match(st.strip()) for st in r.states))


def _fmt(v: float | None) -> str:
    return "no reading" if v is None else f"{v:g}"


def judge_sensors(sdr: SdrFacts, thresholds: SdrFacts | None = None, source: str = "$ ipmitool sdr elist",
                  th_source: str = "$ ipmitool sensor", th_note: str = "") -> list[Finding]:
    """``health.bmc_sensors`` over a sensor listing (and ``ipmitool sensor``'s thresholds, when given; ``th_note``:
    why they are missing, said with the inlet)."""
    by_name: dict[str, SdrReading] = {}
    for r in (thresholds.readings if thresholds else ()):
        by_name.setdefault(r.name, r)
    readings = list(sdr.readings) or list(thresholds.readings if thresholds else ())
    if not readings:
        return [Finding("health.bmc_sensors", Verdict.UNKNOWN, "could not read the BMC's sensors", "BMC sensors",
                        (source,) + cap(sdr.unread, 10), "Run `ipmitool sdr elist` as root and check its output.",
                        SRC_SDR)]
    out: list[Finding] = []
    odd = {id(r): why for r in readings if (why := _implausible(r, _is_fan(r)))}
    for r in readings:
        if id(r) in odd:
            out.append(Finding("health.bmc_sensors", Verdict.WARN, Msg("sensor {name}: {a1}: a sensor or BMC fault, not a reading, whatever status the BMC gives "
                                                                       "it ({a2})", name=r.name, a1=odd[id(r)], a2=r.status or 'none'),
                               f"BMC {r.name}", (source, r.line),
                               "Read the sensor again (`ipmitool sdr get NAME`); if it stays impossible, reset the BMC "
                               "(`ipmitool mc reset cold`, the host keeps running) and update its firmware; meanwhile "
                               "watch that part's temperature another way (`nvidia-smi`, `sensors`).", SRC_SDR))
    readings = [r for r in readings if id(r) not in odd]
    fans = [r for r in readings if _is_fan(r)]
    temps = [r for r in readings if (r.temperature_c is not None or r.unit.lower() == "degrees c") and not _is_margin(r)]
    inlet = next((r for r in temps if (_INLET.search(r.name) or r.entity_id in (55, 64)) and r.value is not None), None)
    no_reading = [r for r in readings if r.status == "ns"]
    for r in readings:
        if _absent_module(r):  # FreeIPMI rates an optional module's presence sensor Critical when it is not fitted
            continue
        th = by_name.get(r.name)
        status = r.status if r.status not in ("", "ok", "ns", "na") else (th.status if th else r.status)
        v = _bad_status(status)
        if v is None:
            continue
        kind = "fan" if r in fans else "temperature" if r in temps else "sensor"
        low = status in ("lnc", "lcr", "lnr")
        upper, which = _lower_threshold(th or r) if low else _upper_threshold(th or r)
        m = None
        if r is inlet and not low:
            m = measure(r.value, upper, "°C", "at_most", f"inlet temperature ({r.name})")
        out.append(Finding("health.bmc_sensors", v, (Msg("BMC {name} ({kind}): {value}", name=r.name, kind=Msg(_KIND_WORDS[kind]), value=f"{_fmt(r.value)} {r.unit}".rstrip()) + Msg(', BMC status {status} ({get})', status=status, get=Msg(_STATUS_WORDS[status]) if status in _STATUS_WORDS else status) + (Msg('; its {which} threshold is {upper:g} {unit}', which=which, upper=upper, unit=r.unit) if upper is not None else '')),
                           f"BMC {r.name}", tuple(x for x in (source, r.line, th_source if th else "", th.line if th
                                                             else "") if x),
                           _REMEDY["low" if low and kind != "fan" else "threshold"], SRC_SDR, measured=m))
    for r in fans:
        rv = _redundancy(r.states)
        if rv is not None and rv[0] is not Verdict.PASS:
            out.append(Finding("health.bmc_sensors", rv[0], Msg("fan redundancy {name}: {a1} (IPMI redundancy event type 0Bh)", name=r.name, a1=rv[1]), f"BMC {r.name}", (source, r.line), _REMEDY["redundancy"], SRC_SDR))
    for r in readings:
        if r in fans:
            continue
        if any("redundan" in s.lower() for s in r.states) and re.search(r"fan|cool", r.name, re.I):
            rv = _redundancy(r.states)
            if rv is not None and rv[0] is not Verdict.PASS:
                out.append(Finding("health.bmc_sensors", rv[0], Msg("fan redundancy {name}: {a1} (IPMI redundancy event type 0Bh)", name=r.name, a1=rv[1]), f"BMC {r.name}", (source, r.line), _REMEDY["redundancy"], SRC_SDR))
    for r in readings:
        bad = [(v, st) for st in r.states for rx, v in _DISCRETE_FAULTS if re.search(rx, st.lower())]
        if bad and not (r.entity_id == 10 or _PSU_NAME.search(r.name)):
            verdict = Verdict.FAIL if any(v is Verdict.FAIL for v, _ in bad) else Verdict.WARN
            out.append(Finding("health.bmc_sensors", verdict, (Msg('{name}: the BMC shows ', name=r.name) + ', '.join(dict.fromkeys((st for _, st in bad))) + Msg(' asserted now (IPMI table 42-3 sensor-specific state)')), f"BMC {r.name}", (source, r.line),
                               _REMEDY["memory"] if "ecc" in " ".join(r.states).lower() else _REMEDY["severity"],
                               SRC_SDR))
    judged_inlet = any(f.measured is not None for f in out)
    if inlet is not None and not judged_inlet:
        th = by_name.get(inlet.name)
        upper, which = _upper_threshold(th or inlet)
        out.append(Finding("health.bmc_sensors", Verdict.PASS,
                           (Msg('inlet temperature {name}: {value:g} °C, BMC status {value2}', name=inlet.name, value=inlet.value, value2=(th.status if th else inlet.status) or 'not shown') + (Msg(' (its {which} threshold {upper:g} °C)', which=which, upper=upper) if upper is not None else (Msg(" ({note})", note=th_note) if th_note else Msg(" (this output gives no threshold: `ipmitool sensor` shows them)")))),
                           f"BMC {inlet.name}", tuple(x for x in (source, inlet.line, th_source if th else "",
                                                                 th.line if th else "") if x), "", SRC_SDR,
                           measured=measure(inlet.value, upper, "°C", "at_most", f"inlet temperature ({inlet.name})")))
    if any(f.verdict is not Verdict.PASS for f in out):
        return out
    judged = [r for r in fans + temps if r.status not in ("ns", "na") and r.value is not None]
    others = [r for r in readings if r.status == "ok" and r.value is not None and r not in fans and r not in temps]
    if not judged and others:  # a listing of one sensor type (`sdr type Voltage`): judged on what it shows
        kinds = {"volt": "voltage", "amp": "current", "watt": "power"}
        units = sorted({kinds.get(r.unit.lower().rstrip("s"), r.unit.lower() or "other") for r in others})
        return out + [Finding("health.bmc_sensors", Verdict.PASS,
                              (Msg("{n} sensor(s) ({units}) read ok, within the BMC's thresholds", n=len(others), units=", ".join(units)) + (Msg('; {plural} without a reading (absent or disabled) not judged', plural=plural(len(no_reading), 'sensor')) if no_reading else '') + Msg("; this listing has no fan or temperature sensor (`ipmitool sdr elist` lists them)")),
                              "BMC sensors", cap([source] + [r.line for r in others], 12), "", SRC_SDR)]
    if not judged and readings and all(r.value is None for r in readings) and all(
            r.status == "ok" or _absent_module(r) for r in readings):
        # state sensors only, each ok by the BMC (held-out round 150: module presence sensors, 'Device Absent', ok),
        # or a presence sensor saying its optional module is not fitted (FreeIPMI's Critical for the same sensors)
        absent = [r.name for r in readings if _absent_module(r)]
        return out + [Finding("health.bmc_sensors", Verdict.PASS,
                              (Msg("{n} state sensor(s), the BMC's status ok for each ({states})", n=len(readings),
                                   states="; ".join(f"{r.name}: {', '.join(r.states) or 'ok'}" for r in readings[:4]))
                               if not absent else
                               Msg("{n} state sensor(s); presence sensor(s) {absent}: Device Absent (an optional "
                                   "module not fitted: a fault only if one should be there, however the tool rates the "
                                   "state)",
                                   n=len(readings), absent=", ".join(absent)))
                              + Msg("; this listing has no fan or temperature reading (`ipmitool sdr elist` lists "
                                    "them)"),
                              "BMC sensors", cap([source] + [r.line for r in readings], 12), "", SRC_SDR)]
    if not judged and readings and all(r.value is None for r in readings):
        # a listing of state sensors only (`ipmitool sdr type "Power Supply"`: presence, redundancy), judged by their
        # own checks (health.bmc_psu); nothing here for this one (held-out round 91: unknown for a healthy PSU list)
        return out + [Finding("health.bmc_sensors", Verdict.SKIP,
                              Msg("this listing holds only state sensors ({n}), no fan or temperature reading "
                                  "(`ipmitool sdr elist` lists them)", n=len(readings)),
                              "BMC sensors", cap([source] + [r.line for r in readings], 12),
                              "For the fans and temperatures, run `ipmitool sdr elist` as root on the host.", SRC_SDR)]
    if not judged:
        return out + [Finding("health.bmc_sensors", Verdict.UNKNOWN, "the BMC's sensor listing shows no fan or "
                              "temperature reading", "BMC sensors", cap([source] + [r.line for r in readings]),
                              "Run `ipmitool sdr elist` as root on the host (not a chassis manager).", SRC_SDR)]
    nf = sum(1 for r in fans if r in judged)
    nt = sum(1 for r in temps if r in judged)
    msg = (Msg("{plural} and {plural2} within the BMC's thresholds", plural=plural(nf, 'fan'), plural2=plural(nt, 'temperature sensor')) + (Msg('; {plural} without a reading (absent or disabled) not judged', plural=plural(len(no_reading), 'sensor')) if no_reading else ''))
    hottest = max((r for r in temps if r in judged), key=lambda r: r.value or 0.0, default=None)
    if hottest is not None:
        msg += (Msg('; hottest {name} {value:g} °C', name=hottest.name, value=hottest.value))
    off = next((r.line for r in readings if _SOFT_OFF.search(r.line)), "")
    if off and no_reading:  # the host is off: its CPUs, DIMMs and most fans have nothing to report
        return out + [Finding("health.bmc_sensors", Verdict.UNKNOWN,
                              msg + Msg("; but the host is powered off ({line}), so its CPU, memory and fan sensors have "
                                        "no reading: this listing cannot show how the running host keeps cool",
                                        line=off.strip()), "BMC sensors", cap([source, off] + [r.line for r in judged], 12),
                              "Power the host on (`ipmitool chassis power on`) and read `ipmitool sdr elist` again under "
                              "load.", SRC_SDR)]
    return out + [Finding("health.bmc_sensors", Verdict.PASS, msg, "BMC sensors",
                          cap([source] + [r.line for r in judged], 12), "", SRC_SDR)]


_SOFT_OFF = lazy_re(r"\bS4/S5: soft-off\b|\bS5(?:/G2)?: soft-off\b|\bG3: mechanical off\b")
"""The ACPI power state sensor saying the host is off (IPMI v2.0, table 42-3, sensor type 22h System ACPI Power State:
S4/S5 soft-off, G3 mechanical off)."""


def sensors(outputs: Outputs, expectations: Mapping[str, Any]) -> list[Finding]:
    """Health-stage check over ``ipmitool sdr elist`` and ``ipmitool sensor`` (probes ``ipmitool_sdr``,
    ``ipmitool_sensor``): ``health.bmc_sensors``."""
    o = outputs.get(SDR_PROBE) if isinstance(outputs, Mapping) else None
    t = outputs.get(SENSOR_PROBE) if isinstance(outputs, Mapping) else None
    if o is None and t is None:
        return [_not_read("health.bmc_sensors", o, "the BMC's fans and temperatures")]
    main = o if o is not None else t
    assert main is not None
    why = access_problem(main)
    if why is not None:
        return [] if _said_by_sel(outputs) else [_access(outputs, main, why)]
    f = facts_of(outputs)
    sdr = f.parse(SDR_PROBE, parse_sdr, on="text") if o is not None else None
    th = f.parse(SENSOR_PROBE, parse_sdr, on="text") if t is not None and t.ok and unreachable(t) is None else None
    if sdr is None or not sdr.readings:
        if th is not None and th.readings:
            return judge_sensors(th, None, t.source if t is not None else "$ ipmitool sensor")
        return [_not_read("health.bmc_sensors", main, "the BMC's fans and temperatures")]
    note = (Msg('no threshold: `ipmitool sensor` gave none ({value})', value=t.error or f'exit status {t.rc}') if t is not None and th is None and (t.error or t.rc not in (0, None)) else '')
    return judge_sensors(sdr, th, main.source, t.source if t is not None else "$ ipmitool sensor", note)


# ------------------------------------------------------------------ pasted outputs (explain)


def judge_sel_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """A pasted ``ipmitool sel elist`` / ``sel list`` (or FreeIPMI's ``ipmi-sel``), judged by the live rule."""
    from wizard.parsers.bmc import FREEIPMI_HEADER

    src = ("$ ipmi-sel (pasted)" if any(FREEIPMI_HEADER.match(ln) for ln in text.splitlines()[:20])
           else "$ ipmitool sel elist (pasted)")
    return sel({SEL_PROBE: ProbeOutput(SEL_PROBE, src, text=text, rc=0)}, exp)


def judge_sdr_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """A pasted ``ipmitool sdr elist`` / ``sdr list`` / ``sensor``, judged by the live rules (power supplies and
    sensors)."""
    sdr = parse_sdr(text)
    if sdr.form in ("sensor", "verbose"):  # readings with their thresholds
        outs = {SENSOR_PROBE: ProbeOutput(SENSOR_PROBE, "$ ipmitool sensor (pasted)", text=text, rc=0)}
        return psu({SDR_PROBE: outs[SENSOR_PROBE]}, exp) + sensors(outs, exp)
    outs = {SDR_PROBE: ProbeOutput(SDR_PROBE, "$ ipmitool sdr elist (pasted)", text=text, rc=0)}
    return psu(outs, exp) + sensors(outs, exp)


def judge_ipmi_error_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """ipmitool's error lines pasted alone ("Could not open device at /dev/ipmi0 ...", "Unable to establish IPMI v2 /
    RMCP+ session"), judged by the live check (the SMBIOS tables are not in a paste, so the BMC's presence is unknown)."""
    return sel({SEL_PROBE: ProbeOutput(SEL_PROBE, "$ ipmitool sel elist (pasted)", stderr=text, rc=1)}, exp)


SRC_SEL_INFO = ("IPMI v2.0 rev 1.1 specification, section 31.2 'Get SEL Info Command' (free space, overflow flag: "
                "'events have been dropped due to lack of space in the SEL') "
                "(https://www.intel.com/content/www/us/en/products/docs/servers/ipmi/ipmi-second-gen-interface-spec-v2-rev1-1.html); "
                + SRC_IPMITOOL + "; FreeIPMI ipmi-sel(8), --info")


def judge_sel_info_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``health.bmc_sel`` from how full the SEL is (``ipmitool sel info``, ``ipmi-sel -i``): an overflow (events
    dropped) or a full log (0 bytes free, 100 % used) warns: new hardware events (ECC, power supply, thermal) are lost
    until it is saved and cleared; otherwise a pass that says only the log's room was read, not its events."""
    from wizard.parsers.bmc import parse_sel_info

    info = parse_sel_info(text)
    if info is None:
        return [Finding("health.bmc_sel", Verdict.UNKNOWN, "no SEL size could be read from this output", "BMC",
                        tuple(ln for ln in text.splitlines() if ln.strip())[:4], "Paste the whole `sudo ipmitool sel info` "
                        "output.", SRC_SEL_INFO)]
    ev = tuple(ln for ln in info.lines if re.match(r"\s*(Entries|Number of log entries|Free [Ss]pace|Percent Used|"
                                                   r"Overflow|Events dropped)", ln))
    size = joined(", ", [x for x in (
        info.entries is not None and Msg("{n} entries", n=info.entries),
        info.free_bytes is not None and Msg("{b} bytes free", b=info.free_bytes),
        info.percent_used is not None and Msg("{p:g}% used", p=info.percent_used)) if x])
    full = (info.free_bytes == 0) or (info.percent_used is not None and info.percent_used >= 100)
    if info.overflow or full:
        what = (Msg("the BMC event log overflowed: events were dropped for lack of space") if info.overflow
                else Msg("the BMC event log is full: new hardware events are dropped (or, on a BMC that wraps, overwrite the oldest)"))
        return [Finding("health.bmc_sel", Verdict.WARN, Msg("{what} ({size})", what=what, size=size), "BMC", ev,
                        "Save the log (`sudo ipmitool sel save sel-$(date +%F).txt` or `sudo ipmi-sel > sel.txt`), read "
                        "it for faults (`sudo ipmitool sel elist`), then clear it (`sudo ipmitool sel clear`) so the BMC "
                        "can record the next ECC, power-supply or thermal event.", SRC_SEL_INFO)]
    return [Finding("health.bmc_sel", Verdict.PASS, Msg("the BMC event log has room ({size}; no overflow): this output "
                                                        "says how full the log is, not what it holds (`sudo ipmitool "
                                                        "sel elist` lists the events)", size=size), "BMC", ev, "",
                    SRC_SEL_INFO)]


SRC_CHASSIS = ("IPMI v2.0 rev 1.1 specification, 28.2 'Get Chassis Status' (current power state: power overload, "
               "interlock, power fault, power control fault; misc. chassis state: chassis intrusion, front panel lockout, "
               "drive fault, cooling/fan fault); ipmitool(1), 'chassis status' "
               "(https://github.com/ipmitool/ipmitool/blob/master/doc/ipmitool.1.in)")


def judge_chassis_status_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``health.bmc_sensors`` from ``ipmitool chassis status``: a power overload, a power or power-control fault, a
    cooling/fan or drive fault the BMC reports now fails; an asserted chassis intrusion or interlock warns (the lid
    was opened, or a sensor is loose: confirm it was service work); system power off warns (nothing on this node runs);
    every fault field clear passes, saying what was read (held-out round 56)."""
    from wizard.parsers.bmc import parse_chassis_status

    st = parse_chassis_status(text)
    if st is None:
        return [Finding("health.bmc_sensors", Verdict.UNKNOWN, "no chassis status could be read from this output", "BMC",
                        tuple(ln for ln in text.splitlines() if ln.strip())[:4],
                        "Paste the whole `sudo ipmitool chassis status` output.", SRC_CHASSIS)]
    out: list[Finding] = []
    hard = {k: v for k, v in st.faults.items() if k not in ("chassis intrusion", "interlock")}
    soft = {k: v for k, v in st.faults.items() if k in ("chassis intrusion", "interlock")}
    if hard:
        out.append(Finding("health.bmc_sensors", Verdict.FAIL,
                           Msg("the BMC reports a fault now: {faults}", faults=", ".join(hard)), "BMC",
                           tuple(hard.values()),
                           "Read the BMC's event log for when and why (`sudo ipmitool sel elist`) and the sensors "
                           "(`sudo ipmitool sdr elist`): a power fault or overload points at a power supply or its feed, "
                           "a cooling fault at a fan; fix it before load, and clear the state once repaired.",
                           SRC_CHASSIS))
    if soft:
        out.append(Finding("health.bmc_sensors", Verdict.WARN,
                           Msg("the BMC reports {faults} asserted: the chassis was opened or its sensor is loose",
                               faults=", ".join(soft)), "BMC", tuple(soft.values()),
                           "Confirm it was planned service work and the lid is closed and latched (airflow depends on "
                           "it), then clear the event (`sudo ipmitool sel elist` shows when it happened).", SRC_CHASSIS))
    if st.power == "off":
        out.append(Finding("health.bmc_sensors", Verdict.WARN, "the BMC reports system power off", "BMC",
                           tuple(ln for ln in st.lines if "System Power" in ln)[:1],
                           "Power the node on (`sudo ipmitool chassis power on`) and read the event log for why it "
                           "went off.", SRC_CHASSIS))
    if out:
        return out
    return [Finding("health.bmc_sensors", Verdict.PASS,
                    Msg("the BMC reports power {power} and no chassis fault ({n} fault fields clear)",
                        power=st.power or "?", n=len(st.clear)), "BMC", st.lines[:8], "", SRC_CHASSIS)]


SRC_REDFISH = ("DMTF Redfish Resource and Schema Guide DSP2046: Resource.Status Health and HealthRollup (OK, Warning: "
               "'a condition requires attention', Critical: 'a critical condition requires immediate attention'), "
               "LogEntry Severity (https://www.dmtf.org/dsp/DSP2046)")


def judge_redfish_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Redfish JSON from a BMC: ``health.bmc_sensors`` from the resources' ``Status`` (a component at Critical fails, at
    Warning warns; a system's or chassis's own roll-up at Critical or Warning, with no component here naming it, warns:
    the BMC says something under it is wrong without saying what), and ``health.bmc_sel`` from LogEntry Severities
    (Critical fails, Warning warns). Every Status OK passes; a document with neither is unknown."""
    from wizard.parsers.bmc import parse_redfish

    doc = parse_redfish(text)
    out: list[Finding] = []
    comps = [s for s in doc.statuses if not s.top and s.state.lower() not in ("absent", "disabled")]
    bad = {lvl: [s for s in comps if s.health.lower() == lvl] for lvl in ("critical", "warning")}
    for lvl, verdict in (("critical", Verdict.FAIL), ("warning", Verdict.WARN)):
        if bad[lvl]:
            names = ", ".join(dict.fromkeys(s.name for s in bad[lvl]))
            out.append(Finding("health.bmc_sensors", verdict,
                               Msg("the BMC reports {names} at Health {level}", names=names, level=lvl.capitalize()),
                               "BMC", tuple(s.line for s in bad[lvl][:6]),
                               "Read what the BMC says about it (its Redfish LogServices entries or `ipmitool sel "
                               "elist`, the web interface): reseat or replace the part named, then read its Status "
                               "again.", SRC_REDFISH))
    tops = [s for s in doc.statuses if s.top]
    worst_top = next((lvl for lvl in ("critical", "warning") for s in tops
                      if lvl in (s.health.lower(), s.rollup.lower())), "")
    if worst_top and not bad["critical"] and not bad["warning"]:
        top = next(s for s in tops if worst_top in (s.health.lower(), s.rollup.lower()))
        out.append(Finding("health.bmc_sensors", Verdict.WARN,
                           Msg("the BMC rolls {name} up to {level} but no component in this document says which: "
                               "something under it needs attention", name=top.name, level=worst_top.capitalize()),
                           "BMC", (top.line,),
                           "Find the component: the BMC's log (Redfish LogServices, `ipmitool sel elist`) and its "
                           "Chassis (power supplies, fans, temperatures) and Systems members (Memory, Processors, "
                           "Storage) each carry a Status.", SRC_REDFISH))
    sev = {lvl: [e for e in doc.entries if e.severity.lower() == lvl] for lvl in ("critical", "warning")}
    for lvl, verdict in (("critical", Verdict.FAIL), ("warning", Verdict.WARN)):
        if sev[lvl]:
            out.append(Finding("health.bmc_sel", verdict,
                               Msg("{n} BMC log entries at severity {level}: {msg}", n=len(sev[lvl]),
                                   level=lvl.capitalize(), msg=sev[lvl][-1].message[:200]),
                               "BMC", tuple(e.line[:300] for e in sev[lvl][-4:]),
                               "Read each entry's message and act on the part it names (a temperature: inlet air and "
                               "fans; a DIMM or CPU: reseat or replace it); then clear or acknowledge the log.",
                               SRC_REDFISH))
    if out:
        return out
    fine = [s for s in doc.statuses if "ok" in (s.health.lower(), s.rollup.lower())]
    if fine or doc.entries:
        n = len(fine)
        return [Finding("health.bmc_sensors", Verdict.PASS,
                        Msg("every Status the BMC reports here is Health OK ({n} resources: {names}){logs}", n=n,
                            names=", ".join(list(dict.fromkeys(s.name for s in fine))[:8]) or "-",
                            logs=Msg("; {m} log entries, none Warning or Critical", m=len(doc.entries))
                            if doc.entries else ""),
                        "BMC", tuple(s.line for s in fine[:6]), "", SRC_REDFISH)]
    return [Finding("health.bmc_sensors", Verdict.UNKNOWN,
                    Msg("this Redfish document carries no Status Health and no log entry to judge (a collection of "
                        "links, or a resource without health)"), "BMC",
                    tuple(ln for ln in text.splitlines() if ln.strip())[:4],
                    "Read the members themselves (each Memory, Processor, PowerSupply, Fan resource, or "
                    "Systems/1?$expand=.) or the BMC's LogServices entries.", SRC_REDFISH)]
