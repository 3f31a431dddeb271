"""Tests of wizard/parsers/kernellog.py."""

from __future__ import annotations

import pytest
from wizard.parsers import edac as ed
from wizard.parsers import kernellog as kl

from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text


def test_formats_are_recognised():
    samples = {
        "[  123.456789] NVRM: Xid (PCI:0000:3b:00): 13, pid=1, name=x, boom": "dmesg",
        "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:3b:00): 13, boom": "dmesg-ctime",
        "May  7 06:45:12 node01 kernel: [21584690.529862] EDAC MC0: 4 CE error on X (channel:2)": "syslog",
        "Aug 10 15:36:05 node01 kernel: NVRM: Xid (PCI:0000:55:00): 63, reset gpu to activate.": "syslog",
        "2025-01-17T17:10:43+0000 host kernel: NVRM: Xid (PCI:0000:55:00): 63, x": "syslog-iso",
        "[    5.123456] node01 kernel: NVRM: Xid (PCI:0000:55:00): 63, x": "journal-monotonic",
        "10.0.0.1: kern: warning: [2026-04-22T21:30:51.52643656Z]: NVRM: Xid (PCI:0000:0b:00): 31, x": "talos",
        "kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13, x": "dmesg-decode",
        "<4>[  12.5] NVRM: Xid (PCI:0000:38:00): 13, x": "dmesg-raw",
        "2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13, x": "dmesg-iso",
    }
    for line, fmt in samples.items():
        log = kl.parse_kernel_log(line)
        assert log.formats == {fmt}, line
        assert [e.kind for e in log.events] == ["xid"] or [e.kind for e in log.events] == ["edac"], line


def test_monotonic_stamp_inside_syslog_prefix_is_read():
    log = kl.parse_kernel_log(text(CASES / "journal__edac-mc0-ce-errors-dimm.txt"))
    assert log.records[1].mono_s == pytest.approx(21584690.529877)
    assert log.records[1].host == "node01" and log.records[1].msg.startswith("EDAC MC0: 4 CE error")


def test_continuation_lines_join_their_record():
    log = kl.parse_kernel_log(text(CASES / "dmesg__v100-nouveau-conflict-probe-not-called.txt"))
    rec = next(r for r in log.records if r.msg.startswith("NVRM: This can occur"))
    assert len(rec.raw) == 3 and "nouveau, rivafb" in rec.msg
    assert len(log.records) == 6


def test_xid_fields():
    log = kl.parse_kernel_log(text(CASES / "dmesg__xe9680-h100-xid119-gsp-timeout.txt"))
    xids = [e for e in log.events if e.kind == "xid"]
    assert [e.fields["code"] for e in xids] == [119] * 5
    assert xids[0].bus_id == "0000:9b:00.0" and xids[0].fields["pid"] == "2024380"
    assert xids[0].fields["name"] == "nvidia-smi"
    assert log.gpus["0000:9b:00.0"].serial == "0000000000000"
    assert log.gpus["0000:9b:00.0"].uuid == "GPU-00000000-0000-0000-0000-000000000001"


def test_xid154_action_fields():
    log = kl.parse_kernel_log(text(CASES / "journal__rtxpro6000-xid48-xid171-xid63-xid154-dbe-row-remap-drain-reset.txt"))
    e = next(e for e in log.events if e.fields.get("code") == 154)
    assert e.fields["action"] == "Drain and Reset" and e.fields["action_code"] == "0x4"
    assert e.fields["from_action"] == "None"


def test_aer_fields_old_and_new_kernels():
    old = kl.parse_kernel_log(text(CASES / "dmesg__tesla-aer-surprise-down-xid79-fallen-off-bus.txt"))
    fatal = [e for e in old.events if e.kind == "aer" and e.fields["severity"] == "fatal"]
    assert fatal[0].bus_id == "0000:00:02.0" and fatal[0].fields["type"] == "Transaction Layer"
    assert fatal[0].fields["errors"] == ["Surprise Down Error"] and fatal[0].fields["pci_id"] == "8086:6f04"
    assert fatal[0].fields["affects_gpu"] == "0000:02:00.0"
    new = kl.parse_kernel_log(text(PUBLIC / "kernel-log__gsconnect-1052-localised-month-corrected-aer-partial.txt"))
    aer = [e for e in new.events if e.kind == "aer"]
    assert len(aer) == 2 and aer[0].fields["severity"] == "corrected" and aer[0].fields["errors"] == ["RxErr"]


