"""Parsers for host facts: /etc/os-release, /proc and sysfs files, df.

Every parser is a pure function of a :class:`wizard.probes.ProbeOutput` (or its text) and
never raises on garbage: it returns what it could read, with ``problems`` listing what it
could not (those lines become the evidence of an ``unknown`` finding).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from wizard.parsers._frozen import build_set as _set
from wizard.common import sat_int
from wizard.common import lazy_re


def parse_cpulist(text: str) -> set[int] | None:
    """Kernel cpulist/nodelist format ("0-3,8,10-11") -> set of ints; ``None`` if malformed."""
    out: set[int] = set()
    text = text.strip()
    if not text:
        return out
    for part in text.split(","):
        part = part.strip()
        m = re.fullmatch(r"(\d{1,7})(?:-(\d{1,7}))?", part)  # bounded: int() of huge digit runs raises
        if not m:
            return None
        lo = sat_int(m.group(1))
        hi = sat_int(m.group(2)) if m.group(2) else lo
        if hi < lo or hi - lo > 1_000_000:
            return None
        out.update(range(lo, hi + 1))
    return out


# ------------------------------------------------------------------ os-release and kernel


@dataclass(frozen=True)
class OsRelease:
    """Fields of os-release(5). ``id_like`` is a list; missing fields are empty strings."""

    id: str = ""
    id_like: list[str] = field(default_factory=list)
    version_id: str = ""
    pretty_name: str = ""
    name: str = ""
    version_codename: str = ""
    fields: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def parse_os_release(text: str) -> OsRelease:
    """os-release(5): ``KEY=value`` lines, values optionally shell-quoted."""
    r = OsRelease()
    for line in text.splitlines():
        s = line.strip()
        if not s or s.startswith("#"):
            continue
        m = re.fullmatch(r"([A-Z0-9_]+)=(.*)", s)
        if not m:
            r.problems.append(line)
            continue
        key, raw = m.groups()
        try:
            parts = shlex.split(raw)
            value = parts[0] if parts else ""
        except ValueError:
            value = raw.strip("\"'")
        r.fields[key] = value
    f = r.fields
    name, version_id = f.get("NAME", ""), f.get("VERSION_ID", "")
    return replace(r, id=f.get("ID", "").lower(), id_like=f.get("ID_LIKE", "").lower().split(), version_id=version_id,
                   name=name, pretty_name=f.get("PRETTY_NAME", "") or " ".join(x for x in (name, version_id) if x),
                   version_codename=f.get("VERSION_CODENAME", ""))


# ------------------------------------------------------------------ memory and swap


@dataclass(frozen=True)
class MemInfo:
    """/proc/meminfo values in KiB (the file's unit, printed as "kB")."""

    kib: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def total_kib(self) -> int | None:
        return self.kib.get("MemTotal")

    @property
    def available_kib(self) -> int | None:
        return self.kib.get("MemAvailable")

    @property
    def swap_total_kib(self) -> int | None:
        return self.kib.get("SwapTotal")

    @property
    def swap_free_kib(self) -> int | None:
        return self.kib.get("SwapFree")


def parse_meminfo(text: str) -> MemInfo:
    r = MemInfo()
    for line in text.splitlines():
        m = re.fullmatch(r"\s*([A-Za-z0-9_()]+):\s+(\d{1,20})(?:\s+kB)?\s*", line)  # u64: 20 digits
        if m:
            r.kib[m.group(1)] = sat_int(m.group(2))
        elif line.strip():
            r.problems.append(line)
    return r


MEMINFO_KEYS = frozenset({"MemTotal", "MemFree", "MemAvailable", "Buffers", "Cached", "SwapCached", "Active",
                          "Inactive", "SwapTotal", "SwapFree", "Dirty", "AnonPages", "Slab", "HugePages_Total",
                          "Hugepagesize", "HardwareCorrupted", "CommitLimit", "Committed_AS", "Shmem"})
"""Fields of /proc/meminfo (proc(5)) whose presence identifies a pasted one."""


def detect_meminfo(text: str) -> float:
    """0.9 for /proc/meminfo (or a grep of it): a ``MemTotal:`` line in kB and three or more of its other fields, and
    most lines of its "Key:  N kB" shape."""
    head = text[:20000]
    if not re.search(r"^\s*MemTotal:\s+\d+\s+kB\s*$", head, re.M):
        return 0.0
    m = parse_meminfo(head)
    lines = [ln for ln in head.splitlines() if ln.strip()]
    if len(set(m.kib) & MEMINFO_KEYS) >= 4 and len(m.kib) * 2 >= len(lines):
        return 0.9
    return 0.0


@dataclass(frozen=True)
class SwapDevice:
    filename: str
    type: str
    size_kib: int
    used_kib: int
    priority: int
    line: str


@dataclass(frozen=True)
class Swaps:
    devices: list[SwapDevice] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    header_seen: bool = False

    @property
    def total_kib(self) -> int:
        return sum(d.size_kib for d in self.devices)


def parse_proc_swaps(text: str) -> Swaps:
    """/proc/swaps: header ``Filename Type Size Used Priority`` (sizes in KiB)."""
    r = Swaps()
    for line in text.splitlines():
        if not line.strip():
            continue
        if line.startswith("Filename"):
            _set(r, "header_seen", True)
            continue
        parts = line.split()
        if len(parts) >= 5 and all(re.fullmatch(r"-?\d{1,20}", p) for p in parts[-3:]):
            name = " ".join(parts[:-4]).replace("\\040", " ")
            r.devices.append(SwapDevice(name, parts[-4], sat_int(parts[-3]), sat_int(parts[-2]), sat_int(parts[-1]), line))
        else:
            r.problems.append(line)
    return r


def detect_proc_swaps(text: str) -> float:
    """/proc/swaps (or ``swapon -s``, the same table): the ``Filename Type Size Used Priority`` header."""
    return 1.0 if re.search(r"^Filename\s+Type\s+Size\s+Used\s+Priority\s*$", text, re.M) else 0.0


# ------------------------------------------------------------------ kernel command line


@dataclass(frozen=True)
class Cmdline:
    """Kernel command line: ``params`` maps each key to its last value ("" for bare flags)."""

    raw: str
    params: dict[str, str] = field(default_factory=dict)

    def get(self, key: str) -> str | None:
        return self.params.get(key)


def parse_cmdline(text: str) -> Cmdline:
    raw = text.strip().replace("\0", " ")
    c = Cmdline(raw=raw)
    tokens = raw.split()
    for tok in tokens:
        if tok == "--":  # the rest goes to init, not the kernel
            break
        key, _, value = tok.partition("=")
        c.params[key] = value
    return c


# ------------------------------------------------------------------ CPU and NUMA


@dataclass(frozen=True)
class CpuFacts:
    """CPU model and topology.

    ``sockets``/``cores`` count distinct ``physical_package_id`` and (package, core_id) pairs of
    online CPUs; ``logical`` counts online CPUs. ``smt_active`` comes from
    ``/sys/devices/system/cpu/smt/active`` (None when the file is absent, e.g. on some VMs).
    ``present`` (``/sys/devices/system/cpu/present``) is None when not collected: ``possible``
    also counts empty hot-plug slots the firmware declares ("smpboot: Allowing 4 CPUs, 2 hotplug
    CPUs"), so only ``present`` minus ``online`` are CPUs that are really offline (kernel
    Documentation/ABI/testing/sysfs-devices-system-cpu).
    """

    model: str = ""
    logical: int | None = None
    sockets: int | None = None
    cores: int | None = None
    smt_active: bool | None = None
    smt_control: str = ""
    online: set[int] | None = None
    possible: set[int] | None = None
    present: set[int] | None = None
    problems: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)

    @property
    def threads_per_core(self) -> float | None:
        if self.logical and self.cores:
            return self.logical / self.cores
        return None


