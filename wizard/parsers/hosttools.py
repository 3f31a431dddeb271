"""Parsers for host tool outputs: ``free`` (``-h``, ``-b``, plain KiB; old and new layouts),
``swapon --show [--output-all] [--bytes]``, ``lscpu`` (flat and the newer nested layout) and
``numactl --hardware``.

Sizes are returned in bytes. ``free -h``/``swapon`` suffixes are binary (K/Ki = 1024, M/Mi =
1024^2, G/Gi = 1024^3, as procps-ng free(1) and util-linux swapon(8) print them); plain ``free``
numbers are KiB, ``free -b`` bytes (the caller says which). numactl's "MB" is MiB.

Registers the probes ``lscpu`` and ``free_b`` and the explain kinds ``free``, ``swapon``,
``lscpu`` and ``numactl-hardware``. Parsers never raise on garbage.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from wizard.common import to_int, sat_int
from wizard.parsers.host import parse_cpulist
from wizard.parsers._frozen import build_set as _set
from wizard.common import lazy_re


_UNITS = {"": 1, "B": 1, "K": 1024, "KI": 1024, "M": 1024 ** 2, "MI": 1024 ** 2, "G": 1024 ** 3, "GI": 1024 ** 3,
          "T": 1024 ** 4, "TI": 1024 ** 4, "P": 1024 ** 5, "PI": 1024 ** 5}


def size_bytes(tok: str, plain_unit: int = 1) -> int | None:
    """"251G" -> 251 GiB in bytes; "1.9Gi", "34.8M", "0B"; a plain number times ``plain_unit``."""
    m = re.fullmatch(r"(\d{1,20}(?:[.,]\d{1,12})?)([KMGTP]i?|B)?", tok.strip(), re.I)  # bounded: no inf
    if not m:
        return None
    num = float(m.group(1).replace(",", "."))
    unit = (m.group(2) or "").upper()
    mult = _UNITS.get(unit, 1) if unit else plain_unit
    return sat_int(num * mult)


# ------------------------------------------------------------------ free


@dataclass(frozen=True)
class FreeFacts:
    """``free``: Mem and Swap rows in bytes (None when absent); ``old_layout`` for the
    pre-procps-3.3.10 "buffers cached" layout, whose "-/+ buffers/cache" free column stands in for
    "available"."""

    mem: dict[str, int | None] = field(default_factory=dict)
    swap: dict[str, int | None] = field(default_factory=dict)
    header: str = ""
    mem_line: str = ""
    swap_line: str = ""
    buffers_line: str = ""
    old_layout: bool = False
    problems: list[str] = field(default_factory=list)

    @property
    def total(self) -> int | None:
        return self.mem.get("total")

    @property
    def available(self) -> int | None:
        return self.mem.get("available")


_SIZE_TOKEN = r"\d{1,20}(?:[.,]\d{1,12})?(?:[KMGTP]i?|B)?"
_FREE_LOCAL_ROW = lazy_re(r"^(\S[^:：\d]{0,24}?)\s*[:：]\s*((?:" + _SIZE_TOKEN + r"\s+){2,5}" + _SIZE_TOKEN + r")\s*$",
                          re.I)
"""A row of ``free`` run in another language (procps-ng translates its labels and header: Russian "Память:" and
"Подкачка:", German "Speicher:", Chinese "内存："): a label, a colon, then only sizes. Which row it is comes from its
shape: the memory row has six columns (total, used, free, shared, buff/cache, available), the swap row three."""


def _free_local_header(s: str) -> bool:
    """A translated ``free`` header: six words or more, none a number ("всего занят своб общая буф/врем. доступно")."""
    words = s.split()
    return 6 <= len(words) <= 8 and not any(re.fullmatch(_SIZE_TOKEN, w, re.I) for w in words)


def parse_free(text: str, plain_unit: int = 1024) -> FreeFacts:
    """``plain_unit``: bytes per unsuffixed number (1024 for plain ``free``, 1 for ``free -b``)."""
    f = FreeFacts()
    cols: list[str] = []
    for raw in text.splitlines():
        s = raw.strip()
        if not s:
            continue
        if re.match(r"^total\s+used\s+free", s):
            _set(f, "header", raw.rstrip())
            cols = s.split()
            _set(f, "old_layout", "buffers" in cols and "buff/cache" not in cols)
            continue
        m = re.match(r"^(Mem|Swap|Low|High|Total|-/\+ buffers/cache):\s*(.*)$", s)
        local = _FREE_LOCAL_ROW.match(s) if not m else None
        if local and len(local.group(2).split()) == 6 and not f.mem:  # a translated free's memory row ("Память:")
            label, vals = "Mem", local.group(2).split()
        elif local and len(local.group(2).split()) == 3 and f.mem and not f.swap:  # its swap row ("Подкачка:")
            label, vals = "Swap", local.group(2).split()
        elif not m:
            if not f.header and not f.mem and _free_local_header(s):
                _set(f, "header", raw.rstrip())
                continue
            f.problems.append(s)
            continue
        else:
            label, vals = m.group(1), m.group(2).split()
        nums = [size_bytes(v, plain_unit) for v in vals]
        if label == "Mem":
            names = cols or ["total", "used", "free", "shared", "buff/cache", "available"]
            _set(f, "mem", {n: v for n, v in zip(names, nums)})
            _set(f, "mem_line", raw.rstrip())
        elif label == "Swap":
            _set(f, "swap", {n: v for n, v in zip(["total", "used", "free"], nums)})
            _set(f, "swap_line", raw.rstrip())
        elif label == "-/+ buffers/cache":
            _set(f, "buffers_line", raw.rstrip())
            if len(nums) >= 2 and "available" not in f.mem:
                f.mem["available"] = nums[1]
    return f


_TOP_MEM = lazy_re(r"^[ \t]*(?:(?P<unit>[KMGTPE]iB)[ \t]+)?(?P<what>Mem|Swap)[ \t]*:[ \t]*(?P<rest>.*\btotal\b.*)$", re.M)
"""The memory lines of ``top``'s summary: procps-ng's "MiB Mem :  15882.0 total,   1234.5 free, ... buff/cache" and
"MiB Swap:   2048.0 total, ... used.  13021.7 avail Mem" (the unit first; KiB unless -E/E changes it), and the older
procps 3.2's "Mem:  264488144k total, 251337344k used, 13150800k free, 252480k buffers" / "Swap: 8388592k total,
8388592k used, 0k free, 231253868k cached" (top(1), "2b. TASK and CPU States", "2c. MEMORY Usage")."""
_TOP_FIELD = lazy_re(r"(?<![\d.,])(\d{1,20}(?:[.,]\d{1,12})?)(k|[KMGTP]i?B?)?[ \t]+"
                     r"(total|used|free|buffers|buff/cache|cached|avail Mem)\b")  # bounded: never an infinity


