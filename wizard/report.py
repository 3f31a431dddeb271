"""The acceptance report: the hand-over document that says whether a machine is ready, with the evidence.

One report model (a JSON-ready dict, :data:`REPORT_SCHEMA`, ``assets/schema/report.schema.json``) is built once
from what a build's store holds (:func:`node_from_build`) or what a capture bundle holds (:func:`node_from_bundle`),
for one node or several (:func:`assemble`), and rendered three ways from that one model: HTML (Jinja2 templates in
``assets/report/``, autoescaped, inline CSS with print rules, charts as inline SVG, no JavaScript), GitHub-flavoured
Markdown and JSON (:func:`render`). Nothing here judges anew what a build recorded: a build's findings, statuses,
acknowledgements and action runs are the store's; a bundle is judged by the same rules as ``check --snapshot``.

Per node it holds the inventory (read by the parsers bringup already has, from a capture bundle or from this
machine when the report is made on it), every stage and step with its status word and glyph, who and when, notes,
skip reasons and acknowledgements, every finding (verdict, message, subject, evidence, public source), the
validation results (value against its floor, unit and verdict; each GPU's one-GPU tests against their floors; the
all-reduce busbw curve with its floor; a P2P matrix; the soak's first and last intervals; each GPU's temperature and
power over time; error counters before and after) with a run on the CPU labelled as such and never drawn as a GPU's, and every action run (argv, who, exit status in words, duration, log path). At the
top: the verdict (``ready`` / ``ready with warnings`` / ``not ready``), bringup's version, the time and a content
hash; with several nodes a node x stage table marking the odd node out; and what changed since the previous report
of the same build (:func:`store_summary` keeps each report's findings summary under ``<build>/reports/``).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import hashlib
import json
import os
import re
import shlex
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

from wizard import __version__
from wizard.common import human_bytes, lazy_re
from wizard.i18n import N_
from wizard.facts import facts_of
from wizard.hosts import Host
from wizard.model import AUTO_SKIP_PREFIX, UNVERIFIED_PREFIX, Finding, blocks_handover, Measure, Stage, StepStatus, Verdict, proven_by_run, stage_rollup, status_for_verdict, worst
from wizard.actions import outcome_words
from wizard.probes import ProbeOutput, collect
from wizard.plan import whole
from wizard.registry import probes_named
from wizard.store import ActionRun, utcnow

REPORT_SCHEMA = 1
FORMATS = ("html", "md", "json")
SUMMARY_DIR = "reports"
"""Under a build directory: one findings summary (JSON) per report written of that build, newest last by name
(the second it was written), then by write time."""

INVENTORY_PROBES = ("hostname", "dmi", "os_release", "kernel", "lscpu", "numa", "meminfo", "dmidecode_17",
                    "nvidia_driver_version", "nvidia_smi_qx", "lspci_vvv", "nvcc_version", "torch_cuda",
                    "driver_fm_version", "ib_sysfs", "driver_dpkg", "driver_rpm")
"""The probes the inventory reads (each read by its parser as :data:`wizard.registry.PARSERS` declares it)."""

PHYS_WORD = {"linkup": "LinkUp", "polling": "Polling", "disabled": "Disabled", "sleep": "Sleep",
             "training": "PortConfigurationTraining", "recovery": "LinkErrorRecovery"}
"""An IB port's physical state as the kernel's sysfs ``phys_state`` spells it (Documentation/ABI/stable/
sysfs-class-infiniband)."""

STATUS_GLYPH = {"pending": "·", "running": "▶", "passed": "✓", "confirmed": "✓", "failed": "✗", "skipped": "–",
                "interrupted": "↯", "warned": "!", "cpu-only": "○"}
"""The TUI's glyph of each step status (``screens/glyphs.py``): always shown with the word."""
VERDICT_GLYPH = {"pass": "✓", "warn": "!", "fail": "✗", "skip": "–", "unknown": "?"}
READY, READY_WARN, NOT_READY = N_("ready"), N_("ready with warnings"), N_("not ready")
NOT_IN_BUNDLE = ("not in a capture bundle: actions and confirmations are recorded in the build "
                 "(`bringup report` on the machine)")
NOT_COLLECTED = "not collected by bringup"
NOT_READ = "not available (its probe gave nothing)"


class ReportError(Exception):
    """A report cannot be made (nothing to report on, an unwritable output); the message says why."""


# ------------------------------------------------------------------ small pieces


def _seconds_between(a: str | None, b: str | None) -> float | None:
    try:
        return (_dt.datetime.fromisoformat(str(b)) - _dt.datetime.fromisoformat(str(a))).total_seconds() if a and b \
            else None
    except ValueError:
        return None


