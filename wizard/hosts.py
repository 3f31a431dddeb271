"""Where commands run and files are read: LocalHost, SnapshotHost, and a recorder for capture.

Every host answers four operations with results, never exceptions for the machine's own
problems (a missing binary, a permission error, a timeout, an unreadable sysfs file):

* ``run(argv, timeout_s)`` -> :class:`CommandResult` (argv list only, never a shell string)
* ``read(path)``           -> :class:`FileResult`
* ``glob(pattern)``        -> sorted list of matching paths
* ``builtin(name)``        -> :class:`CommandResult` for in-process probes (NVML through pynvml)

``SnapshotHost`` answers the same operations from a capture bundle: the same argv or path in,
the recorded output out. An operation the bundle does not hold gets a result whose ``error`` is
``"not in snapshot"``, which checks report as ``unknown``.
"""

from __future__ import annotations

import asyncio
import glob as _glob
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol

DEFAULT_TIMEOUT_S = 20.0
MAX_OUTPUT_BYTES = 32 * 1024 * 1024
"""Cap on captured stdout/stderr/file size (32 MiB); anything longer is cut and marked."""

NOT_IN_SNAPSHOT = "not in snapshot"
READ_CHUNK = 65536


def probe_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for probe and action subprocesses: the caller's, with ``LC_ALL=C``.

    ``LC_ALL=C`` keeps tool output in English/ASCII so parsers see the formats they expect
    (subiquity ``arun_command`` does the same).
    """
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    env["LANG"] = "C"
    env.pop("LANGUAGE", None)
    if extra:
        env.update(extra)
    return env


@dataclass
class CommandResult:
    """Outcome of one command.

    Attributes:
        argv: the command as run.
        rc: exit status; 127 = not found, 126 = not executable/permission, 124 = timed out,
            negative = killed by that signal; ``None`` only if it never started for another reason.
        stdout, stderr: raw bytes (cut at :data:`MAX_OUTPUT_BYTES`).
        duration_s: wall time in seconds.
        error: a short reason when the command did not run normally ("command not found: X",
            "timed out after 20 s", "permission denied", ``not in snapshot``); empty otherwise.
    """

    argv: list[str]
    rc: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    duration_s: float = 0.0
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.error

    @property
    def text(self) -> str:
        return decode(self.stdout)


@dataclass
class FileResult:
    """Outcome of reading one file: ``data`` (bytes) or an ``error`` ("no such file", ...)."""

    path: str
    data: bytes | None
    error: str = ""
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.data is not None and not self.error

    @property
    def text(self) -> str:
        return decode(self.data or b"")


def decode(data: bytes) -> str:
    """Bytes -> str for parsers: UTF-8, undecodable bytes replaced (never raises)."""
    return data.decode("utf-8", errors="replace")


class NotInSnapshot(Exception):
    """A snapshot host was asked to list a pattern its bundle never recorded (so "no match"
    cannot be told from "not captured")."""


class Host(Protocol):
    """The interface every host offers; see the module docstring."""

    name: str

    async def run(self, argv: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> CommandResult: ...

    async def read(self, path: str) -> FileResult: ...

    async def glob(self, pattern: str) -> list[str]: ...

    async def builtin(self, name: str) -> CommandResult: ...


BuiltinFn = Callable[[], Awaitable[CommandResult]]
"""An in-process probe (e.g. NVML through pynvml) returning its facts as JSON in ``stdout``."""


class LocalHost:
    """This machine.

    Args:
        root: prefix for file and glob operations (``/`` normally; a temporary tree in tests).
            Commands always run on the real machine.
        builtins: in-process probes by name (see :mod:`wizard.probes`).
    """

    def __init__(self, root: str = "/", builtins: dict[str, BuiltinFn] | None = None) -> None:
        self.root = root
        self.name = "local"
        self._builtins = dict(builtins or {})

    def _path(self, path: str) -> str:
        if self.root in ("", "/"):
            return path
        return os.path.join(self.root, path.lstrip("/"))

    async def run(self, argv: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> CommandResult:
        argv = [str(a) for a in argv]
        t0 = time.monotonic()
        if not argv:
            return CommandResult(argv, None, error="empty command")
        from wizard import prefetch

        early = prefetch.take(argv)
        if early is not None:
            return await _finish(early, argv, timeout_s, t0)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=probe_env(),
                start_new_session=True,
            )
        except FileNotFoundError:
            return CommandResult(argv, 127, duration_s=time.monotonic() - t0,
                                 error=f"command not found: {argv[0]}")
        except PermissionError:
            return CommandResult(argv, 126, duration_s=time.monotonic() - t0,
                                 error=f"permission denied: {argv[0]}")
        except OSError as exc:
            return CommandResult(argv, None, duration_s=time.monotonic() - t0,
                                 error=f"could not start {argv[0]}: {exc.strerror or exc}")
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
        except asyncio.TimeoutError:
            _kill_group(proc.pid)
            try:
                out, err = await asyncio.wait_for(proc.communicate(), 2.0)
            except asyncio.TimeoutError:  # pragma: no cover - a process ignoring SIGKILL
                out, err = b"", b""
            return CommandResult(argv, 124, out[:MAX_OUTPUT_BYTES], err[:MAX_OUTPUT_BYTES],
                                 time.monotonic() - t0, error=f"timed out after {timeout_s:g} s")
        except asyncio.CancelledError:
            _kill_group(proc.pid)
            raise
        return CommandResult(argv, proc.returncode, out[:MAX_OUTPUT_BYTES],
                             err[:MAX_OUTPUT_BYTES], time.monotonic() - t0)

    async def read(self, path: str) -> FileResult:
        t0 = time.monotonic()
        try:
            chunks: list[bytes] = []
            size = 0
            with open(self._path(path), "rb", buffering=0) as fh:
                # small reads: procfs sysctl files allocate a kernel buffer of the requested size
                # and fail with ENOMEM for a large one (seen on 6.18 for /proc/sys/kernel/*)
                while size < MAX_OUTPUT_BYTES:
                    chunk = fh.read(READ_CHUNK)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
            data = b"".join(chunks)[:MAX_OUTPUT_BYTES]
            return FileResult(path, data, duration_s=time.monotonic() - t0)
        except FileNotFoundError:
            return FileResult(path, None, "no such file", time.monotonic() - t0)
        except PermissionError:
            return FileResult(path, None, "permission denied", time.monotonic() - t0)
        except IsADirectoryError:
            return FileResult(path, None, "is a directory", time.monotonic() - t0)
        except OSError as exc:  # sysfs files can fail with EIO, EINVAL, ENODEV...
            return FileResult(path, None, f"read error: {exc.strerror or exc}", time.monotonic() - t0)

    async def glob(self, pattern: str) -> list[str]:
        full = self._path(pattern)
        try:
            matches = sorted(_glob.glob(full))
        except OSError:  # pragma: no cover - glob swallows most errors itself
            return []
        if self.root in ("", "/"):
            return matches
        prefix = self.root.rstrip("/")
        return ["/" + os.path.relpath(m, prefix) for m in matches]

    async def builtin(self, name: str) -> CommandResult:
        fn = self._builtins.get(name)
        if fn is None:
            return CommandResult([f"builtin:{name}"], None, error=f"unknown builtin probe {name}")
        return await fn()


async def _finish(proc: Any, argv: list[str], timeout_s: float, t0: float) -> CommandResult:
    """Collect a process started earlier with ``subprocess.Popen`` (see :mod:`wizard.prefetch`)."""
    loop = asyncio.get_running_loop()
    fut = loop.run_in_executor(None, proc.communicate)
    try:
        out, err = await asyncio.wait_for(asyncio.shield(fut), timeout_s)
    except asyncio.TimeoutError:
        _kill_group(proc.pid)
        out, err = await fut
        return CommandResult(argv, 124, out[:MAX_OUTPUT_BYTES], err[:MAX_OUTPUT_BYTES], time.monotonic() - t0,
                             error=f"timed out after {timeout_s:g} s")
    return CommandResult(argv, proc.returncode, out[:MAX_OUTPUT_BYTES], err[:MAX_OUTPUT_BYTES], time.monotonic() - t0)


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# ---------------------------------------------------------------------------------------------
# Recording (for capture) and replay (SnapshotHost)


@dataclass
class Operation:
    """One host operation as recorded in a capture bundle's manifest."""

    kind: str  # "command" | "file" | "glob" | "builtin"
    key: str  # argv joined by NUL for commands, the path, the pattern, or the builtin name
    argv: list[str] | None = None
    path: str | None = None
    rc: int | None = None
    error: str = ""
    duration_s: float = 0.0
    stdout: bytes = b""
    stderr: bytes = b""
    data: bytes | None = None
    matches: list[str] = field(default_factory=list)


