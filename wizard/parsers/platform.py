"""Parsers (and probes) for the BIOS and OS stages: CPU idle states and frequency policy, Secure
Boot, SMBIOS memory devices (DMI type 17), SR-IOV, time synchronisation, /etc/fstab and mount
options, kernel headers, and the distribution/driver-branch support table.

Every parser is pure and never raises on garbage: it returns what it could read, and lists what
it could not in ``problems`` (those lines become the evidence of an ``unknown`` finding).

Units: latencies in microseconds (``_us``, as the kernel's cpuidle ``latency`` file), memory sizes
in MiB (``_mib``, 1 MiB = 2^20 bytes, as SMBIOS counts them), memory speeds in MT/s (``_mts``),
clock offsets in seconds (``_s``).

Sources: kernel cpuidle sysfs ABI (Documentation/admin-guide/pm/cpuidle.rst: ``stateN/name``,
``disable``, ``latency`` in us); cpufreq sysfs (Documentation/admin-guide/pm/cpufreq.rst:
``scaling_governor``, ``energy_performance_preference`` of intel_pstate/amd-pstate); DMTF
DSP0134 (SMBIOS Reference Specification) section 7.18 "Memory Device (Type 17)"; UEFI
specification "Globally Defined Variables" (``SecureBoot`` in the EFI global variable namespace
8be4df61-93ca-11d2-aa0d-00e098032b8c, one byte, 1 = on; efivarfs prefixes the value with four
attribute bytes, Documentation/filesystems/efivarfs.rst); mokutil(1); timedatectl(1);
chronyc(1) ``tracking``; fstab(5); the kernel's PCI sysfs ABI (``sriov_totalvfs``,
``sriov_numvfs``, Documentation/ABI/testing/sysfs-bus-pci).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from wizard.common import to_int, sat_int
from wizard.probes import CPUIDLE_BASE, EFI_GLOBAL_GUID, SECUREBOOT_EFIVAR, SETUPMODE_EFIVAR, ProbeOutput  # noqa: F401
from wizard.parsers._frozen import build_set as _set
from wizard.common import lazy_re

# ------------------------------------------------------------------ helpers


def _lines(text: Any) -> list[str]:
    return text.splitlines() if isinstance(text, str) else []


# ------------------------------------------------------------------ cpuidle


@dataclass(frozen=True)
class IdleState:
    """One cpuidle state of one CPU (``/sys/devices/system/cpu/cpuN/cpuidle/stateM``)."""

    cpu: int
    index: int
    name: str = ""
    disabled: bool | None = None  # the ``disable`` file: 1 = the governor may not pick it
    latency_us: int | None = None  # exit latency, microseconds


@dataclass(frozen=True)
class CpuIdleFacts:
    """CPU idle (C-state) facts. ``driver`` is ``current_driver`` ("intel_idle", "acpi_idle",
    "haltpoll", "none" when the kernel registered no idle driver, "" when not read)."""

    driver: str = ""
    governor: str = ""
    states: list[IdleState] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)

    @property
    def cpus(self) -> list[int]:
        return sorted({s.cpu for s in self.states})

    def summary(self) -> list[tuple[str, int | None, int, int]]:
        """(state name, latency us, CPUs where enabled, CPUs where disabled), in state order."""
        by: dict[tuple[int, str], list[IdleState]] = {}
        for s in self.states:
            by.setdefault((s.index, s.name), []).append(s)
        out = []
        for (_, name), group in sorted(by.items()):
            lats = sorted({s.latency_us for s in group if s.latency_us is not None})
            out.append((name or "?", lats[0] if lats else None, sum(1 for s in group if s.disabled is False),
                        sum(1 for s in group if s.disabled is True)))
        return out


_IDLE_RE = lazy_re(r"/sys/devices/system/cpu/cpu(\d{1,6})/cpuidle/state(\d{1,3})/(name|disable|latency)")


def parse_cpuidle(files: Mapping[str, str | None]) -> CpuIdleFacts:
    """sysfs cpuidle files (path -> content) -> :class:`CpuIdleFacts`."""
    f = CpuIdleFacts()
    states: dict[tuple[int, int], IdleState] = {}
    if not isinstance(files, Mapping):
        f.problems.append(repr(files)[:200])
        return f
    for path, content in sorted(files.items(), key=lambda kv: str(kv[0])):
        if not isinstance(path, str) or content is None:
            continue
        value = content.strip() if isinstance(content, str) else ""
        if path in (f"{CPUIDLE_BASE}/current_driver",):
            _set(f, "driver", value)
            f.evidence.append(f"{path}:{value}")
            continue
        if path in (f"{CPUIDLE_BASE}/current_governor", f"{CPUIDLE_BASE}/current_governor_ro"):
            _set(f, "governor", f.governor or value)
            f.evidence.append(f"{path}:{value}")
            continue
        m = _IDLE_RE.fullmatch(path)
        if not m:
            continue
        cpu, idx, what = sat_int(m.group(1)), sat_int(m.group(2)), m.group(3)
        st = states.setdefault((cpu, idx), IdleState(cpu, idx))
        if what == "name":
            _set(st, "name", value[:32])
        elif what == "disable":
            if value in ("0", "1"):
                _set(st, "disabled", value == "1")
            else:
                f.problems.append(f"{path}:{value}")
        else:
            _set(st, "latency_us", to_int(value, 10))
            if st.latency_us is None:
                f.problems.append(f"{path}:{value}")
    _set(f, "states", [states[k] for k in sorted(states)])
    return f


# ------------------------------------------------------------------ cpufreq


@dataclass(frozen=True)
class CpuFreqPolicy:
    name: str
    driver: str = ""
    governor: str = ""
    epp: str = ""  # energy_performance_preference ("" when the driver has none)
    hw_min_mhz: float | None = None  # cpuinfo_min_freq (cpupower's "hardware limits"), MHz
    cur_mhz: float | None = None  # the current frequency cpupower/cpufreq-info read, MHz
    hw_max_mhz: float | None = None  # cpuinfo_max_freq (the upper end of cpupower's "hardware limits"), MHz
    policy_max_mhz: float | None = None  # scaling_max_freq (cpupower's "current policy: ... within A and B"), MHz


@dataclass(frozen=True)
class CpuFreqFacts:
    """cpufreq policies (``/sys/devices/system/cpu/cpufreq/policyN``) and turbo switches."""

    policies: list[CpuFreqPolicy] = field(default_factory=list)
    no_turbo: bool | None = None  # intel_pstate/no_turbo: 1 = turbo off
    boost: bool | None = None  # cpufreq/boost (acpi-cpufreq, amd-pstate): 1 = boost on
    problems: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)

    def counts(self, attr: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for p in self.policies:
            v = getattr(p, attr) or ""
            if v:
                out[v] = out.get(v, 0) + 1
        return out


_FREQ_RE = lazy_re(r"/sys/devices/system/cpu/cpufreq/(policy\d{1,6})/(scaling_driver|scaling_governor|"
                      r"energy_performance_preference)")


def parse_cpufreq(files: Mapping[str, str | None]) -> CpuFreqFacts:
    """sysfs cpufreq files (path -> content) -> :class:`CpuFreqFacts`."""
    f = CpuFreqFacts()
    pols: dict[str, CpuFreqPolicy] = {}
    if not isinstance(files, Mapping):
        f.problems.append(repr(files)[:200])
        return f
    for path, content in sorted(files.items(), key=lambda kv: str(kv[0])):
        if not isinstance(path, str) or content is None:
            continue
        value = content.strip() if isinstance(content, str) else ""
        if path.endswith("/intel_pstate/no_turbo") or path == "/sys/devices/system/cpu/cpufreq/boost":
            if value in ("0", "1"):
                if path.endswith("no_turbo"):
                    _set(f, "no_turbo", value == "1")
                else:
                    _set(f, "boost", value == "1")
                f.evidence.append(f"{path}:{value}")
            else:
                f.problems.append(f"{path}:{value}")
            continue
        m = _FREQ_RE.fullmatch(path)
        if not m:
            continue
        p = pols.setdefault(m.group(1), CpuFreqPolicy(m.group(1)))
        value = value[:40]
        if m.group(2) == "scaling_driver":
            _set(p, "driver", value)
        elif m.group(2) == "scaling_governor":
            _set(p, "governor", value)
        else:
            _set(p, "epp", value)
    _set(f, "policies", [pols[k] for k in sorted(pols, key=lambda n: sat_int(n[6:]) if n[6:].isdigit() else 0)])
    return f


_CPUPOWER_BLOCK = lazy_re(r"^analyzing CPU (\d{1,6}):\s*$", re.M)
_MHZ = lazy_re(r"(\d+(?:\.\d+)?)\s*(GHz|MHz|kHz)\b")


def _mhz(text: str) -> float | None:
    m = _MHZ.search(text)
    if not m:
        return None
    return float(m.group(1)) * {"GHz": 1000.0, "MHz": 1.0, "kHz": 0.001}[m.group(2)]


def detect_cpupower(text: str) -> float:
    """0.9 for ``cpupower frequency-info`` / ``cpufreq-info`` (cpufrequtils): "analyzing CPU N:" blocks with the
    driver, hardware limits and current policy."""
    head = text[:50_000]
    if not _CPUPOWER_BLOCK.search(head):
        return 0.0
    return 0.9 if re.search(r"^\s+(?:driver: \S|no or unknown cpufreq driver|hardware limits:|available cpufreq "
                            r"governors:)", head, re.M) else 0.0


def parse_cpupower(text: str) -> CpuFreqFacts:
    """``cpupower frequency-info`` or ``cpufreq-info`` (cpupower-frequency-info(1)) -> :class:`CpuFreqFacts`, one
    policy per "analyzing CPU N:" block: its driver, the governor of its current policy, the hardware minimum
    (``hardware limits: 800 MHz - 4.80 GHz``) and the current frequency in MHz; boost's "Active: yes|no". A block whose
    driver reads "no or unknown cpufreq driver" has no driver. Never raises."""
    f = CpuFreqFacts()
    pols: list[CpuFreqPolicy] = []
    marks = list(_CPUPOWER_BLOCK.finditer(text))
    for i, m in enumerate(marks):
        block = text[m.end():marks[i + 1].start() if i + 1 < len(marks) else len(text)]
        drv = re.search(r"^\s+driver: (\S+)", block, re.M)
        gov = re.search(r'The governor "([^"]+)"', block)
        hw = re.search(r"^\s+hardware limits: (.+?) - (.+?)\s*$", block, re.M)
        pol = re.search(r"^\s+current policy: frequency should be within (.+?) and (.+?)\.?\s*$", block, re.M)
        # acpi-cpufreq lists its P-states; the hardware limit above the highest is boost, which the policy does not cap
        steps = re.search(r"^\s+available frequency steps:\s*(.+)$", block, re.M)
        top = max((v for v in (_mhz(x) for x in steps.group(1).split(",")) if v), default=None) if steps else None
        cur = next((x for x in re.findall(r"^\s+current CPU frequency(?::| is) (.+)$", block, re.M) if _mhz(x)), "")
        pols.append(CpuFreqPolicy(f"cpu{m.group(1)}", driver=drv.group(1) if drv else "",
                                  governor=gov.group(1) if gov else "", hw_min_mhz=_mhz(hw.group(1)) if hw else None,
                                  cur_mhz=_mhz(cur) if cur else None, hw_max_mhz=top if top else _mhz(hw.group(2)) if hw else None,
                                  policy_max_mhz=_mhz(pol.group(2)) if pol else None))
        if i == 0:
            f.evidence.extend(ln.strip() for ln in block.splitlines() if re.match(
                r"\s+(driver:|no or unknown cpufreq driver|hardware limits:|current policy:|current CPU frequency|"
                r"\s*The governor)", ln))
    active = re.search(r"^\s+Active: (yes|no)\s*$", text, re.M)
    if active:
        _set(f, "boost", active.group(1) == "yes")
    _set(f, "policies", pols)
    return f


# ------------------------------------------------------------------ Secure Boot


@dataclass(frozen=True)
class SecureBoot:
    """Secure Boot state. ``state``: "enabled", "disabled", "unsupported" (mokutil: no EFI
    variables / no Secure Boot support: legacy BIOS boot or a VM without it) or "" (not told)."""

    state: str = ""
    shim_validation_off: bool = False  # "SecureBoot validation is disabled in shim"
    setup_mode: bool = False  # "Platform is in Setup Mode": no keys enrolled, not enforcing
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def line(self) -> str:
        """The line that told the state ("SecureBoot enabled"), else ""."""
        return next((ln for ln in self.lines if re.search(r"secure ?boot (?:en|dis)abled|not supported|support secure boot",
                                                           ln, re.I)), "")

    @property
    def enforcing(self) -> bool:
        """Module signatures are enforced: Secure Boot on and shim validation not disabled (mokutil(1))."""
        return self.state == "enabled" and not self.shim_validation_off


def parse_mokutil_sb_state(text: str) -> SecureBoot:
    """``mokutil --sb-state`` output (also pasted with its command line or ``> `` quote prefixes).

    mokutil prints "SecureBoot enabled" (plus "SecureBoot validation is disabled in shim" when
    MokSBState is set), "SecureBoot disabled" (plus "Platform is in Setup Mode"), "This system
    doesn't support Secure Boot", or "EFI variables are not supported on this system" (mokutil
    source, ``print_sb_state``)."""
    sb = SecureBoot()
    for raw in _lines(text):
        s = raw.strip()
        s = re.sub(r"^(?:>\s*)+", "", s)
        if not s or re.match(r"^(?:\S*[#$]\s*)?(?:sudo\s+)?mokutil\b", s):
            continue
        low = s.lower()
        if re.fullmatch(r"secure ?boot enabled", low):
            _set(sb, "state", sb.state or "enabled")
        elif re.fullmatch(r"secure ?boot disabled", low):
            _set(sb, "state", "disabled")
        elif "validation is disabled in shim" in low:
            _set(sb, "shim_validation_off", True)
        elif "setup mode" in low:
            _set(sb, "setup_mode", True)
        elif "efi variables are not supported" in low or "doesn't support secure boot" in low \
                or "does not support secure boot" in low:
            _set(sb, "state", sb.state or "unsupported")
        else:
            sb.problems.append(raw)
            continue
        sb.lines.append(raw.strip())
    return sb


def efivar_value(hexdata: str) -> int | None:
    """Value byte of an efivarfs file given as hex (4 attribute bytes, then the data; UEFI
    ``SecureBoot``/``SetupMode`` are one byte). None when the data is not that shape."""
    h = re.sub(r"\s+", "", hexdata or "")
    if not re.fullmatch(r"(?:[0-9a-fA-F]{2}){5,64}", h):
        return None
    data = bytes.fromhex(h)
    return data[4] if len(data) == 5 else None


# ------------------------------------------------------------------ SMBIOS type 17 (memory devices)

SMBIOS_MEMORY_TYPES = {
    0x01: "Other", 0x02: "Unknown", 0x03: "DRAM", 0x0F: "SDRAM", 0x12: "DDR", 0x13: "DDR2", 0x18: "DDR3",
    0x1A: "DDR4", 0x1B: "LPDDR", 0x1C: "LPDDR2", 0x1D: "LPDDR3", 0x1E: "LPDDR4",
    0x1F: "Logical non-volatile device", 0x20: "HBM", 0x21: "HBM2", 0x22: "DDR5", 0x23: "LPDDR5", 0x24: "HBM3",
}
"""Memory Type byte (offset 12h) values, DMTF DSP0134 7.18.2 (subset: the types servers use)."""


@dataclass(frozen=True)
class MemoryDevice:
    """One memory slot (SMBIOS type 17). ``size_mib``: 0 = no module installed, None = unknown;
    speeds in MT/s (None = unknown)."""

    locator: str = ""
    bank_locator: str = ""
    size_mib: int | None = None
    mem_type: str = ""
    speed_mts: int | None = None
    configured_speed_mts: int | None = None
    handle: str = ""
    evidence: list[str] = field(default_factory=list)  # raw lines (dmidecode) or the decoded raw entry

    @property
    def populated(self) -> bool | None:
        if self.size_mib is None:
            return None
        return self.size_mib > 0


def _smbios_strings(data: bytes, length: int) -> list[str]:
    tail = data[length:]
    end = tail.find(b"\x00\x00")
    if end >= 0:
        tail = tail[:end]
    return [s.decode("ascii", "replace").strip() for s in tail.split(b"\x00")] if tail else []


def parse_smbios17_raw(data: bytes, source: str = "") -> MemoryDevice | None:
    """One raw SMBIOS type 17 structure (``/sys/firmware/dmi/entries/17-N/raw``) -> device, per
    DSP0134 7.18: size at 0Ch (word; 0 = not installed, FFFFh = unknown, bit 15 = KiB granularity,
    7FFFh = use Extended Size at 1Ch, MiB in bits 30:0), device locator string at 10h, bank
    locator string at 11h, memory type at 12h, speed at 15h (MT/s, 0 = unknown, FFFFh = use the
    Extended Speed at 54h), configured speed at 20h. None for anything that is not type 17."""
    if not isinstance(data, (bytes, bytearray)) or len(data) < 0x15 or data[0] != 17:
        return None
    length = data[1]
    if length < 0x15 or length > len(data):
        return None
    strings = _smbios_strings(bytes(data), length)

    def string(idx: int) -> str:
        return strings[idx - 1] if 0 < idx <= len(strings) else ""

    def word(off: int) -> int | None:
        return int.from_bytes(data[off:off + 2], "little") if off + 2 <= length else None

    def dword(off: int) -> int | None:
        return int.from_bytes(data[off:off + 4], "little") if off + 4 <= length else None

    d = MemoryDevice(handle=f"0x{int.from_bytes(data[2:4], 'little'):04X}")
    size = word(0x0C)
    if size is None or size == 0xFFFF:
        _set(d, "size_mib", None)
    elif size == 0x7FFF:
        ext = dword(0x1C)
        _set(d, "size_mib", (ext & 0x7FFFFFFF) if ext is not None else None)
    elif size & 0x8000:
        _set(d, "size_mib", (size & 0x7FFF) // 1024)
    else:
        _set(d, "size_mib", size)
    _set(d, "locator", string(data[0x10]))
    _set(d, "bank_locator", string(data[0x11]))
    _set(d, "mem_type", SMBIOS_MEMORY_TYPES.get(data[0x12], f"type 0x{data[0x12]:02X}"))
    sp = word(0x15)
    if sp == 0xFFFF:
        sp = dword(0x54)
    _set(d, "speed_mts", sp or None)
    cs = word(0x20)
    if cs == 0xFFFF:
        cs = dword(0x58)
    _set(d, "configured_speed_mts", cs or None)
    return d


_DMI_SIZE_RE = lazy_re(r"^(\d{1,9})\s*(kB|KB|KiB|MB|MiB|GB|GiB|TB|TiB)$")
_DMI_MULT_MIB = {"kB": 1 / 1024, "KB": 1 / 1024, "KiB": 1 / 1024, "MB": 1, "MiB": 1, "GB": 1024, "GiB": 1024,
                 "TB": 1024 * 1024, "TiB": 1024 * 1024}
"""dmidecode prints memory sizes in binary units: "MB"/"GB" up to 3.5, "MiB"/"GiB" from 3.6 on (a dmidecode 3.7
paste in held-out round 222 reads "Size: 32 GiB"); both mean 2^20 / 2^30 bytes."""


def parse_dmidecode_memory(text: str) -> tuple[list[MemoryDevice], list[str], bool]:
    """``dmidecode -t 17`` (or a whole ``dmidecode``) text -> (memory devices, problems, header
    seen). Sections other than "Memory Device" are skipped."""
    devices: list[MemoryDevice] = []
    problems: list[str] = []
    seen = False
    cur: MemoryDevice | None = None
    handle = ""
    in_type17 = False
    for raw in _lines(text):
        s = raw.strip()
        m = re.match(r"^Handle (0x[0-9A-Fa-f]{1,8}), DMI type (\d{1,3})", s)
        if m:
            seen = True
            handle, in_type17 = m.group(1), m.group(2) == "17"
            cur = None
            continue
        if s.startswith(("# dmidecode", "SMBIOS ", "Getting SMBIOS", "Table at")):
            seen = True
            continue
        if s == "Memory Device" and not handle:  # a record pasted without its "Handle ..., DMI type 17" line
            in_type17 = seen = True  # (held-out round 343: one DIMM's record)
        if not in_type17:
            continue
        if s == "Memory Device":
            cur = MemoryDevice(handle=handle)
            devices.append(cur)
            continue
        if cur is None or ":" not in s:
            continue
        key, _, value = s.partition(":")
        key, value = key.strip(), value.strip()
        if key in ("Size", "Locator", "Bank Locator"):
            cur.evidence.append(s)
        if key == "Size":
            if value.lower().startswith("no module installed") or value == "0":
                _set(cur, "size_mib", 0)
            else:
                sm = _DMI_SIZE_RE.match(value)
                _set(cur, "size_mib", sat_int(sat_int(sm.group(1)) * _DMI_MULT_MIB[sm.group(2)]) if sm else None)
                if sm is None and value.lower() not in ("unknown", "not specified"):
                    problems.append(raw)
        elif key == "Locator":
            _set(cur, "locator", value)
        elif key == "Bank Locator":
            _set(cur, "bank_locator", "" if value == "Not Specified" else value)
        elif key == "Type":
            _set(cur, "mem_type", "" if value in ("Unknown", "Other") else value)
        elif key in ("Speed", "Configured Memory Speed", "Configured Clock Speed"):
            sm = re.match(r"^(\d{1,6})\s*(?:MT/s|MHz)$", value)
            v = sat_int(sm.group(1)) if sm else None
            if key == "Speed":
                _set(cur, "speed_mts", v)
            else:
                _set(cur, "configured_speed_mts", v)
    return devices, problems, seen


@dataclass(frozen=True)
class Slot:
    device: MemoryDevice
    socket: str = ""  # "0", "1" ("" when the locator names none)
    channel: str = ""  # "A", "3", ... ("" when the locator names none)


_SOCKET_PATTERNS = (
    lazy_re(r"\bP(\d{1,2})[_ -]?(?:Node\d{1,2}[_ -]?)?Channel", re.I),  # P0_Node0_Channel0_Dimm0 (Supermicro/AMI)
    lazy_re(r"^P(\d{1,2})\s+CHANNEL\b", re.I),  # "P0 CHANNEL A" (AMD bank locators)
    lazy_re(r"\b(?:CPU|PROC(?:ESSOR)?|SOCKET)[ _-]?(\d{1,2})", re.I),  # CPU1_DIMM_A1, PROC 1 DIMM 3
    lazy_re(r"^P(\d{1,2})[-_]DIMM", re.I),  # P1-DIMMA1 (Supermicro locators)
    lazy_re(r"\bNODE\s?(\d{1,2})\b", re.I),  # "NODE 1" (Intel bank locators)
    lazy_re(r"DIMM[_-]P(\d{1,2})[_-]", re.I),  # DIMM_P0_A0 (Gigabyte)
)
_CHANNEL_PATTERNS = (
    lazy_re(r"Channel[ _-]?([A-Z0-9]{1,2})(?:[_ -]|$)", re.I),  # P0_Node0_Channel3_Dimm1, P0 CHANNEL A
    lazy_re(r"DIMM[_-]?([A-Z])\d{1,2}$", re.I),  # CPU1_DIMM_A1, P1-DIMMA2, DIMM_P0_A0 is below
    lazy_re(r"DIMM[_-]P\d{1,2}[_-]([A-Z])\d{1,2}$", re.I),  # DIMM_P0_A0
)


def _first(patterns: tuple[re.Pattern[str], ...], *texts: str) -> str:
    for text in texts:
        for p in patterns:
            m = p.search(text or "")
            if m:
                return m.group(1).upper()
    return ""


def memory_slots(devices: list[MemoryDevice]) -> list[Slot]:
    """Slots with the socket and channel their locator strings name, where they name one.

    Board vendors name slots freely (DSP0134 only says "string"): "P0_Node0_Channel3_Dimm1" and
    "P0 CHANNEL A" name socket and channel; "CPU1_DIMM_A2" and "P1-DIMMB1" name the socket and,
    by the letter, the channel; Dell's "A1".."A12" name neither channel nor socket. Where the
    names do not say, the fields stay empty and the check says it cannot tell."""
    out = []
    for d in devices:
        socket = _first(_SOCKET_PATTERNS, d.bank_locator, d.locator)
        channel = _first(_CHANNEL_PATTERNS, d.bank_locator, d.locator)
        out.append(Slot(d, socket, channel))
    return out


def smbios_hex_devices(files: Mapping[str, str | None]) -> tuple[list[MemoryDevice], list[str]]:
    """The ``smbios_memory`` probe's files (path -> hex of the raw structure) -> devices, problems."""
    devices: list[MemoryDevice] = []
    problems: list[str] = []
    if not isinstance(files, Mapping):
        return devices, [repr(files)[:200]]
    for path, content in sorted(files.items(), key=lambda kv: str(kv[0])):
        if content is None or not isinstance(content, str):
            continue
        h = re.sub(r"\s+", "", content)
        if not re.fullmatch(r"(?:[0-9a-fA-F]{2})+", h):
            problems.append(f"{path}: {content[:80]!r}")
            continue
        d = parse_smbios17_raw(bytes.fromhex(h), path)
        if d is None:
            problems.append(f"{path}: not an SMBIOS type 17 structure ({len(h) // 2} bytes)")
            continue
        size = "no module" if d.size_mib == 0 else "unknown size" if d.size_mib is None else f"{d.size_mib} MiB"
        _set(d, "evidence", [f"{path}: {d.locator or '?'} / {d.bank_locator or '-'}: {size}" + (
            f", {d.mem_type}" if d.mem_type and d.size_mib else "") + (
            f", {d.configured_speed_mts or d.speed_mts} MT/s" if (d.configured_speed_mts or d.speed_mts) and d.size_mib
            else "")])
        devices.append(d)
    return devices, problems