def duration_words(seconds: float | None) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 4 min``; ``-`` when unknown."""
    if seconds is None or seconds < 0:
        return "-"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {(s % 3600) // 60} min"


WRITING_STEP_ENV = "BRINGUP_REPORT_STEP"
"""Set by the step whose run writes the report (report.document): that step, running while its own report is
written, is shown there as this document (``this_document``), not as a run still going (walk 30 #4)."""


def _status_doc(status: StepStatus | str) -> dict[str, str]:
    word = StepStatus(status).value
    return {"status": word, "glyph": STATUS_GLYPH[word]}


def finding_doc(f: Finding, acks: Mapping[str, Mapping[str, Any]] | None = None, checked_at: str = "") -> dict[str, Any]:
    """One finding as the report holds it: :meth:`Finding.to_dict` plus its glyph, when it was checked and the
    acknowledgement(s) of the event(s) it rests on."""
    d = f.to_dict()
    d["glyph"] = VERDICT_GLYPH[f.verdict.value]
    d["checked_at"] = checked_at
    acked = [dict(acks[k]) for k in f.key.split(",") if k and acks and k in acks]
    d["acknowledged"] = [{"key": a.get("key", ""), "reason": a.get("reason", ""), "user": a.get("user", ""),
                          "at": a.get("at", "")} for a in acked]
    return d


# ------------------------------------------------------------------ inventory


def _text(outputs: Mapping[str, ProbeOutput], name: str) -> str:
    o = outputs.get(name)
    return o.text.strip() if o is not None and o.ok else ""


def _dimms_unread(o: Any, read: bool) -> str:
    """Why the report has no memory-module table, from the dmidecode probe's own record (walk 21: "it needs root"
    was said to root on a machine without dmidecode): not installed, not root, no SMBIOS table, not collected."""
    if read:
        return ""
    if o is None:
        return "dmidecode -t 17 was not collected."
    err = str(getattr(o, "error", "") or "")
    if err.startswith("command not found"):
        return "dmidecode is not installed, so the memory modules were not read (install the dmidecode package)."
    if "ermission" in err or "root" in err or "/dev/mem" in (getattr(o, "stderr", "") or ""):
        return "dmidecode -t 17 was not read (it needs root)."
    if err:
        return f"dmidecode -t 17 was not read: {err}."
    return "dmidecode -t 17 listed no memory device (no SMBIOS table: a virtual machine, or firmware that gives none)."


def inventory(outputs: Mapping[str, ProbeOutput]) -> dict[str, Any]:
    """What the machine is, from the probes' outputs, read by bringup's own parsers (never raises: a probe that
    was not collected leaves its rows ``not collected``). Returns ``{"host": [[label, value]...], "memory":
    {...}, "gpus": [...], "nics": [...], "software": [[label, value]...]}``."""
    from wizard.parsers import cuda as p_cuda
    from wizard.parsers import fabric as p_fabric
    from wizard.parsers import gpu as p_gpu
    from wizard.parsers import host as p_host
    from wizard.parsers import hosttools as p_hosttools
    from wizard.parsers import packages as p_packages
    from wizard.parsers import pcie as p_pcie
    from wizard.parsers import platform as p_platform
    from wizard.rules.identity import dmi_fields
    from wizard.rules.smi import doc_from_outputs

    facts = facts_of(outputs)

    def parsed(name: str, fn: Any, on: str = "text") -> Any:
        o = outputs.get(name)
        if o is None or (not o.ok and not o.files and not o.text):
            return None
        try:
            return facts.parse(name, fn, on=on)
        except Exception:  # noqa: BLE001 - a parser bug must not lose the report
            return None

    miss = NOT_READ
    dmi = dmi_fields(outputs["dmi"].files) if "dmi" in outputs else {}
    osr = parsed("os_release", p_host.parse_os_release)
    lscpu = parsed("lscpu", p_hosttools.parse_lscpu)
    numa = parsed("numa", p_host.parse_numa, "files")
    mem = parsed("meminfo", p_host.parse_meminfo)
    host: list[list[str]] = [
        ["Host name", _text(outputs, "hostname") or miss],
        ["System", " ".join(x for x in (dmi.get("sys_vendor", ""), dmi.get("product_name", "")) if x) or miss],
        ["Serial number", dmi.get("product_serial", "") or miss],
        ["Board", " ".join(x for x in (dmi.get("board_vendor", ""), dmi.get("board_name", "")) if x) or miss],
        ["BIOS", " ".join(x for x in (dmi.get("bios_vendor", ""), dmi.get("bios_version", ""),
                                      f"({dmi['bios_date']})" if dmi.get("bios_date") else "") if x) or miss],
        ["BMC firmware", f"{NOT_COLLECTED} (bringup reads the BMC's event log and sensors, health.bmc, not its "
                         "version: `ipmitool mc info` shows it)"],
        ["CPU", (lscpu.fields.get("Model name", "") if lscpu else "") or miss],
        ["Sockets / cores per socket / threads per core",
         " / ".join(str(x) if x is not None else "?" for x in (lscpu.sockets, lscpu.cores_per_socket,
                                                              lscpu.threads_per_core)) if lscpu else miss],
        ["NUMA nodes", str(len(numa.nodes)) if numa and numa.nodes else miss],
        ["Memory", human_bytes(mem.total_kib * 1024) if mem and mem.total_kib else miss],
        ["OS", (osr.pretty_name if osr else "") or miss],
        ["Kernel", _text(outputs, "kernel") or miss],
    ]
    memory: dict[str, Any] = {"dimms": [], "populated": None, "slots": None}
    dm = parsed("dmidecode_17", p_platform.parse_dmidecode_memory)
    if dm is not None:
        devices = dm[0]
        memory["dimms"] = [{"locator": d.locator, "bank": d.bank_locator,
                            "size": human_bytes(d.size_mib * 1024 * 1024) if d.size_mib else
                            ("empty" if d.size_mib == 0 else "?"),
                            "type": d.mem_type, "speed_mts": d.configured_speed_mts or d.speed_mts}
                           for d in devices]
        memory["slots"] = len(devices)
        memory["populated"] = sum(1 for d in devices if d.populated)
    memory["why"] = _dimms_unread(outputs.get("dmidecode_17"), bool(memory["dimms"]))
    gpus: list[dict[str, Any]] = []
    doc = None
    try:
        doc, _ = doc_from_outputs(outputs)
    except Exception:  # noqa: BLE001
        doc = None
    if doc is not None:
        for i, g in enumerate(doc.gpus):
            def link(kind: str, which: str, g: Any = g) -> str:
                v = g.num(f"pcie.link.{kind}.{which}")
                return "?" if v is None else (f"Gen{int(v)}" if kind == "gen" else f"x{int(v)}")
            gpus.append({"index": g.index if g.index is not None else i, "name": g.name, "bus_id": g.bus_id,
                         "serial": g.serial, "uuid": g.text("uuid") or "", "vbios": g.text("vbios_version") or "",
                         "inforom": g.text("inforom.img") or "",
                         "pcie_capability": f"{link('gen', 'max')} {link('width', 'max')}",
                         "pcie_state": f"{link('gen', 'current')} {link('width', 'current')}",
                         "memory": g.text("memory.total") or ""})
    nics: list[dict[str, Any]] = []
    lspci = parsed("lspci_vvv", p_pcie.parse_lspci)
    if lspci is not None:
        for d in lspci.devices:
            if d.class_code.startswith("02") or any(w in d.class_name.lower() for w in ("ethernet", "infiniband",
                                                                                         "network")):
                def ls(x: Any) -> str:
                    return (f"{x.speed_gts:g} GT/s x{x.width}" if x.speed_gts is not None and x.width is not None
                            else "?")
                nics.append({"bus_id": d.bdf, "model": d.description, "driver": d.driver,
                             "pcie_capability": ls(d.lnkcap), "pcie_state": ls(d.lnksta),
                             "firmware": f"{NOT_COLLECTED} (`ethtool -i`)",
                             "port": f"{NOT_COLLECTED} (`ibstat`, `ip link`)"})
    ib = parsed("ib_sysfs", p_fabric.parse_ib_sysfs, "files")
    for hca in (ib.devices.values() if ib is not None else ()):
        # an RDMA device's firmware and ports, from sysfs (the node.fabric probe), on its PCI function's row
        ports = [p for p in ib.ports.ports if p.ca == hca.name]
        port = "; ".join(f"{hca.name} port {p.port}: {(p.state or '?').upper()} {PHYS_WORD.get(p.phys_state, p.phys_state or '?')}"
                         + (f" {p.rate_gbit_s:g} Gb/s" if p.rate_gbit_s is not None else "")
                         + (f" {p.link_layer}" if p.link_layer else "") for p in ports) or f"{hca.name}: no port read"
        fw = " ".join(x for x in (hca.fw_ver, f"(board {hca.board_id})" if hca.board_id else "") if x) or "?"
        row = next((n for n in nics if hca.pci_addr and n["bus_id"].lower() == hca.pci_addr.lower()), None)
        if row is None:
            nics.append({"bus_id": hca.pci_addr or "?", "model": hca.hca_type or hca.name, "driver": "",
                         "pcie_capability": "?", "pcie_state": "?", "firmware": fw, "port": port})
        else:
            row["firmware"], row["port"] = fw, (port if row["port"].startswith(NOT_COLLECTED) else
                                                f"{row['port']}; {port}")
    drv = parsed("nvidia_driver_version", p_gpu.parse_driver_version)
    nvcc = parsed("nvcc_version", p_cuda.parse_nvcc_version)
    torch = parsed("torch_cuda", p_cuda.parse_torch_cuda, "text+stderr")
    fm = parsed("driver_fm_version", p_packages.parse_fm_version)
    smi_driver = doc.driver_version.raw if doc is not None and doc.driver_version else ""
    dcgm_version = ""
    try:
        from wizard.rules.driver_install import DCGM_PKG, packages_of

        pl, _ = packages_of(outputs)
        found = pl.find(DCGM_PKG.pattern) if pl is not None else []
        dcgm_version = (f"{found[0].upstream or found[0].version} ({found[0].name})" if found else
                        "not installed" if pl is not None else "")
    except Exception:  # noqa: BLE001 - a parser bug must not lose the report
        dcgm_version = ""
    software = [
        ["NVIDIA driver", (f"{drv.version} ({drv.flavour})" if drv and drv.version else smi_driver) or miss],
        ["CUDA driver API (newest CUDA the driver supports)",
         (doc.cuda_version.raw if doc is not None and doc.cuda_version else "") or miss],
        ["CUDA toolkit (nvcc)", (nvcc.build or nvcc.release if nvcc else "") or miss],
        ["PyTorch", (f"{torch.torch_version}" + (f" (CUDA {torch.cuda})" if torch.cuda else "")
                     if torch and torch.torch_version else "") or miss],
        ["NCCL", f"{NOT_COLLECTED} (the validation run's log names the NCCL torch loads)"],
        ["Fabric Manager", (fm.version if fm and fm.version else "") or miss],
        ["DCGM", dcgm_version or miss],
    ]
    return {"host": host, "memory": memory, "gpus": gpus, "nics": nics, "software": software}


async def collect_inventory(host: Host, plan: Mapping[str, Any] | None = None) -> dict[str, ProbeOutput]:
    """Collect :data:`INVENTORY_PROBES` on ``host`` (read-only probes, concurrently)."""
    return await collect(host, probes_named(INVENTORY_PROBES), dict(plan or {}))


# ------------------------------------------------------------------ validation results


VALIDATION_STEPS = ("gpu.validate", "node.validate", "node.soak")
"""Steps whose action stores a results table (``ActionRun.results``); the multi-node stage's steps too."""


def _log_head(path: str, cap: int = 4 << 20) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(cap).decode("utf-8", "replace")
    except OSError:
        return ""


def validation_doc(run: ActionRun) -> dict[str, Any] | None:
    """One validation run's figures (its stored results table and all-reduce series), labelled by the device
    it ran on: a run on the CPU is ``cpu`` and says that it is not a GPU result. ``None`` when the run stored
    no results."""
    from wizard.rules.validate import CPU_ONLY_REASON, ran_on_cpu

    res = run.results if isinstance(run.results, dict) else {}
    rows = [r for r in res.get("results") or [] if isinstance(r, dict)]
    raw_series = res.get("series")
    series: dict[str, Any] = raw_series if isinstance(raw_series, dict) else {}
    points = [p for p in (series.get("points") or []) if isinstance(p, list) and len(p) == 2
              and all(isinstance(x, (int, float)) for x in p)]
    raw_tel = res.get("telemetry")
    tel: dict[str, Any] = raw_tel if isinstance(raw_tel, dict) else {}  # results stored before it: none
    soak = [_soak_doc(x) for x in _dicts(tel.get("soak"))[:MAX_DEVICES]]
    counters = [_counters_doc(x) for x in _dicts(tel.get("counters"))[:MAX_DEVICES]]
    samples = [_samples_doc(x) for x in _dicts(tel.get("samples"))[:MAX_DEVICES]]
    if not rows and not points and not soak and not counters and not samples:
        return None
    cpu = ran_on_cpu(_log_head(run.log_path)) or any(str(r.get("note", "")).startswith("CPU") for r in rows)
    p2p: dict[str, Any] | None = None
    pairs = [(str(r.get("metric", "")), r) for r in rows if r.get("test") == "p2p" and "->" in str(r.get("metric", ""))]
    if pairs:
        ends = sorted({x.strip() for m, _ in pairs for x in m.split("->", 1)},
                      key=lambda s: (0, int(s)) if s.isdigit() else (1, s))
        cells = {m.replace(" ", ""): r for m, r in pairs}
        vals = [float(r["value"]) for _, r in pairs if isinstance(r.get("value"), (int, float))]
        top = max(vals) if vals else 0.0
        p2p = {"devices": ends, "unit": pairs[0][1].get("unit", ""),
               "rows": [[{"value": cells[f"{a}->{b}"].get("value") if f"{a}->{b}" in cells else None,
                          "verdict": cells[f"{a}->{b}"].get("verdict", "") if f"{a}->{b}" in cells else "",
                          "shade": (round(float(cells[f"{a}->{b}"]["value"]) / top, 3)
                                    if top and f"{a}->{b}" in cells
                                    and isinstance(cells[f"{a}->{b}"].get("value"), (int, float)) else None)}
                         for b in ends] for a in ends]}
    return {"run": run.id, "step": run.step_id, "title": run.title, "started_at": run.started_at,
            "device": "cpu" if cpu else "gpu",
            "label": (f"{CPU_LABEL} ({CPU_ONLY_REASON}); its figures are not GPU results" if cpu
                      else STORAGE_LABEL if rows and all(str(r.get("test", "")).startswith("fio ") for r in rows)
                      else "GPU run"),
            "rows": rows,
            "series": {"points": points, "floor_gb_s": series.get("floor_gb_s"),
                       "floor_basis": str(series.get("floor_basis") or "")},
            "p2p": p2p,
            "per_gpu": None if cpu else _per_gpu(rows),
            "soak": soak,
            "samples": [] if cpu else samples,  # a CPU has no NVML: nothing of it is ever drawn as a GPU's
            "counters": counters}


STORAGE_LABEL = "Storage read test (fio on the data path): one row per fio job; no GPU involved"
"""What a run of node.storage_read's fio is labelled with (its rows are fio jobs, not GPU results)."""
CPU_LABEL = "CPU run: proves the software path, not a GPU"
"""What a validation run on the CPU is labelled with, wherever its figures are shown."""
PER_GPU_TESTS = (("gemm", "GEMM"), ("memcpy", "memory copy"), ("h2d", "host → device"), ("d2h", "device → host"))
"""The one-GPU measurements shown per GPU against their floors (test, column title)."""


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _dicts(v: Any) -> list[dict[str, Any]]:
    return [x for x in _list(v) if isinstance(x, dict)]


def _number(v: Any) -> float | int | None:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else None


def _pairs(v: Any) -> list[list[float]]:
    return [[float(p[0]), float(p[1])] for p in (v if isinstance(v, list) else [])
            if isinstance(p, list) and len(p) == 2 and all(_number(x) is not None for x in p)]


def _per_gpu(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The one-GPU tests as a GPU x test table (each cell the results-table row: value, unit, floor, verdict),
    ``None`` when the run measured none of :data:`PER_GPU_TESTS`."""
    cols = [(t, title) for t, title in PER_GPU_TESTS if any(r.get("test") == t for r in rows)]
    if not cols:
        return None
    subjects = list(dict.fromkeys(str(r.get("subject", "")) for r in rows if r.get("test") in dict(cols)))
    out = []
    for subj in subjects:
        cells = []
        for t, _ in cols:
            r = next((x for x in rows if x.get("test") == t and str(x.get("subject", "")) == subj), None)
            cells.append(None if r is None else {k: r.get(k) for k in ("value", "unit", "floor", "limit_op",
                                                                       "verdict", "note")})
        out.append({"subject": subj, "cells": cells})
    return {"columns": [{"test": t, "title": title} for t, title in cols], "rows": out}


def _soak_doc(x: Mapping[str, Any]) -> dict[str, Any]:
    """One soak series as the report holds it (a stored entry of :func:`wizard.rules.validate.telemetry`)."""
    def point(p: Any) -> dict[str, Any]:
        p = p if isinstance(p, dict) else {}
        return {"interval": _number(p.get("interval")), "value": _number(p.get("value")),
                "elapsed_s": _number(p.get("elapsed_s"))}

    judged = x.get("judged") if isinstance(x.get("judged"), dict) else None
    size = _number(x.get("size_bytes"))
    test = str(x.get("test", ""))
    who = str(x.get("subject", ""))
    if test == "soak_allreduce":
        ws = _number(x.get("world_size"))
        who = (f"all-reduce across {ws} ranks" if ws else "all-reduce") + (f", {human_bytes(size)}" if size else "")
    return {"test": test, "what": {"soak_gemm": "GEMM", "soak_allreduce": "all-reduce busbw"}.get(test, test),
            "metric": str(x.get("metric", "")), "unit": str(x.get("unit", "")), "subject": who,
            "device": _number(x.get("device")), "intervals": _number(x.get("intervals")),
            "first": point(x.get("first")), "last": point(x.get("last")), "change_pct": _number(x.get("change_pct")),
            "judged": None if judged is None else {k: _number(judged.get(k)) for k in ("k", "start", "end",
                                                                                         "change_pct")},
            "tolerance_pct": _number(x.get("tolerance_pct")),
            "verdict": str(x.get("verdict")) if x.get("verdict") in VERDICT_GLYPH else "unknown"}


def _counters_doc(x: Mapping[str, Any]) -> dict[str, Any]:
    """One device's error counters before and after the run (a stored entry of the telemetry)."""
    rows = [{"name": str(c.get("name", "")), "before": _number(c.get("before")), "after": _number(c.get("after")),
             "delta": _number(c.get("delta"))} for c in _dicts(x.get("counters"))[:60]]
    return {"subject": str(x.get("subject", "")), "device": _number(x.get("device")),
            "available": x.get("available") is True, "reason": str(x.get("reason") or ""), "counters": rows,
            "changed": [r["name"] for r in rows if r["delta"] not in (None, 0)],
            "new_xid_codes": [c if isinstance(c, int) and not isinstance(c, bool) else None
                              for c in _list(x.get("new_xid_codes"))][:20],
            "notes": [n for n in _list(x.get("notes")) if isinstance(n, str)][:10]}


def _samples_doc(x: Mapping[str, Any]) -> dict[str, Any]:
    """One device's NVML samples over time (a stored entry of the telemetry): ``[elapsed s, value]`` per metric."""
    from wizard.rules.validate import SAMPLE_METRICS

    rs, rt = x.get("series"), x.get("stats")
    raw_series: dict[str, Any] = rs if isinstance(rs, dict) else {}
    raw_stats: dict[str, Any] = rt if isinstance(rt, dict) else {}
    stats: dict[str, Any] = {}
    for m in SAMPLE_METRICS:
        st = raw_stats.get(m)
        stats[m] = ({k: _number(st.get(k)) for k in ("min", "max", "mean")} if isinstance(st, dict) else None)
    return {"subject": str(x.get("subject") or "?"), "device": _number(x.get("device")),
            "samples": _number(x.get("samples")) or 0, "per_point": _number(x.get("per_point")) or 1,
            "duration_s": _number(x.get("duration_s")), "power_limit_w": _number(x.get("power_limit_w")),
            "series": {m: _pairs(raw_series.get(m))[:MAX_CHART_POINTS] for m in SAMPLE_METRICS}, "stats": stats,
            "reasons": [{"bit": str(r.get("bit", "")), "label": str(r.get("label", "")),
                         "judged": str(r.get("judged", "")), "samples": _number(r.get("samples")) or 0}
                        for r in _dicts(x.get("reasons"))]}


MAX_CHART_POINTS = 500
"""Most points a chart draws of one stored series (the judge stores at most 120; a damaged store cannot make a
report heavy)."""
MAX_DEVICES = 64
"""Most devices shown per part of a run's telemetry (the judge keeps at most 64)."""


def action_doc(run: ActionRun, outcome: str | None = None) -> dict[str, Any]:
    """One action run: what ran (each command as a shell would show it), who, exit status in words (``outcome``:
    :meth:`wizard.engine.Build.run_outcome`, by what the run found; else by its exit alone), when, how long and where
    its log is."""
    return {"id": run.id, "step": run.step_id, "title": run.title,
            "commands": [shlex.join(a) if isinstance(a, list) else str(a) for a in run.argv],
            "user": run.user, "state": run.state.value, "exit_status": run.exit_status,
            "exit": outcome if outcome is not None else outcome_words(run.state, run.exit_status), "started_at": run.started_at, "ended_at": run.ended_at,
            "duration": duration_words(_seconds_between(run.started_at, run.ended_at)), "log": run.log_path}


# ------------------------------------------------------------------ nodes


def _judge_node(name: str, source: dict[str, Any], stages: Sequence[Stage], states: Mapping[str, dict[str, Any]],
                findings_by_step: Mapping[str, list[dict[str, Any]]], inv: dict[str, Any] | None, inv_source: str,
                acks: list[dict[str, Any]], validations: list[dict[str, Any]],
                actions: list[dict[str, Any]]) -> dict[str, Any]:
    """The node's part of the report, with its own verdict: ``not ready`` when a finding fails or a step is not
    done (pending, running, failed, interrupted, cpu-only), ``ready with warnings`` when a finding warns or is
    unknown, a step warned, or a person skipped a step only its run can prove (a DCGM level, a validation, a
    storage or RDMA measurement: ``unproven`` in ``waived``; nothing measured it), else ``ready``. The findings of a ``cpu-only`` step (its validation ran on the CPU)
    carry ``cpu_run: true``: rendered as "pass (CPU run)", never as a GPU's pass."""
    stage_docs: list[dict[str, Any]] = []
    not_done: list[dict[str, str]] = []
    waived: list[dict[str, Any]] = []
    withdrawn: list[dict[str, Any]] = []
    rechecks: list[dict[str, Any]] = []
    for st in stages:
        steps = []
        for s in st.steps:
            rec = states.get(s.id) or {}
            status = StepStatus(rec.get("status", "pending"))
            fs = findings_by_step.get(s.id, [])
            if rec.get("withdrawn"):
                withdrawn.append({"step": s.id, **rec["withdrawn"]})
            if rec.get("plan_changed"):
                rechecks.append({"step": s.id, "status": status.value, "changes": rec["plan_changed"]})
            # the machine's own skip (a check found nothing to verify) is "not applicable", by nobody (walk 30 #3)
            n_a = status is StepStatus.SKIPPED and str(rec.get("reason", "")).startswith(AUTO_SKIP_PREFIX)
            steps.append({"id": s.id, "title": s.title, **_status_doc(status), "verdict": rec.get("verdict"),
                          "reason": rec.get("reason", ""), "user": "" if n_a else rec.get("user", ""),
                          "updated_at": rec.get("updated_at"), "findings": len(fs), "not_applicable": n_a,
                          "this_document": bool(rec.get("this_document")),
                          "plan_changed": [c["key"] for c in rec.get("plan_changed") or []]})
            if blocks_handover(st.id, status):
                not_done.append({"step": s.id, "status": status.value, "reason": rec.get("reason", "")})
            elif (status is StepStatus.SKIPPED and rec.get("reason") and rec.get("user")
                  and not str(rec["reason"]).startswith(AUTO_SKIP_PREFIX)):  # a person's skip: with a reason, by someone
                waived.append({"step": s.id, "reason": rec.get("reason", ""), "user": rec.get("user", ""),
                               "at": rec.get("updated_at"), "unproven": proven_by_run(s), "confirmed": False})
            elif status is StepStatus.CONFIRMED and str(rec.get("reason", "")).startswith(UNVERIFIED_PREFIX):
                # a person's word over a check that could not run here: listed with the skips, nothing measured it
                waived.append({"step": s.id, "reason": rec.get("reason", ""), "user": rec.get("user", ""),
                               "at": rec.get("updated_at"), "unproven": True, "confirmed": True})
        roll = stage_rollup([StepStatus.PENDING if x["this_document"] else StepStatus(x["status"]) for x in steps])
        stage_docs.append({"id": st.id, "title": st.title, **_status_doc(roll), "steps": steps})
    cpu_steps = {x["id"] for st in stage_docs for x in st["steps"] if x["status"] == StepStatus.CPU_ONLY.value}
    findings = [{**f, "cpu_run": True} if s.id in cpu_steps else f
                for st in stages for s in st.steps for f in findings_by_step.get(s.id, [])]
    # a step a person skipped with a reason: its failed findings are waived with it (listed, not blocking; walk 24: a
    # single-node build whose skipped multi-node stage kept two 'unreachable' findings could never be ready)
    skipped_by_person = {w["step"] for w in waived if not w["confirmed"]}
    waived_ids = {id(f) for sid in skipped_by_person for f in findings_by_step.get(sid, [])}
    waived_fails = [f for f in findings if f["verdict"] == "fail" and id(f) in waived_ids]
    blocking = [f for f in findings if f["verdict"] == "fail" and id(f) not in waived_ids]
    warnings = [f for f in findings if f["verdict"] in ("warn", "unknown")]
    warned_steps = [x["id"] for st in stage_docs for x in st["steps"] if x["status"] == "warned"]
    unproven = [w for w in waived if w["unproven"]]  # a measurement a person chose not to run: nothing proved it
    # a step judged against plan answers that changed since is not proven against this plan: never a clean ready
    verdict = (NOT_READY if blocking or not_done else
               READY_WARN if warnings or warned_steps or unproven or waived_fails or rechecks else READY)
    return {"name": name, "source": source, "verdict": verdict,
            "worst_finding": worst(Verdict(f["verdict"]) for f in findings).value,
            "blocking": [_ref(f) for f in blocking], "warnings": [_ref(f) for f in warnings],
            "waived_findings": [_ref(f) for f in waived_fails],
            "steps_not_done": not_done, "waived": waived, "withdrawn_confirmations": withdrawn,
            "plan_changed": rechecks,
            "inventory": inv, "inventory_source": inv_source,
            "stages": stage_docs, "findings": findings, "acks": acks, "validations": validations,
            "actions": actions}


def _ref(f: Mapping[str, Any]) -> dict[str, str]:
    return {"id": f["id"], "step": f.get("step", ""), "subject": f.get("subject", ""), "message": f["message"],
            "verdict": f["verdict"]}


def _nccl_of_runs(runs: Sequence[ActionRun]) -> str:
    """The NCCL version the newest validation run's torch reported (its ``start`` event's ``versions.nccl``), with
    which run said it; on the CPU, that NCCL was not used; ``""`` when no run says."""
    from wizard.parsers.validate import Event, parse_event_line

    for run in reversed(runs):
        if run.step_id not in VALIDATION_STEPS:
            continue
        for line in _log_head(run.log_path, 1 << 20).splitlines():
            e = parse_event_line(line)
            if isinstance(e, Event) and e.kind == "start" and isinstance(e.get("versions"), dict):
                v = e.get("versions")
                if v.get("nccl"):
                    return f"{v['nccl']} (torch's, from validation run {run.id}'s log)"
                if e.get("device") == "cpu":
                    return f"not used: validation run {run.id} ran on the CPU (gloo), so torch loaded no NCCL"
    return ""


def node_from_build(build: Any, inv_outputs: Mapping[str, ProbeOutput] | None, inv_source: str) -> dict[str, Any]:
    """A node of the report from an opened :class:`wizard.engine.Build`: its step states, the latest check of
    every step (an action's judged log included), acknowledgements, action runs and validation results, as the
    store holds them. ``inv_outputs``: the probe outputs the inventory is read from (``None``: no inventory,
    ``inv_source`` says why)."""
    store = build.store
    acks = store.acks()
    states = {sid: {"status": st.status.value, "verdict": st.verdict.value if st.verdict else None,
                    "reason": st.reason, "user": st.user, "updated_at": st.updated_at}
              for sid, st in store.step_states().items()}
    writing = os.environ.get(WRITING_STEP_ENV, "")
    if writing in states and states[writing]["status"] == StepStatus.RUNNING.value:
        states[writing]["this_document"] = True
    for sid, changed in build.plan_changes().items():
        if sid in states:  # judged against answers the plan no longer holds (walk 30 #1)
            states[sid]["plan_changed"] = [{"key": k, "was": whole(was), "now": whole(now)} for k, was, now in changed]
    for sid, (confirmed, reopened) in store.withdrawn_confirmations().items():
        if sid in states:  # a person's confirmation a later failing/warning check or run withdrew (walk 29 #13)
            states[sid]["withdrawn"] = {"user": confirmed.user, "at": confirmed.updated_at, "note": confirmed.reason,
                                        "reopened_at": reopened.updated_at, "reopened_status": reopened.status.value}
    by_step: dict[str, list[dict[str, Any]]] = {}
    reads = store.latest_plan_reads()
    for st in build.stages:
        for s in st.steps:
            meta, fs = store.latest_check(s.id)
            if meta is not None:
                bundle = str(meta.get("snapshot") or "")
                # the plan answers the check read, kept with each finding so the next report can tell a finding a
                # plan edit settled from one a repair settled (walk 31 #3)
                read = {k: whole(v) for k, v in (reads.get(s.id) or {}).items()}
                by_step[s.id] = [{**finding_doc(f, acks, str(meta.get("finished_at") or "")),
                                  **({"checked_from": bundle} if bundle else {}),
                                  **({"plan_read": read} if read else {})} for f in fs]
    runs = store.action_runs()
    validations = [v for v in (validation_doc(r) for r in runs) if v is not None]
    host = store.host()
    meta = store.meta()
    inv = inventory(inv_outputs) if inv_outputs is not None else None
    if inv is not None:
        nccl = _nccl_of_runs(runs)
        if nccl:
            inv["software"] = [[k, nccl if k == "NCCL" else v] for k, v in inv["software"]]
    source = {"kind": "build", "build_id": build.info.build_id, "path": str(build.info.path),
              "created": str(meta.get("created", "")), "bringup_version": str(meta.get("bringup_version", ""))}
    node = _judge_node(str(host.get("hostname") or build.info.build_id), source, build.stages, states, by_step,
                       inv, inv_source,
                       [{"key": k, **{x: a.get(x, "") for x in ("finding_id", "subject", "message", "reason", "user",
                                                                  "at")}} for k, a in acks.items()],
                       validations, [action_doc(r, "writing this document" if (
                           r.step_id == writing and r.state.value == "running") else build.run_outcome(r))
                           for r in runs])
    # what this node was judged against (walk 30 #2): every plan answer, with when it was set
    node["plan"] = [{"key": k, "value": whole(v), "set_at": at} for k, v, at in store.plan_answers()]
    return node


async def node_from_bundle(path: Path | str, stages: Sequence[Stage]) -> dict[str, Any]:
    """A node of the report from a capture bundle (offline): every checked step judged by the same rules as
    ``check --snapshot``, the inventory read from the bundle; steps judged by actions or confirmed by hand are
    ``pending`` with the reason that a bundle does not hold them.

    Raises:
        wizard.capture.BundleError: not a bundle bringup can read.
    """
    from wizard.capture import load_bundle
    from wizard.engine import checked_steps, judge, probes_of
    from wizard.plan import valid_plan

    host, manifest = load_bundle(path)
    plan = valid_plan(dict(manifest["plan"]))
    sel = checked_steps(stages)
    outputs = await collect(host, probes_named(list(dict.fromkeys([*probes_of(sel), *INVENTORY_PROBES]))), plan)
    results = judge(sel, outputs, plan)
    created = str(manifest.get("created", ""))
    states: dict[str, dict[str, Any]] = {}
    by_step: dict[str, list[dict[str, Any]]] = {}
    for st in stages:
        for s in st.steps:
            if s.id in results:
                fs = results[s.id]
                v = worst(f.verdict for f in fs)
                states[s.id] = {"status": status_for_verdict(v).value, "verdict": v.value, "reason": "",
                                "user": "", "updated_at": created}
                by_step[s.id] = [finding_doc(f, None, created) for f in fs]
            else:
                states[s.id] = {"status": "pending", "verdict": None, "reason": NOT_IN_BUNDLE, "user": "",
                                "updated_at": None}
    ident = manifest.get("host") or {}
    inv = inventory(outputs)
    if inv["host"][0][1].startswith(NOT_READ) and ident.get("hostname"):
        inv["host"][0][1] = f"{ident['hostname']} (from the bundle's manifest)"
    source = {"kind": "snapshot", "build_id": None, "path": str(path), "created": created,
              "bringup_version": str(manifest.get("bringup_version", ""))}
    node = _judge_node(str(ident.get("fleet_node") or ident.get("hostname") or Path(path).name), source, stages,
                       states, by_step,
                       inv, f"capture bundle {Path(path).name} ({created})", [], [], [])
    node["plan"] = [{"key": k, "value": whole(v), "set_at": ""} for k, v in sorted(plan.items())]  # the bundle's plan
    return node


# ------------------------------------------------------------------ the whole report


def content_hash(nodes: Sequence[Mapping[str, Any]]) -> str:
    """``sha256:<hex>`` of the nodes' canonical JSON: the same build state gives the same hash."""
    blob = json.dumps(list(nodes), sort_keys=True, separators=(",", ":"), default=str).encode()
    return "sha256:" + hashlib.sha256(blob).hexdigest()


def node_matrix(nodes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The node x stage table: each cell the stage's status; a cell that differs from the status most nodes
    have (a strict majority, three nodes or more) is odd, and a node with an odd cell is the odd node out."""
    stages = [{"id": s["id"], "title": s["title"]} for s in nodes[0]["stages"]] if nodes else []
    rows = []
    for n in nodes:
        cells = {s["id"]: s["status"] for s in n["stages"]}
        rows.append({"node": n["name"], "verdict": n["verdict"], "cells": cells, "odd": []})
    if len(nodes) >= 3:
        for st in stages:
            counts: dict[str, int] = {}
            for r in rows:
                counts[r["cells"].get(st["id"], "")] = counts.get(r["cells"].get(st["id"], ""), 0) + 1
            common, k = max(counts.items(), key=lambda kv: kv[1])
            if k * 2 > len(rows):
                for r in rows:
                    if r["cells"].get(st["id"], "") != common:
                        r["odd"].append(st["id"])
        counts = {}
        for r in rows:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        common, k = max(counts.items(), key=lambda kv: kv[1])
        if k * 2 > len(rows):
            for r in rows:
                if r["verdict"] != common and "verdict" not in r["odd"]:
                    r["odd"].append("verdict")
    return {"stages": stages, "rows": [{**r, "glyphs": {k: STATUS_GLYPH.get(v, "") for k, v in r["cells"].items()},
                                        "odd_node_out": bool(r["odd"])} for r in rows]}


def summary(report: Mapping[str, Any]) -> dict[str, Any]:
    """What the next report of the same build compares with: time, hash and each finding (node, id, subject)
    with its verdict and message."""
    findings = []
    for n in report["nodes"]:
        for f in n["findings"]:
            findings.append({"node": n["name"], "id": f["id"], "subject": f["subject"], "verdict": f["verdict"],
                             "message": f["message"], **({"plan_read": f["plan_read"]} if f.get("plan_read") else {})})
    return {"schema": REPORT_SCHEMA, "generated_at": report["generated_at"], "content_hash": report["content_hash"],
            "verdict": report["verdict"], "findings": findings,
            "plan": {n["name"]: {p["key"]: p["value"] for p in n.get("plan") or []} for n in report["nodes"]}}


def changes(previous: Mapping[str, Any] | None, current: Mapping[str, Any]) -> dict[str, Any]:
    """New, resolved and changed findings since ``previous`` (a :func:`summary`); ``previous`` None: the first
    report. New: a finding that was not there (a pass included); resolved: one that is gone, or was not a pass
    and now passes; changed: its verdict differs (a message that differs only in a figure, its verdict the same, is
    not a change: a measured value moving on the same side of its threshold leaves the verdict as it was). A
    resolved finding's ``plan_changed`` (``[{"key", "was", "now"}]``) lists the plan answers its check read that the
    node's plan no longer holds, when there are any: the plan edit settled it, not a repair (walk 31 #3: a fail "resolved" by
    lowering ``gpu_count`` read as fixed)."""
    if not previous or not isinstance(previous.get("findings"), list):
        return {"previous": None, "new": [], "resolved": [], "changed": []}

    def key(f: Mapping[str, Any]) -> tuple[str, str, str]:
        return (str(f.get("node", "")), str(f.get("id", "")), str(f.get("subject", "")))

    before = {key(f): f for f in previous["findings"] if isinstance(f, dict)}
    now = {key(f): f for f in current["findings"]}
    new = [dict(f) for k, f in now.items() if k not in before]
    plan_now = current.get("plan") or {}

    def plan_changed(f: Mapping[str, Any]) -> list[dict[str, Any]]:
        read = f.get("plan_read")
        node_plan = plan_now.get(str(f.get("node", "")))
        if not isinstance(read, dict) or not isinstance(node_plan, dict):
            return []
        return [{"key": k, "was": was, "now": node_plan.get(k)} for k, was in sorted(read.items())
                if str(whole(node_plan.get(k))) != str(whole(was))]

    resolved, changed = [], []
    for k, f in before.items():
        cur = now.get(k)
        if cur is None or (f.get("verdict") != "pass" and cur["verdict"] == "pass"):
            by_plan = plan_changed(f)
            resolved.append({**f, "now": "gone" if cur is None else "pass", "plan_changed": by_plan})
        elif f.get("verdict") != cur["verdict"]:
            changed.append({**cur, "was_verdict": f.get("verdict"), "was_message": f.get("message")})
    return {"previous": {"generated_at": previous.get("generated_at"), "content_hash": previous.get("content_hash"),
                         "verdict": previous.get("verdict")},
            "new": new, "resolved": resolved, "changed": changed}


def distinct_names(nodes: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The nodes with a name no other node in the report has: two bundles of one host (captured before and after a
    repair, or two hosts that answer to the same hostname) become ``gpu01 (1 of 2)`` and ``gpu01 (2 of 2)`` in the
    order given, so the node x stage table, the blocking list and the per-node sections never merge or confuse them
    (each keeps its ``source``)."""
    total = Counter(str(n["name"]) for n in nodes)
    seen: Counter[str] = Counter()
    out = []
    for n in nodes:
        name = str(n["name"])
        if total[name] > 1:
            seen[name] += 1
            n = {**n, "name": f"{name} ({seen[name]} of {total[name]})"}
        out.append(n)
    return out


def assemble(nodes: Sequence[dict[str, Any]], previous: Mapping[str, Any] | None = None,
             now: str | None = None) -> dict[str, Any]:
    """The report model (``assets/schema/report.schema.json``): the nodes, the overall verdict (the worst node's:
    not ready > ready with warnings > ready), bringup's version, the time, the content hash, the node x stage
    table (several nodes) and what changed since ``previous`` (a :func:`summary`).

    Raises:
        ReportError: no node.
    """
    if not nodes:
        raise ReportError("nothing to report on: no build and no bundle")
    nodes = distinct_names(nodes)
    rank = {READY: 0, READY_WARN: 1, NOT_READY: 2}
    verdict = max((n["verdict"] for n in nodes), key=lambda v: rank[v])
    doc: dict[str, Any] = {
        "schema": REPORT_SCHEMA, "kind": "bringup-report", "bringup_version": __version__,
        "generated_at": now or utcnow(), "content_hash": content_hash(nodes), "verdict": verdict,
        "blocking": [{"node": n["name"], **b} for n in nodes for b in n["blocking"]],
        "warnings": [{"node": n["name"], **w} for n in nodes for w in n["warnings"]],
        "steps_not_done": [{"node": n["name"], **s} for n in nodes for s in n["steps_not_done"]],
        "waived": [{"node": n["name"], **w} for n in nodes for w in n.get("waived", [])],
        "waived_findings": [{"node": n["name"], **f} for n in nodes for f in n.get("waived_findings", [])],
        "withdrawn_confirmations": [{"node": n["name"], **w} for n in nodes
                                    for w in n.get("withdrawn_confirmations", [])],
        "plan_changed": [{"node": n["name"], **c} for n in nodes for c in n.get("plan_changed", [])],
        "nodes": list(nodes),
    }
    groups: dict[tuple[str, str, str], list[str]] = {}
    for s in doc["steps_not_done"]:
        groups.setdefault((s["node"], s["status"], s["reason"]), []).append(s["step"])
    doc["steps_not_done_grouped"] = [{"node": k[0], "status": k[1], "reason": k[2], "steps": v}
                                     for k, v in groups.items()]
    doc["matrix"] = node_matrix(nodes) if len(nodes) > 1 else None
    doc["changes"] = changes(previous, summary(doc))
    return doc


# ------------------------------------------------------------------ "what changed": summaries in the build


def previous_summary(build_dir: Path) -> dict[str, Any] | None:
    """The newest stored summary of a report of this build (``<build>/reports/*.json``), or ``None`` (none, or
    unreadable: a damaged file is skipped, never trusted)."""
    d = Path(build_dir) / SUMMARY_DIR
    try:
        files = [p for p in d.iterdir() if p.suffix == ".json"]
    except OSError:
        return None
    named = []
    for p in files:
        try:  # named by the second: two written in one second sort by write time (ns), not by their hashes
            named.append((p.name.rsplit("-", 1)[0], p.stat().st_mtime_ns, p.name, p))
        except OSError:
            continue
    for *_key, p in sorted(named, reverse=True):
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("findings"), list):
            return doc
    return None


def store_summary(build_dir: Path, report: Mapping[str, Any]) -> Path:
    """Write the report's :func:`summary` under ``<build>/reports/`` (atomically; named by time and hash) and
    return its path.

    Raises:
        OSError: the build directory cannot be written (the report itself is still written).
    """
    d = Path(build_dir) / SUMMARY_DIR
    d.mkdir(mode=0o700, exist_ok=True)
    stamp = str(report["generated_at"]).replace(":", "").replace("-", "").replace("+0000", "Z")
    target = d / f"{stamp}-{str(report['content_hash']).split(':')[-1][:12]}.json"
    tmp = target.with_name(target.name + ".part")
    tmp.write_text(json.dumps(summary(report), indent=1), encoding="utf-8")
    os.replace(tmp, target)
    return target


# ------------------------------------------------------------------ rendering


def busbw_chart(points: Sequence[Sequence[float]], floor: float | None, *, width: int = 640,
                height: int = 260) -> dict[str, Any] | None:
    """Geometry of the busbw-by-size chart the HTML template draws as inline SVG: message size (bytes) on a log2
    x axis, busbw (GB/s) on a linear y axis from 0, the floor as a horizontal line. ``None`` for an empty series."""
    pts = [(float(s), float(v)) for s, v in points if s and s > 0 and v is not None and v >= 0]
    if not pts:
        return None
    import math

    left, right, top, bottom = 64, 16, 16, 40
    w, h = width - left - right, height - top - bottom
    xs = [math.log2(s) for s, _ in pts]
    x0, x1 = min(xs), max(xs)
    span = (x1 - x0) or 1.0
    ytop = max([v for _, v in pts] + ([floor] if floor else [])) * 1.05 or 1.0
    mag = 10 ** math.floor(math.log10(ytop / 4))
    ystep = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag * 4 >= ytop)
    ymax = ystep * 4

    def X(lx: float) -> float:
        return round(left + (lx - x0) / span * w, 1)

    def Y(v: float) -> float:
        return round(top + h - v / ymax * h, 1)

    step = max(1, int(math.ceil(span / 8)))
    xticks = [{"x": X(float(e)), "label": human_bytes(2 ** e)} for e in range(int(math.ceil(x0)), int(x1) + 1, step)]
    yticks = [{"y": Y(ystep * i), "label": f"{ystep * i:.4g}"} for i in range(5)]
    return {"width": width, "height": height, "left": left, "top": top, "right": width - right, "bottom": top + h,
            "polyline": " ".join(f"{X(math.log2(s))},{Y(v)}" for s, v in pts),
            "dots": [{"x": X(math.log2(s)), "y": Y(v), "title": f"{human_bytes(s)}: {v:.3g} GB/s"} for s, v in pts],
            "floor_y": Y(floor) if floor else None, "floor": floor, "xticks": xticks, "yticks": yticks}


