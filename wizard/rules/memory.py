"""GPU memory rules on the nvidia-smi/NVML document: ECC mode, ECC error counters, row remapping and
retired pages (thresholds in ``assets/gpu_thresholds.csv``, each row with its source). Host memory
(EDAC) is judged elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wizard.model import Finding, Verdict, measure, worst
from wizard.parsers.smi import GpuFacts, SmiDoc
from wizard.rules.smi import (
    RESET_REMEDY,
    reset_remedy,
    SRC_MIG,
    _ev,
    _fmt,
    _pass_group,
    gpu_class,
    short_subject,
    subject,
    threshold_source,
    thresholds,
    unresponsive,
)
from wizard.i18n import N_, Msg, joined

SRC_A6 = ("nvidia-smi documentation, https://docs.nvidia.com/deploy/nvidia-smi/ (ECC mode current / "
          "pending; -e to change it); NVML API reference, https://docs.nvidia.com/deploy/nvml-api/ "
          "(nvmlDeviceGetEccMode)")


SRC_B6 = ("Azure HPC health checks, https://github.com/Azure/azurehpc-health-checks (check_gpu_ecc: any "
          "SRAM uncorrectable fails, SRAM correctable > 10000 or DRAM > 20000000 fails); NVIDIA GPU memory "
          "error management, https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/; NVIDIA DCGM, dcgm_errors.h "
          "(DCGM_FR_VOLATILE_DBE_DETECTED: a volatile uncorrectable ECC error -> 'Drain the GPU and reset it or reboot "
          "the node'), https://github.com/NVIDIA/DCGM")


SRC_B7 = ("NVIDIA GPU memory error management, https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/ (row "
          "remapping: pending -> reset, remapping failure -> RMA); NVIDIA Dynamic Page Retirement, "
          "https://docs.nvidia.com/deploy/dynamic-page-retirement/")


def ecc_mode(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    out, ok = [], []
    for g in doc.gpus:
        if unresponsive(g):  # its fields prove nothing; health.gpu_responsive fails it
            continue
        cur, pend = g.flag("ecc.mode.current"), g.flag("ecc.mode.pending")
        cls = gpu_class(g)
        lines = g.lines("ecc.mode.current", "ecc.mode.pending", "brand", "name")
        idx = g.index if g.index is not None else "<index>"
        if cur is None:
            if (g.text("table.ecc") or "").strip().lower() == "off" and cls == "datacenter":
                out.append(Finding("health.ecc_mode", Verdict.WARN,
                                   Msg("{subject}: the table prints Off for Volatile Uncorr. ECC: ECC is disabled on this "
                                       "data-center GPU", subject=subject(g)), subject(g), _ev(g, g.lines("table.ecc")),
                                   Msg("Confirm with `nvidia-smi -q -d ECC`; enable it (`sudo nvidia-smi -i {idx} -e 1`) and "
                                       "reboot or reset the GPU.", idx=idx), SRC_A6))
            elif g.text("table.ecc") is None and (g.get("table.ecc") is not None) and cls == "datacenter":
                out.append(Finding("health.ecc_mode", Verdict.WARN,
                                   Msg("{subject}: the table prints N/A for Volatile Uncorr. ECC, so ECC looks off on this "
                                       "data-center GPU", subject=subject(g)), subject(g), _ev(g, g.lines("table.ecc")),
                                   Msg("Confirm with `nvidia-smi -q -d ECC`; if ECC is off, enable it (`sudo nvidia-smi -i {idx} "
                                       "-e 1`) and reboot.", idx=idx), SRC_A6))
            continue
        if cur is False and pend is True:
            out.append(Finding("health.ecc_mode", Verdict.WARN,
                               Msg("{subject}: ECC is off now and turns on at the next reboot (pending Enabled)", subject=subject(g)),
                               subject(g), _ev(g, lines), "Reboot (or reset the GPU) to apply it, then check again.",
                               SRC_A6))
        elif cur is False and cls == "datacenter":
            out.append(Finding("health.ecc_mode", Verdict.FAIL,
                               Msg("{subject}: ECC is off on a data-center GPU", subject=subject(g)), subject(g), _ev(g, lines),
                               Msg("Enable ECC (`sudo nvidia-smi -i {idx} -e 1`), then reboot or reset the GPU and check that "
                                   "it reads Enabled.", idx=idx), SRC_A6))
        elif cur is True and pend is False:
            out.append(Finding("health.ecc_mode", Verdict.WARN,
                               Msg("{subject}: ECC is on but set to turn off at the next reboot (pending Disabled)", subject=subject(g)),
                               subject(g), _ev(g, lines),
                               Msg("Undo the change (`sudo nvidia-smi -i {idx} -e 1`) unless it was meant.", idx=idx), SRC_A6))
        elif cur is False:
            ok.append((g, Msg(" (ECC is optional on a {cls} GPU)", cls=Msg.plain(cls)) if cls != "unknown" else "", lines))
        else:
            ok.append((g, "", lines))
    on_ok = [t for t in ok if t[0].flag("ecc.mode.current") is not False]
    out += _pass_group("health.ecc_mode", on_ok, N_("ECC is on"), N_("ECC is on for {n} GPUs"), SRC_A6, total=len(doc.gpus))
    for t in ok:
        if t[0].flag("ecc.mode.current") is False:  # off where it is optional: said per GPU
            out += _pass_group("health.ecc_mode", [t], N_("ECC is off"), "", SRC_A6)
    return out


def _sum(g: GpuFacts, *keys: str) -> float | None:
    vals = [g.num(k) for k in keys]
    nums = [v for v in vals if v is not None]
    return sum(nums) if nums else None


def _sram_unc(g: GpuFacts, ctr: str) -> float | None:
    v = g.num(f"ecc.errors.uncorrected.{ctr}.sram")
    if v is not None:
        return v
    return _sum(g, f"ecc.errors.uncorrected.{ctr}.sram.parity", f"ecc.errors.uncorrected.{ctr}.sram.secded")


def ecc_counters(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    t = thresholds()
    out, ok = [], []
    for g in doc.gpus:
        keys = [k for k in g.fields if k.startswith("ecc.errors.")]
        vals = {k: g.num(k) for k in keys}
        readable = {k: v for k, v in vals.items() if v is not None}
        lines = [g.fields[k].line for k in keys if vals.get(k) or k.endswith("thresholdExceeded")]
        mig = g.flag("mig.mode.current") is True
        vol_na = mig and not any(".volatile." in k for k in readable)
        note = (Msg(' (volatile counters cannot be read while MIG is enabled)') if vol_na else '')
        exceeded = g.flag("ecc.errors.uncorrected.aggregate.sram.thresholdExceeded")
        if not readable and exceeded is None:
            if mig and keys:
                out.append(Finding("health.ecc", Verdict.SKIP,
                                   Msg("{subject}: ECC counters cannot be read while MIG is enabled", subject=subject(g)), subject(g),
                                   _ev(g, g.lines("mig.mode.current")), "", SRC_MIG))
            continue
        sram_unc = max((v for v in (_sram_unc(g, "volatile"), _sram_unc(g, "aggregate")) if v is not None), default=None)
        sram_unc_agg = _sram_unc(g, "aggregate")
        sram_cor = max((v for v in (g.num("ecc.errors.corrected.volatile.sram"),
                                    g.num("ecc.errors.corrected.aggregate.sram")) if v is not None), default=None)
        dram = {k: v for k, v in readable.items() if ".dram" in k or ".device_memory" in k}
        dram_max = max(dram.values(), default=None)
        unc_vol = max((v for v in (g.num("ecc.errors.uncorrected.volatile.dram"),
                                   g.num("ecc.errors.uncorrected.volatile.device_memory"),
                                   g.num("ecc.errors.uncorrected.volatile.total")) if v is not None), default=None)
        ev = _ev(g, lines or [g.fields[k].line for k in keys[:4]])
        who = short_subject(g)
        m_sram_unc = measure(sram_unc, t["ecc_sram_uncorrectable_fail"], "count", "at_most",
                             f"{who} uncorrectable SRAM ECC errors")
        m_sram_cor = measure(sram_cor, t["ecc_sram_correctable_fail"], "count", "at_most",
                             f"{who} corrected SRAM ECC errors")
        m_dram = measure(dram_max, t["ecc_dram_any_fail"], "count", "at_most", f"{who} largest DRAM ECC counter")
        problems: list[tuple[Verdict, str, str]] = []
        measured = []
        if exceeded:
            problems.append((Verdict.FAIL, Msg("the SRAM uncorrectable-error threshold is exceeded"),
                             Msg("Drain the node and run NVIDIA field diagnostics; this GPU is an RMA candidate.")))
        if sram_unc is not None and sram_unc > t["ecc_sram_uncorrectable_fail"]:
            rma = sram_unc_agg is not None and sram_unc_agg > t["ecc_sram_uncorrectable_aggregate_rma"]
            problems.append((Verdict.FAIL, Msg("{n} uncorrectable SRAM ECC error(s)", n=_fmt(sram_unc)),
                             Msg.plain(RESET_REMEDY) + (Msg(" Aggregate SRAM uncorrectable errors above {limit}: RMA the GPU.",
                                                            limit=_fmt(t['ecc_sram_uncorrectable_aggregate_rma']))
                                                        if rma else Msg(" RMA the GPU if they return."))))

            measured.append(m_sram_unc)
        if sram_cor is not None and sram_cor > t["ecc_sram_correctable_fail"]:
            problems.append((Verdict.FAIL, Msg("{n} corrected SRAM errors (limit {limit})", n=_fmt(sram_cor),
                                               limit=_fmt(t['ecc_sram_correctable_fail'])),
                             Msg("RMA candidate: run NVIDIA field diagnostics.")))
            measured.append(m_sram_cor)
        if dram_max is not None and dram_max > t["ecc_dram_any_fail"]:
            problems.append((Verdict.FAIL, Msg("a DRAM ECC counter at {n} (limit {limit})", n=_fmt(dram_max),
                                               limit=_fmt(t['ecc_dram_any_fail'])),
                             Msg("RMA candidate: run NVIDIA field diagnostics.")))
            measured.append(m_dram)
        if unc_vol is not None and unc_vol > 0 and not any(v is Verdict.FAIL for v, _, _ in problems):
            # DCGM's health check fails a volatile double-bit (uncorrectable) error: "Drain the GPU and reset it or
            # reboot the node" (DCGM_FR_VOLATILE_DBE_DETECTED); Meta GCM's ecc_uncorrected_volatile_total allows 0
            problems.append((Verdict.FAIL, Msg("{n} uncorrectable memory error(s) since the driver loaded",
                                               n=_fmt(unc_vol)),
                             Msg("Drain the GPU and reset it (or reboot the node) before it takes work: a row remap "
                                 "or page retirement the error caused takes effect only then. Look for Xid 48/63/64/94/95 "
                                 "in `dmesg` and at the row-remapping / retired-pages finding after the reset; RMA the "
                                 "GPU if the errors return or a remap failed.")))
            measured.append(measure(unc_vol, 0, "count", "at_most", f"{who} uncorrectable memory errors since the "
                                    "driver loaded"))
        if problems:
            v = worst(p[0] for p in problems)
            out.append(Finding("health.ecc", v, f"{subject(g)}: " + joined("; ", (p[1] for p in problems)) + note,
                               subject(g), ev, joined(" ", dict.fromkeys(p[2] for p in problems)), SRC_B6,
                               measured=next((m for m in measured if m is not None), None)))
            continue
        nonzero = [f"{_fmt(v)} {k.replace('ecc.errors.', '').replace('.', ' ')}" for k, v in readable.items() if v]
        detail = (Msg('; counts: ') + ', '.join(nonzero) + Msg(' (limits: DRAM {fmt}, SRAM corrected {fmt2})', fmt=_fmt(t['ecc_dram_any_fail']), fmt2=_fmt(t['ecc_sram_correctable_fail'])) if nonzero else Msg(': no errors'))
        # the counter nearest its limit (the SRAM uncorrectable one has a limit of 0: any error fails)
        ok.append((g, detail + note, lines or [g.fields[k].line for k in keys[:2]],
                   m_sram_unc or m_dram or m_sram_cor))
    out += _pass_group("health.ecc", ok, N_("ECC error counters within limits"), N_("ECC error counters within limits on "
                       "{n} GPUs"), SRC_B6, total=len(doc.gpus))
    return out


def row_remap(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    out, ok = [], []
    for g in doc.gpus:
        keys = [k for k in g.fields if k.startswith("remapped_rows")]
        if not keys:
            continue
        corr, unc = g.num("remapped_rows.correctable"), g.num("remapped_rows.uncorrectable")
        pending, failure = g.flag("remapped_rows.pending"), g.flag("remapped_rows.failure")
        none_banks = g.num("remapped_rows.histogram.none")
        # the lines a pending or failed remap rests on first: a view that shows three evidence lines shows them (walk
        # 44: only the header and the error counts were quoted under "a remap is pending")
        first = g.lines("remapped_rows.pending", "remapped_rows.failure") if (
            g.flag("remapped_rows.pending") or g.flag("remapped_rows.failure")) else []
        lines = first + [g.fields[k].line for k in keys
                         if k != "remapped_rows.histogram.max" and g.fields[k].line not in first]
        if corr is None and unc is None and pending is None and failure is None:
            if g.flag("mig.mode.current") is True:
                out.append(Finding("health.row_remap", Verdict.SKIP,
                                   Msg("{subject}: row-remap state cannot be read while MIG is enabled", subject=subject(g)), subject(g),
                                   _ev(g, lines, g.lines("mig.mode.current")), "", SRC_MIG))
            continue
        idx = g.index if g.index is not None else "<index>"
        remaps = measure((corr or 0) + (unc or 0), 0, "rows", "at_most", f"{short_subject(g)} rows remapped")
        if failure:
            out.append(Finding("health.row_remap", Verdict.FAIL,
                               Msg("{subject}: row remapping failed (Remapping Failure Occurred: Yes)", subject=subject(g)), subject(g),
                               _ev(g, lines), "The GPU ran out of spare rows or could not remap: drain it and RMA it.",
                               SRC_B7))
        elif pending and unc:
            out.append(Finding("health.row_remap", Verdict.FAIL,
                               (Msg('{subject}: a row remap for {fmt} uncorrectable error(s) is pending: the bad rows stay in use until the GPU is reset', subject=subject(g), fmt=_fmt(unc)) + (Msg(' (no remap failure, so not an RMA case)') if failure is False else '')),
                               subject(g), _ev(g, lines),
                               (reset_remedy(idx) + Msg(" If 'Remapping Failure Occurred' turns Yes, RMA the GPU.")), SRC_B7))
        elif pending:
            out.append(Finding("health.row_remap", Verdict.WARN,
                               Msg("{subject}: a row remap is pending (correctable errors: {fmt}): it takes effect at the "
                                   "next GPU reset", subject=subject(g), fmt=_fmt(corr)), subject(g), _ev(g, lines),
                               (reset_remedy(idx) + Msg(' Still pending after the reset: FAIL, contact the vendor.')), SRC_B7))
        elif none_banks:
            out.append(Finding("health.row_remap", Verdict.FAIL,
                               Msg("{subject}: {fmt} memory bank(s) have no spare rows left (Bank Remap Availability 'None')", subject=subject(g), fmt=_fmt(none_banks)), subject(g), _ev(g, lines),
                               "The next error in those banks cannot be remapped: plan the RMA.", SRC_B7 + " (derived)",
                               measured=measure(none_banks, 0, "banks", "at_most",
                                                f"{short_subject(g)} banks without spare rows")))
        elif (corr or 0) + (unc or 0) > 0:
            out.append(Finding("health.row_remap", Verdict.WARN,
                               Msg("{subject}: {fmt} correctable and {fmt2} uncorrectable row remap(s) done, none pending: "
                                   "the GPU memory has had errors", subject=subject(g), fmt=_fmt(corr), fmt2=_fmt(unc)), subject(g), _ev(g, lines),
                               "Nothing to do now; watch the counts and Xid 48/63/64 in the kernel log, and RMA if "
                               "remaps keep growing.", SRC_B7 + "; IBM Autopilot, https://github.com/IBM/autopilot (remaps alone -> WARN)",
                               measured=remaps))
        else:
            ok.append((g, "", lines[:4], remaps if corr is not None or unc is not None else None))
    out += _pass_group("health.row_remap", ok, N_("no remapped rows, none pending"),
                       N_("no remapped rows, none pending, on {n} GPUs"), SRC_B7, total=len(doc.gpus))
    return out


def retired_pages(doc: SmiDoc, plan: Mapping[str, Any]) -> list[Finding]:
    t = thresholds()
    out, ok = [], []
    for g in doc.gpus:
        sbe, dbe = g.num("retired_pages.single_bit_ecc.count"), g.num("retired_pages.double_bit.count")
        pending = g.flag("retired_pages.pending")
        if pending is None:
            pending = g.flag("retired_pages.pending_retirement")
        if sbe is None and dbe is None and pending is None:
            continue
        total = (sbe or 0) + (dbe or 0)
        lines = g.lines("retired_pages.single_bit_ecc.count", "retired_pages.double_bit.count", "retired_pages.pending",
                        "retired_pages.pending_retirement")
        limit = t["retired_pages_fail"]
        # >= the limit is the problem: the passing side is the whole page below it
        rm = measure(total, limit - 1, "pages", "at_most", f"{short_subject(g)} retired pages (limit {_fmt(limit)})")
        if total >= limit and pending:
            out.append(Finding("health.retired_pages", Verdict.FAIL,
                               Msg("{subject}: {fmt} retired pages and one more pending (limit {fmt2})", subject=subject(g), fmt=_fmt(total), fmt2=_fmt(limit)),
                               subject(g), _ev(g, lines), "The GPU has nearly used up page retirement: RMA it.",
                               SRC_B7 + "; " + threshold_source("retired_pages_fail"), measured=rm))
        elif pending:
            out.append(Finding("health.retired_pages", Verdict.WARN,
                               Msg("{subject}: a page is pending retirement ({fmt} retired so far)", subject=subject(g), fmt=_fmt(total)), subject(g),
                               _ev(g, lines), "Reboot or reset the GPU so the page is retired (a reboot fixes this; "
                               "no hardware service needed), then check again.", SRC_B7))
        elif total >= limit:
            out.append(Finding("health.retired_pages", Verdict.WARN,
                               Msg("{subject}: {fmt} retired pages (limit {fmt2})", subject=subject(g), fmt=_fmt(total), fmt2=_fmt(limit)), subject(g),
                               _ev(g, lines), "Close to the page-retirement limit: plan the RMA.", SRC_B7, measured=rm))
        else:
            ok.append((g, f" ({_fmt(total)} retired)" if total else "", lines,
                       rm if sbe is not None or dbe is not None else None))
    out += _pass_group("health.retired_pages", ok, N_("no page retirement pending"),
                       N_("no page retirement pending on {n} GPUs"), SRC_B7, total=len(doc.gpus))
    return out
