"""End to end: cases (real inputs through the CLI or explain, as an operator runs them)."""

from __future__ import annotations

import asyncio
import csv
import json
import subprocess
from pathlib import Path

import pytest
from wizard.capture import capture
from wizard.explain import explain_text
from wizard.hosts import CommandResult, LocalHost
from wizard.model import Finding, Verdict
from wizard.registry import PROBES as REGISTRY

from tests.conftest import DATA, ROOT, bringup_cmd, env_for_cli
from tests.probe_data import CASES as CASES_probe_data
from tests.probe_data import text

CASES = DATA / "cases"
PUBLIC = DATA / "public"


def rows(folder: Path = CASES) -> list[dict[str, str]]:
    with open(folder / "expected.csv", newline="") as fh:
        return list(csv.DictReader(fh))


def said(findings) -> str:
    return " ".join(f"{f.message} {f.subject} {f.remedy} {' '.join(f.evidence)}" for f in findings).lower()


@pytest.mark.parametrize("row", [(CASES, r) for r in rows(CASES)] + [(PUBLIC, r) for r in rows(PUBLIC)],
                         ids=lambda fr: f"{fr[0].name}/{fr[1]['file']}")
def test_case_gets_its_expected_verdict_and_cause(row):
    """Every real case (``cases/``) and every real public output with a verdict row (``public/expected.csv``):
    recognised, the verdict a careful operator would reach, the cause named, a remedy for every problem."""
    folder, row = row
    text = (folder / row["file"]).read_text(errors="replace")
    r = explain_text(text, row["file"])
    allowed = set(row["verdict"].split("|"))
    # an output of a kind bringup does not read is not recognised; it may still be judged by the program's own
    # words (explain.program_said), or be expected to stay unknown
    assert r.kind is not None or "unknown" in allowed or any(f.id == "explain.program_said" for f in r.findings), \
        f"{row['file']}: not recognised"
    assert r.verdict.value in allowed, (row["file"], r.kind, r.verdict, [(f.id, f.verdict.value, f.message) for f in r.findings])
    mentions = [m for m in row["mentions"].split("|") if m]
    # an input bringup says it cannot read names no cause: the expert's words are not looked for (they used to be
    # found, by chance, in the list of every kind's title the remedy printed)
    unread = all(f.id == "explain.unknown_input" for f in r.findings)
    if mentions and not unread:
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
    # the common commands and how to see the rest, not every kind's title (a 45-line paragraph at 80 columns)
    assert "--kind KIND" in r.findings[0].remedy and len(r.findings[0].remedy) < 500


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


PREFIXES = ("nvcc-version__", "torch-cuda__", "nccl-tests__", "nccl-debug__", "dcgmi-diag__", "free-h__", "swapon-",
            "lscpu__", "numactl-")


EXPECTED_CSV = CASES_probe_data / "expected.csv"


KINDS = {"nvcc-version__": "nvcc-version", "torch-cuda__": "torch-cuda", "nccl-tests__": "nccl-tests",
         "nccl-debug__": "nccl-debug", "dcgmi-diag__": "dcgmi-diag", "free-h__": "free", "swapon-": "swapon",
         "lscpu__": "lscpu", "numactl-": "numactl-hardware"}


def _rows() -> list[dict[str, str]]:
    src = EXPECTED_CSV if EXPECTED_CSV.exists() else None
    assert src is not None, "tests/data/cases/expected.csv is missing"
    with open(src, newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if r["file"].startswith(PREFIXES)]


ROWS = _rows()


def test_all_nineteen_case_files_are_covered() -> None:
    assert len(ROWS) == 19
    for r in ROWS:
        assert (CASES_probe_data / r["file"]).exists(), r["file"]


@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_case_verdict_and_mentions(row: dict[str, str]) -> None:
    e = explain_text(text(CASES_probe_data / row["file"]), row["file"])
    prefix = next(p for p in PREFIXES if row["file"].startswith(p))
    assert e.kind == KINDS[prefix]
    allowed = row["verdict"].split("|")
    assert e.verdict.value in allowed, [(f.id, f.verdict.value, f.message) for f in e.findings]
    words = [w for w in row["mentions"].split("|") if w]
    if words:
        blob = " ".join(" ".join([f.message, f.subject, f.remedy, *f.evidence]) for f in e.findings).lower()
        assert any(w.lower() in blob for w in words), (words, blob[:500])
    for f in e.findings:
        assert f.source, f
        if f.verdict.value not in ("pass", "skip"):
            assert f.remedy, f
        assert f.evidence, f