def _nice_step(span: float, parts: int) -> float:
    """The smallest 1, 2, 2.5 or 5 x 10^k at least ``span / parts`` (a chart's tick step)."""
    import math

    raw = max(span, 1e-9) / parts
    mag = 10 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw * (1 - 1e-9))


def time_chart(points: Sequence[Sequence[float]], *, label: str, unit: str, limit: float | None = None,
               width: int = 340, height: int = 180) -> dict[str, Any] | None:
    """Geometry of a small metric-over-time chart the HTML template draws as inline SVG: elapsed time since the
    run's start on the x axis (seconds, minutes past 10 minutes), the metric (``label`` in ``unit``) on a linear y
    axis fitted to the data with round ticks, and ``limit`` (a power limit) as a dashed line. ``points``:
    ``[[elapsed_s, value]...]``. ``None`` for an empty series."""
    import math

    pts = [(float(x), float(y)) for x, y in points
           if isinstance(x, (int, float)) and isinstance(y, (int, float)) and math.isfinite(x) and math.isfinite(y)]
    if not pts:
        return None
    left, right, top, bottom = 52, 12, 12, 36
    w, h = width - left - right, height - top - bottom
    xmax = max(max(x for x, _ in pts), 1.0)
    minutes = xmax > 600
    scale = 60.0 if minutes else 1.0
    xstep = _nice_step(xmax / scale, 4) * scale
    xend = math.ceil(xmax / xstep) * xstep
    ys = [y for _, y in pts] + ([limit] if isinstance(limit, (int, float)) and math.isfinite(limit) else [])
    lo, hi = min(ys), max(ys)
    ystep = _nice_step((hi - lo) or max(1.0, abs(hi) * 0.1), 4)
    y0, y1 = math.floor(lo / ystep) * ystep, math.ceil(hi / ystep) * ystep
    if y1 <= y0:
        y0, y1 = y0 - ystep, y1 + ystep

    def X(v: float) -> float:
        return round(left + max(0.0, v) / xend * w, 1)

    def Y(v: float) -> float:
        return round(top + h - (v - y0) / (y1 - y0) * h, 1)

    xticks = [{"x": X(i * xstep), "label": f"{i * xstep / scale:g}"} for i in range(int(round(xend / xstep)) + 1)]
    yticks = [{"y": Y(y0 + i * ystep), "label": f"{y0 + i * ystep:g}"}
              for i in range(int(round((y1 - y0) / ystep)) + 1)]
    return {"width": width, "height": height, "left": left, "top": top, "right": width - right, "bottom": top + h,
            "points": len(pts), "polyline": " ".join(f"{X(x)},{Y(y)}" for x, y in pts),
            "xticks": xticks, "yticks": yticks, "x_label": f"elapsed ({'min' if minutes else 's'})",
            "y_label": f"{label} ({unit})",
            "limit_y": Y(limit) if isinstance(limit, (int, float)) and math.isfinite(limit) else None, "limit": limit}


