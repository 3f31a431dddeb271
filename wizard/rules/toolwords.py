"""The program's own words, for output of a kind bringup does not read (``bringup explain``).

When no kind recognises an input (or one part of it), bringup cannot judge its figures, but the
program that printed it often says how it went: a CUDA sample's ``Test PASSED``, a validator's
``Result = FAIL``, a daemon's ``No devices found``, a log line at level ERROR, a Python traceback.
An operator reads those words the same way whatever the tool, so this one general rule reports
them, quoting the lines, and says plainly that the verdict is the program's, not bringup's.

Order (the worst evidence wins, a pass needs no contrary word anywhere):
* fail: a failed-test/result line (``FAILED``, ``Result = FAIL``, ``test failed``), a fatal error
  (``FATAL``, ``fatal:``; systemd's ``Failed to start``), a build that stopped (``CMake Error``, a command that
  "returned non-zero exit status"), a GPU below the compute capability the program requires, a CUDA error number the CUDA error table knows
  ("cudart init failure: 999"; a warn for the classes driver_chain.FAIL_CLASSES leaves out: out of memory, a busy
  GPU, a program error) or "no devices found" (the program sees no GPU);
* unknown: a crash (a Python traceback's exception line, ``Segmentation fault``, ``core dumped``): the
  program's own error, which by itself says nothing about the machine;
* warn: log lines at level ERROR (``ERROR``, ``[E]``, ``level=error``, glog's ``E0101``) or WARN;
* pass: a passed-test/result line (``Test PASSED``, ``Result = PASS``, ``All tests passed``) or a program
  saying it found its CUDA devices ("found 1 CUDA devices", "device count 1"), and none of the above;
* otherwise nothing (the caller reports the input as not recognised).
"""

from __future__ import annotations

import re

from typing import TYPE_CHECKING

from wizard.model import Finding, Verdict

if TYPE_CHECKING:  # pragma: no cover
    from wizard.parsers.cuda import CudaErrorInfo

SRC = ("the program's own result and log-level words (bringup does not read this program's figures; "
       "log levels as in syslog's severities, RFC 5424 section 6.2.1)")

_FAIL = re.compile(
    r"\bTest(?:s)? FAILED\b|\bFAILED\b|^\s*FAIL\b|\bResult\s*[=:]\s*FAIL|\b(?:test|tests|check|validation|self-test)"
    r"\s+(?:has\s+)?failed\b"
    r"|\bFATAL\b|\bfatal:|\blevel=fatal\b|^F\d{4} \d\d:\d\d"  # the program gave up (syslog crit and above, glog F)
    r"|\bFailed to start\b|\bFailed with result\b|\bstatus=\d+/FAILURE\b"  # systemd: the service did not start
    r"|\bCMake Error\b|\bConfiguring incomplete, errors occurred|returned non-zero exit status [1-9]"  # a build stopped
    r"|compute capability [\d.x]+ (?:or (?:higher|newer|above) )?(?:is )?required")  # the GPU lacks what the program needs
_CRASH = re.compile(r"\bSegmentation fault\b|\bcore dumped\b|\bBus error\b")
_NO_DEVICES = re.compile(r"\bno (?:cuda[- ]capable |nvidia |gpu )?devices? (?:were |was )?(?:found|detected)\b", re.I)
_EXC = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception|Exit|Interrupt)\b(?::\s*(.*))?$")
_ERROR = re.compile(r"\bERROR\b|\bERR\b|\[E\]|\blevel=error\b|^E\d{4} \d\d:\d\d|\bCRITICAL\b|\berror:")
_WARN = re.compile(r"\bWARN(?:ING)?\b|\blevel=warn(?:ing)?\b|^W\d{4} \d\d:\d\d")
_CUDA_ERR = re.compile(r"\bcuda\w*[^\n]{0,40}?\b(?:err(?:or)?|failure)\b[:= ]*\s*(\d{1,4})\b", re.I)
"""An application printing a CUDA runtime/driver error number ("cudart init failure: 999", "cudaSetDevice err: 999")."""
_PASS = re.compile(r"\bfound [1-9]\d* (?:CUDA|NVIDIA|GPU) devices?\b|\bdevice count:? [1-9]\d*\b|"
                   r"\bTest(?:s)? PASSED\b|\bPASSED\b|\bResult\s*[=:]\s*PASS\b|\bAll (?:\d+ )?tests? passed\b|"
                   r"^\s*PASS\b", re.I)
# words that carry no failure although they contain one of the markers above
_BENIGN = re.compile(r"\b0 (?:errors?|failed)\b|\bno errors?\b|\bfailed:? 0\b|\berrors?:? 0\b", re.I)


def _hits(lines: list[str], rx: re.Pattern[str]) -> list[str]:
    return [ln.strip() for ln in lines if rx.search(ln) and not _BENIGN.search(ln)]


