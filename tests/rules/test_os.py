"""Tests of wizard/rules/os.py."""

from __future__ import annotations

import pytest
from wizard.explain import explain_text
from wizard.model import Verdict
from wizard.probes import ProbeOutput
from wizard.rules import os as os_rules

from tests.probe_data import LOCAL_VM, PUBLIC, SYNTHETIC, collect_tree, command_output, failed, file_output, text, tree_output
from tests.conftest import DATA
from tests.outputs import _vm_base, only, vm  # noqa: F401  (fixtures)

def test_os_release_dev_vm(vm):
    f = only(os_rules.os_release(vm, {}))
    assert f.verdict is Verdict.PASS
    assert f.message == "Debian GNU/Linux 12 (bookworm), kernel 6.18.44-fc-v657"
    assert '/etc/os-release:PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"' in f.evidence  # the raw line
    assert "/proc/sys/kernel/osrelease:6.18.44-fc-v657" in f.evidence


@pytest.mark.parametrize("name, pretty, ids", [
    ("os-release__ubuntu-24.04.txt", "Ubuntu 24.04.3 LTS", "ID=ubuntu VERSION_ID=24.04"),
    ("os-release__rhel-9.6.txt", "Red Hat Enterprise Linux 9.6 (Plow)", "ID=rhel VERSION_ID=9.6"),
])
def test_os_release_other_distributions_without_kernel_probe(vm, name, pretty, ids):
    vm["os_release"] = file_output("os_release", PUBLIC / name, "/etc/os-release")
    del vm["kernel"]
    f = only(os_rules.os_release(vm, {}))
    assert f.verdict is Verdict.PASS
    assert f.message == f"{pretty}, kernel unknown"
    for pair in ids.split():  # the raw lines (values may be quoted in the file)
        key, value = pair.split("=")
        assert any(e.startswith(f"/etc/os-release:{key}=") and e.rstrip('"').endswith(value) for e in f.evidence), pair


def test_swap_dev_vm_is_off(vm):
    f = only(os_rules.swap(vm, {"scheduler": "kubernetes"}))
    assert f.verdict is Verdict.PASS
    assert f.message == "swap is off"
    assert "/proc/swaps: no swap devices" in f.evidence


@pytest.mark.parametrize("scheduler, verdict", [("kubernetes", Verdict.WARN), ("slurm", Verdict.PASS),
                                                (None, Verdict.PASS)])
def test_swap_on_depends_on_the_scheduler(vm, scheduler, verdict, tmp_path):
    # a one-line variant of the real arm64 /proc/swaps with little swap in use (116922112 KiB -> 1024 KiB)
    raw = text(PUBLIC / "proc-swaps__arm64-nvme-partition.txt").replace("116922112", "1024")
    (tmp_path / "swaps").write_text(raw)
    vm["swaps"] = file_output("swaps", tmp_path / "swaps", "/proc/swaps")
    f = only(os_rules.swap(vm, {"scheduler": scheduler} if scheduler else {}))
    assert f.verdict is verdict
    assert f"swap is on ({466838356 / 1024 / 1024:.1f} GiB" in f.message
    assert raw.splitlines()[1] in f.evidence
    if verdict is Verdict.WARN:
        assert "Kubernetes" in f.message
        assert "failSwapOn" in f.remedy


@pytest.mark.parametrize("scheduler", ["kubernetes", "slurm", None])
def test_swap_in_heavy_use_warns_whatever_the_policy(vm, scheduler):
    # the real arm64 /proc/swaps: 111.5 GiB of 445 GiB swapped out (>= 8 GiB): heavy use, warn on any scheduler
    vm["swaps"] = file_output("swaps", PUBLIC / "proc-swaps__arm64-nvme-partition.txt", "/proc/swaps")
    f = only(os_rules.swap(vm, {"scheduler": scheduler} if scheduler else {}))
    assert f.verdict is Verdict.WARN
    assert "heavy use" in f.message and "111.5 GiB swapped out" in f.message and "25%" in f.message
    assert "ps aux --sort=-rss" in f.remedy and "zram" in f.source
    assert ("Kubernetes" in f.message) is (scheduler == "kubernetes")


