"""InfiniBand / RoCE port status as operators paste it: ``ibstat``, ``ibv_devinfo`` and ``ibstatus``.

One dataclass of ports (:class:`IbPort`) whatever printed them, so a live probe of ``ibstat``,
``ibv_devinfo`` or ``/sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer}`` (whose values
are ``ibstatus``'s, e.g. ``4: ACTIVE``, ``5: LinkUp``, ``400 Gb/sec (4X NDR)``) can reuse it.
Pure functions; they never raise (an unreadable input gives no ports).

Formats (linux-rdma/rdma-core: infiniband-diags ``ibstat.c``, ``ibstatus``; libibverbs ``devinfo.c``):

- ``ibstat``: ``CA 'mlx5_0'`` then ``Port N:`` with ``State: Active|Down|Initializing|Armed``,
  ``Physical state: LinkUp|Polling|Disabled|...``, ``Rate: 400``, ``Link layer: InfiniBand|Ethernet``.
- ``ibv_devinfo``: ``hca_id: mlx5_0`` then ``port: N`` with ``state: PORT_ACTIVE (4)``,
  ``active_mtu: 4096 (5)``, ``link_layer: Ethernet`` (no rate; ``phys_state`` only with ``-v``).
- ``ibstatus``: ``Infiniband device 'mlx5_0' port 1 status:`` with ``state: 4: ACTIVE``,
  ``phys state: 5: LinkUp``, ``rate: 200 Gb/sec (4X HDR)``, ``link_layer: InfiniBand``.
- ``rdma link`` (iproute2, man rdma-link(8)): one line per port, ``link mlx5_0/1 [subnet_prefix … lid N sm_lid N
  lmc N] state ACTIVE physical_state LINK_UP [netdev ib0]`` (no rate, no link layer; ``lid`` only on InfiniBand).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from wizard.parsers._frozen import build_set as _set

from wizard.common import to_float, sat_int
from wizard.i18n import Msg
from wizard.common import lazy_re

# logical port states (IBA PortInfo:PortState; ibv_port_state): one spelling for all three tools
STATES = {
    "active": "active", "port_active": "active", "4": "active", "active_defer": "active", "port_active_defer": "active",
    "down": "down", "port_down": "down", "1": "down",
    "initializing": "init", "init": "init", "port_init": "init", "2": "init",
    "armed": "armed", "port_armed": "armed", "3": "armed",
}
# physical port states (IBA PortInfo:PortPhysicalState)
PHYS_STATES = {
    "linkup": "linkup", "link_up": "linkup", "5": "linkup",
    "polling": "polling", "2": "polling",
    "disabled": "disabled", "3": "disabled",
    "sleep": "sleep", "1": "sleep",
    "portconfigurationtraining": "training", "port_configuration_training": "training", "4": "training",
    "linkerrorrecovery": "recovery", "link_error_recovery": "recovery", "6": "recovery",
    "phytest": "phytest", "phy_test": "phytest", "7": "phytest",
}


@dataclass(frozen=True)
class IbPort:
    """One HCA port: ``ca`` (``mlx5_0``), ``port`` number, ``state`` (active / down / init / armed, "" when not
    shown), ``phys_state`` (linkup / polling / disabled / sleep / training / recovery, "" when not shown),
    ``rate_gbit_s`` (None when not shown), ``link_layer`` ("InfiniBand" / "Ethernet" / ""), ``active_mtu``,
    ``base_lid`` as printed, ``model``: the adapter's device id as ibstat's "CA type" prints it ("MT4129",
    ConnectX-7; ibv_devinfo's ``vendor_part_id: 4129`` read the same; "" when not shown), and the raw lines that
    said so (evidence)."""

    ca: str
    port: int
    state: str = ""
    phys_state: str = ""
    rate_gbit_s: float | None = None
    link_layer: str = ""
    active_mtu: int | None = None
    base_lid: str = ""
    state_raw: str = ""
    model: str = ""
    lines: tuple[str, ...] = ()


@dataclass(frozen=True)
class IbPorts:
    """The ports one output lists (``tool``: ibstat / ibv_devinfo / ibstatus / "" when unknown), tool error lines
    (``ibpanic``, ``Failed to ...``, ``No IB devices found``) in ``errors``, and what could not be read."""

    tool: str = ""
    ports: list[IbPort] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    devices: list[tuple[str, str, str]] = field(default_factory=list)
    """``ibv_devices``' table (tool "ibv_devices"): each RDMA device's name, node GUID (16 hex digits) and line; its
    header lines in ``errors`` stay empty (an empty table is the tool listing no device)."""
    header: tuple[str, ...] = ()
    """``ibv_devices``' header lines ("device  node GUID", "------  ----------------")."""


_IBSTAT_CA = lazy_re(r"^\s*CA '([^']+)'\s*$")
_IBSTAT_PORT = lazy_re(r"^\s*Port (\d+):\s*$")
_KV = lazy_re(r"^\s*([A-Za-z_][A-Za-z _]*?)\s*:\s*(.*?)\s*$")
_DEVINFO_HCA = lazy_re(r"^\s*hca_id:\s*(\S+)\s*$")
_DEVINFO_PORT = lazy_re(r"^\s*port:\s*(\d+)\s*$")
_IBSTATUS_HEAD = lazy_re(r"^\s*Infiniband device '([^']+)' port (\d+) status:\s*$", re.I)
_ERROR = lazy_re(r"^\s*(ibpanic:.*|ibwarn:.*fail.*|Failed to .*|No IB devices found.*|ibstat: .*error.*|"
                    r".*stat of IB device .* failed.*|Fatal error:\s+device '[^']*': sys files not found.*|"
                    r"Fatal error:\s+No devices\s*)$", re.I)
NO_DEVICE = lazy_re(r"No IB devices found|Fatal error:\s+device '\*': sys files not found|Fatal error:\s+No devices\s*$|"
                    r"Failed to get IB devices list", re.I)
"""The tools' own words for "the kernel lists no RDMA device": ``ibv_devinfo``/``ibstat`` print "No IB devices
found"; ``ibstatus`` (a script over /sys/class/infiniband) prints "Fatal error:  device '*': sys files not found
(/sys/class/infiniband/*/ports)" when no device directory exists, and "Fatal error:  No devices" in its older form;
``ibv_devinfo`` prints "Failed to get IB devices list: Function not implemented" when the kernel's verbs interface
(ib_uverbs, /sys/class/infiniband_verbs) is not there (rdma-core, libibverbs/examples/devinfo.c)."""
_NO_DEVICE_PASTE = lazy_re(r"(?:[^\n]*[#$] \S[^\n]*|[ \t]*(?:ibv_devinfo|ibstat|ibstatus)(?: -\S+)*[ \t]*|"
                           r"[ \t]*libibverbs: Warning: [^\n]*|[ \t]*No IB devices found\.?[ \t]*|"
                           r"[ \t]*Failed to get IB devices list[^\n]*|[ \t]*Fatal error:\s+No devices[ \t]*|"
                           r"[ \t]*\S*ibstatus: \d+: exit: Illegal number[^\n]*|[ \t]*)(?:\n|$)")
"""A line of a paste of the RDMA tools finding no device: a prompt or the bare command, libibverbs' warning (no
provider directory /etc/libibverbs.d: rdma-core's providers are not installed), the tools' no-device words, and
ibstatus's shell error after them."""
_RATE = lazy_re(r"^\s*([0-9]+(?:\.[0-9]+)?)")


def _state(raw: str) -> str:
    v = raw.strip()
    m = re.match(r"^(\d+)\s*:\s*(\S+)", v)  # ibstatus / sysfs "4: ACTIVE"
    if m:
        return STATES.get(m.group(2).lower(), STATES.get(m.group(1), ""))
    m = re.match(r"^(\S+)", v)
    return STATES.get(m.group(1).lower(), "") if m else ""


def _phys(raw: str) -> str:
    v = raw.strip()
    m = re.match(r"^(\d+)\s*:\s*(\S+)", v)
    if m:
        return PHYS_STATES.get(m.group(2).lower(), PHYS_STATES.get(m.group(1), ""))
    m = re.match(r"^(\S+)", v)
    return PHYS_STATES.get(m.group(1).lower(), "") if m else ""


def _rate(raw: str) -> float | None:
    m = _RATE.match(raw)
    return to_float(m.group(1)) if m else None


def _mtu(raw: str) -> int | None:
    m = re.match(r"^\s*(\d+)", raw)
    return sat_int(m.group(1)) if m else None


def _layer(raw: str) -> str:
    v = raw.strip().lower()
    return "InfiniBand" if v.startswith("infiniband") else "Ethernet" if v.startswith("ethernet") else ""


class _Builder:
    def __init__(self) -> None:
        self.ports: list[IbPort] = []
        self.cur: dict[str, object] | None = None

    def start(self, ca: str, port: int, line: str) -> None:
        self.flush()
        self.cur = {"ca": ca, "port": port, "lines": [line.strip()]}

    def set(self, key: str, value: object, line: str) -> None:
        if self.cur is None:
            return
        self.cur[key] = value
        lines = self.cur["lines"]
        if isinstance(lines, list):
            lines.append(line.strip())

    def note(self, line: str) -> None:
        """Keep ``line`` as the current port's evidence without setting a field."""
        lines = self.cur.get("lines") if self.cur is not None else None
        if isinstance(lines, list):
            lines.append(line.strip())

    def flush(self) -> None:
        c = self.cur
        if c is not None:
            lines = c.pop("lines")
            self.ports.append(IbPort(lines=tuple(lines) if isinstance(lines, list) else (), **c))  # type: ignore[arg-type]
        self.cur = None


_IBSTATUS_GREP = lazy_re(r"^[ \t]*phys state:[ \t]+\d: \w+[ \t]*\n[ \t]*rate:[ \t]+\d+(?:\.\d+)? Gb/sec", re.M)
"""ibstatus' "phys state:" line followed by its "rate:" line (a grep of it, the device header lines left out)."""
_IBV_DEVICES_HEAD = lazy_re(r"^[ \t]*device[ \t]+node GUID[ \t]*\n[ \t]*-{4,}[ \t]+-{8,}[ \t]*$", re.M)
"""``ibv_devices``' two header lines (libibverbs' examples/devices.c prints them, then one row per device)."""
_IBV_DEVICES_ROW = lazy_re(r"^[ \t]*([\w.-]+)[ \t]+([0-9a-fA-F]{16})[ \t]*$")


def _ibv_devices(text: str) -> IbPorts | None:
    """``ibv_devices`` (its header, then "name  GUID" rows up to the first other line), else None."""
    m = _IBV_DEVICES_HEAD.search(text[:200_000])
    if not m:
        return None
    rows: list[tuple[str, str, str]] = []
    for raw in text[m.end():].splitlines()[1:2000]:
        r = _IBV_DEVICES_ROW.match(raw)
        if not r:
            if raw.strip():
                break
            continue
        rows.append((r.group(1), r.group(2).lower(), raw.strip()))
    return IbPorts(tool="ibv_devices", devices=rows, header=tuple(x.strip() for x in m.group(0).splitlines()))


def parse_ib_ports(text: str) -> IbPorts:
    """Read ``ibstat``, ``ibv_devinfo``, ``ibstatus`` or ``ibv_devices`` output (or several of the first three pasted
    together). Never raises."""
    try:
        if (devs := _ibv_devices(text)) is not None and not _IBSTAT_CA.search(text) and not _DEVINFO_HCA.search(text):
            return devs
        return _parse(text)
    except Exception as e:  # noqa: BLE001 - a parser never raises: say what went wrong instead
        return IbPorts(problems=[f"could not read the port list: {type(e).__name__}"])


def _parse(text: str) -> IbPorts:
    errors: list[str] = []
    problems: list[str] = []
    declared: dict[str, int] = {}  # ibstat's "Number of ports: N" per CA
    models: dict[str, str] = {}  # ibstat's "CA type: MT4129" / ibv_devinfo's "vendor_part_id: 4129" per CA
    b = _Builder()
    ca = ""
    tools: list[str] = []
    lanes: int | None = None  # ibv_devinfo -v's active_width of the port being read
    grepped = bool(_IBSTATUS_GREP.search(text)) and not re.search(r"^[ \t]*Infiniband device '", text, re.M | re.I)
    for raw in text.splitlines():
        if _ERROR.match(raw):
            errors.append(raw.strip())
            continue
        m = _IBSTAT_CA.match(raw)
        if m:
            b.flush()
            ca = m.group(1)
            tools.append("ibstat")
            continue
        m = _DEVINFO_HCA.match(raw)
        if m:
            b.flush()
            ca = m.group(1)
            tools.append("ibv_devinfo")
            continue
        m = _IBSTATUS_HEAD.match(raw)
        if m:
            tools.append("ibstatus")
            b.start(m.group(1), sat_int(m.group(2)), raw)
            continue
        m = _IBSTAT_PORT.match(raw) or _DEVINFO_PORT.match(raw)
        if m and (ca or _IBSTAT_PORT.match(raw) or re.search(r"^[ \t]*(?:phys_state|active_mtu|link_layer):", text, re.M)):
            # an ibv_devinfo excerpt (its port lines: phys_state, or active_mtu/link_layer when cut before it)
            if not ca and not tools and _DEVINFO_PORT.match(raw):
                tools.append("ibv_devinfo")
            b.start(ca or "?", sat_int(m.group(1)), raw)  # "?": an excerpt that left out its CA line
            lanes = None
            continue
        kv = _KV.match(raw)
        if kv and ca and b.cur is None and kv.group(1).strip().lower() == "number of ports":
            nm = re.match(r"\d{1,3}$", kv.group(2).strip())
            if nm:
                declared[ca] = sat_int(nm.group(0))
            continue
        if kv and ca and b.cur is None and kv.group(1).strip().lower() in ("ca type", "vendor_part_id"):
            mm = re.match(r"(?:MT)?(\d{3,6})$", kv.group(2).strip())
            if mm:
                models[ca] = "MT" + mm.group(1)
            continue
        if (kv and grepped and not ca and kv.group(1).strip().lower() == "phys state"
                and (b.cur is None or "phys_state" in b.cur)):
            # `ibstatus | grep -A1 'phys state'`: blocks of "phys state:" and "rate:" without their device header lines
            # (held-out round 287): each "phys state:" starts a port of an unnamed device, numbered in order
            b.start("?", len(b.ports) + (b.cur is not None) + 1, raw)
            b.cur["lines"] = []  # type: ignore[index]  # the line is kept below, as the port's phys state
            if "ibstatus" not in tools:
                tools.append("ibstatus")
        if not kv or b.cur is None:
            continue
        key, value = kv.group(1).strip().lower().replace(" ", "_"), kv.group(2)
        if key == "state":
            b.cur["state_raw"] = value.strip()
            b.set("state", _state(value), raw)
        elif key in ("physical_state", "phys_state"):
            b.set("phys_state", _phys(value), raw)
        elif key == "rate":
            b.set("rate_gbit_s", _rate(value), raw)
            if _rate(value) is None and value.strip():
                problems.append(f"{b.cur.get('ca')} port {b.cur.get('port')}: Rate {value.strip()[:40]!r} could not "
                                "be read as a rate")
        elif key == "active_width":  # ibv_devinfo -v: "4X (2)", then active_speed "25.0 Gbps (32)" per lane
            wm = re.match(r"\s*(\d{1,2})X\b", value)
            lanes = sat_int(wm.group(1)) if wm else None
            b.note(raw)
        elif key == "active_speed":
            sm = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)\s*Gbps", value)
            per_lane = to_float(sm.group(1)) if sm else None
            if lanes and per_lane and b.cur.get("rate_gbit_s") is None:
                # the port's rate = lanes x per-lane speed (libibverbs ibv_query_port: active_width, active_speed;
                # FDR's 14.0625 Gb/s lanes print as 14.0), as ibstat's Rate shows it (4X EDR: 100)
                b.set("rate_gbit_s", round(lanes * per_lane), raw)
            else:
                b.note(raw)
        elif key == "link_layer":
            b.set("link_layer", _layer(value), raw)
        elif key == "active_mtu":
            b.set("active_mtu", _mtu(value), raw)
        elif key == "base_lid":
            if b.cur is not None:
                b.cur["base_lid"] = value.strip()
    b.flush()
    # `grep . /sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer}`: one "path:value" line per attribute,
    # values as ibstatus prints them ("4: ACTIVE", "5: LinkUp", "100 Gb/sec (4X EDR)")
    sysfs: dict[tuple[str, int], dict[str, object]] = {}
    sysfs_lines: dict[tuple[str, int], list[str]] = {}
    origin: dict[tuple[str, int], str] = {}  # where a port not in ibstat-style blocks came from: sysfs or `rdma link`
    for raw in text.splitlines():
        m = _SYSFS_PORT.match(raw.strip())
        if not m:
            continue
        key = (m.group(1), sat_int(m.group(2)) or 0)
        port = sysfs.setdefault(key, {})
        sysfs_lines.setdefault(key, []).append(raw.strip())
        attr, value = m.group(3), m.group(4)
        if attr == "state":
            port["state_raw"], port["state"] = value.strip(), _state(value)
        elif attr == "phys_state":
            port["phys_state"] = _phys(value)
        elif attr == "rate":
            port["rate_gbit_s"] = _rate(value)
        elif attr == "link_layer":
            port["link_layer"] = _layer(value)
    for raw in text.splitlines():
        m = _RDMA_LINK.match(raw)
        if not m:
            continue
        words = m.group(3).split()
        fields = dict(zip(words[::2], words[1::2]))
        attrs: dict[str, object] = {"state_raw": fields.get("state", ""), "state": _state(fields.get("state", ""))}
        attrs["phys_state"] = _phys(fields.get("physical_state", ""))
        if "lid" in fields or "subnet_prefix" in fields:  # only InfiniBand ports have a LID and subnet prefix
            attrs["link_layer"] = "InfiniBand"
        if "lid" in fields:
            attrs["base_lid"] = fields["lid"]
        key = (m.group(1), sat_int(m.group(2)) or 0)
        sysfs.setdefault(key, attrs)
        sysfs_lines.setdefault(key, []).append(raw.strip())
        origin[key] = "rdma link"
    for raw in text.splitlines():  # Mellanox/NVIDIA ibdev2netdev: "mlx5_0 port 1 ==> ib0 (Up)"
        m = _IBDEV2NETDEV.match(raw)
        if not m:
            continue
        key = (m.group(1), sat_int(m.group(2)) or 0)
        # the netdev's state (operstate), not the port's own: an IPoIB or RoCE netdev has carrier only on an Active
        # port, so Up reads as active and Down as down; ibstat says the port's state and rate
        own = m.group("port_state")  # -v: the port's own state, which the netdev's follows
        attrs = {"state_raw": f"{own} (netdev {m.group(4)} {m.group(5)})" if own else f"{m.group(5)} (netdev {m.group(4)})",
                 "state": own.lower() if own else "active" if m.group(5) == "Up" else "down"}
        layer = _NETDEV_LAYER.match(m.group(4))
        if layer:  # the netdev's name tells the port's link layer: an IPoIB netdev for InfiniBand, an Ethernet one else
            attrs["link_layer"] = "InfiniBand" if layer.group(1) else "Ethernet"
        sysfs.setdefault(key, attrs)
        sysfs_lines.setdefault(key, []).append(raw.strip())
        origin[key] = "ibdev2netdev"
    have = {(x.ca, x.port) for x in b.ports}
    for (ca, pn), attrs in sysfs.items():
        if (ca, pn) not in have:
            b.ports.append(IbPort(ca=ca, port=pn, lines=tuple(sysfs_lines[(ca, pn)]), **attrs))  # type: ignore[arg-type]
            tools.append(origin.get((ca, pn), "sysfs"))
    ports = [replace(x, model=models.get(x.ca, "")) for x in b.ports
             if x.ca != "?" or x.state or x.phys_state]  # a CA-less "Port N:" must show its state
    for x in ports:
        # ibstat prints each port's "Link layer:" last: a block without it was cut
        if x.lines and _IBSTAT_PORT.match(x.lines[0]) and not any(ln.lower().startswith("link layer") for ln in x.lines):
            problems.append(Msg("{ca} port {port}: its block ends before ibstat's 'Link layer' line (the output is "
                                "cut), so what follows it is not known", ca=x.ca, port=x.port))
        elif x.lines and _IBSTAT_PORT.match(x.lines[0]) and not x.state:
            problems.append(Msg("{ca} port {port}: no State could be read", ca=x.ca, port=x.port))
    for c, count in declared.items():
        got = sum(1 for x in ports if x.ca == c)
        if got < count:
            problems.append(Msg("CA '{ca}' has {count} ports (its 'Number of ports'), this output shows {got}: the "
                                "others are cut off", ca=c, count=count, got=got))

    return IbPorts("+".join(dict.fromkeys(tools)) or ("ibstat" if ports else ""), ports, errors, problems)


