"""What every parser promises: never raise on garbage, truncated or mutated real output, and say what could not be read (kept verbatim)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wizard.parsers import pcie, topology
from wizard.parsers.cuda import parse_nvcc_version, parse_torch_cuda
from wizard.parsers.dcgm import parse_dcgm_json, parse_dcgm_text
from wizard.parsers.gpu import parse_driver_version, parse_nvidia_smi_l, parse_nvml
from wizard.parsers.host import (
    parse_cmdline,
    parse_cpu,
    parse_df,
    parse_meminfo,
    parse_modules,
    parse_mounts,
    parse_os_release,
    parse_proc_swaps,
)
from wizard.parsers.hosttools import parse_free, parse_lscpu, parse_numactl, parse_swapon
from wizard.parsers.nccl import infer_collective, parse_nccl_log, parse_nccl_tests

from tests import strategies
from tests.probe_data import CASES, LOCAL_VM, PUBLIC, SYNTHETIC, text

FUZZ = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


TOKENS = ["|", "+", "-", " ", "\n", ":", "#", "GPU", "Pass", "Fail", "Skip", "N/A", "0", "1",
          "9" * 400, "NCCL INFO", "NCCL WARN", "NET/IB : Using", "[0]", "float", "sum", "-1",
          "torch", "True", "12.4", "Mem:", "Swap:", "node 0 size:", "MB", "{", "}", "\"",
          "Successfully ran diagnostic for group.", "CPU(s):", "release 12.4, V12.4.1"]


garbage = strategies.garbage(TOKENS, max_size=1500, max_tokens=80)


REAL = sorted(p for d in (CASES, PUBLIC, SYNTHETIC) for p in d.glob("*")
              if p.is_file() and p.name.startswith(("nvcc", "torch", "nccl", "dcgmi", "free", "swapon", "lscpu",
                                                    "numactl", "synthetic_nccl", "synthetic_dcgm", "synthetic_free",
                                                    "synthetic_lscpu", "synthetic_numactl")))


def mutated() -> st.SearchStrategy[str]:
    """A real output of this area, mutated (tests/strategies.py)."""
    return strategies.mutated(REAL, TOKENS)


inputs = st.one_of(garbage, mutated())


@FUZZ
@given(inputs)
def test_parsers_never_raise(t: str) -> None:
    parse_nvcc_version(t)
    parse_torch_cuda(t)
    r = parse_nccl_tests(t)
    infer_collective(r)
    parse_nccl_log(t)
    parse_dcgm_text(t)
    parse_dcgm_json(t)
    parse_free(t)
    parse_free(t, 1)
    parse_swapon(t)
    parse_lscpu(t)
    parse_numactl(t)


FUZZ_HOST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


TOKENS_HOST = ["0", "1", "-", ",", ":", "=", " ", "\t", "\n", "\0", "\"", "'", "\\", "#",
          "kB", "GPU ", "0x10de", "%", "9" * 5000, "[", "{", "}"]


garbage_host = strategies.garbage(TOKENS_HOST, max_size=2000)
"""Random text, random bytes decoded like hosts decode them, and text made of the tokens the
parsers look for (including a digit run too long for int())."""


REAL_HOST: dict[str, list[Path]] = {
    "os_release": [LOCAL_VM / "etc/os-release", PUBLIC / "os-release__ubuntu-24.04.txt",
                   PUBLIC / "os-release__rhel-9.6.txt"],
    "meminfo": [LOCAL_VM / "proc/meminfo"],
    "swaps": [LOCAL_VM / "proc/swaps", PUBLIC / "proc-swaps__arm64-nvme-partition.txt",
              PUBLIC / "proc-swaps__cygwin-size-used-run-together.txt"],
    "cmdline": [LOCAL_VM / "proc/cmdline", CASES / "proc-cmdline__iommu-pt.txt"],
    "cpuinfo": [LOCAL_VM / "proc/cpuinfo"],
    "mounts": [LOCAL_VM / "proc/self/mounts"],
    "df": [LOCAL_VM / "df-P-T-B1-l.txt", SYNTHETIC / "synthetic_df__data-volume-96pct.txt"],
    "modules": [CASES / "lsmod__gdrdrv-nvidia-nv_peer_mem.txt", PUBLIC / "proc-modules__cloudlinux9-vm.txt",
                PUBLIC / "lsmod__quadro-t2000-nouveau-loaded-partial.txt"],
    "nvidia_smi_l": [PUBLIC / "nvidia-smi-L__8x-h100-rhel-ai-vm.txt",
                     CASES / "nvidia-smi__driver-not-loaded-failed-to-communicate.txt",
                     CASES / "nvidia-smi__rtx5090-no-devices-found.txt",
                     SYNTHETIC / "synthetic_nvidia-smi-L__gpu3-device-handle-error.txt"],
    "nvml": [LOCAL_VM / "nvml-probe.json"],
    "nvidia_driver_version": [CASES / "proc-driver-nvidia-version__open-565.txt",
                              PUBLIC / "proc-driver-nvidia-version__proprietary-515.txt"],
}


def mutated_host(paths: list[Path]) -> st.SearchStrategy[str]:
    """One real output, mutated (tests/strategies.py)."""
    return strategies.mutated(paths, TOKENS_HOST)


def real_or_mutated(name: str):
    return st.one_of(mutated_host(REAL_HOST[name]), garbage_host)


TEXT_PARSERS: dict[str, Callable] = {
    "os_release": parse_os_release, "meminfo": parse_meminfo, "swaps": parse_proc_swaps,
    "cmdline": parse_cmdline, "cpuinfo": lambda t: parse_cpu(t, {}), "mounts": parse_mounts,
    "df": parse_df, "modules": parse_modules, "nvidia_smi_l": parse_nvidia_smi_l, "nvml": parse_nvml,
    "nvidia_driver_version": parse_driver_version,
}


@pytest.mark.parametrize("name", sorted(TEXT_PARSERS))
@FUZZ_HOST
@given(data=st.data())
def test_text_parsers_never_raise(name, data):
    raw = data.draw(real_or_mutated(name))
    result = TEXT_PARSERS[name](raw)
    assert result is not None


@FUZZ_HOST
@given(raw=garbage_host)
def test_unreadable_lines_are_kept_verbatim(raw):
    """What a parser could not read it reports as the raw lines, for the evidence."""
    lines = raw.splitlines()
    for problems in (parse_meminfo(raw).problems, parse_proc_swaps(raw).problems, parse_df(raw)[1],
                     parse_modules(raw)[1], parse_mounts(raw)[1], parse_os_release(raw).problems,
                     parse_nvidia_smi_l(raw).problems):
        assert all(p in lines for p in problems)


REAL_LINKS = [p for d in (CASES, PUBLIC, SYNTHETIC) for p in sorted(Path(d).iterdir())
        if p.name.startswith(("lspci", "nvidia-smi-topo", "nvidia-smi-nvlink", "dcgmi-nvlink", "synthetic_lspci",
                              "synthetic_nvidia-smi-topo", "synthetic_nvidia-smi-nvlink"))]


REAL_TEXT = [text(p) for p in REAL_LINKS]


TOKENS_LINKS = ["GPU0", "GPU1", "NIC0", "NV18", "NV", "X", "OK", "CNS", "PIX", "SYS", "CPU Affinity", "LnkSta:", "LnkCap:",
          "Speed 8GT/s", "Speed unknown", "Width x16", "Width x0", "(downgraded)", "(ok)", "\t", "\n", " ", ":",
          "IOMMU Group 1:", "IOMMU Group 7 ", "01:00.0 3D controller [0302]: NVIDIA Corporation Device [10de:2330]",
          "0000:19:00.0 PCI bridge [0604]: x [1000:c010]", "Express (v2) Downstream Port (Slot+), MSI 00",
          "Bus: primary=00, secondary=01, subordinate=ff", "ACSCtl:\tSrcValid+", "UESta:\tDLP+", "UESvrt:\tDLP+",
          "Region 1: Memory at <unassigned> (64-bit, prefetchable)", "[size=99999999999999999999G]",
          "Capabilities: <access denied>", "GPU 0: NVIDIA H100 (UUID: GPU-1)", "Link 0: 26.562 GB/s",
          "Link 1: <inactive>", "Link 0: Replay Errors: 7", "gpuId 0:", "U", "D", "_", "[...]", "9" * 40, "\0", "é"]


def mutated_real() -> st.SearchStrategy[str]:
    """A real input of this area, mutated (tests/strategies.py)."""
    return strategies.mutated(REAL_TEXT, TOKENS_LINKS)


inputs_links = st.one_of(garbage, mutated_real())


DETECTORS = [pcie.detect_lspci, pcie.detect_iommu_groups, topology.detect_topo_matrix, topology.detect_p2p_matrix,
             topology.detect_nvlink_status, topology.detect_nvlink_errors, topology.detect_dcgmi_nvlink]


def test_real_inputs_are_there():
    assert len(REAL_LINKS) >= 25


@FUZZ_HOST
@given(inputs_links)
def test_parsers_never_raise_links(t):
    f = pcie.parse_lspci(t)
    assert isinstance(f.devices, list) and isinstance(f.problems, list)
    for d in f.devices:
        f.parents(d)
        pcie.device_label(d)
    pcie.parse_iommu_groups(t)
    assert isinstance(topology.parse_topo_matrix(t).gpu_pairs(), list)
    topology.parse_p2p_matrix(t)
    topology.parse_nvlink(t)
    topology.parse_dcgmi_nvlink(t)


@FUZZ_HOST
@given(inputs_links)
def test_detectors_return_a_confidence(t):
    for d in DETECTORS:
        v = d(t)
        assert 0.0 <= v <= 1.0
