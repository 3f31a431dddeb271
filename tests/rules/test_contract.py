"""What every rule promises: never raise on garbage, truncated or mutated real output, and say what could not be read (unknown with evidence, a source and a remedy)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wizard.explain import explain_text
from wizard.model import Finding, Verdict, overall
from wizard.parsers import kernellog as kl
from wizard.parsers.dcgm import parse_dcgm_json, parse_dcgm_text
from wizard.parsers.gpu import parse_nvidia_smi_l
from wizard.parsers.host import parse_df, parse_meminfo, parse_os_release, parse_proc_swaps
from wizard.parsers.pcie import detect_lspci, parse_lspci
from wizard.parsers.smi import parse_smi_table, parse_smi_text
from wizard.probes import ProbeOutput, tree_text
from wizard.rules import bios as bios_rules
from wizard.rules import dcgm, driver_chain, gpu_presence, nccl, nvlink, pcie
from wizard.rules import dcgm as dcgm_checks
from wizard.rules import gpu_presence as gc
from wizard.rules import host as host_rules
from wizard.rules import host as hosttools
from wizard.rules import kernel_log as klog
from wizard.rules import os as os_rules
from wizard.rules import pcie as pcie_rules
from wizard.rules import smi as smi_checks
from wizard.rules import topology as topology_rules
from wizard.rules.identity import dmi_identity

from tests import strategies
from tests.conftest import DATA
from tests.outputs import _gpu_base, _vm_base, gpu_host, only  # noqa: F401  (fixtures)
from tests.outputs import findings_ok as _ok
from tests.probe_data import (
    CASES,
    LOCAL_VM,
    PUBLIC,
    SYNTHETIC,
    collect_tree,
    command_output,
    failed,
    file_output,
    text,
)
from tests.strategies import (
    HOST_FUZZ as FUZZ_HOST,
    host_garbage as garbage_host,
    host_mutated as mutated_host,
    HOST_REAL as REAL_HOST,
    host_real_or_mutated as real_or_mutated,
    links_inputs as inputs_links,
    plans,
    TOOLS_FUZZ as FUZZ,
    tools_garbage as garbage,
    tools_inputs as inputs,
)


@FUZZ
@given(inputs)
def test_judges_never_raise(t: str) -> None:
    exp = {"gpu_count": 8, "numa_nodes": 2, "host_ram_gib": 512, "scheduler": "kubernetes",
           "nics_per_node": 8, "nic_gbit_s": 400}
    _ok(driver_chain.judge_nvcc_text(t, exp))
    _ok(driver_chain.judge_torch_text(t, exp))
    _ok(nccl.judge_nccl_tests(t, exp))
    _ok(nccl.judge_nccl_log(t, exp))
    _ok(dcgm.judge(parse_dcgm_text(t), t, exp))
    _ok(dcgm.judge(parse_dcgm_json(t), t, exp))
    _ok(hosttools.judge_free_text(t, exp))
    _ok(hosttools.judge_swapon_text(t, exp))
    _ok(hosttools.judge_lscpu_text(t, exp))
    _ok(hosttools.judge_numactl_text(t, exp))


@FUZZ
@given(inputs, st.sampled_from([0, 1, 124, 127, None]), garbage)
def test_checks_over_probe_outputs_never_raise(t: str, rc: int | None, err: str) -> None:
    outs = {
        "nvcc_version": ProbeOutput("nvcc_version", "$ nvcc --version", t, rc=rc, stderr=err),
        "torch_cuda": ProbeOutput("torch_cuda", "$ python3 -c ...", t, rc=rc, stderr=err),
        "nvidia_driver_version": ProbeOutput("nvidia_driver_version", "/proc/driver/nvidia/version", t),
        "nvml": ProbeOutput("nvml", "NVML", t),
        "lscpu": ProbeOutput("lscpu", "$ lscpu", t, rc=rc),
        "free_b": ProbeOutput("free_b", "$ free -b", t, rc=rc),
    }
    for fn in (driver_chain.cuda_toolkit, driver_chain.torch_cuda, hosttools.cpu_layout, hosttools.memory_pressure):
        _ok(fn(outs, {}))


MISSING = [
    (os_rules.os_release, "os.release", "os_release"),
    (bios_rules.cpu, "bios.cpu", "cpu_topology"),
    (bios_rules.numa, "bios.numa", "numa"),
    (host_rules.memory, "os.memory", "meminfo"),
    (os_rules.swap, "os.swap", "swaps"),
    (bios_rules.iommu, "bios.iommu", "cmdline"),
    (bios_rules.iommu, "bios.iommu", "iommu"),  # the dev VM's command line names no IOMMU mode
    (os_rules.filesystems, "os.filesystem", "df"),
    (gc.gpu_pci, "health.gpu_pci", "pci"),
    (gc.nvidia_smi, "driver.nvidia_smi", "nvidia_smi_l"),
    (gc.nvml, "health.nvml", "nvml"),
    (dmi_identity, "grounding.serials", "dmi"),
]


@pytest.mark.parametrize("check, fid, probe", MISSING, ids=[f"{m[1]}-{m[2]}" for m in MISSING])
def test_probe_not_collected_is_unknown(gpu_host, check, fid, probe):
    del gpu_host[probe]
    f = only(check(gpu_host, {}))
    assert (f.id, f.verdict) == (fid, Verdict.UNKNOWN)
    assert "not collected" in f.message
    assert f.evidence  # says there was nothing to show, rather than showing nothing


@pytest.mark.parametrize("check, fid, probe", MISSING, ids=[f"{m[1]}-{m[2]}" for m in MISSING])
def test_failed_probe_is_unknown_with_the_error_as_evidence(gpu_host, check, fid, probe):
    gpu_host[probe] = failed(probe, f"source of {probe}", "permission denied")
    f = only(check(gpu_host, {}))
    assert (f.id, f.verdict) == (fid, Verdict.UNKNOWN)
    assert "permission denied" in f.message
    assert f"source of {probe}" in f.evidence
    assert "error: permission denied" in f.evidence


GARBLED = [
    (os_rules.os_release, "os.release", "os_release", "<html><body>502 Bad Gateway</body></html>\n"),
    (host_rules.memory, "os.memory", "meminfo", "MemFree:  1024 kB\nthis is not meminfo\n"),
    (os_rules.swap, "os.swap", "swaps", text(PUBLIC / "proc-swaps__cygwin-size-used-run-together.txt")),
    (os_rules.swap, "os.swap", "swaps", "/dev/sda2 partition 8388604 0 -2\n"),  # no header
    (os_rules.filesystems, "os.filesystem", "df", "df: unrecognized option: B\nBusyBox v1.36.1 multi-call binary.\n"),
    (gc.nouveau, "os.nouveau", "modules", "\ufffd\ufffd binary junk\n"),
    (gc.driver, "driver.loaded", "modules", "\ufffd\ufffd binary junk\n"),
    (gc.nvidia_smi, "driver.nvidia_smi", "nvidia_smi_l", "Segmentation fault (core dumped)\n"),
    (gc.nvml, "health.nvml", "nvml", "Traceback (most recent call last):\nImportError: libc.so.6\n"),
]


@pytest.mark.parametrize("check, fid, probe, raw", GARBLED, ids=[f"{g[1]}-{i}" for i, g in enumerate(GARBLED)])
def test_garbled_output_is_unknown_with_the_raw_lines(gpu_host, check, fid, probe, raw):
    gpu_host[probe] = ProbeOutput(probe, f"source of {probe}", text=raw, rc=0 if probe in ("df", "nvml", "nvidia_smi_l") else None)
    f = only(check(gpu_host, {}))
    assert (f.id, f.verdict) == (fid, Verdict.UNKNOWN)
    assert f"source of {probe}" in f.evidence
    raw_lines = [line for line in raw.splitlines() if line.strip()]
    assert any(line in f.evidence for line in raw_lines), f.evidence
    assert all(line in raw_lines for line in f.evidence[1:])  # only raw lines, unrewritten
    assert f.remedy


FEW = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


"""Random text, random bytes decoded like hosts decode them, and text made of the tokens the
parsers look for (including a digit run too long for int())."""


from tests.strategies import host_trees as trees  # noqa: E402 - random sysfs trees of the host probes


CHECKS: dict[str, tuple[Callable, str]] = {
    "os_release": (os_rules.os_release, "os.release"), "cpu": (bios_rules.cpu, "bios.cpu"), "numa": (bios_rules.numa, "bios.numa"),
    "memory": (host_rules.memory, "os.memory"), "swap": (os_rules.swap, "os.swap"), "iommu": (bios_rules.iommu, "bios.iommu"),
    "filesystems": (os_rules.filesystems, "os.filesystem"), "gpu_pci": (gc.gpu_pci, "health.gpu_pci"),
    "nouveau": (gc.nouveau, "os.nouveau"), "driver": (gc.driver, "driver.loaded"),
    "nvidia_smi": (gc.nvidia_smi, "driver.nvidia_smi"), "nvml": (gc.nvml, "health.nvml"),
    "dmi": (dmi_identity, "grounding.serials"),
}


TEXT_PROBES = {  # probe -> how it was collected (command probes have an exit status)
    "os_release": "/etc/os-release", "kernel": "/proc/sys/kernel/osrelease", "cpuinfo": "/proc/cpuinfo",
    "meminfo": "/proc/meminfo", "swaps": "/proc/swaps", "cmdline": "/proc/cmdline", "modules": "/proc/modules",
    "nvidia_driver_version": "/proc/driver/nvidia/version", "df": "$ df -P -T -B1 -l",
    "nvidia_smi_l": "$ nvidia-smi -L", "nvml": "NVML (pynvml)",
}


TREE_PROBES = ["cpu_topology", "numa", "iommu", "pci", "dmi", "sys_module"]


@functools.lru_cache(maxsize=None)
def base(kind: str) -> dict[str, ProbeOutput]:
    """'vm': the dev VM as captured (no GPU); 'gpu': the same host with a synthetic 8-GPU board."""
    outs = collect_tree(LOCAL_VM, ["os_release", "kernel", "cpuinfo", "cpu_topology", "numa", "meminfo",
                                   "swaps", "cmdline", "iommu", "mounts", "modules", "sys_module",
                                   "nvidia_driver_version", "pci", "dmi"])
    outs["df"] = command_output("df", LOCAL_VM / "df-P-T-B1-l.txt", "df -P -T -B1 -l")
    outs["nvidia_smi_l"] = ProbeOutput("nvidia_smi_l", "$ nvidia-smi -L", rc=127, error="command not found: nvidia-smi")
    outs["nvml"] = command_output("nvml", LOCAL_VM / "nvml-probe.json", "python -m wizard.nvml_probe", rc=1)
    if kind == "gpu":
        outs["pci"] = collect_tree(SYNTHETIC / "synthetic_sysfs-pci-h200x8-nvswitch", ["pci"])["pci"]
        outs["modules"] = file_output("modules", CASES / "lsmod__gdrdrv-nvidia-nv_peer_mem.txt", "/proc/modules")
        outs["nvidia_driver_version"] = file_output("nvidia_driver_version",
                                                    CASES / "proc-driver-nvidia-version__open-565.txt",
                                                    "/proc/driver/nvidia/version")
        outs["nvidia_smi_l"] = command_output("nvidia_smi_l", PUBLIC / "nvidia-smi-L__8x-h100-rhel-ai-vm.txt",
                                              "nvidia-smi -L")
        outs["nvml"] = ProbeOutput("nvml", "NVML (pynvml)", rc=0, text=json.dumps(
            {"init": "ok", "driver_version": "565.57.01", "cuda_driver_version": 12070, "count": 8, "gpus": []}))
    return outs


def text_output(probe: str, raw: str) -> ProbeOutput:
    source = TEXT_PROBES[probe]
    return ProbeOutput(probe, source, text=raw, rc=0 if source.startswith(("$", "NVML")) else None)


def assert_sane(findings: list[Finding], fid: str) -> None:
    from wizard.registry import RULES

    allowed = {fid, *next((r.reports for r in RULES if r.id == fid), ())}  # the ids the rule declares it reports
    assert isinstance(findings, list) and findings
    for f in findings:
        assert isinstance(f, Finding)
        assert f.id in allowed, (f.id, fid)
        assert isinstance(f.verdict, Verdict)
        assert isinstance(f.message, str) and f.message
        assert isinstance(f.evidence, tuple) and all(isinstance(e, str) for e in f.evidence)
        if f.verdict in (Verdict.UNKNOWN, Verdict.WARN, Verdict.FAIL):
            assert f.evidence, f"{f.id} {f.verdict} without evidence: {f.message}"
        if f.verdict in (Verdict.WARN, Verdict.FAIL):
            assert f.remedy, f"{f.id} {f.verdict} without a remedy"
        f.to_dict()  # the JSON contract holds


@pytest.mark.parametrize("kind", ["vm", "gpu"])
@FUZZ_HOST
@given(data=st.data())
def test_checks_survive_garbled_text_probes(kind, data):
    outs = dict(base(kind))
    for probe in data.draw(st.lists(st.sampled_from(sorted(TEXT_PROBES)), min_size=1, max_size=4, unique=True)):
        raw = data.draw(real_or_mutated(probe) if probe in REAL_HOST else garbage_host)
        outs[probe] = text_output(probe, raw)
    plan = data.draw(st.fixed_dictionaries({}, optional={
        "gpu_count": st.integers(-1, 16), "numa_nodes": st.integers(-1, 8), "host_ram_gib": st.floats(-1, 4096),
        "scheduler": st.sampled_from(["kubernetes", "slurm", ""]), "data_path": st.text(max_size=20),
        "virtualization": st.booleans()}))
    for check, fid in CHECKS.values():
        assert_sane(check(outs, plan), fid)


@pytest.mark.parametrize("kind", ["vm", "gpu"])
@FUZZ_HOST
@given(data=st.data())
def test_checks_survive_garbled_trees(kind, data):
    outs = dict(base(kind))
    for probe in data.draw(st.lists(st.sampled_from(TREE_PROBES), min_size=1, max_size=3, unique=True)):
        files = data.draw(trees)
        errors = {p: "permission denied" for p, c in files.items() if c is None}
        outs[probe] = ProbeOutput(probe, f"sysfs {probe}", text=tree_text(files, errors), files=files,
                                  file_errors=errors)
    for check, fid in CHECKS.values():
        assert_sane(check(outs, {}), fid)


@pytest.mark.parametrize("kind", ["vm", "gpu"])
@FEW
@given(data=st.data())
def test_checks_survive_failed_probes(kind, data):
    outs = dict(base(kind))
    for probe in data.draw(st.lists(st.sampled_from(sorted(outs)), min_size=1, max_size=5, unique=True)):
        if data.draw(st.booleans()):
            del outs[probe]
        else:
            outs[probe] = ProbeOutput(probe, f"src {probe}", text=data.draw(garbage_host), error=data.draw(st.text(min_size=1, max_size=30)),
                                      rc=data.draw(st.sampled_from([None, 1, 124, 126, 127])),
                                      stderr=data.draw(garbage_host))
    for check, fid in CHECKS.values():
        assert_sane(check(outs, {}), fid)


# Output with nothing a parser could read: no digits, no ':' or '=' (so no "KEY=value",
# "Key: 123", GPU, size or module lines), not blank, and not a bare header ("Module  Size  Used
# by" alone is lsmod with no module loaded; "Filename ..." alone is /proc/swaps with swap off).
unreadable = st.text(alphabet=st.characters(blacklist_categories=("Nd", "No", "Nl", "Cs"),
                                            blacklist_characters=":="),
                     min_size=1, max_size=500).filter(
    lambda t: t.strip() and not any(line.startswith("Filename") or line.split()[:1] == ["Module"]
                                    for line in t.splitlines()))


UNREADABLE = [  # check, its text probe
    ("os_release", "os_release"), ("memory", "meminfo"), ("swap", "swaps"), ("filesystems", "df"),
    ("nouveau", "modules"), ("driver", "modules"), ("nvidia_smi", "nvidia_smi_l"), ("nvml", "nvml"),
]


@pytest.mark.parametrize("name, probe", UNREADABLE, ids=[u[0] for u in UNREADABLE])
@FUZZ_HOST
@given(raw=unreadable)
def test_unreadable_output_is_unknown_with_evidence(name, probe, raw):
    outs = dict(base("gpu"))
    outs[probe] = text_output(probe, raw)
    check, fid = CHECKS[name]
    findings = check(outs, {})
    assert_sane(findings, fid)
    assert [f.verdict for f in findings] == [Verdict.UNKNOWN], findings
    assert TEXT_PROBES[probe] in findings[0].evidence  # what was read, then its lines
    lines = raw.splitlines()
    for line in findings[0].evidence[1:]:  # raw lines (NVML's may be stripped), or the count of the rest
        assert any(line in raw_line for raw_line in lines) or line.endswith("more unreadable lines")


@pytest.mark.parametrize("name, probe", [("memory", "meminfo"), ("swap", "swaps"), ("filesystems", "df"),
                                         ("nvidia_smi", "nvidia_smi_l"), ("os_release", "os_release")])
@FEW
@given(data=st.data())
def test_truncated_real_output_gets_a_verdict_the_parser_supports(name, probe, data):
    """A cut or mutated real output: the verdict follows what the parser could still read."""
    raw = data.draw(mutated_host(REAL_HOST[probe]))
    outs = dict(base("gpu"))
    outs[probe] = text_output(probe, raw)
    check, fid = CHECKS[name]
    findings = check(outs, {})
    assert_sane(findings, fid)
    verdicts = {f.verdict for f in findings}
    readable = {
        "memory": lambda: parse_meminfo(raw).total_kib is not None,
        "swap": lambda: (lambda s: s.header_seen and not s.problems)(parse_proc_swaps(raw)),
        "filesystems": lambda: bool(parse_df(raw)[0]),
        "nvidia_smi": lambda: (lambda s: bool(s.gpus) or s.error_kind in ("no_driver", "no_devices", "gpu_unreachable"))(
            parse_nvidia_smi_l(raw)),
        "os_release": lambda: (lambda r: bool(r.id or r.pretty_name))(parse_os_release(raw)),
    }[name]()
    if not readable:
        assert verdicts == {Verdict.UNKNOWN}
    elif name != "filesystems":  # df: a readable table can still lack "/" (unknown for that path)
        assert Verdict.UNKNOWN not in verdicts


SWITCH = SYNTHETIC / "synthetic_lspci-vvv__pcie-switch-acs-on-h100pcie-x8-aer-fatal.txt"


QUADRO = CASES / "lspci-vv__quadro-rtx8000-5gts-x1-downgraded-aer.txt"


DCGMI_DOWN = CASES / "dcgmi-nvlink__h100nvl-all-links-down.txt"


def lspci_out(path: Path) -> dict[str, ProbeOutput]:
    return {"lspci_vvv": ProbeOutput("lspci_vvv", "$ lspci -D -nn -vvv", text=text(path))}


def out(name: str, path: Path) -> dict[str, ProbeOutput]:
    return {name: ProbeOutput(name, f"$ {name}", text=text(path))}


def test_every_finding_has_source_and_remedy_when_not_pass():
    inputs = [(pcie.lspci_all, lspci_out(SWITCH)), (pcie.lspci_all, lspci_out(QUADRO)),
              (topology_rules.topology, out("nvidia_smi_topo_m", SYNTHETIC / "synthetic_nvidia-smi-topo__8x-h100-gpu2-gpu5-nv17.txt")),
              (topology_rules.p2p, out("nvidia_smi_topo_p2p", PUBLIC / "nvidia-smi-topo-p2p__2x-l4-cns.txt")),
              (nvlink.dcgmi_nvlink, out("dcgmi_nvlink", DCGMI_DOWN)),
              (nvlink.nvlink_errors, out("nvidia_smi_nvlink_e", SYNTHETIC /
                                        "synthetic_nvidia-smi-nvlink-e__two-samples-recovery-and-replay-growth.txt"))]
    for fn, o in inputs:
        for f in fn(o, {}):
            assert f.source and f.id.startswith("health.") and f.message
            if f.verdict in (Verdict.WARN, Verdict.FAIL, Verdict.UNKNOWN):
                assert f.remedy, f
            if f.verdict in (Verdict.WARN, Verdict.FAIL):
                assert f.evidence and all(isinstance(e, str) for e in f.evidence)


CHECKS_LINKS = [(pcie_rules.lspci_all, "lspci_vvv"), (gpu_presence.iommu_groups, "lspci_iommu_groups"),
          (topology_rules.topology, "nvidia_smi_topo_m"), (topology_rules.p2p, "nvidia_smi_topo_p2p"),
          (nvlink.nvlink, "nvidia_smi_nvlink_s"), (nvlink.nvlink_errors, "nvidia_smi_nvlink_e"),
          (nvlink.dcgmi_nvlink, "dcgmi_nvlink")]


@FUZZ_HOST
@given(inputs_links, plans)
def test_checks_never_raise_and_give_valid_findings(t, plan):
    for fn, name in CHECKS_LINKS:
        found = fn({name: ProbeOutput(name, f"$ {name}", text=t)}, plan)
        assert found and all(isinstance(x, Finding) and isinstance(x.verdict, Verdict) for x in found), fn.__name__
        assert all(isinstance(e, str) for x in found for e in x.evidence)


@FUZZ_HOST
@given(garbage)
def test_pure_garbage_is_never_a_pass_claim_about_gpus(t):
    # with nothing a parser can read, no check claims a healthy GPU link
    for fn, name in CHECKS_LINKS:
        for x in fn({name: ProbeOutput(name, f"$ {name}", text=t)}, {}):
            if x.verdict is Verdict.PASS:
                assert x.evidence  # a pass always shows the lines it rests on


def all_findings_well_formed(findings):
    for f in findings:
        assert f.message and f.subject and f.source, f
        assert f.verdict in (Verdict.PASS, Verdict.SKIP) or f.remedy, f
        assert all(isinstance(e, str) for e in f.evidence)


ALL_CHECKS = [bios_rules.above_4g, bios_rules.pcie_acs, bios_rules.power_profile, bios_rules.pcie_root_ports, bios_rules.sriov, bios_rules.secure_boot,
              bios_rules.memory_channels, os_rules.os_support, os_rules.kernel_headers, os_rules.mount_options, os_rules.time_sync,
              os_rules.swap_rollback_info]


@pytest.mark.parametrize("check", ALL_CHECKS, ids=lambda c: c.__name__)
def test_no_probe_output_is_unknown_or_skip_never_a_crash(check):
    fs = check({}, {})
    assert fs and all(f.verdict in (Verdict.UNKNOWN, Verdict.SKIP) for f in fs)
    all_findings_well_formed(fs)


PLAT = DATA / "platform"


SAMPLES = sorted(p for d in ("public", "synthetic") for p in (PLAT / d).iterdir() if p.is_file())


FEW_PLATFORM = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


from tests.strategies import (  # noqa: E402,F401 - the BIOS/OS area's fuzz inputs, shared
    PLATFORM_TOKENS as TOKENS_PLATFORM,
    platform_garbage as garbage_platform,
    platform_inputs as inputs_platform,
    platform_mutated_sample as mutated_sample,
    sysfs_listing_tree as _tree,
)


def _valid(findings) -> None:
    assert isinstance(findings, list) and findings
    for f in findings:
        assert isinstance(f, Finding) and isinstance(f.verdict, Verdict) and f.message


@FEW_PLATFORM
@given(inputs_platform, st.sampled_from([{}, {"virtualization": True}, {"data_path": "/raid"}, {"under_load": True},
                                 {"driver_branch": "R590", "scheduler": "kubernetes"}, {"driver_branch": 12}]))
def test_checks_never_raise(t, plan):
    files = _tree(t)
    cmd = lambda n: ProbeOutput(n, f"$ {n}", text=t, rc=0)  # noqa: E731
    tree = lambda n: ProbeOutput(n, n, text=t, files=files)  # noqa: E731
    _valid(bios_rules.above_4g({"lspci_vvv": cmd("lspci_vvv"), "nvidia_smi_qx": cmd("nvidia_smi_qx"),
                        "kernel_log_dmesg": cmd("kernel_log_dmesg")}, plan))
    _valid(bios_rules.pcie_root_ports({"lspci_vvv": cmd("lspci_vvv")}, plan))
    _valid(bios_rules.pcie_acs({"lspci_vvv": cmd("lspci_vvv")}, plan))
    _valid(bios_rules.power_profile({"cpuidle": tree("cpuidle"), "cpufreq": tree("cpufreq")}, plan))
    _valid(bios_rules.sriov({"sriov": tree("sriov")}, plan))
    _valid(bios_rules.secure_boot({"mokutil_sb_state": cmd("mokutil_sb_state"), "efi_secureboot": tree("efi_secureboot"),
                           "module_signing": tree("module_signing")}, plan))
    _valid(bios_rules.memory_channels({"dmidecode_17": cmd("dmidecode_17"), "smbios_memory": tree("smbios_memory")}, plan))
    _valid(os_rules.os_support({"os_release": cmd("os_release"), "kernel": cmd("kernel")}, plan))
    _valid(os_rules.kernel_headers({"kernel": cmd("kernel"), "kernel_build": tree("kernel_build")}, plan))
    _valid(os_rules.mount_options({"mounts": cmd("mounts"), "fstab": cmd("fstab")}, plan))
    _valid(os_rules.time_sync({"timedatectl": cmd("timedatectl"), "chronyc_tracking": cmd("chronyc_tracking")}, plan))
    _valid(os_rules.fstab_table(t, plan))


from tests.outputs import (  # noqa: F401 - real outputs a reviewer collected
    AER_H, CMCI_H, DUNKEL, RADIASOFT, XID45, NVL5, CHIA, TITANV,
    HANDLE, P4, LOST, GCP_A100, L40S_Q, FM_DOWN, PM_FAIL,
)


A10_FULL = CASES / "nvidia-smi-q__a10-remapped-rows-unc4-pending-full.txt"


from tests.outputs import EXPECTED, body, well_formed  # noqa: E402,F401 - the reviewer's cases and verdicts


from tests.strategies import KERNEL_LOG_STAMPS as STAMPS  # noqa: E402 - every dmesg/journalctl stamp style


def first_half(path) -> str:
    lines = text(path).splitlines()
    return "\n".join(lines[: len(lines) // 2]) + "\n"


REVIEW_TEXTS = [body(n) for n in sorted(EXPECTED)] + [first_half(A10_FULL)]


FUZZ_KERNEL_SMI_DCGM = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                        HealthCheck.data_too_large])


STAMP_TOKENS = list(STAMPS) + ["[", "]", "+", "<", ">", "Bank 8: ", "fc00010001010092", "zz00010001010092",
                               "Machine Check Event: 0 ", "EDAC skx MC3: CPU 10: ", "caused by previous Xid ",
                               "99999999999999999999", "Fatal", "Nonfatal", "\n", " "]


def mutated_kernel_smi_dcgm() -> st.SearchStrategy[str]:
    """A review input, mutated (tests/strategies.py)."""
    return strategies.mutated(REVIEW_TEXTS, STAMP_TOKENS, max_ops=5)


inputs_kernel_smi_dcgm = st.one_of(mutated_kernel_smi_dcgm(), strategies.garbage(STAMP_TOKENS, max_size=800, max_tokens=40))


@FUZZ_KERNEL_SMI_DCGM
@given(inputs_kernel_smi_dcgm)
def test_review_inputs_never_break_parsers_or_judges(t):
    log = kl.parse_kernel_log(t)
    well_formed(klog.judge_kernel_log(log, {}))
    for parse in (parse_smi_text, parse_smi_table):
        well_formed(smi_checks.judge_doc(parse(t), {}))
    d = parse_dcgm_text(t)
    well_formed(dcgm_checks.judge(d, t, {}))
    e = explain_text(t)
    assert e.verdict in Verdict


GCP = PUBLIC / "nccl-debug__lab-gcp-24gpu-ib-none-socket-eth0.txt"


AWS = PUBLIC / "nccl-debug__aws-g6e-ofi-efa-init-failed-socket-fallback.txt"


MN5 = PUBLIC / "nccl-debug__mn5-2node-ib-plus-stray-roce-hca.txt"


MN5_PREFIXED = SYNTHETIC / "synthetic_nccl-debug__mn5-with-nccl-prefix.txt"


RAY = PUBLIC / "nccl-debug__ray-vllm-8xgpu-net-ib-8hca-ray-prefix.txt"


EFA_OK = PUBLIC / "nccl-debug__nccl1597-h200-efa-libfabric-gdrdma-channel-line-partial.txt"


ACS_GREP = PUBLIC / "lspci-acsctl-grep__nccl606-amd-switch-srcvalid.txt"


EPYC = PUBLIC / "lspci-vvv__epyc-rome-gpp-bridge-acs-on-elided.txt"


COLLAPSE = PUBLIC / "nccl-tests__nccl1453-rank-tag-interleaved-collapse-partial.txt"


ONE_RANK = PUBLIC / "nccl-tests__5090-single-gpu-alltoall-na-sudo-prompt.txt"


DIP = PUBLIC / "nccl-tests__aws-ofi-nccl65-p4d-dip-at-64m-recovers-partial.txt"


def lspci_out_nccl_acs(body: str, source: str = "lspci -vv (pasted)") -> dict[str, ProbeOutput]:
    return {"lspci_vvv": ProbeOutput("lspci_vvv", source, text=body)}


FUZZ_NCCL_ACS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


REAL_NCCL_ACS = [text(p) for p in (GCP, AWS, MN5, MN5_PREFIXED, RAY, EFA_OK, ACS_GREP, EPYC, COLLAPSE, ONE_RANK, DIP)]


TOKENS_NCCL_ACS = ["[0]", "[1,0]<stdout>:", "-1[0]", "0[0]", "NET/IB : Using ", "[0]mlx5_0:1/IB ", "[1]mlx5_2:1/RoCE ",
          "NET/IB : No device found.", "NET/Socket : Using [0]eth0:10.0.0.1<0>", "NET/OFI No eligible providers",
          "aws-ofi-nccl initialization failed", "ACSCtl:\tSrcValid+", "ACSCap:\tSrcValid-", " ", "\n", "\t",
          "33554432", "8388608", "float", "sum", "none", "-1", "29.50", "N/A", "9" * 30]


def mutated_nccl_acs() -> st.SearchStrategy[str]:
    """A real input of these tests, mutated (tests/strategies.py)."""
    return strategies.mutated(REAL_NCCL_ACS, TOKENS_NCCL_ACS)


garbage_nccl_acs = st.one_of(strategies.garbage(TOKENS_NCCL_ACS, max_size=800), mutated_nccl_acs())


def _valid_nccl_acs(fs) -> None:
    assert isinstance(fs, list) and all(isinstance(f, Finding) and isinstance(f.verdict, Verdict) for f in fs)
    for f in fs:
        assert f.verdict is Verdict.PASS or f.remedy or f.verdict is Verdict.SKIP, f
    overall(fs) if fs else None


@FUZZ_NCCL_ACS
@given(garbage_nccl_acs)
def test_new_paths_never_raise(body: str) -> None:
    _valid_nccl_acs(nccl.judge_nccl_log(body, {"nics_per_node": 8}))
    _valid_nccl_acs(nccl.judge_nccl_tests(body, {"command": body[:80]}))
    _valid_nccl_acs(pcie.pcie_acs(lspci_out_nccl_acs(body), {}))
    _valid_nccl_acs(pcie.lspci_all(lspci_out_nccl_acs(body), {}))
    parse_lspci(body).acs_grep  # noqa: B018 - a property that must not raise
    detect_lspci(body)
