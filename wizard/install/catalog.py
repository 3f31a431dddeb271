"""What bringup knows about NVIDIA data-center drivers, read from ``assets/``: driver branches and their
lifecycle (``assets/driver_branches.csv``), GPU architectures and the kernel-module flavour each needs
(``assets/driver_architectures.csv``, ``assets/driver_gpu_arch.csv``, ``assets/pci_ids.csv``), the
recommended branch and flavour for a set of GPUs, and the host facts both the driver rules and the
install planner start from (the GPUs on the bus, the running kernel, the Secure Boot state).

Data, not judgement: :mod:`wizard.rules.driver_install` turns it into findings and
:mod:`wizard.install.driver` into install commands. Imports only parsers, facts, ``wizard.data`` and
``wizard.common`` (never a rule).

Rules of the data (each row of the tables carries its source):

* architecture of each GPU from its PCI device id: ``assets/pci_ids.csv`` first, then the device-id
  ranges of NVIDIA's gpu-admin-tools (``assets/driver_gpu_arch.csv``);
* flavour: Blackwell and Grace Hopper require the open modules, Turing to Hopper: open recommended
  (NVIDIA's default since R560), Maxwell/Pascal/Volta: proprietary only; a box mixing old and new GPUs
  follows the strictest (proprietary), and a box mixing "open required" with "open unsupported" has no
  single working flavour;
* branch: a branch is end of life from the first day of the month the matrix names; New Feature
  Branches are short-lived; the default is the supported LTSB/PB branch with the best ``prefer`` rank
  that drives every GPU here (R580 LTSB as of the data's date); the live matrix wins.
"""

from __future__ import annotations

from wizard.i18n import Msg, N_

import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from wizard.common import gpu_subject
from wizard.data import table
from wizard.facts import facts_of
from wizard.parsers.gpu import parse_pci
from wizard.parsers.platform import parse_mokutil_sb_state
from wizard.probes import ProbeOutput

Outputs = Mapping[str, ProbeOutput]

MATRIX_URL = Msg("https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html")
"""NVIDIA's live support matrix (branch designation, end of life, CUDA); releases.json on the same site."""

SRC_MATRIX = f"NVIDIA data-center driver support matrix, 'Supported Drivers and CUDA Toolkit Versions' ({MATRIX_URL})"
SRC_FLAVOUR = ("NVIDIA driver installation guide, Kernel Modules (https://docs.nvidia.com/datacenter/tesla/"
               "driver-installation-guide/kernel-modules.html); NVIDIA blog 'NVIDIA Transitions Fully Towards Open-Source "
               "GPU Kernel Modules' (https://developer.nvidia.com/blog/nvidia-transitions-fully-towards-open-source-gpu-"
               "kernel-modules/)")
SRC_ARCH = ("NVIDIA/open-gpu-kernel-modules README, 'Compatible GPUs' (product name per PCI device id), "
            "https://github.com/NVIDIA/open-gpu-kernel-modules; The PCI ID Repository (pci.ids), https://pci-ids.ucw.cz/; "
            "NVIDIA/gpu-admin-tools gpu/devid_chips.py device-id ranges, https://github.com/NVIDIA/gpu-admin-tools; "
            "NVIDIA 'CUDA GPUs - Compute Capability' (product line per architecture), https://developer.nvidia.com/cuda-gpus")
SRC_FM = ("NVIDIA Fabric Manager user guide (https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/): on "
          "NVSwitch systems the nvidia-fabricmanager service must run at exactly the driver's version; "
          "NVIDIA/apt-packaging-fabric-manager, https://github.com/NVIDIA/apt-packaging-fabric-manager ('the version of "
          "fabricmanager must match the NVIDIA driver installed')")
SRC_GUIDE = "NVIDIA Driver Installation Guide (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/)"
OPEN_DEFAULT_NOTE = ("NVIDIA's default flavour since R560 for Turing and newer GPUs (driver installation guide, Kernel "
                     "Modules)")

MONTHS = (N_("January {year}"), N_("February {year}"), N_("March {year}"), N_("April {year}"), N_("May {year}"),
          N_("June {year}"), N_("July {year}"), N_("August {year}"), N_("September {year}"), N_("October {year}"),
          N_("November {year}"), N_("December {year}"))
