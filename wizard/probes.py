"""Probes: named commands and files, collected concurrently, never interpreted here.

A probe returns a :class:`ProbeOutput`: the raw text (or, for sysfs trees, the raw file
contents by path), the exit status and timing, and an ``error`` when it could not be
collected (binary missing, permission denied, timeout, file absent). Parsers turn outputs
into facts; checks turn facts into findings.

Every probe the engine knows is defined here, as a constant; :mod:`wizard.registry` lists them
(``bringup capture`` runs all of them). Nothing registers itself on import.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Iterable, Mapping

from wizard.i18n import N_
from wizard.hosts import DEFAULT_TIMEOUT_S, CommandResult, FileResult, Host, NotInSnapshot, decode
from wizard.common import lazy_re


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
        """Evidence lines for a probe that failed: what ran and why it failed (stored in English; shown through
        :func:`evidence_shown`)."""
        out = [self.source]
        if self.error:
            out.append(f"error: {self.error}")
        if self.rc not in (None, 0):
            out.append(f"exit status {self.rc}")
        out.extend(line for line in self.stderr.splitlines()[:5] if line.strip())
        return out


_EVIDENCE_ERROR = lazy_re(r"^error: (?:(command not found|permission denied): (\S+)|timed out after ([\d.]+) s|"
                             r"(not in snapshot))$")
_EVIDENCE_EXIT = lazy_re(r"^exit status (-?\d+)$")
_EVIDENCE_FILE = lazy_re(r"^((?:ls -d )?/\S*(?: /\S*){0,7}): (no such file|no such directory|no readable file|"
                         r"permission denied|is a directory)$")
"""bringup's note on a file it could not read (``/proc/modules: no such file``), :class:`FileResult`'s words."""
FILE_ERRORS = (N_("no such file"), N_("no such directory"), N_("no readable file"), N_("permission denied"),
               N_("is a directory"))
_EVIDENCE_NO_GPU = lazy_re(r"^(?P<source>\S+): (?P<n>\d+) PCI functions, none with vendor (?P<vendor>0x[0-9a-f]{4}) and a "
                           r"display class \((?P<classes>[^)]+)\)$")
"""health.gpu_pci's note on a bus with no NVIDIA GPU (:mod:`wizard.rules.gpu_presence`)."""
EVIDENCE_NOTES = frozenset({N_("(no EDAC counters found)")})
"""Whole evidence lines that are bringup's own notes (not what a command or file said): shown translated."""


def evidence_shown(line: str) -> str:
    """An evidence line as the operator reads it: bringup's own notes on a probe that failed
    (:meth:`ProbeOutput.evidence_error`: "error: command not found: lspci", "exit status 127") in the operator's
    language, the command's name kept (walk 24 #10); any other line, what a command or a file said, as it is."""
    from wizard.i18n import _

    m = _EVIDENCE_ERROR.match(line)
    if m:
        why = (_("command not found: {tool}") if m.group(1) == "command not found" else
               _("permission denied: {tool}")).format(tool=m.group(2)) if m.group(1) else (
            _("timed out after {seconds} s").format(seconds=m.group(3)) if m.group(3) else _("not in snapshot"))
        return _("error: {error}").format(error=why)
    m = _EVIDENCE_EXIT.match(line)
    if m:
        return _("exit status {rc}").format(rc=m.group(1))
    m = _EVIDENCE_FILE.match(line)
    if m:  # walk 35 #5: "/proc/modules: no such file" stayed English among translated findings
        return _("{path}: {why}").format(path=m.group(1), why=_(m.group(2)))
    m = _EVIDENCE_NO_GPU.match(line)
    if m:  # walk 35 #5
        return _("{source}: {n} PCI functions, none with vendor {vendor} and a display class ({classes})").format(
            **m.groupdict())
    return _(line) if line in EVIDENCE_NOTES else line


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


