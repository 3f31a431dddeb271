"""Driver & CUDA stage: parsers on real outputs, the branch/flavour rules per architecture, lifecycle
dates against a fixed "today", the live checks, and every distribution's install argv.

Data: tests/data/public/driver (real outputs, sources in tests/data/PROVENANCE.md) and
tests/data/synthetic/driver (synthetic_*: formats bringup's own probes print, no public sample).
The sysfs PCI trees below are synthetic too: built in the test from device ids seen in real lspci
outputs (named in PROVENANCE.md), because no sysfs capture of those machines exists.
"""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest

import steps
from tests.conftest import ROOT, env_for_cli
from tests.probe_data import DATA, collect_tree, command_output, failed, file_output, text, tree_output
from wizard.actions import ActionContext
from wizard.install import catalog, driver as di, packages
from wizard.rules import driver_install as ds
from wizard.model import Verdict
from wizard.parsers import packages as pk
from wizard.parsers.platform import parse_mokutil_sb_state
from wizard.probes import ProbeOutput

PUB = DATA / "public" / "driver"
SYN = DATA / "synthetic" / "driver"
TODAY = {"today": "2026-11-30"}
H200_TREE = DATA / "synthetic" / "synthetic_sysfs-pci-h200x8-nvswitch"


def pub(name: str) -> str:
    return text(PUB / name)


def pci(*gpus: str, bridges: tuple[str, ...] = ()) -> ProbeOutput:
    """A synthetic ``pci`` probe output: NVIDIA GPU functions with these device ids (class 0302), plus
    NVIDIA bridges (class 0680, NVSwitch) and one non-NVIDIA function."""
    files: dict[str, str | None] = {"/sys/bus/pci/devices/0000:00:00.0/vendor": "0x8086\n"}
    for i, did in enumerate(gpus):
        bdf = f"0000:{0x17 + i * 0x10:02x}:00.0"
        files[f"/sys/bus/pci/devices/{bdf}/vendor"] = "0x10de\n"
        files[f"/sys/bus/pci/devices/{bdf}/device"] = f"0x{did}\n"
        files[f"/sys/bus/pci/devices/{bdf}/class"] = "0x030200\n"
    for j, did in enumerate(bridges):
        bdf = f"0000:{0xc0 + j:02x}:00.0"
        files[f"/sys/bus/pci/devices/{bdf}/vendor"] = "0x10de\n"
        files[f"/sys/bus/pci/devices/{bdf}/device"] = f"0x{did}\n"
        files[f"/sys/bus/pci/devices/{bdf}/class"] = "0x068000\n"
    return tree_output("pci", files, "/sys/bus/pci/devices/*/{vendor,device,class,...}")


def kernel(release: str) -> ProbeOutput:
    return ProbeOutput("kernel", "/proc/sys/kernel/osrelease", text=release + "\n")


def cmd(name: str, argv: str, body: str, rc: int = 0, stderr: str = "") -> ProbeOutput:
    return ProbeOutput(name, "$ " + argv, text=body, rc=rc, stderr=stderr)


def os_release(name: str) -> ProbeOutput:
    path = PUB / name if (PUB / name).exists() else DATA / "public" / name
    return file_output("os_release", path, "/etc/os-release")


def ids(findings, fid=None):
    return [(f.id, f.verdict) for f in findings if fid is None or f.id == fid]


def only(findings, fid):
    got = [f for f in findings if f.id == fid]
    assert len(got) == 1, [(f.id, f.verdict, f.message) for f in findings]
    return got[0]


# ------------------------------------------------------------------ parsers on real outputs


def test_dpkg_list_of_real_ubuntu_535_install():
    pl = pk.parse_dpkg(pub("dpkg-l__ubuntu2404-nvidia-driver-535-gtx1070.txt"))
    assert len(pl.packages) == 9 and not pl.problems
    names = {p.name: p for p in pl.installed()}
    assert names["nvidia-dkms-535"].version == "535.154.05-0ubuntu1"
    assert names["nvidia-dkms-535"].upstream == "535.154.05"
    assert names["nvidia-settings"].upstream == "510.47.03"
    pd = packages.packaged_driver(pl)
    # nvidia-settings (its own version line) does not make the driver "mixed"
    assert pd.version == "535.154.05" and list(pd.versions) == ["535.154.05"]
    assert pd.flavour == "proprietary"


