"""The data path's storage: block devices (``lsblk -J``), NVMe controllers (sysfs), md RAID (/proc/mdstat) and
fio's results (``fio --output-format=json``, or fio's default human-readable output).

Field meanings are the tools' own: lsblk(8) (util-linux; ROTA = rotational, TRAN = transport, PKNAME = parent
kernel name), the kernel's ``Documentation/admin-guide/md.rst`` and ``drivers/md/md.c`` (``md_seq_show``: the
``[n/m]`` of raid devices / working ones, ``[UU_]`` one letter per slot, ``(F)`` faulty, ``(S)`` spare,
``(R)`` replacement, ``(W)`` write-mostly, the ``resync|recovery|reshape|check|repair = P%`` line) and fio's
HOWTO, "Interpreting the output" / JSON output (``bw_bytes`` in bytes/s, ``bw`` in KiB/s, ``iops``,
``clat_ns`` percentiles in ns, ``runtime`` in ms, ``error`` an errno; ``sync.lat_ns``: the fsync/fdatasync
latencies, with ``N`` samples) and fio's default ("normal") output as ``stat.c`` prints it (``show_thread_status_normal``:
``NAME: (groupid=G, jobs=J): err=E: pid=P``; ``show_ddir_status``: ``read: IOPS=18.6k, BW=72.8MiB/s (76.4MB/s)(22.0MiB/302msec)``,
numbers through ``num2str``: k/M/G suffixes, KiB/MiB/GiB with kb_base 1024, kB/MB/GB with 1000; ``display_lat``:
``clat (usec): min=, max=, avg=``; ``show_clat_percentiles``: the unit in the heading, nsec/usec/msec, each value rounded
up to it; the ``fsync/fdatasync/sync_file_range[/syncfs]:`` block with ``sync (usec): ...`` and ``sync percentiles``).

Every parser is pure and never raises: it returns what it read and lists what it could not (``problems``).
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from wizard.common import sat_int
from wizard.common import lazy_re

# ------------------------------------------------------------------ lsblk -J


LSBLK_COLUMNS = "NAME,KNAME,TYPE,SIZE,MODEL,ROTA,TRAN,MOUNTPOINT,PKNAME"
"""The columns the ``lsblk`` probe asks for (``lsblk -J -b -o ...``)."""


@dataclass(frozen=True)
class BlockDev:
    """One ``lsblk`` row. ``size_bytes`` with ``-b``; ``rotational`` None when lsblk did not say;
    ``parents`` the chain of kernel names above it in lsblk's tree (nearest first: a partition's disk, an md
    device's member partitions' disks are listed under each member)."""

    name: str
    kname: str
    type: str
    size_bytes: int | None
    model: str
    rotational: bool | None
    tran: str
    mountpoint: str
    pkname: str
    parents: tuple[str, ...] = ()


@dataclass(frozen=True)
class Lsblk:
    devices: list[BlockDev] = field(default_factory=list)  # every row of the tree, depth first (an md device once per member)
    problems: list[str] = field(default_factory=list)

    def by_kname(self, kname: str) -> list[BlockDev]:
        return [d for d in self.devices if d.kname == kname]

    def first(self, kname: str) -> BlockDev | None:
        return next((d for d in self.devices if d.kname == kname), None)


def _bool(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return bool(v)
    if isinstance(v, str) and v.strip() in ("0", "1"):
        return v.strip() == "1"
    return None


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str) and re.fullmatch(r"\s*\d{1,30}\s*", v):
        return sat_int(v)
    return None


def _str(v: Any) -> str:
    return v.strip() if isinstance(v, str) else ""


def parse_lsblk_json(text: str) -> Lsblk:
    """``lsblk -J -b -o NAME,KNAME,TYPE,SIZE,MODEL,ROTA,TRAN,MOUNTPOINT,PKNAME`` -> :class:`Lsblk`. Reads both the
    older form (every value a string: ``"rota": "1"``) and the newer (booleans and numbers). Never raises."""
    out = Lsblk()
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        out.problems.append("not JSON: " + (text.strip().splitlines() or ["(empty)"])[0][:200])
        return out
    top = doc.get("blockdevices") if isinstance(doc, dict) else None
    if not isinstance(top, list):
        out.problems.append("no 'blockdevices' list")
        return out
    stack: list[tuple[Any, tuple[str, ...], int]] = [(d, (), 0) for d in reversed(top)]
    while stack and len(out.devices) < 20000:
        node, parents, depth = stack.pop()
        if not isinstance(node, dict) or depth > 32:
            out.problems.append(f"unreadable entry at depth {depth}")
            continue
        name = _str(node.get("name"))
        kname = _str(node.get("kname")) or name
        dev = BlockDev(name=name, kname=kname, type=_str(node.get("type")), size_bytes=_int(node.get("size")),
                       model=_str(node.get("model")), rotational=_bool(node.get("rota")), tran=_str(node.get("tran")),
                       mountpoint=_str(node.get("mountpoint")), pkname=_str(node.get("pkname")), parents=parents)
        out.devices.append(dev)
        kids = node.get("children")
        if isinstance(kids, list):
            stack.extend((k, (kname,) + parents, depth + 1) for k in reversed(kids))
    return out


def disks_under(lsblk: Lsblk, knames: list[str]) -> list[BlockDev]:
    """The whole disks (TYPE disk, or the top of the tree) that the devices ``knames`` sit on: through
    partitions, md arrays, LVM / device-mapper and crypt layers (every occurrence of a device in lsblk's tree
    counts: an md array appears once under each member). Each disk once, in tree order."""
    seen: dict[str, BlockDev] = {}
    for k in knames:
        for d in lsblk.by_kname(k):
            chain = (d.kname,) + d.parents
            top = chain[-1]
            disk = lsblk.first(top)
            if disk is not None:
                seen.setdefault(disk.kname, disk)
    return list(seen.values())


# ------------------------------------------------------------------ NVMe controllers (sysfs)


@dataclass(frozen=True)
class NvmeCtrl:
    """One NVMe controller from /sys/class/nvme/<name>/ (PCIe link from its PCI device's sysfs files:
    ``current_link_speed`` "16.0 GT/s PCIe", ``current_link_width`` "4", ``max_link_*`` alike)."""

    name: str
    model: str = ""
    firmware: str = ""
    transport: str = ""
    speed_gts: float | None = None
    width: int | None = None
    max_speed_gts: float | None = None
    max_width: int | None = None
    lines: tuple[str, ...] = ()


def _gts(v: str | None) -> float | None:
    m = re.match(r"\s*(\d{1,3}(?:\.\d{1,3})?)\s*GT/s", v or "")
    return float(m.group(1)) if m else None


def parse_nvme_sysfs(files: dict[str, str | None]) -> tuple[list[NvmeCtrl], list[str]]:
    """The ``nvme_sysfs`` probe's files -> (controllers by name, problems). Never raises."""
    by: dict[str, dict[str, str]] = {}
    problems: list[str] = []
    for path, content in sorted(files.items()):
        m = re.fullmatch(r"/sys/class/nvme/(nvme\d{1,6})/(?:device/)?([a-z_]+)", path)
        if not m:
            problems.append(f"unexpected path {path}")
            continue
        if content is None:
            continue
        by.setdefault(m.group(1), {})[m.group(2)] = content.strip()
    ctrls = []
    for name in sorted(by, key=lambda n: sat_int(n[4:])):
        f = by[name]
        width, mwidth = _int(f.get("current_link_width")), _int(f.get("max_link_width"))
        lines = tuple(f"/sys/class/nvme/{name}/{'device/' if k.endswith(('_speed', '_width')) else ''}{k}:{v}"
                      for k, v in sorted(f.items()))
        ctrls.append(NvmeCtrl(name, f.get("model", ""), f.get("firmware_rev", ""), f.get("transport", ""),
                              _gts(f.get("current_link_speed")), width, _gts(f.get("max_link_speed")), mwidth, lines))
    return ctrls, problems


