"""Driver & CUDA install actions after the guidance review: CUDA 12.9 / DCGM cuda12 for compute capability
< 7.5, refusing to replace a driver from another source / branch / flavour or a runfile install (with the
removal commands), apt --no-remove, Fabric Manager / NSCQ names per route, Fabric Manager skip without a
GPU, Ubuntu's signed modules for the running kernel, idempotent zypper repository file, Debian contrib, no repository
mixing on Ubuntu's archive driver, and the install refusing distribution releases not listed for the branch.

Package listings in the dpkg-query probe's columns, real unless named synthetic_ (sources next to each):
* DEBIAN_OWN_535: a Debian user's ``dpkg -l`` of Debian's own nvidia-driver 535.183.06-2 (blog post, stored copy
  id 35209411949), a subset of its lines, columns trimmed to the probe's format.
* NVIDIA_REPO_595: a host on NVIDIA's Debian repository at 595.58.03-1 (stored copy id 59804962712), subset.
* RPMFUSION_580: ``rpm -qa`` lines of RPM Fusion's 580.105.08 packages on a Fedora 43 host (stored copy id
  29310029468), fed to the Rocky 9 route to exercise the other-packaging rule.
"""

from __future__ import annotations

from tests.probe_data import LOCAL_VM, collect_tree, text
from tests.test_driver_setup import (
    APT, APT_OPTS, NVRM_580, PUB, SLES_SP6, SYN, TODAY, argvs, ctx, ids, only, pci,
)
from wizard.install import catalog, driver as di
from wizard.rules import driver_install as ds
from wizard.model import Verdict
from wizard.parsers import packages as pk
from wizard.probes import ProbeOutput

DEBIAN_VM_OS = text(LOCAL_VM / "etc" / "os-release")
DEBIAN_13_OS = DEBIAN_VM_OS.replace('VERSION_ID="12"', 'VERSION_ID="13"').replace("12 (bookworm)", "13 (trixie)").replace(
    "bookworm", "trixie")
"""synthetic_: this VM's real Debian 12 os-release with the release fields of Debian 13 (no public Debian 13
os-release in the test data); R580 is not in bringup's Debian 13 rows."""

DEBIAN_OWN_535 = """\
ii  libnvidia-ml1:amd64 535.183.06-2 amd64
ii  nvidia-driver 535.183.06-2 amd64
ii  nvidia-kernel-dkms 535.183.06-2 amd64
ii  nvidia-persistenced 535.171.04-1 amd64
ii  nvidia-smi 535.183.06-2 amd64
"""
SYNTHETIC_DEBIAN_BOOKWORM_580 = """\
ii  nvidia-driver 580.95.05-1~deb12u1 amd64
ii  nvidia-open-kernel-dkms 580.95.05-1~deb12u1 amd64
ii  nvidia-smi 580.95.05-1~deb12u1 amd64
"""
"""synthetic_: Debian's own packages carry ``~deb12uN`` in bookworm; no public listing of a 580 build was found,
the version is made up to test the version rule (and nvidia-open-kernel-dkms is Debian's name for the open DKMS)."""
NVIDIA_REPO_595 = """\
ii  nvidia-driver 595.58.03-1 amd64
ii  nvidia-driver-cuda 595.58.03-1 amd64
ii  nvidia-kernel-dkms 595.58.03-1 amd64
ii  nvidia-persistenced 595.58.03-1 amd64
"""
SYNTHETIC_PIN_595 = "ii  nvidia-driver-pinning-595 595-1 all\n"
"""synthetic_: the pinning package's row (name from the driver installation guide; version made up)."""
RPMFUSION_580 = """\
nvidia-modprobe-580.105.08-1.fc43.x86_64
xorg-x11-drv-nvidia-cuda-libs-580.105.08-1.fc43.x86_64
nvidia-persistenced-580.105.08-1.fc43.x86_64
xorg-x11-drv-nvidia-libs-580.105.08-1.fc43.x86_64
akmod-nvidia-580.105.08-1.fc43.x86_64
xorg-x11-drv-nvidia-cuda-580.105.08-1.fc43.x86_64
xorg-x11-drv-nvidia-580.105.08-1.fc43.x86_64
"""
NVRM_595 = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  595.58.03  Release Build  (dvs-builder@U22)  Mon Mar 2 2026\n"
"""synthetic_: the real 580.95.05 NVRM line of test_driver_setup with the 595.58.03 version (R595 follow-ups)."""
SERVER_580 = SYN / "synthetic_dpkg-query__ubuntu2404-580-server-open-precompiled-fm-older.txt"
DEBIAN_NVIDIA_580 = SYN / "synthetic_dpkg-query__debian12-nvidia-repo-580-open-complete.txt"


# ------------------------------------------------------------------ problem 1: compute capability < 7.5


