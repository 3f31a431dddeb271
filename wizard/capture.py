"""Capture bundles: every probe's raw output in one ``.tar.gz``, replayable offline.

Layout of a bundle::

    manifest.json        {"schema": 1, "bringup_version", "created", "host": {...identity},
                          "probes": [{"name", "title", "source", "error", "duration_s", "ops": [i, ...]}],
                          "ops": [{"kind": "command", "argv": [...], "rc", "error", "duration_s",
                                   "stdout": "ops/0003.stdout", "stderr": "ops/0003.stderr"},
                                  {"kind": "file", "path", "error", "data": "ops/0004.data"},
                                  {"kind": "glob", "pattern", "matches": [...]},
                                  {"kind": "builtin", "name", "argv", "rc", "error", "stdout", ...}]}
    ops/NNNN.stdout|.stderr|.data   raw bytes as collected

``load_bundle`` reads it back without extracting anything to disk and returns a
:class:`wizard.hosts.SnapshotHost`.
"""

from __future__ import annotations

import io
import json
import tarfile
import time
from pathlib import Path
from typing import Any

from wizard import __version__
from wizard.hosts import Host, Operation, RecordingHost, SnapshotHost, command_key
from wizard.probes import collect
from wizard.registry import PROBES, probes_named
from wizard.store import utcnow

BUNDLE_SCHEMA = 1
MAX_MEMBER_BYTES = 64 * 1024 * 1024


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
        for name, data in members.items():
            _add(tar, name, data)
    tmp.replace(out_path)
    return manifest


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

    Raises:
        BundleError: not a gzip tar, no manifest, an unknown schema, or malformed entries.
    """
    path = Path(path)
    try:
        tar = tarfile.open(path, "r:gz")
    except (OSError, tarfile.TarError) as exc:
        raise BundleError(f"{path} is not a bringup capture bundle (.tar.gz): {exc}") from None
    with tar:
        def read(name: str) -> bytes:
            try:
                m = tar.getmember(name)
            except KeyError:
                raise BundleError(f"{path}: member {name} is missing") from None
            if not m.isfile() or m.size > MAX_MEMBER_BYTES:
                raise BundleError(f"{path}: member {name} is not a regular file of a sane size")
            f = tar.extractfile(m)
            assert f is not None
            return f.read()

        try:
            manifest = json.loads(read("manifest.json"))
        except ValueError as exc:
            raise BundleError(f"{path}: manifest.json is not JSON: {exc}") from None
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise BundleError(f"{path}: damaged archive: {exc}") from None
        if not isinstance(manifest, dict) or manifest.get("schema") != BUNDLE_SCHEMA:
            raise BundleError(f"{path}: unknown bundle schema {manifest.get('schema') if isinstance(manifest, dict) else '?'}"
                              f" (this bringup reads schema {BUNDLE_SCHEMA})")
        ops: list[Operation] = []
        try:
            for d in manifest.get("ops", []):
                kind = d["kind"]
                if kind in ("command", "builtin"):
                    argv = [str(a) for a in d.get("argv") or []]
                    if kind == "command" and not argv:
                        raise ValueError("a command entry without argv")
                    key = command_key(argv) if kind == "command" else str(d.get("name", ""))
                    ops.append(Operation(kind, key, argv=argv, rc=d.get("rc"), error=d.get("error", ""),
                                         duration_s=float(d.get("duration_s", 0)),
                                         stdout=read(d["stdout"]) if d.get("stdout") else b"",
                                         stderr=read(d["stderr"]) if d.get("stderr") else b""))
                elif kind == "file":
                    ops.append(Operation("file", d["path"], path=d["path"], error=d.get("error", ""),
                                         duration_s=float(d.get("duration_s", 0)),
                                         data=read(d["data"]) if d.get("data") else None))
                elif kind == "glob":
                    ops.append(Operation("glob", d["pattern"], matches=[str(m) for m in d.get("matches", [])]))
                else:
                    raise ValueError(f"unknown entry kind {kind!r}")
        except (KeyError, TypeError, ValueError) as exc:
            raise BundleError(f"{path}: malformed manifest entry: {exc!r}") from None
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise BundleError(f"{path}: damaged archive: {exc}") from None
    for key in ("host", "plan"):
        value = manifest.setdefault(key, {})
        if not isinstance(value, dict):
            raise BundleError(f"{path}: manifest field {key!r} is not an object")
    host = manifest["host"]
    return SnapshotHost(ops, name=str(host.get("hostname") or path.name), identity=host), manifest
