"""GDRCopy's test programs (https://github.com/NVIDIA/gdrcopy), judged from the output an operator pastes
(``bringup explain``), one finding ``node.gdrcopy`` (step ``node.fabric``: GPUDirect RDMA prerequisites):

* ``/dev/gdrdrv`` could not be opened (``gdr_open error: Is gdrdrv driver installed and loaded?``, an older sanity's
  ``Assertion "!((g) == ((void*)0))"``): fail, with how to load gdrdrv;
* gdrcopy_sanity: a failed test (its summary, an ``Assertion ... failed`` line, ``Error: Encountered an error or a test
  failure``, the older libcheck summary's failures/errors) fails, naming the tests and quoting the assertion; an
  assertion fails even under the older sanity's "100%" summary, which did not count them (NVIDIA/gdrcopy#156); every
  test passed (waived ones said) passes;
* gdrcopy_copybw / gdrcopy_copylat / gdrcopy_pplat: a buffer that could not be mapped (``info.mapped: 0``, a mapping
  error) fails; figures printed pass, reported with units (gdrcopy's MB is 2^20 bytes) and not judged against a floor
  (GDRCopy publishes none); reads through the BAR far slower than writes are what GDRCopy's README describes;
* nothing of the above: unknown.
"""

from __future__ import annotations

from typing import Any, Mapping

from wizard.model import Finding, Verdict, measure
from wizard.parsers.gdrcopy import GDRCOPY_MB_BYTES, GdrcopyRun, parse_gdrcopy
from wizard.i18n import Msg, N_, joined

GDRCOPY_ID = "node.gdrcopy"
GDRCOPY_URL = "https://github.com/NVIDIA/gdrcopy"
SRC_GDRCOPY = (f"NVIDIA GDRCopy README ({GDRCOPY_URL}), Tests: gdrcopy_sanity 'contains unit tests for the library and "
               "the driver' and ends with 'Total: N, Passed: N, Failed: N, Waived: N'; tests/sanity.cpp prints 'Error: "
               "Encountered an error or a test failure' and exits 1 when a test fails; tests/common.hpp ASSERT() prints "
               "'Assertion \"...\" failed at FILE:LINE'")
SRC_OPEN = (f"NVIDIA GDRCopy README ({GDRCOPY_URL}#build-and-installation): `sudo ./insmod.sh` loads gdrdrv and creates "
            "/dev/gdrdrv (insmod.sh runs mknod; gdrdrv itself creates no device node), the rpm/deb packages install "
            "gdrdrv with DKMS and load it with their service (gdrcopy.service, the gdrdrv init script); DMA-BUF mmap "
            "backend (GDRCopy 2.6+, CUDA driver 13.3+) needs no gdrdrv; tests/common.hpp gdr_open_safe(): 'gdr_open "
            "error: Is gdrdrv driver installed and loaded?'")
SRC_OLD_SANITY = ("NVIDIA/gdrcopy#156 (https://github.com/NVIDIA/gdrcopy/issues/156): the older sanity's last line "
                  "'100%: Checks: 15, Failures: 0, Errors: 0' did not count failed assertions; NVIDIA/gdrcopy#126 "
                  "(https://github.com/NVIDIA/gdrcopy/issues/126): with gdrdrv missing every test asserted "
                  "!((g) == ((void*)0))")
SRC_BW = (f"NVIDIA GDRCopy README ({GDRCOPY_URL}), What is inside: 'Fast H-D, because of write-combining. H-D bandwidth "
          "is 6-8GB/s on Ivy Bridge Xeon' and 'Slow D-H, because the GPU BAR, which backs the mappings, can't be "
          "prefetched and so burst reads transactions are not generated through PCIE'; tests/copybw.cpp prints MB/s as "
          "bytes/s / 1024.0 / 1024.0 (MB = 2^20 bytes)")

REMEDY_OPEN = ("Load gdrdrv on the host: from the source tree `sudo ./insmod.sh` (it also creates /dev/gdrdrv; a bare "
               "`modprobe gdrdrv` does not, NVIDIA/gdrcopy#234), or with the packages `sudo systemctl start gdrcopy` "
               "(rpm: gdrcopy.service) / `sudo service gdrdrv start` (deb: gdrdrv-dkms); check `lsmod | grep gdrdrv` "
               "and `ls -l /dev/gdrdrv`. If DKMS did not build it for this kernel and NVIDIA driver, `dkms status` "
               "says so. In a container, the host loads gdrdrv and the container needs `--device /dev/gdrdrv`. "
               "GDRCopy 2.6+ with a CUDA driver 13.3+ can use its DMA-BUF mmap backend without gdrdrv.")
