"""Tests of wizard/health.py: `bringup check --profile health` (the fast health profile) on real bundles and on this
machine, its hard time limit with a real command that hangs, and what it never does (import torch, record)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import DEVVM_BUNDLE, ROOT, env_for_cli
from tests.health_bundles import make_bundle
from wizard import health, prefetch
from wizard.model import Verdict
from wizard.registry import PROFILES, RULES, rules_of_profile

SCHEMA = json.loads((ROOT / "assets" / "schema" / "check.schema.json").read_text())


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    d = tmp_path_factory.mktemp("health-bundles")
    return {k: make_bundle(k, d) for k in ("healthy", "xid79")}


def _cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wizard.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env or env_for_cli(), timeout=timeout)


def test_the_profile_is_a_subset_of_the_registry_rules_without_slow_probes():
    rules = rules_of_profile("health")
    assert [r.id for r in rules] == list(PROFILES["health"]) and all(any(r is x for x in RULES) for r in rules)
    probes = {p.name for p in health.profile_probes(rules)}
    assert not probes & {"torch_cuda", "nvcc_version", "nvidia_smi_topo_m", "nvidia_smi_topo_p2p", "dmidecode_17"}
    assert {"kernel_log_journal", "nvidia_smi_qx", "lspci_vvv", "df"} <= probes


def test_what_the_profile_prefetches_is_exactly_what_its_probes_run():
    """prefetch.HEALTH starts commands before the rules are imported; each must be one of the profile's probes'
    argv exactly (else the prefetched process is never taken), and the torch probe is never among them."""
    from wizard.hosts import CommandResult, LocalHost, RecordingHost
    from wizard.probes import BUILTINS, collect

    class Refuse(LocalHost):
        async def run(self, argv, timeout_s=20):
            return CommandResult(list(argv), 127, error="not run in this test")

    host = RecordingHost(Refuse(builtins=BUILTINS))
    asyncio.run(collect(host, health.profile_probes(rules_of_profile("health")), {}, timeout_s=10))
    ran = {tuple(op.argv) for op in host.ops if op.kind == "command"}
    for argv in prefetch.HEALTH:
        assert argv == prefetch.NVML_ARGV or argv in ran, argv
    assert not any("torch" in " ".join(a) for a in prefetch.HEALTH)


def test_a_bundle_with_xid79_is_unhealthy_and_a_clean_one_is_healthy(bundles):
    r = _cli("check", "--profile", "health", "--snapshot", str(bundles["xid79"]), "--json")
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert doc["profile"] == "health" and doc["healthy"] is False and doc["verdict"] == "fail"
    first = next(f for f in doc["findings"] if f["verdict"] == "fail")
    assert first["id"] == "health.xid" and "Xid 79" in first["message"]
    assert {f["step"] for f in doc["findings"]} <= {r.step for r in rules_of_profile("health")}
    r = _cli("check", "--profile", "health", "--snapshot", str(bundles["healthy"]))
    assert r.returncode == 0, r.stdout + r.stderr  # NHC's convention: 0 healthy (unknowns are printed, not fatal)
    assert ": healthy in " in r.stdout and "[FAIL]" not in r.stdout


def test_this_machine_answers_within_the_limit_and_nothing_imports_torch(tmp_path):
    code = ("import sys; from wizard.cli import main; rc = main(['check', '--profile', 'health', '--json']); "
            "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(rc)")
    env = {**env_for_cli(), "BRINGUP_STATE_DIR": str(tmp_path / "state")}
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert r.returncode in (0, 2), r.stderr
    doc = json.loads(r.stdout)
    assert doc["timeout_s"] == 10 and doc["duration_s"] < 10 and time.monotonic() - t0 < 30
    assert not (tmp_path / "state").exists()  # nothing recorded, no state directory made


def _hanging_tool(d: Path, name: str, pidfile: Path) -> None:
    p = d / name
    p.write_text(f"#!/bin/sh\necho $$ >> {pidfile}\nexec sleep 60\n")
    p.chmod(p.stat().st_mode | stat.S_IXUSR)


def test_a_probe_that_hangs_is_stopped_at_the_time_limit_and_fails_the_check(tmp_path):
    """A real nvidia-smi that never answers (a sleeping program of that name first on PATH): the run ends at
    --timeout, the probe's process is killed, and the hang is a failing finding, not a hung health check."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    pidfile = tmp_path / "smi.pid"
    _hanging_tool(bindir, "nvidia-smi", pidfile)
    env = {**env_for_cli(), "PATH": f"{bindir}:{os.environ.get('PATH', '')}", "BRINGUP_STATE_DIR": str(tmp_path / "s")}
    t0 = time.monotonic()
    r = _cli("check", "--profile", "health", "--timeout", "1.5", "--json", env=env, timeout=30)
    took = time.monotonic() - t0
    assert r.returncode == 2, r.stderr
    doc = json.loads(r.stdout)
    stopped = [f for f in doc["findings"] if f["id"] == "health.probe_timeout"]
    assert stopped and all(f["verdict"] == "fail" for f in stopped)
    assert any("nvidia-smi" in f["message"] for f in stopped) and "1.5 s" in stopped[0]["message"]
    assert took < 15, took  # 1.5 s limit + interpreter start; never the tool's 60 s
    pids = [int(x) for x in pidfile.read_text().split()]
    assert len(pids) >= 3  # -q -x and -L (prefetched: started before the rules were imported), nvlink -s
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(os.path.exists(f"/proc/{p}") for p in pids):
        time.sleep(0.1)
    assert not [p for p in pids if os.path.exists(f"/proc/{p}")], "a hanging nvidia-smi was left running"


