"""Parsers for the CUDA samples operators run to prove a GPU: ``deviceQuery``, ``bandwidthTest`` and
``p2pBandwidthLatencyTest`` (NVIDIA/cuda-samples, Samples/1_Utilities and 5_Domain_Specific).

Pure functions from the pasted text to typed facts; they never raise: what cannot be read is listed in
``problems``. The detectors return a confidence for ``bringup explain``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from wizard.common import sat_int, strip_editor_line_numbers
from wizard.parsers._frozen import build_set as _set
from wizard.common import lazy_re

# ------------------------------------------------------------------ deviceQuery

_DQ_HEADER = lazy_re(r"CUDA Device Query \((?:Runtime|Driver) API\)", re.I)
_DQ_SUMMARY = lazy_re(r"deviceQuery, CUDA Driver = CUDART", re.I)
_DQ_DETECTED = lazy_re(r"Detected (\d+) CUDA Capable device\(s\)")
_DQ_NONE = lazy_re(r"There (?:are|is) no available device\(s\) that support CUDA|There is no device supporting CUDA",
                      re.I)
"""deviceQuery finding no GPU: today's wording, and CUDA 2-3's ("There is no device supporting CUDA", after which it
lists the CPU "Device Emulation" device)."""
_DQ_ERROR = lazy_re(r"cudaGetDeviceCount returned (\d+)")
_DQ_ERROR_TEXT = lazy_re(r"^\s*->\s*(.+?)\s*$")
_DQ_DEVICE = lazy_re(r"^\s*Device (\d+): \"(.*)\"\s*$")
_DQ_CC = lazy_re(r"CUDA Capability Major/Minor version number:\s*(\d+)\.(\d+)")
_DQ_MEM = lazy_re(r"Total amount of global memory:\s*([\d.]+) MBytes")
_DQ_VERSIONS = lazy_re(r"CUDA Driver Version / Runtime Version\s+([\d.]+) / ([\d.]+)")
_DQ_PCI = lazy_re(r"Device PCI Domain ID / Bus ID / location ID:\s*(\d+) / (\d+) / (\d+)")
_DQ_NUMDEVS = lazy_re(r"NumDevs = (\d+)")
_RESULT = lazy_re(r"^\s*(?:deviceQuery, CUDA Driver = CUDART, .*?\s)?Result = (PASS|FAIL|WAIVED)\b", re.I)
"""The Result line; a paste that lost the newline before it has it at the end of deviceQuery's summary line."""
_SAMPLE_START = lazy_re(r"deviceQuery Starting\.\.\.", re.I)


@dataclass(frozen=True)
class DqDevice:
    """One ``Device N: "name"`` block of deviceQuery."""

    index: int
    name: str
    line: str
    compute_capability: str = ""
    memory_mib: float | None = None
    driver_cuda: str = ""
    runtime_cuda: str = ""
    pci_bus: int | None = None
    kernel_time_limit_line: str = ""  # "Run time limit on kernels: Yes": a display watchdog limits kernel run time


@dataclass(frozen=True)
class DeviceQuery:
    """What deviceQuery printed: the device count, each device, the error it stopped on, its Result line."""

    detected: int | None = None
    detected_line: str = ""
    devices: list[DqDevice] = field(default_factory=list)
    numdevs: int | None = None
    summary_line: str = ""
    error_code: int | None = None
    error_text: str = ""
    error_lines: list[str] = field(default_factory=list)
    result: str = ""
    result_line: str = ""
    no_device_line: str = ""
    problems: list[str] = field(default_factory=list)
    peer: dict[tuple[int, int], bool] = field(default_factory=dict)
    """With two or more GPUs: "> Peer access from A (GPU0) -> B (GPU1) : Yes" -> {(0, 1): True}
    (cudaDeviceCanAccessPeer for each ordered pair)."""
    peer_lines: dict[tuple[int, int], str] = field(default_factory=dict)


_DQ_PEER = lazy_re(r"Peer access from .*\(GPU(\d{1,3})\) -> .*\(GPU(\d{1,3})\)\s*:\s*(Yes|No)\b")


def detect_device_query(text: str) -> float:
    """Confidence that ``text`` is deviceQuery output."""
    if not isinstance(text, str) or not text:
        return 0.0
    if _DQ_HEADER.search(text) or _DQ_SUMMARY.search(text) or _SAMPLE_START.search(text):
        return 0.95
    if _DQ_DETECTED.search(text) and (_DQ_CC.search(text) or _RESULT.search(text)):
        return 0.93
    if _DQ_ERROR.search(text) and re.search(r"^[ \t]*Result = FAIL", text, re.M):
        return 0.93
    return 0.0


_DQ_TIME_LIMIT = lazy_re(r"^\s*Run time limit on kernels:\s*Yes\s*$")
"""deviceQuery's cudaDeviceProp.kernelExecTimeoutEnabled line (CUDA Runtime API, cudaDeviceProp: "whether there is a
run time limit on kernels"): a display's watchdog on that GPU."""


