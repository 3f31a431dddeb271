"""The installed NVIDIA driver as the host reports it: the package list (``dpkg-query`` / ``rpm -qa``), which
packages carry the driver's version and which select the open or proprietary kernel modules, and the
driver state (/proc/driver/nvidia/version, NVML, ``modinfo nvidia``, packages) that the driver rules
judge and the install planner refuses to overwrite. Data, not judgement; never imports a rule."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from wizard.facts import facts_of
from wizard.parsers.gpu import parse_driver_version, parse_nvml
from wizard.parsers.packages import ModInfo, Package, PackageList, parse_dpkg, parse_modinfo, parse_rpm
from wizard.probes import ProbeOutput
from wizard.common import lazy_re

Outputs = Mapping[str, ProbeOutput]

DRIVER_CORE = lazy_re(
    r"nvidia-driver(?:-\d{3})?(?:-server)?(?:-open)?|nvidia-dkms-\d{3}(?:-server)?(?:-open)?|nvidia-utils-\d{3}(?:-server)?"
    r"|libnvidia-compute-\d{3}(?:-server)?|nvidia-kernel-common-\d{3}(?:-server)?|nvidia-kernel-source-\d{3}(?:-server)?(?:-open)?"
    r"|nvidia-compute-utils-\d{3}(?:-server)?|nvidia-headless(?:-no-dkms)?-\d{3}(?:-server)?(?:-open)?"
    r"|kmod-nvidia-(?:open|latest)-dkms|nvidia-kmod-common|nvidia-driver-(?:cuda|libs|cuda-libs)|nvidia-open(?:-\d{3})?"
    r"|cuda-drivers(?:-\d{3})?|nvidia-kernel-(?:open-)?dkms|nvidia-open-kernel-dkms|dkms-nvidia|libnvidia-ml1?|nvidia-smi"
    r"|libcuda1|nvidia-compute-G0\d|nvidia-open-driver-G0\d(?:-signed)?(?:-cuda)?-kmp-\w+|nvidia-driver-G0\d-kmp-\w+"
    r"|nvidia-\d{3}(?:-updates)?|libcuda1-\d{3}(?:-updates)?")
"""Packages whose version is the driver's version (Ubuntu/Debian, NVIDIA's repositories, RHEL, SUSE names; Ubuntu's
branch-named nvidia-331 … nvidia-384 and libcuda1-3xx before 18.04, "NVIDIA binary driver - version 367.57").
Not nvidia-settings (versioned on its own) and not linux-modules-nvidia-* (versioned by kernel)."""

KMOD_OPEN = lazy_re(r"nvidia-dkms-\d{3}(?:-server)?-open|kmod-nvidia-open-dkms|nvidia-kernel-open-dkms|nvidia-open-kernel-dkms"
                       r"|linux-modules-nvidia-\d{3}(?:-server)?-open-.*|nvidia-open-driver-G0\d.*kmp.*|nvidia-open(?:-\d{3})?"
                       r"|nvidia-driver-\d{3}(?:-server)?-open|nvidia-headless(?:-no-dkms)?-\d{3}(?:-server)?-open"
                       r"|nvidia-kernel-source-\d{3}(?:-server)?-open")
"""Packages that install or select the OPEN kernel modules (Ubuntu -open names; NVIDIA's nvidia-open,
kmod-nvidia-open-dkms, nvidia-kernel-open-dkms; Debian nvidia-open-kernel-dkms; SUSE nvidia-open-driver)."""

KMOD_PROPRIETARY = lazy_re(r"nvidia-dkms-\d{3}(?:-server)?|kmod-nvidia-latest-dkms|nvidia-kernel-dkms"
                              r"|linux-modules-nvidia-\d{3}(?:-server)?-(?!open-).*|nvidia-driver-G0\d-kmp.*"
                              r"|nvidia-driver-\d{3}(?:-server)?|nvidia-headless(?:-no-dkms)?-\d{3}(?:-server)?"
                              r"|nvidia-kernel-source-\d{3}(?:-server)?|nvidia-tesla(?:-\d+)?-kernel-dkms|cuda-drivers(?:-\d{3})?"
                              r"|nvidia-\d{3}(?:-updates)?")
"""Packages that install or select the PROPRIETARY kernel modules. Other module packages (e.g. a
distribution's dkms-nvidia, which may build either source) tell nothing about the flavour."""

KMOD_KERNEL = lazy_re(r"kmod-nvidia-\d+\.\d+[\w.+-]*")
"""A kernel-module package built for one kernel (RPM Fusion's akmods and ELRepo name it kmod-nvidia-<kernel release>,
e.g. kmod-nvidia-5.14.0-427.el9_4, its version the driver's): its version must match the user-space packages'
like any other driver package (the NVIDIA driver README: kernel module and user-space components of one version)."""

FM_PKG = lazy_re(r"nvidia-fabric-?manager(?:-\d{3})?")
NSCQ_PKG = lazy_re(r"libnvidia-nscq(?:-\d{3})?")
DCGM_PKG = lazy_re(r"datacenter-gpu-manager(?:-\d+)?(?:-cuda\d+|-core)?")
CTK_PKG = lazy_re(r"nvidia-container-toolkit")


def packages_of(out: Outputs) -> tuple[PackageList | None, ProbeOutput | None]:
    """Installed-package list from ``driver_dpkg`` (Debian family) or ``driver_rpm``; (None, probe) when
    neither package manager answered (the probe returned is the one to show as evidence)."""
    for name, parse in (("driver_dpkg", parse_dpkg), ("driver_rpm", parse_rpm)):
        o = out.get(name)
        if o is None or o.rc == 127 or o.error.startswith("command not found"):
            continue
        if o.error and not o.text.strip():
            continue
        pl = facts_of(out).parse(name, parse, on="text+stderr")
        assert pl is not None
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
    for p in pd.core + [p for p in inst if KMOD_KERNEL.fullmatch(p.name) and p.upstream]:
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
        d = facts_of(out).parse_text("nvidia_driver_version", parse_driver_version)
        assert d is not None
        if d.version:
            st.loaded, st.loaded_flavour = d.version, d.flavour
            st.loaded_ev.append(f"{vo.source}: {d.line}")
    no = out.get("nvml")
    if no is not None and no.ok:
        f = facts_of(out).parse_text("nvml", parse_nvml)
        assert f is not None
        if f.init == "ok":
            st.nvml, st.nvml_cuda = f.driver_version, f.cuda_version_str
            if f.driver_version and not st.loaded:
                st.loaded_ev.append(f"{no.source}: driver {f.driver_version}")
    mo = out.get("driver_modinfo")
    if mo is not None and (mo.text.strip() or mo.stderr.strip()):
        m = facts_of(out).parse("driver_modinfo", parse_modinfo, on="text+stderr")
        assert m is not None
        if m.version or m.not_found or m.filename:
            st.module = m
    st.packages, _ = packages_of(out)
    st.packaged = packaged_driver(st.packages)
    return st


# ------------------------------------------------------------------ findings: branch choice
