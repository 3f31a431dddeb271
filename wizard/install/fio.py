"""fio for ``node.storage_tools`` (install it) and ``node.storage_read`` (read the data path with it).

fio (https://fio.readthedocs.io/en/latest/fio_doc.html) is packaged as ``fio`` on Debian/Ubuntu, RHEL/Fedora and
SUSE. The read test is one test file under the plan's data path, never a device: fio lays it out (writes it) first,
then two jobs run one after the other (``--stonewall``) with O_DIRECT (``--direct=1``: the page cache does not
answer) and libaio at ``iodepth`` :data:`IODEPTH`: sequential reads of :data:`SEQ_BS_KIB` KiB blocks (the device's
streaming rate), then random reads at the data loader's block size (what a shuffling loader gets), each for
``storage_test_s`` seconds (``--time_based``). ``--unlink=1`` on the last job removes the file when it ends (a global
``--unlink=1`` removes it after the first job, and the second then fails with ENOENT: seen on fio 3.33). The result
is ``--output-format=json``, judged by :func:`wizard.rules.storage.judge_fio_log`. Data, not judgement.

fio runs under the progress wrapper (:mod:`wizard.progress`): the log gets a ``# fio: N s elapsed of about M``
line every few seconds (M: the two jobs' runtimes; laying the file out comes on top), ``# data path: REAL on
FSTYPE`` (:data:`DATA_PATH_NOTE`, the filesystem df reported: the judge says when that is memory) and
``# test file: PATH`` (:data:`TEST_FILE_NOTE`) before fio starts, and the wrapper's ``--remove`` deletes the test file
however the run ends (cancel, SIGTERM, a fio error), saying so when it cannot.

fio splits ``--filename`` at ``:`` (several files) unless the colon is escaped ``\\:`` (fio HOWTO, "filename"), so
:func:`fio_filename` escapes it; a backslash has no escape of its own in fio's filename syntax, so a data path with
one is refused, as is one with a control character. The data path is resolved (``os.path.realpath``: symlinks,
``..``) before it is judged and used, and it must be a writable directory of a writable filesystem
(:func:`resolve_read`).
"""

from __future__ import annotations

import os
import unicodedata
from typing import TYPE_CHECKING, Any, Mapping
from wizard.distro import package_manager
from wizard.parsers.host import parse_df, parse_os_release
from wizard.i18n import Msg

if TYPE_CHECKING:  # wizard.actions (the store, psutil) is imported only when an action resolves: `explain` and
    from wizard.actions import ActionContext, Resolved  # `check` read this module's judge constants without it

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
KERNEL_DIRS = frozenset({"dev", "proc", "sys"})
"""Top-level directories that hold devices and kernel files, never a dataset: a data path resolving under one is
refused (compared by path component after ``os.path.realpath``)."""
RAM_FS = frozenset({"tmpfs", "ramfs", "devtmpfs"})
"""Filesystems held in RAM (tmpfs(5), ramfs, devtmpfs): fio on them measures memory, not a storage device."""
DATA_PATH_NOTE = "data path: "
"""The start of the log's ``# data path: REAL on FSTYPE`` line (after the wrapper's ``# ``)."""
TEST_FILE_NOTE = "test file: "
"""The start of the log's ``# test file: PATH`` line (after the wrapper's ``# ``)."""
PROGRESS_EVERY_S = 15.0
"""Seconds between the wrapper's progress lines at most (a short run gets one every quarter of its time, >= 1 s)."""


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


def test_s(plan: Mapping[str, Any]) -> int:
    """Seconds each read job runs: the plan's ``storage_test_s``, else :data:`DEFAULT_TEST_S`."""
    return plan_int(plan, "storage_test_s", DEFAULT_TEST_S)


def fio_filename(path: str) -> str:
    """``path`` as fio's ``filename`` option reads it: each ``:`` escaped ``\\:`` (fio HOWTO, "filename": a colon
    separates several files). A path with a backslash has no faithful form: :func:`path_problem` refuses it."""
    return path.replace(":", "\\:")


def path_problem(path: str) -> str:
    """Why ``path`` cannot be handed to fio as it is ("" when it can): a control character (newline, tab, ...) or a
    backslash (fio reads ``\\:`` as an escaped colon and has no escape for a backslash)."""
    bad = sorted({c for c in path if unicodedata.category(c) == "Cc"})
    if bad:
        return "it contains a control character (" + ", ".join(repr(c) for c in bad[:4]) + ")"
    if "\\" in path:
        return "it contains a backslash, which fio's filename option cannot carry faithfully (fio HOWTO, \"filename\")"
    return ""


def kernel_path(path: str) -> bool:
    """Is ``path`` (absolute, already resolved) /dev, /proc or /sys or under one (by path component)?"""
    parts = [p for p in os.path.normpath(path).split("/") if p]
    return bool(parts) and parts[0] in KERNEL_DIRS


