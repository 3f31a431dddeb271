"""Parsers for GPU presence and the driver: sysfs PCI functions, ``nvidia-smi -L``, the NVML
probe's JSON and ``/proc/driver/nvidia/version``. Never raise on garbage."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from wizard.common import normalise_bus_id, sat_int, to_int
from wizard.probes import NVIDIA_VENDOR, ProbeOutput
from wizard.parsers._frozen import build_set as _set
from wizard.common import lazy_re

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
    (lazy_re(r"couldn't communicate with the NVIDIA driver|NVIDIA driver is not loaded|"
                r"Driver/library version mismatch|Failed to initialize NVML", re.I), "no_driver"),
    (lazy_re(r"No devices were found", re.I), "no_devices"),
    # one GPU stopped answering (e.g. Xid 79, fallen off the bus) while the others are listed:
    # "Unable to determine the device handle for GPU3: 0000:04:00.0: Unknown Error"
    (lazy_re(r"Unable to determine the device handle for", re.I), "gpu_unreachable"),
)


_L_GPU_RE = lazy_re(r"GPU (\d{1,9}): (.*?)(?: \(UUID: ([^)]*)\))?$")
_L_MIG_RE = lazy_re(r"MIG\s+(\S+)\s+Device\s+\d+:\s*(?:\(UUID:\s*([^)]*)\))?")
_L_BUS_RE = lazy_re(r"(?<![0-9A-Fa-f])((?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])")
_L_COMMAND_RE = lazy_re(r"^(?:\S*[$#>%]\s*)?(?:sudo\s+)?nvidia-smi\s+(?:-L|--list-gpus)\b|^[$#]$"
                           r"|^(?:\S*[$#>%]\s*)?(?:srun|docker|podman|singularity|apptainer|enroot|kubectl)\b.*\bnvidia-smi\s+"
                           r"(?:-L|--list-gpus)\s*$")
"""The command itself, typed alone or at the end of a launcher's command line (``srun -G8 --container-image=...
nvidia-smi -L``)."""
"""The command line itself or a bare prompt in a paste (``$ nvidia-smi -L``, ``# nvidia-smi -L``, ``$``)."""


_DATE_LINE = lazy_re(r"^[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d(?: [A-Z]{2,5})? \d{4}$")
"""date(1)'s default output, printed between listings by a loop (``while true; do date; nvidia-smi -L; ...``: held-out
round 292): not a line of the listing, and not an error."""


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
            if (m.group(3) and len(m.group(3)) > 12
                    and any(g[2] == m.group(3) and g[0] == sat_int(m.group(1)) for g in r.gpus)):
                # one GPU listed again (the same UUID): two listings pasted together, as two containers sharing a
                # GPU print it (held-out round 223: a DRA pod's two containers); one GPU, counted once
                r.lines.append(s)
                continue
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
            if not _L_COMMAND_RE.match(s) and not _DATE_LINE.match(s):
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
                or _DATE_LINE.match(ln) or any(rx.search(ln) for rx, _ in _SMI_ERRORS))
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
    for raw in text.splitlines():
        line = raw.strip()  # a paste may indent the file's lines (held-out round 301)
        if line.startswith("NVRM version:"):
            _set(d, "line", line.strip())
            m = re.search(r"\s(\d{3,}\.\d+(?:\.\d+)?)\s", line + " ")
            if m:
                _set(d, "version", m.group(1))
            _set(d, "flavour", "open" if "Open Kernel Module" in line else "proprietary")
        elif line.startswith("GCC version:"):
            _set(d, "gcc_line", line.strip())
    return d


# ------------------------------------------------------------------ /proc/driver/nvidia/gpus/<bus id>/information