_NETDEV_LAYER = lazy_re(r"^(?:(ib)\w*|(?:en|eth)\w*)$")
"""The link layer a netdev's name gives: the kernel's IPoIB driver names its netdevs ib0, ibp24s0, ibs108 (``ib``
prefix, systemd's predictable names for InfiniBand); an RDMA port on Ethernet (RoCE) has an Ethernet netdev (eth0,
enp41s0f0np0). systemd.net-naming-scheme(7): the "ib" and "en" prefixes."""


# iproute2 `rdma link [show]`: "link mlx5_0/1 ... state ACTIVE physical_state LINK_UP netdev ib0"
# (iproute2 before 4.19 printed "0/1: mlx5_0/1: state ..." with no "link" word)
_RDMA_LINK = lazy_re(r"^\s*(?:\d+/\d+:\s*(?:link\s+)?|link\s+)([\w.-]+)/(\d+):?\s+(.*?\bstate\s+\S+.*)$")
# NVIDIA (Mellanox) OFED's ibdev2netdev: "mlx5_0 port 1 ==> ibs108 (Down)" (the RDMA device, its port, its netdev and
# the netdev's state; MLNX_OFED user manual, ibdev2netdev)
_IBDEV2NETDEV = lazy_re(r"^\s*(?:[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]\s+)?([\w.-]+)(?:\s+\(.*?)?"
                        r" port (\d+)(?: \((?P<port_state>[A-Z_]+)\s*\))? ==> (\S+) \((Up|Down)\)\s*$")
"""ibdev2netdev's line; with -v the PCI address, the adapter's part number, name and firmware come first and the RDMA
port's own state follows the port ("port 1 (ACTIVE) ==> ib0 (Up)")."""
_SYSFS_PORT = lazy_re(r"^/sys/class/infiniband/([\w.-]+)/ports/(\d+)/(state|phys_state|rate|link_layer):(.*)$")


