"""gpu-burn runs (https://github.com/wilicc/gpu-burn), judged from the output an operator pastes
(``bringup explain``): one rule per concern.

* :func:`burn_result` (``gpu.stress``): a GPU gpu-burn marks FAULTY, or whose error count is not 0 (or
  marked WARNING!/DIED!), fails, named; a test that could not start, or processes that all died, fails; "OK"
  with no progress line that shows the GPU working is unknown (gpu-burn prints OK for a test that never ran,
  wilicc/gpu-burn#14); a run shorter than a minute is said (it proves the arithmetic, not that it holds hot).
* :func:`burn_speed` (``gpu.stress_speed``): a GPU below :data:`SLOW_FRACTION` x the median Gflop/s of the
  same-model GPUs of the same run warns.
* :func:`burn_temperature` (``gpu.stress_temp``): a temperature at or above the GPU's slowdown threshold,
  when the expectations give it (``slowdown_c``), warns; gpu-burn itself does not print the threshold.
"""

from __future__ import annotations

import re

import statistics
from typing import Any, Mapping

from wizard.common import gpu_subject, to_int
from wizard.model import Finding, Verdict, measure
from wizard.parsers.gpuburn import BurnGpu, GpuBurn, parse_gpu_burn
from wizard.i18n import Msg, joined

GPU_BURN_URL = "https://github.com/wilicc/gpu-burn"
SRC_BURN = (f"gpu-burn README ({GPU_BURN_URL}): every GPU runs the same matrix multiplications and compares the "
            "results; 'errors' counts wrong results and the summary marks a GPU OK or FAULTY. A test that never "
            "started still prints OK (wilicc/gpu-burn#14, https://github.com/wilicc/gpu-burn/issues/14)")
SHORT_RUN_S = 60
"""A burn shorter than this is said: gpu-burn's own default is only 10 s, and DCGM's stress tests run minutes
(NVIDIA DCGM diagnostics, Targeted Stress / Targeted Power run 120 s by default,
https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html)."""
SLOW_FRACTION = 0.8
"""(derived) A GPU below 0.8 x the median Gflop/s of the same-model GPUs of one run warns: the same kernel, the
same size and the same time on identical GPUs, so a fifth less is a GPU held back by clocks, power, heat or its
PCIe/memory, not run-to-run noise (microsoft/superbenchmark's gpu-burn benchmark reports per-GPU Gflop/s for this
comparison, https://github.com/microsoft/superbenchmark/pull/735)."""
SRC_SPEED = (f"gpu-burn README ({GPU_BURN_URL}): per-GPU Gflop/s in each progress line; threshold (derived): below "
             f"{SLOW_FRACTION} x the median of the run's same-model GPUs")
SRC_TEMP = ("NVML / nvidia-smi -q -d TEMPERATURE, 'GPU Slowdown Temp': at or above it the GPU cuts its clocks "
            "(nvidia-smi man page, https://docs.nvidia.com/deploy/nvidia-smi/index.html)")
STALL_AFTER_S = 60
"""(derived) A GPU whose column still reads 0 work (proc'd 0, 0 Gflop/s) on a progress line this many seconds into
a run is stalled, not starting: gpu-burn's set-up (allocate most of the memory, fill two matrices) takes seconds,
and its progress lines count finished multiplications, so a minute with none is a GPU or test process that hangs
(the same minute as :data:`SHORT_RUN_S`)."""
REMEDY_STALLED = ("A GPU that does no work under gpu-burn for minutes hangs under compute: read `dmesg | grep -e NVRM "
                  "-e Xid` and `nvidia-smi -q -d PERFORMANCE,ECC -i N` for it, reset it (`nvidia-smi -r -i N`, or "
                  "reboot), burn it alone (`gpu_burn -i N 600`) and, if it hangs again, run `dcgmi diag -r 3 -i N` "
                  "and open an RMA.")
REMEDY_FAULTY = ("A GPU that computes wrong results under load is not fit for training: drain it, read "
                 "`dmesg | grep -e NVRM -e Xid` and `nvidia-smi -q -d ECC,ROW_REMAPPER,TEMPERATURE`, then burn it "
                 "alone (`gpu_burn -i N 600`); if it fails again, run `dcgmi diag -r 3 -i N` and open an RMA.")


def _subject(b: BurnGpu) -> str:
    return gpu_subject(b.index)


def _names(gpus: list[BurnGpu]) -> str:
    return ", ".join(str(b.index) for b in gpus)


def _peak(b: BurnGpu) -> float:
    return max((x for x in b.gflops if x > 0), default=0.0)


