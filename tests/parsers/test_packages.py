"""Tests of wizard/parsers/packages.py."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wizard.install import packages
from wizard.parsers import packages as pk
from wizard.parsers.platform import parse_mokutil_sb_state

from tests import strategies
from tests.probe_data import DATA, text

PUB = DATA / "public" / "driver"


SYN = DATA / "synthetic" / "driver"


def pub(name: str) -> str:
    return text(PUB / name)


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


@pytest.mark.parametrize("raw, up", [("580.95.05-0ubuntu0.24.04.2", "580.95.05"), ("1:4.4.1-1", "4.4.1"),
                                      ("3:580.126.09-1.fc43", "580.126.09"), ("580.95.05_k6.4.0_150600.21-1.1", "580.95.05"),
                                      ("1.1-1", "1.1"), ("garbage", "")])
def test_upstream_version(raw, up):
    assert pk.upstream_version(raw) == up


REAL = [text(p) for p in sorted(PUB.iterdir()) if p.is_file()] + [text(p) for p in sorted(SYN.iterdir())]


FAST = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


random_text = st.text(max_size=400)


random_bytes = st.binary(max_size=400).map(lambda b: b.decode("utf-8", errors="replace"))


def mutated_real() -> st.SearchStrategy[str]:
    """A real output of this area, mutated (tests/strategies.py)."""
    return strategies.mutated(REAL)


any_text = st.one_of(random_text, random_bytes, mutated_real())


PARSERS = [pk.parse_dpkg, pk.parse_rpm, pk.parse_dkms_status, pk.parse_systemctl_show, pk.parse_systemctl_status,
           pk.parse_fm_version, pk.parse_modinfo, parse_mokutil_sb_state, pk.upstream_version, pk.branch_of,
           lambda t: pk.parse_systemctl_words(t, pk.SERVICE_UNITS, "active"),
           lambda t: pk.parse_systemctl_words(t, pk.SERVICE_UNITS, "enabled")]


@FAST
@given(any_text)
def test_parsers_never_raise(t):
    for p in PARSERS:
        p(t)
