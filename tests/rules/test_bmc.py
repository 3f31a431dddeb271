"""Tests of wizard/rules/bmc.py (health.bmc) on real ipmitool output (tests/data/bmc, PROVENANCE.md), and of the
probes on this machine, which has no BMC."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from hypothesis import given
from wizard.engine import run_checks
from wizard.explain import explain_text
from wizard.hosts import LocalHost
from wizard.model import Verdict, overall
from wizard.parsers.bmc import parse_sel
from wizard.probes import ProbeOutput
from wizard.rules import bmc

import steps
from tests.parsers.test_bmc import BMC, BMC_REAL, TOKENS
from tests.probe_data import PUBLIC, command_output, text
from tests.strategies import TOOLS_FUZZ, inputs

STEP = next(s for st in steps.STAGES for s in st.steps if s.id == "health.bmc")
NO_DEVICE = BMC / "ipmitool-sel-elist__dev-vm-no-ipmi-device.stderr.txt"


def sel(name: str, **exp) -> list:
    return bmc.sel({"ipmitool_sel": command_output("ipmitool_sel", BMC / name, "ipmitool sel elist")}, exp)


def sdr(name: str, probe: str = "ipmitool_sdr") -> dict[str, ProbeOutput]:
    return {probe: command_output(probe, BMC / name, "ipmitool sdr elist")}


def verdicts(findings) -> list[tuple[str, Verdict]]:
    return [(f.id, f.verdict) for f in findings]


# ------------------------------------------------------------------ SEL


def test_a_psu_that_lost_ac_since_the_build_started_fails():
    f = sel("ipmitool-sel-list__idrac-psu-ac-lost-partial.txt", build_started="2020-02-01T00:00:00+00:00")
    assert verdicts(f) == [("health.bmc_sel", Verdict.FAIL)]
    assert "Power Supply AC lost" in f[0].message and "offset 03h" in f[0].message
    assert f[0].key and "11 | 02/06/2020" in "\n".join(f[0].evidence)


def test_records_from_before_the_build_are_history_not_failures():
    f = sel("ipmitool-sel-list__idrac-psu-ac-lost-partial.txt", build_started="2021-01-01T00:00:00+00:00")
    assert verdicts(f) == [("health.bmc_sel", Verdict.PASS)]
    assert "1 fault record from before the build started" in f[0].message


def test_the_bmc_clock_zone_is_unknown_so_a_record_within_14_hours_counts():
    """The record is 02/06/2020 18:30:50 on the BMC's clock: 11.5 h before a start at 06:00 the next morning may
    still be after it in another zone; 15.5 h before is history."""
    near = sel("ipmitool-sel-list__idrac-psu-ac-lost-partial.txt", build_started="2020-02-07T06:00:00+00:00")
    far = sel("ipmitool-sel-list__idrac-psu-ac-lost-partial.txt", build_started="2020-02-07T10:00:00+00:00")
    assert overall(near) is Verdict.FAIL and overall(far) is Verdict.PASS
    assert bmc.SEL_CLOCK_SLACK_H == 14


def test_deasserted_faults_are_history_and_the_rest_fail_by_severity():
    f = sel("ipmitool-sel-elist__intel-server-fan-psu-redundancy-history-partial.txt",
            build_started="2014-06-03T00:00:00+00:00")
    bad = {(x.verdict, x.subject) for x in f if x.verdict is not Verdict.PASS}
    assert bad == {(Verdict.FAIL, "BMC Power Unit #0x02"), (Verdict.WARN, "BMC Power Unit #0x02"),
                   (Verdict.FAIL, "BMC Power Supply PS1 Status")}
    (hist,) = [x for x in f if x.verdict is Verdict.PASS]
    assert "6 faults asserted and later deasserted" in hist.message and "Fan #0x38: Lower Critical going low" in hist.message
    later = sel("ipmitool-sel-elist__intel-server-fan-psu-redundancy-history-partial.txt",
                build_started="2014-07-01T00:00:00+00:00")
    assert verdicts(later) == [("health.bmc_sel", Verdict.PASS)]
    assert "before the build started" in later[0].message and "6 faults asserted and later deasserted" in later[0].message


def test_an_acknowledged_record_no_longer_counts():
    first = sel("ipmitool-sel-list__idrac-psu-ac-lost-partial.txt")
    assert overall(first) is Verdict.FAIL
    f = sel("ipmitool-sel-list__idrac-psu-ac-lost-partial.txt", acknowledged=frozenset(first[0].key.split(",")))
    assert verdicts(f) == [("health.bmc_sel", Verdict.PASS)] and "1 acknowledged by the operator" in f[0].message


def test_uncorrectable_machine_checks_fail_and_undecoded_temperature_events_warn():
    f = sel("ipmitool-sel-list__fboss-uncorrectable-mce-head-tail-partial.txt")
    assert sorted(verdicts(f)) == [("health.bmc_sel", Verdict.FAIL), ("health.bmc_sel", Verdict.WARN)]
    fail = next(x for x in f if x.verdict is Verdict.FAIL)
    assert "Uncorrectable machine check exception" in fail.message and "4 times" in fail.message
    assert "no build start to compare with" in fail.message


def test_correctable_ecc_warns_and_a_healthy_or_empty_log_passes():
    assert verdicts(sel("ipmitool-sel-list__proliant-dl360-g7-ce-logging-limit.txt")) == [("health.bmc_sel", Verdict.WARN)]
    assert verdicts(sel("ipmitool-sel-elist__quanta-t22hf-correctable-ecc-cet.txt")) == [("health.bmc_sel", Verdict.WARN)]
    assert verdicts(sel("ipmitool-sel-list__openpower-firmware-progress-healthy-partial.txt")) == [
        ("health.bmc_sel", Verdict.PASS)]
    empty = sel("ipmitool-sel-list__proliant-dl360-g7-cleared-no-entries.txt")
    assert verdicts(empty) == [("health.bmc_sel", Verdict.PASS)] and "empty" in empty[0].message


def test_a_pre_init_fault_has_no_time_so_it_warns_at_most():
    """A real Pre-Init record (stored copy id 18034339998): a fan below its critical threshold while the BMC started."""
    line = "   1 |  Pre-Init  |0000000053| Fan #0x03 | Lower Critical going low  | Asserted\n"
    f = bmc.judge_sel(parse_sel(line), {"build_started": "2026-01-01T00:00:00+00:00"})
    assert verdicts(f) == [("health.bmc_sel", Verdict.WARN)] and "Pre-Init" in f[0].message


def test_a_bmc_that_does_not_answer_is_unknown_never_pass():
    out = ProbeOutput("ipmitool_sel", "$ ipmitool sel elist", rc=None, error="timed out after 15 s")
    (f,) = bmc.sel({"ipmitool_sel": out}, {})
    assert f.verdict is Verdict.UNKNOWN and "did not answer in time" in f.message and "mc reset" in f.remedy


# ------------------------------------------------------------------ sensors


def test_a_failed_psu_and_lost_redundancy_from_sdr_elist():
    f = bmc.psu(sdr("ipmitool-sdr-elist-full__proliant-dl360-g7-psu1-failed-nonredundant.txt"), {})
    assert verdicts(f) == [("health.bmc_psu", Verdict.FAIL), ("health.bmc_psu", Verdict.WARN)]
    assert f[0].subject == "BMC Power Supply 1" and "Failure detected" in f[0].message
    assert "Non-Redundant: Sufficient from Redundant" in f[1].message
    s = bmc.sensors(sdr("ipmitool-sdr-elist-full__proliant-dl360-g7-psu1-failed-nonredundant.txt"), {})
    mem = [x for x in s if x.verdict is Verdict.WARN]
    assert len(mem) == 1 and "Correctable ECC logging limit reached" in mem[0].message


def test_ipmitool_sensor_discrete_state_bits_of_a_power_supply_are_decoded():
    """`ipmitool sensor` prints a discrete sensor's state as hex ("0x0100": offset 0 asserted); for a supply those are
    the Power Supply offsets of IPMI v2.0 table 42-3. The lines are synthetic_ (the column layout of ipmitool's
    real `sensor` output, one state byte changed)."""
    row = "PS1 Status       | 0x1        | discrete   | 0x{bits}| na        | na        | na        | na        | na        | na"
    from wizard.parsers.bmc import parse_sdr

    def judged(bits: str):
        return bmc.judge_psu(parse_sdr(row.format(bits=bits)), "$ ipmitool sensor")

    present = judged("0100")
    assert verdicts(present) == [("health.bmc_psu", Verdict.PASS)] and "1 present" in present[0].message
    failed = judged("0300")  # offsets 0 and 1: present, failure detected
    assert verdicts(failed) == [("health.bmc_psu", Verdict.FAIL)] and "Failure detected" in failed[0].message
    lost = judged("0900")  # offset 3: AC lost
    assert verdicts(lost) == [("health.bmc_psu", Verdict.FAIL)] and "AC lost" in lost[0].message
    # a discrete sensor that is not a supply: its bits are not read as a supply's
    other = parse_sdr(row.replace("PS1 Status", "Chassis Intru").format(bits="0100"))
    assert other.readings[0].state_bits == 1 and bmc.judge_psu(other)[0].verdict is Verdict.SKIP


def test_two_fans_at_0_rpm_fail_and_the_inlet_is_shown():
    f = bmc.sensors(sdr("ipmitool-sdr-list-full__dell-r320-two-fans-0rpm-cr.txt"), {})
    fails = [x for x in f if x.verdict is Verdict.FAIL]
    assert [x.subject for x in fails] == ["BMC Fan3B", "BMC Fan4B"] and all("status cr" in x.message for x in fails)
    inlet = next(x for x in f if x.measured is not None)
    assert inlet.verdict is Verdict.PASS and (inlet.measured.value, inlet.measured.threshold) == (32.0, None)
    assert bmc.psu(sdr("ipmitool-sdr-list-full__dell-r320-two-fans-0rpm-cr.txt"), {})[0].verdict is Verdict.SKIP


def test_the_inlet_is_measured_against_the_sensors_own_upper_threshold():
    outs = sdr("ipmitool-sensor__hpe-dl360p-g8-inlet-thresholds-partial.txt", "ipmitool_sensor")
    f = bmc.sensors(outs, {})
    inlet = next(x for x in f if x.measured is not None)
    m = inlet.measured
    assert (m.value, m.threshold, m.unit, m.direction) == (32.0, 40.0, "°C", "at_most")
    assert inlet.verdict is Verdict.PASS and "unc threshold 40" in inlet.message
    assert overall(f) is Verdict.PASS


def test_a_healthy_sdr_passes_and_says_what_it_did_not_judge():
    f = bmc.sensors(sdr("ipmitool-sdr-elist__hpe-dl360-g10-healthy-partial.txt"), {})
    assert overall(f) is Verdict.PASS
    summary = f[-1].message
    assert "7 temperature sensors within the BMC's thresholds" in summary and "6 sensors without a reading" in summary


# ------------------------------------------------------------------ no BMC


def _fake_ipmitool(d: Path) -> None:
    """An ipmitool that prints what the real one printed on the dev VM (no /dev/ipmi0) and exits 1."""
    tool = d / "ipmitool"
    tool.write_text(f"#!/bin/sh\n/bin/cat '{NO_DEVICE}' >&2\nexit 1\n")
    tool.chmod(0o755)


def _check(env_path: str, monkeypatch) -> list:
    monkeypatch.setenv("PATH", env_path)
    results, _ = asyncio.run(run_checks(LocalHost(), [STEP], {}))
    return results["health.bmc"]


def _smbios(*entries: str) -> ProbeOutput:
    """The smbios_ipmi probe's listing: /sys/firmware/dmi/entries and the given entries under it."""
    paths = ["/sys/firmware/dmi/entries"] + [f"/sys/firmware/dmi/entries/{e}" for e in entries]
    return ProbeOutput("smbios_ipmi", "ls -d /sys/firmware/dmi/entries ...", text="\n".join(paths),
                       files={p: "" for p in paths})