REMEDY_TEST = N_("Rerun the failed test alone with its debug messages (`gdrcopy_sanity -v -t {test}`), read `dmesg | grep "
               "-e gdrdrv -e NVRM` for the kernel's reason (nvidia_p2p_get_pages failing), and check that the loaded "
               "gdrdrv is the library's release (`modinfo gdrdrv`: version) and was built for the running NVIDIA driver "
               "(DKMS rebuilds it after a driver update; `dkms status`). In a container, the host's gdrdrv serves the "
               "container's libgdrapi: keep them the same release.")


def _subject(r: GdrcopyRun) -> str:
    if r.device is None:
        return "node"
    name = next((n for i, n, _ in r.gpus if i == r.device and n), "")
    return f"GPU {r.device}" + (f" ({name})" if name else "")


def _prog(r: GdrcopyRun) -> str:
    return r.program or "gdrcopy"


def _open_failure(r: GdrcopyRun) -> Finding:
    ev = tuple(dict.fromkeys(r.open_errors))[:3] + tuple(x for x in (r.summary_line, r.check_summary) if x)
    said = ""
    if r.check_summary and not r.check_failures and not r.check_errors:
        said = (Msg(" (its summary '{check_summary}' does not count these: the older sanity missed failed assertions)", check_summary=r.check_summary))
    n = len(r.open_errors)
    return Finding(GDRCOPY_ID, Verdict.FAIL,
                   (Msg("{prog} could not open /dev/gdrdrv ({n} times): the gdrdrv kernel module is not loaded "
                        "or its device node is missing, so GDRCopy, and NVSHMEM's or UCX's gdr_copy transport over "
                        "it, cannot map GPU memory{said}", prog=_prog(r), n=n, said=said) if n != 1 else
                    Msg("{prog} could not open /dev/gdrdrv (1 time): the gdrdrv kernel module is not loaded "
                        "or its device node is missing, so GDRCopy, and NVSHMEM's or UCX's gdr_copy transport over "
                        "it, cannot map GPU memory{said}", prog=_prog(r), said=said)), _subject(r), ev, REMEDY_OPEN,
                   SRC_OPEN + ("; " + SRC_OLD_SANITY if said or any("void" in a for a in r.assertions) else ""))