def parse_top_memory(text: str) -> FreeFacts:
    """``top``'s Mem and Swap summary lines (:data:`_TOP_MEM`) as :class:`FreeFacts`, in bytes: "avail Mem" is the
    available memory; the older layout's free + buffers + cached (page cache, printed on its Swap line) stands in for
    it, as the old ``free``'s "-/+ buffers/cache" did. Never raises (what it cannot read stays absent)."""
    f = FreeFacts()
    mem: dict[str, int | None] = {}
    swap: dict[str, int | None] = {}
    for m in _TOP_MEM.finditer(text):
        unit = _UNITS.get((m.group("unit") or "KiB").upper().replace("B", ""), 1024)
        fields = {}
        for v, suffix, name in _TOP_FIELD.findall(m.group("rest")):
            mult = 1024 if suffix == "k" else _UNITS.get(suffix.upper().replace("B", ""), 1) if suffix else unit
            fields[name] = sat_int(float(v.replace(",", ".")) * mult)
        if m.group("what") == "Mem":
            mem = {k: fields.get(k) for k in ("total", "used", "free")}
            mem["buff/cache"] = fields.get("buff/cache", fields.get("buffers"))
            _set(f, "mem_line", m.group(0).strip())
        else:
            swap = {k: fields.get(k) for k in ("total", "used", "free")}
            _set(f, "swap_line", m.group(0).strip())
            if fields.get("avail Mem") is not None:
                mem["available"] = fields["avail Mem"]
            elif fields.get("cached") is not None and mem.get("free") is not None:
                _set(f, "old_layout", True)
                mem["available"] = (mem.get("free") or 0) + (fields.get("buffers") or mem.get("buff/cache") or 0) + \
                    (fields.get("cached") or 0)
    _set(f, "mem", mem)
    _set(f, "swap", swap)
    return f


