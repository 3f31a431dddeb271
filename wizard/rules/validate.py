"""Judging the validation script's logs: one GPU at a time, the whole node, the soak.

Input is the action's log (the script's ``BRINGUP {json}`` events, read by :func:`wizard.parsers.validate.parse_events`,
interleaved with anything else the run printed). Expectations come from the log itself: each ``device`` event
carries the torch device name (matched to ``assets/validate_gpus.csv`` -> ``assets/gpu_specs.csv``), its PCI bus
id and, when the script reports them, ``pcie`` (``current_gen``, ``current_width``, ``max_gen``, ``max_width``)
and ``nvlink`` (``links_active``, ``version``). Every threshold is a row of ``assets/validate_thresholds.csv``
(each with its source; arithmetic or judgement marked "(derived)"); all-reduce floors come from
``assets/nccl_floors.csv``. Messages show the arithmetic.

Units: GB/s = 1e9 bytes/s; TFLOPS = 1e12 FLOP/s; sizes in bytes (shown as KiB/MiB/GiB); °C; W; MHz.

Rules, in short (ids in brackets):

* one GPU (``gpu.*``): bf16 GEMM TFLOPS against the achievable figure (measured MAMF, else datasheet x 0.729
  (derived)): WARN below 0.9 x, FAIL below 0.75 x [gpu.gemm]; device-to-device copy against the datasheet memory
  bandwidth: WARN below 0.69 x, FAIL below 0.57 x (derived from DCGM) [gpu.memcpy]; pinned host<->device against
  the PCIe generation x width practical figure [gpu.h2d, gpu.d2h]; memory pattern errors > 0
  FAIL [gpu.memory]; the training loss must fall (last/first <= 0.9) [gpu.train]; NVML clock-event reasons
  [gpu.throttle] (B11/C3); Xid/ECC/remap/AER counter deltas [gpu.counters] (C5).
* the node (``node.*``): every rank 0..n-1 reported its sanity all-reduce [node.sanity] (D3); all-reduce sweep:
  #wrong = 0 at every size, busbw at the largest size >= the floor [node.allreduce_sweep] (D4); P2P pairs within
  10%/25% of the median pair [node.p2p] (D1); nccl-tests ``all_reduce_perf`` output in the same log is judged by
  :func:`wizard.rules.nccl.judge_nccl_tests` [node.allreduce]; NCCL_DEBUG failures by
  :func:`wizard.rules.nccl.judge_nccl_log`.
* the soak (``soak.*``): no new Xid/ECC/AER/remap [soak.counters], no sustained HW thermal slowdown or power brake
  [soak.throttle], performance at the end within 5% of the start [soak.perf] (medians of the first and last
  quarter of the intervals after a warm-up interval; UNKNOWN below 3 intervals), no wrong results.
* every run: the script's errors (torch missing, a collective timeout naming the rank, out of memory, an
  exception) are FAIL with the remedy [<stage>.run]; a log without events is ``unknown``.

CPU runs: performance has nothing to be judged against (bringup judges GPUs, not the CPU that stands in for
them in tests and CI), so performance findings are ``skip`` with the measured figure in the message; correctness
(pattern errors, wrong all-reduce results, ranks, loss) is judged as on a GPU. A CPU run is never failed for
being slow.

:func:`analyse` returns the findings plus a results table (:class:`ResultRow`) and the all-reduce series with its
floor, for screens and ``--json``; :func:`judge_gpu`, :func:`judge_node` and :func:`judge_soak` are the
``ActionSpec.judge`` functions (log text, plan) -> findings.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from wizard.common import human_bytes, to_float, to_int
from wizard.data import table
from wizard.model import Finding, Measure, Verdict, measure, tightest
from wizard.parsers.validate import Event, ValidateLog, num, parse_events
from wizard.i18n import N_, Msg, joined, SEMICOLON, tr
from wizard.common import lazy_re

SRC_MAMF = ("Stas Bekman, Machine Learning Engineering, 'Maximum Achievable Matmul FLOPS comparison table' "
            "(https://github.com/stas00/ml-engineering/blob/master/compute/accelerator/README.md)")
SRC_DCGM = "NVIDIA DCGM nvvs/diag-skus.yaml (target = 0.75 x measured), https://github.com/NVIDIA/DCGM"
SRC_C2 = ("Azure HPC health checks check_cuda_bw (24 GB/s Gen4 x16, 52 GB/s Gen5 x16), "
          "https://github.com/Azure/azurehpc-health-checks; IBM Autopilot pciebw (25%/80% of the practical figure), "
          "https://github.com/IBM/autopilot")
SRC_C4 = ("DCGM diagnostics, memory plugin (GPU memory: pattern test passes; bandwidth >= the SKU's minimum), "
          "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html")
SRC_B11 = ("NVML API reference, nvmlDeviceGetCurrentClocksEventReasons, https://docs.nvidia.com/deploy/nvml-api/; "
           "Azure HPC health checks azure_gpu_clock_throttling, https://github.com/Azure/azurehpc-health-checks")
SRC_C5 = ("re-read the passive health checks after an active stage: any new Xid, ECC error, remap or AER counts, judged "
          "on deltas, not lifetime totals (bringup's judgement); Xid severity: NVIDIA Xid catalog, "
          "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html")
SRC_D1 = ("bringup's judgement (derived, following Microsoft SuperBench's variance rule, "
          "https://github.com/microsoft/superbenchmark): P2P copies have no errors and each pair is within 10%/25% of "
          "the median pair")
SRC_D3 = ("Stas Bekman, Machine Learning Engineering, torch-distributed-gpu-test.py (every rank of a torchrun job "
          "reports OK), https://github.com/stas00/ml-engineering")
SRC_D4 = ("NVIDIA nccl-tests (#wrong = 0 at every size; busbw at the largest size >= the floor), "
          "https://github.com/NVIDIA/nccl-tests; doc/PERFORMANCE.md (busbw = algbw x 2(n-1)/n), "
          "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md")
SRC_TRAIN = ("bringup's judgement: a small training loop whose loss must at least halve (a model that does not learn "
             "stays near its first loss)")
SRC_SOAK = ("bringup's judgement, following Microsoft SuperBench's variance rule (https://github.com/microsoft/"
            "superbenchmark): no new Xid/ECC/AER/remap during the soak, no sustained throttle, end within 5% of start")
SRC_RUN = "bringup's judgement: the validation script's own event protocol (it reports each stage's start and end)"
SRC_FLOORS = ("NVIDIA nccl-tests doc/PERFORMANCE.md (busbw), https://github.com/NVIDIA/nccl-tests/blob/master/doc/"
              "PERFORMANCE.md; Azure HPC health checks, https://github.com/Azure/azurehpc-health-checks; Stas Bekman, "
              "Machine Learning Engineering, https://github.com/stas00/ml-engineering")

KINDS = ("gpu", "node", "soak")
FATAL_ERRORS = ("torch_missing", "no_cuda", "rendezvous")
"""Error kinds that stop the run before any test: nothing else is judged."""
STAGE_OF = {"gpu": "gpu", "node": "node", "soak": "soak"}
"""Finding id prefix per validation kind (``gpu.gemm``, ``node.sanity``, ``soak.perf``)."""

BAD_REASON_BITS = {0x8: "HW slowdown", 0x20: "SW thermal slowdown", 0x40: "HW thermal slowdown",
                   0x80: "HW power brake"}
"""Fallback when assets/smi_clock_events.csv cannot be read (NVML nvmlClocksEventReason* bits)."""
SUSTAINED_BITS = 0x40 | 0x80
"""HW thermal slowdown and HW power brake: FAIL when active for more than throttle_fail_fraction of the samples."""


# ------------------------------------------------------------------ data

def threshold(name: str, default: float) -> float:
    """A value of ``assets/validate_thresholds.csv`` (``default`` if the row is missing or unreadable)."""
    try:
        for row in table("validate_thresholds.csv"):
            if row.get("name") == name:
                return float(row.get("value", ""))
    except (OSError, ValueError):
        pass
    return default


def threshold_source(name: str) -> str:
    try:
        for row in table("validate_thresholds.csv"):
            if row.get("name") == name:
                return row.get("source", "")
    except OSError:
        pass
    return ""


@dataclass(frozen=True)
class GpuSpec:
    """What bringup expects of one GPU model. ``None`` where the data has no figure."""

    name: str  # gpu_specs.csv 'gpu' ("" when only a MAMF row matched)
    bf16_dense_tflops: float | None
    memory_bw_gb_s: float | None
    mamf_bf16_tflops: float | None
    mamf_basis: str
    source: str
    unverified: bool = False


def match_gpu(device_name: str) -> GpuSpec | None:
    """The spec of a GPU from its torch/NVML name (``"NVIDIA H100 80GB HBM3"`` -> H100 SXM5), ``None`` if unknown.

    First matching row of ``assets/validate_gpus.csv`` wins; the datasheet figures come from its
    ``gpu_specs.csv`` row. Never raises (a bad regex row is skipped)."""
    if not isinstance(device_name, str) or not device_name.strip():
        return None
    try:
        rows = table("validate_gpus.csv")
        specs = {r.get("gpu", ""): r for r in table("gpu_specs.csv")}
    except OSError:
        return None
    for row in rows:
        try:
            if not re.search(row.get("match", "") or "(?!)", device_name, re.I):
                continue
        except re.error:
            continue
        spec = specs.get(row.get("spec", ""), {}) if row.get("spec") else {}
        return GpuSpec(
            name=row.get("spec", ""),
            bf16_dense_tflops=to_float(spec.get("bf16_dense_tflops"), positive=True),
            memory_bw_gb_s=to_float(spec.get("memory_bw_gb_s"), positive=True),
            mamf_bf16_tflops=to_float(row.get("mamf_bf16_tflops"), positive=True),
            mamf_basis=row.get("mamf_basis", ""),
            source=row.get("source", ""),
            unverified="UNVERIFIED" in (spec.get("verification", "") + row.get("source", "")).upper(),
        )
    return None


def pcie_practical_gb_s(gen: int | None, width: int | None) -> tuple[float | None, str]:
    """(practical pinned host<->device GB/s, arithmetic) for a PCIe generation and lane count; ``None`` for a
    generation bringup has no figure for. x16 figures from ``validate_thresholds.csv``; other widths scale
    linearly with the lane count (derived)."""
    if not isinstance(gen, int) or isinstance(gen, bool) or gen not in (3, 4, 5):
        return None, Msg("no practical figure for PCIe Gen{gen}", gen=gen) if gen is not None else Msg("PCIe generation not reported")
    x16 = threshold(f"pcie_gen{gen}_x16_gb_s", {3: 12.0, 4: 24.0, 5: 52.0}[gen])
    if not isinstance(width, int) or isinstance(width, bool) or width <= 0:
        return None, Msg("PCIe link width not reported")
    if width == 16:
        return x16, Msg("Gen{gen} x16 practical {gb_s} GB/s", gen=gen, gb_s=f"{x16:g}")
    v = x16 * width / 16
    return v, Msg("Gen{gen} x{width}: {x16} GB/s x {width}/16 = {v} GB/s (derived)", gen=gen, width=width, x16=f"{x16:g}",
                  v=f"{v:.1f}")


def _bad_reason_bits() -> dict[int, str]:
    """Clock-event reason bits judged under load (load_verdict warn/fail in assets/smi_clock_events.csv)."""
    out: dict[int, str] = {}
    try:
        for row in table("smi_clock_events.csv"):
            if row.get("load_verdict") in ("warn", "fail"):
                out[int(row.get("bit", "0"), 16)] = row.get("label", "")
    except (OSError, ValueError):
        return dict(BAD_REASON_BITS)
    return out or dict(BAD_REASON_BITS)


# ------------------------------------------------------------------ results


@dataclass
class ResultRow:
    """One row of the results table: a measurement and how it was judged.

    value/floor in ``unit`` (GB/s, TFLOPS, count, ratio, bool); counts (ranks, errors, samples) are ints;
    ``floor`` is the WARN/FAIL limit the value was compared with (``None`` when not judged against a number);
    ``limit_op`` says which side of it passes: ``">="`` for a lower limit (TFLOPS, GB/s, ranks), ``"<="`` for
    an upper limit (pattern errors, loss ratio, new errors), ``""`` without a floor (a screen shows "≥ 460",
    "≤ 0.5"); ``verdict`` one of pass warn fail skip unknown.
    """

    test: str
    metric: str
    value: float | int | None
    unit: str
    floor: float | int | None
    verdict: str
    subject: str = ""
    note: str = ""
    limit_op: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"test": self.test, "metric": self.metric, "value": self.value, "unit": self.unit,
                "floor": self.floor, "verdict": self.verdict, "subject": self.subject, "note": self.note,
                "limit_op": self.limit_op}


@dataclass
class Analysis:
    """Everything judged from one log.

    findings: the step's findings. rows: the results table. series: the all-reduce sweep as
    [(size_bytes, busbw_gb_s)] sorted by size (rank 0's measurements). floor_gb_s / floor_basis: the busbw floor
    the largest size was judged against (``None`` when none applies).
    """

    findings: list[Finding] = field(default_factory=list)
    rows: list[ResultRow] = field(default_factory=list)
    series: list[tuple[int, float]] = field(default_factory=list)
    floor_gb_s: float | None = None
    floor_basis: str = ""
    telemetry: dict[str, Any] = field(default_factory=dict)
    """What the report draws beside the table (:func:`telemetry`): NVML samples per device (at most
    :data:`TELEMETRY_POINTS` points per metric), error counters before/after per device, soak first/last intervals."""

    def to_json(self) -> dict[str, Any]:
        """``{"results": [row...], "series": {"points": [[size_bytes, busbw_gb_s]...], "floor_gb_s", "floor_basis"},
        "telemetry": {"samples": [...], "counters": [...], "soak": [...]}}`` (telemetry: :func:`telemetry`; a stored
        result written before it existed has no ``telemetry`` key)."""
        return {"results": [r.to_dict() for r in self.rows],
                "series": {"points": [[s, b] for s, b in self.series], "floor_gb_s": self.floor_gb_s,
                           "floor_basis": self.floor_basis},
                "telemetry": self.telemetry}


# ------------------------------------------------------------------ helpers


def _f(v: float | None, digits: int = 1) -> str:
    return "?" if v is None else f"{v:,.{digits}f}"


@dataclass
class Device:
    """One device the run reported (a ``device`` event)."""

    index: int | None
    name: str
    node: str
    bus_id: str
    pcie: dict[str, Any]
    nvlink: dict[str, Any] | None
    raw: str
    spec: GpuSpec | None = None
    show_node: bool = False  # several nodes in one log: name the node too

    @property
    def subject(self) -> str:
        if self.index is None:
            return self.name or "device"
        where = f" ({self.bus_id})" if self.bus_id else ""
        return f"GPU {self.index}{where}" + (f" on {self.node}" if self.show_node and self.node else "")


class _Ctx:
    """One log being judged: the parsed events and what the run was."""

    def __init__(self, vlog: ValidateLog, text: str, plan: Mapping[str, Any], kind: str) -> None:
        self.vlog = vlog
        self.text = text
        self.plan = plan
        self.kind = kind
        self.prefix = STAGE_OF.get(kind, kind)
        self.out = Analysis()
        starts = vlog.starts
        devs = [str(e.get("device")) for e in starts if isinstance(e.get("device"), str)]
        self.device = "cpu" if "cpu" in devs else ("cuda" if "cuda" in devs else "")
        ws = [to_int(e.get("world_size"), text=False) for e in starts]
        self.world_size = max([w for w in ws if w] or [1])
        self.versions: dict[str, Any] = {}
        for e in starts:
            v = e.get("versions")
            if isinstance(v, dict):
                self.versions = v
                break
        self.devices: dict[tuple[str, int | None], Device] = {}
        for e in vlog.of("device"):
            idx = to_int(e.get("index"), text=False)
            name = e.get("name") if isinstance(e.get("name"), str) else ""
            key = (e.node, idx)
            if key in self.devices:
                continue
            pcie = e.get("pcie") if isinstance(e.get("pcie"), dict) else {}
            nvl = e.get("nvlink") if isinstance(e.get("nvlink"), dict) else None
            bus = e.get("pci_bus_id") if isinstance(e.get("pci_bus_id"), str) else ""
            d = Device(idx, name, e.node, bus, pcie, nvl, e.raw)
            d.spec = match_gpu(name) if self.device == "cuda" else None
            self.devices[key] = d
        if not self.devices:  # the node test prints no device events: each rank's sanity measure names its device
            for e in vlog.measures("sanity"):
                name = e.get("device_name") if isinstance(e.get("device_name"), str) else ""
                idx = to_int(e.get("local_rank"), text=False)
                key = (e.node, idx)
                if key in self.devices or not name:
                    continue
                pcie = e.get("pcie") if isinstance(e.get("pcie"), dict) else {}
                nvl = e.get("nvlink") if isinstance(e.get("nvlink"), dict) else None
                bus = e.get("pci_bus_id") if isinstance(e.get("pci_bus_id"), str) else ""
                d = Device(idx if self.device == "cuda" else None, name, e.node, bus, pcie, nvl, e.raw)
                d.spec = match_gpu(name) if self.device == "cuda" else None
                self.devices[key] = d
        if len({n for n, _ in self.devices}) > 1:
            for d in self.devices.values():
                d.show_node = True
        self.errored_tests = {e.test for e in vlog.errors}
        if vlog.errors:  # a run that errored explains its missing measurements itself
            self.errored_tests |= {"gemm", "memcpy", "memory", "train", "allreduce", "p2p", "soak"}
        self.fatal = any(e.get("kind") in FATAL_ERRORS for e in vlog.errors) or (bool(starts) and not self.device)

    @property
    def cpu(self) -> bool:
        return self.device == "cpu"

    def dev(self, e: Event) -> Device | None:
        idx = to_int(e.get("device"), text=False)
        d = self.devices.get((e.node, idx))
        if d is None and idx is not None:
            d = next((x for (n, i), x in self.devices.items() if i == idx), None)
        return d

    def subject_of(self, e: Event) -> str:
        d = self.dev(e)
        if d is not None:
            return d.subject
        idx = to_int(e.get("device"), text=False)
        return f"GPU {idx}" if idx is not None and not self.cpu else "host"

    def add(self, fid: str, verdict: Verdict, message: str, subject: str = "host", evidence: Iterable[str] = (),
            remedy: str = "", source: str = "", measured: Measure | None = None) -> None:
        ev = tuple(dict.fromkeys(str(x)[:500] for x in evidence if x))[:12]
        self.out.findings.append(Finding(f"{self.prefix}.{fid}", verdict, message, subject, ev, remedy, source,
                                         measured=measured))

    def row(self, test: str, metric: str, value: float | int | None, unit: str, floor: float | int | None,
            verdict: Verdict, subject: str = "", note: str = "", op: str = ">=", label: str = "") -> Measure | None:
        """One results-table row; ``op`` is the passing side of ``floor`` (``">="`` lower limit, ``"<="`` upper
        limit; dropped when there is no floor). Integral values of a ``count``/``ranks`` unit stay ints. Returns the
        row as the finding's :class:`~wizard.model.Measure` (``label``, else the metric, names it; ``None`` without a
        value)."""
        if unit in ("count", "ranks"):
            value, floor = _as_int(value), _as_int(floor)
        self.out.rows.append(ResultRow(test, metric, value, unit, floor, verdict.value, subject, note,
                                       op if floor is not None else ""))
        return measure(value, floor, unit, "at_most" if op == "<=" else "at_least", label or metric)


def _as_int(v: float | int | None) -> float | int | None:
    """An integral float as an int (5.0 -> 5); anything else unchanged."""
    if isinstance(v, float) and math.isfinite(v) and v == int(v):
        return int(v)
    return v


TEST_WORDS = {"gemm": N_("GEMM"), "memcpy": N_("memory copy"), "h2d": N_("H2D copy"), "d2h": N_("D2H copy"),
              "memory": N_("memory patterns"), "train": N_("training"), "sanity": N_("sanity"),
              "allreduce": N_("all-reduce"), "p2p": N_("P2P"), "soak_gemm": N_("soak GEMM"),
              "soak_allreduce": N_("soak all-reduce"), "multinode": N_("the multi-node run")}
"""A validation test's name as the results tables and ``bringup validate`` show it, in the reader's language (walk 41
#2: raw keys "memcpy", "train" in a Chinese table); the stored results and ``--json`` keep the key."""

METRIC_WORDS = {"tflops": N_("throughput"), "d2d_gb_s": N_("bandwidth"), "gb_s": N_("bandwidth"),
                "busbw_gb_s": N_("busbw"), "pattern_errors": N_("pattern errors"), "loss_ratio": N_("loss ratio"),
                "loss_drop": N_("loss ratio"), "ranks_ok": N_("ranks that passed"), "ok": N_("rank ok"),
                "throttled_samples": N_("throttled samples"), "new_errors": N_("new errors")}
"""A results row's metric key in the reader's words (walk 41 #2: "pattern_errors", "loss_ratio"); the unit is on the
value. A key not listed (a P2P pair "0->1") is shown as it is."""


def test_msg(test: str) -> str:
    """A validation test's key ("memcpy") as the reader's word (:data:`TEST_WORDS`), a :class:`Msg` piece of a
    finding's message (shown in the reader's language later); an unknown key as it is."""
    return Msg(TEST_WORDS[test]) if test in TEST_WORDS else test


def metric_msg(metric: str) -> str:
    """A results row's metric key ("pattern_errors", "busbw@1 MiB") as the reader's words (:data:`METRIC_WORDS`; the
    message size of a busbw row kept: "busbw @ 1 MiB"), a :class:`Msg` piece; an unknown key as it is."""
    if metric.startswith("busbw@"):
        return Msg("busbw @ {size}", size=metric[len("busbw@"):])
    return Msg(METRIC_WORDS[metric]) if metric in METRIC_WORDS else metric


def test_word(test: str) -> str:
    """:func:`test_msg` shown now, in the current language (the tables and ``bringup validate``)."""
    m = test_msg(test)
    return tr(m) if isinstance(m, Msg) else m


def metric_word(metric: str) -> str:
    """:func:`metric_msg` shown now, in the current language."""
    m = metric_msg(metric)
    return tr(m) if isinstance(m, Msg) else m


def _grade(value: float, warn_at: float, fail_at: float) -> Verdict:
    if value < fail_at:
        return Verdict.FAIL
    if value < warn_at:
        return Verdict.WARN
    return Verdict.PASS


# ------------------------------------------------------------------ run-level


ERROR_REMEDY = {
    "torch_missing": N_("Install PyTorch into the Python that runs the validation (`<python> -m pip install torch`; on a "
                      "GPU node a CUDA build the driver supports), or point bringup at a Python that has it: "
                      "torch_python in the plan (F2 in the TUI, or `bringup plan torch_python=/path/to/venv/bin/python`; or "
                      "`bringup validate ... --python PATH`)."),
    "no_cuda": N_("This torch cannot use CUDA: install a CUDA build of PyTorch (torch.version.cuda must not be None) that "
                "the installed driver supports, check `nvidia-smi` works, and that CUDA_VISIBLE_DEVICES is not empty; "
                "or run `--device cpu` to test only the software path."),
    "oom": N_("Stop other processes on the GPU (`nvidia-smi` lists them) and rerun; if only this GPU runs out of memory "
            "with nothing else on it, compare its total memory with the others (a GPU showing less memory is faulty)."),
    "collective_timeout": N_("A rank hung in a collective: check the named rank's GPU (Xid in the kernel log, ECC, "
                           "`nvidia-smi`), NVLink state (`nvidia-smi nvlink -s`) and Fabric Manager on NVSwitch systems, "
                           "then rerun; a longer timeout only hides a hang."),
    "timeout": N_("The run exceeded its time limit: look at the last progress line for where it stopped, then rerun."),
    "rendezvous": N_("The ranks could not meet (torchrun rendezvous): check nothing else holds the port, the hostname "
                   "resolves, and no firewall blocks loopback; then rerun."),
    "exception": N_("Read the message and the lines before it in the log; rerun, and report it with the log if it repeats."),
    "nccl_tests_missing": "",
}


def _run_findings(c: _Ctx) -> None:
    """Errors, missing events, an unfinished run."""
    vlog = c.vlog
    if not vlog.events:
        lines = [ln for ln in c.text.splitlines() if ln.strip()]
        if any(re.search(r"No module named '?torch'?", ln) for ln in lines):
            ev = [ln for ln in lines if "No module named" in ln][:3]
            c.add("run", Verdict.FAIL, "PyTorch is not installed in the Python that ran the validation (torchrun "
                  "could not start: 'No module named torch')", "host", ev, ERROR_REMEDY["torch_missing"], SRC_RUN)
            return
        start_fail = [ln for ln in lines if ln.startswith("# could not start")]
        if start_fail:
            said = start_fail[0][len("# could not start"):].strip()  # "/usr/bin/python3: No such file or directory"
            prog, _sep, why = said.partition(": ")
            c.add("run", Verdict.FAIL, Msg("the validation could not start: could not start {prog}: {why}", prog=prog,
                                           why=Msg.plain(why) if why else "?"), "host",
                  start_fail[:2], Msg("Install Python 3 with PyTorch on this machine, or set the interpreter: torch_python "
                                      "in the plan (F2 in the TUI, or `bringup plan torch_python=/path/to/python`)."),
                  SRC_RUN)
            return
        ev = [f"line {n}: {ln}" for n, ln in vlog.bad_lines[:4]] + lines[-6:]
        c.add("run", Verdict.UNKNOWN, "no validation events in the log: nothing was measured"
              + (f" ({len(vlog.bad_lines)} unreadable event line(s))" if vlog.bad_lines else ""), "host", ev,
              "Run the validation again; if the log stays without 'BRINGUP' event lines, the script did not run: "
              "check the log's first lines for the reason and report it with the log.", SRC_RUN)
        return
    seen: set[tuple[str, str]] = set()
    for e in vlog.errors:
        kind = str(e.get("kind") or "exception")
        msg = str(e.get("message") or "").strip()
        key = (kind, re.sub(r"\d+", "#", msg)[:200])
        if key in seen and kind != "collective_timeout":
            continue
        seen.add(key)
        # bringup's own remedy for a kind it knows (translated); the script's words for a generic exception (it may
        # say more: bad arguments) or a kind bringup does not know; else the generic one
        said = str(e.get("remedy") or "").strip()
        remedy = ((ERROR_REMEDY.get(kind) if kind != "exception" else "") or said
                  or ERROR_REMEDY.get(kind) or ERROR_REMEDY["exception"])
        rank = to_int(e.get("rank"), text=False)
        where = (Msg('rank {rank}', rank=rank) + (Msg(' on {node}', node=e.node) if e.node else '') if rank is not None and c.world_size > 1 else e.node or '')
        test = e.test or "?"
        if kind == "nccl_tests_missing":
            c.add("allreduce", Verdict.SKIP, f"nccl-tests not run: {msg or 'all_reduce_perf is not installed'}",
                  "host", [e.raw], "", SRC_RUN)
            continue
        if kind == "torch_missing":
            text: str = Msg("PyTorch is not importable by the Python that ran the validation ({msg})",
                       msg=msg or "import torch failed")
        elif kind == "no_cuda":
            text = Msg("CUDA is not usable from torch ({msg})", msg=msg or "torch.cuda.is_available() is False")
        elif kind == "collective_timeout":
            phase = e.get("phase") if isinstance(e.get("phase"), str) else ""
            ranks = ([r for r in (e.get("ranks") or []) if to_int(r, text=False) is not None]
                     if isinstance(e.get("ranks"), list) else [])
            if not ranks and to_int(e.get("peer"), text=False) is not None:
                ranks = [to_int(e.get("peer"), text=False)]
            nodes = [str(x) for x in (e.get("nodes") or []) if x] if isinstance(e.get("nodes"), list) else []
            if ranks:
                who = (f"rank {ranks[0]}" if len(ranks) == 1 else "ranks " + ", ".join(str(r) for r in ranks[:16]))
                who += f" on {', '.join(dict.fromkeys(nodes))}" if nodes else ""
                text = (f"{who} hung: did not reach the {phase or test} phase of {test} in time (collective "
                        f"timeout; reported by {where or 'another rank'})")
                subj = who
            else:
                text = (f"collective timeout in {test}" + (f" ({phase})" if phase else "")
                        + (f" on {where}" if where else "") + ": the hanging rank is not named here")
                subj = where or "host"
            c.add("run", Verdict.FAIL, text + (f"; {msg}" if msg else ""), subj, [e.raw], remedy, SRC_RUN)
            continue
        elif kind == "oom":
            text = f"out of memory in {test}" + (f" on {where}" if where else "") + (f": {msg}" if msg else "")
        else:
            text = f"{kind.replace('_', ' ')} in {test}" + (f" on {where}" if where else "") + (f": {msg}" if msg else "")
        subj = c.subject_of(e) if e.get("device") is not None else (where or "host")
        c.add("run", Verdict.FAIL, text, subj, [e.raw], remedy, SRC_RUN)
    if not vlog.ends and not vlog.errors:
        last = vlog.last_progress()
        c.add("run", Verdict.UNKNOWN, "the run ended without its end event (killed, or it crashed)"
              + (f"; last progress: {last.test} {last.get('phase', '')}" if last else ""), "host",
              ([last.raw] if last else []) + c.text.splitlines()[-4:],
              "Rerun the validation; if it stops at the same place, read the lines before the end of the log.", SRC_RUN)
    for n, ln in vlog.bad_lines[:1]:
        c.add("run", Verdict.UNKNOWN, f"{len(vlog.bad_lines)} event line(s) could not be read (first at line {n})",
              "host", [ln for _, ln in vlog.bad_lines[:3]],
              "The log was garbled (a full disk, or two writers): rerun the validation.", SRC_RUN)


# ------------------------------------------------------------------ one GPU


def _perf_skip_cpu(c: _Ctx, fid: str, what: str, e: Event, value: float, unit: str) -> None:
    c.add(fid, Verdict.SKIP, Msg("{what} {value:,.2f} {unit} on the CPU: performance is judged on GPUs only (a CPU run "
                                 "proves the software path, not the hardware)", what=what, value=value, unit=unit),
          "host", [e.raw], "", SRC_RUN)
    c.row(e.test, str(e.get("metric", "")), value, unit, None, Verdict.SKIP, "host", "CPU: not judged")


def _gemm(c: _Ctx) -> None:
    ms = c.vlog.measures("gemm", "tflops")
    if not ms:
        if "gemm" not in c.errored_tests and c.vlog.events:
            c.add("gemm", Verdict.UNKNOWN, "no GEMM measurement in the log", "host", [],
                  "Rerun the validation; read the log for why the GEMM test did not report.", SRC_RUN)
        return
    warn_f, fail_f = threshold("gemm_warn_fraction", 0.9), threshold("gemm_fail_fraction", 0.75)
    eff = threshold("gemm_default_efficiency", 0.729)
    for e in ms:
        v = num(e.get("value"))
        dtype = str(e.get("dtype") or "?")
        shape = ("x".join(str(e.get(k)) for k in ("m", "n", "k"))
                 if all(to_int(e.get(k), text=False) for k in ("m", "n", "k")) else "")
        what = (Msg('{dtype} GEMM', dtype=dtype) + (f' {shape}' if shape else ''))
        if v is None:
            c.add("gemm", Verdict.UNKNOWN, f"{what}: no TFLOPS value in the event", c.subject_of(e), [e.raw],
                  "Rerun the validation.", SRC_RUN)
            continue
        if c.cpu:
            _perf_skip_cpu(c, "gemm", what, e, v, "TFLOPS")
            continue
        d = c.dev(e)
        subj = c.subject_of(e)
        spec = d.spec if d else None
        if spec is None:
            c.add("gemm", Verdict.UNKNOWN, f"{what} {v:,.1f} TFLOPS; no spec for {d.name if d else 'this GPU'!r}: "
                  f"not judged", subj, [e.raw] + ([d.raw] if d else []),
                  "Compare with the other GPUs of the node and with the vendor's figure; add the GPU to "
                  "assets/validate_gpus.csv to have it judged.", SRC_MAMF)
            c.row("gemm", "tflops", v, "TFLOPS", None, Verdict.UNKNOWN, subj, "no spec")
            continue
        if spec.mamf_bf16_tflops:
            expect, how = spec.mamf_bf16_tflops, (f"the achievable {spec.mamf_bf16_tflops:g} TFLOPS (MAMF, "
                                                  f"{spec.mamf_basis})")
        elif spec.bf16_dense_tflops:
            expect = spec.bf16_dense_tflops * eff
            how = (Msg('the achievable {expect:.0f} TFLOPS = datasheet {bf16_dense_tflops:g} x {eff:g} (derived: no MAMF measurement for {name})', expect=expect, bf16_dense_tflops=spec.bf16_dense_tflops, eff=eff, name=spec.name))
        else:
            c.add("gemm", Verdict.UNKNOWN, f"{what} {v:,.1f} TFLOPS; {spec.name} has no bf16 dense figure in "
                  f"gpu_specs.csv: not judged", subj, [e.raw],
                  "Compare with the other GPUs of the node (this GPU has no bf16 tensor cores to judge).", SRC_MAMF)
            c.row("gemm", "tflops", v, "TFLOPS", None, Verdict.UNKNOWN, subj, "no bf16 spec")
            continue
        if dtype.lower() not in ("bf16", "bfloat16"):
            c.add("gemm", Verdict.UNKNOWN, f"{what} {v:,.1f} TFLOPS: not bf16, so not comparable with {how}", subj,
                  [e.raw], "Rerun with the shipped script (it measures bf16 on GPUs).", SRC_MAMF)
            continue
        warn_at, fail_at = warn_f * expect, fail_f * expect
        verdict = _grade(v, warn_at, fail_at)
        msg = (Msg("{what} {v:,.1f} TFLOPS = {a1:.0f}% of {how}; warn below {warn_at:.0f} ({warn_f:g} x), "
                   "fail below {fail_at:.0f} ({fail_f:g} x)", what=what, v=v, a1=100 * v / expect, how=how, warn_at=warn_at, warn_f=warn_f, fail_at=fail_at, fail_f=fail_f))
        remedy = ('' if verdict is Verdict.PASS else Msg('Check this GPU under load: clocks and clock-event reasons (`nvidia-smi -q -d PERFORMANCE,CLOCK`), temperature and power limit (`nvidia-smi -q -d TEMPERATURE,POWER`), nothing else running on it; then rerun. A GPU well below its siblings with clean reasons is an RMA candidate (DCGM diag -r 3).'))
        m = c.row("gemm", "tflops", v, "TFLOPS", warn_at if verdict is not Verdict.FAIL else fail_at, verdict, subj,
                  f"{100 * v / expect:.0f}% of {expect:.0f}",
                  label=f"{what} ({'warn' if verdict is not Verdict.FAIL else 'fail'} floor)")
        c.add("gemm", verdict, msg, subj, [e.raw], remedy, f"{SRC_MAMF}; {SRC_DCGM}; gpu_specs.csv ({spec.source})",
              measured=m)


MEMCPY_REMEDY = N_("Check memory clocks and throttling (`nvidia-smi -q -d CLOCK,PERFORMANCE`) and ECC/row-remapping state "
                   "(`nvidia-smi -q -d ECC,ROW_REMAPPER`); run DCGM diag -r 2 (memory_bandwidth) on this GPU.")
"""What a slow device-to-device copy asks for: the validation's memcpy and bandwidthTest's D2D share it."""


def _memcpy(c: _Ctx) -> None:
    ms = c.vlog.measures("memcpy")
    warn_f, fail_f = threshold("memcpy_warn_fraction", 0.69), threshold("memcpy_fail_fraction", 0.57)
    for e in ms:
        v = num(e.get("value"))
        if v is None:
            continue
        b = to_int(e.get("bytes"), text=False)
        what = (Msg('device-to-device copy') + (Msg(' of {human_bytes}', human_bytes=human_bytes(b)) if b else '') + Msg(' (read + write)'))
        if c.cpu:
            _perf_skip_cpu(c, "memcpy", Msg("memory copy") + (Msg(" of {human_bytes}", human_bytes=human_bytes(b)) if b else ""),
                           e, v, "GB/s")
            continue
        d = c.dev(e)
        subj = c.subject_of(e)
        spec = d.spec if d else None
        if spec is None or not spec.memory_bw_gb_s:
            c.add("memcpy", Verdict.UNKNOWN, f"{what} {v:,.0f} GB/s; no memory bandwidth spec for "
                  f"{d.name if d else 'this GPU'!r}: not judged", subj, [e.raw],
                  "Compare with the other GPUs of the node and the datasheet's memory bandwidth.", SRC_C4)
            c.row("memcpy", "d2d_gb_s", v, "GB/s", None, Verdict.UNKNOWN, subj, "no spec")
            continue
        bw = spec.memory_bw_gb_s
        warn_at, fail_at = warn_f * bw, fail_f * bw
        verdict = _grade(v, warn_at, fail_at)
        msg = (Msg("{what} {v:,.0f} GB/s = {a1:.0f}% of the {bw:g} GB/s datasheet bandwidth ({name}); warn "
                   "below {warn_at:.0f} ({warn_f:g} x), fail below {fail_at:.0f} ({fail_f:g} x, derived from "
                   "DCGM)", what=what, v=v, a1=100 * v / bw, bw=bw, name=spec.name, warn_at=warn_at, warn_f=warn_f, fail_at=fail_at, fail_f=fail_f))
        remedy = ('' if verdict is Verdict.PASS else MEMCPY_REMEDY)
        m = c.row("memcpy", "d2d_gb_s", v, "GB/s", warn_at if verdict is not Verdict.FAIL else fail_at, verdict, subj,
                  f"{100 * v / bw:.0f}% of {bw:g}",
                  label=f"{what} ({'warn' if verdict is not Verdict.FAIL else 'fail'} floor)")
        c.add("memcpy", verdict, msg, subj, [e.raw], remedy, f"{SRC_C4}; {SRC_DCGM}", measured=m)


H2D_GEN5_WARN_FRACTION = 35.0 / 52.0
"""Host-to-device on PCIe Gen5 WARNs only below 35/52 (0.67) of the Gen5 practical figure, not 0.8 x:
a report on NVIDIA's nvbandwidth tracker shows that H2D on Gen5 x16 is sometimes only ~35 GB/s on healthy systems (while D2H reaches
50-55 GB/s), NVIDIA/nvbandwidth#24 (https://github.com/NVIDIA/nvbandwidth/issues/24, practitioner report);
35 of the 52 GB/s Gen5 x16 figure (derived). The FAIL line (25%) is unchanged; D2H keeps the 0.8 x WARN."""
SRC_H2D_GEN5 = ("NVIDIA/nvbandwidth#24, https://github.com/NVIDIA/nvbandwidth/issues/24 (H2D on Gen5 sometimes ~35 GB/s "
                "on healthy systems): "
                "h2d on Gen5 warns below 35/52 of the figure (derived)")


def _numa_note(e: Event) -> str:
    """What the measure says about the GPU's NUMA node: "" when the copy ran on it (or the script predates the
    fields), else why not."""
    pinned = e.get("cpus_pinned")
    node = to_int(e.get("numa_node"), text=False)
    if pinned is not False:
        return ""
    why = str(e.get("numa_reason") or "").strip()
    if node is None and "numa_node -1" in why:  # the platform has no NUMA locality for this GPU: nothing to pin
        return ""
    if node is None:
        return f"; not pinned to the GPU's NUMA node ({why or 'its node is unknown'})"
    return (f"; the process was NOT on the GPU's NUMA node {node} (" + (why or "affinity not set")
            + "): a remote node can cut the figure several-fold")


def _host_link(c: _Ctx, test: str) -> None:
    ms = [e for e in c.vlog.measures(test) if num(e.get("value")) is not None]
    direction = Msg("host-to-device") if test == "h2d" else Msg("device-to-host")
    if not ms:
        skipped = [e for e in c.vlog.of("result", test)
                   if isinstance(e.get("summary"), dict) and e.get("summary", {}).get("skipped")]
        if c.cpu and skipped:  # walk 19: the CPU run's h2d/d2h vanished from the findings
            c.add(test, Verdict.SKIP, Msg("{direction} copy not measured on the CPU: {why} (a host link is a GPU's)",
                                          direction=direction, why=str(skipped[0].get("summary", {}).get("skipped"))),
                  "host", [skipped[0].raw], "", SRC_RUN)
            c.row(test, "gb_s", None, "GB/s", None, Verdict.SKIP, "host", "CPU: not measured")
        return
    warn_f, fail_f = threshold("h2d_warn_fraction", 0.8), threshold("h2d_fail_fraction", 0.25)
    spread_f = threshold("h2d_spread_fraction", 0.9)
    vals = [num(e.get("value")) or 0.0 for e in ms]
    median = statistics.median(vals) if len(vals) >= 3 else None
    for e in ms:
        v = num(e.get("value")) or 0.0
        pinned = "pinned " if e.get("pinned") is True else ("pageable " if e.get("pinned") is False else "")
        what = (Msg('{pinned}{direction} copy', pinned=pinned, direction=direction))
        if c.cpu:
            _perf_skip_cpu(c, test, what, e, v, "GB/s")
            continue
        d = c.dev(e)
        subj = c.subject_of(e)
        pcie = d.pcie if d else {}
        gen, width = to_int(pcie.get("max_gen"), text=False), to_int(pcie.get("max_width"), text=False)
        cur = ""
        if to_int(pcie.get("current_gen"), text=False) is not None or to_int(pcie.get("current_width"), text=False) is not None:
            cur = (Msg('; link now Gen{get} x{get2}', get=pcie.get('current_gen', '?'), get2=pcie.get('current_width', '?')))
        practical, how = pcie_practical_gb_s(gen, width)
        if practical is None:
            c.add(test, Verdict.UNKNOWN, f"{what} {v:.1f} GB/s; {how}: not judged", subj,
                  [e.raw] + ([d.raw] if d else []),
                  "Read the GPU's PCIe generation and width (`nvidia-smi -q -d PCIE` under load, or lspci -vv "
                  "LnkCap/LnkSta) and compare with Azure HPC health checks check_cuda_bw (24 GB/s Gen4 x16, 52 GB/s Gen5 x16).", SRC_C2)
            c.row(test, "gb_s", v, "GB/s", None, Verdict.UNKNOWN, subj, how)
            continue
        w_f, caveat, src = warn_f, "", SRC_C2
        if test == "h2d" and gen == 5 and H2D_GEN5_WARN_FRACTION < warn_f:
            w_f = H2D_GEN5_WARN_FRACTION
            caveat = (Msg(' (h2d on Gen5: {h2d_gen5_warn_fraction:.2f} x = 35/52, derived: healthy Gen5 systems sometimes reach only ~35 GB/s host-to-device, NVIDIA/nvbandwidth#24)', h2d_gen5_warn_fraction=H2D_GEN5_WARN_FRACTION))
            src = f"{SRC_C2}; {SRC_H2D_GEN5}"
        warn_at, fail_at = w_f * practical, fail_f * practical
        verdict = _grade(v, warn_at, fail_at)
        numa = _numa_note(e)
        spread = ""
        if verdict is Verdict.PASS and median and v < spread_f * median:
            verdict = Verdict.WARN
            spread = (Msg('; {value:.0f}% below the node median {median:.1f} GB/s (warn beyond 10%)', value=100 * (1 - v / median), median=median))
        msg = (Msg("{what} {v:.1f} GB/s = {a1:.0f}% of {how} (capability Gen{gen} x{width}{cur}); warn below "
                   "{warn_at:.1f} ({w_f:.2g} x){caveat}, fail below {fail_at:.1f} ({fail_f:g} x){spread}{numa}", what=what, v=v, a1=100 * v / practical, how=how, gen=gen, width=width, cur=cur, warn_at=warn_at, w_f=w_f, caveat=caveat, fail_at=fail_at, fail_f=fail_f, spread=spread, numa=numa))
        remedy = ('' if verdict is Verdict.PASS else Msg("Check the link under load (`nvidia-smi -q -d PCIE`: current generation and width, or lspci -vv LnkSta), reseat the GPU or its riser if it trained narrower or slower (dmesg 'limited by'), and run the copy on the GPU's own NUMA node (`numactl --cpunodebind=N --membind=N`, `nvidia-smi topo -m`): a remote node cuts the figure several-fold."))
        m = c.row(test, "gb_s", v, "GB/s", warn_at if verdict is not Verdict.FAIL else fail_at, verdict, subj,
                  f"{100 * v / practical:.0f}% of {practical:g}",
                  label=f"{what} ({'warn' if verdict is not Verdict.FAIL else 'fail'} floor)")
        if spread:  # the warning is about the node median, not the floor
            m = measure(v, spread_f * (median or 0.0), "GB/s", "at_least",
                        f"{what} ({spread_f:g} x the node median {median or 0.0:.1f} GB/s)")
        c.add(test, verdict, msg, subj, [e.raw] + ([d.raw] if d else []), remedy, src, measured=m)


def _memory(c: _Ctx) -> None:
    for e in c.vlog.measures("memory", "pattern_errors"):
        v = num(e.get("value"))
        subj = c.subject_of(e) if not c.cpu else "host"
        tested = to_int(e.get("bytes_tested"), text=False)
        frac = num(e.get("fraction"))
        names = e.get("pattern_names")
        # the script's pattern names: hex words as they are, "address" (each word holds its own address) in words
        pat = (Msg(", patterns {names}", names=joined(", ", [Msg("address") if p == "address" else str(p)
                                                            for p in names[:6]])) if isinstance(names, list) and names
               else Msg(", {n} patterns", n=to_int(e.get("patterns"), text=False)) if to_int(e.get("patterns"), text=False)
               else "")
        what = ((Msg('{human_bytes} tested', human_bytes=human_bytes(tested)) if tested else Msg('memory tested')) + ((Msg(' ({value:.0f}% of free host memory{pat})', value=100 * frac, pat=pat) if c.cpu else Msg(' ({value:.0f}% of free GPU memory{pat})', value=100 * frac, pat=pat)) if frac is not None else pat))
        # which memory: a CPU run tests host RAM (walk 21: Chinese called it 显存, GPU memory, on a GPU-less machine)
        head = Msg("host memory pattern test (CPU run)") if c.cpu else Msg("GPU memory pattern test")
        if v is None:
            c.add("memory", Verdict.UNKNOWN, Msg("{head}: no error count ({what})", head=head, what=what), subj, [e.raw],
                  "Rerun the validation.", SRC_C4)
            continue
        if v > 0:
            m = c.row("memory", "pattern_errors", v, "count", 0, Verdict.FAIL, subj, op="<=",
                      label="memory pattern errors")
            c.add("memory", Verdict.FAIL, Msg("{head}: {v:.0f} wrong value(s) read back; {what}", head=head, v=v, what=what), subj,
                  [e.raw], "Memory returned wrong data: check ECC and row-remapping counters (`nvidia-smi -q -d "
                  "ECC,ROW_REMAPPER`) and the kernel log for Xid 48/63/64/94/95; run DCGM diag -r 3 on this GPU; "
                  "a repeat is an RMA case.", SRC_C4, measured=m)
        else:
            m = c.row("memory", "pattern_errors", v, "count", 0, Verdict.PASS, subj, op="<=",
                      label="memory pattern errors")
            c.add("memory", Verdict.PASS, Msg("{head}: every value read back correctly; {what}", head=head, what=what), subj,
                  [e.raw], "", SRC_C4, measured=m)
    if not c.vlog.measures("memory") and "memory" not in c.errored_tests and c.vlog.events and c.kind == "gpu":
        c.add("memory", Verdict.UNKNOWN, Msg("no memory pattern result in the log"), "host", [],
              Msg("Rerun the validation; read the log for why the memory test did not report."), SRC_RUN)


def _train(c: _Ctx) -> None:
    max_ratio = threshold("train_loss_max_ratio", 0.5)
    ms = c.vlog.measures("train")
    for e in ms:
        first, last = num(e.get("loss_first")), num(e.get("loss_last"))
        steps = to_int(e.get("steps"), text=False)
        subj = c.subject_of(e) if not c.cpu else "host"
        mem = to_int(e.get("max_memory_allocated_bytes"), text=False)
        tps = num(e.get("tokens_per_s"))
        extra = ((Msg('; max_memory_allocated {value:.2f} GiB', value=mem / (1 << 30)) if mem is not None else Msg('; max_memory_allocated n/a (CPU)') if c.cpu else '') + (Msg('; {tps:,.0f} tokens/s', tps=tps) if tps else ''))
        if first is not None and first > 0 and last is None and "loss_last" in e.data:
            c.add("train", Verdict.FAIL, f"training loss became NaN/Inf (first {first:.3f}){extra}", subj, [e.raw],
                  "Non-finite loss from a tiny model on a fixed batch means wrong arithmetic: rerun; if it repeats, "
                  "compare with another GPU and run DCGM diag -r 3 on this one.", SRC_TRAIN)
            c.row("train", "loss_ratio", None, "ratio", max_ratio, Verdict.FAIL, subj, "NaN/Inf", op="<=")
            continue
        if first is None or last is None or first <= 0:
            c.add("train", Verdict.UNKNOWN, f"training run: loss not reported (first {first}, last {last}){extra}",
                  subj, [e.raw], "Rerun the validation.", SRC_TRAIN)
            continue
        ratio = last / first
        msg = (Msg("training loss {first:.3f} -> {last:.3f} over {a1} steps: last/first = {ratio:.3f}", first=first, last=last, a1=steps if steps else '?', ratio=ratio))
        if ratio <= max_ratio:
            m = c.row("train", "loss_ratio", ratio, "ratio", max_ratio, Verdict.PASS, subj, op="<=",
                      label="training loss last/first")
            c.add("train", Verdict.PASS, Msg("{msg} <= {max_ratio:g}: the model learns{extra}", msg=msg, max_ratio=max_ratio,
                                             extra=extra), subj, [e.raw], "",
                  SRC_TRAIN, measured=m)
        else:
            m = c.row("train", "loss_ratio", ratio, "ratio", max_ratio, Verdict.FAIL, subj, op="<=",
                      label="training loss last/first")
            c.add("train", Verdict.FAIL, Msg("{msg} > {max_ratio:g}: the loss did not fall{extra}", msg=msg, max_ratio=max_ratio,
                                             extra=extra), subj, [e.raw],
                  "A tiny model on a fixed batch must learn: wrong arithmetic (a faulty GPU, or NaN/Inf from a "
                  "broken library) is the likely cause. Rerun; if it repeats, compare with another GPU and run "
                  "DCGM diag -r 3 on this one.", SRC_TRAIN, measured=m)
    if not ms and "train" not in c.errored_tests and c.vlog.events and c.kind == "gpu":
        c.add("train", Verdict.UNKNOWN, Msg("no training result in the log"), "host", [],
              Msg("Rerun the validation; read the log for why the training test did not report."), SRC_RUN)


# ------------------------------------------------------------------ NVML samples and counters


def _throttle(c: _Ctx, fid: str = "throttle") -> None:
    samples = c.vlog.of("sample")
    if not samples:
        why = (Msg('a CPU run has no NVML') if c.cpu else Msg('the script sampled nothing (pynvml is not importable by the Python that ran it: install nvidia-ml-py there to have throttling reported)'))
        c.add(fid, Verdict.SKIP, Msg("clock-event reasons not sampled: {why}", why=why), "host", [], "", SRC_B11)
        return
    bits = _bad_reason_bits()
    fail_f = threshold("throttle_fail_fraction", 0.10)
    by_dev: dict[tuple[str, int | None], list[Event]] = {}
    for s in samples:
        by_dev.setdefault((s.node, to_int(s.get("device"), text=False)), []).append(s)
    for (node, idx), ss in sorted(by_dev.items(), key=lambda kv: (kv[0][0], kv[0][1] if kv[0][1] is not None else -1)):
        d = c.devices.get((node, idx))
        subj = d.subject if d else (f"GPU {idx}" if idx is not None else "host")
        seen: dict[int, int] = {}
        for s in ss:
            r = to_int(s.get("clock_event_reasons"), text=False)
            if r is None:
                continue
            for bit in bits:
                if r & bit:
                    seen[bit] = seen.get(bit, 0) + 1
        n = len(ss)
        temps = [t for t in (num(s.get("temp_c")) for s in ss) if t is not None]
        power = [p for p in (num(s.get("power_w")) for s in ss) if p is not None]
        limits = [p for p in (num(s.get("power_limit_w")) for s in ss) if p is not None]
        clocks = [x for x in (num(s.get("sm_clock_mhz")) for s in ss) if x is not None]
        facts = (Msg("{n} samples", n=n) + (Msg("; max {t:.0f} °C", t=max(temps)) if temps else "")
                 + ((Msg("; max power {p:.0f} W of {limit:.0f} W limit", p=max(power), limit=max(limits)) if limits
                     else Msg("; max power {p:.0f} W", p=max(power))) if power else "")
                 + (Msg("; SM clock {low:.0f}-{high:.0f} MHz", low=min(clocks), high=max(clocks)) if clocks else ""))
        ev = [s.raw for s in ss if (to_int(s.get("clock_event_reasons"), text=False) or 0) & sum(bits)][:4] or [ss[-1].raw]
        if not seen:
            c.add(fid, Verdict.PASS, Msg("no HW slowdown, thermal slowdown or power brake under load ({facts})", facts=facts),
                  subj, ev,
                  "", SRC_B11, measured=measure(0, 0, "samples", "at_most", f"samples with a slowdown reason (of {n})"))
            c.row(fid, "throttled_samples", 0, "count", None, Verdict.PASS, subj)
            continue
        listed = ", ".join(f"{bits[b]} (0x{b:x}) in {k}/{n} samples ({100 * k / n:.0f}%)" for b, k in sorted(seen.items()))
        sustained = {b: k for b, k in seen.items() if b & SUSTAINED_BITS and k / n > fail_f}
        verdict = Verdict.FAIL if sustained else Verdict.WARN
        # what each verdict's rule compared: a sustained reason's share of the samples (fail above fail_f), else
        # any sample with a reason active (warn)
        tm = (measure(100 * max(sustained.values()) / n, 100 * fail_f, "%", "at_most",
                      "share of samples in HW thermal slowdown or power brake") if sustained else
              measure(max(seen.values()), 0, "samples", "at_most", f"samples with a slowdown reason (of {n})"))
        rule = (f"HW thermal slowdown or power brake active in more than {100 * fail_f:.0f}% of the samples"
                if sustained else "active during the run")
        c.add(fid, verdict, f"clock-event reasons {rule}: {listed} ({facts})", subj, ev,
              "Fix the cause, not the clocks: check airflow and fans, inlet temperature and the GPU's temperature "
              "thresholds (`nvidia-smi -q -d TEMPERATURE,PERFORMANCE`); a power brake comes from the platform "
              "(PSU/BMC): check the power supplies and the BMC's power capping. Do not lock clocks or lower the "
              "power limit to hide it.", SRC_B11, measured=tm)
        c.row(fid, "throttled_samples", max(seen.values()), "count", None, verdict, subj, listed)


_COUNTER_RULES: tuple[tuple[str, str, Verdict], ...] = (
    ("xid_count", "new Xid event(s)", Verdict.FAIL),  # graded per Xid code by _xid_verdict
    ("ecc_volatile_uncorrected", "new uncorrected ECC error(s)", Verdict.FAIL),
    ("remap_failure", "row-remapping failure(s)", Verdict.FAIL),
    ("remapped_rows_pending", "new pending row remap(s)", Verdict.FAIL),
    ("aer.fatal", "new fatal PCIe AER error(s)", Verdict.FAIL),
    ("aer.nonfatal", "new non-fatal PCIe AER error(s)", Verdict.WARN),
    ("aer.correctable", "new correctable PCIe AER error(s)", Verdict.WARN),
    ("ecc_volatile_corrected", "new corrected ECC error(s)", Verdict.WARN),
    ("retired_pages", "new retired page(s)", Verdict.WARN),
)
"""(counter, what a rise means, verdict): the counters' deltas (AER: fatal FAIL, uncorrectable non-fatal
WARN, corrected WARN when the count grows during a stage), B5 (Xid: FAIL on a hardware-class Xid, WARN on others,
graded per code by :func:`_xid_verdict`; the verdict here is for new Xids whose code is not known), B6 (ECC: any
increase during validation WARN, uncorrected FAIL), B7 (remap failure FAIL); issue 5: deltas, not lifetime
totals."""

_XID_NUMBER = lazy_re(r"NVRM: Xid \(PCI:[^)]*\):\s*(\d+)")


def _xid_codes(e: Event) -> list[int | None] | None:
    """Every Xid line's number from a counters event: ``xid_codes`` (the script's, one per line, used when it has
    ``xid_count`` entries), else the numbers of the ``xid_lines`` it carried (the last 5 only); ``None`` when
    neither is there."""
    codes = e.get("xid_codes")
    if isinstance(codes, list) and len(codes) == to_int(e.get("xid_count"), text=False):  # one per counted line, else not trusted
        return [to_int(x, text=False) for x in codes]
    lines = e.get("xid_lines")
    if isinstance(lines, list):
        out: list[int | None] = []
        for ln in lines:
            m = _XID_NUMBER.search(str(ln))
            out.append(int(m.group(1)) if m else None)
        return out
    return None


def _xid_verdict(code: int | None) -> tuple[Verdict, str]:
    """(verdict, words) of one new Xid from the repo's Xid data, as the health stage grades it
    (:mod:`wizard.rules.xid`): ``assets/xid.csv`` severity class -> ``assets/xid_severity.csv`` verdict
    (critical = hardware-class -> FAIL; reset/app/investigate/unknown -> WARN; info -> PASS).
    A code bringup does not know, or a line cut before its number, is WARN."""
    from wizard.rules.xid import SEVERITY_VERDICT, severity_rows, xid_rows

    if code is None:
        return Verdict.WARN, "Xid (number not in the log line)"
    try:
        row = xid_rows().get(code)
        sev = severity_rows()
    except (OSError, KeyError):
        return Verdict.WARN, f"Xid {code}"
    if row is None:
        return Verdict.WARN, f"Xid {code} (not in bringup's table: look it up in the NVIDIA Xid catalog)"
    cls = sev.get(row.get("severity", ""), sev.get("unknown", {}))
    verdict = SEVERITY_VERDICT.get(cls.get("verdict", "warn"), Verdict.WARN)
    label = {"critical": "hardware-class", "reset": "needs a GPU reset", "app": "mostly an application fault",
             "investigate": "needs a look", "info": "informational"}.get(row.get("severity", ""), "")
    return verdict, f"Xid {code} {row.get('name', '')}" + (f" ({label})" if label else "")


def _counter(d: Mapping[str, Any], name: str) -> int | None:
    if name.startswith("aer."):
        aer = d.get("aer")
        return to_int(aer.get(name[4:]), text=False) if isinstance(aer, dict) else None
    return to_int(d.get(name), text=False)


def _new_xids(b: Event, a: Event, x: int, y: int, what: str) -> list[tuple[Verdict, str]]:
    """The new Xids between two counters events, each graded by :func:`_xid_verdict` (one entry per distinct
    verdict, naming the codes); new Xids whose numbers the log does not carry are WARN."""
    new = y - x
    codes = _xid_codes(a)
    seen = codes[-new:] if codes is not None and len(codes) >= new and new > 0 else (codes or [])
    graded: dict[Verdict, list[str]] = {}
    for code in seen:
        v, words = _xid_verdict(code)
        if words not in graded.setdefault(v, []):
            graded[v].append(words)
    unseen = new - len(seen)
    if unseen > 0:
        graded.setdefault(Verdict.WARN, []).append(f"{unseen} Xid(s) whose number the log does not carry")
    out: list[tuple[Verdict, str]] = []
    for v in (Verdict.FAIL, Verdict.WARN, Verdict.PASS):
        if v in graded:
            grade = {Verdict.FAIL: "FAIL", Verdict.WARN: "WARN", Verdict.PASS: "informational"}[v]
            out.append((v, f"{what}: xid_count {x} -> {y} (+{new}): {', '.join(graded[v])} [{grade}, "
                           "NVIDIA Xid catalog]"))
    return out


def _counters(c: _Ctx, fid: str = "counters") -> None:
    evs = c.vlog.of("counters")
    if not evs:
        if c.vlog.events and not c.cpu:
            c.add(fid, Verdict.UNKNOWN, "no error counters in the log (before/after)", "host", [],
                  "Rerun with the shipped script: it reads Xid, ECC, row-remap and AER counters before and after.",
                  SRC_C5)
        elif c.cpu:
            c.add(fid, Verdict.SKIP, Msg("error counters not read: a CPU run has no GPU counters"), "host", [], "", SRC_C5)
        return
    pairs: dict[tuple[str, Any], dict[str, Event]] = {}
    for e in evs:
        w = e.get("when")
        if w in ("before", "after"):
            dev = e.get("device") if to_int(e.get("device"), text=False) is not None else None
            pairs.setdefault((e.node, dev), {})[str(w)] = e
    for (node, idx), p in sorted(pairs.items(), key=lambda kv: (kv[0][0], kv[0][1] if kv[0][1] is not None else -1)):
        d = c.devices.get((node, idx))
        subj = d.subject if d else (f"GPU {idx}" if idx is not None else "host")
        b, a = p.get("before"), p.get("after")
        if b is None or a is None:
            c.add(fid, Verdict.UNKNOWN, (Msg("error counters read only before the run: no delta") if b else
                                         Msg("error counters read only after the run: no delta")),
                  subj, [x.raw for x in (b, a) if x],
                  "Rerun the validation to the end: the counters are compared before and after.", SRC_C5)
            continue
        if b.get("available") is not True or a.get("available") is not True:
            why = str((a.get("reason") if a.get("available") is not True else b.get("reason")) or "not available")
            c.add(fid, Verdict.SKIP, Msg("error counters not compared: {why}", why=why), subj, [b.raw, a.raw], "", SRC_C5)
            continue
        bad: list[tuple[Verdict, str]] = []
        unread: list[str] = []
        for name, what, verdict in _COUNTER_RULES:
            x, y = _counter(b.data, name), _counter(a.data, name)
            if x is None or y is None:
                unread.append(name)
                continue
            if y > x and name == "xid_count":
                bad.extend(_new_xids(b, a, x, y, what))
            elif y > x:
                bad.append((verdict, f"{what}: {name} {x} -> {y} (+{y - x})"))
            elif name == "remap_failure" and y > 0:
                bad.append((verdict, f"row-remapping failure reported ({name} = {y}, before the run too)"))
        ev = [b.raw, a.raw] + [str(x) for x in (a.get("xid_lines") or [])][:5] if isinstance(a.get("xid_lines"), list) \
            else [b.raw, a.raw]
        note = (Msg('; not readable: {unread}', unread=', '.join(unread)) if unread else '')
        info = [t for v, t in bad if v is Verdict.PASS]  # informational Xids: said, not held against the GPU
        bad = [(v, t) for v, t in bad if v is not Verdict.PASS]
        if info:
            note += "; " + SEMICOLON.join(info)
        if not bad:
            m = c.row(fid, "new_errors", 0, "count", 0, Verdict.PASS, subj, op="<=",
                      label="new error kinds during the run")
            c.add(fid, Verdict.PASS, (Msg("no new ECC, row-remap or AER errors and only informational Xids during the run "
                                          "(deltas of the counters before and after){note}", note=note) if info else
                                      Msg("no new Xid, ECC, row-remap or AER errors during the run (deltas of the "
                                          "counters before and after){note}", note=note)), subj, ev, "", SRC_C5,
                  measured=m)
            continue
        worst = Verdict.FAIL if any(v is Verdict.FAIL for v, _ in bad) else Verdict.WARN
        m = c.row(fid, "new_errors", len(bad), "count", 0, worst, subj, SEMICOLON.join(t for _, t in bad), op="<=",
                  label="new error kinds during the run")
        c.add(fid, worst, SEMICOLON.join(t for _, t in bad) + note, subj, ev,
              "Read the new kernel-log lines (Xid numbers in the NVIDIA Xid catalog; `journalctl -k`), `nvidia-smi -q "
              "-d ECC,ROW_REMAPPER`, and the PCIe AER counters of the GPU's link; an uncorrected ECC error or pending "
              "remap needs a GPU reset or reboot and a re-check, a remap failure or a repeat means RMA. `bringup check` "
              "judges the same counters in detail.", SRC_C5, measured=m)


# ------------------------------------------------------------------ the node


def _sanity(c: _Ctx) -> None:
    ms = c.vlog.measures("sanity")
    n = c.world_size
    ok: dict[int, Event] = {}
    bad: list[Event] = []
    for e in ms:
        r = to_int(e.get("rank"), text=False)
        if r is None:
            continue
        good = num(e.get("value")) == 1.0
        s = num(e.get("allreduce_sum"))
        ws = to_int(e.get("world_size"), text=False) or n
        if s is not None and abs(s - ws) > 1e-6:
            good = False
        (ok.__setitem__(r, e) if good else bad.append(e))
    vers = ", ".join(f"{k} {v}" for k, v in c.versions.items() if v) if c.versions else ""
    missing = [r for r in range(n) if r not in ok]
    if not ms and not c.vlog.events:
        return
    if not bad and not missing:
        m = c.row("sanity", "ranks_ok", len(ok), "ranks", n, Verdict.PASS, "host", label="ranks that passed")
        c.add("sanity", Verdict.PASS, Msg("all {n} ranks all-reduced ones to {n} and passed the barrier{vers}", n=n,
                                          vers=f" ({vers})" if vers else ""), "host", [ok[r].raw for r in sorted(ok)][:8], "", SRC_D3, measured=m)
        return
    parts = []
    if bad:
        parts.append("wrong all-reduce sum on rank(s) " + ", ".join(
            f"{to_int(e.get('rank'), text=False)} ({e.get('allreduce_sum')} instead of "
            f"{to_int(e.get('world_size'), text=False) or n})" for e in bad[:8]))
    really_missing = [r for r in missing if r not in {to_int(e.get("rank"), text=False) for e in bad}]
    if really_missing:
        named = ", ".join(str(r) for r in really_missing[:16]) + (" ..." if len(really_missing) > 16 else "")
        parts.append(f"rank(s) {named} of {n} did not report")
    m = c.row("sanity", "ranks_ok", len(ok), "ranks", n, Verdict.FAIL, "host", label="ranks that passed")
    c.add("sanity", Verdict.FAIL, "rank sanity: " + SEMICOLON.join(parts) + (f" ({vers})" if vers else ""), "host",
          [e.raw for e in bad[:4]] + [e.raw for e in c.vlog.errors[:4]],
          "Read the first error of the missing or wrong rank (its GPU: Xid/ECC in the kernel log, `nvidia-smi`); "
          "on NVSwitch systems check nvidia-fabricmanager; rerun with NCCL_DEBUG=INFO.", SRC_D3, measured=m)


def _floor_row(names: list[str], gpus: int) -> dict[str, str] | None:
    try:
        rows = table("nccl_floors.csv")
    except OSError:
        return None
    for row in rows:
        if row.get("collective") != "all_reduce" or row.get("nodes") != "1" or row.get("gpus_per_node") != str(gpus):
            continue
        try:
            rx = re.compile(row.get("device_regex", "") or "(?!)")
        except re.error:
            continue
        if names and all(rx.search(n) for n in names):
            return row
    return None


def _allreduce_floor(c: _Ctx, n: int) -> tuple[float | None, str, int, str]:
    """(floor GB/s, description, min_bytes, why-none) for an n-rank all-reduce on this node."""
    min_bytes = int(threshold("allreduce_min_bytes", float(1 << 30)))
    override = num(c.plan.get("allreduce_floor_gb_s"))
    if override is not None and override > 0:
        return override, "the plan's site baseline (allreduce_floor_gb_s)", min_bytes, ""
    devs = list(c.devices.values())
    names = list(dict.fromkeys(d.name for d in devs if d.name))
    row = _floor_row(names, n)
    if row is not None:
        try:
            min_bytes = int(row.get("min_bytes") or min_bytes)
        except ValueError:
            pass
        fl = to_float(row.get("floor_busbw_gb_s"), positive=True)
        ref = row.get("reference_busbw_gb_s", "")
        if fl is not None:
            desc = (f"{row.get('system')}, {row.get('floor_basis', '')}" + (Msg('; typically {ref} GB/s', ref=ref) if ref else '') + f" ({row.get('source', '')}; {SRC_FLOORS})")
            return fl, desc, min_bytes, ""
        return None, "", min_bytes, (f"{row.get('system')} has only a reference ({ref} GB/s {row.get('reference_basis', '')}"
                                     f"), no floor")
    nvl = [d.nvlink for d in devs]
    if devs and all(isinstance(x, dict) and to_int(x.get("links_active"), text=False) == 0 for x in nvl):
        gens = [to_int(d.pcie.get("max_gen"), text=False) for d in devs]
        widths = [to_int(d.pcie.get("max_width"), text=False) for d in devs]
        if all(g is not None for g in gens) and all(w is not None for w in widths):
            g, w = min(x for x in gens if x is not None), min(x for x in widths if x is not None)
            practical, how = pcie_practical_gb_s(g, w)
            if practical is not None:
                frac = threshold("pcie_allreduce_fraction", 0.7)
                return (frac * practical, f"PCIe-only node: {frac:g} x {how} = {frac * practical:.1f} GB/s (derived, "
                        "bringup's judgement)", min_bytes, "")
            return None, "", min_bytes, f"PCIe-only node, but {how}"
        return None, "", min_bytes, "PCIe-only node, but the PCIe generation/width was not reported"
    if any(isinstance(x, dict) and (to_int(x.get("links_active"), text=False) or 0) > 0 for x in nvl):
        model = names[0] if len(names) == 1 else " + ".join(names) or "these GPUs"
        return None, "", min_bytes, f"no floor is known for {n}x {model} with NVLink"
    return None, "", min_bytes, ("no floor is known for " + (f"{n}x {names[0]}" if len(names) == 1 else "this node")
                                 + " (NVLink state not reported by the script)")


def _allreduce(c: _Ctx, test: str = "allreduce", fid: str = "allreduce_sweep") -> None:
    ms = [e for e in c.vlog.measures(test) if to_int(e.get("size_bytes"), text=False) is not None]
    if not ms:
        if c.kind == "node" and test not in c.errored_tests and c.vlog.events:
            c.add(fid, Verdict.UNKNOWN, "no all-reduce measurement in the log", "host", [],
                  "Rerun the node validation; read the log for why the sweep did not report.", SRC_D4)
        return
    by_size: dict[int, Event] = {}
    for e in ms:
        by_size[to_int(e.get("size_bytes"), text=False) or 0] = e  # the last one seen per size
    sizes = sorted(by_size)
    series = [(s, num(by_size[s].get("busbw_gb_s", by_size[s].get("value"))) or 0.0) for s in sizes]
    c.out.series = series
    n = to_int(by_size[sizes[-1]].get("world_size"), text=False) or c.world_size
    wrong = [e for e in ms if (to_int(e.get("wrong"), text=False) or 0) > 0]
    unchecked = [e for e in ms if to_int(e.get("wrong"), text=False) is None]
    big = by_size[sizes[-1]]
    busbw, algbw = num(big.get("busbw_gb_s", big.get("value"))), num(big.get("algbw_gb_s"))
    dtype = str(big.get("dtype") or "")
    arith = (Msg("busbw {bw} GB/s at {size}", bw=_f(busbw), size=human_bytes(sizes[-1]))
             + (f" = algbw {_f(algbw)} x 2({n}-1)/{n}" if algbw is not None and n >= 2 else ""))
    where = (Msg('{n} ranks', n=n) + (f', {dtype}' if dtype else '') + Msg(', {human_bytes} to {human_bytes2}', human_bytes=human_bytes(sizes[0]), human_bytes2=human_bytes(sizes[-1])))
    ev = [big.raw] + [e.raw for e in wrong[:6]]
    src = f"{SRC_D4}; {SRC_FLOORS}"
    if wrong:
        sz = ", ".join(human_bytes(to_int(e.get("size_bytes"), text=False)) + f" ({to_int(e.get('wrong'), text=False)} wrong)"
                       for e in wrong[:8])
        c.add(fid, Verdict.FAIL, f"all-reduce returned wrong results at {sz} ({where})", "host", ev,
              "Data corruption on a GPU or link: rerun; then test GPU pairs (the P2P matrix, nvbandwidth, DCGM diag "
              "-r 3) to find the bad GPU or NVLink, and check Xid/ECC/NVLink error counters.", src)
        for s, b in series:
            e = by_size[s]
            w = to_int(e.get("wrong"), text=False) or 0
            c.row(test, f"busbw@{human_bytes(s)}", b, "GB/s", None, Verdict.FAIL if w else Verdict.PASS, "host",
                  f"wrong {w}")
        return
    check_note = (Msg('; {n_unchecked} size(s) without a correctness count', n_unchecked=len(unchecked)) if unchecked else Msg('; results correct at every size'))
    if c.cpu:
        c.add(fid, Verdict.PASS if not unchecked else Verdict.UNKNOWN,
              Msg("all-reduce over {where}: {arith}{check_note}; bandwidth is not judged on the CPU (gloo stands in "
                  "for NCCL to prove the path)", where=where, arith=arith, check_note=check_note), "host", ev,
              "" if not unchecked else "Rerun with the shipped script (it checks every size).", src)
        c.row(test, f"busbw@{human_bytes(sizes[-1])}", busbw, "GB/s", None, Verdict.SKIP, "host", "CPU: not judged")
        return
    floor, desc, min_bytes, why = _allreduce_floor(c, n)
    c.out.floor_gb_s, c.out.floor_basis = floor, desc
    if n < 2:
        c.add(fid, Verdict.UNKNOWN, f"all-reduce over 1 rank: busbw is 0 by definition, no link was measured "
              f"({where})", "host", ev, "Run the node validation over every GPU (validate_nproc, or --nproc).", src)
        return
    if busbw is None:
        c.add(fid, Verdict.UNKNOWN, f"all-reduce over {where}: no busbw at the largest size", "host", ev,
              "Rerun the node validation.", src)
        return
    if sizes[-1] < min_bytes:
        c.add(fid, Verdict.UNKNOWN, f"all-reduce over {where}: {arith}{check_note}; sweep too small: the largest "
              f"message {human_bytes(sizes[-1])} is below {human_bytes(min_bytes)}, too small to reach the bandwidth "
              "plateau", "host", ev, "Run the full sweep (without --quick / validate_quick) to judge the bandwidth.",
              src)
        c.row(test, f"busbw@{human_bytes(sizes[-1])}", busbw, "GB/s", floor, Verdict.UNKNOWN, "host", "sweep too small")
        return
    if floor is None:
        c.add(fid, Verdict.UNKNOWN, f"all-reduce over {where}: {arith}{check_note}; {why}", "host", ev,
              "Compare with the vendor's figure or your site baseline for this system (Azure HPC health checks and Stas Bekman's Machine Learning Engineering list "
              "8x A100 >= 228, 8x H100/H200 >= 460, 4x GB200 >= 432 GB/s).", src)
        c.row(test, f"busbw@{human_bytes(sizes[-1])}", busbw, "GB/s", None, Verdict.UNKNOWN, "host", why)
        return
    verdict = Verdict.PASS if busbw >= floor else Verdict.FAIL
    msg = (Msg("all-reduce over {where}: {arith}; >= the floor {floor:g} GB/s ({desc}){check_note}", where=where, arith=arith,
               floor=floor, desc=desc, check_note=check_note) if verdict is Verdict.PASS else
           Msg("all-reduce over {where}: {arith}; below the floor {floor:g} GB/s ({desc}){check_note}", where=where, arith=arith,
               floor=floor, desc=desc, check_note=check_note))
    m = c.row(test, f"busbw@{human_bytes(sizes[-1])}", busbw, "GB/s", floor, verdict, "host", arith,
              label=f"busbw at {human_bytes(sizes[-1])}")
    c.add(fid, verdict, msg, "host", ev, "" if verdict is Verdict.PASS else (
        "Rerun up to a few times first (Azure HPC health checks allow retries). Then check: nothing else runs on the "
        "GPUs; every NVLink is up (`nvidia-smi nvlink -s`); on NVSwitch systems nvidia-fabricmanager runs at the "
        "driver's version; PCIe ACS/IOMMU (NCCL troubleshooting); throttling during the run; compare with "
        "nccl-tests all_reduce_perf."), src, measured=m)


def _p2p(c: _Ctx) -> None:
    ms = [e for e in c.vlog.measures("p2p") if num(e.get("value")) is not None]
    if not ms:
        return
    wrong = [e for e in ms if (to_int(e.get("wrong"), text=False) or 0) > 0]
    vals = [num(e.get("value")) or 0.0 for e in ms]
    median = statistics.median(vals)
    pairs = ", ".join(f"{e.get('src')}->{e.get('dst')} {num(e.get('value')) or 0:.1f}" for e in ms[:12])
    if wrong:
        c.add("p2p", Verdict.FAIL, "P2P copies returned wrong data on pair(s) " + ", ".join(
            f"{e.get('src')}->{e.get('dst')} ({to_int(e.get('wrong'), text=False)} wrong)" for e in wrong[:8]), "host",
            [e.raw for e in wrong[:6]],
            "Data corruption between two GPUs: test the pair alone (nvbandwidth), check NVLink error counters "
            "(`nvidia-smi nvlink -e`) and Xid/ECC on both GPUs; run DCGM diag -r 3.", SRC_D1)
        for e in ms:
            c.row("p2p", f"{e.get('src')}->{e.get('dst')}", num(e.get("value")), "GB/s", None,
                  Verdict.FAIL if (to_int(e.get("wrong"), text=False) or 0) else Verdict.PASS, "host")
        return
    if c.cpu:
        c.add("p2p", Verdict.PASS, Msg("P2P copies correct on all {n} pair(s) (GB/s: {pairs}); bandwidth is not judged on "
                                       "the CPU", n=len(ms), pairs=pairs), "host", [e.raw for e in ms[:4]], "", SRC_D1)
        for e in ms:
            c.row("p2p", f"{e.get('src')}->{e.get('dst')}", num(e.get("value")), "GB/s", None, Verdict.SKIP, "host",
                  "CPU: not judged")
        return
    warn_f, fail_f = threshold("p2p_warn_fraction", 0.9), threshold("p2p_fail_fraction", 0.75)
    worst = Verdict.PASS
    slow: list[str] = []
    pair_m: list[Measure | None] = []
    for e in ms:
        v = num(e.get("value")) or 0.0
        verdict = _grade(v, warn_f * median, fail_f * median) if median > 0 else Verdict.UNKNOWN
        if verdict in (Verdict.WARN, Verdict.FAIL):
            slow.append(f"{e.get('src')}->{e.get('dst')} {v:.1f} GB/s ({100 * v / median:.0f}% of the median)")
        if verdict.rank > worst.rank:
            worst = verdict
        pair_m.append(c.row("p2p", f"{e.get('src')}->{e.get('dst')}", v, "GB/s", warn_f * median, verdict, "host",
                            label=f"P2P {e.get('src')}->{e.get('dst')} ({warn_f:g} x the median pair)"))
    if worst is Verdict.PASS:
        c.add("p2p", Verdict.PASS, Msg("every P2P pair within {pct:.0f}% of the median pair {median:.1f} GB/s ({n} pairs; "
                                       "results correct)", pct=100 * (1 - warn_f), median=median, n=len(ms)), "host", [e.raw for e in ms[:4]], "", SRC_D1,
              measured=tightest(pair_m))
    else:
        c.add("p2p", worst, f"slow P2P pair(s) against the median {median:.1f} GB/s (warn below {warn_f:g} x, fail "
              f"below {fail_f:g} x): " + SEMICOLON.join(slow[:8]), "host",
              [e.raw for e in ms if f"{e.get('src')}->{e.get('dst')} " in " ".join(slow)][:6],
              "Find the common GPU of the slow pairs: check its NVLink links (`nvidia-smi nvlink -s`, `-e` for "
              "errors) or PCIe path (`nvidia-smi topo -m`: PIX/PXB vs SYS; ACS/IOMMU redirecting P2P), then rerun.",
              SRC_D1, measured=tightest(pair_m))


def nccl_tests_slice(text: str) -> tuple[str, str]:
    """(the nccl-tests part of the log, its command line): from the supervisor's ``$ .../all_reduce_perf ...`` line
    to the next supervisor line (``$ ``/``# exit status``); ("", "") when the log has none."""
    lines = text.splitlines()
    for i, ln in enumerate(lines):
        if ln.startswith("$ ") and re.search(r"(^|/)all_reduce_perf(\s|$)", ln[2:].split(" ", 1)[0] + " "):
            end = len(lines)
            for j in range(i + 1, len(lines)):
                if lines[j].startswith(("$ ", "# exit status", "# bringup action")):
                    end = j
                    break
            return "\n".join(lines[i + 1:end]), ln[2:]
    return "", ""


def _nccl(c: _Ctx) -> None:
    from wizard.rules.nccl import judge_nccl_log, judge_nccl_tests

    part, cmd = nccl_tests_slice(c.text)
    if cmd:
        try:
            fs = judge_nccl_tests(part, {"command": cmd, **{k: v for k, v in c.plan.items() if k == "allreduce_floor_gb_s"}})
        except Exception as exc:  # noqa: BLE001 - the other findings must survive a bug there
            fs = [Finding("node.allreduce", Verdict.UNKNOWN, Msg("judging the nccl-tests output crashed: {exc!r}", exc=exc))]
        c.out.findings.extend(fs)
    torch_part = c.text.replace(part, "") if part else c.text
    if "NCCL" not in torch_part:
        return
    try:
        fs = judge_nccl_log(torch_part, {})
    except Exception:  # noqa: BLE001
        return
    for f in fs:
        # one node: the transport between nodes is stage E's
        if f.verdict not in (Verdict.FAIL, Verdict.WARN) or f.id == "multinode.transport":
            continue
        if f.id.startswith("multinode."):
            f = Finding("node.nccl_errors", f.verdict, f.message, f.subject, f.evidence, f.remedy, f.source,
                        measured=f.measured)
        c.out.findings.append(f)


# ------------------------------------------------------------------ soak


def _soak_series(c: _Ctx) -> dict[tuple[str, str, str, Any], list[Event]]:
    """The soak's judged series, in log order: (test, metric, node, who) -> its measures (one per interval), where
    who is the GPU index, ``"rank N"`` for a CPU rank's GEMM, ``None`` for the all-reduce (rank 0 measures it)."""
    series: dict[tuple[str, str, str, Any], list[Event]] = {}
    for e in c.vlog.of("measure"):
        t = e.test
        if not t.startswith("soak"):
            continue
        if num(e.get("value")) is None or str(e.get("unit", "")) not in ("TFLOPS", "GB/s"):
            continue
        dev = to_int(e.get("device"), text=False)
        who = dev if dev is not None else (f"rank {e.rank}" if t == "soak_gemm" else None)
        series.setdefault((t, str(e.get("metric", "")), e.node, who), []).append(e)
    return series


def _soak_subject(c: _Ctx, evs: list[Event], node: str, who: Any) -> str:
    return c.subject_of(evs[0]) if isinstance(who, int) else (f"{who} on {node}" if who else "host")


def _soak_perf(c: _Ctx) -> None:
    """End-of-soak performance within soak_perf_tolerance (5%, issue 5) of the start, per series (test, metric,
    device): medians of the first and last k intervals after a warm-up interval (:func:`soak_compare`); UNKNOWN
    when the soak is too short to compare; below the line FAIL."""
    tol = threshold("soak_perf_tolerance", 0.05)
    series = _soak_series(c)
    wrong = [e for evs in series.values() for e in evs if (to_int(e.get("wrong"), text=False) or 0) > 0]
    if wrong:
        c.add("perf", Verdict.FAIL, f"wrong all-reduce results during the soak ({len(wrong)} measurement(s))", "host",
              [e.raw for e in wrong[:6]], "Data corruption under sustained load: find the GPU (node validation P2P "
              "matrix, DCGM diag -r 3) and check Xid/ECC.", SRC_SOAK)
    if not series:
        if c.vlog.events and "soak" not in c.errored_tests:
            c.add("perf", Verdict.UNKNOWN, "no performance measurements during the soak", "host", [],
                  "Rerun the soak; read the log for why it did not report.", SRC_SOAK)
        return
    for (t, metric, node, who), evs in series.items():
        subj = _soak_subject(c, evs, node, who)
        unit = str(evs[0].get("unit", ""))
        cmp = soak_compare([num(e.get("value")) or 0.0 for e in evs])
        if cmp is None:
            first, last = num(evs[0].get("value")) or 0.0, num(evs[-1].get("value")) or 0.0
            short = Msg("{t} {metric}: start {first:,.2f} {unit}, end {last:,.2f} {unit} ({n} interval(s)); soak too short "
                        "to compare: after the first interval (warm-up) fewer than {min} remain", t=t, metric=metric,
                        first=first, last=last, unit=unit, n=len(evs), min=SOAK_MIN_INTERVALS)
            if c.cpu:  # a CPU's performance is never judged: shown, skipped
                c.add("perf", Verdict.SKIP, Msg("{figs}; not judged on the CPU", figs=short), subj, [evs[-1].raw], "",
                      SRC_SOAK)
                c.row(t, metric, last, unit, None, Verdict.SKIP, subj, "CPU: not judged")
                continue
            c.add("perf", Verdict.UNKNOWN, short, subj, [e.raw for e in evs[:3]],
                  "Run the soak longer (soak_minutes, --minutes): at least "
                  f"{SOAK_MIN_INTERVALS + 1} intervals.", SRC_SOAK)
            c.row(t, metric, last, unit, None, Verdict.UNKNOWN, subj, "soak too short to compare")
            continue
        k, start, end, change = cmp
        figs = Msg("{t} {metric}: start {start:,.2f} {unit}, end {end:,.2f} {unit} ({change:+.1f}%; medians of the first "
                   "and the last {k} of {n} intervals after a warm-up interval: a quarter of them, at least one)",
                   t=test_msg(t), metric=metric_msg(metric), start=start, end=end, unit=unit, change=100 * change,
                   k=k, n=len(evs) - 1)
        ev = [evs[1].raw, evs[-1].raw]
        if c.cpu:
            c.add("perf", Verdict.SKIP, Msg("{figs}; not judged on the CPU", figs=figs), subj, ev, "", SRC_SOAK)
            c.row(t, metric, end, unit, None, Verdict.SKIP, subj, "CPU: not judged")
            continue
        ok = end >= (1 - tol) * start
        verdict = Verdict.PASS if ok else Verdict.FAIL
        c.add("perf", verdict, (Msg("{figs}; within {tol:.0f}% of the start", figs=figs, tol=100 * tol) if ok else
                                Msg("{figs}; more than {tol:.0f}% of the start (below it)", figs=figs, tol=100 * tol)),
              subj, ev,
              "" if ok else "Performance fell under sustained load: look at the throttle finding (thermal slowdown, "
              "power brake), temperatures and fans; rerun after fixing cooling.", SRC_SOAK,
              measured=measure(end, (1 - tol) * start, unit, "at_least",
                               f"{t} {metric} at the end ({100 * tol:g}% below the start {start:,.2f} {unit})"))
        c.row(t, metric, end, unit, (1 - tol) * start, verdict, subj, f"start {start:,.2f} (median of {k})")


SOAK_MIN_INTERVALS = 3
"""Intervals that must remain after the warm-up interval to compare the end of a soak with its start (judgement,
derived: one noisy interval against another says nothing)."""


def soak_compare(values: list[float]) -> tuple[int, float, float, float] | None:
    """(k, start, end, change) of a soak series (one figure per interval, in order): the first interval is
    dropped as warm-up; start = median of the first k remaining, end = median of the last k, k = max(1, n//4)
    of the n remaining (derived); change = (end - start) / start (0 when start is 0). ``None`` when fewer than
    :data:`SOAK_MIN_INTERVALS` remain. Pure."""
    rest = values[1:]
    if len(rest) < SOAK_MIN_INTERVALS:
        return None
    k = max(1, len(rest) // 4)
    start, end = statistics.median(rest[:k]), statistics.median(rest[-k:])
    return k, start, end, ((end - start) / start if start > 0 else 0.0)


# ------------------------------------------------------------------ telemetry: what the report draws


TELEMETRY_POINTS = 120
"""Most points kept per metric of one device's NVML sample series in a stored result, whatever the run's length:
beyond it consecutive samples are averaged into this many points (judgement: a chart a page wide shows no more; the
exact minimum and maximum of every metric are kept beside the points)."""
TELEMETRY_DEVICES = 64
"""Most devices kept per part of the telemetry (samples, counters, soak series): a log naming more is not a
machine's, and the stored result stays bounded whatever the log holds."""
SAMPLE_METRICS = ("temp_c", "power_w", "sm_clock_mhz")
"""The NVML sample fields kept for charts: GPU temperature (°C), power draw (W), SM clock (MHz)."""
_NOT_COUNTERS = frozenset({"v", "t", "rank", "node", "event", "device", "when", "available"})


def downsample(points: list[tuple[float, float]], limit: int = TELEMETRY_POINTS) -> list[list[float]]:
    """``[[x, y]...]`` of at most ``limit`` points: the points themselves when there are no more, else ``limit``
    buckets of consecutive points (sizes differing by at most one), each point the mean x and mean y of its bucket.
    Values rounded to 0.1 (x in s, y in the metric's unit). Pure."""
    n = len(points)
    if n <= limit:
        return [[round(x, 1), round(y, 1)] for x, y in points]
    out: list[list[float]] = []
    for i in range(limit):
        chunk = points[i * n // limit:(i + 1) * n // limit]
        out.append([round(statistics.fmean(x for x, _ in chunk), 1), round(statistics.fmean(y for _, y in chunk), 1)])
    return out


def _reason_labels() -> dict[int, tuple[str, str]]:
    """NVML clock-event reason bit -> (label, load verdict) from ``assets/smi_clock_events.csv``."""
    out: dict[int, tuple[str, str]] = {}
    try:
        for row in table("smi_clock_events.csv"):
            out[int(row.get("bit", "0"), 16)] = (row.get("label", ""), row.get("load_verdict", ""))
    except (OSError, ValueError):
        return {b: (label, "warn") for b, label in BAD_REASON_BITS.items()}
    return out


def _dev_key(item: tuple[tuple[str, int | None], Any]) -> tuple[str, int]:
    (node, idx), _ = item
    return node, idx if idx is not None else -1


def _subject(c: _Ctx, node: str, idx: int | None) -> str:
    d = c.devices.get((node, idx))
    return d.subject if d else (f"GPU {idx}" if idx is not None and not c.cpu else "host")


def _sample_telemetry(c: _Ctx) -> list[dict[str, Any]]:
    """Per device: its NVML samples as ``[elapsed s since the run's start, value]`` series of :data:`SAMPLE_METRICS`
    (:func:`downsample`: at most :data:`TELEMETRY_POINTS` each), their exact min/max/mean, the power limit and the
    clock-event reasons seen (samples per reason)."""
    by_dev: dict[tuple[str, int | None], list[Event]] = {}
    for s in c.vlog.of("sample"):
        by_dev.setdefault((s.node, to_int(s.get("device"), text=False)), []).append(s)
    labels = _reason_labels()
    out: list[dict[str, Any]] = []
    for (node, idx), ss in sorted(by_dev.items(), key=_dev_key)[:TELEMETRY_DEVICES]:
        starts = [t for t in (num(e.get("t")) for e in c.vlog.starts if e.node == node) if t is not None]
        times = [t for t in (num(s.get("t")) for s in ss) if t is not None]
        t0 = min(starts) if starts else (min(times) if times else 0.0)
        series: dict[str, list[list[float]]] = {}
        stats: dict[str, dict[str, float] | None] = {}
        for m in SAMPLE_METRICS:
            pts = sorted((t - t0, v) for t, v in ((num(s.get("t")), num(s.get(m))) for s in ss)
                         if t is not None and v is not None)
            series[m] = downsample(pts)
            ys = [v for _, v in pts]
            stats[m] = ({"min": round(min(ys), 1), "max": round(max(ys), 1), "mean": round(statistics.fmean(ys), 1)}
                        if ys else None)
        limits = [x for x in (num(s.get("power_limit_w")) for s in ss) if x is not None]
        seen: dict[int, int] = {}
        for s in ss:
            r = to_int(s.get("clock_event_reasons"), text=False)
            if r is None or r <= 0:
                continue
            for bit in (1 << i for i in range(min(r.bit_length(), 64))):
                if r & bit:
                    seen[bit] = seen.get(bit, 0) + 1
        reasons = [{"bit": f"0x{b:x}", "label": labels.get(b, (f"bit 0x{b:x}", ""))[0] or f"bit 0x{b:x}",
                    "judged": labels.get(b, ("", "unknown"))[1] or "unknown", "samples": k}
                   for b, k in sorted(seen.items())]
        out.append({"node": node, "device": idx, "subject": _subject(c, node, idx), "samples": len(ss),
                    "per_point": max(1, math.ceil(len(ss) / TELEMETRY_POINTS)),
                    "duration_s": round(max(times) - t0, 1) if times else None,
                    "series": series, "stats": stats, "power_limit_w": max(limits) if limits else None,
                    "reasons": reasons})
    return out


def _flat_counters(data: Mapping[str, Any]) -> dict[str, int | None]:
    """The counters a ``counters`` event holds, whatever the script emits: every whole-number (or null) field, and
    those of a nested object as ``name.field`` (``aer.fatal``); lists and text (``xid_lines``, reasons) are not
    counters."""
    out: dict[str, int | None] = {}
    for k, v in data.items():
        if k in _NOT_COUNTERS or not isinstance(k, str):
            continue
        if isinstance(v, dict):
            for kk, vv in v.items():
                if vv is None or (isinstance(vv, int) and not isinstance(vv, bool)):
                    out[f"{k}.{kk}"] = vv
        elif v is None and not k.endswith("reason"):
            out[k] = None
        elif isinstance(v, int) and not isinstance(v, bool):
            out[k] = v
        if len(out) >= 40:
            break
    return out


def _counter_telemetry(c: _Ctx) -> list[dict[str, Any]]:
    """Per device: every counter before and after the run and its delta (``changed``: the names whose delta is not
    0), the Xid numbers of the new Xid lines, and why counters were not read (``reason``, ``notes``)."""
    pairs: dict[tuple[str, int | None], dict[str, Event]] = {}
    for e in c.vlog.of("counters"):
        w = e.get("when")
        if w in ("before", "after"):
            pairs.setdefault((e.node, to_int(e.get("device"), text=False)), {})[str(w)] = e
    out: list[dict[str, Any]] = []
    for (node, idx), p in sorted(pairs.items(), key=_dev_key)[:TELEMETRY_DEVICES]:
        b, a = p.get("before"), p.get("after")
        fb = _flat_counters(b.data) if b else {}
        fa = _flat_counters(a.data) if a else {}
        available = bool(b and a and b.get("available") is True and a.get("available") is True)
        reason = ""
        if b is None or a is None:
            reason = (Msg('read only {value} the run: no delta', value='before' if b else 'after'))
        elif not available:
            reason = str((a.get("reason") if a.get("available") is not True else b.get("reason")) or "not available")
        readable = [x for x in (b, a) if x is not None and x.get("available") is True]
        rows: list[dict[str, Any]] = []
        for name in list(dict.fromkeys([*fb, *fa])) if readable else []:
            x, y = fb.get(name), fa.get(name)
            rows.append({"name": name, "before": x, "after": y,
                         "delta": y - x if x is not None and y is not None else None})
        new_xids: list[int | None] = []
        xb, xa = fb.get("xid_count"), fa.get("xid_count")
        if a is not None and xb is not None and xa is not None and xa > xb:
            codes = _xid_codes(a) or []
            new_xids = codes[-(xa - xb):][:20]
        notes = [f"{k}: {str(x.get(k))[:300]}" for x in (b, a) if x is not None
                 for k in ("aer_reason", "xid_reason") if x.get(k)]
        out.append({"node": node, "device": idx, "subject": _subject(c, node, idx), "available": available,
                    "reason": reason, "counters": rows,
                    "changed": [r["name"] for r in rows if r["delta"] not in (None, 0)],
                    "new_xid_codes": new_xids, "notes": list(dict.fromkeys(notes))})
    return out


def _soak_telemetry(c: _Ctx) -> list[dict[str, Any]]:
    """Per soak series (a GPU's GEMM TFLOPS, the all-reduce busbw): its first and last interval, their change, the
    judged comparison (:func:`soak_compare`: medians after the warm-up interval) and the verdict of its
    results-table row."""
    rows = list(c.out.rows)
    tol = threshold("soak_perf_tolerance", 0.05)
    out: list[dict[str, Any]] = []
    for (t, metric, node, who), evs in list(_soak_series(c).items())[:TELEMETRY_DEVICES]:
        subj = _soak_subject(c, evs, node, who)
        vals = [num(e.get("value")) or 0.0 for e in evs]
        row = next((r for r in rows if r.test == t and r.metric == metric and r.subject == subj), None)
        if row is not None:
            rows.remove(row)
        cmp = soak_compare(vals)

        def point(e: Event, v: float) -> dict[str, Any]:
            elapsed = num(e.get("elapsed_s"))
            return {"interval": to_int(e.get("interval"), text=False), "value": v,
                    "elapsed_s": round(elapsed, 1) if elapsed is not None else None}

        out.append({"test": t, "metric": metric, "unit": str(evs[0].get("unit", "")), "node": node,
                    "device": who if isinstance(who, int) else None, "subject": subj, "intervals": len(evs),
                    "size_bytes": to_int(evs[0].get("size_bytes"), text=False),
                    "world_size": to_int(evs[0].get("world_size"), text=False),
                    "first": point(evs[0], vals[0]), "last": point(evs[-1], vals[-1]),
                    "change_pct": round(100 * (vals[-1] - vals[0]) / vals[0], 2) if vals[0] else None,
                    "judged": ({"k": cmp[0], "start": cmp[1], "end": cmp[2], "change_pct": round(100 * cmp[3], 2)}
                               if cmp else None),
                    "tolerance_pct": round(100 * tol, 2), "verdict": row.verdict if row else Verdict.UNKNOWN.value})
    return out


def telemetry(c: _Ctx) -> dict[str, Any]:
    """``{"samples": [...], "counters": [...], "soak": [...]}`` of one judged log (see :func:`_sample_telemetry`,
    :func:`_counter_telemetry`, :func:`_soak_telemetry`; soak series only for a soak). Bounded whatever the log's
    length: at most :data:`TELEMETRY_POINTS` points per metric and :data:`TELEMETRY_DEVICES` devices per part."""
    return {"samples": _sample_telemetry(c), "counters": _counter_telemetry(c),
            "soak": _soak_telemetry(c) if c.kind == "soak" else []}


# ------------------------------------------------------------------ entry points


def analyse(log: str | ValidateLog, plan: Mapping[str, Any] | None = None, kind: str = "gpu",
            text: str | None = None) -> Analysis:
    """Judge one validation log. ``kind``: ``gpu`` | ``node`` | ``soak`` (which findings and ids). ``log`` is the
    log text or an already parsed :class:`ValidateLog` (then ``text`` is the raw text for the nccl-tests and NCCL
    parts). Never raises on garbage: unreadable input gives ``unknown`` findings with the evidence."""
    plan = plan or {}
    if isinstance(log, ValidateLog):
        vlog, raw = log, text or ""
    else:
        raw = log if isinstance(log, str) else ""
        vlog = parse_events(raw)
    c = _Ctx(vlog, raw, plan, kind if kind in KINDS else "gpu")
    _run_findings(c)
    if vlog.events and not c.fatal:
        if c.kind == "gpu":
            _gemm(c)
            _memcpy(c)
            _host_link(c, "h2d")
            _host_link(c, "d2h")
            _memory(c)
            _train(c)
            _throttle(c)
            _counters(c)
        elif c.kind == "node":
            _sanity(c)
            _allreduce(c)
            _p2p(c)
            if vlog.of("sample"):  # the node test itself samples nothing today; judge it when it does
                _throttle(c)
            if vlog.of("counters"):
                _counters(c)
        else:
            _soak_perf(c)
            _throttle(c)
            _counters(c)
    if c.kind == "node":
        _nccl(c)
    if vlog.events and not c.fatal:
        try:
            c.out.telemetry = telemetry(c)
        except Exception as exc:  # noqa: BLE001 - the judged results must survive a bug in what the report draws
            c.out.telemetry = {"error": f"the samples and counters could not be read: {exc!r}"}
    if not c.out.findings:
        c.add("run", Verdict.UNKNOWN, "nothing in the log could be judged", "host", raw.splitlines()[-5:],
              "Rerun the validation and attach its log to a bug report if this repeats.", SRC_RUN)
    return c.out


CPU_ONLY_REASON = N_("ran on the CPU: the software path works, the GPU is not validated")
"""What a validation step says after a run on the CPU (its status is then ``cpu-only``, never ``passed``)."""


def ran_on_cpu(log: str) -> bool:
    """True when a validation log (the script's, or the multi-node launcher's) says it ran on the CPU: a
    ``start`` event of the script or the launcher's ``hosts`` event with ``device`` ``cpu``, and none with
    ``cuda``. Such a run proves the software path only. Pure; never raises."""
    try:
        vlog = parse_events(log if isinstance(log, str) else "")
    except Exception:  # noqa: BLE001 - garbage is "not known to be a CPU run"
        return False
    devs = {str(e.get("device")) for e in vlog.events if e.kind in ("start", "hosts") and isinstance(e.get("device"), str)}
    return "cpu" in devs and "cuda" not in devs


def _safe(log: str, plan: Mapping[str, Any], kind: str) -> list[Finding]:
    try:
        return analyse(log, plan, kind).findings
    except Exception as exc:  # noqa: BLE001 - a judging bug must not hide the run
        return [Finding(f"{STAGE_OF[kind]}.run", Verdict.UNKNOWN, Msg("judging the validation log crashed: {exc!r}", exc=exc),
                        "host", tuple(str(log).splitlines()[-3:]),
                        "This is a bringup bug: report it with the action's log.", SRC_RUN)]


def judge_gpu(log: str, plan: Mapping[str, Any]) -> list[Finding]:
    """ActionSpec.judge of ``gpu.validate``: log text + plan -> findings ``gpu.*``."""
    return _safe(log, plan, "gpu")


def judge_node(log: str, plan: Mapping[str, Any]) -> list[Finding]:
    """ActionSpec.judge of ``node.validate``: log text + plan -> findings ``node.*``."""
    return _safe(log, plan, "node")


def judge_soak(log: str, plan: Mapping[str, Any]) -> list[Finding]:
    """ActionSpec.judge of ``node.soak``: log text + plan -> findings ``soak.*``."""
    return _safe(log, plan, "soak")


def _results(log: str, plan: Mapping[str, Any], kind: str) -> dict[str, Any]:
    return analyse(log, plan, kind).to_json()


def results_gpu(log: str, plan: Mapping[str, Any]) -> dict[str, Any]:
    """ActionSpec.results of ``gpu.validate``: the results table and series (:meth:`Analysis.to_json`)."""
    return _results(log, plan, "gpu")


def results_node(log: str, plan: Mapping[str, Any]) -> dict[str, Any]:
    """ActionSpec.results of ``node.validate``."""
    return _results(log, plan, "node")


def results_soak(log: str, plan: Mapping[str, Any]) -> dict[str, Any]:
    """ActionSpec.results of ``node.soak``."""
    return _results(log, plan, "soak")


def results_table(log: str | ValidateLog, plan: Mapping[str, Any] | None = None, kind: str = "gpu") -> list[ResultRow]:
    """The results table of a log: one :class:`ResultRow` (test, metric, value, unit, floor, verdict) per judged
    measurement, in judging order. Pure; never raises (garbage gives an empty table)."""
    try:
        return analyse(log, plan, kind).rows
    except Exception:  # noqa: BLE001
        return []


def allreduce_series(log: str | ValidateLog, plan: Mapping[str, Any] | None = None) -> tuple[list[tuple[int, float]], float | None, str]:
    """([(size_bytes, busbw_gb_s)] sorted by size, floor GB/s or ``None``, the floor's basis) of a node log's
    all-reduce sweep, for the busbw-vs-size chart. Pure; never raises."""
    try:
        a = analyse(log, plan, "node")
    except Exception:  # noqa: BLE001
        return [], None, ""
    return a.series, a.floor_gb_s, a.floor_basis