@pytest.mark.parametrize("row", ROWS, ids=[r["file"] for r in ROWS])
def test_case_detected_with_command_line_pasted(row: dict[str, str]) -> None:
    """A paste that starts with the command line is recognised the same way."""
    body = text(CASES_probe_data / row["file"])
    cmd = {"nvcc-version__": "nvcc --version", "torch-cuda__": "python3 train.py", "nccl-tests__": "./all_reduce_perf -b 8",
           "nccl-debug__": "NCCL_DEBUG=INFO torchrun x.py", "dcgmi-diag__": "dcgmi diag -r 2", "free-h__": "free -h",
           "swapon-": "swapon --show --output-all", "lscpu__": "lscpu", "numactl-": "numactl --hardware"}
    prefix = next(p for p in PREFIXES if row["file"].startswith(p))
    e = explain_text(f"user@node:~$ {cmd[prefix]}\n" + body, row["file"])
    assert e.kind == KINDS[prefix]
    assert e.verdict.value in row["verdict"].split("|")


MY_PREFIXES = ("dmesg__", "journal__", "syslog__", "edac-util__", "ras-mc-ctl-summary__")


LOCAL_EXPECTED = CASES_probe_data / "expected.csv"
"""The cases' verdicts and sources (this area's rows are picked by file-name prefix)."""


def _expected_rows(path: Path | None = None) -> list[dict[str, str]]:
    if path is None:
        path = LOCAL_EXPECTED
    with open(path, newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if r["file"].startswith(MY_PREFIXES)]


def _blob(findings: list[Finding]) -> str:
    return " ".join(f"{f.message} {f.subject} {f.remedy} {' '.join(f.evidence)}" for f in findings).lower()


CASE_ROWS = _expected_rows()


def test_all_thirteen_case_files_are_here():
    assert len(CASE_ROWS) == 13
    assert _expected_rows(LOCAL_EXPECTED) == CASE_ROWS
    for r in CASE_ROWS:
        assert (CASES_probe_data / r["file"]).is_file()
        assert r["source"].strip(), r["file"]


@pytest.mark.parametrize("row", CASE_ROWS, ids=[r["file"] for r in CASE_ROWS])
def test_case_through_explain(row):
    """Every case file of this area gets its expected verdict, through detection, and names one
    of its expected words."""
    e = explain_text(text(CASES_probe_data / row["file"]), row["file"])
    assert e.kind in ("kernel-log", "edac-util", "ras-mc-ctl"), e.kind
    assert e.verdict.value in row["verdict"].split("|"), [(f.verdict, f.message) for f in e.findings]
    words = [w.lower() for w in row["mentions"].split("|") if w]
    if words:
        assert any(w in _blob(e.findings) for w in words), (words, [f.message for f in e.findings])


