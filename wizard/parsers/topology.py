"""Parsers for GPU interconnect outputs: ``nvidia-smi topo -m`` (link type per GPU/NIC pair, CPU
and NUMA affinity), ``nvidia-smi topo -p2p r|w|n|a|p`` (peer-to-peer status matrix),
``nvidia-smi nvlink -s`` (per-link speed or ``<inactive>``), ``nvidia-smi nvlink -e`` (error
counters) and ``dcgmi nvlink --link-status`` (link state U/D/X/_ per GPU and NVSwitch).

Legends are nvidia-smi's own (printed under each matrix): X = self; SYS = PCIe plus the SMP
interconnect between NUMA nodes; NODE = PCIe plus the interconnect between host bridges of one NUMA
node; PHB = PCIe through a host bridge (the CPU); PXB = several PCIe bridges without the host
bridge; PIX = at most one PCIe bridge; NV# = a bonded set of # NVLinks. P2P: OK, CNS = chipset not
supported, GNS = GPU not supported, TNS = topology not supported, NS = not supported, DR = disabled
by regkey, U = unknown. DCGM: U = up, D = down, X = disabled, _ = not supported.

Speeds are GB/s per link and direction as nvidia-smi prints them. Never raise on garbage.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from wizard.common import sat_int
from wizard.common import lazy_re

LINK_TYPES = ("X", "SYS", "NODE", "PHB", "PXB", "PIX", "SOC")
"""nvidia-smi topo -m link types besides NV# (SOC: older drivers' name for SYS)."""
P2P_CODES = {"X": "self", "OK": "Status Ok", "CNS": "Chipset not supported", "GNS": "GPU not supported",
             "TNS": "Topology not supported", "NS": "Not supported", "DR": "Disabled by regkey", "U": "Unknown"}
"""nvidia-smi topo -p2p legend (as printed by nvidia-smi under the matrix)."""

_NAME_RE = r"(?:GPU\d{1,3}|NIC\d{1,3}|mlx\d_\d{1,3}|mlx\d_bond_\d{1,3})"
_NAME_ANY = lazy_re(_NAME_RE)
_AFFINITY_HEADERS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


@dataclass(frozen=True)
class Matrix:
    """A ``topo -m`` or ``topo -p2p`` matrix. ``cells[row][col]`` are the printed tokens."""

    columns: list[str] = field(default_factory=list)
    rows: dict[str, dict[str, str]] = field(default_factory=dict)
    row_lines: dict[str, str] = field(default_factory=dict)
    affinity: dict[str, dict[str, str]] = field(default_factory=dict)  # row -> {"CPU Affinity": ...}
    header_line: str = ""
    legend: list[str] = field(default_factory=list)
    nic_legend: dict[str, str] = field(default_factory=dict)  # NIC0 -> mlx5_0
    problems: list[str] = field(default_factory=list)
    inferred: bool = False  # no header row: the column order was read from where each row has its X
    unknown_columns: list[str] = field(default_factory=list)  # "?8": a column no printed row names

    @property
    def gpus(self) -> list[str]:
        """GPU names in column order (the rows may be fewer when the output was cut)."""
        return [c for c in self.columns if c.startswith("GPU")]

    @property
    def nics(self) -> list[str]:
        return [c for c in self.columns if not c.startswith(("GPU", "?"))]

    def cell(self, a: str, b: str) -> str:
        """The printed token for ``a``/``b`` from either row ("" when not printed)."""
        return self.rows.get(a, {}).get(b) or self.rows.get(b, {}).get(a) or ""

    def gpu_pairs(self) -> list[tuple[str, str, str]]:
        """(GPUa, GPUb, token) for every GPU pair with at least one of its rows printed."""
        gpus = self.gpus
        out = []
        for i, a in enumerate(gpus):
            for b in gpus[i + 1:]:
                v = self.cell(a, b)
                if v:
                    out.append((a, b, v))
        return out