def samples_summary(s: Mapping[str, Any]) -> str:
    """One line of a device's NVML samples (a validation's ``samples`` entry): min-max of temperature, power and SM
    clock, how many samples over how long, and the clock-event reasons seen."""
    words = {"temp_c": ("temperature", "°C"), "power_w": ("power", "W"), "sm_clock_mhz": ("SM clock", "MHz")}
    parts = []
    for m, (name, unit) in words.items():
        st = (s.get("stats") or {}).get(m)
        if not st or st.get("min") is None or st.get("max") is None:
            parts.append(f"{name} not sampled")
            continue
        detail = [f"mean {_short(st['mean'])}"] if st.get("mean") is not None else []
        if m == "power_w" and s.get("power_limit_w"):
            detail.append(f"limit {_short(s['power_limit_w'])} W")
        parts.append(f"{name} {_short(st['min'])}–{_short(st['max'])} {unit}"
                     + (f" ({', '.join(detail)})" if detail else ""))
    n, dur = s.get("samples") or 0, s.get("duration_s")
    line = "; ".join(parts) + f"; {n} sample{'' if n == 1 else 's'}" + (f" over {duration_words(dur)}" if dur else "")
    reasons = [f"{r['label'] or r['bit']} ({r['bit']}, {'not judged' if r['judged'] == 'ignore' else r['judged']}) in "
               f"{r['samples']} sample{'' if r['samples'] == 1 else 's'}" for r in s.get("reasons") or []]
    return line + ("; clock-event reasons: " + ", ".join(reasons) if reasons else "; no clock-event reason active")