@pytest.mark.parametrize("used_kib, size_kib, heavy", [
    (1024, 16777212, False), (8 * 1024 * 1024, 16777212, True), (15099494, 16777212, True),  # zram 90 % full
    (3 * 1024 * 1024, 4 * 1024 * 1024, True), (1 * 1024 * 1024, 4 * 1024 * 1024, False)])
def test_swap_heavy_threshold(used_kib, size_kib, heavy):
    assert os_rules.swap_heavy(used_kib * 1024, size_kib * 1024) is heavy
    f = only(os_rules.judge_proc_swaps("Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
                                       f"/dev/zram0                              partition\t{size_kib}\t{used_kib}\t100\n", {}))
    assert (f.verdict is Verdict.WARN) is heavy


def test_proc_swaps_paste_is_its_own_kind():
    r = explain_text(text(PUBLIC / "proc-swaps__arm64-nvme-partition.txt"))
    assert r.kind == "proc-swaps" and r.verdict is Verdict.WARN
    r = explain_text("Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n")
    assert r.kind == "proc-swaps" and r.verdict is Verdict.PASS and "swap is off" in r.findings[0].message


def test_filesystems_dev_vm_root(vm):
    raw = text(LOCAL_VM / "df-P-T-B1-l.txt")
    root_line = next(line for line in raw.splitlines() if line.endswith(" /"))
    f, skip = os_rules.filesystems(vm, {})
    assert f.verdict is Verdict.PASS
    assert f.subject == "/"
    assert f.message == "/: ext4, 271 GB, 22% used"
    assert f.evidence == (root_line,)
    # no data path in the plan: said, so the step's pass is not read as "the data filesystem has room"
    assert skip.verdict is Verdict.SKIP and "only / was checked" in skip.message
    assert only(os_rules.filesystems(vm, {"data_path": "/"})).verdict is Verdict.PASS


def data_df(path: str, stdout: str = "", stderr: str = "", rc: int = 0) -> ProbeOutput:
    return ProbeOutput("data_path_df", f"$ df -P -T -B1 -- {path}", text=stdout, stderr=stderr, rc=rc,
                       error="" if rc == 0 else f"df exited with status {rc}")


def test_filesystems_data_path_on_the_root_filesystem_warns(vm):
    vm["data_path_df"] = data_df("/tmp", text(LOCAL_VM / "df-P-T-B1--tmp.txt"))
    findings = os_rules.filesystems(vm, {"data_path": "/tmp"})
    assert [(f.subject, f.verdict) for f in findings] == [("/", Verdict.PASS), ("/tmp", Verdict.WARN)]
    assert "is on the root filesystem" in findings[1].message
    assert findings[1].evidence[0].endswith(" /") and "mount it" in findings[1].remedy


def test_filesystems_missing_data_path_fails(vm):
    err = text(LOCAL_VM / "df-P-T-B1--raid.stderr.txt")
    vm["data_path_df"] = data_df("/raid", stderr=err, rc=1)
    root, data = os_rules.filesystems(vm, {"data_path": "/raid"})
    assert data.verdict is Verdict.FAIL and data.message == "the data path /raid does not exist"
    assert err.strip() in data.evidence and "bringup plan data_path=" in data.remedy


def test_filesystems_synthetic_full_data_volume_warns(vm):
    raw = text(SYNTHETIC / "synthetic_df__data-volume-96pct.txt")
    header = raw.splitlines()[0]
    data_line = next(line for line in raw.splitlines() if line.endswith(" /data"))
    vm["data_path_df"] = data_df("/data/checkpoints", header + "\n" + data_line + "\n")
    root, data = os_rules.filesystems(vm, {"data_path": "/data/checkpoints"})
    assert root.verdict is Verdict.PASS
    assert data.verdict is Verdict.WARN and data.subject == "/data/checkpoints"
    assert data.message == "/data/checkpoints (on /data): xfs, 3840 GB, 96% used (above 90%)"
    assert data.evidence == (data_line,) and data.remedy