def nv_count(token: str) -> int | None:
    """"NV18" -> 18; None for other tokens."""
    m = re.fullmatch(r"NV(\d{1,3})", token or "")
    return sat_int(m.group(1)) if m else None


_GLUED = lazy_re(rf"(?:{_NAME_RE}|SYS|NODE|PHB|PXB|PIX|SOC|NV\d{{1,3}}|CPU)")
"""What a glued token splits into: column names, link types, and the header's "CPU" of "CPU Affinity" (``NIC11CPU``
when the last NIC column's name fills its width)."""


def _unglue(toks: list[str]) -> list[str]:
    """Split tokens a paste glued together when it lost the tab between two columns (``NIC8NIC9``,
    ``NODENODE``): a token made of two or more whole column names or link types becomes those tokens."""
    out: list[str] = []
    for t in toks:
        parts = _GLUED.findall(t) if len(t) > 4 else []
        out.extend(parts if len(parts) > 1 and "".join(parts) == t else [t])
    return out


def _parse_matrix(text: str, valid: re.Pattern[str]) -> Matrix:
    mx = Matrix()
    in_legend = False
    columns: list[str] = []
    header_line = ""
    for raw in text.splitlines():
        s = raw.strip()
        if not s:
            continue
        if s.startswith(("Legend", "NIC Legend")):
            in_legend = True
            continue
        if in_legend:
            m = re.match(r"^(NIC\d{1,3}):\s*(\S+)$", s)
            if m:
                mx.nic_legend[m.group(1)] = m.group(2)
            else:
                mx.legend.append(s)
            continue
        toks = _unglue(s.split())
        if not columns and re.match(rf"^{_NAME_RE}$", toks[0]) and all(
                re.fullmatch(_NAME_RE, t) or t in ("CPU", "NUMA", "Affinity", "ID", "GPU") for t in toks):
            columns = [t for t in toks if re.fullmatch(_NAME_RE, t)]
            header_line = raw.rstrip()
            continue
        if columns and re.fullmatch(_NAME_RE, toks[0]):
            name = toks[0]
            vals = toks[1:]
            ncol = len(columns)
            cells = vals[:ncol]
            if not cells or not all(valid.fullmatch(c) for c in cells):
                mx.problems.append(raw)
                continue
            mx.rows[name] = dict(zip(columns, cells))
            mx.row_lines[name] = raw.rstrip()
            extra = vals[ncol:]
            if extra:
                aff = {}
                for key, v in zip(_AFFINITY_HEADERS, extra):
                    aff[key] = v
                mx.affinity[name] = aff
            continue
        mx.problems.append(raw)
    if not columns:
        inferred = _headerless(text, valid)
        if inferred is not None:
            return inferred
    return replace(mx, columns=columns, header_line=header_line)


def _headerless(text: str, valid: re.Pattern[str]) -> Matrix | None:
    """A matrix pasted without its header row (only ``GPU0  X  NV18 ...`` rows): nvidia-smi prints row i
    with ``X`` in column i, so each row's ``X`` names its column. Columns no printed row names (a cut
    paste, NIC columns whose rows were left out) become ``?<position>``, except that a column holding an
    NV# link is a GPU (a NIC has no NVLink) and is named after the GPUs around it when that is certain.
    None when the rows do not have that shape."""
    rows: list[tuple[str, list[str], list[str], str]] = []
    for raw in text.splitlines():
        toks = raw.split()
        if not toks or not re.fullmatch(_NAME_RE, toks[0]):
            continue
        cells: list[str] = []
        for t in toks[1:]:
            if not valid.fullmatch(t) or (t == "N/A" and "X" in cells):
                break
            cells.append(t)
        if cells.count("X") != 1:
            return None
        rows.append((toks[0], cells, toks[1 + len(cells):], raw.rstrip()))
    if len(rows) < 2:
        return None
    width = max(len(c) for _, c, _, _ in rows)
    if any(len(c) != width for _, c, _, _ in rows):
        return None
    columns: list[str | None] = [None] * width
    for name, cells, _, _ in rows:
        pos = cells.index("X")
        if columns[pos] is not None or name in columns:
            return None
        columns[pos] = name
    known_gpu = {i: sat_int(c[3:]) for i, c in enumerate(columns) if c and c.startswith("GPU")}
    names: list[str] = []
    for i, c in enumerate(columns):
        if c is not None:
            names.append(c)
            continue
        nv_here = any(nv_count(cells[i]) is not None for _, cells, _, _ in rows)
        before = [n for p, n in known_gpu.items() if p < i]
        guess = f"GPU{max(before) + (i - max(p for p in known_gpu if p < i))}" if before else ""
        if nv_here and guess and guess not in columns and all(p < i for p in known_gpu):
            names.append(guess)
        else:
            names.append(f"?{i}")
    mx = Matrix(columns=names, inferred=True, unknown_columns=[n for n in names if n.startswith("?")])
    for name, cells, extra, line in rows:
        mx.rows[name] = dict(zip(names, cells))
        mx.row_lines[name] = line
        if extra:
            mx.affinity[name] = dict(zip(_AFFINITY_HEADERS, extra))
    return mx