def detect_top_memory(text: str) -> float:
    """0.95 for ``top``'s Mem and Swap summary lines (:data:`_TOP_MEM`) with their "total" and "free" figures."""
    found = {m.group("what") for m in _TOP_MEM.finditer(text[:20_000]) if "free" in m.group("rest")}
    return 0.95 if found == {"Mem", "Swap"} else 0.0


def parse_free_bytes(text: str) -> FreeFacts:
    """``free -b`` output (every number in bytes). Never raises."""
    return parse_free(text, 1)


# ------------------------------------------------------------------ swapon --show


@dataclass(frozen=True)
class SwapDevice:
    name: str
    type: str
    size: int | None
    used: int | None
    prio: str
    line: str


def parse_swapon(text: str) -> tuple[list[SwapDevice], str, list[str]]:
    """(devices, header line, unreadable lines). Columns are read by the header's names."""
    devs: list[SwapDevice] = []
    header, problems = "", []
    cols: list[str] = []
    for raw in text.splitlines():
        s = raw.strip()
        if not s:
            continue
        if re.match(r"^NAME\s+TYPE\b", s):
            header, cols = raw.rstrip(), s.split()
            continue
        if not cols:
            problems.append(s)
            continue
        toks = s.split()
        if len(toks) < 4:
            problems.append(s)
            continue
        row = dict(zip(cols, toks))
        devs.append(SwapDevice(row.get("NAME", toks[0]), row.get("TYPE", ""), size_bytes(row.get("SIZE", "")),
                               size_bytes(row.get("USED", "")), row.get("PRIO", ""), raw.rstrip()))
    return devs, header, problems


# ------------------------------------------------------------------ zramctl


@dataclass(frozen=True)
class ZramDevice:
    """One row of ``zramctl``: sizes in bytes (util-linux prints binary units, "11.3G" = 11.3 GiB, or plain bytes
    with --bytes). ``data``: the uncompressed data stored; ``total``: the RAM it takes, compressed, with metadata."""

    name: str
    disksize: int | None
    data: int | None
    total: int | None
    mountpoint: str
    line: str


_ZRAM_HEADER = lazy_re(r"^NAME\s+(?=.*\bDISKSIZE\b)(?=.*\bDATA\b)[A-Z -]+$", re.M)


def parse_zramctl(text: str) -> tuple[list[ZramDevice], str, list[str]]:
    """``zramctl`` (default columns or ``--output-all``) -> (devices, header line, unreadable lines). Columns are read
    by the header's names (zramctl(8)). Never raises."""
    devs: list[ZramDevice] = []
    header, problems, cols = "", [], []
    for raw in text.splitlines():
        s = raw.strip()
        if not s or s.startswith(("$", "#")) or s.startswith("zramctl"):
            continue
        if _ZRAM_HEADER.match(s):
            header, cols = raw.rstrip(), s.split()
            continue
        toks = s.split()
        if not cols or not toks[0].startswith("/dev/zram") or len(toks) < min(len(cols), 4):
            problems.append(s)
            continue
        row = dict(zip(cols, toks))
        mount = row.get("MOUNTPOINT", "") if len(toks) >= len(cols) else ""
        devs.append(ZramDevice(toks[0], size_bytes(row.get("DISKSIZE", "")), size_bytes(row.get("DATA", "")),
                               size_bytes(row.get("TOTAL", "")), mount, raw.rstrip()))
    return devs, header, problems


def detect_zramctl(text: str) -> float:
    """1.0 for zramctl's header (NAME ... DISKSIZE DATA ...) followed by a /dev/zramN row."""
    m = _ZRAM_HEADER.search(text[:20_000])
    return 1.0 if m and re.search(r"^\s*/dev/zram\d+\s", text[m.end():m.end() + 4000], re.M) else 0.0


# ------------------------------------------------------------------ lscpu


