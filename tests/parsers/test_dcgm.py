"""Tests of wizard/parsers/dcgm.py: dcgmi discovery -l and dcgmi dmon (dcgmi diag and health are tested with their
rules in tests/rules/test_dcgm.py)."""

from __future__ import annotations

from wizard.parsers.dcgm import detect_dcgmi_discovery, detect_dcgmi_dmon, parse_dcgmi_discovery, parse_dcgmi_dmon

from tests.probe_data import PUBLIC, SYNTHETIC, text


def test_discovery_gpus_switches_cpus() -> None:
    d = parse_dcgmi_discovery(text(PUBLIC / "dcgmi-discovery__8x-h800-sxm-0-nvswitches.txt"))
    assert d.gpus_found == 8 and [g.gpu_id for g in d.gpus] == list(range(8)) and d.nvswitches == 0
    assert d.gpus[7].name == "NVIDIA H800" and d.gpus[7].bus_id == "00000000:E2:00.0" and d.gpus[7].uuid.startswith("GPU-")
    d = parse_dcgmi_discovery(text(PUBLIC / "dcgmi-discovery__rtx3090-8-found-4-listed-grace-cpus-partial.txt"))
    assert d.gpus_found == 8 and len(d.gpus) == 4 and d.cpus == 2 and d.nvswitches == 0
    d = parse_dcgmi_discovery("8 GPUs found (Active).\n")
    assert d.gpus_found == 8 and d.gpus == []


def test_discovery_host_engine_error() -> None:
    d = parse_dcgmi_discovery("Error: unable to establish a connection to the specified host: localhost\n")
    assert d.gpus_found is None and d.errors


def test_dmon_columns_by_header_name() -> None:
    d = parse_dcgmi_dmon(text(PUBLIC / "dcgmi-dmon__8gpu-temp-power-energy-util-idle-partial.txt"))
    assert d.columns == ["TMPTR", "POWER", "TOTEC", "GPUTL", "FBUSD"] and len(d.samples) == 16
    assert d.samples[0].entity == "GPU" and d.samples[0].entity_id == 7 and d.samples[0].values["POWER"] == "57.430"
    d = parse_dcgmi_dmon(text(SYNTHETIC / "synthetic_dcgmi-dmon__xider-79-gpu1-ecc-replay.txt"))
    assert d.samples[1].values == {"XIDER": "79", "RPCTR": "0", "ESVTL": "0", "EDVTL": "0"}
    assert d.samples[3].values["XIDER"] == "N/A"


def test_dmon_error_and_short_rows() -> None:
    d = parse_dcgmi_dmon(text(PUBLIC / "dcgmi-dmon__l40s-fp64a-feature-not-supported.txt"))
    assert d.columns == ["FP64A"] and not d.samples and "-6: Feature not supported" in d.errors[0]
    d = parse_dcgmi_dmon("#Entity   XIDER   RPCTR\nID\nGPU 0     0\n")
    assert not d.samples and d.problems == ["GPU 0     0"]


def test_detectors() -> None:
    assert detect_dcgmi_discovery(text(PUBLIC / "dcgmi-discovery__1x-v100-pcie-16gb.txt")) == 1.0
    assert detect_dcgmi_dmon(text(PUBLIC / "dcgmi-dmon__h800-gpu0-nvlink-pcie-bytes.txt")) == 1.0
    assert detect_dcgmi_dmon(text(PUBLIC / "dcgmi-discovery__1x-v100-pcie-16gb.txt")) == 0.0
    assert detect_dcgmi_discovery("GPU 0: OK\n") == 0.0 and detect_dcgmi_dmon("# Entity\n") == 0.0


def test_a_table_followed_by_other_lines_is_closed():
    """Real (held-out round 63, a Slurm prolog): `dcgmi diag -r 1`'s table, closed by its border, then the prolog's
    next message: the table is whole, not cut inside the deployment checks."""
    from wizard.parsers.dcgm import parse_dcgm_text

    body = text(PUBLIC / "dcgmi-diag__r1-slurm-prolog-aws-single-gpu-deployment-all-pass-partial.txt")
    assert parse_dcgm_text(body).closed
    assert not parse_dcgm_text(body.rsplit("+---", 1)[0]).closed