def test_dpkg_query_probe_format_with_arch_qualifier_and_removed_package():
    pl = pk.parse_dpkg(text(SYN / "synthetic_dpkg-query__ubuntu2404-580-server-open-precompiled-fm-older.txt"))
    by = {p.name: p for p in pl.packages}
    assert "libnvidia-compute-580-server" in by  # ":amd64" stripped
    assert by["nvidia-dkms-580-server-open"].state == "rc" and not by["nvidia-dkms-580-server-open"].installed
    assert packages.packaged_driver(pl).flavour == "open"


def test_dpkg_no_packages_found_lines_are_noted_not_problems():
    pl = pk.parse_dpkg("dpkg-query: no packages found matching datacenter-gpu-manager*\n")
    assert pl.not_found and not pl.problems and not pl.packages


def test_rpm_list_of_real_rocky9_nvidia_open_615():
    pl = pk.parse_rpm(pub("rpm-qa__rocky9-ciq-nvidia-open-615-t4.txt"))
    assert len(pl.packages) == 18 and not pl.problems
    by = {p.name: p for p in pl.packages}
    assert by["kmod-nvidia-open-dkms"].version == "615.71.09-1.el9" and by["kmod-nvidia-open-dkms"].arch == "noarch"
    assert by["kernel-devel-matched"].upstream == "5.14.0"
    pd = packages.packaged_driver(pl)
    assert pd.version == "615.71.09" and pd.flavour == "open"


def test_rpm_list_with_rpm6_epochs_and_command_line():
    pl = pk.parse_rpm(pub("rpm-qa__nobara43-nvidia-580-epoch.txt"))
    assert len(pl.packages) == 15 and not pl.problems
    by = {p.name: p for p in pl.packages}
    assert by["nvidia-driver"].version == "3:580.126.09-1.fc43" and by["nvidia-driver"].upstream == "580.126.09"
    # dkms-nvidia (this distribution builds it from the open source) says nothing about the flavour
    assert packages.packaged_driver(pl).flavour == ""


@pytest.mark.parametrize("name, module, version, kernel, state", [
    ("dkms-status__debian13-nvidia-610-zfs.txt", "nvidia", "610.57.04", "7.1.3+deb13-amd64", "installed"),
    ("dkms-status__rocky9-nvidia-615-added.txt", "nvidia", "615.71.09", "", "added"),
    ("dkms-status__ubuntu-hwe-nvidia-390-added-kernel-6.8.txt", "nvidia", "390.157", "", "added"),
    ("dkms-status__gcp-nvidia-465-added-old-format.txt", "nvidia", "465.19.01", "", "added"),
    ("dkms-status__rocky9-nvidia-615-installed-after-depmod.txt", "nvidia", "615.71.09",
     "5.14.0-687.42.1+2.1.el9_8_ciq.x86_64", "installed"),
])
def test_dkms_status_real_outputs(name, module, version, kernel, state):
    d = pk.parse_dkms_status(pub(name))
    e = d.module()
    assert len(e) == 1
    assert (e[0].module, e[0].version, e[0].kernel, e[0].state) == (module, version, kernel, state)


def test_dkms_status_old_comma_format_two_kernels_and_other_modules():
    d = pk.parse_dkms_status(pub("dkms-status__ubuntu-realsense-nvidia-510-old-format.txt"))
    assert len(d.entries) == 4 and len(d.module()) == 2
    assert {e.kernel for e in d.module()} == {"5.13.0-40-generic", "5.8.0-43-generic"}
    assert d.entries[0].module == "librealsense2-dkms"


def test_dkms_status_warning_notes():
    d = pk.parse_dkms_status(pub("dkms-status__ubuntu2404-535-diff-built-installed-warning.txt"))
    e = d.module()[0]
    assert e.state == "installed" and len(e.notes) == 5 and "Diff between built and installed" in e.notes[0]


def test_systemctl_status_fabric_manager_active_real():
    u = pk.parse_systemctl_status(pub("systemctl-status__sberlinux-fabricmanager-590-active.txt"))
    fm = u.get("nvidia-fabricmanager")
    assert fm is not None and fm.load == "loaded" and fm.active == "active" and fm.sub == "running"
    assert fm.unit_file == "enabled"
    assert any("non-fatal error 22013" in ln for ln in fm.log)


def test_systemctl_status_failed_by_signal_and_static_persistenced():
    fm = pk.parse_systemctl_status(pub("systemctl-status__fabricmanager-failed-signal-kill.txt")).get("nvidia-fabricmanager")
    assert fm.active == "failed" and fm.result == "signal"
    p = pk.parse_systemctl_status(pub("systemctl-status__persistenced-active-no-persistence-mode-a100.txt")).get("nvidia-persistenced")
    assert p.unit_file == "static" and p.active == "active" and "--no-persistence-mode" in p.exec_start