def test_the_watchdog_ends_a_run_that_blocks_past_every_limit(tmp_path):
    """What asyncio cannot interrupt (a read stuck in the kernel) is ended by the watchdog: exit 2 and said."""
    code = ("import sys, time; from wizard import health\n"
            "health.start_watchdog(0.5, lambda: print('fired', flush=True))\n"
            "time.sleep(30)\n")
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env_for_cli(),
                       timeout=20)
    assert r.returncode == 2 and r.stdout.strip() == "fired" and time.monotonic() - t0 < 10


@pytest.mark.parametrize("args,why", [
    (["--slurm"], "go with --profile health"),
    (["--timeout", "5"], "go with --profile health"),
    (["--profile", "health", "--timeout", "0"], "--timeout must be more than 0"),
    (["--profile", "health", "--timeout", "nan"], "--timeout must be more than 0"),
    (["--profile", "health", "--stage", "health"], "--stage does not apply"),
    (["--profile", "nope"], "invalid choice"),
])
def test_bad_options_are_a_clear_error_and_exit_3(args, why, tmp_path):
    env = {**env_for_cli(), "BRINGUP_STATE_DIR": str(tmp_path / "s")}
    r = _cli("check", *args, env=env)
    assert r.returncode == 3 and why in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_an_unreadable_bundle_is_exit_3_not_unhealthy(tmp_path):
    bad = tmp_path / "bad.tar.gz"
    bad.write_bytes(b"not a bundle")
    r = _cli("check", "--profile", "health", "--snapshot", str(bad), env={**env_for_cli(),
                                                                          "BRINGUP_STATE_DIR": str(tmp_path / "s")})
    assert r.returncode == 3 and "bringup: error:" in r.stderr


def test_the_builds_recorded_gpus_stand_for_a_missing_planned_count(tmp_path):
    """No gpu_count in the plan: the GPUs this build recorded are what the next health check expects (a GPU that
    disappeared since then fails health.gpu_count); the store is only read."""
    import steps
    from wizard.engine import Build

    state = tmp_path / "state"
    b = Build.open_or_create(state, steps.STAGES, {"hostname": "n1"})
    try:
        b.store.set_meta(gpu_serials={f"0000:{i:02x}:00.0": {"serial": f"S{i}", "at": "x"} for i in range(8)})
        b.store.add_ack("xid:1", "health.xid", "GPU", "old", "known", "tester", "boot")
    finally:
        b.close()
    exp = health.build_expectations(state)
    assert exp["gpu_count"] == 8 and exp["acknowledged"] == frozenset({"xid:1"}) and len(exp["gpu_serials"]) == 8
    assert health.build_expectations(tmp_path / "none") == {}


def test_devvm_bundle_profile_runs_every_rule_once_per_parser():
    """The profile judges through one Facts: each parser runs at most once per probe (as a full check)."""
    from wizard.capture import load_bundle

    host, _ = load_bundle(DEVVM_BUNDLE)
    r = asyncio.run(health.run_profile(host, "health", {}, 10))
    ids = {f.id for f in r.findings}
    assert "health.kernel_log" in ids and "os.filesystem" in ids
    assert r.verdict is Verdict.FAIL and r.first_failure().id == "health.gpu_pci"  # a VM without GPUs