_MODEL_KEYS = ("model name", "cpu model", "cpu", "Model Name", "Processor", "Hardware")


def parse_cpu(cpuinfo_text: str, topology: dict[str, str | None]) -> CpuFacts:
    """/proc/cpuinfo (model) + sysfs topology files (path -> content) -> :class:`CpuFacts`."""
    f = CpuFacts()
    for key in _MODEL_KEYS:
        for line in cpuinfo_text.splitlines():
            k, sep, v = line.partition(":")
            if sep and k.strip() == key and v.strip():
                _set(f, "model", re.sub(r"\s+", " ", v.strip()))
                f.evidence.append(line.strip())
                break
        if f.model:
            break
    if not f.model:
        impl = part = ""
        for line in cpuinfo_text.splitlines():
            k, _, v = line.partition(":")
            if k.strip() == "CPU implementer" and not impl:
                impl = v.strip()
            if k.strip() == "CPU part" and not part:
                part = v.strip()
        if impl:
            _set(f, "model", f"Arm CPU (implementer {impl}, part {part or '?'})")
    base = "/sys/devices/system/cpu"
    for name in ("online", "possible", "present"):
        content = topology.get(f"{base}/{name}")
        if content is not None:
            cpu_set = parse_cpulist(content)
            if cpu_set is None:
                f.problems.append(f"{base}/{name}:{content.strip()}")
            _set(f, name, cpu_set)
            f.evidence.append(f"{base}/{name}:{content.strip()}")
    smt = topology.get(f"{base}/smt/active")
    if smt is not None:
        if smt.strip() in ("0", "1"):
            _set(f, "smt_active", smt.strip() == "1")
        else:
            f.problems.append(f"{base}/smt/active:{smt.strip()}")
        f.evidence.append(f"{base}/smt/active:{smt.strip()}")
    ctl = topology.get(f"{base}/smt/control")
    if ctl is not None:
        _set(f, "smt_control", ctl.strip())
        f.evidence.append(f"{base}/smt/control:{ctl.strip()}")
    pkg: dict[int, str] = {}
    core: dict[int, str] = {}
    for path, content in topology.items():
        m = re.fullmatch(rf"{base}/cpu(\d{{1,7}})/topology/(physical_package_id|core_id)", path)
        if not m or content is None:
            continue
        cpu = sat_int(m.group(1))
        (pkg if m.group(2) == "physical_package_id" else core)[cpu] = content.strip()
    cpus = sorted(set(pkg) & set(core))
    if f.online is not None:
        cpus = [c for c in cpus if c in f.online]
    if cpus:
        _set(f, "logical", len(cpus))
        _set(f, "sockets", len({pkg[c] for c in cpus}))
        _set(f, "cores", len({(pkg[c], core[c]) for c in cpus}))
    elif f.online is not None:
        _set(f, "logical", len(f.online))
    return f