def test_volta_toolkit_is_capped_at_cuda_12_9_and_dcgm_at_cuda12():
    v100 = ctx("", "6.1.0-18-amd64", gpus=("1db4",), nvrm=NVRM_580, os_text=DEBIAN_VM_OS)
    t = argvs(di.resolve_cuda_toolkit(v100))
    assert t[-1] == ["apt-get", "install", "-y", *APT, "cuda-toolkit-12-9"]
    d = argvs(di.resolve_dcgm(v100))
    assert ["apt-get", "install", "-y", "--no-remove", "--install-recommends", *APT_OPTS,
            "datacenter-gpu-manager-4-cuda12"] in d
    assert di.toolkit_cap(di.host_facts(v100)) == ("12.9", ["Volta"])
    # Pascal on Rocky: the same cap; Hopper keeps the driver's CUDA 13.0
    p100 = argvs(di.resolve_dcgm(ctx("os-release__rocky-9.3.txt", "5.14.0-427.el9.x86_64", gpus=("15f8",), nvrm=NVRM_580)))
    assert ["dnf", "install", "-y", "--setopt=install_weak_deps=True", "datacenter-gpu-manager-4-cuda12"] in p100
    h100 = argvs(di.resolve_cuda_toolkit(ctx("", "6.1.0-18-amd64", nvrm=NVRM_580, os_text=DEBIAN_VM_OS)))
    assert h100[-1][-1] == "cuda-toolkit-13-0"


def test_architecture_caps_are_sourced_data():
    rules = catalog.arch_rules()
    assert {a for a, r in rules.items() if r.max_cuda_toolkit == "12.9"} == {"Maxwell", "Pascal", "Volta"}
    assert all("knowledge.md 1.7" in rules[a].source for a in ("Maxwell", "Pascal", "Volta"))
    assert rules["Hopper"].max_cuda_toolkit == "" and rules["Turing"].max_cuda_toolkit == ""


# ------------------------------------------------------------------ problem 2: do not replace another driver


def test_ubuntu_desktop_driver_of_another_branch_is_refused_with_the_ubuntu_purge():
    r = di.resolve_driver_install(ctx("os-release__ubuntu-24.04.txt", "6.8.0-31-generic",
                                      dpkg=PUB / "dpkg-l__ubuntu2404-nvidia-driver-535-gtx1070.txt"))
    assert not r.ops and "another source or flavour" in r.manual
    assert "sudo apt --purge remove '*nvidia*535*'" in r.manual and "sudo apt autoremove" in r.manual
    assert "nvidia-dkms-535" in r.manual


def test_rerun_over_this_routes_own_driver_is_allowed():
    ok = di.resolve_driver_install(ctx("os-release__ubuntu-24.04.txt", "6.8.0-45-generic", dpkg=SERVER_580))
    assert ["ubuntu-drivers", "install", "--gpgpu", "nvidia:580-server-open"] in argvs(ok)
    deb = di.resolve_driver_install(ctx("", "6.1.0-18-amd64", dpkg=DEBIAN_NVIDIA_580, os_text=DEBIAN_VM_OS))
    a = argvs(deb)
    assert a[-1][-2:] == ["nvidia-driver-cuda", "nvidia-kernel-open-dkms"] and not any(x[0] == "wget" for x in a)


def test_other_flavour_of_the_same_branch_is_refused():
    # the installed 580 -server driver uses the open modules; a V100 box needs the proprietary ones
    r = di.resolve_driver_install(ctx("os-release__ubuntu-24.04.txt", "6.8.0-45-generic", dpkg=SERVER_580, gpus=("1db4",)))
    assert not r.ops and "open kernel modules" in r.manual and "proprietary kernel modules" in r.manual
    assert "'*nvidia*580*'" in r.manual


def test_runfile_driver_is_refused_with_nvidia_uninstall():
    runfile_550 = text(PUB / "proc-driver-nvidia-version__ubuntu2404-runfile-550.78.txt")
    no_pkgs = "dpkg-query: no packages found matching nvidia-*\n"
    c = ctx("os-release__ubuntu-24.04.txt", "6.8.0-31-generic", nvrm=runfile_550, dpkg_text=no_pkgs)
    r = di.resolve_driver_install(c)
    assert not r.ops and "driver 550.78 is present without any driver package" in r.manual and "nvidia-uninstall" in r.manual
    clean = di.resolve_driver_install(ctx("os-release__ubuntu-24.04.txt", "6.8.0-31-generic", dpkg_text=no_pkgs))
    assert argvs(clean)[2] == ["ubuntu-drivers", "install", "--gpgpu", "nvidia:580-server-open"]