_INFO_KEYS = {
    "model": "model", "irq": "irq", "gpu uuid": "uuid", "video bios": "vbios", "bus type": "bus_type",
    "card type": "bus_type", "dma size": "dma_size", "dma mask": "dma_mask", "bus location": "bus",
    "device minor": "minor", "gpu firmware": "firmware", "gsp firmware": "firmware", "gpu excluded": "excluded",
    "blacklisted": "excluded",
}
"""The fields the driver writes to each GPU's information file (open-gpu-kernel-modules, kernel-open/nvidia/
nv-procfs.c, nv_procfs_read_gpu_info: "Model: \\t\\t %s", ..., "GPU Firmware: \\t %s" only while the GPU runs GSP
firmware, "GPU Excluded:\\t Yes|No"), and the older names of two of them ("Card Type" in /proc/driver/nvidia/cards/N,
"Blacklisted" before the driver renamed its exclusion list), by the name this parser stores them under."""
_INFO_LINE = lazy_re(r"^[ \t]*(Model|IRQ|GPU UUID|Video BIOS|Bus Type|Card Type|DMA Size|DMA Mask|Bus Location|"
                        r"Device Minor|GPU Firmware|GSP Firmware|GPU Excluded|Blacklisted):(.*)$", re.I)
_INFO_PATH = lazy_re(r"/proc/driver/nvidia/gpus/((?:[0-9a-fA-F]{4,8}\\?:)?[0-9a-fA-F]{2}\\?:[0-9a-fA-F]{2}\.[0-7])"
                        r"/information")
_INFO_DISTINCT = ("video bios", "dma mask", "dma size", "gpu excluded", "gpu firmware", "blacklisted", "card type",
                  "irq", "bus type")
"""Field names no other output bringup reads writes as ``Name:`` at the start of a line (``nvidia-smi -q`` writes
"VBIOS Version", "Minor Number", "Bus Id" and pads the name before its colon; ``nvidia-container-cli info`` shares
"Model", "GPU UUID", "Bus Location" and "Device Minor" with this file, and writes "Device Index" in each GPU's block)."""


@dataclass(frozen=True)
class GpuInformation:
    """One GPU's ``/proc/driver/nvidia/gpus/<bus id>/information``, values as the driver wrote them (strings,
    "??.??.??.??.??" kept), ``excluded`` ``None`` when the file has no exclusion line (drivers before it)."""

    bus: str = ""  # Bus Location, else the bus id of the file's path, sysfs form ("0000:62:00.0")
    path: str = ""  # the file's path when the paste names it (cat / head / grep -H)
    model: str = ""
    irq: str = ""
    uuid: str = ""
    vbios: str = ""
    bus_type: str = ""
    dma_size_bits: int | None = None
    dma_mask: str = ""
    minor: int | None = None
    firmware: str = ""
    excluded: bool | None = None
    lines: list[str] = field(default_factory=list)  # the block's raw lines
    fields: dict[str, str] = field(default_factory=dict)  # stored name -> the raw line it came from

    @property
    def initialised(self) -> bool:
        """False when the driver wrote placeholders: "??.??.??.??.??" for the Video BIOS or a UUID of "?" (the
        driver has not brought the GPU up: no client holds it with persistence off, or its initialisation failed)."""
        return "?" not in self.vbios and "?" not in self.uuid


@dataclass(frozen=True)
class GpuInformationFiles:
    """Every GPU information block of a paste (in order; a bus read twice keeps its last block), the loaded
    module's ``/proc/driver/nvidia/version`` when the paste holds it too, and what could not be read."""

    gpus: list[GpuInformation] = field(default_factory=list)
    driver: DriverVersion = field(default_factory=DriverVersion)
    problems: list[str] = field(default_factory=list)


def detect_gpu_information(text: str) -> float:
    """1.0 for one or more ``/proc/driver/nvidia/gpus/<bus>/information`` blocks (three of its field names at line
    starts, one of them a name only this file writes), with or without ``/proc/driver/nvidia/version`` in the same
    paste (``head`` of both files: this kind reads both); 0.9 for two fields under a line naming the file; 0 for
    ``nvidia-container-cli info`` (its GPU blocks share four field names with this file)."""
    if not isinstance(text, str) or ":" not in text:
        return 0.0
    head = text[:32768]
    low = head.lower()
    if not any(n in low for n in _INFO_DISTINCT) and not _INFO_PATH.search(head):  # cheap first
        return 0.0
    if re.search(r"^[ \t]*Device Index:", head, re.M):  # nvidia-container-cli info's GPU block
        return 0.0
    names = {m.group(1).lower() for m in (_INFO_LINE.match(ln) for ln in _unprefixed(head.splitlines())) if m}
    if len(names) >= 3 and names & set(_INFO_DISTINCT):
        return 1.0
    if len(names) >= 2 and _INFO_PATH.search(head):
        return 0.9
    return 0.0