"""A month of a year in words, one template a month (Chinese writes "{year} 年 6 月")."""


FLAVOURS = {"open": N_("open"), "proprietary": N_("proprietary")}
"""The kernel-module flavours in words ("open" is 开源 in Chinese)."""


def flavour_word(flavour: str | None) -> str:
    """``flavour`` ("open", "proprietary") as a Msg that translates; any other value as it is."""
    return Msg(FLAVOURS[flavour]) if flavour in FLAVOURS else str(flavour)


@dataclass(frozen=True)
class Branch:
    """One row of ``assets/driver_branches.csv``."""

    branch: int
    designation: str  # LTSB | PB | NFB | ""
    eol: str  # YYYY-MM | "eol" | ""
    max_cuda_major: str
    flavours: tuple[str, ...]
    prefer: int | None
    as_of: str
    source: str

    @property
    def eol_date(self) -> _dt.date | None:
        """First day of the end-of-life month (the conservative reading of "End of Life: June 2028")."""
        m = re.fullmatch(r"(\d{4})-(\d{2})", self.eol)
        return _dt.date(int(m.group(1)), int(m.group(2)), 1) if m else None

    @property
    def eol_text(self) -> Msg:
        """The end of life as a person reads it ("June 2028"; "2028 年 6 月" in Chinese), or that it passed or has
        no date."""
        d = self.eol_date
        if d is not None:
            return Msg(MONTHS[d.month - 1], year=d.year)
        return Msg("end of life") if self.eol == "eol" else Msg("no end-of-life date published")

    @property
    def name(self) -> str:
        return f"R{self.branch}" + (f" {self.designation}" if self.designation else "")

    def state(self, today: _dt.date) -> str:
        """``eol`` (past its end of life), ``nfb`` (New Feature Branch, short-lived) or ``supported``."""
        d = self.eol_date
        if self.eol == "eol" or (d is not None and today >= d):
            return "eol"
        if self.designation == "NFB":
            return "nfb"
        return "supported"


def branches() -> dict[int, Branch]:
    out: dict[int, Branch] = {}
    for r in table("driver_branches.csv"):
        try:
            b = int(r.get("branch", ""))
        except ValueError:
            continue
        pref = r.get("prefer", "")
        out[b] = Branch(b, r.get("designation", ""), r.get("eol", ""), r.get("max_cuda_major", ""),
                        tuple(r.get("flavours", "").split()), int(pref) if pref.isdigit() else None,
                        r.get("as_of", ""), r.get("source", ""))
    return out


@dataclass(frozen=True)
class ArchRule:
    """One row of ``assets/driver_architectures.csv``."""

    architecture: str
    open_module: str  # required | recommended | unsupported
    min_branch: int | None
    max_branch: int | None
    source: str
    max_cuda_toolkit: str = ""  # newest CUDA toolkit major.minor for the architecture ("" = no cap)

    def drives(self, branch: int) -> bool:
        return (self.min_branch is None or branch >= self.min_branch) and (self.max_branch is None or branch <= self.max_branch)


def arch_rules() -> dict[str, ArchRule]:
    out = {}
    for r in table("driver_architectures.csv"):
        lo, hi = r.get("min_branch", ""), r.get("max_branch", "")
        cap = r.get("max_cuda_toolkit", "")
        out[r.get("architecture", "")] = ArchRule(r.get("architecture", ""), r.get("open_module", ""),
                                                  int(lo) if lo.isdigit() else None, int(hi) if hi.isdigit() else None,
                                                  r.get("source", ""), cap if re.fullmatch(r"\d{1,3}\.\d{1,3}", cap) else "")
    return out


@dataclass(frozen=True)
class ArchInfo:
    architecture: str
    name: str
    source: str
    nvlink_fabric: bool = False


