"""Parsers for GPU presence and the driver: sysfs PCI functions, ``nvidia-smi -L``, the NVML
probe's JSON and ``/proc/driver/nvidia/version``. Never raise on garbage."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from wizard.common import to_int, sat_int
from wizard.probes import NVIDIA_VENDOR, ProbeOutput
from wizard.parsers._frozen import build_set as _set

GPU_CLASS_PREFIXES = ("0x0300", "0x0302")
"""PCI class codes of display controllers: 0x0300 VGA-compatible, 0x0302 3D controller
(PCI Code and ID Assignment Specification, base class 03h). Data-center GPUs enumerate as 3D
controllers, consumer cards as VGA."""

BRIDGE_CLASS_PREFIX = "0x0680"
"""PCI class 0x0680 "other bridge": what NVSwitch enumerates as (e.g. 10de:22a3 on HGX H100/H200;
PCI Code and ID Assignment Specification base class 06h)."""


@dataclass(frozen=True)
class PciFunction:
    """One NVIDIA PCI function from sysfs. Link speeds are strings as sysfs prints them
    ("16.0 GT/s PCIe"); widths are lane counts."""

    bdf: str
    device_id: str = ""
    class_code: str = ""
    subsystem: str = ""
    numa_node: int | None = None
    current_link_speed: str = ""
    current_link_width: int | None = None
    max_link_speed: str = ""
    max_link_width: int | None = None
    driver: str = ""
    aer: dict[str, dict[str, int]] = field(default_factory=dict)  # "fatal"/"nonfatal"/"correctable" -> counter -> n
    aer_lines: dict[str, list[str]] = field(default_factory=dict)
    evidence: list[str] = field(default_factory=list)

    @property
    def is_gpu(self) -> bool:
        return self.class_code.lower().startswith(GPU_CLASS_PREFIXES)

    @property
    def is_bridge(self) -> bool:
        return self.class_code.lower().startswith(BRIDGE_CLASS_PREFIX)

    @property
    def pci_id(self) -> str:
        return f"10de:{self.device_id.lower().removeprefix('0x')}" if self.device_id else "10de:?"


@dataclass(frozen=True)
class PciFacts:
    functions: list[PciFunction] = field(default_factory=list)
    devices_seen: int = 0  # PCI functions listed in sysfs
    vendors_read: int = 0  # of which the vendor file could be read
    problems: list[str] = field(default_factory=list)

    @property
    def gpus(self) -> list[PciFunction]:
        return [f for f in self.functions if f.is_gpu]

    @property
    def bridges(self) -> list[PciFunction]:
        return [f for f in self.functions if f.is_bridge]


def parse_pci(out: ProbeOutput) -> PciFacts:
    """The ``pci`` probe's sysfs tree -> NVIDIA functions with class, link and driver binding."""
    facts = PciFacts()
    files = out.files
    by_bdf: dict[str, PciFunction] = {}
    for path, content in files.items():
        m = re.fullmatch(r"/sys/bus/pci/devices/([^/]+)/vendor", path)
        if not m:
            continue
        _set(facts, "devices_seen", facts.devices_seen + 1)
        if content is None:
            continue
        _set(facts, "vendors_read", facts.vendors_read + 1)
        if content.strip().lower() == NVIDIA_VENDOR:
            by_bdf[m.group(1)] = PciFunction(bdf=m.group(1), evidence=[f"{path}:{content.strip()}"])
    for path, content in files.items():
        m = re.fullmatch(r"/sys/bus/pci/devices/([^/]+)/([a-z_]+)", path)
        if m and m.group(1) in by_bdf and m.group(2) != "vendor":
            fn = by_bdf[m.group(1)]
            name = m.group(2)
            if content is None:
                continue
            v = content.strip()
            if name == "device":
                _set(fn, "device_id", v)
            elif name == "class":
                _set(fn, "class_code", v)
            elif name == "subsystem_vendor":
                _set(fn, "subsystem", v + (":" + fn.subsystem if fn.subsystem else ""))
            elif name == "subsystem_device":
                _set(fn, "subsystem", (fn.subsystem + ":" if fn.subsystem else "") + v)
            elif name == "numa_node":
                _set(fn, "numa_node", to_int(v))
            elif name == "current_link_speed":
                _set(fn, "current_link_speed", v)
            elif name == "current_link_width":
                _set(fn, "current_link_width", to_int(v))
            elif name == "max_link_speed":
                _set(fn, "max_link_speed", v)
            elif name == "max_link_width":
                _set(fn, "max_link_width", to_int(v))
            elif name.startswith("aer_dev_"):
                sev = name[len("aer_dev_"):]
                counters: dict[str, int] = {}
                for line in content.splitlines():
                    parts = line.split()
                    if len(parts) == 2 and re.fullmatch(r"\d{1,19}", parts[1]):
                        counters[parts[0]] = sat_int(parts[1])
                fn.aer[sev] = counters
                fn.aer_lines[sev] = [f"{path}:{line}" for line in content.splitlines() if line.strip()]
            if name in ("device", "class"):
                fn.evidence.append(f"{path}:{v}")
            continue
        m = re.fullmatch(r"/sys/bus/pci/drivers/([^/]+)/([^/]+)", path)
        if m and m.group(2) in by_bdf:
            _set(by_bdf[m.group(2)], "driver", m.group(1))
            by_bdf[m.group(2)].evidence.append(path)
    _set(facts, "functions", sorted(by_bdf.values(), key=lambda f: f.bdf))
    return facts


