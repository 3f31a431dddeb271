"""The nvidia-smi family: one per-GPU model read from every format nvidia-smi (and NVML) prints.

Formats (each parser: raw text -> :class:`SmiDoc`; none of them raises):

* ``nvidia-smi -q -x`` (XML, DTD v11/v12/v13): :func:`parse_smi_xml`. Parsed with
  :mod:`xml.etree.ElementTree` after refusing any ``<!ENTITY`` declaration and dropping the
  DOCTYPE; a document cut short (a paste) is closed and read as far as it goes.
* ``nvidia-smi -q`` text, also ``-q -d SECTION`` and pastes of one section:
  :func:`parse_smi_text`. Handles the older "Clocks Throttle Reasons" and the 535+/590 "Clocks
  Event Reasons" and T.Limit temperature layouts.
* the default ``nvidia-smi`` table, its processes and MIG tables, ``ERR!`` cells and the
  driver's error messages: :func:`parse_smi_table`.
* ``nvidia-smi --query-gpu=... --format=csv`` with its header line (``[N/A]``/``N/A`` =
  missing; units in headers and values): :func:`parse_smi_csv`.
* the NVML probe's JSON (:mod:`wizard.nvml_probe`): :func:`parse_nvml_smi`.

Every GPU becomes a :class:`GpuFacts` whose fields are keyed by NVIDIA's own
``--query-gpu`` property names (``ecc.mode.current``, ``pcie.link.width.current``,
``clocks_event_reasons.hw_power_brake_slowdown`` ...; ``nvidia-smi --help-query-gpu``), plus a
few nvidia-smi prints only in ``-q`` (temperature thresholds, replay counter, reset status).
Each value keeps the raw line it came from, so findings can quote it as evidence.

The ``nvidia_smi_qx`` probe is registered at the end of this module; the ``explain`` kinds live in
:mod:`wizard.parsers.smi_kinds`, the rules in :mod:`wizard.rules.smi`.
"""

from __future__ import annotations

from wizard.i18n import Msg

import csv
import json
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping
from wizard.parsers._frozen import build_set as _set
from wizard.common import sat_int
from wizard.common import lazy_re


# ------------------------------------------------------------------ model


@dataclass(frozen=True)
class Reading:
    """One value as nvidia-smi printed it (``raw``) and the input line it came from (``line``,
    stripped of indentation; for a CSV cell, ``header: value``)."""

    raw: str
    line: str


@dataclass(frozen=True)
class GpuProcess:
    """A process on a GPU. ``type``: C compute, G graphics, C+G both, M/M+C MPS (nvidia-smi
    man page). ``used_mib``: GPU memory in MiB, ``None`` when not reported."""

    pid: str
    type: str = ""
    name: str = ""
    used_mib: float | None = None
    lines: list[str] = field(default_factory=list)

    @property
    def compute(self) -> bool:
        return "C" in self.type.upper()


NA_VALUES = frozenset({"", "n/a", "[n/a]", "na", "not supported", "[not supported]", "not available",
                       "requested functionality has been deprecated",
                       "[requested functionality has been deprecated]", "unknown error", "[unknown error]",
                       "insufficient permissions", "[insufficient permissions]"})
"""Values nvidia-smi prints for a field it cannot read (man page: "N/A" = not available /
not supported); they count as missing, never as zero."""

ERR_RE = lazy_re(r"ERR!|GPU is lost|Unable to determine the device handle|GPU requires reset", re.I)
"""nvidia-smi's markers for a GPU that stopped answering: ``ERR!`` in the table, "GPU is lost"
(NVML_ERROR_GPU_IS_LOST) and "[GPU requires reset]" (NVML_ERROR_RESET_REQUIRED) in the query formats."""

_TRUE = frozenset({"enabled", "active", "yes", "on", "true"})
_FALSE = frozenset({"disabled", "not active", "no", "off", "false"})
_NUM_RE = lazy_re(r"^\s*\[?\s*([-+]?\d+(?:\.\d+)?)")


def is_na(raw: str | None) -> bool:
    return raw is None or raw.strip().lower() in NA_VALUES


def to_number(raw: str | None) -> float | None:
    """Leading number of a value ("16x" -> 16, "67.74 W" -> 67.74, "-2 C" -> -2, "0x1F" -> 31)."""
    if raw is None or is_na(raw):
        return None
    s = raw.strip()
    if re.fullmatch(r"0[xX][0-9a-fA-F]{1,16}", s):
        return float(int(s, 16))
    m = _NUM_RE.match(s)
    if not m or len(m.group(1)) > 30:
        return None
    return float(m.group(1))


def to_flag(raw: str | None) -> bool | None:
    """Enabled/Active/Yes/On -> True; Disabled/Not Active/No/Off -> False; anything else None."""
    if raw is None:
        return None
    s = raw.strip().strip("[]").lower()
    return True if s in _TRUE else False if s in _FALSE else None


@dataclass(frozen=True)
class GpuFacts:
    """What one source says about one GPU. ``fields``: canonical key -> :class:`Reading`.

    :meth:`num` returns the number in the unit nvidia-smi prints for that key: degrees C for
    ``temperature.*`` (``*.tlimit`` keys are degrees relative to T.Limit, negative = past it),
    W for ``power.*``, MiB for ``memory.*``, percent for ``utilization.gpu``, lanes for
    ``pcie.link.width.*``, the PCIe generation number for ``pcie.link.gen.*``, counts for
    ``ecc.errors.*``, ``remapped_rows.*`` (banks for ``.histogram.*``) and ``pcie.replay_counter``.

    ``index`` is nvidia-smi's GPU index where the format prints it (table, CSV, NVML); the
    ``-q`` formats list GPUs in index order, so their position is used. ``bus_id`` is as
    printed ("00000000:19:00.0"). ``errors``: raw lines that show the GPU did not answer.
    ``sections``: the top-level labels of its ``nvidia-smi -q`` text block, lower case, in the
    order printed ("product name", ..., "ecc errors", "remapped rows", ..., "processes");
    ``last_line``: the last line of that block (both empty for other formats).
    """

    index: int | None = None
    bus_id: str = ""
    fields: dict[str, Reading] = field(default_factory=dict)
    processes: list[GpuProcess] = field(default_factory=list)
    processes_read: bool = False
    mig_devices: int = 0
    header: str = ""
    errors: list[str] = field(default_factory=list)
    implicit: bool = False
    sections: list[str] = field(default_factory=list)
    last_line: str = ""

    def get(self, key: str) -> Reading | None:
        return self.fields.get(key)

    def set(self, key: str, raw: str, line: str) -> None:
        """Record ``key`` unless already set (the first occurrence wins)."""
        if key not in self.fields:
            self.fields[key] = Reading(raw.strip(), line.strip())

    def text(self, key: str) -> str | None:
        r = self.fields.get(key)
        return None if r is None or is_na(r.raw) else r.raw.strip()

    def num(self, key: str) -> float | None:
        r = self.fields.get(key)
        return None if r is None else to_number(r.raw)

    def flag(self, key: str) -> bool | None:
        r = self.fields.get(key)
        return None if r is None else to_flag(r.raw)

    def line(self, key: str) -> str:
        r = self.fields.get(key)
        return r.line if r else ""

    def lines(self, *keys: str) -> list[str]:
        return [self.fields[k].line for k in keys if k in self.fields]

    @property
    def name(self) -> str:
        return self.text("name") or ""

    @property
    def fan_speed_pct(self) -> float | None:
        """The fan's intended speed in percent of its maximum (``Fan Speed`` in ``-q``, ``fan_speed`` in
        the XML; NVML nvmlDeviceGetFanSpeed, which may read above 100). ``None`` where the GPU has no fan
        of its own (``N/A``: passively cooled boards such as SXM modules) or the output does not show it."""
        return self.num("fan.speed")

    @property
    def serial(self) -> str:
        return self.text("serial") or ""


@dataclass(frozen=True)
class SmiDoc:
    """One nvidia-smi output, read.

    Attributes:
        fmt: "xml", "text", "table", "csv" or "nvml".
        command: the command that prints this format (for evidence and remedies).
        gpus: the GPUs it lists, in order.
        driver_version, cuda_version: header values ("CUDA Version" is the newest CUDA the
            *driver* supports, not the toolkit: nvidia-smi man page).
        attached: the "Attached GPUs" header (XML/-q) or the ``count`` CSV column.
        complete: the output is provably whole (a closed XML document, the NVML probe, a CSV,
            a table that reached its Processes section), so GPUs it does not list are missing
            rather than cut from a paste.
        truncated: the input was cut (an XML document that does not close).
        error_kind: "" | "no_driver" | "no_devices" | "gpu_unreachable" | "refused" | "nvml".
        error_lines: the raw lines of that error.
        problems: raw lines that could not be read (for an ``unknown`` finding).
    """

    fmt: str
    command: str
    gpus: list[GpuFacts] = field(default_factory=list)
    driver_version: Reading | None = None
    cuda_version: Reading | None = None
    attached: Reading | None = None
    complete: bool = False
    truncated: bool = False
    error_kind: str = ""
    error_lines: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    inforom_corrupt: list[str] = field(default_factory=list)  # "WARNING: infoROM is corrupted at gpu 0008:00:00.0"
    no_mig_devices: str = ""  # the MIG devices table's "No MIG devices found" row (MIG on, no instance created)

    @property
    def attached_count(self) -> int | None:
        n = to_number(self.attached.raw) if self.attached else None
        return sat_int(n) if n is not None and 0 <= n < 100000 else None


# ------------------------------------------------------------------ errors printed instead of output

