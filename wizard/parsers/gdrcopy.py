"""GDRCopy's test programs (https://github.com/NVIDIA/gdrcopy, the GPUDirect RDMA copy library NVSHMEM and UCX use):
``gdrcopy_sanity`` (unit tests of the library and its ``gdrdrv`` kernel module), ``gdrcopy_copybw`` (CPU write/read
bandwidth through a BAR mapping of GPU memory), ``gdrcopy_copylat`` (copy latency per size), ``gdrcopy_apiperf`` and
``gdrcopy_pplat``; the older names (``sanity``, ``copybw``, ``copylat``, ``validate``) print the same lines. Pure:
never raises; lines that look like GDRCopy's but cannot be read go to ``problems``.

What the programs print (tests/sanity.cpp, tests/testsuites/testsuite.cpp, tests/copybw.cpp, tests/copylat.cpp,
tests/common.hpp at NVIDIA/gdrcopy commit fcec3ce)::

    Total: 28, Passed: 25, Failed: 1, Waived: 2          <- gdrcopy_sanity summary (2.x)
    List of failed tests:
        basic_with_tokens
    Assertion "(gdr_pin_buffer(...)) == (0)" failed at sanity.cpp:274   <- ASSERT() in common.hpp, on stderr
    Error: Encountered an error or a test failure with status=1
    gdr_open error: Is gdrdrv driver installed and loaded?              <- gdr_open_safe(): /dev/gdrdrv did not open
    100%: Checks: 15, Failures: 0, Errors: 0             <- the older libcheck-based sanity (1.x, 2.0/2.1)
    write BW: 8680.15MB/s                                <- copybw; MB = 2^20 bytes (Bps / 1024.0 / 1024.0)
    gdr_copy_to_mapping          1         0.0889        <- copylat: size in bytes, time in microseconds
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wizard.common import sat_int, to_float
from wizard.parsers._frozen import build_set as _set
from wizard.common import lazy_re

GDRCOPY_MB_BYTES = 1024 * 1024
"""Bytes in the "MB" of gdrcopy_copybw's ``write BW: ...MB/s`` / ``read BW: ...MB/s``: 2^20, not 10^6.
NVIDIA/gdrcopy tests/copybw.cpp (commit fcec3ce, lines 119-121 and 137-139, unchanged since 2019):
``double Bps = byte_count / dt_us * 1e6; woMBps = Bps / 1024.0 / 1024.0; cout << "write BW: " << woMBps << "MB/s"``."""

PROGRAMS = ("gdrcopy_sanity", "gdrcopy_copybw", "gdrcopy_copylat", "gdrcopy_apiperf", "gdrcopy_pplat")

_COMMAND = lazy_re(r"(?:^|[\s/$#>])(gdrcopy_(?:sanity|copybw|copylat|apiperf|pplat))\b")
_OLD_COMMAND = lazy_re(r"^\S*[$#>]\s*(?:sudo\s+)?(?:\S*/)?(sanity|copybw|copylat|validate)\b")
_OLD_NAMES = {"sanity": "gdrcopy_sanity", "copybw": "gdrcopy_copybw", "copylat": "gdrcopy_copylat"}
_SUMMARY = lazy_re(r"^\s*Total:\s*(\d+),\s*Passed:\s*(\d+),\s*Failed:\s*(\d+),\s*Waived:\s*(\d+)\s*$")
_LIST_HEAD = lazy_re(r"^\s*List of (passed|failed|waived) tests:\s*$")
_TEST_NAME = lazy_re(r"^\s+([a-z][a-z0-9_]+)\s*$")
_CHECK_SUMMARY = lazy_re(r"^\s*(\d+)%:\s*Checks:\s*(\d+),\s*Failures:\s*(\d+),\s*Errors:\s*(\d+)\s*$")
_CHECK_LINE = lazy_re(r"^\s*\S+\.c(?:pp)?:\d+:([EF]):([^:]*):([^:]*):")
_ASSERT = lazy_re(r"^\s*(?:Assertion|Check) \".*\" failed at \S+:\d+\s*$")
_OPEN_FAIL = lazy_re(r"gdr_open error|Is gdrdrv driver installed|error opening driver|unable to open GDR driver|"
                        r"(?:Failed to open|cannot open|can't open)\s+/dev/gdrdrv|/dev/gdrdrv:\s*No such file|"
                        r"gdrcopy requires gdrdrv|Assertion \"!\(\((?:t\.)?g\) == \(\(void\s*\*\)\s*0\)\)\" failed", re.I)
"""``/dev/gdrdrv`` could not be opened: gdr_open() returned NULL (tests/common.hpp gdr_open_safe(): "gdr_open error: Is
gdrdrv driver installed and loaded?"; src/gdrapi.c: "error opening driver (errno=...)" with GDRCOPY_ENABLE_LOGGING;
the older sanity asserted ``!((g) == ((void*)0))``, NVIDIA/gdrcopy#126)."""
_ERROR = lazy_re(r"^\s*(?:Error: Encountered an error|ERR:\s|ERROR:|CUDA error:|error\b.*\bwhile mapping|"
                    r"error in gdr_\w+|Does the selected GPU support GPUDirect RDMA|"
                    r"gdrdrv is too old|The minimum required gdrdrv|gdrdrv driver requires libgdrapi|.*Test timeout expired)")
_GPU = lazy_re(r"^\s*GPU id:\s*(\d+);?\s*name:\s*")
_SELECT = lazy_re(r"^\s*selecting device\s+(\d+)\s*$")
_INFO = lazy_re(r"^\s*info\.(mapped|wc_mapping):\s*(\S+)\s*$")
_SIZE = lazy_re(r"^\s*(writing|reading) test, size=(\d+)")
_BW = lazy_re(r"^\s*(write|read) BW:\s*(\S+?)\s*MB/s\s*$")
_LAT = lazy_re(r"^\s*(gdr_copy_to_mapping|gdr_copy_from_mapping|cuMemcpy_H2D|cuMemcpy_D2H)\s+(\d+)\s+([\d.]+)"
                  r"(?:\s+([\d.]+))?\s*$")
_PPLAT = lazy_re(r"Round-trip latency per iteration is\s+([\d.]+)\s*us")
_CLOSED = lazy_re(r"^\s*closing gdrdrv\s*$")


@dataclass(frozen=True)
class GdrBandwidth:
    """One gdrcopy_copybw figure: ``direction`` "write" (CPU -> GPU memory through the BAR mapping) or "read" (GPU
    memory -> CPU), the copy size in bytes (0 when the paste lacks its ``writing test, size=`` line), the figure in
    gdrcopy's MB/s (2^20 bytes/s, :data:`GDRCOPY_MB_BYTES`) and the line."""

    direction: str
    size: int
    mib_s: float
    line: str

    @property
    def gb_s(self) -> float:
        """The figure in GB/s (10^9 bytes per second)."""
        return self.mib_s * GDRCOPY_MB_BYTES / 1e9


@dataclass(frozen=True)
class GdrcopyRun:
    """What one GDRCopy test program printed.

    Attributes:
        program: ``gdrcopy_sanity`` ... (:data:`PROGRAMS`) named by the paste's command line, else inferred from the
            output's shape ("" when neither tells).
        command_line: the prompt line that ran it ("" when none).
        gpus: (id, name, bus id) of each ``GPU id:`` line; ``device``: the ``selecting device N`` GPU (None: absent).
        total, passed, failed, waived: gdrcopy_sanity's summary counts (None: no summary line); ``summary_line``.
        failed_tests, waived_tests, passed_tests: the names under "List of ... tests:".
        check_summary: the older libcheck summary line ("100%: Checks: 15, Failures: 0, Errors: 0"), and its
            ``check_failures`` / ``check_errors`` counts (None: absent); ``check_lines``: its ``file:line:E|F:...``
            lines.
        assertions: ``Assertion "..." failed at file:line`` / ``Check "..." failed`` lines.
        open_errors: lines saying /dev/gdrdrv could not be opened (gdr_open failed).
        errors: other error lines (``Error: Encountered an error ...``, ``ERR:``, ``CUDA error:``, mapping errors).
        mapped, wc_mapping: ``info.mapped`` / ``info.wc_mapping`` (None: absent).
        bandwidth: gdrcopy_copybw figures (:class:`GdrBandwidth`).
        latency: gdrcopy_copylat rows: (test, size in bytes, time in microseconds, line).
        pplat_us: gdrcopy_pplat's round-trip latency in microseconds (None: absent); ``pplat_line``.
        closed: ``closing gdrdrv`` was printed (the program reached its end).
        problems: lines that look like gdrcopy's figures but could not be read.
    """

    program: str = ""
    command_line: str = ""
    gpus: list[tuple[int, str, str]] = field(default_factory=list)
    device: int | None = None
    total: int | None = None
    passed: int | None = None
    failed: int | None = None
    waived: int | None = None
    summary_line: str = ""
    failed_tests: list[str] = field(default_factory=list)
    waived_tests: list[str] = field(default_factory=list)
    passed_tests: list[str] = field(default_factory=list)
    check_summary: str = ""
    check_failures: int | None = None
    check_errors: int | None = None
    check_lines: list[str] = field(default_factory=list)
    assertions: list[str] = field(default_factory=list)
    open_errors: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    mapped: int | None = None
    wc_mapping: int | None = None
    bandwidth: list[GdrBandwidth] = field(default_factory=list)
    latency: list[tuple[str, int, float, str]] = field(default_factory=list)
    pplat_us: float | None = None
    pplat_line: str = ""
    closed: bool = False
    problems: list[str] = field(default_factory=list)


_LIMIT_LINES = 200_000


def parse_gdrcopy(text: str, command: str = "") -> GdrcopyRun:
    """Read one GDRCopy test program's output (see :class:`GdrcopyRun`); ``command``: the command line typed before
    it when the paste's prompt line was split off (``explain`` passes it). Never raises."""
    r = GdrcopyRun()
    if not isinstance(text, str):
        return r
    if isinstance(command, str) and command.strip():
        c = _COMMAND.search(" " + command)
        o = _OLD_COMMAND.match("$ " + command.strip())
        name = c.group(1) if c else _OLD_NAMES.get(o.group(1), "") if o else ""
        if name:
            _set(r, "program", name)
            _set(r, "command_line", command.strip())
    listing = ""
    size = {"write": 0, "read": 0}
    for raw in text.splitlines()[:_LIMIT_LINES]:
        line = raw.rstrip()
        s = line.strip()
        if not s:
            listing = ""
            continue
        c = _COMMAND.search(line)
        if c and not r.command_line and (re.match(r"^\S*[$#>]", s) or s.startswith(c.group(1))):
            _set(r, "program", c.group(1))
            _set(r, "command_line", s)
            continue
        o = _OLD_COMMAND.match(s)
        if o and not r.command_line:
            _set(r, "program", _OLD_NAMES.get(o.group(1), ""))
            _set(r, "command_line", s)
            continue
        if _OPEN_FAIL.search(s):
            r.open_errors.append(s)
            if _ASSERT.match(line):
                r.assertions.append(s)
            continue
        m = _LIST_HEAD.match(line)
        if m:
            listing = m.group(1)
            continue
        if listing:
            t = _TEST_NAME.match(raw)
            if t:
                {"passed": r.passed_tests, "failed": r.failed_tests, "waived": r.waived_tests}[listing].append(t.group(1))
                continue
            listing = ""
        m = _SUMMARY.match(line)
        if m:
            for k, v in zip(("total", "passed", "failed", "waived"), m.groups()):
                _set(r, k, sat_int(v))
            _set(r, "summary_line", s)
            continue
        m = _CHECK_SUMMARY.match(line)
        if m:
            _set(r, "check_summary", s)
            _set(r, "check_failures", sat_int(m.group(3)))
            _set(r, "check_errors", sat_int(m.group(4)))
            continue
        if _CHECK_LINE.match(line):
            r.check_lines.append(s)
            continue
        if _ASSERT.match(line):
            r.assertions.append(s)
            continue
        if _ERROR.match(line):
            r.errors.append(s)
            continue
        m = _GPU.match(line)
        if m:  # "GPU id:0; name: Tesla V100-SXM2-32GB; Bus id: 0000:06:00", older "GPU id:0 name:Tesla K80 PCI domain: 0 ..."
            name, _, bus = line[m.end():].partition("; Bus id:")
            r.gpus.append((sat_int(m.group(1)), name.partition(" PCI domain:")[0].strip(), bus.strip()))
            continue
        m = _SELECT.match(line)
        if m:
            _set(r, "device", sat_int(m.group(1)))
            continue
        m = _INFO.match(line)
        if m:
            v = m.group(2)
            if v.isdigit() and len(v) < 6:
                _set(r, m.group(1), int(v))
            else:
                r.problems.append(s)
            continue
        m = _SIZE.match(line)
        if m:
            size["write" if m.group(1) == "writing" else "read"] = sat_int(m.group(2))
            continue
        m = _BW.match(line)
        if m:
            v = to_float(m.group(2))
            if v is None or v < 0:
                r.problems.append(s)
            else:
                r.bandwidth.append(GdrBandwidth(m.group(1), size[m.group(1)], v, s))
            continue
        m = _LAT.match(line)
        if m:
            us = to_float(m.group(3))
            if us is None:
                r.problems.append(s)
            else:
                r.latency.append((m.group(1), sat_int(m.group(2)), us, s))
            continue
        m = _PPLAT.search(line)
        if m:
            us = to_float(m.group(1))
            if us is None:
                r.problems.append(s)
            else:
                _set(r, "pplat_us", us)
                _set(r, "pplat_line", s)
            continue
        if _CLOSED.match(line):
            _set(r, "closed", True)
    if not r.program:
        _set(r, "program", _infer_program(r))
    return r


def _infer_program(r: GdrcopyRun) -> str:
    for a in r.assertions:  # "... failed at copylat.cpp:195": the source file names the program
        m = re.search(r"failed at (sanity|copybw|copylat|apiperf|pplat)\.c(?:pp|u)?:\d+", a)
        if m:
            return "gdrcopy_" + m.group(1)
    if r.summary_line or r.check_summary or r.failed_tests or r.passed_tests:
        return "gdrcopy_sanity"
    if r.bandwidth:
        return "gdrcopy_copybw"
    if r.latency:
        return "gdrcopy_copylat"
    if r.pplat_us is not None:
        return "gdrcopy_pplat"
    return ""


def detect_gdrcopy(text: str) -> float:
    """0.95 for a GDRCopy test program's output: its summary (``Total: N, Passed: N, Failed: N, Waived: N``), its
    ``gdr_open error`` / ``closing gdrdrv`` / ``info.wc_mapping`` lines, its bandwidth or latency rows, or an
    assertion at ``sanity.cpp``; 0.9 for a ``gdrcopy_*`` command with nothing else GDRCopy prints; else 0."""
    if not isinstance(text, str):
        return 0.0
    if not re.search(r"gdr|Waived|\.cpp:\d|wc_mapping|Checks:|GPUDirect", text):  # cheap first
        return 0.0
    if re.search(r"^[ \t]*Total:[ \t]*\d+,[ \t]*Passed:[ \t]*\d+,[ \t]*Failed:[ \t]*\d+,[ \t]*Waived:[ \t]*\d+[ \t]*$",
                 text, re.M):
        return 0.95
    if re.search(r"gdr_open error|Is gdrdrv driver installed|^[ \t]*closing gdrdrv[ \t]*$|^[ \t]*info\.wc_mapping:"
                 r"|failed at (?:sanity|copybw|copylat|apiperf|pplat)\.cpp:\d+|error in gdr_(?:open|pin_buffer|map)\b"
                 r"|Does the selected GPU support GPUDirect RDMA|^[ \t]*gdr_copy_(?:to|from)_mapping[ \t]+\d+[ \t]", text, re.M):
        return 0.95
    if re.search(r"Running suite\(s\): Sanity", text) and re.search(r"Checks:\s*\d+", text):
        return 0.9
    if _COMMAND.search(text):
        return 0.9
    return 0.0
