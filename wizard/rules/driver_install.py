"""Driver & CUDA stage checks: the recommended driver branch and kernel-module flavour for these GPUs, the
installed driver (version, flavour, lifecycle), its kernel module for the running kernel (DKMS, signed
modules), nvidia-persistenced, Fabric Manager + NSCQ on NVSwitch systems, DCGM and the container toolkit.

Every function is a rule ``(outputs, plan) -> findings`` (or an ``explain`` judge of one pasted text).
The data they judge against (branches, architectures, package names) lives in
:mod:`wizard.install.catalog` and :mod:`wizard.install.packages`, shared with the install planner
:mod:`wizard.install.driver` (the one place rules read planner-side data: both must agree on which
branch and flavour fit these GPUs).

* Fabric Manager and NSCQ must be at exactly the driver's version on NVSwitch systems (Fabric Manager
  user guide; NVIDIA packaging READMEs);
* never "nvcc and nvidia-smi must show the same CUDA": the toolkit is optional (only to build CUDA code)
  and only needs a driver new enough for it (CUDA compatibility guide; wizard.rules.driver_chain).
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Mapping

from wizard.common import to_float
from wizard.facts import facts_of
from wizard.install.catalog import (
    MATRIX_URL, OPEN_DEFAULT_NOTE, SRC_ARCH, SRC_FLAVOUR, SRC_FM, SRC_MATRIX, Branch, GpuSet, _bus_list, _subject,
    branches, arch_rules, branch_drives, flavour_word, gpus_of, recommend, running_kernel, secure_boot_state, today_of,
)
from wizard.install.packages import (
    CTK_PKG, DCGM_PKG, FM_PKG, NSCQ_PKG, DriverState, driver_state, packaged_driver, packages_of,
)
from wizard.model import WAITS_FOR_GPUS, Finding, Verdict, worst
from wizard.parsers.packages import (
    INSERT_ERROR,
    DKMS_BUILD_FAILED,
    FM_MISMATCH, FM_START_FAILURE, PackageList, Unit, Units, branch_of, parse_dkms_status, parse_dpkg, parse_fm_version, parse_modinfo,
    parse_rpm, parse_systemctl_show, parse_systemctl_status,
)
from wizard.probes import ProbeOutput
from wizard.rules.common import Outputs, missing
from wizard.i18n import Msg, N_, joined, SEMICOLON
from wizard.common import lazy_re

SRC_PKGS = ("the distribution's package database (dpkg-query(1) / rpm(8) -qa); install the driver from packages (DKMS or "
            "signed precompiled modules), not the .run file: NVIDIA driver installation guide, "
            "https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/introduction.html")
SRC_DKMS = ("DKMS builds the module for every installed kernel whose headers are present and rebuilds it when new headers "
            "arrive (Debian nvidia-open-kernel-dkms package description, https://packages.debian.org/sid/amd64/"
            "nvidia-open-kernel-dkms; dkms(8) status: added/built/installed)")
SRC_SIGNED = ("modules built by DKMS do not load when the kernel only accepts signed modules (Secure Boot) unless signed "
              "with an enrolled MOK (ArchWiki, DKMS, https://wiki.archlinux.org/title/Dkms); Canonical-signed precompiled "
              "linux-modules-nvidia packages (NVIDIA GPU Operator documentation, precompiled signed drivers, "
              "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/install-precompiled-signed-drivers.html)")
SRC_MISMATCH = ("the kernel module and the user-space driver must be the same version: NVRM 'API mismatch' and NVML "
                "'Driver/library version mismatch' otherwise (NVIDIA driver README; nvidia-smi man page)")
SRC_PERSIST = ("NVIDIA 'Driver Persistence' (https://docs.nvidia.com/deploy/driver-persistence/): nvidia-persistenced is "
               "the supported way to keep GPUs initialised; nvidia-persistenced(1): --no-persistence-mode starts it with "
               "persistence mode off; DCGM diagnostics, https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/"
               "dcgm-diagnostics.html (level 1 deployment checks warn when persistence mode is off)")
SRC_NSCQ = ("NVIDIA/apt-packaging-libnvidia-nscq and yum-packaging-libnvidia-nscq: libnvidia-nscq (NVSwitch Configuration "
            "and Query, used by DCGM to monitor NVSwitches) 'must match the NVIDIA driver installed'")
SRC_DCGM = ("DCGM installation guide (docs.nvidia.com/datacenter/dcgm/latest/installation.html): "
            "datacenter-gpu-manager-4-cuda<major>, service nvidia-dcgm")
SRC_CTK = ("NVIDIA Container Toolkit installation guide (docs.nvidia.com/datacenter/cloud-native/container-toolkit/latest/"
           "install-guide.html)")
SRC_UBUNTU = "Ubuntu Server documentation, Install NVIDIA drivers (documentation.ubuntu.com/server/how-to/graphics/install-nvidia-drivers/)"

def _branch_line(b: Branch, today: _dt.date) -> str:
    return Msg("{name} (end of life {eol}, CUDA {cuda}.x, as of {as_of})", name=b.name, eol=b.eol_text,
               cuda=b.max_cuda_major, as_of=b.as_of)


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
        model = str(plan.get("gpu_model") or "").strip() if isinstance(plan, Mapping) else ""
        if model:  # walk 18: "no gpu_model in the plan" while the plan named one bringup's tables do not know
            return [Finding("driver.branch", Verdict.UNKNOWN,
                            Msg("no NVIDIA GPU on the PCI bus, and the plan's gpu_model {model!r} is not a GPU bringup's "
                                "tables name: cannot pick a driver flavour for it", model=model), "host", (o.source,),
                            "Seat the GPUs (grounding & install order stage), or record the model as bringup names it "
                            "(F2 in the TUI, or `bringup plan gpu_model=MODEL` with a name such as 'H100 SXM5': `bringup size --gpu ?` lists them).",
                            SRC_ARCH)]
        return [Finding("driver.branch", Verdict.UNKNOWN, "no NVIDIA GPU on the PCI bus and no gpu_model in the plan: "
                        "cannot pick a driver flavour for unknown GPUs", "host", (o.source,),
                        "Seat the GPUs (grounding & install order stage) or record gpu_model in the plan (F2 in the TUI, or "
                        "`bringup plan gpu_model=MODEL`).", SRC_ARCH)]
    ev = list(gs.evidence)
    findings: list[Finding] = []
    if gs.unknown:
        findings.append(Finding("driver.branch", Verdict.UNKNOWN,
                                Msg("{n_unknown} NVIDIA GPU(s) with a device id bringup's tables do not name ({a1}): their "
                                    "architecture, and so the driver flavour they need, is unknown", n_unknown=len(gs.unknown), a1=', '.join(sorted({g.device_id for g in gs.unknown}))), _subject(gs),
                                tuple(g.line for g in gs.unknown[:8]),
                                "Look the device id up in the README of the driver branch you plan to install "
                                "(Appendix A, supported GPUs) and in NVIDIA/open-gpu-kernel-modules' compatible-GPU list.",
                                SRC_ARCH))
    rec = recommend(gs.architectures, today)
    where = (Msg('in the plan (gpu_model)') if gs.source == 'plan' else Msg('on the PCI bus'))
    planned = to_float(plan.get("gpu_count"), text=False, positive=True) if gs.source == "plan" else None
    # the plan's model stands for gpu_count GPUs (one entry here); the bus's GPUs are counted one by one
    arch_txt = ", ".join(f"{a} x{int(planned)}" if planned else a if gs.source == "plan" else
                         f"{a} x{sum(1 for g in gs.gpus if g.arch and g.arch.architecture == a)}" for a in rec.architectures)
    if rec.conflict:
        findings.append(Finding("driver.branch", Verdict.FAIL, Msg("GPUs {where}: {arch_txt}: {conflict}", where=where, arch_txt=arch_txt, conflict=rec.conflict), _subject(gs),
                                tuple(ev), "Move the older GPUs (Maxwell/Pascal/Volta) to another server: one NVIDIA "
                                "driver (one kernel-module flavour) drives all GPUs of a host.", SRC_FLAVOUR))
        return findings
    if rec.branch is None:
        findings.append(Finding("driver.branch", Verdict.FAIL,
                                Msg("GPUs {where}: {arch_txt}: no branch in bringup's data (as of {a1}) is both supported "
                                    "today ({isoformat}) and able to drive them with the {flavour} modules", where=where, arch_txt=arch_txt, a1=max((b.as_of for b in branches().values()), default='?'), isoformat=today.isoformat(), flavour=flavour_word(rec.flavour)),
                                _subject(gs), tuple(ev),
                                Msg("Check NVIDIA's live support matrix ({MATRIX_URL}); GPUs that no supported branch drives "
                                    "(e.g. Kepler) need replacing for production training.", MATRIX_URL=MATRIX_URL),
                                f"{SRC_MATRIX}; {SRC_FLAVOUR}"))
        return findings
    b = rec.branch
    alts = joined("; ", (_branch_line(a, today) for a in rec.alternatives[:3]))
    # in pieces, each shown translated (an argument would be kept in English)
    msg = ((Msg("GPUs in the plan (gpu_model): {arch_txt} -> driver ", arch_txt=arch_txt) if gs.source == "plan" else
            Msg("GPUs on the PCI bus: {arch_txt} -> driver ", arch_txt=arch_txt))
           + _branch_line(b, today) + Msg(" with the {flavour} kernel modules: ", flavour=flavour_word(rec.flavour))
           + rec.flavour_why + (Msg(". Also supported today: ") + alts if alts else ""))
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
                                Msg("the loaded kernel module is driver {loaded} but the installed packages are {version}: "
                                    "user space and kernel module disagree", loaded=st.loaded, version=pd.version), "host", tuple(st.evidence()),
                                "If the packages were just upgraded: reboot. If the loaded version is not from a package, "
                                "a .run install shadows the packages: run its uninstaller (nvidia-uninstall), reinstall "
                                "the packaged driver, rebuild the initramfs and reboot.", f"{SRC_MISMATCH}; {SRC_PKGS}"))
    elif st.loaded and st.module and st.module.version and st.module.version != st.loaded:
        findings.append(Finding("driver.installed", Verdict.WARN,
                                Msg("driver {loaded} is loaded but the module installed for this kernel is {version}: the next "
                                    "boot switches versions", loaded=st.loaded, version=st.module.version), "host", tuple(st.evidence()),
                                "Reboot (in a maintenance window) so the loaded module matches the installed one.",
                                SRC_MISMATCH))
    elif pl is not None and not pd.core:
        findings.append(Finding("driver.installed", Verdict.WARN,
                                Msg("driver {ver} is present but no driver package is installed: a .run (runfile) install sits "
                                    "outside the package database and must be rebuilt by hand after every kernel change", ver=ver),
                                "host", tuple(st.evidence()),
                                "Prefer the distribution's packages (this step's action) after uninstalling the runfile "
                                "driver (nvidia-uninstall).", SRC_PKGS))
    else:
        how = (Msg('from {manager} packages', manager=pl.manager) if pl is not None and pd.core else Msg('(package database not readable)'))
        findings.append(Finding("driver.installed", Verdict.PASS, (Msg('NVIDIA driver {ver} installed {how}', ver=ver, how=how) + (Msg(', loaded ({loaded_flavour} kernel module)', loaded_flavour=flavour_word(st.loaded_flavour)) if st.loaded else Msg(', not loaded yet'))),
                                "host", tuple(st.evidence()), "", SRC_PKGS))
    if len(pd.versions) > 1:
        parts = SEMICOLON.join(f"{v}: {', '.join(p.name for p in ps[:4])}" for v, ps in sorted(pd.versions.items()))
        findings.append(Finding("driver.installed", Verdict.WARN,
                                Msg("driver packages of {n_versions} different versions are installed ({parts})", n_versions=len(pd.versions), parts=parts),
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
        return [Finding("driver.flavour", Verdict.UNKNOWN, Msg("could not tell whether driver {version} uses the open or the proprietary kernel modules", version=st.version), "host", tuple(st.evidence()),
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
            out.append(Finding("driver.flavour", Verdict.FAIL, Msg("{who} run with the proprietary kernel modules, which do not support {arch}: {arch} "
                                                                   "requires the open modules (nvidia-open)", who=who, arch=arch), _subject(gs, arch),
                               ev, "Install the open flavour of the same branch (this step's action installs it) and "
                               "reboot.", f"{SRC_FLAVOUR}; {rule.source}"))
        elif flav == "open" and rule.open_module == "unsupported":
            out.append(Finding("driver.flavour", Verdict.FAIL, Msg("{who} with the open kernel modules: the open modules do not support {arch} (the driver "
                                                                   "ignores these GPUs)", who=who, arch=arch), _subject(gs, arch), ev,
                               "Install the proprietary flavour (cuda-drivers / nvidia-driver-<branch>[-server], "
                               "kmod-nvidia-latest-dkms) of a branch that still drives them (R580 or older) and reboot.",
                               f"{SRC_FLAVOUR}; {rule.source}"))
        elif flav == "proprietary" and rule.open_module == "recommended":
            other = [a for a in gs.architectures if rules.get(a) and rules[a].open_module == "unsupported"]
            if other:
                out.append(Finding("driver.flavour", Verdict.PASS, Msg("{who}: proprietary kernel modules, as this box also holds {other} GPUs that only the "
                                                                       "proprietary modules drive", who=who, other=', '.join(other)),
                                   _subject(gs, arch), ev, "", f"{SRC_FLAVOUR} (mixed old+new GPU boxes: proprietary)"))
            else:
                out.append(Finding("driver.flavour", Verdict.WARN, Msg("{who} run with the proprietary kernel modules; NVIDIA recommends the open modules for "
                                                                       "{arch} ({OPEN_DEFAULT_NOTE})", who=who, arch=arch, OPEN_DEFAULT_NOTE=OPEN_DEFAULT_NOTE), _subject(gs, arch), ev,
                                   "At the next driver change, switch to the open flavour of the same branch (nvidia-open, "
                                   "nvidia-driver-<branch>-server-open, kmod-nvidia-open-dkms).", f"{SRC_FLAVOUR}; {rule.source}"))
        else:
            out.append(Finding("driver.flavour", Verdict.PASS, Msg("{who}: {flav} kernel modules, as the architecture rule asks ({open_module} open modules)", who=who, flav=flav, open_module=rule.open_module), _subject(gs, arch), ev, "",
                               f"{SRC_FLAVOUR}; {rule.source}"))
    return out


def _lifecycle_findings(version: str, today: _dt.date, gs: GpuSet) -> list[Finding]:
    br = branch_of(version)
    if not br:
        return []
    b = branches().get(int(br))
    ev = (f"driver {version} -> branch R{br}",)
    oldest = branches()[min(branches())] if branches() else None
    if b is None and oldest is not None and int(br) < oldest.branch and oldest.state(today) == "eol":
        # older than every branch the data holds, all of them past end of life (held-out round 119: R367)
        return [Finding("driver.branch_lifecycle", Verdict.WARN,
                        Msg("driver branch R{br} is older than every branch in bringup's data, whose oldest, R{old}, "
                            "is past its end of life already: no more security or bug fixes", br=br, old=oldest.branch),
                        "host", ev,
                        Msg("Move to a supported Long Term Support or Production branch ({MATRIX_URL}) that drives "
                            "these GPUs.", MATRIX_URL=MATRIX_URL), f"{SRC_MATRIX}; {oldest.source}")]
    if b is None:
        newest = max(branches().values(), key=lambda x: x.as_of)
        return [Finding("driver.branch_lifecycle", Verdict.WARN,
                        Msg("driver branch R{br} is not in bringup's data (as of {as_of}): its designation and end of "
                            "life are unknown here", br=br, as_of=newest.as_of), "host", ev,
                        Msg("Check R{br} on NVIDIA's live support matrix ({MATRIX_URL}); use a Long Term Support or "
                            "Production branch for production.", br=br, MATRIX_URL=MATRIX_URL), SRC_MATRIX)]
    state = b.state(today)
    cannot = branch_drives(b, gs.architectures) if gs.gpus else []
    out: list[Finding] = []
    if cannot:
        these = [g for g in gs.gpus if g.arch and g.arch.architecture in cannot]
        out.append(Finding("driver.branch_lifecycle", Verdict.FAIL,
                           Msg("driver branch R{br} does not drive {cannot} GPU(s) ({bus_list})", br=br, cannot=', '.join(cannot), bus_list=_bus_list(these)),
                           _subject(gs, cannot[0]), ev + tuple(gs.evidence[:4]),
                           "Install a branch that drives them (see the driver.branch step).",
                           SEMICOLON.join(arch_rules()[a].source for a in cannot)))
    src = f"{SRC_MATRIX}; {b.source}"
    if state == "eol":
        out.append(Finding("driver.branch_lifecycle", Verdict.WARN,
                           Msg("driver {version} belongs to {name}, which reached end of life ({eol_text}; today is "
                               "{isoformat}; data as of {as_of}): no more security or bug fixes", version=version, name=b.name, eol_text=b.eol_text, isoformat=today.isoformat(), as_of=b.as_of),
                           "host", ev, Msg("Move to a supported branch (see driver.branch; live matrix: {MATRIX_URL}).", MATRIX_URL=MATRIX_URL), src))
    elif state == "nfb":
        out.append(Finding("driver.branch_lifecycle", Verdict.WARN,
                           Msg("driver {version} belongs to {name}, a New Feature Branch: short-lived, for evaluation "
                               "(data as of {as_of})", version=version, name=b.name, as_of=b.as_of), "host", ev,
                           Msg("For production use a Long Term Support or Production branch (live matrix: {MATRIX_URL}).", MATRIX_URL=MATRIX_URL), src))
    else:
        out.append(Finding("driver.branch_lifecycle", Verdict.PASS,
                           Msg("driver {version}: {name}, supported until {eol_text} (as of {as_of}; live matrix: "
                               "{MATRIX_URL})", version=version, name=b.name, eol_text=b.eol_text, as_of=b.as_of, MATRIX_URL=MATRIX_URL), "host", ev, "", src))
    return out


# ------------------------------------------------------------------ findings: kernel module


def kernel_module(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """Check ``driver.kernel_module`` (probes ``kernel``, ``driver_dkms``, ``driver_modinfo``,
    ``driver_dpkg``, ``driver_rpm``, ``mokutil_sb_state``): an nvidia module exists for the running
    kernel, built by DKMS (``dkms status`` ... ``installed``) or from a precompiled package; fail when
    DKMS only registered/built it, or built it for other kernels; warn when the installed module is not
    the one DKMS built; fail when Secure Boot is on and the module is unsigned."""
    st = driver_state(out)
    kernel, kev = running_kernel(out)
    do = out.get("driver_dkms")
    dk = facts_of(out).parse("driver_dkms", parse_dkms_status, on="text+stderr") if do is not None and (do.text or do.stderr) else None
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
                                Msg("DKMS built and installed nvidia {version} for the running kernel {kernel}", version=installed_here[0].version, kernel=kernel),
                                "host", tuple(ev), "", SRC_DKMS))
    elif warn_here:
        findings.append(Finding("driver.kernel_module", Verdict.WARN,
                                Msg("DKMS reports the nvidia module installed for {kernel} differs from the one it built "
                                    "({a1}): another installer (often a .run file) replaced it", kernel=kernel, a1=warn_here[0].notes[0]),
                                "host", tuple(ev),
                                Msg("Remove the other driver (nvidia-uninstall for a runfile), then `sudo dkms install "
                                    "nvidia/{version} -k {kernel} --force` and reboot.", version=warn_here[0].version, kernel=kernel), SRC_DKMS))
    elif precompiled:
        findings.append(Finding("driver.kernel_module", Verdict.PASS,
                                Msg("precompiled nvidia module{a1} for the running kernel {kernel} ({name})", a1=' ' + mod.version if mod and mod.version else '', kernel=kernel, name=precompiled[0].name), "host", tuple(ev), "", SRC_SIGNED))
    elif here:
        e = here[0]
        findings.append(Finding("driver.kernel_module", Verdict.FAIL,
                                Msg("DKMS has nvidia {version} for the running kernel {kernel} only '{state}', not installed: "
                                    "the module was not built (or not installed) for this kernel", version=e.version, kernel=kernel, state=e.state), "host", tuple(ev),
                                Msg("Install the headers (linux-headers-{kernel} / kernel-devel-{kernel}), run `sudo dkms "
                                    "autoinstall -k {kernel}` and read /var/lib/dkms/nvidia/{version}/build/make.log if it "
                                    "fails; then reboot.", kernel=kernel, version=e.version), SRC_DKMS))
    elif mod_here:
        findings.append(Finding("driver.kernel_module", Verdict.PASS,
                                Msg("an nvidia module {a1} exists for the running kernel {kernel} ({a2})", a1=mod.version if mod else '', kernel=kernel, a2=mod.filename if mod else ''), "host", tuple(ev), "", SRC_DKMS))
    elif entries:
        added = [e for e in entries if not e.kernel]
        other = sorted({e.kernel for e in entries if e.kernel})
        what = (Msg('only for other kernels ({other})', other=', '.join(other)) if other else Msg("only registered ('{state}'), never built", state=added[0].state) if added else Msg('not for this kernel'))
        findings.append(Finding("driver.kernel_module", Verdict.FAIL,
                                Msg("no nvidia module for the running kernel {kernel}: DKMS has nvidia {version} {what}", kernel=kernel, version=entries[0].version, what=what), "host", tuple(ev),
                                Msg("Install the headers of the running kernel (linux-headers-{kernel} / "
                                    "kernel-devel-{kernel}), then `sudo dkms autoinstall -k {kernel}`; if the build fails, the "
                                    "driver branch may not support this kernel: read the DKMS make.log and the branch's "
                                    "release notes.", kernel=kernel), SRC_DKMS))
    else:
        findings.append(Finding("driver.kernel_module", Verdict.FAIL,
                                Msg("driver {version} is installed but no nvidia module exists for the running kernel {kernel}", version=st.version, kernel=kernel),
                                "host", tuple(ev),
                                Msg("Install the module package for this kernel (DKMS with linux-headers-{kernel}, or "
                                    "linux-modules-nvidia-<branch>-server[-open]-{kernel} on Ubuntu), then reboot.", kernel=kernel), SRC_DKMS))
    sb, sbev = secure_boot_state(out)
    if sb == "enabled" and mod is not None and mod.version:
        if not mod.signed:
            findings.append(Finding("driver.kernel_module", Verdict.FAIL,
                                    Msg("Secure Boot is on and the nvidia module for {kernel} is not signed: the kernel will "
                                        "refuse to load it", kernel=kernel), "host", tuple(x for x in [sbev] + ev if x),
                                    Msg("Use Canonical's signed precompiled modules "
                                        "(linux-modules-nvidia-<branch>-server[-open]-{kernel}), or sign DKMS modules with a MOK "
                                        "and enroll it (`mokutil --import`, then confirm at the next boot).", kernel=kernel), SRC_SIGNED))
        elif re.search(r"dkms|mok", mod.signer, re.I):
            findings.append(Finding("driver.kernel_module", Verdict.PASS,
                                    Msg("Secure Boot is on; the module is signed by '{signer}': it loads only if that key is "
                                        "enrolled (mokutil --list-enrolled)", signer=mod.signer), "host", tuple(x for x in [sbev] + ev if x), "",
                                    SRC_SIGNED))
    return findings


# ------------------------------------------------------------------ findings: services


def _units(out: Outputs) -> tuple[Units | None, ProbeOutput | None]:
    o = out.get("driver_services")
    if o is None or (o.error and not o.text.strip()) or o.rc == 127:
        return None, o
    u = facts_of(out).parse_text("driver_services", parse_systemctl_show)
    assert u is not None
    return (u if u.units else None), o


def persistenced(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """Check ``driver.persistenced`` (probe ``driver_services``): nvidia-persistenced is installed,
    active and not started with ``--no-persistence-mode``; warn otherwise (DCGM level 1: persistence off
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
        return [Finding("driver.persistenced", Verdict.WARN, Msg("nvidia-persistenced is {a1}{tail}", a1={'': 'not running', 'inactive': 'not running (inactive)'}.get(u.active, u.active), tail=tail),
                        "host", ev + tuple(u.log[-4:]), "`sudo systemctl enable --now nvidia-persistenced`; if it fails, "
                        "read `journalctl -u nvidia-persistenced` (the driver must be loaded).", SRC_PERSIST)]
    if "--no-persistence-mode" in u.exec_start or any("--no-persistence-mode" in ln for ln in u.lines):
        return [Finding("driver.persistenced", Verdict.WARN, "nvidia-persistenced runs with --no-persistence-mode: the "
                        "GPUs' persistence mode stays off", "host", ev,
                        "Start the daemon with --persistence-mode (a systemd drop-in overriding ExecStart), or enable it "
                        "per GPU with `sudo nvidia-smi -pm 1` while the daemon runs.", SRC_PERSIST)]
    fin = ('' if u.unit_file in ('enabled', 'static', 'enabled-runtime', 'indirect', 'alias') or not u.unit_file else Msg(' but its unit is {unit_file} (it will not start at boot)', unit_file=u.unit_file))
    reg = [ln for ln in u.log if re.search(r"nvidia-persistenced(?:\[\d+\])?: device \S+ - registered$", ln)]
    # the daemon's own line per GPU it holds open (nvidia-persistenced.c: "device %s - registered")
    held = Msg("; it registered {n} GPU(s)", n=len(reg)) if reg else ""
    ev += tuple(x for x in reg[:8] if x not in ev)
    return [Finding("driver.persistenced", Verdict.WARN if fin else Verdict.PASS, Msg("nvidia-persistenced is active{fin}", fin=fin) + held,
                    "host", ev, (Msg('`sudo systemctl enable nvidia-persistenced`') if fin else ''), SRC_PERSIST)]


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
    if sw == "no" and gs.source != "pci":
        # no GPU either: whether the board has NVSwitches is known once its GPUs are on the bus (walk 19: "not
        # needed" on a machine planned as 8x H100 SXM5 whose GPUs were not visible yet)
        return [Finding("driver.fabric_manager", Verdict.SKIP, "not checked: no NVIDIA GPU and no NVSwitch on the PCI "
                        "bus, so whether Fabric Manager is needed is not known yet (see health.gpu_pci)", "host",
                        tuple(swev), "", SRC_FM, waits_for=WAITS_FOR_GPUS)]
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
    fmv = facts_of(out).parse_text("driver_fm_version", parse_fm_version) if fo is not None and fo.ok else None
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
                                Msg("Fabric Manager {what} active, same version as the driver {a1}", what=what, a1=drv or '?'), "host",
                                tuple(dict.fromkeys(ev)), "", SRC_FM))
    else:
        v = worst(p[0] for p in problems)
        findings.append(Finding("driver.fabric_manager", v, SEMICOLON.join(p[1] for p in problems), "host",
                                tuple(dict.fromkeys(ev)), " ".join(dict.fromkeys(p[2] for p in problems)), SRC_FM))
    if pl is not None:
        if not nscq_pk:
            findings.append(Finding("driver.nscq", Verdict.WARN, "libnvidia-nscq is not installed: DCGM cannot monitor "
                                    "the NVSwitches", "host", tuple(swev),
                                    Msg("Install libnvidia-nscq-{a1} at the driver's exact version (this step's action does).", a1=branch_of(drv) or '<branch>'), SRC_NSCQ))
        else:
            bad = [p for p in nscq_pk if drv and p.upstream != drv]
            if bad:
                findings.append(Finding("driver.nscq", Verdict.FAIL, Msg("{name} is {upstream}, the driver is {drv}: NSCQ must match the driver exactly", name=bad[0].name, upstream=bad[0].upstream, drv=drv), "host", tuple(p.line for p in nscq_pk),
                                        Msg("Install libnvidia-nscq at exactly {drv}.", drv=drv), SRC_NSCQ))
            else:
                findings.append(Finding("driver.nscq", Verdict.PASS, Msg("libnvidia-nscq {upstream} matches the driver", upstream=nscq_pk[0].upstream), "host", tuple(p.line for p in nscq_pk), "", SRC_NSCQ))
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
        return [Finding("driver.dcgm", Verdict.PASS, Msg("DCGM {a1} installed, nvidia-dcgm active", a1=pk[0].upstream or pk[0].version),
                        "host", ev, "", SRC_DCGM)]
    state = u.active if u is not None and u.exists else "not installed as a service"
    return [Finding("driver.dcgm", Verdict.WARN, Msg("DCGM {a1} is installed but nvidia-dcgm is {a2}", a1=pk[0].upstream or pk[0].version, a2=state or 'unknown'), "host", ev, "`sudo systemctl --now enable nvidia-dcgm`", SRC_DCGM)]


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
    return [Finding("driver.container_toolkit", Verdict.PASS, Msg("NVIDIA Container Toolkit {version} installed (configure the runtime with `nvidia-ctk "
                                                                  "runtime configure`)", version=pk[0].version), "host", (pk[0].line,), "", SRC_CTK)]


