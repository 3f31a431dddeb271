"""Capture bundles: manifest contents, replay through SnapshotHost, and what a partial bundle yields."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
import tarfile

import pytest

import steps
from tests.conftest import DEVVM_BUNDLE, bringup_cmd, env_for_cli
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
    # issue 11: bad types ended in "internal error ... this is a bug" (or were taken: true == 1 in Python)
    ({"schema": True, "ops": []}, "unknown bundle schema true"),
    ({"schema": 1, "ops": [{"kind": "file", "path": ["/etc/os-release"]}]}, "ops[0]: 'path' is list, not a string"),
    ({"schema": 1, "ops": [{"kind": "command", "argv": "lspci", "rc": 0}]}, "'argv' is not a list of strings"),
    ({"schema": 1, "ops": [{"kind": "command", "argv": ["x"], "stdout": ["ops/a"]}]}, "'stdout' is list, not a member"),
    ({"schema": 1, "ops": [{"kind": "command", "argv": ["lspci"], "rc": "zero"}]}, "'rc' is str, not an integer"),
    ({"schema": 1, "ops": [{"kind": "command", "argv": ["lspci"], "rc": True}]}, "'rc' is bool, not an integer"),
    ({"schema": 1, "ops": [{"kind": "file", "path": "/x", "duration_s": "fast"}]}, "'duration_s' is \"fast\""),
    ({"schema": 1, "ops": [{"kind": "glob", "pattern": "/sys/*", "matches": 5}]}, "'matches' is not a list of strings"),
    ({"schema": 1, "ops": {"a": 1}}, "'ops' is not a list"),
    ({"schema": 1, "ops": ["lspci"]}, "ops[0]: an entry is str, not an object"),
    ({"schema": 1, "ops": [], "host": {"hostname": ["a"]}}, "'host' 'hostname' is not a string or number"),
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


def _write_bundle(p, members: dict, *, level: int = 1):
    with tarfile.open(p, "w:gz", compresslevel=level) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return p


def _entries(n: int, member: str) -> list[dict]:
    return [{"kind": "command", "argv": ["cmd", str(i)], "rc": 0, "stdout": member} for i in range(n)]


def test_deeply_nested_manifest_is_refused_not_an_internal_error(tmp_path):
    p = _write_bundle(tmp_path / "n.tar.gz", {"manifest.json": b'{"schema": 1, "ops": ' + b"[" * 100000 + b"]" * 100000 + b"}"})
    with pytest.raises(BundleError, match="nested too deeply"):
        load_bundle(p)
    r = subprocess.run([sys.executable, "-m", "wizard.cli", "check", "--snapshot", str(p)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 3 and "bringup: error:" in r.stderr and "internal error" not in r.stderr


def test_many_entries_naming_one_member_are_refused_in_bounded_memory(tmp_path):
    """issue 11: an 85 KB bundle whose 300 entries named one 60 MiB member ran to 16 GB: each entry read the member
    again. Now a member is read once, and what the entries replay counts against MAX_BUNDLE_BYTES."""
    import tracemalloc

    from wizard.capture import MAX_BUNDLE_BYTES

    size = 2 * 2 ** 20
    n = MAX_BUNDLE_BYTES // size + 1
    p = _write_bundle(tmp_path / "b.tar.gz", {"manifest.json": json.dumps({"schema": 1, "ops": _entries(n, "ops/big")}).encode(),
                                              "ops/big": bytes(size)})
    tracemalloc.start()
    try:
        with pytest.raises(BundleError, match="replay more than 128 MiB"):
            load_bundle(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2 ** 20  # the member once (2 MiB), not n times (130 MiB)
    ok = _write_bundle(tmp_path / "ok.tar.gz", {"manifest.json": json.dumps({"schema": 1, "ops": _entries(n - 2, "ops/big")}).encode(),
                                                "ops/big": b"x" * size})
    host, _ = load_bundle(ok)
    outs = [op.stdout for op in host._ops.values()]
    assert len(outs) == n - 2 and all(o is outs[0] for o in outs)  # one bytes object, shared


def test_a_member_larger_than_capture_writes_is_refused_from_its_header(tmp_path):
    """A member past MAX_MEMBER_BYTES is refused from its tar header, before its data is decompressed (a 4 GiB
    member ahead of the manifest took 21 s to refuse). The header here claims 4 GiB; the data is not there."""
    from wizard.capture import MAX_MEMBER_BYTES

    info = tarfile.TarInfo("ops/huge")
    info.size = 4 * 1024 ** 3
    p = tmp_path / "h.tar.gz"
    import gzip

    p.write_bytes(gzip.compress(info.tobuf() + bytes(4096)))
    with pytest.raises(BundleError, match=r"member ops/huge is 4 GiB, more than 32 MiB"):
        load_bundle(p)
    assert MAX_MEMBER_BYTES == 32 * 2 ** 20
    just_over = _write_bundle(tmp_path / "o.tar.gz", {"ops/x": bytes(MAX_MEMBER_BYTES + 1),
                                                      "manifest.json": b'{"schema": 1, "ops": []}'})
    with pytest.raises(BundleError, match="more than 32 MiB"):
        load_bundle(just_over)


def test_a_bundle_of_too_many_members_is_refused(tmp_path):
    from wizard.capture import MAX_BUNDLE_MEMBERS

    p = tmp_path / "many.tar.gz"
    with tarfile.open(p, "w:gz", compresslevel=1) as tar:
        for i in range(MAX_BUNDLE_MEMBERS + 1):
            tar.addfile(tarfile.TarInfo(f"ops/{i}"), io.BytesIO(b""))
    with pytest.raises(BundleError, match="more than 20,000 members"):
        load_bundle(p)


def test_bundle_bombs_stay_under_512_mib_in_a_child_process(tmp_path):
    """The CLI on the bombs of issue 11 (sizes cut to the suite's): refused, exit 3, the child's peak RSS well under
    512 MiB, never an internal error."""
    from tests.childproc import run_measured

    bomb = _write_bundle(tmp_path / "bomb.tar.gz", {"manifest.json": json.dumps({"schema": 1, "ops": _entries(300, "ops/big")}).encode(),
                                                    "ops/big": bytes(20 * 2 ** 20)})
    r = run_measured(["check", "--snapshot", str(bomb)])
    assert r.rc == 3 and "replay more than 128 MiB" in r.stderr and "internal error" not in r.stderr
    assert r.maxrss_mib < 512


def test_a_kernel_file_larger_than_the_kernel_serves_is_refused(tmp_path):
    """fuzz (issue 11): a bundle whose one-word sysfs file (the cpuidle governor) was 24 MiB took 3.5 GB to check:
    rules quote such a value whole. sysfs and sysctl files are served in one page; past 1 MiB the bundle is refused."""
    from wizard.capture import MAX_KERNEL_FILE_BYTES

    with tarfile.open(DEVVM_BUNDLE, "r:gz") as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}
    manifest = json.loads(members["manifest.json"])
    (i, op), = [(i, o) for i, o in enumerate(manifest["ops"]) if o.get("path") == "/sys/devices/system/cpu/cpuidle/current_governor_ro"]
    members[op["data"]] = b"menu\n" * (MAX_KERNEL_FILE_BYTES // 5 + 1)
    with pytest.raises(BundleError, match=rf"ops\[{i}\] gives /sys/devices/system/cpu/cpuidle/current_governor_ro 1.0 MiB"):
        load_bundle(_write_bundle(tmp_path / "big.tar.gz", members))
    members[op["data"]] = b"menu\n" * 800  # 4,000 bytes: a page
    host, _ = load_bundle(_write_bundle(tmp_path / "ok.tar.gz", members))
    assert asyncio.run(host.read(op["path"])).data == b"menu\n" * 800


def test_index_txt_of_a_real_capture_names_each_probes_command_or_file_member_and_status(tmp_path):
    """Issue 15: `bringup capture` of this machine writes index.txt next to manifest.json: every probe, the command
    it ran (shell-quoted argv) or the file it read, the member holding the output (with its size) and how it ended."""
    import shlex

    out = tmp_path / "node.tar.gz"
    r = subprocess.run(bringup_cmd("--state", str(tmp_path / "s"), "capture", "-o", str(out)), capture_output=True,
                       text=True, timeout=300, env=env_for_cli())
    assert r.returncode == 0, r.stderr
    with tarfile.open(out) as tar:
        names = tar.getnames()
        sizes = {m.name: m.size for m in tar.getmembers()}
        manifest = json.loads(tar.extractfile("manifest.json").read())
        index = tar.extractfile("index.txt").read().decode()
    assert names[:2] == ["manifest.json", "index.txt"]
    assert index.startswith(f"bringup capture of {manifest['host']['hostname']} ({manifest['created']}")
    blocks = {b.split("\n", 1)[0].split(":", 1)[0]: b for b in index.split("\n\n")[1:] if b.strip()}
    assert {p["name"] for p in manifest["probes"]} <= set(blocks)
    for p in manifest["probes"]:
        block = blocks[p["name"]]
        assert block.startswith(f"{p['name']}: {p['title']}\n")
        if p["error"]:
            assert f"  not collected: {p['error']}" in block
        for i in p["ops"]:
            op = manifest["ops"][i]
            if op["kind"] == "command":
                assert f"  run {shlex.join(op['argv'])}\n" in block
                assert f"{op['stdout']} ({sizes[op['stdout']]:,} bytes)" in block
                assert f"exit status {op['rc']}" in block if op["rc"] is not None else "no exit status" in block
            elif op["kind"] == "file":
                assert f"  read {op['path']}\n" in block
                if op.get("data"):
                    assert f"-> {op['data']} ({sizes[op['data']]:,} bytes)" in block
                else:
                    assert f"-> (not read) -> error: {op['error']}" in block
    members = [n for n in names if n not in ("manifest.json", "index.txt")]
    assert members and all(n in index for n in members)  # every output in the bundle is findable from the index
    host, loaded = load_bundle(out)  # and the bundle loads as before: index.txt is not an output
    assert loaded == manifest and len(host._ops) == len({(op["kind"], op.get("path") or op.get("pattern")
                                                          or " ".join(op.get("argv") or [])) for op in manifest["ops"]})


def test_not_collected_groups_the_probes_by_cause():
    """What `capture` says it could not collect: the commands not installed, the paths missing (a planned data_path
    df could not find too), what needs root, what timed out, and any other error as recorded, each named once."""
    from wizard.capture import not_collected

    def probe(name, source, error, ops=()):
        return {"name": name, "title": name, "source": source, "error": error, "ops": list(ops)}

    ops = [{"kind": "command", "argv": ["lspci", "-vvv"], "rc": 127, "error": "command not found: lspci"},
           {"kind": "file", "path": "/proc/mdstat", "error": "no such file"},
           {"kind": "file", "path": "/sys/firmware/dmi/tables/DMI", "error": "permission denied"},
           {"kind": "command", "argv": ["ipmitool", "sel", "elist"], "rc": None, "error": "timed out after 15 s"},
           {"kind": "command", "argv": ["df", "-P", "-T", "-B1", "--", "/raid"], "rc": 1, "error": ""}]
    manifest = {"plan": {"data_path": "/raid"}, "ops": ops, "probes": [
        probe("lspci_vvv", "$ lspci -vvv", "command not found: lspci", [0]),
        probe("lspci_version", "$ lspci --version", "command not found: lspci"),
        probe("mdstat", "/proc/mdstat", "no such file", [1]),
        probe("dmi", "/sys/firmware/dmi/tables/DMI", "permission denied", [2]),
        probe("ipmitool_sel", "$ ipmitool sel elist", "timed out after 15 s", [3]),
        probe("data_path_df", "$ df -P -T -B1 -- /raid", "df exited with status 1", [4]),
        probe("nvml", "NVML through pynvml", "NVML probe printed no JSON (exit status 1)"),
        probe("cmdline", "/proc/cmdline", "")]}
    assert not_collected(manifest) == {"not_installed": ["lspci"], "missing": ["/proc/mdstat", "/raid"],
                                       "denied": ["/sys/firmware/dmi/tables/DMI"], "timed_out": ["ipmitool"],
                                       "other": ["NVML probe printed no JSON (exit status 1) (probe nvml)"]}
    assert not_collected({"probes": [probe("cmdline", "/proc/cmdline", "")]}) == {}


def test_capture_says_what_it_did_not_collect_by_cause_not_probe_id(tmp_path):
    """The new-operator review: `capture -o` ended with "not collected here: modules, nvidia_driver_version,
    lspci_version, nvidia_smi_l, data_path_df, ..." (probe ids, no reasons). It says why, in words, by cause: the
    tools not installed (here a PATH with df alone) and the paths missing (a data_path that does not exist); in
    Chinese as well. index.txt keeps each probe's record."""
    import os
    import shutil

    state, out = str(tmp_path / "s"), tmp_path / "node.tar.gz"
    env = {**env_for_cli(), "COLUMNS": "80"}
    assert subprocess.run(bringup_cmd("--state", state, "plan", "data_path=/nonexistent-raid"), capture_output=True,
                          text=True, timeout=60, env=env).returncode == 0
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(shutil.which("df") or "/bin/df", bin_dir / "df")
    env["PATH"] = str(bin_dir)
    r = subprocess.run(bringup_cmd("--state", state, "capture", "-o", str(out)), capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    said = " ".join(r.stdout.split())
    assert "; not collected here: tool not installed: " in said and "lspci, nvidia-smi" in said, said
    assert "path missing: " in said and "/nonexistent-raid" in said.split("path missing: ", 1)[1], said
    assert not any(n in said for n in ("nvidia_smi_l", "lspci_version", "data_path_df")), said
    assert all(len(ln) <= 80 for ln in r.stdout.splitlines())
    with tarfile.open(out) as tar:
        index = tar.extractfile("index.txt").read().decode()
    assert "lspci_version: " in index and "  not collected: command not found: lspci" in index
    zh = subprocess.run(bringup_cmd("--lang", "zh_CN", "--state", state, "capture", "-o", str(out)),
                        capture_output=True, text=True, timeout=300, env=env)
    zh_said = "".join(zh.stdout.split())  # Chinese breaks between any two characters
    assert "未安装的工具：lspci、" in zh_said and "路径不存在：" in zh_said, zh.stdout
    assert "/nonexistent-raid" in zh_said.split("路径不存在：", 1)[1], zh.stdout
    assert "；路径不存在：" in zh_said and "; " not in zh.stdout, zh.stdout  # the causes' joiner too (walk 24 #10)


def test_a_bundle_without_index_txt_loads_the_same(tmp_path):
    """Bundles from before index.txt (the dev VM's) load; stripping index.txt from a new one changes nothing."""
    with tarfile.open(DEVVM_BUNDLE) as tar:
        assert "index.txt" not in tar.getnames()
    load_bundle(DEVVM_BUNDLE)
    out = tmp_path / "b.tar.gz"
    asyncio.run(capture(LocalHost(), out, {"hostname": "h"}, ["cmdline", "df", "numa"]))
    with tarfile.open(out) as tar:
        members = {m.name: tar.extractfile(m).read() for m in tar.getmembers()}
    assert "index.txt" in members
    without = _write_bundle(tmp_path / "old.tar.gz", {n: d for n, d in members.items() if n != "index.txt"})
    (h1, m1), (h2, m2) = load_bundle(out), load_bundle(without)
    assert m1 == m2 and h1._ops == h2._ops


def test_index_txt_is_never_replayed_and_is_bounded(tmp_path):
    """index.txt is for a person: a manifest entry naming it as an output is refused (it is not an output), and one
    larger than a manifest may be is refused from its tar header."""
    from wizard.capture import MAX_MANIFEST_BYTES

    named = _write_bundle(tmp_path / "n.tar.gz", {
        "manifest.json": json.dumps({"schema": 1, "ops": [{"kind": "command", "argv": ["lspci"], "rc": 0,
                                                             "stdout": "index.txt"}]}).encode(),
        "index.txt": b"lspci output?\n"})
    with pytest.raises(BundleError, match="ops\\[0\\]: member index.txt is missing"):
        load_bundle(named)
    big = _write_bundle(tmp_path / "big.tar.gz", {"index.txt": bytes(MAX_MANIFEST_BYTES + 1),
                                                  "manifest.json": b'{"schema": 1, "ops": []}'})
    with pytest.raises(BundleError, match="member index.txt is 8.0 MiB, more than 8 MiB"):
        load_bundle(big)