def _unprefixed(lines: list[str]) -> list[str]:
    """``grep -H . /proc/driver/nvidia/gpus/*/information`` puts the path and a colon before every line: dropped."""
    out: list[str] = []
    for ln in lines:
        m = _INFO_PATH.search(ln)
        if m and ln[m.end():m.end() + 1] == ":" and _INFO_LINE.match(ln[m.end() + 1:]):
            ln = ln[m.end() + 1:]
        out.append(ln)
    return out


def _bus_of_path(raw: str) -> str:
    return normalise_bus_id(raw.replace("\\", ""))


def parse_gpu_information(text: str) -> GpuInformationFiles:
    """Read one or several GPU information files as pasted: bare, after a ``cat`` line, under ``==> path <==``
    headers (``head``/``tail`` of several files), or with ``grep -H``'s path prefix on each line. A block starts at
    a line naming the file or at a ``Model:`` line when the current block has one already. The
    ``/proc/driver/nvidia/version`` lines of a combined paste are read as :func:`parse_driver_version` reads them.
    Never raises; numbers are read with :func:`wizard.common.sat_int`."""
    if not isinstance(text, str):
        return GpuInformationFiles(problems=["not text"])
    blocks: list[dict[str, object]] = []
    cur: dict[str, object] | None = None
    for raw in text.splitlines():
        path_bus, path = "", ""
        m = _INFO_PATH.search(raw)
        ln = raw
        if m:
            path_bus, path = _bus_of_path(m.group(1)), m.group(0).replace("\\", "")
            rest = raw[m.end():]
            if rest.startswith(":") and _INFO_LINE.match(rest[1:]):  # grep -H: the path prefixes a field line
                ln = rest[1:]
                if cur is None or cur.get("path_bus") != path_bus:
                    cur = {"path_bus": path_bus, "path": path, "fields": {}, "lines": []}
                    blocks.append(cur)
            else:  # a header or command line naming the next file
                cur = {"path_bus": path_bus, "path": path, "fields": {}, "lines": []}
                blocks.append(cur)
                continue
        f = _INFO_LINE.match(ln)
        if not f:
            continue
        name = _INFO_KEYS[f.group(1).lower()]
        if cur is None or (name == "model" and "model" in cur["fields"]):  # type: ignore[operator]
            cur = {"path_bus": "", "path": "", "fields": {}, "lines": []}
            blocks.append(cur)
        fields = cur["fields"]
        assert isinstance(fields, dict)
        fields.setdefault(name, (f.group(2).strip(), ln.strip()))
        lines = cur["lines"]
        assert isinstance(lines, list)
        lines.append(raw.rstrip())
    gpus: dict[str, GpuInformation] = {}
    problems: list[str] = []
    for i, b in enumerate(blocks):
        fields = b["fields"]
        assert isinstance(fields, dict)
        if not fields:
            continue
        v = {k: val for k, (val, _) in fields.items()}
        bus = _bus_of_path(v["bus"]) if re.fullmatch(r"(?:[0-9a-fA-F]{4,8}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]",
                                                     v.get("bus", "")) else str(b["path_bus"])
        dma = re.match(r"(\d+)\s*bits", v.get("dma_size", ""))
        minor = re.fullmatch(r"\d+", v.get("minor", ""))
        exc = v.get("excluded", "").lower()
        g = GpuInformation(bus=bus, path=str(b["path"]), model=v.get("model", ""), irq=v.get("irq", ""),
                           uuid=v.get("uuid", ""), vbios=v.get("vbios", ""), bus_type=v.get("bus_type", ""),
                           dma_size_bits=sat_int(dma.group(1)) if dma else None, dma_mask=v.get("dma_mask", ""),
                           minor=sat_int(minor.group(0)) if minor else None, firmware=v.get("firmware", ""),
                           excluded=True if exc == "yes" else (False if exc == "no" else None),
                           lines=list(b["lines"]),  # type: ignore[call-overload]
                           fields={k: line for k, (_, line) in fields.items()})
        if exc and exc not in ("yes", "no"):
            problems.append(f"unreadable exclusion line: {fields['excluded'][1]}")
        gpus[bus or f"#{i}"] = g  # a bus read twice: the later block is the state after
    return GpuInformationFiles(list(gpus.values()), parse_driver_version(text), problems)