_TOPO_CELL = lazy_re(r"X|SYS|NODE|PHB|PXB|PIX|SOC|NV\d{1,3}|N/A")
_P2P_CELL = lazy_re(r"X|OK|CNS|GNS|TNS|NS|DR|U")


def parse_topo_matrix(text: str) -> Matrix:
    """``nvidia-smi topo -m`` (also ``--matrix``) -> :class:`Matrix` of link types."""
    return _parse_matrix(text, _TOPO_CELL)


def parse_p2p_matrix(text: str) -> Matrix:
    """``nvidia-smi topo -p2p r|w|n|a|p`` -> :class:`Matrix` of P2P status codes."""
    return _parse_matrix(text, _P2P_CELL)


# ------------------------------------------------------------------ nvidia-smi nvlink


@dataclass(frozen=True)
class NvlinkGpu:
    """One GPU block of ``nvidia-smi nvlink -s`` / ``-e``."""

    index: int
    name: str
    uuid: str = ""
    header: str = ""
    links: dict[int, float | None] = field(default_factory=dict)  # -s: link -> GB/s, None = inactive
    link_lines: dict[int, str] = field(default_factory=dict)
    counters: dict[int, dict[str, int]] = field(default_factory=dict)  # -e: link -> {"Replay Errors": n}
    counter_lines: list[str] = field(default_factory=list)
    traffic: dict[int, dict[str, int]] = field(default_factory=dict)
    """``nvidia-smi nvlink -gt d`` (and the older ``-g 0``): link -> {"Tx": KiB, "Rx": KiB} since the counters were
    last reset."""
    traffic_lines: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # driver messages ("... all links are inActive")

    @property
    def active(self) -> list[int]:
        return [k for k, v in self.links.items() if v is not None]

    @property
    def inactive(self) -> list[int]:
        return [k for k, v in self.links.items() if v is None]


@dataclass(frozen=True)
class NvlinkReport:
    gpus: list[NvlinkGpu] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    ellipsis: bool = False  # the paste elides lines ("[...]", "...")
    cut: bool = False
    """The text ends on a link line of the last GPU (nvidia-smi lists every link, an inactive one as ``<inactive>``, so
    a last block with fewer links is a paste cut there: held-out round 305, a capture stopping at GPU 3's link 1)."""


