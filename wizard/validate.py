"""Validation actions: run bringup's validation script with the target's own Python and PyTorch.

The script (``assets/scripts/bringup_validate.py``, one self-contained file: stdlib + torch) is run as a
detached action like any other (:mod:`wizard.actions`), so it survives a dropped SSH session; its events
(``BRINGUP {json}`` lines, protocol in :mod:`wizard.parsers.validate`) are judged from the log by
:mod:`wizard.rules.validate`. bringup itself never imports torch: it only asks this interpreter whether
torch *could* be imported (``importlib.util.find_spec``), to pick the Python that runs the script.

Which Python (:func:`target_python`): the plan's ``torch_python`` when set; else this interpreter when
torch is installed in it; else ``python3`` from ``PATH`` (the script then reports ``torch_missing`` with
the remedy when that Python has no torch). ``torchrun`` is started as ``<python> -m
torch.distributed.run`` so it is the same interpreter's torch, never a ``torchrun`` found on ``PATH``.

Which device (:func:`validate_device`): the plan's ``validate_device`` (``auto`` | ``cuda`` | ``cpu``);
``auto`` is ``cuda`` when the ``pci`` probe shows an NVIDIA GPU on the PCI bus, else ``cpu``.

Plan keys read here: ``torch_python``, ``validate_device``, ``validate_nproc``, ``soak_minutes``,
``validate_quick`` (small sizes and few steps: the script's ``--quick``; tests and smoke runs).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from wizard.common import CPU_NPROC, fmt_value
from wizard.hosts import ssh_failed_words
from wizard.i18n import N_, Msg, _, ngettext, spaced, tr
from wizard.actions import ActionContext, Resolved
# the reader's words for a test and a metric key: the rules' own (their findings say them too)
from wizard.rules.validate import metric_word, test_word  # noqa: F401  (screens and the CLI take them from here)
from wizard.common import lazy_re

SCRIPT_NAME = "bringup_validate.py"
DEFAULT_SOAK_MINUTES = 10.0
"""Soak length when the plan has no ``soak_minutes`` (issue 5: "N minutes chosen by the operator"; 10 is
bringup's default, long enough for clocks and temperatures to settle under load (judgement))."""
NCCL_TESTS_BINARY = "all_reduce_perf"
NCCL_TESTS_MAX_BYTES = "4G"
"""Largest all_reduce_perf message: 4 GiB (issue 5: sweep 8 B -> >= 4 GiB; the judged size must reach
the 1 GiB floor rows' min_bytes in assets/nccl_floors.csv)."""


def script_path() -> Path:
    """Absolute path of the shipped validation script (it may not exist in a broken install)."""
    try:
        import importlib.resources as ir

        p = Path(str(ir.files("assets") / "scripts" / SCRIPT_NAME))
        if p.exists():
            return p
    except (ImportError, TypeError, ValueError, OSError):
        pass
    from wizard.data import ASSETS

    return ASSETS / "scripts" / SCRIPT_NAME


def torch_importable() -> bool:
    """True when ``import torch`` would find a module in *this* interpreter (nothing is imported)."""
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        return False


def target_python(plan: Mapping[str, Any], here: str = sys.executable) -> tuple[str, str]:
    """(python, why): the interpreter that runs the script and how it was chosen."""
    chosen = plan.get("torch_python")
    if isinstance(chosen, str) and chosen.strip():
        return chosen.strip(), "the plan's torch_python"
    if here and torch_importable():
        return here, "bringup's own Python (torch is installed in it)"
    return "python3", "python3 from PATH (bringup's own Python has no torch; set torch_python in the plan)"


def _pci_gpus(outputs: Mapping[str, Any]) -> int | None:
    """NVIDIA GPUs on the PCI bus per the ``pci`` probe; ``None`` when it could not be read."""
    from wizard.parsers.gpu import parse_pci

    o = outputs.get("pci")
    if o is None or (not o.ok and not o.files):
        return None
    try:
        facts = parse_pci(o)
    except Exception:  # noqa: BLE001 - a parser bug must not stop the action from resolving
        return None
    if facts.vendors_read == 0:
        return None
    return len(facts.gpus)


def _nvml_gpus(outputs: Mapping[str, Any]) -> int | None:
    from wizard.parsers.gpu import parse_nvml

    o = outputs.get("nvml")
    if o is None or not getattr(o, "text", ""):
        return None
    try:
        n = parse_nvml(o.text).count
    except Exception:  # noqa: BLE001
        return None
    return n if isinstance(n, int) and n > 0 else None


def validate_device(ctx: ActionContext) -> str:
    """``cuda`` or ``cpu`` (see the module docstring)."""
    d = ctx.plan.get("validate_device", "auto")
    if d in ("cuda", "cpu"):
        return str(d)
    return "cuda" if (_pci_gpus(ctx.outputs) or 0) > 0 else "cpu"


def _cuda_without_gpu(ctx: ActionContext) -> Resolved | None:
    """The refusal of a CUDA run on a node whose PCI bus shows no NVIDIA GPU (the plan's ``validate_device`` cuda):
    it could only fail, and its failure would blame PyTorch (walk 22: the run said to install a CUDA build of torch and
    turned a cpu-only step into a failed one). None when a GPU is there, the bus could not be read, or it runs on
    the CPU."""
    from wizard.i18n import Msg

    if ctx.plan.get("validate_device") != "cuda" or _pci_gpus(ctx.outputs) != 0:
        return None
    return Resolved(manual=Msg("validate_device is cuda, but no NVIDIA GPU is on this node's PCI bus "
                               "(health.gpu_pci): there is nothing to run CUDA on. Make the GPUs visible first "
                               "(health.gpu_pci, then the driver), or set validate_device to auto or cpu to prove "
                               "the software path on the CPU."), plan_key="validate_device")


def cpu_note(ctx: ActionContext, device: str) -> str:
    """What a validation on the CPU tells the operator before it runs: why the CPU (the plan's ``validate_device``, or
    no NVIDIA GPU on the PCI bus) and that it proves the software path, not a GPU; "" on cuda."""
    from wizard.i18n import Msg

    if device != "cpu":
        return ""
    if ctx.plan.get("validate_device") == "cpu":
        return Msg("Runs on the CPU (the plan's validate_device is cpu): it proves the software path, not a GPU.")
    return Msg("Runs on the CPU: no NVIDIA GPU is on this node's PCI bus (health.gpu_pci), so it proves the software "
               "path, not a GPU.")


TORCH_FIND_CODE = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 3)"
"""Whether ``torch`` can be imported, without importing it (``importlib.util.find_spec``: tens of milliseconds, not
the seconds an import of torch takes): exit 0 yes, 3 no."""


