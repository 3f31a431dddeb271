"""Parsers for NCCL: nccl-tests result tables (``all_reduce_perf``, ``all_gather_perf``, ...)
and ``NCCL_DEBUG=INFO/WARN`` logs (with PyTorch ProcessGroupNCCL watchdog lines).

nccl-tests columns (NVIDIA/nccl-tests README and doc/PERFORMANCE.md): size (B), count
(elements), type, redop, root, then per out-of-place and in-place: time (us), algbw (GB/s),
busbw (GB/s), #wrong (older versions: "error", a float). Fields may read "N/A". Bandwidths are
GB/s (10^9 bytes per second) as nccl-tests prints them.

Registers the explain kinds ``nccl-tests`` and ``nccl-debug``. Parsers never raise on garbage.
"""

from __future__ import annotations

from wizard.i18n import Msg, N_

import re
from typing import Any
from dataclasses import dataclass, field

from wizard.common import to_float, to_int, sat_int
from wizard.parsers._frozen import build_set as _set
from wizard.common import lazy_re


TYPE_SIZES = {
    "int8": 1, "char": 1, "uint8": 1, "int32": 4, "int": 4, "uint32": 4, "int64": 8, "uint64": 8,
    "half": 2, "float16": 2, "bfloat16": 2, "float": 4, "float32": 4, "double": 8, "float64": 8,
    "f8e4m3": 1, "f8e5m2": 1, "fp8_e4m3": 1, "fp8_e5m2": 1,
}
"""Bytes per element of the nccl-tests ``type`` column (ncclDataType_t sizes, nccl.h)."""

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv",
               "scatter", "gather", "hypercube")


_P2P_OFF_ENV = lazy_re(r"\bNCCL_P2P_(?:LEVEL set by environment to (?:LOC|0)|DISABLE set by environment to 1)\b")


@dataclass(frozen=True)
class PerfHalf:
    """One half (out-of-place or in-place) of a result row. ``None`` = "N/A" or unreadable.
    ``wrong`` is the #wrong count; ``error`` the max error of old versions (float column)."""

    time_us: float | None = None
    algbw_gb_s: float | None = None
    busbw_gb_s: float | None = None
    wrong: int | None = None
    error: float | None = None


@dataclass(frozen=True)
class PerfRow:
    size_b: int
    count: int | None
    dtype: str
    redop: str
    root: int | None
    oop: PerfHalf
    ip: PerfHalf
    line: str


@dataclass(frozen=True)
class TestDevice:
    """A "#  Rank  0 Group  0 Pid 1234 on host device  0 [0x1b] NVIDIA H100 80GB HBM3" line."""

    rank: int
    host: str
    device: int | None
    bus: str
    name: str
    line: str


@dataclass(frozen=True)
class NcclTestsRun:
    """One nccl-tests run. ``collective`` is named by the text ("all_reduce") or "" (see
    :func:`infer_collective`); ``wrong_is_count`` False for old versions (an "error" column)."""

    header: str = ""
    params: dict[str, str] = field(default_factory=dict)
    collective: str = ""
    collective_line: str = ""
    devices: list[TestDevice] = field(default_factory=list)
    rows: list[PerfRow] = field(default_factory=list)
    columns_line: str = ""
    wrong_is_count: bool = True
    avg_busbw_gb_s: float | None = None
    avg_line: str = ""
    oob_line: str = ""
    oob_ok: bool | None = None
    failures: list[str] = field(default_factory=list)
    nccl_version: str = ""
    problems: list[str] = field(default_factory=list)

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(d.host for d in self.devices))

    @property
    def nranks(self) -> int | None:
        """Ranks in the run: the "# Rank N" lines, or more when an excerpt kept only the last of them ("Rank 71"
        alone is a 72-rank run)."""
        if not self.devices:
            return None
        return max(len(self.devices), max(d.rank for d in self.devices) + 1)


_MPI_PREFIX = lazy_re(r"^\[\d{1,6}(?:,\d{1,6})?\](?:<std(?:out|err)>:?)?:?\s?")
"""A launcher's rank tag at the start of a line: Open MPI ``--tag-output`` ``[1,0]<stdout>:``, or a bare
``[0]`` (mpirun/srun ``--label`` style)."""
_GLUED_TAG = lazy_re(r"(?<=\S)\[\d{1,6}(?:,\d{1,6})?\](?:<std(?:out|err)>:?)?")
"""A rank tag glued inside a result row (``-1[0]    1626.5 ... 0[0]``): output of several ranks interleaved
character by character (NVIDIA/nccl#1453); it is removed before the row is split into columns."""
_DEVICE = lazy_re(r"^#?\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+\d+\s+)?on\s+(\S+(?: \S+){0,2}?)\s+device\s+(\d+)\s+"
                     r"\[([^\]]*)\]\s+(.*?)\s*$")
_NUM = lazy_re(r"^-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?$")


def _half(toks: list[str], wrong_is_count: bool) -> PerfHalf:
    h = PerfHalf(to_float(toks[0]), to_float(toks[1]), to_float(toks[2]))
    if wrong_is_count:
        _set(h, "wrong", to_int(toks[3]))
        f = to_float(toks[3])
        if h.wrong is None and f is not None and f >= 1 and "e+" in toks[3].lower():
            # a count too large for the column, printed in %g ("3.55843e+07" wrong elements: held-out round 319)
            _set(h, "wrong", int(f))
        elif h.wrong is None and f is not None:  # a float in a "#wrong" column: treat as error value
            _set(h, "error", f)
    else:
        _set(h, "error", to_float(toks[3]))
    return h


def _redop_root(middle: list[str]) -> tuple[str, int | None]:
    """A row's columns between its type and its timings: the reduction op (``sum``) and the root (``-1``), each
    optional (all_gather has neither)."""
    redop, root = "", None
    for m in middle:
        if to_int(m) is not None:
            root = to_int(m)
        else:
            redop = m
    return redop, root


def _row(line: str, wrong_is_count: bool) -> PerfRow | None:
    toks = line.split()
    if len(toks) < 11 or len(toks) > 13 or not re.fullmatch(r"\d{1,18}", toks[0]):
        return None
    size = sat_int(toks[0])
    count = to_int(toks[1])
    dtype = toks[2]
    if _NUM.match(dtype):
        return None
    redop, root = _redop_root(toks[3:len(toks) - 8])
    tail = toks[len(toks) - 8:]
    return PerfRow(size, count, dtype, redop, root, _half(tail[:4], wrong_is_count), _half(tail[4:], wrong_is_count),
                   line.rstrip())


def _row_without_check(line: str) -> PerfRow | None:
    """A row of a table whose column header has no ``#wrong``/``error`` column (``size count type redop [root] time
    algbw busbw time algbw busbw``: held-out r39 #11's nccl-tests 2.22 table): its two halves of three numbers, the
    check unknown (``wrong`` and ``error`` None). None when the line is not such a row."""
    toks = line.split()
    if not 9 <= len(toks) <= 11 or not re.fullmatch(r"\d{1,18}", toks[0]) or _NUM.match(toks[2]):
        return None
    tail = toks[len(toks) - 6:]
    if any(to_float(t) is None for t in tail):
        return None
    redop, root = _redop_root(toks[3:len(toks) - 6])
    half = [PerfHalf(to_float(a), to_float(b), to_float(c)) for a, b, c in (tail[:3], tail[3:])]
    return PerfRow(sat_int(toks[0]), to_int(toks[1]), toks[2], redop, root, half[0], half[1], line.rstrip())