def _short(v: Any) -> str:
    """A figure in a sentence or on an axis: whole numbers without decimals (``700``, ``1,980``), else one decimal
    (three significant digits below 10)."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return "-" if v is None else str(v)
    if float(v).is_integer():
        return f"{int(v):,}"
    return f"{v:,.1f}" if abs(v) >= 10 else f"{v:.3g}"


def _pct(v: Any) -> str:
    return "-" if not isinstance(v, (int, float)) or isinstance(v, bool) else f"{v:+.1f}%"


def _signed(v: Any) -> str:
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return "-"
    return f"{v:+,}" if isinstance(v, int) else f"{v:+,.3g}"


def counters_table(devices: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The counters of a run as one table: a row per counter, a column per device whose counters were read, each
    cell ``{"before", "after", "delta", "changed"}`` (``None`` where the device has no such counter); ``unread``:
    the devices whose counters were not read, with why."""
    read = [d for d in devices if d.get("counters")]
    names = list(dict.fromkeys(c["name"] for d in read for c in d["counters"]))
    rows = []
    for name in names:
        cells = []
        for d in read:
            c = next((x for x in d["counters"] if x["name"] == name), None)
            cells.append(None if c is None else {**c, "changed": c["delta"] not in (None, 0)})
        rows.append({"name": name, "cells": cells, "changed": any(x and x["changed"] for x in cells)})
    return {"devices": [d["subject"] for d in read], "rows": rows,
            "unread": [{"subject": d["subject"], "reason": d["reason"] or "not read"} for d in devices
                       if not d.get("counters")]}