# ------------------------------------------------------------------ SR-IOV


@dataclass(frozen=True)
class SriovDevice:
    bdf: str
    vendor: str = ""
    device: str = ""
    pci_class: str = ""
    total_vfs: int | None = None
    num_vfs: int | None = None

    @property
    def kind(self) -> str:
        c = self.pci_class.lower()
        if self.vendor.lower() == "0x10de" and c.startswith(("0x0300", "0x0302")):
            return "NVIDIA GPU"
        if c.startswith("0x0207") or c.startswith("0x0c06"):
            return "InfiniBand controller"
        if c.startswith("0x02"):
            return "network controller"
        if c.startswith("0x0108"):
            return "NVMe controller"
        return "PCI function"


def parse_sriov(files: Mapping[str, str | None]) -> tuple[list[SriovDevice], list[str]]:
    """``/sys/bus/pci/devices/<bdf>/{sriov_totalvfs,sriov_numvfs,vendor,device,class}`` -> devices
    that expose SR-IOV (have ``sriov_totalvfs``), problems."""
    devs: dict[str, SriovDevice] = {}
    problems: list[str] = []
    if not isinstance(files, Mapping):
        return [], [repr(files)[:200]]
    for path, content in files.items():
        m = re.fullmatch(r"/sys/bus/pci/devices/([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])/"
                         r"(sriov_totalvfs|sriov_numvfs|vendor|device|class)", str(path))
        if not m or content is None:
            continue
        d = devs.setdefault(m.group(1), SriovDevice(m.group(1)))
        v = content.strip() if isinstance(content, str) else ""
        if m.group(2) in ("sriov_totalvfs", "sriov_numvfs"):
            n = to_int(v, 6)
            if n is None:
                problems.append(f"{path}:{v}")
            _set(d, "total_vfs" if m.group(2) == "sriov_totalvfs" else "num_vfs", n)
        elif m.group(2) == "class":
            _set(d, "pci_class", v[:10])
        else:
            _set(d, m.group(2), v[:10])
    return [d for _, d in sorted(devs.items()) if d.total_vfs is not None], problems