def architecture_of(device_id: str) -> ArchInfo | None:
    """Architecture of an NVIDIA PCI device id ("2330", "0x2330"): ``assets/pci_ids.csv`` (GH200's form
    factor "Grace Hopper superchip" -> Grace Hopper), then exact rows, then ranges of
    ``assets/driver_gpu_arch.csv``. ``None`` when neither table knows it."""
    did = (device_id or "").strip().lower().removeprefix("0x")
    if not re.fullmatch(r"[0-9a-f]{4}", did):
        return None
    n = int(did, 16)
    rows = table("driver_gpu_arch.csv")
    fabric = any(r.get("nvlink_fabric") == "yes" and _in_range(n, r) for r in rows if r.get("first") != r.get("last"))
    for row in table("pci_ids.csv"):
        if row.get("device_id", "").lower() == did and row.get("kind", "gpu") == "gpu":
            fam = row.get("family", "")
            if "grace" in row.get("form_factor", "").lower():
                fam = "Grace Hopper"
            if fam:
                return ArchInfo(fam, row.get("name", ""), "assets/pci_ids.csv", fabric)
    exact = [r for r in rows if r.get("first") == r.get("last") and _in_range(n, r)]
    ranged = [r for r in rows if r.get("first") != r.get("last") and _in_range(n, r)]
    for r in exact + ranged:
        return ArchInfo(r.get("architecture", ""), r.get("chip", ""), f"assets/driver_gpu_arch.csv ({r.get('source', '')})",
                        r.get("nvlink_fabric") == "yes")
    return None


def architecture_of_name(name: str) -> ArchInfo | None:
    """Architecture of a GPU from its product name ("Tesla K40c" -> Kepler) by ``assets/gpu_name_arch.csv`` (NVIDIA's
    CUDA GPUs compute-capability pages); ``None`` for a name the table does not list (it lists only unambiguous
    product lines)."""
    for r in table("gpu_name_arch.csv"):
        try:
            if re.search(r.get("match", "") or "(?!)", name or "", re.I):
                return ArchInfo(r.get("architecture", ""), f"compute capability {r.get('compute_capability', '')}",
                                r.get("source", ""))
        except re.error:
            continue
    return None


CC_ARCH = (("2.", "Fermi"), ("3.", "Kepler"), ("5.", "Maxwell"), ("6.", "Pascal"), ("7.0", "Volta"), ("7.2", "Volta"),
           ("7.5", "Turing"), ("8.0", "Ampere"), ("8.6", "Ampere"), ("8.7", "Ampere"), ("8.9", "Ada Lovelace"),
           ("9.0", "Hopper"), ("10.", "Blackwell"), ("11.", "Blackwell"), ("12.", "Blackwell"))
"""CUDA compute capability -> architecture (NVIDIA 'CUDA GPUs - Compute Capability', https://developer.nvidia.com/cuda-gpus,
and its legacy page https://developer.nvidia.com/cuda-legacy-gpus)."""


def architecture_of_cc(cc: str) -> str:
    """The architecture of a compute capability ("3.0" -> "Kepler"); "" when not listed."""
    c = (cc or "").strip()
    return next((a for prefix, a in CC_ARCH if c == prefix or (prefix.endswith(".") and c.startswith(prefix))), "")


def architecture_supported_until(arch: str, today: _dt.date) -> tuple[Branch | None, int | None, bool]:
    """(the last driver branch row, its number, ended) for an architecture whose drivers stop at a branch
    (``max_branch`` of assets/driver_architectures.csv); ended = that branch is past its end of life on ``today`` or
    older than every branch NVIDIA's support matrix still lists. (None, None, False) when no branch limit is known."""
    rule = arch_rules().get(arch)
    if rule is None or rule.max_branch is None:
        return None, None, False
    bs = branches()
    b = bs.get(rule.max_branch)
    if b is None:
        return None, rule.max_branch, bool(bs) and rule.max_branch < min(bs)
    return b, rule.max_branch, b.state(today) == "eol"


def _in_range(n: int, r: Mapping[str, str]) -> bool:
    try:
        return int(r.get("first", ""), 16) <= n <= int(r.get("last", ""), 16)
    except ValueError:
        return False


def today_of(plan: Mapping[str, Any]) -> _dt.date:
    """The date lifecycle rules compare against: ``plan["today"]`` (a date or ISO date string, used by
    tests) else the machine's current date."""
    t = plan.get("today") if isinstance(plan, Mapping) else None
    if isinstance(t, _dt.datetime):
        return t.date()
    if isinstance(t, _dt.date):
        return t
    if isinstance(t, str):
        try:
            return _dt.date.fromisoformat(t[:10])
        except ValueError:
            pass
    return _dt.date.today()


