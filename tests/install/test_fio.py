"""wizard/install/fio.py: the fio install and the read test's exact argv, and every case where the read test is not
started (no data path, a device path, fio missing, the data path missing, too little free space), from real probe
outputs of this machine (df, os-release)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.conftest import DATA
from wizard.actions import ActionContext
from wizard.install import fio
from wizard.probes import ProbeOutput

S = DATA / "storage"
OS_RELEASE = DATA / "local-vm" / "etc" / "os-release"  # this machine's (Debian 12), kept in tests/data


def _ctx(plan: dict, **outs: ProbeOutput) -> ActionContext:
    return ActionContext(outputs=outs, plan=plan, backup_dir="/tmp/b")


def _df() -> ProbeOutput:
    return ProbeOutput("data_path_df", "$ df -P -T -B1 -- /tmp", text=(S / "df-data-path__dev-vm-tmp-on-root.txt").read_text(), rc=0)


def _osr() -> ProbeOutput:
    return ProbeOutput("os_release", "/etc/os-release", text=OS_RELEASE.read_text())


FIO_OK = ProbeOutput("fio_version", "$ fio --version", text="fio-3.33\n", rc=0)
FIO_MISSING = ProbeOutput("fio_version", "$ fio --version", rc=127, error="command not found: fio")


def test_the_read_test_argv_reads_a_file_under_the_data_path_and_removes_it():
    r = fio.resolve_read(_ctx({"data_path": "/tmp/", "storage_test_mib": 64, "storage_test_s": 3, "data_block_kib": 256},
                              fio_version=FIO_OK, data_path_df=_df()))
    assert not r.manual
    (op,) = r.ops
    argv = op["argv"]
    sep = argv.index("--")
    assert argv[1:3] == ["-m", "wizard.progress"]  # under the progress wrapper: "# fio: N s elapsed of about 6 s"
    wrapper = argv[:sep]
    assert wrapper[wrapper.index("--expect-s") + 1] == "6"  # the two jobs' runtimes
    assert wrapper[wrapper.index("--remove") + 1] == "/tmp/.bringup-fio-read-test"  # removed however the run ends
    assert "data path: /tmp on ext4" in wrapper  # df's filesystem type, for the judge
    assert argv[sep + 1:] == ["fio", "--output-format=json", "--ioengine=libaio", "--direct=1",
                              "--filename=/tmp/.bringup-fio-read-test", "--size=64M", "--runtime=3", "--time_based",
                              "--iodepth=32", "--name=seqread", "--rw=read", "--bs=1024k", "--name=randread",
                              "--stonewall", "--rw=randread", "--bs=256k", "--unlink=1"]
    default = fio.fio_argv("/raid", {})
    assert "--size=4096M" in default and "--runtime=30" in default and "--bs=128k" in default
    assert default[-1] == "--unlink=1" and default.count("--unlink=1") == 1  # on the last job only


def test_what_stops_the_read_test_is_said():
    assert "set data_path in the plan (F2)" in fio.resolve_read(_ctx({}, fio_version=FIO_OK)).manual
    assert "never writes a device" in fio.resolve_read(_ctx({"data_path": "/dev/nvme0n1"}, fio_version=FIO_OK)).manual
    miss = fio.resolve_read(_ctx({"data_path": "/tmp"}, fio_version=FIO_MISSING, os_release=_osr()))
    assert "fio is not installed" in miss.manual and "node.storage_tools" in miss.manual
    assert "apt-get install" in miss.manual and "fio" in miss.manual
    gone = ProbeOutput("data_path_df", "$ df", rc=1, error="df exited with status 1",
                       stderr="df: /nope: No such file or directory\n")
    assert "does not exist" in fio.resolve_read(_ctx({"data_path": "/nope"}, fio_version=FIO_OK, data_path_df=gone)).manual
    big = fio.resolve_read(_ctx({"data_path": "/tmp", "storage_test_mib": 1 << 20}, fio_version=FIO_OK, data_path_df=_df()))
    assert "MiB free" in big.manual and "storage_test_mib" in big.manual


def test_install_uses_the_distribution_package_manager():
    r = fio.resolve_install(_ctx({}, os_release=_osr()))
    assert r.ops[-1]["argv"][:2] == ["apt-get", "install"] and r.ops[-1]["argv"][-1] == "fio"
    assert r.env == {"DEBIAN_FRONTEND": "noninteractive"}
    unknown = fio.resolve_install(_ctx({}, os_release=ProbeOutput("os_release", "/etc/os-release", text="ID=plan9\n")))
    assert "install fio by hand" in unknown.manual


def test_a_colon_is_escaped_for_fio_and_a_backslash_or_control_character_refused():
    argv = fio.fio_argv("/w/ok:/w/data", {})
    assert "--filename=/w/ok\\:/w/data/.bringup-fio-read-test" in argv  # fio HOWTO "filename": '\\:'
    for bad, words in (("/w/a\nb", "control character"), ("/w/a\tb", "control character"), ("/w/a\\b", "backslash")):
        r = fio.resolve_read(_ctx({"data_path": bad}, fio_version=FIO_OK))
        assert r.manual and words in r.manual and not r.ops


def test_the_device_guard_resolves_links_and_compares_path_components(tmp_path):
    link = tmp_path / "shm-link"
    link.symlink_to("/dev/shm")
    for dp in (str(link), "/tmp/../dev/shm", "/proc/self", "/sys"):
        r = fio.resolve_read(_ctx({"data_path": dp}, fio_version=FIO_OK))
        assert "never writes a device" in r.manual, dp
    assert "resolves to /dev/shm" in fio.resolve_read(_ctx({"data_path": str(link)}, fio_version=FIO_OK)).manual
    for dp in ("/sysdata", "/devices", "/processed"):  # not /sys, /dev, /proc: not refused as a device path
        assert "never writes a device" not in fio.resolve_read(_ctx({"data_path": dp}, fio_version=FIO_OK)).manual


def test_a_data_path_that_is_a_file_or_read_only_is_refused_with_what_to_do(tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    r = fio.resolve_read(_ctx({"data_path": str(f)}, fio_version=FIO_OK))
    assert "is not a directory" in r.manual and "writable directory on the same filesystem" in r.manual
    if os.geteuid() != 0:
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o555)
        r = fio.resolve_read(_ctx({"data_path": str(ro)}, fio_version=FIO_OK))
        assert "not writable by this user" in r.manual
        return
    mnt = tmp_path / "romount"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "none", str(mnt)]).returncode != 0:
        pytest.skip("cannot mount a read-only tmpfs here (root without CAP_SYS_ADMIN)")
    try:
        r = fio.resolve_read(_ctx({"data_path": str(mnt)}, fio_version=FIO_OK))
        assert "read-only filesystem" in r.manual and "writable directory" in r.manual
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_a_ram_filesystem_is_said_before_running(tmp_path):
    df = ProbeOutput("data_path_df", "$ df", rc=0, text="Filesystem Type 1B-blocks Used Available Capacity Mounted on\n"
                     "tmpfs tmpfs 8589934592 0 8589934592 0% " + str(tmp_path) + "\n")  # df's columns, tmpfs row
    r = fio.resolve_read(_ctx({"data_path": str(tmp_path), "storage_test_mib": 16}, fio_version=FIO_OK, data_path_df=df))
    (op,) = r.ops
    assert f"data path: {tmp_path} on tmpfs" in op["argv"]
    assert any("measures memory, not a storage device" in d for d in op["detail"])