def command_probe(name: str, title: str, argv: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> Probe:
    """A probe that runs ``argv`` (a list, never a shell string)."""

    async def collect(host: Host) -> ProbeOutput:
        r = await host.run(argv, timeout_s)
        return _from_command(name, r)

    return Probe(name, title, collect)


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

    return Probe(name, title, collect)


async def read_tree(host: Host, patterns: Iterable[str], binary: bool = False) -> tuple[dict[str, str | None], dict[str, str]]:
    """Expand glob ``patterns`` on ``host`` and read every match concurrently.

    Returns (path -> content, ``None`` when unreadable; path -> error). ``binary``: each content is
    the file's bytes as lowercase hex (sysfs binary attributes such as SMBIOS raw entries or
    efivars must not go through UTF-8 decoding)."""
    import asyncio  # imported where used (explain imports this module for its data classes)

    paths: list[str] = []
    for matched in await asyncio.gather(*(host.glob(pat) for pat in patterns)):  # together: one round trip over ssh
        paths.extend(matched)

    results = await asyncio.gather(*(host.read(p) for p in paths))
    files: dict[str, str | None] = {}
    errors: dict[str, str] = {}
    for r in results:
        if r.ok and (not binary or r.data is not None):
            files[r.path] = r.data.hex() if binary and r.data is not None else r.text
        else:
            files[r.path] = None
            errors[r.path] = r.error or "unreadable"
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

    return Probe(name, title, collect)


def glob_probe(name: str, title: str, *patterns: str) -> Probe:
    """A probe that only lists which paths exist (e.g. ``/sys/module/nouveau``): ``files`` maps
    each match to an empty string, ``text`` lists them one per line."""

    async def collect(host: Host) -> ProbeOutput:
        t0 = time.monotonic()
        matches: list[str] = []
        source = "ls -d " + " ".join(patterns)
        import asyncio  # imported where used (explain imports this module for its data classes)

        try:
            for matched in await asyncio.gather(*(host.glob(pat) for pat in patterns)):  # together (see read_tree)
                matches.extend(matched)
        except NotInSnapshot as exc:
            return ProbeOutput(name=name, source=source, error=str(exc), duration_s=time.monotonic() - t0)
        return ProbeOutput(name=name, source=source, text="\n".join(matches),
                           files={m: "" for m in matches}, duration_s=time.monotonic() - t0)

    return Probe(name, title, collect)


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


PCI = Probe("pci", "NVIDIA PCI functions (sysfs)", _collect_pci)


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


NVML = Probe("nvml", "NVML through pynvml", _collect_nvml)

BUILTINS = {"nvml": _nvml_builtin}
"""In-process probes a LocalHost knows (see :class:`wizard.hosts.LocalHost`)."""

IDENTITY_PROBES = ("hostname", "machine_id", "boot_id", "dmi", "os_release", "kernel")


async def _collect_data_path(host: Host, plan: Mapping[str, object]) -> ProbeOutput:
    """``df`` of the plan's data path: tells whether it exists and which filesystem holds it."""
    path = plan.get("data_path")
    if not isinstance(path, str) or not path:
        return ProbeOutput(name="data_path_df", source="df of the plan's data_path",
                           error=N_("no data_path in the plan"))
    r = await host.run(["df", "-P", "-T", "-B1", "--", path], 15)
    out = _from_command("data_path_df", r)
    if not out.error and r.rc not in (0, None):  # df printed why (e.g. No such file or directory)
        out.error = f"df exited with status {r.rc}"
    return out


DATA_PATH_DF = Probe("data_path_df", "Filesystem of the plan's data path (df)", _collect_data_path,
                     uses_plan=True)

# The data path's storage (node.storage, node.storage_read): block devices, NVMe controllers, md RAID, fio.
LSBLK = command_probe("lsblk", "Block devices (lsblk -J)",
                      ["lsblk", "-J", "-b", "-o", "NAME,KNAME,TYPE,SIZE,MODEL,ROTA,TRAN,MOUNTPOINT,PKNAME"], timeout_s=15)
NVME_SYSFS = tree_probe(
    "nvme_sysfs", "NVMe controllers: model, firmware, PCIe link (sysfs)",
    *(f"/sys/class/nvme/nvme*/{f}" for f in ("model", "firmware_rev", "transport")),
    *(f"/sys/class/nvme/nvme*/device/{f}" for f in ("current_link_speed", "current_link_width", "max_link_speed",
                                                    "max_link_width")),
)
MDSTAT = file_probe("mdstat", "Software RAID arrays (/proc/mdstat)", "/proc/mdstat")
FIO_VERSION = command_probe("fio_version", "fio present (the storage benchmark)", ["fio", "--version"], timeout_s=10)


# --------------------------------------------------------------------------------------------
# Probes of the driver, CUDA, kernel log, host tools, links and platform areas (paths and
# commands only: the parsers that read them live in wizard/parsers/).

EDAC_ROOT = "/sys/devices/system/edac/mc"
CPUIDLE_BASE = "/sys/devices/system/cpu/cpuidle"
EFI_GLOBAL_GUID = "8be4df61-93ca-11d2-aa0d-00e098032b8c"
"""The EFI global variable namespace (UEFI specification, "Globally Defined Variables")."""
SECUREBOOT_EFIVAR = f"/sys/firmware/efi/efivars/SecureBoot-{EFI_GLOBAL_GUID}"
SETUPMODE_EFIVAR = f"/sys/firmware/efi/efivars/SetupMode-{EFI_GLOBAL_GUID}"

from wizard.prefetch import TORCH_PROBE_CODE  # noqa: E402 - one definition, shared with the prefetch


NVCC_VERSION = command_probe("nvcc_version", "CUDA toolkit on PATH (nvcc --version)", ["nvcc", "--version"],
                             timeout_s=30)

async def _collect_torch_cuda(host: Host, plan: Mapping[str, object]) -> ProbeOutput:
    py = plan.get("torch_python")
    python = py.strip() if isinstance(py, str) and py.strip() else "python3"
    return _from_command("torch_cuda", await host.run([python, "-c", TORCH_PROBE_CODE], 180))


TORCH_CUDA = Probe("torch_cuda", "torch's CUDA build and whether it sees a GPU (the plan's torch_python, else the "
                   "target's python3)", _collect_torch_cuda, uses_plan=True)
"""Runs with the plan's ``torch_python`` (the Python the validations use; walk 20: this check asked ``python3`` after
the operator had set it), else the target's own ``python3`` (importing torch can take tens of seconds on a cold
cache, hence the long timeout). A Python without torch exits 1 with ModuleNotFoundError."""


_MC = EDAC_ROOT + "/mc[0-9]*"
EDAC_SYSFS = tree_probe(
    "edac_sysfs", "Host memory EDAC error counters (sysfs)",
    *(f"{_MC}/{f}" for f in ("ce_count", "ue_count", "ce_noinfo_count", "ue_noinfo_count", "mc_name",
                             "seconds_since_reset")),
    *(f"{_MC}/{d}[0-9]*/{f}" for d in ("dimm", "rank") for f in ("dimm_ce_count", "dimm_ue_count", "dimm_label")),
    *(f"{_MC}/csrow[0-9]*/{f}" for f in ("ce_count", "ue_count", "ch[0-9]*_ce_count", "ch[0-9]*_dimm_label")),
)
"""Readable without root (kernel EDAC documentation, https://docs.kernel.org/driver-api/edac.html). No files at all means no EDAC driver is loaded."""


LSCPU = command_probe("lscpu", "CPU sockets, cores, threads and NUMA nodes (lscpu)", ["lscpu"], timeout_s=15)
FREE_B = command_probe("free_b", "Memory and swap use in bytes (free -b)", ["free", "-b"], timeout_s=10)



KERNEL_LOG_JOURNAL = command_probe(
    "kernel_log_journal", "Kernel log of this boot (journalctl -k -b)",
    ["journalctl", "-k", "-b", "--no-pager", "-o", "short-monotonic"], timeout_s=60)
"""This boot's kernel messages with ``[seconds since boot]`` stamps (same stamps as ``dmesg``,
so event keys match across the two probes). Non-root users outside the ``adm`` /
``systemd-journal`` groups see no kernel messages: the check then reports ``unknown``."""

KERNEL_LOG_DMESG = command_probe(
    "kernel_log_dmesg", "Kernel ring buffer (dmesg)", ["dmesg"], timeout_s=30)
"""The kernel ring buffer, for systems without journald. With ``kernel.dmesg_restrict=1``
(docs.kernel.org/admin-guide/sysctl/kernel.html) a non-root ``dmesg`` fails with "Operation not
permitted": a probe error, judged ``unknown``."""



DPKG_PATTERNS = ("nvidia-*", "libnvidia-*", "cuda-drivers*", "cuda-toolkit*", "cuda-keyring", "cuda-compat*",
                 "datacenter-gpu-manager*", "linux-modules-nvidia-*", "dkms")
"""Package name globs the dpkg probe asks for: the driver, its DKMS/precompiled kernel modules, Fabric
Manager and NSCQ, DCGM, the container toolkit, the CUDA toolkit and NVIDIA's repository keyring."""

RPM_PATTERNS = ("*nvidia*", "cuda-drivers*", "cuda-toolkit*", "datacenter-gpu-manager*", "dkms")
"""The same for ``rpm -qa`` (glob patterns, any one matches)."""

SERVICE_UNITS = ("nvidia-persistenced.service", "nvidia-fabricmanager.service", "nvidia-dcgm.service")
"""systemd units this area checks: the persistence daemon, Fabric Manager, DCGM's host engine."""

DRIVER_DPKG = command_probe(
    "driver_dpkg", "Installed NVIDIA driver, Fabric Manager, DCGM and toolkit packages (dpkg-query)",
    ["dpkg-query", "-W", "-f=${db:Status-Abbrev} ${binary:Package} ${Version} ${Architecture}\n", *DPKG_PATTERNS],
    timeout_s=30)
"""Same columns as ``dpkg -l`` (state, name, version, architecture); exits 1 and names on stderr the
patterns nothing matched; absent (exit 127) on RPM distributions."""

DRIVER_RPM = command_probe("driver_rpm", "Installed NVIDIA driver, Fabric Manager, DCGM and toolkit packages (rpm)",
                           ["rpm", "-qa", *RPM_PATTERNS], timeout_s=30)
DRIVER_DKMS = command_probe("driver_dkms", "Kernel modules DKMS builds (dkms status)", ["dkms", "status"],
                            timeout_s=30)
DRIVER_SERVICES = command_probe(
    "driver_services", "nvidia-persistenced, nvidia-fabricmanager and nvidia-dcgm units (systemctl show)",
    ["systemctl", "show", "--no-pager", "--property=Id,LoadState,ActiveState,SubState,UnitFileState,Result,ExecStart",
     *SERVICE_UNITS], timeout_s=15)
DRIVER_FM_VERSION = command_probe("driver_fm_version", "Fabric Manager version (nv-fabricmanager --version)",
                                  ["nv-fabricmanager", "--version"], timeout_s=15)
DRIVER_MODINFO = command_probe("driver_modinfo", "The nvidia module the running kernel would load (modinfo nvidia)",
                               ["modinfo", "nvidia"], timeout_s=15)
DRIVER_UNAME_M = command_probe("driver_uname_m", "Machine architecture (uname -m)", ["uname", "-m"], timeout_s=10)


NVIDIA_SMI_QX = command_probe("nvidia_smi_qx", "nvidia-smi -q -x (every GPU's state, XML)",
                              ["nvidia-smi", "-q", "-x"], timeout_s=60)
"""``nvidia-smi -q -x``: the primary per-GPU health source (60 s: it queries every GPU, and a
sick GPU makes it slow)."""



LSPCI_VVV = command_probe("lspci_vvv", "PCI devices with link, ACS and AER detail (lspci -D -nn -vvv)",
                          ["lspci", "-D", "-nn", "-vvv"], timeout_s=60)
"""Whole ``lspci -vvv`` (the GPUs' upstream switch ports are needed); ``-nn`` adds class codes and
vendor:device ids (GPU detection that does not depend on the host's pci.ids), ``-D`` the PCI domain.
Without root lspci prints ``Capabilities: <access denied>``: the findings then say so."""
TOPO_M = command_probe("nvidia_smi_topo_m", "GPU/NIC topology matrix (nvidia-smi topo -m)",
                       ["nvidia-smi", "topo", "-m"], timeout_s=60)
TOPO_P2P = command_probe("nvidia_smi_topo_p2p", "GPU peer-to-peer read status (nvidia-smi topo -p2p r)",
                         ["nvidia-smi", "topo", "-p2p", "r"], timeout_s=60)
NVLINK_S = command_probe("nvidia_smi_nvlink_s", "NVLink link speeds (nvidia-smi nvlink -s)",
                         ["nvidia-smi", "nvlink", "-s"], timeout_s=60)
NVLINK_E = command_probe("nvidia_smi_nvlink_e", "NVLink error counters (nvidia-smi nvlink -e)",
                         ["nvidia-smi", "nvlink", "-e"], timeout_s=60)




def binary_tree_probe(name: str, title: str, *patterns: str) -> Probe:
    """A probe that reads binary sysfs files matching ``patterns``; ``files`` maps each path to the
    file's bytes as lowercase hex."""
    async def collect(host: Host) -> ProbeOutput:
        t0 = time.monotonic()
        source = " ".join(patterns) + " (hex)"
        try:
            files, errors = await read_tree(host, patterns, binary=True)
        except NotInSnapshot as exc:
            return ProbeOutput(name=name, source=source, error=str(exc), duration_s=time.monotonic() - t0)
        return ProbeOutput(name=name, source=source, text=tree_text(files, errors), files=files, file_errors=errors,
                           duration_s=time.monotonic() - t0)

    return Probe(name, title, collect)


async def _collect_sriov(host: Host) -> ProbeOutput:
    """PCI functions that expose SR-IOV (``sriov_totalvfs``), with their VF count and identity."""

    t0 = time.monotonic()
    source = "/sys/bus/pci/devices/*/{sriov_totalvfs,sriov_numvfs,vendor,device,class}"
    try:
        total, errors = await read_tree(host, ["/sys/bus/pci/devices/*/sriov_totalvfs"])
        dirs = sorted({p.rsplit("/", 1)[0] for p in total})
        more, merr = await read_tree(host, [f"{d}/{f}" for d in dirs for f in ("sriov_numvfs", "vendor", "device", "class")])
    except NotInSnapshot as exc:
        return ProbeOutput(name="sriov", source=source, error=str(exc), duration_s=time.monotonic() - t0)
    files = dict(total)
    files.update(more)
    errors.update(merr)
    return ProbeOutput(name="sriov", source=source, text=tree_text(files, errors), files=files, file_errors=errors,
                       duration_s=time.monotonic() - t0)


CPUIDLE = tree_probe("cpuidle", "CPU idle states (cpuidle sysfs: driver, governor, per-CPU state name/disable/latency)",
           f"{CPUIDLE_BASE}/current_driver", f"{CPUIDLE_BASE}/current_governor",
           f"{CPUIDLE_BASE}/current_governor_ro",
           "/sys/devices/system/cpu/cpu[0-9]*/cpuidle/state[0-9]*/name",
           "/sys/devices/system/cpu/cpu[0-9]*/cpuidle/state[0-9]*/disable",
           "/sys/devices/system/cpu/cpu[0-9]*/cpuidle/state[0-9]*/latency")
CPUFREQ = tree_probe("cpufreq", "CPU frequency policies (cpufreq sysfs: driver, governor, energy/performance preference)",
           "/sys/devices/system/cpu/cpufreq/policy[0-9]*/scaling_driver",
           "/sys/devices/system/cpu/cpufreq/policy[0-9]*/scaling_governor",
           "/sys/devices/system/cpu/cpufreq/policy[0-9]*/energy_performance_preference",
           "/sys/devices/system/cpu/intel_pstate/no_turbo", "/sys/devices/system/cpu/cpufreq/boost")
MOKUTIL_SB_STATE = command_probe("mokutil_sb_state", "Secure Boot state (mokutil --sb-state)", ["mokutil", "--sb-state"],
              timeout_s=15)
EFI_SECUREBOOT = binary_tree_probe("efi_secureboot", "Secure Boot and Setup Mode EFI variables (efivarfs)",
              SECUREBOOT_EFIVAR, SETUPMODE_EFIVAR)
EFI_FIRMWARE = glob_probe("efi_firmware", "UEFI boot (does /sys/firmware/efi exist)", "/sys/firmware/efi",
           "/sys/firmware/efi/efivars")
MODULE_SIGNING = tree_probe("module_signing", "Kernel module signature enforcement and lockdown",
           "/sys/module/module/parameters/sig_enforce", "/sys/kernel/security/lockdown")
SMBIOS_MEMORY = binary_tree_probe("smbios_memory", "Memory devices (SMBIOS type 17 raw entries)",
              "/sys/firmware/dmi/entries/17-*/raw")
DMI_TABLES = glob_probe("dmi_tables", "SMBIOS tables exposed by the firmware (/sys/firmware/dmi)", "/sys/firmware/dmi",
           "/sys/firmware/dmi/tables/DMI", "/sys/firmware/dmi/entries/17-*")
DMIDECODE_17 = command_probe("dmidecode_17", "Memory devices (dmidecode -t 17)", ["dmidecode", "-t", "17"], timeout_s=30)
SRIOV = Probe("sriov", "SR-IOV capable PCI functions (sysfs)", _collect_sriov)
TIMEDATECTL = command_probe("timedatectl", "Clock synchronisation (timedatectl show)",
              ["timedatectl", "show", "-p", "NTPSynchronized", "-p", "NTP"], timeout_s=15)
CHRONYC_TRACKING = command_probe("chronyc_tracking", "Clock synchronisation (chronyc tracking)", ["chronyc", "tracking"],
              timeout_s=15)
FSTAB = file_probe("fstab", "Filesystem table (/etc/fstab)", "/etc/fstab")
KERNEL_BUILD = glob_probe("kernel_build", "Kernel headers/build trees (/lib/modules/*/build)", "/lib/modules/*/build",
           "/lib/modules/*/build/Makefile")

# The BMC through IPMI (health.bmc; read by wizard/parsers/bmc.py). Without /dev/ipmi0 ipmitool fails at once; a BMC
# that does not answer must not stall the check, so each has a short limit.
BMC_TIMEOUT_S = 15.0
IPMITOOL_SEL = command_probe("ipmitool_sel", "BMC event log (ipmitool sel elist; 15 s limit)", ["ipmitool", "sel", "elist"],
                             timeout_s=BMC_TIMEOUT_S)
IPMITOOL_SDR = command_probe("ipmitool_sdr", "BMC sensors and their states (ipmitool sdr elist; 15 s limit)",
                             ["ipmitool", "sdr", "elist"], timeout_s=BMC_TIMEOUT_S)
IPMITOOL_SENSOR = command_probe("ipmitool_sensor", "BMC sensor thresholds (ipmitool sensor; 15 s limit)",
                                ["ipmitool", "sensor"], timeout_s=BMC_TIMEOUT_S)
SMBIOS_IPMI = glob_probe("smbios_ipmi", "Is a BMC declared: SMBIOS type 38 'IPMI Device Information' entries "
                         "(/sys/firmware/dmi/entries/38-*)", "/sys/firmware/dmi/entries", "/sys/firmware/dmi/entries/38-*",
                         "/dev/ipmi*")
"""Which SMBIOS structures the firmware exposes (the directory), whether one is of type 38 (DMTF SMBIOS DSP0134,
7.39: the IPMI Device Information structure a system with a BMC carries) and the IPMI device nodes: read without
root (the entries' names, not their raw bytes)."""


TIMEOUT_ERROR = "did not finish within"
"""How the error of a probe :func:`collect` stopped at its ``timeout_s`` begins."""


async def collect(host: Host, probes: Iterable[Probe], plan: Mapping[str, object] | None = None, *,
                  timeout_s: float | None = None, timeout_note: str = "") -> dict[str, ProbeOutput]:
    """Collect ``probes`` concurrently (each once, by name, all started together); returns name -> output.
    :data:`wizard.registry.PROBES` names every probe the engine knows.

    A probe that raises (a bug, not the machine's fault) still yields an output with the
    exception as its error, so one broken probe cannot hide the others' findings. With ``timeout_s`` (seconds), a
    probe not done that long after the start is cancelled (a command's process group is killed) and its output says
    so: ``rc`` 124, ``error`` "did not finish within N s" (:data:`TIMEOUT_ERROR`) and ``timeout_note`` in brackets.
    """
    import asyncio  # imported where used

    by_name = {p.name: p for p in probes}
    unique = list(by_name)

    async def one(n: str) -> ProbeOutput:
        probe = by_name[n]
        t0 = time.monotonic()
        try:
            coro = probe.collect(host, plan or {}) if probe.uses_plan else probe.collect(host)
            return await (coro if timeout_s is None else asyncio.wait_for(coro, timeout_s))
        except asyncio.TimeoutError:
            note = f" ({timeout_note})" if timeout_note else ""
            return ProbeOutput(name=n, source=probe.title, rc=124, duration_s=time.monotonic() - t0,
                               error=f"{TIMEOUT_ERROR} {timeout_s:g} s{note}")
        except Exception as exc:  # noqa: BLE001 - turned into an unknown finding downstream
            return ProbeOutput(name=n, source=probe.title, error=f"probe crashed: {exc!r}",
                               duration_s=time.monotonic() - t0)


    outs = await asyncio.gather(*(one(n) for n in unique))
    return dict(zip(unique, outs))


# --------------------------------------------------------------------------------------------
# The network fabric (InfiniBand / RoCE HCAs, their netdevs, NCCL's settings): read by wizard/parsers/fabric.py.

IB_PORT_FILES = ("state", "phys_state", "rate", "link_layer")
IB_DEVICE_FILES = ("fw_ver", "board_id", "hca_type", "node_desc", "node_type", "device/numa_node")
IB_GID_INDEXES = 16
"""GID table entries read per RoCE port (``ports/N/gids/0..15`` and ``gid_attrs/types/0..15``): the table has up to
several hundred entries, nearly all zero; RoCE's entries (one per address and RoCE version) sit at the start."""


async def _collect_ib(host: Host) -> ProbeOutput:
    """RDMA devices from sysfs (Documentation/ABI/stable/sysfs-class-infiniband): every port's state, physical
    state, rate and link layer; every device's firmware, board id, HCA type, node description and NUMA node; the PCI
    function of each (``/sys/bus/pci/devices/ADDR/infiniband/DEV``, listed) and its netdevs
    (``/sys/class/infiniband/DEV/device/net/NAME``, listed); the first :data:`IB_GID_INDEXES` GIDs and GID types of each
    Ethernet (RoCE) port. No /sys/class/infiniband at all: an empty output, not an error (a node without RDMA)."""
    import asyncio  # imported where used

    t0 = time.monotonic()
    base = "/sys/class/infiniband"
    source = f"{base}/*/ports/*/{{{','.join(IB_PORT_FILES)}}} {base}/*/{{{','.join(IB_DEVICE_FILES)}}} (+ GIDs, PCI, net)"
    try:
        files, errors = await read_tree(host, [f"{base}/*/ports/*/{f}" for f in IB_PORT_FILES]
                                        + [f"{base}/*/{f}" for f in IB_DEVICE_FILES])
        links = await asyncio.gather(host.glob(f"{base}/*/device/net/*"),
                                     host.glob("/sys/bus/pci/devices/*/infiniband/*"))
        roce = sorted(p.rsplit("/", 1)[0] for p, v in files.items()
                      if p.endswith("/link_layer") and v is not None and v.strip() == "Ethernet")
        if roce:
            more, merr = await read_tree(host, [f"{d}/{kind}/{i}" for d in roce for i in range(IB_GID_INDEXES)
                                                for kind in ("gids", "gid_attrs/types")])
            files.update(more)
            errors.update(merr)
    except NotInSnapshot as exc:
        return ProbeOutput(name="ib_sysfs", source=source, error=str(exc), duration_s=time.monotonic() - t0)
    listed = [p for group in links for p in group]
    text = tree_text(files, errors) + ("\n" + "\n".join(listed) if listed else "")
    files.update({p: "" for p in listed})
    return ProbeOutput(name="ib_sysfs", source=source, text=text.strip("\n"), files=files, file_errors=errors,
                       duration_s=time.monotonic() - t0)


IB_SYSFS = Probe("ib_sysfs", "InfiniBand/RoCE devices and ports (sysfs: state, rate, link layer, firmware, PCI, GIDs)",
                 _collect_ib)
NET_SYSFS = tree_probe("net_sysfs", "Network interfaces (sysfs: speed, MTU, operstate, type)",
                       *(f"/sys/class/net/*/{f}" for f in ("speed", "mtu", "operstate", "type")))
IBSTAT = command_probe("ibstat", "InfiniBand/RoCE ports (ibstat, infiniband-diags)", ["ibstat"], timeout_s=15)
IBV_DEVINFO = command_probe("ibv_devinfo", "RDMA devices and ports (ibv_devinfo, libibverbs)", ["ibv_devinfo"],
                            timeout_s=15)

NCCL_ENV_SH = (
    'echo "# environment"; '
    'if grep -qz . /proc/self/environ 2>/dev/null; then grep -az "^NCCL_" /proc/self/environ; '
    'echo "# end environment"; else echo "# environment not read: no /proc/self/environ or no grep -z"; fi; '
    'home="$HOME"; [ -n "${SUDO_USER:-}" ] && home=$(getent passwd "$SUDO_USER" | cut -d: -f6); '
    'for f in /etc/nccl.conf "${NCCL_CONF_FILE:-}" "$home/.nccl.conf"; do '
    '[ -n "$f" ] && [ -r "$f" ] && { echo "# file $f"; head -c 65536 "$f"; echo; }; done; true')
"""Prints the ``NCCL_*`` variables of the environment bringup runs in (no other variable: a capture bundle must not
carry the operator's secrets), read NUL-separated from the environment block (``grep -z`` over grep's own
``/proc/self/environ``, which it inherits from the shell: proc(5); GNU and BusyBox grep have ``-z``), each record
ending in a NUL byte and the list closed by ``# end environment``, so a newline inside another variable's value
cannot forge an ``NCCL_`` line and the NCCL configuration files NCCL reads (``/etc/nccl.conf``, ``$NCCL_CONF_FILE``
since NCCL 2.23, ``~/.nccl.conf`` of the invoking user, ``$SUDO_USER``'s under sudo), each under a ``# file PATH``
line (NCCL environment variables documentation, https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html)."""
NCCL_ENV = command_probe("nccl_env", "NCCL settings: NCCL_* environment and /etc/nccl.conf, ~/.nccl.conf",
                         ["sh", "-c", NCCL_ENV_SH], timeout_s=10)
