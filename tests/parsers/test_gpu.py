"""Parsers of GPU presence and the driver (wizard/parsers/gpu.py).

Real outputs from tests/data (PROVENANCE.md lists sources); ``synthetic`` inputs are marked.
"""

from __future__ import annotations

import json

import pytest
from wizard.parsers.gpu import parse_driver_version, parse_nvidia_smi_l, parse_nvml, parse_pci
from wizard.probes import ProbeOutput

from tests.probe_data import CASES, LOCAL_VM, PUBLIC, SYNTHETIC, collect_tree, text

H200_TREE = SYNTHETIC / "synthetic_sysfs-pci-h200x8-nvswitch"
H200_BDFS = ["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0",
             "0000:9a:00.0", "0000:ab:00.0", "0000:ba:00.0", "0000:db:00.0"]


# ------------------------------------------------------------------ sysfs PCI


def test_parse_pci_dev_vm_has_no_nvidia_function():
    out = collect_tree(LOCAL_VM, ["pci"])["pci"]
    facts = parse_pci(out)
    assert facts.devices_seen == 6  # 0000:00:00.0 .. 0000:00:05.0 (Intel host bridge, virtio)
    assert facts.functions == [] and facts.gpus == []


def test_parse_pci_synthetic_h200_board():
    facts = parse_pci(collect_tree(H200_TREE, ["pci"])["pci"])
    assert facts.devices_seen == 12
    assert [g.bdf for g in facts.gpus] == H200_BDFS  # sorted by bus id
    assert [b.bdf for b in facts.bridges] == ["0000:05:00.0", "0000:06:00.0"]
    g = facts.gpus[0]
    assert (g.device_id, g.class_code, g.pci_id) == ("0x2335", "0x030200", "10de:2335")
    assert g.subsystem == "0x10de:0x18be"
    assert (g.current_link_speed, g.current_link_width) == ("32.0 GT/s PCIe", 16)
    assert (g.max_link_speed, g.max_link_width) == ("32.0 GT/s PCIe", 16)
    assert g.driver == "nvidia"
    assert [x.numa_node for x in facts.gpus] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert "/sys/bus/pci/devices/0000:18:00.0/vendor:0x10de" in g.evidence
    assert "/sys/bus/pci/devices/0000:18:00.0/class:0x030200" in g.evidence
    assert "/sys/bus/pci/drivers/nvidia/0000:18:00.0" in g.evidence
    assert facts.bridges[0].driver == "nvidia-nvswitch"
    assert facts.bridges[0].pci_id == "10de:22a3"


def test_parse_pci_synthetic_unreadable_files_and_odd_values():
    files: dict[str, str | None] = {
        "/sys/bus/pci/devices/0000:01:00.0/vendor": "0x10de\n",
        "/sys/bus/pci/devices/0000:01:00.0/class": "0x030000\n",  # VGA: a consumer card
        "/sys/bus/pci/devices/0000:01:00.0/numa_node": "-1\n",    # no NUMA affinity
        "/sys/bus/pci/devices/0000:01:00.0/current_link_width": "x16\n",
        "/sys/bus/pci/devices/0000:01:00.0/device": None,         # unreadable
        "/sys/bus/pci/devices/0000:02:00.0/vendor": None,         # unreadable vendor: counted
        "/sys/bus/pci/devices/0000:01:00.1/vendor": "0x10de\n",
        "/sys/bus/pci/devices/0000:01:00.1/class": "0x040300\n",  # its HDMI audio function
    }
    facts = parse_pci(ProbeOutput("pci", "sysfs", files=files))
    assert facts.devices_seen == 3
    (gpu,) = facts.gpus
    assert gpu.bdf == "0000:01:00.0"
    assert gpu.numa_node == -1
    assert gpu.current_link_width is None
    assert gpu.pci_id == "10de:?"
    assert [f.bdf for f in facts.functions] == ["0000:01:00.0", "0000:01:00.1"]