def parse_cpu_topology(topology: dict[str, str | None]) -> CpuFacts:
    """The CPU topology tree alone (``cpu_topology`` probe files: sockets, cores, SMT), without
    /proc/cpuinfo. Never raises."""
    return parse_cpu("", topology)


@dataclass(frozen=True)
class NumaFacts:
    """NUMA nodes: node id -> set of CPUs (an empty set = a memory-only or empty node)."""

    nodes: dict[int, set[int]] = field(default_factory=dict)
    online: set[int] | None = None
    problems: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)


def parse_numa(tree: dict[str, str | None]) -> NumaFacts:
    n = NumaFacts()
    base = "/sys/devices/system/node"
    online = tree.get(f"{base}/online")
    if online is not None:
        _set(n, "online", parse_cpulist(online))
        n.evidence.append(f"{base}/online:{online.strip()}")
        if n.online is None:
            n.problems.append(f"{base}/online:{online.strip()}")
    for path, content in sorted(tree.items()):
        m = re.fullmatch(rf"{base}/node(\d{{1,7}})/cpulist", path)
        if not m or content is None:
            continue
        cpus = parse_cpulist(content)
        n.evidence.append(f"{path}:{content.strip()}")
        if cpus is None:
            n.problems.append(f"{path}:{content.strip()}")
            continue
        n.nodes[sat_int(m.group(1))] = cpus
    return n


# ------------------------------------------------------------------ IOMMU


@dataclass(frozen=True)
class IommuFacts:
    """IOMMU state from sysfs: hardware units (``/sys/class/iommu``) and each group's default
    domain type (``identity`` = passthrough, ``DMA``/``DMA-FQ`` = translated; kernel
    Documentation/ABI/testing/sysfs-kernel-iommu_groups)."""

    units: list[str] = field(default_factory=list)
    group_types: dict[str, str] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)

    @property
    def types(self) -> set[str]:
        return set(self.group_types.values())