SMI_ERRORS = (
    (lazy_re(r"couldn't communicate with the NVIDIA driver|NVIDIA driver is not loaded|"
                r"Driver/library version mismatch|Failed to initialize NVML|"
                r"couldn't find libnvidia-ml\.so|NVML library version mismatch", re.I), "no_driver"),
    (lazy_re(r"No devices were found", re.I), "no_devices"),
    (lazy_re(r"Unable to determine the device handle for|GPU is lost", re.I), "gpu_unreachable"),
)
UNREACHABLE_RE = lazy_re(r"Unable to determine the device handle for GPU\s*(?P<bus>(?:[0-9A-Fa-f]{4,8}:)?"
                            r"[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*:?\s*(?P<reason>.*)$", re.I)
"""nvidia-smi's line for a GPU it lists but cannot open: "Unable to determine the device handle for
GPU 0000:0B:00.0: Unknown Error" (older drivers print no space: "for GPU0000:07:00.0"); the
reason is NVML's error string ("Unknown Error", "GPU is lost. Reboot the system to recover this
GPU" = NVML_ERROR_GPU_IS_LOST). Seen in xxd3vin/workspace#19, pdbear/syno_nvidia_gpu_driver#22,
JosephKJ/OWOD#81."""


def unreachable_gpus(lines: Iterable[str]) -> list[tuple[str, str, str]]:
    """(bus id as printed, reason, the line) for each "Unable to determine the device handle for
    GPU <bus>: <reason>" line."""
    out = []
    for line in lines:
        m = UNREACHABLE_RE.search(line.strip())
        if m:
            out.append((m.group("bus"), m.group("reason").strip(), line.strip()))
    return out
"""Messages nvidia-smi prints instead of (or among) its output, and what they mean (nvidia-smi
man page; NVML return codes NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_LIB_RM_VERSION_MISMATCH,
NVML_ERROR_GPU_IS_LOST). Seen in the shared cases and NVIDIA/open-gpu-kernel-modules#862."""


def scan_errors(doc: SmiDoc, lines: Iterable[str]) -> None:
    """Record nvidia-smi error messages found in ``lines`` on ``doc`` (and its InfoROM-corruption warnings)."""
    for line in lines:
        s = line.strip()
        if not s or len(s) > 500:
            continue
        if re.search(r"infoROM is corrupted", s, re.I):
            doc.inforom_corrupt.append(s)
            continue
        for rx, kind in SMI_ERRORS:
            if rx.search(s):
                if not doc.error_kind or (doc.error_kind == "gpu_unreachable" and kind != "gpu_unreachable"):
                    _set(doc, "error_kind", kind)
                doc.error_lines.append(s)
                break


# ------------------------------------------------------------------ -q -x (XML)

_XML_FIELDS: dict[str, str] = {
    "product_name": "name",
    "product_brand": "brand",
    "product_architecture": "architecture",
    "persistence_mode": "persistence_mode",
    "mig_mode/current_mig": "mig.mode.current",
    "mig_mode/pending_mig": "mig.mode.pending",
    "serial": "serial",
    "uuid": "uuid",
    "minor_number": "minor_number",
    "vbios_version": "vbios_version",
    "inforom_version/img_version": "inforom.img",
    "gpu_virtualization_mode/virtualization_mode": "virtualization_mode",
    "vgpu_software_licensed_product/license_status": "vgpu_license_status",
    "gpu_reset_status/reset_required": "reset_required",
    "gpu_reset_status/drain_and_reset_recommended": "drain_and_reset_recommended",
    "gpu_recovery_action": "gpu_recovery_action",
    "pci/pci_bus_id": "pci.bus_id",
    "pci/pci_gpu_link_info/pcie_gen/max_link_gen": "pcie.link.gen.max",
    "pci/pci_gpu_link_info/pcie_gen/current_link_gen": "pcie.link.gen.current",
    "pci/pci_gpu_link_info/pcie_gen/device_current_link_gen": "pcie.link.gen.gpucurrent",
    "pci/pci_gpu_link_info/pcie_gen/max_device_link_gen": "pcie.link.gen.gpumax",
    "pci/pci_gpu_link_info/pcie_gen/max_host_link_gen": "pcie.link.gen.hostmax",
    "pci/pci_gpu_link_info/link_widths/max_link_width": "pcie.link.width.max",
    "pci/pci_gpu_link_info/link_widths/current_link_width": "pcie.link.width.current",
    "pci/replay_counter": "pcie.replay_counter",
    "pci/replay_rollover_counter": "pcie.replay_rollover_counter",
    "fan_speed": "fan.speed",
    "performance_state": "pstate",
    "clocks_event_reasons": "clocks_event_reasons",
    "utilization/gpu_util": "utilization.gpu",
    "utilization/memory_util": "utilization.memory",
    "fb_memory_usage/total": "memory.total",
    "fb_memory_usage/used": "memory.used",
    "ecc_mode/current_ecc": "ecc.mode.current",
    "ecc_mode/pending_ecc": "ecc.mode.pending",
    "retired_pages/multiple_single_bit_retirement/retired_count": "retired_pages.single_bit_ecc.count",
    "retired_pages/double_bit_retirement/retired_count": "retired_pages.double_bit.count",
    "retired_pages/pending_blacklist": "retired_pages.pending",
    "retired_pages/pending_retirement": "retired_pages.pending_retirement",
    "remapped_rows": "remapped_rows",
    "remapped_rows/remapped_row_corr": "remapped_rows.correctable",
    "remapped_rows/remapped_row_unc": "remapped_rows.uncorrectable",
    "remapped_rows/remapped_row_pending": "remapped_rows.pending",
    "remapped_rows/remapped_row_failure": "remapped_rows.failure",
    "temperature/gpu_temp": "temperature.gpu",
    "temperature/gpu_temp_tlimit": "temperature.gpu.tlimit",
    "temperature/gpu_temp_max_threshold": "temperature.shutdown",
    "temperature/gpu_temp_slow_threshold": "temperature.slowdown",
    "temperature/gpu_temp_max_gpu_threshold": "temperature.max_operating",
    "temperature/gpu_temp_max_tlimit_threshold": "temperature.shutdown.tlimit",
    "temperature/gpu_temp_slow_tlimit_threshold": "temperature.slowdown.tlimit",
    "temperature/gpu_temp_max_gpu_tlimit_threshold": "temperature.max_operating.tlimit",
    "temperature/memory_temp": "temperature.memory",
    "temperature/gpu_temp_max_mem_threshold": "temperature.memory.max_operating",
    "temperature/gpu_temp_max_mem_tlimit_threshold": "temperature.memory.max_operating.tlimit",
    "power_readings/power_draw": "power.draw",
    "power_readings/power_limit": "power.limit",
    "power_readings/enforced_power_limit": "enforced.power.limit",
    "power_readings/default_power_limit": "power.default_limit",
    "power_readings/min_power_limit": "power.min_limit",
    "power_readings/max_power_limit": "power.max_limit",
    "gpu_power_readings/power_draw": "power.draw",
    "gpu_power_readings/average_power_draw": "power.draw",
    "gpu_power_readings/instant_power_draw": "power.draw",
    "gpu_power_readings/current_power_limit": "enforced.power.limit",
    "gpu_power_readings/requested_power_limit": "power.limit",
    "gpu_power_readings/default_power_limit": "power.default_limit",
    "gpu_power_readings/min_power_limit": "power.min_limit",
    "gpu_power_readings/max_power_limit": "power.max_limit",
    "fabric/state": "fabric.state",
    "fabric/status": "fabric.status",
    "fabric/cliqueid": "fabric.cliqueId",
    "fabric/clusteruuid": "fabric.clusterUuid",
    "fabric/health/summary": "fabric.health.summary",
    "fabric/health/bandwidth": "fabric.health.bandwidth",
    "fabric/health/route_recovery_in_progress": "fabric.health.route_recovery_in_progress",
    "fabric/health/route_unhealthy": "fabric.health.route_unhealthy",
    "fabric/health/access_timeout_recovery": "fabric.health.access_timeout_recovery",
    "fabric/health/incorrect_configuration": "fabric.health.incorrect_configuration",
}
"""``-q -x`` element paths (below ``<gpu>``, lower case) -> canonical keys (nvsmi_device_v11..v13
DTDs as seen in the shared cases and tests/data/public)."""

for _ctr in ("volatile", "aggregate"):
    for _src, _dst in (("sram_correctable", "corrected.{c}.sram"), ("sram_uncorrectable", "uncorrected.{c}.sram"),
                       ("sram_uncorrectable_parity", "uncorrected.{c}.sram.parity"),
                       ("sram_uncorrectable_secded", "uncorrected.{c}.sram.secded"),
                       ("dram_correctable", "corrected.{c}.dram"), ("dram_uncorrectable", "uncorrected.{c}.dram"),
                       ("single_bit/device_memory", "corrected.{c}.device_memory"),
                       ("single_bit/total", "corrected.{c}.total"),
                       ("double_bit/device_memory", "uncorrected.{c}.device_memory"),
                       ("double_bit/total", "uncorrected.{c}.total")):
        _XML_FIELDS[f"ecc_errors/{_ctr}/{_src}"] = "ecc.errors." + _dst.format(c=_ctr)
_XML_FIELDS["ecc_errors/aggregate/sram_threshold_exceeded"] = "ecc.errors.uncorrected.aggregate.sram.thresholdExceeded"
for _b in ("max", "high", "partial", "low", "none"):
    _XML_FIELDS[f"remapped_rows/row_remapper_histogram/row_remapper_histogram_{_b}"] = f"remapped_rows.histogram.{_b}"