def _row_one_half(line: str, wrong_is_count: bool) -> PerfRow | None:
    """A row with the out-of-place half only (``size count type [redop] [root] time algbw busbw #wrong|error``: held-out
    round 127, a run whose in-place half was not printed); the in-place half is unknown (None). None when the line is
    not such a row."""
    toks = line.split()
    if not 7 <= len(toks) <= 10 or not re.fullmatch(r"\d{1,18}", toks[0]) or _NUM.match(toks[2]):
        return None
    tail = toks[len(toks) - 4:]
    if any(to_float(t) is None for t in tail[:3]) or not (to_float(tail[3]) is not None or tail[3] == "N/A"):
        return None
    redop, root = _redop_root(toks[3:len(toks) - 4])
    return PerfRow(sat_int(toks[0]), to_int(toks[1]), toks[2], redop, root, _half(tail, wrong_is_count),
                   PerfHalf(None, None, None), line.rstrip())


def _columns_or_footer(r: NcclTestsRun, body: str, line: str) -> bool:
    """Read ``body`` (a line without its '#') as the column header, the "Avg bus bandwidth" footer or the "Out of
    bounds values" footer into ``r`` (``line`` is kept as evidence); False when it is none of them."""
    if re.search(r"\bsize\b.*\bcount\b.*\btype\b", body):
        _set(r, "columns_line", line)
        _set(r, "wrong_is_count", "#wrong" in body or "wrong" in body.split())
        return True
    m = re.match(r"Avg bus bandwidth\s*:\s*(\S+)", body)
    if m:
        _set(r, "avg_busbw_gb_s", to_float(m.group(1)))
        _set(r, "avg_line", line)
        return True
    m = re.match(r"Out of bounds values\s*:\s*(\d+)\s*(\w+)?", body)
    if m:
        _set(r, "oob_line", line)
        _set(r, "oob_ok", sat_int(m.group(1)) == 0 and (m.group(2) or "OK").upper() == "OK")
        return True
    return False


def parse_nccl_tests(text: str) -> NcclTestsRun:
    """Reads every nccl-tests part it finds; unreadable table-looking lines go to ``problems``."""
    r = NcclTestsRun()
    for raw in text.splitlines():
        line = _MPI_PREFIX.sub("", raw).rstrip()
        s = line.strip()
        if not s:
            continue
        # a paste that lost the '#' of the header and "# Rank" lines (markdown) reads the same
        if s.startswith("#") or s.startswith("nThread ") or (r.header and re.match(r"Rank\s+\d", s)):
            body = s.lstrip("#").strip()
            if body.startswith("nThread"):
                _set(r, "header", s)
                for k in ("nThread", "nGpus", "minBytes", "maxBytes", "warmup iters", "iters", "agg iters",
                          "validation", "graph"):
                    pm = re.search(r"(?:^|\s)" + k + r":?\s+(\S+)", body)
                    if pm:
                        r.params[k] = pm.group(1)
                continue
            m = re.search(r"Collective test (?:starting|concluded):\s*(\w+)", body)
            if m:
                _set(r, "collective", r.collective or _collective_name(m.group(1)))
                _set(r, "collective_line", r.collective_line or s)
                continue
            d = _DEVICE.match(s)
            if d:
                r.devices.append(TestDevice(sat_int(d.group(1)), d.group(2), sat_int(d.group(3)), d.group(4),
                                            d.group(5), s))
                continue
            _columns_or_footer(r, body, s)
            continue
        # nccl-tests before 2.x (2019) printed its column header and footers without the leading '#'
        if (s.startswith(("size", "Avg bus bandwidth", "Out of bounds")) and (not s.startswith("size") or "busbw" in s)
                and _columns_or_footer(r, s, s)):
            continue
        m = re.search(r"NCCL version (\d+\.\d+\.\d+\S*)", s)
        if m:
            _set(r, "nccl_version", m.group(1))
        # a WARN line alone is not a failed test (a missing libibverbs is one): the NCCL log's own judge reads WARNs
        if re.search(r"Test (?:NCCL )?failure|Cuda failure|unhandled (?:cuda|system) error", s, re.I):
            r.failures.append(s)
            continue
        if not r.collective:
            m = re.search(r"\b(\w+?)_perf(?:_mpi)?\b", s)
            if m and _collective_name(m.group(1)):
                _set(r, "collective", _collective_name(m.group(1)))
                _set(r, "collective_line", s)
                continue
        if re.match(r"^\d", s):
            row = _row(_GLUED_TAG.sub(" ", s), r.wrong_is_count)
            if row is None and r.columns_line and not re.search(r"wrong|error", r.columns_line):
                row = _row_without_check(_GLUED_TAG.sub(" ", s))
            if row is None:
                row = _row_one_half(_GLUED_TAG.sub(" ", s), r.wrong_is_count)
            if row is not None:
                _set(row, "line", raw.strip())  # evidence is the input line as it was, rank tags included
            if row is not None:
                r.rows.append(row)
            else:
                r.problems.append(s)
    return r


_SECTION_START = lazy_re(r"^#\s*Collective test starting:|^#\s*nThread\s+\d+")


def split_nccl_tests(text: str) -> list[str]:
    """The runs of one nccl-tests output, as texts: a new run starts at "# Collective test starting:" or at
    a "# nThread ..." header once the current run has its header or result rows (a script that ran
    all_reduce_perf, all_gather_perf, ... one after another). Lines before the first header stay with the
    first run. One text (the input) when it holds a single run."""
    parts: list[list[str]] = [[]]
    has_header = has_rows = False
    for raw in text.splitlines():
        s = _MPI_PREFIX.sub("", raw).strip()
        starts = bool(_SECTION_START.match(s))
        if starts and (has_rows or has_header):
            parts.append([])
            has_header = has_rows = False
        if starts and "nThread" in s:
            has_header = True
        elif re.match(r"^\d", s) and _row(_GLUED_TAG.sub(" ", s), True) is not None:
            has_rows = True
        parts[-1].append(raw)
    out = ["\n".join(p) + "\n" for p in parts if any(x.strip() for x in p)]
    return out if len(out) > 1 else [text]


def _collective_name(name: str) -> str:
    n = name.lower().removesuffix("_perf_mpi").removesuffix("_perf").removesuffix("_mpi")
    n = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
         "all_to_all": "alltoall"}.get(n, n)
    return n if n in COLLECTIVES else ""


def collective_name(name: str) -> str:
    """"alltoall_perf" / "allreduce" / "all_reduce_perf_mpi" -> the nccl-tests collective ("alltoall",
    "all_reduce"), or "" when it is not one."""
    return _collective_name(name)


