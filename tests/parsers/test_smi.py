"""Tests of wizard/parsers/smi.py."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

import functools
import json

import pytest
from wizard.parsers.smi import (
    GpuFacts,
    csv_key,
    is_na,
    parse_nvml_smi,
    parse_smi_csv,
    parse_smi_table,
    parse_smi_text,
    parse_smi_xml,
    reasons_from_mask,
    to_flag,
    to_number,
    unreachable_gpus,
)

from tests.probe_data import CASES, PUBLIC, SYNTHETIC, text
from tests.strategies import mutated

P4 = "nvidia-smi__tesla-p4-nas-device-handle-unknown-error.txt"


@functools.lru_cache(maxsize=None)
def body(name: str) -> str:
    return text(PUBLIC / name)


def test_unreachable_line_without_a_space_before_the_bus():
    ((b, reason, line),) = unreachable_gpus(body(P4).splitlines())
    assert (b, reason) == ("0000:07:00.0", "Unknown Error") and line.startswith("Unable to determine")


def case(name: str) -> str:
    return text(CASES / name)


@pytest.mark.parametrize("raw,num", [("16x", 16), ("67.74 W", 67.74), ("-2 C", -2), ("192 bank(s)", 192),
                                     ("0 %", 0), ("81559 MiB", 81559), ("0x0000000000000080", 128),
                                     ("[N/A]", None), ("N/A", None), ("Requested functionality has been deprecated", None),
                                     ("", None), ("ERR!", None), ("9" * 40, None)])
def test_to_number(raw, num):
    assert to_number(raw) == num


@pytest.mark.parametrize("raw,flag", [("Enabled", True), ("Active", True), ("Yes", True), ("On", True),
                                      ("Disabled", False), ("Not Active", False), ("No", False), ("Off", False),
                                      ("[N/A]", None), ("Pass-Through", None)])
def test_to_flag(raw, flag):
    assert to_flag(raw) is flag


def test_na_values_are_missing_never_zero():
    assert is_na("[N/A]") and is_na("N/A") and is_na("[Not Supported]") and is_na(None)
    assert not is_na("0")


def test_csv_header_keys_drop_units_and_old_throttle_names():
    assert csv_key("memory.total [MiB]") == "memory.total"
    assert csv_key("clocks_throttle_reasons.hw_slowdown") == "clocks_event_reasons.hw_slowdown"
    assert csv_key("fan.speed [%]") == "fan.speed"


def test_reasons_from_mask_uses_nvml_bits():
    r = reasons_from_mask(0x88)
    assert r["hw_power_brake_slowdown"] and r["hw_slowdown"]
    assert not r["gpu_idle"] and not r["hw_thermal_slowdown"]


def test_xml_v12_a100_one_of_four_listed():
    doc = parse_smi_xml(case("nvidia-smi-q-x__a100-sxm4-80gb-mig-enabled-1-of-4-gpus.xml"))
    assert doc.complete and not doc.truncated
    assert doc.attached_count == 4 and len(doc.gpus) == 1
    g = doc.gpus[0]
    assert g.bus_id == "00000000:01:00.0" and g.name == "NVIDIA A100-SXM4-80GB"
    assert g.flag("mig.mode.current") is True and g.mig_devices == 4
    assert g.flag("persistence_mode") is False
    assert g.num("pcie.link.gen.current") == 4 and g.num("pcie.link.width.max") == 16
    assert g.num("temperature.slowdown") == 89 and g.num("temperature.gpu") == 27
    assert g.num("enforced.power.limit") == 500 and g.num("power.default_limit") == 500
    assert g.text("remapped_rows") is None and g.get("remapped_rows").raw == "N/A"
    # the MIG devices' own <ecc_error_count> is not the GPU's ECC
    assert g.num("ecc.errors.uncorrected.volatile.sram") == 0
    assert g.line("ecc.mode.current") == "<current_ecc>Enabled</current_ecc>"
    assert doc.driver_version.raw == "535.54.03" and doc.attached.line == "<attached_gpus>4</attached_gpus>"


def test_xml_v11_a10g_link_and_idle_reasons():
    doc = parse_smi_xml(case("nvidia-smi-q-x__a10g-idle-p8-healthy.xml"))
    g = doc.gpus[0]
    assert g.num("pcie.link.width.current") == 8 and g.num("pcie.link.width.max") == 16
    assert g.num("pcie.link.gen.current") == 1 and g.text("pstate") == "P8"
    assert g.flag("clocks_event_reasons.gpu_idle") is True  # from <clocks_throttle_reason_gpu_idle>
    assert g.flag("clocks_event_reasons.hw_power_brake_slowdown") is False
    assert g.text("virtualization_mode") == "Pass-Through"
    assert g.num("remapped_rows.histogram.max") == 192 and g.flag("remapped_rows.pending") is False
    assert [(p.pid, p.type, p.name) for p in g.processes] == [("725", "G", "/usr/lib/xorg/Xorg")]
    assert not g.processes[0].compute
    assert "<process_name>/usr/lib/xorg/Xorg</process_name>" in g.processes[0].lines


def test_xml_multiline_value_is_read():
    """The A100 pass-through file breaks one value over two lines (`Not Active\\n   </...>`)."""
    g = parse_smi_xml(case("nvidia-smi-q-x__a100-sxm4-40gb-mig-passthrough-vm.xml")).gpus[0]
    assert g.flag("clocks_event_reasons.applications_clocks_setting") is False
    assert g.num("ecc.errors.corrected.volatile.sram") is None  # N/A under MIG
    assert g.num("ecc.errors.uncorrected.aggregate.dram") == 0


def test_xml_v13_truncated_paste_is_closed_and_read():
    doc = parse_smi_xml(text(PUBLIC / "nvidia-smi-q-x__rtx-pro-6000-blackwell-v13-partial.xml"))
    assert doc.truncated and not doc.complete and not doc.problems
    g = doc.gpus[0]
    assert g.text("brand") == "NVIDIA RTX"
    assert g.num("temperature.gpu.tlimit") == 68 and g.num("temperature.slowdown.tlimit") == -2
    assert g.num("pcie.link.gen.gpumax") == 5 and g.num("pcie.link.gen.hostmax") == 4
    assert g.num("fabric.state") is None and g.text("fabric.state") is None


def test_xml_cut_in_the_middle_of_an_element():
    body = case("nvidia-smi-q-x__a10g-idle-p8-healthy.xml")
    cut = body[: body.index("<gpu_temp>") + 6]  # "<gpu_t": an unfinished tag
    doc = parse_smi_xml(cut)
    assert doc.truncated and len(doc.gpus) == 1
    assert doc.gpus[0].num("remapped_rows.correctable") == 0
    assert doc.gpus[0].num("temperature.gpu") is None


def test_xml_all_na_vgpu_guest_and_old_ecc_elements():
    g = parse_smi_xml(text(PUBLIC / "nvidia-smi-q-x__grid-p4-vgpu-guest-wddm-all-na.xml")).gpus[0]
    assert g.get("ecc.errors.corrected.volatile.total").raw == "N/A"
    assert g.num("ecc.errors.corrected.volatile.total") is None
    assert g.text("virtualization_mode") == "VGPU" and g.text("persistence_mode") is None
    assert len(g.processes) == 13 and all(p.type == "C+G" for p in g.processes)
    assert g.processes[-1].name == "C:\\Windows\\explorer.exe"


def test_xml_entity_declaration_is_refused():
    doc = parse_smi_xml(text(SYNTHETIC / "synthetic_nvidia-smi-q-x__entity-declaration.xml"))
    assert doc.error_kind == "refused" and not doc.gpus
    assert any("<!ENTITY" in ln for ln in doc.error_lines)


def test_xml_doctype_with_embedded_dtd_is_dropped():
    body = case("nvidia-smi-q-x__a10g-idle-p8-healthy.xml").replace(
        '<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v11.dtd">',
        "<!DOCTYPE nvidia_smi_log [\n<!ELEMENT nvidia_smi_log (timestamp, driver_version)>\n]>")
    doc = parse_smi_xml(body)
    assert doc.complete and doc.gpus[0].name == "NVIDIA A10G"


def _peak_bytes(fn, *args):
    """The peak of Python's allocations (tracemalloc) while ``fn(*args)`` runs, and its result."""
    import tracemalloc

    tracemalloc.start()
    try:
        out = fn(*args)
        return tracemalloc.get_traced_memory()[1], out
    finally:
        tracemalloc.stop()