def test_systemctl_journal_only_lines_give_the_failed_unit():
    u = pk.parse_systemctl_status(pub("journal__fabricmanager-version-mismatch-550.127.05-vs-550.120.txt"))
    fm = u.get("nvidia-fabricmanager")
    assert fm is not None and fm.active == "failed"
    m = pk.FM_MISMATCH.search(pub("journal__fabricmanager-version-mismatch-550.127.05-vs-550.120.txt"))
    assert (m.group("fm"), m.group("drv")) == ("550.127.05", "550.120")


def test_systemctl_show_real_block_without_id_takes_the_unit_name():
    body = pub("systemctl-show__not-found-unit-loadstate-activestate.txt").split("\n", 1)[1]
    u = pk.parse_systemctl_show(body, ("boba-user1000-watchdog.service",))
    w = u.get("boba-user1000-watchdog")
    assert w is not None and w.load == "not-found" and not w.exists and w.active == "inactive"


def test_systemctl_show_probe_blocks():
    u = pk.parse_systemctl_show(text(SYN / "synthetic_systemctl-show__persistenced-active-fm-inactive-dcgm-absent.txt"))
    assert u.get("nvidia-persistenced").running and u.get("nvidia-fabricmanager").active == "inactive"
    assert not u.get("nvidia-dcgm").exists


def test_systemctl_is_active_is_enabled_words_real():
    first, second = pub("systemctl-is-active-is-enabled__lambda-h100-vm-fabricmanager.txt").splitlines()
    a = pk.parse_systemctl_words(first, ("nvidia-fabricmanager",), "active").get("nvidia-fabricmanager")
    e = pk.parse_systemctl_words(second, ("nvidia-fabricmanager",), "enabled").get("nvidia-fabricmanager")
    assert a.active == "inactive" and e.unit_file == "disabled"


def test_fm_version_real_and_masked():
    v = pk.parse_fm_version(pub("nv-fabricmanager-version__dell-nvl5-610.57.04.txt"))
    assert v.version == "610.57.04" and v.build_line.startswith("Build Info")
    m = pk.parse_fm_version(pub("nv-fabricmanager-version__masked-580.txt"))
    assert m.line and m.version == ""


def test_modinfo_open_signed_and_proprietary_unsigned():
    o = pk.parse_modinfo(pub("modinfo-nvidia__nobara43-580-open-on-gtx1050ti.txt"))
    assert (o.version, o.flavour, o.kernel, o.signed) == ("580.126.09", "open", "6.18.9-201.nobara.fc43.x86_64", True)
    p = pk.parse_modinfo(pub("modinfo-nvidia__ubuntu-nvidia-current-295-proprietary.txt"))
    assert (p.version, p.flavour, p.kernel, p.signed) == ("295.53", "proprietary", "3.4.0-3-generic", False)
    n = pk.parse_modinfo(pub("modprobe__gcp-module-nvidia-not-found.txt"))
    assert n.not_found and not n.version


@pytest.mark.parametrize("name, state, enforcing", [
    ("mokutil-sb-state__ubuntu-enabled.txt", "enabled", True),
    ("mokutil-sb-state__enabled-validation-disabled-in-shim.txt", "enabled", False),
    ("mokutil-sb-state__efi-variables-not-supported.txt", "unsupported", False),
])
def test_secure_boot_state(name, state, enforcing):
    sb = parse_mokutil_sb_state(pub(name))
    assert (sb.state, sb.enforcing) == (state, enforcing)


@pytest.mark.parametrize("raw, up", [("580.95.05-0ubuntu0.24.04.2", "580.95.05"), ("1:4.4.1-1", "4.4.1"),
                                      ("3:580.126.09-1.fc43", "580.126.09"), ("580.95.05_k6.4.0_150600.21-1.1", "580.95.05"),
                                      ("1.1-1", "1.1"), ("garbage", "")])
def test_upstream_version(raw, up):
    assert pk.upstream_version(raw) == up


# ------------------------------------------------------------------ architecture, flavour, branch


@pytest.mark.parametrize("did, arch", [
    ("1db4", "Volta"), ("1c82", "Pascal"), ("1eb8", "Turing"), ("20b2", "Ampere"), ("26b9", "Ada Lovelace"),
    ("2330", "Hopper"), ("2335", "Hopper"), ("2342", "Grace Hopper"), ("2901", "Blackwell"), ("2b85", "Blackwell"),
    ("3182", "Blackwell"), ("102d", "Kepler"),
])
def test_architecture_of_device_ids(did, arch):
    a = catalog.architecture_of(did)
    assert a is not None and a.architecture == arch


