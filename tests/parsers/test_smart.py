"""wizard/parsers/smart.py: smartctl's text (-a, -x) and JSON (-j) outputs of ATA, NVMe drives read into one set of
facts (real outputs, tests/data/public, PROVENANCE.md)."""

from __future__ import annotations

from wizard.parsers.smart import detect_smartctl, parse_smartctl

from tests.probe_data import PUBLIC, text


def test_ata_text_reads_overall_attributes_when_failed_and_the_self_test_log() -> None:
    (d,) = parse_smartctl(text(PUBLIC / "smartctl__st32000542as-health-failed.txt")).devices
    assert (d.model, d.protocol, d.overall) == ("ST32000542AS", "ATA", False)
    by = {a.id: a for a in d.attrs}
    assert (by[5].value, by[5].thresh, by[5].when_failed, by[5].raw) == (4, 36, "FAILING_NOW", 3956)
    assert d.self_tests and d.self_tests[0].failed and "unknown failure" in d.self_tests[0].status


def test_x_format_brief_fail_column_and_raw_values_with_extras() -> None:
    (d,) = parse_smartctl(text(PUBLIC / "smartctl__seagate-hdd-passed-but-8-reported-uncorrect.txt")).devices
    by = {a.id: a for a in d.attrs}
    assert d.overall is True and by[187].raw == 8 and by[190].raw == 33 and by[5].when_failed == ""
    (d,) = parse_smartctl(text(PUBLIC / "smartctl__ironwolf-12tb-health-failed.txt")).devices
    assert {a.id: a for a in d.attrs}[200].when_failed == "FAILING_NOW"  # -x prints NOW


def test_nvme_text_and_json_read_the_same_health_log_fields() -> None:
    (t,) = parse_smartctl(text(PUBLIC / "smartctl__samsung-970evo-nvme-media-errors.txt")).devices
    assert t.protocol == "NVMe" and t.nvme["media_errors"] == 71 and t.nvme["available_spare_threshold"] == 10
    (j,) = parse_smartctl(text(PUBLIC / "smartctl__sabrent-rocket-nvme-json.txt")).devices
    assert j.protocol == "NVMe" and j.overall is True
    assert (j.nvme["num_err_log_entries"], j.nvme["unsafe_shutdowns"], j.nvme["percentage_used"]) == (4871, 39, 4)
    (a,) = parse_smartctl(text(PUBLIC / "smartctl__seagate-6tb-megaraid-json.txt")).devices
    assert a.overall is True and len(a.attrs) > 10 and {x.id for x in a.attrs} >= {5, 197, 198}


def test_detect_and_garbage_never_raise() -> None:
    assert detect_smartctl(text(PUBLIC / "smartctl__hitachi-1tb-realloc-crc.txt")) >= 0.9
    assert detect_smartctl(text(PUBLIC / "smartctl__sabrent-rocket-nvme-json.txt")) >= 0.9
    assert detect_smartctl("hello\nworld\n") == 0.0
    assert parse_smartctl("{not json").problems
    (d,) = parse_smartctl("smartctl 7.3 2022-02-28 r5338 [x86_64-linux] (local build)\n/dev/sdz: Unable to detect "
                          "device type\n").devices  # synthetic_: smartctl's message for a device it cannot open
    assert not d.has_health and d.notes


def test_a_command_line_above_the_banner_belongs_to_the_drive_below_it():
    """`# smartctl -A /dev/nvme0` typed above the output is not a drive of its own (it was judged 'no health data')."""
    from tests.probe_data import PUBLIC, text
    from wizard.parsers.smart import parse_smartctl

    report = parse_smartctl(text(PUBLIC / "smartctl__nvme-intel-dc-healthy-0pct-used.txt"))
    assert len(report.devices) == 1 and report.devices[0].has_health


def test_a_sas_error_counter_log_gives_the_uncorrected_totals():
    """smartctl -a on a SAS drive (the text form of scsi_error_counter_log): the last column of each row is the
    total of uncorrected errors (round 21: a SAS drive's health rests on them)."""
    from wizard.parsers.smart import parse_smartctl

    text = """=== START OF READ SMART DATA SECTION ===
SMART Health Status: OK

Elements in grown defect list: 0

Error counter log:
           Errors Corrected by           Total   Correction     Gigabytes    Total
               ECC          rereads/    errors   algorithm      processed    uncorrected
           fast | delayed   rewrites  corrected  invocations   [10^9 bytes]  errors
read:     647707       29         0    647736     586730      36537.378           0
write:         0        0         0         0          0       8161.913           2
verify:        0        0         0         0          0          0.000           0
"""
    d = parse_smartctl(text).devices[0]
    assert d.uncorrected == {"read": 0, "write": 2, "verify": 0} and d.protocol == "SCSI"


def test_nvme_smart_log_fields_without_their_header_are_read():
    """Held-out round 230 (real): nvme smart-log pasted from its critical_warning line on, and four fields of it with
    the warning in hex (0x2)."""
    dev = parse_smartctl(text(PUBLIC / "nvme-smart-log__samsung-970-evo-healthy.txt")).devices[0]
    assert dev.nvme["critical_warning"] == 0 and dev.nvme["available_spare"] == 100
    hot = text(PUBLIC / "nvme-smart-log__samsung-980-critical-warning-0x2-84c.txt")
    assert detect_smartctl(hot) >= 0.8 and parse_smartctl(hot).devices[0].nvme["critical_warning"] == 2
    assert detect_smartctl("critical_warning : 0\n") == 0.0  # one field alone is not the log