_GPU_HDR = lazy_re(r"^GPU (?P<i>\d{1,4}): (?P<rest>.*)$")
_UUID = lazy_re(r"\s*\(UUID: (?P<uuid>[^)]*)\)")
_LINK_SPEED = lazy_re(r"^Link (?P<n>\d{1,3}): (?:(?P<v>\d{1,4}(?:\.\d{1,4})?) ?GB/s|(?P<ina><inactive>|Inactive|inactive|N/A))\s*$")
_LINK_TRAFFIC = lazy_re(r"^Link (?P<n>\d{1,3}): (?:(?:Data )?(?:Tx|Rx)\d?: \d{1,19} ?(?:KiB|KBytes|KB)(?:, |\s*$))+")
_TRAFFIC_ITEM = lazy_re(r"(?P<d>Tx|Rx)\d?: (?P<v>\d{1,19}) ?(?:KiB|KBytes|KB)")
"""``nvidia-smi nvlink -gt d``'s "Link 0: Data Tx: 648555824 KiB" (one direction a line) and ``-g 0``'s older
"Link 0: Rx0: 0 KBytes, Tx0: 0 KBytes"."""
_LINK_CAPABILITY = lazy_re(r"^Link \d{1,3}, [A-Za-z][\w /-]*: (?:true|false)$", re.I)
"""``nvidia-smi nvlink -c``: "Link 0, P2P is supported: true" (a link's capabilities)."""
_LINK_COUNTER = lazy_re(r"^Link (?P<n>\d{1,3}): (?P<k>[A-Za-z][A-Za-z0-9 _/-]*?)\s*: (?P<v>\d{1,19})\s*$")


_DCGMI_ERR_GPU = lazy_re(r"^\|\s*GPU (?P<i>\d{1,4})\s*\|\s*$")
_DCGMI_ERR_LINK = lazy_re(r"^\|\s*Link (?P<n>\d{1,3})\s*\|\s*\|\s*$")
_DCGMI_ERR_COUNTER = lazy_re(r"^\|\s*->\s*(?P<k>[A-Za-z][A-Za-z0-9 _/-]*?)\s*\|\s*(?P<v>\d{1,19})\s*\|\s*$")


def _dcgmi_errors_as_smi(text: str) -> str:
    """``dcgmi nvlink -g N -e`` ("NVLINK Error Counts" table: ``| GPU 1 |``, ``| Link 0 | |``,
    ``| -> CRC FLIT Error | 0 |``) rewritten in ``nvidia-smi nvlink -e``'s lines, so one parser reads both.
    Other lines pass through."""
    out: list[str] = []
    link: str | None = None
    for raw in text.splitlines():
        s = raw.strip()
        m = _DCGMI_ERR_GPU.match(s)
        if m:
            out.append(f"GPU {m.group('i')}: (dcgmi nvlink -e)")
            link = None
            continue
        m = _DCGMI_ERR_LINK.match(s)
        if m:
            link = m.group("n")
            continue
        m = _DCGMI_ERR_COUNTER.match(s)
        if m and link is not None:
            out.append(f"Link {link}: {m.group('k')}: {m.group('v')}")
            continue
        if s.startswith("+-") or s.startswith("+=") or re.match(r"^\|\s*NVLINK Error Counts\s*\|$", s):
            continue  # the table's frame
        out.append(raw)
    return "\n".join(out)


