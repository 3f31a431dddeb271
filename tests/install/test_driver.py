"""Tests of wizard/install/driver.py."""

from __future__ import annotations

from pathlib import Path

import pytest
import steps
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wizard.actions import ActionContext
from wizard.install import driver as di
from wizard.model import Verdict
from wizard.probes import ProbeOutput

from tests import strategies
from tests.outputs import cmd, ids, kernel, pci
from tests.probe_data import DATA, LOCAL_VM, command_output, file_output, text

PUB = DATA / "public" / "driver"


SYN = DATA / "synthetic" / "driver"


TODAY = {"today": "2026-11-30"}


def os_release(name: str) -> ProbeOutput:
    path = PUB / name if (PUB / name).exists() else DATA / "public" / name
    return file_output("os_release", path, "/etc/os-release")


def show(name: str) -> ProbeOutput:
    return command_output("driver_services", SYN / name, "systemctl show ...")


def ctx(os_file: str, kernel_release: str, *, machine: str = "x86_64", gpus: tuple[str, ...] = ("2330",),
        sb: str | None = None, dpkg: Path | None = None, rpm: Path | None = None, nvrm: str = "",
        plan: dict | None = None, dpkg_text: str | None = None, rpm_text: str | None = None,
        os_text: str | None = None) -> ActionContext:
    out: dict[str, ProbeOutput] = {
        "os_release": os_release(os_file) if os_text is None else ProbeOutput("os_release", "/etc/os-release", text=os_text),
        "kernel": kernel(kernel_release),
        "driver_uname_m": cmd("driver_uname_m", "uname -m", machine + "\n"),
        "pci": pci(*gpus),
    }
    if dpkg_text is not None:
        out["driver_dpkg"] = cmd("driver_dpkg", "dpkg-query -W", dpkg_text)
    if rpm_text is not None:
        out["driver_rpm"] = cmd("driver_rpm", "rpm -qa", rpm_text)

    if sb is not None:
        out["mokutil_sb_state"] = command_output("mokutil_sb_state", PUB / sb, "mokutil --sb-state")
    if dpkg is not None:
        out["driver_dpkg"] = command_output("driver_dpkg", dpkg, "dpkg-query -W")
    if rpm is not None:
        out["driver_rpm"] = command_output("driver_rpm", rpm, "rpm -qa")
    if nvrm:
        out["nvidia_driver_version"] = ProbeOutput("nvidia_driver_version", "/proc/driver/nvidia/version", text=nvrm)
    return ActionContext(out, {**TODAY, **(plan or {})}, "/var/lib/bringup/builds/b/backups", state_dir="/var/lib/bringup")


def argvs(r) -> list[list[str]]:
    assert not r.manual, r.manual
    return [op["argv"] for op in r.ops if "argv" in op]


def steps_of(r) -> list:
    """Every operation in order: argv lists, and ("write", path) for file writes."""
    assert not r.manual, r.manual
    return [op["argv"] if "argv" in op else ("write", op["write"]) for op in r.ops]


APT_OPTS = ["-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold"]


APT = ["--no-remove", *APT_OPTS]
"""apt installs of the driver actions: --no-remove (apt-get(8): abort instead of removing packages) + keep conffiles."""


def test_ubuntu_2204_ubuntu_drivers_server_open():
    r = di.resolve_driver_install(ctx("os-release__ubuntu-22.04.txt", "6.8.0-60-generic"))
    assert argvs(r) == [
        ["apt-get", "update"],
        ["apt-get", "install", "-y", *APT, "ubuntu-drivers-common", "linux-headers-6.8.0-60-generic"],
        ["ubuntu-drivers", "install", "--gpgpu", "nvidia:580-server-open"],
        ["apt-get", "install", "-y", *APT, "linux-modules-nvidia-580-server-open-6.8.0-60-generic", "nvidia-utils-580-server"],
    ]
    assert r.env == {"DEBIAN_FRONTEND": "noninteractive"}