@dataclass(frozen=True)
class LscpuFacts:
    """``lscpu``: fields by name (indentation of the nested layout removed) and the counts it gives.
    ``numa_cpus`` maps node id -> its CPU list text ("" for a node without CPUs)."""

    fields: dict[str, str] = field(default_factory=dict)
    lines: dict[str, str] = field(default_factory=dict)
    numa_cpus: dict[int, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def cpus(self) -> int | None:
        return to_int(self.fields.get("CPU(s)"), 9, signed=False)

    @property
    def sockets(self) -> int | None:
        return to_int(self.fields.get("Socket(s)"), 9, signed=False)

    @property
    def cores_per_socket(self) -> int | None:
        return to_int(self.fields.get("Core(s) per socket"), 9, signed=False)

    @property
    def threads_per_core(self) -> int | None:
        return to_int(self.fields.get("Thread(s) per core"), 9, signed=False)

    @property
    def numa_nodes(self) -> int | None:
        return to_int(self.fields.get("NUMA node(s)"), 9, signed=False)

    @property
    def model(self) -> str:
        return self.fields.get("Model name", "")


_LSCPU_LOCAL: tuple[dict[str, str], list[tuple["re.Pattern[str]", str]]] | None = None


def _label_key(label: str) -> str:
    """A label as compared: without its colon (":", "：", "\xa0:") and surrounding spaces, case folded."""
    return label.strip().rstrip(":：").strip().casefold()


def lscpu_label(label: str) -> str:
    """lscpu's English label for ``label`` as printed in another language ("Architektur" -> "Architecture",
    "NUMA-Knoten0 CPU(s)" -> "NUMA node0 CPU(s)"; assets/lscpu_labels.csv, from util-linux's translations); an
    English or unknown label comes back as it is, without its colon."""
    global _LSCPU_LOCAL
    if _LSCPU_LOCAL is None:
        from wizard.data import table

        plain: dict[str, str] = {}
        numbered: list[tuple["re.Pattern[str]", str]] = []
        for row in table("lscpu_labels.csv"):
            en, local = _label_key(row["english"]), _label_key(row["translated"])
            english = row["english"].rstrip(":")
            if "%d" in local:
                rx = re.compile(r"\s*(\d+)\s*".join(re.escape(p) for p in local.split("%d")) + "$")
                numbered.append((rx, english))
            elif local and local != en:
                plain.setdefault(local, english)
        _LSCPU_LOCAL = (plain, numbered)
    plain, numbered = _LSCPU_LOCAL
    key = _label_key(label)
    if key in plain:
        return plain[key]
    for rx, english in numbered:
        m = rx.match(key)
        if m:
            return english.replace("%d", m.group(1))
    return label.strip().rstrip(":：").strip()


_LSCPU_E_HEAD = lazy_re(r"^[ \t]*CPU[ \t]+(?:\S+[ \t]+)*ONLINE\b.*$", re.M)
"""``lscpu -e`` (--extended)'s header: CPU first, ONLINE among the columns (util-linux lscpu(1))."""
_YES = frozenset({"yes", "是", "ja", "oui", "sí", "si", "sim", "да", "はい", "예", "tak", "igen"})
_NO = frozenset({"no", "否", "nein", "non", "não", "nao", "нет", "いいえ", "아니오", "nie", "nem"})
"""lscpu -e's ONLINE values, "yes"/"no" translated as util-linux's catalogues print them (po/*.po: zh_CN "是"/"否")."""


def _ranges(ids: list[int]) -> str:
    """[0, 1, 2, 5] -> "0-2,5" (lscpu's CPU list form)."""
    out: list[str] = []
    for i in sorted(ids):
        if out and "-" in out[-1] and int(out[-1].split("-")[1]) == i - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{i}"
        elif out and "-" not in out[-1] and int(out[-1]) == i - 1:
            out[-1] = f"{out[-1]}-{i}"
        else:
            out.append(str(i))
    return ",".join(out)


def _parse_lscpu_e(text: str) -> LscpuFacts | None:
    """``lscpu -e`` as the summary's fields (CPU(s), On-line and Off-line CPU(s) list, Socket(s), NUMA node(s) and each
    node's CPUs), each line of the table kept; None when the text is not that table."""
    m = _LSCPU_E_HEAD.search(text[:4000])
    if not m:
        return None
    cols = m.group(0).split()
    on_i = cols.index("ONLINE")
    f = LscpuFacts()
    online: list[int] = []
    offline: list[int] = []
    sockets: set[str] = set()
    nodes: dict[int, list[int]] = {}
    for raw in text[m.end():].splitlines():
        cells = raw.split()
        if not cells:
            continue
        if len(cells) < len(cols) - 2 or not cells[0].isdigit() or len(cells) <= on_i:
            f.problems.append(raw.strip())
            continue
        cpu, state = sat_int(cells[0]), cells[on_i].lower()
        if state in _YES:
            online.append(cpu)
        elif state in _NO:
            offline.append(cpu)
        else:
            f.problems.append(raw.strip())
            continue
        row = dict(zip(cols, cells))
        if row.get("SOCKET", "-") not in ("-", ""):
            sockets.add(row["SOCKET"])
        if row.get("NODE", "-").isdigit():
            nodes.setdefault(sat_int(row["NODE"]), []).append(cpu)
        if state in _NO:
            f.lines.setdefault("Off-line CPU(s) list", raw.rstrip())
    if not online and not offline:
        return None
    f.fields["CPU(s)"] = str(len(online) + len(offline))
    f.fields["On-line CPU(s) list"] = _ranges(online)
    f.lines["CPU(s)"] = m.group(0).strip()
    if offline:
        f.fields["Off-line CPU(s) list"] = _ranges(offline)
    if sockets:
        f.fields["Socket(s)"] = str(len(sockets))
    if nodes:
        f.fields["NUMA node(s)"] = str(len(nodes))
        for n, ids in nodes.items():
            f.numa_cpus[n] = _ranges(ids)
    return f


def parse_lscpu(text: str) -> LscpuFacts:
    """``lscpu`` (also run in another language: its labels are read back to English through :func:`lscpu_label`),
    or ``lscpu -e``'s table read into the same fields (:func:`_parse_lscpu_e`)."""
    if (e := _parse_lscpu_e(text)) is not None:
        return e
    f = LscpuFacts()
    last = ""
    for raw in text.splitlines():
        if not raw.strip():
            continue
        m = re.match(r"^\s*([^\W\d_][^:：]{0,60}?)\s*[:：]\s*(.*?)\s*$", raw)
        if not m:
            if raw.startswith((" ", "\t")) and last == "Flags":  # wrapped flags of the nested layout
                continue
            f.problems.append(raw.strip())
            continue
        key, val = lscpu_label(m.group(1)), m.group(2)
        last = key
        nm = re.fullmatch(r"NUMA node(\d+) CPU\(s\)", key)
        if nm:
            f.numa_cpus[sat_int(nm.group(1))] = val
            f.lines[key] = raw.rstrip()
            continue
        if key not in f.fields:
            f.fields[key] = val
            f.lines[key] = raw.rstrip()
    return f


# ------------------------------------------------------------------ numactl --hardware


@dataclass(frozen=True)
class NumaNode:
    id: int
    cpus: list[int] = field(default_factory=list)
    size_mib: int | None = None
    free_mib: int | None = None
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class NumactlFacts:
    available: int | None = None
    available_line: str = ""
    nodes: dict[int, NumaNode] = field(default_factory=dict)
    distance_lines: list[str] = field(default_factory=list)
    distance_nodes: list[int] = field(default_factory=list)
    """The node ids of the distance table's header row ("node   0   1   2 ..."), in order."""
    problems: list[str] = field(default_factory=list)


def parse_numactl(text: str) -> NumactlFacts:
    f = NumactlFacts()
    in_dist = False
    for raw in text.splitlines():
        s = raw.strip()
        if not s:
            continue
        m = re.match(r"^available:\s*(\d+) nodes?", s)
        if m:
            _set(f, "available", sat_int(m.group(1)))
            _set(f, "available_line", s)
            continue
        m = re.match(r"^node (\d+) (cpus|size|free):\s*(.*)$", s)
        if m:
            n = f.nodes.setdefault(sat_int(m.group(1)), NumaNode(sat_int(m.group(1))))
            n.lines.append(s)
            what, val = m.group(2), m.group(3).strip()
            if what == "cpus":
                _set(n, "cpus", [sat_int(x) for x in val.split() if x.isdigit()])
            else:
                mm = re.match(r"^(\d+)\s*MB", val)
                if mm:
                    _set(n, "size_mib" if what == "size" else "free_mib", sat_int(mm.group(1)))
            continue
        if s.startswith("node distances"):
            in_dist = True
            f.distance_lines.append(s)
            continue
        header = re.match(r"^node((?:\s+\d+)+)$", s)  # the table's header row; a paste may start at it
        if header or (in_dist and re.match(r"^\d+:\s+[\d\s]+$", s)):
            in_dist = True
            f.distance_lines.append(s)
            if header and not f.distance_nodes:
                f.distance_nodes.extend(sat_int(x) for x in header.group(1).split())
            continue
        if s.startswith("No NUMA available"):
            f.problems.append(s)
            continue
        f.problems.append(s)
    return f


# ------------------------------------------------------------------ kinds

_LSCPU_KEYS = lazy_re(r"^[ \t]*(Architecture|CPU\(s\)|On-line CPU\(s\) list|Thread\(s\) per core|Core\(s\) per "
                         r"(?:socket|cluster)|Socket\(s\)|NUMA node\(s\)|Model name|Vendor ID|Byte Order|"
                         r"CPU op-mode\(s\)):", re.M)


def detect_free(text: str) -> float:
    if re.search(r"^[ \t]*total\s+used\s+free\s+shared\s+(?:buff/cache|buffers)", text, re.M) and re.search(
            r"^[ \t]*Mem:", text, re.M):  # indented when pasted from a markdown list
        return 1.0
    # ``free`` in another language: a header of words, then a six-size row and a three-size row (_FREE_LOCAL_ROW)
    lines = [ln.strip() for ln in text[:4000].splitlines() if ln.strip()]
    for i in range(len(lines) - 2):
        a, b = _FREE_LOCAL_ROW.match(lines[i + 1]), _FREE_LOCAL_ROW.match(lines[i + 2])
        if (a and b and len(a.group(2).split()) == 6 and len(b.group(2).split()) == 3
                and _free_local_header(lines[i])):
            return 0.9
    # the header cut off ("Mem:" then "Swap:" rows alone: held-out round 335): procps-ng's default columns, six sizes
    # and three (free(1): total used free shared buff/cache available)
    rows = re.findall(r"^[ \t]*(Mem|Swap):((?:[ \t]+[\d.,]+[KMGTP]?i?B?){3,6})[ \t]*$", text[:4000], re.M)
    if [(r, len(v.split())) for r, v in rows] == [("Mem", 6), ("Swap", 3)]:
        return 0.85
    return 0.0


def detect_swapon(text: str) -> float:
    return 1.0 if re.search(r"^NAME\s+TYPE\s+SIZE\s+USED\s+PRIO", text, re.M) else 0.0


_LSCPU_DETECT = {"Architecture", "CPU(s)", "On-line CPU(s) list", "Thread(s) per core", "Core(s) per socket",
                 "Core(s) per cluster", "Socket(s)", "NUMA node(s)", "Model name", "Vendor ID", "Byte Order",
                 "CPU op-mode(s)"}


def detect_lscpu(text: str) -> float:
    if _LSCPU_E_HEAD.search(text[:4000]) and _parse_lscpu_e(text[:20000]) is not None:
        return 0.9  # lscpu -e
    n = len(set(m.group(1) for m in _LSCPU_KEYS.finditer(text)))
    if n < 3:  # lscpu in another language (lscpu_label): its translated labels
        found = set()
        for m in re.finditer(r"^[ \t]*([^\W\d_][^:：\n]{0,60}?)[ \t]*[:：]", text[:4000], re.M):
            label = lscpu_label(m.group(1))
            if label in _LSCPU_DETECT:
                found.add(label)
        n = max(n, len(found))
    return 0.95 if n >= 3 else 0.5 if n == 2 else 0.0


def detect_numactl(text: str) -> float:
    if re.search(r"^available:\s*\d+ nodes? \(", text, re.M):
        return 1.0
    if len(re.findall(r"^node \d+ (?:cpus|size|free):", text, re.M)) >= 2:
        return 0.9
    # its distance table alone: the header row ("node   0   1 ...") then a row per node ("  0:  10  21 ...")
    if re.search(r"^[ \t]*node(?:[ \t]+\d+){2,}[ \t]*\n[ \t]*0:(?:[ \t]+\d+){2,}[ \t]*$", text, re.M):
        return 0.8
    return 0.0


def cpulist_count(text: str) -> int | None:
    """Number of CPUs in an lscpu CPU list ("0-5,48-53" -> 12); None when unreadable."""
    s = parse_cpulist(text) if text.strip() else set()
    return None if s is None else len(s)


# ------------------------------------------------------------------ ulimit -a (a shell's resource limits)

_ULIMIT_ROW = re.compile(r"^\s*([a-z][a-z A-Z-]*?)\s+\((?:([^()]*?),\s*)?-([a-zA-Z])\)\s+(\S+)\s*$")


_PROC_LIMITS_HEAD = re.compile(r"^Limit\s+Soft Limit\s+Hard Limit\s+Units\s*$", re.M)
_PROC_LIMITS_ROW = re.compile(r"^(Max [a-z ]+?)\s{2,}(\S+)\s+(\S+)(?:\s+(\S+))?\s*$")
_PROC_LIMITS_LETTER = {"Max locked memory": "l", "Max open files": "n", "Max processes": "u", "Max stack size": "s"}
_ULIMIT_ASKED = re.compile(r"^\s*(?:[$#]|\S*[$#]\s)\s*ulimit\s+(?:-([SH])\s+)?-([a-zA-Z])\s*$")
"""A prompt's ``ulimit -l`` (``-S``: the soft limit, the one that applies; ``-H``: the hard limit), its value on the
next line."""


def detect_ulimit(text: str) -> float:
    """0.95 for ``ulimit -a`` (bash: "max locked memory       (kbytes, -l) unlimited" rows, one per limit) and for
    ``/proc/PID/limits`` (proc(5): "Max locked memory  65536  65536  bytes"); 0.9 for a prompt's ``ulimit -l`` with
    its value under it."""
    head = text[:20_000]
    rows = sum(1 for ln in head.splitlines() if _ULIMIT_ROW.match(ln))
    if rows >= 4 and re.search(r"^\s*(max locked memory|open files)\s", head, re.M):
        return 0.95
    if _PROC_LIMITS_HEAD.search(head) and re.search(r"^Max locked memory\s", head, re.M):
        return 0.95
    lines = head.splitlines()
    if any(_ULIMIT_ASKED.match(a) and re.fullmatch(r"\s*(?:unlimited|\d{1,20})\s*", b)
           for a, b in zip(lines, lines[1:])):
        return 0.9
    return 0.0


def parse_ulimit(text: str) -> dict[str, tuple[str, str]]:
    """``ulimit -a`` (bash's layout, bash(1) "ulimit") -> {option letter: (value as printed, the row)}: "l" max locked
    memory in KiB, "n" open files, "u" max user processes, "s" stack size in KiB, ...; "unlimited" as printed. Also
    ``/proc/PID/limits`` (proc(5): its soft limit, a size in bytes given here in KiB as ulimit prints it) and a
    prompt's ``ulimit [-S|-H] -X`` with its value on the next line (the soft limit preferred: it is the one a process
    meets). Never raises."""
    out: dict[str, tuple[str, str]] = {}
    lines = text.splitlines()
    hard: dict[str, tuple[str, str]] = {}
    for i, raw in enumerate(lines):
        m = _ULIMIT_ROW.match(raw)
        if m:
            out.setdefault(m.group(3), (m.group(4), raw.strip()))
            continue
        p = _PROC_LIMITS_ROW.match(raw.rstrip())
        if p and p.group(1) in _PROC_LIMITS_LETTER:
            soft = p.group(2)
            if p.group(4) == "bytes" and soft.isdigit():
                soft = str(sat_int(soft) // 1024)
            out.setdefault(_PROC_LIMITS_LETTER[p.group(1)], (soft, raw.strip()))
            continue
        a = _ULIMIT_ASKED.match(raw)
        if a and i + 1 < len(lines) and re.fullmatch(r"\s*(?:unlimited|\d{1,20})\s*", lines[i + 1]):
            value = (lines[i + 1].strip(), raw.strip() + " -> " + lines[i + 1].strip())
            (hard if a.group(1) == "H" else out).setdefault(a.group(2), value)
    for k, v in hard.items():
        out.setdefault(k, v)
    return out


# ------------------------------------------------------------------ sensors (lm-sensors)

_SENSORS_ROW = re.compile(r"^(?P<label>[^:\s][^:]{0,40}):\s+(?P<value>[+-]?\d+(?:\.\d+)?)\s?(?P<unit>°C|C|V|RPM|W|mV|A)\b"
                          r"(?P<rest>.*)$")
_SENSORS_LIMIT = re.compile(r"\b(low|high|crit|min|max|hyst|crit low|emerg)\s*=\s*([+-]?\d+(?:\.\d+)?)")


@dataclass(frozen=True)
class SensorReading:
    """One ``sensors`` reading: its chip ("coretemp-isa-0000"), label, value and unit (°C, V, RPM, W), the limits the
    chip prints beside it ({"high": 80.0, "crit": 90.0}), whether lm-sensors flags it ALARM, and its lines."""

    chip: str
    label: str
    value: float
    unit: str
    limits: dict[str, float]
    alarm: bool
    lines: tuple[str, ...]


def detect_sensors(text: str) -> float:
    """0.9 for lm-sensors' ``sensors`` output: "Adapter: ..." lines under chip names, readings with °C / V / RPM."""
    head = text[:50_000]
    rows = sum(1 for ln in head.splitlines() if _SENSORS_ROW.match(ln))
    return 0.9 if re.search(r"^Adapter: ", head, re.M) and rows >= 2 else 0.0


def parse_sensors(text: str) -> list[SensorReading]:
    """``sensors`` (lm-sensors, sensors(1)) -> its readings, chip by chip; a limits line that continues a reading
    ("(crit = +100.0 C, hyst = +96.0 C)") joins it. Never raises."""
    out: list[dict[str, Any]] = []
    chip = ""
    prev = ""
    for raw in text.splitlines():
        s = raw.rstrip()
        if not s.strip():
            chip, prev = "", ""
            continue
        if s.startswith("Adapter:"):
            chip = chip or prev
            continue
        m = _SENSORS_ROW.match(s)
        if m and chip:
            unit = "°C" if m.group("unit") in ("C", "°C") else m.group("unit")
            out.append({"chip": chip, "label": m.group("label").strip(), "value": float(m.group("value")),
                        "unit": unit, "limits": {k: float(v) for k, v in _SENSORS_LIMIT.findall(m.group("rest"))},
                        "alarm": "ALARM" in m.group("rest"), "lines": [s]})
        elif out and s.startswith((" ", "\t")) and s.strip().startswith("(") and chip:
            out[-1]["limits"].update({k: float(v) for k, v in _SENSORS_LIMIT.findall(s)})
            out[-1]["alarm"] = out[-1]["alarm"] or "ALARM" in s
            out[-1]["lines"].append(s)
        elif not s.startswith((" ", "\t")) and ":" not in s:
            prev = s.strip()
    return [SensorReading(r["chip"], r["label"], r["value"], r["unit"], r["limits"], r["alarm"], tuple(r["lines"]))
            for r in out]


# ------------------------------------------------------------------ lshw -class display


@dataclass(frozen=True)
class LshwDisplay:
    """One ``*-display`` (or ``*-3d``) node of ``lshw``: UNCLAIMED (no kernel driver bound), product, vendor, bus info,
    the ``driver=`` of its configuration line, and its lines."""

    unclaimed: bool
    product: str
    vendor: str
    bus: str
    driver: str
    lines: tuple[str, ...]


_LSHW_NODE = lazy_re(r"^\s*\*-(display|3d)(?::\d+)?(\s+UNCLAIMED)?\s*$")
_LSHW_FIELD = lazy_re(r"^\s+(product|vendor|bus info|configuration):\s*(.*?)\s*$")


def parse_lshw_display(text: str) -> list[LshwDisplay]:
    """The display/3D nodes of ``lshw -class display`` (or of a whole ``lshw``); never raises."""
    out: list[LshwDisplay] = []
    cur: dict[str, Any] | None = None

    def close() -> None:
        if cur is not None:
            drv = re.search(r"\bdriver=(\S+)", cur.get("configuration", ""))
            out.append(LshwDisplay(cur["unclaimed"], cur.get("product", ""), cur.get("vendor", ""),
                                   cur.get("bus info", ""), drv.group(1) if drv else "", tuple(cur["lines"])))

    for raw in text.splitlines()[:100_000]:
        m = _LSHW_NODE.match(raw)
        if m:
            close()
            cur = {"unclaimed": bool(m.group(2)), "lines": [raw.strip()]}
            continue
        if cur is None:
            continue
        if re.match(r"^\s*\*-", raw):
            close()
            cur = None
            continue
        f = _LSHW_FIELD.match(raw)
        if f:
            cur[f.group(1)] = f.group(2)
            cur["lines"].append(raw.strip())
    close()
    return out


def detect_lshw_display(text: str) -> float:
    """0.9 for ``lshw`` display/3D nodes (``*-display`` with its product line)."""
    head = text[:200_000]
    if "*-display" not in head and "*-3d" not in head:
        return 0.0
    return 0.9 if any(d.product for d in parse_lshw_display(head)) else 0.0