XML_HEAD = '<?xml version="1.0" ?>\n<nvidia_smi_log>\n'


def test_deeply_nested_xml_is_refused_before_it_costs_memory():
    # issue 11: a path tuple per tag made 210 KB of nested tags take 46 s and 9.7 GB; 3,500 levels here
    # (the old reader's tuples: ~100 MB) are refused in well under 20 MB
    peak, doc = _peak_bytes(parse_smi_xml, XML_HEAD + "<gpu>\n" * 3500)
    assert not doc.gpus and any("nested more than 32 deep" in p for p in doc.problems)
    assert peak < 20 * 2 ** 20


def test_many_sibling_tags_on_one_line_do_not_copy_the_line_per_tag():
    # issue 11: 20,000 sibling tags on one 160 KB line took 3.2 GB (a copy of the line per tag); 8,000 tags on
    # a 120 KB line here (~500 MB in the old reader, 3 MB now); a line past MAX_XML_QUOTED_LINE is quoted as <tag>value</tag>
    line = "".join(f"<gpu id=\"0000:{i % 256:02x}:00.0\"><product_name>H100</product_name></gpu>" for i in range(2000))
    peak, doc = _peak_bytes(parse_smi_xml, XML_HEAD + line + "\n</nvidia_smi_log>\n")
    assert len(doc.gpus) == 2000 and doc.gpus[0].line("name") == "<product_name>H100</product_name>"
    assert peak < 64 * 2 ** 20


