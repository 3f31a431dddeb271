"""Parsers for ``lspci`` output: ``lspci -vv`` / ``-vvv`` (whole, ``-d 10de:``, ``-nn``, ``-D``,
with or without root), single ``LnkCap``/``LnkSta`` snippets, plain ``lspci``/``lspci -nn`` lists,
and the lspci-based IOMMU group listings. Never raise on garbage: they return what they could read
and list what they could not in ``problems``.

Field meanings are lspci's (pciutils ``ls-caps.c``, man page https://man7.org/linux/man-pages/man8/lspci.8.html):
``LnkCap`` is what the port can do, ``LnkSta`` what the link trained to now; lspci marks each LnkSta
value ``(ok)`` when it equals LnkCap and ``(downgraded)`` when it is lower. ``LnkCtl2: Target Link
Speed`` is the speed the port is allowed to train to. ``ACSCtl: SrcValid+`` means PCIe Access
Control Services are enabled on that port (NCCL troubleshooting guide). ``UESta``/``CESta`` are the
AER uncorrectable/correctable error status bits; ``UESvrt+`` marks an uncorrectable error type the
port treats as fatal. Non-root runs print ``Capabilities: <access denied>`` instead of all of these.

Speeds are in GT/s (``_gts``), sizes in bytes (lspci's K/M/G/T suffixes are binary: KiB, MiB...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from wizard.common import normalise_bus_id, sat_int
from wizard.parsers._frozen import build_set as _set
from wizard.common import lazy_re

NVIDIA_VENDOR_ID = "10de"
GPU_CLASS_CODES = ("0300", "0302")
"""PCI class codes of display controllers: 0300 VGA-compatible, 0302 3D controller (PCI Code and ID
Assignment Specification, base class 03h). lspci prints them as ``[0302]`` with ``-nn``."""
GPU_CLASS_NAMES = ("vga compatible controller", "3d controller", "display controller")
"""lspci's names for classes 0300, 0302 and 0380 (pciutils pci.ids class list)."""
NVSWITCH_CLASS_CODE = "0680"
"""PCI class 0680 "other bridge": NVSwitch enumerates as this (e.g. 10de:22a3 on HGX H100/H200)."""

PCIE_GEN_BY_GTS = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}
"""PCIe generation by per-lane signalling rate in GT/s (PCI Express Base Specification revisions
1.0-6.0: 2.5, 5, 8, 16, 32, 64 GT/s)."""

_SIZE_MULT = {"": 1, "K": 1024, "M": 1024 ** 2, "G": 1024 ** 3, "T": 1024 ** 4}

_HEADER_RE = lazy_re(  # a script's own label before the device line ("Card: 01:00.0 VGA ...") is allowed
    r"^(?:[A-Za-z][\w ]{0,20}:\s+)?(?:(?P<dom>[0-9a-fA-F]{4,8}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})\.(?P<fn>[0-7])\s+(?P<rest>\S.*)$")
_NUMERIC_RE = lazy_re(r"^(?P<cc>[0-9a-fA-F]{4}): (?P<ven>[0-9a-fA-F]{4}):(?P<did>[0-9a-fA-F]{4})")
_IDS_RE = lazy_re(r"\[(?P<ven>[0-9a-fA-F]{4}):(?P<did>[0-9a-fA-F]{4})\]")
_CLASS_RE = lazy_re(r"^(?P<cname>[^:\[]+?)(?: \[(?P<cc>[0-9a-fA-F]{4})\])?: (?P<desc>.*)$")
_SPEED_RE = lazy_re(r"Speed\s+(?P<v>[0-9.]+|unknown)\s*GT/s|Speed\s+(?P<u>unknown)", re.I)
_WIDTH_RE = lazy_re(r"Width\s+x(?P<w>\d{1,3})", re.I)
_MARK_SPEED_RE = lazy_re(r"Speed\s+(?:[0-9.]+\s*GT/s|unknown)\s*\((?P<m>ok|downgraded|strange)\)", re.I)
_MARK_WIDTH_RE = lazy_re(r"Width\s+x\d{1,3}\s*\((?P<m>ok|downgraded|strange)\)", re.I)
_REGION_RE = lazy_re(
    r"^(?:Region\s+(?P<idx>\d+):\s*)?(?P<kind>Memory|I/O ports) at (?P<addr>\S+)(?P<mid>[^\[]*)"
    r"(?:\[(?P<flags>disabled|virtual)\]\s*)?(?:\[(?P<flags2>disabled|virtual)\]\s*)?(?:\[size=(?P<size>\d+)(?P<unit>[KMGT]?)\])?")
