"""Where commands run and files are read: LocalHost, SSHHost, SnapshotHost, and a recorder for capture.

Every host answers four operations with results, never exceptions for the machine's own
problems (a missing binary, a permission error, a timeout, an unreadable sysfs file):

* ``run(argv, timeout_s)`` -> :class:`CommandResult` (argv list only, never a shell string)
* ``read(path)``           -> :class:`FileResult`
* ``glob(pattern)``        -> sorted list of matching paths
* ``builtin(name)``        -> :class:`CommandResult` for in-process probes (NVML through pynvml)

``SSHHost`` answers them on another node through the system OpenSSH client (the operator's
``~/.ssh/config``, agent, jump hosts and known_hosts apply); an unreachable node gives a result with
``rc`` 255 and ssh's own error text, never an exception.

``SnapshotHost`` answers the same operations from a capture bundle: the same argv or path in,
the recorded output out. An operation the bundle does not hold gets a result whose ``error`` is
``"not in snapshot"``, which checks report as ``unknown``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from wizard.common import lazy_re

if TYPE_CHECKING:
    import asyncio

import glob as _glob
import os
import re
import shlex
import signal
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Mapping, Protocol

from wizard.i18n import N_, Msg

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

    def __init__(self, root: str = "/", builtins: Mapping[str, BuiltinFn] | None = None) -> None:
        self.root = root
        self.name = "local"
        self._builtins = dict(builtins or {})

    def _path(self, path: str) -> str:
        if self.root in ("", "/"):
            return path
        return os.path.join(self.root, path.lstrip("/"))

    async def run(self, argv: list[str], timeout_s: float = DEFAULT_TIMEOUT_S) -> CommandResult:
        import asyncio  # imported where used: explain and check import this module, not its I/O
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
        out, err, timed_out = await _communicate(proc, timeout_s)
        if timed_out:
            return CommandResult(argv, 124, out[:MAX_OUTPUT_BYTES], err[:MAX_OUTPUT_BYTES],
                                 time.monotonic() - t0, error=f"timed out after {timeout_s:g} s")
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
    import asyncio  # imported where used: explain and check import this module, not its I/O
    loop = asyncio.get_running_loop()
    fut = loop.run_in_executor(None, proc.communicate)
    try:
        out, err = await asyncio.wait_for(asyncio.shield(fut), timeout_s)
    except asyncio.CancelledError:  # a caller's own time limit (check --profile): never leave it running
        _kill_group(proc.pid)
        raise
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


async def _communicate(proc: "asyncio.subprocess.Process", timeout_s: float,
                       stdin: bytes | None = None) -> tuple[bytes, bytes, bool]:
    """(stdout, stderr, timed out) of ``proc``; on timeout its process group is killed and what it wrote is
    kept; a cancelled caller kills the group too (LocalHost and SSHHost share this)."""
    import asyncio  # imported where used: explain and check import this module, not its I/O
    try:
        out, err = await asyncio.wait_for(proc.communicate(stdin), timeout_s)
        return out, err, False
    except asyncio.TimeoutError:
        _kill_group(proc.pid)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), 2.0)
        except asyncio.TimeoutError:  # pragma: no cover - a process ignoring SIGKILL
            out, err = b"", b""
        return out, err, True
    except asyncio.CancelledError:
        _kill_group(proc.pid)
        raise


# ---------------------------------------------------------------------------------------------
# Another node, through the system OpenSSH client

SSH_FAILED_RC = 255
"""Exit status of ``ssh`` itself when it could not connect or authenticate (ssh(1) EXIT STATUS:
"ssh exits with the exit status of the remote command or with 255 if an error occurred")."""
DEFAULT_CONNECT_TIMEOUT_S = 10
"""``-o ConnectTimeout`` (seconds) for every ssh call: long enough for a loaded node's sshd, short
enough that an unreachable node is named quickly (judgement; OpenSSH's own default waits for the
kernel's TCP timeout, minutes)."""

_SSH_ERROR_HINTS = ("ssh:", "permission denied", "host key verification failed", "kex_exchange_identification",
                    "connection closed by", "connection reset by", "could not resolve hostname", "no route to host",
                    "connection timed out", "connection refused", "remote host identification has changed",
                    "too many authentication failures", "bad configuration option", "can't open user config",
                    "proxycommand", "banner exchange", "broken pipe", "operation timed out")

_GLOB_SH = 'IFS=; for f in $1; do if [ -e "$f" ] || [ -L "$f" ]; then printf "%s\\n" "$f"; fi; done'
"""Remote glob: unquoted ``$1`` with IFS empty gets pathname expansion and no word splitting."""


def ssh_error_text(stderr: bytes) -> str:
    """The line of ssh's stderr that says why it failed (the last one that looks like an ssh error,
    else the last non-empty line); ``""`` when stderr is empty."""
    lines = [ln.strip() for ln in decode(stderr).splitlines() if ln.strip()]
    lines = [ln for ln in lines if not ln.lower().startswith("warning: permanently added")]
    for ln in reversed(lines):
        if any(h in ln.lower() for h in _SSH_ERROR_HINTS):
            return ln[:300]
    return lines[-1][:300] if lines else ""


SSH_TO_FAILED = N_("ssh to {host} failed: {why}")
"""The error of an ssh that could not connect or log in (:attr:`CommandResult.error`): bringup's words, ssh's own
message as ssh printed it."""
NO_SSH_MESSAGE = N_("exit status 255 and no message")
_SSH_TO_FAILED_EN = lazy_re(r"^ssh to (\S+) failed: (.*)$", re.S)


def ssh_failed_words(text: str) -> str:
    """``text`` ("ssh to HOST failed: WHY", English as a run's log or a store keeps it) as a :class:`Msg` shown in the
    operator's language, ssh's own words as they are (walk 24 #9: "ssh to localhost failed: ..." in a Chinese
    screen); any other text as it is."""
    m = _SSH_TO_FAILED_EN.match(str(text))
    if not m:
        return text
    why = m.group(2)
    return Msg(SSH_TO_FAILED, host=m.group(1), why=Msg.plain(why) if why == NO_SSH_MESSAGE else why)


def ssh_failed(result: CommandResult) -> bool:
    """True when ``result`` is ssh itself failing (rc 255 with an ssh error), not the remote command."""
    return result.rc == SSH_FAILED_RC and result.error.startswith("ssh ")


def ssh_timed_out(timeout_s: float, name: str) -> str:
    """The error of a command on a node that ran past its limit (seconds), as :meth:`SSHHost.run` and the fleet's
    batches of commands give it."""
    return f"timed out after {timeout_s:g} s (on {name} over ssh)"


def remote_result(argv: list[str], rc: int | None, out: bytes, err: bytes, duration_s: float) -> CommandResult:
    """A command's result on a node, from its exit status and output (cut at :data:`MAX_OUTPUT_BYTES`): a command the
    node lacks (127 with the shell's or env's words) gets ``error`` "command not found: X", as a local run says it, so
    the rules name the tool and how to install it (walk 34 #8: over ssh a missing ipmitool was "printed nothing
    readable"). Used by :meth:`SSHHost.run` and by the fleet's batches of commands (:mod:`wizard.fleet`)."""
    error = f"command not found: {argv[0]}" if rc == 127 and argv and _remote_not_found(argv[0], err) else ""
    return CommandResult(argv, rc, out[:MAX_OUTPUT_BYTES], err[:MAX_OUTPUT_BYTES], duration_s, error)


def _remote_not_found(command: str, stderr: bytes) -> bool:
    """Whether a node's shell or ``env`` said ``command`` is not there (exit status 127): "env: 'ipmitool': No such
    file or directory" (coreutils env), "bash: line 1: ipmitool: command not found", "sh: 1: ipmitool: not found"."""
    name = re.escape(os.path.basename(command))
    return bool(re.search(r"(?:^|[\s'`\"])" + name + r"['`\"]?: (?:No such file or directory|(?:command )?not found)",
                          decode(stderr)))


class SSHHost:
    """Another node, reached with the system ``ssh`` (OpenSSH) client.

    Every command runs as ``ssh [-F CONFIG] -o BatchMode=yes -o ConnectTimeout=N [-o OPT ...] TARGET --
    'env LC_ALL=C LANG=C argv...'`` (the argv shell-quoted with :func:`shlex.join`, for the remote login
    shell, which must be POSIX-like: sh, bash, dash, zsh). The operator's ``~/.ssh/config``, agent, jump
    hosts and known_hosts apply; host keys are never accepted silently unless the config or ``options``
    say so (``StrictHostKeyChecking`` is not overridden). ``BatchMode=yes`` makes a node that would ask
    for a password fail at once instead of hanging.

    Args:
        target: what ssh connects to: an alias of the ssh config, ``host``, or ``user@host``.
        name: shown in findings (default: ``target``).
        ssh_config: a config file for ``-F`` (tests; a site config); ``None`` = ssh's default files.
        options: extra ``-o`` options, e.g. ``("Port=2222",)``.
        connect_timeout_s: ``ConnectTimeout`` in seconds.
        ssh: the client binary.

    Results: ``rc`` 255 with ``error`` ``"ssh to TARGET failed: <ssh's message>"`` when ssh could not
    connect or log in (see :func:`ssh_failed`); 127 with ``command not found: ssh`` when there is no client;
    124 on timeout (the local ssh is killed; a remote command without a terminal may go on running).
    Never raises for the node's problems.
    """

    def __init__(self, target: str, name: str | None = None, ssh_config: str | None = None,
                 options: tuple[str, ...] | list[str] = (), connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
                 ssh: str = "ssh") -> None:
        self.target = target
        self.name = name or target
        self.ssh_config = ssh_config
        self.options = tuple(options)
        self.connect_timeout_s = connect_timeout_s
        self.ssh = ssh

    def ssh_argv(self, remote_command: str) -> list[str]:
        """The local argv that runs ``remote_command`` (a shell string) on the node."""
        argv = [self.ssh]
        if self.ssh_config:
            argv += ["-F", self.ssh_config]
        argv += ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={max(1, int(round(self.connect_timeout_s)))}"]
        for o in self.options:
            argv += ["-o", o]
        return argv + [self.target, "--", remote_command]

    @staticmethod
    def remote_command(argv: list[str], env: dict[str, str] | None = None) -> str:
        """``argv`` (with ``env`` passed as ``env K=V ...``) quoted for the remote shell."""
        pre = ["env", *(f"{k}={v}" for k, v in env.items())] if env else []
        return shlex.join([*pre, *[str(a) for a in argv]])

    async def run(self, argv: list[str], timeout_s: float = DEFAULT_TIMEOUT_S,
                  stdin: bytes | None = None) -> CommandResult:
        """Run ``argv`` on the node (``stdin``: bytes fed to it, else /dev/null). See the class doc."""
        import asyncio  # imported where used: explain and check import this module, not its I/O
        argv = [str(a) for a in argv]
        t0 = time.monotonic()
        if not argv:
            return CommandResult(argv, None, error="empty command")
        local = self.ssh_argv(self.remote_command(argv, {"LC_ALL": "C", "LANG": "C"}))
        try:
            proc = await asyncio.create_subprocess_exec(
                *local,
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                env=probe_env(), start_new_session=True)
        except FileNotFoundError:
            return CommandResult(argv, 127, duration_s=time.monotonic() - t0, error=f"command not found: {self.ssh}")
        except OSError as exc:
            return CommandResult(argv, None, duration_s=time.monotonic() - t0,
                                 error=f"could not start {self.ssh}: {exc.strerror or exc}")
        try:
            out, err, timed_out = await _communicate(proc, timeout_s, stdin)
        except (BrokenPipeError, ConnectionResetError):  # ssh died before taking stdin
            await proc.wait()
            out, err, timed_out = b"", b"", False
        if timed_out:
            return CommandResult(argv, 124, out[:MAX_OUTPUT_BYTES], err[:MAX_OUTPUT_BYTES], time.monotonic() - t0,
                                 error=ssh_timed_out(timeout_s, self.name))
        rc = proc.returncode
        if rc == SSH_FAILED_RC:
            why = ssh_error_text(err)
            if why or not out:
                return CommandResult(argv, rc, out[:MAX_OUTPUT_BYTES], err[:MAX_OUTPUT_BYTES], time.monotonic() - t0,
                                     Msg(SSH_TO_FAILED, host=self.target, why=why or Msg.plain(NO_SSH_MESSAGE)))
        return remote_result(argv, rc, out, err, time.monotonic() - t0)

    async def read(self, path: str) -> FileResult:
        """Read a file with ``cat`` on the node."""
        t0 = time.monotonic()
        r = await self.run(["cat", "--", path])
        dt = time.monotonic() - t0
        if r.ok:
            return FileResult(path, r.stdout, duration_s=dt)
        if r.error:
            return FileResult(path, None, r.error, dt)
        # cat's own complaint: a login message on the same stderr ("Could not chdir to home directory ...: No such
        # file or directory") must not decide what happened to the file
        said = decode(r.stderr).strip().lower()
        msg = "\n".join(ln for ln in said.splitlines() if ln.startswith("cat:")) or said
        if "no such file" in msg:
            return FileResult(path, None, "no such file", dt)
        if "permission denied" in msg:
            return FileResult(path, None, "permission denied", dt)
        if "is a directory" in msg:
            return FileResult(path, None, "is a directory", dt)
        return FileResult(path, None, f"read error: {decode(r.stderr).strip()[:200] or f'cat exit status {r.rc}'}", dt)

    async def glob(self, pattern: str) -> list[str]:
        """Paths matching ``pattern`` on the node (sorted); ``[]`` when none or the node is unreachable."""
        r = await self.run(["sh", "-c", _GLOB_SH, "sh", pattern])
        if r.error:
            return []
        return sorted(ln for ln in r.text.splitlines() if ln)

    async def builtin(self, name: str) -> CommandResult:
        return CommandResult([f"builtin:{name}"], None,
                             error=f"in-process probe {name} runs on this machine only, not over ssh")

    async def hostname(self, timeout_s: float = 5.0) -> str:
        """The HostName ssh would connect to for ``target`` (``ssh -G``: the config applied, nothing
        contacted); ``""`` if ssh cannot tell."""
        argv = [self.ssh] + (["-F", self.ssh_config] if self.ssh_config else []) + ["-G", self.target]
        r = await LocalHost().run(argv, timeout_s)
        if r.rc != 0:
            return ""
        for line in r.text.splitlines():
            k, _, v = line.partition(" ")
            if k.lower() == "hostname":
                return v.strip()
        return ""


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
