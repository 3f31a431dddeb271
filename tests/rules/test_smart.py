"""wizard/rules/smart.py (node.storage_smart) on real smartctl outputs (tests/data/public, PROVENANCE.md)."""

from __future__ import annotations

from wizard.explain import explain_text
from wizard.model import Verdict
from wizard.rules.smart import SMART_ID, judge_smartctl

from tests.probe_data import PUBLIC, text


def judged(name: str):
    (f,) = judge_smartctl(text(PUBLIC / name), {})
    assert f.id == SMART_ID
    return f


def test_a_failed_self_assessment_a_failing_attribute_and_a_failed_self_test_fail() -> None:
    f = judged("smartctl__st32000542as-health-failed.txt")
    assert f.verdict is Verdict.FAIL and "FAILED" in f.message and "Reallocated_Sector_Ct is failing now" in f.message
    assert "newest self-test" in f.message and "replace" in f.remedy.lower()


def test_failure_predicting_attributes_warn_over_a_passed_self_assessment() -> None:
    """Backblaze's predictors (5, 187, 188, 197, 198) above 0 raw warn, whatever the overall 'PASSED' says; a UDMA
    CRC count (cabling) is said, not judged."""
    f = judged("smartctl__seagate-hdd-passed-but-8-reported-uncorrect.txt")
    assert f.verdict is Verdict.WARN and "187 Reported_Uncorrect = 8" in f.message and "backblaze" in f.source.lower()
    f = judged("smartctl__hitachi-1tb-realloc-crc.txt")
    assert f.verdict is Verdict.WARN and "5 Reallocated_Sector_Ct = 1" in f.message and "cable" in f.message
    assert "although its overall self-assessment says PASSED" in f.message


def test_nvme_media_errors_warn_and_a_healthy_nvme_passes_saying_its_wear() -> None:
    f = judged("smartctl__samsung-970evo-nvme-media-errors.txt")
    assert f.verdict is Verdict.WARN and "71 media and data integrity errors" in f.message
    f = judged("smartctl__sabrent-rocket-nvme-json.txt")
    assert f.verdict is Verdict.PASS and "0 media errors" in f.message and "4% of endurance used" in f.message
    assert judged("smartctl__seagate-6tb-megaraid-json.txt").verdict is Verdict.PASS


def test_nvme_critical_warning_bits_fail_with_their_meaning() -> None:
    """synthetic_: the NVMe health log lines as smartctl prints them, Critical Warning 0x04 (reliability degraded)."""
    log = ("=== START OF SMART DATA SECTION ===\nSMART overall-health self-assessment test result: FAILED!\n"
           "- NVM subsystem reliability has been degraded\n\nSMART/Health Information (NVMe Log 0x02)\n"
           "Critical Warning:                   0x04\nAvailable Spare:                    100%\n"
           "Available Spare Threshold:          10%\nPercentage Used:                    3%\n"
           "Media and Data Integrity Errors:    0\n")
    (f,) = judge_smartctl(log, {})
    assert f.verdict is Verdict.FAIL and "0x04" in f.message and "reliability degraded" in f.message


def test_no_health_data_is_unknown_and_the_kind_is_chosen_by_explain() -> None:
    (f,) = judge_smartctl("smartctl 7.3 2022-02-28 r5338 [x86_64-linux] (local build)\nCopyright (C) 2002-22, Bruce "
                          "Allen, Christian Franke, www.smartmontools.org\n\n/dev/sda: Permission denied\n", {})
    assert f.verdict is Verdict.UNKNOWN and "Permission denied" in f.message
    r = explain_text(text(PUBLIC / "smartctl__ironwolf-12tb-health-failed.txt"))
    assert r.kind == "smartctl" and r.verdict is Verdict.FAIL


def test_nvme_cli_smart_log_json_is_read_as_the_nvme_health_log() -> None:
    """Held-out round 18: `nvme smart-log -o json` (nvme-cli's flat object, temperature in kelvin) was "not recognised".
    It is the same NVMe health log smartctl prints: read into the same facts and judged by the same rule, the pass
    quoting the fields it rests on."""
    e = explain_text(text(PUBLIC / "smartctl__nvme-smart-log-json-2pct-used-no-media-errors.txt"), "x")
    assert e.kind == "smartctl" and e.verdict is Verdict.PASS
    (f,) = e.findings
    assert "Critical Warning 0x00" in f.message and "2% of endurance used" in f.message and "0 media errors" in f.message
    assert '"critical_warning": 0' in f.evidence and '"media_errors": 0' in f.evidence