def parse_device_query(text: str) -> DeviceQuery:
    """Read deviceQuery's output; never raises."""
    if not isinstance(text, str):
        return DeviceQuery(problems=["not text"])
    v: dict[str, object] = {}
    devices: list[DqDevice] = []
    error_lines: list[str] = []
    problems: list[str] = []
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        m = _DQ_DETECTED.search(ln)
        if m:
            v["detected"], v["detected_line"] = sat_int(m.group(1)), ln.strip()
            continue
        if _DQ_NONE.search(ln):
            v["no_device_line"] = ln.strip()
            continue
        m = _DQ_ERROR.search(ln)
        if m:
            v["error_code"] = sat_int(m.group(1))
            error_lines[:] = [ln.strip()]
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            t = _DQ_ERROR_TEXT.match(nxt)
            if t:
                v["error_text"] = t.group(1)
                error_lines.append(nxt.strip())
            continue
        m = _DQ_PEER.search(ln)
        if m:
            peer = v.setdefault("peer", {})
            assert isinstance(peer, dict)
            peer[(sat_int(m.group(1)), sat_int(m.group(2)))] = m.group(3) == "Yes"
            plines = v.setdefault("peer_lines", {})
            assert isinstance(plines, dict)
            plines[(sat_int(m.group(1)), sat_int(m.group(2)))] = ln.strip()
            continue
        m = _DQ_DEVICE.match(ln)
        if m:
            devices.append(DqDevice(sat_int(m.group(1)), m.group(2).strip(), ln.strip()))
            continue
        m = _RESULT.match(ln)
        if m:
            v["result"], v["result_line"] = m.group(1).upper(), ln.strip()
            if not _DQ_SUMMARY.search(ln):
                continue
        m = _DQ_SUMMARY.search(ln)
        if m:
            v["summary_line"] = ln.strip()
            n = _DQ_NUMDEVS.search(ln)
            v["numdevs"] = sat_int(n.group(1)) if n else None
            continue
        if not devices:
            continue
        cur = devices[-1]
        m = _DQ_CC.search(ln)
        if m:
            devices[-1] = replace(cur, compute_capability=f"{m.group(1)}.{m.group(2)}")
            continue
        m = _DQ_MEM.search(ln)
        if m:
            try:
                devices[-1] = replace(cur, memory_mib=float(m.group(1)))
            except ValueError:
                problems.append(f"unreadable memory: {ln.strip()}")
            continue
        m = _DQ_VERSIONS.search(ln)
        if m:
            devices[-1] = replace(cur, driver_cuda=m.group(1), runtime_cuda=m.group(2))
            continue
        m = _DQ_PCI.search(ln)
        if m:
            devices[-1] = replace(cur, pci_bus=sat_int(m.group(2)))
            continue
        if _DQ_TIME_LIMIT.match(ln):
            devices[-1] = replace(cur, kernel_time_limit_line=ln.strip())
    if "detected" not in v and not devices and "error_code" not in v and "result" not in v:
        problems.append("no device count, device, error or Result line")
    return DeviceQuery(devices=devices, error_lines=error_lines, problems=problems, **v)  # type: ignore[arg-type]


# ------------------------------------------------------------------ bandwidthTest

_BT_HEADER = lazy_re(r"CUDA Bandwidth Test\] - Starting", re.I)
_BT_SECTION = lazy_re(r"^\s*(Host to Device|Device to Host|Device to Device) Bandwidth, (\d+) Device\(s\)", re.I)
_BT_MEMORY = lazy_re(r"^\s*(PINNED|PAGEABLE|WRITE-COMBINED)\b.*Memory Transfers", re.I)
_BT_UNIT = lazy_re(r"Transfer Size \(Bytes\)\s+Bandwidth\((MB|GB)/s\)", re.I)
_BT_ROW = lazy_re(r"^\s*(\d+)\s+([\d.]+)\s*$")
_BT_DEVICE = lazy_re(r"^\s*Device (\d+): (.+?)\s*$")
_DIRECTION = {"host to device": "h2d", "device to host": "d2h", "device to device": "d2d"}
_BT_CSV = lazy_re(r"^\s*bandwidthTest-(H2D|D2H|D2D)(?:-(Pinned|Paged|Pageable|WriteCombined))?,\s*Bandwidth\s*=\s*([\d.]+)\s*"
                     r"(MB|GB)/s,.*?Size\s*=\s*(\d+)\s*bytes(?:,\s*NumDevsUsed\s*=\s*(\d+))?", re.I)
"""bandwidthTest's ``--csv`` row: ``bandwidthTest-H2D-Pinned, Bandwidth = 12.4 GB/s, Time = 0.00549 s, Size = 68000000
bytes, NumDevsUsed = 1`` (cuda-samples Samples/1_Utilities/bandwidthTest, printResultsCSV)."""


@dataclass(frozen=True)
class BwMeasure:
    """One bandwidthTest figure: direction (h2d, d2h, d2d), memory (pinned, pageable), size and GB/s."""

    direction: str
    memory: str
    size_bytes: int
    gb_s: float
    line: str
    devices: int = 1