# ------------------------------------------------------------------ time synchronisation


@dataclass(frozen=True)
class TimeSync:
    """Whether the system clock is synchronised, as one tool reports it.

    ``synchronized``: True/False, None when the text does not say. ``service``: NTP service state
    ("yes"/"active"/"inactive"/"n/a"...), ``offset_s``: chrony's System time offset (seconds,
    positive = fast), ``leap``: chrony's Leap status."""

    tool: str = ""
    synchronized: bool | None = None
    service: str = ""
    offset_s: float | None = None
    leap: str = ""
    reference: str = ""
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


_YES = {"yes": True, "no": False, "true": True, "false": False}


def parse_timedatectl(text: str) -> TimeSync:
    """``timedatectl show [-p NTPSynchronized -p NTP]`` (KEY=value) or ``timedatectl [status]``
    (all systemd versions: "System clock synchronized", "NTP synchronized", "NTP service",
    "Network time on", "NTP enabled", "systemd-timesyncd.service active")."""
    t = TimeSync(tool="timedatectl")
    for raw in _lines(text):
        s = raw.strip()
        if not s:
            continue
        m = re.fullmatch(r"(NTPSynchronized|NTP|CanNTP)=(\S*)", s)
        if m:
            if m.group(1) == "NTPSynchronized":
                _set(t, "synchronized", _YES.get(m.group(2).lower()))
            elif m.group(1) == "NTP":
                _set(t, "service", m.group(2).lower())
            t.lines.append(s)
            continue
        m = re.fullmatch(r"(System clock synchronized|NTP synchronized|NTP service|Network time on|NTP enabled|"
                         r"systemd-timesyncd\.service active):\s*(\S+)", s, re.I)
        if m:
            key = m.group(1).lower()
            if key in ("system clock synchronized", "ntp synchronized"):
                _set(t, "synchronized", _YES.get(m.group(2).lower()))
            else:
                _set(t, "service", m.group(2).lower())
            t.lines.append(s)
            continue
        if re.match(r"^[A-Z][A-Za-z]+=", s) or re.match(r"^(Local time|Universal time|RTC time|Time zone|RTC in local TZ|"
                                                       r"DST active|Last DST change|Next DST change)\b", s):
            continue  # other properties / status lines: not what is judged
        if re.match(r"^(?:\[[^\]]*\]\s*)?(?:\S*[#$]\s*)?(?:sudo\s+)?timedatectl\b", s):
            continue
        t.problems.append(raw)
    return t