def test_an_xml_with_more_elements_than_any_nvidia_smi_output_is_refused():
    from wizard.parsers.smi import MAX_XML_ELEMENTS

    doc = parse_smi_xml(XML_HEAD + "<a/>" * (MAX_XML_ELEMENTS + 1) + "</nvidia_smi_log>\n")
    assert not doc.gpus and any(f"more than {MAX_XML_ELEMENTS:,} elements" in p for p in doc.problems)


def test_xml_error_printed_instead_of_xml():
    doc = parse_smi_xml(case("nvidia-smi__driver-not-loaded-failed-to-communicate.txt"))
    assert doc.error_kind == "no_driver" and not doc.problems


def test_text_multi_gpu_hopper_layout():
    doc = parse_smi_text(case("nvidia-smi-q__8x-h100-sxm-hw-power-brake-slowdown-active-all-gpus.txt"))
    assert doc.attached_count == 8 and len(doc.gpus) == 8
    assert [g.index for g in doc.gpus] == list(range(8))
    g = doc.gpus[0]
    assert g.bus_id == "00000000:19:00.0" and g.header == "GPU 00000000:19:00.0"
    assert g.flag("clocks_event_reasons.hw_power_brake_slowdown") is True  # nested under "HW Slowdown"
    assert g.flag("clocks_event_reasons.hw_thermal_slowdown") is False
    assert g.num("pcie.replay_counter") == 67
    assert g.num("ecc.errors.uncorrected.volatile.sram.parity") == 0
    assert g.text("ecc.errors.uncorrected.aggregate.sram.thresholdExceeded") == "No"
    assert g.num("temperature.gpu.tlimit") == 56 and g.num("temperature.shutdown.tlimit") == -8
    assert g.text("fabric.state") == "Completed" and g.processes_read and not g.processes
    assert g.line("pcie.replay_counter") == "Replays Since Reset               : 67"
    assert doc.gpus[7].num("pcie.replay_counter") == 67 and doc.gpus[6].num("pcie.replay_counter") == 82


