"""Stage 6: health. Are all the GPUs there, does the driver see them, is anything hot at idle."""

from __future__ import annotations

from wizard.actions import ActionContext, ActionSpec, Resolved
from wizard.checks import gpu as gc
from wizard.checks.baseline import judge_baseline
from wizard.model import Stage, Step

DEFAULT_BASELINE_MINUTES = 10


def resolve_baseline(ctx: ActionContext) -> Resolved:
    minutes = ctx.plan.get("baseline_minutes", DEFAULT_BASELINE_MINUTES)
    try:
        seconds = max(1.0, float(minutes) * 60.0)
    except (TypeError, ValueError):
        seconds = DEFAULT_BASELINE_MINUTES * 60.0
    return Resolved(ops=[{"argv": [ctx.python, "-m", "wizard.sample", "--seconds", f"{seconds:g}",
                                   "--interval", "5"]}])


STAGE = Stage(
    id="health",
    title="Health checks",
    short="Health",
    summary="Every GPU present and initialised; the idle baseline; DCGM's quick diagnostic.",
    steps=(
        Step(
            id="health.gpu_pci",
            title="Every GPU is on the PCI bus",
            why=(
                "The PCI bus is the ground truth: a GPU that enumerates but that the driver cannot "
                "bring up still shows here, so counting here and in NVML tells 'missing hardware' "
                "from 'driver could not initialise it' (NVIDIA Health Validation "
                "gpu_count, GCM gpu_num)."
            ),
            instructions="Record the expected count as gpu_count in the plan answers (F2) to compare.",
            probes=("pci",),
            check=gc.gpu_pci,
            boot_sensitive=True,
        ),
        Step(
            id="health.nvml",
            title="NVML initialises and sees every GPU",
            why=(
                "NVML is the library behind nvidia-smi and DCGM; fewer GPUs in NVML than on the bus "
                "means the driver failed to initialise one (NVIDIA Health Validation gpu_count; Meta GCM "
                "gpu_num)."
            ),
            probes=("nvml", "pci"),
            check=gc.nvml,
            boot_sensitive=True,
        ),
        Step(
            id="health.idle_baseline",
            title="Record an idle temperature and power baseline",
            why=(
                "A GPU already close to its slowdown temperature at idle has an airflow problem that "
                "load will only make worse. bringup warns when an idle GPU is within 15 °C of its own "
                "slowdown threshold (a judgement default; NVSentinel and Meta GCM watch the same "
                "margin) or when NVML reports HW slowdown, thermal slowdown or a power brake at idle "
                "(NVML clock-event reasons; AzNHC warns on them). Without a GPU it measures nothing "
                "and says so."
            ),
            instructions=(
                "Leave the machine idle while it samples (default 10 minutes; change it with "
                "baseline_minutes in the plan answers, F2). The action keeps running if you close "
                "bringup or lose the SSH session."
            ),
            action=ActionSpec(
                id="idle_baseline",
                title="Sample temperatures, power and clocks at idle",
                description="Samples load, the hottest thermal zone and, through NVML, each GPU's "
                            "temperature, power, SM clock and clock-event reasons every 5 s.",
                resolve=resolve_baseline,
                changes_system=False,
                needs_root=False,
                judge=judge_baseline,
            ),
        ),
        Step(
            id="health.dcgm_l1",
            title="Run DCGM's quick diagnostic (level 1)",
            why=(
                "DCGM level 1 checks deployment (driver, persistence, permissions, blacklisted "
                "drivers) in seconds; a skip is not a pass (DCGM diagnostics documentation, "
                "docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html)."
            ),
            instructions=(
                "With datacenter-gpu-manager installed: `dcgmi diag -r 1 -j > dcgm-r1.json`. Every "
                "test must pass; explain any skip before you confirm."
            ),
            manual=True,
        ),
    ),
)