def test_unknown_device_id_has_no_architecture():
    assert catalog.architecture_of("0001") is None and catalog.architecture_of("zzzz") is None


D2026 = dt.date(2026, 11, 30)


@pytest.mark.parametrize("archs, flavour, branch", [
    (["Volta"], "proprietary", 580), (["Pascal"], "proprietary", 580), (["Turing"], "open", 580),
    (["Ampere"], "open", 580), (["Ada Lovelace"], "open", 580), (["Hopper"], "open", 580),
    (["Grace Hopper"], "open", 580), (["Blackwell"], "open", 580),
    (["Volta", "Turing"], "proprietary", 580),  # mixed old + new: proprietary
])
def test_recommendation_per_architecture_as_of_2026_11_30(archs, flavour, branch):
    r = catalog.recommend(archs, D2026)
    assert (r.flavour, r.branch.branch if r.branch else None) == (flavour, branch)
    assert not r.conflict
    # R535 (June 2026) and R570 (Feb 2026) are past end of life on this date: never offered
    assert all(b.branch not in (535, 570) for b in r.alternatives)


def test_blackwell_with_volta_has_no_single_flavour():
    r = catalog.recommend(["Blackwell", "Volta"], D2026)
    assert r.flavour == "" and r.branch is None and "open" in r.conflict


def test_kepler_has_no_supported_branch():
    r = catalog.recommend(["Kepler"], D2026)
    assert r.flavour == "proprietary" and r.branch is None


def test_after_r580_end_of_life_the_next_ltsb_is_chosen_and_volta_is_stranded():
    later = dt.date(2028, 6, 1)  # R580: End of Life June 2028 -> EOL from the first of the month
    assert catalog.branches()[580].state(later) == "eol"
    assert catalog.branches()[580].state(dt.date(2028, 5, 31)) == "supported"
    assert catalog.recommend(["Hopper"], later).branch.branch == 620
    assert catalog.recommend(["Volta"], later).branch is None  # R620 ships open modules only, Volta needs proprietary


def test_branch_states_on_fixed_today():
    b = catalog.branches()
    assert b[535].state(D2026) == "eol" and b[570].state(D2026) == "eol" and b[610].state(D2026) == "eol"
    assert b[590].state(D2026) == "nfb" and b[595].state(D2026) == "supported"
    assert b[535].state(dt.date(2026, 5, 31)) == "supported"


def test_branch_data_is_sourced_and_consistent():
    rows = catalog.branches()
    assert all(b.source and b.as_of for b in rows.values())
    assert all(b.designation in ("", "LTSB", "PB", "NFB") for b in rows.values())
    prefs = [b.prefer for b in rows.values() if b.prefer is not None]
    assert len(prefs) == len(set(prefs))
    assert all(r.source for r in catalog.arch_rules().values())


def test_branch_choice_on_the_hgx_h200_tree():
    out = collect_tree(H200_TREE, ["pci"])
    f = only(ds.branch_choice(out, TODAY), "driver.branch")
    assert f.verdict is Verdict.PASS
    assert "R580 LTSB" in f.message and "open" in f.message and "Hopper x8" in f.message
    assert "supported-drivers-and-cuda-toolkit-versions" in f.source
    assert f.subject.startswith("GPU (0000:")


def test_branch_choice_mixed_blackwell_volta_fails_and_unknown_id_is_unknown():
    f = only(ds.branch_choice({"pci": pci("2901", "1db4")}, TODAY), "driver.branch")
    assert f.verdict is Verdict.FAIL and "Blackwell" in f.message and "Volta" in f.message
    fs = ds.branch_choice({"pci": pci("2330", "0001")}, TODAY)
    assert [x.verdict for x in fs] == [Verdict.UNKNOWN, Verdict.PASS]


def test_branch_choice_without_gpus_uses_the_plan_model():
    f = only(ds.branch_choice({"pci": pci()}, {**TODAY, "gpu_model": "L40S"}), "driver.branch")
    assert f.verdict is Verdict.PASS and "Ada Lovelace" in f.message and "in the plan" in f.message
    g = only(ds.branch_choice({"pci": pci()}, TODAY), "driver.branch")
    assert g.verdict is Verdict.UNKNOWN


# ------------------------------------------------------------------ installed driver (real combinations)


