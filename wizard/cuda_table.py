"""NVIDIA's "CUDA Toolkit and Corresponding Driver Versions" table (``assets/cuda_driver_min.csv``) and its
lookups: the driver each CUDA release needs, the minor-version-compatibility floor of its family and the
newest CUDA a driver supports.

Pure queries over reference data, shared by the driver-chain rules (:mod:`wizard.rules.driver_chain`)
and the driver install planner (:mod:`wizard.install.driver`). Source: NVIDIA CUDA Toolkit release notes,
Table 3 (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/) and the CUDA compatibility guide
(https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html).
"""

from __future__ import annotations

import re

from wizard.data import table
from wizard.parsers.cuda import version_tuple

TABLE = "cuda_driver_min.csv"


def _rows(mm: str) -> list[dict[str, str]]:
    return [r for r in table(TABLE) if r.get("cuda_toolkit") == mm]


def min_driver(mm: str) -> tuple[str, dict[str, str]] | None:
    """Lowest Linux x86_64 driver any release of CUDA ``mm`` ("12.4") needs (its GA row), or None
    when ``mm`` is not in the table."""
    best: tuple[tuple[int, ...], str, dict[str, str]] | None = None
    for r in _rows(mm):
        d = r.get("linux_x86_64_toolkit_driver_min", "")
        t = version_tuple(d)
        if t and (best is None or t < best[0]):
            best = (t, d, r)
    return (best[1], best[2]) if best else None


def max_driver(mm: str) -> str:
    """Highest per-update minimum of CUDA ``mm`` (a later update may need a slightly newer driver)."""
    ds = [r.get("linux_x86_64_toolkit_driver_min", "") for r in _rows(mm)]
    ds = [d for d in ds if version_tuple(d)]
    return max(ds, key=version_tuple) if ds else ""


def family_floor(mm: str) -> str:
    """The driver floor of minor-version compatibility for CUDA ``mm``'s major family (">=525"
    -> "525"); "" before CUDA 11 or when unknown. Falls back to any row of the same major."""
    major = mm.split(".")[0]
    rows = _rows(mm) or [r for r in table(TABLE) if r.get("cuda_toolkit", "").split(".")[0] == major]
    for r in rows:
        m = re.search(r">=\s*(\d+(?:\.\d+)*)", r.get("minor_version_compat_linux_min", ""))
        if m:
            return m.group(1)
    return ""


def driver_max_cuda(driver: str) -> str:
    """Newest CUDA major.minor whose minimum (GA) driver is at or below ``driver``; "" if none."""
    dv = version_tuple(driver)
    best = ""
    for r in table(TABLE):
        mm = r.get("cuda_toolkit", "")
        need = version_tuple(r.get("linux_x86_64_toolkit_driver_min", ""))
        if need and dv >= need and (not best or version_tuple(mm) > version_tuple(best)):
            best = mm
    return best