def fio_argv(data_path: str, plan: Mapping[str, Any]) -> list[str]:
    """The fio command of node.storage_read (see the module doc); ``data_path`` is used as given (resolve it first)."""
    secs = test_s(plan)
    return ["fio", "--output-format=json", "--ioengine=libaio", "--direct=1", f"--filename={fio_filename(test_file(data_path))}",
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
        return Msg("install the {package} package with the distribution's package manager", package=FIO_PACKAGE)
    argvs, _ = pm.install(FIO_PACKAGE)
    return "`" + " && ".join(" ".join(a) for a in argvs) + "`"


def resolve_install(ctx: ActionContext) -> Resolved:
    """node.storage_tools: install fio with the distribution's package manager; another distribution: manual."""
    from wizard.actions import Resolved

    o = ctx.outputs.get("os_release")
    r = parse_os_release(o.text) if o is not None and o.ok else None
    pm = package_manager(r) if r is not None else None
    if pm is None:
        name = r.pretty_name if r is not None else "this distribution"
        return Resolved(manual=f"bringup does not know the package manager of {name}: install fio by hand.")
    argvs, env = pm.install(FIO_PACKAGE)
    return Resolved(ops=[{"argv": a} for a in argvs], env=env)


def writable_problem(path: str) -> str:
    """Why fio cannot write its test file in the directory ``path`` on this machine ("" when it can): it does not
    exist, is not a directory, its filesystem is mounted read-only (statvfs ST_RDONLY), or this user may not write
    there (access(2) W_OK|X_OK). Never raises."""
    try:
        if not os.path.isdir(path):
            return "does not exist" if not os.path.lexists(path) else "is not a directory (fio would fail with ENOTDIR)"
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "is on a read-only filesystem (fio would fail with EROFS)"
    except OSError as exc:
        return f"cannot be examined: {exc.strerror or exc}"
    if not os.access(path, os.W_OK | os.X_OK):
        return f"is not writable by this user (uid {os.getuid()}; fio would fail with EACCES)"
    return ""


def resolve_read(ctx: ActionContext) -> Resolved:
    """node.storage_read: fio (:func:`fio_argv`) under the progress wrapper, or what stops it: no data path in the
    plan, a path fio cannot carry (:func:`path_problem`), one that resolves (``os.path.realpath``) to /dev, /proc or
    /sys (never written), fio missing, a data path that does not exist, is not a directory or cannot be written
    (:func:`writable_problem`: a read-only mount, no permission), or less free space than :data:`FREE_MARGIN` x the
    test file. The test file goes under the resolved path."""
    from wizard.actions import Resolved

    dp = ctx.plan.get("data_path")
    if not isinstance(dp, str) or not dp.startswith("/"):
        return Resolved(manual=Msg("No data path in the plan: set data_path in the plan (F2), e.g. "
                                   "`bringup plan data_path=/raid`, then run this step."), plan_key="data_path")
    why = path_problem(dp)
    if why:
        return Resolved(manual=f"The data path {dp!r} cannot be used: {why}. Set data_path to a directory whose name "
                               "has neither (`bringup plan data_path=/raid`, or F2).")
    real = os.path.realpath(dp)
    if kernel_path(dp) or kernel_path(real):
        via = f" (it resolves to {real})" if real != os.path.normpath(dp) else ""
        return Resolved(manual=f"The data path {dp}{via} is a device or kernel path: bringup reads only a test file "
                               "in a directory of a mounted filesystem and never writes a device. Set data_path to the "
                               "directory where datasets live.")
    why = path_problem(real)
    if why:
        return Resolved(manual=f"The data path {dp} resolves to {real!r}, which cannot be used: {why}.")
    if _fio_missing(ctx):
        return Resolved(manual=Msg("fio is not installed: run node.storage_tools' action (Install fio), or {hint}, "
                                   "then run this step.", hint=install_hint(ctx)))
    size = test_mib(ctx.plan) << 20
    d = ctx.outputs.get("data_path_df")
    shown = dp if real == os.path.normpath(dp) else f"{dp} (= {real})"
    if d is not None and "No such file or directory" in d.stderr:
        return Resolved(manual=Msg("The data path {path} does not exist: create or mount it (os.filesystem), then run "
                                   "this step.", path=dp))
    why = writable_problem(real)
    if why == "does not exist":
        return Resolved(manual=Msg("The data path {path} does not exist: create or mount it (os.filesystem), then run "
                                   "this step.", path=shown))
    if why:
        return Resolved(manual=f"The data path {shown} {why}: fio must write its {size >> 20} MiB test file there "
                               "before reading it. Set data_path to a writable directory on the same filesystem as "
                               "the datasets (e.g. a scratch directory beside them: `bringup plan data_path=...`), or "
                               "run bringup as a user who may write there; on a read-only mount, measure where it "
                               "is mounted read-write.")
    fstype = ""
    if d is not None and d.ok:
        rows, _ = parse_df(d.text)
        if len(rows) == 1:
            fstype = rows[0].fstype
            if rows[0].avail_bytes < size * FREE_MARGIN:
                return Resolved(manual=f"{dp} has {rows[0].avail_bytes / 2**20:,.0f} MiB free, less than the "
                                       f"{size * FREE_MARGIN / 2**20:,.0f} MiB the {size >> 20} MiB test file needs: "
                                       "free space, or set storage_test_mib smaller in the plan (F2 in the TUI, or `bringup plan storage_test_mib=N`).")
    expect = 2 * test_s(ctx.plan)
    path = test_file(real)
    notes = [f"{DATA_PATH_NOTE}{real} on {fstype or 'a filesystem df did not name'}", f"{TEST_FILE_NOTE}{path}"]
    argv = [ctx.python, "-m", "wizard.progress", "--label", "fio", "--expect-s", f"{expect:g}",
            "--every", f"{min(PROGRESS_EVERY_S, max(1.0, expect / 4)):g}", "--remove", path,
            *(x for n in notes for x in ("--note", n)), "--", *fio_argv(real, ctx.plan)]
    detail = [Msg("writes {path} ({mib} MiB), reads it for about {seconds} s, then removes it however the run ends",
                  path=path, mib=size >> 20, seconds=f"{expect:g}"),
              Msg("{path} is on {fs}", path=real, fs=fstype) if fstype else
              Msg("{path} is on a filesystem df did not name", path=real)]
    if fstype in RAM_FS:
        detail.append(Msg("{fs} is held in RAM: this measures memory, not a storage device (judged warn)", fs=fstype))
    return Resolved(ops=[{"argv": argv, "detail": detail}])