def forum_ubuntu_outputs() -> dict[str, ProbeOutput]:
    """Ubuntu 24.04 forum thread: packaged 535.154.05, a runfile 550.78 loaded, DKMS warning."""
    return {
        "nvidia_driver_version": file_output("nvidia_driver_version", PUB / "proc-driver-nvidia-version__ubuntu2404-runfile-550.78.txt",
                                             "/proc/driver/nvidia/version"),
        "driver_dpkg": command_output("driver_dpkg", PUB / "dpkg-l__ubuntu2404-nvidia-driver-535-gtx1070.txt", "dpkg -l nvidia-*"),
        "driver_dkms": command_output("driver_dkms", PUB / "dkms-status__ubuntu2404-535-diff-built-installed-warning.txt", "dkms status"),
        "kernel": kernel("6.8.0-31-generic"),
        "pci": pci("1b81"),  # GP104 GTX 1070 (lspci in the thread names GP104)
    }


def test_runfile_driver_over_packages_fails_and_dkms_warns():
    out = forum_ubuntu_outputs()
    f = ds.installed_driver(out, TODAY)
    inst = [x for x in f if x.id == "driver.installed"][0]
    assert inst.verdict is Verdict.FAIL and "550.78" in inst.message and "535.154.05" in inst.message
    assert only(f, "driver.flavour").verdict is Verdict.PASS  # proprietary on Pascal
    life = only(f, "driver.branch_lifecycle")
    assert life.verdict is Verdict.WARN and "R550" in life.message
    k = only(ds.kernel_module(out, TODAY), "driver.kernel_module")
    assert k.verdict is Verdict.WARN and "6.8.0-31-generic" in k.message


def test_open_module_on_pascal_fails_flavour():
    out = {
        "driver_rpm": command_output("driver_rpm", PUB / "rpm-qa__nobara43-nvidia-580-epoch.txt", "rpm -qa"),
        "driver_dkms": command_output("driver_dkms", PUB / "dkms-status__nobara43-nvidia-580-openrazer.txt", "dkms status"),
        "driver_modinfo": command_output("driver_modinfo", PUB / "modinfo-nvidia__nobara43-580-open-on-gtx1050ti.txt", "modinfo nvidia"),
        "driver_dpkg": failed("driver_dpkg", "$ dpkg-query -W", "command not found: dpkg-query", rc=127),
        "kernel": kernel("6.18.9-201.nobara.fc43.x86_64"),
        "pci": pci("1c82"),  # GTX 1050 Ti, 10de:1c82 in the report
    }
    f = ds.installed_driver(out, TODAY)
    fl = only(f, "driver.flavour")
    assert fl.verdict is Verdict.FAIL and "Pascal" in fl.message and "open" in fl.message
    assert fl.subject == "GPU (0000:17:00.0)"
    assert only(f, "driver.branch_lifecycle").verdict is Verdict.PASS
    k = only(ds.kernel_module(out, TODAY), "driver.kernel_module")
    assert k.verdict is Verdict.PASS and "6.18.9-201.nobara.fc43.x86_64" in k.message


def test_rocky_dkms_added_only_fails_and_unknown_branch_warns():
    out = {
        "driver_rpm": command_output("driver_rpm", PUB / "rpm-qa__rocky9-ciq-nvidia-open-615-t4.txt", "rpm -qa"),
        "driver_dkms": command_output("driver_dkms", PUB / "dkms-status__rocky9-nvidia-615-added.txt", "dkms status"),
        "kernel": kernel("5.14.0-687.42.1+2.1.el9_8_ciq.x86_64"),
        "pci": pci("1eb8"),
    }
    k = only(ds.kernel_module(out, TODAY), "driver.kernel_module")
    assert k.verdict is Verdict.FAIL and "registered" in k.message and "nvidia/615.71.09: added" in k.evidence
    f = ds.installed_driver(out, TODAY)
    assert only(f, "driver.flavour").verdict is Verdict.PASS  # open on Turing
    life = only(f, "driver.branch_lifecycle")
    assert life.verdict is Verdict.WARN and "R615" in life.message and "not in bringup's data" in life.message
    out["driver_dkms"] = command_output("driver_dkms", PUB / "dkms-status__rocky9-nvidia-615-installed-after-depmod.txt", "dkms status")
    assert only(ds.kernel_module(out, TODAY), "driver.kernel_module").verdict is Verdict.PASS


def test_legacy_branch_added_but_never_built_for_the_new_kernel():
    out = {"driver_dkms": command_output("driver_dkms", PUB / "dkms-status__ubuntu-hwe-nvidia-390-added-kernel-6.8.txt", "dkms status"),
           "kernel": kernel("6.8.12-060812-generic")}
    k = only(ds.kernel_module(out, TODAY), "driver.kernel_module")
    assert k.verdict is Verdict.FAIL and "6.8.12-060812-generic" in k.message