def burn_result(r: GpuBurn, exp: Mapping[str, Any]) -> list[Finding]:
    fid = "gpu.stress"
    out: list[Finding] = []
    gpus = [r.gpus[i] for i in sorted(r.gpus)]
    if not r.progress_lines and r.tested is None and not r.init_errors and not r.abort_line:
        return [Finding(fid, Verdict.UNKNOWN, "this gpu-burn output has no progress line and no result summary: "
                        "nothing was measured", "host", tuple(r.problems[:5]),
                        "Paste the whole output of `gpu_burn 600` (the progress lines and the 'Tested N GPUs' "
                        "summary).", SRC_BURN)]
    faulty = [b for b in gpus if b.result == "FAULTY" or b.bad_errors]
    for b in faulty:
        why = []
        if b.result == "FAULTY":
            why.append(Msg("marked FAULTY"))
        if any(e != 0 for e in b.errors):
            why.append(Msg("error count {n}", n=next(e for e in reversed(b.errors) if e != 0)))
        if "DIED" in b.flags or any(p < 0 for p in b.procd):
            why.append(Msg("its test process died"))
        elif "WARNING" in b.flags:
            why.append(Msg("marked WARNING!"))
        out.append(Finding(fid, Verdict.FAIL, Msg("gpu-burn: GPU {index}{a1} {why}: it produced wrong results or stopped under load", index=b.index, a1=' (' + b.name + ')' if b.name else '', why=joined(', ', why)), _subject(b),
                           tuple(x for x in (b.result_line, b.error_line[:400]) if x), REMEDY_FAULTY, SRC_BURN))
    if r.init_errors:
        from wizard.parsers.cuda import cuda_error_lookup

        said = next((m.group(1).strip() for ln in r.init_errors
                     for m in [re.search(r"gpu_burn-drv\.cpp:\d+\):\s*(.+)$", ln)] if m), "")
        info = cuda_error_lookup(text=said) if said else None
        meaning = (Msg('; CUDA error {code} = {name}: {meaning}', code=info.code, name=info.name, meaning=info.meaning) if info is not None else '')
        out.append(Finding(fid, Verdict.FAIL, Msg("gpu-burn could not start its test ({a1}): the GPUs were not burned; the CUDA/cuBLAS stack "
                                                  "failed on this machine (which is not by itself proof of a GPU fault){meaning}", a1=r.init_errors[0], meaning=meaning), "host", tuple(dict.fromkeys(r.init_errors))[:3],
                           ((info.remedy + ' ' if info is not None else '') + Msg("Rebuild gpu-burn for this GPU's architecture (`make COMPUTE=<cc>`) if the error is about a kernel image, check `nvidia-smi` and `dmesg | grep -e NVRM -e Xid`, free the GPUs of other processes and run it again.")), SRC_BURN + (f"; {info.source}" if info else "")))
    if r.abort_line and not any("DIED" in b.flags for b in faulty):
        out.append(Finding(fid, Verdict.FAIL, Msg("gpu-burn aborted: {abort_line}", abort_line=r.abort_line), "host", (r.abort_line,),
                           REMEDY_FAULTY, SRC_BURN))
    unmeasured = [b for b in gpus if not b.measured]
    ok = [b for b in gpus if b.measured]
    elapsed = (r.progress_pct[-1] / 100 * r.duration_s) if r.progress_pct and r.duration_s else None
    if unmeasured and elapsed is not None and elapsed >= STALL_AFTER_S:
        stalled = [b for b in unmeasured if b not in faulty]
        if stalled:
            peers = (Msg(' while GPU {names} worked ({gflops} Gflop/s)', names=_names(ok),
                         gflops=', '.join(f'{_peak(b):.0f}' for b in ok)) if ok else '')
            killed = (Msg('; its test processes ignored SIGTERM and were killed with SIGKILL') if r.force_kill_line
                      else '')
            out.append(Finding(fid, Verdict.FAIL, Msg("gpu-burn: GPU {names} did no work (0 Gflop/s) {elapsed:.0f} s into "
                                                      "the run{peers}{killed}: stalled under compute", names=_names(stalled),
                                                      elapsed=elapsed, peers=peers, killed=killed),
                               ", ".join(_subject(b) for b in stalled[:4]),
                               tuple(x[:400] for x in (r.duration_line, r.progress_lines[-1], r.force_kill_line) if x),
                               REMEDY_STALLED, SRC_BURN))
    if out:
        return out
    if unmeasured and (r.tested is not None or not ok):
        return [Finding(fid, Verdict.UNKNOWN, (Msg('gpu-burn reports GPU {names} ', names=_names(unmeasured)) + (Msg('OK') if any(b.result == 'OK' for b in unmeasured) else Msg('without a result')) + Msg(' but no progress line shows it working (no Gflop/s): the burn did not run on it')),
                        ", ".join(_subject(b) for b in unmeasured[:4]),
                        tuple(x for x in [r.tested_line] + [b.result_line for b in unmeasured][:8] if x)
                        or tuple(r.progress_lines[-1:]),
                        "Run it longer (`gpu_burn 600`, the first progress line comes after the set-up) and check "
                        "that it prints Gflop/s for every GPU; gpu-burn prints OK even when its test never started.",
                        SRC_BURN)]
    dur = r.duration_s
    msg = ((Msg('gpu-burn: {n_ok} GPUs computed without an error', n_ok=len(ok)) if len(ok) != 1 else Msg('gpu-burn: {n_ok} GPU computed without an error', n_ok=len(ok))) + (Msg(" ({names}); 'Tested {tested} GPUs' all OK", names=_names(ok), tested=r.tested) if r.tested is not None else Msg(" in every progress line shown (no final 'Tested N GPUs' summary in this paste)")))
    peaks = [_peak(b) for b in ok]
    if peaks:
        msg += (f'; {min(peaks):.0f}' + (f'-{max(peaks):.0f}' if max(peaks) != min(peaks) else '') + Msg(' Gflop/s'))
    temps = [t for b in ok for t in b.temps_c]
    if temps:
        msg += (Msg(', up to {max} C', max=max(temps)))
    if dur is not None and dur < SHORT_RUN_S:
        msg += (Msg('. The run was only {dur} s: that proves the arithmetic is right, not that it stays right hot (burn 10 minutes or more to validate)', dur=dur))
    ev = [x for x in (r.duration_line, r.tested_line) if x] + r.progress_lines[-1:]
    return [Finding(fid, Verdict.PASS, msg, "host", tuple(x[:400] for x in ev), "", SRC_BURN)]