def test_ubuntu_2404_secure_boot_uses_signed_precompiled_modules():
    """ubuntu-drivers --gpgpu selects Canonical's signed flavour metapackage (DKMS only with --include-dkms), and
    the running kernel's linux-modules-nvidia package makes sure this kernel has the signed modules (Ubuntu Server
    docs, Select NVIDIA driver packages manually). A kernel Canonical builds no modules for gets manual DKMS steps."""
    r = di.resolve_driver_install(ctx("os-release__ubuntu-24.04.txt", "6.8.0-31-generic", sb="mokutil-sb-state__ubuntu-enabled.txt"))
    assert argvs(r) == [
        ["apt-get", "update"],
        ["apt-get", "install", "-y", *APT, "ubuntu-drivers-common", "linux-headers-6.8.0-31-generic"],
        ["ubuntu-drivers", "install", "--gpgpu", "nvidia:580-server-open"],
        ["apt-get", "install", "-y", *APT, "linux-modules-nvidia-580-server-open-6.8.0-31-generic", "nvidia-utils-580-server"],
    ]
    custom = di.resolve_driver_install(ctx("os-release__ubuntu-24.04.txt", "6.18.44-fc-v657",
                                           sb="mokutil-sb-state__ubuntu-enabled.txt"))
    assert custom.manual and not custom.ops and "nvidia-dkms-580-server-open" in custom.manual and "MOK" in custom.manual


def test_ubuntu_2404_volta_gets_the_proprietary_server_driver():
    r = di.resolve_driver_install(ctx("os-release__ubuntu-24.04.txt", "6.8.0-31-generic", gpus=("1db4",)))
    assert ["ubuntu-drivers", "install", "--gpgpu", "nvidia:580-server"] in argvs(r)


def test_ubuntu_with_nvidia_repository_stays_on_it():
    r = di.resolve_driver_install(ctx("os-release__ubuntu-24.04.txt", "6.8.0-31-generic",
                                      dpkg=SYN / "synthetic_dpkg-query__debian12-nvidia-repo-580-open-complete.txt"))
    a = argvs(r)
    assert ["apt-get", "install", "-y", *APT, "nvidia-driver-pinning-580"] in a and a[-1][-1] == "nvidia-open"
    assert not any(x[0] == "wget" for x in a)  # cuda-keyring already installed


def test_debian_12_nvidia_repository_contrib_keyring_pinning_compute_only():
    """Debian: contrib enabled (CUDA installation guide 4.9.1), NVIDIA's keyring, the branch pin, then the
    compute-only set (driver installation guide, Compute-only and Desktop Installation)."""
    r = di.resolve_driver_install(ctx("../../local-vm/etc/os-release", "6.1.0-18-amd64"))
    keyring = "https://developer.download.nvidia.com/compute/cuda/repos/debian12/x86_64/cuda-keyring_1.1-1_all.deb"
    assert argvs(r) == [
        ["apt-get", "update"],
        ["apt-get", "install", "-y", *APT, "linux-headers-6.1.0-18-amd64", "software-properties-common", "wget",
         "ca-certificates"],
        ["add-apt-repository", "-y", "contrib"],
        ["mkdir", "-p", "/var/lib/bringup/downloads"],
        ["wget", "-O", "/var/lib/bringup/downloads/cuda-keyring_1.1-1_all.deb", keyring],
        ["dpkg", "-i", "/var/lib/bringup/downloads/cuda-keyring_1.1-1_all.deb"],
        ["apt-get", "update"],
        ["apt-get", "install", "-y", *APT, "nvidia-driver-pinning-580"],
        ["apt-get", "install", "-y", *APT, "nvidia-driver-cuda", "nvidia-kernel-open-dkms"],
    ]


def test_debian_12_arm_server_uses_sbsa_and_pascal_proprietary_compute_only():
    r = di.resolve_driver_install(ctx("../../local-vm/etc/os-release", "6.1.0-18-arm64", machine="aarch64", gpus=("1c82",)))
    a = argvs(r)
    assert any("/debian12/sbsa/cuda-keyring" in x[-1] for x in a if x[0] == "wget")
    assert a[-1][-2:] == ["nvidia-driver-cuda", "nvidia-kernel-dkms"]