def _env(autoescape: bool) -> Any:
    import jinja2

    from wizard.data import ASSETS

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(ASSETS / "report")), autoescape=autoescape,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["mdcell"] = md_cell
    env.filters["distinct"] = distinct_rows
    env.filters["codespans"] = html_code_spans
    env.filters["fence"] = md_fence
    env.filters["human_bytes"] = human_bytes
    env.filters["short_time"] = _short_time
    env.filters["figure"] = _figure
    env.filters["measured"] = measured_text
    env.globals["busbw_chart"] = busbw_chart
    env.globals["time_chart"] = time_chart
    env.globals["counters_table"] = counters_table
    env.globals["samples_summary"] = samples_summary
    env.globals["cpu_label"] = CPU_LABEL
    env.filters["pct"] = _pct
    env.filters["short"] = _short
    env.filters["signed"] = _signed
    return env


def _short_time(iso: Any) -> str:
    from wizard.store import short_time

    return short_time(str(iso)) if iso else "-"


def measured_text(d: Any) -> str:
    """A finding's ``measured`` object (:meth:`wizard.model.Measure.to_dict`) as one line: ``"busbw at 8 GiB: 182.4
    GB/s, expected ≥ 150 GB/s"``; ``""`` for none or one that does not read as a measure (a report never fails on
    it)."""
    if not d:
        return ""
    try:
        return Measure.from_dict(d).text()
    except ValueError:
        return ""