# ------------------------------------------------------------------ nvidia-smi -L


def test_parse_nvidia_smi_l_eight_h100():
    raw = text(PUBLIC / "nvidia-smi-L__8x-h100-rhel-ai-vm.txt")
    s = parse_nvidia_smi_l(raw)
    assert [i for i, _, _ in s.gpus] == list(range(8))
    assert {name for _, name, _ in s.gpus} == {"NVIDIA H100 80GB HBM3"}
    assert s.gpus[7][2] == "GPU-5534d557-2a95-300a-81e6-7b626d87378a"
    assert s.error_kind == "" and s.problems == []


def test_parse_nvidia_smi_l_driver_not_loaded():
    raw = text(CASES / "nvidia-smi__driver-not-loaded-failed-to-communicate.txt")
    s = parse_nvidia_smi_l(raw)
    assert s.error_kind == "no_driver"
    assert s.error_lines == [raw.strip()]
    assert s.gpus == []


def test_parse_nvidia_smi_l_no_devices():
    s = parse_nvidia_smi_l(text(CASES / "nvidia-smi__rtx5090-no-devices-found.txt"))
    assert s.error_kind == "no_devices"
    assert s.error_lines == ["No devices were found"]


def test_parse_nvidia_smi_l_synthetic_gpu_that_stopped_answering():
    # the error line is verbatim from a real report (PROVENANCE.md); the listing is synthetic
    raw = text(SYNTHETIC / "synthetic_nvidia-smi-L__gpu3-device-handle-error.txt")
    s = parse_nvidia_smi_l(raw)
    assert s.error_kind == "gpu_unreachable"
    assert s.error_lines == ["Unable to determine the device handle for GPU3: 0000:04:00.0: Unknown Error"]
    assert [i for i, _, _ in s.gpus] == [0, 1, 2, 4, 5, 6, 7]


@pytest.mark.parametrize("line", [
    "Failed to initialize NVML: Driver/library version mismatch",
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
    "that the latest NVIDIA driver is installed and running.",
])
def test_parse_nvidia_smi_l_synthetic_other_driver_messages(line):
    assert parse_nvidia_smi_l(line + "\n").error_kind == "no_driver"


def test_parse_nvidia_smi_l_synthetic_mig_lines_are_not_problems():
    raw = ("GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-aaaa)\n"
           "  MIG 1g.5gb     Device  0: (UUID: MIG-bbbb)\n"
           "  MIG 1g.5gb     Device  1: (UUID: MIG-cccc)\n")
    s = parse_nvidia_smi_l(raw)
    assert s.gpus == [(0, "NVIDIA A100-SXM4-40GB", "GPU-aaaa")]
    assert s.problems == [] and s.error_kind == ""


def test_parse_nvidia_smi_l_unexpected_text_is_other():
    s = parse_nvidia_smi_l("Segmentation fault (core dumped)\n")
    assert s.error_kind == "other"
    assert s.problems == ["Segmentation fault (core dumped)"]


# ------------------------------------------------------------------ NVML probe JSON


def test_parse_nvml_dev_vm_library_not_found():
    f = parse_nvml(text(LOCAL_VM / "nvml-probe.json"))
    assert f.init == "library_not_found"
    assert "libnvidia-ml.so.1" in f.error
    assert f.count is None and f.gpus == []
    assert f.problems == []


def _nvml_json(count: int, gpus: int | None = None) -> str:
    n = count if gpus is None else gpus
    return json.dumps({
        "init": "ok", "driver_version": "570.124.06", "cuda_driver_version": 12080, "count": count,
        "gpus": [{"index": i, "name": "NVIDIA H200", "pci_bus_id": f"00000000:{b[5:]}",
                  "serial": f"165102400{i:04d}", "uuid": f"GPU-{i:08x}", "memory_total_bytes": 150754820096,
                  "errors": {}} for i, b in enumerate(H200_BDFS[:n])],
    })