def parse_nvlink(text: str) -> NvlinkReport:
    """``nvidia-smi nvlink -s`` and ``nvidia-smi nvlink -e`` text (several samples may follow each
    other: a repeated GPU header starts a new block), and ``dcgmi nvlink -e``'s error-count table
    (:func:`_dcgmi_errors_as_smi`) -> :class:`NvlinkReport`."""
    if "NVLINK Error Counts" in text:
        text = _dcgmi_errors_as_smi(text)
    rep = NvlinkReport()
    ellipsis = False
    cur: NvlinkGpu | None = None
    for raw in text.splitlines():
        s = raw.strip()
        if not s:
            continue
        if s in ("...", "....", "[...]") or s.startswith("[...]"):
            ellipsis = True
            continue
        m = _GPU_HDR.match(s)
        if m and not re.match(r"^GPU \d+: Link \d", s):
            rest = m.group("rest")
            u = _UUID.search(rest)
            name, uuid, tail = (rest[:u.start()], u.group("uuid"), rest[u.end():]) if u else (rest, "", "")
            cur = NvlinkGpu(sat_int(m.group("i")), name.strip(), uuid, s)
            tail = tail.strip()
            if tail:
                cur.notes.append(tail)
            rep.gpus.append(cur)
            continue
        if cur is None:
            rep.problems.append(raw)
            continue
        m = _LINK_SPEED.match(s)
        if m:
            n = sat_int(m.group("n"))
            cur.links[n] = None if m.group("ina") else float(m.group("v"))
            cur.link_lines[n] = s
            continue
        m = _LINK_TRAFFIC.match(s)
        if m:
            per = cur.traffic.setdefault(sat_int(m.group("n")), {})
            for t in _TRAFFIC_ITEM.finditer(s):
                per[t.group("d")] = sat_int(t.group("v"))
            cur.traffic_lines.append(s)
            continue
        m = _LINK_COUNTER.match(s)
        if m:
            cur.counters.setdefault(sat_int(m.group("n")), {})[m.group("k").strip()] = sat_int(m.group("v"))
            cur.counter_lines.append(s)
            continue
        if _LINK_CAPABILITY.match(s):
            continue  # `nvidia-smi nvlink -c`: what each link supports, not its state
        if re.search(r"nvlink|inactive|not supported|unable", s, re.I):
            cur.notes.append(s)
            continue
        rep.problems.append(raw)
    last = next((ln.strip() for ln in reversed(text.splitlines()) if ln.strip()), "")
    # a GPU's header repeated with nothing of its own under it (`nvlink -s` then `nvlink -c` of the same GPU) is not
    # a GPU without links
    blocks = [g for g in rep.gpus if g.links or g.counters or g.traffic or g.notes
              or not any(o is not g and (o.index, o.uuid) == (g.index, g.uuid) for o in rep.gpus)]
    return replace(rep, gpus=blocks, ellipsis=ellipsis,
                   cut=bool(blocks) and bool(_LINK_SPEED.match(last)) and last in blocks[-1].link_lines.values())


# ------------------------------------------------------------------ dcgmi nvlink --link-status


@dataclass(frozen=True)
class DcgmLinks:
    """One ``gpuId N:`` / ``physicalId N:`` entry: the state letter of each link."""

    kind: str  # "gpu" or "nvswitch"
    id: int
    states: list[str]
    lines: list[str]  # the raw line(s): "gpuId 0: U U ..." or "gpuId 0:" followed by the states line


@dataclass(frozen=True)
class DcgmNvlink:
    gpus: list[DcgmLinks] = field(default_factory=list)
    switches: list[DcgmLinks] = field(default_factory=list)
    no_switches: bool = False
    problems: list[str] = field(default_factory=list)
    header_lines: list[str] = field(default_factory=list)


DCGM_STATES = {"U": "Up", "D": "Down", "X": "Disabled", "_": "Not Supported"}
"""The key dcgmi prints under its link table ("Key: Up=U, Down=D, Disabled=X, Not Supported=_")."""


def parse_dcgmi_nvlink(text: str) -> DcgmNvlink:
    """``dcgmi nvlink --link-status`` (``-s``) -> per GPU and per NVSwitch link states."""
    res = DcgmNvlink()
    no_switches = False
    section = ""
    pending: tuple[str, int, str] | None = None
    for raw in text.splitlines():
        s = raw.strip()
        if not s:
            continue
        if set(s) <= set("+-|=") or "NvLink Link Status" in s:
            res.header_lines.append(s)
            continue
        if s.startswith("GPUs:"):
            section = "gpu"
            continue
        if s.startswith("NvSwitches:"):
            section = "nvswitch"
            continue
        if s.startswith("Key:"):
            res.header_lines.append(s)
            continue
        if "No NvSwitches found" in s:
            no_switches = True
            continue
        m = re.match(r"^(gpuId|physicalId)\s+(\d{1,6}):\s*(.*)$", s)
        if m:
            kind = "gpu" if m.group(1) == "gpuId" else "nvswitch"
            if section and kind != section and section == "gpu" and kind == "nvswitch":
                section = "nvswitch"
            rest = m.group(3).strip()
            if rest:
                toks = rest.split()
                if all(t in DCGM_STATES for t in toks):
                    entry = DcgmLinks(kind, sat_int(m.group(2)), toks, [s])
                    (res.gpus if kind == "gpu" else res.switches).append(entry)
                else:
                    res.problems.append(raw)
                pending = None
            else:
                pending = (kind, sat_int(m.group(2)), s)
            continue
        toks = s.split()
        if pending and toks and all(t in DCGM_STATES for t in toks):
            entry = DcgmLinks(pending[0], pending[1], toks, [pending[2], s])
            (res.gpus if pending[0] == "gpu" else res.switches).append(entry)
            pending = None
            continue
        res.problems.append(raw)
    return replace(res, no_switches=no_switches)


