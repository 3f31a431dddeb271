"""wizard/install/fio.py: the fio install and the read test's exact argv, and every case where the read test is not
started (no data path, a device path, fio missing, the data path missing, too little free space), from real probe
outputs of this machine (df, os-release)."""

from __future__ import annotations

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
    assert r.ops == [{"argv": ["fio", "--output-format=json", "--ioengine=libaio", "--direct=1",
                               "--filename=/tmp/.bringup-fio-read-test", "--size=64M", "--runtime=3", "--time_based",
                               "--iodepth=32", "--name=seqread", "--rw=read", "--bs=1024k", "--name=randread",
                               "--stonewall", "--rw=randread", "--bs=256k", "--unlink=1"]}]
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