def test_rocky_9_dnf_module_stream():
    r = di.resolve_driver_install(ctx("os-release__rocky-9.3.txt", "5.14.0-687.42.1+2.1.el9_8_ciq.x86_64"))
    assert argvs(r) == [
        ["dnf", "install", "-y", "dnf-plugins-core", "kernel-devel-5.14.0-687.42.1+2.1.el9_8_ciq.x86_64", "kernel-headers"],
        ["dnf", "install", "-y", "epel-release"],
        ["dnf", "config-manager", "--set-enabled", "crb"],
        ["dnf", "config-manager", "--add-repo", "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64/cuda-rhel9.repo"],
        ["dnf", "clean", "expire-cache"],
        ["dnf", "module", "enable", "-y", "nvidia-driver:580-open"],
        ["dnf", "install", "-y", "nvidia-driver-cuda", "kmod-nvidia-open-dkms"],
    ]
    p = argvs(di.resolve_driver_install(ctx("os-release__rocky-9.3.txt", "5.14.0-427.el9.x86_64", gpus=("1db4",))))
    assert p[-2:] == [["dnf", "module", "enable", "-y", "nvidia-driver:580-dkms"],
                      ["dnf", "install", "-y", "nvidia-driver-cuda", "kmod-nvidia-latest-dkms"]]


def test_rhel_9_enables_codeready_builder_and_epel():
    a = argvs(di.resolve_driver_install(ctx("os-release__rhel-9.6.txt", "5.14.0-570.12.1.el9_6.x86_64")))
    assert ["subscription-manager", "repos", "--enable", "codeready-builder-for-rhel-9-x86_64-rpms"] in a
    assert ["dnf", "install", "-y", "https://dl.fedoraproject.org/pub/epel/epel-release-latest-9.noarch.rpm"] in a


def test_rhel_10_versionlock():
    a = argvs(di.resolve_driver_install(ctx("os-release__rhel-10.0.txt", "6.12.0-124.21.1.el10_1.x86_64")))
    assert a[0] == ["dnf", "install", "-y", "dnf-plugins-core", "python3-dnf-plugin-versionlock",
                    "kernel-devel-6.12.0-124.21.1.el10_1.x86_64", "kernel-headers"]
    assert a[-2:] == [["dnf", "versionlock", "add", "*nvidia*580*"],
                      ["dnf", "install", "-y", "nvidia-driver-cuda", "kmod-nvidia-open-dkms"]]
    assert ["dnf", "config-manager", "--add-repo",
            "https://developer.download.nvidia.com/compute/cuda/repos/rhel10/x86_64/cuda-rhel10.repo"] in a


SLES_SP6 = text(PUB / "os-release__sles-15-sp5.txt").replace('VERSION="15-SP5"', 'VERSION="15-SP6"').replace(
    'VERSION_ID="15.5"', 'VERSION_ID="15.6"').replace("15 SP5", "15 SP6")
"""synthetic_: the real SLES 15 SP5 os-release with its version fields set to SP6 (the first SLES 15 release
NVIDIA lists for R580, assets/os_support.csv); no public SP6 os-release was found."""


def test_sles_15_zypper():
    assert 'VERSION_ID="15.6"' in SLES_SP6
    r = di.resolve_driver_install(ctx("", "5.14.21-150600.23.25-default", os_text=SLES_SP6))
    assert steps_of(r) == [
        ["zypper", "--non-interactive", "install", "kernel-default-devel=5.14.21-150600.23.25"],
        ("write", "/etc/zypp/repos.d/cuda-sles15-x86_64.repo"),
        ["zypper", "--non-interactive", "--gpg-auto-import-keys", "refresh"],
        ["zypper", "--non-interactive", "install", "nvidia-open-580"],
    ]
    repo = next(op for op in r.ops if "write" in op)
    assert repo["content"] == ("[cuda-sles15-x86_64]\nname=cuda-sles15-x86_64\n"
                               "baseurl=https://developer.download.nvidia.com/compute/cuda/repos/sles15/x86_64\nenabled=1\n"
                               "gpgcheck=1\ngpgkey=https://developer.download.nvidia.com/compute/cuda/repos/sles15/x86_64/"
                               "D42D0685.pub\n")
    assert repo["backup_dir"] == "/var/lib/bringup/builds/b/backups"
    # SP5 is older than NVIDIA's R580 list (SLES 15 SP6+): manual, never a guessed command
    sp5 = di.resolve_driver_install(ctx("os-release__sles-15-sp5.txt", "4.12.14-197.18-default"))
    assert sp5.manual and "not listed for R580" in sp5.manual and not sp5.ops


@pytest.mark.parametrize("os_file", ["os-release__alpine-3.23.txt"])
def test_unknown_distribution_gets_manual_instructions(os_file):
    r = di.resolve_driver_install(ctx(os_file, "6.6.0"))
    assert r.manual and not r.ops and "No command was guessed" in r.manual