def detect_ib_ports(text: str) -> float:
    """Confidence that ``text`` is ``ibstat`` / ``ibv_devinfo`` / ``ibstatus`` / ``ibv_devices`` output."""
    head = text[:200_000]
    if _IBV_DEVICES_HEAD.search(head):
        return 0.9
    if re.search(r"^[ \t]*CA '[^']+'\s*$", head, re.M) and re.search(r"^[ \t]*(Physical state|State|CA type):", head, re.M):
        return 0.95
    if re.search(r"^[ \t]*hca_id:\s*\S+", head, re.M) and re.search(r"^[ \t]*(state:\s*PORT_|transport:|phys_port_cnt:)",
                                                                   head, re.M):
        return 0.95
    if re.search(r"^[ \t]*Infiniband device '[^']+' port \d+ status:", head, re.M | re.I):
        return 0.95
    if len(_IBSTATUS_GREP.findall(head)) >= 2:  # ibstatus grepped to its phys state / rate lines
        return 0.85
    if re.search(r"^/sys/class/infiniband/[\w.-]+/ports/\d+/state:", head, re.M):  # grep . of the sysfs attributes
        return 0.9
    if re.search(r"^[ \t]*Fatal error:\s+device '[^']*': sys files not found", head, re.M):  # ibstatus, no device
        return 0.9
    if len(head) < 2000 and NO_DEVICE.search(head) and all(_NO_DEVICE_PASTE.fullmatch(ln + "\n")
                                                            for ln in head.splitlines()):
        return 0.7  # ibv_devinfo / ibstat / ibstatus finding no device, alone with its prompt and libibverbs' warning
    if " physical_state " in head and any(" physical_state " in ln and _RDMA_LINK.match(ln) for ln in head.splitlines()):
        return 0.9  # iproute2 `rdma link`
    if " ==> " in head:  # ibdev2netdev: nearly every line one RDMA port and its netdev
        body = [ln for ln in head.splitlines() if ln.strip()]
        hits = sum(1 for ln in body if _IBDEV2NETDEV.match(ln))
        if hits and hits >= 0.8 * len(body):
            return 0.9
    # an ibv_devinfo -v excerpt cut to a port block ("port: 1" then its state: PORT_ / phys_state: lines), hca_id left out
    if (re.search(r"^[ \t]*port:\s*\d+\s*$", head, re.M) and re.search(r"^[ \t]*state:\s*PORT_\w+", head, re.M)
            and re.search(r"^[ \t]*(?:phys_state|link_layer|active_mtu):\s*\w+", head, re.M)):
        return 0.8  # (cut before phys_state too: held-out round 356)
    # an ibstat excerpt cut to a port block ("Port 1:" then its State / Physical state lines), the CA line left out
    if (re.search(r"^[ \t]*Port \d+:\s*$", head, re.M) and re.search(r"^[ \t]*State:\s*(Active|Down|Initializing|Armed)\b", head, re.M)
            and re.search(r"^[ \t]*Physical state:\s*(LinkUp|Polling|Disabled|Sleep|PortConfigurationTraining|LinkErrorRecovery)", head, re.M)):
        return 0.8
    return 0.0


# ------------------------------------------------------------------ perfquery (IB port counters)

_PQ_LINE = lazy_re(r"^\s*([A-Za-z][A-Za-z0-9]+):\.{2,}\s*(\S+)\s*$")
_PQ_HEAD = lazy_re(r"^#\s*Port(?:RcvErrorDetails|XmitDiscardDetails|\w*)? ?(extended )?counters:\s*(?:Lid\s+(\d+))?\s*"
                      r"(?:port\s+(\d+|all))?", re.I | re.M)


@dataclass(frozen=True)
class PortCounters:
    """``perfquery`` / ``perfquery -x`` of one port: counter name -> value (None where it is not a number), the
    ``# Port counters: Lid N port M`` header and every line read (evidence)."""

    counters: dict[str, int | None] = field(default_factory=dict)
    lid: str = ""
    port: str = ""
    extended: bool = False
    lines: list[str] = field(default_factory=list)
    header: str = ""


_PM_HEAD = lazy_re(r"^Port=(\d+)\s+Lid=(0x[0-9a-fA-F]+|\d+)\b")
_PM_LINE = lazy_re(r"^([a-z][a-z0-9_]+)=(0x[0-9a-fA-F]+|\d+)\s*$")
_PM_NAMES = {"port_xmit_discard": "PortXmitDiscards", "port_rcv_remote_physical_errors": "PortRcvRemotePhysicalErrors",
             "local_link_integrity_errors": "LocalLinkIntegrityErrors", "excessive_buffer_overrun_errors":
             "ExcessiveBufferOverrunErrors", "vl15_dropped": "VL15Dropped", "port_xmit_wait": "PortXmitWait"}
"""ibdiagnet2.pm counter names whose perfquery name is not their CamelCase."""


def _pm_name(snake: str) -> str:
    """``symbol_error_counter_extended`` -> ``SymbolErrorCounter`` (the perfquery name of an ibdiagnet2.pm counter)."""
    base = re.sub(r"_extended$", "", snake)
    return _PM_NAMES.get(base) or "".join(w.capitalize() for w in base.split("_"))


_SYSFS_COUNTER_NAMES = {
    "symbol_error": "SymbolErrorCounter", "link_error_recovery": "LinkErrorRecoveryCounter",
    "link_downed": "LinkDownedCounter", "port_rcv_errors": "PortRcvErrors",
    "port_rcv_remote_physical_errors": "PortRcvRemotePhysicalErrors",
    "port_rcv_switch_relay_errors": "PortRcvSwitchRelayErrors", "port_xmit_discards": "PortXmitDiscards",
    "port_xmit_constraint_errors": "PortXmitConstraintErrors", "port_rcv_constraint_errors": "PortRcvConstraintErrors",
    "local_link_integrity_errors": "LocalLinkIntegrityErrors",
    "excessive_buffer_overrun_errors": "ExcessiveBufferOverrunErrors", "VL15_dropped": "VL15Dropped",
    "port_xmit_wait": "PortXmitWait", "port_xmit_data": "PortXmitData", "port_rcv_data": "PortRcvData",
    "port_xmit_packets": "PortXmitPkts", "port_rcv_packets": "PortRcvPkts",
    "unicast_xmit_packets": "PortUnicastXmitPkts", "unicast_rcv_packets": "PortUnicastRcvPkts",
    "multicast_xmit_packets": "PortMulticastXmitPkts", "multicast_rcv_packets": "PortMulticastRcvPkts"}
"""The kernel's per-port counter files (/sys/class/infiniband/DEV/ports/N/counters/NAME; Linux
Documentation/ABI/stable/sysfs-class-infiniband) under their perfquery names (InfiniBand Architecture Specification
Vol. 1, PortCounters)."""
HW_COUNTERS = frozenset({
    "local_ack_timeout_err", "out_of_sequence", "packet_seq_err", "implied_nak_seq_err", "duplicate_request",
    "rnr_nak_retry_err", "req_cqe_error", "resp_cqe_error", "req_cqe_flush_error", "resp_cqe_flush_error",
    "req_remote_access_errors", "req_remote_invalid_request", "resp_remote_access_errors", "resp_local_length_error",
    "out_of_buffer", "rx_icrc_encapsulated", "np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled",
    "rp_cnp_ignored", "roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart", "roce_slow_restart_cnps",
    "roce_slow_restart_trans"})
"""The RDMA device's own per-port counters (/sys/class/infiniband/DEV/ports/N/hw_counters/NAME: mlx5's transport
retries, sequence errors, completion errors and RoCE congestion notifications; Linux drivers/infiniband/hw/mlx5/
counters.c), read under their own names."""
_SYSFS_BANNER = lazy_re(r"^=+\s*(?:\S*/)?([A-Za-z][A-Za-z0-9_]*)\s*=+$")


def parse_sysfs_counters(text: str) -> list[PortCounters]:
    """The kernel's IB port counter files as people paste them: ``for f in *; do echo "=== ./$f ==="; cat $f; done``
    in a port's counters directory (a banner line, then the value), or ``grep . /sys/class/infiniband/*/ports/*/
    counters/*`` (``PATH:value``, one port block per device and port). Names read as perfquery's
    (:data:`_SYSFS_COUNTER_NAMES`); never raises."""
    blocks: dict[tuple[str, str], PortCounters] = {}
    pending = ""
    for raw in text.splitlines()[:20000]:
        s = raw.strip()
        if not s:
            continue
        b = _SYSFS_BANNER.match(s)
        if b:
            pending = b.group(1) if b.group(1) in _SYSFS_COUNTER_NAMES else ""
            continue
        m = re.match(r"^/sys/class/infiniband/([\w.-]+)/ports/(\d+)/(hw_)?counters/([A-Za-z][A-Za-z0-9_]*):\s*(\d+)\s*$",
                     s)
        if m and (m.group(4) in _SYSFS_COUNTER_NAMES or m.group(3) and m.group(4) in HW_COUNTERS):
            blk = blocks.setdefault((m.group(1), m.group(2)), PortCounters(port=m.group(2),
                                                                           header=f"{m.group(1)} port {m.group(2)}"))
            blk.counters[m.group(4) if m.group(3) else _SYSFS_COUNTER_NAMES[m.group(4)]] = sat_int(m.group(5))
            blk.lines.append(s)
            continue
        if pending and re.fullmatch(r"\d{1,40}", s):
            blk = blocks.setdefault(("", ""), PortCounters())
            blk.counters[_SYSFS_COUNTER_NAMES[pending]] = sat_int(s)
            blk.lines.append(f"{pending}: {s}")
        pending = ""
    return [b for b in blocks.values() if b.counters]


def parse_perfquery(text: str) -> list[PortCounters]:
    """Every port block of ``perfquery [-x]`` output (a block starts at its ``# Port counters`` header; a paste
    without one is one block), and of ibdiagnet's ``ibdiagnet2.pm`` (``Port=2 Lid=0x0599 ...`` then
    ``symbol_error_counter_extended=0xff`` lines, read under the perfquery names). Values are decimal or 0x hex;
    never raises."""
    blocks: list[PortCounters] = []
    cur: PortCounters | None = None
    for raw in text.splitlines()[:20000]:
        s = raw.strip()
        h = _PQ_HEAD.match(s)
        if h:
            cur = PortCounters(lid=h.group(2) or "", port=h.group(3) or "", extended=bool(h.group(1)), header=s)
            blocks.append(cur)
            continue
        pm = _PM_HEAD.match(s)
        if pm:
            lid = str(int(pm.group(2), 16)) if pm.group(2).lower().startswith("0x") else pm.group(2)
            cur = PortCounters(lid=lid, port=pm.group(1), extended=True, header=s)
            blocks.append(cur)
            continue
        p2 = _PM_LINE.match(s)
        if p2 and cur is not None and cur.header.startswith("Port="):
            pv = p2.group(2)
            cur.counters[_pm_name(p2.group(1))] = (int(pv[:20], 16) if pv.lower().startswith("0x") else
                                                   int(pv) if len(pv) < 20 else None)
            cur.lines.append(s)
            continue
        m = _PQ_LINE.match(s)
        if not m:
            continue
        if cur is None:
            cur = PortCounters()
            blocks.append(cur)
        name, raw_v = m.group(1), m.group(2)
        try:
            v: int | None = int(raw_v, 16) if raw_v.lower().startswith("0x") else sat_int(raw_v) if len(raw_v) < 40 else None
        except ValueError:
            v = None
        cur.counters[name] = v
        cur.lines.append(s)
    return [b for b in blocks if b.counters] or parse_sysfs_counters(text)


def detect_perfquery(text: str) -> float:
    """0.95 for perfquery output: ``Name:......value`` lines that include the IB port counters; 0.9 for the kernel's
    counter files pasted (:func:`parse_sysfs_counters`)."""
    if re.search(r"^Port=\d+\s+Lid=", text, re.M) and re.search(r"^(?:symbol_error_counter|port_rcv_errors|"
                                                                 r"link_downed_counter)\w*=", text, re.M):
        return 0.95  # ibdiagnet2.pm
    if "PortXmitData" not in text and "SymbolErrorCounter" not in text and not _PQ_HEAD.search(text):
        if "link_downed" in text or "symbol_error" in text or "/hw_counters/" in text:  # the kernel's files, parsed once
            return 0.9 if sum(len(b.counters) for b in parse_sysfs_counters(text[:200_000])) >= 5 else 0.0
        return 0.0
    lines = [ln for ln in text.splitlines()[:400] if ln.strip()]
    dotted = sum(1 for ln in lines if _PQ_LINE.match(ln))
    return 0.95 if dotted >= 5 and dotted >= 0.7 * len(lines) else 0.0