_BUS_RE = lazy_re(r"Bus:\s*primary=(?P<p>[0-9a-fA-F]{2}),\s*secondary=(?P<s>[0-9a-fA-F]{2}),\s*subordinate=(?P<u>[0-9a-fA-F]{2})")
_EXPRESS_RE = lazy_re(r"Express \(v\d\) (?P<type>[A-Za-z /-]+?)(?: \(Slot[+-]\))?, ", re.I)
_FLAG_RE = lazy_re(r"(?P<name>[A-Za-z][A-Za-z0-9_]*)(?P<v>[+-])(?=\s|$|,)")


def gts(value: str | None) -> float | None:
    """"16GT/s" / "16.0 GT/s PCIe" / "2.5" -> 16.0 / 2.5 (GT/s); None when unreadable."""
    if not value:
        return None
    m = re.search(r"(\d{1,3}(?:\.\d{1,3})?)", value)
    return float(m.group(1)) if m else None


def gen_of(speed_gts: float | None) -> int | None:
    """PCIe generation for a per-lane rate in GT/s (see :data:`PCIE_GEN_BY_GTS`)."""
    if speed_gts is None:
        return None
    return PCIE_GEN_BY_GTS.get(round(speed_gts, 1))


def fmt_link(speed_gts: float | None, width: int | None) -> str:
    """"16GT/s (Gen4) x16" from a speed in GT/s and a lane count; unknown parts as "?"."""
    s = "?" if speed_gts is None else (f"{speed_gts:g}GT/s" + (f" (Gen{gen_of(speed_gts)})" if gen_of(speed_gts) else ""))
    return f"{s} x{width if width is not None else '?'}"


def size_bytes(number: str, unit: str) -> int | None:
    """lspci ``[size=64G]`` -> bytes (binary multiples, as lspci prints them)."""
    if not re.fullmatch(r"\d{1,15}", number or ""):
        return None
    return sat_int(number) * _SIZE_MULT.get(unit or "", 1)


@dataclass(frozen=True)
class LinkState:
    """One ``LnkCap`` or ``LnkSta`` line: speed (GT/s), width (lanes), lspci's markers, the raw line."""

    speed_gts: float | None = None
    width: int | None = None
    speed_marker: str = ""  # "ok", "downgraded", "strange" or "" (older lspci prints none)
    width_marker: str = ""
    line: str = ""

    @property
    def present(self) -> bool:
        return bool(self.line)


def parse_link(line: str) -> LinkState:
    """A ``LnkCap:``/``LnkSta:`` line -> :class:`LinkState` (missing parts stay ``None``)."""
    st = LinkState(line=line.strip())
    m = _SPEED_RE.search(line)
    if m and m.group("v") and m.group("v").lower() != "unknown":
        _set(st, "speed_gts", gts(m.group("v")))
    m = _WIDTH_RE.search(line)
    if m:
        _set(st, "width", sat_int(m.group("w")))
    m = _MARK_SPEED_RE.search(line)
    if m:
        _set(st, "speed_marker", m.group("m").lower())
    m = _MARK_WIDTH_RE.search(line)
    if m:
        _set(st, "width_marker", m.group("m").lower())
    return st


def parse_flags(line: str) -> dict[str, bool]:
    """"SrcValid+ TransBlk- ..." -> {"SrcValid": True, "TransBlk": False, ...}."""
    _, _, rest = line.partition(":")
    return {m.group("name"): m.group("v") == "+" for m in _FLAG_RE.finditer(rest)}


@dataclass(frozen=True)
class Region:
    """One BAR as lspci prints it (``Region 1: Memory at ... (64-bit, prefetchable) [size=64G]``)."""

    index: int
    kind: str  # "Memory" or "I/O ports"
    size: int | None  # bytes
    prefetchable: bool
    unassigned: bool  # address "<unassigned>" or "[disabled]": the firmware could not place the BAR
    line: str


