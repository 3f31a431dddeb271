"""Saved sysfs listings (``path:value`` lines, as ``grep -H . FILES`` prints them; a line ending in ``/`` is a
directory or a link the probe only lists) turned back into a tree, so the registry's own fabric probes read them
through ``LocalHost(root=...)``."""

from __future__ import annotations

import asyncio
from pathlib import Path

from wizard import probes
from wizard.hosts import LocalHost
from wizard.probes import ProbeOutput

FABRIC = Path(__file__).resolve().parent / "data" / "fabric"


def sysfs_tree(root: Path, listing: str) -> Path:
    """Write ``listing`` under ``root``; returns ``root``."""
    for line in listing.splitlines():
        if not line.strip():
            continue
        if line.endswith("/"):
            (root / line.strip("/")).mkdir(parents=True, exist_ok=True)
            continue
        path, _, value = line.partition(":")
        f = root / path.lstrip("/")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(value + "\n")
    return root


def fabric_outputs(root: Path, *names: str) -> dict[str, ProbeOutput]:
    """The fabric probes (default: ib_sysfs and net_sysfs) run over the tree at ``root``."""
    from wizard.registry import probes_named

    return asyncio.run(probes.collect(LocalHost(root=str(root)), probes_named(names or ("ib_sysfs", "net_sysfs"))))


def tree_outputs(tmp: Path, name: str, *probe_names: str) -> dict[str, ProbeOutput]:
    """:func:`fabric_outputs` over the saved listing ``tests/data/fabric/NAME``."""
    return fabric_outputs(sysfs_tree(tmp, (FABRIC / name).read_text()), *probe_names)