def test_unlisted_version_of_a_known_distribution_is_manual_too():
    old = ProbeOutput("os_release", "/etc/os-release", text='ID=ubuntu\nID_LIKE=debian\nVERSION_ID="20.04"\nPRETTY_NAME="Ubuntu 20.04 LTS"\n')
    c = ctx("os-release__ubuntu-22.04.txt", "5.15.0-1-generic")
    c.outputs["os_release"] = old  # type: ignore[index]
    assert di.resolve_driver_install(c).manual


def test_no_flavour_fits_is_manual():
    r = di.resolve_driver_install(ctx("os-release__ubuntu-24.04.txt", "6.8.0-31-generic", gpus=("2901", "1db4")))
    assert r.manual and "no driver branch" in r.manual


NVRM_580 = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U22)  Tue Sep 23 2025\n"


def test_fabric_manager_action_per_distribution():
    u = argvs(di.resolve_fabric_manager(ctx("os-release__ubuntu-24.04.txt", "6.8.0-31-generic", nvrm=NVRM_580)))
    assert u == [["apt-get", "update"], ["apt-get", "install", "-y", *APT, "nvidia-fabricmanager-580", "libnvidia-nscq-580"],
                 ["systemctl", "enable", "--now", "nvidia-fabricmanager"]]
    r = argvs(di.resolve_fabric_manager(ctx("os-release__rocky-9.3.txt", "5.14.0-427.el9.x86_64", nvrm=NVRM_580)))
    assert r[0] == ["dnf", "install", "-y", "nvidia-fabric-manager-580.95.05", "libnvidia-nscq-580.95.05"]
    s = di.resolve_fabric_manager(ctx("", "5.14.21-150600.23.25-default", nvrm=NVRM_580, os_text=SLES_SP6))
    assert s.manual and not s.ops and "580.95.05" in s.manual  # no verified names for NVIDIA's SUSE repository
    assert di.resolve_fabric_manager(ctx("os-release__ubuntu-24.04.txt", "6.8.0-31-generic")).manual


def test_dcgm_cuda_toolkit_and_persistenced_actions():
    c = ctx("../../local-vm/etc/os-release", "6.1.0-18-amd64", nvrm=NVRM_580)
    d = argvs(di.resolve_dcgm(c))
    assert ["apt-get", "install", "-y", "--no-remove", "--install-recommends", *APT_OPTS, "datacenter-gpu-manager-4-cuda13"] in d
    assert d[-1] == ["systemctl", "--now", "enable", "nvidia-dcgm"]
    t = argvs(di.resolve_cuda_toolkit(c))
    assert t[-1] == ["apt-get", "install", "-y", *APT, "cuda-toolkit-13-0"]
    assert argvs(di.resolve_persistenced(c)) == [["systemctl", "enable", "--now", "nvidia-persistenced"]]
    # walk 37 #2: with no NVIDIA driver installed, it says to install the driver first instead of offering the service
    none = di.resolve_persistenced(ctx("../../local-vm/etc/os-release", "6.1.0-18-amd64"))
    assert not none.ops and "install the NVIDIA driver first" in none.manual
    rk = argvs(di.resolve_dcgm(ctx("os-release__rocky-9.3.txt", "5.14.0-427.el9.x86_64", nvrm=NVRM_580)))
    assert ["dnf", "install", "-y", "--setopt=install_weak_deps=True", "datacenter-gpu-manager-4-cuda13"] in rk


def test_container_toolkit_action_writes_the_guides_apt_source():
    r = di.resolve_container_toolkit(ctx("os-release__ubuntu-24.04.txt", "6.8.0-31-generic"))
    writes = [op for op in r.ops if "write" in op]
    assert writes == [{"write": "/etc/apt/sources.list.d/nvidia-container-toolkit.list",
                       "content": "deb [signed-by=/usr/share/keyrings/nvidia-container-toolkit-keyring.gpg] "
                                  "https://nvidia.github.io/libnvidia-container/stable/deb/$(ARCH) /\n",
                       "backup_dir": "/var/lib/bringup/builds/b/backups"}]
    assert argvs(r)[-1][-1] == "nvidia-container-toolkit"
    rh = argvs(di.resolve_container_toolkit(ctx("os-release__rocky-9.3.txt", "5.14.0-427.el9.x86_64")))
    assert ["dnf", "config-manager", "--add-repo", di.CTK_RPM_REPO] in rh