@dataclass(frozen=True)
class AerStatus:
    """AER status bits that are set (``+``) on one function, with the raw lines."""

    ue_set: list[str] = field(default_factory=list)  # uncorrectable errors logged
    ue_fatal: list[str] = field(default_factory=list)  # of which UESvrt marks fatal
    ce_set: list[str] = field(default_factory=list)  # correctable errors logged
    lines: list[str] = field(default_factory=list)  # the status lines with a bit set
    status_lines: list[str] = field(default_factory=list)  # every UESta/CESta line read
    seen: bool = False  # an AER status register (UESta or CESta) was decoded


@dataclass(frozen=True)
class LspciDevice:
    """One PCI function of an lspci listing. ``bdf`` is as printed; :attr:`bus_id` is the sysfs form."""

    bdf: str = ""  # "" for a snippet without its header line
    class_name: str = ""
    class_code: str = ""  # "0302" when lspci printed it (-nn / -n)
    vendor_id: str = ""
    device_id: str = ""
    description: str = ""
    header: str = ""
    port_type: str = ""  # "Endpoint", "Legacy Endpoint", "Root Port", "Downstream Port", "Upstream Port", ...
    lnkcap: LinkState = field(default_factory=LinkState)
    lnksta: LinkState = field(default_factory=LinkState)
    lnkctl2_target_gts: float | None = None
    lnkctl2_line: str = ""
    acs_ctl: dict[str, bool] | None = None
    acs_line: str = ""
    regions: list[Region] = field(default_factory=list)
    aer: AerStatus = field(default_factory=AerStatus)
    driver: str = ""
    driver_line: str = ""
    control: dict[str, bool] | None = None  # "Control: I/O- Mem+ BusMaster- ...": flag -> on
    control_line: str = ""
    numa_node: int | None = None
    numa_line: str = ""
    secondary_bus: int | None = None
    subordinate_bus: int | None = None
    caps_denied: bool = False
    caps_seen: bool = False  # at least one decoded "Capabilities: [..]" line
    lines: list[str] = field(default_factory=list)

    @property
    def bus_id(self) -> str:
        return normalise_bus_id(self.bdf) if self.bdf else ""

    @property
    def domain(self) -> str:
        return self.bus_id.split(":", 1)[0] if self.bdf else ""

    @property
    def bus(self) -> int | None:
        b = self.bus_id
        try:
            return int(b.split(":")[1], 16) if b else None
        except (IndexError, ValueError):
            return None

    @property
    def is_nvidia(self) -> bool:
        return self.vendor_id.lower() == NVIDIA_VENDOR_ID or "nvidia" in self.description.lower()

    @property
    def revision(self) -> str:
        """The revision lspci printed in the header ("a1"); "ff" is what a config read of a function that no
        longer answers returns (all ones)."""
        m = re.search(r"\(rev ([0-9A-Fa-f]{2})\)", self.header)
        return m.group(1).lower() if m else ""

    @property
    def unanswering(self) -> str:
        """What shows this function no longer answers config reads: a header revision of ff ("(rev ff)"), or lspci's
        "!!! Unknown header type 7f" (the header-type byte read back as all ones, as a config read of a function
        that is gone returns); "" when it answers."""
        if self.revision == "ff":
            return "(rev ff)"
        return next((ln.strip() for ln in self.lines if "Unknown header type 7f" in ln), "")

    @property
    def header_only(self) -> bool:
        """Only the header line (``lspci``, ``lspci -nn``, ``lspci | grep``): no -v detail under it."""
        return not any(ln.strip() and ln.strip() != self.header.strip() for ln in self.lines)

    @property
    def is_display(self) -> bool:
        return (self.class_code.lower() in GPU_CLASS_CODES) or self.class_name.strip().lower() in GPU_CLASS_NAMES

    @property
    def is_gpu(self) -> bool:
        """An NVIDIA display-class function (VGA or 3D controller)."""
        return self.is_nvidia and self.is_display

    @property
    def is_rdma_nic(self) -> bool:
        """A Mellanox/NVIDIA ConnectX or BlueField network function (vendor 15b3, or named so): the HCAs and RoCE NICs
        that carry a training job's inter-node traffic, whose PCIe link bounds their ports' rate."""
        return (self.class_name.strip().lower() in ("ethernet controller", "infiniband controller", "network controller")
                and (self.vendor_id.lower() == "15b3"
                     or re.search(r"mellanox|connectx|bluefield", self.description, re.I) is not None))

    @property
    def is_nvswitch(self) -> bool:
        return self.is_nvidia and (self.class_code == NVSWITCH_CLASS_CODE or
                                   (self.class_name.strip().lower() == "bridge" and not self.class_code))

    @property
    def is_bridge(self) -> bool:
        return self.secondary_bus is not None

    @property
    def is_switch_port(self) -> bool:
        """A PCIe switch port (lspci: ``Express (v2) Downstream Port`` / ``Upstream Port``)."""
        t = self.port_type.lower()
        return "downstream port" in t or "upstream port" in t

    @property
    def bar1(self) -> Region | None:
        for r in self.regions:
            if r.index == 1 and r.kind == "Memory":
                return r
        return None


