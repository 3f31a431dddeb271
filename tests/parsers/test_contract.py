"""What every parser promises: never raise on garbage, truncated or mutated real output, and say what could not be read (kept verbatim)."""

from __future__ import annotations

from typing import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wizard.parsers import pcie, topology
from wizard.parsers.cuda import parse_nvcc_version, parse_torch_cuda
from wizard.parsers.cuda_samples import (
    detect_bandwidth_test,
    detect_device_query,
    detect_nvbandwidth,
    detect_p2p_test,
    parse_bandwidth_test,
    parse_device_query,
    parse_nvbandwidth,
    parse_p2p_test,
)
from wizard.parsers.dcgm import (
    detect_dcgmi_discovery,
    detect_dcgmi_dmon,
    parse_dcgm_health,
    parse_dcgm_json,
    parse_dcgm_text,
    parse_dcgmi_discovery,
    parse_dcgmi_dmon,
)
from wizard.parsers.gpuburn import detect_gpu_burn, parse_gpu_burn
from wizard.parsers.fabric import parse_ib_ports
from wizard.parsers.gpu import detect_smi_list, parse_driver_version, parse_nvidia_smi_l, parse_nvml
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
from wizard.parsers.launcher import detect_launcher, parse_launcher
from wizard.parsers.nccl import infer_collective, parse_nccl_log, parse_nccl_tests

from tests.strategies import (
    HOST_FUZZ as FUZZ_HOST,
    host_garbage as garbage_host,
    host_real_or_mutated as real_or_mutated,
    links_inputs as inputs_links,
    LINKS_REAL as REAL_LINKS,
    TOOLS_FUZZ as FUZZ,
    tools_inputs as inputs,
)


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
    parse_dcgm_health(t)
    parse_device_query(t)
    parse_bandwidth_test(t)
    parse_p2p_test(t)
    parse_nvbandwidth(t)
    for d in (detect_device_query, detect_bandwidth_test, detect_p2p_test, detect_nvbandwidth):
        assert 0.0 <= d(t) <= 1.0
    parse_ib_ports(t)
    parse_free(t)
    parse_free(t, 1)
    parse_swapon(t)
    parse_lscpu(t)
    parse_numactl(t)
    assert 0.0 <= detect_smi_list(t) <= 1.0
    parse_nvidia_smi_l(t)
    parse_gpu_burn(t, t[:40])
    parse_dcgmi_discovery(t)
    parse_dcgmi_dmon(t)
    for det in (detect_gpu_burn, detect_dcgmi_discovery, detect_dcgmi_dmon):
        assert 0.0 <= det(t) <= 1.0
    parse_launcher(t)
    assert 0.0 <= detect_launcher(t) <= 1.0


"""Random text, random bytes decoded like hosts decode them, and text made of the tokens the
parsers look for (including a digit run too long for int())."""


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


def test_numbers_past_pythons_int_limit_crash_no_judge():
    """issue 11: a 5,000-digit number made the dcgmi judge crash (int() raises past 4,300 digits; shown as "a bringup
    bug"). Parsers read numbers with wizard.common.sat_int. Every kind's real outputs (one per kind of file name), each
    line's first number replaced by a 700-digit run, with the limit lowered to Python's minimum (640) for the test."""
    import re
    import sys

    from tests.conftest import DATA
    from wizard.explain import explain_text

    files: dict[str, object] = {}
    for p in sorted(DATA.rglob("*")):
        if p.is_file() and p.suffix in (".txt", ".xml", ".json", ".log") and "__" in p.name:
            files.setdefault(p.name.split("__")[0], p)
    assert len(files) >= 60
    big = "9" * 700
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)
    try:
        crashed = []
        for p in files.values():
            t = re.sub(r"(?m)^(\D*)\d+", lambda m: m.group(1) + big, p.read_text(errors="replace"))  # type: ignore[attr-defined]
            crashed += [f"{p.name}: {f.message[:120]}" for f in explain_text(t, p.name).findings  # type: ignore[attr-defined]
                        if "crashed" in f.message]
    finally:
        sys.set_int_max_str_digits(old)
    assert not crashed, crashed