def nvme_controller_of(kname: str) -> str:
    """The NVMe controller of a namespace's kernel name (``nvme0n1`` -> ``nvme0``, ``nvme1c1n1`` -> ``nvme1``);
    "" for other devices."""
    m = re.fullmatch(r"(nvme\d+)(?:c\d+)?n\d+(?:p\d+)?", kname)
    return m.group(1) if m else ""


# ------------------------------------------------------------------ /proc/mdstat


@dataclass(frozen=True)
class MdMember:
    name: str  # kernel name of the member (sda1)
    slot: int | None  # the number in [] (the role number md.c prints, not always the slot)
    flags: tuple[str, ...]  # F faulty, S spare, R replacement, W write-mostly, J journal


@dataclass(frozen=True)
class MdArray:
    name: str
    state: str  # active | inactive (and "(read-only)", "(auto-read-only)")
    level: str  # raid1, raid5, ... ("" when inactive)
    members: list[MdMember] = field(default_factory=list)
    raid_disks: int | None = None  # n of [n/m]
    working: int | None = None  # m of [n/m]
    slots: str = ""  # the [UU_] string's inside
    action: str = ""  # resync | recovery | reshape | check | repair ("" when none)
    progress_pct: float | None = None
    delayed: str = ""  # "resync=DELAYED" / "resync=PENDING" lines' word
    lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # why its state cannot be read whole (a cut paste, garbage)

    @property
    def faulty(self) -> list[MdMember]:
        return [m for m in self.members if "F" in m.flags]

    @property
    def degraded(self) -> bool:
        """Fewer working devices than raid devices (``[n/m]`` with m < n, or a ``_`` slot)."""
        if self.raid_disks is not None and self.working is not None and self.working < self.raid_disks:
            return True
        return "_" in self.slots


@dataclass(frozen=True)
class Mdstat:
    personalities: list[str] = field(default_factory=list)
    arrays: list[MdArray] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seen_header: bool = False


_MD_HEAD = lazy_re(r"^(md[\w/.-]{0,64})\s*:\s*(\w+)(\s*\((?:auto-)?read-only\))?\s*(.*)$")
_MEMBER = lazy_re(r"^([\w.:/-]{1,64})\[(\d{1,6})\]((?:\([A-Z]\))*)$")
_COUNTS = lazy_re(r"\[(\d{1,6})/(\d{1,6})\]\s*\[([U_]{0,4096})\]")
_COUNTS_ANY = lazy_re(r"\[(\d{1,40})/(\d{1,40})\](?:\s*\[([U_]{0,4096})(\]?))?")
COUNTED_LEVELS = frozenset({"raid1", "raid4", "raid5", "raid6", "raid10"})
"""Levels whose status line carries ``[n/m] [UU_]`` (drivers/md raid1.c, raid10.c, raid5.c ``status``); raid0, linear
and multipath print none."""
_ACTION = lazy_re(r"\b(resync|recovery|reshape|check|repair)\s*=\s*(\d{1,3}(?:\.\d{1,3})?)%")
_DELAYED = lazy_re(r"\b(resync|recovery|reshape|check|repair)\s*=\s*(DELAYED|PENDING|REMOTE)\b")


_DETAIL_HEAD = lazy_re(r"^\s*/dev/(md[\w/.-]{0,64}):\s*$")
_DETAIL_KV = lazy_re(r"^\s*([A-Z][A-Za-z ]{1,40}?)\s*:\s*(.*?)\s*$")
_DETAIL_ROW = lazy_re(r"^\s*(\d+|-)\s+(\d+)\s+(\d+)\s+(\d+|-)\s+([a-z][a-z -]*?)\s+(/dev/\S+)\s*$")


def parse_mdadm_detail(text: str) -> Mdstat:
    """``mdadm --detail /dev/mdN`` -> the same :class:`Mdstat` as /proc/mdstat's (mdadm(8), --detail): "Raid Level",
    "Raid Devices" (the array's slots), "Active Devices" (in sync), "State : active, degraded", the device table
    ("active sync /dev/sdb3", "faulty /dev/sda3", a "removed" slot) and "Resync/Rebuild Status : N% complete". The
    array's degraded state is read from its counts as in /proc/mdstat. Never raises."""
    arrays: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for raw in text.splitlines()[:200000]:
        m = _DETAIL_HEAD.match(raw)
        if m:
            cur = {"name": m.group(1), "state": "active", "level": "", "members": [], "lines": [raw]}
            arrays.append(cur)
            continue
        if cur is None:
            continue
        r = _DETAIL_ROW.match(raw)
        if r:
            state, dev = r.group(5), r.group(6).removeprefix("/dev/")
            role = sat_int(r.group(4)) if r.group(4) != "-" else None
            flags = tuple(f for f, w in (("F", "faulty"), ("S", "spare")) if w in state)
            cur["members"].append(MdMember(dev, role, flags))
            cur["lines"].append(raw)
            continue
        kv = _DETAIL_KV.match(raw)
        if not kv:
            continue
        key, value = kv.group(1).strip().lower(), kv.group(2)
        if key == "raid level":
            cur["level"] = value.strip().lower()
        elif key == "raid devices" and re.fullmatch(r"\d{1,6}", value):
            cur["raid_disks"] = sat_int(value)
        elif key == "active devices" and re.fullmatch(r"\d{1,6}", value):
            cur["working"] = sat_int(value)
        elif key == "total devices" and re.fullmatch(r"\d{1,6}", value) and "working" not in cur:
            # an excerpt cut before "Active Devices": the members present bound the working ones (a two-slot mirror
            # with "Total Devices : 1" runs on one disk; held-out round 142)
            cur["working"] = sat_int(value)
        elif key == "state":
            cur["state"] = "inactive" if "inactive" in value else "active"
            cur["lines"].append(raw)
            continue
        else:
            a = re.match(r"(resync|rebuild|reshape|check)\s+status", key)
            pm = re.match(r"(\d{1,3})%", value)
            if a and pm:
                cur.update(action={"rebuild": "recovery"}.get(a.group(1), a.group(1)), progress_pct=float(pm.group(1)))
            else:
                continue
        cur["lines"].append(raw)
    return Mdstat([], [MdArray(**a) for a in arrays], [], False)


