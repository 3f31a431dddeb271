"""Every finding's ``source`` names a public document an operator can open (issue 9).

A source is a title and URL, a specification, a paper, or a man page; never an internal file of the
project (its design notes, its reference notes, its own code or asset paths, an abbreviation only those
notes define). Checked on what operators see: ``bringup explain --json`` over every real case,
``bringup check --json --snapshot`` over the development VM's bundle, the in-process judges of every checked
step over real GPU-server outputs, and the ``source`` column of every asset table (which findings quote).
Findings made by the engine itself (a run failed, a check crashed) carry no source: they are counted, not
judged.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
from collections.abc import Iterator

import steps
from tests.conftest import DEVVM_BUNDLE, ROOT, bringup_cmd, env_for_cli
from wizard.engine import checked_steps, judge
from wizard.probes import ProbeOutput

CASES = ROOT / "tests" / "data" / "cases"
ASSETS = ROOT / "assets"

GPU_NODE = {
    "nvidia_smi_qx": ("nvidia-smi-q-x__a100-sxm4-80gb-mig-enabled-1-of-4-gpus.xml", "$ nvidia-smi -q -x"),
    "lspci_vvv": ("lspci-vv__quadro-rtx8000-5gts-x1-downgraded-aer.txt", "$ lspci -D -nn -vvv"),
    "nvidia_smi_topo_m": ("nvidia-smi-topo__h100-8gpu-nv18-no-nics.txt", "$ nvidia-smi topo -m"),
    "kernel_log_journal": ("dmesg__a100-xid63-row-remapper-new-row-marked.txt", "$ journalctl -k -b"),
    "cmdline": ("proc-cmdline__iommu-pt.txt", "/proc/cmdline"),
    "nvidia_driver_version": ("proc-driver-nvidia-version__open-565.txt", "/proc/driver/nvidia/version"),
    "lscpu": ("lscpu__epyc-8434p-nps8-1socket.txt", "$ lscpu"),
    "nvcc_version": ("nvcc-version__cuda-12.4-h100-node.txt", "$ nvcc --version"),
}
"""Real outputs of GPU servers (tests/data/cases) standing in for the probes that read the same commands,
as in tests/test_facts.py, so the GPU rules run as on a real node."""


def _gpu_node_outputs() -> dict[str, ProbeOutput]:
    return {probe: ProbeOutput(name=probe, source=src, text=(CASES / name).read_text(errors="replace"), rc=0)
            for probe, (name, src) in GPU_NODE.items()}

INTERNAL = re.compile(
    r"knowledge\.md|knowledge base|checks-catalogue|\bcatalogue [A-F]\d|\bcatalogue Stage|DESIGN\.md|§"
    r"|\bwizard/|\bsteps/|\bshared/|\bshared case|\bcases/|\btests/data|fleet-integration|diagnostics\.md"
    r"|sizing-formulas|tui-practices|\bassets/|\b\w+\.csv\b|\bPCIIDS\b|\bOGKM\b|\bNVHV\b|\bAzNHC\b|\bKMODS\b"
    r"|\bOPENBLOG\b|\bMATRIX\b|\bUBUNTU(_PKGS)?\b|\bstored copy\b|\bissue \d+\b|\bsection \d+(\.\d+)? \(|\bitem \d+\b"
)
"""Names an operator cannot open: the project's own notes, files and abbreviations."""

URL = re.compile(r"https?://\S+")
VENDOR = (r"NVIDIA|Linux|kernel|Debian|Ubuntu|Canonical|Red Hat|PyTorch|Kubernetes|AMD|Dell|SUSE|DMTF|PCI-SIG|UEFI"
          r"|ACPI|Azure|Meta|IBM|DCGM|NCCL|NVML|CUDA|systemd|Arch")
PUBLIC_TITLE = re.compile(
    r"\(\d\)"                                   # a man page: lspci(8), os-release(5), nvidia-smi(1)
    r"|\bSpecification\b|\bRFC ?\d+"
    r"|\b[A-Z][\w-]+ et al\.?,? .*\b(19|20)\d\d\b"  # a paper with its year
    rf"|\b({VENDOR})\b.*\b(documentation|guide|manual|man page|README|release notes|data ?sheet|API reference"
    r"|catalog)\b"
    r"|^bringup's judgement\b",                # stated as our own judgement, not passed off as a source
    re.IGNORECASE,
)
"""What names a public document without a URL."""

GCM = re.compile(r"\bGCM\b")