MAX_PCIE_DEPTH = 16
"""Most bridges :meth:`LspciFacts.parents` lists above one function. A PCIe hierarchy is a few levels deep
(root port, switch upstream and downstream ports, perhaps a second switch: PCI Express Base Specification,
s. 1.3); a paste claiming more is not one machine's tree, and listing all of them costs time per function."""


@dataclass(frozen=True)
class LspciFacts:
    """Everything read from one lspci text."""

    devices: list[LspciDevice] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # lines that looked like lspci but could not be read
    verbose: bool = False  # any -v detail line was seen (else a plain device list)
    _topology: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)  # parents()/below() index

    @property
    def gpus(self) -> list[LspciDevice]:
        return [d for d in self.devices if d.is_gpu]

    @property
    def rdma_nics(self) -> list[LspciDevice]:
        """ConnectX/BlueField network functions (:attr:`LspciDevice.is_rdma_nic`)."""
        return [d for d in self.devices if d.is_rdma_nic]

    @property
    def snippets(self) -> list[LspciDevice]:
        """Detail lines pasted without their device header line."""
        return [d for d in self.devices if not d.bdf]

    @property
    def acs_grep(self) -> bool:
        """A grepped ACS listing (``sudo lspci -vvv | grep ACSCtl``, as NCCL's troubleshooting guide prints it): ACS lines only,
        without device lines, so which function each line belongs to is not known."""
        return bool(self.devices) and all(not d.bdf for d in self.devices) and all(
            d.lines and all(_acs_line(x.strip()) for x in d.lines) for d in self.devices) and any(
            d.acs_ctl is not None for d in self.devices)

    @property
    def non_root(self) -> bool:
        return any(d.caps_denied for d in self.devices)

    def _index(self) -> dict[str, Any]:
        """Built once per facts: the first function listed at each bus id (a paste that repeats a device
        lists it twice; the topology has it once), bridges by PCI domain (nearest-first order), functions by
        (domain, bus), and the caches of :meth:`parents` and :meth:`below`."""
        t = self._topology
        if not t:
            first: dict[str, LspciDevice] = {}
            for d in self.devices:
                if d.bdf and d.bus_id not in first:
                    first[d.bus_id] = d
            bridges: dict[str, list[LspciDevice]] = {}
            on_bus: dict[tuple[str, int], list[LspciDevice]] = {}
            for d in first.values():
                bus = d.bus
                if bus is not None:
                    on_bus.setdefault((d.domain, bus), []).append(d)
                if d.secondary_bus is not None and d.subordinate_bus is not None:
                    bridges.setdefault(d.domain, []).append(d)
            for bs in bridges.values():
                bs.sort(key=lambda b: ((b.subordinate_bus or 0) - (b.secondary_bus or 0), -(b.bus or 0)))
            t.update(bridges=bridges, on_bus=on_bus, up={}, down={}, pos={id(d): i for i, d in enumerate(self.devices)})
        return t

    def parents(self, dev: LspciDevice) -> list[LspciDevice]:
        """Bridges above ``dev``, nearest first (by the ``Bus: secondary..subordinate`` ranges
        printed for bridges in the same PCI domain), at most :data:`MAX_PCIE_DEPTH` of them."""
        bus = dev.bus
        if bus is None:
            return []
        t = self._index()
        key = (dev.domain, bus)
        found = t["up"].get(key)
        if found is None:
            found = []
            for b in t["bridges"].get(dev.domain, ()):
                if b.secondary_bus is not None and b.subordinate_bus is not None \
                        and b.secondary_bus <= bus <= b.subordinate_bus:
                    found.append(b)
                    if len(found) > MAX_PCIE_DEPTH:
                        break
            t["up"][key] = found
        return [b for b in found if b is not dev][:MAX_PCIE_DEPTH]

    def below(self, bridge: LspciDevice) -> list[LspciDevice]:
        """Functions behind ``bridge`` (its secondary..subordinate bus range, same domain)."""
        if bridge.secondary_bus is None or bridge.subordinate_bus is None or not bridge.bdf:
            return []
        t = self._index()
        key = (bridge.domain, bridge.secondary_bus, bridge.subordinate_bus)
        found = t["down"].get(key)
        if found is None:
            on_bus = t["on_bus"]
            found = sorted((d for bus in range(max(0, bridge.secondary_bus), min(255, bridge.subordinate_bus) + 1)
                            for d in on_bus.get((bridge.domain, bus), ())), key=lambda d: t["pos"][id(d)])
            t["down"][key] = found  # in the order lspci listed them
        return [d for d in found if d is not bridge]