def test_text_590_wide_layout_with_processes():
    g = parse_smi_text(case("nvidia-smi-q__h200-single-gpu-vm-gpu-burn-load-healthy.txt")).gpus[0]
    assert g.num("utilization.gpu") == 100 and g.num("power.draw") == 627.32
    assert g.num("enforced.power.limit") == 700
    assert [(p.pid, p.type, p.name, p.used_mib) for p in g.processes] == [
        ("10291", "C", "/root/tools/memhog", 2566), ("10293", "C", "/root/tools/memhog", 1542),
        ("10309", "C", "./gpu_burn", 28234)]


def test_text_mig_device_blocks_do_not_leak_into_the_gpu():
    g = parse_smi_text(text(PUBLIC / "nvidia-smi-q__h200-mig-idle-590.txt")).gpus[0]
    assert g.mig_devices == 5
    assert g.get("remapped_rows").raw == "N/A"
    assert g.get("ecc.errors.uncorrected.volatile.sram") is None  # only the MIG devices print it
    assert g.num("ecc.errors.uncorrected.volatile.sram.parity") == 0
    assert g.text("utilization.gpu") is None


def test_text_section_without_gpu_header():
    doc = parse_smi_text(case("nvidia-smi-q__remapped-rows-uncorrectable-pending.txt"))
    assert len(doc.gpus) == 1 and doc.gpus[0].implicit
    g = doc.gpus[0]
    assert g.num("remapped_rows.uncorrectable") == 4 and g.flag("remapped_rows.pending") is True
    assert g.get("remapped_rows.failure") is None


def test_text_pci_section_starting_mid_block():
    g = parse_smi_text(case("nvidia-smi-q__p100-pci-link-gen3-x16-section.txt")).gpus[0]
    assert g.bus_id == "00000000:40:00.0"
    assert (g.num("pcie.link.gen.current"), g.num("pcie.link.gen.max")) == (3, 3)
    assert g.flag("clocks_event_reasons.gpu_idle") is True and g.flag("clocks_event_reasons.hw_slowdown") is False


def test_text_performance_display_only():
    doc = parse_smi_text(case("nvidia-smi-q-d-performance__desktop-idle-no-throttle.txt"))
    assert doc.driver_version.raw == "495.44" and doc.cuda_version.raw == "11.5"
    assert doc.gpus[0].text("pstate") == "P0" and doc.gpus[0].flag("clocks_event_reasons.gpu_idle")


def test_text_partial_with_cut_markers():
    doc = parse_smi_text(case("nvidia-smi-q__a100-sxm4-80gb-dram-ce-177-row-remap-pending-partial.txt"))
    g = doc.gpus[0]
    assert g.num("ecc.errors.corrected.aggregate.dram") == 177
    assert g.num("remapped_rows.correctable") == 1 and g.num("remapped_rows.histogram.high") == 1
    assert g.text("retired_pages.single_bit_ecc.count") is None


def test_text_old_single_double_bit_layout():
    g = parse_smi_text(text(SYNTHETIC / "synthetic_nvidia-smi-q__v100-old-ecc-layout-retired-pages-pending.txt")).gpus[0]
    assert g.num("ecc.errors.corrected.volatile.device_memory") == 3
    assert g.num("ecc.errors.uncorrected.volatile.total") == 1
    assert g.num("retired_pages.single_bit_ecc.count") == 2 and g.flag("retired_pages.pending") is True


def test_text_lost_gpu_line_is_an_error():
    body = ("Attached GPUs                             : 2\n"
            "Unable to determine the device handle for gpu 0000:3B:00.0: Unknown Error\n"
            + case("nvidia-smi-q__8x-rtx4090-server-gpu0-section.txt").split("Attached GPUs")[1].split("\n", 1)[1])
    doc = parse_smi_text(body)
    assert doc.error_kind == "gpu_unreachable" and len(doc.gpus) == 1


