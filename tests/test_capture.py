"""Capture bundles: manifest contents, replay through SnapshotHost, and what a partial bundle yields."""

from __future__ import annotations

import asyncio
import io
import json
import tarfile

import pytest

import steps
from tests.conftest import DEVVM_BUNDLE
from wizard.capture import BUNDLE_SCHEMA, BundleError, capture, load_bundle
from wizard.engine import checked_steps, run_checks
from wizard.hosts import LocalHost, SnapshotHost
from wizard.model import Verdict
from wizard.registry import PROBES as REGISTRY


def test_manifest_has_schema_identity_and_per_probe_records(tmp_path):
    out = tmp_path / "b.tar.gz"
    manifest = asyncio.run(capture(LocalHost(), out, {"hostname": "h"}, ["cmdline", "df", "numa"],
                                   plan={"gpu_count": 8}))
    with tarfile.open(out) as tar:
        names = tar.getnames()
        on_disk = json.loads(tar.extractfile("manifest.json").read())
    assert on_disk == manifest and manifest["schema"] == BUNDLE_SCHEMA
    assert manifest["host"] == {"hostname": "h"} and manifest["plan"] == {"gpu_count": 8}
    probes = {p["name"]: p for p in manifest["probes"]}
    assert set(probes) == {"cmdline", "df", "numa"}
    df_ops = [manifest["ops"][i] for i in probes["df"]["ops"]]
    assert df_ops[0]["argv"] == ["df", "-P", "-T", "-B1", "-l"] and df_ops[0]["rc"] == 0
    assert df_ops[0]["stdout"] in names and df_ops[0]["duration_s"] >= 0
    cmd_ops = [manifest["ops"][i] for i in probes["cmdline"]["ops"]]
    assert cmd_ops[0]["path"] == "/proc/cmdline" and cmd_ops[0]["data"] in names


def test_replay_gives_the_recorded_output():
    host, manifest = load_bundle(DEVVM_BUNDLE)
    assert manifest["host"]["hostname"] == "vm"
    r = asyncio.run(host.read("/proc/cmdline"))
    assert r.ok and "console=ttyS0" in r.text
    missing = asyncio.run(host.read("/etc/shadow"))
    assert not missing.ok and missing.error == "not in snapshot"
    res = asyncio.run(host.run(["df", "-P", "-T", "-B1", "-l"]))
    assert res.rc == 0 and b"ext4" in res.stdout


def test_every_known_probe_is_in_the_dev_vm_bundle():
    _, manifest = load_bundle(DEVVM_BUNDLE)
    assert {p["name"] for p in manifest["probes"]} == set(REGISTRY) - {n for n in REGISTRY if n.startswith("test_")}


def test_a_bundle_without_file_contents_gives_unknown_not_guesses():
    host, manifest = load_bundle(DEVVM_BUNDLE)
    ops = [op for op in host._ops.values() if op.kind not in ("file",)]
    stripped = SnapshotHost(ops, "vm")
    sel = checked_steps(steps.STAGES)
    results, _ = asyncio.run(run_checks(stripped, sel, {"numa_nodes": 2}))
    verdicts = {f.id: f.verdict for fs in results.values() for f in fs}
    assert verdicts["bios.numa"] is Verdict.UNKNOWN  # not "0 NUMA nodes; the plan expects 2"
    assert verdicts["health.gpu_pci"] is Verdict.UNKNOWN  # not "no NVIDIA GPU"
    assert verdicts["os.release"] is Verdict.UNKNOWN and verdicts["os.memory"] is Verdict.UNKNOWN
    ops_no_glob = [op for op in ops if op.kind != "glob"]
    results, _ = asyncio.run(run_checks(SnapshotHost(ops_no_glob, "vm"), sel, {}))
    verdicts = {f.id: f.verdict for fs in results.values() for f in fs}
    assert verdicts["os.nouveau"] is Verdict.UNKNOWN  # no /proc/modules and /sys/module not captured


def _bundle_with_manifest(tmp_path, manifest: dict):
    p = tmp_path / "m.tar.gz"
    data = json.dumps(manifest).encode()
    with tarfile.open(p, "w:gz") as tar:
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return p


@pytest.mark.parametrize("manifest, why", [
    ({"schema": 99, "ops": []}, "unknown bundle schema"),
    ({"schema": 1, "ops": [{"kind": "command"}]}, "malformed manifest entry"),
    ({"schema": 1, "ops": [], "host": "abc"}, "'host' is not an object"),
    ({"schema": 1, "ops": [], "plan": "xyz"}, "'plan' is not an object"),
    ({"schema": 1, "ops": [{"kind": "file", "path": "/x", "data": "ops/missing"}]}, "missing"),
])
def test_bad_bundles_are_refused_with_a_reason(tmp_path, manifest, why):
    with pytest.raises(BundleError) as e:
        load_bundle(_bundle_with_manifest(tmp_path, manifest))
    assert why in str(e.value)


def test_truncated_bundle_is_refused(tmp_path):
    data = DEVVM_BUNDLE.read_bytes()
    cut = tmp_path / "cut.tar.gz"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(BundleError):
        load_bundle(cut)