NO_SMBIOS = ProbeOutput("smbios_ipmi", "ls -d /sys/firmware/dmi/entries ...")


def _no_device(smbios: ProbeOutput, **more: ProbeOutput) -> list:
    out = ProbeOutput("ipmitool_sel", "$ ipmitool sel elist", rc=1, stderr=text(NO_DEVICE))
    return bmc.sel({"ipmitool_sel": out, "smbios_ipmi": smbios, **more}, {})


def test_no_ipmi_device_with_a_bmc_declared_in_smbios_is_unknown_with_modprobe():
    (f,) = _no_device(_smbios("0-0", "17-0", "38-0"))
    assert f.id == "health.bmc" and f.verdict is Verdict.UNKNOWN
    assert "Could not open device at /dev/ipmi0" in f.message and "type 38" in f.message
    assert "modprobe ipmi_devintf" in f.remedy and "ipmi_si" in f.remedy and "install ipmitool" not in f.remedy.lower()
    assert "exit status 1" in f.evidence


def test_no_type_38_or_a_vm_is_a_skip_and_unreadable_smbios_is_unknown():
    (f,) = _no_device(_smbios("0-0", "17-0"))
    assert f.verdict is Verdict.SKIP and "no BMC declared in SMBIOS" in f.message
    vm = ProbeOutput("dmi", "/sys/class/dmi/id", files={"/sys/class/dmi/id/sys_vendor": "QEMU\n",
                                                          "/sys/class/dmi/id/product_name": "Standard PC (Q35 + ICH9, 2009)\n"})
    (f,) = _no_device(NO_SMBIOS, dmi=vm)
    assert f.verdict is Verdict.SKIP and "virtual machine" in f.message and "QEMU" in f.message
    (f,) = _no_device(NO_SMBIOS)
    assert f.verdict is Verdict.UNKNOWN and "SMBIOS tables could not be read" in f.message


