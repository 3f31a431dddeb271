"""wizard.registry: one explicit table of probes, parsers, explain kinds and rules; finding ids map to steps."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

import steps
from wizard import registry
from wizard.capture import load_bundle
from wizard.engine import checked_steps, run_checks
from wizard.explain import explain_text
from wizard.facts import Facts
from wizard import probes
from wizard.hosts import CommandResult, Operation, SnapshotHost, command_key
from wizard.model import Verdict, overall
from wizard.rules import nvlink, pcie, topology as topology_rules
from tests.probe_data import CASES, PUBLIC
from wizard.registry import KINDS

DATA = Path(__file__).parent / "data"
STEP_IDS = [s.id for s in steps.all_steps()]


def _gpu_outputs():
    from tests.test_facts import _gpu_node_outputs

    return _gpu_node_outputs()


def _bundle_outputs():
    host, _ = load_bundle(DATA / "bundles" / "devvm.tar.gz")
    _, outputs = asyncio.run(run_checks(host, checked_steps(steps.STAGES), {}))
    return dict(outputs)


def test_nothing_registers_itself_on_import():
    """Importing every wizard module changes no registry table: they are declared in one place."""
    code = ("import pkgutil, importlib, wizard, wizard.registry as r\n"
            "before = (len(r.PROBES), len(r.KINDS), len(r.RULES), len(r.PARSERS))\n"
            "for m in pkgutil.walk_packages(wizard.__path__, 'wizard.'):\n"
            "    importlib.import_module(m.name)\n"
            "import steps, screens.app\n"
            "assert before == (len(r.PROBES), len(r.KINDS), len(r.RULES), len(r.PARSERS)), before\n"
            "import wizard.probes as p, wizard.kinds as k\n"
            "assert not hasattr(p, 'REGISTRY') and not hasattr(p, 'register') and not hasattr(k, 'register_kind')\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_every_probe_module_constant_is_listed():
    import wizard.probes as p

    defined = {v.name for v in vars(p).values() if isinstance(v, p.Probe)}
    assert defined == set(registry.PROBES)


@pytest.mark.parametrize("rule", registry.RULES, ids=lambda r: r.id)
def test_each_rule_reports_only_its_declared_ids(rule):
    """A rule reports its own finding id and the ids it declares (``reports``), nothing else, on a GPU
    node's real outputs and on the dev VM bundle."""
    allowed = {rule.id, *rule.reports}
    for outputs in (_gpu_outputs(), _bundle_outputs()):
        for plan in ({}, {"gpu_count": 8}):
            got = {f.id for f in rule.judge(Facts(outputs), plan)}
            assert got <= allowed, (rule.id, sorted(got - allowed))


def test_rule_ids_are_unique_and_each_finding_id_has_one_home_step():
    homes: dict[str, str] = {}
    for r in registry.RULES:
        for fid in (r.id, *r.reports):
            assert homes.setdefault(fid, r.step) == r.step, f"{fid} is reported under {homes[fid]} and {r.step}"
    assert len({r.id for r in registry.RULES}) == len(registry.RULES)  # several rules may join one step


def test_every_finding_id_of_check_and_explain_resolves_to_a_step():
    seen: set[str] = set()
    from wizard.engine import judge

    for outputs in (_gpu_outputs(), _bundle_outputs()):
        for sid, findings in judge(checked_steps(steps.STAGES), outputs, {"gpu_count": 8}).items():
            for f in findings:
                assert registry.step_of(f.id, STEP_IDS) == sid, (f.id, sid)
                seen.add(f.id)
    for path in sorted((DATA / "cases").iterdir()):
        if path.name in ("README.md", "expected.csv"):
            continue
        for f in explain_text(path.read_text(errors="replace"), path.name).findings:
            if not f.id.startswith("explain."):  # about the input itself (not recognised), not the machine
                assert registry.step_of(f.id, STEP_IDS) is not None, (path.name, f.id)
            seen.add(f.id)
    assert len(seen) > 40


def test_did_you_mean_names_near_ids():
    ids = registry.known_ids(STEP_IDS)
    assert "health.pcie_width" in registry.did_you_mean("health.pcie_widht", ids)
    assert "health.xid" in ids and registry.step_of("health.xid", STEP_IDS) == "health.kernel_log"
    assert registry.did_you_mean("zzz", ids) == []


def test_cli_speaks_step_and_finding_ids(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "wizard.cli", "--state", str(tmp_path), *args],
                              capture_output=True, text=True)

    r = run("run", "health.idle_baselin")
    assert r.returncode == 3 and "did you mean health.idle_baseline" in r.stderr
    r = run("check", "--stage", "helth")
    assert r.returncode == 3 and "did you mean health" in r.stderr
    r = run("--snapshot", str(DATA / "bundles" / "devvm.tar.gz"), "check", "--json", "--step", "health.xid")
    import json

    doc = json.loads(r.stdout)
    assert {f["step"] for f in doc["findings"]} == {"health.kernel_log"}


def test_kinds_and_probes_registered() -> None:
    kinds = KINDS
    for k in ("nvcc-version", "torch-cuda", "nccl-tests", "nccl-debug", "dcgmi-diag", "dcgmi-diag-json", "free",
              "swapon", "lscpu", "numactl-hardware"):
        assert k in kinds
    assert registry.PROBES["nvcc_version"].name == "nvcc_version"
    for name in ("nvcc_version", "torch_cuda", "lscpu", "free_b"):
        assert name in registry.PROBES


def test_probes_are_registered():
    kl_journal = registry.PROBES["kernel_log_journal"]
    assert kl_journal.title.startswith("Kernel log of this boot")
    assert "kernel_log_dmesg" in registry.PROBES and "edac_sysfs" in registry.PROBES