# ------------------------------------------------------------------ perftest (ib_write_bw, ib_read_bw, ib_send_bw)

_PT_TITLE = lazy_re(r"^[ \t]*(RDMA_Write|RDMA_Read|Send|Atomic)(?: [A-Z][A-Za-z]*(?: [A-Z][A-Za-z]*)?)? BW Test\s*$", re.M)
"""perftest's banner: "RDMA_Write BW Test", also with a variant's words before "BW Test" ("RDMA_Write Post List BW
Test" with --post_list)."""
_PT_COLS = lazy_re(r"#bytes\s+#iterations\s+BW peak\[(MB/sec|MiB/sec|Gb/sec|MB/s)\]\s+BW average\[(MB/sec|MiB/sec|Gb/sec|MB/s)\]",
                      re.I)
_PT_ROW = lazy_re(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)(?:\s+([\d.]+))?(?:\s+[\d.]+){0,3}\s*$")
_PT_LAT_TITLE = lazy_re(r"^[ \t]*(RDMA_Write|RDMA_Read|Send|Atomic) Latency Test\s*$", re.M)
_PT_LAT_COLS = lazy_re(r"#bytes\s+#iterations\s+t_min\[usec\]\s+t_max\[usec\]\s+t_typical\[usec\]")
_PT_LAT_ROW = lazy_re(r"^\s*(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)(?:\s+[\d.]+){0,4}\s*$")
"""perftest's latency tests (ib_send_lat, ib_write_lat, ...): "Send Latency Test", then ``#bytes #iterations
t_min[usec] t_max[usec] t_typical[usec] t_avg[usec] t_stdev[usec] 99% percentile[usec] 99.9% percentile[usec]``
(linux-rdma/perftest src/perftest_parameters.h REPORT_FMT_LAT)."""
_PT_PARAMS = lazy_re(r"^\s*Number of qps\s*:\s*\d+\s+Transport type\s*:", re.M)
"""perftest's parameter block under its banner: "Number of qps : N<tab>Transport type : IB" (linux-rdma/perftest
src/perftest_parameters.c ctx_print_test_info)."""
_PT_FIELD = lazy_re(r"\b(Device|Link type|Transport type|Mtu)\s*:\s*(\S+(?:\[B\])?)")


PERFTEST_MB_BYTES = 0x100000
"""Bytes per second in perftest's "MB/sec" column: 2^20, not 10^6. linux-rdma/perftest src/perftest_parameters.c
(commit 00b55b6, line 4766): ``format_factor = (user_param->report_fmt == MBS) ? 0x100000 : 125000000;`` - the
bandwidth is bytes / 0x100000 in MB/sec, or bytes / 125,000,000 (10^9 bits) in Gb/sec (``--report_gbits``)."""


@dataclass(frozen=True)
class PerftestRun:
    """perftest bandwidth output: the test (RDMA_Write...), device, link type, and per message size the average
    bandwidth in Gb/s (converted from perftest's MB/sec, which is 2^20 bytes/s: :data:`PERFTEST_MB_BYTES`) with the row
    it came from."""

    test: str = ""
    device: str = ""
    link_type: str = ""
    rows: list[tuple[int, float, str]] = field(default_factory=list)  # (bytes, average Gb/s, line)
    lat_rows: list[tuple[int, float, str]] = field(default_factory=list)  # latency tests: (bytes, t_typical µs, line)
    title_line: str = ""
    mtu: int | None = None  # the path MTU perftest used, bytes ("Mtu : 1024[B]")
    errors: list[tuple[str, str]] = field(default_factory=list)  # (class of PT_ERRORS, line)
    waiting: bool = False


PT_ERRORS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("no_device", lazy_re(r"Did not detect devices|If device exists, check if driver is up|No IB devices found|"
                             r"IB device \S+ not found|Unable to find the Infiniband/RoCE device|"
                             r"Failed to get IB devices list|Couldn't get device list")),
    ("context", lazy_re(r"Couldn't get context for the device|Couldn't open IB device|Couldn't allocate context")),
    ("port_down", lazy_re(r"Port number \d+ state is \w+|Link layer on port \d+ is Unknown|Unable to query port")),
    ("gpu_init", lazy_re(r"Couldn't init GPU context")),
    ("qp_create", lazy_re(r"Unable to create QP|Failed to create QP|Couldn't create rdma (?:old|new) QP")),
    ("qp_modify", lazy_re(r"Failed to modify QP(?: \d+)? to (?:INIT|RTR|RTS)")),
    ("cq_pd", lazy_re(r"Couldn't create (?:a receiver )?CQ|Couldn't allocate PD|Couldn't create SRQ|"
                         r"Failed to create CQs")),
    ("socket", lazy_re(r"Unable to init the socket connection|Couldn't connect to \S+|Unable to connect \(retries|"
                          r"Couldn't listen to port|Failed to bind socket|"
                          r"Failed to exchange data between server and clients|Couldn't (?:send local|read remote) address")),
    ("rdma_cm", lazy_re(r"RDMA CM event error|Failed to (?:create|connect|handle|get|resolve|bind|listen|accept)\b"
                           r"[^\n]{0,40}RDMA CM")),
    ("completion", lazy_re(r"Completion with error at (?:client|server)|Failed status\b.{0,80}\bwr_id")),
    ("post", lazy_re(r"Couldn't post (?:send|recv)|Problems with warm up")),
    ("resources", lazy_re(r"Couldn't create IB resources")),
)
"""perftest's error lines by what failed, in the order a run meets them (linux-rdma/perftest commit 00b55b6:
src/perftest_resources.c ctx_find_dev "Did not detect devices" / "IB device %s not found", create_qp_main "Unable to
create QP.", ctx_init "Failed to create QP.", ctx_connect "Failed to modify QP %d to RTR"; src/perftest_parameters.c
"Port number %d state is %s"; src/perftest_communication.c "Couldn't connect to %s:%d"; src/*_bw.c / *_lat.c
"Unable to init the socket connection", "Couldn't create IB resources"; ethernet_read_keys "Couldn't read remote
address"; src/perftest_resources.h "Completion with
error at client|server" then "Failed status <ibv_wc_status_str> (N): wr_id ..."). The memory-region failures are
:data:`PT_MR_FAILED`."""

_PT_WAITING = lazy_re(r"^\s*\*\s*Waiting for client to connect\.\.\.\s*\*\s*$")


def parse_perftest(text: str) -> PerftestRun:
    """perftest output (see :class:`PerftestRun`): the test banner, device and link type, the result rows, the
    server's "Waiting for client to connect" banner and the error lines of :data:`PT_ERRORS`. Never raises."""
    t = _PT_TITLE.search(text) or _PT_LAT_TITLE.search(text)
    r = PerftestRun(test=t.group(1) if t else "", title_line=t.group(0).strip() if t else "")
    unit = ""
    lat = False
    for raw in text.splitlines()[:20000]:
        if _PT_WAITING.match(raw):
            _set(r, "waiting", True)
            continue
        err = next((k for k, rx in PT_ERRORS if rx.search(raw)), "") if len(raw) < 2000 else ""
        if err:
            r.errors.append((err, raw.strip()))
            continue
        for k, v in _PT_FIELD.findall(raw):
            if k == "Device" and not r.device:
                _set(r, "device", v)
            elif k == "Link type" and not r.link_type:
                _set(r, "link_type", v)
            elif k == "Mtu" and r.mtu is None and (mm := re.match(r"(\d{1,6})(?!\d)", v)):
                _set(r, "mtu", int(mm.group(1)))
        c = _PT_COLS.search(raw)
        if c:
            unit = c.group(2).lower()
            continue
        if _PT_LAT_COLS.search(raw):
            lat = True
            continue
        lm = _PT_LAT_ROW.match(raw) if lat else None
        if lm:
            typical = to_float(lm.group(5))
            if typical is not None:
                r.lat_rows.append((sat_int(lm.group(1)), typical, raw.strip()))
            continue
        m = _PT_ROW.match(raw)
        if m and unit:
            avg = to_float(m.group(4))
            if avg is None:
                continue
            gbit = avg if unit.startswith("gb") else avg * PERFTEST_MB_BYTES * 8 / 1e9
            r.rows.append((sat_int(m.group(1)), gbit, raw.strip()))
    return r


@dataclass(frozen=True)
class RdmaPair:
    """One pair of the ``multinode.rdma_pairs`` log (:mod:`wizard.rdma_pairs`): ``client`` wrote to ``server``;
    ``ports`` as the header says them (``mlx5_0 port 1 -> mlx5_1 port 1``), ``line_rate_gbit_s`` the slower port's
    rate (None: unknown), each side's output without its ``[NODE client]`` / ``[NODE server]`` prefix, ``error`` the
    ``failed:`` line's reason ("" when it ran), ``done`` when its ``done:`` line was printed, and the header line."""

    client: str
    server: str
    ports: str = ""
    line_rate_gbit_s: float | None = None
    client_text: str = ""
    server_text: str = ""
    error: str = ""
    done: bool = False
    header: str = ""


_RP_HEAD = lazy_re(r"^# pair (\S+) -> (\S+): (.*), line rate (?:([\d.]+) Gb/s|unknown)\s*$")
_RP_END = lazy_re(r"^# pair (\S+) -> (\S+) (done|failed): (.*)$")


def parse_rdma_pairs(text: str) -> list[RdmaPair]:
    """The pairs of a ``multinode.rdma_pairs`` log, in the order they ran (see :class:`RdmaPair`). Never raises."""
    pairs: list[RdmaPair] = []
    cur: dict[str, object] | None = None
    client: list[str] = []
    server: list[str] = []

    def close() -> None:
        if cur is not None:
            pairs.append(RdmaPair(client_text="\n".join(client), server_text="\n".join(server), **cur))  # type: ignore[arg-type]

    for raw in text.splitlines()[:200000]:
        line = raw.rstrip("\r")
        m = _RP_HEAD.match(line)
        if m:
            close()
            cur = {"client": m.group(1), "server": m.group(2), "ports": m.group(3),
                   "line_rate_gbit_s": to_float(m.group(4), positive=True) if m.group(4) else None, "header": line}
            client, server = [], []
            continue
        if cur is None:
            continue
        m = _RP_END.match(line)
        if m and (m.group(1), m.group(2)) == (cur["client"], cur["server"]):
            if m.group(3) == "done":
                cur["done"] = True
            else:
                cur["error"] = m.group(4).strip()
            continue
        for side, sink in (("client", client), ("server", server)):
            node = cur[side]
            pre = f"[{node} {side}]"
            if line.startswith(pre):
                sink.append(line[len(pre) + 1:] if line[len(pre):len(pre) + 1] == " " else line[len(pre):])
    close()
    return pairs


PT_MR_FAILED = lazy_re(r"Couldn't allocate MR|[Ff]ailed to create MR|Couldn't create (?:MR|memory region)|"
                          r"ibv_reg_(?:dmabuf_)?mr failed", re.I)
"""perftest could not register its buffer as an RDMA memory region."""


_PT_OWN_ERRORS = lazy_re(r"Couldn't create IB resources|Unable to init the socket connection|Did not detect devices"
                            r"|Unable to find the Infiniband/RoCE device|Failed to modify QP \d+ to RTR"
                            r"|Completion with error at (?:client|server)|Couldn't get context for the device")
"""Error lines only perftest prints: enough on their own to call an output perftest's."""