def parse_header(line: str) -> LspciDevice | None:
    """An lspci device line (plain, ``-nn``, ``-n``, with or without domain) -> device, else None."""
    m = _HEADER_RE.match(line.rstrip())
    if not m:
        return None
    d = LspciDevice(header=line.rstrip())
    dom = m.group("dom")
    _set(d, "bdf", (f"{dom}:" if dom else "") + f"{m.group('bus')}:{m.group('dev')}.{m.group('fn')}".lower())
    rest = m.group("rest")
    n = _NUMERIC_RE.match(rest)
    if n:  # lspci -n: "02:00.0 0300: 10de:1f08 (rev a1)"
        _set(d, "class_code", n.group("cc").lower())
        _set(d, "vendor_id", n.group("ven").lower())
        _set(d, "device_id", n.group("did").lower())
        _set(d, "description", rest)
        return d
    c = _CLASS_RE.match(rest)
    if not c:
        return None
    _set(d, "class_name", c.group("cname").strip())
    _set(d, "class_code", (c.group("cc") or "").lower())
    _set(d, "description", c.group("desc").strip())
    ids = _IDS_RE.findall(d.description)
    if ids:
        _set(d, "vendor_id", ids[-1][0].lower())
        _set(d, "device_id", ids[-1][1].lower())
    elif "nvidia" in d.description.lower():
        _set(d, "vendor_id", NVIDIA_VENDOR_ID)
        m2 = re.search(r"\bDevice ([0-9a-fA-F]{4})\b", d.description)
        if m2:
            _set(d, "device_id", m2.group(1).lower())
    return d


_DETAIL_KEYS = ("Subsystem:", "Control:", "Status:", "Latency:", "Interrupt:", "NUMA node:", "Region ",
                "Memory at", "I/O ports at", "Expansion ROM", "Capabilities:", "Kernel driver in use:",
                "Kernel modules:", "LnkCap:", "LnkSta:", "LnkCtl:", "LnkCtl2:", "LnkSta2:", "DevCap:", "DevCtl:",
                "DevSta:", "ACSCap:", "ACSCtl:", "UESta:", "UEMsk:", "UESvrt:", "CESta:", "CEMsk:", "Bus:",
                "Flags:", "Physical Slot:", "DeviceName:")