def test_table_eight_gpus_and_empty_processes():
    doc = parse_smi_table(case("nvidia-smi__8x-h100-hbm3-healthy-with-processes.txt"))
    assert len(doc.gpus) == 8 and doc.complete
    g = doc.gpus[3]
    assert (g.index, g.bus_id, g.name) == (3, "00000000:5D:00.0", "NVIDIA H100 80GB HBM3")
    assert g.num("temperature.gpu") == 23 and g.num("power.draw") == 72 and g.num("enforced.power.limit") == 700
    assert g.num("ecc.errors.uncorrected.volatile.total") == 0 and g.text("mig.mode.current") == "Disabled"
    assert g.processes_read and not g.processes
    assert doc.driver_version.raw == "550.90.07" and doc.cuda_version.raw == "12.4"


def test_table_err_gpu_and_cut_table():
    doc = parse_smi_table(case("nvidia-smi__a40-gpu0-err-partial.txt"))
    assert len(doc.gpus) == 2 and not doc.complete
    bad, good = doc.gpus
    assert bad.text("name") == "ERR!" and bad.errors
    assert good.num("temperature.gpu") == 26 and not good.errors


def test_table_mig_and_processes_with_instance_ids():
    doc = parse_smi_table(text(PUBLIC / "nvidia-smi__h200-mig-load-gpu-burn-processes.txt"))
    g = doc.gpus[0]
    assert g.mig_devices == 5 and g.text("table.ecc") == "On" and g.text("utilization.gpu") is None
    assert [(p.pid, p.name, p.used_mib) for p in g.processes][-1] == ("12267", "./gpu_burn", 13526)


def test_table_fan_err_only():
    g = parse_smi_table(text(PUBLIC / "nvidia-smi__geforce-fan-err-exclusive-process.txt")).gpus[0]
    assert g.text("fan.speed") == "ERR!" and g.num("temperature.gpu") == 38 and g.name == "NVIDIA GeForce ..."


@pytest.mark.parametrize("name,kind", [("nvidia-smi__driver-not-loaded-failed-to-communicate.txt", "no_driver"),
                                       ("nvidia-smi__rtx5090-no-devices-found.txt", "no_devices")])
def test_table_error_messages(name, kind):
    doc = parse_smi_table(case(name))
    assert doc.error_kind == kind and doc.error_lines and not doc.gpus and not doc.problems


def test_csv_windows_geforce_all_fields():
    doc = parse_smi_csv(case("nvidia-smi-query-gpu-csv__rtx2080super-wddm-all-fields.txt"))
    assert doc.complete and doc.attached_count == 1
    g = doc.gpus[0]
    assert g.index == 0 and g.bus_id == "00000000:0C:00.0"
    assert g.text("serial") is None and g.text("persistence_mode") is None  # [N/A]
    assert g.num("temperature.memory") is None  # bare N/A
    assert g.num("memory.total") == 8192 and g.num("power.default_limit") == 250
    assert g.flag("clocks_event_reasons.gpu_idle") is True
    assert g.line("temperature.gpu") == "temperature.gpu: 36"


def test_csv_h200_mig_212_columns_with_mask():
    g = parse_smi_csv(text(PUBLIC / "nvidia-smi-query-gpu-csv__h200-mig-idle-590-all-fields.txt")).gpus[0]
    assert g.num("temperature.gpu.tlimit") == 59 and g.text("fabric.state") == "Completed"
    assert g.text("hostname") is None and g.text("platform.chassis_serial_number") is None
    assert g.flag("clocks_event_reasons.gpu_idle") is True and g.num("clocks_event_reasons.active") == 1


def test_csv_without_header_is_unreadable():
    doc = parse_smi_csv("0, NVIDIA H100 80GB HBM3, 00000000:19:00.0, 27\n")
    assert not doc.gpus and doc.problems