def _figure(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return "-" if v is None else str(v).lower()
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else (f"{v:.2f}" if abs(v) >= 1 else f"{v:.3g}")
    return str(v)


CODE_SPAN = lazy_re(r"`([^`]+)`")
"""A code span in bringup's own text (a command to run: ``ipmitool mc info``), one backtick each side."""


def distinct_rows(findings: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Findings as one-line table rows, each row once: two steps that judged the same log give the same finding (walk
    34 #19e: ``multinode.nodes`` listed twice in the passed table); the JSON keeps both, each with its step."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for f in findings:
        key = (str(f.get("verdict")), str(f.get("id")), str(f.get("subject")), str(f.get("message")))
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def md_cell(text: Any) -> str:
    """Machine text made safe for one GitHub-flavoured Markdown table cell: one line, ``|`` and HTML escaped,
    backslashes and emphasis characters kept literal; a code span (:data:`CODE_SPAN`) stays one, only its ``|``
    escaped (the table's; nothing else is interpreted inside a code span), and a lone backtick is literal."""
    s = " ".join(str(text).split())
    out, at = [], 0
    for m in CODE_SPAN.finditer(s):
        out.append(_md_text(s[at:m.start()]))
        out.append("`" + m.group(1).replace("|", "\\|") + "`")
        at = m.end()
    out.append(_md_text(s[at:]))
    return "".join(out)


def _md_text(s: str) -> str:
    for ch in ("\\", "|", "*", "_", "`", "[", "]"):
        s = s.replace(ch, "\\" + ch)
    # "<" could open raw HTML and "&" an entity ("&amp;", "&#60;"): only an "&" that would is escaped, so "Plan &
    # sizing" reads right pasted raw into a ticket (walk 34 #19d); a ">" inside a table cell is plain text ("-> driver")
    return re.sub(r"&(?=#?\w{1,32};)", "&amp;", s).replace("<", "&lt;")


def html_code_spans(text: Any) -> Any:
    """Text for the HTML report: escaped first, then each code span (:data:`CODE_SPAN`) made a ``<code>`` element
    (so machine text can never add markup); a :class:`markupsafe.Markup`."""
    from markupsafe import Markup, escape

    return Markup(CODE_SPAN.sub(lambda m: f"<code>{m.group(1)}</code>", str(escape(str(text)))))


def md_fence(lines: Sequence[str]) -> str:
    """Evidence lines as a fenced code block whose fence is longer than any backtick run inside (so machine text
    cannot close it)."""
    body = "\n".join(str(x) for x in lines)
    run = longest = 0
    for ch in body:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}text\n{body}\n{fence}"


def render(report: Mapping[str, Any], fmt: str) -> str:
    """The report as ``html``, ``md`` or ``json`` text.

    Raises:
        ReportError: an unknown format.
    """
    if fmt == "json":
        return json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    if fmt == "html":
        return _env(True).get_template("report.html.j2").render(r=report)
    if fmt == "md":
        return _env(False).get_template("report.md.j2").render(r=report)
    raise ReportError(f"unknown report format {fmt!r}: one of {', '.join(FORMATS)}")


def format_of(path: str | None, fmt: str | None) -> str:
    """The format to write: ``fmt`` when given, else from the output's extension (.md, .json; anything else html).

    Raises:
        ReportError: an unknown format.
    """
    if fmt:
        if fmt not in FORMATS:
            raise ReportError(f"unknown report format {fmt!r}: one of {', '.join(FORMATS)}")
        return fmt
    ext = Path(path or "").suffix.lower()
    return {".md": "md", ".markdown": "md", ".json": "json"}.get(ext, "html")


def run_async(coro: Any) -> Any:
    """Run a coroutine to its end (the CLI's one event loop for a report)."""
    return asyncio.run(coro)
