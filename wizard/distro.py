"""Distribution families and their package managers, from os-release(5) ``ID``/``ID_LIKE``.

An unknown distribution yields ``None``: callers then give manual instructions instead of
guessing a command.
"""

from __future__ import annotations

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
