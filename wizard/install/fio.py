"""fio for ``node.storage_tools`` (install it) and ``node.storage_read`` (read the data path with it).

fio (https://fio.readthedocs.io/en/latest/fio_doc.html) is packaged as ``fio`` on Debian/Ubuntu, RHEL/Fedora and
SUSE. The read test is one test file under the plan's data path, never a device: fio lays it out (writes it) first,
then two jobs run one after the other (``--stonewall``) with O_DIRECT (``--direct=1``: the page cache does not
answer) and libaio at ``iodepth`` :data:`IODEPTH`: sequential reads of :data:`SEQ_BS_KIB` KiB blocks (the device's
streaming rate), then random reads at the data loader's block size (what a shuffling loader gets), each for
``storage_test_s`` seconds (``--time_based``). ``--unlink=1`` on the last job removes the file when it ends (a global
``--unlink=1`` removes it after the first job, and the second then fails with ENOENT: seen on fio 3.33). The result
is ``--output-format=json``, judged by :func:`wizard.rules.storage.judge_fio_log`. Data, not judgement.
"""

from __future__ import annotations

from typing import Any, Mapping

from wizard.actions import ActionContext, Resolved
from wizard.distro import package_manager
from wizard.parsers.host import parse_df, parse_os_release

FIO_PACKAGE = "fio"
"""The package that ships fio (Debian/Ubuntu, RHEL/Fedora, SUSE)."""
DEFAULT_BLOCK_KIB = 128
"""The data loader's block size when the plan names none, KiB: bringup's judgement (Linux's default readahead,
``blockdev --getra`` 256 sectors, is 128 KiB)."""
DEFAULT_TEST_MIB = 4096
"""The test file's size when the plan names none, MiB (bringup's judgement: large enough that a drive's cache does not
hold it, small enough to lay out in seconds on NVMe)."""
DEFAULT_TEST_S = 30
"""Seconds each read job runs when the plan names none (bringup's judgement)."""
SEQ_BS_KIB = 1024
"""The sequential job's block size, KiB."""
IODEPTH = 32
"""I/Os in flight per job (libaio): bringup's judgement, enough to keep an NVMe drive's queues busy."""
TEST_FILE = ".bringup-fio-read-test"
"""The test file's name under the data path."""
FREE_MARGIN = 1.1
"""The data path must have this times the test file's size free before fio writes it (bringup's judgement)."""
PROBES = ("os_release", "fio_version", "data_path_df")
"""What the resolvers read."""


def plan_int(plan: Mapping[str, Any], key: str, default: int) -> int:
    """A positive integer plan answer, else ``default``."""
    v = plan.get(key) if isinstance(plan, Mapping) else None
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else default


def block_kib(plan: Mapping[str, Any]) -> int:
    """The data loader's block size, KiB: the plan's ``data_block_kib``, else :data:`DEFAULT_BLOCK_KIB`."""
    return plan_int(plan, "data_block_kib", DEFAULT_BLOCK_KIB)


def test_mib(plan: Mapping[str, Any]) -> int:
    """The test file's size, MiB: the plan's ``storage_test_mib``, else :data:`DEFAULT_TEST_MIB`."""
    return plan_int(plan, "storage_test_mib", DEFAULT_TEST_MIB)


def test_file(data_path: str) -> str:
    """The test file under ``data_path``."""
    return data_path.rstrip("/") + "/" + TEST_FILE


def fio_argv(data_path: str, plan: Mapping[str, Any]) -> list[str]:
    """The fio command of node.storage_read (see the module doc)."""
    secs = plan_int(plan, "storage_test_s", DEFAULT_TEST_S)
    return ["fio", "--output-format=json", "--ioengine=libaio", "--direct=1", f"--filename={test_file(data_path)}",
            f"--size={test_mib(plan)}M", f"--runtime={secs}", "--time_based", f"--iodepth={IODEPTH}",
            "--name=seqread", "--rw=read", f"--bs={SEQ_BS_KIB}k",
            "--name=randread", "--stonewall", "--rw=randread", f"--bs={block_kib(plan)}k", "--unlink=1"]


def _fio_missing(ctx: ActionContext) -> bool:
    o = ctx.outputs.get("fio_version")
    return o is not None and (o.rc == 127 or o.error.startswith("command not found"))


def install_hint(ctx: ActionContext) -> str:
    """How to install fio on this host, in words (the package manager's own command when bringup knows it)."""
    o = ctx.outputs.get("os_release")
    r = parse_os_release(o.text) if o is not None and o.ok else None
    pm = package_manager(r) if r is not None else None
    if pm is None:
        return "install the fio package with the distribution's package manager"
    argvs, _ = pm.install(FIO_PACKAGE)
    return "`" + " && ".join(" ".join(a) for a in argvs) + "`"


def resolve_install(ctx: ActionContext) -> Resolved:
    """node.storage_tools: install fio with the distribution's package manager; another distribution: manual."""
    o = ctx.outputs.get("os_release")
    r = parse_os_release(o.text) if o is not None and o.ok else None
    pm = package_manager(r) if r is not None else None
    if pm is None:
        name = r.pretty_name if r is not None else "this distribution"
        return Resolved(manual=f"bringup does not know the package manager of {name}: install fio by hand.")
    argvs, env = pm.install(FIO_PACKAGE)
    return Resolved(ops=[{"argv": a} for a in argvs], env=env)


def resolve_read(ctx: ActionContext) -> Resolved:
    """node.storage_read: the fio command (:func:`fio_argv`), or what stops it: no data path in the plan, a data path
    under /dev (a device: never written), fio missing, a data path that does not exist, or less free space than
    :data:`FREE_MARGIN` x the test file."""
    dp = ctx.plan.get("data_path")
    if not isinstance(dp, str) or not dp.startswith("/"):
        return Resolved(manual="No data path in the plan: set data_path in the plan (F2), e.g. "
                               "`bringup plan data_path=/raid`, then run this step.")
    if dp == "/dev" or dp.startswith("/dev/") or dp.startswith("/proc") or dp.startswith("/sys"):
        return Resolved(manual=f"The data path {dp} is a device or kernel path: bringup reads only a test file in a "
                               "directory of a mounted filesystem and never writes a device. Set data_path to the "
                               "directory where datasets live.")
    if _fio_missing(ctx):
        return Resolved(manual=f"fio is not installed: run node.storage_tools' action (Install fio), or {install_hint(ctx)}, "
                               "then run this step.")
    size = test_mib(ctx.plan) << 20
    d = ctx.outputs.get("data_path_df")
    if d is not None and "No such file or directory" in d.stderr:
        return Resolved(manual=f"The data path {dp} does not exist: create or mount it (os.filesystem), then run this step.")
    if d is not None and d.ok:
        rows, _ = parse_df(d.text)
        if len(rows) == 1 and rows[0].avail_bytes < size * FREE_MARGIN:
            return Resolved(manual=f"{dp} has {rows[0].avail_bytes / 2**20:,.0f} MiB free, less than the "
                                   f"{size * FREE_MARGIN / 2**20:,.0f} MiB the {size >> 20} MiB test file needs: free "
                                   "space, or set storage_test_mib smaller in the plan (F2).")
    return Resolved(ops=[{"argv": fio_argv(dp, ctx.plan)}])