def test_aer_requester_id_decoding():
    assert kl._aer_requester("id=0010", "0000:00:02.0") == "0000:00:02.0"
    assert kl._aer_requester("id=00e8(Receiver ID)", "0000:00:1d.0") == "0000:00:1d.0"
    assert kl._aer_requester("0000:03:00.0", "0000:00:1d.0") == "0000:03:00.0"


def test_limited_fields():
    log = kl.parse_kernel_log(text(PUBLIC / "kernel-log__rockchip-2-rtx3090-limited-x4-bar-no-space-partial.txt"))
    (e,) = [e for e in log.events if e.kind == "pcie_limited"]
    assert e.fields == {"avail_gbit_s": "31.504", "speed_gts": "8.0", "width": "4", "port": "0000:00:00.0",
                        "cap_gbit_s": "252.048", "cap_speed_gts": "16.0", "cap_width": "16"}


def test_edac_fields():
    log = kl.parse_kernel_log(text(CASES / "dmesg__edac-ue-memory-error-apei-pcie-error.txt"))
    (e,) = [e for e in log.events if e.kind == "edac"]
    assert e.fields["mc"] == 3 and e.fields["type"] == "UE" and e.fields["count"] == 1
    assert e.fields["label"] == "CPU_SrcID#1_MC#1_Chan#2_DIMM#0"
    (g,) = [e for e in log.events if e.kind == "ghes"]
    assert g.fields["severity"] == "nonfatal" and g.fields["section"] == "pcie error"
    assert g.bus_id == "0000:5e:00.0" and g.fields["pci_id"] == "144d:a808"


def test_old_edac_format_with_quoted_label():
    line = ('[ 5.1] EDAC MC0: CE page 0x1f4c, offset 0x1d0, grain 8, syndrome 0x5c, row 0, channel 1, '
            'label "DIMM_B1": i5000 CE')
    (e,) = kl.parse_kernel_log(line).events
    assert e.fields["label"] == "DIMM_B1" and e.fields["type"] == "CE"


def test_boot_markers_split_boots():
    log = kl.parse_kernel_log(text(SYNTHETIC / "synthetic_kernel-log__two-boots-xid79-earlier-boot-journal.txt"))
    assert log.boots == 2
    (x,) = [e for e in log.events if e.kind == "xid"]
    assert x.boot == 0
    # a monotonic clock that restarts is a new boot too
    restarted = kl.parse_kernel_log("[ 900.1] NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n"
                                    "[   0.5] Booting the kernel\n")
    assert restarted.boots == 2 and restarted.events[0].boot == 0


def test_event_key_ignores_host_and_prefix_format():
    dm = kl.parse_kernel_log("[ 5021.337470] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.")
    jr = kl.parse_kernel_log("[ 5021.337470] node01 kernel: NVRM: Xid (PCI:0000:18:00): 79, pid=0, "
                             "GPU has fallen off  the bus.")
    assert kl.event_key(dm.events[0]) == kl.event_key(jr.events[0])
    later = kl.parse_kernel_log("[ 6021.337470] NVRM: Xid (PCI:0000:18:00): 79, pid=0, GPU has fallen off the bus.")
    assert kl.event_key(later.events[0]) != kl.event_key(dm.events[0])


def test_oops_is_unrecognised_warning_once_per_trace():
    lines = ("[ 1.0] WARNING: CPU: 3 PID: 1 at drivers/foo.c:1 bar+0x1/0x2\n[ 1.0] Call Trace:\n"
             "[ 1.0]  <TASK>\n[ 9.0] INFO: task python:42 blocked for more than 120 seconds.\n")
    evs = [e for e in kl.parse_kernel_log(lines).events if e.kind == "unrecognised"]
    assert len(evs) == 2


def test_bus_id_forms():
    assert kl.bus_id("0000:9b:00") == "0000:9b:00.0"
    assert kl.bus_id("00000000:9B:00.0") == "0000:9b:00.0"
    assert kl.bus_id("9b:00.1") == "0000:9b:00.1"
    assert kl.bus_id("") == ""


def test_detector_scores():
    assert kl.detect_kernel_log("") == 0.0
    assert kl.detect_kernel_log("hello world\nnothing here") == 0.0
    assert kl.detect_kernel_log(text(CASES / "dmesg__a100-xid63-row-remapper-new-row-marked.txt")) >= 0.8
    assert ed.detect_edac_util("mc0: 0 Uncorrected Errors with no DIMM info") > 0.9
    assert ed.detect_ras_mc_ctl("No Memory errors.\n\nNo PCIe AER errors.\n") > 0.9
    assert ed.detect_edac_util(text(CASES / "dmesg__xe9680-h100-xid119-gsp-timeout.txt")) == 0.0
    assert ed.detect_ras_mc_ctl(text(CASES / "journal__edac-mc0-ce-errors-dimm.txt")) == 0.0