_PT_CHEAP = ("ib_", "initializing CUDA", "Waiting for client", "Couldn't", "Unable to", "Did not detect", "Failed to",
             "Completion with error")
"""Words one of :func:`detect_perftest`'s later tests needs (a command, the server banner, or an error line)."""


def detect_perftest(text: str) -> float:
    """0.95 for perftest's bandwidth tests (``ib_write_bw`` / ``ib_read_bw`` / ``ib_send_bw``): the test banner and
    its ``#bytes #iterations BW peak[...] BW average[...]`` header; 0.9 for that header and its rows alone (the
    banner cut from the paste); 0.9 for a perftest run that stopped at its memory
    registration (``ib_write_bw ... --use_cuda`` then "Couldn't allocate MR"), for the banner and its parameter block
    with no table (cut, or the run stopped before it), for the server's "Waiting for client to connect..." banner, for an error line only perftest prints ("Couldn't create IB resources", "Unable to init the
    socket connection", ...) and for any :data:`PT_ERRORS` line next to an ``ib_*_bw`` / ``ib_*_lat`` command."""
    if "BW Test" in text and "#bytes" in text and _PT_TITLE.search(text) and _PT_COLS.search(text):
        return 0.95
    if "#bytes" in text and _PT_COLS.search(text) and any(_PT_ROW.match(ln) for ln in text.splitlines()[:2000]):
        return 0.9  # the result table without its banner (a paste cut to the numbers): its header is perftest's own
    if "#bytes" in text and _PT_LAT_COLS.search(text):
        return 0.9  # a latency test's table (ib_send_lat, ib_write_lat): its header is perftest's own
    if ("Test" in text and "Number of qps" in text and (_PT_TITLE.search(text) or _PT_LAT_TITLE.search(text))
            and _PT_PARAMS.search(text)):
        return 0.9  # the banner and its parameter block with no table yet (cut, or the run never got that far)
    if not any(t in text for t in _PT_CHEAP):  # cheap first: each test below needs one of these words
        return 0.0
    cmd = re.search(r"\bib_(?:write|read|send|atomic)_(?:bw|lat)\b", text)
    if (cmd or re.search(r"initializing CUDA", text)) and PT_MR_FAILED.search(text):
        return 0.9
    if re.search(r"^[ \t]*\*[ \t]*Waiting for client to connect\.\.\.[ \t]*\*[ \t]*$", text, re.M):
        return 0.9
    if _PT_OWN_ERRORS.search(text):
        return 0.9
    if cmd and any(rx.search(text) for _, rx in PT_ERRORS):
        return 0.9
    return 0.0


# ------------------------------------------------------------------ ip addr / ip link (iproute2)


@dataclass(frozen=True)
class NetIface:
    """One interface of ``ip addr`` / ``ip link`` (iproute2, ip-address(8)): ``name``, the ``<FLAGS>`` (UP: set up by
    the administrator; LOWER_UP: the link has carrier; NO-CARRIER), ``state`` (the operstate: UP, DOWN, UNKNOWN),
    ``mtu`` (bytes), ``link`` (``ether``, ``infiniband``, ``loopback``, ...), its IPv4/IPv6 addresses (global scope
    and link-local alike), and the lines it was read from."""

    name: str
    flags: tuple[str, ...]
    state: str
    mtu: int | None
    link: str = ""
    addrs: tuple[str, ...] = ()
    lines: tuple[str, ...] = ()

    @property
    def up(self) -> bool:
        """Set up and with carrier (``UP`` and ``LOWER_UP`` among its flags)."""
        return "UP" in self.flags and "LOWER_UP" in self.flags


_IP_HEAD = lazy_re(r"^(\d+):\s+(\S+?)(?:@\S+)?:\s+<([A-Z0-9_,-]*)>\s+mtu\s+(\d+).*?\bstate\s+(\S+)")


def parse_ip_addr(text: str) -> list[NetIface]:
    """The interfaces of an ``ip addr`` (``ip a``, ``ip addr show``) or ``ip link`` output, in order. Never raises."""
    out: list[NetIface] = []
    addrs: list[str] = []
    lines: list[str] = []

    def close() -> None:
        if out:
            out[-1] = NetIface(out[-1].name, out[-1].flags, out[-1].state, out[-1].mtu, out[-1].link, tuple(addrs),
                               tuple(lines))

    for raw in text.splitlines():
        m = _IP_HEAD.match(raw.strip())
        if m:
            close()
            addrs, lines = [], [raw.rstrip()]
            out.append(NetIface(m.group(2), tuple(f for f in m.group(3).split(",") if f), m.group(5), sat_int(m.group(4))))
            continue
        if not out:
            continue
        s = raw.strip()
        lm = re.match(r"link/(\S+)", s)
        if lm and not out[-1].link:
            out[-1] = NetIface(out[-1].name, out[-1].flags, out[-1].state, out[-1].mtu, lm.group(1))
        am = re.match(r"inet6?\s+(\S+)", s)
        if am:
            addrs.append(am.group(1))
        if lm or am:
            lines.append(raw.rstrip())
    close()
    return out


def detect_ip_addr(text: str) -> float:
    """0.9 for ``ip addr`` / ``ip link`` output: interface header lines ("2: eth0: <BROADCAST,...> mtu 1500 ... state
    UP") with their ``link/`` lines."""
    if "mtu" not in text or "link/" not in text:
        return 0.0
    heads = sum(1 for ln in text.splitlines()[:2000] if _IP_HEAD.match(ln.strip()))
    return 0.9 if heads else 0.0


@dataclass(frozen=True)
class IbLink:
    """One port line of ``iblinkinfo`` (infiniband-diags, iblinkinfo(8)): the node it is on (``node``: a CA's or a
    switch's name as the block header prints it, ``switch``: True under a "Switch:" header), the local ``port``, the
    link's ``width`` ("4X", "" when down), ``lane_gbps`` (the per-lane signalling rate iblinkinfo prints, Gb/s: 25.78125
    EDR, 53.125 HDR, 106.25 NDR), ``state`` / ``phys`` ("Active"/"LinkUp", "Down"/"Polling"...), the ``peer``
    (the remote node's name, "" when nothing is attached), ``could_be`` (iblinkinfo's "( Could be ... )" note: both
    ends support more than the link runs at) and the line."""

    node: str
    switch: bool
    port: int
    width: str
    lane_gbps: float | None
    state: str
    phys: str
    peer: str
    could_be: str
    line: str


_IBLINK_HEAD = lazy_re(r"^(CA|Switch):\s*(?:0x[0-9a-fA-F]+\s+)?(.*?):?\s*$")
_IBLINK_PORT = lazy_re(r"^\s*(?:0x[0-9a-fA-F]+\s+)?\d+\s+(\d+)\[[^\]]*\]\s*==\(\s*(?:(\d+X)\s+)?(?:([\d.]+)\s+Gbps\s+)?"
                          r"(\w+)/\s*(\w+)\s*\)==>\s*(.*)$")


def parse_iblinkinfo(text: str) -> list[IbLink]:
    """Every port line of ``iblinkinfo`` output under its "CA:" / "Switch:" header. Never raises."""
    out: list[IbLink] = []
    node, switch = "", False
    for raw in text.splitlines():
        s = raw.rstrip()
        h = _IBLINK_HEAD.match(s.strip())
        if h and not _IBLINK_PORT.match(s):
            node, switch = h.group(2).strip(), h.group(1) == "Switch"
            continue
        m = _IBLINK_PORT.match(s)
        if not m:
            continue
        rest = m.group(6)
        peer = re.search(r'"([^"]*)"', rest)
        could = re.search(r"\(\s*(Could be [^)]*?)\s*\)", rest)
        out.append(IbLink(node, switch, sat_int(m.group(1)), m.group(2) or "",
                          float(m.group(3)) if m.group(3) else None, m.group(4), m.group(5),
                          peer.group(1) if peer else "", could.group(1) if could else "", s.strip()))
    return out


def detect_iblinkinfo(text: str) -> float:
    """0.95 for ``iblinkinfo`` output: port lines "N P[ ] ==( 4X 25.78125 Gbps Active/ LinkUp)==> ..."."""
    n = sum(1 for ln in text.splitlines()[:5000] if _IBLINK_PORT.match(ln))
    return 0.95 if n else 0.0


@dataclass(frozen=True)
class EthtoolLink:
    """One ``ethtool IFACE`` block (ethtool(8)): ``name`` from "Settings for X:", ``speed_mbit_s`` (Mb/s, None for
    "Unknown!" or not shown), ``duplex`` ("Full", "Half", "Unknown!", ""), ``link`` (the "Link detected" line: True,
    False, None when not shown) and the lines read."""

    name: str
    speed_mbit_s: int | None = None
    duplex: str = ""
    link: bool | None = None
    lines: tuple[str, ...] = ()
    advertised: tuple[int, ...] = ()
    """Speeds (Mb/s) of the "Advertised link modes" ("1000baseT/Full" -> 1000; full duplex only)."""
    partner: tuple[int, ...] = ()
    """Speeds (Mb/s) of the "Link partner advertised link modes" (full duplex only)."""
    link_note: str = ""
    """The driver's reason after "Link detected: no" (the kernel's link extended state and substate, "Cable issue,
    Unsupported cable"), "" when none."""

    @property
    def common_mbit_s(self) -> int | None:
        """The fastest speed both ends advertise (Mb/s), None when either list is not shown."""
        both = set(self.advertised) & set(self.partner)
        return max(both) if both else None


_ETHTOOL_HEAD = lazy_re(r"^Settings for ([\w.:@-]+):\s*$")


def parse_ethtool(text: str) -> list[EthtoolLink]:
    """Every "Settings for IFACE:" block of ``ethtool IFACE`` output, in order. Never raises."""
    out: list[EthtoolLink] = []
    cur: dict[str, Any] | None = None

    def close() -> None:
        if cur is not None:
            out.append(EthtoolLink(cur["name"], cur.get("speed"), cur.get("duplex", ""), cur.get("link"),
                                   tuple(cur["lines"]), tuple(cur["modes"]["advertised"]), tuple(cur["modes"]["partner"]),
                                   cur.get("link_note", "")))

    def modes(words: str) -> list[int]:  # "1000baseT/Full 2500baseT/Full" -> [1000, 2500]
        return [sat_int(m.group(1)) for m in re.finditer(r"\b(\d{1,7})base[\w-]*/Full\b", words)]

    field = ""
    for raw in text.splitlines():
        s = raw.strip()
        m = _ETHTOOL_HEAD.match(s)
        if m:
            close()
            cur = {"name": m.group(1), "lines": [s], "modes": {"advertised": [], "partner": []}}
            field = ""
            continue
        if cur is None:
            continue
        m = re.match(r"(Advertised|Link partner advertised) link modes:\s*(.*)$", s)
        if m:  # the speeds each end offers (held-out round 91: 100 Mb/s where both ends offer 1000)
            field = "advertised" if m.group(1) == "Advertised" else "partner"
            cur["modes"][field] += modes(m.group(2))
            cur["lines"].append(s)
            continue
        if field and ":" not in s and re.fullmatch(r"(?:\d+base[\w-]*/(?:Full|Half)\s*)+", s):
            cur["modes"][field] += modes(s)
            cur["lines"].append(s)
            continue
        field = ""
        m = re.match(r"Speed:\s*(\d{1,7})\s*Mb/s", s)
        if m:
            cur["speed"] = sat_int(m.group(1))
            cur["lines"].append(s)
        elif s.startswith("Duplex:"):
            cur["duplex"] = s.split(":", 1)[1].strip()
            cur["lines"].append(s)
        elif s.startswith("Link detected:"):
            # "no (Cable issue, Unsupported cable)": ethtool adds the link extended state after the word
            v = (s.split(":", 1)[1].strip().lower().split() or [""])[0]
            cur["link"] = True if v == "yes" else False if v == "no" else None
            note = re.search(r"\(([^()]{1,120})\)\s*$", s)
            cur["link_note"] = note.group(1).strip() if note and v == "no" else ""
            cur["lines"].append(s)
    close()
    return out