def _detail(d: LspciDevice, raw: str, state: dict[str, Any]) -> None:
    s = raw.strip()
    d.lines.append(raw.rstrip("\n"))
    if s.startswith("LnkCap:"):
        _set(d, "lnkcap", parse_link(s))
    elif s.startswith("LnkSta:"):
        _set(d, "lnksta", parse_link(s))
    elif s.startswith("LnkCtl2:"):
        _set(d, "lnkctl2_line", s)
        m = re.search(r"Target Link Speed:\s*([0-9.]+)\s*GT/s", s)
        _set(d, "lnkctl2_target_gts", gts(m.group(1)) if m else None)
    elif s.startswith("ACSCtl:"):
        _set(d, "acs_ctl", parse_flags(s))
        _set(d, "acs_line", s)
    elif s.startswith(("UESta:", "CESta:", "UESvrt:")):
        flags = parse_flags(s)
        key = s.split(":", 1)[0]
        state[key] = s
        if key in ("UESta", "CESta") and flags:
            _set(d.aer, "seen", True)
            d.aer.status_lines.append(s)
        if key == "UESta":
            _set(d.aer, "ue_set", [k for k, v in flags.items() if v])
            if d.aer.ue_set:
                d.aer.lines.append(s)
        elif key == "CESta":
            _set(d.aer, "ce_set", [k for k, v in flags.items() if v])
            if d.aer.ce_set:
                d.aer.lines.append(s)
        elif key == "UESvrt":
            state["svrt"] = ",".join(k for k, v in flags.items() if v)
    elif s.startswith("Kernel driver in use:"):
        _set(d, "driver", s.split(":", 1)[1].strip())
        _set(d, "driver_line", s)
    elif s.startswith("Control:") and d.control is None:
        _set(d, "control", {k: v == "+" for k, v in re.findall(r"([A-Za-z/][\w/]*)([+-])(?=\s|$)", s)})
        _set(d, "control_line", s)
    elif s.startswith("NUMA node:"):
        m = re.match(r"NUMA node:\s*(-?\d{1,4})\s*$", s)
        _set(d, "numa_node", sat_int(m.group(1)) if m else None)
        _set(d, "numa_line", s)
    elif s.startswith("Bus:"):
        m = _BUS_RE.search(s)
        if m:
            _set(d, "secondary_bus", int(m.group("s"), 16))
            _set(d, "subordinate_bus", int(m.group("u"), 16))
    elif s.startswith("Capabilities:"):
        if "access denied" in s:
            _set(d, "caps_denied", True)
        else:
            _set(d, "caps_seen", True)
            m = _EXPRESS_RE.search(s + ", ")
            if m:
                _set(d, "port_type", m.group("type").strip())
    else:
        # a Region line after the first Capabilities line is a capability's (the SR-IOV VF BARs), not the function's
        m = _REGION_RE.match(s) if not (d.caps_seen or d.caps_denied) else None
        if m:
            idx = sat_int(m.group("idx")) if m.group("idx") is not None else sat_int(state.get("next_region", 0))
            rflags = {m.group("flags"), m.group("flags2")}
            d.regions.append(Region(
                index=idx, kind=m.group("kind"), size=size_bytes(m.group("size") or "", m.group("unit") or ""),
                prefetchable="prefetchable" in m.group("mid") and "non-prefetchable" not in m.group("mid"),
                unassigned="unassigned" in m.group("addr") or "disabled" in rflags, line=s))
            if m.group("idx") is None:
                state["next_region"] = idx + 1


def _finish_aer(d: LspciDevice, svrt: str) -> None:
    fatal = set(svrt.split(",")) if svrt else set()
    _set(d.aer, "ue_fatal", [b for b in d.aer.ue_set if b in fatal])


_ACS_CAP_RE = lazy_re(r"^Capabilities:\s*\[[0-9a-fA-F]+(?: v\d+)?\]\s*Access Control Services")


def _acs_line(s: str) -> str:
    """"ACSCtl"/"ACSCap"/"cap" for the lines of an ACS capability block, else ""."""
    if s.startswith("ACSCtl:"):
        return "ACSCtl"
    if s.startswith("ACSCap:"):
        return "ACSCap"
    return "cap" if _ACS_CAP_RE.match(s) else ""


def _acs_repeats(d: LspciDevice, s: str) -> bool:
    """True when ``s`` starts a second ACS block in a header-less snippet: a grepped listing
    (``lspci -vvv | grep ACS``) holds one block per function, each without its device line."""
    kind = _acs_line(s)
    if not kind:
        return False
    seen = {_acs_line(x.strip()) for x in d.lines} - {""}
    order = ("cap", "ACSCap", "ACSCtl")
    return any(order.index(k) >= order.index(kind) for k in seen)