# ------------------------------------------------------------------ nvidia-smi -L


@dataclass(frozen=True)
class SmiList:
    """``nvidia-smi -L``: GPU lines, or the driver's error text."""

    gpus: list[tuple[int, str, str]] = field(default_factory=list)  # (index, name, uuid)
    error_kind: str = ""  # "", "no_driver", "no_devices", "gpu_unreachable", "other"
    error_lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    mig: list[tuple[int, str, str]] = field(default_factory=list)  # (parent GPU index, profile "1g.10gb", uuid)
    unreachable: list[str] = field(default_factory=list)  # bus ids ("0000:04:00.0") or "GPU3" it could not open
    lines: list[str] = field(default_factory=list)  # the GPU, MIG and error lines as printed


_SMI_ERRORS = (
    (re.compile(r"couldn't communicate with the NVIDIA driver|NVIDIA driver is not loaded|"
                r"Driver/library version mismatch|Failed to initialize NVML", re.I), "no_driver"),
    (re.compile(r"No devices were found", re.I), "no_devices"),
    # one GPU stopped answering (e.g. Xid 79, fallen off the bus) while the others are listed:
    # "Unable to determine the device handle for GPU3: 0000:04:00.0: Unknown Error"
    (re.compile(r"Unable to determine the device handle for", re.I), "gpu_unreachable"),
)


_L_GPU_RE = re.compile(r"GPU (\d{1,9}): (.*?)(?: \(UUID: ([^)]*)\))?$")
_L_MIG_RE = re.compile(r"MIG\s+(\S+)\s+Device\s+\d+:\s*(?:\(UUID:\s*([^)]*)\))?")
_L_BUS_RE = re.compile(r"(?<![0-9A-Fa-f])((?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])")
_L_COMMAND_RE = re.compile(r"^(?:\S*[$#>%]\s*)?(?:sudo\s+)?nvidia-smi\s+(?:-L|--list-gpus)\b|^[$#]$"
                           r"|^(?:\S*[$#>%]\s*)?(?:srun|docker|podman|singularity|apptainer|enroot|kubectl)\b.*\bnvidia-smi\s+"
                           r"(?:-L|--list-gpus)\s*$")
"""The command itself, typed alone or at the end of a launcher's command line (``srun -G8 --container-image=...
nvidia-smi -L``)."""
"""The command line itself or a bare prompt in a paste (``$ nvidia-smi -L``, ``# nvidia-smi -L``, ``$``)."""


def parse_nvidia_smi_l(text: str) -> SmiList:
    """``nvidia-smi -L`` (``--list-gpus``): one ``GPU N: <name> (UUID: GPU-...)`` line per GPU, ``MIG <profile>
    Device N: (UUID: MIG-...)`` lines under a GPU in MIG mode, or nvidia-smi's error lines (a GPU it cannot
    open: "Unable to determine the device handle for GPU3: 0000:04:00.0: Unknown Error")."""
    r = SmiList()
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        m = _L_GPU_RE.match(s)
        if m:
            r.gpus.append((sat_int(m.group(1)), m.group(2).strip(), m.group(3) or ""))
            r.lines.append(s)
            continue
        if re.match(r"\s*(MIG|Link)\b", s):  # MIG device lines under a GPU
            mm = _L_MIG_RE.match(s)
            if mm and r.gpus:
                r.mig.append((r.gpus[-1][0], mm.group(1), mm.group(2) or ""))
                r.lines.append(s)
            continue
        for rx, kind in _SMI_ERRORS:
            if rx.search(s):
                _set(r, "error_kind", r.error_kind or kind)
                r.error_lines.append(s)
                r.lines.append(s)
                if kind == "gpu_unreachable":
                    b = _L_BUS_RE.search(s)
                    g = re.search(r"for GPU\s*(\d{1,3})\b(?!:[0-9A-Fa-f]{2}:)", s, re.I)
                    r.unreachable.append(b.group(1) if b else f"GPU{g.group(1)}" if g else s)
                break
        else:
            if not _L_COMMAND_RE.match(s):
                r.problems.append(line)
    if r.problems and not r.gpus and not r.error_kind:
        _set(r, "error_kind", "other")
    return r