def _no_torch(ctx: ActionContext) -> Resolved | None:
    """The refusal of a validation whose Python cannot import torch, asking for the plan's ``torch_python`` (walk 35 #9:
    the dialog offered the run, which failed at once; walk 44: the run was then recorded as failed, though nothing of
    the machine was tested). None when it can, or when that cannot be told quickly (10 s)."""
    from wizard.i18n import Msg

    python, _ = target_python(ctx.plan)
    if python == sys.executable and torch_importable():  # bringup's own Python: asked in-process, no child
        return None
    try:
        r = subprocess.run([python, "-c", TORCH_FIND_CODE], capture_output=True, timeout=10,
                           stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        return Resolved(manual=Msg("{python} was not found on this machine: there is no Python to run the validation "
                                   "with. Set torch_python in the plan to a Python that has PyTorch (your training "
                                   "environment's, e.g. /opt/venv/bin/python).", python=python), plan_key="torch_python")
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode == 3:
        return Resolved(manual=Msg("{python} has no PyTorch (torch cannot be imported), so the validation cannot run "
                                   "with it. Set torch_python in the plan to a Python that has PyTorch (your training "
                                   "environment's), or install PyTorch there.", python=python), plan_key="torch_python")
    return None


def gpu_count(ctx: ActionContext) -> int | None:
    """GPUs the node validation uses: NVML's count (GPUs the driver brought up), else the PCI bus's."""
    return _nvml_gpus(ctx.outputs) or _pci_gpus(ctx.outputs) or None


def node_nproc(ctx: ActionContext, device: str) -> int:
    """Ranks of the node run: the plan's ``validate_nproc``; else one per GPU on cuda (1 when the count
    is unknown), :data:`CPU_NPROC` on cpu."""
    n = ctx.plan.get("validate_nproc")
    if isinstance(n, int) and not isinstance(n, bool) and n >= 1:
        return n
    if device == "cpu":
        return CPU_NPROC
    return gpu_count(ctx) or 1


def soak_minutes(plan: Mapping[str, Any]) -> float:
    m = plan.get("soak_minutes")
    if isinstance(m, (int, float)) and not isinstance(m, bool) and m > 0:
        return float(m)
    return DEFAULT_SOAK_MINUTES


def _quick(plan: Mapping[str, Any]) -> list[str]:
    return ["--quick"] if plan.get("validate_quick") is True else []


def _missing_script() -> Resolved | None:
    p = script_path()
    if not p.is_file():
        return Resolved(manual=f"the validation script {p} is missing from this bringup install: reinstall "
                               f"bringup (the script ships in its assets/scripts folder)")
    return None


def _env(device: str, **more: str) -> dict[str, str]:
    """Environment of a validation run: unbuffered events; on cpu one OpenMP thread per process, because
    several processes on a few cores with one thread per core each thrash (measured here: the quick gpu test
    took 11 s with OMP_NUM_THREADS=1 and 40 s with 2 threads while another job used the 2 cores)."""
    env = {"PYTHONUNBUFFERED": "1", **more}
    if device == "cpu":
        env["OMP_NUM_THREADS"] = "1"
    return env


def _torchrun(python: str, nproc: int) -> list[str]:
    return [python, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}"]


def resolve_gpu(ctx: ActionContext) -> Resolved:
    """``<python> bringup_validate.py gpu --device D [--quick]``: every visible GPU, one after another."""
    missing = _missing_script() or _cuda_without_gpu(ctx) or _no_torch(ctx)
    if missing:
        return missing
    python, _ = target_python(ctx.plan)
    device = validate_device(ctx)
    return Resolved(ops=[{"argv": [python, str(script_path()), "gpu", "--device", device] + _quick(ctx.plan)}],
                    env=_env(device), note=cpu_note(ctx, device))


def resolve_node(ctx: ActionContext) -> Resolved:
    """torchrun across the node's GPUs (``node`` test: rank sanity, all-reduce sweep, P2P matrix), then,
    on cuda when nccl-tests' ``all_reduce_perf`` is on ``PATH``, ``all_reduce_perf -b 8 -e 4G -f 2 -g N
    -c 1`` (one process driving N GPUs; ``-c 1`` checks every result). ``NCCL_DEBUG=INFO`` makes both
    print NCCL's transport choice into the log."""
    missing = _missing_script() or _cuda_without_gpu(ctx) or _no_torch(ctx)
    if missing:
        return missing
    python, _ = target_python(ctx.plan)
    device = validate_device(ctx)
    n = node_nproc(ctx, device)
    ops: list[dict[str, Any]] = [
        {"argv": _torchrun(python, n) + [str(script_path()), "node", "--device", device] + _quick(ctx.plan)}]
    binary = shutil.which(NCCL_TESTS_BINARY) if device == "cuda" else None
    if binary:
        ops.append({"argv": [binary, "-b", "8", "-e", NCCL_TESTS_MAX_BYTES, "-f", "2", "-g", str(n), "-c", "1"]})
    return Resolved(ops=ops, env=_env(device, NCCL_DEBUG="INFO"), note=cpu_note(ctx, device))


def resolve_soak(ctx: ActionContext) -> Resolved:
    """``soak --minutes M``: GEMM + all-reduce under NVML sampling, under torchrun with the node validation's
    rank count (:func:`node_nproc`: one per GPU on cuda, :data:`CPU_NPROC` on cpu, ``validate_nproc``
    overrides) so that every GPU is loaded at once, as in training, and the all-reduce intervals
    (``soak_allreduce``) run too; one process only when that count is 1 (then GEMM alone)."""
    missing = _missing_script() or _cuda_without_gpu(ctx) or _no_torch(ctx)
    if missing:
        return missing
    python, _ = target_python(ctx.plan)
    device = validate_device(ctx)
    minutes = soak_minutes(ctx.plan)
    tail = [str(script_path()), "soak", "--device", device, "--minutes", f"{minutes:g}"] + _quick(ctx.plan)
    n = node_nproc(ctx, device)
    argv = _torchrun(python, n) + tail if n > 1 else [python] + tail
    return Resolved(ops=[{"argv": argv}], env=_env(device), note=cpu_note(ctx, device))


def resolve_gemm_burnin(ctx: ActionContext, minutes: float) -> Resolved:
    """The GPU burn-in without DCGM (step ``gpu.stress``): ``<python> bringup_validate.py soak --device D --minutes M``
    in one process, i.e. sustained GEMM on every visible GPU with NVML sampling and the Xid/ECC/AER/remap counters
    read before and after (no all-reduce: that needs torchrun), judged like the soak."""
    missing = _missing_script() or _cuda_without_gpu(ctx) or _no_torch(ctx)
    if missing:
        return missing
    python, _ = target_python(ctx.plan)
    device = validate_device(ctx)
    return Resolved(ops=[{"argv": [python, str(script_path()), "soak", "--device", device, "--minutes", f"{minutes:g}"]
                          + _quick(ctx.plan)}], env=_env(device), note=cpu_note(ctx, device))


VALIDATE_PROBES = ("pci", "nvml")
"""Probes the resolvers read (GPU on the bus; GPU count)."""


_ONE_LINE_MEASURES = ("gemm", "memcpy", "h2d", "d2h", "memory", "train", "sanity")
"""Tests without progress events: their measures are the progress the operator sees."""


def _so_far(done: int, total: int, unit: object) -> str:
    """A progress event's count: "3 s of 120 s" when it counts seconds (a soak: walk 20 read "[3/120]" as interval 3),
    else "3/120"."""
    return _("{done} s of {total} s").format(done=done, total=total) if unit == "s" else f"{done}/{total}"


_SUBTEST_PHASE = lazy_re(r"^(gemm|memcpy|h2d|d2h|memory|train) on (\S+)$")
_SOAK_PHASE = lazy_re(r"^soak interval (\d+)$")
_NODES_PHASE = lazy_re(r"^(copy the script to|facts from) (\d+) node\(s\)$")
"""wizard.multinode's own phases: the script copied to the nodes, their facts read (walk 24: English under a Chinese
screen)."""


def phase_words(phase: str) -> str:
    """A progress event's ``phase`` (the validation script's words: "gemm on cpu", "soak interval 3") in the
    operator's language; in English the script's own words. A phase of another form is shown as it is (all-reduce
    and p2p phases are a collective's name and a size, the field's words in either language)."""
    m = _SUBTEST_PHASE.match(phase)
    if m:
        sub = {"gemm": _("gemm on {device}"), "memcpy": _("memcpy on {device}"), "h2d": _("h2d on {device}"),
               "d2h": _("d2h on {device}"), "memory": _("memory on {device}"), "train": _("train on {device}")}
        if m.group(2).startswith("cuda") and m.group(1) in ("memory", "memcpy"):  # GPU memory (显存), not the host's
            return (_("memory on {gpu}") if m.group(1) == "memory" else _("memcpy on {gpu}")).format(gpu=m.group(2))
        return sub[m.group(1)].format(device=m.group(2))
    m = _SOAK_PHASE.match(phase)
    if m:
        return _("soak interval {n}").format(n=m.group(1))
    m = _NODES_PHASE.match(phase)
    if m:
        n = int(m.group(2))
        return (ngettext("copy the script to {n} node", "copy the script to {n} nodes", n) if m.group(1).startswith("copy")
                else ngettext("facts from {n} node", "facts from {n} nodes", n)).format(n=n)
    if phase.startswith("facts from "):
        return _("facts from {node}").format(node=phase[len("facts from "):])
    return phase


def event_line(line: str) -> str | None:
    """One human line for a log line of a validation run, or ``None`` when it says nothing new to a person.

    Progress events (``[3/18] all-reduce 64 MiB  busbw 123.4 GB/s``; a sub-test starting, whose event has
    a 1-based ``index``: ``starting gemm on cpu (1/6)``), the measures of the one-GPU tests,
    errors and the start; never raises."""
    from wizard.parsers.validate import Event, num, parse_event_line

    e = parse_event_line(line)
    if not isinstance(e, Event):
        return None
    where = (f"[{e.prefix}] " if e.prefix else "")
    if e.kind == "start":
        v = e.get("versions") if isinstance(e.get("versions"), dict) else {}
        if e.rank:
            return None
        ws = e.get("world_size")
        dev = e.get("device")  # none: torch did not import, so no device was chosen
        return (where + (_("started {test} on {device}").format(test=e.test or "?", device=dev) if dev else
                         _("started {test} (no device: torch not imported)").format(test=e.test or "?"))
                + (_(", {n} ranks").format(n=ws) if isinstance(ws, int) and ws > 1 else "")
                + (spaced(_("(torch {versions})").format(
                    versions=f"{v.get('torch')}" + (_(", ") + f"CUDA {v.get('cuda')}" if v.get("cuda") else "")))
                   if v.get("torch") else ""))
    if e.kind == "progress":
        if e.rank:  # every rank of a soak reports its interval: rank 0's line says it (walk 20: each line twice)
            return None
        done, total, index = e.get("done"), e.get("total"), e.get("index")
        ok_total = isinstance(total, int) and not isinstance(total, bool) and total > 0
        if ok_total and isinstance(index, int) and not isinstance(index, bool):
            # a sub-test starting: "starting gemm on cuda:0 (1/6)" (done counts the finished ones)
            # a Msg: the space after 开始 only before Latin text ("开始 gemm（cpu）", "开始内存拷贝（cpu）": walk 28 #17)
            return where + tr(Msg("starting {phase} ({index}/{total})",
                                  phase=phase_words(str(e.get("phase") or e.test)), index=index, total=total))
        frac = f"[{_so_far(done, total, e.get('unit'))}] " if isinstance(done, int) and ok_total else ""
        bw = num(e.get("busbw_gb_s"))
        return (f"{where}{frac}{phase_words(str(e.get('phase') or e.test))}"
                + (f"  busbw {bw:.3g} GB/s" if bw is not None else ""))
    if e.kind == "measure" and e.test in _ONE_LINE_MEASURES:
        v = num(e.get("value"))
        dev = e.get("device")
        on = f" GPU {dev}" if isinstance(dev, int) and not isinstance(dev, bool) else ""
        if e.test == "sanity":
            return where + (_("rank {rank} sanity ok") if v == 1.0 else _("rank {rank} sanity FAILED")).format(
                rank=e.get("rank"))
        if e.test == "train":
            return where + _("train{on}: loss {first} -> {last} over {steps} steps").format(
                on=on, first=f"{num(e.get('loss_first')) or 0:.3f}", last=f"{num(e.get('loss_last')) or 0:.3f}",
                steps=e.get("steps"))
        if e.test == "memory":
            return where + _("memory{on}: {n} pattern error(s)").format(on=on, n="?" if v is None else f"{v:.0f}")
        shown = "?" if v is None else f"{v:,.3g}"
        value = f"{shown} {e.get('unit') or ''}".rstrip()  # the unit as the script wrote it (TFLOPS, GB/s)
        words = {"gemm": _("gemm{on}: {value}"),  # a GPU's memory (显存) when on a GPU, else the host's
                 "memcpy": _("memcpy{on}: {value}") if on else _("memcpy: {value}{on}"),
                 "h2d": _("h2d{on}: {value}"), "d2h": _("d2h{on}: {value}")}.get(e.test)  # walk 24 #10
        return where + (words.format(on=on, value=value) if words else f"{e.test}{on}: {value}")
    if e.kind == "error":
        said = _("error in {test}: {message}").format(test=test_word(e.test) if e.test else "?",
                                                      message=error_words(e)[:200])
        # no space between two Chinese words ("多节点运行 出错" -> "多节点运行出错"); a Latin name keeps its space
        return where + re.sub(r"(?<=[\u4e00-\u9fff]) (?=[\u4e00-\u9fff])", "", said)
    summary = e.get("summary") if e.kind == "result" else None
    if isinstance(summary, dict) and summary.get("skipped") and not e.rank:
        # a sub-test that measured nothing here (h2d/d2h on the CPU: no CUDA device) says so, not nothing (walk 30 #11)
        why = str(summary["skipped"])
        return where + _("{test}: not measured here ({why})").format(
            test=e.test or "?", why=_(why) if why in _SKIP_WORDS else why)
    return None


_SKIP_WORDS = {N_("no CUDA device")}
"""The validation script's reasons for a sub-test it did not measure (a ``result`` event's ``summary.skipped``)
that bringup says in the reader's language."""


ERROR_KINDS: dict[str, str] = {
    "unreachable": N_("unreachable"), "hang": N_("hung"), "launch": N_("did not start"),
    "rendezvous": N_("rendezvous failed"), "node_failed": N_("a node failed"), "node": N_("node error"),
    "copy_failed": N_("copy failed"), "facts_failed": N_("facts failed"), "torch_missing": N_("torch missing"),
    "python_missing": N_("python missing"), "nccl_tests_missing": N_("nccl-tests missing"),
    "too_few_nodes": N_("too few nodes"), "hostfile": N_("hostfile error"), "timeout": N_("timed out"),
    "stopped": N_("stopped"), "gpu": N_("GPU error"), "soak": N_("soak error"), "args": N_("bad arguments"),
    "oom": N_("out of memory"), "no_cuda": N_("no CUDA device"), "collective_timeout": N_("collective timed out"),
    "exception": N_("exception"), "nccl": N_("NCCL error"),
}
"""The validation script's and the launcher's error kinds (their ``error`` events' ``kind``) in words."""


def error_words(e: Any) -> str:
    """An ``error`` event as the operator reads it: its message in the reader's language where bringup can say it
    again (an unreachable node, with ssh's own words kept), led by its kind in words unless the message already says
    it (walk 25 #10: "出错（unreachable）：node2 … unreachable: …", the kind English and said twice)."""
    message = str(e.get("message") or "").strip()
    kind = str(e.get("kind") or "")
    if kind == "unreachable" and e.get("target") and e.get("error") is not None:  # said again, translated
        message = tr(Msg("{node} ({target}) unreachable: {error}", node=str(e.get("node") or e.prefix or "?"),
                         target=str(e.get("target")), error=ssh_failed_words(str(e.get("error")))))
    elif kind == "too_few_nodes":  # said again from its fields, translated (walk 28 #14)
        from wizard.rules.multinode import too_few_nodes_message

        message = tr(too_few_nodes_message(e))
    elif e.get("message_msg") is not None:  # the launcher's own sentence, with its template (walk 34 #11)
        from wizard.rules.multinode import said

        message = tr(said(e, "message")).strip()
    english = ERROR_KINDS.get(kind, kind)
    word = _(english) if kind in ERROR_KINDS else kind
    if not kind or english.lower() in message.lower() or word in message:
        return message
    return _("{kind}: {message}").format(kind=word, message=message) if message else word


class LiveView:
    """What a screen shows of a validation run while its log grows: the progress line, readable log lines,
    the raw measurements and the sweep so far, the errors. It reads the script's events (nothing here judges:
    verdicts, floors and the results table are the engine's, stored with the run when it ends). Feed it the
    log's lines in order (:meth:`add`, :meth:`read_file`); it works the same for a run being followed, one
    re-attached after a restart and one that ended long ago."""

    def __init__(self) -> None:
        from wizard.parsers.validate import ValidateLog

        self.vlog = ValidateLog()
        self._parsed_upto = 0

    @property
    def has_events(self) -> bool:
        return bool(self.vlog.events)

    def add(self, start: int, lines: list[str]) -> bool:
        """Lines ``[start, start+len)`` of the log (0-based), those already read skipped. True when an event
        was added."""
        from wizard.parsers.validate import MARKER, parse_event_line

        skip = max(0, self._parsed_upto - start)
        added = False
        other = 0
        for i, line in enumerate(lines[skip:], start + skip):
            r = parse_event_line(line, i + 1) if MARKER in line else None  # most lines of a log are not events
            if r is None:
                other += 1
            elif isinstance(r, str):
                self.vlog.bad_lines.append((i + 1, r[:500]))
            else:
                self.vlog.events.append(r)
                added = True
        if other:
            self.vlog = replace(self.vlog, other_lines=self.vlog.other_lines + other)  # parsed facts are frozen
        self._parsed_upto = max(self._parsed_upto, start + len(lines))
        return added

    def read_file(self, path: str, cap: int = 64 << 20) -> bool:
        """Events from the whole log file (a screen's buffer may hold only its tail); a partial last line is
        left for the next read."""
        from wizard.actions import clean_line

        try:
            with open(path, "rb") as fh:
                data = fh.read(cap)
        except OSError:
            return False
        lines = data.decode("utf-8", "replace").split("\n")
        lines.pop()  # "" after a final newline, else a partial line: read again when it is complete
        return self.add(0, [clean_line(x) for x in lines])

    @staticmethod
    def readable(lines: list[str]) -> list[str]:
        """Log lines as shown: a ``BRINGUP {json}`` event becomes the one-line summary the CLI prints
        (:func:`event_line`), or is left out when it has none (NVML samples); every other line, and a damaged
        event line, is shown as it is."""
        from wizard.parsers.validate import MARKER, Event, parse_event_line

        if not any(MARKER in ln for ln in lines):
            return lines
        out = []
        for ln in lines:
            if MARKER not in ln or not isinstance(parse_event_line(ln), Event):
                out.append(ln)
                continue
            text = event_line(ln)
            if text is not None:
                out.append(text)
        return out

    def progress_line(self, basic: bool = False) -> str:
        """One line: the current test and phase, the sweep size and current busbw; errors and the end say so."""
        from wizard.parsers.validate import num

        vlog = self.vlog
        if not vlog.events:
            return ""
        last = vlog.events[-1]
        ends, errs = vlog.ends, vlog.errors
        # the last error whole (the screen wraps it): a message cut at a fixed length lost its end mid-path
        err = (ngettext("; {n} error: {message}", "; {n} errors, the last: {message}", len(errs)).format(
            n=len(errs), message=error_words(errs[-1])) if errs else "")
        if ends and last.kind == "end":
            dur = num(ends[-1].get("duration_s"))
            # the script's own status is not repeated: the run's (the launcher's) is in the header (walk 20: 143 here,
            # 1 there, for one cancelled run)
            # "after 0 s" read as if nothing ran (walk 36 #11: a facts-only run that reached no node)
            # with an error the note on Python's start-up gives way to it (walk 45 #2: at 60x20 the error was cut to
            # "the last:…")
            return (_("tests finished after {seconds} s").format(seconds=f"{dur:.0f}") if err and dur is not None
                    and dur >= 0.5 else
                    _("tests finished after {seconds} s (the run's time adds Python's start-up)").format(
                        seconds=f"{dur:.0f}") if dur is not None and dur >= 0.5 else
                    _("tests finished in under a second (the run's time adds Python's start-up)") if dur is not None
                    else _("tests finished")) + err
        p = vlog.last_progress()
        arrow = ">" if basic else "\u25b6"
        if p is None:  # before the first progress event: what the script is doing, in words (walk 23: "▶ counters")
            test = last.test or next((e.test for e in vlog.events if e.kind == "start" and e.test), "")
            test = test_word(test)  # walk 42 #14: "soak_gemm: measure" on a Chinese screen
            words = {"start": _("starting"), "device": _("reading the devices"),
                     "sample": _("sampling NVML"), "measure": _("measuring"),
                     "counters": _("reading the error counters after the test") if last.get("when") == "after"
                     else _("reading the error counters before the test")}.get(last.kind, last.kind)
            return " ".join([f"{arrow} {test}: {words}" if test else f"{arrow} {words}"]
                            + ([_("on {node}").format(node=last.node)] if last.node else [])) + err
        parts = [f"{arrow} {test_word(p.test)}: {phase_words(str(p.get('phase', '')))}".rstrip()]
        done, total = p.get("index", p.get("done")), p.get("total")  # index: 1-based sub-test number
        if isinstance(done, int) and isinstance(total, int) and total > 0:  # the reader's brackets (walk 41 #11)
            parts[0] += spaced(_("({so_far})").format(so_far=_so_far(done, total, p.get("unit"))))
        bw = num(p.get("busbw_gb_s"))
        if bw is not None:
            parts.append(f"busbw {bw:.2f} GB/s")
        if p.node:
            parts.append(_("on {node}").format(node=p.node))
        return " ".join(parts) + err

    def measurement_rows(self, keep_sweep: int = 3) -> list[tuple[str, str, str, str, str]]:
        """(node, test, what, metric, value unit) rows of the raw measurements; of a sweep only the
        ``keep_sweep`` largest sizes per node (the whole sweep is in the chart)."""
        from wizard.parsers.validate import num

        rows: list[tuple[str, str, str, str, str]] = []
        sweep: dict[str, list[Any]] = {}
        for e in self.vlog.of("measure"):
            if e.test == "allreduce":
                sweep.setdefault(e.node, []).append(e)
                continue
            rows.append((e.node, test_word(e.test), _what(e), metric_word(str(e.get("metric", ""))),
                         value_shown(e.get("value"), e.get("unit"))))
        for node, evs in sweep.items():
            for e in sorted(evs, key=lambda x: num(x.get("size_bytes")) or 0)[-keep_sweep:]:
                extra = spaced(_("(algbw {algbw}, wrong {wrong})").format(algbw=fmt_value(e.get("algbw_gb_s")),
                                                                           wrong=e.get("wrong")))
                rows.append((node, test_word(e.test), _what(e), metric_word("busbw_gb_s"),
                             f"{fmt_value(e.get('value'))} GB/s{extra}"))
        return rows

    def allreduce_series(self) -> list[tuple[float, float]]:
        """[(size in bytes, busbw GB/s)] of the all-reduce sweep so far, one point per size (the last seen)."""
        from wizard.parsers.validate import num

        pts: dict[float, float] = {}
        for e in self.vlog.measures("allreduce"):
            s, v = num(e.get("size_bytes")), num(e.get("busbw_gb_s", e.get("value")))
            if s is not None and v is not None:
                pts[s] = v
        return sorted(pts.items())

    def errors(self) -> list[tuple[str, str, str, str]]:
        """(kind, node, message, remedy) of each error event, in log order; the message in words
        (:func:`error_words`: led by its kind unless it says it)."""
        from wizard.rules.multinode import said

        # the remedy as a Msg again where the event carries its template (walk 48 #1: the ssh remedy, with its host
        # filled in, matched no catalogue entry and stayed English on a Chinese screen)
        return [(str(e.get("kind")), e.node, error_words(e), said(e, "remedy")) for e in self.vlog.errors]

    @property
    def bad_lines(self) -> list[tuple[int, str]]:
        return list(self.vlog.bad_lines)


def _what(e: Any) -> str:
    """A measurement's qualifier: device, size or pair."""
    from wizard.parsers.validate import num
    from wizard.common import human_bytes

    if e.test in ("allreduce", "soak_allreduce") and num(e.get("size_bytes")) is not None:
        return human_bytes(num(e.get("size_bytes")) or 0)
    if e.test == "p2p":
        return f"{e.get('src')}->{e.get('dst')}"
    if e.test == "sanity":
        return _("rank {n}").format(n=e.get("rank"))
    if e.get("interval") is not None:
        return _("interval {n}").format(n=e.get("interval"))
    dev = e.get("device")
    return f"GPU {dev}" if dev is not None else _("host")  # the judged table's word for the run's own machine


def limit_shown(row: Mapping[str, Any]) -> str:
    """The limit a stored results row was judged against, with its direction ("≥ 460" a floor, "≤ 0.5" a ceiling),
    or "-" without one: one form for the TUI's table and ``bringup validate`` (walk 41 #2: "(限值 2)" beside ">= 2")."""
    if row.get("floor") is None:
        return "-"
    return f"{row.get('limit_op') or ''} {fmt_value(row.get('floor'))}".strip()


UNIT_WORDS = {"ranks": N_("ranks")}
"""Validation units that are words, shown in the reader's language (walk 30 #12); symbols (GB/s, TFLOPS, °C) stay."""


def value_shown(value: Any, unit: Any) -> str:
    """A measured figure with its unit as every view shows it (the results table, the measurements, ``bringup
    validate``): "-" when not measured (walk 20: not "- GB/s"), a count or a ratio bare (walk 39: "0.000233 比值", "0
    count"), a yes/no check as yes or no (walk 39: "1 bool"), a word unit translated, a symbol as it is."""
    from wizard.common import to_float

    shown = fmt_value(value)
    u = str(unit or "")
    if value is None or u in ("", "count", "ratio"):
        return shown
    if u == "bool":
        f = to_float(value, text=False)
        return shown if f is None else _("yes") if f else _("no")
    return f"{shown} {_(UNIT_WORDS[u]) if u in UNIT_WORDS else u}"