def test_debian_own_driver_and_other_branches_are_refused_on_debian():
    own_535 = di.resolve_driver_install(ctx("", "6.1.0-18-amd64", dpkg_text=DEBIAN_OWN_535, os_text=DEBIAN_VM_OS))
    assert not own_535.ops and "R535" in own_535.manual
    assert "sudo apt --purge remove" in own_535.manual and "nvidia-kernel-dkms" in own_535.manual
    bookworm = di.resolve_driver_install(ctx("", "6.1.0-18-amd64", dpkg_text=SYNTHETIC_DEBIAN_BOOKWORM_580,
                                             os_text=DEBIAN_VM_OS))
    assert not bookworm.ops and "another source or flavour" in bookworm.manual and "~deb12u1" in bookworm.manual
    nv_595 = di.resolve_driver_install(ctx("", "6.1.0-18-amd64", dpkg_text=NVIDIA_REPO_595, os_text=DEBIAN_VM_OS))
    assert not nv_595.ops and "R595" in nv_595.manual


def test_rpmfusion_packaging_is_refused_on_the_rhel_route():
    r = di.resolve_driver_install(ctx("os-release__rocky-9.3.txt", "5.14.0-427.el9.x86_64", rpm_text=RPMFUSION_580))
    assert not r.ops and "akmod-nvidia" in r.manual and "sudo dnf remove" in r.manual


def test_every_apt_install_carries_no_remove():
    contexts = [ctx("os-release__ubuntu-22.04.txt", "6.8.0-60-generic"),
                ctx("", "6.1.0-18-amd64", os_text=DEBIAN_VM_OS),
                ctx("", "6.1.0-18-amd64", nvrm=NVRM_580, os_text=DEBIAN_VM_OS)]
    for c in contexts:
        for resolve in (di.resolve_driver_install, di.resolve_cuda_toolkit, di.resolve_dcgm, di.resolve_fabric_manager):
            r = resolve(c)
            for a in argvs(r) if not r.manual else []:
                if a[:2] == ["apt-get", "install"]:
                    assert a[3] == "--no-remove", a


# ------------------------------------------------------------------ problem 3: Fabric Manager names per route


def test_fabric_manager_names_on_nvidia_apt_route_and_nvlink5():
    deb = argvs(di.resolve_fabric_manager(ctx("", "6.1.0-18-amd64", dpkg=DEBIAN_NVIDIA_580, nvrm=NVRM_580,
                                              os_text=DEBIAN_VM_OS)))
    assert deb[1] == ["apt-get", "install", "-y", *APT, "nvidia-fabricmanager-580", "libnvidia-nscq-580"]
    b200 = argvs(di.resolve_fabric_manager(ctx("", "6.1.0-18-amd64", dpkg=DEBIAN_NVIDIA_580, nvrm=NVRM_580,
                                               os_text=DEBIAN_VM_OS, gpus=("2901",) * 8)))
    assert b200[1][-3:] == ["nvidia-fabricmanager-580", "libnvidia-nscq-580", "nvlsm"]
    el_b200 = argvs(di.resolve_fabric_manager(ctx("os-release__rocky-9.3.txt", "5.14.0-427.el9.x86_64", nvrm=NVRM_580,
                                                  gpus=("2901",) * 8)))
    assert el_b200[0] == ["dnf", "install", "-y", "nvidia-fabric-manager-580.95.05", "libnvidia-nscq-580.95.05", "nvlsm"]
    ubuntu_b200 = di.resolve_fabric_manager(ctx("os-release__ubuntu-24.04.txt", "6.8.0-45-generic", dpkg=SERVER_580,
                                                nvrm=NVRM_580, gpus=("2901",) * 8))
    assert ubuntu_b200.manual and "NVLSM" in ubuntu_b200.manual and not ubuntu_b200.ops


def test_fabric_manager_from_r590_needs_the_pinning_package():
    no_pin = di.resolve_fabric_manager(ctx("", "6.1.0-18-amd64", dpkg_text=NVIDIA_REPO_595, nvrm=NVRM_595,
                                           os_text=DEBIAN_VM_OS))
    assert no_pin.manual and "nvidia-driver-pinning-595" in no_pin.manual and not no_pin.ops
    pinned = argvs(di.resolve_fabric_manager(ctx("", "6.1.0-18-amd64", dpkg_text=NVIDIA_REPO_595 + SYNTHETIC_PIN_595,
                                                 nvrm=NVRM_595, os_text=DEBIAN_VM_OS)))
    assert pinned[1] == ["apt-get", "install", "-y", *APT, "nvidia-fabricmanager", "libnvidia-nscq"]


def test_fabric_manager_refuses_a_driver_of_another_source():
    r = di.resolve_fabric_manager(ctx("os-release__ubuntu-24.04.txt", "6.8.0-31-generic", nvrm=NVRM_580,
                                      dpkg=PUB / "dpkg-l__ubuntu2404-nvidia-driver-535-gtx1070.txt"))
    assert r.manual and not r.ops and "driver's own source" in r.manual