@dataclass(frozen=True)
class BandwidthTest:
    """bandwidthTest's devices, its figures (the largest transfer size per direction and memory) and Result."""

    devices: list[tuple[int, str, str]] = field(default_factory=list)  # (index, name, line)
    measures: list[BwMeasure] = field(default_factory=list)
    result: str = ""
    result_line: str = ""
    error_code: int | None = None
    error_lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def detect_bandwidth_test(text: str) -> float:
    """Confidence that ``text`` is bandwidthTest output."""
    if not isinstance(text, str) or not text:
        return 0.0
    if _BT_HEADER.search(text):
        return 0.95
    if any(_BT_CSV.match(ln) for ln in text.splitlines()[:50]):
        return 0.93
    if re.search(r"^[ \t]*(Host to Device|Device to Host) Bandwidth, \d+ Device\(s\)", text, re.M | re.I) and \
            re.search(r"Memory Transfers", text, re.I):
        return 0.93
    return 0.0


def parse_bandwidth_test(text: str) -> BandwidthTest:
    """Read bandwidthTest's output (quick, range or shmoo mode); keeps, per direction and memory kind, the row
    of the largest transfer size. Never raises."""
    if not isinstance(text, str):
        return BandwidthTest(problems=["not text"])
    devices: list[tuple[int, str, str]] = []
    error_lines: list[str] = []
    problems: list[str] = []
    result, result_line, error_code = "", "", None
    direction, memory, unit, ndev = "", "", "", 1
    best: dict[tuple[str, str], BwMeasure] = {}
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        m = _BT_SECTION.match(ln)
        if m:
            direction, memory, unit = _DIRECTION[m.group(1).lower()], "", ""
            ndev = sat_int(m.group(2))
            continue
        m = _BT_MEMORY.match(ln)
        if m:
            memory = m.group(1).lower()
            continue
        m = _BT_UNIT.search(ln)
        if m:
            unit = m.group(1).upper()
            continue
        m = _RESULT.match(ln)
        if m:
            result, result_line = m.group(1).upper(), ln.strip()
            continue
        m = _DQ_ERROR.search(ln) or re.search(r"code=(\d+)\(cuda\w+\)", ln)
        if m:
            error_code = sat_int(m.group(1))
            error_lines.append(ln.strip())
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if _DQ_ERROR_TEXT.match(nxt):
                error_lines.append(nxt.strip())
            continue
        m = _BT_CSV.match(ln)
        if m:  # the --csv form: direction, memory and unit on the row itself
            size, v = sat_int(m.group(5)), float(m.group(3))
            mem = {"paged": "pageable", "writecombined": "write-combined"}.get((m.group(2) or "pinned").lower(),
                                                                             (m.group(2) or "pinned").lower())
            key = (m.group(1).lower(), mem)
            gb = v / 1000.0 if m.group(4).upper() == "MB" else v
            if key not in best or size >= best[key].size_bytes:
                best[key] = BwMeasure(key[0], mem, size, gb, ln.strip(), sat_int(m.group(6)) if m.group(6) else 1)
            continue
        m = _BT_ROW.match(ln)
        if m and direction and unit:
            try:
                size, v = sat_int(m.group(1)), float(m.group(2))
            except ValueError:
                problems.append(f"unreadable row: {ln.strip()}")
                continue
            gb = v / 1000.0 if unit == "MB" else v
            key = (direction, memory or "pinned")
            if key not in best or size >= best[key].size_bytes:
                best[key] = BwMeasure(direction, memory or "pinned", size, gb, ln.strip(), ndev)
            continue
        m = _BT_DEVICE.match(ln)
        if m and not direction:
            devices.append((sat_int(m.group(1)), m.group(2).strip(), ln.strip()))
    if not best and not result and error_code is None:
        problems.append("no bandwidth figure, error or Result line")
    return BandwidthTest(devices, list(best.values()), result, result_line, error_code, error_lines, problems)


# ------------------------------------------------------------------ p2pBandwidthLatencyTest

_P2P_HEADER = lazy_re(r"P2P \(Peer-to-Peer\) GPU Bandwidth Latency Test", re.I)
_P2P_DEVICE = lazy_re(r"^\s*Device: (\d+), (.+?), pciBusID: ([0-9a-fA-F]+)")
_P2P_ACCESS = lazy_re(r"Device=(\d+) (CAN|CANNOT) Access Peer Device=(\d+)")
_P2P_MATRIX = lazy_re(r"^\s*(P2P Connectivity Matrix|(Unidirectional|Bidirectional) P2P=(Disabled|Enabled) "
                         r"Bandwidth(?: \((P2P \w+)\))? Matrix \(GB/s\)|P2P=(Disabled|Enabled) Latency(?: \(P2P \w+\))? "
                         r"Matrix \(us\))", re.I)
