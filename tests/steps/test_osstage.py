"""The OS stage's actions for real: swap off (backed-up atomic /etc/fstab edit + swapoff -a), its
rollback (byte-for-byte restore + swapon -a), kernel headers install; dry run, confirmation data,
detached run and log through the shared ActionSpec/supervisor machinery. Paths point into a
temporary root; ``swapoff``/``swapon`` are checked in the ops and then replaced by a no-op before
running (they would change this machine)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

import steps
from steps import osstage
from tests.conftest import DATA, bringup_cmd, env_for_cli, frozen_clock
from tests.probe_data import text
from wizard import actions as act
from wizard.actions import ActionContext
from wizard.distro import packaged_kernel
from wizard.engine import Build
from wizard.model import StepStatus
from wizard.probes import ProbeOutput
from wizard.supervise import run as supervise_run

PLAT = DATA / "platform"
PUB, SYN, VM = PLAT / "public", PLAT / "synthetic", PLAT / "local-vm"
NOOP = [sys.executable, "-c", "pass"]


def _no_system_commands(ops: list[dict], expected: list[str]) -> list[dict]:
    """The ops with the one system command (swapoff/swapon) checked and replaced by a no-op."""
    cmds = [op["argv"] for op in ops if "argv" in op]
    assert cmds == [expected]
    return [op if "argv" not in op else {"argv": NOOP} for op in ops]


def _run(ops: list[dict], tmp: Path, name: str) -> tuple[dict, str]:
    log, status = tmp / f"{name}.log", tmp / f"{name}.status"
    rc = supervise_run({"title": name, "log": str(log), "status": str(status), "ops": ops})
    st = json.loads(status.read_text())
    assert rc == 0 and st["rc"] == 0 and st["failed_op"] is None, log.read_text()
    return st, log.read_text()


@pytest.mark.parametrize("sample", [PUB / "fstab__insights-core-rhel-anaconda-lvm-swap.txt",
                                    SYN / "synthetic_fstab__ubuntu-swapimg-raid-barrier0.txt"])
def test_swap_off_then_rollback_for_real_in_a_temp_root(tmp_path, sample):
    etc = tmp_path / "root" / "etc"
    etc.mkdir(parents=True)
    fstab = etc / "fstab"
    original = sample.read_bytes()
    fstab.write_bytes(original)
    os.chmod(fstab, 0o640)
    backups = tmp_path / "build" / "backups"

    r = osstage.swap_off_resolved(original.decode(), str(fstab), str(backups))
    assert r is not None
    assert r.ops[0]["write"] == str(fstab) and r.ops[0]["backup_dir"] == str(backups / "swap-off")
    st, log = _run(_no_system_commands(r.ops, ["swapoff", "-a"]), tmp_path, "swapoff")
    assert f"# write {fstab}" in log and "# backed up to" in log
    # the backup holds the original bytes; the file is the commented-out version, same mode, no temp left
    saved = list((backups / "swap-off").iterdir())
    assert len(saved) == 1 and saved[0].read_bytes() == original
    edited = fstab.read_bytes()
    assert edited.decode() == osstage.comment_out_swap(original.decode())[0] and edited != original
    assert stat.S_IMODE(fstab.stat().st_mode) == 0o640
    assert not [p for p in etc.iterdir() if p.name != "fstab"]
    assert osstage.comment_out_swap(edited.decode())[1] == []

    # someone edits /etc/fstab after the swap step (a data volume): the rollback must keep that
    later = edited + b"/dev/md0 /raid xfs defaults,noatime 0 0\n"
    fstab.write_bytes(later)
    rb = osstage.swap_rollback_resolved(later.decode(), str(backups), str(fstab))
    assert rb.ops[0]["write"] == str(fstab) and not rb.manual
    _run(_no_system_commands(rb.ops, ["swapon", "-a"]), tmp_path, "rollback")
    assert fstab.read_bytes() == original + b"/dev/md0 /raid xfs defaults,noatime 0 0\n"  # swap back, edit kept
    assert stat.S_IMODE(fstab.stat().st_mode) == 0o640
    # the rollback backed up the file it changed too, outside swap-off/
    assert [p.read_bytes() for p in backups.iterdir() if p.is_file()] == [later]
    assert osstage.newest_swap_backup(str(backups), str(fstab)) == saved[0]


def test_describe_shows_exactly_what_changes():
    raw = text(SYN / "synthetic_fstab__ubuntu-swapimg-raid-barrier0.txt")
    r = osstage.swap_off_resolved(raw, "/etc/fstab", "/var/lib/bringup/builds/b/backups")
    assert r.describe() == [  # the diff is from the file the resolver read, whatever /etc/fstab here holds
        "write /etc/fstab (backed up first, replaced atomically): comment out 1 swap entry",
        "    --- /etc/fstab (now)",
        "    +++ /etc/fstab (after)",
        "    @@ -1,4 +1,4 @@",
        "     # /etc/fstab: static file system information.",
        "     UUID=0c9b5f61-1b1c-4e43-9f3a-2b2a5b8f4e21 /               ext4    errors=remount-ro 0       1",
        "    -/swap.img\tnone\tswap\tsw\t0\t0",
        "    +#bringup-swap-off# /swap.img\tnone\tswap\tsw\t0\t0",
        "     /dev/md0 /raid ext4 defaults,noatime,barrier=0 0 2",
        "$ swapoff -a",
    ]


def _ctx(outputs: dict, backup_dir: str = "/var/lib/bringup/builds/b/backups") -> ActionContext:
    return ActionContext(outputs, {}, backup_dir)


def test_resolve_from_probes_and_the_manual_cases():
    spec = steps.step_by_id("os.swap").action
    assert spec.probes == ("fstab", "swaps") and spec.backs_up == ("/etc/fstab",) and spec.needs_root
    fstab = ProbeOutput("fstab", "/etc/fstab", text=text(PUB / "fstab__insights-core-rhel-anaconda-lvm-swap.txt"))
    r = spec.resolve(_ctx({"fstab": fstab}))
    assert r.ops[0]["write"] == "/etc/fstab" and r.ops[1] == {"argv": ["swapoff", "-a"]}
    assert "    -/dev/mapper/rhel_hadoop--test--1-swap swap                    swap    defaults        0 0" in r.describe()
    # this VM: no swap entry, no swap in use
    vm = _ctx({"fstab": ProbeOutput("fstab", "/etc/fstab", text=text(VM / "etc" / "fstab")),
               "swaps": ProbeOutput("swaps", "/proc/swaps", text=text(VM / "proc" / "swaps"))})
    nothing = spec.resolve(vm)
    assert nothing.manual.startswith("nothing to do") and nothing.done  # already so: the CLI exits 0, not 3
    # swap on without an fstab entry (zram / a systemd swap unit): said so, nothing edited
    zram = _ctx({"fstab": ProbeOutput("fstab", "/etc/fstab", text=text(VM / "etc" / "fstab")),
                 "swaps": ProbeOutput("swaps", "/proc/swaps", text="Filename\tType\tSize\tUsed\tPriority\n"
                                                                     "/dev/zram0 partition 8388604 0 100\n")})
    m = spec.resolve(zram).manual
    assert "zram" in m and "/dev/zram0" in m and not spec.resolve(zram).done  # a person must act
    unreadable = spec.resolve(_ctx({"fstab": ProbeOutput("fstab", "/etc/fstab", error="permission denied")}))
    assert unreadable.ops == [] and "permission denied" in unreadable.manual


def test_rollback_with_nothing_bringup_commented_is_manual(tmp_path):
    spec = steps.step_by_id("os.swap_rollback").action
    assert spec.probes == ("fstab",)
    plain = ProbeOutput("fstab", "/etc/fstab", text="UUID=1 / ext4 defaults 0 1\n#/swap.img none swap sw 0 0\n")
    r = spec.resolve(_ctx({"fstab": plain}, str(tmp_path)))
    assert r.ops == [] and r.manual.startswith("nothing to roll back") and r.done  # a '#' of someone else's: not ours to undo
    r = spec.resolve(_ctx({}, str(tmp_path)))
    assert r.ops == [] and "could not read" in r.manual


def test_kernel_headers_resolve_per_distribution():
    spec = steps.step_by_id("os.kernel_headers").action
    kern = ProbeOutput("kernel", "/proc/sys/kernel/osrelease", text="6.8.0-41-generic\n")
    deb = spec.resolve(_ctx({"os_release": ProbeOutput("os_release", "/etc/os-release", text="ID=ubuntu\nID_LIKE=debian\n"),
                             "kernel": kern}))
    assert deb.ops[-1]["argv"][:3] == ["apt-get", "install", "-y"]
    # the running kernel's headers and the flavour metapackage, so DKMS can rebuild after kernel updates
    assert deb.ops[-1]["argv"][-2:] == ["linux-headers-6.8.0-41-generic", "linux-headers-generic"]
    assert deb.env == {"DEBIAN_FRONTEND": "noninteractive"}
    rh = spec.resolve(_ctx({"os_release": ProbeOutput("os_release", "/etc/os-release",
                                                      text='ID="rocky"\nID_LIKE="rhel"\nVERSION_ID="9.6"\n'),
                            "kernel": ProbeOutput("kernel", "k", text="5.14.0-570.el9.x86_64\n")}))
    assert rh.ops == [{"argv": ["dnf", "install", "-y", "kernel-devel-matched", "kernel-headers"]}]
    rh8 = spec.resolve(_ctx({"os_release": ProbeOutput("os_release", "/etc/os-release",
                                                       text='ID="rocky"\nID_LIKE="rhel"\nVERSION_ID="8.10"\n'),
                             "kernel": ProbeOutput("kernel", "k", text="4.18.0-553.el8_10.x86_64\n")}))
    assert rh8.ops == [{"argv": ["dnf", "install", "-y", "kernel-devel-4.18.0-553.el8_10.x86_64", "kernel-headers"]}]
    suse = spec.resolve(_ctx({"os_release": ProbeOutput("os_release", "/etc/os-release", text="ID=sles\n"), "kernel": kern}))
    assert suse.ops == [] and "6.8.0-41-generic" in suse.manual
    odd = spec.resolve(_ctx({"os_release": ProbeOutput("os_release", "/etc/os-release", text="ID=ubuntu\n"),
                             "kernel": ProbeOutput("kernel", "k", text="6.8; rm -rf /\n")}))
    assert odd.ops == [] and "could not read" in odd.manual


def test_kernel_headers_on_a_kernel_that_cannot_load_modules_says_boot_another_not_install_headers():
    """Walk 23 #3: the check fails such a kernel (no /proc/modules); the action offered "install the headers that came
    with this kernel's build", which cannot help. It says to boot a kernel with module support; the step's text says
    what to do when the check fails, not only when it warns."""
    spec = steps.step_by_id("os.kernel_headers").action
    assert "modules" in spec.probes
    r = spec.resolve(_ctx({"os_release": ProbeOutput("os_release", "/etc/os-release", text="ID=debian\n"),
                           "kernel": ProbeOutput("kernel", "k", text="6.18.44-fc-v1147\n"),
                           "modules": ProbeOutput("modules", "/proc/modules", error="no such file")}))
    assert r.ops == [] and not r.done and "cannot load modules" in r.manual
    assert "Boot a kernel with module support" in r.manual and "came with this kernel's build" not in r.manual
    assert "If it fails because the kernel cannot load modules" in steps.step_by_id("os.kernel_headers").instructions


def test_dry_run_records_and_prints_the_exact_ops_and_changes_nothing(state_dir, tmp_path):
    fstab = tmp_path / "fstab"
    raw = text(SYN / "synthetic_fstab__ubuntu-swapimg-raid-barrier0.txt")
    fstab.write_text(raw)
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "boot-1"}, create=True, clock=frozen_clock,
                   dry_run=True)
    try:
        r = osstage.swap_off_resolved(raw, str(fstab), str(b.backup_dir))
        run = b.start_action(steps.step_by_id("os.swap"), r)
        assert run.state == act.ActionState.DRY_RUN and run.pid is None
        log = Path(run.log_path).read_text()
        assert f"would run: write {fstab} (backed up first, replaced atomically)" in log
        assert "would run: $ swapoff -a" in log and "\n    +#bringup-swap-off# /swap.img\tnone\tswap\tsw\t0\t0" in log and "would run:     +" not in log
        assert fstab.read_text() == raw and not b.backup_dir.exists()
        rec = b.store.action_run(run.id)
        assert rec.argv == [["write", str(fstab)], ["swapoff", "-a"]] and rec.user == "tester" and rec.dry_run
    finally:
        b.close()


def test_real_run_through_the_engine_is_detached_logged_and_waits_for_the_check(state_dir, tmp_path, monkeypatch):
    fstab = tmp_path / "fstab"
    original = text(PUB / "fstab__insights-core-rhel-anaconda-lvm-swap.txt")
    fstab.write_text(original)
    monkeypatch.setattr(os, "geteuid", lambda: 0)  # the action needs root; its ops here touch only tmp_path
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "boot-1"}, create=True, clock=frozen_clock)
    try:
        r = osstage.swap_off_resolved(original, str(fstab), str(b.backup_dir))
        r.ops = _no_system_commands(r.ops, ["swapoff", "-a"])
        run = b.wait_action(b.start_action(steps.step_by_id("os.swap"), r), timeout_s=60)
        assert run.state == act.ActionState.SUCCEEDED and run.exit_status == 0
        assert "# backed up to" in Path(run.log_path).read_text()
        assert b.status("os.swap") is StepStatus.PENDING and b.needs_check("os.swap")
        assert "#bringup-swap-off# /dev/mapper/rhel_hadoop--test--1-swap" in fstab.read_text()
        rb = osstage.swap_rollback_resolved(fstab.read_text(), str(b.backup_dir), str(fstab))
        rb.ops = _no_system_commands(rb.ops, ["swapon", "-a"])
        run2 = b.wait_action(b.start_action(steps.step_by_id("os.swap_rollback"), rb), timeout_s=60)
        assert run2.state == act.ActionState.SUCCEEDED and fstab.read_text() == original
        runs = b.store.action_runs()
        assert [x.step_id for x in runs] == ["os.swap", "os.swap_rollback"] and all(x.user == "tester" for x in runs)
    finally:
        b.close()


def test_cli_dry_run_prints_the_ops_of_this_machine(tmp_path):
    """`bringup --dry-run run os.kernel_headers` on this machine: what it would run, nothing run."""
    import subprocess

    r = subprocess.run(bringup_cmd("--state", str(tmp_path / "s"), "--dry-run", "run", "os.kernel_headers"),
                       capture_output=True, text=True, env=env_for_cli(), timeout=120)
    rel = os.uname().release
    out = r.stdout
    assert "Install the running kernel's headers  (os.kernel_headers)" in out
    assert "changes the system: yes; needs root: yes" in out
    distro = next((ln.split("=", 1)[1].strip().strip('"') for ln in Path("/etc/os-release").read_text().splitlines()
                   if ln.startswith("ID=")), "") if Path("/etc/os-release").exists() else ""
    if not Path("/proc/modules").exists():  # a kernel without module support (this VM's): no headers help
        said = " ".join(out.split())  # wrapped to the terminal
        assert r.returncode == 3 and "cannot load modules" in said and "Boot a kernel with module support" in said
    elif Path("/etc/debian_version").exists() and packaged_kernel(distro, rel):
        assert r.returncode == 0 and f"linux-headers-{rel}" in out and "dry run: nothing was run" in out
    elif Path("/etc/debian_version").exists():  # a self-built kernel (this VM's): no archive has its headers
        assert r.returncode == 3 and "is not one of" in out and f"no linux-headers-{rel} package exists" in out
    else:
        assert ("dry run: nothing was run" in out) or ("cannot run here" in out)


def test_a_kernel_no_archive_packages_gets_no_headers_install():
    """Walk 18: on Debian 12 running 6.18.44-fc-v1147 (a self-built kernel) the action offered
    `apt-get install linux-headers-6.18.44-fc-v1147`. Debian's and Ubuntu's own kernels name an ABI number (or a
    +bpo/+debNN suffix) and a flavour; anything else has no headers package in the archive."""
    for distro, rel in (("debian", "6.1.0-47-amd64"), ("debian", "6.12.12+bpo-amd64"), ("debian", "6.12.38+deb13-amd64"),
                        ("debian", "6.1.0-47-cloud-amd64"), ("ubuntu", "6.8.0-45-generic"), ("ubuntu", "5.15.0-1050-aws"),
                        ("rhel", "5.14.0-427.13.1.el9_4.x86_64")):
        assert packaged_kernel(distro, rel), (distro, rel)
    for distro, rel in (("debian", "6.18.44-fc-v1147"), ("ubuntu", "6.18.44-fc-v1147"), ("debian", "6.8.0-generic")):
        assert not packaged_kernel(distro, rel), (distro, rel)