for _r in ("gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "hw_thermal_slowdown",
           "hw_power_brake_slowdown", "sync_boost", "sw_thermal_slowdown", "display_clocks_setting", "unknown"):
    _XML_FIELDS[f"clocks_event_reasons/clocks_event_reason_{_r}"] = f"clocks_event_reasons.{_r}"

_TAG_RE = lazy_re(r"<(/?)([A-Za-z_][\w.\-:]*)([^<>]*?)(/?)>")
_ENTITY_RE = lazy_re(r"<!ENTITY", re.I)
_DOCTYPE_RE = lazy_re(r"<!DOCTYPE\b[^\[>]*(?:\[.*?\]\s*)?>", re.I | re.S)

MAX_XML_DEPTH = 32
"""Deepest element nesting read (``nvidia_smi_log`` = 1). ``nvidia-smi -q -x`` nests about 7 deep
(``nvidia_smi_log/gpu/pci/pci_gpu_link_info/pcie_gen/max_link_gen``, nvsmi_device_v12 DTD); a deeper
document is not its output and is refused before it is parsed (nested tags cost memory per level)."""

MAX_XML_ELEMENTS = 200_000
"""Most elements read. ``nvidia-smi -q -x`` prints a few hundred per GPU (about 3,000 for 8 GPUs;
more with many processes or MIG devices); a larger document is refused before ElementTree builds it
(each element costs about 100 bytes of memory)."""

MAX_XML_QUOTED_LINE = 1000
"""Longest source line (characters) quoted as a value's evidence; a longer line (a document on one
line) is quoted as ``<tag>value</tag>`` instead of a copy of the whole line per value."""


class XmlTooLarge(ValueError):
    """A document past :data:`MAX_XML_DEPTH` or :data:`MAX_XML_ELEMENTS` (the message says which)."""


def _norm_xml_path(parts: Iterable[str]) -> str:
    return "/".join(p.lower() for p in parts).replace("throttle_reason", "event_reason")


class _XmlIndex:
    """Where each start tag of a document is: node id -> its offset, and (parent id, tag, n-th such
    child) -> node id (node 0 is above the root), the same numbering :func:`_walk` follows on the
    ElementTree, so values can quote their raw line. Memory is one entry per element."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.offsets: list[int] = [0]
        self.children: dict[tuple[int, str, int], int] = {}
        self._lines: dict[int, str] = {}

    def child(self, parent: int, tag: str, n: int) -> int:
        """The node id of ``parent``'s ``n``-th ``<tag>`` child; -1 when the index has none."""
        return self.children.get((parent, tag, n), -1) if parent >= 0 else -1

    def line(self, node: int) -> str:
        """The stripped source line of ``node``'s start tag; "" for no such node or a line longer than
        :data:`MAX_XML_QUOTED_LINE` characters (found within that many characters either side)."""
        if node <= 0 or node >= len(self.offsets):
            return ""
        if node not in self._lines:
            text, off, cap = self.text, self.offsets[node], MAX_XML_QUOTED_LINE
            lo = text.rfind("\n", max(0, off - cap), off)
            hi = text.find("\n", off, off + cap)
            if (lo < 0 and off > cap) or (hi < 0 and off + cap < len(text)):
                self._lines[node] = ""
            else:
                self._lines[node] = text[lo + 1: hi if hi >= 0 else len(text)].strip()
        return self._lines[node]


def _xml_line_index(text: str) -> tuple[_XmlIndex, list[str]]:
    """The :class:`_XmlIndex` of ``text``, plus the tags still open at the end.

    Raises:
        XmlTooLarge: nesting deeper than :data:`MAX_XML_DEPTH` or more than :data:`MAX_XML_ELEMENTS`
            start tags (checked as it reads, so the cost stays bounded)."""
    index = _XmlIndex(text)
    stack: list[tuple[str, int, dict[str, int]]] = [("", 0, {})]
    for m in _TAG_RE.finditer(text):
        closing, tag, _attrs, selfclose = m.groups()
        if closing:
            if len(stack) > 1 and stack[-1][0] == tag:
                stack.pop()
            continue
        if len(index.offsets) > MAX_XML_ELEMENTS:
            raise XmlTooLarge(f"more than {MAX_XML_ELEMENTS:,} elements (nvidia-smi -q -x prints a few hundred "
                              f"per GPU)")
        _parent_tag, parent, counts = stack[-1]
        n = counts.get(tag, 0)
        counts[tag] = n + 1
        node = len(index.offsets)
        index.offsets.append(m.start())
        index.children[(parent, tag, n)] = node
        if not selfclose:
            if len(stack) > MAX_XML_DEPTH:
                raise XmlTooLarge(f"elements nested more than {MAX_XML_DEPTH} deep (nvidia-smi -q -x nests "
                                  f"about 7)")
            stack.append((tag, node, {}))
    return index, [t for t, _, _ in stack[1:]]


def _walk(el: ET.Element, node: int, rel: tuple[str, ...], index: _XmlIndex):
    """Yield (element, node id, tags below the start, raw line) for ``el``'s descendants, depth first."""
    counts: dict[str, int] = {}
    for child in el:
        if not isinstance(child.tag, str):
            continue
        n = counts.get(child.tag, 0)
        counts[child.tag] = n + 1
        cn = index.child(node, child.tag, n)
        crel = rel + (child.tag,)
        yield child, cn, crel, index.line(cn)
        yield from _walk(child, cn, crel, index)


def _leaf_text(el: ET.Element) -> str | None:
    if len(el):
        return None
    return " ".join((el.text or "").split())


def parse_smi_xml(text: str) -> SmiDoc:
    """``nvidia-smi -q -x`` -> :class:`SmiDoc`. Refuses entity declarations (``unknown``) and documents
    nested deeper than :data:`MAX_XML_DEPTH` or with more than :data:`MAX_XML_ELEMENTS` elements
    (``problems`` says which)."""
    doc = SmiDoc("xml", "nvidia-smi -q -x")
    try:
        _parse_xml(doc, text)
    except XmlTooLarge as exc:
        doc.problems.append(f"not read: this XML has {exc}")
    except (RecursionError, MemoryError, ValueError) as exc:  # pathological input
        doc.problems.append(f"unreadable XML: {type(exc).__name__}")
    return doc


def _parse_xml(doc: SmiDoc, text: str) -> None:
    m = _ENTITY_RE.search(text)
    if m:
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.start())
        _set(doc, "error_kind", "refused")
        doc.error_lines.append(text[line_start: line_end if line_end >= 0 else len(text)].strip()[:300])
        return
    start = -1
    for marker in ("<?xml", "<nvidia_smi_log"):
        start = text.find(marker)
        if start >= 0:
            break
    if start < 0:
        scan_errors(doc, text.splitlines())
        if not doc.error_kind:
            doc.problems.extend(ln for ln in text.splitlines()[:20] if ln.strip())
        return
    scan_errors(doc, text[:start].splitlines())
    # one DOCTYPE at most (XML 1.0 s. 2.8): a second is not well-formed anyway, and each costs a scan
    body = _DOCTYPE_RE.sub(lambda mm: "\n" * mm.group(0).count("\n"), text[start:], count=1)
    end = body.rfind("</nvidia_smi_log>")
    if end >= 0:
        # what follows the document (the probe's stderr read with it: a login shell's own complaint; a paste's next
        # prompt) is not part of it: it is scanned for nvidia-smi's error words like what comes before it
        end += len("</nvidia_smi_log>")
        scan_errors(doc, body[end:].splitlines())
        body = body[:end]
    index, still_open = _xml_line_index(body)
    root = None
    try:
        root = ET.fromstring(body)
    except ET.ParseError:
        # a paste cut short: drop an unfinished last line, close what is open, try again
        lines = body.rstrip("\n").split("\n")
        if lines and not re.search(r">\s*$", lines[-1]):
            lines = lines[:-1]
        cut = "\n".join(lines)
        del lines
        index, still_open = _xml_line_index(cut)
        try:
            root = ET.fromstring(cut + "".join(f"</{t}>" for t in reversed(still_open)))
            _set(doc, "truncated", True)
        except ET.ParseError as exc:
            doc.problems.append(f"not well-formed XML: {exc}")
            doc.problems.extend(ln for ln in body.splitlines()[:10] if ln.strip())
            return
    if root.tag != "nvidia_smi_log":
        doc.problems.append(f"XML root is <{root.tag}>, not <nvidia_smi_log>")
        return
    _set(doc, "complete", not doc.truncated and not still_open)
    rk = index.child(0, "nvidia_smi_log", 0)
    top_counts: dict[str, int] = {}
    for child in root:
        if not isinstance(child.tag, str):
            continue
        n = top_counts.get(child.tag, 0)
        top_counts[child.tag] = n + 1
        ck = index.child(rk, child.tag, n)
        line = index.line(ck)
        val = _leaf_text(child)
        if child.tag == "driver_version" and val is not None:
            _set(doc, "driver_version", Reading(val, line))
        elif child.tag == "cuda_version" and val is not None:
            _set(doc, "cuda_version", Reading(val, line))
        elif child.tag == "attached_gpus" and val is not None:
            _set(doc, "attached", Reading(val, line))
        elif child.tag == "gpu":
            doc.gpus.append(_xml_gpu(child, ck, index, len(doc.gpus)))


