"""Backed-up, atomic file edits (used by actions that change configuration files).

``atomic_write`` copies the current file to a timestamped backup first, then writes the new
content to a temporary file in the same directory, fsyncs it, renames it over the original and
fsyncs the directory, so a crash leaves either the old or the new file, never half of one.
"""

from __future__ import annotations

import datetime as _dt
import os
import shutil
import stat
import tempfile
from pathlib import Path


STATUS_RESERVE_BYTES = 512
"""Bytes reserved in an action run's ``<status>.tmp`` before it starts (a status document is about 100)."""
PID_RESERVE_BYTES = 64
"""Bytes reserved in an action run's ``<run>.pid`` for its supervisor's ``{"pid": N}``."""


def reserve(path: Path | str, size: int) -> None:
    """Create ``path`` (mode 0600) holding ``size`` spaces, written and fsynced, so later writes into those bytes
    need no new space on a disk that has filled up meanwhile. Raises ``OSError`` (ENOSPC when it is already
    full)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        os.pwrite(fd, b" " * size, 0)
        os.fsync(fd)
    finally:
        os.close(fd)


class NotRegularFileError(OSError):
    """An output path names something other than a regular file (a directory, a FIFO, a device node, a socket, a
    symbolic link): writing it by rename would replace that thing with a file. The message says what it is."""


def refuse_non_regular(path: Path | str) -> None:
    """Refuse an output ``path`` that exists and is not a regular file, before anything is written; a path that does
    not exist yet, or is a regular file, passes. Checked with :func:`os.lstat`, so a symbolic link is refused
    whatever it points to (it is never followed, nor replaced): give its target instead. Used by every command that
    writes an output file by rename (``report -o``, ``check --prometheus``, ``answers export -o``, ``capture -o``).

    Raises:
        NotRegularFileError: the path is a directory, FIFO, character or block device, socket or symbolic link.
        OSError: the path cannot be examined (a parent that is not searchable).
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return
    from wizard.i18n import Msg

    kind = (Msg("a symbolic link (to {target}): give the file it points to", target=os.readlink(path))
            if stat.S_ISLNK(mode) else Msg("a directory") if stat.S_ISDIR(mode)
            else Msg("a FIFO (named pipe)") if stat.S_ISFIFO(mode)
            else Msg("a character device") if stat.S_ISCHR(mode)
            else Msg("a block device") if stat.S_ISBLK(mode)
            else Msg("a socket") if stat.S_ISSOCK(mode) else Msg("not a regular file"))
    raise NotRegularFileError(Msg("{path} is {kind}; bringup writes a new file and renames it into place, which would "
                                  "replace it, so it is left as it is", path=str(path), kind=kind))


def backup_name(path: Path, backup_dir: Path, now: _dt.datetime | None = None) -> Path:
    now = now or _dt.datetime.now(_dt.timezone.utc)
    stamp = now.strftime("%Y%m%dT%H%M%S.%fZ")
    flat = str(path).strip("/").replace("/", "__")
    return backup_dir / f"{flat}.{stamp}.bak"


def atomic_write(path: Path | str, content: bytes, backup_dir: Path | str | None = None,
                 mode: int = 0o644) -> Path | None:
    """Replace ``path`` with ``content`` atomically; back it up first if it exists.

    Args:
        path: the file to write.
        content: the new bytes.
        backup_dir: where the backup goes (created if needed); ``None`` = next to the file. The backup is
            mode 0600.
        mode: permission bits for a new file (an existing file keeps its mode and owner).

    Returns:
        The backup's path, or ``None`` when the file did not exist.

    Raises:
        OSError: the directory is not writable, the disk is full, ... (the original is untouched).
    """
    path = Path(path)
    backup: Path | None = None
    st = None
    if path.exists():
        st = path.stat()
        bdir = Path(backup_dir) if backup_dir is not None else path.parent
        bdir.mkdir(parents=True, exist_ok=True)
        backup = backup_name(path, bdir)
        shutil.copy2(path, backup)
        os.chmod(backup, 0o600)  # bringup's copy, readable by its owner only (the original keeps its mode)
        _fsync_file(backup)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
            fh.flush()
            os.fsync(fh.fileno())
        if st is not None:
            os.chmod(tmp, st.st_mode & 0o7777)
            try:
                os.chown(tmp, st.st_uid, st.st_gid)
            except PermissionError:
                pass
        else:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(path.parent)
    return backup


def restore(path: Path | str, backup: Path | str) -> None:
    """Roll ``path`` back to ``backup`` (atomically; the current content is backed up too)."""
    path, backup = Path(path), Path(backup)
    atomic_write(path, backup.read_bytes(), backup.parent)


def _fsync_file(p: Path) -> None:
    fd = os.open(p, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:  # pragma: no cover - some filesystems refuse opening directories
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)