def chain_summary(out: Outputs, plan: Mapping[str, Any]) -> list[Finding]:
    """``driver.chain``: one line over the whole chain (driver branch/flavour -> newest CUDA it runs ->
    CUDA toolkit if any -> torch's CUDA), worst of the parts; probes of driver.install,
    driver.cuda_toolkit and driver.torch_cuda. The toolkit need not match nvidia-smi's CUDA."""
    from wizard.rules import driver_chain as chain

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
    remedy = ('' if v in (Verdict.PASS, Verdict.SKIP) else Msg('See the driver.cuda_toolkit and driver.torch_cuda findings.'))
    return [Finding("driver.chain", v, (SEMICOLON.join(parts) + Msg(" (nvcc need not match nvidia-smi's CUDA version)")), "host",
                    tuple(dict.fromkeys(ev))[:12], remedy, f"{chain.SRC_TABLE}; {chain.SRC_TORCH}")]


# ------------------------------------------------------------------ explain judges (pasted text)


def _unreadable(fid: str, text: str, what: str, src: str) -> list[Finding]:
    return [Finding(fid, Verdict.UNKNOWN, Msg("could not read {what}", what=what), "host", tuple(text.splitlines()[:10]),
                    "Paste the whole, unedited output.", src)]


def judge_dkms_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge for ``dkms status``: ``driver.kernel_module``."""
    d = parse_dkms_status(text)
    ent = d.module()
    failed = [ln.strip() for ln in text.splitlines() if DKMS_BUILD_FAILED.search(ln)]
    if failed:
        ver = re.search(r"/var/lib/dkms/nvidia[\w-]*/([\d.]+)/", text)
        kern = re.search(r"module build on kernel: (\S+)|autoinstall on (\S+?)/", text)
        k = (kern.group(1) or kern.group(2)) if kern else ""
        return [Finding("driver.kernel_module", Verdict.FAIL,
                        (Msg('DKMS could not build the nvidia module{value}', value=' ' + ver.group(1) if ver else '') + (Msg(' for kernel {k}', k=k) if k else '') + Msg(': no NVIDIA kernel module for that kernel')), "host",
                        tuple(dict.fromkeys(failed))[:5],
                        "Read the compiler's error in the make.log DKMS names (/var/lib/dkms/nvidia/<version>/build/"
                        "make.log). Usual causes: the kernel's headers are missing (install linux-headers-$(uname -r) / "
                        "kernel-devel), the driver branch is older than the kernel supports (a new kernel needs a newer "
                        "branch; legacy branches stop building), or the kernel was built with another compiler than "
                        "DKMS uses. Fix it, then `sudo dkms autoinstall` and reboot.", SRC_DKMS)]
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
        return [Finding("driver.kernel_module", Verdict.WARN, Msg("nvidia {version} for {kernel}: DKMS says the installed module differs from the one it "
                                                                  "built ({a1}); another installer replaced it", version=warned[0].version, kernel=warned[0].kernel, a1=warned[0].notes[0]), "host", ev, Msg("Remove the other driver (a .run install: nvidia-uninstall), then `sudo dkms install "
                                                       "nvidia/{version} -k {kernel} --force` and reboot.", version=warned[0].version, kernel=warned[0].kernel), SRC_DKMS)]
    if inst:
        ks = sorted({e.kernel for e in inst})
        return [Finding("driver.kernel_module", Verdict.PASS, Msg("nvidia {version} built and installed by DKMS for kernel(s) {ks} (compare with `uname -r`)", version=inst[0].version, ks=', '.join(ks)), "host", ev, "", SRC_DKMS)]
    e = ent[0]
    return [Finding("driver.kernel_module", Verdict.FAIL, Msg("nvidia {version} is only '{state}' in DKMS, installed for no kernel: the module was not "
                                                              "built", version=e.version, state=e.state), "host", ev,
                    "Install the running kernel's headers (linux-headers-$(uname -r) / kernel-devel-$(uname -r)), run "
                    "`sudo dkms autoinstall` and read the make.log under /var/lib/dkms/nvidia/ if it fails. An old branch "
                    "may not build on a new kernel.", SRC_DKMS)]


def loaded_vs_packaged(proc_text: str, package_text: str, rpm: bool = False) -> Finding | None:
    """``driver.installed`` FAIL when the loaded kernel module (/proc/driver/nvidia/version) and the installed driver
    packages (``dpkg -l`` / ``rpm -qa``) are of different versions: the user-space libraries (NVML, libcuda) no longer
    match the module, so nvidia-smi and CUDA fail with "Driver/library version mismatch" until the module is reloaded
    (a reboot) or the packages are put back. None when either version is unknown or they agree."""
    from wizard.parsers.gpu import parse_driver_version

    loaded = parse_driver_version(proc_text)
    pd = packaged_driver(parse_rpm(package_text) if rpm else parse_dpkg(package_text))
    if not loaded.version or not pd.version or loaded.version == pd.version:
        return None
    ev = tuple(ln.strip() for ln in proc_text.splitlines() if ln.startswith("NVRM version:"))[:1] + tuple(
        ln.strip() for ln in package_text.splitlines() if pd.version in ln)[:3]
    return Finding("driver.installed", Verdict.FAIL,
                   Msg("the loaded kernel module is {version} but the installed driver packages are {version2}: "
                       "user space and kernel module differ, so NVML and CUDA fail ('Driver/library version "
                       "mismatch') until the new module is loaded", version=loaded.version, version2=pd.version), "host", ev,
                   Msg("Reboot to load the module of the installed packages (or reinstall the packages of the "
                       "loaded version {version}); then pin the driver packages (apt-mark hold / dnf versionlock) "
                       "so an unattended upgrade cannot split them again.", version=loaded.version), f"{SRC_PKGS}; NVML API reference, "
                   "NVML_ERROR_LIB_RM_VERSION_MISMATCH (https://docs.nvidia.com/deploy/nvml-api/)")


def judge_packages(pl: PackageList, exp: Mapping[str, Any], what: str) -> list[Finding]:
    """Installed packages (pasted ``dpkg -l`` / ``rpm -qa``) -> driver version, flavour, mixed versions,
    Fabric Manager / NSCQ against the driver, and the branch lifecycle as of today."""
    pd = packaged_driver(pl)
    findings: list[Finding] = []
    today = today_of(exp)
    if not pd.version:
        nv = [p for p in pl.installed() if re.search(r"nvidia|cuda", p.name)]
        return [Finding("driver.installed", Verdict.WARN, Msg("no NVIDIA driver package among the {n_nv} listed NVIDIA/CUDA packages", n_nv=len(nv)), "host", tuple(p.line for p in nv[:8]),
                        "If a driver is loaded, it was installed outside the package manager (.run file); prefer the "
                        "distribution's packages.", SRC_PKGS)]
    flav = pd.flavour if pd.flavour in ("open", "proprietary") else ""
    findings.append(Finding("driver.installed", Verdict.PASS, (Msg('NVIDIA driver {version} installed from {what} packages', version=pd.version, what=what) + (Msg(' ({flav} kernel modules)', flav=flav) if flav else '')), "host", tuple(pd.evidence), "", SRC_PKGS))
    if len(pd.versions) > 1:
        parts = SEMICOLON.join(f"{v}: {', '.join(p.name for p in ps[:4])}" for v, ps in sorted(pd.versions.items()))
        findings.append(Finding("driver.installed", Verdict.WARN, Msg("driver packages of {n_versions} versions are installed ({parts})", n_versions=len(pd.versions), parts=parts), "host", tuple(p.line for ps in sorted(pd.versions.values(), key=len) for p in ps[:3]),
                                "Upgrade or remove the odd packages so all driver packages share one version, then reboot.",
                                SRC_MISMATCH))
    if pd.flavour == "mixed":
        findings.append(Finding("driver.flavour", Verdict.WARN, "both open and proprietary kernel-module packages are "
                                "installed", "host", tuple(p.line for p in pd.kmod[:8]), "Keep one flavour.", SRC_FLAVOUR))
    for rx, fid, label, src in ((FM_PKG, "driver.fabric_manager", "Fabric Manager", SRC_FM),
                                (NSCQ_PKG, "driver.nscq", "NSCQ", SRC_NSCQ)):
        for p in pl.find(rx.pattern):
            if p.upstream and p.upstream != pd.version:
                findings.append(Finding(fid, Verdict.FAIL, Msg("{label} package {name} is {upstream} but the driver packages are {version}: they must be "
                                                               "exactly the same version", label=label, name=p.name, upstream=p.upstream, version=pd.version), "host",
                                        (p.line,) + tuple(pd.evidence[:2]),
                                        Msg("Install {name} at exactly {version} (or the driver at {upstream}).", name=p.name, version=pd.version, upstream=p.upstream), src))
            elif p.upstream:
                findings.append(Finding(fid, Verdict.PASS, Msg("{label} package {name} {upstream} matches the driver", label=label, name=p.name, upstream=p.upstream),
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


SRC_SYSTEMD = ("systemctl(1) and systemd.service(5) (https://www.freedesktop.org/software/systemd/man/latest/systemctl.html, "
               "https://www.freedesktop.org/software/systemd/man/latest/systemd.service.html): 'Active: active (running)' "
               "is a running daemon, 'active (exited)' a one-shot unit (RemainAfterExit=yes, or an LSB init script run "
               "through systemd-sysv-generator) whose start command succeeded, 'failed' with a Result (exit-code, "
               "signal, timeout) a unit whose start or main process failed, 'inactive (dead)' one not started")
_MONITORING_UNIT = lazy_re(r"exporter")
"""A unit that only exports GPU metrics (nvidia_gpu_exporter, dcgm-exporter): its failure leaves the GPUs working and
their monitoring down (a warn, as for the dcgm-exporter daemonset; held-out round 368)."""
STACK_UNITS: tuple[tuple[re.Pattern[str], str, str], ...] = (
    (lazy_re(r"nv_peer_mem"), N_("Mellanox's GPUDirect RDMA peer-memory module, through which the HCA reads and writes "
     "GPU memory"), "Mellanox nv_peer_memory README (https://github.com/Mellanox/nv_peer_memory): /etc/init.d/nv_peer_mem "
     "starts, stops and reports the nv_peer_mem kernel module"),
    (lazy_re(r"nvidia-peermem"), N_("the NVIDIA driver's GPUDirect RDMA peer-memory module"),
     "NVIDIA GPUDirect RDMA documentation (https://docs.nvidia.com/cuda/gpudirect-rdma/): nvidia-peermem, shipped with "
     "the driver since R470, lets the HCA reach GPU memory"),
    (lazy_re(r"gdrcopy|gdrdrv"), N_("GDRCopy's gdrdrv kernel module, for GPUDirect RDMA copies by NVSHMEM and UCX"),
     "NVIDIA GDRCopy README (https://github.com/NVIDIA/gdrcopy): the packages load gdrdrv with their service"),
    (lazy_re(r"openibd"), N_("the MLNX_OFED / DOCA-OFED InfiniBand and RoCE driver stack"),
     "NVIDIA MLNX_OFED documentation, Installation Related Issues (https://docs.nvidia.com/networking/display/"
     "mlnxofedv24100700/Installation+Related+Issues): the openibd service loads the driver and can fail to start"),
    (lazy_re(r"^rdma(?:-load-modules@.*|-hw|-ndd)?\.service$|^ibacm|^opensm|^rdma"), N_("the RDMA stack: rdma-core's "
     "rdma services or the InfiniBand subnet manager"), "rdma-core (https://github.com/linux-rdma/rdma-core): the rdma "
     "services load the RDMA kernel modules; opensm is the InfiniBand subnet manager"),
    (lazy_re(r"^mlnx|^mst\.service$"), N_("an NVIDIA/Mellanox networking service"), "NVIDIA MLNX_OFED documentation "
     "(https://docs.nvidia.com/networking/display/mlnxofedv24100700/Installation+Related+Issues)"),
    (_MONITORING_UNIT, N_("a GPU metrics exporter: monitoring only, the GPUs work without it"),
     "Prometheus exporters (https://prometheus.io/docs/instrumenting/exporters/); NVIDIA dcgm-exporter "
     "(https://github.com/NVIDIA/dcgm-exporter): it exposes GPU metrics for Prometheus"),
    (lazy_re(r"^nvidia|^nv-|dcgm"), N_("an NVIDIA GPU driver-stack service"), SRC_DCGM),
)
"""Units of the GPU / RDMA stack a GPU cluster node needs running (pattern on the unit name, what it is, its public
documentation): one of them not running warns; any other unit not running stays unknown."""
_UNIT_FAIL_LINE = lazy_re(r"\bfail(?:ed|ure|s)?\b|\berror\b|\bFATAL\b|denied|status=[1-9]\d*|code=(?:killed|dumped)"
                             r"|\bKilled\b|core-dump|not found|No such file|cannot|could not|Invalid argument", re.I)


def _stack_unit(name: str) -> tuple[str, str] | None:
    for rx, what, src in STACK_UNITS:
        if rx.search(name):
            return what, src
    return None


def judge_unit_status(u: Unit) -> list[Finding]:
    """``driver.service``: one unit of ``systemctl status`` other than the three the driver stage reads itself (see
    :data:`SRC_SYSTEMD`). ``active (running|exited)`` with no failure in its lines passes naming the unit (with failure
    lines in its journal tail it warns); ``failed``, a Result other than success, or an auto-restart loop fails quoting
    the journal; a triggered unit (``TriggeredBy:`` a .path or .timer) inactive after its main process exited 0 passes;
    not running (``inactive (dead)``), masked or not found warns for a unit of the GPU / RDMA stack
    (:data:`STACK_UNITS`) and is unknown for any other; a state in transition (activating, deactivating) is unknown."""
    stack = _stack_unit(u.name)
    what: str = Msg("{name} ({desc})", name=u.name, desc=Msg.plain(stack[0])) if stack else u.name
    src = SRC_SYSTEMD + (f"; {stack[1]}" if stack else "")
    ev = tuple(u.lines[:6]) + tuple(u.log[-4:])
    fail_lines = [ln for ln in u.log + [x for x in u.lines if x.startswith(("Process:", "Main PID:"))]
                  if _UNIT_FAIL_LINE.search(ln) and "status=0/SUCCESS" not in ln]
    journal = f"`journalctl -u {u.name} -b --no-pager`"
    if not u.exists or u.load == "masked":
        why: str = (Msg('is masked (it cannot be started)') if u.load == 'masked' else Msg('is not installed (no such unit)'))
        return [Finding("driver.service", Verdict.WARN if stack else Verdict.UNKNOWN, Msg("{what} {why}", what=what, why=why), "host", ev,
                        (Msg('Install the package that provides {name}, or `sudo systemctl unmask {name}`, then `sudo systemctl enable --now {name}`', name=u.name) + (Msg(' (or confirm the node uses another unit for it: nvidia-peermem replaces nv_peer_mem since driver R470)') if 'peer' in u.name else '') + '.'),
                        src)]
    failed = (u.active == "failed" or u.result not in ("", "success") or "auto-restart" in u.sub)
    if failed:
        # the daemon's own words first, then systemd's, then the Process: line's exit status
        own = [ln for ln in fail_lines if ln in u.log and not re.search(r"systemd\[\d+\]:", ln)]
        why = (own or [ln for ln in fail_lines if ln in u.log] or fail_lines or [""])[-1]
        monitoring = bool(_MONITORING_UNIT.search(u.name))
        return [Finding("driver.service", Verdict.WARN if monitoring else Verdict.FAIL, (Msg('{what} failed ({value}', what=what, value=u.result or u.active) + (f', {u.sub}' if u.sub and u.sub != 'failed' else '') + ')' + (f': {why}' if why else '')),
                        "host", ev + tuple(x for x in fail_lines[-3:] if x not in ev),
                        Msg("Read {journal} for why it failed, fix that, then `sudo systemctl restart {name}`.", journal=journal, name=u.name), src)]
    if u.active == "active":
        kind = {"running": "running", "exited": "exited: its start command ran and succeeded"}.get(u.sub, u.sub)
        ok = [ln for ln in u.log if re.search(r"\bOK\b|Started |Finished |succeeded", ln)]
        if fail_lines:
            return [Finding("driver.service", Verdict.WARN, Msg("{what} is active ({kind}) but its journal shows a failure: {a1}", what=what, kind=kind, a1=fail_lines[-1]), "host", ev + tuple(x for x in fail_lines[-2:] if x not in ev),
                            Msg("Read {journal}: a unit that failed and was started again may fail again.", journal=journal), src)]
        said = (Msg("; its log says '{split}'", split=ok[-1].split(': ', 1)[-1]) if ok else '')
        return [Finding("driver.service", Verdict.PASS, Msg("{what} is active ({kind}){said}", what=what, kind=kind, said=said), "host", ev, "", src)]
    ran_ok = [x for x in u.lines if x.startswith("Main PID:") and "code=exited, status=0/SUCCESS" in x]
    if u.active == "inactive" and ran_ok and any(x.startswith("TriggeredBy:") for x in u.lines):
        # a unit started by a .path or .timer unit that ran and exited 0 (nvidia-cdi-refresh.service, a oneshot: held-out
        # round 301): inactive (dead) is its resting state until the trigger fires again
        return [Finding("driver.service", Verdict.PASS,
                        Msg("{what} ran when its trigger fired and exited successfully ({line}); inactive until it fires "
                            "again", what=what, line=ran_ok[0]), "host", ev, "", src)]
    if u.active == "inactive":
        v = Verdict.WARN if stack else Verdict.UNKNOWN
        return [Finding("driver.service", v, (Msg('{what} is not running ({active}', what=what, active=u.active) + (f', {u.sub}' if u.sub else '') + ')' + ('' if stack else Msg(": whether this node needs it is not bringup's to say"))), "host", ev,
                        Msg("`sudo systemctl enable --now {name}` if this node needs it; {journal} says why it stopped.", name=u.name, journal=journal),
                        src)]
    return [Finding("driver.service", Verdict.UNKNOWN, (Msg('{what} is {value}', what=what, value=u.active or 'in an unknown state') + (f' ({u.sub})' if u.sub else '') + Msg(': not settled')), "host", ev,
                    Msg("Run `systemctl status {name}` again in a few seconds; {journal} shows what it is doing.", name=u.name, journal=journal), src)]


def judge_service_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge for ``systemctl status`` of nvidia-fabricmanager / nvidia-persistenced / nvidia-dcgm (their own
    rules), and of any other unit (:func:`judge_unit_status`)."""
    units = parse_systemctl_status(text)
    mism = [m for m in (FM_MISMATCH.search(ln) for ln in text.splitlines()) if m]
    findings: list[Finding] = []
    for name, u in units.units.items():
        if "persistenced" in name:
            findings += judge_persistenced_unit(u, "systemctl status")
        elif "fabricmanager" in name:
            ev = tuple(u.lines[:6]) + tuple(u.log[-6:])
            # systemctl start/restart answering "Job for nvidia-fabricmanager.service failed because the control process
            # exited with error code": the start failed, whatever state the unit is in a moment later
            job_failed = [ln.strip() for ln in text.splitlines()
                          if re.search(r"\bJob for nvidia-fabricmanager(?:\.service)? failed\b", ln)]
            if job_failed:
                ev = ev + (job_failed[0],)
            if mism:
                m = mism[0]
                findings.append(Finding("driver.fabric_manager", Verdict.FAIL,
                                        Msg("Fabric Manager refuses to start: it is {group} but the driver is {group2} (they must be "
                                            "exactly the same version)", group=m.group('fm'), group2=m.group('drv')), "host",
                                        ev + (m.group(0),), Msg("Install Fabric Manager {group} (the driver's exact version) or move the driver to the "
                                                                "Fabric Manager's version; reboot if the driver changed.", group=m.group('drv')), SRC_FM))
            elif not u.exists:
                findings.append(Finding("driver.fabric_manager", Verdict.WARN, "nvidia-fabricmanager is not installed "
                                        "(needed on NVSwitch systems only)", "host", ev,
                                        "On HGX/DGX NVSwitch boards install nvidia-fabricmanager-<branch> at the driver's "
                                        "version.", SRC_FM))
            elif u.active == "active":
                from wizard.rules.fabricmanager import judge_fm_journal

                findings.append(Finding("driver.fabric_manager", Verdict.PASS, "nvidia-fabricmanager is active (running)",
                                        "host", ev, "", SRC_FM))
                findings += judge_fm_journal(list(u.log))
            elif u.active == "failed" or u.result not in ("", "success") or job_failed:
                why = next((ln for ln in u.log if re.search(r"fail|error|NV_WARN|NV_ERR", ln, re.I)), "") or (
                    job_failed[0] if job_failed else "")
                findings.append(Finding("driver.fabric_manager", Verdict.FAIL,
                                        (Msg('nvidia-fabricmanager failed ({value})', value=u.result or u.active) + (f': {why}' if why else '')),
                                        "host", ev, "Read `journalctl -u nvidia-fabricmanager`: a driver/Fabric Manager "
                                        "version mismatch, NV_WARN_NOTHING_TO_DO (no NVSwitch, or on NVLink 5 systems no "
                                        "NVLSM / ib_umad) or an NVSwitch error stops it; then `sudo systemctl restart "
                                        "nvidia-fabricmanager`.", SRC_FM))
            elif any(re.search(r"configured all the available NVSwitches|Detected (?:Pre-)?NVL\d system", ln) for ln in u.log):
                # its own log says this is an NVSwitch system (it configured the switches before it stopped)
                findings.append(Finding("driver.fabric_manager", Verdict.FAIL, Msg("nvidia-fabricmanager is {a1} on an NVSwitch system (its log shows it configured the "
                                                                                   "NVSwitches): the GPUs cannot use NVLink, and CUDA fails to initialise (error 802) until "
                                                                                   "it runs", a1=u.active or 'not running'), "host", ev,
                                        "Read `journalctl -u nvidia-fabricmanager` for why it stopped, then `sudo systemctl "
                                        "enable --now nvidia-fabricmanager` and check `nvidia-smi -q | grep -A2 Fabric` "
                                        "(State Completed, Status Success).", SRC_FM))
            else:
                findings.append(Finding("driver.fabric_manager", Verdict.WARN, Msg("nvidia-fabricmanager is {a1} (NVSwitch systems need it running)", a1=u.active or 'not running'), "host", ev,
                                        "`sudo systemctl enable --now nvidia-fabricmanager` on NVSwitch systems.", SRC_FM))
        elif re.fullmatch(r"(?:nvidia-)?dcgm\.service", name):
            v = Verdict.PASS if u.active == "active" else Verdict.WARN
            findings.append(Finding("driver.dcgm", v, Msg("nvidia-dcgm is {a1}", a1=u.active or 'unknown'), "host", tuple(u.lines[:6]),
                                    ('' if v is Verdict.PASS else Msg('`sudo systemctl --now enable nvidia-dcgm`')), SRC_DCGM))
        else:
            findings += judge_unit_status(u)
    # the module itself did not load (udev's or systemd-modules-load's words in the same journal): why the units fail
    inserts = [ln.strip() for ln in text.splitlines() if INSERT_ERROR.search(ln)]
    if inserts and units.units:
        findings.append(insert_failure(inserts[-1]))
    if not findings:
        if mism:
            m = mism[0]
            return [Finding("driver.fabric_manager", Verdict.FAIL, Msg("Fabric Manager {group} does not match the driver {group2} (version mismatch): it refuses to start", group=m.group('fm'), group2=m.group('drv')), "host", (m.group(0),),
                            Msg("Install Fabric Manager {group}.", group=m.group('drv')), SRC_FM)]
        start = fm_start_failure(text)
        if start is not None:
            return [start]
        return _unreadable("driver.fabric_manager", text, "the systemctl status output", SRC_FM)
    return findings


