"""Distribution families and their package managers, from os-release(5) ``ID``/``ID_LIKE``.

An unknown distribution yields ``None``: callers then give manual instructions instead of
guessing a command.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wizard.parsers.host import OsRelease


@dataclass(frozen=True)
class PackageManager:
    family: str  # "debian" | "rhel" | "suse"
    name: str

    def install(self, *packages: str) -> tuple[list[list[str]], dict[str, str]]:
        """argv lists and environment for a non-interactive install of ``packages``."""
        if self.family == "debian":
            return ([["apt-get", "update"],
                     ["apt-get", "install", "-y", "--no-install-recommends",
                      "-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold",
                      *packages]],
                    {"DEBIAN_FRONTEND": "noninteractive"})
        if self.family == "rhel":
            return [["dnf", "install", "-y", *packages]], {}
        if self.family == "suse":
            return [["zypper", "--non-interactive", "install", *packages]], {}
        raise ValueError(self.family)  # pragma: no cover

    def initramfs(self) -> list[str]:
        """The command that rebuilds the initramfs for the installed kernels."""
        if self.family == "debian":
            return ["update-initramfs", "-u", "-k", "all"]
        return ["dracut", "--force", "--regenerate-all"]


_FAMILIES = {
    "debian": ("debian", "apt-get"), "ubuntu": ("debian", "apt-get"),
    "rhel": ("rhel", "dnf"), "fedora": ("rhel", "dnf"), "centos": ("rhel", "dnf"),
    "rocky": ("rhel", "dnf"), "almalinux": ("rhel", "dnf"), "ol": ("rhel", "dnf"),
    "amzn": ("rhel", "dnf"), "azurelinux": ("rhel", "dnf"),
    "sles": ("suse", "zypper"), "suse": ("suse", "zypper"), "opensuse": ("suse", "zypper"),
    "opensuse-leap": ("suse", "zypper"),
}


def package_manager(r: OsRelease) -> PackageManager | None:
    """The package manager for this OS, or ``None`` when the distribution is not one we know."""
    for candidate in [r.id, *r.id_like]:
        if candidate in _FAMILIES:
            fam, name = _FAMILIES[candidate]
            return PackageManager(fam, name)
    return None


# ------------------------------------------------------------------ helpers for vendor repositories
# (added for the driver & CUDA stage; the functions above are unchanged)

APT_NONINTERACTIVE_ENV = {"DEBIAN_FRONTEND": "noninteractive"}
"""apt/dpkg never prompt (debconf(7) noninteractive frontend)."""

APT_CONF_OPTIONS = ("-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold")
"""Keep changed configuration files without asking (dpkg(1) --force-confdef/--force-confold)."""


def install_argv(pm: PackageManager, packages: "list[str] | tuple[str, ...]", recommends: bool | None = None) -> list[str]:
    """One non-interactive install command for ``packages`` (no ``apt-get update`` before it).

    ``recommends``: ``True`` adds apt's ``--install-recommends`` / dnf's ``--setopt=install_weak_deps=True``
    (DCGM's installation guide asks for recommends), ``False`` apt's ``--no-install-recommends``, ``None``
    leaves the distribution default (what vendor guides that say nothing about it get).
    """
    pkgs = list(packages)
    if pm.family == "debian":
        extra = ["--install-recommends"] if recommends is True else (["--no-install-recommends"] if recommends is False else [])
        return ["apt-get", "install", "-y", *extra, *APT_CONF_OPTIONS, *pkgs]
    if pm.family == "rhel":
        extra = ["--setopt=install_weak_deps=True"] if recommends is True else []
        return ["dnf", "install", "-y", *extra, *pkgs]
    if pm.family == "suse":
        return ["zypper", "--non-interactive", "install", *pkgs]
    raise ValueError(pm.family)  # pragma: no cover


def version_major(r: OsRelease) -> str:
    """``VERSION_ID`` up to the first dot ("9.4" -> "9", "24.04" -> "24"); "" when absent."""
    return (r.version_id or "").split(".")[0]


def version_matches(version_id: str, wanted: str) -> bool:
    """``VERSION_ID`` "9.4" matches "9" and "9.4"; "24.04" matches "24.04" but not "24.10"."""
    v = (version_id or "").strip()
    return bool(v) and (v == wanted or v.startswith(wanted + "."))


NVIDIA_REPO_ARCH = {"x86_64": "x86_64", "aarch64": "sbsa", "arm64": "sbsa"}
"""``uname -m`` -> the architecture directory of NVIDIA's CUDA repositories (``sbsa`` = Arm servers;
NVIDIA driver installation guide, "$arch is x86_64 or sbsa")."""


def nvidia_repo_arch(machine: str) -> str | None:
    """NVIDIA repository architecture for ``uname -m``; ``None`` when NVIDIA publishes none."""
    return NVIDIA_REPO_ARCH.get((machine or "").strip())


def modules_unsupported(modules: object) -> bool:
    """Whether the ``modules`` probe's output (``/proc/modules``) shows a kernel built without loadable-module
    support: the file does not exist (proc(5)), so no NVIDIA kernel module can be loaded into it. Read by
    ``os.kernel_headers`` and by the driver install's refusal (one test for both)."""
    return modules is not None and not getattr(modules, "ok", True) and "no such file" in str(
        getattr(modules, "error", "")).lower()


DEBIAN_KERNEL_FLAVOURS = ("amd64", "arm64", "cloud-amd64", "cloud-arm64", "rt-amd64", "rt-arm64", "686", "686-pae")
"""The flavours Debian's own kernels end their release in (``6.1.0-47-amd64``; Debian linux source package, the
linux-image-<release>-<flavour> binaries)."""


def packaged_kernel(distro: str, release: str) -> bool:
    """Whether ``release`` (``uname -r``) is named as Debian's or Ubuntu's own kernels are (``6.1.0-47-amd64``,
    ``6.12.12+bpo-amd64``, ``6.8.0-45-generic``: an ABI number or a +suffix, then the flavour), so its headers package
    exists in the archive. Other distributions: True (not judged here)."""
    if distro == "debian":
        # 6.1.0-47-amd64 (stable), 6.12.12+bpo-amd64 (backports), 6.12.38+deb13-amd64 (trixie and later)
        return bool(re.fullmatch(r"\d+\.\d+\.\d+(?:-\d+|\+[a-z0-9.]+)-(?:"
                                 + "|".join(map(re.escape, DEBIAN_KERNEL_FLAVOURS)) + ")", release))
    if distro == "ubuntu":
        return bool(re.fullmatch(r"\d+\.\d+\.\d+-\d+-[a-z][a-z0-9-]*", release))
    return True
