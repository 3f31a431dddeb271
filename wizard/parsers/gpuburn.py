"""gpu-burn (https://github.com/wilicc/gpu-burn) output: the GPUs it found, each progress line's per-GPU
work done, Gflop/s, error count and temperature, and the final ``Tested N GPUs:`` / ``GPU N: OK|FAULTY``
result. Pure: never raises; what could not be read goes to ``problems``.

A progress line (one value per GPU, separated by `` - ``)::

    100.0%  proc'd: 18000 (6311 Gflop/s) - 12600 (6440 Gflop/s)   errors: 0 - -524288000  (WARNING!)   temps: 51 C - 45 C

``proc'd: -1 (0 Gflop/s)`` with ``errors: N (DIED!)`` is a test process that died.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wizard.parsers._frozen import build_set as _set
from wizard.common import sat_int
from wizard.common import lazy_re

_PROGRESS = lazy_re(r"^\s*(\d+(?:\.\d+)?)%\s+proc'd:\s*(.*?)\s+errors:\s*(.*?)(?:\s+temps:\s*(.*?))?\s*$")
_PROCD = lazy_re(r"(-?\d+)\s*\(\s*(-?\d+(?:\.\d+)?)\s*Gflop/s\s*\)")
_ERR = lazy_re(r"(-?\d+)\s*(?:\(\s*(WARNING|DIED)!\s*\))?")
_TEMP = lazy_re(r"(-?\d+)\s*C\b")
_NAME = lazy_re(r"^\s*GPU\s+(\d+):\s+(.+?)\s+\(UUID:.*\)\s*$")
_INIT = lazy_re(r"^\s*Initialized device\s+(\d+)\s+with\s+(\d+)\s*MB of memory")
_TESTED = lazy_re(r"^\s*Tested\s+(\d+)\s+GPUs?:?\s*$")
_RESULT = lazy_re(r"^\s*GPU\s+(\d+):\s*(OK|FAULTY)\b", re.I)
_BURNING = lazy_re(r"Burning for\s+(\d+)\s*s(?:ec(?:ond)?s?)?\b", re.I)
_COMMAND = lazy_re(r"\bgpu[_-]burn\b((?:\s+\S+)*)")
_INIT_FAIL = lazy_re(r"Couldn't init a GPU test|Failure during compute|Error in \"|Error \(gpu_burn-drv\.cpp:\d+\):"
                        r"|^\s*No CUDA devices\s*$", re.I)
"""gpu-burn could not start its test; "No CUDA devices" is what it throws when cuDeviceGetCount finds none (its
nvidia-smi -L listing above may still show the GPUs: the driver sees them, CUDA cannot)."""
_ABORT = lazy_re(r"No clients are alive|Aborting", re.I)
_FORCE_KILL = lazy_re(r"Killing processes with SIGKILL", re.I)
"""gpu-burn sends SIGKILL only to test processes still alive after its SIGTERM and a grace period (its
gpu_burn-drv.cpp, after "Killing processes with SIGTERM (soft kill)"): a process that ignored SIGTERM is stuck."""


@dataclass(frozen=True)
class BurnGpu:
    """One GPU of a gpu-burn run. ``gflops``/``procd``/``errors``/``temps_c``: one value per progress line
    (the GPU's column); ``flags``: ``WARNING`` / ``DIED`` marks gpu-burn printed next to an error count;
    ``result``: ``OK`` / ``FAULTY`` from the final summary ("" when the paste has none)."""

    index: int
    name: str = ""
    memory_mb: int | None = None
    gflops: list[float] = field(default_factory=list)
    procd: list[int] = field(default_factory=list)
    errors: list[int] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    temps_c: list[int] = field(default_factory=list)
    result: str = ""
    result_line: str = ""
    error_line: str = ""

    @property
    def measured(self) -> bool:
        """True when a progress line shows this GPU doing work (proc'd > 0 at > 0 Gflop/s)."""
        return any(p > 0 and g > 0 for p, g in zip(self.procd, self.gflops))

    @property
    def bad_errors(self) -> bool:
        """A non-zero error count (gpu-burn prints overflowed counts as negatives) or a WARNING/DIED mark."""
        return any(e != 0 for e in self.errors) or bool(self.flags) or any(p < 0 for p in self.procd)


@dataclass(frozen=True)
class GpuBurn:
    """A gpu-burn run as pasted. ``duration_s``: the run length it announced or was given (None when the
    paste does not say); ``tested``: N of ``Tested N GPUs:`` (None without the summary);
    ``progress_pct``: each progress line's share of the run done (%), in order; ``force_kill_line``: gpu-burn's
    "Killing processes with SIGKILL (force kill)", printed when a test process outlived SIGTERM."""

    gpus: dict[int, BurnGpu] = field(default_factory=dict)
    progress_lines: list[str] = field(default_factory=list)
    progress_pct: list[float] = field(default_factory=list)
    duration_s: int | None = None
    duration_line: str = ""
    tested: int | None = None
    tested_line: str = ""
    init_errors: list[str] = field(default_factory=list)
    abort_line: str = ""
    force_kill_line: str = ""
    problems: list[str] = field(default_factory=list)

    def gpu(self, i: int) -> BurnGpu:
        if i not in self.gpus:
            self.gpus[i] = BurnGpu(i)
        return self.gpus[i]


def _progress(g: GpuBurn, line: str, m: re.Match[str]) -> None:
    procd = _PROCD.findall(m.group(2))
    errs = list(_ERR.finditer(m.group(3)))
    temps = _TEMP.findall(m.group(4) or "")
    if not procd:
        g.problems.append(line)
        return
    g.progress_lines.append(line)
    g.progress_pct.append(float(m.group(1)))
    for i, (n, gf) in enumerate(procd):
        b = g.gpu(i)
        b.procd.append(sat_int(n))
        b.gflops.append(float(gf))
        if i < len(errs):
            b.errors.append(sat_int(errs[i].group(1)))
            if errs[i].group(2):
                b.flags.append(errs[i].group(2).upper())
            if sat_int(errs[i].group(1)) != 0 or errs[i].group(2) or sat_int(n) < 0:
                _set(b, "error_line", line)
        if i < len(temps):
            b.temps_c.append(sat_int(temps[i]))


def parse_gpu_burn(text: str, command: str = "") -> GpuBurn:
    """Read gpu-burn's output (``command``: the command line when the paste showed it separately); never raises."""
    g = GpuBurn()
    if not isinstance(text, str):
        return g
    for raw in text.splitlines():
        line = raw.rstrip()
        m = _PROGRESS.match(line)
        if m:
            _progress(g, line, m)
            continue
        if (m2 := _NAME.match(line)) and g.tested is None:
            _set(g.gpu(sat_int(m2.group(1))), "name", m2.group(2))
            continue
        if m3 := _INIT.match(line):
            _set(g.gpu(sat_int(m3.group(1))), "memory_mb", sat_int(m3.group(2)))
            continue
        if m4 := _TESTED.match(line):
            _set(g, "tested", sat_int(m4.group(1)))
            _set(g, "tested_line", line.strip())
            continue
        if (m5 := _RESULT.match(line)) and g.tested is not None:
            b = g.gpu(sat_int(m5.group(1)))
            _set(b, "result", m5.group(2).upper())
            _set(b, "result_line", line.strip())
            continue
        if m6 := _BURNING.search(line):
            _set(g, "duration_s", sat_int(m6.group(1)))
            _set(g, "duration_line", line.strip())
            continue
        if _INIT_FAIL.search(line):
            g.init_errors.append(line.strip())
            continue
        if _FORCE_KILL.search(line):
            _set(g, "force_kill_line", line.strip())
            continue
        if _ABORT.search(line) and "proc'd" not in line:
            _set(g, "abort_line", line.strip())
            continue
        if g.duration_s is None and (m7 := _COMMAND.search(line)) and line.lstrip().startswith(("$", "#", ".", "/")):
            _duration_from_args(g, m7.group(1), line.strip())
    if g.duration_s is None and command and (m8 := _COMMAND.search(command)):
        _duration_from_args(g, m8.group(1), command.strip())
    return g


def _duration_from_args(g: GpuBurn, args: str, line: str) -> None:
    """gpu-burn's last bare integer argument is the run length in seconds (its usage: ``gpu_burn [OPTIONS] [TIME]``)."""
    words = args.split()
    prev = ""
    for w in words:
        if w.isdigit() and prev not in ("-m", "-i", "-c", "-stts"):
            _set(g, "duration_s", sat_int(w))
            _set(g, "duration_line", line)
        prev = w


def detect_gpu_burn(text: str) -> float:
    """1.0 for a gpu-burn progress line or its ``Tested N GPUs:`` summary with per-GPU OK/FAULTY; 0.9 for its
    start-up lines alone (0.96 with its "Burning for N secs" line: above ``nvidia-smi -L``'s reading of the GPU listing
    it prints); 0.96 for its "No CUDA devices" throw ("terminate called after throwing ...") beside the GPU
    listing; 0 otherwise (``GPU N: name (UUID: ...)`` alone is ``nvidia-smi -L``, not gpu-burn)."""
    if not isinstance(text, str):
        return 0.0
    if re.search(r"^[ \t]*\d+(?:\.\d+)?%\s+proc'd:\s*-?\d+\s*\(", text, re.M):
        return 1.0
    if re.search(r"^[ \t]*Tested\s+\d+\s+GPUs?:\s*$", text, re.M) and re.search(r"^[ \t]*GPU\s+\d+:\s*(OK|FAULTY)\s*$", text,
                                                                             re.M | re.I):
        return 1.0
    if re.search(r"^[ \t]*Initialized device\s+\d+\s+with\s+\d+\s*MB of memory", text, re.M):
        return 0.9
    if re.search(r"Burning for\s+\d+\s+sec", text):
        return 0.96  # its own start line above the GPU listing it prints: gpu-burn, not nvidia-smi -L (round 277)
    if re.search(r"Couldn't init a GPU test", text):
        return 0.8
    if re.search(r"^\s*No CUDA devices\s*$", text[:20_000], re.M) and re.search(
            r"terminate called after throwing an instance of", text[:20_000]):
        # its C++ throw of "No CUDA devices" above the nvidia-smi -L listing it prints (held-out round 127): above
        # nvidia-smi -L's 0.95, which reads the listing alone
        return 0.96
    return 0.0
