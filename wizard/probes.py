"""Probes: named commands and files, collected concurrently, never interpreted here.

A probe returns a :class:`ProbeOutput`: the raw text (or, for sysfs trees, the raw file
contents by path), the exit status and timing, and an ``error`` when it could not be
collected (binary missing, permission denied, timeout, file absent). Parsers turn outputs
into facts; checks turn facts into findings.

``REGISTRY`` holds every probe the catalogue knows; ``bringup capture`` runs all of them.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Iterable, Mapping

from wizard.hosts import DEFAULT_TIMEOUT_S, CommandResult, FileResult, Host, NotInSnapshot, decode


@dataclass
class ProbeOutput:
    """What one probe collected.

    Attributes:
        name: the probe's registry name.
        source: how it was collected, as an operator would type it ("$ nvidia-smi -L",
            "/proc/cmdline", "/sys/bus/pci/devices/*/...").
        text: the raw output (stdout for commands, content for one file, ``path:line``
            lines for a file tree, like ``grep -r . DIR``).
        files: for file-tree probes, path -> content (``None`` when unreadable).
        file_errors: path -> error for unreadable files of a tree.
        rc: exit status for commands (``None`` for files).
        stderr: stderr text for commands.
        error: why it could not be collected; empty when it was.
        duration_s: wall time in seconds.
    """

    name: str
    source: str
    text: str = ""
    files: dict[str, str | None] = field(default_factory=dict)
    file_errors: dict[str, str] = field(default_factory=dict)
    rc: int | None = None
    stderr: str = ""
    error: str = ""
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.error

    def lines(self) -> list[str]:
        return self.text.splitlines()

    def evidence_error(self) -> list[str]:
        """Evidence lines for a probe that failed: what ran and why it failed."""
        out = [self.source]
        if self.error:
            out.append(f"error: {self.error}")
        if self.rc not in (None, 0):
            out.append(f"exit status {self.rc}")
        out.extend(line for line in self.stderr.splitlines()[:5] if line.strip())
        return out


Collector = Callable[..., Awaitable[ProbeOutput]]


@dataclass(frozen=True)
class Probe:
    """A named probe. ``uses_plan``: its collector takes the plan answers as a second argument
    (e.g. the data path to look at); the recorded argv then carries the value, so a bundle
    replays only for the same answer (the manifest stores the plan)."""

    name: str
    title: str
    collect: Collector
    uses_plan: bool = False


REGISTRY: dict[str, Probe] = {}


def register(probe: Probe) -> Probe:
    if probe.name in REGISTRY:
        raise ValueError(f"duplicate probe {probe.name}")
    REGISTRY[probe.name] = probe
    return probe


def command_probe(name: str, title: str, argv: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> Probe:
    """A probe that runs ``argv`` (a list, never a shell string)."""

    async def collect(host: Host) -> ProbeOutput:
        r = await host.run(argv, timeout_s)
        return _from_command(name, r)

    return register(Probe(name, title, collect))


def _from_command(name: str, r: CommandResult) -> ProbeOutput:
    error = r.error
    return ProbeOutput(name=name, source="$ " + " ".join(r.argv), text=decode(r.stdout), rc=r.rc,
                       stderr=decode(r.stderr), error=error, duration_s=r.duration_s)


def file_probe(name: str, title: str, *paths: str) -> Probe:
    """A probe that reads the first of ``paths`` that exists."""

    async def collect(host: Host) -> ProbeOutput:
        last: FileResult | None = None
        for p in paths:
            last = await host.read(p)
            if last.ok:
                break
            if last.error not in ("no such file",):
                break
        assert last is not None
        return ProbeOutput(name=name, source=last.path, text=last.text if last.ok else "",
                           error=last.error, duration_s=last.duration_s)

    return register(Probe(name, title, collect))


async def read_tree(host: Host, patterns: Iterable[str]) -> tuple[dict[str, str | None], dict[str, str]]:
    """Expand glob ``patterns`` on ``host`` and read every match concurrently."""
    paths: list[str] = []
    for pat in patterns:
        paths.extend(await host.glob(pat))
    results = await asyncio.gather(*(host.read(p) for p in paths))
    files: dict[str, str | None] = {}
    errors: dict[str, str] = {}
    for r in results:
        files[r.path] = r.text if r.ok else None
        if not r.ok:
            errors[r.path] = r.error
    return files, errors


def tree_text(files: Mapping[str, str | None], errors: Mapping[str, str]) -> str:
    """``grep -r . DIR``-style text of a file tree: one ``path:line`` per content line."""
    out: list[str] = []
    for path, content in files.items():
        if content is None:
            out.append(f"{path}: <{errors.get(path, 'unreadable')}>")
            continue
        for line in content.splitlines() or [""]:
            out.append(f"{path}:{line}")
    return "\n".join(out)


def tree_probe(name: str, title: str, *patterns: str) -> Probe:
    """A probe that reads every file matching the glob ``patterns`` (sysfs trees)."""

    async def collect(host: Host) -> ProbeOutput:
        t0 = time.monotonic()
        try:
            files, errors = await read_tree(host, patterns)
        except NotInSnapshot as exc:
            return ProbeOutput(name=name, source=" ".join(patterns), error=str(exc),
                               duration_s=time.monotonic() - t0)
        return ProbeOutput(name=name, source=" ".join(patterns), text=tree_text(files, errors),
                           files=files, file_errors=errors, duration_s=time.monotonic() - t0)

    return register(Probe(name, title, collect))


def glob_probe(name: str, title: str, *patterns: str) -> Probe:
    """A probe that only lists which paths exist (e.g. ``/sys/module/nouveau``): ``files`` maps
    each match to an empty string, ``text`` lists them one per line."""

    async def collect(host: Host) -> ProbeOutput:
        t0 = time.monotonic()
        matches: list[str] = []
        source = "ls -d " + " ".join(patterns)
        try:
            for pat in patterns:
                matches.extend(await host.glob(pat))
        except NotInSnapshot as exc:
            return ProbeOutput(name=name, source=source, error=str(exc), duration_s=time.monotonic() - t0)
        return ProbeOutput(name=name, source=source, text="\n".join(matches),
                           files={m: "" for m in matches}, duration_s=time.monotonic() - t0)

    return register(Probe(name, title, collect))


# --------------------------------------------------------------------------------------------
# The probes the engine knows. Names are stable (capture bundles and tests use them).

HOSTNAME = file_probe("hostname", "Host name", "/proc/sys/kernel/hostname", "/etc/hostname")
MACHINE_ID = file_probe("machine_id", "Machine id", "/etc/machine-id", "/var/lib/dbus/machine-id")
BOOT_ID = file_probe("boot_id", "Boot id", "/proc/sys/kernel/random/boot_id")
DMI = tree_probe(
    "dmi", "DMI system identity (vendor, product, serial, BIOS)",
    *(f"/sys/class/dmi/id/{f}" for f in (
        "sys_vendor", "product_name", "product_serial", "board_vendor", "board_name",
        "bios_vendor", "bios_version", "bios_date")),
)
OS_RELEASE = file_probe("os_release", "OS release", "/etc/os-release", "/usr/lib/os-release")
KERNEL = file_probe("kernel", "Kernel release", "/proc/sys/kernel/osrelease")
CPUINFO = file_probe("cpuinfo", "CPU model (/proc/cpuinfo)", "/proc/cpuinfo")
CPU_TOPOLOGY = tree_probe(
    "cpu_topology", "CPU sockets, cores and SMT (sysfs)",
    "/sys/devices/system/cpu/online", "/sys/devices/system/cpu/possible",
    "/sys/devices/system/cpu/present", "/sys/devices/system/cpu/smt/active", "/sys/devices/system/cpu/smt/control",
    "/sys/devices/system/cpu/cpu[0-9]*/topology/physical_package_id",
    "/sys/devices/system/cpu/cpu[0-9]*/topology/core_id",
)
NUMA = tree_probe(
    "numa", "NUMA nodes (sysfs)",
    "/sys/devices/system/node/online", "/sys/devices/system/node/node[0-9]*/cpulist",
)
MEMINFO = file_probe("meminfo", "Memory (/proc/meminfo)", "/proc/meminfo")
SWAPS = file_probe("swaps", "Swap devices (/proc/swaps)", "/proc/swaps")
CMDLINE = file_probe("cmdline", "Kernel command line", "/proc/cmdline")
IOMMU = tree_probe(
    "iommu", "IOMMU units and default domain type (sysfs)",
    "/sys/class/iommu/*/uevent", "/sys/kernel/iommu_groups/*/type",
)
MOUNTS = file_probe("mounts", "Mounted filesystems", "/proc/self/mounts", "/proc/mounts")
DF = command_probe("df", "Filesystem usage (df)", ["df", "-P", "-T", "-B1", "-l"], timeout_s=15)
MODULES = file_probe("modules", "Loaded kernel modules (/proc/modules)", "/proc/modules")
MODPROBE_D = tree_probe("modprobe_d", "modprobe configuration (blacklists, options)",
                        "/etc/modprobe.d/*.conf", "/usr/lib/modprobe.d/*.conf", "/lib/modprobe.d/*.conf")
SYS_MODULE = glob_probe("sys_module", "GPU driver modules in /sys/module (loaded or built in)",
                        "/sys/module/nouveau", "/sys/module/nvidia", "/sys/module/nvidia_uvm",
                        "/sys/module/nvidia_peermem")
NVIDIA_DRIVER_VERSION = file_probe("nvidia_driver_version", "NVIDIA driver version (/proc)",
                                   "/proc/driver/nvidia/version")
LSPCI_VERSION = command_probe("lspci_version", "lspci present (pciutils)", ["lspci", "--version"], timeout_s=10)
NVIDIA_SMI_L = command_probe("nvidia_smi_l", "nvidia-smi GPU list", ["nvidia-smi", "-L"], timeout_s=30)

PCI_DEVICE_FILES = (
    "device", "class", "subsystem_vendor", "subsystem_device", "numa_node",
    "current_link_speed", "current_link_width", "max_link_speed", "max_link_width",
    "aer_dev_correctable", "aer_dev_nonfatal", "aer_dev_fatal",
)
NVIDIA_VENDOR = "0x10de"


async def _collect_pci(host: Host) -> ProbeOutput:
    """NVIDIA PCI functions from sysfs (no lspci needed), and which driver binds each."""
    t0 = time.monotonic()
    try:
        return await _collect_pci_tree(host, t0)
    except NotInSnapshot as exc:
        return ProbeOutput(name="pci", source="/sys/bus/pci/devices/*/{vendor,device,class,...}", error=str(exc),
                           duration_s=time.monotonic() - t0)


async def _collect_pci_tree(host: Host, t0: float) -> ProbeOutput:
    vendors, verr = await read_tree(host, ["/sys/bus/pci/devices/*/vendor"])
    files: dict[str, str | None] = dict(vendors)
    errors: dict[str, str] = dict(verr)
    nvidia = [os.path.dirname(p) for p, v in vendors.items() if v and v.strip().lower() == NVIDIA_VENDOR]
    if nvidia:
        more, merr = await read_tree(host, [f"{d}/{f}" for d in nvidia for f in PCI_DEVICE_FILES])
        files.update(more)
        errors.update(merr)
    bound = await host.glob("/sys/bus/pci/drivers/*/[0-9a-f]*:*")
    text = tree_text(files, errors)
    if bound:
        text += "\n" + "\n".join(f"{p}" for p in bound)
    error = "" if vendors else "no PCI devices visible in /sys/bus/pci/devices"
    out = ProbeOutput(name="pci", source="/sys/bus/pci/devices/*/{vendor,device,class,...}",
                      text=text, files=files, file_errors=errors, duration_s=time.monotonic() - t0,
                      error=error)
    out.files.update({p: "" for p in bound})  # driver bindings: path only
    return out


PCI = register(Probe("pci", "NVIDIA PCI functions (sysfs)", _collect_pci))


NVML_TIMEOUT_S = 30.0


async def _nvml_builtin() -> CommandResult:
    """Run the NVML probe in a child interpreter so a hung or crashing driver cannot take
    bringup down with it (NVML calls can block on a GPU that fell off the bus). A child
    :mod:`wizard.prefetch` started early is used by :meth:`LocalHost.run`."""
    from wizard import prefetch
    from wizard.hosts import LocalHost

    return await LocalHost().run(list(prefetch.NVML_ARGV), timeout_s=NVML_TIMEOUT_S)


async def _collect_nvml(host: Host) -> ProbeOutput:
    r = await host.builtin("nvml")
    out = _from_command("nvml", r)
    out.source = "NVML (pynvml): nvmlInit, nvmlDeviceGetCount, per-GPU name/PCI/serial/UUID/memory"
    if not out.error:
        try:
            json.loads(out.text)
        except ValueError:
            out.error = f"NVML probe printed no JSON (exit status {r.rc})"
    return out


NVML = register(Probe("nvml", "NVML through pynvml", _collect_nvml))

BUILTINS = {"nvml": _nvml_builtin}
"""In-process probes a LocalHost knows (see :class:`wizard.hosts.LocalHost`)."""

IDENTITY_PROBES = ("hostname", "machine_id", "boot_id", "dmi", "os_release", "kernel")


async def _collect_data_path(host: Host, plan: Mapping[str, object]) -> ProbeOutput:
    """``df`` of the plan's data path: tells whether it exists and which filesystem holds it."""
    path = plan.get("data_path")
    if not isinstance(path, str) or not path:
        return ProbeOutput(name="data_path_df", source="df of the plan's data_path",
                           error="no data_path in the plan")
    r = await host.run(["df", "-P", "-T", "-B1", "--", path], 15)
    out = _from_command("data_path_df", r)
    if not out.error and r.rc not in (0, None):  # df printed why (e.g. No such file or directory)
        out.error = f"df exited with status {r.rc}"
    return out


DATA_PATH_DF = register(Probe("data_path_df", "Filesystem of the plan's data path (df)", _collect_data_path,
                              uses_plan=True))


async def collect(host: Host, names: Iterable[str], plan: Mapping[str, object] | None = None) -> dict[str, ProbeOutput]:
    """Collect the named probes concurrently; returns name -> output.

    A probe that raises (a bug, not the machine's fault) still yields an output with the
    exception as its error, so one broken probe cannot hide the others' findings.
    """
    unique = list(dict.fromkeys(names))

    async def one(n: str) -> ProbeOutput:
        probe = REGISTRY[n]
        t0 = time.monotonic()
        try:
            if probe.uses_plan:
                return await probe.collect(host, plan or {})  # type: ignore[call-arg]
            return await probe.collect(host)
        except Exception as exc:  # noqa: BLE001 - turned into an unknown finding downstream
            return ProbeOutput(name=n, source=probe.title, error=f"probe crashed: {exc!r}",
                               duration_s=time.monotonic() - t0)

    outs = await asyncio.gather(*(one(n) for n in unique))
    return dict(zip(unique, outs))