def _traceback_error(lines: list[str]) -> list[str]:
    """The exception line that ends a Python traceback ('Traceback (most recent call last):' ... 'XError: msg')."""
    out: list[str] = []
    in_tb = False
    for ln in lines:
        if ln.startswith("Traceback (most recent call last)"):
            in_tb = True
            continue
        if in_tb and _EXC.match(ln.strip()) and not ln.startswith((" ", "\t")):
            out.append(ln.strip())
            in_tb = False
    return out


def _cuda_errors(lines: list[str]) -> "list[tuple[int, CudaErrorInfo, str]]":
    """(number, the CUDA error table's row, line) for every line printing a nonzero CUDA error number that the table
    (assets/cuda_errors.csv, through wizard.parsers.cuda.cuda_error_lookup) knows."""
    from wizard.parsers.cuda import cuda_error_lookup

    out = []
    for ln in lines:
        m = _CUDA_ERR.search(ln)
        if not m or m.group(1) == "0":
            continue
        info = cuda_error_lookup(int(m.group(1)))
        if info is not None:
            out.append((int(m.group(1)), info, ln.strip()))
    return out


def _quote(hits: list[str], n: int = 3) -> str:
    shown = "; ".join(f"'{h[:160]}'" for h in hits[:n])
    return shown + (f" and {len(hits) - n} more" if len(hits) > n else "")


def judge(text: str) -> list[Finding]:
    """The program's own verdict words in ``text``, as one finding; ``[]`` when it says none.

    Never raises. The finding's id is ``explain.program_said``; its evidence is the lines quoted."""
    lines = text.splitlines()
    what = "this output's program (a kind bringup does not read)"
    tail = " — the program's own words; bringup does not read this program's figures"
    failed = _hits(lines, _FAIL)
    none_found = [ln.strip() for ln in lines if _NO_DEVICES.search(ln)]
    cuda = _cuda_errors(lines)
    if cuda and not failed:
        from wizard.rules.driver_chain import FAIL_CLASSES  # one mapping of the CUDA error table's classes to verdicts

        code, info, line = cuda[0]
        return [Finding("explain.program_said", Verdict.FAIL if info.klass in FAIL_CLASSES else Verdict.WARN,
                        f"the program reports CUDA error {code} = {info.name} ({info.meaning}): "
                        f"{_quote([ln for _, _, ln in cuda])}", "input", tuple(dict.fromkeys(ln for _, _, ln in cuda))[:5],
                        f"{info.action[:1].upper()}{info.action[1:]}.", f"{info.source}; {SRC}")]
    if failed or none_found:
        hits = list(dict.fromkeys(failed + none_found))
        if none_found and not failed:
            msg = f"{what} says it found no GPU: {_quote(none_found)}"
            remedy = ("The program sees no NVIDIA device: check `nvidia-smi` on the host, the driver (`dmesg | grep "
                      "NVRM`), and, in a container, the NVIDIA container runtime (`--gpus all` / the device plugin's "
                      "runtime class).")
        else:
            msg = f"the program reports a failure: {_quote(hits)}{tail}"
            remedy = ("Read the program's output around the failed line; rerun it with more detail, and give bringup "
                      "the machine's side (nvidia-smi -q, dmesg, dcgmi diag) to judge the hardware.")
        return [Finding("explain.program_said", Verdict.FAIL, msg, "input", tuple(hits[:5]), remedy, SRC)]
    crash = _traceback_error(lines) + _hits(lines, _CRASH)
    if crash:
        # a traceback or a crash is the program's own failure; whether the machine caused it, these lines do not say
        return [Finding("explain.program_said", Verdict.UNKNOWN,
                        f"the program stopped with {_quote(list(dict.fromkeys(crash)), 1)}: an error of the program, "
                        "which says nothing about the machine by itself", "input", tuple(dict.fromkeys(crash))[:5],
                        "Read the traceback above the exception line: it names the call that failed. If it is a CUDA, "
                        "NCCL or driver call, give bringup that error with the machine's side (nvidia-smi, dmesg, "
                        "NCCL_DEBUG=INFO); a Python error in the script itself is the script's to fix.", SRC)]
    errors = _hits(lines, _ERROR)
    warns = _hits(lines, _WARN)
    if errors or warns:
        hits = errors or warns
        level = "ERROR" if errors else "WARN"
        msg = f"{len(hits)} line(s) at level {level} in {what}: {_quote(hits)}"
        return [Finding("explain.program_said", Verdict.WARN, msg, "input", tuple(hits[:5]),
                        "Read what the program says at those lines (a missing component, a device it cannot reach); "
                        "bringup does not read this program's output, so it cannot tell how much that matters here.",
                        SRC)]
    passed = [ln.strip() for ln in lines if _PASS.search(ln)]  # "12 passed, 0 failed" is a pass line
    if passed:
        msg = f"the program reports success: {_quote(passed)}{tail}"
        return [Finding("explain.program_said", Verdict.PASS, msg, "input", tuple(passed[:5]), "", SRC)]
    return []