def test_the_live_check_with_no_ipmi_device_says_load_the_drivers(tmp_path, monkeypatch):
    _fake_ipmitool(tmp_path)
    f = _check(str(tmp_path), monkeypatch)
    assert [x.id for x in f] == ["health.bmc"] and "Could not open device at /dev/ipmi0" in f[0].message
    assert f[0].verdict in (Verdict.SKIP, Verdict.UNKNOWN)
    if f[0].verdict is Verdict.UNKNOWN:
        assert "modprobe ipmi_devintf" in f[0].remedy


def test_no_ipmitool_with_a_bmc_declared_says_install_it():
    out = ProbeOutput("ipmitool_sel", "$ ipmitool sel elist", error="command not found: ipmitool")
    (f,) = bmc.sel({"ipmitool_sel": out, "smbios_ipmi": _smbios("38-0")}, {})
    assert f.verdict is Verdict.UNKNOWN and "ipmitool is not installed" in f.message
    assert "apt install ipmitool" in f.remedy and "modprobe" not in f.remedy


def test_the_live_check_without_ipmitool_never_passes_or_skips_a_declared_bmc(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty PATH directory: no ipmitool
    results, outs = asyncio.run(run_checks(LocalHost(), [STEP], {}))
    f = results["health.bmc"]
    assert [x.id for x in f] == ["health.bmc"] and "ipmitool is not installed" in f[0].message
    has = bmc.declared(outs)[0]
    assert f[0].verdict is (Verdict.SKIP if has in ("no", "vm") else Verdict.UNKNOWN), (has, f[0].message)
    assert "smbios_ipmi" in outs


@pytest.mark.skipif(any(os.path.exists(p) for p in ("/dev/ipmi0", "/dev/ipmi/0", "/dev/ipmidev/0")),
                    reason="this machine has an IPMI device")
def test_this_machine_without_a_bmc_is_never_passed():
    """The real probes on this machine (no IPMI device; ipmitool installed or not)."""
    results, outs = asyncio.run(run_checks(LocalHost(), [STEP], {}))
    f = results["health.bmc"]
    assert [x.id for x in f] == ["health.bmc"] and f[0].verdict in (Verdict.SKIP, Verdict.UNKNOWN)
    assert ("ipmitool is not installed" in f[0].message) or ("Could not open device" in f[0].message)
    assert {"ipmitool_sel", "ipmitool_sdr", "ipmitool_sensor", "smbios_ipmi"} <= set(outs)


def test_permission_denied_says_run_as_root():
    out = ProbeOutput("ipmitool_sel", "$ ipmitool sel elist", rc=1,
                      stderr=text(NO_DEVICE).replace("No such file or directory", "Permission denied"))
    (f,) = bmc.sel({"ipmitool_sel": out, "smbios_ipmi": _smbios("38-0")}, {})
    assert f.verdict is Verdict.UNKNOWN and "root" in f.remedy and "Permission denied" in f.message


def test_pasted_ipmitool_errors_are_recognised_and_judged_like_the_live_check():
    r = explain_text(text(NO_DEVICE))
    assert r.kind == "ipmitool-error" and r.verdict is Verdict.UNKNOWN
    assert "modprobe ipmi_devintf" in r.findings[0].remedy
    r = explain_text("Error: Unable to establish IPMI v2 / RMCP+ session\n")
    assert r.kind == "ipmitool-error" and r.verdict is Verdict.UNKNOWN and "RMCP+" in r.findings[0].remedy


def test_impossible_sensor_figures_are_a_sensor_fault_not_ok():
    body = text(BMC / "ipmitool-sdr-elist__hpe-dl360-g10-healthy-partial.txt")
    line = next(ln for ln in body.splitlines() if "degrees C" in ln and "| ok" in ln)
    value = line.split("|")[-1].strip().split()[0]
    odd = body.replace(line, line.replace(f"{value} degrees C", "999 degrees C"))
    f = bmc.sensors({"ipmitool_sdr": ProbeOutput("ipmitool_sdr", "$ ipmitool sdr elist", text=odd, rc=0)}, {})
    bad = [x for x in f if x.verdict is Verdict.WARN]
    assert len(bad) == 1 and "999" in bad[0].message and "150" in bad[0].message
    assert not any("hottest" in x.message and "999" in x.message for x in f)


def test_sel_garbage_rows_and_impossible_dates_are_counted_and_said():
    body = text(BMC / "ipmitool-sel-list__idrac-psu-ac-lost-partial.txt")
    first = next(ln for ln in body.splitlines() if ln.strip())
    date = first.split("|")[1].strip()
    odd = body.replace(first, first.replace(date, "13/45/2024"), 1) + "\n\x00garbage row !!\n"
    f = bmc.judge_sel(parse_sel(odd), {"build_started": "2000-01-01T00:00:00+00:00"})
    assert any(x.verdict is Verdict.UNKNOWN and "could not be read as records" in x.message for x in f)
    assert any("13/45/2024" in x.message and "cannot be" in x.message for x in f)


# ------------------------------------------------------------------ explain


def test_explain_judges_pasted_sel_and_sdr_with_the_same_rules():
    r = explain_text(text(BMC / "ipmitool-sdr-elist-full__proliant-dl360-g7-psu1-failed-nonredundant.txt"))
    assert r.verdict is Verdict.FAIL and {f.id for f in r.findings} >= {"health.bmc_psu", "health.bmc_sensors"}
    r = explain_text(text(BMC / "ipmitool-sel-list__idrac-psu-ac-lost-partial.txt"))
    assert r.verdict is Verdict.FAIL and r.findings[0].id == "health.bmc_sel"


@TOOLS_FUZZ
@given(inputs(BMC_REAL, TOKENS))
def test_bmc_judges_never_raise_and_always_cite(t):
    for f in bmc.judge_sel_text(t, {"build_started": "2020-01-01T00:00:00+00:00"}) + bmc.judge_sdr_text(t, {}):
        assert f.source and f.subject and f.id.startswith("health.bmc")
        assert f.verdict is Verdict.PASS or f.remedy


def test_thresholds_that_did_not_come_are_said_with_the_inlet():
    outs = sdr("ipmitool-sdr-list-full__dell-r320-two-fans-0rpm-cr.txt")
    outs["ipmitool_sensor"] = ProbeOutput("ipmitool_sensor", "$ ipmitool sensor", rc=124, error="timed out after 15 s")
    inlet = next(x for x in bmc.sensors(outs, {}) if x.measured is not None)
    assert "ipmitool sensor` gave none (timed out after 15 s)" in inlet.message and inlet.measured.threshold is None


def test_a_listing_of_one_sensor_type_is_judged_on_what_it_shows():
    """`ipmitool sdr type "Voltage" list` (real: the Fuel monitoring guide, held-out round 8): every voltage reads ok,
    the second socket's sensors read "ns" (absent): pass on the voltages, saying fans and temperatures are not in it."""
    from tests.probe_data import PUBLIC

    r = explain_text(text(PUBLIC / "ipmitool__sdr-voltage-all-ok-cpu2-absent.txt"), "sdr")
    f = next(f for f in r.findings if f.id == "health.bmc_sensors")
    assert f.verdict is Verdict.PASS and r.verdict is Verdict.PASS
    assert "12 sensor(s) (voltage) read ok" in f.message and "3 sensors without a reading" in f.message
    assert "no fan or temperature sensor" in f.message
    # the same listing with one voltage out of range: that sensor's status decides
    bad = text(PUBLIC / "ipmitool__sdr-voltage-all-ok-cpu2-absent.txt").replace("| 37h | ok  |", "| 37h | cr  |")
    assert explain_text(bad, "sdr").verdict is Verdict.FAIL


def test_a_reading_below_its_lower_threshold_quotes_that_threshold_and_is_not_called_overheating():
    """The real `sdr -v` of a board temperature at 20 C asserted Lower Non-Critical (round 9; the reviewer's walk found
    the upper threshold quoted and the overheating advice)."""
    from tests.probe_data import PUBLIC, text
    from wizard.explain import explain_text

    r = explain_text(text(PUBLIC / "ipmitool__sdr-v-board-temp-lower-non-critical.txt"))
    (f,) = [f for f in r.findings if f.id == "health.bmc_sensors"]
    assert f.verdict is Verdict.WARN and "its lnc threshold is 20" in f.message and "unc" not in f.message
    assert "Not an overheating" in f.remedy and f.message.startswith("BMC Board_Temp (temperature)")


@pytest.mark.parametrize("name, verdict, phrase", [
    # FreeIPMI ipmi-sel -i of a full SEL (909 entries, 0 bytes free): new events are lost until it is cleared
    ("ipmitool-sel-info__freeipmi-sel-full-909-entries-0-free.txt", Verdict.WARN, "the BMC event log is full"),
    # ipmitool sel info, 12 % used, no overflow: room, and the pass says the events themselves were not read
    ("ipmitool-sel-info__sel-12pct-used-no-overflow.txt", Verdict.PASS, "not what it holds"),
])
def test_sel_info_says_how_full_the_log_is(name, verdict, phrase):
    from tests.probe_data import PUBLIC, text

    r = explain_text(text(PUBLIC / name), name)
    assert r.kind == "ipmitool-sel-info"
    assert [(f.id, f.verdict) for f in r.findings] == [("health.bmc_sel", verdict)]
    assert phrase in r.findings[0].message and "31.2" in r.findings[0].source


def test_sel_info_overflow_flag_warns_even_with_free_space():
    """ipmitool's Overflow flag (IPMI Get SEL Info: events were dropped) on the real 12 %-used report (synthetic edit)."""
    from tests.probe_data import PUBLIC, text
    from wizard.rules.bmc import judge_sel_info_text

    t = text(PUBLIC / "ipmitool-sel-info__sel-12pct-used-no-overflow.txt").replace("Overflow         : false",
                                                                                   "Overflow         : true")
    f = judge_sel_info_text(t, {})
    assert f[0].verdict is Verdict.WARN and "overflowed" in f[0].message


@pytest.mark.parametrize("sensor_type", ["Drive Slot / Bay", "Drive Slot (Bay)"])
def test_a_drive_fault_fails_and_a_predictive_failure_warns_whatever_ipmitool_calls_the_drive_slot(sensor_type):
    """Held-out round 29: `Drive Slot / Bay #0x44 | Drive Fault | Asserted` passed, because the rule's sensor type
    matched only a bare "Drive Slot", which ipmitool never prints (IPMI v2.0 table 42-3, sensor type 0Dh; ipmitool prints "Drive Slot / Bay").
    Synthetic rows in the shape of that real SEL."""
    fault = f" 548 | 03/26/2025 | 14:11:40 | {sensor_type} #0x44 | Drive Fault | Asserted\n"
    predictive = f" 547 | 03/16/2025 | 02:18:29 | {sensor_type} #0x44 | Predictive Failure | Asserted\n"
    assert overall(bmc.judge_sel(parse_sel(fault), {})) is Verdict.FAIL
    assert overall(bmc.judge_sel(parse_sel(predictive), {})) is Verdict.WARN


def test_ipmitool_sel_get_records_are_read_as_the_sel():
    """Held-out r39 #09: `ipmitool sel get 0x146` (a "SEL Record ID" block, then the sensor's SDR lines) was not
    recognised. Its Memory sensor's "Transition to Non-recoverable" assertion fails like the same elist row."""
    from tests.probe_data import PUBLIC, text
    from wizard.parsers.bmc import parse_sel

    body = text(PUBLIC / "ipmitool-sel-get__aarch64-node-ras-memory-non-recoverable.txt")
    (rec,) = parse_sel(body).records
    assert (rec.record_id, rec.sensor_type, rec.event, rec.direction) == ("0146", "Memory",
                                                                          "Transition to Non-recoverable", "Asserted")
    e = explain_text(body)
    assert e.kind == "ipmitool-sel" and e.verdict is Verdict.FAIL


def test_a_chassis_intrusion_left_asserted_warns_and_a_supply_whose_redundancy_came_back_warns():
    """Held-out round 43: a General Chassis Intrusion asserted and never deasserted warns (confirm it was your own
    service work); a power supply's "Failure detected" / "AC lost" asserted but followed by the power supplies'
    "Redundancy Lost" deasserted is a supply that failed and came back: a warning naming the record, not a fail."""
    from tests.probe_data import PUBLIC

    intr = explain_text(text(PUBLIC / "ipmitool-sel__supermicro-x10dru-fan-lnr-chassis-intrusion.txt"), "x")
    warned = [f for f in intr.findings if f.verdict is Verdict.WARN]
    assert intr.verdict is Verdict.WARN and len(warned) == 1
    assert "General Chassis intrusion" in warned[0].message and "service work" in warned[0].remedy
    back = explain_text(text(PUBLIC / "ipmitool-sel__psu-failure-ac-lost-redundancy-flap.txt"), "x")
    psu = [f for f in back.findings if f.verdict is Verdict.WARN]
    assert back.verdict is Verdict.WARN and len(psu) == 2
    assert all("redundancy came back after it (Power Supply #0x3e: Redundancy Lost Deasserted" in f.message
               for f in psu)
    # without the later deassertion, the same failure fails
    cut = "\n".join(ln for ln in text(PUBLIC / "ipmitool-sel__psu-failure-ac-lost-redundancy-flap.txt").splitlines()
                    if "11:28:06" not in ln and "11:25:41" not in ln)
    assert explain_text(cut, "x").verdict is Verdict.FAIL


def test_chassis_status_faults_fail_intrusion_warns_and_a_clear_one_passes():
    """Held-out round 56: `ipmitool chassis status` (power on, every fault false) passes, naming what was read; the
    same rows with a cooling/fan fault (in memory) fail, an asserted chassis intrusion warns, power off warns."""
    from tests.probe_data import PUBLIC

    body = text(PUBLIC / "chassis-status__power-on-no-faults.txt")
    r = explain_text(body)
    assert r.kind == "ipmitool-chassis-status" and r.verdict is Verdict.PASS
    assert "no chassis fault" in r.findings[0].message
    fan = explain_text(body.replace("Cooling/fan fault                   : false", "Cooling/fan fault                   : true"))
    assert fan.verdict is Verdict.FAIL and "cooling/fan fault" in fan.findings[0].message
    lid = explain_text(body.replace("Chassis intrusion                   : inactive",
                                    "Chassis intrusion                   : active"))
    assert lid.verdict is Verdict.WARN and "chassis intrusion" in lid.findings[0].message
    off = explain_text(body.replace("System Power                        : on", "System Power                        : off"))
    assert off.verdict is Verdict.WARN and "power off" in off.findings[0].message


def test_a_power_supply_only_sdr_listing_passes_without_an_unknown_for_fans():
    """Held-out round 91 (real `ipmitool sdr type "Power Supply"` of a Dell): both supplies present, Fully Redundant.
    health.bmc_psu passes; the listing has no fan or temperature by its nature, so health.bmc_sensors is a skip that
    says so (it was unknown, making a healthy listing unknown); since held-out round 150 a listing of state sensors
    that the BMC rates ok each passes, saying it holds no fan or temperature reading."""
    from wizard.explain import explain_text

    r = explain_text(text(PUBLIC / "ipmitool-sdr-type-power-supply__dell-ps-fully-redundant-both-present.txt"), "p")
    by = {f.id: f for f in r.findings}
    assert by["health.bmc_psu"].verdict is Verdict.PASS and r.verdict is Verdict.PASS
    f = by["health.bmc_sensors"]
    assert f.verdict is Verdict.PASS and "state sensor(s), the BMC's status ok for each" in f.message
    assert "no fan or temperature reading" in f.message


def test_presence_sensors_of_modules_not_fitted_are_not_faults():
    """Held-out round 150: FreeIPMI rates 'SAS Mod Presence' Critical with 'Device Absent'; ipmitool says ok."""
    for name in ("ipmi-sensors-output-sensor-state__sas-ocp-mod-presence-critical-device-absent.txt",
                 "ipmitool-sdr-elist__ocp-sas-mod-presence-ok-device-absent.txt"):
        r = explain_text(text(PUBLIC / name))
        f = next(f for f in r.findings if f.id == "health.bmc_sensors")
        assert f.verdict is Verdict.PASS and "Device Absent" in f.message, name


def test_thermal_margin_sensors_are_not_temperatures():
    """Held-out round 150: Intel S2600 'P1 Therm Margin -65' is degrees below the throttle point."""
    r = explain_text(text(PUBLIC / "ipmitool-sdr__intel-s2600-dual-xeon-mic-slots-all-ok.txt"))
    assert r.verdict is Verdict.PASS and not any("Therm" in f.message and f.verdict is Verdict.WARN for f in r.findings)


def test_comma_separated_sel_is_read():
    r = explain_text(text(PUBLIC / "ipmi-sel__supermicro-fana-lower-critical-non-recoverable-flapping-partial.txt"))
    assert r.kind == "ipmitool-sel" and r.verdict is Verdict.FAIL
    assert any("FANA" in f.message and "Lower Critical Going Low" in f.message for f in r.findings)


def test_redfish_a_critical_component_fails_a_bare_rollup_warns_log_severities_count_and_all_ok_passes():
    """Held-out round 232 (real): two DIMMs at Health Critical; a system rolled up to Critical with its CPU and memory
    summaries OK (the BMC does not say what); an iDRAC log entry at Warning; a Dell system whose every Status is OK; a
    collection of links (no Status: unknown)."""
    def judge(name: str) -> list:
        return bmc.judge_redfish_text(text(PUBLIC / name), {})

    (dimms,) = judge("redfish-memory__supermicro-x10drg-5-dimms-two-health-critical.txt")
    assert dimms.verdict is Verdict.FAIL and "P1_DIMMA1, P1_DIMMA2" in dimms.message
    (rollup,) = judge("redfish-system__supermicro-sys-510t-health-critical.txt")
    assert rollup.verdict is Verdict.WARN and "no component in this document says which" in rollup.message
    (entry,) = judge("redfish-lclog__idrac-inlet-temperature-upper-warning.txt")
    assert entry.id == "health.bmc_sel" and entry.verdict is Verdict.WARN
    (ok,) = judge("redfish-system__dell-r6515-idrac9-rollups-ok.txt")
    assert ok.verdict is Verdict.PASS and "Health OK" in ok.message
    (links,) = judge("redfish-processors__witherspoon-ac922-2cpu-6x-gv100.txt")
    assert links.verdict is Verdict.UNKNOWN


def test_a_sensor_listing_of_a_powered_off_host_is_unknown_not_a_pass():
    """Held-out round 232 (real): a Huawei RH2288 V3's sdr elist with ACPI State "S4/S5: soft-off" and 65 sensors
    without a reading: the few that read (inlet, outlet) cannot show how the running host keeps cool."""
    fs = [f for f in explain_text(text(PUBLIC / "ipmitool-sdr-elist__huawei-rh2288v3-host-soft-off-no-readings.txt"))
          .findings if f.id == "health.bmc_sensors" and "sensors without a reading" in f.message]
    assert [f.verdict for f in fs] == [Verdict.UNKNOWN] and "powered off" in fs[0].message
