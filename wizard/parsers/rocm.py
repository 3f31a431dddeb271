"""AMD ROCm SMI output (``rocm-smi``): its Concise Info table and its ``--showtopo`` GPU-pair matrices.

Sources for the formats: ROCm SMI's command-line tool (https://github.com/ROCm/rocm_smi_lib, ``python_smi_tools/
rocm_smi.py``): the default output is the "Concise Info" table, one row per GPU (``GPU Temp AvgPwr SCLK MCLK Fan
Perf PwrCap VRAM% GPU%`` in ROCm 5; ROCm 6 adds ``Device [Model : Revision]``, ``Power (Socket)``, ``Partitions``
and a second line with the GPU's name); ``--showtopo`` prints square matrices titled "Weight between two GPUs",
"Hops between two GPUs" and "Link Type between two GPUs" (``XGMI`` or ``PCIE``), then the NUMA node of each GPU.

Parsers never raise; what they cannot read is in ``problems``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from wizard.common import sat_int
from wizard.common import lazy_re

BANNER = lazy_re(r"=+\s*ROCm System Management Interface\s*=+|=+\s*(?:End of )?ROCm SMI Log\s*=+")
_CONCISE = lazy_re(r"=+\s*Concise Info\s*=+")
_MATRIX_TITLE = lazy_re(r"^=*\s*(Weight|Hops|Link Type) between two GPUs\s*=*\s*$", re.M)
_HEAD_GPUS = lazy_re(r"^\s*(GPU\d+(?:\s+GPU\d+)+)\s*$")
_ROW = lazy_re(r"^\s*GPU(\d+)\s+(.+?)\s*$")


@dataclass(frozen=True)
class RocmGpu:
    """One row of the Concise Info table. Temperatures in °C, powers in W, clocks in MHz, the rest in %; None where
    the cell reads N/A or is missing. ``name``: the ROCm 6 second line ("AMD Instinct MI300X"), else ""."""

    index: int
    temp_c: float | None
    power_w: float | None
    power_cap_w: float | None
    sclk_mhz: float | None
    mclk_mhz: float | None
    vram_pct: float | None
    gpu_pct: float | None
    name: str
    line: str


@dataclass(frozen=True)
class RocmConcise:
    gpus: tuple[RocmGpu, ...] = ()
    header: str = ""
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class RocmTopo:
    """``rocm-smi --showtopo`` matrices: ``kind`` ("weight", "hops", "link type") -> {(gpu a, gpu b): cell} for a != b;
    ``lines``: the rows read, per kind, as evidence."""

    matrices: dict[str, dict[tuple[int, int], str]] = field(default_factory=dict)
    gpus: tuple[int, ...] = ()
    lines: dict[str, tuple[str, ...]] = field(default_factory=dict)


def detect_rocm_smi(text: str) -> float:
    """0.95 for rocm-smi output: its banner, its Concise Info title, or a "... between two GPUs" matrix of GPUn rows."""
    head = text[:200_000]
    if "ROCm" not in head and "Concise Info" not in head and "between two GPUs" not in head:  # cheap: most inputs
        return 0.0
    if BANNER.search(head) or _CONCISE.search(head):
        return 0.95
    if _MATRIX_TITLE.search(head) and re.search(
            r"^\s*GPU\d+\s+\S", head, re.M):
        return 0.95
    return 0.0


def _num(cell: str) -> float | None:
    m = re.match(r"^(-?\d+(?:\.\d+)?)", cell.strip())
    return float(m.group(1)) if m else None


def parse_concise(text: str) -> RocmConcise:
    """The Concise Info table's rows, each cell read by its header's name where a row has one cell per name, else by
    its unit (°C, W, Mhz, %), so both the ROCm 5 and the ROCm 6 layouts read; a row's cells are split on runs of spaces (ROCm 6's "[0x74a1 : 0x00]" and "NPS1, SPX" kept whole).
    The power cap is a row's last W cell, its average (ROCm 5) or socket (ROCm 6) power the one before; VRAM% and
    GPU% its last two % cells."""
    lines = text.splitlines()
    header_i = next((i for i, ln in enumerate(lines) if re.match(r"^\s*(?:GPU|Device)\s+.*\bTemp\b.*\bSCLK\b", ln)), None)
    if header_i is None:
        return RocmConcise(problems=("no Concise Info header line (GPU/Device ... Temp ... SCLK)",))
    header = lines[header_i]
    columns = [c.lower() for c in re.split(r"\s{2,}", header.strip()) if c]
    gpus: list[RocmGpu] = []
    problems: list[str] = []
    for i in range(header_i + 1, len(lines)):
        ln = lines[i]
        if BANNER.search(ln) or re.match(r"^\s*=+\s*$", ln):
            if gpus:
                if re.match(r"^\s*=+\s*$", ln) and i + 1 < len(lines) and re.match(r"^\s*\d+\s", lines[i + 1]):
                    continue
                break
            continue
        m = re.match(r"^\s*(\d+)\s+(.*)$", ln)
        if not m:  # ROCm 6: the GPU's name on the line under its row
            if gpus and ln.strip() and not gpus[-1].name and re.search(r"[A-Za-z]", ln) and "%" not in ln:
                gpus[-1] = dataclasses.replace(gpus[-1], name=ln.strip())
            continue
        cells = [c for c in re.split(r"\s{2,}", m.group(2).strip()) if c]
        if len(cells) + 1 == len(columns):  # one cell per header name: read by name
            by = dict(zip(columns[1:], cells))
            power_cell = by.get("avgpwr") or by.get("power") or ""
            gpus.append(RocmGpu(sat_int(m.group(1)), _num(by.get("temp", "")), _num(power_cell),
                                _num(by.get("pwrcap", "")), _num(by.get("sclk", "")), _num(by.get("mclk", "")),
                                _num(by.get("vram%", "")), _num(by.get("gpu%", "")), "", ln.strip()))
            continue
        temp = next((c for c in cells if re.match(r"^(?:-?\d+(?:\.\d+)?\s*°?c|N/A)$", c, re.I)), None)
        watts = [c for c in cells if re.match(r"^(?:\d+(?:\.\d+)?W|N/A)$", c)]
        mhz = [c for c in cells if re.match(r"^\d+(?:\.\d+)?Mhz$", c, re.I)]
        pct = [c for c in cells if re.match(r"^(?:\d+(?:\.\d+)?%|N/A)$", c)]
        if temp is None and not mhz:
            problems.append(ln.strip())
            continue
        # the power cap is the last W cell; the average/socket power the one before it (N/A on a second GCD)
        cap = _num(watts[-1]) if watts else None
        power = _num(watts[-2]) if len(watts) >= 2 else None
        gpus.append(RocmGpu(sat_int(m.group(1)), _num(temp or ""), power, cap, _num(mhz[0]) if mhz else None,
                            _num(mhz[1]) if len(mhz) > 1 else None, _num(pct[-2]) if len(pct) >= 2 else None,
                            _num(pct[-1]) if pct else None, "", ln.strip()))
    return RocmConcise(tuple(gpus), header.strip(), tuple(problems[:10]))


def parse_topo(text: str) -> RocmTopo:
    """The ``--showtopo`` matrices that are there (a paste may hold one, or stop inside one)."""
    matrices: dict[str, dict[tuple[int, int], str]] = {}
    lines_of: dict[str, list[str]] = {}
    gpus: set[int] = set()
    kind = ""
    cols: list[int] = []
    for ln in text.splitlines():
        t = _MATRIX_TITLE.match(ln)
        if t:
            kind, cols = t.group(1).lower(), []
            matrices.setdefault(kind, {})
            lines_of.setdefault(kind, [])
            continue
        if not kind:
            continue
        h = _HEAD_GPUS.match(ln)
        if h:
            cols = [sat_int(x[3:]) for x in h.group(1).split()]
            continue
        r = _ROW.match(ln)
        if r and cols:
            a = sat_int(r.group(1))
            cells = r.group(2).split()
            gpus.add(a)
            lines_of[kind].append(ln.rstrip())
            for b, cell in zip(cols, cells):
                gpus.add(b)
                if a != b:
                    matrices[kind][(a, b)] = cell
        elif ln.strip() and not ln.startswith("="):
            kind = "" if not re.match(r"^\s*GPU", ln) else kind
    return RocmTopo(matrices, tuple(sorted(gpus)), {k: tuple(v) for k, v in lines_of.items()})


# ------------------------------------------------------------------ rocminfo, clinfo, rocm-smi's per-GPU lines

_AGENT_NAME = lazy_re(r"^\s{0,4}Name:\s+(gfx[0-9a-f]{3,4})\s*$", re.M)
_AGENT_MARKETING = lazy_re(r"^\s{0,4}Marketing Name:\s+(.+?)\s*$", re.M)
_DEVICE_TYPE = lazy_re(r"^\s*Device Type:\s+(GPU|CPU|DSP)\s*$", re.M)
_ROCMINFO_MARK = lazy_re(r"^\s*(?:HSA System Attributes|HSA Agents|ROCk module (?:version [\d.]+ )?is loaded|"
                         r"Agent \d+\s*$|Runtime Version:\s+[\d.]+)", re.M)


@dataclass(frozen=True)
class RocmInfo:
    """``rocminfo``: the GPU agents the ROCm runtime (HSA) enumerates, by gfx target and marketing name, the CPU
    agents' count, and the lines read."""

    gpus: tuple[tuple[str, str], ...]
    cpus: int
    lines: tuple[str, ...]


