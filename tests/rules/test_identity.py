"""Tests of wizard/rules/identity.py."""

from __future__ import annotations

import steps
from hypothesis import HealthCheck, given, settings
from wizard.engine import Build, judge
from wizard.model import Verdict
from wizard.parsers.gpu import parse_pci
from wizard.parsers.host import parse_cpu, parse_iommu, parse_numa
from wizard.probes import ProbeOutput
from wizard.rules.identity import dmi_fields, dmi_identity, gpu_serials, gpu_serials_seen

from tests import strategies
from tests.conftest import DATA, frozen_clock
from tests.outputs import _gpu_base, _vm_base, DMI, gpu_host, only, vm  # noqa: F401  (fixtures)
from tests.probe_data import tree_output

def test_dmi_dev_vm_exposes_none(vm):
    f = only(dmi_identity(vm, {}))
    assert f.verdict is Verdict.UNKNOWN
    assert "no DMI identity exposed" in f.message
    assert f.evidence and f.evidence[0].startswith("/sys/class/dmi/id/")


def test_dmi_synthetic_identity_passes(gpu_host):
    f = only(dmi_identity(gpu_host, {}))
    assert f.verdict is Verdict.PASS
    assert f.message == "Supermicro SYS-821GE-TNHR, serial S123456X4A12345"
    assert "/sys/class/dmi/id/product_serial:S123456X4A12345" in f.evidence


def test_dmi_synthetic_serial_readable_only_by_root(gpu_host):
    files = {DMI + "sys_vendor": "Dell Inc.\n", DMI + "product_name": "PowerEdge XE9680\n",
             DMI + "product_serial": None}
    gpu_host["dmi"] = tree_output("dmi", files, "/sys/class/dmi/id/*",
                                  file_errors={DMI + "product_serial": "permission denied"})
    f = only(dmi_identity(gpu_host, {}))
    assert f.verdict is Verdict.UNKNOWN
    assert f.message == "Dell Inc. PowerEdge XE9680; serial number unreadable (permission denied)"
    assert "/sys/class/dmi/id/product_serial: <permission denied>" in f.evidence
    assert "root" in f.remedy


FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


TOKENS = ["0", "1", "-", ",", ":", "=", " ", "\t", "\n", "\0", "\"", "'", "\\", "#",
          "kB", "GPU ", "0x10de", "%", "9" * 5000, "[", "{", "}"]


garbage = strategies.garbage(TOKENS, max_size=2000)
"""Random text, random bytes decoded like hosts decode them, and text made of the tokens the
parsers look for (including a digit run too long for int())."""


from tests.strategies import host_trees as trees  # noqa: E402 - random sysfs trees of the host probes


@FUZZ
@given(tree=trees, cpuinfo=garbage)
def test_tree_parsers_never_raise(tree, cpuinfo):
    f = parse_cpu(cpuinfo, tree)
    assert f.logical is None or f.logical >= 0
    n = parse_numa(tree)
    assert all(isinstance(k, int) for k in n.nodes)
    parse_iommu(tree)
    facts = parse_pci(ProbeOutput("pci", "sysfs", files=tree))
    assert facts.devices_seen >= len({fn.bdf for fn in facts.functions})
    dmi_fields(tree)


XML = DATA / "cases" / "nvidia-smi-q-x__a10g-idle-p8-healthy.xml"


def outputs(serial: str | None = None) -> dict:
    text = XML.read_text()
    if serial is not None:
        import re
        text = re.sub(r"<serial>[^<]*</serial>", f"<serial>{serial}</serial>", text)
    return {"nvidia_smi_qx": ProbeOutput("nvidia_smi_qx", "$ nvidia-smi -q -x", text=text, rc=0)}


def test_serials_are_read_by_bus_id():
    seen = gpu_serials_seen(outputs("1324321000001"))
    assert list(seen.values()) == ["1324321000001"] and list(seen)[0].startswith("0000:")


def test_record_then_detect_a_swapped_gpu_then_accept_it(state_dir):
    b = Build.open(state_dir, steps.STAGES, {"hostname": "n", "boot_id": "b"}, create=True, clock=frozen_clock)
    step = steps.step_by_id("grounding.serials")
    first = outputs("1324321000001")
    res = judge([step], first, b.expectations())
    assert any(f.id == "grounding.gpu_serials" and f.verdict is Verdict.PASS and "recorded" in f.message
               for f in res[step.id])
    b.remember_gpu_serials(first)
    bus = list(gpu_serials_seen(first))[0]
    assert b.store.meta()["gpu_serials"][bus]["serial"] == "1324321000001"
    swapped = outputs("1324321009999")
    f = [f for f in gpu_serials(swapped, b.expectations()) if f.verdict is Verdict.WARN][0]
    assert "replaced" in f.message and "1324321000001" in f.message and "RMA" in f.remedy
    b.remember_gpu_serials(swapped)  # a later check does not silently overwrite the record
    assert b.store.meta()["gpu_serials"][bus]["serial"] == "1324321000001"
    b.confirm("grounding.serials", "RMA case 4711: GPU replaced")  # the operator accepts the swap
    assert b.store.meta()["gpu_serials"][bus]["serial"] == "1324321009999"
    assert all(x.verdict is Verdict.PASS for x in gpu_serials(swapped, b.expectations()))
    b.close()


def test_a_recorded_gpu_that_disappeared_warns():
    exp = {"gpu_serials": {"0000:9b:00.0": {"serial": "42", "at": "t"}}}
    fs = gpu_serials(outputs("1324321000001"), exp)
    assert any(f.verdict is Verdict.WARN and "0000:9b:00.0" in f.message and "not seen now" in f.message for f in fs)