def parse_chronyc_tracking(text: str) -> TimeSync:
    """``chronyc tracking``: "Leap status : Normal" means synchronised; "Not synchronised" means
    not (chronyc(1)); "System time : X seconds fast|slow of NTP time" is the offset."""
    t = TimeSync(tool="chronyc")
    for raw in _lines(text):
        s = raw.strip()
        if not s:
            continue
        m = re.fullmatch(r"([A-Za-z ()]+?)\s*:\s*(.*)", s)
        if not m:
            if not re.match(r"^(?:\S*[#$]\s*)?(?:sudo\s+)?chronyc\b", s):
                t.problems.append(raw)
            continue
        key, value = m.group(1).strip(), m.group(2).strip()
        if key == "Leap status":
            _set(t, "leap", value)
            _set(t, "synchronized", {"normal": True, "insert second": True, "delete second": True,
                              "not synchronised": False, "not synchronized": False}.get(value.lower()))
            t.lines.append(s)
        elif key == "System time":
            om = re.match(r"^([0-9.]{1,20}) seconds (fast|slow) of NTP time", value)
            if om:
                try:
                    off = float(om.group(1))
                    _set(t, "offset_s", off if om.group(2) == "fast" else -off)
                except ValueError:
                    t.problems.append(raw)
            t.lines.append(s)
        elif key == "Reference ID":
            _set(t, "reference", value)
            t.lines.append(s)
        elif key not in ("Stratum", "Ref time (UTC)", "Last offset", "RMS offset", "Frequency", "Residual freq",
                         "Skew", "Root delay", "Root dispersion", "Update interval"):
            t.problems.append(raw)
    return t