BUS_FACTORS = {
    "all_reduce": ("2(n-1)/n", lambda n: 2 * (n - 1) / n),
    "reduce_scatter": ("(n-1)/n", lambda n: (n - 1) / n),
    "all_gather": ("(n-1)/n", lambda n: (n - 1) / n),
    "alltoall": ("(n-1)/n", lambda n: (n - 1) / n),
    "broadcast": ("1", lambda n: 1.0),
    "reduce": ("1", lambda n: 1.0),
    "sendrecv": ("1", lambda n: 1.0),
}
"""busbw = algbw x factor, per collective, n = number of ranks (NVIDIA/nccl-tests doc/PERFORMANCE.md)."""


def infer_collective(r: NcclTestsRun) -> tuple[str, int | None]:
    """(collective, nranks) from the text, or inferred from the rows: an all-reduce has a reduction
    op, root -1 and count x element size = size; its busbw/algbw ratio is 2(n-1)/n, which also
    gives n when the device lines are missing."""
    n = r.nranks
    coll = r.collective
    big = [row for row in r.rows if row.oop.algbw_gb_s and row.oop.busbw_gb_s and row.oop.algbw_gb_s > 0.5]
    ratio = None
    if big:
        row = max(big, key=lambda x: x.size_b)
        ratio = row.oop.busbw_gb_s / row.oop.algbw_gb_s  # type: ignore[operator]
    if r.rows:
        row = r.rows[-1]
        es = TYPE_SIZES.get(row.dtype.lower())
        reduces = row.redop not in ("", "none")
        if not coll:
            if reduces and row.root in (-1, None) and es and row.count is not None and row.count * es == row.size_b:
                # sendrecv_perf prints the same columns (redop sum, root -1, count = size) but busbw = algbw; an
                # all-reduce over more than 2 ranks has busbw = 2(n-1)/n x algbw > algbw (nccl-tests PERFORMANCE.md)
                coll = "sendrecv" if n and n > 2 and ratio is not None and abs(ratio - 1.0) < 0.02 else "all_reduce"
            elif row.root is not None and row.root >= 0:
                coll = "reduce" if reduces else "broadcast"
            elif reduces and ratio is not None and n and abs(ratio - BUS_FACTORS["reduce_scatter"][1](n)) < 0.02:
                coll = "reduce_scatter"
            elif (reduces and row.root in (-1, None) and es and row.count and row.size_b % (row.count * es) == 0
                  and (k := row.size_b // (row.count * es)) > 1 and (n is None or n == k) and ratio is not None
                  and abs(ratio - (k - 1) / k) < 0.02):
                # a reduction without a root whose count = size / (element size x n) and busbw/algbw = (n-1)/n is a
                # reduce-scatter (an all-reduce prints count = size and 2(n-1)/n; nccl-tests doc/PERFORMANCE.md): both
                # facts agreeing name the test whose command line was cut (held-out round 304: 8 H100s). Without a
                # reduction, all-gather and alltoall print the same ratio, and newer nccl-tests print alltoall's
                # per-peer count too, so neither is named from its rows
                coll, n = "reduce_scatter", k
        # all-gather/alltoall/reduce-scatter print count = size / (element size x n)
        if (n is None and coll in ("", "all_gather", "alltoall", "reduce_scatter") and es and row.count
                and row.size_b % (row.count * es) == 0 and row.size_b // (row.count * es) > 1):
            n = row.size_b // (row.count * es)
    if n is None and coll == "all_reduce" and ratio is not None and 1.0 <= ratio < 1.999 and big:
        n = _ranks_of_ratio(max(big, key=lambda x: x.size_b))
    return coll, n


def _ranks_of_ratio(row: Any) -> int | None:
    """An all-reduce's rank count from one row's busbw/algbw = 2(n-1)/n, i.e. n = 2 / (2 - ratio), when the printed
    figures (two decimals, each +-0.005) allow only one whole n; else None."""
    a, b = row.oop.algbw_gb_s, row.oop.busbw_gb_s
    if not a or not b or a <= 0.005:
        return None
    lo, hi = (b - 0.005) / (a + 0.005), (b + 0.005) / (a - 0.005)
    if hi >= 2:
        return None
    n_lo, n_hi = 2 / (2 - lo), 2 / (2 - hi)
    return round(n_lo) if round(n_lo) == round(n_hi) and round(n_lo) >= 2 else None


# ------------------------------------------------------------------ NCCL debug logs


@dataclass(frozen=True)
class NetDevice:
    """One ``[i]name:port/IB`` (or ``/RoCE``) entry of a ``NET/IB : Using`` line."""

    name: str
    port: str
    link: str
    flags: str = ""


@dataclass(frozen=True)
class NcclLog:
    """What an ``NCCL_DEBUG`` log (and PyTorch's watchdog lines) says. Each list holds raw lines."""

    version: str = ""
    ib_using: list[str] = field(default_factory=list)
    ib_devices: list[NetDevice] = field(default_factory=list)
    oob_ifaces: list[str] = field(default_factory=list)
    socket_using: list[str] = field(default_factory=list)
    socket_ifaces: list[str] = field(default_factory=list)
    bootstrap: list[str] = field(default_factory=list)
    bootstrap_ifaces: list[str] = field(default_factory=list)
    networks: list[str] = field(default_factory=list)  # "IB", "IBext", "Socket", "AWS Libfabric"...
    network_lines: list[str] = field(default_factory=list)
    plugin_lines: list[str] = field(default_factory=list)
    no_ib_device: list[str] = field(default_factory=list)
    plugin_failures: list[str] = field(default_factory=list)  # an external net plugin (OFI/EFA...) failed to init
    plugin_named: list[str] = field(default_factory=list)  # lines naming the external plugin and its provider
    plugin_name: str = ""  # "aws-ofi-nccl 1.16.2"
    plugin_net: str = ""  # the network name the plugin registers ("Libfabric", "AWS Libfabric")
    ofi_provider: str = ""  # libfabric provider the OFI plugin looked for or picked ("efa", "tcp;ofi_rxm")
    ibverbs_missing: list[str] = field(default_factory=list)
    ib_open_failed: list[str] = field(default_factory=list)
    channels_net: list[str] = field(default_factory=list)  # "via NET/IB/0/GDRDMA" lines
    completion_errors: list[tuple[int | None, str]] = field(default_factory=list)
    ofi_errors: list[str] = field(default_factory=list)
    """aws-ofi-nccl's "NET/OFI Request 0x... completed with error. RC: 20. Error: ...": a transfer over the libfabric
    network (EFA) ended in an error completion, as "Got completion with error" on NET/IB."""
    nvls_failures: list[str] = field(default_factory=list)
    cuda_failures: list[str] = field(default_factory=list)
    watchdog: list[str] = field(default_factory=list)
    watchdog_ops: list[dict[str, str]] = field(default_factory=list)
    test_failures: list[str] = field(default_factory=list)
    warn_lines: list[str] = field(default_factory=list)
    return_chains: list[tuple[str, int]] = field(default_factory=list)  # (line, ncclResult_t code)
    setup_failures: list[tuple[str, str]] = field(default_factory=list)  # (class of NCCL_SETUP_FAILURES, line)
    connect_retries: list[str] = field(default_factory=list)  # "Call to connect returned Connection refused, retrying"
    framework_errors: list[tuple[str, str]] = field(default_factory=list)  # (ncclResult_t name, line): PyTorch's report
    last_errors: list[str] = field(default_factory=list)  # what follows PyTorch's "Last error:"
    init_complete: list[str] = field(default_factory=list)  # "Init COMPLETE", "Connected all rings": a communicator came up
    init_start: list[str] = field(default_factory=list)  # "ncclCommInitRank ... Init START": a rank began its init
    channels_shm: list[str] = field(default_factory=list)  # "Channel 00 : 7[7] -> 6[6] via SHM/direct/direct"
    channels_p2p: list[str] = field(default_factory=list)  # "... via P2P/IPC", "via P2P/CUMEM/read"
    gdr_disabled: list[str] = field(default_factory=list)  # "NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'"
    gdr_enabled: list[str] = field(default_factory=list)  # "NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_2'"
    gdr_far: list[str] = field(default_factory=list)  # "GPU Direct RDMA Disabled for GPU 18000 / HCA 0 (distance 5 > 4)"
    nic_far: list[str] = field(default_factory=list)  # NCCL 2.4's "CUDA Dev 0[4], IB NIC distance :  SOC" (or SYS)
    p2p_disabled: list[str] = field(default_factory=list)  # "Could not enable P2P between dev 5(=89000) and dev 4(=88000)"
    env_set: dict[str, str] = field(default_factory=dict)
    """NCCL's "NCCL_IB_DISABLE set by environment to 1." lines: variable -> value (the first seen)."""
    p2p_off_env: list[str] = field(default_factory=list)
    """NCCL's "NCCL_P2P_LEVEL set by environment to LOC" / "NCCL_P2P_DISABLE set by environment to 1": the job turned
    GPU peer-to-peer off itself (NCCL environment variables: LOC "never use P2P")."""
    ib_async: list[tuple[str, str]] = field(default_factory=list)  # (verbs event, line): "Got async event : port error"
    hosts: list[str] = field(default_factory=list)
    nranks: int | None = None
    nnodes: int | None = None  # "comm ... nRanks 16 nNodes 2 localRanks 8" (NCCL 2.12+): nodes in the communicator
    nccl_lines: int = 0

    @property
    def uses_socket(self) -> bool:
        return ("Socket" in self.networks or any("NET/Socket" in c for c in self.channels_net)
                or (bool(self.socket_using) and not self.ib_using))

    @property
    def uses_ib(self) -> bool:
        """NCCL picked NET/IB: HCA ports listed on a ``NET/IB : Using`` line (``Using [RO]`` alone lists
        none: that is NCCL saying it found no device), ``Using network IB``, or channels via NET/IB."""
        return bool(self.ib_devices) or any(n.startswith("IB") for n in self.networks) or any(
            "NET/IB" in c for c in self.channels_net)

    @property
    def one_node(self) -> bool:
        """Every line names the same one host and no communicator spans nodes: NCCL moves data between the GPUs
        of one node over P2P/SHM, never over its network transport. (Lines without a host prefix say nothing, unless
        the bootstrap ran on the loopback interface alone: ranks that rendezvous over lo are on one host (held-out round
        333: two RTX 2080 Ti, "Bootstrap : Using lo:127.0.0.1<0>"; ip(8): lo is the host's own loopback).)"""
        if not self.hosts and self.bootstrap_ifaces and all(i == "lo" for i in self.bootstrap_ifaces):
            return (self.nnodes or 1) == 1
        return len(self.hosts) == 1 and (self.nnodes or 1) == 1

    @property
    def link_layers(self) -> list[str]:
        """The link layers of the HCA ports NCCL uses ("IB", "RoCE"), in order of appearance."""
        return list(dict.fromkeys(d.link for d in self.ib_devices))


_NCCL_LINE = lazy_re(r"(?:^|\s)(?P<host>[\w.\-]+)(?::(?P<pid>\d+):(?P<tid>\d+) \[[^\]]*\] (?:\S+:\d+ )?"
                        r"| \[\d+\] [\w/.\-]+\.(?:cu|cc|cpp|c|h):\d+ )(?:NCCL )?(?P<level>INFO|WARN|TRACE|ABORT)\b")
"""host:pid:tid [dev] [file:line] NCCL LEVEL ...; NCCL 2.3 and older print "file:line WARN" without "NCCL", and NCCL
2.1 neither pid nor tid (``machine [0] misc/ibvwrap.cu:269 WARN Call to ibv_create_qp failed``)."""
_OFI_COMPLETION = lazy_re(r"NET/OFI (?:Request \S+ )?completed with error|NET/OFI .*\bcompletion error\b", re.I)
_IB_DEV = lazy_re(r"\[\d+\]([\w.\-]+):(\d+)/(IB|RoCE)((?:/[A-Za-z]+)*)")
_IFACE = lazy_re(r"(?:\[\d+\])?([\w.\-]+):[\d.a-fA-F:]+(?:%[\w.\-]+)?<\d+>")
"""``[1]veth25f2e72:fe80::380d:bfff:fe5b:54d2%veth25f2e72<0>``: an interface, its address (an IPv6 link-local one
carries its %zone), the address family."""
_WATCHDOG = lazy_re(r"Watchdog caught collective operation timeout: WorkNCCL\((.*?)\) ran for (\d+) milliseconds")
_COMPLETION = lazy_re(r"Got completion.*?with (?:error|status)\s*[=:]?\s*(?:[A-Z_]+\()?(\d+)", re.I)
_RETURN = lazy_re(r"\S+\.(?:cc|cu|h|cpp|c):\d+ -> (\d+)")


LIBFABRIC_WARN = lazy_re(r"\blibfabric:\d+:\d+:(?:\w*:){1,4}\w+\(\):\d+<warn>\s*:?\s*(?:"
                         r"FI_HMEM capability requires RDMA, which this device does not support"
                         r"|Failed to find valid default rgroup and vni)")
"""libfabric's own warnings under an OFI net plugin that change what the job gets (most of its <warn> lines do not:
a dlopen fallback, shared memory turned off): EFA without RDMA for device memory (FI_HMEM, so no GPUDirect RDMA:
GPU buffers cross host memory), and a Slingshot NIC (cxi) with no valid VNI / resource group for this job
(libfabric fi_efa(7), fi_cxi(7))."""
PLUGIN_FAIL = lazy_re(
    r"NET/OFI\s+(?:No eligible providers|Unable to find a protocol|Couldn'?t find any optimal provider|"
    r"Could not find any optimal provider|aws-ofi-nccl initialization failed|Initializing plugin failed|"
    r"OFI NCCL failure|(?:OFI )?fi_getinfo\(\) call failed|Only EFA provider is supported)"
    r"|NET/(?!IB\b|Socket\b|Plugin\b)[\w ]{1,30}?\s*:?\s+\S.*\b(?:initiali[sz]ation failed|Initializing plugin failed)",
    re.I)
"""An external NCCL net plugin that failed to initialise: aws-ofi-nccl (libfabric, EFA on AWS) prints
"NET/OFI No eligible providers were found" / "... aws-ofi-nccl initialization failed"; older versions
"Couldn't find any optimal provider"; libfabric finding no provider for the plugin's request: "NET/OFI OFI
fi_getinfo() call failed: No data available" (FI_ENODATA, fi_getinfo(3)). NCCL then tries NET/IB and falls back to NET/Socket (NCCL
developer in NVIDIA/nccl#229)."""


NCCL_RESULTS: dict[int, tuple[str, str, str]] = {
    1: ("ncclUnhandledCudaError", "unhandled cuda error", Msg("a CUDA call made by NCCL failed")),
    2: ("ncclSystemError", "unhandled system error",
        Msg("a system call (socket, malloc, ...) or an external library call (libibverbs, a net plugin) failed, or a "
        "remote peer exited unexpectedly")),
    3: ("ncclInternalError", "internal error", Msg("an internal consistency check failed (often after a peer's "
        "connection broke, or memory corruption)")),
    4: ("ncclInvalidArgument", "invalid argument", Msg("an NCCL call got an invalid argument")),
    5: ("ncclInvalidUsage", "invalid usage", Msg("NCCL was used incorrectly (e.g. ranks calling different collectives, "
        "two ranks on one GPU)")),
    6: ("ncclRemoteError", "remote process exited or there was a network error",
        Msg("a call failed because a remote process exited or the network failed")),
    7: ("ncclInProgress", "NCCL operation in progress", Msg("a non-blocking operation has not finished")),
}
"""ncclResult_t values, their ncclGetErrorString() text and meaning (nccl.h, NVIDIA/nccl src/nccl.h.in; NCCL API
documentation, https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/api/types.html#ncclresult-t)."""

NCCL_SETUP_FAILURES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ib_verbs", lazy_re(r"\bCall to ibv_\w+ failed|\bibv_\w+ failed\b|NET/IB\s*:.*\bibv_\w+\b.*\bfail", re.I)),
    ("connect", lazy_re(r"\bConnect to \S+ failed|\bconnect(?:ion)? (?:to \S+ )?(?:refused|timed out)|"
                           r"Call to connect (?:returned|failed)|No route to host|Network is unreachable", re.I)),
    ("peer_closed", lazy_re(r"socketProgress|socketPollConnect|socketFinalizeAccept|Connection closed by remote peer|"
                               r"Connection reset by peer|Broken pipe|Socket recv failed|Call to (?:recv|send) \S* ?(?:from|to) "
                               r"\S+ failed|remote process exited or there was a network error|"
                               r"Failed to execute operation Connect", re.I)),
    ("bootstrap", lazy_re(r"Bootstrap\s*:\s*no socket interface found|No usable listening interface|"
                             r"bootstrap\S*\s.*(?:timed? ?out|failed)|connecting to address .*is neither AF_INET", re.I)),
    ("p2p", lazy_re(r"failed to open CUDA IPC handle|peer access is not supported|cudaIpcOpenMemHandle.*fail|"
                       r"cudaDeviceEnablePeerAccess.*fail", re.I)),
    ("shm", lazy_re(r"\bshm_open\b|shared memory segment|/dev/shm|\bshmget\b|\bshm_unlink\b", re.I)),
    ("rank", lazy_re(r"\bInvalid rank requested\b|\bDuplicate GPU detected\b|\bnranks \d+ .*\bmismatch|"
                        r"\brank \d+ of \d+ ranks has already checked in", re.I)),
    ("net_plugin", lazy_re(r"\bError: network .+ not found\b|Failed to initialize any NET plugin|"
                           r"NET/Plugin\s*:.*\bfailed to (?:load|initiali[sz]e)", re.I)),
    ("topology", lazy_re(r"\bAttribute \w+ of node \w+ not found\b|\bXML (?:Import|Export) \w+ failed\b|"
                            r"\bCould not find (?:GPU|NIC|CPU) \S+ in (?:the )?topology\b|"
                            r"\bring \d+ does not loop back to start\b", re.I)),
    ("system_call", lazy_re(r"\bCall to \w+ failed\b|\bfailed\s*:\s*(?:Permission denied|No space left on device|"
                               r"Cannot allocate memory|Too many open files|Operation not permitted)", re.I)),
)
"""WARN lines (and PyTorch's "Last error:" text) that mean the communicator could not be set up or lost its
connection: a failed libibverbs call while creating queues or moving a queue pair INIT -> RTR -> RTS, a socket connect
that was refused or timed out, a peer that closed its socket, the bootstrap finding no interface, a shared-memory
segment for the ranks on one node that could not be created (/dev/shm too small or not writable, e.g. a container's
64 MB default), a rank outside the job's size or two ranks on one GPU ("Invalid rank requested : 2/2", "Duplicate GPU
detected": the launcher's world size or device mapping is wrong; the bootstrap root's "rank 1 of 8 ranks has already
checked in": two processes started with one rank), the network NCCL_NET asks for not provided by any loaded plugin
("Error: network AWS Libfabric not found": with NCCL_NET set NCCL does not fall back to its internal IB or Socket
transports, NCCL environment variables, NCCL_NET), a topology NCCL could not read (graph/xml.h's "Attribute arch of
node cpu not found": a topology file, NCCL_TOPO_FILE or a plugin's, without what NCCL needs; its init returns
ncclInternalError; graph/rings.cc's "ring 0 does not loop back to start": the ranks disagree on the rings, as when
two nodes share one host identity, NCCL_HOSTID), any other failed system call ("Call to X failed : <errno text>"). Classified by what
failed, not by one message; "retrying" lines are NCCL retrying and not failures by themselves. (NCCL troubleshooting,
https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html; ibv_modify_qp(3).)"""

_FRAMEWORK = lazy_re(r"\b(ncclSystemError|ncclInternalError|ncclUnhandledCudaError|ncclInvalidUsage|ncclInvalidArgument|"
                        r"ncclRemoteError)\b|(?:NCCL error(?: in: .*?,|:) |(?<!Test )NCCL failure [\w/.]+:\d+ '|NCCL error [\w/.\-]+:\d+ ')(unhandled system error|unhandled cuda error|internal error|"
                        r"invalid usage|invalid argument|remote process exited or there was a network error)|"
                        r"\bNCCL [Ee]rror (\d)\b|"
                        r"\b(unhandled system error|unhandled cuda error|internal error) at \[[^\]]*nccl[^\]]*\]")
"""How frameworks report an ncclResult_t: PyTorch names it (ncclUnhandledCudaError) or quotes ncclGetErrorString
("NCCL error in: file:line, unhandled cuda error"; since 2.x async errors "NCCL error: remote process exited or
there was a network error, NCCL version 2.21.5"), others "NCCL error 1"; PaddlePaddle "unhandled cuda error at
[.../nccl_helper.h:93]"; TensorRT-LLM's plugins "NCCL error /src/.../allreducePlugin.cpp:295 'internal error - please
report this issue to the NCCL developers'" (held-out round 273)."""


def setup_failure_class(line: str) -> str:
    """The class of :data:`NCCL_SETUP_FAILURES` a line belongs to, or ""."""
    if re.search(r"retrying", line, re.I):
        return ""
    return next((name for name, rx in NCCL_SETUP_FAILURES if rx.search(line)), "")


_CONNECT_RETRY = lazy_re(r"\bconnect(?:ion)?\b.*\b(?:refused|timed out)|No route to host|Network is unreachable",
                            re.I)
"""A connection NCCL retries ("Call to connect returned Connection refused, retrying", NCCL 2.4-2.8 INFO lines;
"socketStartConnect: Connect to 10.0.0.2<12345> returned 111(Connection refused), retrying" since): the peer was
not listening yet, or a firewall or route refused it. Not a failure by itself; a log that ends in them never came up."""

IB_ASYNC_EVENT = lazy_re(r"NET/IB\s*:\s*(?:\S+:\d+\s+)?(?:Got async (?:event|error event)|async fatal event on \w+"
                         r"(?: \(0x[0-9a-fA-F]+\))?)\s*:\s*(.+?)\s*$")
"""NCCL's InfiniBand transport relaying an asynchronous verbs event of an HCA it uses (net_ib.cc's async thread:
"NET/IB : Got async event : port error", or with the device, "NET/IB : mlx5_0:1 Got async event : ...", and NCCL 2.23+'s
"NET/IB : mlx5_ib0:1 async fatal event on QP (0x7f69f01519a8): local access violation work queue error"); the event is
libibverbs' ibv_event_type_str() text ("port error", "local catastrophic error", "GID table change", ...)."""

IB_ASYNC_FATAL = {
    "port error": N_("the HCA port's link went down (IBV_EVENT_PORT_ERR: 'link became unavailable on a port')"),
    "local catastrophic error": N_("the HCA reported a fatal error (IBV_EVENT_DEVICE_FATAL: the device is unusable until "
                                "its driver is reloaded or the node reboots)"),
    "cq error": N_("a completion queue overran or failed (IBV_EVENT_CQ_ERR)"),
    "local work queue catastrophic error": N_("a queue pair hit a catastrophic error (IBV_EVENT_QP_FATAL)"),
    "invalid request local work queue error": N_("a queue pair got an invalid request (IBV_EVENT_QP_REQ_ERR)"),
    "local access violation work queue error": N_("a queue pair hit a local access violation (IBV_EVENT_QP_ACCESS_ERR)"),
    "srq catastrophic error": N_("a shared receive queue failed (IBV_EVENT_SRQ_ERR)"),
    "wq fatal": N_("a work queue failed (IBV_EVENT_WQ_FATAL)"),
}
"""The verbs async events that mean an HCA, its port or a queue on it failed while NCCL used it (ibv_get_async_event(3):
"affiliated" QP/CQ/SRQ errors and the unaffiliated IBV_EVENT_PORT_ERR and IBV_EVENT_DEVICE_FATAL); the others (port
active, LID/P_Key/SM change, client reregistration, GID table change) are the fabric's changes, not failures."""

_TEST_FAILURE = lazy_re(r"\bTest (?:NCCL|CUDA) failure [\w/.]+\.cu:\d+")
"""nccl-tests stopping on an NCCL or CUDA call (``host: Test NCCL failure common.cu:345 'unhandled system error'``)."""


def nccl_result_name(text: str) -> str:
    """"ncclSystemError" for "ncclSystemError", "unhandled system error" or "NCCL error 2"; "" otherwise."""
    m = _FRAMEWORK.search(text)
    if not m:
        return ""
    if m.group(1):
        return m.group(1)
    if m.group(2) or m.group(4):
        return next((n for n, t, _ in NCCL_RESULTS.values() if t == (m.group(2) or m.group(4))), "")
    return NCCL_RESULTS.get(sat_int(m.group(3)), ("",))[0]


def parse_nccl_log(text: str) -> NcclLog:
    lg = NcclLog()
    hosts: dict[str, None] = {}
    lines = text.splitlines()
    for i, raw in enumerate(lines):
        s = raw.strip()
        if not s:
            continue
        fw = nccl_result_name(s)
        if fw:
            lg.framework_errors.append((fw, s))
            nxt = next((x.strip() for x in lines[i + 1:i + 2] if x.strip()), "")
            if (re.match(r"nccl\w+: ", s) and nxt and not re.match(r"Last error|Traceback|File |Exception|\[", nxt)
                    and nccl_result_name(nxt) == ""):  # NCCL's detail right under its result ("Failed to bind ...")
                lg.last_errors.append(nxt)
        le = re.search(r"Last error:\s*(?:\d+:\s*)?(.*)$", s)
        if le:
            after = le.group(1).strip() or next((x.strip() for x in lines[i + 1:i + 3] if x.strip()), "")
            if after:
                lg.last_errors.append(after)
                k = setup_failure_class(after)
                if k:
                    lg.setup_failures.append((k, after))
        if "Init COMPLETE" in s or re.search(r"NCCL INFO Connected all (?:rings|trees)\b", s):
            lg.init_complete.append(s)
        elif re.search(r"\bInit START\b", s):
            lg.init_start.append(s)
        if "Could not enable P2P between" in s or re.search(r"P2P is disabled between (?:NVLINK )?connected GPUs", s):
            lg.p2p_disabled.append(s)
        if "set by environment to" in s:
            em = re.search(r"\b(NCCL_\w+) set by environment to (\S+?)\.?\s*$", s)
            if em:
                lg.env_set.setdefault(em.group(1), em.group(2))
        if _P2P_OFF_ENV.search(s):
            lg.p2p_off_env.append(s)
        if re.search(r"GPU Direct RDMA Disabled for HCA|NET/OFI .*(?:disabling GDR|GDR not supported)", s, re.I):
            # NET/OFI: aws-ofi-nccl turning GPUDirect RDMA off when its libfabric provider cannot use GPU memory
            # (FI_HMEM_CUDA): "Could not disable CUDA API usage for HMEM, disabling GDR" (held-out round 303, EFA)
            lg.gdr_disabled.append(s)
        elif re.search(r"GPU Direct RDMA Enabled for HCA", s, re.I):
            lg.gdr_enabled.append(s)
        elif re.search(r"GPU Direct RDMA Disabled for GPU \S+ / HCA \d+ \(distance", s, re.I):
            lg.gdr_far.append(s)
        if re.search(r"\bIB NIC distance\s*:\s*(?:SOC|SYS)\b", s):
            lg.nic_far.append(s)
        m = _NCCL_LINE.search(s)
        if m:
            _set(lg, "nccl_lines", lg.nccl_lines + 1)
            hosts[m.group("host")] = None
        elif "NCCL" in s or "ProcessGroupNCCL" in s:
            _set(lg, "nccl_lines", lg.nccl_lines + 1)
        v = re.search(r"NCCL version (\d+\.\d+\.\d+\S*)", s)
        if v and not lg.version:
            _set(lg, "version", v.group(1))
        if re.search(r"NET/IB\s*:\s*Using\b(?! interface)|NET/IB\s*:\s*\[\d+\]\s*[\w.\-]+:\d+/(?:IB|RoCE)", s):
            # NCCL 2.3's form lists one HCA port a line ("NET/IB: [0] mlx5_1:1/IB")
            lg.ib_using.append(s)
            for name, port, link, flags in _IB_DEV.findall(re.sub(r"\[(\d+)\]\s+", r"[\1]", s)):
                if not any(d.name == name and d.port == port for d in lg.ib_devices):
                    lg.ib_devices.append(NetDevice(name, port, link, flags.strip("/")))
            oob = re.search(r"OOB\s+([\w.\-]+):", s)
            if oob and oob.group(1) not in lg.oob_ifaces:
                lg.oob_ifaces.append(oob.group(1))
            continue
        if re.search(r"NET/IB\s*:\s*Using interface (\S+) for sideband", s):
            lg.oob_ifaces.append(re.search(r"Using interface ([\w.\-]+)", s).group(1))  # type: ignore[union-attr]
        gm = re.search(r"NET/Socket\s*:\s*GPU Direct RDMA Disabled for HCA \d+ '([\w.\-]+)'", s)
        if gm:  # the socket transport's NICs as its topology search lists them (a log cut before 'NET/Socket : Using')
            lg.socket_using.append(s)
            if gm.group(1) not in lg.socket_ifaces:
                lg.socket_ifaces.append(gm.group(1))
            continue
        sm = re.search(r"NET/Socket\s*:\s*Using\s+(.*)$", s) or re.search(r"\bNET\s*:\s*Using interface\s+(.*)$", s)
        if sm:
            lg.socket_using.append(s)
            for iface in _IFACE.findall(sm.group(1)):
                if iface not in lg.socket_ifaces:
                    lg.socket_ifaces.append(iface)
            continue
        bm = re.search(r"Bootstrap\s*:\s*Using\s+(.*)$", s)
        if bm:
            lg.bootstrap.append(s)
            for iface in _IFACE.findall(bm.group(1)):
                if iface not in lg.bootstrap_ifaces:
                    lg.bootstrap_ifaces.append(iface)
            continue
        nm = (re.search(r"Using (?:internal )?[Nn]etwork (.+?)\s*$", s)  # NCCL 2.3: "Using internal Network IB"
              or re.search(r"(?:Initialized|Assigned) NET plugin (\S+)", s))
        if nm:
            name = nm.group(1)
            if name not in lg.networks:
                lg.networks.append(name)
            lg.network_lines.append(s)
            continue
        if "NET/Plugin" in s or "Plugin Path" in s or re.search(r"P2P plugin|net plugin", s, re.I):
            lg.plugin_lines.append(s)
            pm = re.search(r"Loaded net plugin (.+?)\s*(?:\(v\d+\))?\s*$", s)
            if pm and not lg.plugin_net:
                _set(lg, "plugin_net", pm.group(1))
                lg.plugin_named.append(s)
        om = re.search(r"NET/OFI Initializing (aws-ofi-nccl\s*[\w.\-]*)", s)
        if om:
            _set(lg, "plugin_name", om.group(1).strip())
            lg.plugin_named.append(s)
        pv = re.search(r"NET/OFI (?:Setting provider_filter to|Selected [Pp]rovider is)\s+(\w+(?:;\w+)?)", s) or re.search(
            r"\bFI_PROVIDER\s*=\s*(\w+)", s)
        if pv:
            _set(lg, "ofi_provider", lg.ofi_provider or pv.group(1).lower())
            lg.plugin_named.append(s)
        if PLUGIN_FAIL.search(s):
            lg.plugin_failures.append(s)
            continue
        if re.search(r"NET/IB\s*:\s*No device found|Net/IB: call to devices\(\) returned 0 devices", s, re.I):
            lg.no_ib_device.append(s)
        if re.search(r"Failed to open libibverbs", s):
            lg.ibverbs_missing.append(s)
        if re.search(r"Unable to open device|ibv_open_device failed", s):
            lg.ib_open_failed.append(s)
        if re.search(r"via NET/", s):
            lg.channels_net.append(s)
        elif re.search(r"\bvia (?:SHM\b|direct shared memory\b)", s):  # NCCL 2.5-2.7's words (held-out round 333)
            lg.channels_shm.append(s)
        elif re.search(r"\bvia P2P\b", s):
            lg.channels_p2p.append(s)
        cm = _COMPLETION.search(s)
        if cm:
            lg.completion_errors.append((sat_int(cm.group(1)) if cm.group(1).isdigit() else None, s))
            continue
        if _OFI_COMPLETION.search(s):
            lg.ofi_errors.append(s)
            continue
        wm = _WATCHDOG.search(s)
        if wm:
            lg.watchdog.append(s)
            op = dict(re.findall(r"(\w+(?:\(ms\))?)=([^,]+)", wm.group(1)))
            op["ran_ms"] = wm.group(2)
            lg.watchdog_ops.append(op)
            continue
        if re.search(r"collective operation timeout", s, re.I) or (
                re.search(r"watchdog|Heartbeat monitor timed out", s, re.I) and ("ProcessGroupNCCL" in s or "NCCL" in s)):
            lg.watchdog.append(s)  # PyTorch's words, with or without the ProcessGroupNCCL prefix (held-out round 59)
            continue
        wo = re.match(r"^\s*WorkNCCL\((.*?)\)", s)
        if wo and lg.watchdog:  # the timed-out work on a line of its own, below the watchdog's line
            lg.watchdog.append(s)
            lg.watchdog_ops.append(dict(re.findall(r"(\w+(?:\(ms\))?)=([^,]+)", wo.group(1))))
            continue
        if re.search(r"nvls", s, re.I) and re.search(r"WARN|fail", s):
            lg.nvls_failures.append(s)
            continue
        if re.search(r"Cuda failure", s):
            lg.cuda_failures.append(s)
            continue
        if _TEST_FAILURE.search(s) or re.search(r"Test (?:NCCL )?failure", s):
            lg.test_failures.append(s)
            continue
        if "retrying" in s.lower() and _CONNECT_RETRY.search(s):
            lg.connect_retries.append(s)
            continue
        am = IB_ASYNC_EVENT.search(s)
        if am:
            lg.ib_async.append((am.group(1).strip().rstrip(".").lower(), s))
            continue
        if re.search(r"\bNCCL WARN\b|\] [\w/.]+:\d+ WARN\b|^[\w/.]+:\d+ WARN\b|\bNCCL WARN", s) or re.search(
                r"(?:^|\s)[\w/.]+\.(?:cc|cu|c|h):\d+ (?:NCCL )?WARN ", s) or LIBFABRIC_WARN.search(s):
            lg.warn_lines.append(s)
            k = setup_failure_class(s)
            if k and (k, s) not in lg.setup_failures:
                lg.setup_failures.append((k, s))
        rm = _RETURN.search(s)
        if rm:
            lg.return_chains.append((s, sat_int(rm.group(1))))
        im = re.search(r"\bnranks (\d+)", s)
        if im:
            _set(lg, "nranks", max(lg.nranks or 0, sat_int(im.group(1))))
        nm = re.search(r"\bnNodes (\d+)", s)
        if nm:
            _set(lg, "nnodes", max(lg.nnodes or 0, sat_int(nm.group(1))))
    _set(lg, "hosts", list(hosts))
    return lg


# ------------------------------------------------------------------ kinds


_DTYPE_WORD = lazy_re(r"\b(?:" + "|".join(sorted(TYPE_SIZES, key=len, reverse=True)) + r")\b")
_NCCL_TESTS_TOKENS = ("busbw", "algbw", "ngpus", "minbytes", "out-of-place", "avg bus bandwidth", "redop")


def detect_nccl_tests(text: str) -> float:
    low = text.lower()
    # cheap first: every nccl-tests output this accepts has a data type word or one of its column/header words
    if not any(t in low for t in _NCCL_TESTS_TOKENS) and not _DTYPE_WORD.search(low):
        return 0.0
    r = parse_nccl_tests(text)
    if r.rows and (r.columns_line or r.header or r.avg_line or r.devices):
        return 1.0
    if r.header and ("nGpus" in r.header or "minBytes" in r.header):
        return 0.95
    if len(r.rows) >= 2 and all(TYPE_SIZES.get(x.dtype.lower()) for x in r.rows):
        return 0.7
    if r.columns_line and "busbw" in r.columns_line:
        return 0.9
    return 0.0


def detect_nccl_log(text: str) -> float:
    # cheap first: every line counted below holds one of these (NCCL's prefix or level, its error names, NET/ lines)
    if not any(t in text for t in ("NCCL", "nccl", "INFO", "WARN", "TRACE", "ABORT", "NET/", "Using network")):
        return 0.0
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return 0.0
    hits = sum(1 for ln in lines if _NCCL_LINE.search(ln) or "ProcessGroupNCCL" in ln or
               re.search(r"\bNCCL (?:INFO|WARN)\b", ln) or _WATCHDOG.search(ln) or _FRAMEWORK.search(ln)
               or _TEST_FAILURE.search(ln)
               or re.search(r"Watchdog caught collective operation timeout|^\s*WorkNCCL\(SeqNum=", ln))
    if not hits:
        # NCCL's messages grepped out of a log (the "NCCL INFO" prefix cut off): the transport lines
        strong = sum(1 for ln in lines if _SUMMARY_STRONG.search(ln))
        weak = sum(1 for ln in lines if _SUMMARY_WEAK.search(ln))
        if not strong:
            return 0.0
        return min(0.9, 0.5 + 0.4 * (strong + weak) / len(lines))
    return min(0.95, 0.6 + 0.35 * hits / len(lines))


_SUMMARY_STRONG = lazy_re(r"NET/(?:IB|Socket)\s*:\s*Using\s+(?:\[\d+\][\w.\-]+:|\[RO\]|interface)"
                             r"|NET/IB\s*:\s*No device found|\bvia NET/(?:IB|Socket)\b"
                             r"|NET/IB\w*\s*:\s*Got completion from peer"
                             r"|^\s*Using network (?:IB|Socket|AWS Libfabric|Libfabric)\s*$"
                             r"|P2P is disabled between (?:NVLINK )?connected GPUs \d+ and \d+")
"""NCCL's own transport lines, recognisable without their "host:pid:tid [dev] NCCL INFO" prefix."""
_SUMMARY_WEAK = lazy_re(r"^\s*NCCL version \d+\.\d+\.\d+|Channel \d{2}/\d{2}|NVLS multicast support|"
                           r"Bootstrap\s*(?:timing|: Using)|ncclCommInitRank|\bnranks \d+|Trees \[\d")


# ------------------------------------------------------------------ ncclras (NCCL's RAS client)


@dataclass(frozen=True)
class RasIssue:
    """One error or warning ``ncclras`` reports: its section ("Errors"/"Warnings", or "missing" for a JSON
    communicator's missing ranks), its kind (INCOMPLETE, MISMATCH, TIMEOUT, ...), and its lines."""

    section: str
    kind: str
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RasReport:
    """``ncclras`` (NCCL 2.24+'s RAS client, its text or ``-f json`` form): the Communicators table's rows
    (group, comms, ranks in group, status, errors), and the issues of its Errors and Warnings sections."""

    rows: list[tuple[str, str, str, str, str]] = field(default_factory=list)  # (group, comms, ranks, status, errors)
    row_lines: list[str] = field(default_factory=list)
    issues: list[RasIssue] = field(default_factory=list)
    json_comms: int | None = None


_RAS_TABLE_HEAD = lazy_re(r"^\s*Group\s+Comms\s+Nodes\s+Ranks\s+Ranks\s+Ranks\s+Status\s+Errors\s*$", re.M)
_RAS_ROW = lazy_re(r"^\s*(\d+)\s+(\d+)\s+\d+\s+[\d\-]+\s+\d+\s+(\d+)\s+([A-Z_]+)\s+([A-Z_]+)\s*$")
_RAS_BLOCK = lazy_re(r"^(?:#\d+-\d+ \([0-9a-f]+\) )?([A-Z][A-Z_]{2,})\s*$")


def detect_ncclras(text: str) -> float:
    """0.95 for ``ncclras`` output: its Communicators table header, a ``#0-0 (hash) MISMATCH``-style issue under its
    Errors/Warnings title, or its JSON (``communicators`` with ``missing_ranks_count``)."""
    head = text[:200_000]
    if _RAS_TABLE_HEAD.search(head):
        return 0.95
    if re.search(r"^#\d+-\d+ \([0-9a-f]{8,}\) [A-Z_]{3,}\s*$", head, re.M) and re.search(
            r"^(?:Errors|Warnings)\s*$", head, re.M):
        return 0.95
    if '"communicators"' in head and '"missing_ranks_count"' in head:
        return 0.95
    return 0.0


def parse_ncclras(text: str) -> RasReport:
    """``ncclras`` text or JSON -> :class:`RasReport` (NVIDIA NCCL user guide, "RAS": the Communicators table's Status
    and Errors columns; the Errors and Warnings sections, one block per issue). Never raises."""
    rep = RasReport()
    s = text.strip()
    if s.startswith("{"):
        try:
            import json

            doc = json.loads(s)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("communicators"), list):
            comms = [c for c in doc["communicators"] if isinstance(c, dict)]
            _set(rep, "json_comms", len(comms))
            for c in comms:
                missing: list[dict[str, Any]] = [m for m in c.get("missing_ranks") or [] if isinstance(m, dict)]
                if missing or (isinstance(c.get("missing_ranks_count"), int) and c["missing_ranks_count"] > 0):
                    lines = [f"communicator {c.get('hash', '?')} of size {c.get('size', '?')}: "
                             f"missing_ranks_count {c.get('missing_ranks_count', len(missing))}"]
                    for mr in missing[:8]:
                        status = mr.get("status")
                        flags: dict[str, Any] = status if isinstance(status, dict) else {}
                        state = ("considered dead" if flags.get("considered_dead") else
                                 "unresponsive" if flags.get("unresponsive") else "missing")
                        lines.append(f"rank {mr.get('rank', '?')} (pid {mr.get('pid', '?')}, host {mr.get('host', '?')}, "
                                     f"CUDA device {mr.get('cuda_dev', '?')}): {state}")
                    rep.issues.append(RasIssue("missing", "INCOMPLETE", lines))
        return rep
    section = ""
    cur: RasIssue | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        st = line.strip()
        if not st or set(st) <= {"="}:
            continue
        if st in ("Errors", "Warnings"):
            section, cur = st, None
            continue
        m = _RAS_ROW.match(line)
        if m:
            rep.rows.append((m.group(1), m.group(2), m.group(3), m.group(4), m.group(5)))
            rep.row_lines.append(st)
            continue
        if section:
            b = _RAS_BLOCK.match(st)
            if b and not raw.startswith((" ", "\t")):
                cur = RasIssue(section, b.group(1), [st])
                rep.issues.append(cur)
                continue
            if cur is not None:
                cur.lines.append(st)
    return rep