def test_parse_nvml_synthetic_healthy():
    f = parse_nvml(_nvml_json(8))
    assert (f.init, f.count, f.driver_version) == ("ok", 8, "570.124.06")
    assert f.cuda_driver_version == 12080 and f.cuda_version_str == "12.8"
    assert len(f.gpus) == 8 and f.gpus[3]["pci_bus_id"] == "00000000:5d:00.0"
    assert f.problems == []


@pytest.mark.parametrize("raw", ["", "Traceback (most recent call last):", "[1, 2]", '{"count": 3}',
                                 pytest.param("[" * 100_000, id="nested-100000-deep")])
def test_parse_nvml_garbage_is_a_problem(raw):
    f = parse_nvml(raw)
    assert f.problems
    assert f.init == ""


def test_parse_nvml_synthetic_wrongly_typed_fields_are_ignored():
    f = parse_nvml(json.dumps({"init": "ok", "count": "8", "cuda_driver_version": "12.4",
                               "gpus": [{"index": 0}, "junk"]}))
    assert f.count is None and f.cuda_driver_version is None and f.cuda_version_str == ""
    assert f.gpus == [{"index": 0}]


# ------------------------------------------------------------------ /proc/driver/nvidia/version


def test_parse_driver_version_open_module():
    raw = text(CASES / "proc-driver-nvidia-version__open-565.txt")
    d = parse_driver_version(raw)
    assert (d.version, d.flavour) == ("565.57.01", "open")
    assert d.line == raw.splitlines()[0].strip()
    assert d.gcc_line.startswith("GCC version:  gcc version 13.3.0")


def test_parse_driver_version_proprietary_module():
    d = parse_driver_version(text(PUBLIC / "proc-driver-nvidia-version__proprietary-515.txt"))
    assert (d.version, d.flavour) == ("515.76", "proprietary")


def test_parse_driver_version_nothing_to_read():
    d = parse_driver_version("cat: /proc/driver/nvidia/version: No such file or directory\n")
    assert (d.version, d.flavour, d.line) == ("", "", "")


def test_parse_nvidia_smi_l_mig_devices_belong_to_their_gpu():
    # telegraf#5812: GPU 0 of four A100-SXM4-80GB split into four 1g.20gb instances
    s = parse_nvidia_smi_l(text(PUBLIC / "nvidia-smi-L__4x-a100-sxm4-80gb-gpu0-mig-4x-1g.20gb.txt"))
    assert [g[0] for g in s.gpus] == [0, 1, 2, 3]
    assert [(m[0], m[1]) for m in s.mig] == [(0, "1g.20gb")] * 4
    assert s.mig[0][2] == "MIG-ce861fb0-a248-58ce-a9a8-f9adbc22a66a"
    assert not s.problems  # the "nvidia-smi -L" command line is not a problem


def test_parse_nvidia_smi_l_names_the_gpu_it_could_not_open():
    s = parse_nvidia_smi_l(text(SYNTHETIC / "synthetic_nvidia-smi-L__gpu3-device-handle-error.txt"))
    assert s.unreachable == ["0000:04:00.0"]
    # nvidia-smi's other spellings of the same line
    assert parse_nvidia_smi_l("Unable to determine the device handle for GPU0000:65:00.0: Unknown Error\n"
                              ).unreachable == ["0000:65:00.0"]
    assert parse_nvidia_smi_l("Unable to determine the device handle for GPU1: Unknown Error\n").unreachable == ["GPU1"]