def test_dkms_built_for_other_kernels_only():
    out = {"driver_dkms": command_output("driver_dkms", PUB / "dkms-status__ubuntu-realsense-nvidia-510-old-format.txt", "dkms status"),
           "kernel": kernel("5.8.0-67-generic")}
    k = only(ds.kernel_module(out, TODAY), "driver.kernel_module")
    assert k.verdict is Verdict.FAIL and "other kernels" in k.message
    out["kernel"] = kernel("5.8.0-43-generic")
    assert only(ds.kernel_module(out, TODAY), "driver.kernel_module").verdict is Verdict.PASS


def test_precompiled_ubuntu_module_for_the_running_kernel():
    out = {"driver_dpkg": command_output("driver_dpkg", SYN / "synthetic_dpkg-query__ubuntu2404-580-server-open-precompiled-fm-older.txt",
                                         "dpkg-query -W"),
           "driver_dkms": cmd("driver_dkms", "dkms status", ""),
           "kernel": kernel("6.8.0-45-generic")}
    k = only(ds.kernel_module(out, TODAY), "driver.kernel_module")
    assert k.verdict is Verdict.PASS and "precompiled" in k.message and "linux-modules-nvidia-580-server-open" in k.message


def test_secure_boot_on_and_unsigned_module_fails_unless_shim_validation_is_off():
    out = {"driver_modinfo": command_output("driver_modinfo", PUB / "modinfo-nvidia__ubuntu-nvidia-current-295-proprietary.txt", "modinfo nvidia"),
           "kernel": kernel("3.4.0-3-generic"),
           "driver_secure_boot": command_output("driver_secure_boot", PUB / "mokutil-sb-state__ubuntu-enabled.txt", "mokutil --sb-state")}
    fs = ds.kernel_module(out, TODAY)
    assert (("driver.kernel_module", Verdict.FAIL) in ids(fs)) and any("not signed" in f.message for f in fs)
    out["driver_secure_boot"] = command_output("driver_secure_boot", PUB / "mokutil-sb-state__enabled-validation-disabled-in-shim.txt",
                                               "mokutil --sb-state")
    assert ids(ds.kernel_module(out, TODAY)) == [("driver.kernel_module", Verdict.PASS)]


def test_no_driver_installed():
    out = {"nvidia_driver_version": failed("nvidia_driver_version", "/proc/driver/nvidia/version", "no such file"),
           "driver_dpkg": cmd("driver_dpkg", "dpkg-query -W", "", rc=1,
                              stderr="dpkg-query: no packages found matching nvidia-*\n"),
           "kernel": kernel("6.8.0-45-generic"), "pci": pci("2330")}
    assert ids(ds.installed_driver(out, TODAY)) == [("driver.installed", Verdict.FAIL)]
    assert ids(ds.kernel_module(out, TODAY)) == [("driver.kernel_module", Verdict.SKIP)]
    assert ids(ds.chain_summary(out, TODAY)) == [("driver.chain", Verdict.SKIP)]


def test_proprietary_on_hopper_warns_and_on_blackwell_fails():
    nvrm = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.95.05  Thu Sep 23 10:00:00 UTC 2025\n"  # proprietary format
    base = {"nvidia_driver_version": ProbeOutput("nvidia_driver_version", "/proc/driver/nvidia/version", text=nvrm)}
    h = only(ds.installed_driver({**base, "pci": pci("2330")}, TODAY), "driver.flavour")
    assert h.verdict is Verdict.WARN and "recommends the open modules" in h.message
    b = only(ds.installed_driver({**base, "pci": pci("2901")}, TODAY), "driver.flavour")
    assert b.verdict is Verdict.FAIL and "requires the open modules" in b.message
    mixed = ds.installed_driver({**base, "pci": pci("2330", "1db4")}, TODAY)
    assert {f.verdict for f in mixed if f.id == "driver.flavour"} == {Verdict.PASS}


def test_branch_too_old_for_blackwell_fails_lifecycle():
    nvrm = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.216.03  Release Build  (dvs-builder@U16-I3-B04-2-2)  Wed Oct 23 2024\n"
    out = {"nvidia_driver_version": ProbeOutput("nvidia_driver_version", "/proc/driver/nvidia/version", text=nvrm), "pci": pci("2901")}
    life = [f for f in ds.installed_driver(out, TODAY) if f.id == "driver.branch_lifecycle"]
    assert [f.verdict for f in life] == [Verdict.FAIL, Verdict.WARN]
    assert "does not drive Blackwell" in life[0].message and "June 2026" in life[1].message