def test_nvml_json_maps_to_the_same_keys():
    probe = {"init": "ok", "driver_version": "535.161.08", "cuda_driver_version": 12020, "count": 1,
             "gpus": [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": "00000000:19:00.0",
                       "serial": "1654922005923", "uuid": "GPU-x", "errors": {}, "persistence_mode": True,
                       "ecc_mode": {"current": True, "pending": True},
                       "ecc_errors": {"aggregate": {"uncorrected": {"sram": 2, "dram": 0}}},
                       "remapped_rows": {"correctable": 0, "uncorrectable": 1, "pending": True, "failure": False},
                       "clocks_event_reasons": 0x88, "pcie": {"width_current": 16, "width_max": 16},
                       "compute_processes": [{"pid": 7, "used_memory_bytes": 1048576, "name": "python"}]}]}
    text_ = json.dumps(probe, sort_keys=True)
    doc = parse_nvml_smi(text_)
    assert doc.complete and doc.cuda_version.raw == "12.2" and doc.attached_count == 1
    g = doc.gpus[0]
    assert g.flag("persistence_mode") is True and g.flag("ecc.mode.current") is True
    assert g.num("ecc.errors.uncorrected.aggregate.sram") == 2
    assert g.flag("remapped_rows.pending") is True
    assert g.flag("clocks_event_reasons.hw_power_brake_slowdown") is True
    assert g.processes[0].used_mib == 1 and g.processes[0].compute
    for key in ("ecc.mode.current", "remapped_rows.pending", "pcie.link.width.current"):
        assert g.line(key) in text_  # evidence is a verbatim fragment of the probe's JSON
    assert g.processes[0].lines[0] in text_


def test_nvml_json_init_failure_and_garbage():
    assert parse_nvml_smi('{"init": "library_not_found", "error": "x"}').error_kind == "nvml"
    assert parse_nvml_smi("not json").problems
    assert parse_nvml_smi('{"init": "ok", "gpus": [1, "x", {"index": true}]}').gpus[0].index == 2


def test_every_format_gives_gpufacts():
    docs = [parse_smi_xml(case("nvidia-smi-q-x__a10g-idle-p8-healthy.xml")),
            parse_smi_text(case("nvidia-smi-q__a10-remapped-rows-unc4-pending-full.txt")),
            parse_smi_table(case("nvidia-smi__8x-h100-hbm3-healthy-with-processes.txt")),
            parse_smi_csv(case("nvidia-smi-query-gpu-csv__rtx2080super-wddm-all-fields.txt"))]
    for d in docs:
        assert d.gpus and all(isinstance(g, GpuFacts) for g in d.gpus)
        assert all(r.line for g in d.gpus for r in g.fields.values())


def test_text_lost_gpu_between_blocks_is_not_blamed_on_the_previous_gpu():
    h100 = case("nvidia-smi-q__8x-h100-sxm-hw-power-brake-slowdown-active-all-gpus.txt")
    body = h100.replace("\nGPU 00000000:3B:00.0\n",
                        "\nUnable to determine the device handle for gpu 0000:3B:00.0: Unknown Error\n"
                        "GPU 00000000:3B:00.0\n", 1)
    doc = parse_smi_text(body)
    assert doc.error_kind == "gpu_unreachable"
    assert not doc.gpus[0].errors and len(doc.gpus) == 8


def test_text_field_reading_gpu_is_lost_marks_that_gpu():
    body = case("nvidia-smi-q__a10-remapped-rows-unc4-pending-full.txt").replace(
        "    Product Name                          : NVIDIA A10", "    Product Name                          : GPU is lost")
    g = parse_smi_text(body).gpus[0]
    assert g.errors == ["Product Name                          : GPU is lost"]