def _xml_gpu(el: ET.Element, node: int, index: _XmlIndex, position: int) -> GpuFacts:
    g = GpuFacts(index=position, bus_id=(el.get("id") or "").strip(), header=index.line(node))
    for child, _cn, rel_t, line in _walk(el, node, (), index):
        rel = list(rel_t)
        path = _norm_xml_path(rel)
        val = _leaf_text(child)
        if rel[0] == "mig_devices":
            if rel == ["mig_devices", "mig_device"]:
                _set(g, "mig_devices", g.mig_devices + 1)
            continue
        if rel[0] == "processes":
            _set(g, "processes_read", True)
            if rel == ["processes", "process_info"]:
                g.processes.append(_xml_process(child))
            elif len(rel) == 3 and g.processes and rel[2] in ("pid", "type", "process_name", "used_memory") and line:
                g.processes[-1].lines.append(line)
            continue
        if val is not None and ERR_RE.search(val):
            g.errors.append(line or f"<{child.tag}>{val}</{child.tag}>")
        k = _XML_FIELDS.get(path)
        if k is None:
            continue
        if val is None:
            continue  # a section with children (e.g. remapped_rows when it has counts)
        g.set(k, val, line or f"<{child.tag}>{val}</{child.tag}>")
    if not g.bus_id and g.text("pci.bus_id"):
        _set(g, "bus_id", g.text("pci.bus_id") or "")
    return g


def _xml_process(el: ET.Element) -> GpuProcess:
    def t(tag: str) -> str:
        c = el.find(tag)
        return " ".join((c.text or "").split()) if c is not None else ""

    return GpuProcess(pid=t("pid"), type=t("type"), name=t("process_name"), used_mib=to_number(t("used_memory")))


# ------------------------------------------------------------------ -q (text)

_TEXT_FIELDS: dict[str, str] = {
    "product name": "name",
    "product brand": "brand",
    "product architecture": "architecture",
    "persistence mode": "persistence_mode",
    "mig mode/current": "mig.mode.current",
    "mig mode/pending": "mig.mode.pending",
    "serial number": "serial",
    "gpu uuid": "uuid",
    "minor number": "minor_number",
    "vbios version": "vbios_version",
    "inforom version/image version": "inforom.img",
    "gpu virtualization mode/virtualization mode": "virtualization_mode",
    "vgpu software licensed product/license status": "vgpu_license_status",
    "gpu reset status/reset required": "reset_required",
    "gpu reset status/drain and reset recommended": "drain_and_reset_recommended",
    "gpu recovery action": "gpu_recovery_action",
    "pci/bus id": "pci.bus_id",
    "pci/gpu link info/pcie generation/max": "pcie.link.gen.max",
    "pci/gpu link info/pcie generation/current": "pcie.link.gen.current",
    "pci/gpu link info/pcie generation/device current": "pcie.link.gen.gpucurrent",
    "pci/gpu link info/pcie generation/device max": "pcie.link.gen.gpumax",
    "pci/gpu link info/pcie generation/host max": "pcie.link.gen.hostmax",
    "pci/gpu link info/link width/max": "pcie.link.width.max",
    "pci/gpu link info/link width/current": "pcie.link.width.current",
    "pci/replays since reset": "pcie.replay_counter",
    "pci/replay number rollovers": "pcie.replay_rollover_counter",
    "fan speed": "fan.speed",
    "performance state": "pstate",
    "clocks event reasons": "clocks_event_reasons",
    "utilization/gpu": "utilization.gpu",
    "utilization/memory": "utilization.memory",
    "fb memory usage/total": "memory.total",
    "fb memory usage/used": "memory.used",
    "ecc mode/current": "ecc.mode.current",
    "ecc mode/pending": "ecc.mode.pending",
    "ecc errors/aggregate/sram threshold exceeded": "ecc.errors.uncorrected.aggregate.sram.thresholdExceeded",
    "retired pages/single bit ecc": "retired_pages.single_bit_ecc.count",
    "retired pages/double bit ecc": "retired_pages.double_bit.count",
    "retired pages/pending page blacklist": "retired_pages.pending",
    "retired pages/pending page retirement": "retired_pages.pending_retirement",
    "retired pages/pending": "retired_pages.pending",
    "remapped rows": "remapped_rows",
    "remapped rows/correctable error": "remapped_rows.correctable",
    "remapped rows/uncorrectable error": "remapped_rows.uncorrectable",
    "remapped rows/pending": "remapped_rows.pending",
    "remapped rows/remapping failure occurred": "remapped_rows.failure",
    "temperature/gpu current temp": "temperature.gpu",
    "temperature/gpu t.limit temp": "temperature.gpu.tlimit",
    "temperature/gpu shutdown temp": "temperature.shutdown",
    "temperature/gpu slowdown temp": "temperature.slowdown",
    "temperature/gpu max operating temp": "temperature.max_operating",
    "temperature/gpu shutdown t.limit temp": "temperature.shutdown.tlimit",
    "temperature/gpu slowdown t.limit temp": "temperature.slowdown.tlimit",
    "temperature/gpu max operating t.limit temp": "temperature.max_operating.tlimit",
    "temperature/memory current temp": "temperature.memory",
    "temperature/memory max operating temp": "temperature.memory.max_operating",
    "temperature/memory max operating t.limit temp": "temperature.memory.max_operating.tlimit",
    "power readings/power draw": "power.draw",
    "power readings/power limit": "power.limit",
    "power readings/enforced power limit": "enforced.power.limit",
    "power readings/default power limit": "power.default_limit",
    "power readings/min power limit": "power.min_limit",
    "power readings/max power limit": "power.max_limit",
    "gpu power readings/power draw": "power.draw",
    "gpu power readings/average power draw": "power.draw",
    "gpu power readings/instantaneous power draw": "power.draw",
    "gpu power readings/current power limit": "enforced.power.limit",
    "gpu power readings/requested power limit": "power.limit",
    "gpu power readings/default power limit": "power.default_limit",
    "gpu power readings/min power limit": "power.min_limit",
    "gpu power readings/max power limit": "power.max_limit",
    "fabric/state": "fabric.state",
    "fabric/status": "fabric.status",
    "fabric/cliqueid": "fabric.cliqueId",
    "fabric/clusteruuid": "fabric.clusterUuid",
    "fabric/health/summary": "fabric.health.summary",
    "fabric/health/bandwidth": "fabric.health.bandwidth",
    "fabric/health/route recovery in progress": "fabric.health.route_recovery_in_progress",
    "fabric/health/route unhealthy": "fabric.health.route_unhealthy",
    "fabric/health/access timeout recovery": "fabric.health.access_timeout_recovery",
    "fabric/health/incorrect configuration": "fabric.health.incorrect_configuration",
}
"""``-q`` label paths (below the GPU header, lower case, single spaces) -> canonical keys. Covers
the layouts in the shared cases (drivers 495 to 590) and the older Single/Double Bit ECC one."""

for _ctr in ("volatile", "aggregate"):
    for _src, _dst in (("sram correctable", "corrected.{c}.sram"), ("sram uncorrectable", "uncorrected.{c}.sram"),
                       ("sram uncorrectable parity", "uncorrected.{c}.sram.parity"),
                       ("sram uncorrectable sec-ded", "uncorrected.{c}.sram.secded"),
                       ("dram correctable", "corrected.{c}.dram"), ("dram uncorrectable", "uncorrected.{c}.dram"),
                       ("single bit/device memory", "corrected.{c}.device_memory"),
                       ("single bit/total", "corrected.{c}.total"),
                       ("double bit/device memory", "uncorrected.{c}.device_memory"),
                       ("double bit/total", "uncorrected.{c}.total")):
        _TEXT_FIELDS[f"ecc errors/{_ctr}/{_src}"] = "ecc.errors." + _dst.format(c=_ctr)
for _b in ("max", "high", "partial", "low", "none"):
    _TEXT_FIELDS[f"remapped rows/bank remap availability histogram/{_b}"] = f"remapped_rows.histogram.{_b}"
for _label, _r in (("idle", "gpu_idle"), ("applications clocks setting", "applications_clocks_setting"),
                   ("sw power cap", "sw_power_cap"), ("hw slowdown", "hw_slowdown"),
                   ("hw slowdown/hw thermal slowdown", "hw_thermal_slowdown"),
                   ("hw slowdown/hw power brake slowdown", "hw_power_brake_slowdown"),
                   ("hw thermal slowdown", "hw_thermal_slowdown"), ("hw power brake slowdown", "hw_power_brake_slowdown"),
                   ("sync boost", "sync_boost"), ("sw thermal slowdown", "sw_thermal_slowdown"),
                   ("display clock setting", "display_clocks_setting"),
                   ("unknown", "unknown")):  # older drivers' "Unknown : Active" (nvmlClocksThrottleReasonUnknown)
    _TEXT_FIELDS[f"clocks event reasons/{_label}"] = f"clocks_event_reasons.{_r}"
for _label, _r in (("sw power capping", "sw_power_cap"), ("sync boost", "sync_boost"),
                   ("sw thermal slowdown", "sw_thermal_slowdown"), ("hw thermal slowdown", "hw_thermal_slowdown"),
                   ("hw power braking", "hw_power_brake_slowdown")):
    # "Clocks Event Reasons Counters" (driver 535+): microseconds spent in each reason since the driver loaded
    _TEXT_FIELDS[f"clocks event reasons counters/{_label}"] = f"clocks_event_counters.{_r}"

