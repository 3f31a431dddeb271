"""Driver install planner: which repository, packages and commands install the NVIDIA driver (and its
follow-ups: nvidia-persistenced, Fabric Manager + NSCQ, the CUDA toolkit, DCGM, the container toolkit)
on this distribution for the chosen branch and flavour, and when to refuse (an existing driver from
another source, an unlisted OS, mixing repositories).

Each ``resolve_*`` turns an :class:`~wizard.actions.ActionContext` (the host's probe outputs and the
plan) into a :class:`~wizard.actions.Resolved` (operations, or a manual instruction). Routes and
package names per distribution live in ``assets/driver_install_routes.csv`` and
``assets/driver_install.csv`` (each row with its source). Planners read parsers, facts and the data of
:mod:`wizard.install.catalog` / :mod:`wizard.install.packages`, never a rule.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from wizard.actions import ActionContext, Resolved
from wizard.data import table
from wizard.i18n import Msg
from wizard.distro import (
    APT_NONINTERACTIVE_ENV, PackageManager, install_argv, nvidia_repo_arch, modules_unsupported, package_manager,
    packaged_kernel, version_major,
    version_matches,
)
from wizard.facts import facts_of
from wizard.install.catalog import (
    MATRIX_URL, SRC_FLAVOUR, SRC_FM, SRC_GUIDE, Branch, Gpu, GpuSet, arch_rules, gpus_of, recommend,
    running_kernel, secure_boot_state, today_of,
)
from wizard.install.packages import DriverState, driver_state, packages_of
from wizard.parsers.host import OsRelease, parse_os_release
from wizard.parsers.cuda import version_tuple
from wizard.parsers.packages import Package, PackageList, branch_of
from wizard.common import lazy_re

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
                   "(https://documentation.ubuntu.com/server/how-to/graphics/; canonical/ubuntu-server-documentation)")
SRC_TOOLKIT_CAP = ("NVIDIA blog, 'Navigating GPU Architecture Support: A Guide for NVIDIA CUDA Developers' "
                   "(https://developer.nvidia.com/blog/navigating-gpu-architecture-support-a-guide-for-nvidia-cuda-developers): "
                   "CUDA 13.0 removed compilation for compute capability < 7.5 (Maxwell, Pascal, Volta): stay on the CUDA "
                   "12.9 toolkit with R580")

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
        h.os = facts_of(out).parse_text("os_release", parse_os_release)
        assert h.os is not None
        h.pm = package_manager(h.os)
        h.route, h.repo, h.route_source = _route_for(h.os)
    h.kernel, _ = running_kernel(out)
    mo = out.get("driver_uname_m")
    if mo is not None and mo.ok and mo.text.strip():
        h.machine = mo.text.strip().split()[0]
    h.arch = nvidia_repo_arch(h.machine)
    h.secure_boot, _ = secure_boot_state(out)
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
package dependency"; a real Rocky 9 install of nvidia-open used the same (tests/data/PROVENANCE.md)."""


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
                f"run this action again. Sources: {SRC_CONFLICT}; NVIDIA driver README, 'Registering the NVIDIA Kernel Module "
                "with DKMS' (runfile installs sit outside the package database).")
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


def _kernel_refusal(ctx: ActionContext, h: HostFacts) -> Resolved | None:
    """Why the driver cannot be installed on the running kernel, as os.kernel_headers says it (walk 21: the install
    was offered, apt sources and all, on a kernel the OS stage had failed): a kernel without loadable-module support
    (no /proc/modules, proc(5)) cannot take the NVIDIA modules; a Debian/Ubuntu kernel that is not the distribution's
    own has no linux-headers package for DKMS (:func:`wizard.distro.packaged_kernel`). None when neither holds."""
    if modules_unsupported(ctx.outputs.get("modules")):
        return Resolved(manual=Msg("kernel {kernel} cannot load modules (no /proc/modules: it was built without "
                                   "loadable module support), so the NVIDIA kernel modules cannot run on it "
                                   "(os.kernel_headers fails for the same reason). Boot a distribution kernel (or one "
                                   "built with CONFIG_MODULES=y) first; then this action installs the driver.",
                                   kernel=h.kernel))
    distro = h.os.id if h.os is not None else ""
    # (Ubuntu's archive route says itself how to build with DKMS for a kernel outside its archive)
    if h.route == "nvidia-apt" and not packaged_kernel(distro, h.kernel):
        return Resolved(manual=Msg("kernel {kernel} is not one of {distro}'s packaged kernels, so no "
                                   "linux-headers-{kernel} package exists and DKMS cannot build the NVIDIA module for "
                                   "it (os.kernel_headers says the same). Boot a distribution kernel and install its "
                                   "headers first; then this action installs the driver.", kernel=h.kernel,
                                   distro=h.os.pretty_name if h.os is not None else distro))
    return None


