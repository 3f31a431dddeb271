"""Start the slow probes' child processes before the rest of bringup is imported.

On a GPU server the slowest probes are external processes: NVML initialisation, ``nvidia-smi
-q -x`` (seconds without persistence mode), ``import torch``. Starting them first lets them run
while bringup imports its parsers. This module imports only ``subprocess``, ``sys`` and ``os``.
:class:`wizard.hosts.LocalHost` takes a prefetched process for the same argv (once) instead of
starting a new one. ``PREFETCH`` must list argv exactly as the probes run them (a test checks).
"""

from __future__ import annotations

import os
import subprocess
import sys

NVML_ARGV = (sys.executable, "-m", "wizard.nvml_probe")
TORCH_PROBE_CODE = ("import torch,sys; print(torch.__version__); print(torch.version.cuda); "
                    "print(torch.cuda.is_available())")
PREFETCH: tuple[tuple[str, ...], ...] = (
    NVML_ARGV,
    ("python3", "-c", TORCH_PROBE_CODE),
    ("nvidia-smi", "-q", "-x"),
    ("nvidia-smi", "topo", "-m"),
    ("lspci", "-D", "-nn", "-vvv"),
)

HEALTH: tuple[tuple[str, ...], ...] = (
    NVML_ARGV,
    ("nvidia-smi", "-q", "-x"),
    ("lspci", "-D", "-nn", "-vvv"),
    ("nvidia-smi", "-L"),
    ("nvidia-smi", "nvlink", "-s"),
    ("journalctl", "-k", "-b", "--no-pager", "-o", "short-monotonic"),
    ("dmesg",),
    ("df", "-P", "-T", "-B1", "-l"),
    ("systemctl", "show", "--no-pager", "--property=Id,LoadState,ActiveState,SubState,UnitFileState,Result,ExecStart",
     "nvidia-persistenced.service", "nvidia-fabricmanager.service", "nvidia-dcgm.service"),
)
"""What ``check --profile health`` prefetches: every command its rules read that takes more than a few milliseconds
(they run while bringup imports its rules: on a 2-core VM that is about a third of the wall time), never the torch
probe. Each is exactly the argv of a probe of the profile (a test checks)."""

_PROCS: dict[tuple[str, ...], "subprocess.Popen[bytes]"] = {}


def start(argvs: "tuple[tuple[str, ...], ...]" = PREFETCH) -> None:
    """Start each argv now (idempotent; a binary that is missing is simply not prefetched)."""
    env = dict(os.environ, LC_ALL="C", LANG="C")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    for argv in argvs:
        if argv in _PROCS:
            continue
        try:
            _PROCS[argv] = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE, env=env, start_new_session=True)
        except OSError:
            pass


def take(argv: "list[str] | tuple[str, ...]") -> "subprocess.Popen[bytes] | None":
    """The prefetched process for ``argv``, once; ``None`` if none was started (or it was taken)."""
    return _PROCS.pop(tuple(argv), None)


def discard() -> None:
    """Kill and reap prefetched processes nobody took (e.g. probes a stage filter left out)."""
    for p in list(_PROCS.values()):
        try:
            p.kill()
            p.communicate(timeout=2)
        except (OSError, subprocess.TimeoutExpired):
            pass
    _PROCS.clear()