def test_synthetic_nvme_cli_smart_log_text_with_a_critical_warning_fails() -> None:
    """nvme-cli's text form ("Smart Log for NVME device:...", `key : value`), made up: critical_warning 0x04 (NVM
    subsystem reliability degraded) fails; the temperature is read in °C from "37 C (310 Kelvin)"."""
    from wizard.parsers.smart import parse_smartctl

    body = ("Smart Log for NVME device:nvme0 namespace-id:ffffffff\ncritical_warning                        : 0x4\n"
            "temperature                             : 37 C (310 Kelvin)\navailable_spare                         : 100%\n"
            "available_spare_threshold               : 10%\npercentage_used                         : 3%\n"
            "media_errors                            : 0\nnum_err_log_entries                     : 0\n")
    (d,) = parse_smartctl(body).devices
    assert d.nvme["temperature_c"] == 37 and d.nvme["available_spare_threshold"] == 10
    e = explain_text(body, "x")
    assert e.kind == "smartctl" and e.verdict is Verdict.FAIL and "Critical Warning 0x04" in e.findings[0].message


def test_uncorrected_sas_errors_warn_and_a_clean_drive_says_what_its_pass_rests_on():
    from wizard.parsers.smart import SmartDevice
    from wizard.rules.smart import _judge_device

    bad = _judge_device(SmartDevice(model="HGST", overall=True, overall_line="SMART Health Status: OK",
                                    uncorrected={"read": 0, "write": 2}))
    assert bad.verdict is Verdict.WARN and "write 2" in bad.message
    good = _judge_device(SmartDevice(model="HGST", overall=True, overall_line="SMART Health Status: OK",
                                     grown_defects=0, uncorrected={"read": 0, "write": 0, "verify": 0}))
    assert good.verdict is Verdict.PASS and "0 uncorrected read/write/verify errors" in good.message
    assert "0 grown defects" in good.message


def test_a_self_test_log_whose_spaces_were_collapsed_still_reads_the_read_failure():
    """Held-out round 47 (a web page's copy of `smartctl -a`, runs of spaces collapsed to one): the self-test rows
    '# 1 Short offline Completed: read failure 90% 2126 57169643' are read; the newest self-test's read failure fails."""
    r = explain_text(text(PUBLIC / "smartctl__hdd-pending-sector-selftest-read-failure.txt"), "x")
    f = [x for x in r.findings if x.id == "node.storage_smart"]
    assert r.verdict is Verdict.FAIL and "newest self-test ended 'Completed: read failure'" in f[0].message


def test_a_sata_ssd_on_a_slower_link_warns_and_a_sas_drive_without_the_banner_is_read():
    """Held-out round 91 (real): a SanDisk SATA SSD whose self-assessment PASSED but whose link runs at 3.0 Gb/s of its
    6.0 Gb/s warns, with a remedy about the cable and port (not "watch the drive"); a spinning disk on a slower link
    only says so (it cannot fill 3 Gb/s). A KIOXIA SAS SSD's `smartctl -a` cut before its banner ("SMART Health
    Status: OK") was not recognised: it is read and passes."""
    t = text(PUBLIC / "smartctl__sandisk-sdssda240g-passed-sata-link-at-3gbps-partial.txt")
    (f,) = [f for f in explain_text(t, "s").findings if f.id == SMART_ID]
    assert f.verdict is Verdict.WARN and "3 Gb/s of the drive's 6 Gb/s" in f.message and "SATA cable" in f.remedy
    hdd = t.replace("Solid State Device", "7200 rpm")
    (h,) = [f for f in explain_text(hdd, "h").findings if f.id == SMART_ID]
    assert h.verdict is Verdict.PASS and "SATA link at 3 Gb/s of 6 Gb/s" in h.message
    sas = explain_text(text(PUBLIC / "smartctl__kioxia-sas-ssd-dell-health-ok-3pct-endurance-used-partial.txt"), "k")
    assert sas.kind == "smartctl" and sas.verdict is Verdict.PASS