def _sanity(r: GdrcopyRun) -> list[Finding]:
    if not (r.program in ("gdrcopy_sanity", "") or r.summary_line or r.check_summary or r.failed_tests):
        return []  # another program's assertion is judged with its figures
    encountered = [e for e in r.errors if e.startswith("Error: Encountered")]
    failed = bool(r.failed) or bool(r.failed_tests) or bool(r.assertions) or bool(encountered) or bool(
        r.check_failures) or bool(r.check_errors) or bool(r.check_lines)
    if not failed:
        if r.total is None and not r.check_summary:
            return []
        if r.total is not None:
            waived = (Msg(", {n} waived (tests sanity skips where this setup does not support them: a GPU not in "
                          "the default compute mode, persistent mapping, the DMA-BUF backend)", n=r.waived)
                      if r.waived else "")
            msg = (Msg("gdrcopy_sanity: {passed} of {total} tests passed{waived}, none failed: the gdrdrv module "
                       "pins and maps GPU memory for GDRCopy", passed=r.passed, total=r.total, waived=waived))
            ev: tuple[str, ...] = (r.summary_line,)
        else:
            msg = (Msg("gdrcopy_sanity (older, libcheck-based): '{check_summary}' with no failed assertion: the "
                       "gdrdrv module pins and maps GPU memory for GDRCopy", check_summary=r.check_summary))
            ev = (r.check_summary,)
        return [Finding(GDRCOPY_ID, Verdict.PASS, msg, "node", ev, "", SRC_GDRCOPY)]
    tests = list(dict.fromkeys(r.failed_tests))
    parts: list[str] = []
    if r.failed:
        inner = ", ".join(tests[:6]) + ("; " if tests and r.waived else "") + (
            Msg("{n} waived", n=r.waived) if r.waived else "")
        parts.append(Msg("{failed} of {total} tests failed", failed=r.failed, total=r.total)
                     + (Msg(" ({inner})", inner=inner) if inner else ""))
    elif tests:
        parts.append(Msg("failed tests: {tests}", tests=', '.join(tests[:6])))
    if r.check_failures or r.check_errors:
        parts.append(Msg("{failures} failures and {errors} errors ('{summary}')", failures=r.check_failures or 0,
                         errors=r.check_errors or 0, summary=r.check_summary))
    pin = any("gdr_pin_buffer" in a for a in r.assertions)
    if pin:
        parts.append(Msg("gdr_pin_buffer could not pin the GPU buffer through gdrdrv")
                     + (Msg(" (this test pins with CUDA P2P tokens)") if "basic_with_tokens" in tests else ""))
    if r.assertions:
        parts.append((Msg("{n} assertions failed, the first: {first}", n=len(r.assertions), first=r.assertions[0])
                      if len(r.assertions) != 1 else
                      Msg("{n} assertion failed, the first: {first}", n=len(r.assertions), first=r.assertions[0])))
        if r.check_summary and not r.check_failures and not r.check_errors:
            parts.append(Msg("although its summary says '{summary}' (the older sanity did not count failed "
                             "assertions)", summary=r.check_summary))
    elif r.check_lines:
        parts.append(r.check_lines[0])
    if encountered and not parts:
        parts.append(encountered[0])
    ev = tuple(x for x in (r.summary_line, r.check_summary, *r.assertions[:3], *r.check_lines[:3], *encountered[:1])
               if x)
    return [Finding(GDRCOPY_ID, Verdict.FAIL,
                    Msg("gdrcopy_sanity: {parts}: GPUDirect RDMA copies through GDRCopy are not fully working here", parts=joined('; ', parts)), "node", ev, Msg(REMEDY_TEST, test=tests[0] if tests else "TEST"),
                    SRC_GDRCOPY + ("; " + SRC_OLD_SANITY if r.check_summary else ""))]