_GPU_HEADER_RE = lazy_re(r"^GPU\s+((?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_KV_RE = lazy_re(r"^([^:]*?\S)\s*:\s?(.*)$")
_SECTION_RE = lazy_re(r"^[A-Za-z][A-Za-z0-9 .()/+-]*$")
_DOC_ERROR_RE = lazy_re(r"Unable to determine the device handle|couldn't communicate with the NVIDIA driver|"
                           r"No devices were found|Failed to initialize NVML|Driver/library version mismatch|"
                           r"NVIDIA driver is not loaded|couldn't find libnvidia-ml", re.I)
_DOC_LEVEL = {"driver version": "driver_version", "cuda version": "cuda_version", "attached gpus": "attached",
              "cuda umd version": "cuda_version"}


def _norm_label(label: str) -> str:
    s = " ".join(label.strip().lower().split())
    return s.replace("clocks throttle reasons", "clocks event reasons")


def parse_smi_text(text: str) -> SmiDoc:
    """``nvidia-smi -q`` (whole, ``-d`` sections, or a pasted section) -> :class:`SmiDoc`."""
    doc = SmiDoc("text", "nvidia-smi -q")
    try:
        _parse_text(doc, text)
    except (RecursionError, MemoryError, ValueError) as exc:
        doc.problems.append(f"unreadable: {type(exc).__name__}")
    return doc


_PASTE_MARK_RE = lazy_re(r"\s{2,}(?:<[-=]+|<<|←|#|\(\s*!|\*{2,}).*$")
"""A mark a person added after a value when pasting ("Pending : Yes      <===", "... # here"): nvidia-smi never
prints two spaces then an arrow, '#' or '**' inside a value, so it is dropped before the value is read."""


def _parse_text(doc: SmiDoc, text: str) -> None:
    gpu: GpuFacts | None = None
    stack: list[tuple[int, str]] = []
    recognised = 0
    other: list[str] = []
    for raw in text.splitlines():
        if not raw.strip():
            continue
        content = raw.strip()
        if "NVSMI LOG" in content or content in ("[...]", "...", "[..]", "--"):
            continue  # "--": grep's separator between the groups of lines -A/-B print
        if content.startswith("#") and not raw.startswith(" "):  # a note above a paste ("# cmd: nvidia-smi -q | ...")
            other.append(raw)
            continue
        if _DOC_ERROR_RE.search(content):  # printed in place of a GPU's block: not the current GPU's
            scan_errors(doc, [content])
            recognised += 1
            continue
        expanded = raw.expandtabs(8)
        indent = len(expanded) - len(expanded.lstrip(" "))
        m = _GPU_HEADER_RE.match(content)
        if m:
            gpu = GpuFacts(index=len(doc.gpus), bus_id=m.group(1), header=content)
            doc.gpus.append(gpu)
            stack = []
            recognised += 1
            continue
        kv = _KV_RE.match(content)
        if kv is None and not _SECTION_RE.match(content):
            other.append(raw)  # not a "-q" line (a shell prompt, a note in a paste): never a parent
            continue
        label, value = (kv.group(1), kv.group(2)) if kv else (content, None)
        if value is not None:
            value = _PASTE_MARK_RE.sub("", value)
        norm = _norm_label(label)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = [s for _, s in stack] + [norm]
        stack.append((indent, norm))
        if gpu is not None and not gpu.implicit:
            _set(gpu, "last_line", content)
            if len(path) == 1 and norm not in gpu.sections:
                gpu.sections.append(norm)
        if value is not None and len(path) == 1 and norm in _DOC_LEVEL and (gpu is None or indent == 0):
            _set(doc, _DOC_LEVEL[norm], Reading(value.strip(), content))
            recognised += 1
            continue
        if value is not None and len(path) == 1 and norm == "timestamp":
            recognised += 1
            continue
        if path[0] == "mig device":
            if gpu is not None and len(path) == 2 and norm == "index":
                _set(gpu, "mig_devices", gpu.mig_devices + 1)
            recognised += 1
            continue
        if path[0] == "processes":
            if gpu is None:
                gpu = _implicit_gpu(doc)
            _text_process(gpu, path, value, content)
            recognised += 1
            continue
        key = _TEXT_FIELDS.get("/".join(path))
        if key is None:
            continue
        if value is None:
            continue  # a section header that is also a field elsewhere ("Remapped Rows")
        if gpu is None:
            gpu = _implicit_gpu(doc)
        gpu.set(key, value, content)
        if ERR_RE.search(value):
            gpu.errors.append(content)
        recognised += 1
    if not recognised and not doc.gpus:
        doc.problems.extend(other[:20] or [ln for ln in text.splitlines()[:20] if ln.strip()])
    for g in doc.gpus:
        if g.bus_id == "" and g.text("pci.bus_id"):
            _set(g, "bus_id", g.text("pci.bus_id") or "")


def _implicit_gpu(doc: SmiDoc) -> GpuFacts:
    """A GPU for a pasted section that has no "GPU 0000:..." header."""
    g = GpuFacts(index=None, header="", implicit=True)
    doc.gpus.append(g)
    return g


def _text_process(gpu: GpuFacts, path: list[str], value: str | None, content: str) -> None:
    if len(path) == 1:
        _set(gpu, "processes_read", True)  # "Processes : None" or the section header
        return
    label = path[-1]
    if label == "process id" and value is not None:
        gpu.processes.append(GpuProcess(pid=value.strip(), lines=[content]))
        return
    if not gpu.processes or value is None:
        return
    p = gpu.processes[-1]
    if label == "type":
        _set(p, "type", value.strip())
    elif label in ("name", "process name"):
        _set(p, "name", value.strip())
    elif label in ("used gpu memory", "used memory"):
        _set(p, "used_mib", to_number(value))
    else:
        return
    p.lines.append(content)


# ------------------------------------------------------------------ the default table

_TABLE_HEADER_RE = lazy_re(r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)(?:\s+CUDA(?: UMD)? Version:\s*(\S+))?")
_ROW1_RE = lazy_re(r"^\s*(\d{1,4})\s+(.*?)\s+(On|Off|ERR!|N/A|WDDM|TCC|MCDM)\s*$")
_BUSID_RE = lazy_re(r"((?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])")
_ROW2_RE = lazy_re(r"^\s*(\S+)\s+(\S+)\s+(\S+)\s+(.*?)\s*$")
_PROC_RE = lazy_re(r"^\|\s*(\d+)\s+(?:(\S+)\s+(\S+)\s+)?(\d+)\s+(C\+G|C|G|M\+C|M)\s+(.*?)\s+(\d+\s*MiB|N/A|\d+\.\.\.)\s*\|\s*$")
"""A row of the Processes table; its memory cell may be cut short ("16901...": a paste cut to the page's width,
held-out round 330), then the amount is not read."""
_MIG_ROW_RE = lazy_re(r"^\|\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\|")


_CONTINUED = re.compile(r"^\s*[^|+\s].*\|\s*$|^\s{4,}\S.*\|\s*$")


def _unwrapped(text: str) -> str:
    """The table as nvidia-smi printed it when a terminal or a web page wrapped its wide rows: a line inside the table
    that starts with neither '|' nor '+' and ends with '|' is the rest of the line before it ("CUDA" / "Version: 12.2
    |"; held-out round 144). Text with no such line is returned as it is."""
    lines = text.splitlines()
    out: list[str] = []
    inside = False
    joined = 0
    for ln in lines:
        st = ln.strip()
        if st.startswith("+-") or st.startswith("|="):
            inside = True
        if inside and out and out[-1].strip().startswith("|") and not st.startswith(("|", "+")) \
                and _CONTINUED.match(ln):
            out[-1] = out[-1].rstrip() + " " + st
            joined += 1
            continue
        out.append(ln)
    return "\n".join(out) if joined >= 2 else text


def parse_smi_table(text: str) -> SmiDoc:
    """The default ``nvidia-smi`` output (or the error it printed instead) -> :class:`SmiDoc`."""
    doc = SmiDoc("table", "nvidia-smi")
    try:
        _parse_table(doc, _unwrapped(text))
    except (RecursionError, MemoryError, ValueError) as exc:
        doc.problems.append(f"unreadable: {type(exc).__name__}")
    return doc


def _cells(line: str) -> list[str]:
    s = line.strip()
    if not (s.startswith("|") and s.endswith("|")):
        return []
    return s[1:-1].split("|")


def _parse_table(doc: SmiDoc, text: str) -> None:
    lines = text.splitlines()
    scan_errors(doc, [ln for ln in lines if not ln.strip().startswith("|")])
    section = "gpus"
    proc_open = False  # the Processes table's header rule (|===) seen, its closing border not yet
    gpu: GpuFacts | None = None
    row = 0
    for raw in lines:
        s = raw.strip()
        if not s:
            continue
        m = _TABLE_HEADER_RE.search(s)
        if m:
            _set(doc, "driver_version", Reading(m.group(2), s))
            if m.group(3):
                _set(doc, "cuda_version", Reading(m.group(3), s))
            continue
        if s.startswith("| Processes:"):
            section = "processes"
            _set(doc, "complete", True)
            gpu = None
            continue
        if s.startswith("| MIG devices:"):
            section = "mig"
            gpu = None
            continue
        if s.startswith("+") or s.startswith("|=") or s.startswith("|-"):
            if s.startswith("+") and section == "gpus":
                gpu = None
            if section == "processes" and s.startswith("|="):
                proc_open = True
            elif section == "processes" and s.startswith("+") and proc_open:
                # the Processes table closed with no row: nvidia-smi listed none (an empty table, no "No running
                # processes found" line: older drivers; held-out round 144)
                if not any(g.processes for g in doc.gpus):
                    for g in doc.gpus:
                        _set(g, "processes_read", True)
                proc_open = False
            continue
        cells = _cells(s)
        if not cells:
            continue
        if section == "processes":
            pm = _PROC_RE.match(s)
            if pm:
                idx = sat_int(pm.group(1))
                target = next((g for g in doc.gpus if g.index == idx), None)
                if target is not None:
                    target.processes.append(GpuProcess(pid=pm.group(4), type=pm.group(5), name=pm.group(6),
                                                       used_mib=None if pm.group(7).endswith("...") else to_number(pm.group(7)),
                                                       lines=[s]))
            elif "No running processes found" in s:
                for g in doc.gpus:
                    _set(g, "processes_read", True)
            continue
        if section == "mig":
            if "No MIG devices found" in s:
                _set(doc, "no_mig_devices", s)
            mm = _MIG_ROW_RE.match(s)
            if mm:
                target = next((g for g in doc.gpus if g.index == sat_int(mm.group(1))), None)
                if target is not None:
                    _set(target, "mig_devices", target.mig_devices + 1)
            continue
        if len(cells) < 3:
            continue
        r1 = _ROW1_RE.match(cells[0])
        bus = _BUSID_RE.search(cells[1])
        if r1 and (bus or re.match(r"\s*N/A\s", cells[1])):  # N/A: an integrated GPU (Jetson's nvgpu) has no PCI id
            gpu = GpuFacts(index=sat_int(r1.group(1)), bus_id=bus.group(1) if bus else "", header=s)
            doc.gpus.append(gpu)
            row = 1
            name = r1.group(2).strip()
            gpu.set("name", name, s)
            if r1.group(3) in ("On", "Off", "ERR!", "N/A"):
                gpu.set("persistence_mode", r1.group(3), s)
            gpu.set("pci.bus_id", gpu.bus_id, s)
            ecc = cells[2].strip()
            gpu.set("table.ecc", ecc, s)
            if ecc.isdigit():
                gpu.set("ecc.errors.uncorrected.volatile.total", ecc, s)
            if ERR_RE.search(s):
                gpu.errors.append(s)
            continue
        if gpu is None:
            continue
        row += 1
        if ERR_RE.search(s):
            gpu.errors.append(s)
        if row == 2:
            r2 = _ROW2_RE.match(cells[0])
            if r2:
                gpu.set("fan.speed", r2.group(1), s)
                gpu.set("temperature.gpu", r2.group(2), s)
                gpu.set("pstate", r2.group(3), s)
                pw = re.match(r"\s*(N/A|[^/]*?)\s*/\s*(.*)$", r2.group(4))  # "35W / 350W", "N/A /  N/A"
                usage, cap = (pw.group(1), pw.group(2)) if pw else (r2.group(4), "")
                gpu.set("power.draw", usage.strip(), s)
                if cap.strip():
                    gpu.set("enforced.power.limit", cap.strip(), s)
            used, _, total = cells[1].partition("/")
            gpu.set("memory.used", used.strip(), s)
            gpu.set("memory.total", total.strip(), s)
            parts = cells[2].split()
            if parts:
                gpu.set("utilization.gpu", parts[0], s)
        elif row == 3:
            mig = cells[2].strip()
            if mig in ("Enabled", "Disabled"):
                gpu.set("mig.mode.current", mig, s)
            elif mig in ("Enabled*", "Disabled*"):  # the mode after the next GPU reset, marked pending with '*'
                gpu.set("mig.mode.pending", mig[:-1], s)
                gpu.set("mig.mode.current", "Disabled" if mig == "Enabled*" else "Enabled", s)
    if not doc.gpus and not doc.error_kind and doc.driver_version is None:
        doc.problems.extend(ln for ln in lines[:20] if ln.strip())


# ------------------------------------------------------------------ --query-gpu CSV

_CSV_ALIASES = {"gpu_name": "name", "gpu_bus_id": "pci.bus_id", "gpu_serial": "serial", "gpu_uuid": "uuid",
                "pcie.link.gen.gpucurrent": "pcie.link.gen.gpucurrent", "power.draw.average": "power.draw.average",
                "persistence_mode": "persistence_mode"}
_CSV_KNOWN_PREFIXES = ("name", "index", "uuid", "serial", "timestamp", "driver_version", "count", "pci.", "pcie.",
                       "ecc.", "clocks", "power.", "enforced.", "memory.", "utilization.", "temperature.", "pstate",
                       "retired_pages.", "remapped_rows.", "fabric.", "mig.", "vbios_version", "persistence_mode",
                       "fan.", "gpu_", "display_", "compute_mode", "inforom.", "driver_model.")
_CSV_HEADER_CELL = lazy_re(r"^[A-Za-z][\w.]*(?: \[[^\]]{1,12}\])?$")


def csv_key(header: str) -> str:
    """A CSV column header ("memory.total [MiB]") -> canonical key ("memory.total")."""
    h = re.sub(r"\s*\[[^\]]*\]\s*$", "", header.strip())
    h = h.replace("clocks_throttle_reasons", "clocks_event_reasons")
    return _CSV_ALIASES.get(h, h)


def _known_property(cell: str) -> bool:
    """A header cell that names a ``--query-gpu`` property: one of :data:`_CSV_KNOWN_PREFIXES` whole, or followed by
    a "." or "_" part ("clocks.sm", "clocks_event_reasons.active"), never a longer word ("NAMESPACE" of kubectl get
    pods is not "name": held-out round 280)."""
    key = re.sub(r"\s*\[[^\]]*\]\s*$", "", cell).lower()
    return any(key == p or key.startswith(p if p.endswith((".", "_")) else (p + ".", p + "_"))
               for p in _CSV_KNOWN_PREFIXES)


def csv_header_score(line: str) -> float:
    """How much a line looks like a ``--query-gpu`` CSV header: the fraction of its comma-separated
    cells shaped like property names ("memory.total [MiB]"), or 0 when fewer than two cells (or
    fewer than a third of them) are properties bringup knows; a lone cell that is a known dotted or snake_case
    property ("driver_version": a query of one column) scores 0.8."""
    cells = [c.strip() for c in line.split(",")]
    shaped = [c for c in cells if _CSV_HEADER_CELL.match(c)]
    known = [c for c in shaped if _known_property(c)]
    if len(cells) == 1 and len(known) == 1 and ("." in cells[0] or "_" in cells[0]):
        return 0.8  # one column asked for ("driver_version", "memory.used [MiB]"): a property name, dotted or snake
    if len(cells) < 2 or len(known) < 2 or len(known) * 3 < len(cells):
        return 0.0
    return len(shaped) / len(cells)


def columns_as_csv(lines: list[str]) -> list[str]:
    """A ``--query-gpu`` CSV piped through ``column -s, -t`` (its commas turned into aligned columns) as CSV lines
    again: a header of known properties separated by two or more spaces, and each row after it that splits into as
    many columns. Lines of any other shape, or lines with no such header, are returned as they are."""
    for i, line in enumerate(lines[:3]):
        parts = re.split(r"\s{2,}", line.strip())
        if "," in line or len(parts) < 2 or csv_header_score(", ".join(parts)) < 0.8:
            continue
        out = lines[:i] + [", ".join(parts)]
        for row in lines[i + 1:]:
            cells = re.split(r"\s{2,}", row.strip())
            out.append(", ".join(cells) if len(cells) == len(parts) and "," not in row else row)
        return out
    return lines


def parse_smi_csv(text: str) -> SmiDoc:
    """``nvidia-smi --query-gpu=... --format=csv`` (with its header) -> :class:`SmiDoc`."""
    doc = SmiDoc("csv", Msg("nvidia-smi --query-gpu=... --format=csv"))
    try:
        _parse_csv(doc, text)
    except (csv.Error, RecursionError, MemoryError, ValueError) as exc:
        doc.problems.append(f"unreadable CSV: {exc}")
    return doc


def _parse_csv(doc: SmiDoc, text: str) -> None:
    lines = columns_as_csv([_PASTE_MARK_RE.sub("", ln) for ln in text.splitlines() if ln.strip()])
    scan_errors(doc, lines)
    start = next((i for i, ln in enumerate(lines) if csv_header_score(ln) >= 0.8), None)
    if start is None:
        if not doc.error_kind:
            doc.problems.extend(lines[:20])
        return
    header = next(csv.reader([lines[start]], skipinitialspace=True))
    keys = [csv_key(h) for h in header]
    _set(doc, "complete", True)
    for n, line in enumerate(lines[start + 1:]):
        if csv_header_score(line) >= 0.8:
            continue
        try:
            cells = next(csv.reader([line], skipinitialspace=True))
        except (csv.Error, StopIteration):
            doc.problems.append(line)
            continue
        if len(cells) != len(keys):
            doc.problems.append(line)
            continue
        g = GpuFacts(index=n, header=line if len(line) <= 300 else "")
        for h, k, v in zip(header, keys, cells):
            v = v.strip()
            ev = line if len(line) <= 300 else f"{h.strip()}: {v}"
            g.set(k, v, ev)
            if ERR_RE.search(v):
                g.errors.append(f"{h.strip()}: {v}")
        idx = g.num("index")
        if idx is not None and 0 <= idx < 100000:
            _set(g, "index", sat_int(idx))
        _set(g, "bus_id", g.text("pci.bus_id") or "")
        csv_reasons(g)
        doc.gpus.append(g)
        if doc.attached is None and g.get("count") is not None:
            _set(doc, "attached", g.get("count"))
        dv = g.get("driver_version")
        if doc.driver_version is None and dv is not None and re.fullmatch(r"\d+\.\d+(?:\.\d+)?", dv.raw.strip()):
            _set(doc, "driver_version", dv)  # one driver per machine: the column repeats it on every row


# ------------------------------------------------------------------ --query-gpu CSV without its header

_GPU_NAME_RE = lazy_re(r"^(?:NVIDIA|Tesla|Quadro|GeForce|TITAN|GRID)\b[\w \-./()]*$|^(?:A|H|B|L|V|P|T)\d{1,3}[A-Z]?\b.*(?:GB|SXM|PCIE|NVL)", re.I)
_NOHEADER_KINDS: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("pci.bus_id", Msg("PCI bus id"), lazy_re(r"^(?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]$")),
    ("uuid", Msg("GPU UUID"), lazy_re(r"^GPU-[0-9a-fA-F]{8}-[0-9a-fA-F-]{4,}$")),
    ("pstate", Msg("performance state"), lazy_re(r"^P(?:[0-9]|1[0-5])$")),
    ("driver_version", Msg("driver version"), lazy_re(r"^\d{3}\.\d{2,3}(?:\.\d{2,3})?$")),
    ("compute_mode", Msg("compute mode"), lazy_re(r"^(?:Default|Exclusive_Process|Exclusive_Thread|Prohibited)$")),
    ("vbios_version", Msg("VBIOS version"), lazy_re(r"^[0-9A-Fa-f]{2}(?:\.[0-9A-Fa-f]{2}){4}$")),
)
"""Values whose shape alone says which ``--query-gpu`` property printed them (nvidia-smi --help-query-gpu)."""
_NOHEADER_AMBIGUOUS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (Msg("a memory size in MiB (total, used, free or reserved: cannot tell which)"), lazy_re(r"^\d+ MiB$")),
    (Msg("a power in W (draw, limit or default limit: cannot tell which)"), lazy_re(r"^\d+(?:\.\d+)? W$")),
    (Msg("a clock in MHz (current or max, graphics, SM or memory: cannot tell which)"), lazy_re(r"^\d+ MHz$")),
    (Msg("a percentage (GPU or memory utilisation, fan: cannot tell which)"), lazy_re(r"^\d+(?:\.\d+)? ?%$")),
    (Msg("Enabled/Disabled (ECC, persistence, MIG ...: cannot tell which)"), lazy_re(r"^(?:Enabled|Disabled)$")),
    (Msg("Active/Not Active (a clock-event reason: cannot tell which)"), lazy_re(r"^(?:Active|Not Active)$")),
    (Msg("a bit mask (clock-event reasons or another mask: cannot tell which)"), lazy_re(r"^0x[0-9A-Fa-f]+$")),
    (Msg("a plain number (temperature, count, unit-less value with nounits: cannot tell which)"),
     lazy_re(r"^-?\d+(?:\.\d+)?$")),
)