# The same real message under every dmesg time format (util-linux dmesg --time-format / -H / -e / -d /
# -x / -r) and the journalctl -o formats that print them. The stamps are synthetic; the message is a
# real line of the returnn log.
MSG = "pcieport 0000:00:03.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Transaction Layer, (Requester ID)"


from tests.strategies import KERNEL_LOG_STAMPS as STAMPS  # noqa: E402 - every dmesg/journalctl stamp style


@pytest.mark.parametrize("stamp", sorted(STAMPS))
def test_every_dmesg_time_format_is_stripped(stamp):
    fmt, printed = STAMPS[stamp]
    log = kl.parse_kernel_log(stamp + MSG + "\n")
    (rec,) = log.records
    assert (rec.fmt, rec.stamp, rec.msg) == (fmt, printed, MSG)
    (ev,) = [e for e in log.events if e.kind == "aer"]
    assert ev.fields["severity"] == "fatal"


def test_dmesg_delta_keeps_the_seconds_since_boot():
    (rec,) = kl.parse_kernel_log("[    5.123456 <    0.000127>] " + MSG).records
    assert rec.mono_s == pytest.approx(5.123456)


def test_mci_status_bits_decode():
    ue = kl.decode_mci_status("fc00010001010092")  # ovro: EDAC skx MC3, the case's "1 UE" on MC3
    assert ue["val"] and ue["uc"] and ue["over"] and not ue["pcc"]
    ce = kl.decode_mci_status("cc00418000010091")  # dunkel: "262 CE memory read error"
    assert ce["val"] and not ce["uc"] and ce["over"]
    assert not kl.decode_mci_status("8c00004f000800c2")["uc"]  # radiasoft: "1 CE memory scrubbing error"
    assert kl.decode_mci_status("not hex") == {}


@pytest.mark.parametrize("line, seconds", [
    ("[  123.456789] pcieport 0000:00:01.0: AER: x", 123.456789),
    ("[Thu Feb 29 13:47:22 2024] pcieport 0000:00:06.0: AER: x", 1709214442.0),
    ("2024-02-29T13:47:22,123456+00:00 pcieport 0000:00:06.0: AER: x", 1709214442.123456),
    ("2025-01-17T17:10:43+0000 host kernel: pcieport 0000:00:06.0: AER: x", 1737133843.0),
    ("Thu 2024-02-29 13:47:22 UTC host kernel: pcieport 0000:00:06.0: AER: x", 1709214442.0),
    ("1709214442.500000 host kernel: pcieport 0000:00:06.0: AER: x", 1709214442.5),
    ("[  +0.000844] pcieport 0000:00:06.0: AER: x", 0.000844),  # dmesg -H: a delta, on a clock that starts at 0
])
def test_record_seconds_reads_each_stamp_format(line, seconds):
    log = kl.parse_kernel_log(line + "\n")
    got = kl.record_seconds(log.records[0])
    assert got == pytest.approx(seconds) if seconds is not None else got is None


def test_syslog_stamps_give_differences():
    log = kl.parse_kernel_log("Nov 07 17:53:10 server kernel: a\nNov 07 17:54:12.5 server kernel: b\n")
    a, b = (kl.record_seconds(r) for r in log.records)
    assert a is not None and b is not None and b - a == pytest.approx(62.5)


def test_aer_received_messages_are_kept_with_their_time():
    log = kl.parse_kernel_log(text(PUBLIC / "dmesg__forum-2019-rootport-1c5-corrected-rxerr-burst.txt"))
    msgs = log.aer_received
    assert len(msgs) == 11 and {m.fields["port"] for m in msgs} == {"0000:00:1c.5"}
    assert msgs[0].fields["seconds"] == pytest.approx(9.388382) and msgs[0].fields["multiple"] is True
    assert msgs[-1].fields["severity"] == "corrected" and msgs[-1].fields["multiple"] is False
    assert len([e for e in log.events if e.kind == "aer"]) == 5  # the error reports themselves are unchanged


def test_dmesg_reltime_deltas_make_a_running_clock():
    """``dmesg -H``: a minute anchor, then ``[+delta]`` from the message before: rates need their sum."""
    log = kl.parse_kernel_log("[May19 19:57] a: one\n[  +0.500000] a: two\n[  +1.250000] a: three\n"
                              "[May19 19:58] a: four\n[  +0.100000] a: five\n")
    secs = [kl.record_seconds(r) for r in log.records]
    assert secs[1] - secs[0] == 0.5 and secs[2] - secs[0] == 1.75
    assert secs[3] - secs[0] == 60.0 and round(secs[4] - secs[3], 6) == 0.1