def parse_mdstat(text: str) -> Mdstat:
    """/proc/mdstat -> :class:`Mdstat` (each array with its members, ``[n/m] [UU_]``, and the sync action in
    progress). A paste's re-indented lines read the same; ``mdadm --detail`` output is read by
    :func:`parse_mdadm_detail`. Never raises."""
    if re.search(r"^\s*/dev/md[\w/.-]*:\s*$", text[:20000], re.M) and re.search(r"^\s*Raid Level\s*:", text[:20000], re.M):
        return parse_mdadm_detail(text)
    personalities: list[str] = []
    arrays: list[dict[str, Any]] = []
    problems: list[str] = []
    seen_header = False
    cur: dict[str, Any] | None = None
    for raw in text.splitlines()[:200000]:
        line = raw.strip()
        if not line:
            cur = None
            continue
        if line.startswith("Personalities"):
            seen_header = True
            personalities = re.findall(r"\[(\w{1,32})\]", line)
            continue
        if line.startswith("unused devices"):
            seen_header = True
            cur = None
            continue
        m = _MD_HEAD.match(line)
        if m:
            rest = m.group(4).split()
            level = ""
            if rest and not _MEMBER.match(rest[0]):
                level = rest.pop(0)
            cur = {"name": m.group(1), "state": m.group(2) + (m.group(3) or ""), "level": level, "members": [],
                   "lines": [raw]}
            for tok in rest:
                mm = _MEMBER.match(tok)
                if mm:
                    cur["members"].append(MdMember(mm.group(1), sat_int(mm.group(2)),
                                                   tuple(re.findall(r"\(([A-Z])\)", mm.group(3)))))
                else:
                    problems.append(f"{m.group(1)}: unreadable member {tok!r}")
                    cur["bad_member"] = True
            arrays.append(cur)
            continue
        if cur is None:
            problems.append(line[:200])
            continue
        cur["lines"].append(raw)
        c = _COUNTS_ANY.search(line)
        if c:
            cur.update(raid_disks=sat_int(c.group(1)), working=sat_int(c.group(2)), slots=c.group(3) or "",
                       counts_raw=line[c.start():c.end()][:200])
            if c.group(3) is None or not c.group(4):
                cur["cut"] = f"{cur['name']}: its [n/m] [UU_] status is cut short ({line[c.start():c.end()]!r})"
        a = _ACTION.search(line)
        if a:
            cur.update(action=a.group(1), progress_pct=float(a.group(2)))
        d = _DELAYED.search(line)
        if d:
            cur["delayed"] = f"{d.group(1)}={d.group(2)}"
    return Mdstat(personalities, [_md_array(a) for a in arrays], problems, seen_header)


def _md_array(a: dict[str, Any]) -> MdArray:
    """One array's fields -> :class:`MdArray`, with what makes its state unreadable in ``problems``: a member cut
    short or unreadable, the ``[n/m]`` line missing (a level that prints one) or cut short, or counts that cannot
    be (more working devices than raid devices, a slot string of another length, over 4096 devices)."""
    probs: list[str] = []
    name = a["name"]
    if a.pop("bad_member", None):
        probs.append(f"{name}: a member is cut short or unreadable")
    cut = a.pop("cut", "")
    raw = a.pop("counts_raw", "")
    n, m, slots = a.get("raid_disks"), a.get("working"), a.get("slots", "")
    if a["state"].startswith("active") and a["level"] in COUNTED_LEVELS and n is None:
        probs.append(f"{name}: no [n/m] [UU_] status line (the text ends before it?)")
    if cut:
        probs.append(cut)
    if n is not None and m is not None:
        if n > 4096 or m > n:
            probs.append(f"{name}: {raw} is not a possible count of raid devices / working devices")
        elif slots and not cut and len(slots) != n:
            probs.append(f"{name}: [{slots}] has {len(slots)} slots for {n} raid devices")
    return MdArray(**a, problems=probs)


def detect_mdstat(text: str) -> float:
    """Confidence that ``text`` is /proc/mdstat (``cat /proc/mdstat``)."""
    head = text[:20000]
    if re.search(r"^\s*Personalities\s*:", head, re.M) and (re.search(r"^\s*md[\w/.-]*\s*:\s*(?:in)?active\b", head, re.M)
                                                          or "unused devices" in head):
        return 0.95
    if re.search(r"^\s*md\d+\s*:\s*active\s+raid\d+\s", head, re.M) and _COUNTS.search(head):
        return 0.8
    if re.search(r"^\s*/dev/md[\w/.-]*:\s*$", head, re.M) and re.search(r"^\s*Raid Level\s*:", head, re.M):
        return 0.95  # mdadm --detail
    return 0.0


# ------------------------------------------------------------------ fio --output-format=json