@dataclass(frozen=True)
class NoHeaderCsv:
    """``--query-gpu ... --format=csv,noheader`` rows read without column names. ``columns``: per column,
    the canonical key where the values say it unambiguously (``name``, ``pci.bus_id``, ``uuid``, ``pstate``,
    ``driver_version``, ``compute_mode``, ``vbios_version``, ``index``) else None; ``labels``: what each
    column looks like; ``na``: how many cells are ``[N/A]``/``N/A``/``[Not Supported]``."""

    rows: list[list[str]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    columns: list[str | None] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    na: int = 0
    problems: list[str] = field(default_factory=list)


def read_noheader_csv(text: str) -> NoHeaderCsv:
    """Split ``csv,noheader`` rows (an optional ``$ nvidia-smi ...`` prompt line first) and infer what each
    column is from its values; never guesses a column whose values fit more than one property."""
    out = NoHeaderCsv()
    lines = [ln for ln in text.splitlines() if ln.strip()][:2000]
    if lines and re.match(r"^\s*(?:\S*[$#>]\s*)?nvidia-smi\b", lines[0]):
        lines = lines[1:]
    for ln in lines:
        try:
            cells = [c.strip() for c in next(csv.reader([ln], skipinitialspace=True))]
        except (csv.Error, StopIteration):
            out.problems.append(ln)
            continue
        out.rows.append(cells)
        out.lines.append(ln.rstrip())
    widths = {len(r) for r in out.rows}
    if len(widths) != 1:
        return NoHeaderCsv(problems=out.problems + out.lines[:20])
    width = widths.pop()
    for i in range(width):
        vals = [r[i] for r in out.rows if not is_na(r[i])]
        key: str | None = None
        label: str = Msg("only N/A values") if not vals else Msg("unrecognised")
        if vals and all(_GPU_NAME_RE.match(v) and not re.fullmatch(r"GPU-[0-9a-fA-F-]+", v) for v in vals):
            key, label = "name", Msg("GPU name")
        elif vals:
            for k, lab, rx in _NOHEADER_KINDS:
                if all(rx.match(v) for v in vals):
                    key, label = k, lab
                    break
            else:
                if i == 0 and len(out.rows) > 1 and [r[0] for r in out.rows] == [str(n) for n in range(len(out.rows))]:
                    key, label = "index", Msg("GPU index (0, 1, 2 ... in row order)")
                else:
                    label = next((lab for lab, rx in _NOHEADER_AMBIGUOUS if all(rx.match(v) for v in vals)), label)
        out.columns.append(key)
        out.labels.append(label)
    return NoHeaderCsv(out.rows, out.lines, out.columns, out.labels, sum(1 for r in out.rows for c in r if is_na(c)),
                       out.problems)


UNREADABLE_CELL = lazy_re(r"^\s*\[?(?:ERR!|Unknown Error)\]?\s*$", re.I)
"""A ``--query-gpu`` cell whose property NVML could not read: ``[Unknown Error]`` (NVML_ERROR_UNKNOWN) or ``ERR!``
(NVML API reference, nvmlReturn_t; nvidia-smi(1)); ``[N/A]`` and ``[Not Supported]`` are not errors."""


def parse_smi_csv_noheader(text: str) -> SmiDoc:
    """``nvidia-smi --query-gpu=... --format=csv,noheader`` rows -> :class:`SmiDoc` holding only the fields
    whose column :func:`read_noheader_csv` could name; a pasted excerpt, so not ``complete``."""
    doc = SmiDoc("csv", Msg("nvidia-smi --query-gpu=... --format=csv,noheader"))
    nh = read_noheader_csv(text)
    scan_errors(doc, nh.lines)
    for n, (cells, line) in enumerate(zip(nh.rows, nh.lines)):
        g = GpuFacts(index=n, header=line if len(line) <= 300 else "")
        for i, (key, v) in enumerate(zip(nh.columns, cells)):
            if key:
                g.set(key, v, line if len(line) <= 300 else f"{key}: {v}")
            elif UNREADABLE_CELL.match(v):  # a property the driver could not read, in a column with no name
                g.set(f"column {i + 1}", v, line if len(line) <= 300 else f"column {i + 1}: {v}")
            if ERR_RE.search(v):
                g.errors.append(v)
        idx = g.num("index")
        if idx is not None and 0 <= idx < 100000:
            _set(g, "index", sat_int(idx))
        _set(g, "bus_id", g.text("pci.bus_id") or "")
        doc.gpus.append(g)
    if not doc.gpus and not doc.error_kind:
        doc.problems.extend(nh.problems[:20] or [ln for ln in text.splitlines() if ln.strip()][:20])
    return doc


# ------------------------------------------------------------------ NVML probe JSON

_NVML_REASONS = (("gpu_idle", 0x1), ("applications_clocks_setting", 0x2), ("sw_power_cap", 0x4),
                 ("hw_slowdown", 0x8), ("sync_boost", 0x10), ("sw_thermal_slowdown", 0x20),
                 ("hw_thermal_slowdown", 0x40), ("hw_power_brake_slowdown", 0x80), ("display_clocks_setting", 0x100),
                 ("unknown", 0x8000000000000000))
"""nvmlClocksEventReason* bit values (NVML API reference, "Clocks Event Reasons"); the same mask
``--query-gpu=clocks_event_reasons.active`` prints."""


def reasons_from_mask(mask: int) -> dict[str, bool]:
    """A clocks-event-reasons bit mask -> reason name -> active."""
    return {name: bool(mask & bit) for name, bit in _NVML_REASONS}


def parse_nvml_smi(text: str) -> SmiDoc:
    """The NVML probe's JSON (:mod:`wizard.nvml_probe`) -> :class:`SmiDoc` with the same keys."""
    doc = SmiDoc("nvml", "python -m wizard.nvml_probe")
    try:
        d = json.loads(text)
    except (ValueError, RecursionError):
        doc.problems.append(text.strip()[:500] or "(empty output)")
        return doc
    if not isinstance(d, dict):
        doc.problems.append(text.strip()[:500])
        return doc
    if d.get("init") != "ok":
        _set(doc, "error_kind", "nvml")
        doc.error_lines.append(f'"init": {json.dumps(d.get("init"))}, "error": {json.dumps(d.get("error", ""))}')
        return doc
    _set(doc, "complete", True)
    if isinstance(d.get("driver_version"), str):
        _set(doc, "driver_version", Reading(d["driver_version"], f'"driver_version": {json.dumps(d["driver_version"])}'))
    cv = d.get("cuda_driver_version")
    if isinstance(cv, int) and not isinstance(cv, bool):
        _set(doc, "cuda_version", Reading(f"{cv // 1000}.{(cv % 1000) // 10}", f'"cuda_driver_version": {cv}'))
    if isinstance(d.get("count"), int):
        _set(doc, "attached", Reading(str(d["count"]), f'"count": {d["count"]}'))
    gpus = d.get("gpus")
    for i, item in enumerate(gpus if isinstance(gpus, list) else []):
        if isinstance(item, dict):
            doc.gpus.append(_nvml_gpu(item, i))
    return doc


def _nvml_gpu(d: Mapping[str, Any], position: int) -> GpuFacts:
    idx = d.get("index")
    g = GpuFacts(index=idx if isinstance(idx, int) and not isinstance(idx, bool) else position)

    def put(key: str, value: Any, name: str) -> None:
        if value is None or isinstance(value, (dict, list)):
            return
        if isinstance(value, bool):
            raw = "Enabled" if value else "Disabled"
        else:
            raw = str(value)
        g.set(key, raw, f'"{name}": {json.dumps(value)}')

    def sub(name: str) -> Mapping[str, Any]:
        v = d.get(name)
        return v if isinstance(v, dict) else {}

    def put_sub(key: str, sect: str, name: str) -> None:
        value = sub(sect).get(name)
        if value is None or isinstance(value, (dict, list)):
            return
        raw = ("Enabled" if value else "Disabled") if isinstance(value, bool) else str(value)
        g.set(key, raw, f'"{sect}": {json.dumps(sub(sect), sort_keys=True)}')

    for key, name in (("name", "name"), ("pci.bus_id", "pci_bus_id"), ("serial", "serial"), ("uuid", "uuid"),
                      ("brand", "brand"), ("vbios_version", "vbios_version"), ("inforom.img", "inforom_image_version"),
                      ("persistence_mode", "persistence_mode"), ("virtualization_mode", "virtualization_mode"),
                      ("temperature.gpu", "temperature_c"), ("temperature.gpu.tlimit", "temperature_margin_c"),
                      ("pstate", "pstate"), ("utilization.gpu", "utilization_gpu_pct"),
                      ("power.draw", "power_draw_w"), ("enforced.power.limit", "power_limit_enforced_w"),
                      ("power.default_limit", "power_limit_default_w")):
        put(key, d.get(name), name)
    _set(g, "bus_id", g.text("pci.bus_id") or "")
    _set(g, "header", g.line("pci.bus_id") or g.line("name"))
    for key, sect, name in (("mig.mode.current", "mig_mode", "current"), ("mig.mode.pending", "mig_mode", "pending"),
                            ("ecc.mode.current", "ecc_mode", "current"), ("ecc.mode.pending", "ecc_mode", "pending"),
                            ("remapped_rows.correctable", "remapped_rows", "correctable"),
                            ("remapped_rows.uncorrectable", "remapped_rows", "uncorrectable"),
                            ("remapped_rows.pending", "remapped_rows", "pending"),
                            ("remapped_rows.failure", "remapped_rows", "failure"),
                            ("retired_pages.single_bit_ecc.count", "retired_pages", "single_bit_ecc"),
                            ("retired_pages.double_bit.count", "retired_pages", "double_bit_ecc"),
                            ("retired_pages.pending", "retired_pages", "pending"),
                            ("temperature.shutdown", "temperature_thresholds_c", "shutdown"),
                            ("temperature.slowdown", "temperature_thresholds_c", "slowdown"),
                            ("temperature.max_operating", "temperature_thresholds_c", "gpu_max"),
                            ("temperature.memory.max_operating", "temperature_thresholds_c", "mem_max"),
                            ("temperature.shutdown.tlimit", "temperature_tlimit_c", "shutdown"),
                            ("temperature.slowdown.tlimit", "temperature_tlimit_c", "slowdown"),
                            ("temperature.max_operating.tlimit", "temperature_tlimit_c", "gpu_max"),
                            ("pcie.link.gen.current", "pcie", "gen_current"), ("pcie.link.gen.max", "pcie", "gen_max"),
                            ("pcie.link.gen.gpumax", "pcie", "gen_gpu_max"),
                            ("pcie.link.width.current", "pcie", "width_current"),
                            ("pcie.link.width.max", "pcie", "width_max"),
                            ("pcie.replay_counter", "pcie", "replay_counter"),
                            ("fabric.state", "fabric", "state"), ("fabric.status", "fabric", "status"),
                            ("fabric.cliqueId", "fabric", "clique_id"), ("fabric.clusterUuid", "fabric", "cluster_uuid")):
        put_sub(key, sect, name)
    ecc = sub("ecc_errors")
    ecc_line = f'"ecc_errors": {json.dumps(ecc, sort_keys=True)}'
    for ctr in ("volatile", "aggregate"):
        c = cv if isinstance(cv := ecc.get(ctr), dict) else {}
        for err in ("corrected", "uncorrected"):
            e = ev if isinstance(ev := c.get(err), dict) else {}
            for loc in ("total", "dram", "sram"):
                v = e.get(loc)
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    g.set(f"ecc.errors.{err}.{ctr}.{loc}", str(v), ecc_line)
    mask = d.get("clocks_event_reasons")
    if isinstance(mask, int) and not isinstance(mask, bool) and mask >= 0:
        line = f'"clocks_event_reasons": {mask}'
        g.set("clocks_event_reasons.active", hex(mask), line)
        for name, on in reasons_from_mask(mask).items():
            g.set(f"clocks_event_reasons.{name}", "Active" if on else "Not Active", line)
    procs = d.get("compute_processes")
    if isinstance(procs, list):
        _set(g, "processes_read", True)
        for p in procs:
            if isinstance(p, dict):
                used = p.get("used_memory_bytes")
                g.processes.append(GpuProcess(
                    pid=str(p.get("pid", "")), type="C", name=str(p.get("name", "") or ""),
                    used_mib=used / 1048576 if isinstance(used, (int, float)) and not isinstance(used, bool) else None,
                    lines=[json.dumps(p, sort_keys=True)]))
    errs = d.get("errors")
    if isinstance(errs, dict) and errs.get("handle"):
        g.errors.append(f'"handle": {json.dumps(str(errs["handle"]))}')
    return g


def csv_reasons(g: GpuFacts) -> None:
    """Fill ``clocks_event_reasons.<reason>`` from the ``clocks_event_reasons.active`` mask when a
    CSV carries only the mask."""
    r = g.get("clocks_event_reasons.active")
    mask = to_number(r.raw) if r else None
    if r is None or mask is None or mask < 0 or mask >= 2 ** 64:
        return
    for name, on in reasons_from_mask(sat_int(mask)).items():
        g.set(f"clocks_event_reasons.{name}", "Active" if on else "Not Active", r.line)


# ------------------------------------------------------------------ kinds and the probe



# ------------------------------------------------------------------ nvidia-smi dmon

_DMON_FIELDS = {"pwr": "power.draw", "gtemp": "temperature.gpu", "mtemp": "temperature.memory", "sm": "utilization.gpu",
                "mem": "utilization.memory", "mclk": "clocks.mem", "pclk": "clocks.sm",
                "sbecc": "ecc.errors.corrected.volatile.total", "dbecc": "ecc.errors.uncorrected.volatile.total"}
"""dmon column -> the query field it samples (nvidia-smi(1), ``dmon``: pwr W, gtemp/mtemp C, sm/mem %, mclk/pclk MHz,
sbecc/dbecc error counts in the interval)."""
_DMON_PEAK = {"power.draw", "temperature.gpu", "temperature.memory"}
_DMON_SUM = {"ecc.errors.corrected.volatile.total", "ecc.errors.uncorrected.volatile.total"}


def detect_smi_dmon(text: str) -> float:
    """0.95 for ``nvidia-smi dmon``: a ``# gpu ...`` column line naming dmon's columns, then numeric rows."""
    head = text[:4000]
    if not re.search(r"^[ \t]*#\s*gpu\s+(?:\S+\s+)*?(?:pwr|gtemp|sm|mclk|sbecc|rxpci)\b", head, re.M):
        return 0.0
    return 0.95


def parse_smi_dmon(text: str) -> SmiDoc:
    """``nvidia-smi dmon`` samples -> :class:`SmiDoc`, one GPU per index: power and temperatures at their peak over
    the samples, utilisation and clocks from the last sample, ECC counts summed (each sample counts its interval).
    A sampled excerpt, not a complete listing (``complete`` False). Never raises."""
    doc = SmiDoc("csv", "nvidia-smi dmon")
    cols: list[str] = []
    per: dict[str, GpuFacts] = {}
    peaks: dict[tuple[str, str], float] = {}
    sums: dict[tuple[str, str], float] = {}
    for raw in text.splitlines()[:200000]:
        s = raw.strip()
        if not s:
            continue
        if s.startswith("#"):
            words = s.lstrip("#").split()
            if words and words[0].lower() == "gpu":
                cols = [w.lower() for w in words]
            continue
        cells = s.split()
        if not cols or len(cells) != len(cols):
            if cols:
                doc.problems.append(s[:300])
            continue
        idx = cells[0]
        g = per.get(idx)
        if g is None:
            g = GpuFacts(index=sat_int(idx) if idx.isdigit() and len(idx) < 6 else None, header=s[:300])
            per[idx] = g
            doc.gpus.append(g)
        for col, v in zip(cols[1:], cells[1:]):
            key = _DMON_FIELDS.get(col)
            if key is None or v in ("-", "N/A"):
                continue
            n = to_number(v)
            if key in _DMON_PEAK and n is not None:
                if n >= peaks.get((idx, key), float("-inf")):
                    peaks[(idx, key)] = n
                    g.fields[key] = Reading(v, s[:300])
            elif key in _DMON_SUM and n is not None:
                sums[(idx, key)] = sums.get((idx, key), 0.0) + n
                g.fields[key] = Reading(f"{sums[(idx, key)]:g}", s[:300])
            else:
                g.fields[key] = Reading(v, s[:300])  # the last sample
    return doc
