"""Capture bundles: every probe's raw output in one ``.tar.gz``, replayable offline.

Layout of a bundle::

    manifest.json        {"schema": 1, "bringup_version", "created", "host": {...identity},
                          "probes": [{"name", "title", "source", "error", "duration_s", "ops": [i, ...]}],
                          "ops": [{"kind": "command", "argv": [...], "rc", "error", "duration_s",
                                   "stdout": "ops/0003.stdout", "stderr": "ops/0003.stderr"},
                                  {"kind": "file", "path", "error", "data": "ops/0004.data"},
                                  {"kind": "glob", "pattern", "matches": [...]},
                                  {"kind": "builtin", "name", "argv", "rc", "error", "stdout", ...}]}
    index.txt            the same for a person: each probe, the command it ran or the file it read, the
                         member that holds the output, the exit status or error (:func:`index_text`)
    ops/NNNN.stdout|.stderr|.data   raw bytes as collected

``load_bundle`` reads it back without extracting anything to disk and returns a
:class:`wizard.hosts.SnapshotHost`. ``index.txt`` is for reading only: nothing is replayed from it, and bundles
written before it existed load the same.
"""

from __future__ import annotations

import io
import json
import math
import shlex
import tarfile
import time
import zlib
from pathlib import Path
from typing import Any

from wizard import __version__
from wizard.hosts import MAX_OUTPUT_BYTES, Host, Operation, RecordingHost, SnapshotHost, command_key
from wizard.common import human_bytes
from wizard.i18n import Msg
from wizard.probes import TIMEOUT_ERROR, collect
from wizard.registry import PROBES, probes_named
from wizard.store import utcnow

BUNDLE_SCHEMA = 1
MAX_MEMBER_BYTES = MAX_OUTPUT_BYTES
"""Largest member read (32 MiB): ``capture`` records at most this much of any output
(:data:`wizard.hosts.MAX_OUTPUT_BYTES`), so a larger member is not a bringup bundle; refused from its tar
header, before its data is decompressed."""
MAX_BUNDLE_BYTES = 128 * 1024 * 1024
"""Most bytes read from all members together, and most bytes the manifest's entries replay in all (a member
named by several entries counts each time): 128 MiB uncompressed. A GPU server's capture is a few MiB, with
long kernel logs some tens."""
MAX_BUNDLE_MEMBERS = 20_000
"""Most members (files) in a bundle: one per recorded output, a few thousand on a large server."""
MAX_KERNEL_FILE_BYTES = 1024 * 1024
"""Largest file under ``/sys`` or ``/proc/sys`` a bundle may give (1 MiB): the kernel serves a sysfs attribute or a
sysctl in at most one page (4 or 64 KiB; binary attributes such as PCI config space or SMBIOS entries a few KiB), and
rules quote such a value whole in their findings, so a larger one is not a capture (a 24 MiB governor name took 3.5 GB)."""
MAX_MANIFEST_BYTES = 8 * 1024 * 1024
"""Largest ``manifest.json`` (8 MiB: about 450 bytes per operation; JSON objects cost about 25 times their
text in memory, so this keeps the manifest under ~250 MiB however it is written), and largest ``index.txt`` (a
shorter line or two per operation)."""


class BundleError(Exception):
    """The file is not a bundle bringup can read (named in the message)."""