# ------------------------------------------------------------------ services


def show(name: str) -> ProbeOutput:
    return command_output("driver_services", SYN / name, "systemctl show ...")


def test_persistenced_states():
    ok = ds.persistenced({"driver_services": show("synthetic_systemctl-show__all-active.txt")}, {})
    assert ids(ok) == [("driver.persistenced", Verdict.PASS)]
    nf = ds.judge_persistenced_unit(None, "systemctl")
    assert nf[0].verdict is Verdict.WARN
    miss = ds.persistenced({}, {})
    assert miss[0].verdict is Verdict.UNKNOWN


def test_fabric_manager_inactive_and_version_mismatch_on_nvswitch_board():
    out = collect_tree(H200_TREE, ["pci"])
    out["driver_services"] = show("synthetic_systemctl-show__persistenced-active-fm-inactive-dcgm-absent.txt")
    out["driver_dpkg"] = command_output("driver_dpkg", SYN / "synthetic_dpkg-query__ubuntu2404-580-server-open-precompiled-fm-older.txt",
                                        "dpkg-query -W")
    fs = ds.fabric_manager_setup(out, TODAY)
    fm = only(fs, "driver.fabric_manager")
    assert fm.verdict is Verdict.FAIL
    assert "inactive" in fm.message and "580.82.07" in fm.message and "580.95.05" in fm.message
    assert only(fs, "driver.nscq").verdict is Verdict.PASS


def test_fabric_manager_all_good_and_nvswitch_absent():
    out = collect_tree(H200_TREE, ["pci"])
    out["driver_services"] = show("synthetic_systemctl-show__all-active.txt")
    out["driver_dpkg"] = command_output("driver_dpkg", SYN / "synthetic_dpkg-query__debian12-nvidia-repo-580-open-complete.txt",
                                        "dpkg-query -W")
    out["driver_fm_version"] = cmd("driver_fm_version", "nv-fabricmanager --version", "Fabric Manager version is : 580.95.05\n")
    assert ids(ds.fabric_manager_setup(out, TODAY)) == [("driver.fabric_manager", Verdict.PASS), ("driver.nscq", Verdict.PASS)]
    out["driver_fm_version"] = command_output("driver_fm_version", PUB / "nv-fabricmanager-version__dell-nvl5-610.57.04.txt",
                                              "nv-fabricmanager --version")
    assert only(ds.fabric_manager_setup(out, TODAY), "driver.fabric_manager").verdict is Verdict.FAIL
    pcie_only = {"pci": pci("26b9", "26b9")}
    assert ids(ds.fabric_manager_setup(pcie_only, TODAY)) == [("driver.fabric_manager", Verdict.SKIP)]


def test_b200_boards_need_fabric_manager_without_pci_nvswitch():
    out = {"pci": pci("2901"), "driver_services": show("synthetic_systemctl-show__persistenced-active-fm-inactive-dcgm-absent.txt")}
    fm = [f for f in ds.fabric_manager_setup(out, TODAY) if f.id == "driver.fabric_manager"][0]
    assert fm.verdict is Verdict.FAIL and "inactive" in fm.message


def test_dcgm_and_container_toolkit_optional():
    full = {"driver_dpkg": command_output("driver_dpkg", SYN / "synthetic_dpkg-query__debian12-nvidia-repo-580-open-complete.txt",
                                          "dpkg-query -W"),
            "driver_services": show("synthetic_systemctl-show__all-active.txt")}
    assert ids(ds.dcgm(full, {})) == [("driver.dcgm", Verdict.PASS)]
    assert ids(ds.container_toolkit(full, {})) == [("driver.container_toolkit", Verdict.PASS)]
    bare = {"driver_dpkg": command_output("driver_dpkg", PUB / "dpkg-l__ubuntu2404-nvidia-driver-535-gtx1070.txt", "dpkg -l")}
    assert ids(ds.dcgm(bare, {})) == [("driver.dcgm", Verdict.SKIP)]
    assert ids(ds.container_toolkit(bare, {})) == [("driver.container_toolkit", Verdict.SKIP)]
    full["driver_services"] = show("synthetic_systemctl-show__persistenced-active-fm-inactive-dcgm-absent.txt")
    assert ids(ds.dcgm(full, {})) == [("driver.dcgm", Verdict.WARN)]