def test_csv_noheader_columns_named_only_where_the_values_say_it():
    from wizard.parsers.smi import parse_smi_csv_noheader, read_noheader_csv

    # real rows (8x H100, driver 580.126.20) without their header line
    nh = read_noheader_csv(text(PUBLIC / "nvidia-smi-query-gpu-csv-noheader__8x-h100-580-rows-excerpt.txt"))
    assert nh.columns[:4] == ["index", "uuid", "pci.bus_id", "driver_version"] and nh.columns[10] == "compute_mode"
    assert nh.columns[4] is None and "MiB" in nh.labels[4] and "cannot tell which" in nh.labels[4]
    assert nh.columns[5] is None and " W " in nh.labels[5] + " " and nh.columns[11] is None and nh.na == 0
    doc = parse_smi_csv_noheader(text(PUBLIC / "nvidia-smi-query-gpu-csv-noheader__8x-h100-580-rows-excerpt.txt"))
    assert len(doc.gpus) == 8 and doc.gpus[7].index == 7 and doc.gpus[1].bus_id == "00000000:18:00.0"
    assert doc.gpus[0].get("memory.total") is None and not doc.complete  # never guessed
    # nounits: bare numbers are not guessed (temperature? power? count?); [N/A] counted; pstate and name read
    nh = read_noheader_csv("0, NVIDIA T4, 45, 5, 1000, 16384, [N/A], [N/A], [N/A], P0\n")
    assert nh.columns[1] == "name" and nh.columns[9] == "pstate" and nh.columns[2] is None and nh.na == 3
    # rows of different widths are not read as columns
    assert read_noheader_csv("NVIDIA A10, 23028 MiB\nNVIDIA A10\n").problems


def test_csv_noheader_detector():
    from wizard.parsers.smi_kinds import detect_csv, detect_csv_noheader

    one = text(PUBLIC / "nvidia-smi-query-gpu-csv-noheader__h100-name-mem-driver-1row.txt")
    assert detect_csv_noheader(one) == 0.7 and detect_csv(one) == 0.0
    with_header = text(PUBLIC / "nvidia-smi-query-gpu-csv__8x-h100-580-power-clocks-ecc.txt")
    assert detect_csv_noheader(with_header) == 0.0 and detect_csv(with_header) == 0.95
    assert detect_csv_noheader("a, b, c\n1, 2, 3\n") == 0.0  # nothing says nvidia-smi
    assert detect_csv_noheader("Dec  1 kernel: foo, bar\n") == 0.0


@given(mutated([PUBLIC / "nvidia-smi-query-gpu-csv-noheader__8x-h100-580-rows-excerpt.txt",
                PUBLIC / "nvidia-smi-query-gpu-csv-noheader__h100-name-mem-driver-1row.txt"],
               [",", ", ", "[N/A]", "P0", "MiB", " W", "GPU-", "00000000:18:00.0", "NVIDIA ", "\n", "\0"]))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_csv_noheader_reader_never_raises_and_names_only_matching_columns(t):
    from wizard.parsers.smi import parse_smi_csv_noheader, read_noheader_csv
    from wizard.parsers.smi_kinds import detect_csv_noheader

    nh = read_noheader_csv(t)
    assert len(nh.columns) == len(nh.labels) and (not nh.columns or all(len(r) == len(nh.columns) for r in nh.rows))
    for i, k in enumerate(nh.columns):
        if k == "pci.bus_id":
            assert all(":" in r[i] or is_na(r[i]) for r in nh.rows)
    parse_smi_csv_noheader(t)
    assert detect_csv_noheader(t) in (0.0, 0.7)


def test_a_mark_the_reporter_added_after_a_value_is_not_part_of_it():
    """Real: "Pending : Yes    <===" (the reporter's arrow) is a pending row remap."""
    doc = parse_smi_text(text(PUBLIC / "nvidia-smi-q__8gpu-node-ecc-unknown-error-row-remap-uncorrectable-pending.txt"))
    (g,) = doc.gpus
    assert g.text("remapped_rows.pending") == "Yes"


