"""wizard/parsers/fabric.py: ibstat, ibv_devinfo and ibstatus read into one list of ports (real outputs)."""

from __future__ import annotations

from wizard.parsers.fabric import detect_ib_ports, parse_ib_ports

from tests.probe_data import PUBLIC, text


def test_ibstat_reads_each_ca_port_state_phys_rate_and_link_layer() -> None:
    p = parse_ib_ports(text(PUBLIC / "ibstat__gpud-h100-roce-9x-active-2-down-polling-disabled.txt"))
    assert p.tool == "ibstat" and len(p.ports) == 12 and not p.problems
    by = {x.ca: x for x in p.ports}
    assert (by["mlx5_11"].state, by["mlx5_11"].phys_state, by["mlx5_11"].rate_gbit_s) == ("down", "polling", 40.0)
    assert (by["mlx5_5"].state, by["mlx5_5"].phys_state) == ("down", "disabled")
    assert (by["mlx5_0"].state, by["mlx5_0"].rate_gbit_s, by["mlx5_0"].link_layer) == ("active", 400.0, "Ethernet")
    assert "State: Down" in by["mlx5_11"].lines


def test_ibstatus_numbers_and_names_and_rate_text() -> None:
    p = parse_ib_ports(text(PUBLIC / "ibstatus__gpud-a100-8x-hdr-200-ib-active-plus-eth-40.txt"))
    assert p.tool == "ibstatus" and len(p.ports) == 9
    assert {(x.state, x.phys_state) for x in p.ports} == {("active", "linkup")}
    assert [x.rate_gbit_s for x in p.ports].count(200.0) == 8 and p.ports[-1].link_layer == "Ethernet"


def test_ibv_devinfo_port_states_mtu_and_flattened_indentation() -> None:
    p = parse_ib_ports(text(PUBLIC / "ibv-devinfo__netop1646-pod-mlx5_7-port-init-flattened.txt"))
    assert p.tool == "ibv_devinfo" and [(x.ca, x.port, x.state, x.link_layer) for x in p.ports] == [
        ("mlx5_7", 1, "init", "InfiniBand")]
    assert p.ports[0].state_raw == "PORT_INIT (2)" and p.ports[0].rate_gbit_s is None
    a = parse_ib_ports(text(PUBLIC / "ibv-devinfo__deepep38-h100-roce-mlx5_2-port-active-mtu-4096-partial.txt"))
    assert (a.ports[0].state, a.ports[0].active_mtu) == ("active", 4096)


def test_ibpanic_line_is_an_error_not_a_port() -> None:
    p = parse_ib_ports(text(PUBLIC / "ibstat__gpud752-mlx5_7-hdr-200-active-then-ibpanic-mlx5_8-partial.txt"))
    assert [x.ca for x in p.ports] == ["mlx5_7"] and p.errors and "mlx5_8" in p.errors[0]


def test_detector_takes_the_three_tools_and_leaves_other_outputs() -> None:
    for f in ("ibstat__netop249-sriov-vf-mlx5_7-state-down-linkup-hdr-200.txt",
              "ibstatus__nccl1866-mlx5_0-mlx5_1-edr-100-roce-active-partial.txt",
              "ibv-devinfo__rxe46-softroce-rxe0-port-active-no-link-layer.txt"):
        assert detect_ib_ports(text(PUBLIC / f)) >= 0.9, f
    # NCCL logs name HCAs (NET/IB : Using [0]mlx5_0:1/IB) but are not a port listing
    assert detect_ib_ports("NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ; OOB eth0\n") == 0.0
    assert parse_ib_ports("garbage\nState: Active\nPort 1:\n").ports == []
