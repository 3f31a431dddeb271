"""wizard/parsers/storage.py on real outputs: fio's JSON (this machine's run and public repositories' samples), fio's
normal output (three etcd-style fdatasync tests from a public repository: ZFS with and without an Optane SLOG, a raw
Optane device), /proc/mdstat (public reports: degraded, recovering, resyncing, replacing, checking), lsblk -J (this machine), and
garbage that must never raise."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import DATA
from wizard.parsers.storage import (
    detect_fio, detect_fio_json, detect_fio_normal, detect_mdstat, disks_under, fio_command_options, fio_size_bytes,
    nvme_controller_of, parse_fio, parse_fio_json, parse_fio_normal, parse_lsblk_json, parse_mdstat, parse_nvme_sysfs,
)

S = DATA / "storage"
PUBLIC = DATA / "public"


def _t(name: str) -> str:
    return (S / name).read_text()


def test_fio_json_of_this_machine_two_read_jobs():
    run = parse_fio_json(_t("fio-json__dev-vm-vda-seqread-1m-randread-128k.json"))
    assert run.found and run.version == "fio-3.33" and run.disks == ["vda"] and not run.errors
    seq, rnd = run.jobs
    assert (seq.name, seq.rw, seq.bs_bytes, seq.iodepth, seq.error, seq.direct) == ("seqread", "read", 1 << 20, 32, 0, True)
    assert seq.read_bw_bytes_s == 1796963244 and round(seq.read_iops) == 1714 and seq.read_clat_p99_ns == 24772608
    assert (rnd.rw, rnd.bs_bytes, rnd.read_bw_bytes_s) == ("randread", 128 << 10, 2233157756)
    assert rnd.filename == "/tmp/stor/dp/.bringup-fio-read-test" and seq.read_runtime_ms == 3018


def test_fio_json_kubestr_ceph_rbd_randread_job_options_and_tabs():
    run = parse_fio_json(_t("fio-json__kubestr-ceph-rbd-randread-randwrite-4k.json"))
    rd, wr = run.jobs
    assert run.version == "fio-3.20" and run.disks == ["rbd4"]
    assert (rd.name, rd.rw, rd.bs_bytes, rd.iodepth, rd.direct) == ("read_iops", "randread", 4096, 64, True)
    assert rd.read_bw_bytes_s == 4039322 and rd.read_iops == pytest.approx(982.05078) and rd.read_clat_p99_ns is None
    assert wr.rw == "randwrite" and wr.read_bw_bytes_s == 0 and wr.write_bw_bytes_s == 1616406


def test_fio_31_without_bw_bytes_reads_bw_in_kib():
    run = parse_fio_json(_t("fio-json__gvisor-sample-nvme-dm-write-fio31.json"))
    (j,) = run.jobs
    assert j.rw == "write" and j.bs_bytes == 4096 and j.write_bw_bytes_s == 1753471 * 1024 and j.read_bw_bytes_s == 0
    assert run.disks == ["dm-1", "dm-0", "nvme0n1"]


def test_fio_error_line_before_the_json_and_the_failed_job():
    run = parse_fio_json(_t("fio-json__dev-vm-randread-error2-file-unlinked-by-first-job.txt"))
    assert run.errors and run.errors[0].startswith("fio: pid=") and "No such file or directory" in run.errors[0]
    assert [(j.name, j.error) for j in run.jobs] == [("seqread", 0), ("randread", 2)]


def test_fio_json_inside_an_action_log():
    body = _t("fio-json__dev-vm-vda-seqread-1m-randread-128k.json")
    log = "# bringup action: fio started 2026-12-02T11:44:35+00:00 (supervisor pid 1)\n$ fio --output-format=json\n" \
          + body + "# exit status 0 at 2026-12-02T11:44:42+00:00\n"
    assert [j.name for j in parse_fio_json(log).jobs] == ["seqread", "randread"]


def test_detect_fio_json():
    assert detect_fio_json(_t("fio-json__kubestr-ceph-rbd-randread-randwrite-4k.json")) >= 0.9
    assert detect_fio_json(_t("mdstat__raid1-resync-in-progress.txt")) == 0


@pytest.mark.parametrize("v, want", [("1M", 1 << 20), ("128k", 128 << 10), ("4096B", 4096), ("4KiB", 4096),
                                     ("1048576", 1 << 20), ("1g", 1 << 30), ("4k-8k", None), ("", None), (None, None)])
def test_fio_sizes(v, want):
    assert fio_size_bytes(v) == want


def test_mdstat_degraded_with_failed_members():
    md = parse_mdstat(_t("mdstat__hetzner-raid1-sda-failed-degraded.txt"))
    assert md.seen_header and "raid1" in md.personalities and [a.name for a in md.arrays] == ["md0", "md3", "md1", "md2"]
    a = md.arrays[0]
    assert (a.level, a.raid_disks, a.working, a.slots, a.degraded) == ("raid1", 2, 1, "_U", True)
    assert [m.name for m in a.faulty] == ["sda1"] and a.members[0].flags == () and a.action == ""


def test_mdstat_recovery_resync_replace_and_check():
    rec = parse_mdstat(_t("mdstat__raid6-recovery-two-missing.txt")).arrays[0]
    assert (rec.level, rec.raid_disks, rec.working, rec.action, rec.progress_pct, rec.degraded) == ("raid6", 6, 4, "recovery", 19.6, True)
    md1, md2 = parse_mdstat(_t("mdstat__raid1-resync-in-progress.txt")).arrays
    assert not md1.action and (md2.action, md2.progress_pct, md2.degraded) == ("resync", 51.4, False)
    rep = parse_mdstat(_t("mdstat__raid5-replace-recovery-spare.txt")).arrays[0]
    assert [m.flags for m in rep.members[:2]] == [("R",), ("S",)] and rep.action == "recovery" and not rep.degraded
    chk = parse_mdstat(_t("mdstat__raid1-check-healthy.txt")).arrays[0]
    assert (chk.action, chk.progress_pct, chk.degraded) == ("check", 95.7, False)


def test_mdstat_delayed_and_inactive_lines():
    md = parse_mdstat("Personalities : [raid1]\nmd1 : active raid1 sdb2[1] sda2[0]\n      524224 blocks super 1.0 [2/2] [UU]\n"
                      "        resync=DELAYED\n\nmd9 : inactive sdc1[0](S)\n      976631512 blocks super 1.2\n\n"
                      "unused devices: <none>\n")  # md1: centreon/centreon-plugins#18's lines; md9: md.c's inactive form
    assert md.arrays[0].delayed == "resync=DELAYED" and md.arrays[1].state == "inactive" and md.arrays[1].level == ""


def test_detect_mdstat():
    assert detect_mdstat(_t("mdstat__hetzner-raid1-sda-failed-degraded.txt")) >= 0.9
    assert detect_mdstat(_t("fio-json__kubestr-ceph-rbd-randread-randwrite-4k.json")) == 0


def test_lsblk_of_this_machine_and_the_older_string_form():
    ls = parse_lsblk_json(_t("lsblk-json__dev-vm-vda-zram.json"))
    vda = ls.first("vda")
    assert vda is not None and vda.rotational is True and vda.size_bytes == 274877906944 and vda.mountpoint == "/"
    assert [d.kname for d in disks_under(ls, ["vda"])] == ["vda"]
    old = parse_lsblk_json(_t("synthetic_lsblk-json__md0-raid0-on-two-nvme-raid.json"))
    assert [d.kname for d in old.by_kname("md0")] == ["md0", "md0"] and old.first("md0").parents == ("nvme0n1",)
    assert [(d.kname, d.rotational, d.tran) for d in disks_under(old, ["md0"])] == [("nvme0n1", False, "nvme"),
                                                                                  ("nvme1n1", False, "nvme")]
    assert old.first("nvme0n1").size_bytes == 3840755982336


def test_nvme_sysfs_files_and_namespace_names():
    # inline: the kernel's sysfs-bus-pci formats ("16.0 GT/s PCIe", "4"); no real capture of an NVMe node here
    files = {"/sys/class/nvme/nvme0/model": "SAMSUNG MZQL23T8HCLS-00A07          \n",
             "/sys/class/nvme/nvme0/firmware_rev": "GDC5902Q\n", "/sys/class/nvme/nvme0/transport": "pcie\n",
             "/sys/class/nvme/nvme0/device/current_link_speed": "8.0 GT/s PCIe\n",
             "/sys/class/nvme/nvme0/device/current_link_width": "4\n",
             "/sys/class/nvme/nvme0/device/max_link_speed": "16.0 GT/s PCIe\n",
             "/sys/class/nvme/nvme0/device/max_link_width": "4\n", "/sys/class/nvme/nvme1/model": None}
    (c,), problems = parse_nvme_sysfs(files)
    assert (c.name, c.model, c.firmware, c.speed_gts, c.width, c.max_speed_gts, c.max_width) == (
        "nvme0", "SAMSUNG MZQL23T8HCLS-00A07", "GDC5902Q", 8.0, 4, 16.0, 4) and not problems
    assert [nvme_controller_of(k) for k in ("nvme0n1", "nvme1c1n1", "nvme12n1p3", "sda")] == ["nvme0", "nvme1", "nvme12", ""]


GARBAGE = ["", "{", "{}", '{"jobs": 5}', '{"jobs": [5, {"read": 7, "job options": []}]}', "[" * 100000,
           '{"blockdevices": [{"children": ' * 200 + "]" * 200, "Personalities : [raid1]\nmd0 : active raid1 x[y]\n",
           '{"fio version" : "fio-3", "jobs" : [{"jobname": "x", "error": "5", "read": {"bw_bytes": "1e999999"}}]}',
           "md0 : active raid1 sda1[" + "9" * 5000 + "]\n [2/1] [" + "_" * 10000 + "]"]


@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_never_raises(text):
    assert parse_fio_json(text).jobs is not None
    assert parse_fio_normal(text).jobs is not None and parse_fio(text, text[:300]).jobs is not None
    assert parse_mdstat(text).arrays is not None
    assert parse_lsblk_json(text).devices is not None
    detect_fio_json(text), detect_mdstat(text), detect_fio(text)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["fio-json__dev-vm-vda-seqread-1m-randread-128k.json", "mdstat__raid6-recovery-two-missing.txt",
                        "lsblk-json__dev-vm-vda-zram.json"]), st.integers(0, 20000), st.text(max_size=40))
def test_mutated_real_outputs_never_raise(name, cut, junk):
    text = _t(name)
    mutated = text[:cut] + junk + text[cut:]
    parse_fio_json(mutated), parse_mdstat(mutated), parse_lsblk_json(mutated)
    json.dumps(parse_fio_json(mutated).problems)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(p.name for p in PUBLIC.glob("fio__*.txt"))), st.integers(0, 4000), st.text(max_size=40))
def test_mutated_fio_normal_outputs_never_raise(name, cut, junk):
    text = (PUBLIC / name).read_text()
    mutated = text[:cut] + junk + text[cut:]
    run = parse_fio(mutated, "fio --rw=write --fdatasync=1 " + junk)
    json.dumps(run.problems), detect_fio(mutated)


def test_mdstat_cut_short_or_garbage_counts_are_problems_of_the_array():
    full = _t("mdstat__raid1-check-healthy.txt")
    head = full[:full.index("md0 :")] + "md0 : active raid1 sda1[2] sdb1[1]\n      2096116 blocks super 1.2 "
    (md0,) = [a for a in parse_mdstat(head + "[2/1]").arrays if a.name == "md0"]
    assert (md0.raid_disks, md0.working, md0.slots, md0.degraded) == (2, 1, "", True)
    assert md0.problems and "cut short" in md0.problems[0]
    (md0,) = [a for a in parse_mdstat(head + "[2/2] [U_").arrays if a.name == "md0"]
    assert md0.slots == "U_" and md0.degraded
    (md0,) = [a for a in parse_mdstat(head + "[2/9999999999999999999999] [UU]").arrays if a.name == "md0"]
    assert not md0.degraded and any("not a possible count" in p for p in md0.problems)
    (md0,) = [a for a in parse_mdstat(full[:full.index("md0 :")] + "md0 : active raid1 sda1[2] sdb1[1](F").arrays
              if a.name == "md0"]
    assert any("member is cut short" in p for p in md0.problems)
    whole = parse_mdstat(full)
    assert all(not a.problems for a in whole.arrays)  # the real, whole report reads clean


# ------------------------------------------------------------------ fio's normal output (real, public)

ETCD_CMD = "fio --rw=write --ioengine=sync --fdatasync=1 --size=22m --bs=4k --name=mytest --filename=test-data"


def _pub(name: str) -> str:
    return (PUBLIC / name).read_bytes().decode()  # as saved: CRLF line ends


def test_fio_normal_zfs_with_optane_slog_every_field():
    run = parse_fio_normal(_pub("fio__zfs-raidz2-optane-slog-fdatasync-p99-260us.txt"))
    assert run.found and run.format == "normal" and run.version == "fio-3.25" and not run.problems and not run.errors
    assert run.disks == []  # this paste has no Disk stats section
    (j,) = run.jobs
    assert (j.name, j.groupid, j.error, j.numjobs, j.rw, j.bs_bytes, j.ioengine, j.iodepth) == (
        "mytest", 0, 0, 1, "write", 4096, "sync", 1)
    assert j.write_iops == 4801 and j.write_bw_bytes_s == pytest.approx(18.8 * 2 ** 20)  # BW=18.8MiB/s
    assert j.write_io_bytes == 22 * 2 ** 20 and j.write_runtime_ms == 1173  # (22.0MiB/1173msec)
    assert j.write_clat_p99_ns == 23168  # clat percentiles (nsec): 99.00th=[23168]
    assert (j.sync_min_ns, j.sync_max_ns, j.sync_avg_ns) == (161_000, 345_000, pytest.approx(192_480))  # usec
    assert j.sync_p99_ns == 260_000  # sync percentiles (usec): 99.00th=[  260]
    assert j.read_bw_bytes_s is None and j.read_iops is None and j.read_clat_p99_ns is None
    assert j.direct is None and j.filename == "" and j.sync_opts == ""  # no command typed above this paste
    assert any(ln.startswith("sync (usec): min=161") for ln in j.lines) and any("99.00th=[  260]" in ln for ln in j.lines)


def test_fio_normal_zfs_without_slog_msec_percentiles_and_kib_per_second():
    run = parse_fio_normal(_pub("fio__zfs-raidz2-no-slog-fdatasync-p99-62ms.txt"), ETCD_CMD)
    (j,) = run.jobs
    assert run.version == "fio-3.25" and not run.problems
    assert j.write_iops == 95 and j.write_bw_bytes_s == 382 * 1024  # BW=382KiB/s
    assert j.write_io_bytes == 22 * 2 ** 20 and j.write_runtime_ms == 59030
    assert j.write_clat_p99_ns == 56_000  # clat percentiles (usec): 99.00th=[   56]
    assert (j.sync_min_ns, j.sync_max_ns, j.sync_avg_ns) == (6e6, 821e6, pytest.approx(10.45e6))  # sync (msec)
    assert j.sync_p99_ns == 62e6  # sync percentiles (msec): 99.00th=[   62]
    assert (j.filename, j.sync_opts, j.direct, j.bs_bytes) == ("test-data", "fdatasync=1", None, 4096)  # the command


def test_fio_normal_raw_optane_iops_with_k_suffix_and_disk_stats():
    run = parse_fio_normal(_pub("fio__optane-m10-raw-fdatasync-p99-68us.txt"),
                           "fio --rw=write --ioengine=sync --fdatasync=1 --size=22m --bs=4k --name=mytest "
                           "--filename=/dev/nvme1n1")
    (j,) = run.jobs
    assert run.disks == ["nvme1n1"] and run.version == "fio-3.25"
    assert j.write_iops == 18_600  # IOPS=18.6k
    assert j.write_bw_bytes_s == pytest.approx(72.8 * 2 ** 20) and j.write_runtime_ms == 302
    assert j.write_clat_p99_ns == 12_000 and j.sync_p99_ns == 68_000 and j.sync_max_ns == 109_000
    assert j.sync_avg_ns == pytest.approx(47_600) and j.sync_min_ns == 41_000 and j.filename == "/dev/nvme1n1"


def test_fio_normal_read_side_units_and_a_failed_job():
    """Variants of the real layout (fio 3.x stat.c): a read side in GiB/s with M-suffixed IOPS and msec
    percentiles, and a job that ended with an error (err= 5 and fio's words)."""
    real = _pub("fio__optane-m10-raw-fdatasync-p99-68us.txt").replace("\r\n", "\n")
    text = (real.replace("  write: IOPS=18.6k, BW=72.8MiB/s (76.4MB/s)(22.0MiB/302msec); 0 zone resets",
                         "  read: IOPS=1.2M, BW=4.5GiB/s (4.8GB/s)(45.0GiB/10001msec)")
            .replace("    clat percentiles (usec):", "    clat percentiles (msec):"))
    (j,) = parse_fio_normal(text).jobs
    assert j.read_iops == 1.2e6 and j.read_bw_bytes_s == pytest.approx(4.5 * 2 ** 30)
    assert j.read_io_bytes == 45 * 2 ** 30 and j.read_runtime_ms == 10001 and j.read_clat_p99_ns == 12e6
    assert j.write_bw_bytes_s is None and j.write_iops is None
    bad = real.replace("err= 0: pid=1683564", "err= 5 (file:io_u.c:1747, func=io_u error, error=Input/output error): "
                       "pid=1683564")
    assert parse_fio_normal(bad).jobs[0].error == 5


def test_fio_normal_cut_inside_the_sync_block_is_a_problem_not_a_figure():
    real = _pub("fio__zfs-raidz2-no-slog-fdatasync-p99-62ms.txt")
    cut = real[:real.rindex("     | 99.00th")]  # inside the sync percentiles (the last block)
    run = parse_fio_normal(cut)
    (j,) = run.jobs
    assert j.sync_p99_ns is None and j.sync_max_ns == 821e6 and any("cut short" in p for p in run.problems)
    head = real[:real.index("mytest: (groupid=")]  # cut before the results: the header only
    run = parse_fio_normal(head)
    assert not run.found and not run.jobs and run.problems


def test_parse_fio_prefers_the_json_document_and_reads_the_sync_block():
    run = parse_fio(_t("fio-json__dev-vm-vda-seqread-1m-randread-128k.json"))
    assert run.format == "json" and [j.sync_p99_ns for j in run.jobs] == [None, None]  # no fsync issued: N = 0
    assert parse_fio(_pub("fio__optane-m10-raw-fdatasync-p99-68us.txt")).format == "normal"
    assert not parse_fio("nothing here").found


def test_detect_fio_normal_claims_fio_and_nothing_else():
    for name in ("fio__zfs-raidz2-optane-slog-fdatasync-p99-260us.txt", "fio__zfs-raidz2-no-slog-fdatasync-p99-62ms.txt",
                 "fio__optane-m10-raw-fdatasync-p99-68us.txt"):
        assert detect_fio_normal(_pub(name)) >= 0.9 and detect_fio(_pub(name)) >= 0.9
    assert detect_fio_normal(_t("fio-json__kubestr-ceph-rbd-randread-randwrite-4k.json")) == 0
    assert detect_fio(_t("fio-json__kubestr-ceph-rbd-randread-randwrite-4k.json")) >= 0.9
    others = [p for d in ("public", "cases", "storage") for p in sorted((DATA / d).iterdir())
              if p.is_file() and not p.name.startswith(("fio__", "fio-json__", "fio-version__"))]
    assert len(others) > 100
    claimed = [p.name for p in others if detect_fio_normal(p.read_text(errors="replace")) > 0]
    assert claimed == []


def test_fio_command_options():
    assert fio_command_options(ETCD_CMD)["fdatasync"] == "1" and fio_command_options(ETCD_CMD)["filename"] == "test-data"
    assert fio_command_options("sudo /usr/bin/fio --direct --rw=read")["direct"] == "1"
    assert fio_command_options("nvidia-smi -q") == {}


def test_mdadm_detail_reads_as_an_md_array_with_its_members_and_rebuild():
    """synthetic_ mdadm --detail (mdadm(8) layout): the counts, the faulty member and a rebuild's progress read into the
    same MdArray as /proc/mdstat's (the real degraded case: public/mdadm-detail__md1-raid1-...)."""
    from wizard.parsers.storage import detect_mdstat, parse_mdstat

    text = ("/dev/md0:\n           Version : 1.2\n        Raid Level : raid1\n      Raid Devices : 2\n"
            "     Total Devices : 2\n             State : clean, degraded, recovering\n    Active Devices : 1\n"
            "   Working Devices : 2\n    Failed Devices : 0\n    Rebuild Status : 37% complete\n\n"
            "    Number   Major   Minor   RaidDevice State\n"
            "       0       8        1        0      active sync   /dev/sda1\n"
            "       2       8       17        1      spare rebuilding   /dev/sdb1\n")
    assert detect_mdstat(text) >= 0.9
    [a] = parse_mdstat(text).arrays
    assert (a.name, a.level, a.raid_disks, a.working, a.degraded) == ("md0", "raid1", 2, 1, True)
    assert (a.action, a.progress_pct) == ("recovery", 37.0)
    assert [(m.name, m.flags) for m in a.members] == [("sda1", ()), ("sdb1", ("S",))]
    clean = text.replace("clean, degraded, recovering", "clean").replace("Active Devices : 1", "Active Devices : 2")
    assert not parse_mdstat(clean.replace("    Rebuild Status : 37% complete\n", "")).arrays[0].degraded


def test_gdscheck_p_backends_rdma_devices_and_gpus_are_read():
    """Real gdscheck -p outputs (held-out rounds 158 and 230): the DRIVER CONFIGURATION list, the userspace RDMA
    devices' status, use_compat_mode, and the GPU lines."""
    from wizard.parsers.storage import detect_gdscheck, parse_gdscheck

    body = (PUBLIC / "gdscheck__gds113-nvme-nfs-supported-rdma-8-up.txt").read_text()
    g = parse_gdscheck(body)
    assert detect_gdscheck(body) >= 0.9 and g.version == "1.13.0.11" and g.nvidia_fs == "2.17"
    assert g.backends["NVMe"] == "Supported" and g.backends["WekaFS"] == "Unsupported" and (g.rdma_up, g.rdma_down) == (8, 0)
    assert g.compat_mode is False
    ada = parse_gdscheck((PUBLIC / "gdscheck-p__asus-esc8000a-e12-4x-rtx6000-ada-gds-supported-iommu-disabled.txt").read_text())
    assert [x[0] for x in ada.gpus] == [0, 1, 2, 3] and all(x[2] for x in ada.gpus) and ada.verified is True