def test_a_ubsan_report_is_one_event_quoting_its_first_line():
    """A UBSAN report from nvidia_uvm (real: pytorch/pytorch#127275): the event's evidence starts with the UBSAN line,
    not its Call Trace."""
    from wizard.parsers.kernellog import parse_kernel_log

    log = parse_kernel_log(
        "[  826.919949] UBSAN: array-index-out-of-bounds in /tmp/x/kernel/nvidia-uvm/uvm_pmm_gpu.c:857:39\n"
        "[  826.919950] index 0 is out of range for type 'uvm_gpu_chunk_t *[*]'\n"
        "[  826.919951] CPU: 11 PID: 5286 Comm: python Tainted: P           OE      6.5.0-9-generic #9-Ubuntu\n"
        "[  826.919953] Call Trace:\n[  826.919953]  <TASK>\n")
    ev = [e for e in log.events if e.kind == "unrecognised"]
    assert len(ev) == 1 and "UBSAN: array-index-out-of-bounds" in ev[0].evidence[0]


def test_kernel_lines_whose_date_and_host_were_dropped_are_read():
    """"kernel: pcieport ...: AER: ..." (a journal excerpt without its date and host; real: a Red Hat solution page)."""
    from wizard.parsers.kernellog import parse_kernel_log

    log = parse_kernel_log(
        "kernel: pcieport 0000:00:1b.2: AER: Uncorrectable (Fatal) error message received from 0000:03:04.0\n"
        "kernel: pcieport 0000:03:04.0: PCIe Bus Error: severity=Uncorrectable (Fatal), type=Transaction Layer, "
        "(Receiver ID)\nkernel: pcieport 0000:03:04.0:   device [111d:8063] error status/mask=00000020/00000000\n"
        "kernel: pcieport 0000:03:04.0:    [ 5] SDES                   (First)\n")
    assert any(e.kind == "aer" for e in log.events)


def test_a_kernel_log_flattened_into_one_line_is_split_at_its_timestamps():
    """Real (held-out round 68, a Q&A page that stored the paste as one line; `dmesg -T` in the Chinese locale,
    "[一 8月 25 16:20:28 2025]"): split again before each stamp, and the localised stamp read as dmesg -T's."""
    from wizard.explain import clean

    body = text(PUBLIC / "kernel-log__geforce-10de-2d04-aer-correctable-replay-timeout-burst.txt")
    assert body.strip().count("\n") == 0
    lines = clean(body).splitlines()
    assert len(lines) > 10 and lines[1].startswith("[一 8月 25 16:20:28 2025] nvidia 0000:01:00.0: PCIe Bus Error")
    log = kl.parse_kernel_log("\n".join(lines))
    assert "dmesg-ctime" in log.formats and {e.kind for e in log.events} >= {"aer"}
    assert kl.record_seconds(log.records[1]) == 25 * 86400 + 16 * 3600 + 20 * 60 + 28


def test_a_tool_quoting_the_kernel_banner_or_a_fabric_daemons_log_is_not_a_kernel_log():
    """Held-out rounds 223 and 229 (real): enroot-check prints "Linux version ..." among its own OK/KO lines; the IMEX
    daemon logs "[Apr 20 2026 19:05:12] [INFO] [tid 141] ...", Fabric Manager's record format. Neither is a kernel log;
    /proc/version alone (the banner is most of it) still is."""
    assert kl.detect_kernel_log(text(PUBLIC / "enroot-check__verify-nvidia-container-cli-ko.txt")) < 0.3
    assert kl.detect_kernel_log(text(PUBLIC / "imex-log__compute-domain-daemon-peer-connect-retries.txt")) == 0.0
    assert kl.detect_kernel_log("Linux version 6.8.0-45-generic (buildd@lcy02-amd64-115) (gcc 13.2.0) #45-Ubuntu\n") >= 0.8


def test_a_filesystems_own_kernel_line_alone_is_a_kernel_log():
    """Held-out round 241 (real, node-problem-detector's test data): 'EXT4-fs (sda1): Remounting filesystem read-only'
    pasted alone, without a time stamp."""
    assert kl.detect_kernel_log(text(PUBLIC / "kernel-log__npd-ext4-sda1-remount-read-only.txt")) >= 0.8
