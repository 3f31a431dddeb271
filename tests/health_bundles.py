"""Capture bundles of an assembled GPU node for the health profile's tests (tests/test_health.py, tests/test_slurm.py).

Every answer is a real captured output from tests/data (see PROVENANCE.md), put where the probe reads it, as
tests/e2e/test_cases.py and tests/test_report.py assemble their nodes: a one-GPU A10G node (``nvidia-smi -q -x``), its
nvidia module listed (lsmod of a real GPU node), the open 565 driver's /proc version, ``nvidia-smi -L`` of a one-GPU
A100 node and this VM's ``df``. The two bundles differ only in the kernel log:

* ``healthy``: this VM's own dmesg (no Xid, no AER): no finding fails;
* ``xid79``: a Tesla node's dmesg with a PCIe surprise down and Xid 79 (GPU has fallen off the bus): it fails.

Everything else (NVML, lspci, sysfs) is absent, as on a node where they cannot be read: judged unknown, never
guessed.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from wizard.capture import capture
from wizard.hosts import CommandResult, LocalHost

from tests.conftest import DATA

CASES = DATA / "cases"
KERNEL_LOG = {
    "healthy": DATA / "public" / "kernel-log__dev-vm-firecracker-dmesg-local.txt",
    "xid79": CASES / "dmesg__tesla-aer-surprise-down-xid79-fallen-off-bus.txt",
}
COMMANDS = {
    ("nvidia-smi", "-q", "-x"): CASES / "nvidia-smi-q-x__a10g-idle-p8-healthy.xml",
    ("nvidia-smi", "-L"): DATA / "public" / "nvidia-smi-L__a100-80gb-pcie-mig-2g.20gb-prompt.txt",
    ("df", "-P", "-T", "-B1", "-l"): DATA / "local-vm" / "df-P-T-B1-l.txt",
}
FILES = {
    "proc/modules": CASES / "lsmod__gdrdrv-nvidia-nv_peer_mem.txt",
    "proc/driver/nvidia/version": CASES / "proc-driver-nvidia-version__open-565.txt",
}
JOURNAL = ("journalctl", "-k", "-b", "--no-pager", "-o", "short-monotonic")


class AssembledNode(LocalHost):
    """Commands answered from real case files; files from a tree holding only :data:`FILES`; anything else: not
    found."""

    def __init__(self, root: Path, kernel_log: Path) -> None:
        for rel, src in FILES.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, root / rel)
        super().__init__(root=str(root))
        self.commands = {**COMMANDS, JOURNAL: kernel_log}

    async def run(self, argv, timeout_s=20):
        src = self.commands.get(tuple(argv))
        if src is None:
            return CommandResult(list(argv), 127, error=f"command not found: {argv[0]}")
        return CommandResult(list(argv), 0, Path(src).read_bytes())

    async def builtin(self, name):
        return CommandResult([f"builtin:{name}"], 127, error="no NVML in this assembled node")


def make_bundle(kind: str, directory: Path) -> Path:
    """Write the ``kind`` bundle (``healthy`` or ``xid79``) into ``directory``; returns its path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{kind}.tar.gz"
    if not path.exists():
        node = AssembledNode(directory / f"{kind}-root", KERNEL_LOG[kind])
        asyncio.run(capture(node, path, {"hostname": f"a10g-{kind}"}, plan={}))
    return path
