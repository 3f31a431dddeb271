"""Start the NVML probe's child process before the rest of bringup is imported.

NVML initialisation is the slowest probe on a GPU server (it can take seconds when persistence
mode is off); starting it first lets it overlap bringup's own start-up. This module imports only
``subprocess``, ``sys`` and ``os`` so it costs nothing to call early. The probe takes the
running process with :func:`take` (once); without a prefetch it starts its own.
"""

from __future__ import annotations

import os
import subprocess
import sys

_PROC: "subprocess.Popen[bytes] | None" = None


def start_nvml() -> None:
    """Start ``python -m wizard.nvml_probe`` now (idempotent; never raises)."""
    global _PROC
    if _PROC is not None:
        return
    env = dict(os.environ, LC_ALL="C", LANG="C")
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    try:
        _PROC = subprocess.Popen([sys.executable, "-m", "wizard.nvml_probe"], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
    except OSError:
        _PROC = None


def take() -> "subprocess.Popen[bytes] | None":
    """The prefetched NVML process, once; ``None`` if none was started (or it was taken)."""
    global _PROC
    p, _PROC = _PROC, None
    return p