def test_a_thousand_media_errors_fail_a_handful_warn_and_a_2_pow_32_count_stays_a_warning():
    """NVMe Media and Data Integrity Errors (real drives): 14,370 and 15,732 fail (MEDIA_ERRORS_FAIL = 1000: it loses
    data routinely), 6 warns, exactly 2^32 with no error-log entry (a counter artefact) warns."""
    from wizard.rules.smart import MEDIA_ERRORS_FAIL

    assert MEDIA_ERRORS_FAIL == 1000
    for name, verdict in (("smartctl__samsung-980pro-nvme-14370-media-errors.txt", Verdict.FAIL),
                          ("smartctl__samsung-pm1725b-nvme-passed-but-15732-media-errors.txt", Verdict.FAIL),
                          ("smartctl-a__samsung-pm983-3.84tb-nvme-6-media-errors.txt", Verdict.WARN),
                          ("smartctl__intel-p4510-4tb-media-errors-2pow32-no-error-log.txt", Verdict.WARN)):
        r = explain_text(text(PUBLIC / name), name)
        f = next(f for f in r.findings if f.id == SMART_ID)
        assert f.verdict is verdict, (name, f.message)
        assert "media and data integrity errors" in f.message


def test_sas_error_counter_log_with_thousands_of_uncorrected_errors_fails():
    """Held-out round 157: 'SMART Health Status: OK' beside 5,580 read and 2,569 write uncorrected errors (a '>>> '
    quoted paste under its command line), and a SAS -a cut from its data section on, both read."""
    r = explain_text(text(PUBLIC / "smartctl-a__hgst-hus726040als210-sas-health-ok-but-5580-read-uncorrected.txt"))
    assert r.kind is not None and r.verdict is Verdict.FAIL and "read 5580" in r.findings[0].message
    ok = explain_text(text(PUBLIC / "smartctl-a__sas-hdd-2008-health-ok-0-uncorrected-496-non-medium-partial.txt"))
    assert ok.kind is not None and ok.verdict is Verdict.PASS


def test_a_passed_self_assessment_without_the_smart_data_is_unknown():
    """Held-out round 175: 'Read SMART Data failed: SAT command failed' beside a PASSED self-assessment: wear and
    sector counts were not read, so the drive is not passed."""
    r = explain_text(text(PUBLIC / "smartctl__ironwolf-pro-14tb-read-smart-data-failed-old-smartctl.txt"))
    assert r.verdict is Verdict.UNKNOWN and "could not read the SMART data" in r.findings[0].message


def test_an_nvme_temperature_critical_warning_warns_with_a_cooling_remedy_not_a_replacement():
    """NVMe Critical Warning bit 1 alone (held-out round 230, real: 0x2 at 84 °C) is heat, not wear; any other bit
    still fails (synthetic_: the same paste with bit 2, reliability degraded, set too)."""
    body = text(PUBLIC / "nvme-smart-log__samsung-980-critical-warning-0x2-84c.txt")
    (f,) = judge_smartctl(body, {})
    assert f.verdict is Verdict.WARN and "temperature" in f.message and "airflow" in f.remedy
    (g,) = judge_smartctl(body.replace("0x2", "0x6"), {})
    assert g.verdict is Verdict.FAIL and "replace it" in g.remedy


def test_sata_crc_errors_warn_with_the_cable_remedy():
    """Held-out round 255 (real, a Samsung 840 with 108 CRC errors and nothing else): attribute 199 counts transfers
    that failed their CRC on the link and were retried: warn (the cable, backplane or port), with the cable remedy."""
    r = explain_text(text(PUBLIC / "smartctl-json__samsung-840-sata-108-crc-errors.txt"))
    (f,) = r.findings
    assert f.verdict is Verdict.WARN and "199 CRC_Error_Count = 108" in f.message and "SATA cable" in f.remedy


def test_nvme_time_above_its_critical_temperature_warns():
    """Held-out round 279 (real): a Samsung PM9A3 with PASSED health, 0 media errors, but 3 minutes above its critical
    composite temperature (76 above its warning one) passed; it overheated: warn, saying both times. Minutes above the
    warning temperature alone are a note (synthetic: the critical time set to 0)."""
    t = text(PUBLIC / "smartctl__samsung-pm9a3-3t84-critical-temp-time-293-unsafe-shutdowns.txt")
    (f,) = judge_smartctl(t, {})
    assert f.verdict is Verdict.WARN and "3 minute(s) above its critical composite temperature" in f.message
    assert "76 minute(s) above its warning" in f.message and "nvmexpress.org" in f.source
    assert "Critical Comp. Temperature Time:    3" in t
    (g,) = judge_smartctl(t.replace("Critical Comp. Temperature Time:    3", "Critical Comp. Temperature Time:    0"), {})
    assert g.verdict is Verdict.PASS and "76 minute(s) above its warning composite temperature" in g.message
