"""Driver & CUDA stage: which driver branch and kernel-module flavour these GPUs need, how to
install it from the distribution's own packages, and the follow-ups (kernel module for the running
kernel, nvidia-persistenced, Fabric Manager + NSCQ on NVSwitch systems, DCGM, container toolkit).

Rules (every one lives in ``assets/`` with a source column, or in a constant below naming its source):

* architecture of each GPU from its PCI device id: ``assets/pci_ids.csv`` first, then the device-id
  ranges of NVIDIA's gpu-admin-tools (``assets/driver_gpu_arch.csv``);
* flavour (``assets/driver_architectures.csv``, NVIDIA driver installation guide "Kernel Modules" and
  NVIDIA's open-module blog; knowledge.md 1.6): Blackwell and Grace Hopper require the open modules,
  Turing to Hopper: open recommended (NVIDIA's default since R560), Maxwell/Pascal/Volta: proprietary
  only; a box mixing old and new GPUs follows the strictest (proprietary), and a box mixing
  "open required" with "open unsupported" has no single working flavour;
* branch (``assets/driver_branches.csv``, NVIDIA's support matrix as of the date in the file): a branch
  is end of life from the first day of the month the matrix names; New Feature Branches are short-lived;
  the default is the supported LTSB/PB branch with the best ``prefer`` rank that drives every GPU here
  (R580 LTSB as of the data's date); the live matrix wins;
* Fabric Manager and NSCQ must be at exactly the driver's version on NVSwitch systems (Fabric Manager
  user guide; NVIDIA packaging READMEs);
* never "nvcc and nvidia-smi must show the same CUDA": the toolkit is optional (only to build CUDA code)
  and only needs a driver new enough for it (knowledge.md 1.1, wizard.rules.chain).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from wizard.actions import ActionContext, Resolved
from wizard.rules.common import Outputs, missing
from wizard.common import gpu_subject
from wizard.data import table
from wizard.distro import (
    APT_NONINTERACTIVE_ENV, PackageManager, install_argv, nvidia_repo_arch, package_manager, version_major,
    version_matches,
)
from wizard.model import Finding, Verdict, worst
from wizard.parsers.gpu import parse_driver_version, parse_nvml, parse_pci
from wizard.parsers.host import OsRelease, parse_os_release
from wizard.parsers.packages import (
    FM_MISMATCH, ModInfo, Package, PackageList, Unit, Units, branch_of, parse_dkms_status, parse_dpkg,
    parse_fm_version, parse_modinfo, parse_rpm, parse_sb_state, parse_systemctl_show, parse_systemctl_status,
)
from wizard.probes import ProbeOutput

MATRIX_URL = "https://docs.nvidia.com/datacenter/tesla/drivers/supported-drivers-and-cuda-toolkit-versions.html"
"""NVIDIA's live support matrix (branch designation, end of life, CUDA); releases.json on the same site."""

SRC_MATRIX = f"NVIDIA data-center driver support matrix ({MATRIX_URL}) as read into assets/driver_branches.csv"
SRC_FLAVOUR = ("NVIDIA driver installation guide, Kernel Modules (docs.nvidia.com/datacenter/tesla/driver-installation-guide/"
               "kernel-modules.html); NVIDIA blog 'NVIDIA transitions fully towards open-source GPU kernel modules'; "
               "assets/driver_architectures.csv; knowledge.md 1.6")
SRC_ARCH = ("assets/pci_ids.csv; NVIDIA/gpu-admin-tools gpu/devid_chips.py device-id ranges (assets/driver_gpu_arch.csv)")
SRC_PKGS = ("the distribution's package database (dpkg-query / rpm -qa); knowledge.md 2: install the driver from packages "
            "(DKMS or signed precompiled modules), not the .run file")
SRC_DKMS = ("DKMS builds the module for every installed kernel whose headers are present and rebuilds it when new headers "
            "arrive (Debian nvidia-open-kernel-dkms description; dkms(8) status: added/built/installed); knowledge.md 2")
SRC_SIGNED = ("modules built by DKMS do not load when the kernel only accepts signed modules (Secure Boot) unless signed "
              "with an enrolled MOK (knowledge.md 2); Canonical-signed precompiled linux-modules-nvidia packages (NVIDIA "
              "GPU Operator precompiled signed drivers doc)")
SRC_MISMATCH = ("the kernel module and the user-space driver must be the same version: NVRM 'API mismatch' and NVML "
                "'Driver/library version mismatch' otherwise (NVIDIA driver README; nvidia-smi man page)")
SRC_PERSIST = ("NVIDIA 'Driver Persistence' (docs.nvidia.com/deploy/driver-persistence/): nvidia-persistenced is the "
               "supported way to keep GPUs initialised; nvidia-persistenced(1): --no-persistence-mode starts it with "
               "persistence mode off; checks-catalogue A4")
SRC_FM = ("NVIDIA Fabric Manager user guide (docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/): on NVSwitch "
          "systems the nvidia-fabricmanager service must run at exactly the driver's version; knowledge.md 1.8; "
          "NVIDIA/apt-packaging-fabric-manager ('the version of fabricmanager must match the NVIDIA driver installed')")
SRC_NSCQ = ("NVIDIA/apt-packaging-libnvidia-nscq and yum-packaging-libnvidia-nscq: libnvidia-nscq (NVSwitch Configuration "
            "and Query, used by DCGM to monitor NVSwitches) 'must match the NVIDIA driver installed'")
SRC_DCGM = ("DCGM installation guide (docs.nvidia.com/datacenter/dcgm/latest/installation.html): "
            "datacenter-gpu-manager-4-cuda<major>, service nvidia-dcgm")
SRC_CTK = ("NVIDIA Container Toolkit installation guide (docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/"
           "install-guide.html)")
SRC_GUIDE = "NVIDIA Driver Installation Guide (docs.nvidia.com/datacenter/tesla/driver-installation-guide/)"
SRC_UBUNTU = "Ubuntu Server documentation, Install NVIDIA drivers (documentation.ubuntu.com/server/how-to/graphics/install-nvidia-drivers/)"

OPEN_DEFAULT_NOTE = ("NVIDIA's default flavour since R560 for Turing and newer GPUs (driver installation guide, Kernel "
                     "Modules)")

# ------------------------------------------------------------------ data


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
    def eol_text(self) -> str:
        d = self.eol_date
        return d.strftime("%B %Y") if d else ("end of life" if self.eol == "eol" else "no end-of-life date published")

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
    the plan's ``gpu_model`` matched against the names in ``assets/pci_ids.csv``."""
    gs = GpuSet()
    o = out.get("pci")
    if o is not None and o.ok:
        facts = parse_pci(o)
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
            if row.get("kind", "gpu") == "gpu" and model in row.get("name", "").lower():
                fam = "Grace Hopper" if "grace" in row.get("form_factor", "").lower() else row.get("family", "")
                gs.gpus.append(Gpu("", row.get("device_id", ""), ArchInfo(fam, row.get("name", ""), "assets/pci_ids.csv"),
                                   f"plan gpu_model = {plan.get('gpu_model')!r} -> {row.get('name')} ({fam})"))
                break
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
        return "", (f"{', '.join(req)} require the open kernel modules but {', '.join(uns)} cannot use them: no single "
                    "driver flavour drives this mix")
    if req:
        return "open", f"{', '.join(req)} require the open kernel modules (the proprietary modules are unsupported there)"
    if uns:
        rec = [a for a in archs if a not in uns]
        tail = f"; a box mixing them with {', '.join(rec)} takes the proprietary modules" if rec else ""
        return "proprietary", f"{', '.join(uns)} work only with the proprietary kernel modules{tail}"
    if archs:
        return "open", f"open kernel modules recommended for {', '.join(archs)} ({OPEN_DEFAULT_NOTE})"
    return "open", f"architecture unknown: the open kernel modules are {OPEN_DEFAULT_NOTE}"


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


DRIVER_CORE = re.compile(
    r"nvidia-driver(?:-\d{3})?(?:-server)?(?:-open)?|nvidia-dkms-\d{3}(?:-server)?(?:-open)?|nvidia-utils-\d{3}(?:-server)?"
    r"|libnvidia-compute-\d{3}(?:-server)?|nvidia-kernel-common-\d{3}(?:-server)?|nvidia-kernel-source-\d{3}(?:-server)?(?:-open)?"
    r"|nvidia-compute-utils-\d{3}(?:-server)?|nvidia-headless(?:-no-dkms)?-\d{3}(?:-server)?(?:-open)?"
    r"|kmod-nvidia-(?:open|latest)-dkms|nvidia-kmod-common|nvidia-driver-(?:cuda|libs|cuda-libs)|nvidia-open(?:-\d{3})?"
    r"|cuda-drivers(?:-\d{3})?|nvidia-kernel-(?:open-)?dkms|nvidia-open-kernel-dkms|dkms-nvidia|libnvidia-ml1?|nvidia-smi"
    r"|libcuda1|nvidia-compute-G0\d|nvidia-open-driver-G0\d(?:-signed)?(?:-cuda)?-kmp-\w+|nvidia-driver-G0\d-kmp-\w+")
"""Packages whose version is the driver's version (Ubuntu/Debian, NVIDIA's repositories, RHEL, SUSE names).
Not nvidia-settings (versioned on its own) and not linux-modules-nvidia-* (versioned by kernel)."""

KMOD_OPEN = re.compile(r"nvidia-dkms-\d{3}(?:-server)?-open|kmod-nvidia-open-dkms|nvidia-kernel-open-dkms|nvidia-open-kernel-dkms"
                       r"|linux-modules-nvidia-\d{3}(?:-server)?-open-.*|nvidia-open-driver-G0\d.*kmp.*|nvidia-open(?:-\d{3})?"
                       r"|nvidia-driver-\d{3}(?:-server)?-open|nvidia-headless(?:-no-dkms)?-\d{3}(?:-server)?-open"
                       r"|nvidia-kernel-source-\d{3}(?:-server)?-open")
"""Packages that install or select the OPEN kernel modules (Ubuntu -open names; NVIDIA's nvidia-open,
kmod-nvidia-open-dkms, nvidia-kernel-open-dkms; Debian nvidia-open-kernel-dkms; SUSE nvidia-open-driver)."""

KMOD_PROPRIETARY = re.compile(r"nvidia-dkms-\d{3}(?:-server)?|kmod-nvidia-latest-dkms|nvidia-kernel-dkms"
                              r"|linux-modules-nvidia-\d{3}(?:-server)?-(?!open-).*|nvidia-driver-G0\d-kmp.*"
                              r"|nvidia-driver-\d{3}(?:-server)?|nvidia-headless(?:-no-dkms)?-\d{3}(?:-server)?"
                              r"|nvidia-kernel-source-\d{3}(?:-server)?|nvidia-tesla(?:-\d+)?-kernel-dkms|cuda-drivers(?:-\d{3})?")
"""Packages that install or select the PROPRIETARY kernel modules. Other module packages (e.g. a
distribution's dkms-nvidia, which may build either source) tell nothing about the flavour."""

FM_PKG = re.compile(r"nvidia-fabric-?manager(?:-\d{3})?")
NSCQ_PKG = re.compile(r"libnvidia-nscq(?:-\d{3})?")
DCGM_PKG = re.compile(r"datacenter-gpu-manager(?:-\d+)?(?:-cuda\d+|-core)?")
CTK_PKG = re.compile(r"nvidia-container-toolkit")


def packages_of(out: Outputs) -> tuple[PackageList | None, ProbeOutput | None]:
    """Installed-package list from ``driver_dpkg`` (Debian family) or ``driver_rpm``; (None, probe) when
    neither package manager answered (the probe returned is the one to show as evidence)."""
    for name, parse in (("driver_dpkg", parse_dpkg), ("driver_rpm", parse_rpm)):
        o = out.get(name)
        if o is None or o.rc == 127 or o.error.startswith("command not found"):
            continue
        if o.error and not o.text.strip():
            continue
        pl = parse(o.text + "\n" + o.stderr)
        if pl.packages or o.rc in (0, 1):
            return pl, o
    o = out.get("driver_dpkg") or out.get("driver_rpm")
    return None, o


@dataclass
class PackagedDriver:
    version: str = ""  # the majority upstream version of the core driver packages
    versions: dict[str, list[Package]] = field(default_factory=dict)
    flavour: str = ""  # open | proprietary | mixed | ""
    kmod: list[Package] = field(default_factory=list)
    core: list[Package] = field(default_factory=list)

    @property
    def evidence(self) -> list[str]:
        seen = list(dict.fromkeys([p.line for p in self.kmod] + [p.line for p in self.core]))
        return seen[:12]