# ------------------------------------------------------------------ fstab and mount options


@dataclass(frozen=True)
class FstabEntry:
    spec: str
    file: str
    vfstype: str
    options: list[str]
    line: str
    line_no: int

    @property
    def is_swap(self) -> bool:
        return self.vfstype == "swap"


def _unescape(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def parse_fstab(text: str) -> tuple[list[FstabEntry], list[str]]:
    """/etc/fstab (fstab(5): spec, file, vfstype, options, freq, passno; '#' comments) ->
    (entries, lines that are neither comments nor entries)."""
    entries: list[FstabEntry] = []
    problems: list[str] = []
    for i, raw in enumerate(_lines(text), 1):
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        s = s.split(" #", 1)[0].strip() if " #" in s else s
        parts = s.split()
        if len(parts) < 3:
            problems.append(raw)
            continue
        opts = parts[3].split(",") if len(parts) > 3 else ["defaults"]
        entries.append(FstabEntry(_unescape(parts[0]), _unescape(parts[1]), parts[2], opts, raw, i))
    return entries, problems


SWAP_OFF_MARK = "#bringup-swap-off# "
"""Prefix bringup puts on the swap lines it comments out, so the rollback un-comments exactly
those lines and keeps every later edit of the file."""


def comment_out_swap(text: str) -> tuple[str, list[str]]:
    """/etc/fstab text with every active swap entry commented out (prefixed with
    :data:`SWAP_OFF_MARK`; the common kubeadm practice is `sed -i '/ swap / s/^/#/' /etc/fstab`),
    other lines byte for byte as they were. Returns (new text, the lines that were commented out)."""
    if not isinstance(text, str):
        return "", []
    out: list[str] = []
    changed: list[str] = []
    for raw in text.splitlines(keepends=True):
        body = raw.rstrip("\r\n")
        s = body.strip()
        parts = s.split()
        if s and not s.startswith("#") and len(parts) >= 3 and parts[2] == "swap":
            out.append(SWAP_OFF_MARK + raw)
            changed.append(body)
        else:
            out.append(raw)
    return "".join(out), changed


def restore_swap(text: str) -> tuple[str, list[str]]:
    """Undo :func:`comment_out_swap` on the CURRENT file: lines bringup commented out get their
    mark removed; every other line (including edits made since) stays. Returns (new text, the
    lines restored)."""
    if not isinstance(text, str):
        return "", []
    out: list[str] = []
    restored: list[str] = []
    for raw in text.splitlines(keepends=True):
        if raw.startswith(SWAP_OFF_MARK):
            out.append(raw[len(SWAP_OFF_MARK):])
            restored.append(raw[len(SWAP_OFF_MARK):].rstrip("\r\n"))
        else:
            out.append(raw)
    return "".join(out), restored


BARRIER_OFF_OPTIONS = ("nobarrier", "barrier=0")
"""Mount options that turn off journal write barriers (kernel ext4 documentation, 'barrier=<0|1>'
and 'nobarrier'; ext4(5): safe only with a non-volatile write cache)."""


def barrier_off(options: list[str]) -> list[str]:
    """The barrier-disabling options among ``options`` (as written)."""
    return [o for o in options if o.strip().lower() in BARRIER_OFF_OPTIONS]


# ------------------------------------------------------------------ distribution support

@dataclass(frozen=True)
class SupportRow:
    kind: str
    branch: str
    distro_id: str
    version: str
    min_version: str
    name: str
    kernel: str
    source: str
    verification: str


def _vparts(v: str) -> list[int] | None:
    parts = re.findall(r"\d{1,6}", v or "")
    return [sat_int(p) for p in parts] if parts else None


def version_matches(row_version: str, version_id: str, min_version: str = "") -> bool:
    """Component-wise prefix match of os-release VERSION_ID against a table version ("9" matches
    "9.4", "22.04" matches "22.04" but not "22.10"), and at least ``min_version`` when given."""
    r, v = _vparts(row_version), _vparts(version_id)
    if r is None or v is None or len(v) < len(r) or v[:len(r)] != r:
        return False
    if min_version:
        mv = _vparts(min_version)
        if mv is not None and v < mv:
            return False
    return True


def support_rows() -> list[SupportRow]:
    """``assets/os_support.csv`` as rows (empty when the file is missing or unreadable)."""
    from wizard.data import table

    try:
        return [SupportRow(**{k: r.get(k, "") for k in SupportRow.__dataclass_fields__}) for r in table("os_support.csv")]
    except (OSError, ValueError, TypeError):
        return []


def branch_number(value: Any) -> str:
    """"R580" / "580" / 580 / "580-open" / "580.95.05" -> "580"; "" when not a branch."""
    if isinstance(value, bool):
        return ""
    if isinstance(value, int):
        return str(value) if 100 <= value <= 9999 else ""
    if not isinstance(value, str):
        return ""
    m = re.match(r"^\s*[Rr]?(\d{3,4})\b", value)
    return m.group(1) if m else ""


# ------------------------------------------------------------------ explain kinds

_MOKUTIL_LINE = lazy_re(r"^(?:>\s*)?(SecureBoot (?:enabled|disabled)|SecureBoot validation is disabled in shim|"
                           r"Platform is in Setup Mode|EFI variables are not supported on this system|"
                           r"This system doesn't support Secure Boot)\s*$", re.I)


def detect_mokutil(text: str) -> float:
    """Confidence that ``text`` is ``mokutil --sb-state`` output."""
    lines = [ln.strip() for ln in _lines(text) if ln.strip()][:50]
    if not lines:
        return 0.0
    hits = sum(1 for ln in lines if _MOKUTIL_LINE.match(ln))
    cmd = sum(1 for ln in lines if re.match(r"^(?:\S*[#$]\s*)?(?:sudo\s+)?mokutil\b", ln))
    if not hits:
        return 0.0
    return 0.95 if hits + cmd >= len(lines) else 0.5 * hits / len(lines)


def detect_dmidecode_memory(text: str) -> float:
    """Confidence that ``text`` is ``dmidecode -t 17`` (or whole dmidecode with memory devices)."""
    head = text[:200000] if isinstance(text, str) else ""
    t17 = len(re.findall(r"^Handle 0x[0-9A-Fa-f]{1,8}, DMI type 17,", head, re.M))
    md = len(re.findall(r"^Memory Device\s*$", head, re.M))
    size = len(re.findall(r"^\s+Size: ", head, re.M))
    if t17 or (md and size):
        return 0.97
    if re.search(r"^# dmidecode \d", head, re.M) or re.search(r"^Handle 0x[0-9A-Fa-f]{4}, DMI type \d", head, re.M):
        return 0.6
    return 0.0


def detect_timedatectl(text: str) -> float:
    """Confidence that ``text`` is ``timedatectl`` status or ``timedatectl show`` output."""
    lines = [ln.strip() for ln in _lines(text) if ln.strip()][:60]
    if not lines:
        return 0.0
    status = sum(1 for ln in lines if re.match(r"^(Local time|Universal time|RTC time|Time zone|System clock synchronized|"
                                               r"NTP synchronized|NTP service|RTC in local TZ|Network time on|NTP enabled|"
                                               r"systemd-timesyncd\.service active):", ln))
    show = sum(1 for ln in lines if re.match(r"^(Timezone|LocalRTC|CanNTP|NTP|NTPSynchronized|TimeUSec|RTCTimeUSec)=", ln))
    if any(re.match(r"^(System clock synchronized|NTP synchronized|NTPSynchronized=)", ln) for ln in lines):
        return 0.96 if max(status, show) >= 0.6 * len(lines) - 1 else 0.7
    if status >= 3 or show >= 2:
        return 0.8
    return 0.0


def detect_chronyc(text: str) -> float:
    """Confidence that ``text`` is ``chronyc tracking`` output."""
    lines = [ln.strip() for ln in _lines(text) if ln.strip()][:40]
    if not lines:
        return 0.0
    keys = sum(1 for ln in lines if re.match(r"^(Reference ID|Stratum|Ref time \(UTC\)|System time|Last offset|RMS offset|"
                                             r"Frequency|Residual freq|Skew|Root delay|Root dispersion|Update interval|"
                                             r"Leap status)\s*:", ln))
    if any(re.match(r"^Leap status\s*:", ln) for ln in lines) or keys >= 3:
        return 0.96 if keys >= 0.6 * len(lines) else 0.75
    return 0.0


_CPU_POWER_LINE = lazy_re(r"^/sys/devices/system/cpu/(?:cpu\d+/cpuidle/state\d+/\w+|cpuidle/\w+|"
                            r"cpufreq/policy\d+/\w+|cpufreq/boost|intel_pstate/\w+):")


def detect_cpu_power_tree(text: str) -> float:
    """Confidence that ``text`` is a ``grep . /sys/devices/system/cpu/...`` listing of cpuidle states
    and/or cpufreq policies (``path:value`` lines)."""
    lines = [ln for ln in _lines(text) if ln.strip()][:5000]
    if not lines:
        return 0.0
    hits = sum(1 for ln in lines if _CPU_POWER_LINE.match(ln))
    return 0.97 if hits >= 0.8 * len(lines) else (0.5 if hits >= 3 else 0.0)


def detect_fstab(text: str) -> float:
    """Confidence that ``text`` is /etc/fstab (or /proc/mounts: same six fields)."""
    lines = [ln for ln in _lines(text) if ln.strip()][:2000]
    if not lines:
        return 0.0
    fs = ("ext4", "xfs", "swap", "btrfs", "nfs", "nfs4", "vfat", "tmpfs", "proc", "sysfs", "devpts", "ext3", "zfs",
          "cgroup", "cgroup2", "devtmpfs", "overlay", "auto", "none")
    rows = 0
    for ln in lines:
        p = ln.split()
        if ln.lstrip().startswith("#"):
            continue
        if 4 <= len(p) <= 6 and p[2] in fs and (p[1].startswith("/") or p[1] in ("none", "swap")) and \
                all(x.isdigit() for x in p[4:6]):
            rows += 1
    comments = sum(1 for ln in lines if ln.lstrip().startswith("#"))
    if rows >= 2 and rows + comments >= 0.8 * len(lines):
        return 0.9
    if rows >= 1 and (rows + comments) == len(lines) and re.search(r"fstab", text[:2000]):
        return 0.85
    return 0.0