@dataclass(frozen=True)
class FioJob:
    """One job of a fio result (JSON or normal output: the same facts): its read side (a read benchmark's numbers),
    its write side and its fsync/fdatasync latencies. ``bs_bytes`` from the job's or the global options (normal
    output: the header line's ``bs=(R) 4096B-4096B``, its first size); ``read_bw_bytes_s`` is ``bw_bytes`` (fio >=
    3.x), else ``bw`` x 1024 (KiB/s); ``*_clat_p99_ns`` the 99th percentile completion latency when fio printed
    percentiles. ``sync_*_ns``: the fsync/fdatasync/sync_file_range latencies (JSON ``sync.lat_ns``, normal output's
    ``sync (usec): min=, max=, avg=`` and ``sync percentiles``), ``None`` when the job issued none; ``sync_opts`` the
    sync options when known (``fdatasync=1``: JSON job options, or the fio command typed above a normal output);
    ``lines`` the raw lines a finding quotes (normal output only)."""

    name: str
    rw: str
    bs_bytes: int | None
    iodepth: int | None
    numjobs: int | None
    error: int
    read_bw_bytes_s: float | None
    read_iops: float | None
    read_io_bytes: int | None
    read_runtime_ms: int | None
    read_clat_p99_ns: float | None
    write_bw_bytes_s: float | None
    direct: bool | None
    filename: str = ""
    groupid: int | None = None
    ioengine: str = ""
    write_iops: float | None = None
    write_io_bytes: int | None = None
    write_runtime_ms: int | None = None
    write_clat_p99_ns: float | None = None
    sync_p99_ns: float | None = None
    sync_avg_ns: float | None = None
    sync_max_ns: float | None = None
    sync_min_ns: float | None = None
    sync_opts: str = ""
    lines: tuple[str, ...] = ()
    read_share_pct: float | None = None  # normal output's "bw (KiB/s): ... per=24.89%": this job's share of its group


@dataclass(frozen=True)
class FioRun:
    version: str = ""
    jobs: list[FioJob] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # fio's own "fio: ..." / "fio: pid=..., err=" lines
    disks: list[str] = field(default_factory=list)  # disk_util names (the devices fio saw under the file)
    problems: list[str] = field(default_factory=list)
    found: bool = False  # a fio result (a JSON document, or a normal output's job) was found
    format: str = ""  # "json" or "normal": which output it was read from


_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def fio_size_bytes(v: Any) -> int | None:
    """A fio size option ("1M", "128k", "4096B", "4KiB", "1048576") in bytes, as fio reads it by default
    (kb_base=1024: k = KiB); ``None`` when it is not one number with a unit."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    m = re.fullmatch(r"\s*(\d{1,15})(\.\d{1,6})?\s*([kmgtKMGT]?)(?:i?[bB])?\s*", v) if isinstance(v, str) else None
    if not m:
        return None
    unit = _SIZE_UNITS[m.group(3).lower()]
    if m.group(2):  # fio's own header prints "64.0KiB"
        return int(round(float(m.group(1) + m.group(2)) * unit))
    return sat_int(m.group(1)) * unit


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str) and re.fullmatch(r"\s*\d{1,20}(?:\.\d{1,12})?\s*", v):
        return float(v)
    return None


def _json_docs(text: str) -> Iterator[Any]:
    dec = json.JSONDecoder()
    for m in re.finditer(r"^\{", text, re.M):
        try:
            doc, _ = dec.raw_decode(text, m.start())
        except (ValueError, RecursionError):
            continue
        yield doc


def _job(j: dict[str, Any], glob: dict[str, Any]) -> FioJob:
    opts: dict[str, Any] = j["job options"] if isinstance(j.get("job options"), dict) else {}

    def opt(k: str) -> Any:
        return opts.get(k, glob.get(k))

    rd: dict[str, Any] = j["read"] if isinstance(j.get("read"), dict) else {}
    wr: dict[str, Any] = j["write"] if isinstance(j.get("write"), dict) else {}

    def bw(side: dict[str, Any]) -> float | None:
        b = _num(side.get("bw_bytes"))
        if b is None:
            kib = _num(side.get("bw"))
            b = kib * 1024 if kib is not None else None
        return b

    def p99(side: dict[str, Any], key: str = "clat_ns") -> float | None:
        lat = side.get(key)
        if isinstance(lat, dict) and isinstance(lat.get("percentile"), dict):
            return _num(lat["percentile"].get("99.000000"))
        return None

    def whole(v: Any) -> int | None:
        n = _num(v)
        return int(n) if n is not None else None

    # fio's sync block: {"total_ios": ..., "lat_ns": {"min", "max", "mean", "N", "percentile"}} (stat.c
    # add_ddir_status_json, DDIR_SYNC); N = 0 when the job issued no fsync/fdatasync
    sy: dict[str, Any] = j["sync"] if isinstance(j.get("sync"), dict) else {}
    sl: dict[str, Any] = sy["lat_ns"] if isinstance(sy.get("lat_ns"), dict) else {}
    synced = bool(_num(sl.get("N")))
    err = _num(j.get("error"))
    direct = opt("direct")
    sync_opts = ", ".join(f"{k}={_str(opt(k)) or opt(k)}" for k in ("fsync", "fdatasync", "sync", "end_fsync", "fsync_on_close")
                          if opt(k) not in (None, "", "0", 0))
    return FioJob(name=_str(j.get("jobname")), rw=_str(opt("rw") or opt("readwrite")), bs_bytes=fio_size_bytes(opt("bs") or opt("blocksize")),
                  iodepth=_int(opt("iodepth")), numjobs=_int(opt("numjobs")), error=int(err) if err is not None else 0,
                  read_bw_bytes_s=bw(rd), read_iops=_num(rd.get("iops")),
                  read_io_bytes=whole(rd.get("io_bytes")), read_runtime_ms=whole(rd.get("runtime")), read_clat_p99_ns=p99(rd),
                  write_bw_bytes_s=bw(wr), direct=_bool(direct) if direct is not None else None,
                  filename=_str(opt("filename")) or _str(opt("directory")), groupid=_int(j.get("groupid")),
                  ioengine=_str(opt("ioengine")), write_iops=_num(wr.get("iops")), write_io_bytes=whole(wr.get("io_bytes")),
                  write_runtime_ms=whole(wr.get("runtime")), write_clat_p99_ns=p99(wr),
                  sync_p99_ns=p99(sy, "lat_ns") if synced else None, sync_avg_ns=_num(sl.get("mean")) if synced else None,
                  sync_max_ns=_num(sl.get("max")) if synced else None, sync_min_ns=_num(sl.get("min")) if synced else None,
                  sync_opts=sync_opts)


def parse_fio_json(text: str) -> FioRun:
    """fio's ``--output-format=json`` result, alone or inside a log (an action's log, a paste with the command
    and fio's ``fio: ...`` error lines before it, or ``--output-format=json,normal``) -> :class:`FioRun`. Every
    JSON document with a ``jobs`` list is read (several fio runs in one log: all their jobs). Never raises."""
    errors = [ln.strip() for ln in text.splitlines()[:100000] if re.match(r"\s*fio:\s", ln)][:20]
    if len(text) > 64 << 20:
        return FioRun(errors=errors, problems=["over 64 MiB: not read"])
    version = ""
    jobs: list[FioJob] = []
    disks: list[str] = []
    problems: list[str] = []
    found = False
    for doc in _json_docs(text):
        if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
            continue
        found = True
        version = version or _str(doc.get("fio version"))
        glob: dict[str, Any] = doc["global options"] if isinstance(doc.get("global options"), dict) else {}
        for j in doc["jobs"][:1000]:
            if isinstance(j, dict):
                jobs.append(_job(j, glob))
            else:
                problems.append("a job that is not an object")
        util: list[Any] = doc["disk_util"] if isinstance(doc.get("disk_util"), list) else []
        for d in util:
            if isinstance(d, dict) and _str(d.get("name")):
                disks.append(_str(d.get("name")))
    if not found:
        problems.append("no fio JSON result (a document with a 'jobs' list) in this text")
    return FioRun(version, jobs, errors, disks, problems, found, "json" if found else "")


def detect_fio_json(text: str) -> float:
    """Confidence that ``text`` is (or holds) fio's JSON result (``fio --output-format=json``)."""
    head = text[:200000]
    if re.search(r'"fio version"\s*:\s*"fio-', head) and re.search(r'"jobs"\s*:\s*\[', head):
        return 0.95
    return 0.0