def packaged_driver(pl: PackageList | None) -> PackagedDriver:
    pd = PackagedDriver()
    if pl is None:
        return pd
    inst = pl.installed()
    pd.core = [p for p in inst if DRIVER_CORE.fullmatch(p.name) and p.upstream]
    pd.kmod = [p for p in inst if KMOD_OPEN.fullmatch(p.name) or KMOD_PROPRIETARY.fullmatch(p.name)]
    for p in pd.core:
        pd.versions.setdefault(p.upstream, []).append(p)
    if pd.versions:
        pd.version = max(pd.versions, key=lambda v: (len(pd.versions[v]), v))
    opens = {bool(KMOD_OPEN.fullmatch(p.name)) for p in pd.kmod}
    pd.flavour = "mixed" if opens == {True, False} else ("open" if opens == {True} else ("proprietary" if opens == {False} else ""))
    return pd


@dataclass
class DriverState:
    loaded: str = ""
    loaded_flavour: str = ""
    loaded_ev: list[str] = field(default_factory=list)
    nvml: str = ""
    nvml_cuda: str = ""
    module: ModInfo | None = None
    packaged: PackagedDriver = field(default_factory=PackagedDriver)
    packages: PackageList | None = None

    @property
    def version(self) -> str:
        return self.loaded or self.nvml or (self.module.version if self.module and self.module.version else "") \
            or self.packaged.version

    @property
    def flavour(self) -> str:
        if self.loaded_flavour:
            return self.loaded_flavour
        if self.module and self.module.flavour:
            return self.module.flavour
        return self.packaged.flavour if self.packaged.flavour in ("open", "proprietary") else ""

    @property
    def present(self) -> bool:
        return bool(self.version)

    def evidence(self) -> list[str]:
        ev = list(self.loaded_ev)
        if self.module:
            ev += [self.module.lines[k] for k in ("filename", "version", "license") if k in self.module.lines]
        ev += self.packaged.evidence
        return list(dict.fromkeys(ev))[:16]


def driver_state(out: Outputs) -> DriverState:
    """What the host says about its NVIDIA driver: /proc/driver/nvidia/version, NVML, ``modinfo nvidia``
    (the module the running kernel would load) and the package database."""
    st = DriverState()
    vo = out.get("nvidia_driver_version")
    if vo is not None and vo.ok:
        d = parse_driver_version(vo.text)
        if d.version:
            st.loaded, st.loaded_flavour = d.version, d.flavour
            st.loaded_ev.append(f"{vo.source}: {d.line}")
    no = out.get("nvml")
    if no is not None and no.ok:
        f = parse_nvml(no.text)
        if f.init == "ok":
            st.nvml, st.nvml_cuda = f.driver_version, f.cuda_version_str
            if f.driver_version and not st.loaded:
                st.loaded_ev.append(f"{no.source}: driver {f.driver_version}")
    mo = out.get("driver_modinfo")
    if mo is not None and (mo.text.strip() or mo.stderr.strip()):
        m = parse_modinfo(mo.text + "\n" + mo.stderr)
        if m.version or m.not_found or m.filename:
            st.module = m
    st.packages, _ = packages_of(out)
    st.packaged = packaged_driver(st.packages)
    return st


# ------------------------------------------------------------------ findings: branch choice


def _branch_line(b: Branch, today: _dt.date) -> str:
    return f"{b.name} (end of life {b.eol_text}, CUDA {b.max_cuda_major}.x, as of {b.as_of})"


