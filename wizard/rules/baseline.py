"""Judge the idle baseline (the summary line :mod:`wizard.sample` prints at the end of its log).

Rules:
* idle GPU temperature within :data:`IDLE_MARGIN_C` of the GPU's own slowdown threshold -> warn
  (the margin is a judgement default, not a vendor figure; NVSentinel GpuThermalMarginWatch and
  Meta GCM gpu_temperature watch the same margin);
* HW slowdown, SW/HW thermal slowdown or HW power brake seen at idle -> warn (AzNHC
  azure_gpu_clock_throttling warns; idle and SW power cap are ignored);
* no GPU sampled -> unknown: nothing was measured, so nothing passed.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from wizard.model import Finding, Verdict
from wizard.i18n import Msg, SEMICOLON

IDLE_MARGIN_C = 15
"""Warn when an idle GPU is within this many °C of its slowdown temperature (derived default)."""

# NVML clock-event reason bits (nvml.h, nvmlClocksEventReason*; docs.nvidia.com/deploy/nvml-api/)
REASON_BITS = {
    0x8: "HW slowdown", 0x20: "SW thermal slowdown", 0x40: "HW thermal slowdown", 0x80: "HW power brake",
}
SRC = ("idle margin: NVIDIA NVSentinel GpuThermalMarginWatch (https://github.com/NVIDIA/NVSentinel), Meta GCM "
       "gpu_temperature (https://github.com/facebookresearch/gcm; 15 °C is a derived default); clock-event reasons: NVML nvmlDeviceGetCurrentClocksEventReasons, Azure HPC health checks "
       "azure_gpu_clock_throttling (https://github.com/Azure/azurehpc-health-checks; NVML API reference, "
       "https://docs.nvidia.com/deploy/nvml-api/)")


def summary_from_log(log: str) -> tuple[dict[str, Any] | None, str]:
    """(summary dict or None, the raw summary line)."""
    for line in reversed(log.splitlines()):
        if line.startswith("# summary "):
            try:
                d = json.loads(line[len("# summary "):])
            except ValueError:
                return None, line
            return (d if isinstance(d, dict) else None), line
    return None, ""


def judge_baseline(log: str, plan: Mapping[str, Any]) -> list[Finding]:
    fid = "health.idle_baseline"
    s, line = summary_from_log(log)
    if s is None:
        tail = log.splitlines()[-5:]
        return [Finding(fid, Verdict.UNKNOWN, "the baseline left no readable summary", "host", tuple(tail),
                        "Run the baseline again; if it keeps failing, attach its log to a bug report.", SRC)]
    gpus = [g for g in s.get("gpus") or [] if isinstance(g, dict)]
    host = s.get("host_max_c")
    if not gpus:
        why = s.get("nvml") or "no GPU"
        return [Finding(fid, Verdict.UNKNOWN, (Msg("no GPU was sampled (NVML: {why}); hottest host thermal zone {a1} °C", why=why, a1=host)
                                               if host is not None else
                                               Msg("no GPU was sampled (NVML: {why}); no host thermal zone was read", why=why)), "host", (line,),
                        "Make the GPUs visible first: on the PCI bus (health.gpu_pci), then the driver loaded (driver & "
                        "CUDA stage); then record the baseline again.", SRC)]
    findings = []
    for g in gpus:
        subject = f"GPU {g.get('index')} ({g.get('pci_bus_id') or '?'})"
        t, slow = g.get("max_temp_c"), g.get("slowdown_c")
        reasons = int(g.get("reasons_seen") or 0)
        seen = [name for bit, name in REASON_BITS.items() if reasons & bit]
        problems = []
        if isinstance(t, (int, float)) and isinstance(slow, (int, float)) and slow - t < IDLE_MARGIN_C:
            problems.append(f"idle at {t} °C, within {IDLE_MARGIN_C} °C of its slowdown temperature {slow} °C")
        if seen:
            problems.append("clocks held down at idle by " + ", ".join(seen))
        desc = (Msg('max {value} °C at idle over {get} samples', value=t if t is not None else '?', get=g.get('samples', 0)) + (Msg(', slowdown at {slow} °C', slow=slow) if slow is not None else ''))
        if problems:
            findings.append(Finding(fid, Verdict.WARN, f"{subject}: " + SEMICOLON.join(problems), subject, (line,),
                                    "Check airflow before any load test: fan profile in the BMC, blanking "
                                    "panels, inlet temperature, and that nothing blocks this GPU's airflow; "
                                    "a power brake points at the PSUs or the BMC's power policy.", SRC))
        elif t is None:
            findings.append(Finding(fid, Verdict.UNKNOWN, Msg("{subject}: no temperature was read", subject=subject), subject, (line,),
                                    "Check `nvidia-smi -q -d TEMPERATURE` by hand.", SRC))
        else:
            findings.append(Finding(fid, Verdict.PASS, Msg("{subject}: {desc}", subject=subject, desc=desc), subject, (line,), "", SRC))
    return findings