def detect_ethtool(text: str) -> float:
    """0.9 for ``ethtool IFACE`` output: a "Settings for X:" line with its "Link detected:" or "Speed:" line."""
    head = text[:200_000]
    if re.search(r"^\s*Settings for [\w.:@-]+:\s*$", head, re.M) and re.search(r"^\s*(Link detected|Speed):", head, re.M):
        return 0.9
    return 0.0


# ------------------------------------------------------------------ the live node: sysfs, netdevs, NCCL's settings

IB_CLASS = "/sys/class/infiniband"
"""The RDMA devices' sysfs class (Linux Documentation/ABI/stable/sysfs-class-infiniband)."""

_IB_PORT_ATTR = lazy_re(r"^/sys/class/infiniband/([\w.-]+)/ports/(\d+)/(state|phys_state|rate|link_layer)$")
_IB_DEV_ATTR = lazy_re(r"^/sys/class/infiniband/([\w.-]+)/(fw_ver|board_id|hca_type|node_desc|node_type|"
                          r"device/numa_node)$")
_IB_GID = lazy_re(r"^/sys/class/infiniband/([\w.-]+)/ports/(\d+)/gids/(\d+)$")
_IB_GID_TYPE = lazy_re(r"^/sys/class/infiniband/([\w.-]+)/ports/(\d+)/gid_attrs/types/(\d+)$")
_IB_NETDEV = lazy_re(r"^/sys/class/infiniband/([\w.-]+)/device/net/([^/]+)$")
_PCI_IBDEV = lazy_re(r"^/sys/bus/pci/devices/([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])/infiniband/"
                        r"([\w.-]+)$")
ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
"""An unused GID table entry (sysfs-class-infiniband: ``gids/<N>``)."""


@dataclass(frozen=True)
class Gid:
    """One non-zero GID table entry of a port: ``index``, the GID as sysfs prints it, its type (``IB/RoCE v1`` or
    ``RoCE v2``; "" when not read)."""

    port: int
    index: int
    gid: str
    type: str = ""


@dataclass(frozen=True)
class HcaDevice:
    """One RDMA device (``mlx5_0``) from sysfs: firmware (``fw_ver``), ``board_id`` (the card's PSID),
    ``hca_type`` (``MT4129``), ``node_desc``, the PCI function it sits on (``pci_addr``, "" when not found), its
    NUMA node (None when the kernel says -1 or it was not read), the network interfaces on the same PCI function
    (``netdevs``) and its non-zero GIDs."""

    name: str
    fw_ver: str = ""
    board_id: str = ""
    hca_type: str = ""
    node_desc: str = ""
    node_type: str = ""
    pci_addr: str = ""
    numa_node: int | None = None
    netdevs: tuple[str, ...] = ()
    gids: tuple[Gid, ...] = ()


@dataclass(frozen=True)
class IbSysfs:
    """The RDMA devices and their ports as sysfs shows them: ``devices`` by name, ``ports`` (the same
    :class:`IbPorts` as ``ibstat``'s, ``tool`` "sysfs"), and what could not be read (``problems``)."""

    devices: dict[str, HcaDevice] = field(default_factory=dict)
    ports: IbPorts = field(default_factory=IbPorts)
    problems: list[str] = field(default_factory=list)


def parse_ib_sysfs(files: Mapping[str, str | None]) -> IbSysfs:
    """Read the ``ib_sysfs`` probe's files (path -> content, ``None`` when unreadable; a path with "" is a link the
    probe only listed: ``/sys/class/infiniband/DEV/device/net/NETDEV``, ``/sys/bus/pci/devices/ADDR/infiniband/DEV``).
    Values are the kernel's (Documentation/ABI/stable/sysfs-class-infiniband): ``state`` "4: ACTIVE", ``phys_state``
    "5: LinkUp", ``rate`` "400 Gb/sec (4X NDR)", ``link_layer`` "InfiniBand"/"Ethernet", ``gids/N`` a colon-separated
    IPv6-style GID, ``gid_attrs/types/N`` "RoCE v2". Never raises."""
    try:
        return _parse_ib_sysfs(files)
    except Exception as e:  # noqa: BLE001 - a parser never raises
        return IbSysfs(problems=[f"could not read the sysfs tree: {type(e).__name__}"])


def _parse_ib_sysfs(files: Mapping[str, str | None]) -> IbSysfs:
    devs: dict[str, dict[str, object]] = {}
    gids: dict[tuple[str, int, int], str] = {}
    types: dict[tuple[str, int, int], str] = {}
    lines: list[str] = []
    problems: list[str] = []
    for path in sorted(files):
        value = files[path]
        m = _IB_PORT_ATTR.match(path)
        if m:
            devs.setdefault(m.group(1), {})
            if value is not None:
                lines.append(f"{path}:{value.strip()}")
            continue
        m = _IB_DEV_ATTR.match(path)
        if m:
            d = devs.setdefault(m.group(1), {})
            if value is None:
                continue
            v = value.strip()
            if m.group(2) == "device/numa_node":
                n = sat_int(v) if re.fullmatch(r"-?\d{1,6}", v) else None
                d["numa_node"] = n if n is not None and n >= 0 else None
            else:
                d[m.group(2)] = v[:200]
            continue
        m = _IB_GID.match(path)
        if m:
            if value and value.strip() and value.strip() != ZERO_GID:
                gids[(m.group(1), sat_int(m.group(2)), sat_int(m.group(3)))] = value.strip()[:64]
            continue
        m = _IB_GID_TYPE.match(path)
        if m:
            if value and value.strip():
                types[(m.group(1), sat_int(m.group(2)), sat_int(m.group(3)))] = value.strip()[:32]
            continue
        m = _IB_NETDEV.match(path)
        if m:
            d = devs.setdefault(m.group(1), {})
            d["netdevs"] = tuple(sorted({*d.get("netdevs", ()), m.group(2)}))  # type: ignore[misc]
            continue
        m = _PCI_IBDEV.match(path)
        if m:
            devs.setdefault(m.group(2), {})["pci_addr"] = m.group(1).lower()
            continue
    ports = parse_ib_ports("\n".join(lines)) if lines else IbPorts()
    ports = IbPorts("sysfs" if ports.ports else "", ports.ports, ports.errors, ports.problems)
    out: dict[str, HcaDevice] = {}
    for name, d in sorted(devs.items()):
        g = tuple(Gid(p, i, v, types.get((n, p, i), "")) for (n, p, i), v in sorted(gids.items()) if n == name)
        out[name] = HcaDevice(name=name, gids=g, **d)  # type: ignore[arg-type]
    return IbSysfs(out, ports, problems)


@dataclass(frozen=True)
class NetDev:
    """One network interface from ``/sys/class/net/NAME/{speed,mtu,operstate,type}`` (Documentation/ABI/testing/
    sysfs-class-net): ``speed_mbit_s`` (None when the kernel cannot tell: no link, a virtual device), ``mtu`` (bytes),
    ``operstate`` (up / down / unknown / ...), ``type`` (ARPHRD: 1 Ethernet, 32 InfiniBand, 772 loopback)."""

    name: str
    speed_mbit_s: int | None = None
    mtu: int | None = None
    operstate: str = ""
    type: int | None = None

    @property
    def link(self) -> str:
        """``ether`` / ``infiniband`` / ``loopback`` / "" (the ARPHRD type, include/uapi/linux/if_arp.h)."""
        return {1: "ether", 32: "infiniband", 772: "loopback"}.get(self.type or -1, "")


_NET_ATTR = lazy_re(r"^/sys/class/net/([^/]+)/(speed|mtu|operstate|type)$")


def parse_net_sysfs(files: Mapping[str, str | None]) -> dict[str, NetDev]:
    """The ``net_sysfs`` probe's files -> interface name -> :class:`NetDev`. A speed of -1 or an unreadable one
    (EINVAL on a device without link) is ``None``. Never raises."""
    attrs: dict[str, dict[str, object]] = {}
    for path, value in files.items():
        m = _NET_ATTR.match(path)
        if not m:
            continue
        d = attrs.setdefault(m.group(1), {})
        v = (value or "").strip()
        key = m.group(2)
        if key == "operstate":
            d["operstate"] = v[:20]
        elif re.fullmatch(r"-?\d{1,12}", v):
            n = sat_int(v)
            if key == "speed":
                d["speed_mbit_s"] = n if n > 0 else None
            else:
                d[key] = n
    return {n: NetDev(name=n, **a) for n, a in sorted(attrs.items())}  # type: ignore[arg-type]


@dataclass(frozen=True)
class NcclSetting:
    """One ``NCCL_*`` setting: where it came from (``environment`` or a config file's path), name, value, line."""

    origin: str
    name: str
    value: str
    line: str


_NCCL_KV = lazy_re(r"^\s*(?:export\s+)?(NCCL_[A-Z0-9_]+)\s*=\s*(.*?)\s*$")
_NCCL_REC = lazy_re(r"(NCCL_[A-Z0-9_]+)=(.*)", re.S)


def parse_nccl_env(text: str) -> list[NcclSetting]:
    """The ``nccl_env`` probe's output: a ``# environment`` section (``env`` lines of the NCCL_ variables bringup
    runs with) and a ``# file PATH`` section per NCCL configuration file read (``/etc/nccl.conf``,
    ``$NCCL_CONF_FILE``, ``~/.nccl.conf``: NCCL environment variables documentation, one ``NAME=value`` per line,
    ``#`` comments). The environment comes NUL-separated (each ``NAME=value`` ends in a NUL byte, the list closed by
    ``# end environment``: a value may hold newlines); a text without NUL (an older capture, a paste) is read line by
    line. Later sections do not override earlier ones here; the rule applies NCCL's precedence (the environment wins).
    Never raises."""
    out: list[NcclSetting] = []
    origin = ""
    head = text.find("# environment\n")
    if head >= 0 and "\0" in text:
        # the probe's NUL-separated environment: records up to "# end environment" (a value may hold newlines)
        p = head + len("# environment\n")
        while p < len(text) and len(out) < 5000:
            if text.startswith("# end environment\n", p) or text.startswith("# end environment", p):
                p = text.find("\n", p) + 1 or len(text)
                break
            k = text.find("\0", p)
            if k < 0:
                break  # cut short
            rec = text[p:k]
            p = k + 1
            m = _NCCL_REC.match(rec)
            if m:
                out.append(NcclSetting("environment", m.group(1), m.group(2)[:500], rec.replace("\n", "\\n")[:500]))
        text = text[p:]
    for raw in text.splitlines()[:5000]:
        s = raw.strip()
        if s == "# environment":
            origin = "environment"
            continue
        if s.startswith("# file "):
            origin = s[len("# file "):].strip()
            continue
        if not origin or not s or s.startswith("#"):
            continue
        m = _NCCL_KV.match(s)
        if m:
            v = m.group(2)
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
                v = v[1:-1]
            out.append(NcclSetting(origin, m.group(1), v[:500], s[:500]))
    return out


# ------------------------------------------------------------------ mlxlink (NVIDIA MFT): one port's link and its BER