def parse_rocminfo(text: str) -> RocmInfo:
    """Each agent's ``Name:`` (a gfx target is a GPU) with the ``Marketing Name:`` after it; CPU agents are the other
    top-level names (``Device Type: CPU`` or a name that is not a gfx target). Works on a grep of the Name lines too;
    never raises."""
    gpus: list[tuple[str, str]] = []
    cpus = 0
    lines: list[str] = []
    pending = ""
    for raw in text.splitlines()[:200_000]:
        m = _AGENT_NAME.match(raw)
        if m:
            if pending:
                gpus.append((pending, ""))
            pending = m.group(1)
            lines.append(raw.strip())
            continue
        mk = _AGENT_MARKETING.match(raw)
        if mk:
            if pending:
                gpus.append((pending, mk.group(1)))
                lines.append(raw.strip())
                pending = ""
            elif not re.search(r"\bgfx|Instinct|Radeon", mk.group(1)):
                cpus += 1
    if pending:
        gpus.append((pending, ""))
    return RocmInfo(tuple(gpus), cpus, tuple(lines))


def detect_rocminfo(text: str) -> float:
    """0.9 for ``rocminfo`` (its section titles or an agent block) or a grep of its Name lines naming gfx targets."""
    head = text[:200_000]
    if _ROCK_NOT_LIVE.search(head):
        return 0.9
    if _ROCMINFO_MARK.search(head) and (_DEVICE_TYPE.search(head) or _AGENT_NAME.search(head)):
        return 0.9
    if _AGENT_NAME.search(head) and _AGENT_MARKETING.search(head):
        return 0.85
    return 0.0