# ------------------------------------------------------------------ problem 5: no GPU is not a Completed fabric


def test_fabric_manager_without_any_gpu_is_the_no_nvswitch_skip():
    out = collect_tree(LOCAL_VM, ["pci"])
    out["nvml"] = ProbeOutput("nvml", "NVML (pynvml)", text=text(LOCAL_VM / "nvml-probe.json"))
    f = only(ds.fabric_manager_setup(out, TODAY), "driver.fabric_manager")
    assert f.verdict is Verdict.SKIP and "no NVSwitch on the PCI bus" in f.message
    assert "Completed" not in f.message and "pass-through" not in f.message
    from steps.driver import fabric_manager_all

    g = fabric_manager_all(out, TODAY)
    assert ids(g) == [("driver.fabric_manager", Verdict.SKIP)] and "Completed" not in g[0].message


# ------------------------------------------------------------------ problem 6: Ubuntu signed modules per flavour


def test_ubuntu_secure_boot_installs_the_running_kernels_signed_modules():
    r = di.resolve_driver_install(ctx("os-release__ubuntu-22.04.txt", "6.2.0-36-generic",
                                      sb="mokutil-sb-state__ubuntu-enabled.txt"))
    a = argvs(r)
    assert ["ubuntu-drivers", "install", "--gpgpu", "nvidia:580-server-open"] in a
    assert any("linux-modules-nvidia-580-server-open-6.2.0-36-generic" in x for x in a)
    # a kernel that is not one of Ubuntu's archive kernels gets DKMS instructions, not a guessed package
    m = di.resolve_driver_install(ctx("os-release__ubuntu-22.04.txt", "6.18.44-fc-v657",
                                      sb="mokutil-sb-state__ubuntu-enabled.txt"))
    assert not m.ops and "DKMS" in m.manual and "MOK" in m.manual


# ------------------------------------------------------------------ problem 11: zypper addrepo once


def test_zypper_repository_is_written_idempotently_not_addrepo():
    c = ctx("", "5.14.21-150600.23.25-default", os_text=SLES_SP6)
    r = di.resolve_driver_install(c)
    writes = [op for op in r.ops if "write" in op]
    assert len(writes) == 1 and writes[0]["write"].startswith("/etc/zypp/repos.d/") and writes[0]["write"].endswith(".repo")
    assert "gpgcheck=1" in writes[0]["content"] and "baseurl=" in writes[0]["content"]
    a = [op["argv"] for op in r.ops if "argv" in op]
    assert not any("addrepo" in x for x in a)
    assert ["zypper", "--non-interactive", "--gpg-auto-import-keys", "refresh"] in a
    again = di.resolve_driver_install(c)
    assert again.ops == r.ops  # a rerun writes the same file: nothing fails on an existing alias
    dcgm = argvs(di.resolve_dcgm(ctx("", "5.14.21-150600.23.25-default", os_text=SLES_SP6, nvrm=NVRM_580)))
    assert not any("addrepo" in x for x in dcgm) and dcgm[-2][-1] == "datacenter-gpu-manager-4-cuda13"


# ------------------------------------------------------------------ problem 13: no repository mixing on Ubuntu's archive


def test_dcgm_and_toolkit_do_not_add_nvidia_repo_next_to_ubuntu_archive_driver():
    c = ctx("os-release__ubuntu-24.04.txt", "6.8.0-45-generic", dpkg=SERVER_580, nvrm=NVRM_580)
    for r in (di.resolve_dcgm(c), di.resolve_cuda_toolkit(c)):
        assert r.manual and not r.ops and "Ubuntu's archive driver" in r.manual and "might break Secure Boot" in r.manual
    assert "--toolkit" in di.resolve_cuda_toolkit(c).manual
    debian_own = ctx("", "6.1.0-18-amd64", dpkg_text=SYNTHETIC_DEBIAN_BOOKWORM_580, nvrm=NVRM_580, os_text=DEBIAN_VM_OS)
    assert "mix driver sources" in di.resolve_dcgm(debian_own).manual


# ------------------------------------------------------------------ problem 14: releases not listed for the branch


def test_install_refuses_a_release_not_listed_for_the_branch():
    r = di.resolve_driver_install(ctx("", "6.12.48+deb13-amd64", os_text=DEBIAN_13_OS))
    assert r.manual and not r.ops and "not listed for R580" in r.manual
    assert di.os_listed(di.host_facts(ctx("", "6.1.0-18-amd64", os_text=DEBIAN_VM_OS)), "580")[0]


def test_platform_default_branch_docstring_has_the_matrix_date():
    from wizard.rules import os as platform

    doc = platform.__dict__.get("DEFAULT_DRIVER_BRANCH") and open(platform.__file__).read()
    assert "June 2028" in doc and "end of life\nAugust 2028" not in doc
    assert catalog.branches()[580].eol == "2028-06"
