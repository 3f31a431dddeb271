"""Tests of wizard/parsers/bmc.py on real ipmitool output (tests/data/bmc, PROVENANCE.md)."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from wizard.parsers import bmc

from tests.probe_data import DATA, text
from tests.strategies import TOOLS_FUZZ, inputs

BMC = DATA / "bmc"
BMC_REAL = sorted(BMC.glob("*.txt"))
TOKENS = ["|", " | ", "\n", "Asserted", "Deasserted", "Pre-Init", "0000000053", "12/14/22", "23:09:44 CET",
          "05:15:35 PM CEST", "Power Supply", "Memory #0x88", "Correctable ECC", "Redundancy Lost", " | 0Eh | ",
          " | ok  | ", " | cr  | ", " | ns  | ", "10.1", "degrees C", "RPM", "Watts", "discrete", "0x0180", "na",
          "9" * 400, "-", ".", ","]


def test_sel_elist_with_a_zone_and_a_two_digit_year():
    """ipmitool >= 1.8.19 prints %x and '%X %Z' (ipmitool#385): the year has two digits and the time a zone."""
    f = bmc.parse_sel(text(BMC / "ipmitool-sel-elist__quanta-t22hf-correctable-ecc-cet.txt"))
    (r,) = f.records
    assert (r.record_id, r.when, r.zone) == ("3a", dt.datetime(2022, 12, 14, 23, 9, 44), "CET")
    assert (r.sensor_type, r.sensor, r.event, r.direction) == ("Memory", "#0x88", "Correctable ECC (CPU0_G1)", "Asserted")
    assert not f.unread


def test_sel_list_splits_the_sensor_type_from_the_name_and_keeps_the_direction():
    f = bmc.parse_sel(text(BMC / "ipmitool-sel-elist__intel-server-fan-psu-redundancy-history-partial.txt"))
    by_id = {r.record_id: r for r in f.records}
    assert len(f.records) == 49 and not f.unread
    assert (by_id["29"].sensor_type, by_id["29"].sensor, by_id["29"].event) == ("Power Supply", "PS1 Status",
                                                                               "Power Supply AC lost")
    assert (by_id["d"].sensor_type, by_id["d"].sensor) == ("Management Subsystem Health", "BMC FW Health")
    assert by_id["1a"].direction == "Deasserted" and not by_id["1a"].asserted
    assert by_id["1a"].event == "Lower Critical going low"
    assert by_id["12"].event == "" and by_id["12"].sensor_type == "Version Change"


def test_sel_pre_init_and_twelve_hour_times():
    """One-line inputs copied from real published listings (stored copy ids 18034339998 and 10392895351, PROVENANCE.md
    `bmc/` section): a record logged before the BMC had the time, and a 1.8.19 listing in a 12-hour locale."""
    pre = bmc.parse_sel("   1 |  Pre-Init  |0000000053| Fan #0x03 | Lower Critical going low  | Asserted\n").records[0]
    assert pre.pre_init and pre.when is None and pre.sensor_type == "Fan" and pre.event == "Lower Critical going low"
    pm = bmc.parse_sel("  23 | 12/06/2024 | 10:06:50 PM EST | Fan #0x41 | Lower Critical going low  | Asserted\n"
                       ).records[0]
    assert (pm.when, pm.zone) == (dt.datetime(2024, 12, 6, 22, 6, 50), "EST")


def test_sel_empty_and_not_sel():
    f = bmc.parse_sel(text(BMC / "ipmitool-sel-list__proliant-dl360-g7-cleared-no-entries.txt"))
    assert f.empty_line == "SEL has no entries" and not f.records
    err = bmc.parse_sel(text(BMC / "ipmitool-sel-elist__dev-vm-no-ipmi-device.stderr.txt"))
    assert not err.records and err.unread == ("Could not open device at /dev/ipmi0 or /dev/ipmi/0 or "
                                              "/dev/ipmidev/0: No such file or directory",)


def test_sdr_elist_states_entity_and_units():
    f = bmc.parse_sdr(text(BMC / "ipmitool-sdr-elist-full__proliant-dl360-g7-psu1-failed-nonredundant.txt"))
    assert f.form == "elist" and len(f.readings) == 43 and not f.unread
    by = {r.name: r for r in f.readings}
    ps1 = by["Power Supply 1"]
    assert (ps1.entity_id, ps1.power_w, ps1.states) == (10, 0.0, ("Presence detected", "Failure detected"))
    assert by["Power Supplies"].states == ("Non-Redundant: Sufficient from Redundant",)
    assert (by["Temp 1"].temperature_c, by["Temp 1"].entity_id) == (20.0, 64)
    assert by["Temp 4"].status == "ns" and by["Temp 4"].value is None and by["Temp 4"].states == ("Disabled",)
    assert by["Fan Block 1"].unit == "percent" and by["Fan Block 1"].states == ("Transition to Running",)
    assert by["UID Light"].states == () and by["UID Light"].value is None


def test_sdr_list_and_sensor_thresholds():
    f = bmc.parse_sdr(text(BMC / "ipmitool-sdr-list-full__dell-r320-two-fans-0rpm-cr.txt"))
    assert f.form == "list" and len(f.readings) == 17
    fan = next(r for r in f.readings if r.name == "Fan3B")
    assert (fan.speed_rpm, fan.status) == (0.0, "cr")
    s = bmc.parse_sdr(text(BMC / "ipmitool-sensor__hpe-dl360p-g8-inlet-thresholds-partial.txt"))
    assert s.form == "sensor" and len(s.readings) == 10
    inlet = next(r for r in s.readings if r.name == "01-Inlet Ambient")
    assert (inlet.temperature_c, inlet.status, dict(inlet.thresholds)) == (32.0, "ok", {"unc": 40.0, "ucr": 42.0,
                                                                                       "unr": 46.0})
    assert s.readings[0].value is None and s.readings[0].unit == ""  # a discrete sensor: no reading in this table


SYNTHETIC_SDR_V_DISCRETE = """Locating sensor record...
Sensor ID              : PS1 Status (0x5a)
 Entity ID             : 10.1 (Power Supply)
 Sensor Type (Discrete): Power Supply (0x08)
 Sensor Reading        : 0h
 Event Message Control : Per-threshold
 States Asserted       : Power Supply
                         [Presence detected]
                         [Failure detected]
"""
"""synthetic_: the shape of ipmitool's ``sensor get`` on a discrete sensor (ipmi_sdr.c prints "States Asserted" and one
bracketed state per line), written for this test, not captured from a machine."""


def test_sdr_verbose_records_give_status_thresholds_and_states():
    """``ipmitool sdr -v`` (real: open-power/occ#6): each record's reading, Status word (Lower Non-Critical -> lnc)
    and thresholds; a discrete sensor's asserted states (synthetic_ shape of ``sensor get``)."""
    f = bmc.parse_sdr(text(DATA / "public" / "ipmitool__sdr-v-board-temp-lower-non-critical.txt"))
    assert f.form == "verbose" and bmc.detect_sdr(text(DATA / "public" /
                                                       "ipmitool__sdr-v-board-temp-lower-non-critical.txt")) > 0.8
    board = f.readings[0]
    assert (board.name, board.sensor_id, board.entity, board.temperature_c, board.status) == (
        "Board_Temp", "0xc", "7.0", 20.0, "lnc")
    assert dict(board.thresholds) == {"lnr": 0.0, "lcr": 10.0, "lnc": 20.0, "unc": 40.0, "ucr": 50.0, "unr": 60.0}
    assert board.line.startswith("Sensor ID") and f.readings[1].status == "ok"
    d = bmc.parse_sdr(SYNTHETIC_SDR_V_DISCRETE)
    assert d.form == "verbose" and d.readings[0].states == ("Presence detected", "Failure detected")
    assert d.readings[0].value is None and d.readings[0].entity_id == 10


def test_detectors_tell_sel_from_sdr():
    sel = text(BMC / "ipmitool-sel-list__idrac-psu-ac-lost-partial.txt")
    sdr = text(BMC / "ipmitool-sdr-elist__hpe-dl360-g10-healthy-partial.txt")
    assert bmc.detect_sel(sel) > 0.9 and bmc.detect_sdr(sel) == 0
    assert bmc.detect_sdr(sdr) > 0.9 and bmc.detect_sel(sdr) == 0
    assert bmc.detect_sel("") == bmc.detect_sdr("") == 0


@TOOLS_FUZZ
@given(inputs(BMC_REAL, TOKENS))
def test_bmc_parsers_never_raise(t):
    s = bmc.parse_sel(t)
    d = bmc.parse_sdr(t)
    assert all(r.line for r in s.records) and all(r.line for r in d.readings)
    assert 0 <= bmc.detect_sel(t) <= 1 and 0 <= bmc.detect_sdr(t) <= 1


def test_a_bmc_web_interface_event_line_is_a_record_of_its_sensor_type():
    """The real one-line Supermicro health-event ("Uncorrectable ECC / other uncorrectable memory error @P2-DIMMF1 -
    Assertion", round-10 held-out): the IPMI event text names a Memory event; the location after '@' is the sensor; no
    date. A synthetic_ dated line and a Deassertion read the same way."""
    from tests.probe_data import PUBLIC

    body = text(PUBLIC / "bmc-sel__uncorrectable-ecc-p2-dimmf1-assertion.txt")
    assert bmc.detect_sel(body) >= 0.7
    (r,) = bmc.parse_sel(body).records
    assert (r.sensor_type, r.sensor, r.direction, r.when) == ("Memory", "P2-DIMMF1", "Asserted", None)
    assert r.event.startswith("Uncorrectable ECC")
    synthetic = "2023/05/01 10:20:30 Correctable ECC @DIMMA1(CPU1) - Deasserted\n"
    (d,) = bmc.parse_sel(synthetic).records
    assert (d.sensor_type, d.sensor, d.direction, d.when) == ("Memory", "DIMMA1(CPU1)", "Deasserted",
                                                              dt.datetime(2023, 5, 1, 10, 20, 30))
    assert bmc.detect_sel("kernel: nvme0: I/O 12 QID 3 timeout, aborting\n") == 0.0


def test_ipmiutil_sel_records_are_read_with_their_sensor_type():
    """Real `ipmiutil sel` records (held-out round 13; the stored page ran the header onto the record's line):
    'Memory #08 Uncorrectable ECC, DIMM6/CPU1' is a Memory record; 'CPLD CATERR Asserted' a Processor one."""
    from tests.probe_data import PUBLIC

    (m,) = bmc.parse_sel(text(PUBLIC / "ipmiutil-sel__memory-uncorrectable-ecc-dimm6-cpu1.txt")).records
    assert (m.record_id, m.sensor_type, m.sensor, m.event) == ("7840", "Memory", "#08", "Uncorrectable ECC, DIMM6/CPU1")
    assert m.when == dt.datetime(2011, 8, 9, 15, 10, 47)
    (c,) = bmc.parse_sel(text(PUBLIC / "ipmiutil-sel__cpld-caterr-asserted-critical.txt")).records
    assert (c.sensor_type, c.event, c.direction) == ("Processor", "CPLD CATERR", "Asserted")


def test_freeipmi_ipmi_sel_is_read_with_its_state_column():
    """Held-out round 33 (thomas-krenn/check_ipmi_sensor_v3#66): FreeIPMI's `ipmi-sel --output-event-state` table
    (ID | Date | Time | Name | Type | State | Event, dates as "Dec-09-2024") is read as SEL records: the power supply
    failure and the chassis intrusions, with their times and the State column."""
    from tests.probe_data import PUBLIC, text
    from wizard.parsers.bmc import detect_sel, parse_sel

    t = text(PUBLIC / "ipmi-sel__psu2-failure-detected-chassis-intrusion.txt")
    assert detect_sel(t) >= 0.9
    sel = parse_sel(t)
    assert len(sel.records) == 3 and not sel.unread
    psu = sel.records[2]
    assert (psu.sensor_type, psu.sensor, psu.event, psu.direction, psu.detail) == (
        "Power Supply", "Power Supply 2 PS2 Status", "Power Supply Failure detected", "Asserted", "Critical")
    assert psu.when is not None and psu.when.isoformat() == "2024-12-09T21:12:29"


def test_freeipmi_ipmimonitoring_rows_are_read_as_sensor_readings():
    """FreeIPMI's ipmimonitoring table (real, held-out round 136: six fans at 4680 RPM, inlet 25 C, all Nominal): each
    row a reading with its state as ipmitool's status word; a Critical row (synthetic, built here) reads 'cr'."""
    from wizard.parsers.bmc import parse_sdr

    text = (DATA / "public" / "ipmimonitoring__dell-idrac-lan-2-0-six-fans-4680rpm-inlet-25c-all-nominal-partial.txt").read_text()
    f = parse_sdr(text)
    fans = [r for r in f.readings if r.name.startswith("Fan")]
    assert f.form == "freeipmi" and len(fans) == 6 and all(r.value == 4680.0 and r.status == "ok" for r in fans)
    hot = parse_sdr(text.replace("| Nominal  | 25.00      | C     | 'OK'",
                                 "| Critical | 55.00      | C     | 'At or Above (>=) Upper Critical Threshold'"))
    inlet = next(r for r in hot.readings if r.name == "Inlet Temp")
    assert inlet.status == "cr" and inlet.value == 55.0


def test_a_sel_in_a_cjk_locale_is_read_with_its_dates():
    """Held-out round 232 (real): ipmitool prints the date and time with the locale's %x %X ("2026年09月02日 |
    01時15分26秒 JST")."""
    from tests.probe_data import PUBLIC

    body = text(PUBLIC / "ipmitool-sel__supermicro-4028gr-trt-p100-uncorrectable-ecc-dimme1.txt")
    assert bmc.detect_sel(body) >= 0.8
    rec = bmc.parse_sel(body).records[0]
    assert rec.when == dt.datetime(2026, 9, 2, 1, 15, 26) and rec.zone == "JST" and "Uncorrectable ECC" in rec.event


def test_redfish_statuses_and_log_entries_are_read_from_one_document_or_json_lines():
    """Held-out round 232 (real): a Supermicro BMC's Memory resources as JSON lines, a Dell iDRAC system, an iDRAC
    Lifecycle log entry; a typed curl line before the JSON is skipped."""
    from tests.probe_data import PUBLIC

    mem = bmc.parse_redfish(text(PUBLIC / "redfish-memory__supermicro-x10drg-5-dimms-two-health-critical.txt"))
    assert mem.documents == 5 and [s.name for s in mem.statuses if s.health == "Critical"] == ["P1_DIMMA1", "P1_DIMMA2"]
    dell = bmc.parse_redfish(text(PUBLIC / "redfish-system__dell-r6515-idrac9-rollups-ok.txt"))
    assert any(s.top and s.health == "OK" for s in dell.statuses)
    assert {"MemorySummary", "ProcessorSummary"} <= {s.name for s in dell.statuses}
    log = bmc.parse_redfish(text(PUBLIC / "redfish-lclog__idrac-inlet-temperature-upper-warning.txt"))
    assert [e.severity for e in log.entries] == ["Warning"] and "inlet temperature" in log.entries[0].message
    assert bmc.detect_redfish('{"json_format_version": [1, 0]}') == 0.0
