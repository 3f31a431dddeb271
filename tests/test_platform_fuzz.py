"""Robustness of the BIOS/OS platform parsers, checks, detectors and the fstab edit: they never
raise, whatever the probes or a paste bring back (random text, random bytes decoded as hosts
decode them, and truncations and line mutations of the real samples in tests/data/platform)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import strategies
from wizard.rules import bios as bios_rules
from wizard.rules import os as os_rules
from wizard.model import Finding, Verdict
from wizard.parsers import platform as pp
from wizard.probes import ProbeOutput

PLAT = Path(__file__).resolve().parent / "data" / "platform"
SAMPLES = sorted(p for d in ("public", "synthetic") for p in (PLAT / d).iterdir() if p.is_file())
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
FEW = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TOKENS = ["Size: ", "No Module Installed", "Locator: ", "Bank Locator: P0 CHANNEL ", "Handle 0x1, DMI type 17, 84 bytes\n",
          "Memory Device\n", "\t", "\n", " ", ":", "=", "GB", "MB", "MT/s", "Leap status", "NTPSynchronized=",
          "System clock synchronized: ", "yes", "no", "SecureBoot enabled", "swap", "#", "barrier=0",
          "nobarrier", "/sys/devices/system/cpu/cpu0/cpuidle/state1/latency:", "9" * 4000, "0x", "\0"]
garbage = strategies.garbage(TOKENS, max_size=1500)


def mutated_sample() -> st.SearchStrategy[str]:
    """A real sample of this area, mutated (tests/strategies.py)."""
    return strategies.mutated(SAMPLES, TOKENS)


inputs = st.one_of(garbage, mutated_sample())


def _tree(t: str) -> dict[str, str | None]:
    files: dict[str, str | None] = {}
    for ln in t.splitlines():
        p, sep, v = ln.rpartition(":")
        if sep:
            files[p] = v
    return files


def _valid(findings) -> None:
    assert isinstance(findings, list) and findings
    for f in findings:
        assert isinstance(f, Finding) and isinstance(f.verdict, Verdict) and f.message


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


@FEW
@given(inputs, st.sampled_from([{}, {"virtualization": True}, {"data_path": "/raid"}, {"under_load": True},
                                 {"driver_branch": "R590", "scheduler": "kubernetes"}, {"driver_branch": 12}]))
def test_checks_never_raise(t, plan):
    files = _tree(t)
    cmd = lambda n: ProbeOutput(n, f"$ {n}", text=t, rc=0)  # noqa: E731
    tree = lambda n: ProbeOutput(n, n, text=t, files=files)  # noqa: E731
    _valid(bios_rules.above_4g({"lspci_vvv": cmd("lspci_vvv"), "nvidia_smi_qx": cmd("nvidia_smi_qx"),
                        "kernel_log_dmesg": cmd("kernel_log_dmesg")}, plan))
    _valid(bios_rules.pcie_root_ports({"lspci_vvv": cmd("lspci_vvv")}, plan))
    _valid(bios_rules.pcie_acs({"lspci_vvv": cmd("lspci_vvv")}, plan))
    _valid(bios_rules.power_profile({"cpuidle": tree("cpuidle"), "cpufreq": tree("cpufreq")}, plan))
    _valid(bios_rules.sriov({"sriov": tree("sriov")}, plan))
    _valid(bios_rules.secure_boot({"mokutil_sb_state": cmd("mokutil_sb_state"), "efi_secureboot": tree("efi_secureboot"),
                           "module_signing": tree("module_signing")}, plan))
    _valid(bios_rules.memory_channels({"dmidecode_17": cmd("dmidecode_17"), "smbios_memory": tree("smbios_memory")}, plan))
    _valid(os_rules.os_support({"os_release": cmd("os_release"), "kernel": cmd("kernel")}, plan))
    _valid(os_rules.kernel_headers({"kernel": cmd("kernel"), "kernel_build": tree("kernel_build")}, plan))
    _valid(os_rules.mount_options({"mounts": cmd("mounts"), "fstab": cmd("fstab")}, plan))
    _valid(os_rules.time_sync({"timedatectl": cmd("timedatectl"), "chronyc_tracking": cmd("chronyc_tracking")}, plan))
    _valid(os_rules.fstab_table(t, plan))