@pytest.mark.parametrize("row", CASE_ROWS, ids=[r["file"] for r in CASE_ROWS])
def test_case_with_command_line_and_cut_short(row):
    """A paste that starts with the command line, and one cut to its first half, still go to
    this area's kind and never crash."""
    body = text(CASES_probe_data / row["file"])
    cmd = {"dmesg": "dmesg -T", "journal": "journalctl -k -b", "syslog": "grep NVRM /var/log/syslog",
           "edac-util": "edac-util -v", "ras-mc-ctl-summary": "ras-mc-ctl --summary"}[row["file"].split("__")[0]]
    e = explain_text(f"$ {cmd}\n{body}")
    assert e.verdict.value in row["verdict"].split("|")
    lines = body.splitlines()
    half = "\n".join(lines[: max(1, len(lines) // 2)])
    cut = explain_text(half)
    assert cut.kind in ("kernel-log", "edac-util", "ras-mc-ctl")
    assert cut.findings and all(isinstance(f.verdict, Verdict) for f in cut.findings)


SHARED_EXPECTED = CASES_probe_data / "expected.csv"


MY_PREFIXES_LINKS = ("lspci-", "nvidia-smi-topo__", "dcgmi-nvlink__")


def all_text(findings) -> str:
    return " ".join(" ".join([f.message, f.subject, f.remedy, *f.evidence]) for f in findings).lower()


def _my_cases() -> list[dict[str, str]]:
    with open(SHARED_EXPECTED, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [r for r in rows if r["file"].startswith(MY_PREFIXES_LINKS)]


def test_all_seven_cases_of_this_area_are_here():
    names = {r["file"] for r in _my_cases()}
    assert len(names) == 7
    assert all((CASES_probe_data / n).is_file() for n in names)


@pytest.mark.parametrize("row", _my_cases(), ids=lambda r: r["file"])
def test_case_verdict_and_mentions_through_explain(row):
    e = explain_text(text(CASES_probe_data / row["file"]))
    allowed = set(row["verdict"].split("|"))
    assert e.verdict.value in allowed, [(f.verdict.value, f.message) for f in e.findings]
    mentions = [m.lower() for m in row["mentions"].split("|") if m]
    if mentions:
        assert any(m in all_text(e.findings) for m in mentions)


@pytest.mark.parametrize("row", _my_cases(), ids=lambda r: r["file"])
def test_case_is_detected_as_my_kind_even_after_a_prompt_line(row):
    body = text(CASES_probe_data / row["file"])
    cmd = {"lspci-vv": "sudo lspci -vvv", "lspci-iommu-groups": "./iommu.sh", "nvidia-smi-topo-m": "nvidia-smi topo -m",
           "dcgmi-nvlink-status": "dcgmi nvlink --link-status"}
    plain = explain_text(body)
    prompted = explain_text(f"root@node:~# {cmd.get(plain.kind, 'x')}\n" + body)
    assert plain.kind in cmd and prompted.kind == plain.kind and prompted.verdict == plain.verdict


from tests.outputs import (  # noqa: F401 - real outputs a reviewer collected
    AER_H, CMCI_H, DUNKEL, RADIASOFT, XID45, NVL5, CHIA, TITANV,
    HANDLE, P4, LOST, GCP_A100, L40S_Q, FM_DOWN, PM_FAIL,
)


from tests.outputs import EXPECTED, body, well_formed  # noqa: E402,F401 - the reviewer's cases and verdicts


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_review_file_gets_the_operators_verdict(name):
    kind, verdict = EXPECTED[name]
    e = explain_text(body(name), name)
    assert (e.kind, e.verdict.value) == (kind, verdict), [(f.id, f.verdict.value, f.message) for f in e.findings]
    well_formed(e.findings)
    raw = body(name)
    for f in e.findings:
        for ln in f.evidence:
            if not ln.startswith("... ") and ln not in ("pasted kernel log",):
                assert ln in raw, (f.id, ln)


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if not body(n).lstrip().startswith(("$", "["))
                                        or n.startswith(("dmesg", "kernel-log"))))
def test_review_file_with_a_prompt_line_first(name):
    kind, verdict = EXPECTED[name]
    cmd = {"kernel-log": "dmesg -H", "nvidia-smi": "nvidia-smi", "nvidia-smi-q": "nvidia-smi -q",
           "dcgmi-diag": "dcgmi diag -r 3"}[kind]
    e = explain_text(f"root@gpu01:~# {cmd}\n" + body(name))
    assert (e.kind, e.verdict.value) == (kind, verdict)


LOCAL = CASES_probe_data / "expected.csv"


def _mine(name: str) -> bool:
    return name.startswith("nvidia-smi") and not name.startswith("nvidia-smi-topo")


def _smi_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh) if _mine(r["file"])]


SMI_ROWS = _smi_rows(LOCAL)


KIND_BY_PREFIX = (("nvidia-smi-query-gpu-csv__", "nvidia-smi-query-gpu-csv"), ("nvidia-smi-q-x__", "nvidia-smi-q-x"),
                  ("nvidia-smi-q-d-", "nvidia-smi-q"), ("nvidia-smi-q__", "nvidia-smi-q"), ("nvidia-smi__", "nvidia-smi"))


def expected_kind(name: str) -> str:
    return next(kind for prefix, kind in KIND_BY_PREFIX if name.startswith(prefix))


def blob(findings) -> str:
    return " ".join(f"{f.message} {f.subject} {f.remedy} {' '.join(f.evidence)}" for f in findings).lower()


def test_all_seventeen_cases_are_covered():
    assert len(SMI_ROWS) == 17
    assert all((CASES_probe_data / r["file"]).exists() for r in SMI_ROWS)


def test_expected_rows_name_their_public_source():
    local = _smi_rows(LOCAL)
    assert len(local) == 17
    assert all(r["source"].strip() for r in local)


@pytest.mark.parametrize("row", SMI_ROWS, ids=[r["file"] for r in SMI_ROWS])
def test_smi_case_verdict_and_mentions(row):
    e = explain_text(text(CASES_probe_data / row["file"]), row["file"])
    allowed = row["verdict"].split("|")
    assert e.kind == expected_kind(row["file"])
    assert e.verdict.value in allowed, [(f.verdict.value, f.id, f.message) for f in e.findings]
    mentions = [m for m in row["mentions"].split("|") if m]
    if mentions:
        assert any(m.lower() in blob(e.findings) for m in mentions), mentions