def test_detect_smi_list_needs_uuid_lines():
    from wizard.parsers.gpu import detect_smi_list

    assert detect_smi_list(text(PUBLIC / "nvidia-smi-L__4x-rtx3090-prompt.txt")) == 0.95
    assert detect_smi_list(text(PUBLIC / "nvidia-smi-L__a100-80gb-pcie-mig-2g.20gb-prompt.txt")) == 0.95
    # torch collect_env's "GPU 0: <name>" lines carry no UUID: not an nvidia-smi -L
    assert detect_smi_list("GPU models and configuration:\nGPU 0: NVIDIA A100-SXM4-40GB\nGPU 1: NVIDIA A100-SXM4-40GB\n") == 0
    assert detect_smi_list("") == 0


INFO_H100 = PUBLIC / "proc-driver-nvidia-gpu-information__h100-80gb-hbm3-gsp-535.129.03.txt"
INFO_L4 = PUBLIC / "proc-driver-nvidia-gpu-information__snapd14893-l4-tab-separated.txt"
INFO_GTX1080 = PUBLIC / "proc-driver-nvidia-gpu-information__kvm-guest-gtx1080-vbios-unread-367.txt"


def test_parse_gpu_information_h100_every_field():
    from wizard.parsers.gpu import detect_gpu_information, parse_gpu_information

    t = text(INFO_H100)
    assert detect_gpu_information(t) == 1.0
    (g,) = parse_gpu_information(t).gpus
    assert (g.model, g.bus, g.minor, g.firmware, g.excluded) == ("NVIDIA H100 80GB HBM3", "0000:62:00.0", 5,
                                                                 "535.129.03", False)
    assert (g.irq, g.uuid, g.vbios, g.bus_type) == ("10", "GPU-9221d5d1-b60b-a624-bf14-0a1819cfda3b", "96.00.99.00.01",
                                                    "PCIe")
    assert (g.dma_size_bits, g.dma_mask) == (52, "0xfffffffffffff") and g.initialised
    assert g.path == "/proc/driver/nvidia/gpus/0000:62:00.0/information"  # from the `$ cat 0000\:62\:00.0` line
    assert g.fields["excluded"] == "GPU Excluded:    No"


def test_parse_gpu_information_tabs_old_driver_and_placeholders():
    from wizard.parsers.gpu import parse_gpu_information

    (l4,) = parse_gpu_information(text(INFO_L4)).gpus  # tab-separated, as nv-procfs.c writes it
    assert (l4.model, l4.bus, l4.vbios, l4.firmware, l4.excluded) == ("NVIDIA L4", "0000:70:00.0", "95.04.65.00.13",
                                                                       "", False)
    (old,) = parse_gpu_information(text(INFO_GTX1080)).gpus  # driver 367: no exclusion line; GPU not brought up
    assert (old.model, old.bus, old.excluded, old.initialised) == ("GeForce GTX 1080", "0000:02:03.0", None, False)
    assert old.vbios == "??.??.??.??.??" and old.uuid.startswith("GPU-????????")


def test_parse_gpu_information_several_blocks_head_headers_and_grep_prefixes():
    """Synthetic arrangements of the real H100 and L4 blocks: `head` of two files (==> path <== headers), the same
    blocks back to back without headers, and `grep . files` (path: before every line)."""
    from wizard.parsers.gpu import detect_gpu_information, parse_gpu_information

    h100 = text(INFO_H100).split("\n", 1)[1]  # the block without its `$ cat` line
    l4 = text(INFO_L4).split("\n", 1)[1]
    head = (f"==> /proc/driver/nvidia/gpus/0000:62:00.0/information <==\n{h100}\n"
            f"==> /proc/driver/nvidia/gpus/0000:70:00.0/information <==\n{l4}")
    for t in (head, h100 + l4):
        info = parse_gpu_information(t)
        assert [(g.model, g.bus) for g in info.gpus] == [("NVIDIA H100 80GB HBM3", "0000:62:00.0"),
                                                         ("NVIDIA L4", "0000:70:00.0")]
        assert detect_gpu_information(t) == 1.0
    grep = "".join(f"/proc/driver/nvidia/gpus/0000:70:00.0/information:{ln}\n" for ln in l4.splitlines())
    (g,) = parse_gpu_information(grep).gpus
    assert (g.model, g.bus, g.excluded) == ("NVIDIA L4", "0000:70:00.0", False) and detect_gpu_information(grep) == 1.0
    again = parse_gpu_information(h100 + h100.replace("GPU Excluded:    No", "GPU Excluded:    Yes")).gpus
    assert [g.excluded for g in again] == [True]  # one bus read twice: the later block is the state after