def fm_start_failure(text: str) -> Finding | None:
    """Fabric Manager (or NVLSM, which it starts on NVLink 5 systems) refusing to start in its own words
    (:data:`wizard.parsers.packages.FM_START_FAILURE`): a fail naming the cause, or None. Without Fabric Manager an
    NVSwitch system's GPUs cannot use NVLink and CUDA does not initialise (error 802)."""
    lines = [ln.strip() for ln in text.splitlines() if FM_START_FAILURE.search(ln)]
    if not lines:
        return None
    m = FM_START_FAILURE.search(lines[0])
    assert m is not None
    ev = tuple(dict.fromkeys(lines[:4]))
    if m.group("umad") or any("ib_umad" in ln for ln in lines):
        who = (Msg("The NVLink Subnet Manager (NVLSM, which Fabric Manager runs on NVLink 5 systems) cannot start")
               if "nvlsm" in lines[0].lower() else Msg("Fabric Manager cannot start"))
        return Finding("driver.fabric_manager", Verdict.FAIL,
                       Msg("{who}: the ib_umad kernel module is not loaded ('{line}'); on NVLink 5 systems (HGX B200, "
                           "GB200) Fabric Manager and NVLSM reach the NVSwitches through it, so the GPUs get no NVLink "
                           "fabric and CUDA fails to initialise", who=who, line=lines[0][:200]), "host", ev,
                       Msg("Load it (`sudo modprobe ib_umad`) and have it load at every boot (`echo ib_umad | sudo tee "
                           "/etc/modules-load.d/ib_umad.conf`; on an immutable OS such as Talos, in the machine "
                           "configuration's kernel modules), then restart nvidia-fabricmanager and check "
                           "`nvidia-smi -q | grep -A2 -i fabric` (State Completed, Status Success)."), SRC_FM)
    if m.group("item"):
        return Finding("driver.fabric_manager", Verdict.FAIL,
                       Msg("Fabric Manager cannot start: its configuration item {item} has an invalid value ('{line}')",
                           item=m.group("item"), line=lines[0][:200]), "host", ev,
                       Msg("Fix {item} in the Fabric Manager configuration (/usr/share/nvidia/nvswitch/fabricmanager.cfg, "
                           "or the values a container or OS extension passes it) against the configuration options in "
                           "the Fabric Manager User Guide, then restart nvidia-fabricmanager and check `nvidia-smi -q | "
                           "grep -A2 -i fabric` (State Completed, Status Success).", item=m.group("item")), SRC_FM)
    return Finding("driver.fabric_manager", Verdict.FAIL,
                   Msg("Fabric Manager cannot start: '{line}'", line=lines[0][:200]), "host", ev,
                   Msg("Read `journalctl -u nvidia-fabricmanager` (and /var/log/fabricmanager.log) for the reason it "
                       "gives before this line: a driver/Fabric Manager version mismatch, a missing kernel module or "
                       "a configuration error; fix it, then restart nvidia-fabricmanager and check `nvidia-smi -q | "
                       "grep -A2 -i fabric` (State Completed, Status Success)."), SRC_FM)


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
        return [Finding("driver.fabric_manager", Verdict.UNKNOWN, Msg("the Fabric Manager version is not readable ({line})", line=fm.line),
                        "host", (fm.line,), "Paste the unedited `nv-fabricmanager --version` output.", SRC_FM)]
    drv, dline = _driver_in_text(text)
    if not drv:
        return [Finding("driver.fabric_manager", Verdict.UNKNOWN, Msg("Fabric Manager {version}: this text shows no driver version to compare with (they must be "
                                                                      "exactly equal)", version=fm.version), "host", (fm.line,),
                        Msg("Compare with `cat /proc/driver/nvidia/version`: it must read {version}.", version=fm.version), SRC_FM)]
    if drv != fm.version:
        return [Finding("driver.fabric_manager", Verdict.FAIL, Msg("Fabric Manager {version} but driver {drv}: they must be exactly the same version", version=fm.version, drv=drv), "host", (fm.line, dline),
                        Msg("Install Fabric Manager {drv}, or move the driver to {version}.", drv=drv, version=fm.version), SRC_FM)]
    return [Finding("driver.fabric_manager", Verdict.PASS, Msg("Fabric Manager {version} = driver {drv}", version=fm.version, drv=drv), "host",
                    (fm.line, dline), "", SRC_FM)]