# ------------------------------------------------------------------ fio's normal (default) output

_NS_PER = {"nsec": 1.0, "usec": 1e3, "msec": 1e6}
"""The time units fio's normal output names in a latency heading (stat.c ``display_lat``, ``show_clat_percentiles``)."""
_BYTE_UNIT = {"b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40, "pib": 1 << 50,
              "kb": 10 ** 3, "mb": 10 ** 6, "gb": 10 ** 9, "tb": 10 ** 12, "pb": 10 ** 15}
"""Sizes as fio's ``num2str`` prints them: ``KiB``/``MiB``/... with kb_base=1024 (its default), ``kB``/``MB``/... with
kb_base=1000; a bandwidth in ``bit`` units (``unit_base=1``: ``Mibit/s``) is an eighth of the byte figure."""
_COUNT_UNIT = {"": 1.0, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}
"""``num2str`` suffixes of a plain count (IOPS, a latency's min/max): powers of 1000."""

_FIO_STATUS = lazy_re(r"^(\S[^\n]{0,200}?): \(groupid=(\d{1,9}), jobs=(\d{1,9})\): err=\s*(-?\d{1,9})(.*)$")
_FIO_HEADER = lazy_re(r"^(\S[^\n]{0,200}?): \(g=(\d{1,9})\): rw=(\w{1,32}), bs=(.{0,200}?), ioengine=([\w.:-]{1,64}), "
                         r"iodepth=(\d{1,9})")
_FIO_SIDE = lazy_re(r"^\s+(read|write|trim|mixed)\s*: IOPS=(\d{1,15}(?:\.\d{1,6})?)([kMGTP]?), "
                       r"BW=(\d{1,15}(?:\.\d{1,6})?)([KMGTPkmgtp]?i?)(B|bit)/s(.*)$")
_FIO2_SIDE = lazy_re(r"^\s+(read|write|trim)\s*: io=(\d{1,15}(?:\.\d{1,6})?)([KMGTP]?B), "
                     r"bw=(\d{1,15}(?:\.\d{1,6})?)([KMGTP]?B)/s, iops=(\d{1,15}), runt=\s*(\d{1,15})msec")
"""fio 2.x's side line ("read : io=6142.3MB, bw=9003.8KB/s, iops=2250, runt=698555msec"); its KB/MB are 1024-based
(fio 2 printed binary units with SI-looking names: the 3.x line shows both, "BW=72.8MiB/s (76.4MB/s)")."""
_FIO_IO = lazy_re(r"\((\d{1,15}(?:\.\d{1,6})?)([KMGTPkmgtp]?i?B)/(\d{1,15})msec\)")
_FIO_PCT_HEAD = lazy_re(r"^\s+(clat|lat|sync) percentiles \((nsec|usec|msec)\):")
_FIO_PCT = lazy_re(r"(\d{1,3}\.\d{1,6})th=\[\s*(\d{1,20})\]")
_FIO_SYNC_HEAD = lazy_re(r"^\s+fsync/fdatasync/sync_file_range(?:/syncfs)?:\s*$")
_FIO_SYNC_LAT = lazy_re(r"^\s+sync \((nsec|usec|msec)\): min=\s*(\d{1,15}(?:\.\d{1,6})?)([kMGTP]?), "
                           r"max=\s*(\d{1,15}(?:\.\d{1,6})?)([kMGTP]?), avg=\s*(\d{1,15}(?:\.\d{1,6})?)")
_FIO_VERSION = lazy_re(r"^\s*(fio-\d{1,3}(?:\.\d{1,4}){0,3}[\w.+~-]{0,40})\s*$")
_FIO_DISK = lazy_re(r"^\s+([\w./:-]{1,64}): ios=\d")


def _bytes_of(num: str, unit: str) -> float | None:
    mult = _BYTE_UNIT.get(unit.lower())
    return float(num) * mult if mult is not None else None


def _bw_bytes_s(num: str, prefix: str, unit: str) -> float | None:
    if unit == "bit":
        mult = _BYTE_UNIT.get((prefix + "b").lower()) if prefix else 1
        return float(num) * mult / 8 if mult is not None else None
    return _bytes_of(num, prefix + "B")


def fio_command_options(command: str) -> dict[str, str]:
    """The ``--name=value`` options of a fio command line (``fio --rw=write --fdatasync=1 --filename=/dev/nvme1n1``);
    empty when ``command`` does not run fio. A bare ``--flag`` maps to "1"."""
    toks = command.split()
    at = next((i for i, t in enumerate(toks[:20]) if t.rsplit("/", 1)[-1] == "fio"), None)
    if at is None:
        return {}
    opts: dict[str, str] = {}
    for t in toks[at + 1:at + 200]:
        if t.startswith("--") and len(t) > 2:
            k, _, v = t[2:].partition("=")
            opts.setdefault(k, v.strip("'\"") if v else "1")
    return opts