def test_driver_stage_steps_and_actions_are_wired():
    st = steps.stage_by_id("driver")
    by = {s.id: s for s in st.steps}
    assert by["driver.install"].action.resolve is di.resolve_driver_install
    assert by["driver.fabric_manager"].action.resolve is di.resolve_fabric_manager
    for sid in ("driver.persistence", "driver.cuda_toolkit", "driver.dcgm", "driver.container_toolkit"):
        assert by[sid].action is not None and by[sid].action.needs_root
    from wizard.engine import probes_of
    from wizard.registry import PROBES as REGISTRY

    for s in st.steps:
        for p in tuple(probes_of([s])) + (s.action.probes if s.action else ()):
            assert p in REGISTRY, (s.id, p)


def test_fabric_manager_step_wrapper():
    from wizard.rules.compose import fabric_manager_all

    assert ids(fabric_manager_all({"pci": pci()}, TODAY)) == [("driver.fabric_manager", Verdict.SKIP)]
    out = {"pci": pci("2901"), "driver_services": show("synthetic_systemctl-show__persistenced-active-fm-inactive-dcgm-absent.txt")}
    assert ("driver.fabric_manager", Verdict.FAIL) in ids(fabric_manager_all(out, TODAY))


REAL = [text(p) for p in sorted(PUB.iterdir()) if p.is_file()] + [text(p) for p in sorted(SYN.iterdir())]


random_text = st.text(max_size=400)


random_bytes = st.binary(max_size=400).map(lambda b: b.decode("utf-8", errors="replace"))


def mutated_real() -> st.SearchStrategy[str]:
    """A real output of this area, mutated (tests/strategies.py)."""
    return strategies.mutated(REAL)


any_text = st.one_of(random_text, random_bytes, mutated_real())


PROBES = ["driver_dpkg", "driver_rpm", "driver_dkms", "driver_services", "driver_fm_version", "driver_modinfo",
          "mokutil_sb_state", "nvidia_driver_version", "kernel", "os_release", "driver_uname_m", "nvml"]


@st.composite
def outputs(draw) -> dict[str, ProbeOutput]:
    out: dict[str, ProbeOutput] = {}
    for name in draw(st.lists(st.sampled_from(PROBES), unique=True, max_size=len(PROBES))):
        rc = draw(st.sampled_from([0, 1, 127, None]))
        err = draw(st.sampled_from(["", "", "command not found: x", "no such file", "timeout"]))
        out[name] = ProbeOutput(name, f"$ {name}", text=draw(any_text), rc=rc, error=err, stderr=draw(st.sampled_from(["", "x"])))
    if draw(st.booleans()):
        did = draw(st.sampled_from(["2330", "1db4", "2901", "1c82", "26b9", "0000", "zzzz"]))
        out["pci"] = ProbeOutput("pci", "sysfs", files={"/sys/bus/pci/devices/0000:17:00.0/vendor": "0x10de\n",
                                                        "/sys/bus/pci/devices/0000:17:00.0/device": f"0x{did}\n",
                                                        "/sys/bus/pci/devices/0000:17:00.0/class": "0x030200\n"})
    return out


RESOLVERS = [di.resolve_driver_install, di.resolve_fabric_manager, di.resolve_cuda_toolkit, di.resolve_dcgm,
             di.resolve_container_toolkit, di.resolve_persistenced]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(outputs())
def test_resolvers_never_raise_and_never_emit_non_string_argv(out):
    ctx = ActionContext(out, {"today": "2026-11-30"}, "/tmp/b", state_dir="/tmp/s")
    for r in RESOLVERS:
        res = r(ctx)
        assert bool(res.manual) != bool(res.ops)
        for op in res.ops:
            if "argv" in op:
                assert op["argv"] and all(isinstance(a, str) and a for a in op["argv"])