def _bandwidth(r: GdrcopyRun) -> list[Finding]:
    subj = _subject(r)
    if r.program in ("gdrcopy_sanity", ""):
        if not (r.bandwidth or r.latency or r.pplat_us is not None or r.mapped is not None):
            return []
    mapping_errors = [e for e in r.errors if not e.startswith("Error: Encountered")]
    if r.mapped == 0 or mapping_errors or r.assertions:
        ev = tuple(x for x in (*mapping_errors[:3], *r.assertions[:2],
                               "info.mapped: 0" if r.mapped == 0 else "") if x)
        pin = any("gdr_pin_buffer" in x for x in ev)
        return [Finding(GDRCOPY_ID, Verdict.FAIL, (Msg('{prog} on {subj}: the GPU buffer was not ', prog=_prog(r), subj=subj) + (Msg('pinned for GPUDirect RDMA') if pin else Msg('mapped through the BAR')) + (f' ({ev[0]})' if ev else '') + (Msg(': the GPU may not support GPUDirect RDMA (GDRCopy needs a data center or RTX professional GPU), or gdrdrv cannot pin its memory') if pin else '')), subj, ev,
                        "Read `dmesg | grep -e gdrdrv -e NVRM` for why the pin or mmap failed, check the GPU's BAR1 "
                        "(`nvidia-smi -q -d MEMORY`: BAR1 Memory Usage) and that gdrdrv matches the library "
                        "(`modinfo gdrdrv`), then run gdrcopy_sanity.", SRC_BW)]
    out: list[Finding] = []
    if r.bandwidth:
        w = [b for b in r.bandwidth if b.direction == "write"]
        rd = [b for b in r.bandwidth if b.direction == "read"]
        figs = []
        for label, rows in (("write (CPU to GPU memory)", w), ("read (GPU memory to CPU)", rd)):
            if rows:
                b = max(rows, key=lambda x: x.size)
                figs.append(f"{label} {b.mib_s:.0f} MB/s = {b.gb_s:.2f} GB/s" + (f" at {b.size} bytes" if b.size else ""))
        mapping = (f"info.mapped {r.mapped}, write-combining {r.wc_mapping}" if r.mapped is not None and r.wc_mapping
                   is not None else "")
        slow_read = (w and rd and max(x.mib_s for x in rd) < max(x.mib_s for x in w) / 4)
        msg = (Msg('gdrcopy_copybw on {subj}: the GPU buffer is mapped through the BAR', subj=subj) + (f' ({mapping})' if mapping else '') + Msg(' and the copies completed: ') + ', '.join(figs) + Msg(" (gdrcopy's MB is 2^20 bytes)") + (Msg('; reads far slower than writes are normal: the BAR cannot be prefetched, so reads are not burst') if slow_read else '') + ('' if r.closed else Msg("; the paste stops before 'closing gdrdrv'")) + Msg('. bringup does not judge the figures: GDRCopy publishes no floor'))
        ev = tuple(b.line for b in r.bandwidth[:4]) + tuple(x for x in (
            f"info.wc_mapping: {r.wc_mapping}" if r.wc_mapping is not None else "",
            "closing gdrdrv" if r.closed else "") if x)
        best = max(w, key=lambda x: x.size) if w else None
        out.append(Finding(GDRCOPY_ID, Verdict.PASS, msg, subj, ev, "", SRC_BW,
                           measured=measure(best.gb_s, None, "GB/s", "at_least",
                                            "gdrcopy_copybw write bandwidth (CPU to GPU memory through the BAR)")
                           if best else None))
    if r.latency:
        by: dict[str, tuple[int, float, str]] = {}
        for test, size, us, line in r.latency:
            if test not in by or size < by[test][0]:
                by[test] = (size, us, line)
        figs = [f"{t} {us:g} us at {size} bytes" for t, (size, us, _) in by.items()]
        out.append(Finding(GDRCOPY_ID, Verdict.PASS, (Msg('{prog} on {subj}: the mapping works and the copies completed ({n_latency} sizes): ', prog=_prog(r), subj=subj, n_latency=len(r.latency)) + ', '.join(figs) + Msg(' (CPU time per call; bringup does not judge the figures: GDRCopy publishes no ceiling)')), subj,
                           tuple(line for _, _, line in by.values()), "", SRC_BW))
    if r.pplat_us is not None:
        out.append(Finding(GDRCOPY_ID, Verdict.PASS, Msg("gdrcopy_pplat on {subj}: CPU-GPU round trip {pplat_us:g} us per iteration (bringup does "
                                                         "not judge the figure)", subj=subj, pplat_us=r.pplat_us), subj, (r.pplat_line,), "", SRC_BW))
    return out


def judge_gdrcopy(r: GdrcopyRun, text: str) -> list[Finding]:
    """``node.gdrcopy`` from one GDRCopy test program's output (see the module docstring)."""
    if r.open_errors:
        return [_open_failure(r)]
    found = _sanity(r) + _bandwidth(r)
    if found:
        return found
    errs = r.errors + r.assertions
    if errs:
        return [Finding(GDRCOPY_ID, Verdict.FAIL, Msg("{prog} reports an error: {a1}", prog=_prog(r), a1=errs[0]), _subject(r),
                        tuple(errs[:4]), Msg(REMEDY_TEST, test="TEST"), SRC_GDRCOPY)]

    return [Finding(GDRCOPY_ID, Verdict.UNKNOWN, Msg("no result in this {prog} output (no test summary, bandwidth or latency figure: a run cut "
                                                     "short, or a paste cut before its end)", prog=_prog(r)), _subject(r),
                    tuple(ln.strip() for ln in text.splitlines() if ln.strip())[:5],
                    "Paste the whole output, down to gdrcopy_sanity's 'Total: ...' line or copybw's 'closing gdrdrv'.",
                    SRC_GDRCOPY)]


def judge_gdrcopy_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """Explain judge: parse once (the typed command, when the paste had one, names the program), then
    :func:`judge_gdrcopy`."""
    return judge_gdrcopy(parse_gdrcopy(text, str(exp.get("command") or "")), text)


__all__ = ["GDRCOPY_ID", "GDRCOPY_MB_BYTES", "judge_gdrcopy", "judge_gdrcopy_text"]