def parse_fio_normal(text: str, command: str = "") -> FioRun:
    """fio's default human-readable output (``--output-format=normal``), as a terminal shows it or pasted -> the same
    :class:`FioRun` / :class:`FioJob` facts :func:`parse_fio_json` gives. Per job: its status line (name, groupid,
    ``err=``), the header line fio printed for it before the run (rw, bs, ioengine, iodepth), each side's ``IOPS=``,
    ``BW=`` and ``(io/runtime)``, the clat (else lat) percentiles' 99.00th, and the fsync/fdatasync block; ``Disk
    stats`` names the devices. ``command``: the fio command typed above the output, if any (its --direct,
    --filename/--directory and sync options, which the output does not repeat). Never raises."""
    if len(text) > 64 << 20:
        return FioRun(problems=["over 64 MiB: not read"])
    lines = [ln.rstrip("\r") for ln in text.splitlines()[:200000]]
    errors = [ln.strip() for ln in lines if re.match(r"\s*fio:\s", ln)][:20]
    if not command:  # the command pasted above its output without a prompt ("fio --bs=64k ...", "./fio ...")
        command = next((ln.strip() for ln in lines[:5] if re.match(r"\s*(?:\S*/)?fio\s+-", ln)), "")
    opts = fio_command_options(command)
    version = ""
    headers: dict[str, dict[str, Any]] = {}
    jobs: list[dict[str, Any]] = []
    disks: list[str] = []
    problems: list[str] = []
    cur: dict[str, Any] | None = None
    side = ""  # the side whose lines follow: read / write / trim / mixed / sync
    pct: tuple[str, str, float] | None = None  # (target key, heading kind, ns per unit) while percentile rows follow
    in_disks = False
    for ln in lines:
        if not version:
            v = _FIO_VERSION.match(ln)
            if v:
                version = v.group(1)
                continue
        h = _FIO_HEADER.match(ln)
        if h:
            bs = re.search(r"(\d{1,15}(?:\.\d{1,6})?[kKmMgG]?i?[bB]?)-", h.group(4))
            headers.setdefault(h.group(1), {"rw": h.group(3), "bs": fio_size_bytes(bs.group(1)) if bs else None,
                                            "ioengine": h.group(5), "iodepth": sat_int(h.group(6))})
            continue
        st = _FIO_STATUS.match(ln)
        if st:
            cur = {"name": st.group(1), "groupid": sat_int(st.group(2)), "jobs": sat_int(st.group(3)),
                   "error": sat_int(st.group(4)) if not st.group(4).startswith("-") else -sat_int(st.group(4)[1:]),
                   "lines": [ln.strip()]}
            jobs.append(cur)
            side, pct, in_disks = "", None, False
            continue
        if ln.startswith("Run status group") or ln.startswith("Disk stats"):
            cur, side, pct = None, "", None
            in_disks = ln.startswith("Disk stats")
            continue
        if in_disks:
            d = _FIO_DISK.match(ln)
            if d:
                disks.append(d.group(1))
            continue
        if cur is None:
            continue
        if pct is not None:
            if ln.lstrip().startswith("|"):
                for p, val in _FIO_PCT.findall(ln):
                    if abs(float(p) - 99.0) < 1e-9:
                        cur.setdefault(pct[0], sat_int(val) * pct[2])
                        if pct[0] == "sync_p99":
                            cur["lines"].append(ln.strip())
                continue
            if pct[0] == "sync_p99" and "sync_p99" not in cur:
                cur["sync_cut"] = True
            pct = None
        s = _FIO_SIDE.match(ln)
        if s:
            side = s.group(1)
            cur.setdefault(side, {})
            sd = cur[side]
            sd["iops"] = float(s.group(2)) * _COUNT_UNIT[s.group(3).lower()]
            sd["bw"] = _bw_bytes_s(s.group(4), s.group(5), s.group(6))
            io = _FIO_IO.search(s.group(7))
            if io:
                b = _bytes_of(io.group(1), io.group(2))
                sd["io_bytes"] = int(b) if b is not None else None
                sd["runtime_ms"] = sat_int(io.group(3))
            cur["lines"].append(ln.strip())
            continue
        s2 = _FIO2_SIDE.match(ln)
        if s2:
            side = s2.group(1)
            sd = cur.setdefault(side, {})
            sd["iops"] = float(s2.group(6))
            io2, bw2 = _bytes_of(s2.group(2), s2.group(3)[:-1] + "iB"), _bytes_of(s2.group(4), s2.group(5)[:-1] + "iB")
            sd["bw"] = bw2
            sd["io_bytes"] = int(io2) if io2 is not None else None
            sd["runtime_ms"] = sat_int(s2.group(7))
            cur["lines"].append(ln.strip())
            continue
        if _FIO_SYNC_HEAD.match(ln):
            side = "sync"
            cur["sync_block"] = True
            cur["lines"].append(ln.strip())
            continue
        sl = _FIO_SYNC_LAT.match(ln)
        if sl and side == "sync":
            unit = _NS_PER[sl.group(1)]
            cur["sync_min"] = float(sl.group(2)) * _COUNT_UNIT[sl.group(3).lower()] * unit
            cur["sync_max"] = float(sl.group(4)) * _COUNT_UNIT[sl.group(5).lower()] * unit
            cur["sync_avg"] = float(sl.group(6)) * unit
            cur["lines"].append(ln.strip())
            continue
        share = re.match(r"\s*bw \(\s*[KMG]?i?B/s\): .*\bper=\s*(\d{1,3}(?:\.\d+)?)%", ln)
        if share and side in ("read", "write", "mixed") and side in cur:
            cur[side]["share_pct"] = float(share.group(1))
            cur["lines"].append(ln.strip())
            continue
        ph = _FIO_PCT_HEAD.match(ln)
        if ph:
            kind, unit = ph.group(1), _NS_PER[ph.group(2)]
            if kind == "sync" and side == "sync":
                pct = ("sync_p99", kind, unit)
                cur["lines"].append(ln.strip())
            elif kind in ("clat", "lat") and side in ("read", "write", "trim", "mixed"):
                pct = (f"{side}_{kind}_p99", kind, unit)
            continue
    if pct is not None and cur is not None and pct[0] == "sync_p99" and "sync_p99" not in cur:
        cur["sync_cut"] = True
    out_jobs = [_normal_job(j, headers.get(j["name"], {}), opts, problems) for j in jobs[:1000]]
    found = bool(out_jobs)
    if not found:
        problems.append("no fio job result (a 'NAME: (groupid=N, jobs=N): err=' line) in this text")
    return FioRun(version, out_jobs, errors, disks, problems, found, "normal" if found else "")