# ------------------------------------------------------------------ GPUs and their architecture


@dataclass
class Gpu:
    bdf: str
    device_id: str
    arch: ArchInfo | None
    line: str


@dataclass
class GpuSet:
    gpus: list[Gpu] = field(default_factory=list)
    nvswitch_bridges: list[str] = field(default_factory=list)  # evidence lines of NVIDIA class-0680 functions
    source: str = ""  # "pci" | "plan" | ""
    evidence: list[str] = field(default_factory=list)
    problem: str = ""

    @property
    def architectures(self) -> list[str]:
        return sorted({g.arch.architecture for g in self.gpus if g.arch})

    @property
    def unknown(self) -> list[Gpu]:
        return [g for g in self.gpus if g.arch is None]


def gpus_of(out: Outputs, plan: Mapping[str, Any]) -> GpuSet:
    """NVIDIA GPUs from the ``pci`` probe (sysfs device ids) with their architecture; without any,
    the plan's ``gpu_model`` matched against the names in ``assets/pci_ids.csv``, else its product line by
    :func:`architecture_of_name` (every name of the sizing table, ``assets/gpu_specs.csv``, is one: 'A100 80GB SXM4',
    'H200 NVL', 'B200 (HGX/DGX B200)'; walk 24: those the PCI id table writes otherwise had no architecture)."""
    gs = GpuSet()
    o = out.get("pci")
    if o is not None and o.ok:
        facts = facts_of(out).parse("pci", parse_pci, on="output")
        assert facts is not None
        for fn in facts.gpus:
            did = fn.device_id.lower().removeprefix("0x")
            line = next((e for e in fn.evidence if e.endswith("/device:" + fn.device_id)), fn.evidence[-1] if fn.evidence else fn.bdf)
            gs.gpus.append(Gpu(fn.bdf, did, architecture_of(did), line))
        gs.nvswitch_bridges = [e for fn in facts.bridges for e in fn.evidence if "/device:" in e]
        if gs.gpus:
            gs.source = "pci"
            gs.evidence = [g.line for g in gs.gpus][:16]
            return gs
    elif o is not None:
        gs.problem = f"{o.source}: {o.error}"
    model = str(plan.get("gpu_model") or "").strip().lower() if isinstance(plan, Mapping) else ""
    if model:
        for row in table("pci_ids.csv"):
            # the model as a whole word of the name ('L4' is not 'NVIDIA L40')
            if row.get("kind", "gpu") == "gpu" and re.search(rf"(?<!\w){re.escape(model)}(?!\w)", row.get("name", "").lower()):
                fam = "Grace Hopper" if "grace" in row.get("form_factor", "").lower() else row.get("family", "")
                gs.gpus.append(Gpu("", row.get("device_id", ""), ArchInfo(fam, row.get("name", ""), "assets/pci_ids.csv"),
                                   f"plan gpu_model = {plan.get('gpu_model')!r} -> {row.get('name')} ({fam})"))
                break
        if not gs.gpus:
            info = architecture_of_name(str(plan.get("gpu_model")))
            if info is not None and info.architecture:
                gs.gpus.append(Gpu("", "", ArchInfo(info.architecture, str(plan.get("gpu_model")).strip(), info.source),
                                   f"plan gpu_model = {plan.get('gpu_model')!r} -> {info.architecture} "
                                   f"({info.name}, assets/gpu_name_arch.csv)"))
        if gs.gpus:
            gs.source = "plan"
            gs.evidence = [g.line for g in gs.gpus]
    return gs


def _subject(gs: GpuSet, arch: str | None = None) -> str:
    hit = [g for g in gs.gpus if arch is None or (g.arch and g.arch.architecture == arch)]
    if hit and hit[0].bdf:
        return gpu_subject(bus_id=hit[0].bdf)
    return "host"


def _bus_list(gpus: list[Gpu], limit: int = 4) -> str:
    ids = [g.bdf for g in gpus if g.bdf]
    s = ", ".join(ids[:limit])
    return s + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