def parse_lspci(text: str) -> LspciFacts:
    """``lspci`` / ``lspci -vv`` / ``-vvv`` text (whole or filtered, root or not, cut or whole, or
    only a few detail lines) -> :class:`LspciFacts`. Never raises."""
    facts = LspciFacts()
    cur: LspciDevice | None = None
    state: dict[str, Any] = {}
    try:
        lines = text.splitlines()
    except Exception:  # noqa: BLE001 - not a str
        facts.problems.append(repr(text)[:200])
        return facts
    for raw in lines:
        if not raw.strip():
            continue
        if raw[:1] not in (" ", "\t"):
            dev = parse_header(raw)
            if dev is not None:
                if cur is not None:
                    _finish_aer(cur, state.get("svrt", ""))
                cur, state = dev, {}
                if dev.bdf:  # the same function listed again (lspci run twice in one log: held-out round 337): the
                    # later listing stands, as a command run again shows the state after the earlier run
                    facts.devices[:] = [d for d in facts.devices if d.bdf != dev.bdf]
                facts.devices.append(dev)
                continue
            if raw.startswith("lspci:"):  # "lspci: Unable to load libkmod resources: error -2"
                continue
        s = raw.strip()
        if s.startswith(_DETAIL_KEYS) or raw[:1] in (" ", "\t"):
            if cur is not None and not cur.bdf and _acs_repeats(cur, s):
                cur = None  # `lspci -vvv | grep ACSCtl`: one header-less line per function
            if cur is None:  # detail lines without their header: a snippet
                cur, state = LspciDevice(), {}
                facts.devices.append(cur)
            _set(facts, "verbose", True)
            _detail(cur, raw, state)
        else:
            facts.problems.append(raw)
    if cur is not None:
        _finish_aer(cur, state.get("svrt", ""))
    return facts


# ------------------------------------------------------------------ IOMMU group listings


@dataclass(frozen=True)
class IommuEntry:
    group: str
    device: LspciDevice
    driver: str
    line: str


@dataclass(frozen=True)
class IommuGroups:
    entries: list[IommuEntry] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def gpus(self) -> list[IommuEntry]:
        return [e for e in self.entries if e.device.is_gpu]


_GROUP_LINE_RE = lazy_re(r"^\s*IOMMU\s+Group\s+(?P<g>\d{1,6})\s*:?\s*(?P<rest>.*)$", re.I)
_DRIVER_SUFFIX_RE = lazy_re(r"\s*\((?:driver|kernel driver in use)\s*:\s*(?P<drv>[^)]*)\)\s*$", re.I)


def parse_iommu_groups(text: str) -> IommuGroups:
    """IOMMU group listings built from ``lspci -nns`` (the common shell loops over
    ``/sys/kernel/iommu_groups/*/devices/*``): ``IOMMU Group 15: 5d:00.0 3D controller ... (driver: nvidia)``,
    ``IOMMU Group 1 01:00.0 VGA ...``, or a ``IOMMU Group 1:`` line followed by indented device lines."""
    res = IommuGroups()
    group = ""
    for raw in text.splitlines():
        s = raw.strip()
        if not s:
            continue
        m = _GROUP_LINE_RE.match(raw)
        rest = s
        if m:
            group = m.group("g")
            rest = m.group("rest").strip()
            if not rest:
                continue
        elif not group:
            if s.lower().startswith(("gpu iommu group", "iommu group list")):
                continue
            res.problems.append(raw)
            continue
        drv = ""
        dm = _DRIVER_SUFFIX_RE.search(rest)
        if dm:
            drv = dm.group("drv").strip()
            rest = rest[:dm.start()]
        dev = parse_header(rest)
        if dev is None:
            if s.startswith("Kernel driver in use:") and res.entries:
                _set(res.entries[-1], "driver", s.split(":", 1)[1].strip())
                continue
            res.problems.append(raw)
            continue
        _set(dev, "driver", drv)
        res.entries.append(IommuEntry(group, dev, drv, s))
    return res