def _normal_job(j: dict[str, Any], head: dict[str, Any], opts: dict[str, str], problems: list[str]) -> FioJob:
    """One job's dict from :func:`parse_fio_normal` -> :class:`FioJob` (what the output lacks, from the command)."""
    rd: dict[str, Any] = j.get("read") or j.get("mixed") or {}
    wr: dict[str, Any] = j.get("write") or {}
    name = j["name"]
    if j.get("sync_block") and ("sync_avg" not in j or j.get("sync_cut")):
        problems.append(f"{name}: its fsync/fdatasync block is cut short (no 'sync (usec): ...' line or no 99.00th "
                        "percentile)")
    if not rd and not wr and not j.get("sync_block"):
        problems.append(f"{name}: no read or write result under its status line (cut short?)")
    direct = opts.get("direct")
    sync_opts = ", ".join(f"{k}={opts[k]}" for k in ("fsync", "fdatasync", "sync", "end_fsync", "fsync_on_close")
                          if opts.get(k, "0") not in ("", "0"))
    rw = head.get("rw") or opts.get("rw") or opts.get("readwrite") or ""
    return FioJob(name=name, rw=rw, bs_bytes=head.get("bs") if head.get("bs") is not None else fio_size_bytes(opts.get("bs")),
                  iodepth=head.get("iodepth"), numjobs=j.get("jobs"), error=j["error"],
                  read_bw_bytes_s=rd.get("bw"), read_iops=rd.get("iops"), read_io_bytes=rd.get("io_bytes"),
                  read_runtime_ms=rd.get("runtime_ms"), read_share_pct=rd.get("share_pct"),
                  read_clat_p99_ns=j.get("read_clat_p99", j.get("mixed_clat_p99", j.get("read_lat_p99", j.get("mixed_lat_p99")))),
                  write_bw_bytes_s=wr.get("bw"), direct=_bool(direct) if direct is not None else None,
                  filename=opts.get("filename") or opts.get("directory") or "", groupid=j.get("groupid"),
                  ioengine=head.get("ioengine") or opts.get("ioengine") or "", write_iops=wr.get("iops"),
                  write_io_bytes=wr.get("io_bytes"), write_runtime_ms=wr.get("runtime_ms"),
                  write_clat_p99_ns=j.get("write_clat_p99", j.get("write_lat_p99")),
                  sync_p99_ns=j.get("sync_p99"), sync_avg_ns=j.get("sync_avg"), sync_max_ns=j.get("sync_max"),
                  sync_min_ns=j.get("sync_min"), sync_opts=sync_opts, lines=tuple(j["lines"][:24]))


def parse_fio(text: str, command: str = "") -> FioRun:
    """A fio result in either form: the JSON document(s) when the text holds one (``--output-format=json`` or
    ``json,normal``), else fio's normal output (:func:`parse_fio_normal`). Never raises."""
    run = parse_fio_json(text)
    if run.found:
        return run
    normal = parse_fio_normal(text, command)
    if normal.found:
        return normal
    return dataclasses.replace(run, problems=run.problems + normal.problems)


def detect_fio_normal(text: str) -> float:
    """Confidence that ``text`` is fio's normal (default) output: a job's status line ``NAME: (groupid=N, jobs=N):
    err= E`` with a side's ``IOPS=``/``BW=`` or the ``Run status group N (all jobs):`` summary; fio's header line
    (``NAME: (g=0): rw=..., bs=..., ioengine=..., iodepth=N``) with its version line alone (a run cut before its
    results) is less sure."""
    head = text[:200000]
    status = re.search(r"^\S[^\n]{0,200}?: \(groupid=\d{1,9}, jobs=\d{1,9}\): err=\s*-?\d", head, re.M)
    if status and (re.search(r"^\s+(?:read|write|trim|mixed)\s*: IOPS=[\d.]+[kMGTP]?, BW=", head, re.M)
                   or re.search(r"^Run status group \d{1,9} \(all jobs\):", head, re.M)):
        return 0.95
    header = re.search(r"^\S[^\n]{0,200}?: \(g=\d{1,9}\): rw=\w+, bs=[^\n]*ioengine=[\w.:-]+, iodepth=\d", head, re.M)
    if header and (status or re.search(r"^\s*fio-\d", head, re.M)):
        return 0.8
    if status or (re.search(r"^Run status group \d{1,9} \(all jobs\):", head, re.M)
                  and re.search(r"^\s+(?:READ|WRITE|TRIM|MIXED): bw=[\d.]+\w*/s \(", head, re.M)):
        return 0.6
    return 0.0


def detect_fio(text: str) -> float:
    """Confidence that ``text`` is a fio result, JSON (:func:`detect_fio_json`) or normal output
    (:func:`detect_fio_normal`)."""
    return max(detect_fio_json(text), detect_fio_normal(text))


# ------------------------------------------------------------------ nvme list


@dataclass(frozen=True)
class NvmeNamespace:
    """One namespace row of ``nvme list`` (nvme-cli): ``used``/``size`` as printed ("3.84  TB", in the text form;
    decimal units as nvme-cli prints them) or in bytes (``-o json``'s UsedBytes/PhysicalSize)."""

    node: str
    serial: str
    model: str
    used: str
    size: str
    firmware: str
    line: str


@dataclass(frozen=True)
class NvmeList:
    namespaces: list[NvmeNamespace] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


_NVME_LIST_HDR = lazy_re(r"^Node\s+(?:Generic\s+)?SN\s+Model\s+Namespace\s+Usage\s+Format\s+FW Rev\s*$")


def _nvme_bytes(v: Any) -> str:
    return f"{v / 1e12:.2f} TB" if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else ""