def problem(source: str) -> str | None:
    """Why ``source`` is not a public document an operator can open, or None."""
    if m := INTERNAL.search(source):
        return f"internal name {m.group(0)!r}"
    if GCM.search(source) and "github.com/facebookresearch/gcm" not in source:
        return "Meta GCM named without https://github.com/facebookresearch/gcm"
    if not URL.search(source) and not PUBLIC_TITLE.search(source):
        return "no URL and no recognisable public document title"
    return None


def _findings(doc: object) -> Iterator[dict]:
    if isinstance(doc, dict):
        if "verdict" in doc and "source" in doc:
            yield doc
        for v in doc.values():
            yield from _findings(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from _findings(v)


def _assert_public(findings: list[tuple[str, str, str]], where: str) -> None:
    """findings: (where it came from, finding id, source)."""
    empty = [f for f in findings if not f[2]]
    bad = sorted({(fid, src, why) for _, fid, src in findings if src and (why := problem(src))})
    assert findings, f"{where}: no findings at all"
    assert not bad, (f"{where}: {len(bad)} sources of {len(findings)} findings are not public documents "
                     f"({len(empty)} findings made by the engine itself carry no source):\n"
                     + "\n".join(f"  {fid}: {why}: {src[:200]}" for fid, src, why in bad))


def _cli(*args: str) -> dict:
    r = subprocess.run(bringup_cmd(*args), capture_output=True, text=True, timeout=300, env=env_for_cli(), cwd=ROOT)
    assert r.stdout, r.stderr
    return json.loads(r.stdout)


def test_the_checker_tells_public_from_internal():
    for ok in ("lspci(8) man page, https://man7.org/linux/man-pages/man8/lspci.8.html",
               "os-release(5); /proc/sys/kernel/osrelease", "PCI Express Base Specification, Link Status register",
               "NVIDIA Fabric Manager user guide", "bringup's judgement: a nearly full disk stops checkpoints",
               "Rajbhandari et al., ZeRO: Memory Optimizations Toward Training Trillion Parameter Models, 2020"):
        assert problem(ok) is None, ok
    for bad in ("knowledge.md section 2", "checks-catalogue B11 WARN", "wizard/sizing.py", "PCIIDS (GV100GL)",
                "AzNHC check_hw_physmem 5%", "Meta GCM health checks gpu_num", "derived from the shared cases",
                "DCGM says so", "assets/pci_ids.csv", "KMODS; OPENBLOG"):
        assert problem(bad) is not None, bad


def test_explain_over_every_case_cites_public_sources(tmp_path):
    files = sorted(p for p in CASES.iterdir() if p.is_file() and p.name not in ("README.md", "expected.csv"))
    doc = _cli("--state", str(tmp_path / "state"), "explain", "--json", *map(str, files))
    found = [("explain", f["id"], f.get("source") or "") for f in _findings(doc)]
    _assert_public(found, f"bringup explain --json over {len(files)} cases")


def test_check_of_a_snapshot_cites_public_sources(tmp_path):
    doc = _cli("--state", str(tmp_path / "state"), "check", "--json", "--snapshot", str(DEVVM_BUNDLE))
    found = [("check", f["id"], f.get("source") or "") for f in doc["findings"]]
    _assert_public(found, "bringup check --json --snapshot devvm.tar.gz")


def test_every_checked_step_judges_real_gpu_outputs_with_public_sources():
    found: list[tuple[str, str, str]] = []
    for plan in ({"gpu_count": 8}, {"gpu_count": 4, "gpu_model": "A100-SXM4-80GB", "nodes": 2, "kubernetes": True}):
        by_step = judge(checked_steps(steps.STAGES), _gpu_node_outputs(), plan)
        found += [("judge", f.id, f.source or "") for fs in by_step.values() for f in fs]
    _assert_public(found, "judge() of every checked step over real GPU outputs")


def test_every_source_column_of_the_asset_tables_is_public():
    bad: list[str] = []
    seen = 0
    for path in sorted(ASSETS.glob("*.csv")):
        rows = list(csv.DictReader(line for line in path.read_text().splitlines() if not line.startswith("#")))
        if not rows or "source" not in rows[0]:
            continue
        for i, row in enumerate(rows, 1):
            src = (row.get("source") or "").strip()
            seen += 1
            if src and (why := problem(src)):
                bad.append(f"  {path.name} row {i} ({next(iter(row.values()))}): {why}: {src[:160]}")
    assert seen, "no asset table has a source column"
    assert not bad, f"{len(bad)} of {seen} asset sources are not public documents:\n" + "\n".join(bad)
