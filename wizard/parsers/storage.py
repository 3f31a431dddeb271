"""The data path's storage: block devices (``lsblk -J``), NVMe controllers (sysfs), md RAID (/proc/mdstat) and
fio's JSON results (``fio --output-format=json``).

Field meanings are the tools' own: lsblk(8) (util-linux; ROTA = rotational, TRAN = transport, PKNAME = parent
kernel name), the kernel's ``Documentation/admin-guide/md.rst`` and ``drivers/md/md.c`` (``md_seq_show``: the
``[n/m]`` of raid devices / working ones, ``[UU_]`` one letter per slot, ``(F)`` faulty, ``(S)`` spare,
``(R)`` replacement, ``(W)`` write-mostly, the ``resync|recovery|reshape|check|repair = P%`` line) and fio's
HOWTO, "Interpreting the output" / JSON output (``bw_bytes`` in bytes/s, ``bw`` in KiB/s, ``iops``,
``clat_ns`` percentiles in ns, ``runtime`` in ms, ``error`` an errno).

Every parser is pure and never raises: it returns what it read and lists what it could not (``problems``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from wizard.common import sat_int

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


_MD_HEAD = re.compile(r"^(md[\w/.-]{0,64})\s*:\s*(\w+)(\s*\((?:auto-)?read-only\))?\s*(.*)$")
_MEMBER = re.compile(r"^([\w.:/-]{1,64})\[(\d{1,6})\]((?:\([A-Z]\))*)$")
_COUNTS = re.compile(r"\[(\d{1,6})/(\d{1,6})\]\s*\[([U_]{0,4096})\]")
_COUNTS_ANY = re.compile(r"\[(\d{1,40})/(\d{1,40})\](?:\s*\[([U_]{0,4096})(\]?))?")
COUNTED_LEVELS = frozenset({"raid1", "raid4", "raid5", "raid6", "raid10"})
"""Levels whose status line carries ``[n/m] [UU_]`` (drivers/md raid1.c, raid10.c, raid5.c ``status``); raid0, linear
and multipath print none."""
_ACTION = re.compile(r"\b(resync|recovery|reshape|check|repair)\s*=\s*(\d{1,3}(?:\.\d{1,3})?)%")
_DELAYED = re.compile(r"\b(resync|recovery|reshape|check|repair)\s*=\s*(DELAYED|PENDING|REMOTE)\b")


def parse_mdstat(text: str) -> Mdstat:
    """/proc/mdstat -> :class:`Mdstat` (each array with its members, ``[n/m] [UU_]``, and the sync action in
    progress). A paste's re-indented lines read the same. Never raises."""
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
    return 0.0


# ------------------------------------------------------------------ fio --output-format=json


@dataclass(frozen=True)
class FioJob:
    """One job of a fio JSON result: its read side (a read benchmark's numbers). ``bs_bytes`` from the job's or
    the global options; ``read_bw_bytes_s`` is ``bw_bytes`` (fio >= 3.x), else ``bw`` x 1024 (KiB/s);
    ``read_clat_p99_ns`` the 99th percentile completion latency when fio printed percentiles."""

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


@dataclass(frozen=True)
class FioRun:
    version: str = ""
    jobs: list[FioJob] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # fio's own "fio: ..." / "fio: pid=..., err=" lines
    disks: list[str] = field(default_factory=list)  # disk_util names (the devices fio saw under the file)
    problems: list[str] = field(default_factory=list)
    found: bool = False  # a fio JSON document was found


_SIZE_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def fio_size_bytes(v: Any) -> int | None:
    """A fio size option ("1M", "128k", "4096B", "4KiB", "1048576") in bytes, as fio reads it by default
    (kb_base=1024: k = KiB); ``None`` when it is not one number with a unit."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    m = re.fullmatch(r"\s*(\d{1,15})\s*([kmgtKMGT]?)(?:i?[bB])?\s*", v) if isinstance(v, str) else None
    if not m:
        return None
    return sat_int(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]


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

    p99 = None
    clat = rd.get("clat_ns")
    if isinstance(clat, dict) and isinstance(clat.get("percentile"), dict):
        p99 = _num(clat["percentile"].get("99.000000"))
    err = _num(j.get("error"))
    direct = opt("direct")
    runtime = _num(rd.get("runtime"))
    io_bytes = _num(rd.get("io_bytes"))
    return FioJob(name=_str(j.get("jobname")), rw=_str(opt("rw") or opt("readwrite")), bs_bytes=fio_size_bytes(opt("bs") or opt("blocksize")),
                  iodepth=_int(opt("iodepth")), numjobs=_int(opt("numjobs")), error=int(err) if err is not None else 0,
                  read_bw_bytes_s=bw(rd), read_iops=_num(rd.get("iops")),
                  read_io_bytes=int(io_bytes) if io_bytes is not None else None,
                  read_runtime_ms=int(runtime) if runtime is not None else None, read_clat_p99_ns=p99,
                  write_bw_bytes_s=bw(wr), direct=_bool(direct) if direct is not None else None,
                  filename=_str(opt("filename")))


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
    return FioRun(version, jobs, errors, disks, problems, found)


def detect_fio_json(text: str) -> float:
    """Confidence that ``text`` is (or holds) fio's JSON result (``fio --output-format=json``)."""
    head = text[:200000]
    if re.search(r'"fio version"\s*:\s*"fio-', head) and re.search(r'"jobs"\s*:\s*\[', head):
        return 0.95
    return 0.0