@dataclass(frozen=True)
class MlxlinkPort:
    """One ``mlxlink -d DEV [-p PORT] [-c] [-m]`` report (NVIDIA Firmware Tools, 'mlxlink Utility'): ``device`` (from
    the command line before it, "" when not shown), ``fields`` ((section, key) -> value as printed: "Operational
    Info"/"State" -> "Active"; "Physical Counters and BER Info"/"Effective Physical BER" -> "15E-255") and the lines
    read. Accessors return "" or None when the report lacks the field."""

    device: str
    fields: Mapping[tuple[str, str], str]
    lines: tuple[str, ...] = ()

    def get(self, key: str, section: str | None = None) -> str:
        for (sec, k), v in self.fields.items():
            if k == key and (section is None or sec == section):
                return v
        return ""

    def number(self, key: str) -> float | None:
        """A counter or BER ("0", "15E-255", "1.5E-12") as a float; None when absent or not a number."""
        v = self.get(key).split()[0] if self.get(key).split() else ""
        return to_float(v)

    @property
    def has_counters(self) -> bool:
        return any(sec == "Physical Counters and BER Info" for sec, _ in self.fields)


_MLXLINK_FIELD = lazy_re(r"^\s*([A-Za-z][\w /()\[\].#-]{0,60}?)\s+:\s?(.*?)\s*$")
_MLXLINK_DEV = lazy_re(r"mlxlink\b.*?\s-d\s+(\S+)")


def parse_mlxlink(text: str) -> list[MlxlinkPort]:
    """Every mlxlink report in ``text`` (a report starts at its "Operational Info" section; several ports pasted one
    after another, as nvidia-bug-report's GPU MST dump prints them, are several reports). Never raises."""
    out: list[MlxlinkPort] = []
    device = ""
    section = ""
    fields: dict[tuple[str, str], str] | None = None
    lines: list[str] = []
    raw = text.splitlines()

    def close() -> None:
        if fields:
            out.append(MlxlinkPort(device, dict(fields), tuple(lines)))

    for i, ln in enumerate(raw):
        s = ln.strip()
        m = _MLXLINK_DEV.search(s)
        if m and "mlxlink" in s.split(" -d")[0]:
            close()
            fields, lines, device = None, [], m.group(1)
            continue
        nxt = raw[i + 1].strip() if i + 1 < len(raw) else ""
        if s and ":" not in s and nxt and set(nxt) == {"-"}:  # a section title over its dashes
            section = s
            if s == "Operational Info":
                close()
                fields, lines = {}, []
                if out and out[-1].device == device:
                    device = ""  # the next report's device is not the last one's unless its command says so
            continue
        if fields is None:
            continue
        f = _MLXLINK_FIELD.match(ln)
        if f and section:
            fields[(section, f.group(1).strip())] = f.group(2)
            lines.append(s)
    close()
    return out


def detect_mlxlink(text: str) -> float:
    """0.95 for mlxlink output: an "Operational Info" section over its dashes with a "State  : ..." field (indented too,
    as a markdown code block pastes it)."""
    head = text[:200_000]
    if re.search(r"^[ \t]*Operational Info\s*\n[ \t]*-{5,}", head, re.M) and re.search(r"^[ \t]*State\s+:\s", head, re.M):
        return 0.95
    return 0.0


# ------------------------------------------------------------------ ibswinfo: an unmanaged switch's PSUs, fans, temperature


@dataclass(frozen=True)
class SwitchInfo:
    """``ibswinfo -d DEV`` of a Mellanox/NVIDIA switch (github.com/stanford-rc/ibswinfo): ``identity`` (part number,
    product name, firmware...), ``psus`` (name -> {"status", "DC power", "fan status", "power (W)"}), ``fan_status``
    (the overall "fan status" line), ``fans_rpm`` (fan -> rpm), ``temperature_c`` / ``max_temperature_c`` (°C) and
    the lines read."""

    identity: Mapping[str, str]
    psus: Mapping[str, Mapping[str, str]]
    fan_status: str = ""
    fans_rpm: Mapping[str, int] = field(default_factory=dict)
    temperature_c: float | None = None
    max_temperature_c: float | None = None
    lines: tuple[str, ...] = ()


_SWINFO_ROW = lazy_re(r"^(\s*)([A-Za-z][\w #/().-]{0,40}?)\s*\|\s*(.*?)\s*$")


def parse_ibswinfo(text: str) -> SwitchInfo | None:
    """The first ibswinfo report in ``text``; None when there is none. Never raises."""
    identity: dict[str, str] = {}
    psus: dict[str, dict[str, str]] = {}
    fans: dict[str, int] = {}
    fan_status, temp, tmax = "", None, None
    psu: str | None = None
    lines: list[str] = []
    for ln in text.splitlines():
        m = _SWINFO_ROW.match(ln)
        if not m:
            continue
        indent, key, value = m.group(1), m.group(2).strip(), m.group(3)
        lines.append(ln.rstrip())
        p = re.fullmatch(r"(PSU\d+) status", key)
        if p:
            psu = p.group(1)
            psus[psu] = {"status": value}
        elif indent and psu is not None:
            psus[psu][key] = value
        else:
            psu = None
            if key == "fan status":
                fan_status = value
            elif (f := re.fullmatch(r"fan#(\d+) \(rpm\)", key)) and value.isdigit():
                fans[f"fan#{f.group(1)}"] = sat_int(value)
            elif key == "temperature (C)":
                temp = to_float(value)
            elif key == "max temp (C)":
                tmax = to_float(value)
            else:
                identity[key] = value
    if not psus and not fan_status and temp is None:
        return None
    return SwitchInfo(identity, psus, fan_status, fans, temp, tmax, tuple(lines))


def detect_ibswinfo(text: str) -> float:
    """0.95 for ibswinfo output: "PSU0 status | ..." with the switch's "part number |" or "fan status |" rows."""
    head = text[:100_000]
    if re.search(r"^PSU\d+ status\s+\|", head, re.M) and re.search(r"^(part number|fan status|PSID)\s+\|", head, re.M):
        return 0.95
    return 0.0


# ------------------------------------------------------------------ show_gids (RoCE GID table)


@dataclass(frozen=True)
class GidRow:
    """One row of MLNX_OFED's ``show_gids``: RDMA device, port, GID index, the GID, the IPv4 address it carries ("" for
    none), the RoCE version ("v1" / "v2") and the network interface; ``line`` as printed."""

    dev: str
    port: int
    index: int
    gid: str
    ipv4: str
    ver: str
    netdev: str
    line: str


_SHOW_GIDS_HEAD = lazy_re(r"^\s*DEV\s+PORT\s+INDEX\s+GID\s+IPv4\s+VER\s+DEV\s*$")
_SHOW_GIDS_ROW = lazy_re(r"^\s*(?P<dev>[\w.-]+)\s+(?P<port>\d{1,3})\s+(?P<index>\d{1,4})\s+(?P<gid>[0-9a-fA-F:]{2,39})"
                         r"(?:\s+(?P<ipv4>\d{1,3}(?:\.\d{1,3}){3}))?\s+(?P<ver>v[12])\b(?:\s+(?P<netdev>\S+))?\s*$")


_DEVINFO_GID = lazy_re(r"^\s*GID\[\s*(?P<index>\d{1,4})\]:\s*(?P<gid>[0-9a-fA-F:.]{2,45}),\s*RoCE (?P<ver>v[12])\s*$")
"""A RoCE GID as ``ibv_devinfo -v`` prints it under its port ("GID[  3]:  ::ffff:200.0.209.6, RoCE v2")."""


def detect_show_gids(text: str) -> float:
    """0.95 for ``show_gids`` output: its "DEV PORT INDEX GID IPv4 VER DEV" header; 0.85 for an ``ibv_devinfo -v``
    excerpt of RoCE GID lines without its hca_id block (the whole output is read as its ports, ``ib-ports``)."""
    head = text[:100_000]
    if re.search(r"^\s*DEV\s+PORT\s+INDEX\s+GID\s+IPv4\s+VER\s+DEV\s*$", head, re.M):
        return 0.95
    if not re.search(r"^\s*hca_id:", head, re.M) and any(_DEVINFO_GID.match(ln) for ln in head.splitlines()):
        return 0.85
    return 0.0


def _mapped_ipv4(gid: str) -> str:
    """The IPv4 address of an IPv4-mapped GID ("::ffff:200.0.209.6", "0000:...:ffff:c800:d106"), else ""."""
    m = re.search(r"ffff:(\d{1,3}(?:\.\d{1,3}){3})$", gid)
    if m:
        return m.group(1)
    m = re.fullmatch(r"(?:0{1,4}:){5}ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})", gid)
    if m:
        a, b = int(m.group(1), 16), int(m.group(2), 16)
        return f"{a >> 8}.{a & 255}.{b >> 8}.{b & 255}"
    return ""


def parse_show_gids(text: str) -> list[GidRow]:
    """Every GID row of ``show_gids`` output (MLNX_OFED's script over /sys/class/infiniband/*/ports/*/gids and
    gid_attrs: columns DEV PORT INDEX GID IPv4 VER DEV), in order; the header, its dashes and "n_gids_found=N" are
    skipped. Never raises."""
    rows: list[GidRow] = []
    dev, port = "", 1  # an ibv_devinfo -v excerpt: the device its command named (-d), the port line above the GIDs
    for raw in text.splitlines():
        m = _SHOW_GIDS_ROW.match(raw)
        if m and not _SHOW_GIDS_HEAD.match(raw):
            rows.append(GidRow(m.group("dev"), sat_int(m.group("port")), sat_int(m.group("index")),
                               m.group("gid").lower(), m.group("ipv4") or "", m.group("ver"), m.group("netdev") or "",
                               raw.strip()))
            continue
        d = re.search(r"\bibv_devinfo\b.*?(?:-d|--ib-dev(?:=|\s))\s*([\w.-]+)", raw) or re.match(r"^\s*hca_id:\s*(\S+)", raw)
        if d:
            dev = d.group(1)
            continue
        pm = re.match(r"^\s*port:\s*(\d{1,3})\s*$", raw)
        if pm:
            port = sat_int(pm.group(1))
            continue
        g = _DEVINFO_GID.match(raw)
        if g:
            gid = g.group("gid").lower()
            rows.append(GidRow(dev, port, sat_int(g.group("index")), gid, _mapped_ipv4(gid), g.group("ver"), "",
                               raw.strip()))
    return rows


# ------------------------------------------------------------------ fi_info (libfabric)


_FI_PROVIDER = lazy_re(r"^\s*provider:\s*(\S+)\s*$")
_FI_FIELD = lazy_re(r"^\s*(fabric|domain|version|type|protocol):\s*(\S+)\s*$")
_FI_GETINFO_ERR = lazy_re(r"^\s*fi_getinfo:\s*(-\d{1,6})(?:\s*\(([^)]*)\))?\s*$", re.M)
_FI_CMD = lazy_re(r"\bfi_info\b(?P<args>[^\n|]*)")


@dataclass(frozen=True)
class FiInfo:
    """``fi_info`` (libfabric's list of the providers and endpoints it can open; fi_info(1)): ``endpoints`` one
    (provider, fabric, domain, endpoint type, line) per block, ``error`` fi_getinfo's negative errno with its line
    (-61 = -FI_ENODATA: no provider matched), ``asked`` the provider the pasted command asked for (``-p efa``)."""

    endpoints: tuple[tuple[str, str, str, str, str], ...]
    error: tuple[int, str] | None
    asked: str