def parse_nvme_list(text: str) -> NvmeList:
    """``nvme list`` (nvme-cli's table: Node, [Generic,] SN, Model, Namespace, Usage, Format, FW Rev, columns as wide
    as the dashes under the header) or ``nvme list -o json`` (``{"Devices": [{"DevicePath", "ModelNumber",
    "SerialNumber", "UsedBytes", "PhysicalSize", "Firmware"}]}``, nvme-cli 1.x's flat form) -> :class:`NvmeList`.
    Never raises."""
    res = NvmeList()
    body = text[text.find("{"):] if "{" in text else ""
    if body.strip():
        try:
            doc = json.loads(body)
        except ValueError:
            doc = None
        devs = doc.get("Devices") if isinstance(doc, dict) else None
        if isinstance(devs, list):
            for d in devs:
                if not isinstance(d, dict) or not d.get("DevicePath"):
                    res.problems.append(json.dumps(d)[:200])
                    continue
                res.namespaces.append(NvmeNamespace(
                    str(d.get("DevicePath")), str(d.get("SerialNumber", "")), str(d.get("ModelNumber", "")).strip(),
                    _nvme_bytes(d.get("UsedBytes")), _nvme_bytes(d.get("PhysicalSize")), str(d.get("Firmware", "")),
                    f'{d.get("DevicePath")} {str(d.get("ModelNumber", "")).strip()}'))
            return res
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if _NVME_LIST_HDR.match(ln.strip()) and i + 1 < len(lines) and lines[i + 1].lstrip().startswith("---"):
            spans = [(m.start(), m.end()) for m in re.finditer(r"-+", lines[i + 1])]
            names = [ln[a:b].strip() if b < len(ln) else ln[a:].strip() for a, b in spans]
            for row in lines[i + 2:]:
                if not row.strip():
                    continue
                if not row.lstrip().startswith("/dev/"):
                    res.problems.append(row)
                    continue
                cells = dict(zip(names, (row[a:(spans[k + 1][0] if k + 1 < len(spans) else len(row))].strip()
                                         for k, (a, _) in enumerate(spans))))
                usage = re.split(r"\s*/\s*", cells.get("Usage", ""), maxsplit=1)
                res.namespaces.append(NvmeNamespace(
                    cells.get("Node", ""), cells.get("SN", ""), cells.get("Model", ""),
                    re.sub(r"\s+", " ", usage[0]), re.sub(r"\s+", " ", usage[-1]) if len(usage) == 2 else "",
                    cells.get("FW Rev", ""), row.strip()))
            break
    return res


def detect_nvme_list(text: str) -> float:
    """Confidence that ``text`` is ``nvme list`` (the table or ``-o json``'s flat Devices list)."""
    if '"Devices"' in text and '"DevicePath"' in text and ('"ModelNumber"' in text or '"PhysicalSize"' in text):
        return 0.95 if parse_nvme_list(text).namespaces else 0.0
    if _NVME_LIST_HDR.search(text) or re.search(r"^Node\s+(?:Generic\s+)?SN\s+Model\s", text, re.M):
        return 0.95 if parse_nvme_list(text).namespaces else 0.5
    return 0.0


# ------------------------------------------------------------------ gdscheck -p: GPUDirect Storage's platform check


@dataclass(frozen=True)
class GdsCheck:
    """``gdscheck -p`` (NVIDIA GPUDirect Storage): ``version`` (GDS release), ``nvidia_fs`` (the nvidia-fs kernel
    module's version, "" when not shown), ``backends`` (each DRIVER CONFIGURATION entry: "NVMe", "NFS", "WekaFS",
    "Userspace RDMA", ... -> "Supported" / "Unsupported" / ...), ``rdma_up`` / ``rdma_down`` (--rdma_device_status),
    ``gpus`` ((index, name, supports GDS, line)), ``verified`` (True: "Platform verification succeeded"; False: an
    error said; None: not in the paste), ``compat_mode`` (properties.use_compat_mode, None when not shown)."""

    version: str = ""
    nvidia_fs: str = ""
    backends: dict[str, str] = field(default_factory=dict)
    lines: dict[str, str] = field(default_factory=dict)
    rdma_up: int | None = None
    rdma_down: int | None = None
    gpus: tuple[tuple[int, str, bool, str], ...] = ()
    verified: bool | None = None
    verify_line: str = ""
    compat_mode: bool | None = None


_GDS_BACKEND = lazy_re(r"^\s*(?P<k>[A-Za-z][\w /.-]{1,30}?)\s*:\s*(?P<v>Supported|Unsupported|Not Supported|"
                       r"Disabled|Enabled|Not Loaded.*|Loaded.*)\s*$")
_GDS_GPU = lazy_re(r"^\s*GPU index (\d{1,3}) (.+?) bar:\d+ bar size \(MiB\):\s*\d+,?\s+(supports GDS|"
                   r"does not support GDS|not supported)", re.I)


def parse_gdscheck(text: str) -> GdsCheck:
    """Read ``gdscheck -p`` (GPUDirect Storage troubleshooting guide: the platform check's DRIVER CONFIGURATION,
    CUFILE CONFIGURATION and GPU lines). Never raises."""
    backends: dict[str, str] = {}
    lines: dict[str, str] = {}
    gpus: list[tuple[int, str, bool, str]] = []
    version = nvfs = verify_line = ""
    up = down = None
    verified: bool | None = None
    compat: bool | None = None
    in_driver = False
    for raw in text.splitlines()[:5000]:
        s = raw.strip()
        if not s:
            continue
        m = re.match(r"GDS release version:\s*(\S+)", s)
        if m:
            version = m.group(1)
        m = re.search(r"nvidia_fs version:\s*([\d.]+)", s)
        if m:
            nvfs = m.group(1)
        if s.startswith("DRIVER CONFIGURATION"):
            in_driver = True
            continue
        if s.startswith(("CUFILE CONFIGURATION", "GPU INFO", "PLATFORM INFO", "IOMMU")):
            in_driver = False
        m = re.match(r"--rdma_device_status\s*:\s*Up:\s*(\d{1,4})\s*Down:\s*(\d{1,4})", s)
        if m:
            up, down = int(m.group(1)), int(m.group(2))
            lines["rdma_device_status"] = s
            continue
        m = re.match(r"properties\.use_compat_mode\s*:\s*(true|false)", s)
        if m:
            compat = m.group(1) == "true"
        g = _GDS_GPU.match(s)
        if g:
            gpus.append((int(g.group(1)), g.group(2).strip(), g.group(3).lower() == "supports gds", s))
            continue
        if re.search(r"Platform verification succeeded", s, re.I):
            verified, verify_line = True, s
        elif re.search(r"Platform verification (?:error|failed)|nvidia_fs driver (?:is )?not loaded", s, re.I):
            verified, verify_line = False, s
        b = _GDS_BACKEND.match(s) if in_driver and not s.startswith("--") else None
        if b:
            backends[b.group("k").strip()] = b.group("v").strip()
            lines[b.group("k").strip()] = s
    return GdsCheck(version, nvfs, backends, lines, up, down, tuple(gpus), verified, verify_line, compat)


def detect_gdscheck(text: str) -> float:
    """0.95 for ``gdscheck -p``: its "GDS release version" line, or its DRIVER CONFIGURATION block of backends read
    as Supported / Unsupported."""
    head = text[:50_000]
    if re.search(r"^\s*GDS release version:", head, re.M):
        return 0.95
    if "DRIVER CONFIGURATION" in head and len(re.findall(r"^\s*(?:NVMe|NFS|WekaFS|NVMeOF)\s*:\s*(?:Un)?[Ss]upported",
                                                       head, re.M)) >= 2:
        return 0.9
    return 0.0