SUPERMICRO = PUBLIC / "lspci-vvv__supermicro-as4124gs-quadro-rtx5000-idle-rootport-excerpt.txt"


def test_probes_are_registered_with_their_commands_and_feed_the_checks():
    names = {"lspci_vvv", "nvidia_smi_topo_m", "nvidia_smi_topo_p2p", "nvidia_smi_nvlink_s", "nvidia_smi_nvlink_e"}
    assert names <= set(registry.PROBES)
    argvs = {"nvidia_smi_topo_m": ["nvidia-smi", "topo", "-m"], "nvidia_smi_topo_p2p": ["nvidia-smi", "topo", "-p2p", "r"],
             "nvidia_smi_nvlink_s": ["nvidia-smi", "nvlink", "-s"], "lspci_vvv": ["lspci", "-D", "-nn", "-vvv"]}
    data = {"nvidia_smi_topo_m": CASES / "nvidia-smi-topo__h100-8gpu-nv18-no-nics.txt",
            "nvidia_smi_topo_p2p": PUBLIC / "nvidia-smi-topo-p2p__8x-h100-ok.txt",
            "nvidia_smi_nvlink_s": PUBLIC / "nvidia-smi-nvlink-s__a100-sxm4-80gb-gpu0-p4de.txt",
            "lspci_vvv": SUPERMICRO}
    ops = [Operation("command", command_key(argv), argv=argv, rc=0, stdout=data[n].read_bytes())
           for n, argv in argvs.items()]
    got = asyncio.run(probes.collect(SnapshotHost(ops), registry.probes_named(names)))
    assert got["nvidia_smi_topo_m"].source == "$ nvidia-smi topo -m"
    assert overall(topology_rules.topology(got, {})) is Verdict.PASS
    assert overall(topology_rules.p2p(got, {})) is Verdict.PASS
    assert overall(nvlink.nvlink(got, {})) is Verdict.PASS
    assert overall(pcie.lspci_all(got, {})) is Verdict.WARN  # idle 2.5 GT/s: re-check under load
    assert got["nvidia_smi_nvlink_e"].error  # not in this snapshot
    assert [f.verdict for f in nvlink.nvlink_errors(got, {})] == [Verdict.UNKNOWN]


QX = "$ nvidia-smi -q -x"


def test_probe_is_registered_with_a_60_s_timeout():
    pass  # the registry lists every kind and probe; nothing to load
    assert "nvidia_smi_qx" in registry.PROBES

    class FakeHost:
        calls: list = []

        async def run(self, argv, timeout_s):
            self.calls.append((list(argv), timeout_s))
            return CommandResult(list(argv), 0, b"<nvidia_smi_log/>", b"", 0.1)

    host = FakeHost()
    out = asyncio.run(registry.PROBES["nvidia_smi_qx"].collect(host))
    assert host.calls == [(["nvidia-smi", "-q", "-x"], 60)]
    assert out.source == QX and out.text == "<nvidia_smi_log/>"


def test_no_two_probes_run_the_same_command():
    """A command run under two probe names runs twice on every check: `mokutil --sb-state` did (the BIOS stage's
    mokutil_sb_state and the driver install's driver_secure_boot), one ssh session more per node in a fleet check.
    Each probe runs on a host that records the commands and answers none (exit 127)."""

    class Recorder:
        name = "rec"

        def __init__(self) -> None:
            self.by: dict[tuple[str, ...], list[str]] = {}
            self.current = ""

        async def run(self, argv, timeout_s=30):
            self.by.setdefault(tuple(argv), []).append(self.current)
            return CommandResult(list(argv), 127, b"", b"", 0.0, "command not found")

        async def builtin(self, name):
            return CommandResult([name], 127, b"", b"", 0.0, "command not found")

        async def read(self, path):
            from wizard.hosts import FileResult
            return FileResult(path, None, "no such file", 0.0)

        async def glob(self, pattern):
            return []

    host = Recorder()
    for probe in registry.PROBES.values():
        host.current = probe.name
        try:
            asyncio.run(probe.collect(host))
        except Exception:  # noqa: BLE001 - a probe that needs a real host (NVML) is not what this test is about
            pass
    twice = {" ".join(argv): names for argv, names in host.by.items() if len(set(names)) > 1}
    assert not twice, twice
    assert ("mokutil", "--sb-state") in host.by and len(host.by) > 30, sorted(host.by)


def test_the_filesystem_rule_declares_the_shm_finding_it_reports():
    """Found by the contract property test: a df whose /dev/shm is too small makes os.filesystem report os.shm, which
    the rule did not declare (so `check --step` and the report could not place it). Synthetic df rows."""
    from wizard.probes import ProbeOutput
    from wizard.rules import os as os_rules

    df = ("Filesystem 1-blocks Used Available Use% Mounted on\n/dev/vda 270553174016 23255568384 85688725504 22% /\n"
          "shm 67108864 0 67108864 0% /dev/shm\n")
    found = os_rules.filesystems(Facts({"df": ProbeOutput("df", "df -B1", text=df)}), {})
    rule = next(r for r in registry.RULES if r.id == "os.filesystem")
    assert "os.shm" in {f.id for f in found} and "os.shm" in rule.reports


def test_an_empty_step_id_gets_no_suggestion():
    """Walk 34 #19m: `check --step ""` answered "did you mean bios.above_4g_decoding or bios.cpu or bios.iommu?"."""
    from wizard.cli import resolve_step_id

    sid, said = resolve_step_id("")
    assert sid is None and "did you mean" not in said and "`bringup status` lists the steps" in said
    sid, said = resolve_step_id("health.xidd")
    assert sid is None and "did you mean" in said