def command_key(argv: list[str]) -> str:
    return "\0".join(argv)


class RecordingHost:
    """Wraps a host and records every operation (used by ``bringup capture``)."""

    def __init__(self, inner: Host) -> None:
        self.inner = inner
        self.name = inner.name
        self.ops: list[Operation] = []
        self._seen: set[tuple[str, str]] = set()

    def _add(self, op: Operation) -> None:
        if (op.kind, op.key) not in self._seen:
            self._seen.add((op.kind, op.key))
            self.ops.append(op)

    async def run(self, argv: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> CommandResult:
        r = await self.inner.run(argv, timeout_s)
        self._add(Operation("command", command_key(r.argv), argv=list(r.argv), rc=r.rc, error=r.error,
                            duration_s=r.duration_s, stdout=r.stdout, stderr=r.stderr))
        return r

    async def read(self, path: str) -> FileResult:
        r = await self.inner.read(path)
        self._add(Operation("file", path, path=path, error=r.error, duration_s=r.duration_s, data=r.data))
        return r

    async def glob(self, pattern: str) -> list[str]:
        m = await self.inner.glob(pattern)
        self._add(Operation("glob", pattern, matches=list(m)))
        return m

    async def builtin(self, name: str) -> CommandResult:
        r = await self.inner.builtin(name)
        self._add(Operation("builtin", name, argv=list(r.argv), rc=r.rc, error=r.error,
                            duration_s=r.duration_s, stdout=r.stdout, stderr=r.stderr))
        return r


class SnapshotHost:
    """Replays recorded operations: same argv/path in, recorded output out.

    Args:
        ops: the recorded operations (see :func:`wizard.capture.load_bundle`).
        name: shown as the host name (the captured hostname, usually).
    """

    def __init__(self, ops: list[Operation], name: str = "snapshot", identity: dict[str, Any] | None = None) -> None:
        self.name = name
        self.identity = dict(identity or {})
        self._ops = {(op.kind, op.key): op for op in ops}

    async def run(self, argv: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> CommandResult:
        argv = [str(a) for a in argv]
        op = self._ops.get(("command", command_key(argv)))
        if op is None:
            return CommandResult(argv, None, error=NOT_IN_SNAPSHOT)
        return CommandResult(argv, op.rc, op.stdout, op.stderr, op.duration_s, op.error)

    async def read(self, path: str) -> FileResult:
        op = self._ops.get(("file", path))
        if op is None:
            return FileResult(path, None, NOT_IN_SNAPSHOT)
        return FileResult(path, op.data, op.error, op.duration_s)

    async def glob(self, pattern: str) -> list[str]:
        """Raises :class:`NotInSnapshot` for a pattern the bundle did not record."""
        op = self._ops.get(("glob", pattern))
        if op is None:
            raise NotInSnapshot(f"{NOT_IN_SNAPSHOT}: {pattern}")
        return list(op.matches)

    async def builtin(self, name: str) -> CommandResult:
        op = self._ops.get(("builtin", name))
        if op is None:
            return CommandResult([f"builtin:{name}"], None, error=NOT_IN_SNAPSHOT)
        return CommandResult(list(op.argv or [f"builtin:{name}"]), op.rc, op.stdout, op.stderr,
                             op.duration_s, op.error)