def _steady(b: BurnGpu) -> float:
    """A GPU's steady Gflop/s: the median of its readings after its first, one reading per new proc'd count (gpu-burn
    prints its last figure again on every line until the GPU's next chunk is done: a GPU that started late repeats
    its start-up chunk's rate for dozens of lines, held-out round 85), the first covering the start-up."""
    readings: list[float] = []
    last = None
    for p, g in zip(b.procd, b.gflops):
        if p > 0 and g > 0 and p != last:
            readings.append(g)
            last = p
    return statistics.median(readings[1:] or readings or [_peak(b)])


def burn_speed(r: GpuBurn, exp: Mapping[str, Any]) -> list[Finding]:
    fid = "gpu.stress_speed"
    ok = [r.gpus[i] for i in sorted(r.gpus) if r.gpus[i].measured and not r.gpus[i].bad_errors]
    by_model: dict[str, list[BurnGpu]] = {}
    for b in ok:
        by_model.setdefault(b.name, []).append(b)
    out: list[Finding] = []
    for model, group in by_model.items():
        if len(group) < 2:
            continue
        steady = {b.index: _steady(b) for b in group}
        med = statistics.median(steady.values())
        if med <= 0:
            continue
        for b in group:
            if steady[b.index] < SLOW_FRACTION * med:
                out.append(Finding(fid, Verdict.WARN, Msg("gpu-burn: GPU {index}{a1} runs at {a2:.0f} Gflop/s, {a3:.0%} of the median {med:.0f} of "
                                                          "its same-model peers: it is held back", index=b.index, a1=' (' + model + ')' if model else '', a2=steady[b.index], a3=steady[b.index] / med, med=med), _subject(b),
                                   tuple(r.progress_lines[-1:]),
                                   "Read its clock-event reasons and temperature under load (`nvidia-smi -q -d "
                                   "PERFORMANCE,TEMPERATURE,POWER -i N`) and its PCIe link (`nvidia-smi -q -d PCIE`); "
                                   "a GPU that throttles alone has a cooling, power-cap or seating problem.",
                                   SRC_SPEED, measured=measure(steady[b.index], SLOW_FRACTION * med, "Gflop/s",
                                                               "at_least", f"GPU {b.index} steady Gflop/s "
                                                               f"({SLOW_FRACTION:g} x its peers' median {med:.0f})")))
    return out


def burn_temperature(r: GpuBurn, exp: Mapping[str, Any]) -> list[Finding]:
    fid = "gpu.stress_temp"
    slowdown = to_int(exp.get("slowdown_c")) if exp.get("slowdown_c") not in (None, "") else None
    if slowdown is None:
        return []
    out: list[Finding] = []
    for b in (r.gpus[i] for i in sorted(r.gpus)):
        hot = max(b.temps_c, default=None)
        if hot is not None and hot >= slowdown:
            out.append(Finding(fid, Verdict.WARN, Msg("gpu-burn: GPU {index} reached {hot} C, at or above its slowdown temperature {slowdown} C: "
                                                      "it cut its clocks under load", index=b.index, hot=hot, slowdown=slowdown), _subject(b),
                               tuple(r.progress_lines[-1:]),
                               "Check airflow, fan speeds and inlet temperature; read `nvidia-smi -q -d "
                               "TEMPERATURE,PERFORMANCE` during the burn.", SRC_TEMP,
                               # at or above the slowdown warns: the passing side is the whole degree below it
                               measured=measure(hot, slowdown - 1, "°C", "at_most",
                                                f"GPU {b.index} hottest reading (slowdown at {slowdown} °C)")))
    return out


def judge_gpu_burn_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge: parse once, every gpu-burn rule."""
    r = parse_gpu_burn(text, str(exp.get("command") or ""))
    return burn_result(r, exp) + burn_speed(r, exp) + burn_temperature(r, exp)