# ------------------------------------------------------------------ explain kinds


def _lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()][:4000]


def _head(text: str) -> str:
    """The first 4000 non-blank lines: detectors look at no more (every detector sees every input)."""
    return "\n".join(_lines(text))


def detect_topo_matrix(text: str) -> float:
    """Confidence that ``text`` is ``nvidia-smi topo -m``."""
    text = _head(text)
    if not text or not _NAME_ANY.search(text):  # cheap first: a matrix row is named GPUn, NICn or mlxN_M
        return 0.0
    mx = parse_topo_matrix(text)
    if not mx.rows:
        return 0.0
    cells = [c for r in mx.rows.values() for c in r.values()]
    if any(c not in ("X", "N/A") for c in cells) or "Connection traversing" in text or "CPU Affinity" in text:
        return 0.96
    return 0.5


def detect_p2p_matrix(text: str) -> float:
    """Confidence that ``text`` is ``nvidia-smi topo -p2p``."""
    text = _head(text)
    if not text or not _NAME_ANY.search(text):  # cheap first: a matrix row is named GPUn, NICn or mlxN_M
        return 0.0
    mx = parse_p2p_matrix(text)
    if not mx.rows:
        return 0.0
    cells = [c for r in mx.rows.values() for c in r.values()]
    if "Status Ok" in text or "Chipset not supported" in text or any(c in ("OK", "CNS", "GNS", "TNS", "NS", "DR")
                                                                      for c in cells):
        return 0.97
    return 0.4


def _nvlink_counts(text: str) -> tuple[int, int, int]:
    rep = parse_nvlink(_head(text))
    speeds = sum(len(g.links) for g in rep.gpus)
    counters = sum(len(g.counter_lines) for g in rep.gpus)
    return len(rep.gpus), speeds, counters


def detect_nvlink_status(text: str) -> float:
    """Confidence that ``text`` is ``nvidia-smi nvlink -s``."""
    gpus, speeds, counters = _nvlink_counts(text)
    if gpus and speeds and speeds >= counters:
        return 0.97
    if gpus and re.search(r"all links are inActive|does not have or support Nvlink", text, re.I):
        return 0.8
    return 0.0


def detect_nvlink_errors(text: str) -> float:
    """Confidence that ``text`` is ``nvidia-smi nvlink -e``."""
    gpus, speeds, counters = _nvlink_counts(text)
    return 0.97 if gpus and counters and counters > speeds else 0.0


def detect_nvlink_throughput(text: str) -> float:
    """Confidence that ``text`` is ``nvidia-smi nvlink -gt d`` (data throughput counters, KiB a link and direction)."""
    rep = parse_nvlink(_head(text))
    lines = sum(len(g.traffic_lines) for g in rep.gpus)
    return 0.97 if lines and lines >= sum(len(g.links) + len(g.counter_lines) for g in rep.gpus) else 0.0


def detect_dcgmi_nvlink(text: str) -> float:
    """Confidence that ``text`` is ``dcgmi nvlink --link-status``."""
    text = _head(text)
    d = parse_dcgmi_nvlink(text)
    if d.gpus or d.switches:
        return 0.99 if ("NvLink Link Status" in text or "Key: Up=U" in text) else 0.9
    return 0.6 if "NvLink Link Status" in text else 0.0