def detect_smi_list(text: str) -> float:
    """0.95 for ``nvidia-smi -L``: at least one ``GPU N: <name> (UUID: GPU-...)`` line and nearly every other
    line a MIG device line, one of nvidia-smi's error lines or the command itself. The UUID is what tells it
    from other "GPU 0: <name>" prints (torch's collect_env lists names without one)."""
    lines = [ln.strip() for ln in text.splitlines()[:2000] if ln.strip()]
    if not lines:
        return 0.0
    gpus = sum(1 for ln in lines if _L_GPU_RE.match(ln) and "(UUID: GPU-" in ln)
    if not gpus:
        return 0.0
    known = sum(1 for ln in lines if _L_GPU_RE.match(ln) or _L_MIG_RE.match(ln) or _L_COMMAND_RE.match(ln)
                or any(rx.search(ln) for rx, _ in _SMI_ERRORS))
    if known >= 0.8 * len(lines):
        return 0.95
    # run through a launcher, which adds a few lines of its own (srun's cpu-bind, pyxis importing the image)
    launched = any(_L_COMMAND_RE.match(ln) for ln in lines)  # the paste shows nvidia-smi -L was what ran
    return 0.9 if launched and gpus >= 2 and known >= 0.6 * len(lines) else 0.0

# ------------------------------------------------------------------ NVML probe JSON


@dataclass(frozen=True)
class NvmlFacts:
    init: str = ""
    error: str = ""
    driver_version: str = ""
    cuda_driver_version: int | None = None
    count: int | None = None
    gpus: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def cuda_version_str(self) -> str:
        """``cuda_driver_version`` 12040 -> "12.4" (NVML encodes 1000*major + 10*minor)."""
        v = self.cuda_driver_version
        if not v:
            return ""
        return f"{v // 1000}.{(v % 1000) // 10}"


def parse_nvml(text: str) -> NvmlFacts:
    f = NvmlFacts()
    try:
        d = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: deeply nested garbage
        f.problems.append(text.strip()[:500] or "(empty output)")
        return f
    if not isinstance(d, dict):
        f.problems.append(text.strip()[:500])
        return f
    cv = d.get("cuda_driver_version")
    c = d.get("count")
    gpus = d.get("gpus") or []
    f = replace(f, init=str(d.get("init", "")), error=str(d.get("error", "")),
                driver_version=str(d.get("driver_version", "") or ""),
                cuda_driver_version=cv if isinstance(cv, int) else None, count=c if isinstance(c, int) else None,
                gpus=[g for g in gpus if isinstance(g, dict)] if isinstance(gpus, list) else [])
    if not f.init:
        f.problems.append(text.strip()[:500])
    return f


# ------------------------------------------------------------------ /proc/driver/nvidia/version


@dataclass(frozen=True)
class DriverVersion:
    """``/proc/driver/nvidia/version``: version and flavour ("open" or "proprietary")."""

    version: str = ""
    flavour: str = ""
    line: str = ""
    gcc_line: str = ""


def parse_driver_version(text: str) -> DriverVersion:
    """Handles both the open ("NVIDIA UNIX Open Kernel Module for x86_64  565.57.01 ...") and
    the proprietary ("NVIDIA UNIX x86_64 Kernel Module  535.104.05 ...") formats."""
    d = DriverVersion()
    for line in text.splitlines():
        if line.startswith("NVRM version:"):
            _set(d, "line", line.strip())
            m = re.search(r"\s(\d{3,}\.\d+(?:\.\d+)?)\s", line + " ")
            if m:
                _set(d, "version", m.group(1))
            _set(d, "flavour", "open" if "Open Kernel Module" in line else "proprietary")
        elif line.startswith("GCC version:"):
            _set(d, "gcc_line", line.strip())
    return d