async def capture(host: Host, out_path: Path, identity: dict[str, Any] | None = None,
                  probe_names: list[str] | None = None, plan: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run every probe (or ``probe_names``) on ``host`` and write the bundle to ``out_path``.

    ``plan``: the build's plan answers, stored in the manifest so ``check --snapshot`` judges the
    bundle against the same expectations.

    Returns the manifest. The file is written to a temporary name and renamed when complete.
    """
    rec = RecordingHost(host)
    names = list(dict.fromkeys(probe_names or list(PROBES)))
    t0 = time.monotonic()
    outputs = await collect(rec, probes_named(names), plan or {})
    manifest_probes: list[dict[str, Any]] = []
    for name in names:
        o = outputs[name]
        manifest_probes.append({"name": name, "title": PROBES[name].title, "source": o.source,
                                "error": o.error, "rc": o.rc, "duration_s": round(o.duration_s, 6)})
    members: dict[str, bytes] = {}
    ops_json = []
    for i, op in enumerate(rec.ops):
        d: dict[str, Any] = {"kind": op.kind, "error": op.error, "duration_s": round(op.duration_s, 6)}
        if op.kind in ("command", "builtin"):
            d.update(argv=op.argv, rc=op.rc)
            if op.kind == "builtin":
                d["name"] = op.key
            for stream in ("stdout", "stderr"):
                data = getattr(op, stream)
                name = f"ops/{i:04d}.{stream}"
                members[name] = data
                d[stream] = name
        elif op.kind == "file":
            d["path"] = op.path
            if op.data is not None:
                name = f"ops/{i:04d}.data"
                members[name] = op.data
                d["data"] = name
        elif op.kind == "glob":
            d.update(pattern=op.key, matches=op.matches)
        ops_json.append(d)
    # which ops belong to which probe: match by the argv/paths each probe's output names
    for p in manifest_probes:
        p["ops"] = [i for i, op in enumerate(rec.ops) if _op_in_probe(op, outputs[p["name"]])]
    manifest = {"schema": BUNDLE_SCHEMA, "bringup_version": __version__, "created": utcnow(),
                "host": dict(identity or {}), "wall_s": round(time.monotonic() - t0, 6),
                "plan": dict(plan or {}), "probes": manifest_probes, "ops": ops_json}
    out_path = Path(out_path)
    tmp = out_path.with_name(out_path.name + ".part")
    with tarfile.open(tmp, "w:gz") as tar:
        _add(tar, "manifest.json", json.dumps(manifest, indent=1, sort_keys=True).encode())
        _add(tar, INDEX_MEMBER, index_text(manifest, {n: len(b) for n, b in members.items()}).encode())
        for name, data in members.items():
            _add(tar, name, data)
    tmp.replace(out_path)
    return manifest


INDEX_MEMBER = "index.txt"
"""The bundle's readable table of contents (:func:`index_text`); never a probe output."""


def index_text(manifest: dict[str, Any], sizes: dict[str, int] | None = None) -> str:
    """The bundle's ``index.txt``: for each probe of ``manifest``, each command it ran (its argv, shell-quoted) or
    file it read, the bundle member holding that output (with its size in bytes when ``sizes``, member name ->
    bytes, gives it) and how it ended (exit status, error). Operations no probe claims are listed last.
    Plain ASCII apart from what the machine itself named (a path, an argument). Raises nothing on a manifest
    ``capture`` wrote."""
    host = manifest.get("host") or {}
    ops = manifest.get("ops") or []
    lines = [f"bringup capture of {host.get('hostname') or '?'} ({manifest.get('created', '?')}, bringup "
             f"{manifest.get('bringup_version', '?')})",
             "Each probe: what it ran or read -> the file in this bundle that holds the output -> how it ended.",
             "manifest.json holds the same for bringup (check --snapshot, report --snapshot, explain).", ""]

    def member(name: str | None) -> str:
        if not name:
            return ""
        size = (sizes or {}).get(name)
        return name + (f" ({size:,} bytes)" if size is not None else "")

    def op_line(d: dict[str, Any]) -> str:
        kind = d.get("kind")
        err = d.get("error") or ""
        if kind in ("command", "builtin"):
            what = ("run " if kind == "command" else f"builtin {d.get('name', '')}: ") + shlex.join(d.get("argv") or [])
            files = ", ".join(member(d.get(s)) for s in ("stdout", "stderr") if d.get(s))
            end = f"exit status {d['rc']}" if d.get("rc") is not None else "no exit status"
            return f"  {what}\n      -> {files or '(no output kept)'} -> {end}" + (f"; error: {err}" if err else "")
        if kind == "file":
            got = member(d.get("data"))
            return f"  read {d.get('path')}\n      -> {got or '(not read)'}" + (f" -> error: {err}" if err else "")
        if kind == "glob":
            found = d.get("matches") or []
            said = (", ".join(found) if len(found) <= 3 else f"{len(found)} matches (listed in manifest.json)") \
                if found else "no match"
            return f"  list {d.get('pattern')}\n      -> {said}"
        return f"  {kind}"

    claimed: set[int] = set()
    for p in manifest.get("probes") or []:
        title = p.get("title") or ""
        lines.append(f"{p.get('name')}" + (f": {title}" if title else ""))
        if p.get("error"):
            lines.append(f"  not collected: {p['error']}")
        elif not p.get("ops"):
            lines.append(f"  {p.get('source', '')}: no operation is attributed to it in manifest.json (those it "
                         f"made are listed at the end)")
        for i in p.get("ops") or []:
            if isinstance(i, int) and 0 <= i < len(ops):
                claimed.add(i)
                lines.append(op_line(ops[i]))
        lines.append("")
    rest = [i for i in range(len(ops)) if i not in claimed]
    if rest:
        lines.append("operations not attributed to a probe:")
        lines.extend(op_line(ops[i]) for i in rest)
        lines.append("")
    return "\n".join(lines)


NOT_COLLECTED_CAUSES = ("not_installed", "missing", "denied", "timed_out", "other")
"""The causes :func:`not_collected` groups by, in the order it gives them."""


def not_collected(manifest: dict[str, Any]) -> dict[str, list[str]]:
    """The probes of ``manifest`` that were not collected, grouped by cause for a person (``capture``'s last line),
    each what to name once, in the order met: ``not_installed`` the commands not found ("lspci"); ``missing`` the
    files that do not exist ("/proc/mdstat") and a plan's ``data_path`` ``df`` could not find; ``denied`` the files or
    commands refused (permission denied: root may read them); ``timed_out`` the commands or files that did not
    finish; ``other`` the error as recorded, with the probe's name ("no data_path in the plan (data_path_df)").
    Causes with nothing under them are left out. Raises nothing on a manifest ``capture`` wrote."""
    ops = manifest.get("ops") or []
    out: dict[str, list[str]] = {}

    def subject(p: dict[str, Any], err: str) -> str:
        """The file or command of the probe's operation that ended with ``err`` (else its first), else its source."""
        mine = [ops[i] for i in p.get("ops") or [] if isinstance(i, int) and 0 <= i < len(ops)]
        for d in sorted(mine, key=lambda d: d.get("error") != err):
            if d.get("path"):
                return str(d["path"])
            if d.get("argv") and d.get("kind") == "command":
                return str(d["argv"][0])
        source = str(p.get("source") or p.get("name") or "?")
        return source[2:].split()[0] if source.startswith("$ ") and source[2:].split() else source

    for p in manifest.get("probes") or []:
        err = str(p.get("error") or "")
        if not err:
            continue
        if err.startswith("command not found: "):
            cause, what = "not_installed", err.split(": ", 1)[1]
        elif err == "no such file":
            cause, what = "missing", subject(p, err)
        elif p.get("name") == "data_path_df" and err.startswith("df exited") and (manifest.get("plan") or {}).get(
                "data_path"):
            cause, what = "missing", str(manifest["plan"]["data_path"])
        elif err.startswith("permission denied"):
            cause, what = "denied", subject(p, err)
        elif err.startswith(("timed out after", TIMEOUT_ERROR)):
            cause, what = "timed_out", subject(p, err)
        else:  # the error in the operator's language where it is one of bringup's own ("no data_path in the plan")
            from wizard.i18n import gettext

            # the probe's name after it in the reader's brackets (walk 42 #E: "规划中没有 data_path (data_path_df)")
            cause, what = "other", gettext("{error} (probe {name})").format(error=gettext(err), name=p.get("name"))
        if what not in out.setdefault(cause, []):
            out[cause].append(what)
    return {c: out[c] for c in NOT_COLLECTED_CAUSES if c in out}


def _op_in_probe(op: Operation, out: Any) -> bool:
    if op.kind in ("command", "builtin"):
        return out.source.endswith(" ".join(op.argv or [])) or (op.kind == "builtin" and op.key == out.name)
    if op.kind == "file":
        return op.path == out.source or op.path in out.files
    if op.kind == "glob":
        return any(m in out.files for m in op.matches) or op.key in out.source
    return False


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mtime = int(time.time())
    info.mode = 0o644
    tar.addfile(info, io.BytesIO(data))


def load_bundle(path: Path | str) -> tuple[SnapshotHost, dict[str, Any]]:
    """Read a bundle into a :class:`SnapshotHost` (nothing is extracted to disk).

    Members are read once each, in archive order, within :data:`MAX_MEMBER_BYTES` each,
    :data:`MAX_BUNDLE_BYTES` in all and :data:`MAX_BUNDLE_MEMBERS` members (``manifest.json`` and ``index.txt``
    within :data:`MAX_MANIFEST_BYTES`; ``index.txt`` is optional and never replayed), so a small file that expands to gigabytes is refused early; every manifest
    field is checked for its type, and a ``/sys`` or ``/proc/sys`` file past :data:`MAX_KERNEL_FILE_BYTES` is refused.

    Raises:
        BundleError: not a gzip tar, no manifest, an unknown schema, past a size limit, or a malformed
            entry (the message names the file and what is wrong).
    """
    path = Path(path)
    members = _read_members(path)
    members.pop(INDEX_MEMBER, None)  # for a person to read (capture writes it; older bundles have none): never replayed
    if "manifest.json" not in members:
        raise BundleError(Msg("{path}: member manifest.json is missing", path=str(path)))
    try:
        manifest = json.loads(members.pop("manifest.json"))
    except ValueError as exc:
        raise BundleError(f"{path}: manifest.json is not JSON: {exc}") from None
    except RecursionError:
        raise BundleError(f"{path}: manifest.json is nested too deeply to be a bringup manifest") from None
    if not isinstance(manifest, dict) or type(manifest.get("schema")) is not int \
            or manifest.get("schema") != BUNDLE_SCHEMA:
        schema = manifest.get("schema") if isinstance(manifest, dict) else "?"
        raise BundleError(f"{path}: unknown bundle schema {json.dumps(schema)[:40]}"
                          f" (this bringup reads schema {BUNDLE_SCHEMA})")
    for key in ("host", "plan"):
        value = manifest.setdefault(key, {})
        if not isinstance(value, dict):
            raise BundleError(f"{path}: manifest field {key!r} is not an object")
    bad = next((k for k, v in manifest["host"].items() if not isinstance(v, (str, int, float, bool, type(None)))),
               None)
    if bad is not None:
        raise BundleError(f"{path}: manifest field 'host' {bad!r} is not a string or number")
    ops_json = manifest.get("ops", [])
    if not isinstance(ops_json, list):
        raise BundleError(f"{path}: malformed manifest entry: 'ops' is not a list")
    if not isinstance(manifest.get("probes", []), list):
        raise BundleError(f"{path}: malformed manifest entry: 'probes' is not a list")
    ops: list[Operation] = []
    replayed = 0
    for i, d in enumerate(ops_json):
        try:
            op = _operation(d, members)
        except _Malformed as exc:
            raise BundleError(f"{path}: malformed manifest entry: ops[{i}]: {exc}") from None
        if op.kind == "file" and (op.path or "").startswith(("/sys/", "/proc/sys/")) \
                and len(op.data or b"") > MAX_KERNEL_FILE_BYTES:
            raise BundleError(f"{path}: ops[{i}] gives {op.path} {human_bytes(len(op.data or b''))}: the kernel serves "
                              f"such a file in one page (a few KiB): not a capture")
        replayed += len(op.stdout) + len(op.stderr) + len(op.data or b"")
        if replayed > MAX_BUNDLE_BYTES:  # many entries naming one big member: each replay is decoded and parsed
            raise BundleError(f"{path}: its entries replay more than {human_bytes(MAX_BUNDLE_BYTES)} of output "
                              f"in all (ops[{i}] and before): not a bringup bundle")
        ops.append(op)
    host = manifest["host"]
    return SnapshotHost(ops, name=str(host.get("hostname") or path.name), identity=host), manifest


class _Malformed(Exception):
    """One manifest entry is not what ``capture`` writes (the message says which field)."""


def _read_members(path: Path) -> dict[str, bytes]:
    """Every regular member of the bundle, name -> bytes, within the size and count limits."""
    out: dict[str, bytes] = {}
    total = count = 0
    try:
        with tarfile.open(path, "r|gz") as tar:  # a stream: members in order, each decompressed once
            for m in tar:
                count += 1
                if count > MAX_BUNDLE_MEMBERS:
                    raise BundleError(f"{path}: more than {MAX_BUNDLE_MEMBERS:,} members: not a bringup bundle")
                if not m.isfile():
                    continue
                cap = MAX_MANIFEST_BYTES if m.name in ("manifest.json", INDEX_MEMBER) else MAX_MEMBER_BYTES
                if m.size > cap:
                    raise BundleError(f"{path}: member {m.name} is {human_bytes(m.size)}, more than "
                                      f"{human_bytes(cap)} (capture records at most that much): not a bringup bundle")
                total += m.size
                if total > MAX_BUNDLE_BYTES:
                    raise BundleError(f"{path}: members add up to more than {human_bytes(MAX_BUNDLE_BYTES)}: "
                                      f"not a bringup bundle")
                f = tar.extractfile(m)
                if f is not None:
                    out[m.name] = f.read()  # m.size bytes: checked above
    except BundleError:
        raise
    except (OSError, tarfile.TarError, EOFError, zlib.error) as exc:
        if not out:
            raise BundleError(Msg("{path} is not a bringup capture bundle (.tar.gz): {why}", path=str(path),
                                  why=str(exc))) from None
        raise BundleError(Msg("{path}: damaged archive: {why}", path=str(path), why=str(exc))) from None
    return out


def _operation(d: Any, members: dict[str, bytes]) -> Operation:
    """One manifest ``ops`` entry -> :class:`Operation`, its member names resolved.

    Raises:
        _Malformed: a field of the wrong type, a missing required field or member.
    """
    if not isinstance(d, dict):
        raise _Malformed(f"an entry is {type(d).__name__}, not an object")

    def text(key: str, default: str | None = "") -> str:
        v = d.get(key, default)
        if not isinstance(v, str):
            raise _Malformed(f"{key!r} is {'missing' if v is None else type(v).__name__ + ', not a string'}")
        return v

    def strings(key: str) -> list[str]:
        v = d.get(key) or []
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise _Malformed(f"{key!r} is not a list of strings")
        return v

    def member(key: str) -> bytes | None:
        name = d.get(key)
        if name in (None, ""):
            return None
        if not isinstance(name, str):
            raise _Malformed(f"{key!r} is {type(name).__name__}, not a member name")
        if name not in members:
            raise _Malformed(f"member {name} is missing")
        return members[name]

    rc = d.get("rc")
    if rc is not None and type(rc) is not int:
        raise _Malformed(f"'rc' is {type(rc).__name__}, not an integer")
    duration = d.get("duration_s", 0)
    if type(duration) not in (int, float) or not math.isfinite(duration):
        raise _Malformed(f"'duration_s' is {json.dumps(duration)[:40]}, not a number of seconds")
    kind = d.get("kind")
    if kind in ("command", "builtin"):
        argv = strings("argv")
        if kind == "command" and not argv:
            raise _Malformed("a command entry without argv")
        key = command_key(argv) if kind == "command" else text("name")
        return Operation(kind, key, argv=argv, rc=rc, error=text("error"), duration_s=float(duration),
                         stdout=member("stdout") or b"", stderr=member("stderr") or b"")
    if kind == "file":
        p = text("path", None)
        return Operation("file", p, path=p, error=text("error"), duration_s=float(duration), data=member("data"))
    if kind == "glob":
        return Operation("glob", text("pattern", None), matches=strings("matches"))
    raise _Malformed(f"unknown entry kind {json.dumps(kind)[:40]}")
