"""Every real case in tests/data/cases (with its verdict and public source in expected.csv) through
`bringup explain`, and a capture bundle assembled from several of them through `check --snapshot`.

The verdicts come from general rules with sourced thresholds, not from matching these files.
"""

from __future__ import annotations

import asyncio
import csv
import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import DATA, ROOT, bringup_cmd, env_for_cli
from wizard.capture import capture
from wizard.explain import explain_text
from wizard.hosts import CommandResult, LocalHost
from wizard.registry import PROBES as REGISTRY

CASES = DATA / "cases"


def rows() -> list[dict[str, str]]:
    with open(CASES / "expected.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def said(findings) -> str:
    return " ".join(f"{f.message} {f.subject} {f.remedy} {' '.join(f.evidence)}" for f in findings).lower()


@pytest.mark.parametrize("row", rows(), ids=lambda r: r["file"])
def test_case_gets_its_expected_verdict_and_cause(row):
    text = (CASES / row["file"]).read_text(errors="replace")
    r = explain_text(text, row["file"])
    allowed = set(row["verdict"].split("|"))
    assert r.kind is not None, f"{row['file']}: not recognised"
    assert r.verdict.value in allowed, (row["file"], r.kind, r.verdict, [(f.id, f.verdict.value, f.message) for f in r.findings])
    mentions = [m for m in row["mentions"].split("|") if m]
    if mentions:
        assert any(m.lower() in said(r.findings) for m in mentions), (row["file"], mentions)
    for f in r.findings:
        if f.verdict.value in ("fail", "warn"):
            assert f.remedy, (row["file"], f.id, "a problem without a remedy")


def test_explain_cli_over_all_cases_at_once_matches_the_contract():
    import jsonschema

    files = [str(CASES / r["file"]) for r in rows()]
    p = subprocess.run(bringup_cmd("explain", "--json", *files), capture_output=True, text=True, env=env_for_cli(),
                       cwd=ROOT, timeout=120)
    doc = json.loads(p.stdout)
    schema_dir = ROOT / "assets" / "schema"
    check_schema = json.loads((schema_dir / "check.schema.json").read_text())
    explain_schema = json.loads((schema_dir / "explain.schema.json").read_text())
    from referencing import Registry, Resource

    registry = Registry().with_resource(check_schema["$id"], Resource.from_contents(check_schema))
    jsonschema.Draft202012Validator(explain_schema, registry=registry).validate(doc)
    assert [i["input"] for i in doc["inputs"]] == files
    assert doc["verdict"] == "fail" and p.returncode == 2  # several cases fail


def test_unknown_input_says_what_bringup_reads():
    r = explain_text("the quick brown fox\njumps over the lazy dog\n")
    assert r.kind is None and r.verdict.value == "unknown"
    assert "nvidia-smi -q -x" in r.findings[0].remedy and "dmesg" in r.findings[0].remedy


# ----------------------------------------------------------------------------------------------
# A node assembled from real cases: each command probe answers with a case file's text, the PCI
# bus is a (named synthetic) 8-GPU sysfs tree; captured into a real bundle; judged with check --snapshot.

NODE = {
    ("nvidia-smi", "-q", "-x"): "nvidia-smi-q-x__a10g-idle-p8-healthy.xml",
    ("journalctl", "-k", "-b", "--no-pager", "-o", "short-monotonic"): "dmesg__xe9680-h100-xid119-gsp-timeout.txt",
    ("lspci", "-D", "-nn", "-vvv"): "lspci-vv__quadro-rtx8000-5gts-x1-downgraded-aer.txt",
    ("nvidia-smi", "topo", "-m"): "nvidia-smi-topo__h100-8gpu-nv18-no-nics.txt",
    ("nvcc", "--version"): "nvcc-version__cuda-12.4-h100-node.txt",
}
SYSFS = DATA / "synthetic" / "synthetic_sysfs-pci-h200x8-nvswitch"


class CaseHost(LocalHost):
    """Commands answered from case files; files and globs from a sysfs tree; anything else: not found."""

    def __init__(self) -> None:
        super().__init__(root=str(SYSFS))

    async def run(self, argv, timeout_s=20):
        case = NODE.get(tuple(argv))
        if case is None:
            return CommandResult(list(argv), 127, error=f"command not found: {argv[0]}")
        return CommandResult(list(argv), 0, (CASES / case).read_bytes())

    async def builtin(self, name):
        return CommandResult([f"builtin:{name}"], 127, error="no NVML in this assembled node")


def test_probe_argv_of_the_assembled_node_are_real_probes():
    from wizard.registry import KINDS

    pass  # the registry lists every kind and probe; nothing to load
    host = CaseHost()

    async def record():
        from wizard.hosts import RecordingHost
        from wizard.probes import collect
        rec = RecordingHost(host)
        await collect(rec, list(REGISTRY.values()))
        return [tuple(op.argv) for op in rec.ops if op.kind == "command"]

    seen = asyncio.run(record())
    for argv in NODE:
        assert argv in seen, argv


def test_bundle_of_cases_through_check_snapshot(tmp_path):
    bundle = tmp_path / "node.tar.gz"
    asyncio.run(capture(CaseHost(), bundle, {"hostname": "assembled-node"}, plan={"gpu_count": 8}))
    p = subprocess.run(bringup_cmd("check", "--json", "--snapshot", str(bundle), "--state", str(tmp_path / "s")),
                       capture_output=True, text=True, env=env_for_cli(), cwd=ROOT, timeout=120)
    doc = json.loads(p.stdout)
    by_id: dict[str, list[dict]] = {}
    for f in doc["findings"]:
        by_id.setdefault(f["id"], []).append(f)

    def text_of(fid: str) -> str:
        return " ".join(f"{f['verdict']} {f['message']} {' '.join(f['evidence'])}" for f in by_id.get(fid, []))

    assert doc["host"]["hostname"] == "assembled-node" and p.returncode == 2
    # the synthetic sysfs tree: 8 GPUs on the bus, as planned
    assert by_id["health.gpu_pci"][0]["verdict"] == "pass" and "8 NVIDIA GPU" in by_id["health.gpu_pci"][0]["message"]
    # the XE9680 kernel log: Xid 119 (GSP RPC timeout) on the GPU at 9b:00 fails, naming it
    xid = text_of("health.xid") + text_of("health.gsp")
    assert "fail" in xid and "119" in xid
    # the Quadro on a Pi: x1 where x16 is possible fails the width step
    assert "fail" in text_of("health.pcie_width") and "x1" in text_of("health.pcie_width")
    # the H100 topology matrix: NV18 between every pair
    assert "NV18" in text_of("health.topology")
    # the A10G XML: one GPU listed while 8 are planned is not a pass
    assert any(f["verdict"] in ("fail", "unknown", "warn") for f in by_id["health.gpu_count"])
    # toolkit 12.4 with no driver facts in the bundle: said, not guessed
    assert "12.4" in text_of("driver.cuda_toolkit")