def test_filesystems_df_without_a_root_row_is_unknown(vm):
    vm["df"] = ProbeOutput("df", "$ df -P -T -B1 -l", rc=0, text=(
        "Filesystem Type 1-blocks Used Available Capacity Mounted on\n"
        "/dev/nvme0n1p1 xfs 1000 10 990 1% /data\n"))
    root = os_rules.filesystems(vm, {})[0]
    assert root.verdict is Verdict.UNKNOWN and "no / row" in root.message


PLAT = DATA / "platform"


PUB, SYN, VM = PLAT / "public", PLAT / "synthetic", PLAT / "local-vm"


def one(findings, fid=None):
    fs = [f for f in findings if fid is None or f.id == fid]
    assert len(fs) == 1, findings
    return fs[0]


def _os(osr: str, kernel: str = "6.8.0-41-generic") -> dict[str, ProbeOutput]:
    return {"os_release": ProbeOutput("os_release", "/etc/os-release", text=osr),
            "kernel": ProbeOutput("kernel", "/proc/sys/kernel/osrelease", text=kernel + "\n")}


UBUNTU_2404 = text(DATA / "public" / "os-release__ubuntu-24.04.txt")


RHEL_96 = text(DATA / "public" / "os-release__rhel-9.6.txt")


def test_os_support_listed_unlisted_and_unknown():
    f = one(os_rules.os_support(_os(UBUNTU_2404), {}))
    assert f.verdict is Verdict.PASS and "R580" in f.message and "6.8.0-31" in f.message and "DKMS" in f.message
    assert one(os_rules.os_support(_os(RHEL_96, "5.14.0-570.el9.x86_64"), {"driver_branch": "R590"})).verdict is Verdict.PASS
    old = UBUNTU_2404.replace('VERSION_ID="24.04"', 'VERSION_ID="20.04"')
    w = one(os_rules.os_support(_os(old), {"driver_branch": "590"}))
    assert w.verdict is Verdict.WARN and "Ubuntu 22.04 LTS" in w.message and "release notes" in w.message
    u = one(os_rules.os_support(_os(UBUNTU_2404), {"driver_branch": "570"}))
    assert u.verdict is Verdict.UNKNOWN and "release notes" in u.message  # no table for the branch: never a fail
    vm = one(os_rules.os_support(collect_tree(VM, ["os_release", "kernel"]), {}))
    # Debian 12 is in the CUDA 13.0 Update 1 table (R580): listed, with the table's source named
    assert vm.verdict is Verdict.PASS and "Debian GNU/Linux 12" in vm.message and "listed" in vm.message
    assert "cuda-installation-guide-linux" in vm.source and "CUDA 13.0 Update 1" in vm.message


def test_kernel_headers():
    kern = ProbeOutput("kernel", "/proc/sys/kernel/osrelease", text="6.8.0-41-generic\n")
    ok = {"kernel": kern, "kernel_build": tree_output("kernel_build", {"/lib/modules/6.8.0-41-generic/build": "",
                                                                       "/lib/modules/6.8.0-41-generic/build/Makefile": ""},
                                                      "ls -d")}
    assert one(os_rules.kernel_headers(ok, {})).verdict is Verdict.PASS
    dangling = {"kernel": kern, "kernel_build": tree_output("kernel_build", {"/lib/modules/6.8.0-41-generic/build": "",
                                                                             "/lib/modules/6.8.0-40-generic/build/Makefile": ""},
                                                            "ls -d")}
    f = one(os_rules.kernel_headers(dangling, {}))
    assert f.verdict is Verdict.WARN and "no Makefile" in f.message and "linux-headers-6.8.0-41-generic" in f.remedy
    vm = one(os_rules.kernel_headers(collect_tree(VM, ["kernel", "kernel_build"]), {}))
    assert vm.verdict is Verdict.WARN and "6.18.44-fc-v657" in vm.message