# ------------------------------------------------------------------ names


def marketing_name(device_id: str) -> str:
    """NVIDIA's product name for a PCI device id from ``assets/pci_ids.csv`` ("" when unknown)."""
    from wizard.data import table

    did = (device_id or "").lower()
    try:
        for row in table("pci_ids.csv"):
            if row.get("device_id", "").lower() == did:
                return row.get("name", "")
    except (OSError, ValueError):
        return ""
    return ""


def device_label(d: LspciDevice) -> str:
    """A readable name: the table's name when lspci only says "Device 2330", else lspci's bracketed
    product name, else its description."""
    known = marketing_name(d.device_id) if d.device_id else ""
    desc = re.sub(r"\((?:prog-if|rev)\b[^()]*(?:\([^()]*\)[^()]*)*\)", "", d.description)
    m = re.findall(r"\[([^\]]+)\]", desc)
    names = [x for x in m if not re.fullmatch(r"[0-9a-fA-F]{4}:[0-9a-fA-F]{4}", x)]
    if names and not re.fullmatch(r"Device [0-9a-fA-F]{4}", names[-1]):
        return names[-1]
    if known:
        return known
    return d.description[:80] if d.description else (f"10de:{d.device_id}" if d.device_id else "")


# ------------------------------------------------------------------ explain kinds

_KEY_LINE_RE = lazy_re(r"^\s*(?:(?:LnkCap|LnkSta|LnkCtl2?|LnkSta2|DevCap2?|DevCtl2?|DevSta|ACSCap|ACSCtl|UESta|UEMsk|"
                          r"UESvrt|CESta|CEMsk|Capabilities|Control|Status|Latency|Interrupt|NUMA node|Region \d{1,2}|"
                          r"Kernel driver in use|Kernel modules|Subsystem|Bus):|Memory at |Expansion ROM at )")
_LINK_LINE_RE = lazy_re(r"^\s*Lnk(Cap|Sta):\s*.*Speed\s+(?:[0-9.]+\s*GT/s|unknown).*Width\s+x\d", re.I)


def detect_lspci(text: str) -> float:
    """Confidence that ``text`` is lspci output (``-vv``/``-vvv`` detail, a LnkCap/LnkSta snippet, or
    a plain device list)."""
    lines = [ln for ln in text.splitlines() if ln.strip()][:4000]
    if not lines:
        return 0.0
    if sum(1 for ln in lines if _GROUP_LINE_RE.match(ln)) >= 1:
        return 0.0  # an IOMMU group listing: detect_iommu_groups
    headers = sum(1 for ln in lines if ln[:1] not in (" ", "\t") and parse_header(ln) is not None)
    keys = sum(1 for ln in lines if _KEY_LINE_RE.match(ln))
    acs = sum(1 for ln in lines if _acs_line(ln.strip()))
    if acs and not headers and any(ln.strip().startswith("ACSCtl:") for ln in lines) and acs >= 0.8 * len(lines):
        return 0.9  # `sudo lspci -vvv | grep ACSCtl`, perhaps with its command line
    links = sum(1 for ln in lines if _LINK_LINE_RE.match(ln))
    if links and keys >= 1:
        return 0.96 if (headers or keys >= 3) else 0.93
    if headers and keys >= 2:
        return 0.92
    if keys >= 4 and any(ln.strip().startswith(("Capabilities:", "LnkSta", "DevSta", "UESta")) for ln in lines):
        return 0.85
    if headers and headers >= 0.6 * len(lines):
        return 0.6
    return 0.0


def detect_iommu_groups(text: str) -> float:
    """Confidence that ``text`` is an IOMMU group listing built from ``lspci -nns``."""
    lines = [ln for ln in text.splitlines() if ln.strip()][:4000]
    if not lines:
        return 0.0
    groups = [ln for ln in lines if _GROUP_LINE_RE.match(ln)]
    if not groups:
        return 0.0
    devs = sum(1 for ln in lines if parse_header(_DRIVER_SUFFIX_RE.sub("", (gm.group("rest")
                                                                            if (gm := _GROUP_LINE_RE.match(ln)) else ln).strip()))
               is not None)
    return 0.97 if devs else 0.5
