"""GPU serials: recorded with the build at first sight, a swapped GPU found on a later check,
and an intended swap accepted by confirming the step."""

from __future__ import annotations

import steps
from tests.conftest import DATA, frozen_clock
from wizard.rules.identity import gpu_serials, gpu_serials_seen
from wizard.engine import Build, judge
from wizard.model import Verdict
from wizard.probes import ProbeOutput

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