def test_mount_options_barrier_off_warns_and_is_never_suggested():
    out = {"mounts": ProbeOutput("mounts", "/proc/self/mounts", text=text(SYN / "synthetic_proc-mounts__raid-ext4-nobarrier.txt")),
           "fstab": ProbeOutput("fstab", "/etc/fstab", text=text(SYN / "synthetic_fstab__ubuntu-swapimg-raid-barrier0.txt"))}
    fs = os_rules.mount_options(out, {"data_path": "/raid/datasets"})
    warn = [f for f in fs if f.verdict is Verdict.WARN]
    assert len(warn) == 1 and "/raid (holds /raid/datasets) is mounted with nobarrier" in warn[0].message
    assert warn[0].remedy.startswith("Remove nobarrier")
    assert any(f.verdict is Verdict.PASS and "/: ext4" in f.message for f in fs)
    # configured in fstab only (not mounted so yet): still a warning, saying so
    out["mounts"] = ProbeOutput("mounts", "/proc/self/mounts", text="/dev/nvme0n1p2 / ext4 rw 0 0\n/dev/md0 /raid ext4 rw 0 0\n")
    fs = os_rules.mount_options(out, {"data_path": "/raid"})
    assert [f.verdict for f in fs if "configured in /etc/fstab" in f.message] == [Verdict.WARN]
    # the data volume is not mounted now: its fstab entry still decides how it will be mounted
    out["mounts"] = ProbeOutput("mounts", "/proc/self/mounts", text="/dev/nvme0n1p2 / ext4 rw 0 0\n")
    fs = os_rules.mount_options(out, {"data_path": "/raid/ckpt"})
    assert [(f.verdict, f.subject) for f in fs if f.verdict is Verdict.WARN] == [(Verdict.WARN, "/raid")]
    for f in os_rules.mount_options(collect_tree(VM, ["mounts", "fstab"]), {}):
        assert f.verdict is Verdict.PASS and "barrier=0" not in f.remedy
    # walk 18: a data path with no mount of its own passed as "/ and the data path" on / alone: it says where it is
    (f,) = os_rules.mount_options({"mounts": ProbeOutput("mounts", "/proc/self/mounts",
                                                         text="/dev/vda / ext4 rw,relatime 0 0\n")}, {"data_path": "/raid"})
    assert f.verdict is Verdict.PASS and "/raid: no mount of its own, so it is on /" in f.message


def test_time_sync_on_this_vm_is_unknown_with_the_reason():
    out = {"timedatectl": command_output("timedatectl", VM / "timedatectl-show.stdout",
                                         "timedatectl show -p NTPSynchronized -p NTP",
                                         rc=int(text(VM / "timedatectl-show.rc")), stderr=text(VM / "timedatectl-show.stderr")),
           "chronyc_tracking": failed("chronyc_tracking", "$ chronyc tracking", "command not found: chronyc", 127)}
    f = one(os_rules.time_sync(out, {}))
    assert f.verdict is Verdict.UNKNOWN and any("not been booted with systemd" in e for e in f.evidence)


def test_time_sync_not_synchronised_warns_and_chrony_is_the_fallback():
    out = {"timedatectl": failed("timedatectl", "$ timedatectl show", "command not found: timedatectl", 127),
           "chronyc_tracking": command_output("chronyc_tracking", PUB / "chronyc-tracking__pingcap-docs-5283-not-synchronised-line.txt",
                                              "chronyc tracking")}
    f = one(os_rules.time_sync(out, {}))
    assert f.verdict is Verdict.WARN and "not synchronised" in f.message and "line up" in f.message
    assert "Leap status    : Not synchronised" in f.evidence


def test_explain_kubernetes_plan_turns_fstab_swap_into_a_warning():
    r = explain_text(text(PUB / "fstab__insights-core-rhel-anaconda-lvm-swap.txt"), expectations={"scheduler": "kubernetes"})
    swap = [f for f in r.findings if f.id == "os.swap"]
    assert swap and swap[0].verdict is Verdict.WARN and "kubelet" in swap[0].message