def test_gpu_information_detector_leaves_other_outputs_alone():
    from wizard.parsers.gpu import detect_gpu_information

    for name in ("nvidia-smi-q__cudalibsamples104-a100-sxm4-80gb-header.txt", "nvidia-container-cli__info-tail.txt",
                 "proc-driver-nvidia-version__proc-driver-nvidia-version.txt", "lscpu__threadripper-pro-lscpu.txt"):
        assert detect_gpu_information(text(PUBLIC / name)) == 0.0, name
    assert detect_gpu_information("Model: x\nIRQ: 3\n") == 0.0  # two common words are not the file


def test_parse_gpu_information_never_raises_on_mutations():
    from hypothesis import HealthCheck, given, settings

    from tests.strategies import garbage, mutated
    from wizard.parsers.gpu import detect_gpu_information, parse_gpu_information

    tokens = ["Model:", "GPU Excluded:", "Video BIOS:", "Bus Location:", "Device Minor:", "9" * 5000, "\t", "\n",
              "==> /proc/driver/nvidia/gpus/0000:01:00.0/information <==", "/proc/driver/nvidia/gpus/01:00.0/information:",
              "?", "Yes", "Maybe", "NVRM version: NVIDIA "]

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(t=mutated([INFO_H100, INFO_L4, INFO_GTX1080], tokens) | garbage(tokens))
    def run(t):
        assert 0.0 <= detect_gpu_information(t) <= 1.0
        info = parse_gpu_information(t)
        assert all(g.minor is None or g.minor >= 0 for g in info.gpus) and isinstance(info.problems, list)

    run()


def test_nvidia_smi_l_counts_a_gpu_listed_twice_once():
    """Held-out round 223 (real): two containers sharing one A100 (a DRA claim) each print 'GPU 0: ... (UUID: X)': one
    GPU, not two. GPUs with the same index and an empty UUID ('GPU-', a mixed node's K80s) still count apart."""
    t = text(PUBLIC / "kubectl-logs__dra-driver-shared-a100-two-containers.txt")
    from wizard.explain import clean

    s = parse_nvidia_smi_l(clean(t))
    assert len(s.gpus) == 1 and s.gpus[0][2] == "GPU-4404041a-04cf-1ccf-9e70-f139a9b1e23c" and len(s.lines) == 2
    assert len(parse_nvidia_smi_l("GPU 0: Tesla K80 (UUID: GPU-)\nGPU 1: Tesla K80 (UUID: GPU-)\n").gpus) == 2


def test_nvidia_smi_l_between_date_lines_of_a_loop():
    """Held-out round 292 (real): `date; nvidia-smi -L` in a loop in a pod: date(1)'s lines are neither GPUs nor
    problems; the one vGPU listed three times is one GPU."""
    from wizard.parsers.gpu import detect_smi_list

    t = text(PUBLIC / "nvidia-smi-L__vks-grid-a100-10c-vgpu-dra-pod.txt")
    s = parse_nvidia_smi_l(t)
    assert detect_smi_list(t) == 0.95 and len(s.gpus) == 1 and not s.problems


def test_proc_driver_version_indented_by_the_paste():
    """Held-out round 301 (real): /proc/driver/nvidia/version's lines indented by a web page: read as the file is."""
    d = parse_driver_version(text(PUBLIC / "proc-driver-version__sheffield-sharc-460.32.03-el7.txt"))
    assert d.version == "460.32.03" and d.flavour == "proprietary"
