"""The build record: one SQLite file per build, WAL, ``synchronous=FULL``, schema migrations.

Layout under the state directory (``/var/lib/bringup`` as root, the platformdirs user state dir
otherwise; ``$BRINGUP_STATE_DIR`` or ``--state DIR`` to override, ``--state`` first)::

    builds/<build-id>/build.db        this file (plus -wal/-shm while open)
    builds/<build-id>/lock            flock held by the instance that may write
    builds/<build-id>/actions/        <run>.log, <run>.status, <run>.json per action run; <run>.pid, the
                                      lock its supervisor holds while alive (wizard.actions)
    builds/.new-*                     a build being made (create_build), renamed into place when complete
    builds/<build-id>/backups/        copies of files actions edited

A second instance finds the lock held and opens the build read-only ("observing").
A file that is not a SQLite database, fails ``PRAGMA quick_check``, or carries a newer schema
than this bringup knows is refused with :class:`StoreError` naming it, and is never written.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import enum
import errno
import fcntl
import json
import os
import re
import shutil
import socket
import sqlite3
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from wizard.i18n import Msg
from wizard.model import AUTO_SKIP_PREFIX, Finding, Measure, StepStatus, Verdict

SCHEMA_VERSION = 6
SQLITE_MAGIC = b"SQLite format 3\x00"
DB_NAME = "build.db"

MIGRATIONS: dict[int, str] = {
    1: """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE host (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE plan (key TEXT PRIMARY KEY, value TEXT NOT NULL, updated_at TEXT NOT NULL);
    CREATE TABLE step_state (
        step_id TEXT PRIMARY KEY, status TEXT NOT NULL, verdict TEXT, reason TEXT NOT NULL DEFAULT '',
        user TEXT NOT NULL DEFAULT '', boot_id TEXT NOT NULL DEFAULT '', updated_at TEXT NOT NULL);
    CREATE TABLE step_event (
        id INTEGER PRIMARY KEY, step_id TEXT NOT NULL, status TEXT NOT NULL, verdict TEXT,
        reason TEXT NOT NULL DEFAULT '', user TEXT NOT NULL DEFAULT '', boot_id TEXT NOT NULL DEFAULT '',
        at TEXT NOT NULL);
    CREATE TABLE check_run (
        id INTEGER PRIMARY KEY, step_id TEXT NOT NULL, verdict TEXT NOT NULL, boot_id TEXT NOT NULL,
        snapshot TEXT NOT NULL DEFAULT '', started_at TEXT NOT NULL, finished_at TEXT NOT NULL);
    CREATE TABLE finding (
        id INTEGER PRIMARY KEY, check_run INTEGER NOT NULL REFERENCES check_run(id),
        step_id TEXT NOT NULL, finding_id TEXT NOT NULL, verdict TEXT NOT NULL, subject TEXT NOT NULL,
        message TEXT NOT NULL, evidence TEXT NOT NULL, remedy TEXT NOT NULL, source TEXT NOT NULL);
    CREATE INDEX finding_step ON finding(step_id, check_run);
    CREATE TABLE action_run (
        id INTEGER PRIMARY KEY, step_id TEXT NOT NULL, title TEXT NOT NULL, argv TEXT NOT NULL,
        user TEXT NOT NULL, dry_run INTEGER NOT NULL DEFAULT 0, state TEXT NOT NULL,
        pid INTEGER, pid_start REAL, log_path TEXT NOT NULL, status_path TEXT NOT NULL,
        exit_status INTEGER, boot_id TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT);
    """,
    2: """
    ALTER TABLE finding ADD COLUMN key TEXT NOT NULL DEFAULT '';
    CREATE TABLE ack (
        key TEXT PRIMARY KEY, finding_id TEXT NOT NULL, subject TEXT NOT NULL, message TEXT NOT NULL,
        reason TEXT NOT NULL, user TEXT NOT NULL, boot_id TEXT NOT NULL, at TEXT NOT NULL);
    """,
    3: """
    ALTER TABLE action_run ADD COLUMN overrides TEXT NOT NULL DEFAULT '{}';
    ALTER TABLE action_run ADD COLUMN check_run INTEGER;
    ALTER TABLE action_run ADD COLUMN results TEXT NOT NULL DEFAULT '{}';
    """,
    4: """
    ALTER TABLE finding ADD COLUMN measured TEXT NOT NULL DEFAULT '';
    """,
    5: """
    ALTER TABLE finding ADD COLUMN i18n TEXT NOT NULL DEFAULT '';
    """,
    6: """
    ALTER TABLE check_run ADD COLUMN plan_read TEXT NOT NULL DEFAULT '';
    """,
}


class StoreError(Exception):
    """The build file cannot be used (corrupt, newer schema, unreadable); it was not modified."""


class StateDirError(Exception):
    """The state directory cannot be created or written."""


class DiskFullError(StateDirError, StoreError):
    """The disk (filesystem) holding the state directory is full: nothing more could be written there.
    The build file is left as it was (the transaction that hit the full disk was rolled back). It is both a
    :class:`StateDirError` and a :class:`StoreError`, so every handler of either says it plainly."""


DISK_FULL_MARGIN_BYTES = 1 << 20
"""Below this many free bytes, an SQLite I/O error (SQLITE_IOERR: it could not create or grow the -shm or -wal
file) is taken as the disk being full; SQLITE_FULL and ENOSPC/EDQUOT are always taken as full."""

_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def free_bytes(path: Path) -> int | None:
    """Bytes free to this user on the filesystem holding ``path`` (its nearest existing parent); ``None`` if
    it cannot be read."""
    p = Path(path)
    for cand in (p, *p.parents):
        try:
            return shutil.disk_usage(cand).free
        except OSError:
            continue
    return None


def disk_full_message(state_dir: Path) -> str:
    """"the disk holding the state directory (PATH) is full: N bytes free" and what to do."""
    free = free_bytes(state_dir)
    said = f"{free:,} bytes free" if free is not None else "free space unknown"
    return (f"the disk holding the state directory ({state_dir}) is full: {said}; nothing more can be recorded "
            f"there until space is freed (or pass --state DIR on another filesystem); the build file was left as "
            f"it was")


def is_disk_full(exc: BaseException, path: Path | None = None) -> bool:
    """True when ``exc`` says the disk is full: ENOSPC/EDQUOT, SQLite's SQLITE_FULL ("database or disk is
    full"), or an SQLite I/O error while the filesystem of ``path`` has under :data:`DISK_FULL_MARGIN_BYTES`
    free."""
    if isinstance(exc, OSError):
        return exc.errno in _FULL_ERRNOS
    if isinstance(exc, sqlite3.Error):
        name = str(getattr(exc, "sqlite_errorname", "") or "")
        if name == "SQLITE_FULL" or "database or disk is full" in str(exc):
            return True
        if path is not None and (name.startswith("SQLITE_IOERR") or "disk I/O error" in str(exc)):
            free = free_bytes(path)
            return free is not None and free < DISK_FULL_MARGIN_BYTES
    return False


def state_dir_of(db_path: Path) -> Path:
    """The state directory a build file lives in (``STATE/builds/<id>/build.db``), else the file's directory."""
    p = Path(db_path)
    return p.parent.parent.parent if p.parent.parent.name == "builds" else p.parent


def utcnow() -> str:
    """Now, UTC, ISO 8601 to the second ("2026-11-30T06:17:13+00:00")."""
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def short_time(iso: str | None) -> str:
    """ISO 8601 -> "2026-11-30 06:17 UTC" for screens; the input unchanged if it does not parse."""
    if not iso:
        return ""
    try:
        t = _dt.datetime.fromisoformat(iso)
    except ValueError:
        return iso
    if t.tzinfo is not None:
        t = t.astimezone(_dt.timezone.utc)
    return t.strftime("%Y-%m-%d %H:%M UTC")


STATE_DIR_ENV = "BRINGUP_STATE_DIR"
"""Environment override of the default state directory (``--state`` still wins); the tests set it."""


def default_state_dir() -> Path:
    """``$BRINGUP_STATE_DIR`` when set, else ``/var/lib/bringup`` as root, else the platformdirs user state dir."""
    if os.environ.get(STATE_DIR_ENV):
        return Path(os.environ[STATE_DIR_ENV])
    if os.geteuid() == 0:
        return Path("/var/lib/bringup")
    import platformdirs

    return Path(platformdirs.user_state_dir("bringup", appauthor=False))


def sudo_user_state_dir() -> Path | None:
    """Under sudo: the invoking user's default state dir (where their builds without sudo live).
    None when ``$BRINGUP_STATE_DIR`` names the state dir."""
    user = os.environ.get("SUDO_USER")
    if os.geteuid() != 0 or not user or user == "root" or os.environ.get(STATE_DIR_ENV):
        return None
    try:
        import pwd

        home = pwd.getpwnam(user).pw_dir
    except (KeyError, ImportError):
        return None
    return Path(home) / ".local" / "state" / "bringup"


def ensure_state_dir(path: Path) -> Path:
    """Create ``path`` if needed (mode 0700) and prove it is writable, else raise :class:`StateDirError`
    (:class:`DiskFullError` when its disk is full). An existing directory's mode is left to
    :func:`tighten_state_dir`."""
    try:
        path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    except OSError as exc:
        raise StateDirError(_unwritable_message(path, exc, "cannot create the state directory")) from None
    if not path.is_dir():
        raise StateDirError(f"the state path {path} is not a directory")
    try:
        fd, probe = tempfile.mkstemp(prefix=".write-test-", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFullError(disk_full_message(path)) from None
        raise StateDirError(_unwritable_message(path, exc, "the state directory is not writable")) from None
    return path


def _unwritable_message(path: Path, exc: OSError, what: str) -> str:
    """Why the state directory ``path`` cannot be written and what to do: a read-only filesystem named as such,
    and never "run as root" to root."""
    if exc.errno == errno.EROFS:
        return (f"the state directory {path} is on a read-only filesystem; pass --state DIR with a directory on a "
                f"writable one")
    said = f"{what}: {path} ({exc.strerror or exc})"
    if exc.errno not in (errno.EACCES, errno.EPERM):
        return f"{said}; pass --state DIR with a directory you can write"
    if os.geteuid() == 0:  # root was refused: an immutable attribute, a read-only bind mount, a security policy
        return f"{said}; root may not write there either (lsattr -d, findmnt); pass --state DIR with another directory"
    return f"{said}; run as root, or pass --state DIR with a directory you can write"


PRIVATE_DIR_MODE = 0o700
PRIVATE_UMASK = 0o077
"""bringup's files are readable by their owner only (directories 0700, files 0600): a build holds the machine
id, DMI serial numbers, ``dmidecode`` output and the kernel log, which ``kernel.dmesg_restrict=1`` hides from
other users (kernel.org, Documentation/admin-guide/sysctl/kernel.rst, dmesg_restrict)."""
OPERATOR_UMASK_ENV = "BRINGUP_OPERATOR_UMASK"
"""The umask bringup was started with (octal), kept for the commands an action runs (:mod:`wizard.supervise`):
the files they make are the system's, not bringup's."""


def use_private_umask() -> int:
    """From now on this process (and the action supervisors it starts) creates files 0600 and directories
    0700, whatever umask it was started with; that umask is kept in ``$BRINGUP_OPERATOR_UMASK`` (the outermost
    bringup's, when one starts another). Returns the umask it replaced."""
    old = os.umask(PRIVATE_UMASK)
    os.environ.setdefault(OPERATOR_UMASK_ENV, f"{old:03o}")
    return old


def operator_umask(environ: dict[str, str] | None = None) -> int | None:
    """The umask kept by :func:`use_private_umask` in ``environ`` (default ``os.environ``); ``None`` when
    none was kept or it is not an octal umask."""
    raw = (os.environ if environ is None else environ).get(OPERATOR_UMASK_ENV, "")
    try:
        value = int(raw, 8)
    except ValueError:
        return None
    return value if 0 <= value <= 0o777 else None


def tighten_state_dir(path: Path) -> list[Path]:
    """Make an existing state tree private: under ``builds/`` every directory 0700 and every file 0600 (owner
    bits kept: the owner never loses access), and the state directory itself 0700 when it holds nothing but
    bringup's own entries (a ``--state`` pointing at a shared directory such as ``/tmp`` is left as it is).
    Symbolic links are neither followed nor changed; what cannot be changed is skipped.

    Returns the paths other users could read before (group or others had read permission on it and search
    permission on every directory above it, from ``/``); a loose mode that no one else could reach (a 0644 file
    in a 0700 directory) is tightened too but not returned. Never raises OSError.
    """
    root = Path(path)
    exposed: list[Path] = []
    Reach = tuple[bool, bool]  # (group, others) can search every directory down to here

    def below(reach: Reach, mode: int) -> Reach:
        return reach[0] and bool(mode & 0o010), reach[1] and bool(mode & 0o001)

    def private(p: Path, reach: Reach) -> int | None:
        """Tighten ``p``; its mode before (``None``: a symbolic link, or gone)."""
        try:
            st = os.lstat(p)
        except OSError:
            return None
        mode = stat.S_IMODE(st.st_mode)
        if stat.S_ISLNK(st.st_mode):
            return None
        if mode & 0o077:
            if (reach[0] and mode & 0o040) or (reach[1] and mode & 0o004):
                exposed.append(p)
            try:
                os.chmod(p, mode & 0o700)
            except OSError:
                pass
        return mode

    reach: Reach = (True, True)
    for above in reversed(root.absolute().parents):
        try:
            reach = below(reach, os.stat(above).st_mode)
        except OSError:
            return exposed
    try:
        own = {e.name for e in os.scandir(root)} <= {"builds"} or root == default_state_dir()
        mode = private(root, reach) if own else stat.S_IMODE(os.stat(root).st_mode)
    except OSError:
        return exposed
    builds = builds_dir(root)
    mode_b = private(builds, below(reach, mode or 0)) if builds.is_dir() else None
    if mode_b is None:  # none yet, or a symbolic link: left as it is
        return exposed
    todo = [(builds, below(below(reach, mode or 0), mode_b))]
    while todo:
        d, r = todo.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            m = private(Path(e.path), r)
            if m is not None and e.is_dir(follow_symlinks=False):
                todo.append((Path(e.path), below(r, m)))
    return exposed


def tightened_note(path: Path, exposed: list[Path]) -> str:
    """The one line that says what :func:`tighten_state_dir` found readable by other users ("" when nothing)."""
    if not exposed:
        return ""
    from wizard.i18n import ngettext
    return ngettext("{n} file or directory under {path} could be read by other users; it is now readable by its owner "
                    "only (directories 0700, files 0600): the builds hold the machine id, serial numbers and kernel logs",
                    "{n} files and directories under {path} could be read by other users; they are now readable by "
                    "their owner only (directories 0700, files 0600): the builds hold the machine id, serial numbers "
                    "and kernel logs", len(exposed)).format(n=len(exposed), path=path)


@dataclass
class StepState:
    step_id: str
    status: StepStatus
    verdict: Verdict | None
    reason: str
    user: str
    boot_id: str
    updated_at: str

    @property
    def not_applicable(self) -> bool:
        """Skipped by the machine's own check (nothing there to verify), not by a person's decision."""
        return self.status is StepStatus.SKIPPED and self.reason.startswith(AUTO_SKIP_PREFIX)


class ActionState(str, enum.Enum):
    """Where one action run stands. The values are what the build file and the JSON output hold."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"  # a non-zero exit status, or it could not start (no exit status; its log says why)
    INTERRUPTED = "interrupted"  # its supervisor died without an exit status (a reboot, kill -9)
    DRY_RUN = "dry-run"  # recorded, nothing was run
    CANCELLED = "cancelled"  # the operator stopped it (a signal): not a failure

    def __str__(self) -> str:
        return self.value

    @property
    def ended(self) -> bool:
        return self is not ActionState.RUNNING


@dataclass
class ActionRun:
    """One recorded action run. ``overrides``: plan answers given for this run only (``bringup validate
    --nproc 2``), used again to judge it; ``check_run``: the id of the check record holding the findings judged
    from its log (``None`` until judged, or when the step's own check judges it); ``results``: the judged
    results table and series (``{"results": [...], "series": {...}, "telemetry": {...}}``, empty when the step has
    none; ``telemetry``, the NVML samples, counters and soak intervals the report draws, is absent from results
    stored before it was kept: readers treat it as optional)."""

    id: int
    step_id: str
    title: str
    argv: list[list[str]]
    user: str
    dry_run: bool
    state: ActionState
    pid: int | None
    pid_start: float | None
    log_path: str
    status_path: str
    exit_status: int | None
    boot_id: str
    started_at: str
    ended_at: str | None
    overrides: dict[str, Any] = field(default_factory=dict)
    check_run: int | None = None
    results: dict[str, Any] = field(default_factory=dict)


def check_file(path: Path) -> None:
    """Refuse a file that is not an SQLite database, without modifying it."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError as exc:
        raise StoreError(Msg("cannot read the build file {path}: {why}", path=str(path), why=str(exc.strerror or exc))) from None
    if head and head != SQLITE_MAGIC:
        raise StoreError(Msg("the build file {path} is not an SQLite database (corrupt?); it was left untouched. Move it "
                             "aside to start a new build, or attach it to a bug report.", path=str(path)))


class Store:
    """One build's SQLite file. Use :meth:`open`; every write commits before returning."""

    def __init__(self, conn: sqlite3.Connection, path: Path, readonly: bool, clock: Callable[[], str]) -> None:
        self.conn = conn
        self.path = path
        self.readonly = readonly
        self.clock = clock
        self._depth = 0  # open transactions (nested ones are savepoints)

    # ---------------------------------------------------------------- opening

    @classmethod
    def open(cls, path: Path, readonly: bool = False, create: bool = False,
             clock: Callable[[], str] = utcnow) -> "Store":
        """Open (or with ``create``, create) the build file at ``path``.

        Raises:
            StoreError: missing (without ``create``), not a database, corrupt, or a newer schema.
            DiskFullError: the disk holding it is full (it could not be opened for writing, or migrated).
        """
        path = Path(path)
        exists = path.exists() and path.stat().st_size > 0
        if not exists and not create:
            if path.exists():
                raise StoreError(Msg("the build file {path} is empty (0 bytes); it was left untouched. Move it aside to start "
                                     "a new build.", path=str(path)))
            raise StoreError(Msg("no build file at {path}", path=str(path)))
        if exists:
            check_file(path)
        try:
            if readonly:
                conn = _connect_ro(path)
            else:
                conn = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False, timeout=10)
            conn.row_factory = sqlite3.Row
            ok = conn.execute("PRAGMA quick_check").fetchone()[0]
            if ok != "ok":
                conn.close()
                raise StoreError(Msg("the build file {path} is damaged (sqlite quick_check: {ok}); it was left untouched. Move "
                                     "it aside to start a new build.", path=str(path), ok=str(ok)))
            version = conn.execute("PRAGMA user_version").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            if is_disk_full(exc, path.parent):
                raise DiskFullError(disk_full_message(state_dir_of(path))) from None
            if str(getattr(exc, "sqlite_errorname", "")).startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN")):
                raise StoreError(Msg("the build file {path} could not be opened ({why}); it was left untouched. Check the disk "
                                     "and filesystem holding it (dmesg), then try again.", path=str(path), why=str(exc))) from None
            raise StoreError(Msg("the build file {path} cannot be read as a database ({why}); it was left untouched. Move it "
                                 "aside to start a new build.", path=str(path), why=str(exc))) from None
        if version > SCHEMA_VERSION:
            conn.close()
            raise StoreError(Msg("the build file {path} has schema version {version}, newer than this bringup understands "
                                 "({known}); upgrade bringup. The file was left untouched.", path=str(path), version=version,
                                 known=SCHEMA_VERSION))
        store = cls(conn, path, readonly, clock)
        if not readonly:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.execute("PRAGMA foreign_keys=ON")
                store._migrate(version)
            except (sqlite3.Error, DiskFullError) as exc:
                conn.close()
                if isinstance(exc, DiskFullError) or is_disk_full(exc, path.parent):
                    raise DiskFullError(disk_full_message(state_dir_of(path))) from None
                raise
        elif version < SCHEMA_VERSION:
            conn.close()
            raise StoreError(Msg("the build file {path} has an older schema ({version}) and is opened read-only; open it once "
                                 "without another instance running to upgrade it.", path=str(path), version=version))
        try:
            store.validate()
        except StoreError:
            store.close()
            raise
        return store

    def validate(self) -> None:
        """Read every table once, so bad content is refused at open, not halfway through a screen.

        Raises:
            StoreError: a table is missing or a row does not decode (the file is not modified).
        """
        try:
            self.meta(), self.host(), self.plan(), self.step_states(), self.action_runs(), self.acks()
            for r in self.conn.execute("SELECT verdict, evidence, measured FROM finding"):
                Verdict(r["verdict"])
                json.loads(r["evidence"])
                _measured(r["measured"])
            for r in self.conn.execute("SELECT verdict FROM check_run"):
                Verdict(r["verdict"])
        except (sqlite3.DatabaseError, ValueError, TypeError, KeyError) as exc:
            raise StoreError(f"the build file {self.path} has content this bringup cannot read ({exc}); "
                             f"it was left untouched. Move it aside to start a new build.") from None

    def _migrate(self, current: int) -> None:
        for v in range(current + 1, SCHEMA_VERSION + 1):
            with self.tx():
                for stmt in _statements(MIGRATIONS[v]):
                    self.conn.execute(stmt)
                self.conn.execute(f"PRAGMA user_version = {v}")

    def close(self) -> None:
        try:
            self.conn.close()
        except sqlite3.Error:  # pragma: no cover
            pass

    class _Tx:
        """One transaction; nested in another (``with store.tx(): ... store.set_step(...)``) it is a savepoint
        of the outer one, so several writes commit together or not at all."""

        def __init__(self, store: "Store") -> None:
            self.store = store
            self.conn = store.conn

        def __enter__(self) -> sqlite3.Connection:
            depth = self.store._depth
            try:
                self.conn.execute("BEGIN IMMEDIATE" if depth == 0 else f"SAVEPOINT sp{depth}")
            except sqlite3.Error as exc:
                self.store._raise_if_full(exc)
                raise
            self.store._depth = depth + 1
            return self.conn

        def __exit__(self, et: Any, ev: Any, tb: Any) -> None:
            self.store._depth -= 1
            depth = self.store._depth
            if et is None:
                try:
                    self.conn.execute("COMMIT" if depth == 0 else f"RELEASE sp{depth}")
                    return
                except sqlite3.Error as exc:
                    ev = exc
            try:
                if depth == 0:
                    if self.conn.in_transaction:
                        self.conn.execute("ROLLBACK")
                else:
                    self.conn.execute(f"ROLLBACK TO sp{depth}")
                    self.conn.execute(f"RELEASE sp{depth}")
            except sqlite3.Error:  # the rollback could not run: SQLite rolls back at the next open
                pass
            if isinstance(ev, BaseException):
                self.store._raise_if_full(ev)
            if et is None:  # the commit failed
                raise ev

    def tx(self) -> "Store._Tx":
        """A write transaction (``BEGIN IMMEDIATE``; a savepoint inside another one).

        Raises:
            StoreError: the store is open read-only.
            DiskFullError: the disk holding the build is full (the transaction was rolled back).
        """
        if self.readonly:
            raise StoreError(f"{self.path} is open read-only (another bringup holds this build)")
        return Store._Tx(self)

    def _raise_if_full(self, exc: BaseException) -> None:
        if not isinstance(exc, DiskFullError) and is_disk_full(exc, self.path.parent):
            raise DiskFullError(disk_full_message(state_dir_of(self.path))) from None

    # ---------------------------------------------------------------- key/value tables

    def _get_kv(self, table: str) -> dict[str, Any]:
        return {r["key"]: json.loads(r["value"]) for r in self.conn.execute(f"SELECT key, value FROM {table}")}

    def meta(self) -> dict[str, Any]:
        return self._get_kv("meta")

    def set_meta(self, **values: Any) -> None:
        with self.tx() as c:
            for k, v in values.items():
                c.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (k, json.dumps(v)))

    def host(self) -> dict[str, Any]:
        return self._get_kv("host")

    def set_host(self, identity: dict[str, Any]) -> None:
        with self.tx() as c:
            for k, v in identity.items():
                c.execute("INSERT OR REPLACE INTO host(key, value) VALUES (?, ?)", (k, json.dumps(v)))

    def plan(self) -> dict[str, Any]:
        return {r["key"]: json.loads(r["value"]) for r in self.conn.execute("SELECT key, value FROM plan")}

    def plan_answers(self) -> list[tuple[str, Any, str]]:
        """(key, value, when it was set, ISO 8601 UTC) for every plan answer, by key."""
        return [(r["key"], json.loads(r["value"]), r["updated_at"])
                for r in self.conn.execute("SELECT key, value, updated_at FROM plan ORDER BY key")]

    def set_plan(self, **answers: Any) -> None:
        """Store answers; ``None`` removes an answer."""
        now = self.clock()
        with self.tx() as c:
            for k, v in answers.items():
                if v is None:
                    c.execute("DELETE FROM plan WHERE key = ?", (k,))
                else:
                    c.execute("INSERT OR REPLACE INTO plan(key, value, updated_at) VALUES (?, ?, ?)",
                              (k, json.dumps(v), now))

    # ---------------------------------------------------------------- steps

    def set_step(self, step_id: str, status: StepStatus, verdict: Verdict | None = None, reason: str = "",
                 user: str = "", boot_id: str = "") -> None:
        now = self.clock()
        v = verdict.value if verdict else None
        with self.tx() as c:
            c.execute("INSERT OR REPLACE INTO step_state(step_id, status, verdict, reason, user, boot_id, updated_at)"
                      " VALUES (?, ?, ?, ?, ?, ?, ?)", (step_id, status.value, v, reason, user, boot_id, now))
            c.execute("INSERT INTO step_event(step_id, status, verdict, reason, user, boot_id, at)"
                      " VALUES (?, ?, ?, ?, ?, ?, ?)", (step_id, status.value, v, reason, user, boot_id, now))

    def step_states(self) -> dict[str, StepState]:
        out = {}
        for r in self.conn.execute("SELECT * FROM step_state"):
            out[r["step_id"]] = StepState(r["step_id"], StepStatus(r["status"]),
                                          Verdict(r["verdict"]) if r["verdict"] else None, r["reason"],
                                          r["user"], r["boot_id"], r["updated_at"])
        return out

    def withdrawn_confirmations(self) -> dict[str, tuple[StepState, StepState]]:
        """step id -> (the person's latest confirmation, the state that replaced it) for each step whose latest
        confirmation a later check or run replaced: the very next event of the step was ``failed``, ``warned`` or
        ``passed`` (walk 31 #2: the note vanished once a check passed), and the step is not confirmed again now. A
        person's own later decision (a skip, a reset) is not a replacement. Read from the ``step_event`` history, which keeps every state a step was ever set to
        (walk 29 #13: a failing check reopened a hand-confirmed step and the note vanished from status and
        report)."""
        out: dict[str, tuple[StepState, StepState]] = {}
        current = self.step_states()

        def state(r: sqlite3.Row) -> StepState:
            return StepState(r["step_id"], StepStatus(r["status"]), Verdict(r["verdict"]) if r["verdict"] else None,
                             r["reason"], r["user"], r["boot_id"], r["at"])

        for r in self.conn.execute(
                "SELECT e.* FROM step_event e WHERE e.status = 'confirmed' AND e.id = "
                "(SELECT MAX(id) FROM step_event WHERE step_id = e.step_id AND status = 'confirmed')").fetchall():
            now = current.get(r["step_id"])
            if now is None or now.status is StepStatus.CONFIRMED:
                continue
            nxt = self.conn.execute("SELECT * FROM step_event WHERE step_id = ? AND id > ? ORDER BY id LIMIT 1",
                                    (r["step_id"], r["id"])).fetchone()
            if nxt is not None and nxt["status"] in (StepStatus.FAILED.value, StepStatus.WARNED.value,
                                                     StepStatus.PASSED.value):
                out[r["step_id"]] = (state(r), state(nxt))
        return out

    # ---------------------------------------------------------------- checks and findings

    def record_check(self, step_id: str, findings: Iterable[Finding], verdict: Verdict, boot_id: str,
                     started_at: str, snapshot: str = "", plan_read: Mapping[str, Any] | None = None) -> int:
        """Store one check of ``step_id``; ``plan_read``: the plan answers its rules read, with their values then
        (:class:`wizard.engine.PlanReads`), or ``None`` when not known (a run's judged log)."""
        now = self.clock()
        with self.tx() as c:
            cur = c.execute("INSERT INTO check_run(step_id, verdict, boot_id, snapshot, started_at, finished_at,"
                            " plan_read) VALUES (?, ?, ?, ?, ?, ?, ?)",
                            (step_id, verdict.value, boot_id, snapshot, started_at, now,
                             json.dumps(dict(plan_read), sort_keys=True) if plan_read is not None else ""))
            run_id = int(cur.lastrowid or 0)
            for f in findings:
                c.execute("INSERT INTO finding(check_run, step_id, finding_id, verdict, subject, message, evidence,"
                          " remedy, source, key, measured, i18n) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          (run_id, step_id, f.id, f.verdict.value, f.subject, str(f.message),
                           json.dumps(list(f.evidence)), str(f.remedy), f.source, f.key,
                           json.dumps(f.measured.to_dict()) if f.measured is not None else "", _i18n_column(f)))
        return run_id

    def latest_plan_reads(self) -> dict[str, dict[str, Any]]:
        """step id -> the plan answers its latest check read, with their values then, for every step whose latest
        check recorded them (not a run's judged log, nor a build from an older bringup), in one query."""
        out: dict[str, dict[str, Any]] = {}
        for r in self.conn.execute("SELECT c.step_id, c.plan_read FROM check_run c WHERE c.id = "
                                   "(SELECT MAX(id) FROM check_run WHERE step_id = c.step_id)"):
            try:
                got = json.loads(r["plan_read"]) if r["plan_read"] else None
            except ValueError:
                got = None
            if isinstance(got, dict):
                out[r["step_id"]] = got
        return out

    def latest_plan_read(self, step_id: str) -> dict[str, Any] | None:
        """:meth:`latest_plan_reads` of one step; ``None`` when it has none."""
        return self.latest_plan_reads().get(step_id)

    def latest_check(self, step_id: str) -> tuple[dict[str, Any] | None, list[Finding]]:
        row = self.conn.execute("SELECT * FROM check_run WHERE step_id = ? ORDER BY id DESC LIMIT 1",
                                (step_id,)).fetchone()
        if row is None:
            return None, []
        return dict(row), self.findings_of_check(row["id"])

    # ---------------------------------------------------------------- acknowledged events

    def add_ack(self, key: str, finding_id: str, subject: str, message: str, reason: str, user: str,
                boot_id: str) -> None:
        """Record that the operator acknowledged one past event (e.g. an old Xid) with a reason."""
        if not reason.strip():
            raise ValueError("an acknowledgement needs a reason")
        with self.tx() as c:
            c.execute("INSERT OR REPLACE INTO ack(key, finding_id, subject, message, reason, user, boot_id, at)"
                      " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                      (key, finding_id, subject, message, reason.strip(), user, boot_id, self.clock()))

    def acks(self) -> dict[str, dict[str, Any]]:
        """key -> the acknowledgement record. Its ``message`` is the acknowledged finding's English as stored, a
        :class:`~wizard.i18n.Msg` again where a stored finding with the same id and English kept its template (so
        ``bringup ack`` shows it in the reader's language, as ``check`` does: walk 28 #13)."""
        out = {}
        for r in self.conn.execute("SELECT * FROM ack ORDER BY at").fetchall():
            d = dict(r)
            row = self.conn.execute("SELECT i18n FROM finding WHERE finding_id = ? AND message = ? AND i18n != '' "
                                    "ORDER BY id DESC LIMIT 1", (d["finding_id"], d["message"])).fetchone()
            if row is not None:
                d["message"] = Msg.from_json(d["message"], _i18n_templates(row["i18n"]).get("message"))
            out[d["key"]] = d
        return out

    # ---------------------------------------------------------------- actions

    def add_action_run(self, step_id: str, title: str, argv: list[list[str]], user: str, dry_run: bool,
                       state: ActionState, log_path: str, status_path: str, boot_id: str,
                       overrides: dict[str, Any] | None = None) -> int:
        with self.tx() as c:
            cur = c.execute("INSERT INTO action_run(step_id, title, argv, user, dry_run, state, log_path, status_path,"
                            " boot_id, started_at, overrides) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (step_id, title, json.dumps(argv), user, int(dry_run), ActionState(state).value, log_path,
                             status_path, boot_id, self.clock(), json.dumps(overrides or {})))
            return int(cur.lastrowid or 0)

    def update_action_run(self, run_id: int, **fields: Any) -> None:
        allowed = {"state", "pid", "pid_start", "exit_status", "ended_at", "log_path", "status_path", "check_run",
                   "results"}
        bad = set(fields) - allowed
        if bad:
            raise ValueError(f"unknown action_run fields {bad}")
        if "state" in fields:
            fields["state"] = ActionState(fields["state"]).value
        if "results" in fields:
            fields["results"] = json.dumps(fields["results"] or {})
        sets = ", ".join(f"{k} = ?" for k in fields)
        with self.tx() as c:
            c.execute(f"UPDATE action_run SET {sets} WHERE id = ?", (*fields.values(), run_id))

    def action_runs(self, step_id: str | None = None, state: ActionState | None = None) -> list[ActionRun]:
        q = "SELECT * FROM action_run"
        cond, args = [], []
        if step_id is not None:
            cond.append("step_id = ?")
            args.append(step_id)
        if state is not None:
            cond.append("state = ?")
            args.append(ActionState(state).value)
        if cond:
            q += " WHERE " + " AND ".join(cond)
        q += " ORDER BY id"
        return [_action_row(r) for r in self.conn.execute(q, args)]

    def action_run(self, run_id: int) -> ActionRun | None:
        r = self.conn.execute("SELECT * FROM action_run WHERE id = ?", (run_id,)).fetchone()
        return _action_row(r) if r else None

    def findings_of_check(self, check_run: int) -> list[Finding]:
        """The findings of one check record (e.g. the one an action run's log was judged into)."""
        row = self.conn.execute("SELECT step_id FROM check_run WHERE id = ?", (check_run,)).fetchone()
        if row is None:
            return []
        out = []
        for r in self.conn.execute("SELECT * FROM finding WHERE check_run = ? ORDER BY id", (check_run,)):
            templates = _i18n_templates(r["i18n"])
            out.append(Finding(r["finding_id"], Verdict(r["verdict"]),
                               Msg.from_json(r["message"], templates.get("message")), r["subject"],
                               tuple(json.loads(r["evidence"])), Msg.from_json(r["remedy"], templates.get("remedy")),
                               r["source"], row["step_id"], r["key"], _measured(r["measured"])))
        return out


