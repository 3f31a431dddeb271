"""wizard.rules.thermal_power: rules registered in wizard.registry.RULES (the smi topic rules are tested
through judge_doc in tests/rules/test_smi.py)."""

from __future__ import annotations

import pytest

from tests.probe_data import CASES, text
from wizard.explain import explain_text
from wizard.facts import Facts
from wizard.model import Verdict
from wizard.probes import ProbeOutput
from wizard.rules.thermal_power import fan_at_idle

RTX4090 = "nvidia-smi-q__8x-rtx4090-server-gpu0-section.txt"  # Fan Speed 38 %, Gpu 0 %: idle, fan turning


def _xml(name: str) -> Facts:
    return Facts({"nvidia_smi_qx": ProbeOutput("nvidia_smi_qx", "$ nvidia-smi -q -x", text=text(CASES / name), rc=0)})


@pytest.mark.parametrize("facts, verdicts", [
    # real outputs (tests/data/PROVENANCE.md): an A10G idle at P8 with its fan at 0 %, two A100 SXM4 (no fan of
    # their own: Fan Speed N/A)
    (_xml("nvidia-smi-q-x__a10g-idle-p8-healthy.xml"), {Verdict.PASS}),
    (_xml("nvidia-smi-q-x__a100-sxm4-80gb-mig-enabled-1-of-4-gpus.xml"), {Verdict.SKIP}),
    (_xml("nvidia-smi-q-x__a100-sxm4-40gb-mig-passthrough-vm.xml"), {Verdict.SKIP}),
    (Facts(), set()),  # no nvidia-smi document: the document's own rules say why, this one says nothing
])
def test_fan_at_full_speed_on_an_idle_gpu_warns_and_a_gpu_without_a_fan_is_skipped(facts, verdicts):
    assert {f.verdict for f in fan_at_idle(facts, {})} == verdicts
    # the real RTX 4090 -q section pasted into explain: idle (0 %) with the fan at 38 % passes; the same real
    # output with only its Fan Speed line set to 100 % warns (no public paste of that state was found)
    raw = text(CASES / RTX4090)
    fan = [f for f in explain_text(raw, RTX4090).findings if f.id == "health.gpu_fan_idle"]
    assert [f.verdict for f in fan] == [Verdict.PASS]
    stuck = raw.replace("Fan Speed                             : 38 %", "Fan Speed                             : 100 %")
    assert stuck != raw
    (f,) = [f for f in explain_text(stuck, "stuck").findings if f.id == "health.gpu_fan_idle"]
    assert f.verdict is Verdict.WARN and "fan at 100 % while the GPU is idle" in f.message
    assert any("Fan Speed" in e for e in f.evidence) and "https://" in f.source


def test_time_spent_in_thermal_slowdown_since_driver_load_warns():
    """Real (ollama/ollama#13552, DGX Spark): no reason active now, but the Clocks Event Reasons Counters show
    173 s of SW and 0.4 s of HW thermal slowdown: the cooling held the GPU back."""
    from tests.probe_data import PUBLIC

    e = explain_text(text(PUBLIC / "nvidia-smi-q__gb10-perf-counters-sw-hw-thermal-slowdown-time-partial.txt"))
    (f,) = [x for x in e.findings if x.id == "health.clock_events"]
    assert f.verdict is Verdict.WARN and "173.5 s in SW thermal slowdown" in f.message and "airflow" in f.remedy
    zero = text(PUBLIC / "nvidia-smi-q__gb10-perf-counters-sw-hw-thermal-slowdown-time-partial.txt")
    zero = zero.replace("173453251 us", "0 us").replace("403805 us", "0 us")  # the same GPU with no time in them
    (g,) = [x for x in explain_text(zero).findings if x.id == "health.clock_events"]
    assert g.verdict is Verdict.PASS


def test_temperature_power_limit_and_slowdown_time_carry_the_measured_figure():
    """Real outputs: the A10G at idle has 78 degC of headroom to its own slowdown threshold (warn below 15) and its
    power limit at the 300 W default; the GB10 spent 173.9 s in thermal slowdown since the driver loaded (limit 0)."""
    from tests.probe_data import PUBLIC
    from wizard.model import Measure

    fs = {f.id: f for f in explain_text(text(CASES / "nvidia-smi-q-x__a10g-idle-p8-healthy.xml")).findings}
    t = fs["health.temperature"]
    assert t.verdict is Verdict.PASS and t.measured == Measure(78, 15, "°C", "at_least",
                                                               "GPU 0 (0000:00:1e.0) headroom to slowdown")
    p = fs["health.power_limit"].measured
    assert (p.value, p.threshold, p.unit, p.direction, p.met) == (300, 299.5, "W", "at_least", True)
    e = explain_text(text(PUBLIC / "nvidia-smi-q__gb10-perf-counters-sw-hw-thermal-slowdown-time-partial.txt"))
    (c,) = [x for x in e.findings if x.id == "health.clock_events"]
    assert c.verdict is Verdict.WARN and c.measured.unit == "s" and c.measured.threshold == 0
    assert abs(c.measured.value - 173.857056) < 1e-6 and c.measured.met is False


def test_an_excerpt_without_a_fan_speed_line_says_nothing_about_fans():
    """Held-out round 18: a grep of `nvidia-smi -q` keeping only identity fields (no Fan Speed line) came out "skip: no
    GPU reports a fan of its own (passively cooled)": a line that is not in the paste is not N/A. Now the rule says
    nothing, and the paste is unknown (nothing to judge)."""
    from tests.probe_data import PUBLIC

    e = explain_text(text(PUBLIC / "nvidia-smi-q__grep-identity-h200-device-id-only.txt"), "x")
    assert e.verdict is Verdict.UNKNOWN and not [f for f in e.findings if f.id == "health.gpu_fan_idle"]


def test_an_unknown_throttle_reason_active_under_load_warns():
    """synthetic_ (an older driver's `nvidia-smi -q` section, as held-out round 70's Maxwell paste shows it): "Unknown :
    Active" is nvmlClocksThrottleReasonUnknown, a slowdown NVML cannot name; it was read as "no reason active"."""
    from wizard.explain import explain_text

    q = ("==============NVSMI LOG==============\n\nAttached GPUs                       : 1\nGPU 00000000:01:00.0\n"
         "    Product Name                    : GeForce GTX 980 Ti\n    Performance State               : P2\n"
         "    Clocks Throttle Reasons\n        Idle                        : Not Active\n"
         "        Applications Clocks Setting : Not Active\n        SW Power Cap                : Not Active\n"
         "        HW Slowdown                 : Not Active\n        Unknown                     : Active\n"
         "    Utilization\n        Gpu                         : 100 %\n        Memory                      : 0 %\n")
    ev = [f for f in explain_text(q).findings if f.id == "health.clock_events"]
    assert [f.verdict.value for f in ev] == ["warn"] and "Unknown active under load" in ev[0].message
    assert "cannot name what holds the clocks down" in ev[0].remedy
    ok = [f for f in explain_text(q.replace("Unknown                     : Active",
                                            "Unknown                     : Not Active")).findings
          if f.id == "health.clock_events"]
    assert [f.verdict.value for f in ok] == ["pass"]
