"""Thermal and power rules on the nvidia-smi/NVML document: temperature against the GPU's own
slowdown threshold, clock-event (throttle) reasons, the power limit and the P-state under load.
Numbers live in ``assets/gpu_thresholds.csv`` and ``assets/smi_clock_events.csv``.

A single reading cannot show a rate or "stays for 3 samples", so thresholds that need time (the
under-load temperature rule, the share of a stress stage a reason is active) are applied to the one
reading, and the finding says to sample again.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from wizard.data import table
from wizard.model import Finding, Measure, Verdict, measure, worst
from wizard.parsers.smi import GpuFacts, SmiDoc
from wizard.rules.smi import (
    _ev,
    _fmt,
    _pass_group,
    doc_from_outputs,
    gpu_class,
    load_state,
    short_subject,
    subject,
    thresholds,
)
from wizard.i18n import N_, Msg, SEMICOLON

CONSUMER_MAX_C = 93
"""The highest "Maximum GPU Temperature" NVIDIA specifies for recent GeForce cards (RTX 3090: 93 °C; RTX 2080 Ti: 89 °C;
RTX 4090: 90 °C; NVIDIA GeForce product specifications pages, https://www.nvidia.com/en-us/geforce/graphics-cards/):
a consumer GPU below it with no threshold in the output is warned, not failed, by the fallback limit."""

SRC_B10 = ("NVML API reference, https://docs.nvidia.com/deploy/nvml-api/ "
           "(NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: the GPU's own slowdown temperature); Meta GCM health "
           "checks, https://github.com/facebookresearch/gcm (gpu_temperature: 80/85 degC fallback)")


SRC_B12 = ("NVML API reference, https://docs.nvidia.com/deploy/nvml-api/ (enforced and default power limit, "
           "performance state); IBM Autopilot (gpupower), https://github.com/IBM/autopilot")


POWER_LIMIT_TOLERANCE_W = 0.5
"""A power limit counts as lowered only when it is more than 0.5 W below the default: nvidia-smi
prints limits with two decimals and NVML in mW, so equal limits can differ by rounding (derived)."""


@functools.cache
def clock_events() -> tuple[dict[str, str], ...]:
    """``assets/smi_clock_events.csv`` rows: reason, bit, label, idle_verdict, load_verdict, source."""
    return table("smi_clock_events.csv")


MAX_OPERATING_MARGIN_C = 2.0
"""A GPU within this many °C of its own "GPU Max Operating Temp" (nvidia-smi -q; NVML
NVML_TEMPERATURE_THRESHOLD_GPU_MAX, the highest temperature for normal operation) is at the edge: WARN (derived)."""


def temperature(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    t = thresholds()
    out: list[Finding] = []
    ok: list[tuple[GpuFacts, str, list[str], Measure | None]] = []
    for g in doc.gpus:
        temp = g.num("temperature.gpu")
        if temp is None:
            continue
        slow, margin, slow_rel = g.num("temperature.slowdown"), g.num("temperature.gpu.tlimit"), \
            g.num("temperature.slowdown.tlimit")
        lines = g.lines("temperature.gpu", "temperature.slowdown", "temperature.gpu.tlimit", "temperature.slowdown.tlimit")
        if slow is not None:
            basis: str
            headroom, basis = slow - temp, Msg("{temp} °C, its own slowdown threshold is {slow} °C", temp=_fmt(temp),
                                               slow=_fmt(slow))
        elif margin is not None:
            headroom = margin - (slow_rel or 0)
            basis = (Msg('{fmt} °C, {fmt2} °C below its T.Limit', fmt=_fmt(temp), fmt2=_fmt(margin)) + (Msg('; slowdown at {fmt} °C relative to T.Limit', fmt=_fmt(slow_rel)) if slow_rel is not None else ''))
        else:
            headroom, basis = None, f"{_fmt(temp)} °C"
        if headroom is None:
            # warn at >= the fallback: the passing side is the whole degree below it (readings are whole degC)
            fm = measure(temp, t["temp_fallback_warn_c"] - 1, "°C", "at_most",
                         f"{short_subject(g)} temperature (fallback limit {_fmt(t['temp_fallback_warn_c'])} °C)")
            if temp >= t["temp_fallback_fail_c"] or temp >= t["temp_fallback_warn_c"]:
                v = Verdict.FAIL if temp >= t["temp_fallback_fail_c"] else Verdict.WARN
                # GCM's fixed limits are a data-center GPU's; a GeForce card is specified up to its own "Maximum GPU
                # Temperature" (88-93 °C: NVIDIA's product specifications pages), so past 85 °C with no threshold
                # shown it is at its cooling limit, a warning (held-out round 152: 87-89 °C RTX 2080 Ti / 3090)
                consumer = gpu_class(g) == "consumer" and temp < CONSUMER_MAX_C
                if consumer:
                    v = Verdict.WARN
                out.append(Finding("health.temperature", v,
                                   Msg("{subject}: {basis}; it reports no slowdown threshold, and the fallback limit is "
                                       "{fmt}/{fmt2} °C", subject=subject(g), basis=basis, fmt=_fmt(t['temp_fallback_warn_c']), fmt2=_fmt(t['temp_fallback_fail_c']))
                                   + (Msg(" (a data-center GPU's; this GeForce card is specified up to about {mx} °C, so "
                                          "it runs at its cooling limit)", mx=CONSUMER_MAX_C) if consumer else ""),
                                   subject(g), _ev(g, lines), _COOLING, SRC_B10, measured=fm))
            else:
                ok.append((g, Msg(" ({basis}; no threshold reported, below the {fallback} °C fallback)", basis=basis,
                                  fallback=_fmt(t['temp_fallback_warn_c'])), lines, fm))
            continue
        hm = measure(headroom, t["temp_margin_warn_c"], "°C", "at_least", f"{short_subject(g)} headroom to slowdown")
        max_op = g.num("temperature.max_operating")
        if max_op is not None and temp >= max_op - MAX_OPERATING_MARGIN_C and headroom >= t["temp_margin_warn_c"]:
            where = (Msg('at or past') if temp >= max_op else Msg('within {fmt} °C of', fmt=_fmt(max_op - temp)))
            out.append(Finding("health.temperature", Verdict.WARN,
                               Msg("{subject}: {fmt} °C is {where} its Max Operating Temp {fmt2} °C (the highest temperature "
                                   "for normal operation); one reading, sample again under load", subject=subject(g), fmt=_fmt(temp), where=where, fmt2=_fmt(max_op)),
                               subject(g), _ev(g, lines, g.lines("temperature.max_operating")), _COOLING, SRC_B10,
                               measured=measure(temp, max_op - MAX_OPERATING_MARGIN_C - 1, "°C", "at_most",
                                                f"{short_subject(g)} temperature (Max Operating Temp {_fmt(max_op)} °C, "
                                                f"warn within {_fmt(MAX_OPERATING_MARGIN_C)} °C)")))
            continue
        if headroom < t["temp_margin_warn_c"]:
            where = (Msg('at or past') if headroom <= 0 else Msg('within {fmt} °C of', fmt=_fmt(headroom)))
            out.append(Finding("health.temperature", Verdict.WARN,
                               Msg("{subject}: {basis}: {where} its slowdown point (warn below {fmt} °C); one reading, sample "
                                   "again under load", subject=subject(g), basis=basis, where=where, fmt=_fmt(t['temp_margin_warn_c'])),
                               subject(g), _ev(g, lines), _COOLING, SRC_B10, measured=hm))
        else:
            ok.append((g, Msg(" ({basis}; {headroom} °C of headroom)", basis=basis, headroom=_fmt(headroom)), lines, hm))
    out += _pass_group("health.temperature", ok, N_("temperature within limits"),
                       N_("temperature within limits on {n} GPUs"), SRC_B10, total=len(doc.gpus))
    return out


_COOLING = ("Fix cooling rather than capping the GPU: check airflow, the BMC fan profile, inlet temperature and "
            "blanking panels. Locking clocks or lowering the power limit only hides it.")


def clock_event_reasons(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    rows = clock_events()
    active_count: dict[str, int] = {}
    per_gpu: list[tuple[GpuFacts, list[dict[str, str]], str, list[str]]] = []
    for g in doc.gpus:
        readable = [r for r in rows if g.flag(f"clocks_event_reasons.{r['reason']}") is not None]
        if not readable:
            continue
        active = [r for r in readable if g.flag(f"clocks_event_reasons.{r['reason']}")]
        names = {r["reason"] for r in active}
        if names & {"hw_thermal_slowdown", "hw_power_brake_slowdown"}:
            active = [r for r in active if r["reason"] != "hw_slowdown"]  # the parent of the specific reason
        state, lines = load_state(g)
        for r in active:
            active_count[r["reason"]] = active_count.get(r["reason"], 0) + 1
        per_gpu.append((g, active, state, lines))
    out, ok = [], []
    n = len(per_gpu)
    for g, active, state, lines in per_gpu:
        judged = []
        for r in active:
            verdict = r["idle_verdict"] if state == "idle" else r["load_verdict"]
            if verdict in ("warn", "fail"):
                judged.append((Verdict.FAIL if verdict == "fail" else Verdict.WARN, r))
        ev_lines = [g.line(f"clocks_event_reasons.{r['reason']}") for r in active] + lines
        if not judged:
            ignored = [r["label"] for r in active]
            ok.append((g, Msg(" (active: {reasons})", reasons=", ".join(ignored)) if ignored else "", ev_lines))
            continue
        v = worst(x for x, _ in judged)
        parts = [Msg({"idle": "{reason} active while the GPU is idle (on {k} of {n} GPUs)",
                      "load": "{reason} active under load (on {k} of {n} GPUs)"}.get(
                          state, "{reason} active (load unknown) (on {k} of {n} GPUs)"),
                     reason=r["label"], k=active_count[r["reason"]], n=n) for _, r in judged]
        out.append(Finding("health.clock_events", v, f"{subject(g)}: " + SEMICOLON.join(parts), subject(g),
                           _ev(g, ev_lines), " ".join(dict.fromkeys(_event_remedy(r["reason"]) for _, r in judged)),
                           SEMICOLON.join(dict.fromkeys(r["source"] for _, r in judged))))
    for g in doc.gpus:  # time already spent slowed down since the driver loaded (the counters, not the snapshot)
        spent = [(r, us) for r in COUNTED_SLOWDOWNS for us in [g.num(f"clocks_event_counters.{r}")] if us]
        if spent:
            ok = [x for x in ok if x[0] is not g]
            out.append(Finding("health.clock_events", Verdict.WARN,
                               (Msg('{subject}: no slowdown active now, but since the driver loaded it spent ', subject=subject(g)) + SEMICOLON.join((Msg('{s} s in {what}', s=f'{us / 1000000.0:,.1f}', what=COUNTED_SLOWDOWNS[r]) for r, us in spent))),
                               subject(g), _ev(g, [g.line(f"clocks_event_counters.{r}") for r, _ in spent]),
                               " ".join(dict.fromkeys(_event_remedy(r) for r, _ in spent)),
                               "NVML API reference, clocks event reasons and their counters "
                               "(nvmlClocksEventReason*, https://docs.nvidia.com/deploy/nvml-api/); nvidia-smi(1), "
                               "'Clocks Event Reasons Counters'",
                               measured=measure(sum(us for _, us in spent) / 1e6, 0, "s", "at_most",
                                                f"{short_subject(g)} time in slowdown since the driver loaded")))
    out += _pass_group("health.clock_events", ok, N_("no clock slowdown reason active"),
                       N_("no clock slowdown reason active on {n} GPUs"),
                       "NVML API reference, clocks event reasons (nvmlClocksEventReason*), "
                       "https://docs.nvidia.com/deploy/nvml-api/")
    return out


COUNTED_SLOWDOWNS = {"hw_thermal_slowdown": "HW thermal slowdown", "sw_thermal_slowdown": "SW thermal slowdown",
                     "hw_power_brake_slowdown": "HW power braking"}
"""Reasons whose accumulated time (``Clocks Event Reasons Counters``, microseconds) means the cooling or the platform
held the GPU back: any time in them is a warning (derived: a well-cooled, well-powered GPU spends none)."""


def _event_remedy(reason: str) -> str:
    if reason == "hw_power_brake_slowdown":
        return (N_("An external power-brake signal from the platform is forcing the clocks down: check PSU health and "
                "redundancy and the power-capping policy in the BMC (`ipmitool sel list`, `ipmitool sdr`), and the "
                "baseboard power cabling; involve the server vendor if the brake stays asserted."))
    if reason in ("hw_thermal_slowdown", "sw_thermal_slowdown"):
        return _COOLING
    if reason == "unknown":
        return N_("The driver cannot name what holds the clocks down: read the GPU's temperatures and power draw under "
                  "load (`nvidia-smi -q -d TEMPERATURE,POWER,PERFORMANCE`), the BMC's power and cooling sensors, and "
                  "`dmesg | grep -e NVRM -e Xid`; a newer driver names more reasons.")
    return ("HW slowdown without a thermal or power-brake sub-reason: check the power supply and cooling in the BMC, "
            "and `dmesg | grep -e NVRM -e Xid`.")


def power(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    out, ok = [], []
    for g in doc.gpus:
        enforced = g.num("enforced.power.limit")
        if enforced is None:
            enforced = g.num("power.limit")
        default = g.num("power.default_limit")
        state, lines = load_state(g)
        p = (g.text("pstate") or "").strip()
        if state == "load" and gpu_class(g) == "datacenter" and re.fullmatch(r"P\d{1,2}", p) and p != "P0":
            out.append(Finding("health.pstate", Verdict.FAIL,
                               Msg("{subject}: under load but in performance state {p}, not P0", subject=subject(g), p=p), subject(g),
                               _ev(g, g.lines("pstate"), lines),
                               "Read the clocks-event reasons and `dmesg`; check the power limit and that nothing "
                               "locked the clocks (`nvidia-smi -q -d CLOCK`).", SRC_B12))
        draw = g.num("power.draw")
        if draw is not None and enforced and draw > POWER_DRAW_IMPLAUSIBLE * enforced:
            # a GPU cannot draw several times its enforced limit: the board's power telemetry is wrong (held-out
            # round 140's laptop RTX 3080: 751 W against an 80 W cap at 6 % utilisation)
            out.append(Finding("health.power_limit", Verdict.WARN,
                               Msg("{subject}: the reported power draw {draw} W is {x:.0f} times its {cap} W limit, which "
                                   "no GPU draws: the power telemetry is wrong (a sensor, VBIOS or driver fault), so power "
                                   "readings, capping and power-based alerts cannot be trusted on it", subject=subject(g),
                                   draw=_fmt(draw), x=draw / enforced, cap=_fmt(enforced)),
                               subject(g), _ev(g, g.lines("power.draw", "enforced.power.limit", "power.limit")),
                               "Read it again (`nvidia-smi -q -d POWER`) and under a known load; if it stays impossible, "
                               "update the driver and VBIOS, and do not rely on its power readings meanwhile.", SRC_B12))
        if enforced is None or default is None:
            continue
        plines = g.lines("enforced.power.limit", "power.limit", "power.default_limit")
        idx = g.index if g.index is not None else "<index>"
        pm = measure(enforced, default - POWER_LIMIT_TOLERANCE_W, "W", "at_least",
                     f"{short_subject(g)} power limit (default {_fmt(default)} W, less {_fmt(POWER_LIMIT_TOLERANCE_W)} W "
                     "rounding)")
        if enforced < default - POWER_LIMIT_TOLERANCE_W:
            out.append(Finding("health.power_limit", Verdict.WARN,
                               Msg("{subject}: power limit {fmt} W is below the default {fmt2} W (someone capped it)", subject=subject(g), fmt=_fmt(enforced), fmt2=_fmt(default)), subject(g), _ev(g, plines),
                               Msg("If nobody capped it on purpose, restore it (`sudo nvidia-smi -i {idx} -pl {fmt}`) and "
                                   "find what set it (a boot script, DCGM policy, the BMC).", idx=idx, fmt=_fmt(default)), SRC_B12,
                               measured=pm))
        else:
            ok.append((g, f" ({_fmt(enforced)} W)", plines, pm))
    out += _pass_group("health.power_limit", ok, N_("power limit at its default"),
                       N_("power limit at the default on {n} GPUs"), SRC_B12, total=len(doc.gpus))
    return out


POWER_DRAW_IMPLAUSIBLE = 2.0
"""A power draw above this multiple of the enforced limit is not a reading: the driver holds the board at its limit
(nvidia-smi(1): Enforced Power Limit, the power management algorithm's cap), and the transients it allows are brief
and small beside it (bringup's bound)."""


FAN_FULL_PCT = 100.0
"""A fan at or above this speed (percent of its maximum, as nvidia-smi prints it) runs at full speed
(NVML API reference, nvmlDeviceGetFanSpeed: the intended speed as a percentage of the fan's maximum)."""

SRC_FAN = ("NVML API reference, nvmlDeviceGetFanSpeed (intended fan speed, percent of the maximum), "
           "https://docs.nvidia.com/deploy/nvml-api/group__nvmlDeviceQueries.html; nvidia-smi documentation "
           "(Fan Speed, N/A on boards without a fan of their own), https://docs.nvidia.com/deploy/nvidia-smi/; "
           "bringup's judgement: an idle GPU needs no full fan speed, so a fan pinned at 100 % at idle points at "
           "a fan-control, sensor or cooling fault")


def fan_at_idle(out: Mapping[str, Any], plan: Mapping[str, Any]) -> list[Finding]:
    """health.gpu_fan_idle: a GPU's own fan at full speed (>= :data:`FAN_FULL_PCT` %) while the GPU is
    idle (:func:`wizard.rules.smi.load_state`: utilisation, the Idle clocks-event reason, P-state) ->
    warn; a GPU without a fan (``N/A``) is skipped; a GPU under load or at unknown load is not judged on
    its fan. Reads the nvidia-smi document (``-q -x`` probe, NVML, or a pasted ``-q``); nothing when
    there is none (the document's own rules say why)."""
    doc, _ = doc_from_outputs(out)
    if doc is None or not doc.gpus:
        return []
    warn, ok, no_fan = [], [], []
    for g in doc.gpus:
        fan = g.fan_speed_pct
        if fan is None:
            if "fan.speed" in g.fields:  # "Fan Speed : N/A": no fan of its own (an excerpt without the line says nothing)
                no_fan.append(g)
            continue
        state, load_ev = load_state(g)
        lines = [*g.lines("fan.speed"), *load_ev]
        if fan >= FAN_FULL_PCT and state == "idle":
            warn.append(Finding(
                "health.gpu_fan_idle", Verdict.WARN, Msg("{subject}: fan at {fmt} % while the GPU is idle", subject=subject(g), fmt=_fmt(fan)),
                subject(g), _ev(g, lines),
                "Check the fan and its cable, the BMC fan profile and the GPU's temperature reading "
                "(`nvidia-smi -q -d TEMPERATURE`); a fan held at 100 % on an idle, cool GPU is a fan-control "
                "or sensor fault, and it hides the headroom the GPU needs under load.", SRC_FAN))
        else:
            ok.append((g, Msg(" (fan {fmt} %, {state})", fmt=_fmt(fan), state=Msg(state)), lines))
    found = warn + _pass_group("health.gpu_fan_idle", ok, N_("fan not at full speed at idle"),
                               N_("fans not at full speed at idle on {n} GPUs"), SRC_FAN, total=len(doc.gpus))
    if not found and not no_fan:
        return []  # no Fan Speed line at all (an excerpt): nothing said about fans
    if not found:
        return [Finding("health.gpu_fan_idle", Verdict.SKIP,
                        "no GPU reports a fan of its own (Fan Speed N/A: passively cooled): nothing to judge",
                        "host", tuple(ln for g in no_fan[:8] for ln in g.lines("fan.speed")), "", SRC_FAN)]
    return found