def _i18n_column(f: Finding) -> str:
    """A finding's stored ``i18n`` column: the templates and arguments of its message and remedy where they are
    :class:`~wizard.i18n.Msg` (so a screen can show them in another language), as JSON; ``''`` for neither."""
    d = {name: text.to_json() for name, text in (("message", f.message), ("remedy", f.remedy))
         if isinstance(text, Msg)}
    return json.dumps(d) if d else ""


def _i18n_templates(text: str) -> dict[str, Any]:
    """The stored ``i18n`` column read back (``{}`` for none or for text that is not that JSON: the English
    message and remedy are always stored beside it, so nothing is lost)."""
    try:
        d = json.loads(text) if text else {}
    except ValueError:
        return {}
    return d if isinstance(d, dict) else {}


def _measured(text: str) -> Measure | None:
    """A finding's stored ``measured`` column ('' for none, else :meth:`Measure.to_dict` as JSON).

    Raises:
        ValueError: the text is not that JSON (``json.JSONDecodeError`` is a ``ValueError``).
    """
    return Measure.from_dict(json.loads(text)) if text else None


def _connect_ro(path: Path) -> sqlite3.Connection:
    """Read-only connection. A WAL database needs its -shm file; where this user cannot create
    it (a directory it cannot write), fall back to ``immutable=1`` (no locking: fine for a view)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, isolation_level=None,
                           check_same_thread=False, timeout=10)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        conn.close()
        return sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, isolation_level=None,
                               check_same_thread=False, timeout=10)


def _action_row(r: sqlite3.Row) -> ActionRun:
    overrides, results = json.loads(r["overrides"] or "{}"), json.loads(r["results"] or "{}")
    return ActionRun(r["id"], r["step_id"], r["title"], json.loads(r["argv"]), r["user"], bool(r["dry_run"]),
                     ActionState(r["state"]), r["pid"], r["pid_start"], r["log_path"], r["status_path"],
                     r["exit_status"], r["boot_id"], r["started_at"], r["ended_at"],
                     overrides if isinstance(overrides, dict) else {}, r["check_run"],
                     results if isinstance(results, dict) else {})


def _statements(script: str) -> Iterator[str]:
    for stmt in script.split(";"):
        if stmt.strip():
            yield stmt.strip()


# -------------------------------------------------------------------- builds in a state directory


@dataclass
class BuildInfo:
    build_id: str
    path: Path  # the build directory

    @property
    def db(self) -> Path:
        return self.path / DB_NAME


def builds_dir(state_dir: Path) -> Path:
    return Path(state_dir) / "builds"


def list_builds(state_dir: Path) -> list[BuildInfo]:
    """Builds in ``state_dir``, oldest first (build ids start with a UTC timestamp)."""
    d = builds_dir(state_dir)
    if not d.is_dir():
        return []
    return [BuildInfo(p.name, p) for p in sorted(d.iterdir())
            if not p.name.startswith(".") and (p / DB_NAME).exists()]  # ".new-*": one being made


@contextlib.contextmanager
def creation_lock(state_dir: Path) -> Iterator[None]:
    """Hold the state directory's build-creation lock: an exclusive ``flock`` on the ``builds/`` directory
    itself, waited for (the kernel drops it when its holder dies), so two commands started at once on an empty
    state directory make (and then share) one build. Leftovers of a creation that was killed
    (``builds/.new-*``) are removed under it.

    Raises:
        StateDirError: ``builds/`` cannot be created (DiskFullError when its disk is full).
    """
    d = builds_dir(state_dir)
    try:
        d.mkdir(parents=True, exist_ok=True)
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFullError(disk_full_message(Path(state_dir))) from None
        raise StateDirError(f"cannot create {d}: {exc.strerror or exc}") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        for stale in d.glob(".new-*"):  # whoever made it held this lock and is gone
            shutil.rmtree(stale, ignore_errors=True)
        yield
    finally:
        os.close(fd)


def create_build(state_dir: Path, build_id: str, init: Callable[[Store], None],
                 clock: Callable[[], str] = utcnow) -> tuple[BuildInfo, "BuildLock"]:
    """Make a new build atomically; call it holding :func:`creation_lock`. The build directory is made under a
    hidden name (``builds/.new-*``, never listed), its lock taken, its store created, migrated and filled by
    ``init(store)``, then it is renamed into place as ``builds/<build_id>`` (``-2``, ``-3``, ... when taken):
    another bringup sees either no build or a complete one, never an empty file or an unmigrated schema.

    Returns the build and its lock, held. Raises :class:`StoreError`, :class:`StateDirError` (its
    :class:`DiskFullError` when the disk is full); nothing is left in place then.
    """
    d = builds_dir(state_dir)
    try:
        tmp = Path(tempfile.mkdtemp(prefix=".new-", dir=d))
    except OSError as exc:
        if is_disk_full(exc):
            raise DiskFullError(disk_full_message(Path(state_dir))) from None
        raise StateDirError(f"cannot create a build under {d}: {exc.strerror or exc}") from None
    lock = BuildLock(tmp)
    try:
        lock.acquire()  # taken before the build is visible: whoever made it holds it
        final, n = build_id, 1
        while (d / final).exists():
            n += 1
            final = f"{build_id}-{n}"
        store = Store.open(tmp / DB_NAME, create=True, clock=clock)
        try:
            store.set_meta(build_id=final)
            init(store)
        finally:
            store.close()
        while True:
            try:
                os.rename(tmp, d / final)  # a non-empty directory is never replaced
                break
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
                n += 1
                final = f"{build_id}-{n}"
                fix = Store.open(tmp / DB_NAME, clock=clock)
                try:
                    fix.set_meta(build_id=final)
                finally:
                    fix.close()
    except BaseException as exc:
        lock.release()
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError) and is_disk_full(exc):
            raise DiskFullError(disk_full_message(Path(state_dir))) from None
        raise
    lock.path = d / final / "lock"
    return BuildInfo(final, d / final), lock


def new_build_id(hostname: str, now: _dt.datetime | None = None) -> str:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", hostname or socket.gethostname())[:40]
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{safe}"


class BuildLock:
    """An exclusive ``flock`` on ``<build>/lock``; ``acquired`` is False when another instance holds it."""

    def __init__(self, build_dir: Path) -> None:
        self.path = Path(build_dir) / "lock"
        self.fd: int | None = None
        self.acquired = False
        self.holder = ""

    def acquire(self, wait_s: float = 0.0) -> bool:
        """Take the lock, waiting up to ``wait_s`` seconds for another instance to let it go. Returns whether
        it was taken (``holder`` then says who has it). Raises ``OSError`` if the lock file cannot be opened."""
        import time

        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                try:
                    self.holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
                finally:
                    os.close(fd)
                return False
        try:  # who holds it, for the message of the next one; written in place (a full disk keeps the old text)
            line = f"pid {os.getpid()}".ljust(31).encode() + b"\n"
            os.pwrite(fd, line, 0)
            os.ftruncate(fd, len(line))
        except OSError:
            pass
        self.fd = fd
        self.acquired = True
        return True

    def release(self) -> None:
        if self.fd is not None:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            finally:
                os.close(self.fd)
                self.fd = None
                self.acquired = False