def parse_iommu(tree: dict[str, str | None]) -> IommuFacts:
    f = IommuFacts()
    for path, content in sorted(tree.items()):
        m = re.fullmatch(r"/sys/class/iommu/([^/]+)/uevent", path)
        if m:
            f.units.append(m.group(1))
            continue
        m = re.fullmatch(r"/sys/kernel/iommu_groups/([^/]+)/type", path)
        if m and content is not None:
            f.group_types[m.group(1)] = content.strip()
    if f.units:
        f.evidence.append(f"/sys/class/iommu: {' '.join(f.units[:8])}" + (" ..." if len(f.units) > 8 else ""))
    counts: dict[str, int] = {}
    for t in f.group_types.values():
        counts[t] = counts.get(t, 0) + 1
    for t, c in sorted(counts.items()):
        f.evidence.append(f"/sys/kernel/iommu_groups/*/type: {t} ({c} groups)")
    if not f.units and not f.group_types:  # what was read, so "off or not exposed" rests on sysfs, not only on the cmdline
        f.evidence.append("/sys/class/iommu: no IOMMU unit; /sys/kernel/iommu_groups: no group")
    return f


# ------------------------------------------------------------------ filesystems


def _unescape_mount(s: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


@dataclass(frozen=True)
class Mount:
    source: str
    mountpoint: str
    fstype: str
    options: list[str]
    line: str


def parse_mounts(text: str) -> tuple[list[Mount], list[str]]:
    """/proc/self/mounts -> (mounts, unreadable lines)."""
    mounts: list[Mount] = []
    problems: list[str] = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 4:
            if line.strip():
                problems.append(line)
            continue
        mounts.append(Mount(_unescape_mount(parts[0]), _unescape_mount(parts[1]), parts[2],
                            parts[3].split(","), line))
    return mounts, problems


@dataclass(frozen=True)
class DfEntry:
    """One ``df -P -T -B1`` row; sizes in bytes."""

    source: str
    fstype: str
    size_bytes: int
    used_bytes: int
    avail_bytes: int
    capacity_pct: int
    mountpoint: str
    line: str
    inodes: bool = False
    """``df -i``: the three counts are inodes (Inodes, IUsed, IFree), not bytes."""

    @property
    def used_pct(self) -> float:
        """Used share as df prints it (its Capacity column: used / (used + available), rounded up)."""
        return float(self.capacity_pct)


_DF_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50, "E": 1 << 60}
_DF_BLOCKS = lazy_re(r"(\d+)([KMGTPE]?)B?-blocks", re.I)
_DF_SIZE = r"(?:\d+(?:[.,]\d+)?[KMGTPE]?i?B?|0|-)"
_DF_ROW = lazy_re(r"(\S+)\s+(?:(\S+)\s+)??(" + _DF_SIZE + r")\s+(" + _DF_SIZE + r")\s+(" + _DF_SIZE
                     + r")\s+(\d{1,3}%|-)\s+(/.*|-)")
_DF_TAIL = lazy_re(r"(?:(\S+)\s+)??(" + _DF_SIZE + r")\s+(" + _DF_SIZE + r")\s+(" + _DF_SIZE
                      + r")\s+(\d{1,3}%|-)\s+(/.*|-)")


def _df_bytes(token: str, block: int) -> int | None:
    """One df size column -> bytes: a plain count is in ``block``-byte blocks (the header's ``1K-blocks``,
    ``1B-blocks``...); a human size (``-h``: ``64M``, ``1.8T``, ``2,0G`` in some locales) is in powers of 1024."""
    m = re.fullmatch(r"(\d+(?:[.,]\d+)?)([KMGTPE]?)(?:i?B)?", token, re.I)
    if not m:
        return None
    if not m.group(2) and "." not in m.group(1) and "," not in m.group(1):
        return sat_int(str(sat_int(m.group(1)) * block))
    try:
        return sat_int(str(int(float(m.group(1).replace(",", ".")) * _DF_UNITS[m.group(2).upper()])))
    except (OverflowError, ValueError):  # a number past float's range: not a size df prints
        return None