def resolve_driver_install(ctx: ActionContext) -> Resolved:
    """The install commands for the recommended branch/flavour on this distribution (see
    assets/driver_install*.csv for each package name's source). Manual instructions instead when the
    distribution release is not listed for the branch (assets/os_support.csv), when a driver from another
    source, branch or flavour (or a runfile driver) is installed, or when bringup has no sourced route."""
    h = host_facts(ctx)
    bad = _need_basics(h, "driver installation") or _kernel_refusal(ctx, h)
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


UBUNTU_KERNEL = lazy_re(r"\d+\.\d+\.\d+-\d+-[a-z][a-z0-9]*(?:-[a-z0-9]+)*")
"""``uname -r`` of an Ubuntu archive kernel (``6.8.0-31-generic``, ``6.8.0-1015-aws``): Canonical publishes
linux-modules-nvidia-<branch>-server[-open]-<that release> for them (Ubuntu Server docs, Select NVIDIA driver
packages manually); other kernels need DKMS."""


def _driver_for_followup(h: HostFacts) -> tuple[str, str]:
    v = h.driver.loaded or h.driver.nvml or h.driver.packaged.version
    return v, branch_of(v)


def resolve_persistenced(ctx: ActionContext) -> Resolved:
    """``systemctl enable --now nvidia-persistenced`` (NVIDIA Driver Persistence documentation); refused with what to
    do first when no NVIDIA driver is installed (the daemon ships with it: walk 37 #2 offered to start it on a machine
    with no driver)."""
    h = host_facts(ctx)
    if not _driver_for_followup(h)[1]:
        return Resolved(manual=Msg("install the NVIDIA driver first (driver.install): nvidia-persistenced and its "
                                   "service ship with the driver."))
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
        return Resolved(manual=Msg("install the NVIDIA driver first (driver.install): Fabric Manager must match its "
                                   "exact version."))
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
    rules = arch_rules()
    caps = [(rules[a].max_cuda_toolkit, a) for a in h.gpus.architectures if a in rules and rules[a].max_cuda_toolkit]
    if not caps:
        return "", []
    low = min(version_tuple(c) for c, _ in caps)
    mm = next(c for c, _ in caps if version_tuple(c) == low)
    return mm, sorted({a for c, a in caps if version_tuple(c) == low})


def _followup_cuda(h: HostFacts) -> tuple[str, str, str]:
    """(CUDA major.minor to install, the driver's own CUDA, a note when the GPUs' cap lowered it)."""
    from wizard import cuda_table as chain  # driver_max_cuda: the CUDA/driver table lookup lives there

    ver, _br = _driver_for_followup(h)
    mm = h.driver.nvml_cuda or (chain.driver_max_cuda(ver) if ver else "")
    if not mm:
        return "", "", ""
    cap, archs = toolkit_cap(h)
    if cap and version_tuple(cap) < version_tuple(mm):
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
    Pascal and Volta GPUs (NVIDIA blog 'Navigating GPU Architecture Support'). Manual instructions on Ubuntu's archive driver (no repository mixing)."""
    h = host_facts(ctx)
    bad = _need_basics(h, "CUDA toolkit installation")
    if bad is not None:
        return bad
    mm, drv_mm, note = _followup_cuda(h)
    if not mm:
        return Resolved(manual=Msg("install the NVIDIA driver first: the toolkit version follows the CUDA the driver "
                                   "runs."))
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
        return Resolved(manual=Msg("install the NVIDIA driver first: DCGM's package follows the driver's CUDA major "
                                   "version."))
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