def test_pasted_df_h_of_a_container_warns_on_root_and_on_dockers_64m_shm() -> None:
    """Real `df -h` in a Docker container: / at 97% warns (DISK_WARN_PCT), /dev/shm at Docker's default 64M warns
    (os.SHM_MIN_BYTES, from the PyTorch README and NCCL's troubleshooting guide); /etc/hosts is the same filesystem
    bind-mounted and is not said twice."""
    r = explain_text(text(PUBLIC / "df-h__docker-container-root-97pct-shm-64m.txt"))
    by = {(f.id, f.subject): f for f in r.findings}
    assert r.kind == "df" and set(by) == {("os.filesystem", "/"), ("os.shm", "/dev/shm")}
    assert by[("os.filesystem", "/")].verdict is Verdict.WARN and "97% used" in by[("os.filesystem", "/")].message
    assert by[("os.shm", "/dev/shm")].verdict is Verdict.WARN and "64 MiB" in by[("os.shm", "/dev/shm")].message
    assert "--shm-size" in by[("os.shm", "/dev/shm")].remedy


def test_pasted_df_full_root_fails_large_shm_passes_and_snap_loops_are_not_full_disks() -> None:
    """synthetic_ df -hT: a full / (0 available) fails, a 32G /dev/shm passes, squashfs snap images at 100% are
    read-only images and say nothing; a row-less paste is unknown with the lines as evidence."""
    t = ("Filesystem     Type      Size  Used Avail Use% Mounted on\n"
         "/dev/nvme0n1p2 ext4      1.8T  1.8T     0 100% /\n"
         "tmpfs          tmpfs      32G  1.0M   32G   1% /dev/shm\n"
         "/dev/loop3     squashfs   56M   56M     0 100% /snap/core18/1944\n")
    f = os_rules.judge_df_text(t, {})
    assert [(x.id, x.verdict) for x in f] == [("os.filesystem", Verdict.FAIL), ("os.shm", Verdict.PASS)]
    assert "du -xsh /*" in f[0].remedy
    bad = os_rules.judge_df_text("Filesystem Size\nnonsense\n", {})
    assert bad[0].verdict is Verdict.UNKNOWN and "nonsense" in bad[0].evidence


def test_shm_with_less_than_a_gib_left_warns_even_below_the_full_mark():
    """/dev/shm of 1.0G with 142M left (87 % used; real: pytorch/pytorch#1355, held-out round 9): the next job's
    DataLoader workers or NCCL segments may not fit, so it warns though it is not 90 % full."""
    from tests.probe_data import PUBLIC, text as read
    from wizard.explain import explain_text

    r = explain_text(read(PUBLIC / "df__dev-shm-1g-87pct-used.txt"), "df")
    f = next(f for f in r.findings if f.id == "os.shm")
    assert f.verdict is Verdict.WARN and "142 MiB left" in f.message


def test_a_kernel_without_module_support_fails_the_headers_step():
    """Walk 18: this VM's kernel (6.18.44-fc-v1147) has no /proc/modules (built without loadable module support); the
    headers step only warned "no headers" and offered a package no archive has. No headers package helps there: the
    NVIDIA kernel modules cannot load into it. A kernel with /proc/modules is judged on its headers as before."""
    kernel = ProbeOutput("kernel", "uname -r", text="6.18.44-fc-v1147\n")
    build = ProbeOutput("kernel_build", "ls -d /lib/modules/*/build", files={})
    no_modules = ProbeOutput("modules", "/proc/modules", error="no such file")
    (f,) = os_rules.kernel_headers({"kernel": kernel, "kernel_build": build, "modules": no_modules}, {})
    assert f.verdict is Verdict.FAIL and "cannot load modules" in f.message and "/proc/modules: no such file" in f.evidence
    modules = ProbeOutput("modules", "/proc/modules", text="nvme 57344 3 - Live 0x0000000000000000\n")
    (f,) = os_rules.kernel_headers({"kernel": kernel, "kernel_build": build, "modules": modules}, {})
    assert f.verdict is Verdict.WARN and "no headers for the running kernel" in f.message


def test_df_i_is_judged_as_inodes_not_sizes():
    """Held-out round 189 (real `df -ih`): / has 8 inodes free (100 %): fail, in inodes; no size or /dev/shm finding
    is made up from inode counts (their 790K read as a 1 MiB /dev/shm before)."""
    fs = os_rules.judge_df_text(text(PUBLIC / "df-ih__nixos-vm-root-inodes-100pct.txt"), {})
    assert [(f.id, f.verdict) for f in fs] == [("os.filesystem", Verdict.FAIL)]
    assert "100% of its inodes used (8 free)" in fs[0].message