def parse_fi_info(text: str) -> FiInfo:
    """:class:`FiInfo` of ``text``; never raises."""
    eps: list[list[str]] = []
    error: tuple[int, str] | None = None
    asked = ""
    section = ""  # fi_info -v: the attribute block being read (fi_domain_attr, fi_fabric_attr, ...)
    for raw in text.splitlines()[:100_000]:
        if (c := _FI_CMD.search(raw)) and not asked:
            p = re.search(r"(?:-p|--provider)[ =]\s*(\w+)", c.group("args"))
            asked = p.group(1) if p else ""
        if re.match(r"^fi_info:\s*$", raw):  # fi_info -v: one block per endpoint, its provider in prov_name
            eps.append(["", "", "", "", raw.strip()])
            section = ""
            continue
        if v := re.match(r"^\s{4}(fi_\w+_attr):\s*$", raw):
            section = v.group(1)
            continue
        if eps and not eps[-1][0] and (pn := re.match(r"^\s+prov_name:\s*(\S+)\s*$", raw)):
            eps[-1][0] = pn.group(1)
            eps[-1][4] = raw.strip()
            continue
        if eps and section in ("fi_domain_attr", "fi_fabric_attr") and (nm := re.match(r"^\s{8}name:\s*(\S+)\s*$", raw)):
            col = 2 if section == "fi_domain_attr" else 1
            if not eps[-1][col]:
                eps[-1][col] = nm.group(1)
            continue
        if m := _FI_PROVIDER.match(raw):
            eps.append([m.group(1), "", "", "", raw.strip()])
        elif (f := _FI_FIELD.match(raw)) and eps:
            # -v prints "fabric:"/"domain:" as pointers (0x...) inside its attribute blocks: their names are read above
            i = {"fabric": 1, "domain": 2, "type": 3}.get(f.group(1)) if not section else {"type": 3}.get(f.group(1))
            if i is not None and not eps[-1][i]:
                eps[-1][i] = f.group(2)
        elif (e := _FI_GETINFO_ERR.match(raw)) and error is None:
            error = (int(e.group(1)), raw.strip())
    return FiInfo(tuple((a, b, c, d, ln) for a, b, c, d, ln in eps if a), error, asked)


def detect_fi_info(text: str) -> float:
    """0.95 for ``fi_info`` output: provider blocks with their fabric/domain/type lines, ``-v``'s attribute blocks, or
    fi_getinfo's error line."""
    head = text[:100_000]
    if _FI_GETINFO_ERR.search(head) and re.search(r"^\s*fi_getinfo:", head, re.M):
        return 0.95
    provs = len(re.findall(r"^\s*provider:\s*\S+\s*$", head, re.M))
    fields = len(re.findall(r"^\s*(?:fabric|domain|type):\s*\S+\s*$", head, re.M))
    if re.search(r"^fi_info:\s*$", head, re.M) and re.search(r"^\s+prov_name:\s*\S+", head, re.M):
        return 0.95  # fi_info -v: "fi_info:" blocks of attributes, the provider in fi_fabric_attr's prov_name
    return 0.95 if provs and fields >= 2 * provs else 0.0


# ------------------------------------------------------------------ OSU micro-benchmarks (osu_bw, osu_bibw, ...)


@dataclass(frozen=True)
class OsuRun:
    """An OSU micro-benchmark's output: ``test`` ("Bandwidth", "Bi-Directional Bandwidth", "MPI_Get Bandwidth",
    "Latency", ...), ``flavour`` ("CUDA", "ROCM" or ""), ``version``, ``buffers`` ("D D", "H D"...: where the sender's
    and the receiver's buffers were), ``unit`` ("MB/s" or "us"), ``rows`` ((size in bytes, value, "Pass"/"Fail"/""));
    ``header``: the test's title line."""

    test: str = ""
    flavour: str = ""
    version: str = ""
    buffers: str = ""
    unit: str = ""
    rows: tuple[tuple[int, float, str, str], ...] = ()
    header: str = ""


_OSU_TITLE = lazy_re(r"^#\s*OSU (?:(?:MPI|OpenSHMEM|UPC\+\+|NCCL)(?=[-\s]))?(?:-(?P<fl>CUDA|ROCM|ROCm|OpenACC))?\s*(?P<test>.*?)"
                     r"\s+Test\s+v?(?P<v>[\d.]+)", re.I)
_OSU_UNIT = lazy_re(r"^#\s*Size\s+(?:Bandwidth \((?P<bw>MB/s)\)|(?:Avg )?Latency\s*\((?P<lat>us)\)|Bi-Bandwidth)")
_OSU_ROW = lazy_re(r"^\s*(\d{1,12})\s+(\d{1,9}(?:\.\d{1,6})?)(?:\s+(Pass|Fail)\w*)?\s*$", re.I)
_OSU_BUF = lazy_re(r"^#\s*Send Buffer on (\w+).*?Receive Buffer on (\w+)", re.I)


def parse_osu(text: str) -> OsuRun:
    """Read an OSU micro-benchmark's output (OSU Micro-Benchmarks, http://mvapich.cse.ohio-state.edu/benchmarks/:
    the "# OSU ... Test vX" title, "# Size  Bandwidth (MB/s)" or "Latency (us)", then a row per message size, with a
    Validation column under --validation). Never raises."""
    title = unit = buffers = header = ""
    flavour = version = ""
    rows: list[tuple[int, float, str, str]] = []
    for raw in text.splitlines()[:20000]:
        s = raw.strip()
        m = _OSU_TITLE.match(s)
        if m and not header:
            title, flavour, version, header = m.group("test").strip(), (m.group("fl") or "").upper(), m.group("v"), s
            continue
        b = _OSU_BUF.match(s)
        if b and not buffers:
            buffers = f"{b.group(1)[0].upper()} {b.group(2)[0].upper()}"
        u = _OSU_UNIT.match(s)
        if u:
            unit = "us" if u.group("lat") else "MB/s"
            continue
        r = _OSU_ROW.match(s) if unit else None
        if r:
            rows.append((int(r.group(1)), float(r.group(2)), (r.group(3) or "").capitalize(), s))
    if not buffers:  # "osu_bw D H" / "-d cuda D D" on the command line
        c = re.search(r"\bosu_\w+\b[^\n]*?\s([DHMdhm])\s+([DHMdhm])\s*$", text[:5000], re.M)
        if c:
            buffers = f"{c.group(1).upper()} {c.group(2).upper()}"
    return OsuRun(title, flavour, version, buffers, unit, tuple(rows), header)


def detect_osu(text: str) -> float:
    """0.95 for OSU micro-benchmark output: its "# OSU ... Test" title and its "# Size" column header."""
    head = text[:20000]
    if re.search(r"^#\s*OSU .*Test", head, re.M) and re.search(r"^#\s*Size\s+\S", head, re.M):
        return 0.95
    return 0.0


# ------------------------------------------------------------------ ibnetdiscover: the fabric's topology file


@dataclass(frozen=True)
class NetLink:
    """One port line of ``ibnetdiscover`` (infiniband-diags, ibnetdiscover(8)): the ``node`` block it is under (its
    description, ``switch`` True for a "Switch" block), the local ``port``, the ``peer`` (the remote end's description
    in quotes after '#'), the remote end's ``lid`` (65535 when it has none), the link's ``rate`` ("4xHDR", "4xEDR",
    "4xFDR10"; "" when not printed) and the line."""

    node: str
    switch: bool
    port: int
    peer: str
    lid: int | None
    rate: str
    line: str


_NET_NODE = lazy_re(r'^(Switch|Ca|Rt)\s*\d+\s+"[SHR]-[0-9a-fA-F]+"\s*#\s*"([^"]*)"')
_NET_PORT = lazy_re(r'^\[(\d{1,4})\](?:\([0-9a-fA-F]+\))?\s*"[SHR]-[0-9a-fA-F]+"\[\d{1,4}\](?:\([0-9a-fA-F]+\))?\s*#\s*'
                    r'(?:lid \d+ lmc \d+ )?"([^"]*)"\s+lid\s+(\d{1,5})\s+(\d+x[A-Z]{3}\d*)?')


def parse_ibnetdiscover(text: str) -> list[NetLink]:
    """Every linked port of an ``ibnetdiscover`` topology file under its Switch / Ca block (only ports with a link are
    listed: an absent port number is a port without one). Never raises."""
    out: list[NetLink] = []
    node, switch = "", False
    for raw in text.splitlines()[:200_000]:
        s = raw.strip()
        h = _NET_NODE.match(s)
        if h:
            node, switch = h.group(2), h.group(1) == "Switch"
            continue
        m = _NET_PORT.match(s)
        if m and node:
            out.append(NetLink(node, switch, int(m.group(1)), m.group(2), int(m.group(3)), m.group(4) or "", s))
    return out


def detect_ibnetdiscover(text: str) -> float:
    """0.95 for ``ibnetdiscover`` output: a Switch/Ca block header ('Switch 41 "S-..." # "desc"') and its port lines."""
    head = text[:100_000]
    if '"S-' not in head and '"H-' not in head and '"R-' not in head:  # every node and port line names one: cheap first
        return 0.0
    lines = [ln.strip() for ln in head.splitlines()]
    return 0.95 if any(_NET_NODE.match(ln) for ln in lines) and any(_NET_PORT.match(ln) for ln in lines) else 0.0


# ------------------------------------------------------------------ mlxconfig (NVIDIA MFT): an adapter's firmware settings


@dataclass(frozen=True)
class MlxConfig:
    """``mlxconfig -d DEV [-e] query`` or ``mlxconfig ... set``: each parameter with its values in column order
    (``-e`` prints Default, Current, Next Boot; ``set`` prints Current Value, New Value), the column names when the
    header is in the paste, whether mlxconfig asked for a reboot ("Please reboot machine to load new configurations"),
    and the lines read."""

    rows: tuple[tuple[str, tuple[str, ...], str], ...]
    columns: tuple[str, ...]
    reboot: str
    lines: tuple[str, ...]


_MLXCFG_ROW = lazy_re(r"^\s*\*?\s+([A-Z][A-Z0-9_]{2,}(?:\[\d+(?:\.\.\d+)?\])?)\s{2,}(\S.*?)\s*$")
_MLXCFG_HEADER = lazy_re(r"^\s*Configurations:\s+(.*?)\s*$|^\s*Name\s+Current Value\s+New Value\s*$")
_MLXCFG_REBOOT = lazy_re(r"Please reboot (?:the )?machine to load new configurations")
_MLXCFG_MARK = lazy_re(r"^\s*Device type:\s+\S+|^\s*Configurations:\s|Please reboot (?:the )?machine to load new "
                       r"configurations|^\s*Apply new Configuration\? \(y/n\)", re.M)


def parse_mlxconfig(text: str) -> MlxConfig:
    """Read an mlxconfig query or set (see :class:`MlxConfig`); never raises."""
    rows: list[tuple[str, tuple[str, ...], str]] = []
    cols: tuple[str, ...] = ()
    reboot = ""
    for raw in text.splitlines()[:20_000]:
        if m := _MLXCFG_HEADER.match(raw):
            cols = (("Current Value", "New Value") if m.group(1) is None
                    else tuple(c for c in re.split(r"\s{2,}", m.group(1)) if c))
            continue
        if _MLXCFG_REBOOT.search(raw):
            reboot = raw.strip()
            continue
        if m := _MLXCFG_ROW.match(raw):
            vals = tuple(m.group(2).split())
            if all(re.fullmatch(r"[\w.:/\-]+(?:\(\d+\))?", v) for v in vals) and 1 <= len(vals) <= 3:
                rows.append((m.group(1), vals, raw.rstrip()))
    return MlxConfig(tuple(rows), cols, reboot, ())


def detect_mlxconfig(text: str) -> float:
    """0.9 for mlxconfig output (its Device type / Configurations header, the reboot request, or its apply prompt)
    with parameter rows; 0.7 for rows alone whose Current and Next Boot columns an excerpt holds (three values each,
    MFT's PARAMETER_NAME form)."""
    head = text[:200_000]
    c = parse_mlxconfig(head)
    if not c.rows:
        return 0.0
    if _MLXCFG_MARK.search(head):
        return 0.9
    lines = [ln for ln in head.splitlines() if ln.strip()]
    return 0.7 if len(c.rows) >= 3 and len(c.rows) >= 0.8 * len(lines) and all(len(v) == 3 for _, v, _ in c.rows) else 0.0
