"""Judging DCGM diagnostics (``dcgmi diag`` levels 1-3).

* Every test must pass (DCGM's own rule for acceptance): a failed test is a FAIL, whatever the test
  (Diagnostic miscompares, Targeted Stress / Power, Memory Bandwidth fail too, not only the PCIe,
  NVLink, ECC and memory tests IBM Autopilot's monitoring treats as fatal). Where the JSON gives
  DCGM's error code, category and severity (``dcgm_errors.h``: DCGM_FR_*, DCGM_FR_EC_*,
  DCGM_ERROR_*), the remedy says them (isolate, drain and reset, configuration); an error of
  category DCGM_FR_EC_INTERNAL_OTHER is DCGM's own, unknown. A test's Warn result is a WARN; a
  status DCGM does not print (not Pass/Fail/Warn/Skip) is UNKNOWN.
* A planned GPU (the plan's ``gpu_count``) with no result in a level-2/3 run is a FAIL naming it;
  UNKNOWN when the run does not say which GPUs it tested. A JSON document cut short is UNKNOWN
  for what is missing.
* Skip is not pass: a skipped test is a WARN with its cause to explain, except the EUD test
  skipped because the EUD package is not installed, which is expected (SKIP).
* "NvLink down"-style results on PCIe-only SKUs (``assets/pcie_only_gpus.csv``) are known false
  alarms (SKIP, with the reason).
* CUDA error 802 ("system not yet initialized", cudaErrorSystemNotReady) in a failed test: FAIL,
  but the remedy is the system service CUDA waits for (Fabric Manager on NVSwitch systems, NVIDIA
  Fabric Manager user guide), not the GPU memory / RMA path.
* 'Persistence Mode' failed: WARN with "enable persistence mode and rerun"; when it made DCGM skip
  every hardware test, the run proves nothing: UNKNOWN (skip is not pass).
* Finding ids follow the level: ``health.dcgm_l1``, ``gpu.dcgm_l2``, ``node.dcgm_l3``; subjects
  name the GPU (``gpu_subject``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Mapping

from wizard.common import gpu_subject
from wizard.data import table
from wizard.model import Finding, Verdict
from wizard.parsers.dcgm import DcgmDiag, DiagResult
from wizard.i18n import Msg, N_, SEMICOLON
from wizard.common import lazy_re

DCGM_DIAG_URL = "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html"
SRC = (f"NVIDIA DCGM diagnostics documentation ({DCGM_DIAG_URL}): every test must pass (a plugin's Fail: it found "
       "the named defect or threshold violation, or could not complete because of a setup or execution error), a "
       "skipped test is not a pass")
SRC_ERRORS = ("NVIDIA DCGM dcgm_errors.h (https://github.com/NVIDIA/DCGM/blob/master/dcgmlib/dcgm_errors.h): error "
              "codes DCGM_FR_*, categories DCGM_FR_EC_* (16 = internal), severities DCGM_ERROR_* (1 monitor, "
              "2 isolate, 4 triage, 5 config, 6 drain and reset)")
FATAL_TESTS = lazy_re(r"^(pcie|nvlink|gpu memory|memory|page retirement/row remap|memtest|inforom)$", re.I)
"""Tests IBM Autopilot's monitoring treats as fatal (PCIe, NVLink, ECC and GPU Memory; DCGM 4 names the memory test
"memory" and PCIe "pcie"; page retirement/row remap is DCGM's ECC check). For acceptance every failed test fails
(:data:`SRC`); this list only words the finding ("a hardware defect" vs "a test under load")."""
ERROR_TAGS = lazy_re(r"\(error_id (?P<code>\d+)(?:, category (?P<cat>\d+))?(?:, severity (?P<sev>\d+))?\)")
"""The tags :func:`wizard.parsers.dcgm.parse_dcgm_json` appends to a JSON error's message."""
INTERNAL_CATEGORY = 16
"""DCGM_FR_EC_INTERNAL_OTHER (:data:`SRC_ERRORS`): an error of DCGM itself, not a measurement of the GPU."""
SEVERITY_WORDS = {1: "DCGM rates it 'monitor' (the GPU can run work but must be watched)",
                  2: "DCGM rates it 'isolate' (the GPU cannot run work: take it out of service)",
                  4: "DCGM rates it 'triage' (collect `nvidia-bug-report.sh` and triage it)",
                  5: "DCGM rates it 'config' (a configuration change may clear it)",
                  6: "DCGM rates it 'reset' (drain the GPU and reset it)"}
"""DCGM_ERROR_* severities (:data:`SRC_ERRORS`), in words."""
CATEGORY_WORDS = {1: "performance threshold", 2: "performance violation", 3: "software configuration",
                  4: "software library", 5: "software Xid", 6: "CUDA software", 7: "EUD software", 8: "other software",
                  9: "hardware thermal", 10: "hardware memory", 11: "hardware NVLink", 12: "hardware NVSwitch",
                  13: "hardware PCIe", 14: "hardware power", 15: "other hardware", 16: "DCGM internal"}
"""DCGM_FR_EC_* categories (:data:`SRC_ERRORS`), in words."""
KNOWN_STATUSES = frozenset({"pass", "fail", "warn", "skip"})
STRESS_TESTS = lazy_re(r"targeted stress|targeted power|memory bandwidth|diagnostic|pulse|memtest|eud|"
                          r"nvbandwidth|stress|power", re.I)
NVLINK_DOWN = lazy_re(r"nv\s?link\b.*\b(down|inactive|not active)|link\s+\d+\s+.*\bdown\b", re.I)
SYSTEM_NOT_READY = lazy_re(r"system not yet initiali[sz]ed|cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY",
                              re.I)
"""CUDA error 802 as DCGM quotes it ("Unable to initialize CUDA library: 'system not yet
initialized'"). CUDA runtime API: cudaErrorSystemNotReady = 802, "the system is not yet ready to
start any CUDA work ... verify ... all required driver daemons are actively running"; on NVSwitch
systems that daemon is nvidia-fabricmanager (NVIDIA Fabric Manager user guide)."""
SRC_802 = ("CUDA runtime API error types (cudaErrorSystemNotReady = 802: required driver daemons not running; "
           "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html); NVIDIA Fabric Manager user guide "
           "(NVSwitch systems need nvidia-fabricmanager at the driver's exact version; "
           "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/)")
PERSISTENCE_TEST = lazy_re(r"^persistence mode$", re.I)
"""DCGM's deployment test for persistence mode; when it fails, DCGM skips the tests after the
deployment checks (real run: tests/data/public/dcgmi-diag__r4-rtx2060s-persistence-fail-memtest-pass.txt)."""
SRC_PM = (f"NVIDIA DCGM diagnostics documentation ({DCGM_DIAG_URL}; the deployment 'Persistence Mode' test; DCGM's "
          "own message: 'The DCGM diagnostic requires persistence mode to be enabled'; a skipped test is not a pass)")
SRC_NVLINK_FALSE = ("NVIDIA/DCGM#49, https://github.com/NVIDIA/DCGM/issues/49 (DCGM's PCIe test fails with 'NvLink "
                    "link N is currently down' on GPUs that have no NVLink) and NVIDIA/NVSentinel PR #1481, "
                    "https://github.com/NVIDIA/NVSentinel/pull/1481 (PCIe GPUs report every NVLink link down)")
EXCERPT_NOTE = (Msg("this paste is an excerpt (no banner, header or metadata): the run's level and its other tests are not "
                "in it"))
PM_REMEDY = ("Enable persistence mode (`sudo nvidia-smi -pm 1`, or `sudo systemctl enable --now nvidia-persistenced`, "
             "which keeps it across reboots) and rerun the diagnostic.")


INTERNAL_ERROR = lazy_re(r"internal error during the test|A child process \(\d+\) exited with non-?\s*zero|"
                            r"plugin .*(?:crashed|failed to (?:load|initiali[sz]e))", re.I)
"""A DCGM result that says the test process itself failed (an internal error, its child process exited non-zero):
the test did not measure the GPU, so its 'Fail' is unknown, not a GPU failure (NVIDIA DCGM diagnostics user guide:
an error in the framework or plugin, not a failed check)."""

SRC_LEVEL_TESTS = ("NVIDIA DCGM Diagnostics user guide, run levels: level 1 (quick) runs the deployment checks, level 2 "
                   "(medium) adds the PCIe and memory tests, level 3 (long) the stress, targeted power and performance "
                   "plugins (https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html)")


def _level(d: DcgmDiag) -> int:
    if d.level:
        return d.level
    cats = {c.lower() for c in d.categories} | {r.category.lower() for r in d.results}
    names = " ".join(r.test for r in d.results)
    if "stress" in cats or "performance" in cats or STRESS_TESTS.search(names):
        return 3
    if cats & {"integration", "hardware"} or re.search(r"gpu memory|pcie|\bmemory\b", names, re.I):
        return 2
    return 1


def finding_id(d: DcgmDiag) -> str:
    """``health.dcgm_l1`` / ``gpu.dcgm_l2`` / ``node.dcgm_l3`` from the run level (told by the
    command line, or inferred from the categories and tests present)."""
    lv = _level(d)
    return {1: "health.dcgm_l1", 2: "gpu.dcgm_l2"}.get(lv, "node.dcgm_l3")


def _pcie_only(d: DcgmDiag, exp: Mapping[str, Any]) -> str:
    """Name of the PCIe-only SKU when the run's GPUs are one (by device id or the plan's model)."""
    ids = d.device_ids
    rows = {r["device_id"].lower(): r["gpu"] for r in table("pcie_only_gpus.csv")}
    if ids and all(i in rows for i in ids):
        return rows[ids[0]]
    model = str(exp.get("gpu_model") or "")
    for r in rows.values():
        if model and r.lower() in model.lower():
            return r
    return ""


