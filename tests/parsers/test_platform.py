"""Tests of wizard/parsers/platform.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wizard.parsers import platform as pp
from wizard.parsers.platform import (
    SECUREBOOT_EFIVAR,
    SETUPMODE_EFIVAR,
    branch_number,
    comment_out_swap,
    efivar_value,
    memory_slots,
    parse_chronyc_tracking,
    parse_cpufreq,
    parse_cpuidle,
    parse_dmidecode_memory,
    parse_fstab,
    parse_mokutil_sb_state,
    parse_smbios17_raw,
    parse_sriov,
    parse_timedatectl,
    smbios_hex_devices,
    support_rows,
    version_matches,
)

from tests.probe_data import DATA, collect_tree, grep_tree, text
from tests.conftest import DATA

PUB = DATA / "public" / "driver"


def pub(name: str) -> str:
    return text(PUB / name)


@pytest.mark.parametrize("name, state, enforcing", [
    ("mokutil-sb-state__ubuntu-enabled.txt", "enabled", True),
    ("mokutil-sb-state__enabled-validation-disabled-in-shim.txt", "enabled", False),
    ("mokutil-sb-state__efi-variables-not-supported.txt", "unsupported", False),
])
def test_secure_boot_state(name, state, enforcing):
    sb = parse_mokutil_sb_state(pub(name))
    assert (sb.state, sb.enforcing) == (state, enforcing)


PLAT = DATA / "platform"


SAMPLES = sorted(p for d in ("public", "synthetic") for p in (PLAT / d).iterdir() if p.is_file())


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


FEW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


from tests.strategies import (  # noqa: E402,F401 - the BIOS/OS area's fuzz inputs, shared
    PLATFORM_TOKENS as TOKENS,
    platform_garbage as garbage,
    platform_inputs as inputs,
    platform_mutated_sample as mutated_sample,
    sysfs_listing_tree as _tree,
)


@FUZZ
@given(inputs)
def test_text_parsers_never_raise(t):
    pp.parse_mokutil_sb_state(t)
    pp.parse_dmidecode_memory(t)
    pp.parse_timedatectl(t)
    pp.parse_chronyc_tracking(t)
    entries, _ = pp.parse_fstab(t)
    pp.memory_slots(pp.parse_dmidecode_memory(t)[0])
    for e in entries:
        pp.barrier_off(e.options)
    pp.efivar_value(t)
    pp.branch_number(t)
    pp.version_matches(t[:20], t[20:40], t[40:60])


@FUZZ
@given(inputs)
def test_tree_parsers_never_raise(t):
    files = _tree(t)
    pp.parse_cpuidle(files)
    pp.parse_cpufreq(files)
    pp.parse_sriov(files)
    pp.smbios_hex_devices(files)


@FUZZ
@given(st.binary(max_size=400))
def test_smbios_raw_never_raises(b):
    d = pp.parse_smbios17_raw(b)
    assert d is None or d.size_mib is None or d.size_mib >= 0
    pp.parse_smbios17_raw(bytes([17, 0x54]) + b)


@FUZZ
@given(inputs)
def test_swap_edit_properties(t):
    new, changed = pp.comment_out_swap(t)
    assert len(new.splitlines()) == len(t.splitlines())
    assert not [e for e in pp.parse_fstab(new)[0] if e.is_swap]  # nothing left active
    assert pp.comment_out_swap(new) == (new, [])  # idempotent
    # every line that was not an active swap entry is unchanged
    for a, b in zip(t.splitlines(keepends=True), new.splitlines(keepends=True)):
        assert a == b or b == pp.SWAP_OFF_MARK + a
    # the rollback un-comments exactly what was commented out, whatever else the file holds
    assert pp.restore_swap(new)[0] == t and pp.restore_swap(new)[1] == changed


@FEW
@given(inputs)
def test_detectors_never_raise_and_stay_in_range(t):
    for detect in (pp.detect_mokutil, pp.detect_dmidecode_memory, pp.detect_timedatectl, pp.detect_chronyc,
                   pp.detect_cpu_power_tree, pp.detect_fstab):
        assert 0.0 <= detect(t) <= 1.0


PUB_PLATFORM, SYN, VM = PLAT / "public", PLAT / "synthetic", PLAT / "local-vm"


def pci_tree(path: Path) -> dict[str, str | None]:
    """``path:value`` lines whose paths hold ':' (PCI addresses): split at the last ':'."""
    out: dict[str, str | None] = {}
    for line in text(path).splitlines():
        p, _, v = line.rpartition(":")
        out[p] = v + "\n"
    return out


def test_cpuidle_real_server_tree():
    f = parse_cpuidle(grep_tree(PUB_PLATFORM / "cpuidle-tree__pepc-bdwde0-c3-disabled-cpu0-cpu10-partial.txt"))
    assert f.cpus == [0, 10] and not f.problems
    assert f.summary() == [("POLL", 0, 2, 0), ("C1", 2, 2, 0), ("C1E", 10, 2, 0), ("C3", 40, 0, 2), ("C6", 133, 2, 0)]


def test_cpuidle_and_cpufreq_on_this_vm_are_not_exposed():
    out = collect_tree(VM, ["cpuidle", "cpufreq"])
    idle = parse_cpuidle(out["cpuidle"].files)
    assert idle.driver == "none" and idle.governor == "menu" and idle.states == []
    assert "/sys/devices/system/cpu/cpuidle/current_driver:none" in idle.evidence
    assert out["cpufreq"].ok and parse_cpufreq(out["cpufreq"].files).policies == []


def test_cpufreq_real_server_tree():
    f = parse_cpufreq(grep_tree(PUB_PLATFORM / "cpufreq-tree__pepc-bdwde0-schedutil-policy0-policy10-partial.txt"))
    assert [p.name for p in f.policies] == ["policy0", "policy10"]
    assert f.counts("governor") == {"schedutil": 2} and f.counts("driver") == {"intel_cpufreq": 2}
    assert f.counts("epp") == {}


def test_cpuidle_unreadable_values_are_problems_not_guesses():
    f = parse_cpuidle({"/sys/devices/system/cpu/cpu0/cpuidle/state1/disable": "maybe\n",
                       "/sys/devices/system/cpu/cpu0/cpuidle/state1/latency": "12x\n",
                       "/sys/devices/system/cpu/cpu0/cpuidle/state1/name": "C1\n"})
    assert len(f.problems) == 2 and f.states[0].disabled is None and f.states[0].latency_us is None


@pytest.mark.parametrize("name, state, shim_off, setup", [
    ("mokutil-sb-state__insights-core-enabled.txt", "enabled", False, False),
    ("mokutil-sb-state__insights-core-efi-not-supported.txt", "unsupported", False, False),
    ("mokutil-sb-state__r-pufky-docs-disabled-setup-mode.txt", "disabled", False, True),
])
def test_mokutil_real_outputs(name, state, shim_off, setup):
    sb = parse_mokutil_sb_state(text(PUB_PLATFORM / name))
    assert (sb.state, sb.shim_validation_off, sb.setup_mode) == (state, shim_off, setup)
    assert not sb.problems


def test_mokutil_shim_validation_off_two_line_form():
    # the two lines mokutil prints when MokSBState is set (mokutil source, print_sb_state)
    sb = parse_mokutil_sb_state("SecureBoot enabled\nSecureBoot validation is disabled in shim\n")
    assert sb.state == "enabled" and sb.shim_validation_off


def test_efivar_value_layout():
    files = grep_tree(SYN / "synthetic_efivars-hex__secureboot-on.txt")
    assert efivar_value(files[SECUREBOOT_EFIVAR]) == 1
    assert efivar_value(files[SETUPMODE_EFIVAR]) == 0
    assert efivar_value("06000000") is None and efivar_value("zz") is None and efivar_value("060000000101") is None


def test_dmidecode_supermicro_names_socket_and_channel():
    devs, problems, seen = parse_dmidecode_memory(text(PUB_PLATFORM / "dmidecode-t17__supermicro-as4124gs-2x-epyc7452-1dpc-partial.txt"))
    assert seen and not problems and len(devs) == 8
    assert [d.size_mib for d in devs] == [0, 32768] * 4
    assert devs[1].locator == "P1-DIMMA2" and devs[1].bank_locator == "P0_Node0_Channel0_Dimm1"
    assert devs[1].mem_type == "DDR4" and devs[1].speed_mts == 3200 and devs[1].configured_speed_mts == 3200
    assert devs[1].evidence == ["Size: 32 GB", "Locator: P1-DIMMA2", "Bank Locator: P0_Node0_Channel0_Dimm1"]
    slots = memory_slots(devs)
    assert {(s.socket, s.channel) for s in slots} == {("0", "0"), ("0", "1"), ("1", "0"), ("1", "1")}


def test_dmidecode_dell_names_neither_socket_nor_channel():
    devs, problems, _ = parse_dmidecode_memory(text(PUB_PLATFORM / "dmidecode-t17__dell-2s-ddr4-a1-a6-unnamed-channels-partial.txt"))
    assert [d.locator for d in devs] == ["A1", "A2", "A3", "A4", "A5", "A6"]
    assert [d.populated for d in devs] == [True, True, False, True, True, False]
    assert devs[0].configured_speed_mts == 2666 and devs[0].speed_mts == 3200 and devs[0].bank_locator == ""
    assert all(s.socket == "" and s.channel == "" for s in memory_slots(devs))


def test_smbios_raw_entries_per_dsp0134():
    devs, problems = smbios_hex_devices(grep_tree(SYN / "synthetic_smbios17-raw-hex__p0-channel-c-empty.txt"))
    assert not problems
    assert [d.size_mib for d in devs] == [65536, 65536, 0, 16384]  # the first two use the Extended Size field
    assert [d.bank_locator for d in devs] == [f"P0 CHANNEL {c}" for c in "ABCD"]
    assert devs[0].mem_type == "DDR5" and devs[0].speed_mts == 4800 and devs[2].speed_mts is None
    assert [(s.socket, s.channel) for s in memory_slots(devs)] == [("0", c) for c in "ABCD"]


def test_smbios_raw_rejects_what_is_not_type_17():
    assert parse_smbios17_raw(b"") is None
    assert parse_smbios17_raw(bytes([4, 0x30]) + bytes(0x40)) is None  # a processor (type 4) entry
    assert parse_smbios17_raw(bytes([17, 0xFF]) + bytes(0x20)) is None  # length beyond the data


def test_this_vm_has_no_smbios_entries():
    out = collect_tree(VM, ["smbios_memory", "dmi_tables"])
    assert out["smbios_memory"].files == {} and out["dmi_tables"].files == {}


@pytest.mark.parametrize("name, synced, service", [
    ("timedatectl-status__bigtreetech-cb1-188-not-synchronized.txt", False, "inactive"),
    ("timedatectl-status__nixpkgs-48917-synchronized-ntp-na.txt", True, "n/a"),
    ("timedatectl-status__dietpi-1661-systemd-237-synchronized.txt", True, "yes"),
    ("timedatectl-status__deis-2563-old-ntp-synchronized.txt", True, "yes"),
])
def test_timedatectl_status_all_systemd_layouts(name, synced, service):
    t = parse_timedatectl(text(PUB_PLATFORM / name))
    assert (t.synchronized, t.service) == (synced, service) and not t.problems


def test_timedatectl_show_properties():
    t = parse_timedatectl(text(SYN / "synthetic_timedatectl-show__ntp-yes-not-synchronized.txt"))
    assert t.synchronized is False and t.service == "yes" and t.lines == ["NTP=yes", "NTPSynchronized=no"]


def test_chronyc_tracking_real_outputs():
    t = parse_chronyc_tracking(text(PUB_PLATFORM / "chronyc-tracking__nelisys-docs-ubuntu2004-synchronised.txt"))
    assert t.synchronized is True and t.offset_s == pytest.approx(0.001983523) and t.reference.startswith("2D40B9B4")
    t = parse_chronyc_tracking(text(PUB_PLATFORM / "chronyc-tracking__omnios-2576-7s-slow-leap-normal.txt"))
    assert t.synchronized is True and t.offset_s == pytest.approx(-7.810536861)
    t = parse_chronyc_tracking(text(PUB_PLATFORM / "chronyc-tracking__pingcap-docs-5283-not-synchronised-line.txt"))
    assert t.synchronized is False and t.leap == "Not synchronised"


def test_fstab_real_rhel_and_swap_comment_out():
    raw = text(PUB_PLATFORM / "fstab__insights-core-rhel-anaconda-lvm-swap.txt")
    entries, problems = parse_fstab(raw)
    assert len(entries) == 10 and not problems
    assert [e.spec for e in entries if e.is_swap] == ["/dev/mapper/rhel_hadoop--test--1-swap"]
    new, changed = comment_out_swap(raw)
    assert changed == ["/dev/mapper/rhel_hadoop--test--1-swap swap                    swap    defaults        0 0"]
    # everything else byte for byte, and the swap line only prefixed
    assert new == raw.replace("\n/dev/mapper/rhel_hadoop--test--1-swap", "\n#bringup-swap-off# /dev/mapper/rhel_hadoop--test--1-swap")
    assert comment_out_swap(new) == (new, [])  # idempotent: nothing left to comment out
    assert not [e for e in parse_fstab(new)[0] if e.is_swap]


def test_fstab_tabs_and_barrier_options():
    raw = text(SYN / "synthetic_fstab__ubuntu-swapimg-raid-barrier0.txt")
    entries, _ = parse_fstab(raw)
    assert [(e.file, e.vfstype) for e in entries] == [("/", "ext4"), ("none", "swap"), ("/raid", "ext4")]
    assert entries[2].options == ["defaults", "noatime", "barrier=0"]
    new, changed = comment_out_swap(raw)
    assert changed == ["/swap.img\tnone\tswap\tsw\t0\t0"] and "#bringup-swap-off# /swap.img\tnone\tswap" in new


def test_this_vm_fstab_has_no_entries():
    entries, problems = parse_fstab(text(VM / "etc" / "fstab"))
    assert entries == [] and problems == []
    assert comment_out_swap(text(VM / "etc" / "fstab"))[1] == []


def test_sriov_tree_and_this_vm():
    devs, problems = parse_sriov(pci_tree(SYN / "synthetic_sriov-tree__connectx6-4-vfs.txt"))
    assert not problems and [(d.bdf, d.total_vfs, d.num_vfs, d.kind) for d in devs] == [
        ("0000:3b:00.0", 8, 4, "InfiniBand controller"), ("0000:3b:00.1", 8, 0, "InfiniBand controller")]
    out = collect_tree(VM, ["sriov"])
    assert out["sriov"].ok and parse_sriov(out["sriov"].files) == ([], [])


def test_support_table_rows_are_sourced():
    rows = support_rows()
    assert rows and all(r.source.startswith(("http", "https")) or "docs.nvidia.com" in r.source for r in rows)
    assert {r.branch for r in rows if r.kind == "listed"} >= {"580", "590", "610"}
    assert any(r.distro_id == "ubuntu" and r.version == "26.04" and r.branch == "610" for r in rows)
    assert not any(r.distro_id == "ubuntu" and r.version == "26.04" and r.branch == "590" for r in rows)


@pytest.mark.parametrize("row, vid, minv, ok", [
    ("9", "9.4", "", True), ("9", "10.0", "", False), ("22.04", "22.04", "", True), ("22.04", "22.10", "", False),
    ("22.04", "22", "", False), ("15", "15.6", "15.6", True), ("15", "15.5", "15.6", False), ("3", "3.0", "", True),
    ("2023", "2023", "", True), ("12", "", "", False),
])
def test_version_matches(row, vid, minv, ok):
    assert version_matches(row, vid, minv) is ok


@pytest.mark.parametrize("value, branch", [("R580", "580"), ("580", "580"), (580, "580"), ("580.95.05", "580"),
                                           ("r610-open", "610"), ("", ""), (None, ""), (True, ""), ("latest", "")])
def test_branch_number(value, branch):
    assert branch_number(value) == branch


def test_dmidecode_3_6_binary_unit_sizes_are_read():
    """dmidecode 3.6 and later print "Size: 32 GiB" (held-out round 222, real: a dmidecode 3.7 paste), which earlier
    bringup left as an unknown size and counted no DIMM."""
    from tests.probe_data import PUBLIC

    devs, problems, seen = pp.parse_dmidecode_memory(text(PUBLIC / "dmidecode-memory__2x5090-ws-ddr5-non-ecc-4200.txt"))
    assert seen and not problems and [d.size_mib for d in devs] == [32 * 1024]
    assert devs[0].configured_speed_mts == 4200
