"""Real faults for the store and action tests: a kill at an exact write syscall, and a full filesystem.

:func:`write_syscalls` runs a command under ``strace`` and returns, in program order, every write syscall it
made (``write``, ``pwrite64``, ``fsync``, ``fdatasync``, ``ftruncate``, ``rename*``, ``unlink*``, ``mkdir*``);
:func:`kill_at` runs it again with ``strace -e inject=NAME:signal=SIGKILL:when=K``, which kills it on entering
the K-th call of that syscall (strace counts each syscall separately, per process), i.e. before that write
happens. Only the bringup process itself is traced (no ``-f``): the detached action supervisor is not killed.

:func:`ensure_strace` installs strace when it is missing, the way ``tests/sshd.py`` installs OpenSSH: as root
with ``apt-get``, under an flock so one process installs; otherwise it raises :class:`ToolUnavailable` with the
fix, and the test fails, never skips.

:func:`small_tmpfs` mounts a real tmpfs of a given size (root only: a test without root skips with the
reason), and :func:`fill` fills it to leave a given number of bytes free.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from tests.sshd import ensure_installed

WRITE_SYSCALLS = ("write", "pwrite64", "fsync", "fdatasync", "ftruncate", "rename", "renameat", "renameat2",
                  "unlink", "unlinkat", "mkdir", "mkdirat")
"""The syscalls a kill is injected at: every one that changes a file or directory on x86-64 Linux."""
INSTALL_LOCK = Path(tempfile.gettempdir()) / "bringup-tests-strace-install.lock"
_CALL = re.compile(r"^(\w+)\(")


class ToolUnavailable(RuntimeError):
    """strace is missing and cannot be installed here; the message says how to install it."""


def ensure_strace() -> str:
    """The path of ``strace``, installing it first when missing (:func:`tests.sshd.ensure_installed`).

    Raises:
        ToolUnavailable: not installed and not installable here (not root, no apt-get, or apt failed).
    """
    ensure_installed(lambda: [] if shutil.which("strace") else ["strace"], ("strace",),
                     lambda _missing: ("strace not found: the kill-at-every-write tests inject SIGKILL with strace. "
                                       "Install it as root (`apt-get install -y --no-install-recommends strace`) or "
                                       "run the tests as root, and the test set-up installs it"),
                     ToolUnavailable, "strace", INSTALL_LOCK)
    return shutil.which("strace") or "strace"


def write_syscalls(argv: Sequence[str], env: Mapping[str, str], timeout_s: float = 120) -> list[tuple[str, int]]:
    """Run ``argv`` once under strace (this process only) and return its write syscalls in program order, each
    as (name, its count among calls of that name so far, from 1): the ``when=`` of a kill at exactly it."""
    strace = ensure_strace()
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
        subprocess.run([strace, "-qq", "-o", out.name, "-e", "trace=" + ",".join(WRITE_SYSCALLS), *argv],
                       env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=timeout_s, check=False)
        seen: dict[str, int] = {}
        calls = []
        for line in out:
            m = _CALL.match(line)
            if m and m.group(1) in WRITE_SYSCALLS:
                seen[m.group(1)] = seen.get(m.group(1), 0) + 1
                calls.append((m.group(1), seen[m.group(1)]))
        return calls


def kill_at(argv: Sequence[str], env: Mapping[str, str], syscall: str, when: int,
            timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` under strace, killed with SIGKILL on entering its ``when``-th ``syscall`` (before that call
    runs). Returns the finished strace (its exit status is the command's, 137 after the kill)."""
    strace = ensure_strace()
    return subprocess.run([strace, "-qq", "-o", os.devnull, "-e", f"trace={syscall}",
                           "-e", f"inject={syscall}:signal=SIGKILL:when={when}", *argv],
                          env=dict(env), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout_s, check=False)


@contextlib.contextmanager
def small_tmpfs(size: str, base: Path) -> Iterator[Path]:
    """A real tmpfs of ``size`` (e.g. ``"2m"``) mounted at a new directory under ``base``, unmounted after.

    Raises:
        PermissionError: not root, or the mount was refused (a container without CAP_SYS_ADMIN): the caller
        skips with this message.
    """
    if os.geteuid() != 0:
        raise PermissionError("mounting a small tmpfs needs root (mount -t tmpfs): run the tests as root")
    mnt = Path(tempfile.mkdtemp(prefix="tmpfs-", dir=base))
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(mnt)],
                       capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise PermissionError(f"mount -t tmpfs was refused here: {r.stderr.strip() or r.returncode}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)
        with contextlib.suppress(OSError):
            mnt.rmdir()


def tmpfs_or_skip(base: Path, size: str = "2m") -> Iterator[Path]:
    """For a fixture: ``yield from tmpfs_or_skip(tmp_path)`` yields a mounted :func:`small_tmpfs`, or skips the
    test with the reason when this user cannot mount one."""
    import pytest

    try:
        with small_tmpfs(size, base) as mnt:
            yield mnt
    except PermissionError as exc:
        pytest.skip(f"needs a small real filesystem to fill: {exc}")


def wait_supervisors(state: Path, timeout_s: float = 60) -> None:
    """Wait until no action supervisor of a run under ``state`` (``python -m wizard.supervise STATE/...``) is
    alive. Raises AssertionError after ``timeout_s`` seconds."""
    import time

    import psutil

    deadline = time.monotonic() + timeout_s
    while True:
        alive = []
        for p in psutil.process_iter(["cmdline"]):
            cmd = p.info["cmdline"] or []
            if "wizard.supervise" in cmd and any(a.startswith(str(state) + os.sep) for a in cmd):
                alive.append(p)
        if not alive:
            return
        assert time.monotonic() < deadline, f"supervisors still running under {state} after {timeout_s} s"
        psutil.wait_procs(alive, timeout=0.2)


def fill(mnt: Path, leave_bytes: int) -> Path:
    """Fill the filesystem at ``mnt`` with a file so that about ``leave_bytes`` stay free (rounded down to its
    block size); returns the filler (unlink it to free the space again)."""
    filler = mnt / "filler"
    free = shutil.disk_usage(mnt).free + (filler.stat().st_size if filler.exists() else 0)
    with open(filler, "wb") as fh:
        left = max(0, free - leave_bytes)
        chunk = b"\0" * (1 << 20)
        while left > 0:
            try:
                left -= fh.write(chunk[:min(left, len(chunk))])
            except OSError:
                break
    return filler