def _remedy(test: str, msgs: list[str], gpu: int | None) -> str:
    t = test.lower()
    text = " ".join(msgs).lower()
    g = f"GPU {gpu}" if gpu is not None else N_("the GPU")
    if "busy or unavailable" in text or "cuctxcreate" in text or "context" in text:
        r = Msg("DCGM could not create a CUDA context on {g}: check `nvidia-smi` for processes on it and its compute "
                "mode (Exclusive_Process blocks a second context), stop them, reset the GPU (`nvidia-smi -r`, root, "
                "idle GPU) or reboot, restart DCGM (nv-hostengine), and rerun; RMA the GPU if it still fails.", g=g)
    elif re.search(r"memory", t):
        r = Msg("Check {g}: `nvidia-smi -q -d ECC,ROW_REMAPPER` (uncorrectable errors, pending remaps) and the kernel "
                "log for Xid 48/63/64/94/95; reset or reboot to apply pending row remaps, rerun the test on that GPU "
                "(`dcgmi diag -r 2 -i N`); RMA it if it fails again.", g=g)
    elif "pcie" in t:
        r = Msg("Check {g}'s PCIe link under load (LnkSta vs LnkCap, `nvidia-smi -q -d PCIE`), AER errors in the "
                "kernel log, reseat the GPU/riser, then rerun.", g=g)
    elif "nvlink" in t:
        r = Msg("Check `nvidia-smi nvlink -s -i N` and `-e` (error counters) for {g}; on NVSwitch systems check "
                "nvidia-fabricmanager; reset/reboot and rerun; vendor support if links stay down.", g=g)
    else:
        r = Msg("Rerun the test on {g} alone (`dcgmi diag -r N -i <gpu>`) and read its message (DCGM_FR_* codes are "
                "in the DCGM documentation).", g=g)
    if "pcie" in t and NVLINK_DOWN.search(text):
        r = Msg("DCGM's PCIe test failed on NVLink links it found down on {gpus}. If these GPUs have NVLink (SXM "
                "modules, NVL or bridged cards): `nvidia-smi nvlink -s` and, on NVSwitch systems, `systemctl status "
                "nvidia-fabricmanager` (`nvidia-smi -q | grep -A2 Fabric` should read Completed), then reset or "
                "reboot and rerun. If they are PCIe cards without NVLink, DCGM's NVLink check is a known false alarm: "
                "set gpu_model in the plan so bringup can tell, and judge the PCIe bandwidth lines instead.", gpus=g)
    if "thermal" in text or "temperature" in text:
        r += Msg(" Thermal violations were reported: check the cooling (fans, airflow, inlet temperature, thermal "
                 "interface).")
    return r


def _nvswitch_hint(d: DcgmDiag) -> str:
    """"; this run shows 8 x NVIDIA H100 80GB HBM3 (H100 SXM5 80GB), SXM5" from the device ids and
    assets/pci_ids.csv; "" when the ids are not known."""
    ids = d.device_ids
    if not ids:
        return ""
    rows = {r.get("device_id", "").lower(): r for r in table("pci_ids.csv")}
    names = {rows[i]["name"] + (f", {rows[i]['form_factor']}" if rows[i].get("form_factor") else "")
             for i in ids if i in rows}
    if len(names) != 1:
        return ""
    return Msg("; this run shows {n} x {name}", n=len(ids), name=names.pop())


def _not_ready_remedy(d: DcgmDiag) -> str:
    driver = d.metadata.get("Driver Version Detected")
    return Msg("CUDA could not initialise: error 802 'system not yet initialized' (cudaErrorSystemNotReady) means a "
               "system service CUDA needs is not running, not a GPU fault. On an NVSwitch system (HGX/DGX with SXM "
               "GPUs{hint}) that is Fabric Manager: `systemctl status nvidia-fabricmanager`; enable and start it "
               "(`sudo systemctl enable --now nvidia-fabricmanager`) at exactly the driver's version ({driver}"
               "`nv-fabricmanager --version` shows Fabric Manager's), check that `nvidia-smi -q | grep -A2 -i fabric` "
               "says State Completed, then rerun the diagnostic. Do not RMA a GPU over this result.",
               hint=_nvswitch_hint(d), driver=f"{driver}; " if driver else "")


def _gpu_ids(d: DcgmDiag) -> list[int]:
    ids: set[int] = set(range(d.gpu_count or 0))
    for r in d.results:
        ids |= set(r.gpus)
    if d.orphans is not None:
        ids |= set(d.orphans.gpus)
    return sorted(ids)