@pytest.mark.parametrize("row", SMI_ROWS, ids=[r["file"] for r in SMI_ROWS])
def test_case_findings_are_well_formed(row):
    e = explain_text(text(CASES_probe_data / row["file"]), row["file"])
    assert e.findings
    for f in e.findings:
        assert f.subject and f.message and "\n" not in f.message
        assert f.id.split(".")[0] in ("health", "driver")
        if f.verdict in (Verdict.WARN, Verdict.FAIL, Verdict.UNKNOWN):
            assert f.remedy.strip(), f
        if f.verdict in (Verdict.PASS, Verdict.WARN, Verdict.FAIL):
            assert f.source.strip(), f
        assert f.evidence or f.verdict is Verdict.SKIP, f
        body = text(CASES_probe_data / row["file"])
        for line in f.evidence:  # evidence is quoted from the input, never made up
            if e.kind == "nvidia-smi-query-gpu-csv" and ": " in line:
                header, _, value = line.partition(": ")  # a cell of a row too long to quote whole
                assert header in body and value in body
            else:
                assert line in body, line


@pytest.mark.parametrize("prompt", ["$ {cmd}", "root@gpu-node-01:~# {cmd}", "[user@login1 ~]$ {cmd}"])
@pytest.mark.parametrize("row", SMI_ROWS, ids=[r["file"] for r in SMI_ROWS])
def test_case_with_the_command_line_pasted_first(row, prompt):
    cmd = {"nvidia-smi": "nvidia-smi", "nvidia-smi-q": "nvidia-smi -q", "nvidia-smi-q-x": "nvidia-smi -q -x",
           "nvidia-smi-query-gpu-csv": "nvidia-smi --query-gpu=index,name --format=csv"}[expected_kind(row["file"])]
    e = explain_text(prompt.format(cmd=cmd) + "\n" + text(CASES_probe_data / row["file"]))
    assert e.kind == expected_kind(row["file"])
    assert e.verdict.value in row["verdict"].split("|")


@pytest.mark.parametrize("row", [r for r in SMI_ROWS if len(text(CASES_probe_data / r["file"]).splitlines()) >= 12],
                         ids=lambda r: r["file"])
def test_case_cut_in_half_is_still_recognised_and_judged(row):
    lines = text(CASES_probe_data / row["file"]).splitlines()
    cut = "\n".join(lines[: len(lines) // 2]) + "\n"
    e = explain_text(cut)
    assert e.kind == expected_kind(row["file"])
    assert e.findings and all(f.verdict in Verdict for f in e.findings)


def test_evidence_quotes_the_raw_lines():
    """The A10 case: the row-remap failure rests on the lines nvidia-smi printed."""
    e = explain_text(text(CASES_probe_data / "nvidia-smi-q__a10-remapped-rows-unc4-pending-full.txt"))
    f = next(f for f in e.findings if f.id == "health.row_remap")
    assert "Uncorrectable Error               : 4" in f.evidence
    assert "Pending                           : Yes" in f.evidence
    assert "GPU 00000000:07:00.0" in f.evidence


PUBLIC_VERDICTS = {
    # tests/data/PROVENANCE.md, "public/": the verdict bringup gives each, and why
    "nvidia-smi__geforce-fan-err-exclusive-process.txt": ("nvidia-smi", "warn"),  # fan reads ERR!
    "nvidia-smi__h200-mig-load-gpu-burn-processes.txt": ("nvidia-smi", "pass"),
    "nvidia-smi-q__h200-mig-idle-590.txt": ("nvidia-smi-q", "pass"),
    "nvidia-smi-query-gpu-csv__h200-mig-idle-590-all-fields.txt": ("nvidia-smi-query-gpu-csv", "pass"),
    "nvidia-smi-q-x__rtx-pro-6000-blackwell-v13-partial.xml": ("nvidia-smi-q-x", "warn"),  # Gen5 GPU, Gen4 host
    "nvidia-smi-q-x__grid-p4-vgpu-guest-wddm-all-na.xml": ("nvidia-smi-q-x", "pass"),
}


@pytest.mark.parametrize("name", sorted(PUBLIC_VERDICTS))
def test_public_real_outputs(name):
    from tests.probe_data import PUBLIC

    body = text(PUBLIC / name)
    e = explain_text(body, name)
    kind, verdict = PUBLIC_VERDICTS[name]
    assert (e.kind, e.verdict.value) == (kind, verdict), [(f.verdict.value, f.message) for f in e.findings]
    for f in e.findings:
        for line in f.evidence:
            if kind == "nvidia-smi-query-gpu-csv" and ": " in line:
                header, _, value = line.partition(": ")
                assert header in body and value in body
            else:
                assert line in body, line