@st.composite
def known_distro_outputs(draw) -> dict[str, ProbeOutput]:
    """Known distribution IDs with odd versions, kernels and machine types: resolvers must still
    answer with string argv or manual text."""
    osid = draw(st.sampled_from(["ubuntu", "debian", "rocky", "rhel", "almalinux", "sles", "fedora", "arch"]))
    ver = draw(st.one_of(st.sampled_from(["22.04", "24.04", "12", "13", "9.4", "8.10", "10.0", "15.6", ""]), random_text))
    osr = f'ID={osid}\nVERSION_ID="{ver}"\nPRETTY_NAME="{osid} {ver}"\n'
    return {
        "os_release": ProbeOutput("os_release", "/etc/os-release", text=osr),
        "kernel": ProbeOutput("kernel", "/proc/sys/kernel/osrelease", text=draw(st.one_of(random_text, st.just("6.8.0-31-generic")))),
        "driver_uname_m": ProbeOutput("driver_uname_m", "$ uname -m", text=draw(st.sampled_from(["x86_64", "aarch64", "ppc64le", ""]))),
        "mokutil_sb_state": ProbeOutput("mokutil_sb_state", "$ mokutil --sb-state",
                                          text=draw(st.sampled_from(["SecureBoot enabled\n", "SecureBoot disabled\n", ""]))),
        "nvidia_driver_version": ProbeOutput("nvidia_driver_version", "/proc/driver/nvidia/version", text=draw(any_text)),
        "driver_dpkg": ProbeOutput("driver_dpkg", "$ dpkg-query -W", text=draw(any_text), rc=draw(st.sampled_from([0, 1]))),
        "driver_rpm": ProbeOutput("driver_rpm", "$ rpm -qa", text=draw(any_text)),
        "pci": ProbeOutput("pci", "sysfs", files={"/sys/bus/pci/devices/0000:17:00.0/vendor": "0x10de\n",
                                                  "/sys/bus/pci/devices/0000:17:00.0/device":
                                                      f"0x{draw(st.sampled_from(['2330', '1db4', '2901', '15f8']))}\n",
                                                  "/sys/bus/pci/devices/0000:17:00.0/class": "0x030200\n"}),
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(known_distro_outputs())
def test_resolvers_on_known_distributions_with_odd_facts(out):
    ctx = ActionContext(out, {"today": "2026-11-30"}, "/tmp/b", state_dir="/tmp/s")
    for r in RESOLVERS:
        res = r(ctx)
        assert bool(res.manual) != bool(res.ops)
        for op in res.ops:
            if "argv" in op:
                assert op["argv"] and all(isinstance(a, str) and a for a in op["argv"])


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


def test_dcgm_and_toolkit_do_not_add_nvidia_repo_next_to_ubuntu_archive_driver():
    c = ctx("os-release__ubuntu-24.04.txt", "6.8.0-45-generic", dpkg=SERVER_580, nvrm=NVRM_580)
    for r in (di.resolve_dcgm(c), di.resolve_cuda_toolkit(c)):
        assert r.manual and not r.ops and "Ubuntu's archive driver" in r.manual and "might break Secure Boot" in r.manual
    assert "--toolkit" in di.resolve_cuda_toolkit(c).manual
    debian_own = ctx("", "6.1.0-18-amd64", dpkg_text=SYNTHETIC_DEBIAN_BOOKWORM_580, nvrm=NVRM_580, os_text=DEBIAN_VM_OS)
    assert "mix driver sources" in di.resolve_dcgm(debian_own).manual


def test_install_refuses_a_release_not_listed_for_the_branch():
    r = di.resolve_driver_install(ctx("", "6.12.48+deb13-amd64", os_text=DEBIAN_13_OS))
    assert r.manual and not r.ops and "not listed for R580" in r.manual
    assert di.os_listed(di.host_facts(ctx("", "6.1.0-18-amd64", os_text=DEBIAN_VM_OS)), "580")[0]


def test_install_refuses_a_kernel_the_os_stage_fails_before_any_command():
    """Walk 21: driver.install offered its apt sources and the driver (linux-headers-<release> first) on a kernel
    os.kernel_headers had failed: one without loadable modules, or a Debian kernel that is not Debian's own (no
    headers package exists). It refuses now, naming the cause, and runs nothing; a Debian kernel installs as before."""
    from wizard.probes import ProbeOutput

    c = ctx("../../local-vm/etc/os-release", "6.18.44-fc-v1147")
    r = di.resolve_driver_install(c)
    assert not r.ops and "is not one of" in r.manual and "linux-headers-6.18.44-fc-v1147" in r.manual
    c.outputs["modules"] = ProbeOutput("modules", "/proc/modules", error="No such file or directory: '/proc/modules'")
    r = di.resolve_driver_install(c)
    assert not r.ops and "cannot load modules" in r.manual and "CONFIG_MODULES=y" in r.manual
    ok = ctx("../../local-vm/etc/os-release", "6.1.0-18-amd64")
    assert argvs(di.resolve_driver_install(ok))  # unchanged for the distribution's own kernel