_MATRIX_COLS = lazy_re(r"^\s*(D\\D|D/D|GPU|CPU)((?:\s+\d+)+)\s*$")
_MATRIX_ROW = lazy_re(r"^\s*(\d+)((?:\s+[\d.]+)+)\s*$")


@dataclass(frozen=True)
class P2pMatrix:
    """One matrix of p2pBandwidthLatencyTest: its title, column GPUs and values[row][col]."""

    title: str
    cols: list[int] = field(default_factory=list)
    values: dict[int, dict[int, float]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class P2pTest:
    """p2pBandwidthLatencyTest: devices, CAN/CANNOT access lines and the matrices by title."""

    devices: dict[int, tuple[str, str]] = field(default_factory=dict)  # index -> (name, line)
    access: dict[tuple[int, int], bool] = field(default_factory=dict)
    access_lines: dict[tuple[int, int], str] = field(default_factory=dict)
    matrices: dict[str, P2pMatrix] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def matrix(self, *words: str) -> P2pMatrix | None:
        """The first matrix whose title contains every word (case-insensitive)."""
        for t, mx in self.matrices.items():
            if all(w.lower() in t.lower() for w in words):
                return mx
        return None




_P2P_LATENCY_TITLE = lazy_re(r"^[ \t]*P2P=(?:Disabled|Enabled) Latency(?: \(P2P \w+\))? Matrix \(us\)", re.M | re.I)


def detect_p2p_test(text: str) -> float:
    """Confidence that ``text`` is p2pBandwidthLatencyTest output (also its matrices without the banner: bandwidth,
    connectivity or only latency matrices, with or without an editor's line numbers)."""
    if not isinstance(text, str) or not text:
        return 0.0
    if _P2P_HEADER.search(text):
        return 0.95
    if re.search(r"^[ \t]*(Unidirectional|Bidirectional) P2P=(Disabled|Enabled) Bandwidth", text, re.M | re.I) or \
            re.search(r"^[ \t]*P2P Connectivity Matrix\s*$", text, re.M):
        return 0.93
    if "Latency" in text and "Matrix (us)" in text:
        body = strip_editor_line_numbers(text)
        if _P2P_LATENCY_TITLE.search(body) and re.search(r"^[ \t]*(?:GPU|D\\D)(?:[ \t]+\d+)+[ \t]*$", body, re.M):
            return 0.93
    return 0.0


def parse_p2p_test(text: str) -> P2pTest:
    """Read p2pBandwidthLatencyTest's output; never raises. The CPU half of a latency matrix is kept apart
    (title + " CPU"); an editor's line numbers before every line are dropped first
    (:func:`strip_editor_line_numbers`)."""
    if not isinstance(text, str):
        return P2pTest(problems=["not text"])
    text = strip_editor_line_numbers(text)
    devices: dict[int, tuple[str, str]] = {}
    access: dict[tuple[int, int], bool] = {}
    access_lines: dict[tuple[int, int], str] = {}
    problems: list[str] = []
    # title -> (cols, values, lines), built here and frozen at the end
    built: dict[str, tuple[list[int], dict[int, dict[int, float]], list[str]]] = {}
    cur: str | None = None
    for ln in text.splitlines():
        m = _P2P_DEVICE.match(ln)
        if m:
            devices[sat_int(m.group(1))] = (m.group(2).strip(), ln.strip())
            continue
        m = _P2P_ACCESS.search(ln)
        if m:
            key = (sat_int(m.group(1)), sat_int(m.group(3)))
            access[key] = m.group(2) == "CAN"
            access_lines[key] = ln.strip()
            continue
        m = _P2P_MATRIX.match(ln)
        if m:
            cur = re.sub(r"\s+", " ", m.group(1).strip())
            built.setdefault(cur, ([], {}, [ln.rstrip()]))
            continue
        if cur is None:
            continue
        m = _MATRIX_COLS.match(ln)
        if m:
            if m.group(1) == "CPU":
                cur = cur.split(" CPU")[0] + " CPU"
                built.setdefault(cur, ([], {}, []))
            cols, _, mlines = built[cur]
            cols[:] = [sat_int(x) for x in m.group(2).split()]
            mlines.append(ln.rstrip())
            continue
        m = _MATRIX_ROW.match(ln)
        if m and built[cur][0]:
            cols, values, mlines = built[cur]
            vals = m.group(2).split()
            if len(vals) != len(cols):
                problems.append(f"{cur}: row with {len(vals)} values for {len(cols)} columns: {ln.strip()}")
                continue
            try:
                values[sat_int(m.group(1))] = {c: float(x) for c, x in zip(cols, vals)}
            except ValueError:
                problems.append(f"unreadable row: {ln.strip()}")
                continue
            mlines.append(ln.rstrip())
            continue
        if ln.strip():
            cur = None
    matrices = {t: P2pMatrix(t, list(c), dict(vs), list(ls)) for t, (c, vs, ls) in built.items()}
    if not matrices and not access:
        problems.append("no P2P matrix or peer-access line")
    return P2pTest(devices, access, access_lines, matrices, problems)


# ------------------------------------------------------------------ nvbandwidth (NVIDIA/nvbandwidth)

_NB_VERSION = lazy_re(r"^[ \t]*nvbandwidth Version:\s*(\S+)", re.M)
_NB_DEVICE = lazy_re(r"^\s*Device (\d+): (.+?)(?:\s+\(([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\))?\s*$")
_NB_RUNNING = lazy_re(r"^\s*(?:>\s*)?Running (\w+)\.\s*$")
_NB_WAIVED = lazy_re(r"^\s*(?:Waived:\s*(\w*)|Waiving (\w+)\.)\s*$")
_NB_TITLE = lazy_re(r"^\s*((?:memcpy|memory latency|Device to Device Latency)\b.*?(?:\((?:row|column)\).*)?"
                       r"\((GB/s|ns)\))\s*$", re.I)
_NB_COLS = lazy_re(r"^\s*(\d+(?:\s+\d+)*)\s*$")
_NB_ROW = lazy_re(r"^\s*(\d+)((?:\s+(?:[\d.]+|N/A))+)\s*$")
_NB_SUM = lazy_re(r"^\s*SUM (\w+) ([\d.]+)\s*$")
_NB_ERROR = lazy_re(r"^\s*(ASSERT in expression .*|Invalid value when checking the pattern.*|.*\bCUDA_ERROR_\w+.*|"
                       r".*\bcudaError[A-Z]\w+.*|.*\bCUDA error\b.*|"
                       r".*Segmentation fault.*|terminate called .*|.*\bcore dumped\b.*)$")


@dataclass(frozen=True)
class NvbwTestcase:
    """One nvbandwidth testcase: its name (``host_to_device_memcpy_ce``), matrix title, column GPUs and
    values[row][col] (``None`` = N/A), the SUM figure and the lines it was read from."""

    name: str
    title: str
    unit: str
    cols: list[int] = field(default_factory=list)
    values: dict[int, dict[int, float | None]] = field(default_factory=dict)
    total: float | None = None
    lines: list[str] = field(default_factory=list)

    @property
    def engine(self) -> str:
        """``ce`` (copy engine) or ``sm`` (kernel copy), from the name or the title."""
        if self.name.endswith("_sm") or re.search(r"\bSM\b", self.title):
            return "sm"
        return "ce" if self.name.endswith("_ce") or re.search(r"\bCE\b", self.title) else ""

    @property
    def direction(self) -> str:
        """h2d, d2h, d2d, local, latency or '' (unknown), from the name, else the title."""
        n, t = self.name.lower(), self.title
        if "latency" in n or self.unit == "ns":
            return "latency"
        if "local" in n or "local" in t.lower():
            return "local"
        if n.startswith(("host_to_device", "host_to_all")):
            return "h2d"
        if n.startswith(("device_to_host", "all_to_host")):
            return "d2h"
        if n.startswith("device_to_device") or "all_to_one" in n or "one_to_all" in n:
            return "d2d"
        if "GPU(row)" in t:
            return "d2d"
        if "CPU(row) -> GPU" in t:
            return "h2d"
        if "CPU(row) <- GPU" in t:
            return "d2h"
        return ""

    @property
    def bidirectional(self) -> bool:
        return "bidirectional" in self.name or "<->" in self.title

    @property
    def concurrent(self) -> bool:
        """All GPUs copy at once (host_to_all, all_to_host, all_to_one, one_to_all)."""
        return any(w in self.name for w in ("_all", "all_"))


@dataclass(frozen=True)
class Nvbandwidth:
    """nvbandwidth's output: version, devices, measured testcases, waived testcases, the error it stopped on."""

    version: str = ""
    devices: dict[int, tuple[str, str]] = field(default_factory=dict)  # index -> (name, line)
    testcases: list[NvbwTestcase] = field(default_factory=list)
    waived: list[str] = field(default_factory=list)  # waived lines, verbatim
    waived_names: list[str] = field(default_factory=list)
    error_lines: list[str] = field(default_factory=list)
    error_testcase: str = ""
    problems: list[str] = field(default_factory=list)


_NB_JSON = lazy_re(r'^\s*\{\s*"nvbandwidth"\s*:')


def nvbandwidth_json_as_text(text: str) -> str:
    """nvbandwidth's JSON output (``nvbandwidth -j``: {"nvbandwidth": {"GPU Device list", "testcases": [{"name",
    "status", "bandwidth_description", "bandwidth_matrix"}]}}) written as its text output, so one parser reads both
    (NVIDIA nvbandwidth README, "JSON output"); ``text`` unchanged when it is not that JSON. Never raises."""
    if not _NB_JSON.match(text):
        return text
    try:
        doc = json.loads(text)["nvbandwidth"]
    except (ValueError, KeyError, TypeError):
        return text
    if not isinstance(doc, dict):
        return text
    out = [f"nvbandwidth Version: {doc.get('git_version', '?')}"]
    for k in ("CUDA Runtime Version", "Driver Version"):
        if k in doc:
            out.append(f"{k}: {doc[k]}")
    for d in doc.get("GPU Device list") or []:
        m = re.match(r"(\d+): (.+?) \(([0-9a-fA-F:]+)\)", str(d))
        if m:
            out.append(f"Device {m.group(1)}: {m.group(2)} ({m.group(3)})")
    for tc in doc.get("testcases") or []:
        if not isinstance(tc, dict):
            continue
        name, status = str(tc.get("name", "")), str(tc.get("status", ""))
        if status.lower() == "waived":
            out.append(f"Waiving {name}.")
            continue
        out += ["", f"Running {name}.", str(tc.get("bandwidth_description", ""))]
        matrix = tc.get("bandwidth_matrix") or []
        if matrix and isinstance(matrix[0], list):
            out.append("  " + " ".join(f"{i:>9}" for i in range(len(matrix[0]))))
            out += [f"{r:>2} " + " ".join(f"{str(v):>9}" for v in row) for r, row in enumerate(matrix)
                    if isinstance(row, list)]
        if tc.get("sum") is not None:
            out.append(f"SUM {name} {tc['sum']}")
        if status.lower() not in ("passed", ""):
            out.append(f"ERROR: {name} {status}")
    return "\n".join(out) + "\n"


def detect_nvbandwidth(text: str) -> float:
    """Confidence that ``text`` is nvbandwidth output (with or without its banner, or its JSON form)."""
    if not isinstance(text, str) or not text:
        return 0.0
    if _NB_JSON.match(text[:200]):
        return 0.95
    if _NB_VERSION.search(text):
        return 0.95
    if re.search(r"^[ \t]*memcpy (?:CE|SM) (?:CPU|GPU)\(row\) (?:->|<-|<->) GPU\(column\) bandwidth", text, re.M) or \
            re.search(r"^[ \t]*SUM \w+_memcpy_(?:read_|write_)?(?:ce|sm) [\d.]+\s*$", text, re.M) or \
            re.search(r"^[ \t]*(?:Running|Waiving) \w+_memcpy_(?:read_|write_)?(?:ce|sm)\.\s*$", text, re.M):
        return 0.93
    return 0.0


def parse_nvbandwidth(text: str) -> Nvbandwidth:
    """Read nvbandwidth's output (several runs pasted one after another too); never raises."""
    if not isinstance(text, str):
        return Nvbandwidth(problems=["not text"])
    text = nvbandwidth_json_as_text(text)
    version = ""
    devices: dict[int, tuple[str, str]] = {}
    done: list[NvbwTestcase] = []
    waived: list[str] = []
    waived_names: list[str] = []
    errors: list[str] = []
    problems: list[str] = []
    error_tc = ""
    running = ""
    cur: NvbwTestcase | None = None  # the testcase whose matrix is being read

    def close() -> None:
        nonlocal cur
        if cur is not None and cur.values:
            done.append(cur)
        cur = None

    for ln in text.splitlines():
        m = _NB_VERSION.match(ln)
        if m:
            close()
            version = version or m.group(1)
            continue
        m = _NB_RUNNING.match(ln)
        if m:
            close()
            running = m.group(1)
            continue
        m = _NB_WAIVED.match(ln)
        if m:
            close()
            waived.append(ln.strip())
            name = m.group(1) or m.group(2) or ""
            if name:
                waived_names.append(name)
            continue
        m = _NB_SUM.match(ln)
        if m:
            name, total = m.group(1), float(m.group(2))
            if cur is not None and cur.values:
                done.append(replace(cur, name=cur.name or name, total=total, lines=cur.lines + [ln.rstrip()]))
                cur = None
            else:
                for i in range(len(done) - 1, -1, -1):
                    if done[i].name in ("", name) and done[i].total is None:
                        done[i] = replace(done[i], name=name, total=total, lines=done[i].lines + [ln.rstrip()])
                        break
            running = ""
            continue
        m = _NB_ERROR.match(ln)
        if m:
            errors.append(ln.strip())
            error_tc = error_tc or running
            continue
        m = _NB_TITLE.match(ln)
        if m:
            close()
            cur = NvbwTestcase(running, m.group(1).strip(), m.group(2), lines=[ln.rstrip()])
            continue
        m = _NB_DEVICE.match(ln)
        if m and cur is None:
            devices[sat_int(m.group(1))] = (m.group(2).strip(), ln.strip())
            continue
        if cur is None:
            continue
        if not cur.cols:
            m = _NB_COLS.match(ln)
            if m:
                cur.cols[:] = [sat_int(x) for x in m.group(1).split()]
                cur.lines.append(ln.rstrip())
            elif ln.strip():
                problems.append(f"{cur.title}: no column line: {ln.strip()}")
                cur = None
            continue
        m = _NB_ROW.match(ln)
        if m:
            vals = m.group(2).split()
            if len(vals) != len(cur.cols):
                problems.append(f"{cur.title}: row with {len(vals)} values for {len(cur.cols)} columns: {ln.strip()}")
                continue
            try:
                cur.values[sat_int(m.group(1))] = {c: (None if x == "N/A" else float(x)) for c, x in zip(cur.cols, vals)}
            except ValueError:
                problems.append(f"unreadable row: {ln.strip()}")
                continue
            cur.lines.append(ln.rstrip())
            continue
        if ln.strip():
            close()
    close()
    if not done and not waived and not errors:
        problems.append("no nvbandwidth matrix, Waived line or error")
    return Nvbandwidth(version, devices, done, waived, waived_names, errors, error_tc, problems)


# ------------------------------------------------------------------ any other CUDA sample

_ANY_GPU = lazy_re(r"^[ \t]*GPU Device (\d+): \"([^\"]*)\" with compute capability (\d+)\.(\d+)", re.M)
_ANY_START = lazy_re(r"^[ \t]*(?:Running sample (\w+)|\[(\w+)\] - Starting\.\.\.|(\w+) Starting\.\.\.)\s*$", re.M)
_ANY_ERROR = lazy_re(r"CUDA error at .*code=(\d+)|checkCudaErrors|CUDA [Ee]rror:|Result = FAIL|Test failed|"
                        r"\bFAILED\b|cudaError\w+|Verification error @ element|Result verification failed")
_VERIFY_FAILED = lazy_re(r"^\s*(?:Verification error @ element \d+|Result verification failed)", re.M)
"""A sample checking what its kernels computed and finding it wrong (simpleP2P, vectorAdd): the GPU, or the path between
two GPUs, returned wrong data (held-out round 57: simpleP2P reading NaN over a patched driver's P2P)."""
_ANY_DONE = lazy_re(r"Result = PASS|Test passed|Test PASSED|NOTE: The CUDA Samples are not meant for performance|"
                       r"^\s*Done\s*$|Result = WAIVED|[Ww]aiving", re.M)


@dataclass(frozen=True)
class CudaSample:
    """Output of a CUDA sample bringup has no dedicated reader for: its name, the GPUs it picked (index, the name or
    architecture it printed, compute capability "8.6"), error lines, and the line that shows it ran to its end."""

    name: str = ""
    gpus: list[tuple[int, str, str, str]] = field(default_factory=list)  # (index, name, cc, line)
    errors: list[str] = field(default_factory=list)
    done: str = ""
    waived: bool = False


def parse_cuda_sample(text: str) -> CudaSample:
    start = _ANY_START.search(text)
    s = CudaSample(name=next((g for g in start.groups() if g), "") if start else "")
    for m in _ANY_GPU.finditer(text):
        s.gpus.append((sat_int(m.group(1)), m.group(2), f"{m.group(3)}.{m.group(4)}", m.group(0).strip()))
    for ln in text.splitlines():
        if _ANY_ERROR.search(ln):
            s.errors.append(ln.strip())
    done = [m.group(0).strip() for m in _ANY_DONE.finditer(text)]
    _set(s, "done", done[-1] if done else "")
    _set(s, "waived", any("aiv" in d for d in done))
    return s


def detect_cuda_sample(text: str) -> float:
    """0.85 for a CUDA sample's output: the ``GPU Device N: "<name>" with compute capability X.Y`` line the samples'
    helper prints, or a ``Running sample X`` / ``[X] - Starting...`` banner with a Result/Done line (deviceQuery,
    bandwidthTest and p2pBandwidthLatencyTest have their own readers and claim theirs with more confidence)."""
    if not isinstance(text, str):
        return 0.0
    text = text[:20000]  # the sample's banner and GPU line come first
    if _VERIFY_FAILED.search(text) and re.search(r"\bGPU ?\d|verify results|on the device", text):
        return 0.8  # the sample's verify step, its banner cut off
    if "compute capability" not in text and "Starting..." not in text and "Running sample" not in text:
        return 0.0
    if _ANY_GPU.search(text):
        return 0.85
    if _ANY_START.search(text) and (_ANY_DONE.search(text) or _ANY_ERROR.search(text)):
        return 0.8
    return 0.0


# ------------------------------------------------------------------ IBM Autopilot's health-check log


@dataclass(frozen=True)
class AutopilotChecks:
    """What IBM Autopilot's health-check log (its glog lines, ``kubectl logs`` of an autopilot pod) reports:
    ``pciebw``: (node, GPU index, host-to-device GB/s, line) per "Observation:" after "GPU PCIe BW test completed";
    ``remapped``: (node, GPU index, remapped rows, line) per "Observation:" after "Remapped Rows check test completed"
    (IBM/autopilot README, health checks pciebw and remapped; https://github.com/IBM/autopilot)."""

    pciebw: list[tuple[str, int, float, str]] = field(default_factory=list)
    remapped: list[tuple[str, int, int, str]] = field(default_factory=list)


_AP_SECTION = lazy_re(r"\] (GPU PCIe BW test completed|Remapped Rows check test completed):")
_AP_OBS = lazy_re(r"\] Observation: (\S+) (\d{1,3}) (\d{1,6}(?:\.\d{1,4})?)\s*$")


def parse_autopilot(text: str) -> AutopilotChecks:
    """Read Autopilot's pciebw and remapped observations; never raises (lines of other checks are left out)."""
    out = AutopilotChecks()
    section = ""
    for ln in text.splitlines()[:20000]:
        m = _AP_SECTION.search(ln)
        if m:
            section = "pciebw" if m.group(1).startswith("GPU PCIe") else "remapped"
            continue
        o = _AP_OBS.search(ln)
        if o and section == "pciebw":
            out.pciebw.append((o.group(1), sat_int(o.group(2)), float(o.group(3)), ln.strip()))
        elif o and section == "remapped" and "." not in o.group(3):
            out.remapped.append((o.group(1), sat_int(o.group(2)), sat_int(o.group(3)), ln.strip()))
        elif not o and "Observation:" not in ln and "Running health check" in ln:
            section = ""
    return out


def detect_autopilot(text: str) -> float:
    """0.9 for IBM Autopilot's health-check log with pciebw or remapped observations."""
    head = text[:50000]
    if "Observation:" not in head or not _AP_SECTION.search(head):
        return 0.0
    r = parse_autopilot(head)
    return 0.9 if r.pciebw or r.remapped else 0.0


# ------------------------------------------------------------------ BabelStream / GPU-STREAM and gpu-benches' gpu-stream


@dataclass(frozen=True)
class GpuStream:
    """A device-memory bandwidth benchmark's result: BabelStream (formerly GPU-STREAM, UoB-HPC/BabelStream: a
    ``Function MBytes/sec Min (sec) Max Average`` table, MBytes = 10^6 bytes) or gpu-benches' gpu-stream
    (te42kyfo/gpu-benches: one row per block size, ``GB/s:`` then one column per kernel). ``rates`` (kernel, GB/s,
    line) are the table's rows (BabelStream) or each kernel's best row (gpu-stream); ``device`` the GPU it names ("" when
    none); ``failed`` BabelStream's own "Validation failed" lines (the kernels computed wrong results)."""

    tool: str = ""  # "BabelStream" or "gpu-stream"
    device: str = ""
    device_line: str = ""
    rates: list[tuple[str, float, str]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


_BS_HEAD = lazy_re(r"^\s*Function\s+MBytes/sec\s+Min \(sec\)\s+Max\s+Average\s*$", re.M)
_BS_ROW = lazy_re(r"^\s*(Copy|Mul|Add|Triad|Dot|Nstream|Read|Write)\s+([\d.]+)\s+[\d.]+\s+[\d.]+\s+[\d.]+\s*$")
_BS_DEVICE = lazy_re(r"^\s*Using (?:\S+(?: \S+)? )?device:? (.+?)\s*$", re.M)
_BS_FAILED = lazy_re(r"^\s*Validation failed on .*$", re.M)
_GS_HEAD = lazy_re(r"^\s*blockSize\s+threads\s+%occ\s+\|\s+((?:\w+\s+){1,10}\w+)\s*$", re.M)
_GS_ROW = lazy_re(r"^\s*\d+\s+\d+\s+[\d.]+\s*%\s*\|\s*GB/s:\s+((?:[\d.]+\s*){2,12})$")


def parse_gpu_stream(text: str) -> GpuStream:
    """Read :class:`GpuStream` from BabelStream's or gpu-stream's output; never raises."""
    g = GpuStream()
    if _BS_HEAD.search(text):
        _set(g, "tool", "BabelStream")
        d = _BS_DEVICE.search(text)
        if d:
            _set(g, "device", d.group(1))
            _set(g, "device_line", d.group(0).strip())
        for ln in text.splitlines():
            m = _BS_ROW.match(ln)
            if m and not any(k == m.group(1) for k, _, _ in g.rates):
                g.rates.append((m.group(1), float(m.group(2)) / 1000.0, ln.strip()))
        g.failed.extend(m.group(0).strip() for m in _BS_FAILED.finditer(text))
        return g
    h = _GS_HEAD.search(text)
    if h:
        _set(g, "tool", "gpu-stream")
        cols = h.group(1).split()
        best: dict[str, tuple[float, str]] = {}
        for ln in text.splitlines():
            m = _GS_ROW.match(ln)
            if not m:
                continue
            for c, v in zip(cols, m.group(1).split()):
                if c not in best or float(v) > best[c][0]:
                    best[c] = (float(v), ln.strip())
        g.rates.extend((c, best[c][0], best[c][1]) for c in cols if c in best)
    return g


def detect_gpu_stream(text: str) -> float:
    """0.9 for BabelStream's result table or gpu-stream's block-size sweep with at least two rows."""
    head = text[:200000]
    if "MBytes/sec" not in head and "blockSize" not in head:
        return 0.0
    g = parse_gpu_stream(head)
    return 0.9 if (g.tool == "BabelStream" and len(g.rates) >= 2) or (g.tool == "gpu-stream" and g.rates) else 0.0