# ------------------------------------------------------------------ flavour and branch rules


@dataclass
class Recommendation:
    flavour: str  # open | proprietary | "" (no single flavour fits)
    flavour_why: str
    branch: Branch | None
    alternatives: list[Branch]
    architectures: list[str]
    conflict: str = ""


def flavour_for(archs: Iterable[str]) -> tuple[str, str]:
    """(flavour, why) for a set of architectures; flavour "" when no single flavour drives them all."""
    rules = arch_rules()
    archs = sorted(set(archs))
    req = [a for a in archs if rules.get(a) and rules[a].open_module == "required"]
    uns = [a for a in archs if rules.get(a) and rules[a].open_module == "unsupported"]
    if req and uns:
        return "", Msg("{req} require the open kernel modules but {uns} cannot use them: no single driver flavour "
                       "drives this mix", req=", ".join(req), uns=", ".join(uns))
    if req:
        return "open", Msg("{req} require the open kernel modules (the proprietary modules are unsupported there)",
                           req=", ".join(req))
    if uns:
        rec = [a for a in archs if a not in uns]
        return "proprietary", (Msg("{uns} work only with the proprietary kernel modules; a box mixing them with {rec} "
                                   "takes the proprietary modules", uns=", ".join(uns), rec=", ".join(rec)) if rec else
                               Msg("{uns} work only with the proprietary kernel modules", uns=", ".join(uns)))
    if archs:
        return "open", Msg("open kernel modules recommended for {archs} (NVIDIA's default flavour since R560 for Turing "
                           "and newer GPUs (driver installation guide, Kernel Modules))", archs=", ".join(archs))
    return "open", Msg("architecture unknown: the open kernel modules are NVIDIA's default flavour since R560 for "
                       "Turing and newer GPUs (driver installation guide, Kernel Modules)")


def branch_drives(b: Branch, archs: Iterable[str]) -> list[str]:
    """Architectures among ``archs`` that branch ``b`` cannot drive (assets/driver_architectures.csv)."""
    rules = arch_rules()
    return [a for a in archs if a in rules and not rules[a].drives(b.branch)]


def recommend(archs: Iterable[str], today: _dt.date) -> Recommendation:
    """The driver branch and flavour for GPUs of ``archs``, as of ``today`` (see the module docstring)."""
    archs = sorted(set(archs))
    flavour, why = flavour_for(archs)
    if not flavour and archs:
        return Recommendation("", why, None, [], archs, conflict=why)
    ok = [b for b in branches().values()
          if b.state(today) == "supported" and b.designation in ("LTSB", "PB") and not branch_drives(b, archs)
          and (not flavour or flavour in b.flavours)]
    ok.sort(key=lambda b: (b.prefer is None, b.prefer or 0, b.designation != "LTSB", -(b.eol_date or _dt.date.max).toordinal()))
    return Recommendation(flavour, why, ok[0] if ok else None, ok[1:], archs)


# ------------------------------------------------------------------ installed driver


def running_kernel(out: Outputs) -> tuple[str, str]:
    o = out.get("kernel")
    if o is not None and o.ok and o.text.strip():
        k = o.text.strip().split()[0]
        return k, f"{o.source}: {k}"
    return "", ""


def secure_boot_state(out: Outputs) -> tuple[str, str]:
    """("enabled" | "disabled" | "unsupported" | "", evidence) from ``mokutil --sb-state`` (the one probe,
    ``mokutil_sb_state``, the BIOS stage and the driver install both read; ``driver_secure_boot`` is the same command
    under the name earlier bringup versions gave it, still read from their capture bundles). "enabled" only when
    signatures are enforced (shim validation not disabled)."""
    for name in ("mokutil_sb_state", "driver_secure_boot"):
        o = out.get(name)
        if o is None or (o.error and not o.text.strip() and not o.stderr.strip()):
            continue
        sb = facts_of(out).parse(name, parse_mokutil_sb_state, on="text+stderr")
        assert sb is not None
        if sb.state:
            state = "disabled" if sb.state == "enabled" and not sb.enforcing else sb.state
            return state, f"{o.source}: {sb.line}" + (" (validation disabled in shim)" if sb.shim_validation_off else "")
    return "", ""