def judge(d: DcgmDiag, text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """A parsed DCGM run -> per-GPU findings (see module docstring)."""
    fid = finding_id(d)
    meta_ev = tuple(d.metadata_lines[:3])
    if d.runtime_error:
        return [Finding(fid, Verdict.UNKNOWN, Msg("DCGM diagnostics did not run: {runtime_error}", runtime_error=d.runtime_error), "host",
                        (d.runtime_error,), "Fix the error DCGM names (hostengine running? GPUs idle?) and rerun.", SRC)]
    if not d.results and d.orphans is not None and d.orphans.messages:
        # an Error/Warning row whose test row is cut off above it (held-out round 155: "| Error | GPU 3 has
        # uncorrectable memory errors and row remappings are pending |" under "Deployment"): DCGM's own words judge it
        o = d.orphans
        err = any(re.match(r"\s*\|\s*Errors?\b", ln) for ln in o.lines)
        out = []
        for g, ms in sorted(o.messages.items(), key=lambda kv: -1 if kv[0] is None else kv[0]):
            gm = re.search(r"\bGPU\s?(\d{1,3})\b", " ".join(ms)) if g is None else None
            gg = g if g is not None else (int(gm.group(1)) if gm else None)
            who = f"GPU {gg}" if gg is not None else Msg("the run")
            out.append(Finding(fid, Verdict.FAIL if err else Verdict.WARN,
                               Msg("{who}: DCGM reports {what} in its {section} checks (the test's own row is not in "
                                   "this excerpt): {msg}", who=who, what=Msg("an error") if err else Msg("a warning"),
                                   section=o.category.strip() or "?", msg=" ".join(ms)[:300]),
                               gpu_subject(gg) if gg is not None else "host", tuple(o.lines[:8]),
                               "Act on what DCGM names (uncorrectable memory errors with row remappings pending: drain "
                               "the node, reset the GPU so the remap is applied, rerun `dcgmi diag -r 3`; RMA if they "
                               "recur), then paste the whole `dcgmi diag` table.", SRC))
        return out
    if not d.results:
        what = (Msg('only the metadata') if d.metadata else Msg('no test results'))
        if d.truncated:
            what = (Msg('a JSON document cut short (truncated) before its first test result'))
        ev = meta_ev or tuple(text.splitlines()[:8])
        return [Finding(fid, Verdict.UNKNOWN, Msg("this DCGM output holds {what}: no test result to judge", what=what), "host", ev,
                        "Give bringup the whole `dcgmi diag` output (or its -j JSON).", SRC)]
    findings: list[Finding] = []
    pcie_sku = _pcie_only(d, exp)
    gpus = _gpu_ids(d)
    passed: dict[int | None, list[str]] = {}
    orphan_msgs = d.orphans.messages if d.orphans is not None else {}

    def msgs_for(r: DiagResult, g: int | None) -> list[str]:
        m = list(r.messages.get(g, [])) if g is not None else [x for ms in r.messages.values() for x in ms]
        if g is not None:
            m += [x for x in r.messages.get(None, []) if re.search(rf"\bGPU\s?{g}\b", x) or not _GPU_RE.search(x)]
            m += orphan_msgs.get(g, [])
        return list(dict.fromkeys(m))

    not_ready = any(SYSTEM_NOT_READY.search(x) for r in d.results for ms in r.messages.values() for x in ms) or (
        d.orphans is not None and any(SYSTEM_NOT_READY.search(x) for ms in d.orphans.messages.values() for x in ms))
    invalid = _invalid_without_persistence(d, gpus)
    for g, (pm, skipped, ran) in invalid.items():
        subject = gpu_subject(g) if g is not None else "host"
        who = f"GPU {g}" if g is not None else Msg("all GPUs")
        ev = tuple(dict.fromkeys(ln for r in [pm] + skipped for ln in r.lines[:6]))[:14]
        msg: str = (Msg("{who}: this DCGM run does not count: the 'Persistence Mode' check failed (persistence "
                   "mode is off), so DCGM skipped {a1}", who=who, a1=', '.join(r.test for r in skipped)))
        if ran:
            msg += (Msg('; only ') + ', '.join((f'{r.test} ({st})' for r, st in ran)) + Msg(' ran'))
        findings.append(Finding(fid, Verdict.UNKNOWN, msg, subject, ev, PM_REMEDY, SRC_PM))

    for r in d.results:
        targets: list[tuple[int | None, str]] = []
        if not r.per_gpu and not r.all_gpus and r.status:
            targets = [(None, r.status)]  # a test-level result (deployment tests): one finding for the whole run
        else:
            for g in (gpus or (None,)):
                st = r.status_for(g) if g is not None else (r.all_gpus or r.status)
                if st is not None:
                    targets.append((g, st))
        if not targets and r.status:
            targets = [(None, r.status)]
        for g, st in targets:
            told = [invalid[g]] if g in invalid else list(invalid.values()) if g is None else []
            if any(r is pm or any(r is x for x in skipped) for pm, skipped, _ran in told):
                continue  # said once, in the "run does not count" finding
            subject = gpu_subject(g) if g is not None else "host"
            who = f"GPU {g}" if g is not None else Msg("all GPUs")
            ms = msgs_for(r, g)
            ev = tuple(r.lines[:12])
            if g is not None and d.orphans is not None and orphan_msgs.get(g):
                ev += tuple(ln for ln in d.orphans.lines if ln not in ev)[:6]
            tail = f": {ms[0]}" if ms else ""
            if st == "pass":
                passed.setdefault(g, []).append(r.test)
                continue
            if st == "skip" and re.search(r"\beud\b", r.test, re.I):
                findings.append(Finding(fid, Verdict.SKIP, Msg("{who}: the EUD test was skipped (expected when the DCGM EUD package is not installed)", who=who), subject, ev, "", SRC))
                continue
            if pcie_sku and (NVLINK_DOWN.search(" ".join(ms)) or "nvlink" in r.test.lower()) and st != "pass":
                findings.append(Finding(fid, Verdict.SKIP, Msg("{who}: DCGM's '{test}' result ({st}{tail}) is a known false alarm on a PCIe-only "
                                                               "{pcie_sku}, which has no NVLink", who=who, test=r.test, st=st, tail=tail, pcie_sku=pcie_sku), subject, ev, "",
                                        SRC))
                continue
            if st == "skip" and d.level and d.level < 3 and (STRESS_TESTS.search(r.test)
                                                             or r.category.strip().lower() in ("performance", "stress")):
                # a level-3 test a run told to be level 1 or 2 does not run: DCGM lists it as Skip (held-out round 52)
                findings.append(Finding(fid, Verdict.SKIP, Msg("{who}: '{test}' is not part of a level-{level} run (DCGM runs "
                                                               "it from level 3 on)", who=who, test=r.test, level=d.level),
                                        subject, ev, "", SRC_LEVEL_TESTS))
                continue
            if st == "skip" and r.category.strip().lower() == "deployment" and not not_ready:
                # a deployment check DCGM left out tests the software set-up (libraries, variables), not a GPU
                findings.append(Finding(fid, Verdict.SKIP, Msg("{who}: DCGM did not run the deployment check '{test}'{tail} "
                                                               "(it checks the software set-up, not a GPU)", who=who,
                                                               test=r.test, tail=tail), subject, ev, "", SRC))
                continue
            if st == "skip":
                remedy: str = (Msg('Find why it was skipped (run `dcgmi diag -r N -v` and read the info lines: a plugin not installed for this GPU, a test not supported on this SKU, insufficient permissions) and rerun once fixed.'))
                if not_ready:
                    remedy = (Msg("Skipped in a run where CUDA could not initialise ('system not yet initialized'): fix that first (see the failed test's remedy: Fabric Manager on NVSwitch systems), then rerun."))
                findings.append(Finding(fid, Verdict.WARN, Msg("{who}: DCGM skipped '{test}'{tail}: a skipped test is not a pass", who=who, test=r.test, tail=tail), subject, ev, remedy, SRC_802 if not_ready else SRC))
                continue
            if st == "fail":
                if not_ready and not PERSISTENCE_TEST.match(r.test.strip()):
                    findings.append(Finding(fid, Verdict.FAIL,
                                            Msg("{who}: DCGM '{test}' could not run: CUDA did not initialise ('system not yet "
                                                "initialized', CUDA error 802), not a measured failure of the test{tail}", who=who, test=r.test, tail=tail), subject, ev, _not_ready_remedy(d), SRC_802))
                    continue
                if PERSISTENCE_TEST.match(r.test.strip()):
                    off = list(dict.fromkeys(re.findall(r"Persistence mode for GPU (\d+) is currently", " ".join(ms))))
                    if off:  # DCGM repeats one sentence per GPU: say it once, with the GPUs it names
                        tail = Msg(": persistence mode is off on GPU {gpus} (DCGM: 'Persistence mode for GPU N is "
                                   "currently disabled')", gpus=", ".join(off))
                    findings.append(Finding(fid, Verdict.WARN, Msg("{who} failed DCGM '{test}'{tail}", who=who, test=r.test, tail=tail), subject, ev,
                                            PM_REMEDY, SRC_PM))
                    continue
                if INTERNAL_ERROR.search(" ".join(ms)):
                    findings.append(Finding(fid, Verdict.UNKNOWN,
                                            Msg("{who}: DCGM's '{test}' test did not complete: the diagnostic itself hit an internal "
                                                "error{tail}; that measures nothing about the GPU", who=who, test=r.test, tail=tail), subject, ev,
                                            "Read the DCGM log (/var/log/nvidia-dcgm/nv-hostengine.log) and the kernel "
                                            "log for the cause, restart DCGM (`systemctl restart nvidia-dcgm` or "
                                            "nv-hostengine), make sure no other process holds the GPUs, then rerun "
                                            "the diagnostic.", SRC))
                    continue
                tags = [m for x in ms for m in ERROR_TAGS.finditer(x)]
                err_cats = {int(m.group("cat")) for m in tags if m.group("cat")}
                sevs = [int(m.group("sev")) for m in tags if m.group("sev")]
                if err_cats and err_cats <= {INTERNAL_CATEGORY}:
                    findings.append(Finding(fid, Verdict.UNKNOWN,
                                            Msg("{who}: DCGM's '{test}' failed with an error DCGM files as its own (category "
                                                "{INTERNAL_CATEGORY}, internal){tail}; that measures nothing about the GPU", who=who, test=r.test, INTERNAL_CATEGORY=INTERNAL_CATEGORY, tail=tail), subject, ev,
                                            "Read the DCGM log (/var/log/nvidia-dcgm/nv-hostengine.log), restart DCGM "
                                            "(`systemctl restart nvidia-dcgm`), then rerun the diagnostic.",
                                            f"{SRC}; {SRC_ERRORS}"))
                    continue
                nv_down = "pcie" in r.test.lower() and bool(NVLINK_DOWN.search(" ".join(ms)))
                said = (Msg('DCGM files it as {category_words}', category_words=', '.join(CATEGORY_WORDS[c] for c in sorted(err_cats) if c in CATEGORY_WORDS)) if any(c in CATEGORY_WORDS for c in err_cats) else '')
                sev = next((SEVERITY_WORDS[v] for v in (6, 2, 4, 5, 1) if v in sevs and v in SEVERITY_WORDS), "")
                remedy = _remedy(r.test, ms, g)
                if sev:
                    remedy = Msg("{upper}{a1}. {remedy}", upper=sev[0].upper(), a1=sev[1:], remedy=remedy)
                findings.append(Finding(fid, Verdict.FAIL,
                                        (Msg("{who} failed DCGM '{test}'{tail}", who=who, test=r.test, tail=tail) + (f' ({said})' if said else '')),
                                        subject, ev, remedy,
                                        f"{SRC}; {SRC_NVLINK_FALSE}" if nv_down else
                                        f"{SRC}; {SRC_ERRORS}" if tags else SRC))
                continue
            if st not in KNOWN_STATUSES:
                findings.append(Finding(fid, Verdict.UNKNOWN, Msg("{who}: DCGM '{test}' has a status DCGM does not print ('{st}'){tail}: not read as pass, "
                                                                  "warn or fail", who=who, test=r.test, st=st, tail=tail), subject, ev,
                                        "Rerun the diagnostic and give bringup dcgmi's own output (Pass, Fail, Warn "
                                        "or Skip per test).", SRC))
                continue
            findings.append(Finding(fid, Verdict.WARN, Msg("{who}: DCGM '{test}' warned{tail}", who=who, test=r.test, tail=tail), subject, ev,
                                    _remedy(r.test, ms, g), SRC))
    findings += _missing_gpus(d, fid, gpus, exp)
    if d.truncated:
        last_test = d.results[-1].test
        findings.append(Finding(fid, Verdict.UNKNOWN, Msg("this DCGM JSON is cut short (truncated) after '{last_test}': the tests after it, and the "
                                                          "rest of that one, are missing", last_test=last_test), "host",
                                tuple(ln for ln in text.splitlines() if ln.strip())[-1:],
                                "Give bringup the whole `dcgmi diag -j` output.", SRC))
    bad = {f.subject for f in findings if f.verdict in (Verdict.FAIL, Verdict.WARN, Verdict.UNKNOWN)}
    for g, tests in passed.items():
        subject = gpu_subject(g) if g is not None else "host"
        if subject in bad and g is not None:
            continue
        if g is None and invalid and all(x in invalid for x in (gpus or (None,))):
            continue  # the run does not count on any GPU: its deployment passes prove nothing on their own
        who = f"GPU {g}" if g is not None else Msg("all GPUs")
        ev = tuple(ln for r in d.results if r.test in tests for ln in r.lines[:2])[:12]
        findings.append(Finding(fid, Verdict.PASS, Msg("{who} passed DCGM: {fromkeys}", who=who, fromkeys=', '.join(dict.fromkeys(tests))),
                                subject, meta_ev + ev, "", SRC))
    empty = [c for c in d.categories if c != "Metadata" and not any(r.category == c for r in d.results)]
    # a closed table whose last section is empty is whole (a level-2 run prints the Stress header with no row)
    if d.source == "text" and empty and d.categories and d.categories[-1] in empty and not d.closed:
        findings.append(Finding(fid, Verdict.UNKNOWN, Msg("the output ends at the '{a1}' section header: the results after it are missing", a1=d.categories[-1]), "host",
                                tuple(ln for ln in text.splitlines() if d.categories[-1] in ln)[:2],
                                "Give bringup the whole `dcgmi diag` output.", SRC))
    cats = {r.category.strip().lower() for r in d.results}
    if (d.source == "text" and (d.banner or d.header) and not d.closed and d.results and cats <= _NOT_HARDWARE
            and not any(f.verdict == Verdict.UNKNOWN and f.subject == "host" for f in findings)):
        last = [ln for ln in text.splitlines() if ln.strip()][-1:]
        findings.append(Finding(fid, Verdict.UNKNOWN, "the paste ends inside the deployment checks (no closing border): "
                                "the run's hardware tests (PCIe, GPU memory, stress) are not in it, so the GPUs are "
                                "not judged", "host", tuple(last), "Give bringup the whole `dcgmi diag` output.", SRC))
    if not findings:
        findings.append(Finding(fid, Verdict.UNKNOWN, "could not read any DCGM test result", "host",
                                tuple(text.splitlines()[:8]), "Give bringup the whole `dcgmi diag` output.", SRC))
    if d.excerpt:  # said once, on the finding shown first (the worst), not on every GPU's line (walk 38 #22)
        first = max(range(len(findings)), key=lambda i: (findings[i].verdict.rank, -i))
        findings[first] = replace(findings[first], message=Msg("{message} ({EXCERPT_NOTE})", message=findings[first].message,
                                                               EXCERPT_NOTE=EXCERPT_NOTE))
    return findings


_GPU_RE = lazy_re(r"\bGPU\s?\d+\b")


def _planned(exp: Mapping[str, Any]) -> int | None:
    from wizard.common import to_int

    v = exp.get("gpu_count")
    n = to_int(str(v), max_digits=4) if v not in (None, "") and not isinstance(v, bool) else None
    return n if n is not None and n > 0 else None


def _missing_gpus(d: DcgmDiag, fid: str, gpus: list[int], exp: Mapping[str, Any]) -> list[Finding]:
    """A level-2/3 run that tested fewer GPUs than the plan's ``gpu_count``: FAIL naming the planned GPUs (ids
    0..gpu_count-1) with no result; UNKNOWN when the run names no GPU (test-level results, no device ids), so how
    many it tested cannot be told. Nothing for level 1, an excerpt, or without a plan."""
    want = _planned(exp)
    if want is None or fid == "health.dcgm_l1" or d.excerpt:
        return []
    named = [g for g in gpus if g is not None]
    if not named:
        return [Finding(fid, Verdict.UNKNOWN, Msg("the plan has {want} GPU(s), and this DCGM run does not say which GPUs it tested (no "
                                                  "per-GPU result, no device ids): whether every planned GPU was tested cannot be told", want=want), "host", tuple(d.metadata_lines[:3]),
                        "Run the level on every GPU (`dcgmi diag -r N` without `-i`, or `-i 0,1,...`) and give bringup "
                        "its whole output (`-j` names each GPU).", SRC)]
    seen = set(named)
    if len(seen) >= want:
        return []
    missing = [g for g in range(want) if g not in seen] or []
    names = ", ".join(f"GPU {g}" for g in missing[:16]) + (" ..." if len(missing) > 16 else "")
    tested = ", ".join(str(g) for g in sorted(seen))
    return [Finding(fid, Verdict.FAIL, Msg("DCGM tested {n_seen} of the plan's {want} GPUs (GPU {tested}): no result for {a1}; an "
                                           "untested GPU is not a passed one", n_seen=len(seen), want=want, tested=tested, a1=names or f'{want - len(seen)} GPU(s)'), "host",
                    tuple(d.metadata_lines[:3]),
                    "Check that every GPU is visible (`nvidia-smi -L`, `dcgmi discovery -l`, `lspci -d 10de:`): one "
                    "missing there failed to initialise (dmesg: NVRM/Xid) or is unseated; one that is visible was left "
                    "out of the run (`-i` list, CUDA_VISIBLE_DEVICES, a GPU in use): rerun the level on all GPUs.",
                    SRC)]

_NOT_HARDWARE = frozenset({"", "metadata", "deployment"})


def _invalid_without_persistence(d: DcgmDiag, gpus: list[int]) -> dict[int | None, tuple[DiagResult, list[DiagResult],
                                                                                       list[tuple[DiagResult, str]]]]:
    """GPUs whose run does not count: DCGM's 'Persistence Mode' check failed for them and every test of
    the Hardware category (or, without one, every test after the deployment checks) was skipped.
    Value: (the persistence result, the skipped tests, the (test, status) that still ran)."""
    pm = next((r for r in d.results if PERSISTENCE_TEST.match(r.test.strip())), None)
    if pm is None:
        return {}
    out: dict[int | None, tuple[DiagResult, list[DiagResult], list[tuple[DiagResult, str]]]] = {}
    later = [r for r in d.results if r.category.strip().lower() not in _NOT_HARDWARE and r is not pm]
    hardware = [r for r in later if r.category.strip().lower() == "hardware"] or later
    for g in (gpus or (None,)):
        def status(r: DiagResult) -> str | None:
            st = r.status_for(g) if g is not None else (r.all_gpus or r.status)  # noqa: B023 - status() is called in this iteration
            if st is None and not r.per_gpu and not r.all_gpus:
                st = r.status
            return st
        if status(pm) != "fail" or not hardware or any(status(r) != "skip" for r in hardware):
            continue
        skipped = [r for r in later if status(r) == "skip"]
        ran = [(r, str(status(r))) for r in later if status(r) not in (None, "skip")]
        out[g] = (pm, skipped, ran)
    return out


# ------------------------------------------------------------------ dcgmi health -c

DCGM_HEALTH_URL = "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/feature-overview.html#health-and-diagnostics"
SRC_HEALTH = (f"NVIDIA DCGM user guide, Health and Diagnostics ({DCGM_HEALTH_URL}): background health checks report "
              "Healthy / Warning / Failure per watched system (PCIe, memory, InfoROM, thermal and power, NVLink, "
              "driver) since the watches were set; they are non-invasive and do not replace `dcgmi diag`")
HEALTH_NOT_ENABLED = lazy_re(r"Health watches not enabled", re.I)


def judge_health(h: Any, text: str) -> list[Finding]:
    """``health.dcgm_health`` from ``dcgmi health -c`` (:class:`wizard.parsers.dcgm.DcgmHealth`): Healthy passes
    (saying what it covers), a Warning incident warns, a Failure fails, each naming GPU, system and DCGM's message;
    no Overall Health line (or "Health watches not enabled") is unknown."""
    fid = "health.dcgm_health"
    if HEALTH_NOT_ENABLED.search(text) and not h.overall:
        return [Finding(fid, Verdict.UNKNOWN, "DCGM health watches are not enabled: nothing was watched, nothing to judge",
                        "node", tuple(ln.strip() for ln in text.splitlines() if HEALTH_NOT_ENABLED.search(ln))[:2],
                        "Enable the watches and give them a minute: `dcgmi health -s a; sleep 60; dcgmi health -c`.",
                        SRC_HEALTH)]
    from wizard.parsers.dcgm import HEALTH_WATCH_ERROR

    errors = [m for m in HEALTH_WATCH_ERROR.finditer(text)]
    if errors and not h.overall:
        why = errors[0].group("why")
        mismatch = "version mismatch" in why.lower()
        return [Finding(fid, Verdict.FAIL,
                        Msg("DCGM could not set or read its health watches ({why}): the node has no DCGM background "
                            "health monitoring", why=why), "node", tuple(m.group(0).strip() for m in errors[:4]),
                        "This usually means dcgmi and the host engine (or its modules) are from two DCGM versions: "
                        "install one (dcgmi, nv-hostengine and "
                        "libdcgm from the same datacenter-gpu-manager package), restart nvidia-dcgm, then `dcgmi health "
                        "-s a` again." if mismatch else
                        "Check that nv-hostengine runs (`systemctl status nvidia-dcgm`) and that dcgmi and the host "
                        "engine are one DCGM version, then `dcgmi health -s a` again.", SRC_HEALTH)]
    if not h.overall:
        return [Finding(fid, Verdict.UNKNOWN, "this DCGM health report has no 'Overall Health' result", "node",
                        tuple(ln for ln in text.splitlines() if ln.strip())[:5],
                        "Paste the whole `dcgmi health -c` output.", SRC_HEALTH)]
    out: list[Finding] = []
    for inc in h.incidents:
        if inc.state == "healthy":
            continue
        who = gpu_subject(inc.gpu) if inc.gpu is not None else "node"
        verdict = Verdict.FAIL if inc.state == "failure" else Verdict.WARN
        msg = inc.message or "(no message)"
        out.append(Finding(fid, verdict, (Msg("DCGM health: {system} system {state} on GPU {gpu}: {msg}", system=inc.system, state=inc.state, gpu=inc.gpu, msg=msg)
                                             if inc.gpu is not None else
                                             Msg("DCGM health: {system} system {state} on the node: {msg}", system=inc.system, state=inc.state, msg=msg)), who,
                           tuple(ln for ln in h.lines if inc.system in ln or (inc.message and ln.strip('| ').strip()
                                                                              and ln.strip('| ').strip() in inc.message))[:6]
                           or (h.overall_line,),
                           "Read the system's counters behind it (`nvidia-smi -q -d PCIE,ECC,POWER,TEMPERATURE`, "
                           "`dmesg | grep -e NVRM -e Xid`); a Failure means drain the GPU and run `dcgmi diag -r 3`; a "
                           "power or thermal Warning under full load is the GPU holding its limit, check cooling and "
                           "the power limit.", SRC_HEALTH))
    if out:
        return out
    if h.overall == "healthy":
        return [Finding(fid, Verdict.PASS, "DCGM health: Overall Health Healthy (no incident in the watched systems "
                        "since the watches were set; a health check is passive: it is not a diagnostic run)", "node",
                        (h.overall_line,), "", SRC_HEALTH)]
    verdict = Verdict.FAIL if h.overall == "failure" else Verdict.WARN
    bad = sorted(g for g, s in h.gpus.items() if s != "healthy")
    return [Finding(fid, verdict, (Msg('DCGM health: Overall Health {overall}', overall=h.overall) + (Msg(' on GPU {map}', map=', '.join(map(str, bad))) if bad else '') + Msg(' (the report names no system)')), "node",
                    tuple(h.lines[:6]) or (h.overall_line,),
                    "Run `dcgmi health -c -j` for the incident details and `dcgmi diag -r 3` on the GPUs it names.",
                    SRC_HEALTH)]


# ------------------------------------------------------------------ dcgmi discovery -l

DCGMI_URL = "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/getting-started.html"
SRC_DISCOVERY = (f"NVIDIA DCGM user guide, Getting Started ({DCGMI_URL}): `dcgmi discovery -l` lists the GPUs and "
                 "NvSwitches DCGM can manage")
SRC_NVSWITCH = ("NVIDIA Fabric Manager user guide (https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/"
                "index.html): 8-GPU HGX/DGX baseboards (A100, H100/H800/H200, B200/B300) join their GPUs through "
                "NVSwitch chips, managed by Fabric Manager; on Hopper and later DCGM reaches the switches through "
                "libnvidia-nscq (NVIDIA/DCGM#159, https://github.com/NVIDIA/DCGM/issues/159)")
SRC_BLANK_NAME = ("NVIDIA DCGM source (https://github.com/NVIDIA/DCGM): dcgmlib/dcgm_structs.h defines DCGM_STR_BLANK "
                  "\"<<<NULL>>>\" (the blank string value) and <<<NOT_SUPPORTED>>>, <<<NOT_FOUND>>>, <<<NOT_PERM>>>; "
                  "dcgmlib/src/DcgmCMUtils.cpp NvmlErrorToStringValue() stores NVML_ERROR_NOT_SUPPORTED, NO_PERMISSION "
                  "and NOT_FOUND as those and any other NVML error as <<<NULL>>>; NVIDIA/DCGM#229 "
                  "(https://github.com/NVIDIA/DCGM/issues/229): every H100 SXM named <<<NULL>>> by dcgmi discovery; "
                  f"NVIDIA DCGM user guide ({DCGMI_URL}): install the DCGM release for the driver's CUDA major")
BLANK_NAME_MEANING = {"<<<NULL>>>": "DCGM's blank value: NVML gave the host engine no name (an NVML error, or a field "
                                    "it never filled)",
                      "<<<NOT_SUPPORTED>>>": "NVML answered 'not supported'",
                      "<<<NOT_FOUND>>>": "NVML answered 'not found'",
                      "<<<NOT_PERM>>>": "NVML refused the host engine ('no permission')"}
"""What each of DCGM's placeholder strings in place of a GPU's name means (:data:`SRC_BLANK_NAME`)."""
NVSWITCH_BOARD_MIN_GPUS = 5
"""An SXM board with more than 4 GPUs is an 8-GPU NVSwitch baseboard (4-GPU HGX boards link their GPUs directly,
without NVSwitch: :data:`SRC_NVSWITCH`)."""


def judge_discovery(d: Any, text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``health.gpu_count`` and ``health.nvlink`` from ``dcgmi discovery -l``
    (:class:`wizard.parsers.dcgm.DcgmDiscovery`): the GPU count against the plan (fewer fail, more warn); with no
    plan, a count of SXM GPUs an HGX node never has warns; 0 NvSwitches on an 8-GPU SXM board warns. ``driver.dcgm``:
    a GPU named ``<<<NULL>>>`` (or another of DCGM's placeholders, :data:`BLANK_NAME_MEANING`) warns: DCGM cannot read
    it through NVML."""
    from wizard.rules.gpu_presence import SRC_A1, count_measure, count_verdict, sxm_count_doubt, sxm_count_finding

    if d.hierarchy and d.gpus_found is None:
        return _hierarchy(d)
    if d.gpus_found is None and not d.gpus:
        err_ev = tuple(d.errors[:3]) or tuple(ln for ln in text.splitlines() if ln.strip())[:5]
        none = [Finding("health.gpu_count", Verdict.UNKNOWN, (Msg('dcgmi discovery listed no GPUs') + (Msg(': it could not reach the DCGM host engine') if d.errors else '')), "host", err_ev,
                       "Start the host engine (`sudo systemctl start nvidia-dcgm`, or `nv-hostengine`) and run "
                       "`dcgmi discovery -l` again.", SRC_DISCOVERY)]
        if d.errors:
            none.append(Finding("driver.dcgm", Verdict.FAIL,
                               N_("dcgmi could not reach the DCGM host engine (nv-hostengine): nothing DCGM does (health "
                                  "watches, diagnostics, the exporter's metrics) works until it runs and listens where "
                                  "dcgmi connects"), "host", err_ev,
                               N_("On the node: `systemctl status nvidia-dcgm` (or start `nv-hostengine`); for a remote "
                                  "`--host`, the host engine listens on 127.0.0.1:5555 unless started with `-b ADDRESS` "
                                  "(`nv-hostengine -b 0.0.0.0`), and the firewall must pass TCP 5555."), SRC_HOSTENGINE))
        return none
    found = d.gpus_found if d.gpus_found is not None else len(d.gpus)
    blank = [g for g in d.gpus if g.name.startswith("<<<") and g.name.endswith(">>>")]
    names = list(dict.fromkeys(g.name for g in d.gpus if g.name and g not in blank))
    model = names[0] if len(names) == 1 else ""
    ev = [x for x in [d.found_line] + [g.lines[0] for g in d.gpus[:8] if g.lines] if x]
    cut = Msg(" (this paste lists {n} of them)", n=len(d.gpus)) if d.gpus and len(d.gpus) < found else ""
    try:
        want = int(exp["gpu_count"]) if exp.get("gpu_count") not in (None, "") else None
    except (TypeError, ValueError):
        want = None
    out: list[Finding] = []
    cv = count_verdict(found, want)
    what = ((Msg('DCGM finds {found} GPUs', found=found) if found != 1 else Msg('DCGM finds {found} GPU', found=found)) + (f' ({model})' if model else '') + cut)
    cm = count_measure(found, want, "GPUs DCGM finds (the plan's gpu_count)")
    if want is not None and cv is not Verdict.PASS:
        out.append(Finding("health.gpu_count", cv, Msg("{what}; the plan expects {want}", what=what, want=want), "host", tuple(ev),
                           "Compare with `lspci -d 10de:` and `nvidia-smi -L`: a GPU on the bus that DCGM does not "
                           "list failed to initialise (dmesg: NVRM/Xid); one missing from lspci too is unseated, "
                           "unpowered or disabled.", SRC_A1, measured=cm))
    elif want is None and (doubt := sxm_count_doubt(found, names)) is not None:
        out.append(sxm_count_finding(what, doubt, tuple(ev)))
    else:
        out.append(Finding("health.gpu_count", Verdict.PASS, (what + (Msg(', as the plan expects') if want else '')), "host",
                           tuple(ev), "", SRC_DISCOVERY, measured=cm))
    if blank:
        values = list(dict.fromkeys(g.name for g in blank))
        every = len(blank) == len(d.gpus)
        ids = ", ".join(str(g.gpu_id) for g in blank)
        meaning = SEMICOLON.join(Msg("{value}: {means}", value=v, means=Msg.plain(
            BLANK_NAME_MEANING.get(v, N_("a placeholder, not a name")))) for v in values)
        out.append(Finding("driver.dcgm", Verdict.WARN,
                           ((Msg('every GPU DCGM lists') + (Msg(' ({n_gpus} in this paste)', n_gpus=len(d.gpus)) if cut else '') if every else Msg('GPU {ids}', ids=ids)) + Msg(' has the name {values} ({meaning}): DCGM enumerates the GPUs by PCI bus id and UUID but cannot read their names from NVML: typically a DCGM release that does not know this GPU or driver, or a host engine whose NVML does not match the driver; not a GPU fault, but its other NVML fields (health, diagnostics, metrics) may be blank too', values=' / '.join(values), meaning=meaning)), "host",
                           tuple(g.lines[0] for g in blank[:4] if g.lines),
                           "Compare with `nvidia-smi -L` (NVML read directly): if it names the GPUs, check the host "
                           "engine's release (`dcgmi -v`) against the driver (`nvidia-smi`), install the DCGM release for "
                           "this driver's CUDA major (datacenter-gpu-manager-4-cuda12 / -cuda13) or a newer one that "
                           "supports this GPU, and restart the host engine (`sudo systemctl restart nvidia-dcgm`, or "
                           "the dcgm-exporter pod); if nvidia-smi fails too, fix the driver first.", SRC_BLANK_NAME))
    from wizard.rules.gpu_presence import sxm_nvswitch_class

    if d.nvswitches is not None and model and sxm_nvswitch_class(model) and found >= NVSWITCH_BOARD_MIN_GPUS:
        if d.nvswitches == 0:
            out.append(Finding("health.nvlink", Verdict.WARN, Msg("DCGM lists 0 NVSwitches on a {found}-GPU {model} board: DCGM cannot see the NVSwitch "
                                                                  "fabric (its NvSwitch module or libnvidia-nscq is missing, or the fabric is down)", found=found, model=model), "host", (d.nvswitch_line, d.found_line),
                               "Check the fabric from the GPUs: `nvidia-smi -q | grep -A3 Fabric` (State Completed, "
                               "Status Success), `systemctl status nvidia-fabricmanager`, `nvidia-smi topo -m` (NV# "
                               "between every pair); for DCGM's view install libnvidia-nscq of the driver's branch "
                               "and restart nvidia-dcgm.", SRC_NVSWITCH))
        else:
            out.append(Finding("health.nvlink", Verdict.PASS, Msg("DCGM lists {nvswitches} NVSwitches on the {found}-GPU {model} board", nvswitches=d.nvswitches, found=found, model=model), "host", (d.nvswitch_line,), "", SRC_NVSWITCH))
    return out


SRC_HOSTENGINE = (f"NVIDIA DCGM user guide, Getting Started ({DCGMI_URL}): dcgmi and the exporter talk to the "
                  "nv-hostengine daemon (the nvidia-dcgm service), by default on 127.0.0.1:5555; nv-hostengine -b "
                  "ADDRESS binds another address")
SRC_MIG_CI = ("NVIDIA Multi-Instance GPU user guide, 'Concepts' and 'Getting Started' "
              "(https://docs.nvidia.com/datacenter/tesla/mig-user-guide/): work runs on a compute instance; a GPU "
              "instance needs at least one compute instance before a CUDA application can use it")


def _hierarchy(d: Any) -> list[Finding]:
    """``health.mig`` from ``dcgmi discovery -c`` (the MIG instance hierarchy DCGM sees): PASS naming each GPU's GPU and
    compute instances; a GPU instance with no compute instance under it WARNs (no CUDA device there)."""
    per = SEMICOLON.join(Msg("GPU {g}: {gi} GPU instance(s), {ci} compute instance(s)", g=g, gi=c["gi"], ci=c["ci"])
                         for g, c in sorted(d.hierarchy.items()))
    ev = tuple(d.hierarchy_lines[:12])
    if d.empty_instances:
        return [Finding("health.mig", Verdict.WARN,
                        Msg("DCGM's MIG hierarchy: {per}; GPU instance(s) {gis} have no compute instance, so no CUDA "
                            "application can run there", per=per, gis=", ".join(d.empty_instances[:8])), "host", ev,
                        N_("Create a compute instance in each GPU instance (`sudo nvidia-smi mig -cci -gi ID`), or "
                           "create GPU instances with `-C` (`nvidia-smi mig -cgi PROFILES -C`); `nvidia-smi -L` then "
                           "lists a MIG device for each."), SRC_MIG_CI)]
    return [Finding("health.mig", Verdict.PASS,
                    Msg("DCGM's MIG hierarchy: {per}; every GPU instance has a compute instance", per=per), "host", ev,
                    "", SRC_MIG_CI)]


SRC_DCGM_LOG = ("NVIDIA DCGM user guide, Getting Started (" + DCGMI_URL + "): the host engine loads the driver's NVML "
                "to manage GPUs, the NvSwitch module needs libnvidia-nscq (NVSDM on NVLink 5 systems) of the driver's "
                "branch; NVIDIA dcgm-exporter (https://github.com/NVIDIA/dcgm-exporter): it reads every metric through "
                "the host engine; NVIDIA GPU Operator troubleshooting (https://docs.nvidia.com/datacenter/cloud-native/"
                "gpu-operator/latest/troubleshooting.html)")


_NO_DCP = lazy_re(r"Not collecting DCP metrics|DCP metrics not enabled")
"""dcgm-exporter's word that it skips the profiling metrics (DCGM_FI_PROF_*): the DCGM profiling module is not loaded,
or the GPU is not one DCGM profiles (NVIDIA dcgm-exporter README: profiling metrics need DCGM's profiling module)."""


def judge_dcgm_log(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``driver.dcgm`` from a dcgm-exporter or nv-hostengine log: a fatal-level line (the process exited) FAIL for the host
    engine, WARN for the exporter (monitoring down, the GPUs still work); DCGM
    without NVML (it manages no GPU) FAIL; an
    exporter that lost its host engine FAIL (what it serves is stale); the NvSwitch libraries missing WARN (harmless on
    a board without NVSwitches, the fabric unseen by DCGM on one with them); an exporter or engine that started with no
    error PASS; otherwise UNKNOWN (a log excerpt with nothing judgeable)."""
    from wizard.parsers.dcgm import parse_dcgm_log

    d = parse_dcgm_log(text)
    fid = "driver.dcgm"
    if d.fatal:
        said = re.sub(r'^.*?(?:msg="|FATA\[\d+\]\s*)', "", d.fatal[0]).rstrip('"').strip()
        # the exporter is monitoring: the GPUs still work without it (blind experts warned it four times in six:
        # held-out rounds 183, 280, 307, 347); the host engine is what health watches and diagnostics need
        return [Finding(fid, Verdict.WARN if d.exporter else Verdict.FAIL,
                        Msg("the {who} stopped on a fatal error: '{said}': it serves no metrics", who=(
                            Msg("exporter") if d.exporter else Msg("DCGM process")), said=said[:200])
                        + (Msg("; GPU monitoring is down, the GPUs themselves are not judged by it") if d.exporter else ""),
                        "host",
                        tuple(d.fatal[:4]),
                        N_("Act on the error it names: a field that needs a DCGM module not loaded here (profiling "
                           "metrics: remove them from the counters file, or load the module), a GPU DCGM does not "
                           "support (exclude it, or use a DCGM release that supports it), NVML not reachable (the "
                           "driver in the container); then restart it and read its log again."), SRC_DCGM_LOG)]
    if d.no_nvml:
        return [Finding(fid, Verdict.FAIL,
                        N_("DCGM cannot load the driver's NVML, so it manages no GPU: no health watch, diagnostic or "
                           "GPU metric comes from it"), "host", tuple(d.no_nvml[:4]),
                        N_("On the host: `nvidia-smi` must work (the driver loaded). In a container (the GPU Operator's "
                           "dcgm or dcgm-exporter pod) the NVIDIA runtime must mount the driver into it: check the "
                           "toolkit's validation pod and the runtime class, then restart the pod."), SRC_DCGM_LOG)]
    if d.disconnected:
        return [Finding(fid, Verdict.FAIL,
                        N_("the exporter lost its DCGM host engine (connection invalid/disconnected): every collection "
                           "fails, and what it still serves is stale"), "host", tuple(d.disconnected[:4]),
                        N_("Check the host engine (`systemctl status nvidia-dcgm`, or the dcgm pod), then restart the "
                           "exporter so it connects again; an exporter built against another DCGM release than the "
                           "host engine's does not connect either."), SRC_DCGM_LOG)]
    if d.no_switch_libs:
        return [Finding(fid, Verdict.WARN,
                        N_("DCGM's NvSwitch module could not load its libraries (NSCQ/NVSDM): harmless on a board "
                           "without NVSwitches; on an HGX/DGX board DCGM then sees no NVSwitch (no fabric health or "
                           "metrics)"), "host", tuple(d.no_switch_libs[:4]),
                        N_("On an NVSwitch board install libnvidia-nscq of the driver's branch (NVSDM on NVLink 5 "
                           "systems) and restart nvidia-dcgm; on a PCIe board nothing is needed."), SRC_DCGM_LOG)]
    if d.errors:
        return [Finding(fid, Verdict.WARN, Msg("{n} error line(s) in the DCGM log", n=len(d.errors)), "host",
                        tuple(d.errors[:4]),
                        N_("Read the lines in context; `dcgmi discovery -l` and `dcgmi health -c` show what DCGM sees."),
                        SRC_DCGM_LOG)]
    if d.started:
        no_dcp = [ln for ln in text.splitlines()[:5000] if _NO_DCP.search(ln)]
        if no_dcp:  # the exporter's own "metric not enabled" warnings: the counters file asks for what it cannot serve
            return [Finding(fid, Verdict.WARN,
                            (N_("the exporter started, but") if d.exporter else N_("the host engine started, but"))
                            + Msg(" it collects no profiling (DCP) metrics (DCGM_FI_PROF_*: SM, tensor, DRAM, NVLink "
                                  "activity): the profiling module is not loaded or this GPU does not support it, so "
                                  "a training job's GPU efficiency cannot be watched; the device metrics work"),
                            "host", tuple(d.started[:2]) + tuple(no_dcp[:2]),
                            N_("On a data-center GPU DCGM profiles (A100, H100 and later; `dcgmi profile -l` lists the "
                               "metric groups), run dcgm-exporter with its embedded host engine or an nv-hostengine "
                               "whose profiling module loads (it needs the driver's libnvidia-ml and libcuda in the "
                               "container); on a GPU without profiling support, drop the DCGM_FI_PROF_* lines from "
                               "the counters file so the exporter stops warning."), SRC_DCGM_LOG)]
        return [Finding(fid, Verdict.PASS,
                        N_("the exporter started: DCGM initialised and its pipeline runs, with no error in this log")
                        if d.exporter else N_("the host engine started with no error in this log"),
                        "host", tuple(d.started[:4]), "", SRC_DCGM_LOG)]
    return [Finding(fid, Verdict.UNKNOWN, N_("a DCGM log excerpt with neither an error nor a start-up line"), "host",
                    tuple(text.strip().splitlines()[:4]),
                    N_("Paste the log from the start of the process (`kubectl logs POD` or `journalctl -u nvidia-dcgm`)."),
                    SRC_DCGM_LOG)]


# ------------------------------------------------------------------ dcgmi dmon

DMON_URL = "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/feature-overview.html"
SRC_DMON = (f"NVIDIA DCGM user guide ({DMON_URL}), `dcgmi dmon -e <field ids>`; field ids in dcgm_fields.h: 230 "
            "DCGM_FI_DEV_XID_ERRORS (XIDER, the value of the last Xid), 202 DCGM_FI_DEV_PCIE_REPLAY_COUNTER (RPCTR), "
            "310-313 ECC single/double-bit volatile/aggregate totals (ESVTL, EDVTL, ESATL, EDATL)")
SRC_EXPORTER = ("NVIDIA dcgm-exporter (https://github.com/NVIDIA/dcgm-exporter): the DCGM fields as Prometheus metrics "
                "named after dcgm_fields.h (DCGM_FI_DEV_XID_ERRORS: the value of the last Xid; "
                "DCGM_FI_DEV_PCIE_REPLAY_COUNTER; DCGM_FI_DEV_ECC_SBE/DBE_VOL/AGG_TOTAL; DCGM_FI_DEV_C2C_LINK_STATUS: "
                "the NVLink-C2C link to the Grace CPU, 1 active, 0 inactive)")
_XID_COL = lazy_re(r"^XIDER|^DCGM_FI_DEV_XID_ERRORS$|^DCGM_(?:EXP|FI_DEV)_XID_ERRORS_(?:COUNT|ACTIVE)$", re.I)
"""The last Xid (dmon's XIDER, the exporter's DCGM_FI_DEV_XID_ERRORS), and the exporter's per-Xid count within its
window (DCGM_EXP_XID_ERRORS_COUNT with an xid label; DCGM_FI_DEV_XID_ERRORS_ACTIVE in NVIDIA/dcgm-exporter#239), which
:func:`wizard.parsers.dcgm.parse_dcgm_exporter` reads as the Xid's number where its count is above 0."""
_REPLAY_COL = lazy_re(r"^RPCTR$|^DCGM_FI_DEV_PCIE_REPLAY_COUNTER$", re.I)
_ECC_COL = lazy_re(r"^E([SD])([VA])(TL|L1|L2|DV|RG|TX|SHM|CBU|SRM)$|^DCGM_FI_DEV_ECC_([SD])BE_([VA])(?:OL|GG)_TOTAL$",
                   re.I)
_C2C_COL = lazy_re(r"^DCGM_FI_DEV_C2C_LINK_STATUS$")
_NVLINK_ERR_COL = lazy_re(r"^DCGM_FI_DEV_NVLINK_(?:\w*_)?(?:ERROR|DISCARD|REPLAY|RECOVERY|CRC)\w*?(?:_TOTAL|_COUNT|_EVENTS)?$"
                          r"(?<!_FLOAT)")
"""dcgm-exporter's NVLink error counters (CRC/replay/recovery error totals, TX discards, link recovery events): any
count above 0 on a GPU is an NVLink link that erred since the counters started."""


def _num(v: str) -> int | None:
    from wizard.common import to_int

    return to_int(v, max_digits=12)


def _per_entity(d: Any, col: str) -> dict[tuple[str, int], list[tuple[int, str]]]:
    """(entity, id) -> [(value, row line)] of the numeric readings of column ``col``, in order."""
    out: dict[tuple[str, int], list[tuple[int, str]]] = {}
    for s in d.samples:
        v = _num(s.values.get(col, ""))
        if v is not None:
            out.setdefault((s.entity, s.entity_id), []).append((v, s.line))
    return out


def _xid_verdict(code: int) -> tuple[Verdict, str, str, str]:
    from wizard.rules import xid as x

    row = x.xid_rows().get(code)
    if row is None:
        return (Verdict.WARN, Msg.plain(N_("an Xid bringup's table does not list")),
                Msg("Look Xid {code} up in the NVIDIA Xid catalog.", code=code), x.SRC_XID)
    verdict, label, remedy, source = x._xid_judgement(code, row, [], x.severity_rows(), x.bucket_rows())
    return verdict, (row.get("description") or row.get("name") or "") + (f"; {label}" if label else ""), remedy, source


def judge_dmon(d: Any, text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``health.xid`` (XIDER: the last Xid on each GPU, judged by the Xid table), ``health.ecc`` (ECC totals),
    ``health.pcie_errors`` (PCIe replays) from ``dcgmi dmon`` (:class:`wizard.parsers.dcgm.DcgmDmon`), columns read
    by their header names; no sample -> unknown with dcgmi's error; only fields that judge nothing -> skip."""
    src = SRC_EXPORTER if d.tool == "dcgm-exporter" else SRC_DMON

    def head(line: str) -> tuple[str, ...]:  # the header line (dmon), then the sample
        return tuple(x for x in (d.header_line, line) if x)

    if not d.samples and d.tool == "dcgm-exporter":
        return [Finding("health.dcgm_dmon", Verdict.UNKNOWN, "dcgm-exporter metrics with no sample of a GPU (no gpu "
                        "label) to judge", "host", tuple(d.problems[:3]) or tuple(
                            ln for ln in text.splitlines() if ln.strip())[:5],
                        "Paste the DCGM_FI_* lines of `curl -s localhost:9400/metrics` (each has a gpu=\"N\" label).",
                        SRC_EXPORTER)]
    if not d.samples:
        ev = tuple(d.errors[:3]) or ((d.header_line,) if d.header_line else ()) \
            or tuple(ln for ln in text.splitlines() if ln.strip())[:5]
        why = f": {d.errors[0]}" if d.errors else ""
        if any("Profiling module" in e and "unrecoverable" in e for e in d.errors):
            # DCGM's profiling (DCP) module failed: no profiling field can be watched on this node (held-out r107)
            return [Finding("health.dcgm_dmon", Verdict.WARN,
                            Msg("DCGM's profiling module failed{why}: no profiling field (tensor, SM, DRAM activity) "
                                "can be sampled on this node", why=why), "host", ev,
                            "The GPU's performance counters are held by another profiler (Nsight Systems or Compute, "
                            "a second DCGM host engine or dcgm-exporter's profiling metrics): stop it or pause DCGM "
                            "profiling there (`dcgmi profile --pause`), restart nvidia-dcgm and sample again; on a GPU "
                            "without DCGM profiling support the fields stay unavailable.",
                            f"{SRC_DMON}; DCGM user guide, Profiling Metrics (concurrent use with developer tools: "
                            "dcgmi profile --pause / --resume), https://docs.nvidia.com/datacenter/dcgm/latest/"
                            "user-guide/feature-overview.html")]
        return [Finding("health.dcgm_dmon", Verdict.UNKNOWN, Msg("dcgmi dmon printed no samples{why}", why=why), "host", ev,
                        "'-6: Feature not supported' means one of the fields is not available on this GPU (profiling "
                        "fields such as 1006 FP64A are not on every model): drop it (`dcgmi dmon -l` lists the fields) "
                        "and run again; '-33' means a DCGM module is not loaded.", SRC_DMON)]
    out: list[Finding] = []
    judged = False
    for col in d.columns:
        if _XID_COL.match(col):
            judged = True
            clean: list[str] = []
            for (ent, eid), vals in _per_entity(d, col).items():
                subj = gpu_subject(eid) if ent == "GPU" else f"{ent} {eid}"
                codes = list(dict.fromkeys(v for v, _ in vals if v > 0))
                if not codes:
                    clean.append(f"{ent} {eid}")
                for code in codes:
                    verdict, meaning, remedy, source = _xid_verdict(code)
                    lines = [ln for v, ln in vals if v == code]
                    said = (Msg("DCGM's last Xid on {ent} {eid}: Xid {code} ({meaning}); the field keeps the last Xid "
                                "since DCGM started watching (the kernel log says when)", ent=ent, eid=eid, code=code, meaning=meaning)
                            if col.upper() in ("XIDER", "DCGM_FI_DEV_XID_ERRORS") else
                            Msg("dcgm-exporter counts Xid {code} on {ent} {eid} within its window ({col}): {meaning}",
                                code=code, ent=ent, eid=eid, col=col, meaning=meaning))
                    out.append(Finding("health.xid", verdict, said, subj, tuple(dict.fromkeys([lines[0], lines[-1]])), remedy,
                                       f"{source}; {src}", key=f"dcgm-xid:{ent}{eid}:{code}"))
            if clean:
                out.append(Finding("health.xid", Verdict.PASS, Msg("DCGM reports no Xid on {clean} ({col} 0)", clean=', '.join(dict.fromkeys(clean)), col=col),
                                   "host", head(d.samples[0].line) if not d.header_line else (d.header_line,), "", src))
        elif _NVLINK_ERR_COL.match(col):
            judged = True
            per = _per_entity(d, col)
            erred = {k: max(v, key=lambda t: t[0]) for k, v in per.items() if max(x for x, _ in v) > 0}
            for (ent, eid), (n, line) in erred.items():
                out.append(Finding("health.nvlink_errors", Verdict.WARN, Msg("{ent} {eid}: {col} {n}", ent=ent, eid=eid,
                                                                             col=col, n=n),
                                   gpu_subject(eid), head(line),
                                   "Read the links' counters (`nvidia-smi nvlink -e -i N`, `nvidia-smi nvlink -s -i N`) "
                                   "and the kernel log for Xid 74/145-150; sample again after a load: a count that "
                                   "grows is a link to reseat or a GPU/baseboard to service.", SRC_EXPORTER))
            if per and not erred:
                out.append(Finding("health.nvlink_errors", Verdict.PASS, Msg("{col} 0 on {n} GPU(s)", col=col, n=len(per)),
                                   "host", head(d.samples[0].line), "", SRC_EXPORTER))
        elif _C2C_COL.match(col):
            judged = True
            per = _per_entity(d, col)
            down = {k: v for k, v in per.items() if any(x == 0 for x, _ in v)}
            for (ent, eid), vals in down.items():
                out.append(Finding("health.nvlink", Verdict.FAIL, Msg("{ent} {eid}: its NVLink-C2C link to the CPU is "
                                                                      "inactive ({col} 0)", ent=ent, eid=eid, col=col),
                                   gpu_subject(eid), head(next(ln for x, ln in vals if x == 0)),
                                   "Read `nvidia-smi -q` (C2C section) and the kernel log (`dmesg | grep -e NVRM -e "
                                   "Xid`) for this GPU; reset or power-cycle the node; open a case with the system's "
                                   "vendor if the link stays down.", SRC_EXPORTER))
            if per and not down:
                out.append(Finding("health.nvlink", Verdict.PASS, Msg("NVLink-C2C link active on {n} GPU(s) ({col} 1)",
                                                                      n=len(per), col=col),
                                   "host", head(d.samples[0].line), "", SRC_EXPORTER))
        elif _ECC_COL.match(col) or _REPLAY_COL.match(col):
            judged = True
            replay = bool(_REPLAY_COL.match(col))
            fid = "health.pcie_errors" if replay else "health.ecc"
            m = _ECC_COL.match(col)
            sd, va = ((m.group(1) or m.group(4) or "", m.group(2) or m.group(5) or "") if m else ("", ""))
            what = (Msg('PCIe replays') if replay else Msg('{value}-bit ECC errors ({value2}, {col})', value='single' if sd.upper() == 'S' else 'double', value2='volatile' if va.upper() == 'V' else 'aggregate', col=col))
            bad = {k: v for k, v in _per_entity(d, col).items() if max(x for x, _ in v) > 0}
            for (ent, eid), vals in bad.items():
                top = max(vals, key=lambda t: t[0])
                out.append(Finding(fid, Verdict.WARN, Msg("{ent} {eid}: {a1} {what}", ent=ent, eid=eid, a1=top[0], what=what), gpu_subject(eid) if ent == "GPU"
                                   else f"{ent} {eid}", head(top[1]),
                                   "Read the GPU's counters in full (`nvidia-smi -q -d ECC,ROW_REMAPPER,PCIE -i N`) "
                                   "and the kernel log (`dmesg | grep -e NVRM -e Xid -e AER`); sample again after a "
                                   "load to see whether the count grows.", src))
            if not bad and _per_entity(d, col):
                out.append(Finding(fid, Verdict.PASS, Msg("no {a1} in any sample ({col} 0)", a1=what.split(' (')[0], col=col), "host",
                                   head(d.samples[0].line) if not d.header_line else (d.header_line,), "", src))
    if not judged and d.tool == "dcgm-exporter":
        out.append(Finding("health.dcgm_dmon", Verdict.SKIP, Msg(
            "dcgm-exporter: {n_samples} samples of {n_gpus} GPU(s), metrics {columns}: readings, not error counters, so "
            "nothing here judges the GPUs' health", n_samples=len(d.samples), n_gpus=len({s.entity_id for s in d.samples}),
            columns=" ".join(d.columns)), "host", head(d.samples[0].line),
            "Paste the error counters too: DCGM_FI_DEV_XID_ERRORS, DCGM_FI_DEV_PCIE_REPLAY_COUNTER and the "
            "DCGM_FI_DEV_ECC_*_TOTAL metrics (`curl -s localhost:9400/metrics | grep -e XID -e REPLAY -e ECC`).",
            SRC_EXPORTER))
    elif not judged:
        ents = sorted({f"{s.entity} {s.entity_id}" for s in d.samples})
        out.append(Finding("health.dcgm_dmon", Verdict.SKIP, Msg("dcgmi dmon: {n_samples} samples of {n_ents} entities, fields {columns}: readings, not "
                                                                 "error counters, so nothing here judges the GPUs' health", n_samples=len(d.samples), n_ents=len(ents), columns=' '.join(d.columns)), "host", (d.header_line,),
                           "To judge health with dmon, watch the error fields: `dcgmi dmon -e 230,202,310,311 -c 5` "
                           "(Xid, PCIe replays, ECC).", SRC_DMON))
    return out


# ------------------------------------------------------------------ is DCGM there to run a level? (registry checks)

SRC_DCGM_INSTALL = ("NVIDIA DCGM installation guide (https://docs.nvidia.com/datacenter/dcgm/latest/installation.html): "
                    "package datacenter-gpu-manager(-4-cuda<major>), dcgmi and nv-hostengine")
_EQUIVALENT = {1: "the Health stage's checks (`bringup check --stage health`)",
               2: "gpu.validate and the burn-in gpu.stress (`bringup validate gpu`, `bringup validate burnin`)",
               3: "node.validate and node.soak (`bringup validate node`, `bringup validate soak`)"}
_LEVEL_STEP = {1: "health.dcgm_l1", 2: "gpu.dcgm_l2", 3: "node.dcgm_l3"}


def _installed_check(level: int, out: Mapping[str, Any]) -> list[Finding]:
    """The check of a DCGM level's step: ``unknown`` "DCGM is not installed: level N has not run" (with the install
    and bringup's equivalents) when no DCGM package is installed, ``unknown`` when that cannot be told; nothing when
    DCGM is installed: only the level's run (the step's action) judges it, a check never passes it."""
    from wizard.install.packages import DCGM_PKG, packages_of
    from wizard.rules.common import missing

    fid = _LEVEL_STEP[level]
    pl, po = packages_of(out)
    if pl is None:
        return [missing(fid, po, f"whether DCGM is installed (level {level} needs it)",
                        remedy="Run `dpkg -l 'datacenter-gpu-manager*'` or `rpm -qa 'datacenter-gpu-manager*'`, or "
                               "`command -v dcgmi`, by hand.", source=SRC_DCGM_INSTALL)]
    if pl.find(DCGM_PKG.pattern):
        return []
    return [Finding(fid, Verdict.UNKNOWN, Msg("DCGM is not installed: level {level} has not run", level=level), "host",
                    tuple(x for x in (po.source if po else "",) if x),
                    Msg("Install DCGM with step driver.dcgm (press a on it, or `bringup run driver.dcgm`), then "
                        "run this step's action; without DCGM, bringup's own equivalents are {a1}.", a1=_EQUIVALENT[level]),
                    SRC_DCGM_INSTALL)]


def installed_l1(out: Mapping[str, Any], plan: Mapping[str, Any]) -> list[Finding]:
    """Check of ``health.dcgm_l1`` (probes ``driver_dpkg``, ``driver_rpm``): :func:`_installed_check`."""
    return _installed_check(1, out)


def installed_l2(out: Mapping[str, Any], plan: Mapping[str, Any]) -> list[Finding]:
    """Check of ``gpu.dcgm_l2`` (probes ``driver_dpkg``, ``driver_rpm``): :func:`_installed_check`."""
    return _installed_check(2, out)


def installed_l3(out: Mapping[str, Any], plan: Mapping[str, Any]) -> list[Finding]:
    """Check of ``node.dcgm_l3`` (probes ``driver_dpkg``, ``driver_rpm``): :func:`_installed_check`."""
    return _installed_check(3, out)


# ------------------------------------------------------------------ dcgmi modules -l

SRC_MODULES = ("dcgmi-modules(1), DCGM documentation (https://docs.nvidia.com/datacenter/dcgm/latest/reference/"
               "command-line-reference/dcgmi/dcgmi-modules.html): modules are loaded lazily when an API first needs "
               "them ('Not loaded' is normal); Core is always loaded; 7 Diag runs the active diagnostics, 4 Health the "
               "background health watches, 8 Profiling the profiling metrics")
MODULE_NEEDS = {"Core": N_("nothing of DCGM works"), "Diag": N_("dcgmi diag cannot run"),
                "Health": N_("no background health watch can run"),
                "Profiling": N_("no profiling field (tensor, SM, DRAM activity) can be sampled"),
                "NvSwitch": N_("NVSwitches and their links are not monitored")}
"""What a module that failed to load takes away (the modules' purposes in dcgmi-modules(1))."""


def judge_modules_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``driver.dcgm`` from ``dcgmi modules -l``: Core or Diag failed to load fails (DCGM, or its diagnostic, cannot
    run); any other module that failed to load warns with what it takes away; loaded, not loaded (lazy) or denylisted
    modules pass."""
    from wizard.parsers.dcgm import parse_dcgmi_modules

    rows = parse_dcgmi_modules(text)
    if not rows:
        return [Finding("driver.dcgm", Verdict.UNKNOWN, "no module row could be read from this dcgmi modules output",
                        "host", tuple(ln for ln in text.splitlines() if ln.strip())[:4],
                        "Paste the whole `dcgmi modules -l` output.", SRC_MODULES)]
    failed = [r for r in rows if r[2].lower() == "failed to load"]
    if not failed:
        loaded = [r[1] for r in rows if r[2].lower() == "loaded"]
        return [Finding("driver.dcgm", Verdict.PASS,
                        Msg("DCGM's host engine lists {n} modules, none failed to load (loaded: {loaded}; the others "
                            "load when first used)", n=len(rows), loaded=", ".join(loaded) or "-"), "host",
                        tuple(r[3] for r in rows[:10]), "", SRC_MODULES)]
    worst = Verdict.FAIL if any(r[1] in ("Core", "Diag") for r in failed) else Verdict.WARN
    said = SEMICOLON.join(Msg("{name}: {lost}", name=r[1], lost=Msg(MODULE_NEEDS[r[1]]) if r[1] in MODULE_NEEDS
                              else Msg("its features are unavailable")) for r in failed)
    return [Finding("driver.dcgm", worst, Msg("DCGM module(s) failed to load: {said}", said=said), "host",
                    tuple(r[3] for r in failed), "Read the host engine's log for the module's error (`journalctl -u "
                    "nvidia-dcgm`, or /var/log/nv-hostengine.log; `nv-hostengine -f <log> --log-level debug`), check "
                    "that DCGM's packages match the driver's CUDA major version (datacenter-gpu-manager-4-cuda<N>), "
                    "that no other profiler holds the GPUs' counters (Profiling), and restart nvidia-dcgm.",
                    SRC_MODULES)]


# ------------------------------------------------------------------ dcgmi stats (job statistics)

SRC_STATS = ("DCGM user guide, Job Statistics (dcgmi stats: per-job ECC, PCIe replay and Xid events, and an overall "
             "health), https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/feature-overview.html: statistics "
             "are recorded only while job recording runs for the group's GPUs (dcgmi stats -e, -s, -x)")
STATS_EVENTS = ("Double Bit ECC Errors", "Critical XID Errors", "Single Bit ECC Errors", "PCIe Replay Warnings")


def judge_stats_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``health.dcgm_health`` from ``dcgmi stats -j JOB``: a double-bit ECC error or a critical Xid during the job
    fails; single-bit ECC errors or PCIe replays, or an overall health other than Healthy, warn; all of them 0 with
    Healthy passes for the job's time. A report that counted no process of the job recorded nothing (accounting not
    collected): unknown. Unit: counts of events."""
    from wizard.parsers.dcgm import parse_dcgmi_stats
    from wizard.common import to_int

    rows = parse_dcgmi_stats(text)
    job = re.search(r"statistics for job:?\s*([\w.-]+?)\.?\s*$", text, re.M)
    who = Msg("job {job}", job=job.group(1)) if job else Msg("this job")
    events = {k: rows[k] for k in STATS_EVENTS if k in rows}
    counts = {k: to_int(v) for k, (v, _r) in events.items()}
    health = rows.get("Overall Health", ("", ""))[0]
    ev = tuple(r for k in (*STATS_EVENTS, "Overall Health", "No. of Processes") if k in rows for r in [rows[k][1]])
    if not events or to_int(rows.get("No. of Processes", ("", ""))[0]) == 0:
        return [Finding("health.dcgm_health", Verdict.UNKNOWN,
                        Msg("{who}: DCGM recorded no process of the job on its GPUs: the job's statistics are empty "
                            "(accounting was not collected for the GPUs or MIG instances it ran on), so they say nothing "
                            "about the GPUs", who=who), "host", ev,
                        "Watch the job on whole GPUs (`dcgmi stats -e` before it starts, `dcgmi stats -g <group> -s "
                        "<job>` / `-x <job>` around it), or read the GPUs' own counters (`nvidia-smi -q -d "
                        "ECC,ROW_REMAPPER`, `dmesg | grep Xid`).", SRC_STATS)]
    bad = [(k, c) for k, c in counts.items() if c]
    said = ", ".join(f"{k} {c}" for k, c in bad)
    if any(k in ("Double Bit ECC Errors", "Critical XID Errors") for k, _c in bad):
        return [Finding("health.dcgm_health", Verdict.FAIL, Msg("{who}: {said} during the job (DCGM overall health: "
                                                                "{health})", who=who, said=said, health=health or "?"),
                        "host", ev, "Read which GPU and which Xid (`dcgmi stats -v -j <job>`, `dmesg | grep Xid`), "
                        "then follow the Xid's or the ECC error's action (health stage).", SRC_STATS)]
    if bad or (health and health != "Healthy"):
        return [Finding("health.dcgm_health", Verdict.WARN,
                        Msg("{who}: {said} (DCGM overall health: {health})", who=who,
                            said=said or Msg("no error count"), health=health or "?"), "host", ev,
                        "Read the GPU's counters (`nvidia-smi -q -d ECC,PCIE`) and watch whether they grow over the "
                        "next jobs.", SRC_STATS)]
    return [Finding("health.dcgm_health", Verdict.PASS,
                    Msg("{who}: no ECC error, PCIe replay or critical Xid during the job; DCGM overall health "
                        "{health}", who=who, health=health or "?"), "host", ev, "", SRC_STATS)]