def test_chain_summary_names_the_driver_cuda_and_never_asks_nvcc_to_match():
    nvrm = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U22)  Tue Sep 23 2025\n"
    out = {"nvidia_driver_version": ProbeOutput("nvidia_driver_version", "/proc/driver/nvidia/version", text=nvrm),
           "nvcc_version": failed("nvcc_version", "$ nvcc --version", "command not found: nvcc", rc=127)}
    f = only(ds.chain_summary(out, TODAY), "driver.chain")
    assert "580.95.05" in f.message and "runs CUDA up to 13.0" in f.message and "need not match" in f.message


# ------------------------------------------------------------------ install actions per distribution


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
        out["driver_secure_boot"] = command_output("driver_secure_boot", PUB / sb, "mokutil --sb-state")
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
    for s in st.steps:
        for p in s.probes + (s.action.probes if s.action else ()):
            from wizard.registry import PROBES as REGISTRY

            assert p in REGISTRY, (s.id, p)


# ------------------------------------------------------------------ the CLI dry run on this machine


def test_cli_dry_run_of_driver_install_on_this_machine(tmp_path):
    """``bringup --dry-run run driver.install`` prints the exact argv for this host and runs nothing.
    On the development VM (Debian 12) that is NVIDIA's Debian 12 repository route."""
    r = subprocess.run([sys.executable, "-m", "wizard.cli", "--state", str(tmp_path), "--dry-run", "run", "driver.install"],
                       capture_output=True, text=True, env=env_for_cli(), cwd=ROOT, timeout=120)
    out = r.stdout
    osr = Path("/etc/os-release").read_text() if Path("/etc/os-release").exists() else ""
    if 'ID=debian' in osr and 'VERSION_ID="12"' in osr:
        assert r.returncode == 0, r.stderr
        assert "$ apt-get update" in out and "nvidia-driver-pinning-580" in out
        assert "nvidia-driver-cuda nvidia-kernel-open-dkms" in out and "$ add-apt-repository -y contrib" in out
        assert "--no-remove" in out and "/compute/cuda/repos/debian12/" in out and "dry run: nothing was run" in out
    else:  # another machine: the command either lists argv or says it cannot run here, never guesses
        assert ("dry run: nothing was run" in out) or ("cannot run here" in out)


def _nvml(state: str) -> ProbeOutput:
    """A synthetic NVML probe output for the Lambda single-H100 VM of the real files above (driver
    570.148.08, GPU at 06:00.0), with the fabric state under test."""
    import json

    d = {"init": "ok", "driver_version": "570.148.08", "cuda_driver_version": 12080, "count": 1,
         "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": "00000000:06:00.0", "serial": "1",
                   "uuid": "GPU-1", "memory_total_bytes": 85899345920, "errors": {},
                   "fabric": {"state": state, "status": "Success" if state == "Completed" else "N/A"}}]}
    return ProbeOutput("nvml", "NVML (pynvml)", text=json.dumps(d))


def test_vm_with_completed_fabric_and_no_nvswitch_needs_no_local_fabric_manager():
    out = {"pci": pci("2330"), "nvml": _nvml("Completed"),
           "driver_dpkg": command_output("driver_dpkg", PUB / "dpkg-l__lambda-h100-vm-fabricmanager-570.txt", "dpkg -l")}
    f = only(ds.fabric_manager_setup(out, TODAY), "driver.fabric_manager")
    assert f.verdict is Verdict.SKIP and "pass-through VM" in f.message
    out["nvml"] = _nvml("In Progress")
    g = only(ds.fabric_manager_setup(out, TODAY), "driver.fabric_manager")
    assert g.verdict in (Verdict.FAIL, Verdict.UNKNOWN)


def test_fabric_manager_step_wrapper():
    from steps.driver import fabric_manager_all

    assert ids(fabric_manager_all({"pci": pci()}, TODAY)) == [("driver.fabric_manager", Verdict.SKIP)]
    out = {"pci": pci("2901"), "driver_services": show("synthetic_systemctl-show__persistenced-active-fm-inactive-dcgm-absent.txt")}
    assert ("driver.fabric_manager", Verdict.FAIL) in ids(fabric_manager_all(out, TODAY))


def test_distro_helpers():
    from wizard.distro import nvidia_repo_arch, version_matches

    assert version_matches("9.4", "9") and version_matches("24.04", "24.04") and not version_matches("24.10", "24.04")
    assert not version_matches("", "9") and not version_matches("19.1", "9")
    assert nvidia_repo_arch("aarch64") == "sbsa" and nvidia_repo_arch("x86_64") == "x86_64" and nvidia_repo_arch("ppc64le") is None