def branch_choice(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """Check ``driver.branch`` (probes ``pci``): the recommended driver branch and kernel-module flavour
    for the GPUs on the PCI bus, with NVIDIA's lifecycle dates compared to today. pass = a supported
    branch fits every GPU; fail = no flavour or branch fits (e.g. Blackwell with Volta); unknown = no
    GPU architecture could be read."""
    today = today_of(plan)
    gs = gpus_of(out, plan)
    if not gs.gpus:
        o = out.get("pci")
        if o is None or not o.ok:
            return [missing("driver.branch", o, "which GPUs need a driver", remedy="Run `ls /sys/bus/pci/devices` and `lspci -nn -d 10de:` by hand; the GPUs must be visible on the PCI bus.", source=SRC_ARCH)]
        return [Finding("driver.branch", Verdict.UNKNOWN, "no NVIDIA GPU on the PCI bus and no gpu_model in the plan: "
                        "cannot pick a driver flavour for unknown GPUs", "host", (o.source,),
                        "Seat the GPUs (grounding & install order stage) or record gpu_model in the plan (F2).", SRC_ARCH)]
    ev = list(gs.evidence)
    findings: list[Finding] = []
    if gs.unknown:
        findings.append(Finding("driver.branch", Verdict.UNKNOWN,
                                f"{len(gs.unknown)} NVIDIA GPU(s) with a device id bringup's tables do not name "
                                f"({', '.join(sorted({g.device_id for g in gs.unknown}))}): their architecture, and so "
                                "the driver flavour they need, is unknown", _subject(gs),
                                tuple(g.line for g in gs.unknown[:8]),
                                "Look the device id up in the README of the driver branch you plan to install "
                                "(Appendix A, supported GPUs) and in NVIDIA/open-gpu-kernel-modules' compatible-GPU list.",
                                SRC_ARCH))
    rec = recommend(gs.architectures, today)
    where = "in the plan (gpu_model)" if gs.source == "plan" else "on the PCI bus"
    arch_txt = ", ".join(f"{a} x{sum(1 for g in gs.gpus if g.arch and g.arch.architecture == a)}" for a in rec.architectures)
    if rec.conflict:
        findings.append(Finding("driver.branch", Verdict.FAIL, f"GPUs {where}: {arch_txt}: {rec.conflict}", _subject(gs),
                                tuple(ev), "Move the older GPUs (Maxwell/Pascal/Volta) to another server: one NVIDIA "
                                "driver (one kernel-module flavour) drives all GPUs of a host.", SRC_FLAVOUR))
        return findings
    if rec.branch is None:
        findings.append(Finding("driver.branch", Verdict.FAIL,
                                f"GPUs {where}: {arch_txt}: no branch in bringup's data (as of "
                                f"{max((b.as_of for b in branches().values()), default='?')}) is both supported today "
                                f"({today.isoformat()}) and able to drive them with the {rec.flavour} modules",
                                _subject(gs), tuple(ev),
                                f"Check NVIDIA's live support matrix ({MATRIX_URL}); GPUs that no supported branch "
                                "drives (e.g. Kepler) need replacing for production training.",
                                f"{SRC_MATRIX}; {SRC_FLAVOUR}"))
        return findings
    b = rec.branch
    alts = "; ".join(_branch_line(a, today) for a in rec.alternatives[:3])
    msg = (f"GPUs {where}: {arch_txt} -> driver {_branch_line(b, today)} with the {rec.flavour} kernel modules: "
           f"{rec.flavour_why}" + (f". Also supported today: {alts}" if alts else ""))
    findings.append(Finding("driver.branch", Verdict.PASS, msg, _subject(gs), tuple(ev), "",
                            f"{SRC_MATRIX} (live: {MATRIX_URL}); {SRC_FLAVOUR}; {b.source}"))
    return findings


# ------------------------------------------------------------------ findings: installed driver


def installed_driver(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """Check ``driver.install`` (probes ``nvidia_driver_version``, ``nvml``, ``driver_modinfo``,
    ``driver_dpkg``, ``driver_rpm``, ``pci``): findings ``driver.installed`` (a driver is installed from
    packages, and the loaded module is the packaged version), ``driver.flavour`` (open/proprietary
    against the GPUs' architecture rule) and ``driver.branch_lifecycle`` (the installed branch against
    NVIDIA's support matrix today)."""
    st = driver_state(out)
    today = today_of(plan)
    gs = gpus_of(out, plan)
    pl = st.packages
    findings: list[Finding] = []
    if not st.present:
        ev: list[str] = []
        for name in ("nvidia_driver_version", "driver_modinfo", "driver_dpkg", "driver_rpm"):
            o = out.get(name)
            if o is not None:
                ev += o.evidence_error() if (o.error or o.rc not in (0, None)) else [o.source + ": no NVIDIA driver"]
        return [Finding("driver.installed", Verdict.FAIL, "no NVIDIA driver is installed (no module loaded, none for this "
                        "kernel, no driver packages)", "host", tuple(ev[:12]),
                        "Run this step's action: it installs the recommended branch from your distribution's packages "
                        "(see the dry run first: bringup --dry-run run driver.install).", SRC_PKGS)]
    pd = st.packaged
    ver = st.version
    # 1. loaded vs packaged
    if st.loaded and pd.version and st.loaded != pd.version:
        findings.append(Finding("driver.installed", Verdict.FAIL,
                                f"the loaded kernel module is driver {st.loaded} but the installed packages are "
                                f"{pd.version}: user space and kernel module disagree", "host", tuple(st.evidence()),
                                "If the packages were just upgraded: reboot. If the loaded version is not from a package, "
                                "a .run install shadows the packages: run its uninstaller (nvidia-uninstall), reinstall "
                                "the packaged driver, rebuild the initramfs and reboot.", f"{SRC_MISMATCH}; {SRC_PKGS}"))
    elif st.loaded and st.module and st.module.version and st.module.version != st.loaded:
        findings.append(Finding("driver.installed", Verdict.WARN,
                                f"driver {st.loaded} is loaded but the module installed for this kernel is "
                                f"{st.module.version}: the next boot switches versions", "host", tuple(st.evidence()),
                                "Reboot (in a maintenance window) so the loaded module matches the installed one.",
                                SRC_MISMATCH))
    elif pl is not None and not pd.core:
        findings.append(Finding("driver.installed", Verdict.WARN,
                                f"driver {ver} is present but no driver package is installed: a .run (runfile) install "
                                "sits outside the package database and must be rebuilt by hand after every kernel change",
                                "host", tuple(st.evidence()),
                                "Prefer the distribution's packages (this step's action) after uninstalling the runfile "
                                "driver (nvidia-uninstall).", SRC_PKGS))
    else:
        how = f"from {pl.manager} packages" if pl is not None and pd.core else "(package database not readable)"
        findings.append(Finding("driver.installed", Verdict.PASS, f"NVIDIA driver {ver} installed {how}"
                                + (f", loaded ({st.loaded_flavour} kernel module)" if st.loaded else ", not loaded yet"),
                                "host", tuple(st.evidence()), "", SRC_PKGS))
    if len(pd.versions) > 1:
        parts = "; ".join(f"{v}: {', '.join(p.name for p in ps[:4])}" for v, ps in sorted(pd.versions.items()))
        findings.append(Finding("driver.installed", Verdict.WARN,
                                f"driver packages of {len(pd.versions)} different versions are installed ({parts})",
                                "host", tuple(p.line for ps in pd.versions.values() for p in ps[:3]),
                                "Upgrade (or remove) the odd packages so every driver package has one version, then "
                                "reboot.", SRC_MISMATCH))
    findings += _flavour_findings(st, gs)
    findings += _lifecycle_findings(ver, today, gs)
    return findings


def _flavour_findings(st: DriverState, gs: GpuSet) -> list[Finding]:
    flav = st.flavour
    if st.packaged.flavour == "mixed" and not st.loaded_flavour:
        return [Finding("driver.flavour", Verdict.WARN, "both open and proprietary kernel-module packages are installed",
                        "host", tuple(p.line for p in st.packaged.kmod[:8]),
                        "Keep one flavour: remove the packages of the other one.", SRC_FLAVOUR)]
    if not flav:
        return [Finding("driver.flavour", Verdict.UNKNOWN, f"could not tell whether driver {st.version} uses the open or "
                        "the proprietary kernel modules", "host", tuple(st.evidence()),
                        "Read `cat /proc/driver/nvidia/version` ('Open Kernel Module' = open) or `modinfo nvidia | grep "
                        "license` (Dual MIT/GPL = open, NVIDIA = proprietary).", SRC_FLAVOUR)]
    if not gs.gpus:
        return []
    rules = arch_rules()
    out: list[Finding] = []
    ev = tuple(st.evidence()[:6]) + tuple(gs.evidence[:6])
    for arch in gs.architectures:
        rule = rules.get(arch)
        if rule is None:
            continue
        these = [g for g in gs.gpus if g.arch and g.arch.architecture == arch]
        who = f"{len(these)} {arch} GPU(s)" + (f" ({_bus_list(these)})" if _bus_list(these) else "")
        if flav == "proprietary" and rule.open_module == "required":
            out.append(Finding("driver.flavour", Verdict.FAIL, f"{who} run with the proprietary kernel modules, which "
                               f"do not support {arch}: {arch} requires the open modules (nvidia-open)", _subject(gs, arch),
                               ev, "Install the open flavour of the same branch (this step's action installs it) and "
                               "reboot.", f"{SRC_FLAVOUR}; {rule.source}"))
        elif flav == "open" and rule.open_module == "unsupported":
            out.append(Finding("driver.flavour", Verdict.FAIL, f"{who} with the open kernel modules: the open modules do "
                               f"not support {arch} (the driver ignores these GPUs)", _subject(gs, arch), ev,
                               "Install the proprietary flavour (cuda-drivers / nvidia-driver-<branch>[-server], "
                               "kmod-nvidia-latest-dkms) of a branch that still drives them (R580 or older) and reboot.",
                               f"{SRC_FLAVOUR}; {rule.source}"))
        elif flav == "proprietary" and rule.open_module == "recommended":
            other = [a for a in gs.architectures if rules.get(a) and rules[a].open_module == "unsupported"]
            if other:
                out.append(Finding("driver.flavour", Verdict.PASS, f"{who}: proprietary kernel modules, as this box also "
                                   f"holds {', '.join(other)} GPUs that only the proprietary modules drive",
                                   _subject(gs, arch), ev, "", f"{SRC_FLAVOUR}; knowledge.md 1.6 (mixed old+new: proprietary)"))
            else:
                out.append(Finding("driver.flavour", Verdict.WARN, f"{who} run with the proprietary kernel modules; NVIDIA "
                                   f"recommends the open modules for {arch} ({OPEN_DEFAULT_NOTE})", _subject(gs, arch), ev,
                                   "At the next driver change, switch to the open flavour of the same branch (nvidia-open, "
                                   "nvidia-driver-<branch>-server-open, kmod-nvidia-open-dkms).", f"{SRC_FLAVOUR}; {rule.source}"))
        else:
            out.append(Finding("driver.flavour", Verdict.PASS, f"{who}: {flav} kernel modules, as the architecture rule "
                               f"asks ({rule.open_module} open modules)", _subject(gs, arch), ev, "",
                               f"{SRC_FLAVOUR}; {rule.source}"))
    return out


def _lifecycle_findings(version: str, today: _dt.date, gs: GpuSet) -> list[Finding]:
    br = branch_of(version)
    if not br:
        return []
    b = branches().get(int(br))
    ev = (f"driver {version} -> branch R{br}",)
    if b is None:
        newest = max(branches().values(), key=lambda x: x.as_of)
        return [Finding("driver.branch_lifecycle", Verdict.WARN,
                        f"driver branch R{br} is not in bringup's data (as of {newest.as_of}): its designation and end of "
                        "life are unknown here", "host", ev,
                        f"Check R{br} on NVIDIA's live support matrix ({MATRIX_URL}); use a Long Term Support or "
                        "Production branch for production.", SRC_MATRIX)]
    state = b.state(today)
    cannot = branch_drives(b, gs.architectures) if gs.gpus else []
    out: list[Finding] = []
    if cannot:
        these = [g for g in gs.gpus if g.arch and g.arch.architecture in cannot]
        out.append(Finding("driver.branch_lifecycle", Verdict.FAIL,
                           f"driver branch R{br} does not drive {', '.join(cannot)} GPU(s) ({_bus_list(these)})",
                           _subject(gs, cannot[0]), ev + tuple(gs.evidence[:4]),
                           "Install a branch that drives them (see the driver.branch step).",
                           "; ".join(arch_rules()[a].source for a in cannot)))
    src = f"{SRC_MATRIX}; {b.source}"
    if state == "eol":
        out.append(Finding("driver.branch_lifecycle", Verdict.WARN,
                           f"driver {version} belongs to {b.name}, which reached end of life ({b.eol_text}; today is "
                           f"{today.isoformat()}; data as of {b.as_of}): no more security or bug fixes",
                           "host", ev, f"Move to a supported branch (see driver.branch; live matrix: {MATRIX_URL}).", src))
    elif state == "nfb":
        out.append(Finding("driver.branch_lifecycle", Verdict.WARN,
                           f"driver {version} belongs to {b.name}, a New Feature Branch: short-lived, for evaluation "
                           f"(data as of {b.as_of})", "host", ev,
                           f"For production use a Long Term Support or Production branch (live matrix: {MATRIX_URL}).", src))
    else:
        out.append(Finding("driver.branch_lifecycle", Verdict.PASS,
                           f"driver {version}: {b.name}, supported until {b.eol_text} (as of {b.as_of}; live matrix: "
                           f"{MATRIX_URL})", "host", ev, "", src))
    return out


# ------------------------------------------------------------------ findings: kernel module


def _kernel(out: Outputs) -> tuple[str, str]:
    o = out.get("kernel")
    if o is not None and o.ok and o.text.strip():
        k = o.text.strip().split()[0]
        return k, f"{o.source}: {k}"
    return "", ""


def _secure_boot(out: Outputs) -> tuple[str, str]:
    """("enabled" | "disabled" | "unsupported" | "", evidence) from ``mokutil --sb-state`` (this area's
    probe, or the BIOS stage's ``mokutil_sb_state`` when that one was collected). "enabled" only when
    signatures are enforced (shim validation not disabled)."""
    for name in ("driver_secure_boot", "mokutil_sb_state"):
        o = out.get(name)
        if o is None or (o.error and not o.text.strip() and not o.stderr.strip()):
            continue
        sb = parse_sb_state(o.text + "\n" + o.stderr)
        if sb.state:
            state = "disabled" if sb.state == "enabled" and not sb.enforcing else sb.state
            return state, f"{o.source}: {sb.line}" + (" (validation disabled in shim)" if sb.shim_validation_off else "")
    return "", ""


def kernel_module(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """Check ``driver.kernel_module`` (probes ``kernel``, ``driver_dkms``, ``driver_modinfo``,
    ``driver_dpkg``, ``driver_rpm``, ``driver_secure_boot``): an nvidia module exists for the running
    kernel, built by DKMS (``dkms status`` ... ``installed``) or from a precompiled package; fail when
    DKMS only registered/built it, or built it for other kernels; warn when the installed module is not
    the one DKMS built; fail when Secure Boot is on and the module is unsigned."""
    st = driver_state(out)
    kernel, kev = _kernel(out)
    do = out.get("driver_dkms")
    dk = parse_dkms_status(do.text + "\n" + do.stderr) if do is not None and (do.text or do.stderr) else None
    entries = dk.module() if dk else []
    if not st.present and not entries:
        return [Finding("driver.kernel_module", Verdict.SKIP, "no NVIDIA driver installed yet: nothing to build",
                        "host", tuple(x for x in (kev,) if x), "", SRC_DKMS)]
    if not kernel:
        return [missing("driver.kernel_module", out.get("kernel"), "the running kernel release", remedy="Run `uname -r` and `dkms status` by hand and compare.", source=SRC_DKMS)]
    ev = [kev]
    dkms_ev = [e.line for e in entries][:8]
    mod = st.module
    findings: list[Finding] = []
    here = [e for e in entries if e.kernel == kernel]
    installed_here = [e for e in here if e.state.startswith("installed")]
    warn_here = [e for e in installed_here if any("WARNING" in n for n in e.notes)]
    precompiled = []
    if st.packages is not None:
        precompiled = [p for p in st.packages.installed() if p.name.startswith("linux-modules-nvidia-") and p.name.endswith(kernel)]
    mod_here = mod is not None and bool(mod.version) and (not mod.kernel or mod.kernel == kernel)
    if mod is not None:
        ev += [mod.lines[k] for k in ("filename", "version", "license", "vermagic", "signer", "sig_id") if k in mod.lines]
        if mod.not_found:
            ev.append(mod.not_found)
    ev += dkms_ev + [p.line for p in precompiled[:2]] + (dk.errors[:3] if dk else [])
    ev = list(dict.fromkeys(x for x in ev if x))
    if installed_here and not warn_here:
        findings.append(Finding("driver.kernel_module", Verdict.PASS,
                                f"DKMS built and installed nvidia {installed_here[0].version} for the running kernel {kernel}",
                                "host", tuple(ev), "", SRC_DKMS))
    elif warn_here:
        findings.append(Finding("driver.kernel_module", Verdict.WARN,
                                f"DKMS reports the nvidia module installed for {kernel} differs from the one it built "
                                f"({warn_here[0].notes[0]}): another installer (often a .run file) replaced it",
                                "host", tuple(ev),
                                "Remove the other driver (nvidia-uninstall for a runfile), then `sudo dkms install "
                                f"nvidia/{warn_here[0].version} -k {kernel} --force` and reboot.", SRC_DKMS))
    elif precompiled:
        findings.append(Finding("driver.kernel_module", Verdict.PASS,
                                f"precompiled nvidia module{' ' + mod.version if mod and mod.version else ''} for the "
                                f"running kernel {kernel} ({precompiled[0].name})", "host", tuple(ev), "", SRC_SIGNED))
    elif here:
        e = here[0]
        findings.append(Finding("driver.kernel_module", Verdict.FAIL,
                                f"DKMS has nvidia {e.version} for the running kernel {kernel} only '{e.state}', not installed:"
                                " the module was not built (or not installed) for this kernel", "host", tuple(ev),
                                f"Install the headers (linux-headers-{kernel} / kernel-devel-{kernel}), run `sudo dkms "
                                f"autoinstall -k {kernel}` and read /var/lib/dkms/nvidia/{e.version}/build/make.log if it "
                                "fails; then reboot.", SRC_DKMS))
    elif mod_here:
        findings.append(Finding("driver.kernel_module", Verdict.PASS,
                                f"an nvidia module {mod.version if mod else ''} exists for the running kernel {kernel} "
                                f"({mod.filename if mod else ''})", "host", tuple(ev), "", SRC_DKMS))
    elif entries:
        added = [e for e in entries if not e.kernel]
        other = sorted({e.kernel for e in entries if e.kernel})
        what = (f"only for other kernels ({', '.join(other)})" if other else
                f"only registered ('{added[0].state}'), never built" if added else "not for this kernel")
        findings.append(Finding("driver.kernel_module", Verdict.FAIL,
                                f"no nvidia module for the running kernel {kernel}: DKMS has nvidia {entries[0].version} "
                                f"{what}", "host", tuple(ev),
                                f"Install the headers of the running kernel (linux-headers-{kernel} / kernel-devel-{kernel}), "
                                f"then `sudo dkms autoinstall -k {kernel}`; if the build fails, the driver branch may not "
                                "support this kernel: read the DKMS make.log and the branch's release notes.", SRC_DKMS))
    else:
        findings.append(Finding("driver.kernel_module", Verdict.FAIL,
                                f"driver {st.version} is installed but no nvidia module exists for the running kernel {kernel}",
                                "host", tuple(ev),
                                f"Install the module package for this kernel (DKMS with linux-headers-{kernel}, or "
                                f"linux-modules-nvidia-<branch>-server[-open]-{kernel} on Ubuntu), then reboot.", SRC_DKMS))
    sb, sbev = _secure_boot(out)
    if sb == "enabled" and mod is not None and mod.version:
        if not mod.signed:
            findings.append(Finding("driver.kernel_module", Verdict.FAIL,
                                    f"Secure Boot is on and the nvidia module for {kernel} is not signed: the kernel will "
                                    "refuse to load it", "host", tuple(x for x in [sbev] + ev if x),
                                    "Use Canonical's signed precompiled modules (linux-modules-nvidia-<branch>-server[-open]-"
                                    f"{kernel}), or sign DKMS modules with a MOK and enroll it (`mokutil --import`, then "
                                    "confirm at the next boot).", SRC_SIGNED))
        elif re.search(r"dkms|mok", mod.signer, re.I):
            findings.append(Finding("driver.kernel_module", Verdict.PASS,
                                    f"Secure Boot is on; the module is signed by '{mod.signer}': it loads only if that key "
                                    "is enrolled (mokutil --list-enrolled)", "host", tuple(x for x in [sbev] + ev if x), "",
                                    SRC_SIGNED))
    return findings


# ------------------------------------------------------------------ findings: services


def _units(out: Outputs) -> tuple[Units | None, ProbeOutput | None]:
    o = out.get("driver_services")
    if o is None or (o.error and not o.text.strip()) or o.rc == 127:
        return None, o
    u = parse_systemctl_show(o.text)
    return (u if u.units else None), o


def persistenced(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """Check ``driver.persistenced`` (probe ``driver_services``): nvidia-persistenced is installed,
    active and not started with ``--no-persistence-mode``; warn otherwise (catalogue A4: persistence off
    is a warning on bare metal)."""
    units, o = _units(out)
    if units is None:
        return [missing("driver.persistenced", o, "the state of nvidia-persistenced", remedy="Run `systemctl status nvidia-persistenced` by hand.", source=SRC_PERSIST)]
    return judge_persistenced_unit(units.get("nvidia-persistenced"), o.source if o else "systemctl")


def judge_persistenced_unit(u: Unit | None, source: str) -> list[Finding]:
    """nvidia-persistenced's unit -> ``driver.persistenced``."""
    if u is None or not u.exists:
        return [Finding("driver.persistenced", Verdict.WARN, "nvidia-persistenced is not installed (no systemd unit)",
                        "host", tuple([source] + (u.lines[:4] if u else [])),
                        "It ships with the driver packages (nvidia-compute-utils / nvidia-persistenced); install the "
                        "driver from packages, then `sudo systemctl enable --now nvidia-persistenced`.", SRC_PERSIST)]
    ev = tuple([source] + u.lines[:8])
    if u.active != "active":
        tail = f" ({u.result})" if u.result and u.result != "success" else ""
        return [Finding("driver.persistenced", Verdict.WARN, f"nvidia-persistenced is {u.active or 'not running'}{tail}",
                        "host", ev + tuple(u.log[-4:]), "`sudo systemctl enable --now nvidia-persistenced`; if it fails, "
                        "read `journalctl -u nvidia-persistenced` (the driver must be loaded).", SRC_PERSIST)]
    if "--no-persistence-mode" in u.exec_start or any("--no-persistence-mode" in ln for ln in u.lines):
        return [Finding("driver.persistenced", Verdict.WARN, "nvidia-persistenced runs with --no-persistence-mode: the "
                        "GPUs' persistence mode stays off", "host", ev,
                        "Start the daemon with --persistence-mode (a systemd drop-in overriding ExecStart), or enable it "
                        "per GPU with `sudo nvidia-smi -pm 1` while the daemon runs.", SRC_PERSIST)]
    fin = "" if u.unit_file in ("enabled", "static", "enabled-runtime", "indirect", "alias") or not u.unit_file else \
        f" but its unit is {u.unit_file} (it will not start at boot)"
    return [Finding("driver.persistenced", Verdict.WARN if fin else Verdict.PASS, f"nvidia-persistenced is active{fin}",
                    "host", ev, "`sudo systemctl enable nvidia-persistenced`" if fin else "", SRC_PERSIST)]


def _nvswitch(out: Outputs, plan: Mapping[str, Any], gs: GpuSet) -> tuple[str, list[str]]:
    """Does this host need its own Fabric Manager? ``yes``: NVIDIA PCI bridges of class 0680 (NVSwitch),
    GPUs of chips whose boards use an NVLink 5 switch fabric (driver_gpu_arch.csv), or a GPU whose NVLink
    fabric registration is not Completed; ``external``: GPUs report a Completed fabric (health.fabric
    ``pass``) but no NVSwitch is visible here (a pass-through VM; the fabric is managed by the host); ``no``
    (also when health.fabric only skips, e.g. no GPU on the bus); ``unknown``."""
    if gs.nvswitch_bridges:
        return "yes", gs.nvswitch_bridges[:4]
    fab = [g for g in gs.gpus if g.arch and g.arch.nvlink_fabric]
    if fab:
        return "yes", [g.line for g in fab[:4]]
    from wizard.rules import smi

    f = smi.topic_check("health.fabric")(out, plan)
    ev = [ln for x in f for ln in x.evidence[:2]][:4]
    if any(x.verdict in (Verdict.FAIL, Verdict.WARN) for x in f):
        return "yes", ev
    if any(x.verdict is Verdict.PASS for x in f):
        return "external", ev
    if gs.source == "pci":
        return "no", gs.evidence[:2]
    o = out.get("pci")
    if o is not None and o.ok:  # the bus was read and shows no NVIDIA GPU and no NVSwitch
        return "no", [o.source]
    return "unknown", []


def fabric_manager_setup(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """Check for NVSwitch systems (probes ``pci``, ``nvidia_smi_qx``, ``nvml``, ``driver_services``,
    ``driver_fm_version``, ``driver_dpkg``, ``driver_rpm``, ``nvidia_driver_version``): findings
    ``driver.fabric_manager`` (service active; package and ``nv-fabricmanager --version`` exactly the
    driver's version) and ``driver.nscq`` (libnvidia-nscq at the driver's version). Skip elsewhere."""
    gs = gpus_of(out, plan)
    sw, swev = _nvswitch(out, plan, gs)
    if sw == "no":
        return [Finding("driver.fabric_manager", Verdict.SKIP, "no NVSwitch on the PCI bus and no GPU in an NVLink "
                        "fabric: Fabric Manager and NSCQ are not needed", "host", tuple(swev), "", SRC_FM)]
    if sw == "external":
        return [Finding("driver.fabric_manager", Verdict.SKIP, "the GPUs' NVLink fabric registration is Completed but no "
                        "NVSwitch is visible on this host (a pass-through VM: the fabric is managed outside): no local "
                        "Fabric Manager needed", "host", tuple(swev), "", SRC_FM)]
    if sw == "unknown":
        return [missing("driver.fabric_manager", out.get("pci"), "whether this is an NVSwitch system", remedy="Run `lspci -nn -d 10de:` (NVSwitch: class 0680) and `nvidia-smi -q | grep -A2 Fabric` by hand.", source=SRC_FM)]
    st = driver_state(out)
    drv = st.loaded or st.nvml or st.packaged.version
    findings: list[Finding] = []
    units, uo = _units(out)
    u = units.get("nvidia-fabricmanager") if units else None
    pl = st.packages
    fm_pk = pl.find(FM_PKG.pattern) if pl else []
    nscq_pk = pl.find(NSCQ_PKG.pattern) if pl else []
    fo = out.get("driver_fm_version")
    fmv = parse_fm_version(fo.text) if fo is not None and fo.ok else None
    ev = list(swev) + ([f"driver {drv}"] if drv else [])
    problems: list[tuple[Verdict, str, str]] = []
    if units is None:
        problems.append((Verdict.UNKNOWN, "the state of the nvidia-fabricmanager service could not be read",
                         "Run `systemctl status nvidia-fabricmanager`."))
    elif u is None or not u.exists:
        problems.append((Verdict.FAIL, "the nvidia-fabricmanager service is not installed",
                         "Run this step's action (installs nvidia-fabricmanager-<branch> and libnvidia-nscq-<branch> at "
                         "the driver's version and enables the service)."))
    elif u.active != "active":
        problems.append((Verdict.FAIL, f"nvidia-fabricmanager is {u.active}" + (f" ({u.result})" if u.result and u.result != "success" else ""),
                         "`sudo systemctl enable --now nvidia-fabricmanager`; read `journalctl -u nvidia-fabricmanager` "
                         "(a version mismatch with the driver, or on NVLink 5 systems (HGX B200) a missing NVLSM / "
                         "ib_umad, stops it)."))
    if u is not None:
        ev += u.lines[:4]
    for p in fm_pk:
        ev.append(p.line)
        if drv and p.upstream and p.upstream != drv:
            problems.append((Verdict.FAIL, f"Fabric Manager package {p.name} is {p.upstream}, the driver is {drv}: they "
                             "must be exactly the same version",
                             f"Install the Fabric Manager of exactly {drv} (or move the driver to {p.upstream}), then "
                             "restart nvidia-fabricmanager."))
    if fmv is not None and fmv.version:
        ev.append(fmv.line)
        if drv and fmv.version != drv:
            problems.append((Verdict.FAIL, f"nv-fabricmanager --version is {fmv.version}, the driver is {drv}",
                             f"Install Fabric Manager {drv} and restart it."))
    if pl is not None and not fm_pk and (u is None or not u.exists):
        pass  # already reported: not installed
    if not problems:
        what = (fm_pk[0].upstream if fm_pk else (fmv.version if fmv and fmv.version else "?"))
        findings.append(Finding("driver.fabric_manager", Verdict.PASS,
                                f"Fabric Manager {what} active, same version as the driver {drv or '?'}", "host",
                                tuple(dict.fromkeys(ev)), "", SRC_FM))
    else:
        v = worst(p[0] for p in problems)
        findings.append(Finding("driver.fabric_manager", v, "; ".join(p[1] for p in problems), "host",
                                tuple(dict.fromkeys(ev)), " ".join(dict.fromkeys(p[2] for p in problems)), SRC_FM))
    if pl is not None:
        if not nscq_pk:
            findings.append(Finding("driver.nscq", Verdict.WARN, "libnvidia-nscq is not installed: DCGM cannot monitor "
                                    "the NVSwitches", "host", tuple(swev),
                                    f"Install libnvidia-nscq-{branch_of(drv) or '<branch>'} at the driver's exact version "
                                    "(this step's action does).", SRC_NSCQ))
        else:
            bad = [p for p in nscq_pk if drv and p.upstream != drv]
            if bad:
                findings.append(Finding("driver.nscq", Verdict.FAIL, f"{bad[0].name} is {bad[0].upstream}, the driver is "
                                        f"{drv}: NSCQ must match the driver exactly", "host", tuple(p.line for p in nscq_pk),
                                        f"Install libnvidia-nscq at exactly {drv}.", SRC_NSCQ))
            else:
                findings.append(Finding("driver.nscq", Verdict.PASS, f"libnvidia-nscq {nscq_pk[0].upstream} matches the "
                                        f"driver", "host", tuple(p.line for p in nscq_pk), "", SRC_NSCQ))
    return findings


def dcgm(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """Optional ``driver.dcgm`` (probes ``driver_dpkg``, ``driver_rpm``, ``driver_services``): skip when DCGM
    is not installed; pass when installed and nvidia-dcgm is active; warn when installed but not running."""
    pl, po = packages_of(out)
    if pl is None:
        return [missing("driver.dcgm", po, "whether DCGM is installed", remedy="Run `dpkg -l datacenter-gpu-manager*` or `rpm -qa datacenter-gpu-manager*` by hand.", source=SRC_DCGM)]
    pk = pl.find(DCGM_PKG.pattern)
    if not pk:
        return [Finding("driver.dcgm", Verdict.SKIP, "DCGM is not installed (optional: health monitoring and dcgmi diag)",
                        "host", tuple(x for x in (po.source if po else "",) if x), "", SRC_DCGM)]
    units, uo = _units(out)
    u = units.get("nvidia-dcgm") if units else None
    ev = tuple(p.line for p in pk[:4]) + tuple(u.lines[:4] if u else ())
    if u is not None and u.active == "active":
        return [Finding("driver.dcgm", Verdict.PASS, f"DCGM {pk[0].upstream or pk[0].version} installed, nvidia-dcgm active",
                        "host", ev, "", SRC_DCGM)]
    state = u.active if u is not None and u.exists else "not installed as a service"
    return [Finding("driver.dcgm", Verdict.WARN, f"DCGM {pk[0].upstream or pk[0].version} is installed but nvidia-dcgm is "
                    f"{state or 'unknown'}", "host", ev, "`sudo systemctl --now enable nvidia-dcgm`", SRC_DCGM)]


def container_toolkit(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """Optional ``driver.container_toolkit`` (probes ``driver_dpkg``, ``driver_rpm``): pass when
    nvidia-container-toolkit is installed, skip otherwise (only needed to run GPU containers)."""
    pl, po = packages_of(out)
    if pl is None:
        return [missing("driver.container_toolkit", po, "whether the container toolkit is installed", remedy="Run `nvidia-ctk --version` by hand.", source=SRC_CTK)]
    pk = pl.find(CTK_PKG.pattern)
    if not pk:
        return [Finding("driver.container_toolkit", Verdict.SKIP, "NVIDIA Container Toolkit is not installed (optional: "
                        "only to run GPU containers with Docker/containerd/Podman)", "host",
                        tuple(x for x in (po.source if po else "",) if x), "", SRC_CTK)]
    return [Finding("driver.container_toolkit", Verdict.PASS, f"NVIDIA Container Toolkit {pk[0].version} installed "
                    "(configure the runtime with `nvidia-ctk runtime configure`)", "host", (pk[0].line,), "", SRC_CTK)]


def chain_summary(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """``driver.chain``: one line over the whole chain (driver branch/flavour -> newest CUDA it runs ->
    CUDA toolkit if any -> torch's CUDA), worst of the parts; probes of driver.install,
    driver.cuda_toolkit and driver.torch_cuda. The toolkit need not match nvidia-smi's CUDA."""
    from wizard.rules import chain

    st = driver_state(out)
    if not st.present:
        return [Finding("driver.chain", Verdict.SKIP, "no NVIDIA driver installed yet: no chain to verify", "host", (), "",
                        chain.SRC_TORCH)]
    dcuda = st.nvml_cuda or chain.driver_max_cuda(st.version)
    parts = [f"driver {st.version}" + (f" ({st.flavour})" if st.flavour else "") + f" runs CUDA up to {dcuda or '?'}"]
    sub = chain.cuda_toolkit(out, plan) + chain.torch_cuda(out, plan)
    ev = list(st.loaded_ev)
    for f in sub:
        if f.id in ("driver.cuda_toolkit", "driver.torch_cuda"):
            parts.append(f"{f.id.split('.')[1]}: {f.verdict} ({f.message.split(':')[0]})")
            ev += list(f.evidence[:2])
    considered = [f.verdict for f in sub if f.verdict is not Verdict.SKIP]
    v = worst(considered) if considered else Verdict.PASS
    remedy = "" if v in (Verdict.PASS, Verdict.SKIP) else "See the driver.cuda_toolkit and driver.torch_cuda findings."
    return [Finding("driver.chain", v, "; ".join(parts) + " (nvcc need not match nvidia-smi's CUDA version)", "host",
                    tuple(dict.fromkeys(ev))[:12], remedy, f"{chain.SRC_TABLE}; {chain.SRC_TORCH}")]


# ------------------------------------------------------------------ explain judges (pasted text)


def _unreadable(fid: str, text: str, what: str, src: str) -> list[Finding]:
    return [Finding(fid, Verdict.UNKNOWN, f"could not read {what}", "host", tuple(text.splitlines()[:10]),
                    "Paste the whole, unedited output.", src)]


def judge_dkms_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge for ``dkms status``: ``driver.kernel_module``."""
    d = parse_dkms_status(text)
    ent = d.module()
    if not d.entries and not d.errors:
        return _unreadable("driver.kernel_module", text, "dkms status", SRC_DKMS)
    if not ent:
        return [Finding("driver.kernel_module", Verdict.WARN, "no NVIDIA driver module is registered with DKMS: fine for "
                        "precompiled modules (linux-modules-nvidia, kmod, kmp), otherwise the driver has no module",
                        "host", tuple(e.line for e in d.entries[:6]) + tuple(d.errors[:3]),
                        "Check `modinfo nvidia` for a module of the running kernel.", SRC_DKMS)]
    inst = [e for e in ent if e.state.startswith("installed")]
    warned = [e for e in inst if any("WARNING" in n for n in e.notes)]
    ev = tuple(e.line for e in ent[:8]) + tuple(d.errors[:3])
    if warned:
        return [Finding("driver.kernel_module", Verdict.WARN, f"nvidia {warned[0].version} for {warned[0].kernel}: DKMS says "
                        f"the installed module differs from the one it built ({warned[0].notes[0]}); another installer "
                        "replaced it", "host", ev, "Remove the other driver (a .run install: nvidia-uninstall), then "
                        f"`sudo dkms install nvidia/{warned[0].version} -k {warned[0].kernel} --force` and reboot.", SRC_DKMS)]
    if inst:
        ks = sorted({e.kernel for e in inst})
        return [Finding("driver.kernel_module", Verdict.PASS, f"nvidia {inst[0].version} built and installed by DKMS for "
                        f"kernel(s) {', '.join(ks)} (compare with `uname -r`)", "host", ev, "", SRC_DKMS)]
    e = ent[0]
    return [Finding("driver.kernel_module", Verdict.FAIL, f"nvidia {e.version} is only '{e.state}' in DKMS, installed for no "
                    "kernel: the module was not built", "host", ev,
                    "Install the running kernel's headers (linux-headers-$(uname -r) / kernel-devel-$(uname -r)), run "
                    "`sudo dkms autoinstall` and read the make.log under /var/lib/dkms/nvidia/ if it fails. An old branch "
                    "may not build on a new kernel.", SRC_DKMS)]


def judge_packages(pl: PackageList, exp: Mapping[str, Any], what: str) -> list[Finding]:
    """Installed packages (pasted ``dpkg -l`` / ``rpm -qa``) -> driver version, flavour, mixed versions,
    Fabric Manager / NSCQ against the driver, and the branch lifecycle as of today."""
    pd = packaged_driver(pl)
    findings: list[Finding] = []
    today = today_of(exp)
    if not pd.version:
        nv = [p for p in pl.installed() if re.search(r"nvidia|cuda", p.name)]
        return [Finding("driver.installed", Verdict.WARN, f"no NVIDIA driver package among the {len(nv)} listed NVIDIA/CUDA "
                        "packages", "host", tuple(p.line for p in nv[:8]),
                        "If a driver is loaded, it was installed outside the package manager (.run file); prefer the "
                        "distribution's packages.", SRC_PKGS)]
    flav = pd.flavour if pd.flavour in ("open", "proprietary") else ""
    findings.append(Finding("driver.installed", Verdict.PASS, f"NVIDIA driver {pd.version} installed from {what} packages"
                            + (f" ({flav} kernel modules)" if flav else ""), "host", tuple(pd.evidence), "", SRC_PKGS))
    if len(pd.versions) > 1:
        parts = "; ".join(f"{v}: {', '.join(p.name for p in ps[:4])}" for v, ps in sorted(pd.versions.items()))
        findings.append(Finding("driver.installed", Verdict.WARN, f"driver packages of {len(pd.versions)} versions are "
                                f"installed ({parts})", "host", tuple(p.line for ps in pd.versions.values() for p in ps[:3]),
                                "Upgrade or remove the odd packages so all driver packages share one version, then reboot.",
                                SRC_MISMATCH))
    if pd.flavour == "mixed":
        findings.append(Finding("driver.flavour", Verdict.WARN, "both open and proprietary kernel-module packages are "
                                "installed", "host", tuple(p.line for p in pd.kmod[:8]), "Keep one flavour.", SRC_FLAVOUR))
    for rx, fid, label, src in ((FM_PKG, "driver.fabric_manager", "Fabric Manager", SRC_FM),
                                (NSCQ_PKG, "driver.nscq", "NSCQ", SRC_NSCQ)):
        for p in pl.find(rx.pattern):
            if p.upstream and p.upstream != pd.version:
                findings.append(Finding(fid, Verdict.FAIL, f"{label} package {p.name} is {p.upstream} but the driver "
                                        f"packages are {pd.version}: they must be exactly the same version", "host",
                                        (p.line,) + tuple(pd.evidence[:2]),
                                        f"Install {p.name} at exactly {pd.version} (or the driver at {p.upstream}).", src))
            elif p.upstream:
                findings.append(Finding(fid, Verdict.PASS, f"{label} package {p.name} {p.upstream} matches the driver",
                                        "host", (p.line,), "", src))
    findings += _lifecycle_findings(pd.version, today, GpuSet())
    return findings


def judge_dpkg_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    pl = parse_dpkg(text)
    if not pl.packages:
        return _unreadable("driver.installed", text, "the dpkg package list", SRC_PKGS)
    return judge_packages(pl, exp, "dpkg")


def judge_rpm_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    pl = parse_rpm(text)
    if not pl.packages:
        return _unreadable("driver.installed", text, "the rpm package list", SRC_PKGS)
    return judge_packages(pl, exp, "rpm")


def judge_service_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge for ``systemctl status`` of nvidia-fabricmanager / nvidia-persistenced / nvidia-dcgm."""
    units = parse_systemctl_status(text)
    mism = [m for m in (FM_MISMATCH.search(ln) for ln in text.splitlines()) if m]
    findings: list[Finding] = []
    for name, u in units.units.items():
        if "persistenced" in name:
            findings += judge_persistenced_unit(u, "systemctl status")
        elif "fabricmanager" in name:
            ev = tuple(u.lines[:6]) + tuple(u.log[-6:])
            if mism:
                m = mism[0]
                findings.append(Finding("driver.fabric_manager", Verdict.FAIL,
                                        f"Fabric Manager refuses to start: it is {m.group('fm')} but the driver is "
                                        f"{m.group('drv')} (they must be exactly the same version)", "host",
                                        ev + (m.group(0),), f"Install Fabric Manager {m.group('drv')} (the driver's exact "
                                        "version) or move the driver to the Fabric Manager's version; reboot if the driver "
                                        "changed.", SRC_FM))
            elif not u.exists:
                findings.append(Finding("driver.fabric_manager", Verdict.WARN, "nvidia-fabricmanager is not installed "
                                        "(needed on NVSwitch systems only)", "host", ev,
                                        "On HGX/DGX NVSwitch boards install nvidia-fabricmanager-<branch> at the driver's "
                                        "version.", SRC_FM))
            elif u.active == "active":
                findings.append(Finding("driver.fabric_manager", Verdict.PASS, "nvidia-fabricmanager is active (running)",
                                        "host", ev, "", SRC_FM))
            elif u.active == "failed" or u.result not in ("", "success"):
                why = next((ln for ln in u.log if re.search(r"fail|error|NV_WARN|NV_ERR", ln, re.I)), "")
                findings.append(Finding("driver.fabric_manager", Verdict.FAIL,
                                        f"nvidia-fabricmanager failed ({u.result or u.active})" + (f": {why}" if why else ""),
                                        "host", ev, "Read `journalctl -u nvidia-fabricmanager`: a driver/Fabric Manager "
                                        "version mismatch, NV_WARN_NOTHING_TO_DO (no NVSwitch, or on NVLink 5 systems no "
                                        "NVLSM / ib_umad) or an NVSwitch error stops it; then `sudo systemctl restart "
                                        "nvidia-fabricmanager`.", SRC_FM))
            else:
                findings.append(Finding("driver.fabric_manager", Verdict.WARN, f"nvidia-fabricmanager is {u.active or 'not running'}"
                                        " (NVSwitch systems need it running)", "host", ev,
                                        "`sudo systemctl enable --now nvidia-fabricmanager` on NVSwitch systems.", SRC_FM))
        elif "dcgm" in name:
            v = Verdict.PASS if u.active == "active" else Verdict.WARN
            findings.append(Finding("driver.dcgm", v, f"nvidia-dcgm is {u.active or 'unknown'}", "host", tuple(u.lines[:6]),
                                    "" if v is Verdict.PASS else "`sudo systemctl --now enable nvidia-dcgm`", SRC_DCGM))
    if not findings:
        if mism:
            m = mism[0]
            return [Finding("driver.fabric_manager", Verdict.FAIL, f"Fabric Manager {m.group('fm')} does not match the "
                            f"driver {m.group('drv')}", "host", (m.group(0),),
                            f"Install Fabric Manager {m.group('drv')}.", SRC_FM)]
        return _unreadable("driver.fabric_manager", text, "the systemctl status output", SRC_FM)
    return findings


def _driver_in_text(text: str) -> tuple[str, str]:
    for rx in (r"NVRM version:.*?\s(\d{3}\.\d+(?:\.\d+)?)\s", r"Driver Version:\s*(\d{3}\.\d+(?:\.\d+)?)",
               r"KMD Version:\s*(\d{3}\.\d+(?:\.\d+)?)"):
        m = re.search(rx, text + " ")
        if m:
            line = next((ln.strip() for ln in text.splitlines() if m.group(1) in ln), m.group(0))
            return m.group(1), line
    return "", ""


def judge_fm_version_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge for ``nv-fabricmanager --version`` (with a driver version if the paste shows one)."""
    fm = parse_fm_version(text)
    if not fm.line:
        return _unreadable("driver.fabric_manager", text, "the Fabric Manager version", SRC_FM)
    if not fm.version:
        return [Finding("driver.fabric_manager", Verdict.UNKNOWN, f"the Fabric Manager version is not readable ({fm.line})",
                        "host", (fm.line,), "Paste the unedited `nv-fabricmanager --version` output.", SRC_FM)]
    drv, dline = _driver_in_text(text)
    if not drv:
        return [Finding("driver.fabric_manager", Verdict.UNKNOWN, f"Fabric Manager {fm.version}: this text shows no driver "
                        "version to compare with (they must be exactly equal)", "host", (fm.line,),
                        f"Compare with `cat /proc/driver/nvidia/version`: it must read {fm.version}.", SRC_FM)]
    if drv != fm.version:
        return [Finding("driver.fabric_manager", Verdict.FAIL, f"Fabric Manager {fm.version} but driver {drv}: they must be "
                        "exactly the same version", "host", (fm.line, dline),
                        f"Install Fabric Manager {drv}, or move the driver to {fm.version}.", SRC_FM)]
    return [Finding("driver.fabric_manager", Verdict.PASS, f"Fabric Manager {fm.version} = driver {drv}", "host",
                    (fm.line, dline), "", SRC_FM)]


def judge_modinfo_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge for ``modinfo nvidia``: ``driver.kernel_module`` (version, flavour, kernel, signature)."""
    m = parse_modinfo(text)
    if m.not_found:
        return [Finding("driver.kernel_module", Verdict.FAIL, "no nvidia module exists for this kernel", "host",
                        (m.not_found,), "Install the driver's module for the running kernel (DKMS with the kernel's "
                        "headers, or the precompiled package), then `sudo modprobe nvidia`.", SRC_DKMS)]
    if not (m.version or m.filename):
        return _unreadable("driver.kernel_module", text, "modinfo output", SRC_DKMS)
    ev = tuple(m.lines[k] for k in ("filename", "version", "license", "vermagic", "signer", "sig_id") if k in m.lines)
    parts = [f"nvidia module {m.version or '?'}"]
    if m.flavour:
        parts.append(f"{m.flavour} flavour (license {m.license})")
    if m.kernel:
        parts.append(f"for kernel {m.kernel}")
    parts.append("signed" if m.signed else "unsigned (will not load with Secure Boot on)")
    return [Finding("driver.kernel_module", Verdict.PASS, ", ".join(parts), "host", ev, "", f"{SRC_DKMS}; {SRC_FLAVOUR}")]


# ------------------------------------------------------------------ actions: install


APT_NO_REMOVE = "--no-remove"
"""apt-get(8): "--no-remove: If any packages are to be removed apt-get immediately aborts without prompting".
Every apt install of bringup's driver actions carries it, so a conflicting driver package makes apt stop
instead of silently replacing the installed driver."""

SRC_CONFLICT = ("NVIDIA CUDA installation guide 13.0, 3.6 'Handle Conflicting Installation Methods' (uninstall conflicting "
                "installs first: apt --purge remove / dnf remove / zypper remove <package_name>); Ubuntu Server docs 'Select "
                "NVIDIA driver packages manually' (switching: sudo apt --purge remove '*nvidia*${DRIVER_BRANCH}*', sudo apt "
                "autoremove; drivers from other sources 'might potentially overwrite those provided by ubuntu-drivers and "
                "might break Secure Boot'); apt-get(8) --no-remove")
SRC_UBUNTU_PKGS = ("Ubuntu Server documentation, Select NVIDIA driver packages manually "
                   "(documentation.ubuntu.com/server/how-to/graphics/; canonical/ubuntu-server-documentation)")
SRC_TOOLKIT_CAP = ("knowledge.md 1.7: CUDA 13.0 removed compilation for compute capability < 7.5 (Maxwell, Pascal, Volta): "
                   "stay on the CUDA 12.9 toolkit with R580 (assets/driver_architectures.csv max_cuda_toolkit)")

REMOVE_CMD = {"debian": "sudo apt --purge remove", "rhel": "sudo dnf remove", "suse": "sudo zypper remove"}
"""Uninstall commands per package family (NVIDIA CUDA installation guide 13.0, 3.6 'Handle Conflicting Installation
Methods')."""


@dataclass
class HostFacts:
    """What an install action needs to know about the host (from its probes)."""

    os: OsRelease | None = None
    pm: PackageManager | None = None
    route: str = ""
    repo: str = ""
    route_source: str = ""
    kernel: str = ""
    machine: str = ""
    arch: str | None = None
    secure_boot: str = ""
    packages: PackageList | None = None
    driver: DriverState = field(default_factory=DriverState)
    gpus: GpuSet = field(default_factory=GpuSet)

    def has(self, pattern: str) -> bool:
        return bool(self.packages and self.packages.find(pattern))

    @property
    def distro(self) -> str:
        return self.os.id if self.os is not None else ""


def _route_for(r: OsRelease) -> tuple[str, str, str]:
    """(route, NVIDIA repo directory, source) for an os-release, or ("", "", "") when bringup knows none."""
    for row in table("driver_install_routes.csv"):
        ids = row.get("distro_ids", "").split()
        if r.id not in ids:
            continue
        for v in row.get("versions", "").split():
            if version_matches(r.version_id, v):
                repo = row.get("repo", "").format(nodot=r.version_id.replace(".", ""), major=version_major(r))
                return row.get("route", ""), repo, row.get("source", "")
    return "", "", ""


def host_facts(ctx: ActionContext) -> HostFacts:
    out = ctx.outputs
    h = HostFacts()
    o = out.get("os_release")
    if o is not None and o.ok:
        h.os = parse_os_release(o.text)
        h.pm = package_manager(h.os)
        h.route, h.repo, h.route_source = _route_for(h.os)
    h.kernel, _ = _kernel(out)
    mo = out.get("driver_uname_m")
    if mo is not None and mo.ok and mo.text.strip():
        h.machine = mo.text.strip().split()[0]
    h.arch = nvidia_repo_arch(h.machine)
    h.secure_boot, _ = _secure_boot(out)
    h.packages, _ = packages_of(out)
    h.driver = driver_state(out)
    h.gpus = gpus_of(out, ctx.plan)
    if h.route == "ubuntu-archive" and h.has("cuda-keyring"):
        h.route = "nvidia-apt"  # NVIDIA's repository is already configured: stay on it, do not mix sources
    return h


def _branch_fits(spec: str, branch: str) -> bool:
    """``spec`` "<590" / ">=590" / "" against a branch number."""
    m = re.fullmatch(r"\s*(<=|>=|<|>|=)?\s*(\d{3,4})\s*", spec or "")
    if not spec.strip():
        return True
    if not m or not branch.isdigit():
        return False
    op, n, b = m.group(1) or "=", int(m.group(2)), int(branch)
    return {"<": b < n, "<=": b <= n, ">": b > n, ">=": b >= n, "=": b == n}[op]


def _row(route: str, item: str, distro: str = "", branch: str = "") -> Mapping[str, str] | None:
    """The ``assets/driver_install.csv`` row of ``item`` for ``route``: a row naming ``distro`` wins over a
    generic one; rows limited to other branches are skipped."""
    best = None
    for row in table("driver_install.csv"):
        if row.get("route") != route or row.get("item") != item or not _branch_fits(row.get("branches", ""), branch):
            continue
        ds = row.get("distros", "").split()
        if ds and distro in ds:
            return row
        if not ds and best is None:
            best = row
    return best


def _raw(route: str, item: str, distro: str = "", branch: str = "") -> str:
    row = _row(route, item, distro, branch)
    return row.get("value", "") if row else ""


def _item(route: str, item: str, distro: str = "", **kw: str) -> list[str]:
    """Package names / URL of ``item`` for ``route`` (assets/driver_install.csv), placeholders filled."""
    return _raw(route, item, distro, kw.get("branch", "")).format(**kw).split()


def _rx(route: str, item: str) -> re.Pattern[str] | None:
    """A ``*_rx`` item of ``assets/driver_install.csv`` compiled (None when the route has none or it is broken)."""
    v = _raw(route, item)
    try:
        return re.compile(v) if v else None
    except re.error:
        return None


def _install(h: HostFacts, packages: list[str], recommends: bool | None = None) -> list[str]:
    """One non-interactive install; apt also gets :data:`APT_NO_REMOVE`."""
    assert h.pm is not None
    argv = install_argv(h.pm, packages, recommends)
    if h.pm.family == "debian":
        argv.insert(argv.index("-y") + 1, APT_NO_REMOVE)
    return argv


def _manual(what: str, h: HostFacts, extra: str = "") -> Resolved:
    name = h.os.pretty_name if h.os is not None and h.os.pretty_name else "this distribution"
    return Resolved(manual=f"bringup has no sourced {what} commands for {name}: follow NVIDIA's driver installation "
                           f"guide for it ({SRC_GUIDE.split('(')[1].rstrip(')')}){extra}. No command was guessed.")


def _need_basics(h: HostFacts, what: str) -> Resolved | None:
    if h.os is None or h.pm is None or not h.route:
        return _manual(what, h)
    if not h.kernel:
        return Resolved(manual="could not read the running kernel release (/proc/sys/kernel/osrelease): rerun the "
                               "action once the kernel probe works.")
    if h.arch is None:
        return Resolved(manual=f"NVIDIA publishes no driver repository for the machine type {h.machine or 'unknown'!r} "
                               "(uname -m): install by hand.")
    return None


def _download_dir(ctx: ActionContext) -> str:
    base = ctx.state_dir or "/var/lib/bringup"
    return f"{base.rstrip('/')}/downloads"


def _apt_repo_ops(ctx: ActionContext, h: HostFacts) -> list[list[str]]:
    """NVIDIA's CUDA repository for apt through its keyring package (guide: wget the cuda-keyring .deb,
    dpkg -i it, apt update); nothing when cuda-keyring is already installed."""
    if h.has("cuda-keyring"):
        return []
    url = _item("nvidia-apt", "keyring", repo=h.repo, arch=h.arch or "")[0]
    dest = f"{_download_dir(ctx)}/{url.rsplit('/', 1)[1]}"
    return [["mkdir", "-p", _download_dir(ctx)], ["wget", "-O", dest, url], ["dpkg", "-i", dest]]


def _component_ops(h: HostFacts) -> tuple[list[str], list[list[str]]]:
    """(packages to install first, ops) enabling the distribution components NVIDIA's guide asks for
    (Debian: ``add-apt-repository contrib``, CUDA installation guide 4.9.1); nothing elsewhere."""
    row = _row("nvidia-apt", "component", h.distro)
    if row is None or h.distro not in row.get("distros", "").split():
        return [], []
    comps = row.get("value", "").split()
    return _item("nvidia-apt", "component_tool", h.distro), [["add-apt-repository", "-y", c] for c in comps]


def _kernel_parts(kernel: str) -> tuple[str, str]:
    """SUSE uname -r ``5.14.21-150500.55.65-default`` -> (``default``, ``5.14.21-150500.55.65``)."""
    ver, _, variant = kernel.rpartition("-")
    return (variant, ver) if ver and variant.isalpha() else ("default", kernel)


EPEL_OPS: dict[str, list[list[str]]] = {
    "rocky": [["dnf", "install", "-y", "epel-release"], ["dnf", "config-manager", "--set-enabled", "{crb}"]],
    "almalinux": [["dnf", "install", "-y", "epel-release"], ["dnf", "config-manager", "--set-enabled", "{crb}"]],
    "rhel": [["subscription-manager", "repos", "--enable", "codeready-builder-for-rhel-{major}-{machine}-rpms"],
             ["dnf", "install", "-y", "https://dl.fedoraproject.org/pub/epel/epel-release-latest-{major}.noarch.rpm"]],
}
"""Third-party dependencies of NVIDIA's RPMs (DKMS and friends come from EPEL, which needs CodeReady
Builder / CRB, PowerTools on EL8): NVIDIA driver installation guide, Red Hat/Rocky "Satisfy third-party
package dependency"; a real Rocky 9 install of nvidia-open used the same (tests/data/PROVENANCE-driver.md)."""


def _dnf_prep(h: HostFacts) -> list[list[str]]:
    assert h.os is not None
    major = version_major(h.os)
    crb = "powertools" if major == "8" else "crb"
    ops = [_install(h, _item(h.route, "prereq", kernel=h.kernel))] if h.pm else []
    for op in EPEL_OPS.get(h.os.id, []):
        ops.append([a.format(crb=crb, major=major, machine=h.machine) for a in op])
    url = _item(h.route, "repo", repo=h.repo, arch=h.arch or "")[0]
    ops += [["dnf", "config-manager", "--add-repo", url], ["dnf", "clean", "expire-cache"]]
    return ops


ZYPP_REPOS_D = "/etc/zypp/repos.d"
"""Where zypper keeps one ``<alias>.repo`` file per repository (zypper(8) "addrepo": a .repo file's sections are
stored there under their alias)."""


def _zypper_repo(ctx: ActionContext, h: HostFacts) -> list[dict[str, Any]]:
    """NVIDIA's repository for zypper, idempotently: its .repo section written as
    ``/etc/zypp/repos.d/<alias>.repo`` (backed up, replaced atomically: the same file ``zypper addrepo`` of NVIDIA's
    cuda-<distro>.repo creates, but a rerun does not fail on an existing alias as addrepo does), then ``zypper
    --gpg-auto-import-keys refresh`` (driver installation guide, SUSE network repository). Section fields from
    assets/driver_install.csv (repo_alias, repo_baseurl, repo_gpgkey)."""
    kw = {"repo": h.repo, "arch": h.arch or ""}
    alias = _item("nvidia-zypper", "repo_alias", **kw)[0]
    content = (f"[{alias}]\nname={alias}\nbaseurl={_item('nvidia-zypper', 'repo_baseurl', **kw)[0]}\nenabled=1\n"
               f"gpgcheck=1\ngpgkey={_item('nvidia-zypper', 'repo_gpgkey', **kw)[0]}\n")
    return [{"write": f"{ZYPP_REPOS_D}/{alias}.repo", "content": content, "backup_dir": ctx.backup_dir},
            {"argv": ["zypper", "--non-interactive", "--gpg-auto-import-keys", "refresh"]}]


def target_branch(h: HostFacts, plan: Mapping[str, Any]) -> tuple[Branch | None, str, str]:
    """(branch, flavour, why) the install action uses: the recommendation for the GPUs found (or the
    plan's gpu_model); with no GPU information, NVIDIA's default open flavour."""
    today = today_of(plan)
    rec = recommend(h.gpus.architectures, today)
    if not rec.flavour:
        return None, "", rec.conflict
    return rec.branch, rec.flavour, rec.flavour_why


def os_listed(h: HostFacts, branch: str) -> tuple[bool, str]:
    """Is this distribution release listed for ``branch`` in ``assets/os_support.csv`` (NVIDIA's tables)?
    (listed, the row's name or "")."""
    from wizard.parsers.platform import support_rows
    from wizard.parsers.platform import version_matches as table_version_matches

    if h.os is None:
        return False, ""
    for r in support_rows():
        if r.kind == "listed" and r.branch == branch and r.distro_id == h.os.id and \
                table_version_matches(r.version, h.os.version_id, r.min_version):
            return True, r.name
    return False, ""


def _driver_packages(h: HostFacts) -> list[Package]:
    pd = h.driver.packaged
    return list({p.name: p for p in pd.core + pd.kmod}.values())


def foreign_driver_packages(h: HostFacts, route: str) -> list[Package]:
    """Installed driver packages that ``route`` did not install: on Ubuntu's archive route anything but the
    ``-server`` ERD packages and their linux-modules-nvidia; elsewhere packages whose name or version marks another
    source (``*_rx`` items of assets/driver_install.csv)."""
    pkgs = _driver_packages(h)
    owned = _rx(route, "owned_rx")
    if owned is not None:
        return [p for p in pkgs if not owned.fullmatch(p.name)]
    names, versions = _rx(route, "foreign_name_rx"), _rx(route, "foreign_version_rx")
    extra = [p for p in (h.packages.installed() if h.packages else []) if names is not None and names.fullmatch(p.name)]
    out = {p.name: p for p in pkgs + extra
           if (names is not None and names.fullmatch(p.name)) or (versions is not None and versions.fullmatch(p.version))}
    return list(out.values())


def _pkg_list(pkgs: list[Package], limit: int = 8) -> str:
    s = ", ".join(f"{p.name} {p.version}" for p in pkgs[:limit])
    return s + (f" and {len(pkgs) - limit} more" if len(pkgs) > limit else "")


def _removal(h: HostFacts, pkgs: list[Package]) -> str:
    """The removal commands for ``pkgs`` (CUDA installation guide 3.6; on Ubuntu the docs' branch pattern)."""
    fam = h.pm.family if h.pm is not None else ""
    cmd = REMOVE_CMD.get(fam, "remove with your package manager:")
    names = " ".join(p.name for p in pkgs[:24])
    if h.distro == "ubuntu":
        branches = sorted({branch_of(p.upstream) for p in pkgs if branch_of(p.upstream)})
        if branches:
            pats = " ".join(f"'*nvidia*{b}*'" for b in branches)
            return (f"`{cmd} {pats}` then `sudo apt autoremove` (Ubuntu Server docs, switching drivers; check what is left "
                    "with `apt-mark showmanual | grep nvidia`)")
    tail = " then `sudo apt autoremove`" if fam == "debian" else ""
    return f"`{cmd} {names}`{tail}"


def existing_driver_conflict(h: HostFacts, route: str, branch: str, flavour: str, action: str) -> str:
    """Manual instructions when an installed NVIDIA driver would be replaced by ``action`` (route ``route``,
    branch ``branch``, ``flavour`` modules): packages from another source or flavour, a runfile install, another
    branch or the other kernel-module flavour. "" when nothing conflicts (nothing installed, or exactly this
    route's packages of this branch and flavour: a rerun)."""
    st = h.driver
    pd = st.packaged
    foreign = foreign_driver_packages(h, route)
    what = f"{action} would install R{branch} ({flavour} kernel modules) from {_ROUTE_NAME.get(route, route)}"
    if foreign:
        return (f"An NVIDIA driver from another source or flavour is installed ({_pkg_list(foreign)}); {what} and does "
                f"not replace it silently. Remove it first: {_removal(h, foreign)}; reboot; then run this action again. "
                f"Sources: {SRC_CONFLICT}.")
    loaded = st.loaded or (st.module.version if st.module and st.module.version else "")
    if loaded and h.packages is not None and not pd.core:
        ev = "; ".join(st.evidence()[:2]) or f"driver {loaded}"
        return (f"A driver {loaded} is present without any driver package ({ev}): a .run (runfile) install; {what}, "
                "and the two would "
                "overwrite each other's files. Uninstall it first with `sudo /usr/bin/nvidia-uninstall`, reboot, then "
                f"run this action again. Sources: {SRC_CONFLICT}; knowledge.md 2 (runfile installs sit outside the "
                "package database).")
    pkgs = _driver_packages(h)
    branches = sorted({branch_of(v) for v in pd.versions if branch_of(v)})
    if pkgs and branches and branches != [branch]:
        return (f"Driver packages of branch {', '.join('R' + b for b in branches)} are installed ({_pkg_list(pkgs)}); "
                f"{what}. Switching branches is a deliberate step: remove them first with {_removal(h, pkgs)}, reboot, "
                f"then run this action again. Sources: {SRC_CONFLICT}.")
    have = st.flavour
    if pkgs and have and have != flavour:
        mods = pd.kmod or pkgs
        return (f"The installed driver uses the {have} kernel modules ({_pkg_list(mods)}); {what}. Remove the "
                f"{have} module packages first with {_removal(h, mods)}, reboot, then run this action again. "
                f"Sources: {SRC_CONFLICT}; {SRC_FLAVOUR}.")
    if pd.flavour == "mixed":
        return (f"Both open and proprietary kernel-module packages are installed ({_pkg_list(pd.kmod)}); {what}. Keep "
                f"one flavour: {_removal(h, pd.kmod)}. Sources: {SRC_CONFLICT}.")
    return ""


_ROUTE_NAME = {"ubuntu-archive": "Ubuntu's archive (-server packages)", "nvidia-apt": "NVIDIA's CUDA repository (apt)",
               "nvidia-dnf-module": "NVIDIA's CUDA repository (dnf module)",
               "nvidia-dnf-versionlock": "NVIDIA's CUDA repository (dnf + versionlock)",
               "nvidia-zypper": "NVIDIA's CUDA repository (zypper)"}


def resolve_driver_install(ctx: ActionContext) -> Resolved:
    """The install commands for the recommended branch/flavour on this distribution (see
    assets/driver_install*.csv for each package name's source). Manual instructions instead when the
    distribution release is not listed for the branch (assets/os_support.csv), when a driver from another
    source, branch or flavour (or a runfile driver) is installed, or when bringup has no sourced route."""
    h = host_facts(ctx)
    bad = _need_basics(h, "driver installation")
    if bad is not None:
        return bad
    b, flav, why = target_branch(h, ctx.plan)
    if b is None:
        return Resolved(manual=f"no driver branch to install: {why or 'no supported branch drives these GPUs'}. "
                               f"Check NVIDIA's support matrix ({MATRIX_URL}).")
    br = str(b.branch)
    assert h.pm is not None and h.os is not None
    listed, _name = os_listed(h, br)
    if not listed:
        return Resolved(manual=f"{h.os.pretty_name or h.os.id + ' ' + h.os.version_id} is not listed for R{br} in "
                               "bringup's support table (assets/os_support.csv, read from NVIDIA's tables): check the "
                               f"R{br} release notes and driver installation guide ({SRC_GUIDE.split('(')[1].rstrip(')')}) "
                               "for this release and install by hand, or use a listed release. No command was guessed.")
    conflict = existing_driver_conflict(h, h.route, br, flav, "the install action")
    if conflict:
        return Resolved(manual=conflict)
    ops: list[list[str] | dict[str, Any]] = []
    env: dict[str, str] = {}
    if h.route == "ubuntu-archive":
        env = dict(APT_NONINTERACTIVE_ENV)
        o = "-open" if flav == "open" else ""
        if not UBUNTU_KERNEL.fullmatch(h.kernel):
            sb = (" With Secure Boot on, sign the DKMS modules with a MOK you enroll (the DKMS package guides you)."
                  if h.secure_boot == "enabled" else "")
            return Resolved(manual=f"the running kernel {h.kernel} is not one of Ubuntu's archive kernels, for which "
                                   "Canonical ships the precompiled, signed linux-modules-nvidia packages: build the module "
                                   f"with DKMS as the Ubuntu Server docs show (`sudo apt install linux-headers-$(uname -r)`, "
                                   f"`sudo apt install nvidia-dkms-{br}-server{o}`, then `sudo apt install "
                                   f"nvidia-driver-{br}-server{o}`).{sb} Source: {SRC_UBUNTU_PKGS}.")
        ops.append(["apt-get", "update"])
        ops.append(_install(h, _item(h.route, "prereq", kernel=h.kernel)))
        ops.append(["ubuntu-drivers", "install", "--gpgpu", _item(h.route, "ubuntu_drivers", branch=br, open=o)[0]])
        ops.append(_install(h, _item(h.route, "running_kernel", branch=br, open=o, kernel=h.kernel)
                            + _item(h.route, "utils", branch=br)))
    elif h.route == "nvidia-apt":
        env = dict(APT_NONINTERACTIVE_ENV)
        repo_ops = _apt_repo_ops(ctx, h)
        tools, comp_ops = _component_ops(h)
        ops.append(["apt-get", "update"])
        ops.append(_install(h, _item(h.route, "prereq", kernel=h.kernel) + tools
                            + (["wget", "ca-certificates"] if repo_ops else [])))
        ops += comp_ops
        if repo_ops or comp_ops:
            ops += repo_ops + [["apt-get", "update"]]
        ops.append(_install(h, _item(h.route, "lock", branch=br)))
        ops.append(_install(h, _item(h.route, f"driver_{flav}", h.distro)))
    elif h.route == "nvidia-dnf-module":
        ops += _dnf_prep(h)
        ops.append(["dnf", "module", "enable", "-y", _item(h.route, f"stream_{flav}", branch=br)[0]])
        ops.append(_install(h, _item(h.route, f"driver_{flav}", h.distro)))
    elif h.route == "nvidia-dnf-versionlock":
        ops += _dnf_prep(h)
        ops.append(["dnf", "versionlock", "add", _item(h.route, "lock", branch=br)[0]])
        ops.append(_install(h, _item(h.route, f"driver_{flav}", h.distro)))
    elif h.route == "nvidia-zypper":
        variant, kver = _kernel_parts(h.kernel)
        ops.append(_install(h, _item(h.route, "prereq", kvariant=variant, kversion=kver)))
        ops += _zypper_repo(ctx, h)
        ops.append(_install(h, _item(h.route, f"driver_{flav}", branch=br)))
    else:  # pragma: no cover - routes come from the data file
        return _manual("driver installation", h)
    return Resolved(ops=_ops(ops), env=env)


def _ops(ops: list[list[str] | dict[str, Any]]) -> list[dict[str, Any]]:
    """argv lists and ready operations -> the supervisor's operations."""
    return [o if isinstance(o, dict) else {"argv": o} for o in ops]


UBUNTU_KERNEL = re.compile(r"\d+\.\d+\.\d+-\d+-[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
"""``uname -r`` of an Ubuntu archive kernel (``6.8.0-31-generic``, ``6.8.0-1015-aws``): Canonical publishes
linux-modules-nvidia-<branch>-server[-open]-<that release> for them (Ubuntu Server docs, Select NVIDIA driver
packages manually); other kernels need DKMS."""


def _driver_for_followup(h: HostFacts) -> tuple[str, str]:
    v = h.driver.loaded or h.driver.nvml or h.driver.packaged.version
    return v, branch_of(v)


def resolve_persistenced(ctx: ActionContext) -> Resolved:
    """``systemctl enable --now nvidia-persistenced`` (NVIDIA Driver Persistence documentation)."""
    return Resolved(ops=[{"argv": ["systemctl", "enable", "--now", "nvidia-persistenced"]}])


def _nvlink5(h: HostFacts) -> list[Gpu]:
    return [g for g in h.gpus.gpus if g.arch is not None and g.arch.nvlink_fabric]


FM_NAMES_NOTE = ("Fabric Manager and NSCQ package names differ between repositories (nvidia-fabricmanager-<branch> or "
                 "nvidia-fabricmanager / nvidia-fabric-manager; libnvidia-nscq-<branch> or libnvidia-nscq: NVIDIA/go-nvfm "
                 "README; NVIDIA driver installation guide 'Ubuntu 590 and later packages')")


def resolve_fabric_manager(ctx: ActionContext) -> Resolved:
    """Fabric Manager and NSCQ packages for the installed driver, named as the driver's own source names them
    (assets/driver_install.csv: Ubuntu's archive nvidia-fabricmanager-<branch> libnvidia-nscq-<branch>; NVIDIA's apt
    repository branch-named up to R580, unversioned from R590 behind the pinning package; NVIDIA's RPM repository
    nvidia-fabric-manager-<version> libnvidia-nscq-<version>), plus nvlsm on NVLink 5 boards where the route has a
    sourced name; then ``systemctl enable --now nvidia-fabricmanager``. Manual instructions where the names are not
    verified (SUSE; NVLink 5 on Ubuntu's archive) or the driver is not this route's."""
    h = host_facts(ctx)
    bad = _need_basics(h, "Fabric Manager installation")
    if bad is not None:
        return bad
    ver, br = _driver_for_followup(h)
    if not br:
        return Resolved(manual="install the NVIDIA driver first (driver.install): Fabric Manager must match its exact version.")
    manual_tail = (f" Install the Fabric Manager and NSCQ packages of exactly driver {ver} from the repository the driver "
                   f"came from, then `sudo systemctl enable --now nvidia-fabricmanager`. {FM_NAMES_NOTE}. Source: {SRC_FM}.")
    foreign = foreign_driver_packages(h, h.route)
    if foreign:
        return Resolved(manual=f"the installed driver ({_pkg_list(foreign)}) is not from {_ROUTE_NAME.get(h.route, h.route)}: "
                               "bringup installs Fabric Manager only from the driver's own source." + manual_tail)
    if h.route == "nvidia-zypper":
        return Resolved(manual="bringup has no verified Fabric Manager / NSCQ package names for NVIDIA's SUSE repository."
                               + manual_tail)
    nvl5 = _nvlink5(h)
    extra: list[str] = []
    if nvl5:
        extra = _item(h.route, "nvlink5")
        if not extra:
            return Resolved(manual=f"this board uses an NVLink 5 switch fabric ({nvl5[0].line}), which also needs NVLSM and "
                                   "the ib_umad module (Fabric Manager user guide), and bringup has no verified NVLSM package "
                                   f"name for {_ROUTE_NAME.get(h.route, h.route)}." + manual_tail)
    if h.route == "nvidia-apt" and _row(h.route, "fabricmanager", branch=br) and \
            (_row(h.route, "fabricmanager", branch=br) or {}).get("branches", "").startswith(">=") and \
            not h.has(rf"nvidia-driver-pinning-{br}"):
        return Resolved(manual=f"from R590 NVIDIA's apt packages carry no branch in their name: without "
                               f"nvidia-driver-pinning-{br} installed, apt would take the newest branch's Fabric Manager, "
                               f"not R{br}. Install nvidia-driver-pinning-{br} first (driver installation guide, version "
                               "locking), then run this action again.")
    pkgs = _item(h.route, "fabricmanager", branch=br, version=ver)
    if not pkgs:
        return Resolved(manual="bringup has no verified Fabric Manager package names for this route." + manual_tail)
    ops: list[list[str]] = []
    env: dict[str, str] = {}
    if h.pm is not None and h.pm.family == "debian":
        env = dict(APT_NONINTERACTIVE_ENV)
        ops.append(["apt-get", "update"])
    ops.append(_install(h, pkgs + extra))
    ops.append(["systemctl", "enable", "--now", "nvidia-fabricmanager"])
    return Resolved(ops=[{"argv": a} for a in ops], env=env)


def _nvidia_repo_prefix(ctx: ActionContext, h: HostFacts) -> tuple[list[list[str] | dict[str, Any]], dict[str, str]]:
    """Ops that make NVIDIA's CUDA repository available for the follow-up packages (DCGM, CUDA toolkit)."""
    if h.route == "nvidia-apt":
        repo_ops = _apt_repo_ops(ctx, h)
        tools, comp_ops = _component_ops(h)
        ops: list[list[str] | dict[str, Any]] = [["apt-get", "update"]]
        need = tools + (["wget", "ca-certificates"] if repo_ops else [])
        if need:
            ops.append(_install(h, need))
        if repo_ops or comp_ops:
            ops += comp_ops + repo_ops + [["apt-get", "update"]]
        return ops, dict(APT_NONINTERACTIVE_ENV)
    if h.route.startswith("nvidia-dnf"):
        url = _item(h.route, "repo", repo=h.repo, arch=h.arch or "")[0]
        return [_install(h, ["dnf-plugins-core"]), ["dnf", "config-manager", "--add-repo", url]], {}
    if h.route == "nvidia-zypper":
        return list(_zypper_repo(ctx, h)), {}
    return [], {}


def toolkit_cap(h: HostFacts) -> tuple[str, list[str]]:
    """(newest CUDA major.minor to install for these GPUs, the architectures that set it): the lowest
    ``max_cuda_toolkit`` of assets/driver_architectures.csv over the GPUs found; ("", []) when none caps it."""
    from wizard.rules import chain

    rules = arch_rules()
    caps = [(rules[a].max_cuda_toolkit, a) for a in h.gpus.architectures if a in rules and rules[a].max_cuda_toolkit]
    if not caps:
        return "", []
    low = min(chain.version_tuple(c) for c, _ in caps)
    mm = next(c for c, _ in caps if chain.version_tuple(c) == low)
    return mm, sorted({a for c, a in caps if chain.version_tuple(c) == low})


def _followup_cuda(h: HostFacts) -> tuple[str, str, str]:
    """(CUDA major.minor to install, the driver's own CUDA, a note when the GPUs' cap lowered it)."""
    from wizard.rules import chain

    ver, _br = _driver_for_followup(h)
    mm = h.driver.nvml_cuda or (chain.driver_max_cuda(ver) if ver else "")
    if not mm:
        return "", "", ""
    cap, archs = toolkit_cap(h)
    if cap and chain.version_tuple(cap) < chain.version_tuple(mm):
        return cap, mm, (f"capped at CUDA {cap} for {', '.join(archs)} (compute capability < 7.5: CUDA 13 dropped them; "
                         f"{SRC_TOOLKIT_CAP})")
    return mm, mm, ""


def _no_mixing(h: HostFacts, what: str, alternative: str) -> Resolved | None:
    """Manual instructions when adding NVIDIA's CUDA repository would mix driver sources: Ubuntu's archive route,
    or a driver from a source foreign to the route (e.g. Debian's own packages on the NVIDIA-repository route)."""
    if h.route == "ubuntu-archive":
        return Resolved(manual=f"this host runs Ubuntu's archive driver (ubuntu-drivers / -server packages): {what} comes "
                               "from NVIDIA's CUDA repository, which also carries driver packages that apt may then take "
                               "instead of Ubuntu's (Ubuntu Server docs: drivers from other sources 'might potentially "
                               "overwrite those provided by ubuntu-drivers and might break Secure Boot'). bringup does not "
                               f"add that repository here. {alternative}")
    foreign = foreign_driver_packages(h, h.route)
    if foreign:
        return Resolved(manual=f"the installed driver ({_pkg_list(foreign)}) is not from {_ROUTE_NAME.get(h.route, h.route)}; "
                               f"adding NVIDIA's CUDA repository for {what} would mix driver sources. {alternative}")
    return None


def resolve_cuda_toolkit(ctx: ActionContext) -> Resolved:
    """The CUDA toolkit the installed driver runs natively (``cuda-toolkit-<major>-<minor>`` from NVIDIA's
    repository; the driver's CUDA from NVML, else the toolkit/driver table), capped at CUDA 12.9 for Maxwell,
    Pascal and Volta GPUs (knowledge.md 1.7). Manual instructions on Ubuntu's archive driver (no repository mixing)."""
    h = host_facts(ctx)
    bad = _need_basics(h, "CUDA toolkit installation")
    if bad is not None:
        return bad
    mm, drv_mm, note = _followup_cuda(h)
    if not mm:
        return Resolved(manual="install the NVIDIA driver first: the toolkit version follows the CUDA the driver runs.")
    mixing = _no_mixing(h, "the CUDA toolkit", f"PyTorch wheels need no toolkit. To build CUDA code, install toolkit "
                        f"{mm} without driver packages: NVIDIA's runfile with only the toolkit (`sudo sh cuda_<version>_linux.run "
                        "--silent --toolkit`) or conda (`conda install cuda -c nvidia/label/cuda-<version>`) (CUDA installation "
                        "guide 6.3 and 7.4)." + (f" Toolkit {note}." if note else ""))
    if mixing is not None:
        return mixing
    ops, env = _nvidia_repo_prefix(ctx, h)
    ops.append(_install(h, _item(h.route, "cuda_toolkit", cuda_mm=mm.replace(".", "-"))))
    return Resolved(ops=_ops(ops), env=env)


def resolve_dcgm(ctx: ActionContext) -> Resolved:
    """DCGM 4 for the driver's CUDA major (``datacenter-gpu-manager-4-cuda<major>`` with recommends; cuda12 for
    Maxwell/Pascal/Volta), then ``systemctl --now enable nvidia-dcgm`` (DCGM installation guide). Manual
    instructions on Ubuntu's archive driver (no repository mixing)."""
    h = host_facts(ctx)
    bad = _need_basics(h, "DCGM installation")
    if bad is not None:
        return bad
    mm, drv_mm, note = _followup_cuda(h)
    if not mm:
        return Resolved(manual="install the NVIDIA driver first: DCGM's package follows the driver's CUDA major version.")
    major = mm.split(".")[0]
    mixing = _no_mixing(h, "DCGM", f"If you add NVIDIA's repository for DCGM anyway, install only "
                        f"datacenter-gpu-manager-4-cuda{major} (DCGM installation guide) and check with `apt-cache policy "
                        "<your nvidia-driver package>` that the driver still comes from its own source before any upgrade.")
    if mixing is not None:
        return mixing
    ops, env = _nvidia_repo_prefix(ctx, h)
    ops.append(_install(h, _item(h.route, "dcgm", cuda_major=major), recommends=True))
    ops.append(["systemctl", "--now", "enable", "nvidia-dcgm"])
    return Resolved(ops=_ops(ops), env=env)


CTK_KEY_URL = "https://nvidia.github.io/libnvidia-container/gpgkey"
CTK_KEYRING = "/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg"
CTK_APT_LIST = "/etc/apt/sources.list.d/nvidia-container-toolkit.list"
CTK_APT_LINE = f"deb [signed-by={CTK_KEYRING}] https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /\n"
"""The apt source the container toolkit guide writes (``$(ARCH)`` is apt's own substitution)."""
CTK_RPM_REPO = "https://nvidia.github.io/libnvidia-container/stable/rpm/nvidia-container-toolkit.repo"


def resolve_container_toolkit(ctx: ActionContext) -> Resolved:
    """NVIDIA Container Toolkit from its own repository (container toolkit installation guide: key ->
    keyring, apt source, install; dnf/zypper: the .repo file, install)."""
    h = host_facts(ctx)
    if h.os is None or h.pm is None:
        return _manual("container toolkit", h)
    if h.pm.family == "debian":
        d = _download_dir(ctx)
        key = f"{d}/nvidia-container-toolkit.gpgkey"
        ops: list[dict[str, Any]] = [
            {"argv": ["apt-get", "update"]},
            {"argv": install_argv(h.pm, ["wget", "ca-certificates", "gnupg"])},
            {"argv": ["mkdir", "-p", d]},
            {"argv": ["wget", "-O", key, CTK_KEY_URL]},
            {"argv": ["gpg", "--batch", "--yes", "--dearmor", "-o", CTK_KEYRING, key]},
            {"write": CTK_APT_LIST, "content": CTK_APT_LINE, "backup_dir": ctx.backup_dir},
            {"argv": ["apt-get", "update"]},
            {"argv": install_argv(h.pm, ["nvidia-container-toolkit"])},
        ]
        return Resolved(ops=ops, env=dict(APT_NONINTERACTIVE_ENV))
    if h.pm.family == "rhel":
        return Resolved(ops=[{"argv": install_argv(h.pm, ["dnf-plugins-core"])},
                             {"argv": ["dnf", "config-manager", "--add-repo", CTK_RPM_REPO]},
                             {"argv": install_argv(h.pm, ["nvidia-container-toolkit"])}])
    return Resolved(ops=[{"argv": ["zypper", "--non-interactive", "addrepo", CTK_RPM_REPO]},
                         {"argv": ["zypper", "--non-interactive", "--gpg-auto-import-keys", "install", "nvidia-container-toolkit"]}])