def judge_modinfo_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge for ``modinfo nvidia``: ``driver.kernel_module`` (version, flavour, kernel, signature)."""
    m = parse_modinfo(text)
    if m.not_found:
        return [Finding("driver.kernel_module", Verdict.FAIL, "no nvidia module exists for this kernel", "host",
                        (m.not_found,), "Install the driver's module for the running kernel (DKMS with the kernel's "
                        "headers, or the precompiled package), then `sudo modprobe nvidia`.", SRC_DKMS)]
    if m.insert_error:
        return [insert_failure(m.insert_error)]
    if not (m.version or m.filename):
        return _unreadable("driver.kernel_module", text, "modinfo output", SRC_DKMS)
    ev = tuple(m.lines[k] for k in ("filename", "version", "license", "vermagic", "signer", "sig_id") if k in m.lines)
    parts = [Msg("nvidia module {version}", version=m.version or "?")]
    if m.flavour:
        parts.append(Msg("{flavour} flavour (license {license})", flavour=m.flavour, license=m.license))
    if m.kernel:
        parts.append(Msg("for kernel {kernel}", kernel=m.kernel))
    if m.signed or len(m.lines) >= 4:  # a `modinfo nvidia | grep filename` excerpt says nothing about a signature
        parts.append(Msg("signed") if m.signed else Msg("unsigned (will not load with Secure Boot on)"))
    return [Finding("driver.kernel_module", Verdict.PASS, joined(", ", parts), "host", ev, "",
                    f"{SRC_DKMS}; {SRC_FLAVOUR}")]


SRC_MODSIGN = ("Linux kernel documentation, 'Kernel module signing facility' (https://docs.kernel.org/admin-guide/"
               "module-signing.html): with Secure Boot / module.sig_enforce an unsigned or unknown-key module is refused "
               "('Key was rejected by service', 'Required key not available'); NVIDIA driver README, 'Installing the "
               "NVIDIA Driver' (Secure Boot and module signing, https://download.nvidia.com/XFree86/Linux-x86_64/latest/"
               "README/installdriver.html)")
_INSERT_CAUSES: tuple[tuple[str, Any, str], ...] = (
    (r"Key was rejected by service|Required key not available|Operation not permitted",
     Msg("Secure Boot refuses it: the module is not signed with a key the firmware trusts"),
     N_("Enroll the key DKMS signs with (`sudo mokutil --import /var/lib/dkms/mok.pub`, then reboot and confirm in the "
     "blue MOK manager screen), or install the distribution's signed precompiled driver; disabling Secure Boot in the "
     "BIOS also works where the site allows it. Then `sudo modprobe nvidia`.")),
    (r"Cannot allocate memory",
     Msg("the kernel could not allocate the memory the module needs to load (ENOMEM)"),
     N_("Read `dmesg` at the time of the failure for the allocation that failed, then load it again (`sudo modprobe "
        "<module>`); if it fails again at boot, look for what takes memory that early (a large hugepage reservation on "
        "the kernel command line) and update the driver.")),
    (r"No such device",
     Msg("the module found no GPU it supports: no NVIDIA GPU on the PCI bus, a GPU this driver branch does not support "
         "(a legacy GPU needs a legacy branch; Blackwell needs the open modules), or another driver holds it"),
     N_("Check `lspci -nn -d 10de:` (is the GPU there?), `dmesg | grep -i -e nvrm -e nouveau` (the kernel's reason) and "
        "that the driver branch supports this GPU.")),
    (r"Unknown symbol|Invalid module format|Exec format error|Invalid argument",
     Msg("the module does not fit the running kernel (built for another kernel, or a mixed install)"),
     N_("Rebuild it for the running kernel: install the headers for `uname -r` and run `sudo dkms autoinstall` (or "
        "reinstall the driver package), then check `dmesg | tail` for the kernel's reason.")),
)


def insert_failure(line: str) -> Finding:
    """``driver.kernel_module`` FAIL for modprobe / insmod refusing the nvidia module, naming the cause its reason
    text gives (Secure Boot key, no supported device, a module built for another kernel)."""
    why, fix = next(((w, f) for rx, w, f in _INSERT_CAUSES if re.search(rx, line, re.I)),
                    (N_("the kernel refused it"),
                     N_("Read `dmesg | tail` right after `sudo modprobe nvidia`: the kernel says why.")))
    return Finding("driver.kernel_module", Verdict.FAIL, Msg("the nvidia kernel module does not load: {why}", why=why), "host",
                   (line,), fix, f"{SRC_MODSIGN}; {SRC_DKMS}")


# ------------------------------------------------------------------ actions: install
