"""Test data as probe outputs: the real probes run over a saved tree, or one saved file.

``tests/data/PROVENANCE.md`` says where every file comes from. Trees saved with their machine
paths (``local-vm/proc/meminfo``, ``local-vm/sys/devices/system/cpu/online``) are read by the
registry's own probes through ``LocalHost(root=...)``, so a test sees exactly the
:class:`wizard.probes.ProbeOutput` the probe produced on that machine (same globs, same
``source``, same ``error`` for a file the machine did not have).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Iterable

from wizard import probes
from wizard.hosts import LocalHost, decode
from wizard.probes import ProbeOutput, tree_text

DATA = Path(__file__).resolve().parent / "data"
CASES = DATA / "cases"
PUBLIC = DATA / "public"
SYNTHETIC = DATA / "synthetic"
LOCAL_VM = DATA / "local-vm"


def text(path: Path) -> str:
    """A saved output decoded the way hosts decode probe output (UTF-8, bad bytes replaced)."""
    return decode(path.read_bytes())


def collect_tree(root: Path, names: Iterable[str]) -> dict[str, ProbeOutput]:
    """Run the registry's probes ``names`` against files saved under ``root``."""
    from wizard.registry import probes_named

    return asyncio.run(probes.collect(LocalHost(root=str(root)), probes_named(names)))


def file_output(name: str, path: Path, source: str) -> ProbeOutput:
    """A file probe's output: ``path``'s content as read from ``source`` on the machine."""
    return ProbeOutput(name=name, source=source, text=text(path))


def command_output(name: str, path: Path, argv: str, rc: int = 0, stderr: str = "") -> ProbeOutput:
    """A command probe's output: ``path`` holds what ``argv`` printed on stdout."""
    return ProbeOutput(name=name, source="$ " + argv, text=text(path), rc=rc, stderr=stderr)


def grep_tree(path: Path) -> dict[str, str | None]:
    """A ``grep -Hr . DIR``-style listing (one ``path:line`` per line) -> path -> content.

    Only for trees whose paths hold no ':' (iommu groups, cpu, node, dmi)."""
    files: dict[str, list[str]] = {}
    for line in text(path).splitlines():
        p, _, content = line.partition(":")
        files.setdefault(p, [])
        if content:
            files[p].append(content)
    return {p: "".join(c + "\n" for c in lines) for p, lines in files.items()}


def tree_output(name: str, files: dict[str, str | None], source: str,
                file_errors: dict[str, str] | None = None) -> ProbeOutput:
    """A tree probe's output from path -> content, with the text the probe would build."""
    errors = dict(file_errors or {})
    return ProbeOutput(name=name, source=source, text=tree_text(files, errors), files=dict(files),
                       file_errors=errors)


def failed(name: str, source: str, error: str, rc: int | None = None, stderr: str = "") -> ProbeOutput:
    """A probe that could not be collected."""
    return ProbeOutput(name=name, source=source, error=error, rc=rc, stderr=stderr)