_ROCK_NOT_LIVE = lazy_re(r"\bROCk module is NOT (?:live|loaded)\b")
"""rocminfo's first line when the amdgpu driver's KFD (ROCk) is not loaded."""
_CL_PLATFORMS = lazy_re(r"^\s*Number of platforms:?\s+(\d+)\s*$", re.M)
_CL_DEVICES = lazy_re(r"^\s*Number of devices:?\s+(\d+)\s*$", re.M)
_CL_PLATFORM = lazy_re(r"^\s*Platform Name:?\s+(.+?)\s*$", re.M)


def parse_clinfo(text: str) -> list[tuple[str, int, str]]:
    """``clinfo``: each platform (name) with its device count and the count's line, in order; never raises."""
    out: list[tuple[str, int, str]] = []
    name = ""
    for raw in text.splitlines()[:200_000]:
        if m := _CL_PLATFORM.match(raw):
            name = m.group(1)
        elif m := _CL_DEVICES.match(raw):
            out.append((name, sat_int(m.group(1)), raw.strip()))
    return out


def detect_clinfo(text: str) -> float:
    """0.9 for ``clinfo`` output: its platform count and a device count."""
    head = text[:200_000]
    return 0.9 if _CL_PLATFORMS.search(head) and _CL_DEVICES.search(head) else 0.0


_GPU_FIELD = lazy_re(r"^GPU\[(\d+)\]\s*:\s*([^:]+?):\s*(.*?)\s*$")


def parse_gpu_fields(text: str) -> dict[int, dict[str, str]]:
    """rocm-smi's per-GPU lines (``GPU[1]\t\t: Device ID: \t\t0x74a1``; ``-i``, ``--showbus``, ``--showmeminfo``...)
    -> {GPU index: {field: value}}; never raises."""
    out: dict[int, dict[str, str]] = {}
    for raw in text.splitlines()[:200_000]:
        m = _GPU_FIELD.match(raw.strip())
        if m:
            out.setdefault(sat_int(m.group(1)), {})[m.group(2).strip()] = m.group(3).strip()
    return out