def parse_df(text: str) -> tuple[list[DfEntry], list[str]]:
    """``df`` output -> (rows, unreadable lines); sizes in bytes. Never raises.

    Reads what bringup runs (``df -P -T -B1``) and what operators paste: with or without ``-T`` (the Type column;
    ``fstype`` is "" without it), ``-h`` sizes (``64M``, ``1.8T``: powers of 1024, as GNU df prints them), the
    default ``1K-blocks`` (KiB; also assumed for plain numbers when the header was not pasted), ``-B1``/``-m``, and the
    row GNU df wraps when the source name is long (source alone on one line, the numbers on the next), and ``df -i``
    (Inodes/IUsed/IFree: counts, each row marked ``inodes``). A row whose
    Use% is ``-`` (a pseudo filesystem with no size) is left out. Source: GNU coreutils df(1)."""
    rows: list[DfEntry] = []
    problems: list[str] = []
    block = 1024
    typed: bool | None = None
    inodes = False
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("Filesystem") or re.match(r"^\S+\s+Type\s+", stripped):
            b = _DF_BLOCKS.search(stripped)
            block = (sat_int(b.group(1)) or 1) * _DF_UNITS[b.group(2).upper()] if b else (
                1 if re.search(r"\bSize\b", stripped) else 1024)  # -h/-H: a size without a suffix is in bytes
            typed = bool(re.search(r"\bType\b", stripped))
            inodes = bool(re.search(r"\bInodes\s+IUsed\b", stripped))  # df -i: counts, not sizes
            if inodes:
                block = 1
            pending = ""
            continue
        m = _DF_ROW.fullmatch(stripped)
        if m is None and pending:
            t = _DF_TAIL.fullmatch(stripped)
            if t:
                m = _DF_ROW.fullmatch(f"{pending} {stripped}")
        if m is None:
            if len(stripped.split()) == 1 and not pending:
                pending = stripped  # a long source name that df put on a line of its own
                continue
            problems.append(line)
            pending = ""
            continue
        pending = ""
        fstype = m.group(2) or ""
        if typed is False and fstype:  # no Type column in the header: what looked like one is not
            problems.append(line)
            continue
        if m.group(6) == "-" or m.group(7) == "-":
            continue
        size, used, avail = (_df_bytes(m.group(i), block) for i in (3, 4, 5))
        if size is None or used is None or avail is None:
            problems.append(line)
            continue
        rows.append(DfEntry(m.group(1), fstype, size, used, avail, sat_int(m.group(6).rstrip("%")), m.group(7),
                            line if m.string is stripped else m.string, inodes))
    return rows, problems


def detect_df(text: str) -> float:
    """Confidence that ``text`` is ``df`` output (any of the forms :func:`parse_df` reads)."""
    head = text[:200_000]
    if re.search(r"^\s*Filesystem\s+(?:Type\s+)?(?:(?:Size|\d+[KMGB]?-blocks)\s+Used\s+Avail(?:able)?\s+(?:Use%|Capacity)|"
                 r"Inodes\s+IUsed\s+IFree\s+IUse%)\s+Mounted on", head, re.M):
        return 0.95
    if not re.search(r"\d%\s+/", head):  # cheap first: a df row ends in "N% /mountpoint"
        return 0.0
    lines = [ln.strip() for ln in head.splitlines() if ln.strip()]
    if len(lines) > 400:  # an excerpt of rows without the header is short; a long text is something else
        return 0.0
    hits = sum(1 for ln in lines if "%" in ln and _DF_ROW.fullmatch(ln))
    if hits and hits >= len(lines) / 2:
        return 0.6  # rows without the header (an excerpt such as the /dev/shm row)
    return 0.0


def mount_for(path: str, mountpoints: list[str]) -> str | None:
    """The longest mount point that contains ``path`` (string prefix on path components)."""
    best = None
    for mp in mountpoints:
        if path == mp or mp == "/" or path.startswith(mp.rstrip("/") + "/"):
            if best is None or len(mp) > len(best):
                best = mp
    return best


# ------------------------------------------------------------------ kernel modules


@dataclass(frozen=True)
class ModuleInfo:
    name: str
    used_by: list[str]
    line: str


def parse_modules(text: str) -> tuple[dict[str, ModuleInfo], list[str]]:
    """/proc/modules or ``lsmod`` text -> (name -> module, unreadable lines)."""
    mods: dict[str, ModuleInfo] = {}
    problems: list[str] = []
    for line in text.splitlines():
        parts = line.split()
        if not parts or parts[0] == "Module":
            continue
        if len(parts) >= 3 and re.fullmatch(r"[A-Za-z0-9_\-]+", parts[0]) and parts[1].isdigit():
            used = []
            if len(parts) >= 4 and parts[3] not in ("-",):
                used = [u for u in parts[3].strip(",").split(",") if u and u != "-"]
            mods[parts[0]] = ModuleInfo(parts[0], used, line)
        else:
            problems.append(line)
    return mods, problems