def test_dmon_samples_read_as_one_gpu_with_peaks_and_are_judged_by_the_smi_rules():
    from wizard.explain import explain_text
    from wizard.parsers.smi import detect_smi_dmon, parse_smi_dmon

    body = text(PUBLIC / "nvidia-smi-dmon__h200-gpuburn.txt")
    assert detect_smi_dmon(body) > 0.9
    doc = parse_smi_dmon(body)
    assert len(doc.gpus) == 1 and doc.gpus[0].index == 0
    g = doc.gpus[0]
    assert g.num("power.draw") == 632 and g.num("temperature.gpu") == 54 and g.num("clocks.sm") == 1980
    r = explain_text(body)
    assert r.kind == "nvidia-smi-dmon" and r.verdict.value == "pass"
    assert any(f.id == "health.temperature" and "54 °C" in f.message for f in r.findings)
    hot = body.replace("   54     42", "   91     42", 1)
    assert explain_text(hot).verdict.value == "fail"


def test_what_follows_the_xml_document_is_not_part_of_it():
    """The probe reads stdout and stderr together: a login shell's complaint after the document (captured on this
    VM from a root login over ssh while other shells ran pyenv's rehash) must not make the document unreadable."""
    xml = (CASES / "nvidia-smi-q-x__a10g-idle-p8-healthy.xml").read_text()
    tail = ("rm: cannot remove '/root/.pyenv/shims/tmp.yTI4SOU8ri': No such file or directory\n"
            "pyenv: cannot rehash: /root/.pyenv/shims isn't writable\n")
    doc = parse_smi_xml(xml + tail)
    assert doc.driver_version is not None and doc.driver_version.raw == "515.105.01"
    assert len(doc.gpus) == 1 and not doc.problems and not doc.error_kind
    # an nvidia-smi error after the document is still read as one
    doc = parse_smi_xml(xml + "Unable to determine the device handle for GPU0000:00:1E.0: Unknown Error\n")
    assert doc.driver_version is not None and doc.error_kind


def test_a_query_csv_through_column_t_is_read_as_csv():
    """Held-out round 110: `nvidia-smi --query-gpu=... --format=csv | column -s, -t` turns the commas into aligned
    columns; the header of known properties and each row split at two or more spaces read as the CSV again."""
    from tests.probe_data import PUBLIC, text
    from wizard.parsers.smi_kinds import detect_csv

    t = text(PUBLIC / "nvidia-smi-query-gpu-csv__2x-gtx1080-mining-131w-38c-healthy.txt")
    assert detect_csv(t) >= 0.9
    doc = parse_smi_csv(t)
    assert [g.text("name") for g in doc.gpus] == ["GeForce GTX 1080"] * 2
    assert [g.num("temperature.gpu") for g in doc.gpus] == [38, 35] and not doc.problems


def test_a_grep_of_nvidia_smi_q_under_a_comment_line_is_read():
    """`nvidia-smi -q | grep -A3 Fabric` with a '# cmd: ...' note above it and grep's '--' separators (real, held-out
    round 139): read as -q text, the fabric state judged."""
    from wizard.explain import explain_text

    r = explain_text((PUBLIC / "nvidia-smi-q-grep-fabric__4xh100-gke-a3-all-completed-success.txt").read_text(), "f")
    assert any(f.id == "health.fabric" and f.verdict.value == "pass" for f in r.findings)


def test_a_query_property_is_a_whole_name_not_a_prefix_of_a_word():
    """Held-out round 280 (real): kubectl get pods' 'NAMESPACE NAME READY STATUS' header scored as a --query-gpu CSV
    (NAMESPACE began with 'name', a property); properties are whole or continue with '.' or '_'."""
    from wizard.parsers.smi import csv_header_score

    assert csv_header_score("NAMESPACE, NAME, READY, STATUS, RESTARTS, AGE") == 0.0
    assert csv_header_score("name, pci.bus_id, clocks_event_reasons.active, clocks.sm [MHz]") == 1.0
