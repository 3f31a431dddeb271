#!/usr/bin/env python3
"""bringup validation script: prove a machine can train, with the target's own Python and PyTorch.

ONE self-contained file (stdlib + torch; ``pynvml`` optional) that bringup copies to the target and runs
there. It never judges: it measures and prints *events*; the wizard judges them against expectations
derived from the detected hardware.

Usage::

    python bringup_validate.py gpu   [--device cpu|cuda|auto] [--quick] [--gpus 0,1] [--mem-fraction 0.9] ...
    torchrun --nproc_per_node=8 bringup_validate.py node [--device ...] [--max-bytes 4G] [--timeout 300]
    python bringup_validate.py soak  --minutes 10          (or under torchrun: adds all-reduce intervals)
    python bringup_validate.py facts                        (works without torch: a missing torch is a fact)

Output protocol (version 1): one event per stdout line, ``BRINGUP `` + compact JSON, flushed at once.
``--quick`` shortens a run: small sizes on CPU (for tests); on GPUs the sizes whose figures are judged stay
large and only timing targets, training steps, the largest all-reduce (1 GiB) and P2P size (64 MiB) shrink.

Common fields: ``v`` (1), ``event``, ``t`` (unix time, s), ``rank`` (the *emitting* rank, 0 when not
distributed), ``node`` (socket.gethostname()). Events: start, device, progress, measure, sample, counters,
result, error, end, facts. Anything else on stdout/stderr (torch warnings, NCCL_DEBUG lines) is not an event.

Units: sizes in bytes; GB/s = 1e9 bytes/s (decimal); TFLOPS = 1e12 FLOP/s; W; degrees C; MHz; seconds.

Sub-commands
------------
gpu    per device: ``device`` event; measures ``gemm`` (tflops; bf16 on CUDA, fp32 on CPU; FLOP = 2*m*n*k),
       ``memcpy`` (d2d_gb_s; a copy counts read + write = 2*bytes, as CUDA bandwidthTest reports
       device-to-device bandwidth), ``h2d``/``d2h`` (gb_s, pinned host memory; CUDA only, skipped on CPU;
       the process runs on the CPUs of the GPU's NUMA node meanwhile: ``numa_node``, ``cpus_pinned``,
       ``numa_reason``),
       ``memory`` (pattern_errors over --mem-fraction of FREE device memory, from torch.cuda.mem_get_info;
       on CPU at most --cpu-mem-mib MiB), ``train`` (loss_drop = loss_last/loss_first of a tiny causal
       transformer learning the next token of a repeating sequence; loss_last is the mean of the last 5 steps).
       NVML ``sample`` events every ~--sample-interval s while the tests run (CUDA and pynvml only);
       ``counters`` before and after (NVML ECC volatile, row remapping, retired pages; PCIe AER from sysfs
       ``aer_dev_*`` TOTAL_* lines; Xid lines from the kernel log: ``xid_count``, the last 5
       ``xid_lines``, every line's number in ``xid_codes``).
       Under torchrun each rank tests its own LOCAL_RANK GPU and prints its own events.
node   under torchrun (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT from the launcher; run alone it is a
       world of one). Backend NCCL on CUDA, gloo on CPU. Phases, each opened by a gloo
       ``monitored_barrier(wait_all_ranks=True)`` so that a rank that never arrives is NAMED:
       ``sanity`` (all-reduce of ones == world_size, barrier; every rank prints its own sanity measure),
       ``allreduce`` (float32 sweep --min-bytes .. --max-bytes, factor 2; time = max over ranks; correctness:
       each rank contributes rank+1, expected n(n+1)/2, ``wrong`` = elements that differ, summed over ranks),
       ``p2p`` (send/recv for every ordered pair (src, dst), timed and checked). Rank 0 prints collective
       measures; other ranks print start, their sanity measure, errors and end.
soak   --minutes of alternating intervals: GEMM on every tested device (each rank its own GPU under torchrun;
       measure ``soak_gemm``), then, with world_size > 1, all-reduce (measure ``soak_allreduce`` from rank 0);
       NVML samples and counters before/after; a ``result`` per rank with first/last interval figures and
       their change in percent.
facts  one ``facts`` event: hostname, kernel, os, python, torch, torch_cuda, nccl, driver, gpu_count,
       gpu_models, vbios, gpu_uuids.

Errors (``error`` event kinds): torch_missing, no_cuda, oom, timeout, collective_timeout, rendezvous,
exception. Exit status: 0 every sub-test ran (judging is the wizard's job); 2 a sub-test errored;
3 torch missing, no CUDA for --device cuda, or bad arguments; 124 timeout (watchdog or collective).
A process stopped by SIGTERM (torchrun stops the other workers when one fails) prints ``end`` with rc 143.
Every run prints exactly one ``end`` event per process.

Timeouts: --timeout S (default 300) is the init_process_group timeout, the monitored-barrier timeout, and
the longest a phase/sub-test may go without progress; a per-process watchdog thread then prints an error
(``collective_timeout`` in node/soak collectives, ``timeout`` otherwise) and exits with os._exit(124), so
nothing hangs forever. The watchdog allows max(2 s, S/4) beyond S (derived) so that, when a peer hangs, rank
0's monitored barrier names it first.

Fault-injection hook (for tests only): with the environment variables ``BRINGUP_TEST_HANG_RANK=<r>`` and
``BRINGUP_TEST_HANG_PHASE=<phase>`` (sanity, allreduce, p2p, soak_allreduce) rank r sleeps forever at the
start of that phase, so tests can prove that a hanging rank is named and the run ends.

Sources:
  busbw = algbw * 2(n-1)/n, algbw = size/time, time = max over ranks: nccl-tests doc/PERFORMANCE.md
  (https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md).
  Device copy bandwidth counts 2*bytes per copy: CUDA samples bandwidthTest, device-to-device
  ("bandwidthInGBs = (2.0f * memSize * (float)MEMCOPY_ITERATIONS) / (double)1e9",
  https://github.com/NVIDIA/cuda-samples).
  NVML calls (nvmlDeviceGetTotalEccErrors, nvmlDeviceGetRemappedRows, nvmlDeviceGetRetiredPages,
  nvmlDeviceGetCurrentClocksEventReasons, ...): https://docs.nvidia.com/deploy/nvml-api/.
  AER counters: Linux Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats (aer_dev_correctable,
  aer_dev_nonfatal, aer_dev_fatal; TOTAL_ERR_COR / TOTAL_ERR_NONFATAL / TOTAL_ERR_FATAL lines).
  Xid lines ("NVRM: Xid (PCI:0000:17:00): 79, ..."): https://docs.nvidia.com/deploy/xid-errors/.
  monitored_barrier: https://pytorch.org/docs/stable/distributed.html#torch.distributed.monitored_barrier.
All sizes, iteration counts and interval lengths below are judgement (derived), not hardware thresholds.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import re
import signal
import socket
import subprocess
import sys
import threading
import time

PROTOCOL_VERSION = 1
MARKER = "BRINGUP "
KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

NODE = socket.gethostname()
T_START = time.time()
_EMIT_LOCK = threading.RLock()
_ENDED = [False]


def _env_int(name, default):
    try:
        return int(os.environ.get(name, ""))
    except ValueError:
        return default


RANK = _env_int("RANK", 0)
WORLD = _env_int("WORLD_SIZE", 1)
LOCAL_RANK = _env_int("LOCAL_RANK", 0)

REMEDY = {
    "torch_missing": ("install PyTorch in the training environment, or tell bringup which Python has it: "
                      "torch_python in the plan (F2 in the TUI, or bringup plan torch_python=/path/to/python)"),
    "no_cuda": ("check the NVIDIA driver (nvidia-smi lists the GPUs), that this Python's torch is a CUDA build "
                "(torch.version.cuda is not None) and that CUDA_VISIBLE_DEVICES does not hide the GPUs; "
                "or validate the CPU path with --device cpu"),
    "oom": ("free the device memory (nvidia-smi lists the processes holding it) or lower the size "
            "(--mem-fraction, --max-bytes, --p2p-bytes), then rerun"),
    "exception": "read the message and the log lines around it, then rerun this sub-test alone",
    "timeout": ("the process made no progress within --timeout: check the GPU (nvidia-smi, kernel log for Xid) "
                "and rerun this sub-test alone"),
    "collective_timeout": ("check the named rank's GPU (nvidia-smi, kernel log for Xid), its node's NCCL "
                           "transport (NCCL_DEBUG=INFO) and network; rerun the validation without that "
                           "node/GPU to confirm it is the cause"),
    "rendezvous": ("check that every node runs torchrun with the same --rdzv_endpoint/--master_addr and "
                   "--nnodes, that the port is reachable through the firewall, and the interface "
                   "(NCCL_SOCKET_IFNAME/GLOO_SOCKET_IFNAME)"),
    "bad_args": "run the script with --help and correct the arguments",
}


# --------------------------------------------------------------------------------------------- events
def _clean(obj):
    """JSON-safe copy: non-finite floats -> None, tuples -> lists, unknown objects -> str."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (bool, int)) or obj is None:
        return obj
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [_clean(v) for v in obj]
    return str(obj)


def emit(event, **fields):
    """Print one event line (``BRINGUP {json}``) and flush. Thread-safe; never raises."""
    data = {"v": PROTOCOL_VERSION, "event": event, "t": time.time(), "rank": RANK, "node": NODE}
    for k, v in fields.items():
        if k in ("v", "event", "t", "node") or (k == "rank" and v is None):
            continue
        data[k] = v
    try:
        line = MARKER + json.dumps(_clean(data), separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as e:  # pragma: no cover - _clean makes this unreachable
        line = MARKER + json.dumps({"v": 1, "event": "error", "t": time.time(), "rank": RANK, "node": NODE,
                                    "test": "protocol", "kind": "exception",
                                    "message": "event %r not serialisable: %s" % (event, e),
                                    "remedy": REMEDY["exception"]})
    with _EMIT_LOCK:
        try:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
        except (OSError, ValueError):
            pass


def emit_error(test, kind, message, **extra):
    emit("error", test=test, kind=kind, message=str(message)[:2000], remedy=extra.pop("remedy", REMEDY[kind]),
         **extra)


def emit_end(rc):
    """Print the one ``end`` event of this process (later calls are ignored)."""
    with _EMIT_LOCK:
        if _ENDED[0]:
            return
        _ENDED[0] = True
        emit("end", rc=int(rc), duration_s=round(time.time() - T_START, 3))


def die(rc):
    """End now: the end event, flush, os._exit (no cleanup that could hang on a broken collective)."""
    emit_end(rc)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(rc)


def _on_sigterm(signum, frame):
    emit_end(128 + signum)
    os._exit(128 + signum)


# --------------------------------------------------------------------------------------------- helpers
def human(n):
    """64 MiB, 8 B, 1.5 GiB (binary units) for progress lines."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            v = n / size
            return ("%d %s" % (v, unit)) if v == int(v) else ("%.1f %s" % (v, unit))
    return "%d B" % n


def parse_size(text):
    """'4G' / '64M' / '8K' / '4096' / '1GiB' -> bytes (binary multiples). ValueError on garbage."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(?:i?[bB])?\s*", str(text))
    if not m:
        raise argparse.ArgumentTypeError("not a size: %r (examples: 8, 64K, 256M, 4G)" % text)
    mult = {"": 1, "k": KiB, "m": MiB, "g": GiB, "t": 1024 * GiB}[m.group(2).lower()]
    v = int(float(m.group(1)) * mult)
    if v <= 0:
        raise argparse.ArgumentTypeError("size must be positive: %r" % text)
    return v


def is_oom(torch, exc):
    if isinstance(exc, MemoryError):
        return True
    for owner in (torch, getattr(torch, "cuda", None)):
        t = getattr(owner, "OutOfMemoryError", None) if owner is not None else None
        if isinstance(t, type) and isinstance(exc, t):
            return True
    s = str(exc).lower()
    return "out of memory" in s or "can't allocate memory" in s or "cannot allocate memory" in s


def import_torch():
    """(torch module, None) or (None, reason)."""
    try:
        import torch  # noqa: F401
        return torch, None
    except Exception as e:  # ImportError, or a broken install raising anything else
        return None, "%s: %s" % (type(e).__name__, e)


def versions(torch, device, backend):
    v = {"python": platform.python_version(), "torch": None, "cuda": None, "nccl": None, "backend": backend}
    if torch is not None:
        v["torch"] = str(torch.__version__)
        v["cuda"] = getattr(torch.version, "cuda", None)
        if device == "cuda":
            try:
                nv = torch.cuda.nccl.version()
                v["nccl"] = ".".join(str(x) for x in nv[:3]) if isinstance(nv, (tuple, list)) else str(nv)
            except Exception:
                v["nccl"] = None
    return v


def sync(torch, dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def cuda_ok(torch):
    try:
        return bool(torch.cuda.is_available()) and torch.cuda.device_count() > 0
    except Exception:
        return False


def host_memory():
    """(total bytes, available bytes) from sysconf (available may be None)."""
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        total = page * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None, None
    try:
        avail = page * os.sysconf("SC_AVPHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        avail = None
    try:  # MemAvailable counts reclaimable cache, which SC_AVPHYS_PAGES does not
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return total, avail


# --------------------------------------------------------------------------------------------- watchdog
class Watchdog(object):
    """A thread that ends the process (error event + end rc 124 + os._exit) when the armed phase makes no
    progress (no :meth:`beat`) for ``limit`` seconds."""

    def __init__(self):
        self._lock = threading.Lock()
        self._deadline = None
        self._limit = 0.0
        self._phase = ""
        self._test = ""
        self._kind = "timeout"
        t = threading.Thread(target=self._run, name="bringup-watchdog", daemon=True)
        t.start()

    def arm(self, test, phase, limit, kind="timeout"):
        with self._lock:
            self._test, self._phase, self._limit, self._kind = test, phase, float(limit), kind
            self._deadline = time.time() + self._limit

    def beat(self):
        with self._lock:
            if self._deadline is not None:
                self._deadline = time.time() + self._limit

    def disarm(self):
        with self._lock:
            self._deadline = None

    def _run(self):
        while True:
            time.sleep(0.25)
            with self._lock:
                fired = self._deadline is not None and time.time() > self._deadline
                test, phase, limit, kind = self._test, self._phase, self._limit, self._kind
            if fired:
                extra = {"phase": phase}
                if kind == "collective_timeout":
                    extra.update(ranks=[RANK], nodes=[NODE])
                emit_error(test, kind, "rank %d on %s: phase %r made no progress for %.0f s (watchdog)"
                           % (RANK, NODE, phase, limit), **extra)
                die(124)


def watchdog_limit(timeout):
    return timeout + max(2.0, timeout / 4.0)  # (derived) lets rank 0's monitored barrier name a peer first


# --------------------------------------------------------------------------------------------- NVML & counters
class Nvml(object):
    """Optional NVML access through pynvml; every call is guarded (None when unsupported)."""

    def __init__(self):
        self.ok = False
        self.reason = None
        self.nv = None
        try:
            import pynvml  # noqa: F401
            pynvml.nvmlInit()
            self.nv = pynvml
            self.ok = True
        except Exception as e:
            self.reason = "pynvml not usable: %s: %s" % (type(e).__name__, e)

    def _call(self, name, *args):
        fn = getattr(self.nv, name, None)
        if fn is None:
            return None
        try:
            return fn(*args)
        except Exception:
            return None

    @staticmethod
    def _s(v):
        return v.decode("utf-8", "replace") if isinstance(v, bytes) else v

    def handle(self, info):
        """NVML handle for a CUDA device dict (pci_bus_id, uuid, index); PCI id first: CUDA and NVML
        indices can differ (CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER)."""
        if not self.ok:
            return None
        if info.get("pci_bus_id"):
            h = self._call("nvmlDeviceGetHandleByPciBusId", info["pci_bus_id"])
            if h is not None:
                return h
        if info.get("uuid"):
            h = self._call("nvmlDeviceGetHandleByUUID", info["uuid"])
            if h is not None:
                return h
        if (info.get("index") is not None and not os.environ.get("CUDA_VISIBLE_DEVICES")
                and os.environ.get("CUDA_DEVICE_ORDER") == "PCI_BUS_ID"):  # only then do the indices agree
            return self._call("nvmlDeviceGetHandleByIndex", info["index"])
        return None

    def sample(self, h):
        nv = self.nv
        temp = self._call("nvmlDeviceGetTemperature", h, getattr(nv, "NVML_TEMPERATURE_GPU", 0))
        power = self._call("nvmlDeviceGetPowerUsage", h)
        limit = self._call("nvmlDeviceGetEnforcedPowerLimit", h)
        sm = self._call("nvmlDeviceGetClockInfo", h, getattr(nv, "NVML_CLOCK_SM", 1))
        mem = self._call("nvmlDeviceGetClockInfo", h, getattr(nv, "NVML_CLOCK_MEM", 2))
        reasons = self._call("nvmlDeviceGetCurrentClocksEventReasons", h)
        if reasons is None:
            reasons = self._call("nvmlDeviceGetCurrentClocksThrottleReasons", h)
        util = self._call("nvmlDeviceGetUtilizationRates", h)
        return {
            "temp_c": temp,
            "power_w": power / 1000.0 if isinstance(power, (int, float)) else None,  # NVML reports mW
            "power_limit_w": limit / 1000.0 if isinstance(limit, (int, float)) else None,
            "sm_clock_mhz": sm,
            "mem_clock_mhz": mem,
            "clock_event_reasons": int(reasons) if isinstance(reasons, int) else None,
            "util_pct": getattr(util, "gpu", None),
        }

    def counters(self, h):
        nv = self.nv
        unc = getattr(nv, "NVML_MEMORY_ERROR_TYPE_UNCORRECTED", 1)
        cor = getattr(nv, "NVML_MEMORY_ERROR_TYPE_CORRECTED", 0)
        vol = getattr(nv, "NVML_VOLATILE_ECC", 0)
        out = {
            "ecc_volatile_uncorrected": self._call("nvmlDeviceGetTotalEccErrors", h, unc, vol),
            "ecc_volatile_corrected": self._call("nvmlDeviceGetTotalEccErrors", h, cor, vol),
            "remapped_rows_pending": None, "remap_failure": None,
            "remapped_rows_correctable": None, "remapped_rows_uncorrectable": None,
            "retired_pages": None,
        }
        rr = self._call("nvmlDeviceGetRemappedRows", h)
        if isinstance(rr, (tuple, list)) and len(rr) >= 4:
            out.update(remapped_rows_correctable=int(rr[0]), remapped_rows_uncorrectable=int(rr[1]),
                       remapped_rows_pending=int(bool(rr[2])), remap_failure=int(bool(rr[3])))
        pages = None
        for cause in ("NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS",
                      "NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR"):
            if not hasattr(nv, cause):
                continue
            got = self._call("nvmlDeviceGetRetiredPages", h, getattr(nv, cause))
            if isinstance(got, (list, tuple)):
                pages = (pages or 0) + len(got)
        out["retired_pages"] = pages
        return out

    def shutdown(self):
        if self.ok:
            self._call("nvmlShutdown")


def read_aer(bdf, root="/sys/bus/pci/devices"):
    """({'correctable', 'nonfatal', 'fatal'}, None): the TOTAL_* lines of sysfs aer_dev_* for one PCI function
    (counts since boot), or (None, reason) when they cannot be read."""
    if not bdf:
        return None, "PCI address unknown"
    base = os.path.join(root, bdf)
    out = {}
    for key, fname, total in (("correctable", "aer_dev_correctable", "TOTAL_ERR_COR"),
                              ("nonfatal", "aer_dev_nonfatal", "TOTAL_ERR_NONFATAL"),
                              ("fatal", "aer_dev_fatal", "TOTAL_ERR_FATAL")):
        try:
            with open(os.path.join(base, fname)) as f:
                text = f.read()
        except OSError as e:
            return None, "%s/%s not readable: %s" % (base, fname, e.strerror or e)
        m = re.search(r"^%s\s+(\d+)" % total, text, re.M)
        if not m:
            return None, "%s/%s has no %s line" % (base, fname, total)
        out[key] = int(m.group(1))
    return out, None


def read_kernel_log():
    """(text, None) from ``journalctl -k`` (this boot) or ``dmesg``; (None, reason) when neither is readable."""
    reasons = []
    for cmd in (["journalctl", "-k", "--no-pager", "-o", "cat"], ["dmesg"]):
        try:
            p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
        except FileNotFoundError:
            reasons.append("%s not installed" % cmd[0])
            continue
        except (subprocess.TimeoutExpired, OSError) as e:
            reasons.append("%s: %s" % (cmd[0], e))
            continue
        out = p.stdout.decode("utf-8", "replace")
        if p.returncode == 0 and out.strip():
            return out, None
        err = p.stderr.decode("utf-8", "replace").strip().splitlines()
        reasons.append("%s: rc %d%s" % (cmd[0], p.returncode, (": " + err[0][:200]) if err else ", no output"))
    return None, "; ".join(reasons)


_XID = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\)")


def xid_lines(klog, bdf):
    """Xid lines of the kernel log for one GPU (PCI domain:bus:device match) or all when bdf is None."""
    lines = [ln for ln in klog.splitlines() if "NVRM: Xid" in ln]
    if not bdf:
        return lines
    want = bdf.lower().rsplit(".", 1)[0]  # 0000:17:00.0 -> 0000:17:00
    out = []
    for ln in lines:
        m = _XID.search(ln)
        if m is None or m.group(1).lower().startswith(want):
            out.append(ln)
    return out


_XID_CODE = re.compile(r"NVRM: Xid \(PCI:[^)]*\):\s*(\d+)")


def xid_codes(lines):
    """The Xid number of every line, in order (None where a line is cut before its number): the wizard grades
    the new ones by the NVIDIA Xid catalog's severity (only the last 5 lines travel as text)."""
    out = []
    for ln in lines:
        m = _XID_CODE.search(ln)
        out.append(int(m.group(1)) if m else None)
    return out


def emit_counters(when, device_type, infos, nvml):
    """One ``counters`` event per device (or one with device null, available false, on CPU)."""
    if device_type != "cuda":
        emit("counters", when=when, device=None, available=False,
             reason="no CUDA device: GPU counters (ECC, row remapping, retired pages, AER, Xid) do not apply",
             ecc_volatile_uncorrected=None, ecc_volatile_corrected=None, remapped_rows_pending=None,
             remap_failure=None, retired_pages=None, aer=None, xid_count=None, xid_lines=[], xid_codes=[])
        return
    klog, kreason = read_kernel_log()
    for info in infos:
        fields = {"ecc_volatile_uncorrected": None, "ecc_volatile_corrected": None, "remapped_rows_pending": None,
                  "remap_failure": None, "retired_pages": None}
        h = nvml.handle(info) if nvml is not None else None
        if h is not None:
            fields.update(nvml.counters(h))
            available, reason = True, None
        elif nvml is not None and nvml.ok:
            available, reason = False, "no NVML handle for %s" % (info.get("pci_bus_id") or info.get("index"))
        else:
            available, reason = False, (nvml.reason if nvml is not None else "NVML not used")
        aer, aer_reason = read_aer(info.get("pci_bus_id"))
        if klog is not None:
            lines = xid_lines(klog, info.get("pci_bus_id"))
            xid = {"xid_count": len(lines), "xid_lines": lines[-5:], "xid_codes": xid_codes(lines)}
        else:
            xid = {"xid_count": None, "xid_lines": [], "xid_reason": kreason}
        extra = {"reason": reason} if reason else {}
        if aer_reason:
            extra["aer_reason"] = aer_reason
        emit("counters", when=when, device=info["index"], available=available, aer=aer, **fields, **xid, **extra)


class Sampler(object):
    """Thread that emits one NVML ``sample`` per device every ``interval`` seconds until :meth:`stop`."""

    def __init__(self, nvml, infos, interval):
        self.targets = []
        if nvml is not None and nvml.ok:
            for info in infos:
                h = nvml.handle(info)
                if h is not None:
                    self.targets.append((info["index"], h))
        self.nvml = nvml
        self.interval = max(0.1, float(interval))
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        if self.targets:
            self._thread = threading.Thread(target=self._run, name="bringup-nvml", daemon=True)
            self._thread.start()
        return self

    def _run(self):
        while not self._stop.is_set():
            for index, h in self.targets:
                try:
                    emit("sample", device=index, **self.nvml.sample(h))
                except Exception:
                    pass
            self._stop.wait(self.interval)

    def stop(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)


# --------------------------------------------------------------------------------------------- devices
def pci_bus_id(p):
    """sysfs form of a CUDA device's PCI address ("0000:17:00.0") from torch's device properties, or None."""
    if getattr(p, "pci_bus_id", None) is None:
        return None
    return "%04x:%02x:%02x.0" % (int(getattr(p, "pci_domain_id", 0) or 0), int(p.pci_bus_id),
                                 int(getattr(p, "pci_device_id", 0) or 0))


def cuda_info(torch, i):
    p = torch.cuda.get_device_properties(i)
    pci = pci_bus_id(p)
    uuid = getattr(p, "uuid", None)
    uuid = str(uuid) if uuid is not None else None
    if uuid and not uuid.startswith(("GPU-", "MIG-")):
        uuid = "GPU-" + uuid
    return {"index": i, "name": p.name, "total_memory_bytes": int(p.total_memory),
            "compute_capability": "%d.%d" % (p.major, p.minor),
            "multi_processor_count": int(p.multi_processor_count), "pci_bus_id": pci, "uuid": uuid,
            "pcie": pcie_link(pci), "nvlink": nvlink_state(pci)}


GTS_TO_GEN = {"2.5": 1, "5.0": 2, "5": 2, "8.0": 3, "8": 3, "16.0": 4, "16": 4, "32.0": 5, "32": 5, "64.0": 6,
              "64": 6}
"""PCIe transfer rate per lane (GT/s, as sysfs current_link_speed prints it) -> generation (PCI-SIG: Gen1 2.5,
Gen2 5, Gen3 8, Gen4 16, Gen5 32, Gen6 64 GT/s)."""


def pcie_link(bdf, root="/sys/bus/pci/devices"):
    """The GPU's PCIe link from sysfs: {"current_gen", "current_width", "max_gen", "max_width"} (ints or None),
    or None without a PCI address. No root needed (the same files lspci's LnkSta/LnkCap summarise)."""
    if not bdf:
        return None
    out = {}
    for key, name, width in (("current_gen", "current_link_speed", False), ("current_width", "current_link_width", True),
                             ("max_gen", "max_link_speed", False), ("max_width", "max_link_width", True)):
        try:
            with open(os.path.join(root, bdf, name)) as f:
                text = f.read().strip()
        except OSError:
            out[key] = None
            continue
        if width:
            out[key] = int(text) if text.isdigit() else None
        else:  # "16.0 GT/s PCIe" / "32.0 GT/s"
            out[key] = GTS_TO_GEN.get(text.split(" ")[0]) if text else None
    return out


def nvlink_state(bdf):
    """{"links_active": int, "version": int|None} from NVML (pynvml), or None when NVML is not usable.
    A GPU without NVLink answers NotSupported for link 0: links_active 0 (a PCIe-only GPU)."""
    if not bdf:
        return None
    try:
        import pynvml
        pynvml.nvmlInit()
    except Exception:
        return None
    try:
        try:
            h = pynvml.nvmlDeviceGetHandleByPciBusId(bdf)
        except Exception:
            h = pynvml.nvmlDeviceGetHandleByPciBusId("0000" + bdf)  # NVML's 8-digit domain form
        active, version = 0, None
        for link in range(int(getattr(pynvml, "NVML_NVLINK_MAX_LINKS", 18))):
            try:
                st = pynvml.nvmlDeviceGetNvLinkState(h, link)
            except Exception:
                break  # NotSupported / InvalidArgument: no (more) links
            if st:
                active += 1
                if version is None:
                    try:
                        version = int(pynvml.nvmlDeviceGetNvLinkVersion(h, link))
                    except Exception:
                        pass
        return {"links_active": active, "version": version}
    except Exception:
        return None
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except (OSError, IndexError):
        pass
    return platform.processor() or platform.machine() or "cpu"


def cpu_info():
    total, _ = host_memory()
    return {"index": 0, "name": _cpu_model(),
            "total_memory_bytes": total, "compute_capability": None, "multi_processor_count": None,
            "pci_bus_id": None, "uuid": None, "cpu_count": os.cpu_count(), "torch_threads": _torch_threads()}


def _torch_threads():
    t = sys.modules.get("torch")
    try:
        return int(t.get_num_threads()) if t is not None else None
    except Exception:
        return None


def resolve_device(args, torch):
    """'cuda' | 'cpu', or None when --device cuda was asked for and CUDA is not usable.
    A quick CPU run uses one intra-op thread unless OMP_NUM_THREADS is set: on a small shared test machine
    OpenMP's spin-waiting threads otherwise collapse under contention (measured on a busy 2-core VM: the quick
    CPU gpu run took 35 s with 2 threads, 12 s with 1)."""
    have = cuda_ok(torch)
    if args.device == "cpu" or (args.device == "auto" and not have):
        if args.quick and not os.environ.get("OMP_NUM_THREADS"):
            try:
                torch.set_num_threads(1)
            except Exception:
                pass
        return "cpu"
    if args.device == "cuda":
        return "cuda" if have else None
    return "cuda"


def no_cuda_message(torch):
    return ("--device cuda but torch.cuda.is_available() is False (torch %s, torch.version.cuda=%s, "
            "CUDA_VISIBLE_DEVICES=%r)" % (torch.__version__, getattr(torch.version, "cuda", None),
                                          os.environ.get("CUDA_VISIBLE_DEVICES")))


def select_gpus(args, torch):
    n = torch.cuda.device_count()
    if args.gpus:
        idx = [int(x) for x in args.gpus.split(",") if x.strip() != ""]
        bad = [i for i in idx if i < 0 or i >= n]
        if bad:
            raise ValueError("--gpus %s: this process sees %d CUDA device(s) (0..%d)" % (args.gpus, n, n - 1))
        return idx
    if WORLD > 1 and "LOCAL_RANK" in os.environ:
        return [LOCAL_RANK % n]
    return list(range(n))


# --------------------------------------------------------------------------------------------- gpu sub-tests
class Ctx(object):
    def __init__(self, args, torch):
        self.args = args
        self.torch = torch
        self.errors = 0
        self.wd = Watchdog()


def run_subtest(ctx, test, device_index, fn, dev=None):
    """Run one sub-test: its measures, then exactly one ``result``; errors become error events."""
    torch = ctx.torch
    ctx.wd.arm(test, test, watchdog_limit(ctx.args.timeout), "timeout")
    try:
        ok, summary = fn()
        emit("result", test=test, ok=bool(ok), device=device_index, summary=summary)
    except Exception as e:
        kind = "oom" if is_oom(torch, e) else "exception"
        ctx.errors += 1
        emit_error(test, kind, "%s: %s" % (type(e).__name__, e), device=device_index)
        emit("result", test=test, ok=False, device=device_index, summary={"error": kind})
    finally:
        ctx.wd.disarm()
        if dev is not None and dev.type == "cuda":
            try:
                torch.cuda.empty_cache()
            except Exception:
                pass


def _calibrated_iters(seconds_per_iter, target_s, lo, hi):
    if seconds_per_iter <= 0:
        return hi
    return int(max(lo, min(hi, target_s / seconds_per_iter)))


def make_gemm(torch, dev, args):
    """(a, b, c, n, dtype name) for a square GEMM on dev: bf16 8192 on CUDA (also with --quick: the figure is
    judged against the spec), fp32 1024 on CPU (256 quick) unless --gemm-size. Sizes (derived): 8192^3 bf16
    saturates current data-centre GPUs."""
    if dev.type == "cuda":
        dtype, name = torch.bfloat16, "bf16"
        n = args.gemm_size or 8192
    else:
        dtype, name = torch.float32, "fp32"
        n = args.gemm_size or (256 if args.quick else 1024)
    g = torch.Generator(device=dev).manual_seed(0) if dev.type == "cuda" else torch.Generator().manual_seed(0)
    a = torch.randn(n, n, device=dev, dtype=dtype, generator=g)
    b = torch.randn(n, n, device=dev, dtype=dtype, generator=g)
    c = torch.empty(n, n, device=dev, dtype=dtype)
    return a, b, c, n, name


def t_gemm(ctx, dev, index):
    torch, args = ctx.torch, ctx.args
    a, b, c, n, name = make_gemm(torch, dev, args)
    target = args.gemm_seconds if args.gemm_seconds else (0.3 if args.quick else 1.0)
    for _ in range(3):
        torch.matmul(a, b, out=c)
    sync(torch, dev)
    t0 = time.perf_counter()
    for _ in range(3):
        torch.matmul(a, b, out=c)
    sync(torch, dev)
    iters = _calibrated_iters((time.perf_counter() - t0) / 3, target, 5, 100000)
    t0 = time.perf_counter()
    for _ in range(iters):
        torch.matmul(a, b, out=c)
    sync(torch, dev)
    secs = time.perf_counter() - t0
    tflops = 2.0 * n * n * n * iters / secs / 1e12
    emit("measure", test="gemm", metric="tflops", value=tflops, unit="TFLOPS", device=index, dtype=name,
         m=n, n=n, k=n, iters=iters, seconds=secs)
    return True, {"tflops": tflops, "dtype": name, "size": n, "device": index}


def t_memcpy(ctx, dev, index):
    torch, args = ctx.torch, ctx.args
    if dev.type == "cuda":
        nbytes = args.copy_bytes or 1 * GiB  # (derived) large enough to reach the HBM plateau, quick or not
    else:
        nbytes = args.copy_bytes or (16 * MiB if args.quick else 256 * MiB)
    src = torch.empty(nbytes, dtype=torch.uint8, device=dev)
    src.fill_(0x5A)
    dst = torch.empty_like(src)
    for _ in range(2):
        dst.copy_(src)
    sync(torch, dev)
    t0 = time.perf_counter()
    dst.copy_(src)
    sync(torch, dev)
    iters = _calibrated_iters(time.perf_counter() - t0, 0.25 if args.quick else 0.5, 5, 10000)
    t0 = time.perf_counter()
    for _ in range(iters):
        dst.copy_(src)
    sync(torch, dev)
    secs = time.perf_counter() - t0
    gbs = 2.0 * nbytes * iters / secs / 1e9  # read + write per copy (bandwidthTest convention)
    emit("measure", test="memcpy", metric="d2d_gb_s", value=gbs, unit="GB/s", device=index, bytes=nbytes,
         iters=iters, seconds=secs)
    return True, {"d2d_gb_s": gbs, "bytes": nbytes, "device": index}


def parse_cpulist(text):
    """The CPUs of a Linux cpulist ("0-3,8,10-11" -> {0, 1, 2, 3, 8, 10, 11}); ValueError on garbage."""
    cpus = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.update(range(int(lo), int(hi) + 1))
        else:
            cpus.add(int(part))
    return cpus


def gpu_numa_cpus(bdf, pci_root="/sys/bus/pci/devices", node_root="/sys/devices/system/node"):
    """(numa_node, cpus, reason) of a GPU: its NUMA node from sysfs ``numa_node`` (-1 = the platform reports
    none -> None) and that node's CPUs from ``node<N>/cpulist`` (a set of ints, or None with the reason).
    Linux Documentation/ABI/testing/sysfs-bus-pci (numa_node) and sysfs-devices-system-node (cpulist)."""
    if not bdf:
        return None, None, "PCI address unknown"
    try:
        with open(os.path.join(pci_root, bdf, "numa_node")) as f:
            node = int(f.read().strip())
    except (OSError, ValueError) as e:
        return None, None, "numa_node not readable: %s" % (getattr(e, "strerror", None) or e)
    if node < 0:
        return None, None, "the platform reports no NUMA node for the GPU (numa_node -1)"
    try:
        with open(os.path.join(node_root, "node%d" % node, "cpulist")) as f:
            cpus = parse_cpulist(f.read())
    except (OSError, ValueError) as e:
        return node, None, "node%d cpulist not readable: %s" % (node, getattr(e, "strerror", None) or e)
    if not cpus:
        return node, None, "NUMA node %d has no CPUs" % node
    return node, cpus, None


class NumaPin(object):
    """Context manager: run on the CPUs of the GPU's NUMA node (os.sched_setaffinity), restore after.

    Attributes after entering: ``numa_node`` (int or None), ``pinned`` (bool), ``reason`` (why not, or None).
    Host<->device copies from a remote NUMA node run several-fold slower (NVIDIA nvbandwidth,
    https://github.com/NVIDIA/nvbandwidth, runs pinned the same way); pinned host memory is placed by first touch, so the buffer is allocated inside."""

    def __init__(self, bdf):
        self.bdf = bdf
        self.numa_node, self.pinned, self.reason, self._saved = None, False, None, None

    def __enter__(self):
        node, cpus, reason = gpu_numa_cpus(self.bdf)
        self.numa_node, self.reason = node, reason
        if cpus is None or not hasattr(os, "sched_setaffinity"):
            self.reason = reason or "os.sched_setaffinity is not available"
            return self
        try:
            self._saved = os.sched_getaffinity(0)
            allowed = cpus & self._saved or cpus
            os.sched_setaffinity(0, allowed)
            self.pinned = True
        except OSError as e:
            self.reason = "sched_setaffinity to node %d failed: %s" % (node, e.strerror or e)
        return self

    def __exit__(self, *exc):
        if self._saved is not None:
            try:
                os.sched_setaffinity(0, self._saved)
            except OSError:
                pass
        return False


def t_pcie(ctx, dev, index, direction):
    torch, args = ctx.torch, ctx.args
    if dev.type != "cuda":
        return True, {"skipped": "no CUDA device", "device": index}
    bdf = None
    try:
        bdf = pci_bus_id(torch.cuda.get_device_properties(dev.index))
    except Exception:
        pass
    with NumaPin(bdf) as pin:
        return _t_pcie_pinned(ctx, dev, index, direction, pin)


def _t_pcie_pinned(ctx, dev, index, direction, pin):
    torch, args = ctx.torch, ctx.args
    nbytes = args.pcie_bytes or 256 * MiB  # (derived) 8x bandwidthTest's default 32 MB transfer
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    host.fill_(0x3C)
    devbuf = torch.empty(nbytes, dtype=torch.uint8, device=dev)

    def once():
        if direction == "h2d":
            devbuf.copy_(host, non_blocking=True)
        else:
            host.copy_(devbuf, non_blocking=True)

    for _ in range(2):
        once()
    sync(torch, dev)
    iters = 20 if not args.quick else 10
    t0 = time.perf_counter()
    for _ in range(iters):
        once()
    sync(torch, dev)
    secs = time.perf_counter() - t0
    gbs = float(nbytes) * iters / secs / 1e9
    numa = {"numa_node": pin.numa_node, "cpus_pinned": pin.pinned}
    if pin.reason:
        numa["numa_reason"] = pin.reason
    emit("measure", test=direction, metric="gb_s", value=gbs, unit="GB/s", device=index, bytes=nbytes,
         pinned=True, iters=iters, seconds=secs, **numa)
    return True, {"gb_s": gbs, "bytes": nbytes, "pinned": True, "device": index, "numa_node": pin.numa_node,
                  "cpus_pinned": pin.pinned}


PATTERNS = (("0x55555555", 0x55555555), ("0xAAAAAAAA", 0xAAAAAAAA - (1 << 32)), ("address", None))


def t_memory(ctx, dev, index):
    """Allocate --mem-fraction of free memory in chunks, write each pattern to every chunk, then verify."""
    torch, args = ctx.torch, ctx.args
    if dev.type == "cuda":
        torch.cuda.empty_cache()
        free, total = torch.cuda.mem_get_info(dev)
        target = int(free * args.mem_fraction)
        chunk_bytes = 256 * MiB
    else:
        total, free = host_memory()
        free = free or (args.cpu_mem_mib * MiB)
        target = min(int(free * args.mem_fraction), args.cpu_mem_mib * MiB)
        chunk_bytes = 64 * MiB
    chunk_elems = chunk_bytes // 4
    chunks = []
    allocated = 0
    try:
        while allocated + 4 <= target:
            n = min(chunk_elems, (target - allocated) // 4)
            chunks.append(torch.empty(n, dtype=torch.int32, device=dev))
            allocated += 4 * n
            ctx.wd.beat()
    except Exception as e:
        if not is_oom(torch, e):
            raise
        chunks = []
        raise MemoryError("allocating %d bytes (%.2f of %d free) failed after %d bytes: %s"
                          % (target, args.mem_fraction, free, allocated, str(e).splitlines()[0][:300]))
    slice_elems = 16 * MiB  # verify in slices: at most 64 MiB int32 + 16 MiB bool of scratch (derived)
    errors = 0
    t0 = time.perf_counter()
    for pname, value in PATTERNS:
        for ci, ch in enumerate(chunks):
            if value is None:
                base = (ci * 7919) % (1 << 20)
                torch.arange(base, base + ch.numel(), dtype=torch.int32, device=dev, out=ch)
            else:
                ch.fill_(value)
        sync(torch, dev)
        ctx.wd.beat()
        bad = torch.zeros((), dtype=torch.int64, device=dev)
        for ci, ch in enumerate(chunks):
            base = (ci * 7919) % (1 << 20)
            for s in range(0, ch.numel(), slice_elems):
                e = min(ch.numel(), s + slice_elems)
                if value is None:
                    expect = torch.arange(base + s, base + e, dtype=torch.int32, device=dev)
                    bad += (ch[s:e] != expect).sum()
                else:
                    bad += (ch[s:e] != value).sum()
        errors += int(bad.item())
        ctx.wd.beat()
    secs = time.perf_counter() - t0
    chunks = []
    fraction = float(allocated) / free if free else None
    emit("measure", test="memory", metric="pattern_errors", value=float(errors), unit="count", device=index,
         bytes_tested=allocated, fraction=fraction, patterns=len(PATTERNS),
         pattern_names=[p for p, _ in PATTERNS], free_bytes=free, total_bytes=total, chunk_bytes=chunk_bytes,
         seconds=secs)
    return errors == 0, {"pattern_errors": errors, "bytes_tested": allocated, "fraction": fraction,
                         "device": index}


def t_train(ctx, dev, index):
    """Tiny causal transformer; task: next token of a repeating sequence (learnable, so the loss must fall).
    Sizes (derived): CUDA d=512, 4 layers, batch 32 x 256 tokens, bf16 autocast; CPU d=64, 2 layers, 16 x 32."""
    torch, args = ctx.torch, ctx.args
    nn = torch.nn
    cuda = dev.type == "cuda"
    steps = args.steps or (60 if args.quick else 300)
    steps = max(2, steps)
    vocab = 64
    if cuda:
        d, layers, heads, batch, seq = 512, 4, 8, 32, 256
    else:
        d, layers, heads, batch, seq = 64, 2, 4, 16, 32
    torch.manual_seed(0)
    if cuda:
        torch.cuda.reset_peak_memory_stats(dev)

    class Tiny(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.pos = nn.Parameter(torch.zeros(1, seq, d))
            layer = nn.TransformerEncoderLayer(d, heads, 4 * d, dropout=0.0, batch_first=True, norm_first=True)
            self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
            self.head = nn.Linear(d, vocab)

        def forward(self, x, mask):
            h = self.emb(x) + self.pos[:, : x.shape[1]]
            return self.head(self.enc(h, mask=mask, is_causal=True))

    model = Tiny().to(dev)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    mask = nn.Transformer.generate_square_subsequent_mask(seq, device=dev)
    cycle = torch.randperm(vocab, generator=torch.Generator().manual_seed(1)).to(dev)  # each token has 1 successor
    pos = torch.arange(seq + 1, device=dev)
    lossf = nn.CrossEntropyLoss()
    losses = []
    t_after_first = None
    for step in range(steps):
        start = torch.randint(0, vocab, (batch, 1), device=dev)
        toks = cycle[(start + pos) % vocab]
        x, y = toks[:, :-1], toks[:, 1:]
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=cuda):
            logits = model(x, mask)
            loss = lossf(logits.float().reshape(-1, vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.detach())
        if step == 0:
            sync(torch, dev)
            t_after_first = time.perf_counter()
        if step % 20 == 0:
            ctx.wd.beat()
    sync(torch, dev)
    secs = time.perf_counter() - t_after_first
    vals = [float(v) for v in torch.stack(losses).float().cpu().tolist()]
    loss_first = vals[0]
    tail = vals[-5:]
    loss_last = sum(tail) / len(tail)
    tokens_s = batch * seq * (steps - 1) / secs if secs > 0 else None
    peak = int(torch.cuda.max_memory_allocated(dev)) if cuda else None
    ratio = loss_last / loss_first if loss_first else None
    emit("measure", test="train", metric="loss_drop", value=ratio, unit="ratio", device=index, steps=steps,
         loss_first=loss_first, loss_last=loss_last, max_memory_allocated_bytes=peak, tokens_per_s=tokens_s,
         batch=batch, seq_len=seq, d_model=d, layers=layers, params=params, dtype="bf16" if cuda else "fp32")
    fell = math.isfinite(loss_last) and loss_last < loss_first  # the loss fell (derived)
    return fell, {"loss_first": loss_first, "loss_last": loss_last, "steps": steps, "tokens_per_s": tokens_s,
                  "max_memory_allocated_bytes": peak, "device": index}


def cmd_gpu(args, torch):
    device = resolve_device(args, torch)
    emit("start", test="gpu", args=vars(args), device=device or "cuda", world_size=WORLD, local_rank=LOCAL_RANK,
         versions=versions(torch, device, None))
    if device is None:
        emit_error("gpu", "no_cuda", no_cuda_message(torch))
        return 3
    ctx = Ctx(args, torch)
    if device == "cuda":
        try:
            indices = select_gpus(args, torch)
        except ValueError as e:
            emit_error("gpu", "exception", str(e), remedy=REMEDY["bad_args"])
            return 3
        infos = [cuda_info(torch, i) for i in indices]
    else:
        infos = [cpu_info()]
    for info in infos:
        emit("device", **info)
    nvml = Nvml() if device == "cuda" else None
    emit_counters("before", device, infos, nvml)
    sampler = Sampler(nvml, infos, args.sample_interval).start()
    done = 0
    try:
        for info in infos:
            i = info["index"]
            dev = torch.device("cuda", i) if device == "cuda" else torch.device("cpu")
            if device == "cuda":
                torch.cuda.set_device(dev)
            idx = i if device == "cuda" else None
            plan = (("gemm", lambda: t_gemm(ctx, dev, idx)), ("memcpy", lambda: t_memcpy(ctx, dev, idx)),
                    ("h2d", lambda: t_pcie(ctx, dev, idx, "h2d")), ("d2h", lambda: t_pcie(ctx, dev, idx, "d2h")),
                    ("memory", lambda: t_memory(ctx, dev, idx)), ("train", lambda: t_train(ctx, dev, idx)))
            for test, fn in plan:
                # done = sub-tests finished; index = this sub-test's 1-based number (for "starting gemm (1/6)")
                emit("progress", test="gpu", phase="%s on %s" % (test, dev), done=done, index=done + 1,
                     total=len(plan) * len(infos))
                run_subtest(ctx, test, idx, fn, dev)
                done += 1
    finally:
        sampler.stop()
    emit_counters("after", device, infos, nvml)
    if nvml is not None:
        nvml.shutdown()
    return 2 if ctx.errors else 0


# --------------------------------------------------------------------------------------------- distributed
class CollectiveFailure(Exception):
    pass


def hang_hook(phase):
    """Fault injection for tests (see the module docstring): sleep forever at the start of ``phase``."""
    r = os.environ.get("BRINGUP_TEST_HANG_RANK")
    p = os.environ.get("BRINGUP_TEST_HANG_PHASE")
    if r is not None and p == phase and r.strip() == str(RANK):
        sys.stderr.write("bringup test hook: rank %d hangs at phase %s\n" % (RANK, phase))
        sys.stderr.flush()
        while True:
            time.sleep(3600)


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Dist(object):
    """The process group, the gloo group for monitored barriers, and the host name of every rank."""

    def __init__(self, ctx, device):
        import torch.distributed as dist
        self.ctx = ctx
        self.torch = ctx.torch
        self.dist = dist
        self.device = device
        self.n = WORLD
        self.td = datetime.timedelta(seconds=ctx.args.timeout)
        self.gloo = None
        self.hosts = [NODE] * WORLD
        if device == "cuda":
            n = self.torch.cuda.device_count()
            self.dev = self.torch.device("cuda", LOCAL_RANK % n)
            self.torch.cuda.set_device(self.dev)
        else:
            self.dev = self.torch.device("cpu")
        self.backend = "nccl" if device == "cuda" else "gloo"

    def init(self):
        """init_process_group + gloo group + host names; a failure -> error 'rendezvous' (returns False)."""
        if "MASTER_ADDR" not in os.environ:  # run alone, without torchrun: a world of one
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", str(_free_port()))
            os.environ.setdefault("RANK", "0")
            os.environ.setdefault("WORLD_SIZE", "1")
        wd = self.ctx.wd
        wd.arm("node", "rendezvous", watchdog_limit(self.ctx.args.timeout), "rendezvous")
        try:
            kw = {"backend": self.backend, "timeout": self.td, "rank": RANK, "world_size": WORLD}
            if self.device == "cuda":
                try:
                    import inspect
                    if "device_id" in inspect.signature(self.dist.init_process_group).parameters:
                        kw["device_id"] = self.dev
                except (TypeError, ValueError):
                    pass
            self.dist.init_process_group(**kw)
            self.gloo = self.dist.new_group(backend="gloo", timeout=self.td)
            self.hosts = [str(h) for h in self.gather_json(NODE)]
        except Exception as e:
            emit_error("node", "rendezvous", "%s: %s" % (type(e).__name__, str(e).strip()[:1500]),
                       backend=self.backend, master="%s:%s" % (os.environ.get("MASTER_ADDR"),
                                                             os.environ.get("MASTER_PORT")))
            return False
        finally:
            wd.disarm()
        return True

    def gather_json(self, obj):
        """Every rank's JSON-able obj, in rank order, over the gloo group (plain tensors: all_gather_object
        needs numpy in some torch builds, and the target may not have it)."""
        torch, dist = self.torch, self.dist
        data = json.dumps(_clean(obj)).encode("utf-8")
        if self.n == 1:
            return [json.loads(data.decode("utf-8"))]
        lens = [torch.zeros(1, dtype=torch.int64) for _ in range(self.n)]
        dist.all_gather(lens, torch.tensor([len(data)], dtype=torch.int64), group=self.gloo)
        size = max(int(t.item()) for t in lens)
        mine = torch.zeros(size, dtype=torch.uint8)
        if data:
            mine[: len(data)] = torch.tensor(list(data), dtype=torch.uint8)
        bufs = [torch.zeros(size, dtype=torch.uint8) for _ in range(self.n)]
        dist.all_gather(bufs, mine, group=self.gloo)
        return [json.loads(bytes(b[: int(l.item())].tolist()).decode("utf-8")) for b, l in zip(bufs, lens)]

    def node_of(self, r):
        return self.hosts[r] if 0 <= r < len(self.hosts) else None

    def open_phase(self, test, phase, work_s=0.0):
        """Arm the watchdog (--timeout plus ``work_s`` of planned work without progress beats), run the test
        hook, then a monitored barrier that names missing ranks; a failure prints a collective_timeout error and
        ends the process with rc 124."""
        self.ctx.wd.arm(test, phase, watchdog_limit(self.ctx.args.timeout) + work_s, "collective_timeout")
        hang_hook(phase)
        try:
            self.dist.monitored_barrier(group=self.gloo, timeout=self.td, wait_all_ranks=True)
        except Exception as e:
            msg = str(e).strip()
            m = re.search(r"Ranks? ([0-9][0-9, ]*) failed to pass monitoredBarrier", msg)
            if m:
                ranks = [int(x) for x in re.findall(r"\d+", m.group(1))]
                nodes = [self.node_of(r) for r in ranks]
                text = "rank(s) %s on node(s) %s did not reach phase %r within %g s" % (
                    ", ".join(str(r) for r in ranks), ", ".join(sorted(set(str(n) for n in nodes))), phase,
                    self.ctx.args.timeout)
                emit_error(test, "collective_timeout", text + " | " + msg.splitlines()[0][:500], phase=phase,
                           ranks=ranks, nodes=nodes, peer=ranks[0] if ranks else None)
            else:
                # a non-zero rank learns only that the barrier failed; rank 0 names the missing ranks
                emit_error(test, "collective_timeout", "monitored barrier before phase %r failed on rank %d "
                           "(rank 0 names the missing ranks; when rank 0 printed no such error, rank 0 itself "
                           "did not arrive): %s" % (phase, RANK, msg.splitlines()[0][:500] if msg else
                                                     type(e).__name__),
                           phase=phase, ranks=None, nodes=None, peer=0 if RANK != 0 else None)
            die(124)

    def close_phase(self):
        self.ctx.wd.disarm()

    def max_over_ranks(self, values):
        t = self.torch.tensor(values, dtype=self.torch.float64, device=self.dev)
        if self.n > 1:
            self.dist.all_reduce(t, op=self.dist.ReduceOp.MAX)
        return [float(x) for x in t.cpu().tolist()]

    def sum_over_ranks(self, value):
        t = self.torch.tensor([value], dtype=self.torch.int64, device=self.dev)
        if self.n > 1:
            self.dist.all_reduce(t)
        return int(t.item())

    def timed_allreduce(self, x, iters, warm):
        """Seconds per all-reduce of x, the max over ranks (nccl-tests convention)."""
        torch, dist = self.torch, self.dist
        for _ in range(warm):
            dist.all_reduce(x)
        sync(torch, self.dev)
        dist.barrier(group=self.gloo)
        t0 = time.perf_counter()
        for _ in range(iters):
            dist.all_reduce(x)
        sync(torch, self.dev)
        el = (time.perf_counter() - t0) / iters
        return self.max_over_ranks([el])[0]

    def check_allreduce(self, x):
        """Fill rank+1, all-reduce once, count elements != n(n+1)/2 over all ranks."""
        x.fill_(float(RANK + 1))
        self.dist.all_reduce(x)
        expected = float(self.n * (self.n + 1) // 2)
        bad = int((x != expected).sum().item())
        return self.sum_over_ranks(bad)

    def close(self):
        try:
            self.dist.barrier(group=self.gloo)
            self.dist.destroy_process_group()
        except Exception:
            pass


def bus_factor(n):
    """busbw / algbw for all-reduce: 2(n-1)/n (nccl-tests doc/PERFORMANCE.md,
    https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md)."""
    return 2.0 * (n - 1) / n if n > 0 else 0.0


def sweep_iters(size, small_iters):
    """(iters, warmup) for one all-reduce size: fewer for large messages (derived; nccl-tests defaults 20/5)."""
    if size <= 64 * MiB:
        return small_iters, 5
    if size <= 512 * MiB:
        return max(3, small_iters // 2), 2
    return max(3, small_iters // 4), 1


def node_phase(ctx, d, test, phase, fn):
    d.open_phase(test, phase)
    try:
        fn()
    except Exception as e:
        kind = "oom" if is_oom(ctx.torch, e) else "exception"
        ctx.errors += 1
        emit_error(test, kind, "%s: %s" % (type(e).__name__, str(e)[:1500]), phase=phase)
        emit("result", test=test, ok=False, summary={"error": kind})
    finally:
        d.close_phase()


def phase_sanity(ctx, d, info):
    torch, dist = ctx.torch, d.dist
    t = torch.ones(1, device=d.dev)
    dist.all_reduce(t)
    s = float(t.item())
    dist.barrier()
    ok = s == float(d.n)
    emit("measure", test="sanity", metric="ok", value=1.0 if ok else 0.0, unit="bool",
         device=info.get("index") if d.device == "cuda" else None, world_size=d.n, allreduce_sum=s,
         local_rank=LOCAL_RANK, device_name=info.get("name"), pci_bus_id=info.get("pci_bus_id"),
         uuid=info.get("uuid"))
    got = d.gather_json([RANK, NODE, s, info.get("name")])
    if RANK == 0:
        bad = [g[0] for g in got if g[2] != float(d.n)]
        emit("result", test="sanity", ok=not bad, summary={
            "world_size": d.n, "ranks_wrong": bad, "nodes": sorted(set(g[1] for g in got)),
            "ranks": [{"rank": g[0], "node": g[1], "allreduce_sum": g[2], "device_name": g[3]} for g in got]})


def phase_allreduce(ctx, d):
    torch, args = ctx.torch, ctx.args
    cuda = d.device == "cuda"
    # (derived) 4 GiB on GPUs: peak busbw needs >= 1 GB messages (nccl-tests issue #212: 256 MB is too small);
    # --quick keeps 1 GiB on GPUs (still near peak) and 1 MiB on CPU (tests)
    if cuda:
        max_bytes = args.max_bytes or (1 * GiB if args.quick else 4 * GiB)
    else:
        max_bytes = args.max_bytes or (1 * MiB if args.quick else 64 * MiB)
    min_bytes = min(args.min_bytes, max_bytes)
    counts = []
    b = min_bytes
    while b <= max_bytes:
        c = max(1, b // 4)
        if c not in counts:
            counts.append(c)
        b *= 2
    buf = torch.empty(counts[-1], dtype=torch.float32, device=d.dev)
    small_iters = args.iters or 20
    n = d.n
    rows = []
    wrong_total = 0
    for i, count in enumerate(counts):
        ctx.wd.beat()
        x = buf[:count]
        size = count * 4
        iters, warm = sweep_iters(size, small_iters)
        x.zero_()
        secs = d.timed_allreduce(x, iters, warm)
        wrong = d.check_allreduce(x)
        wrong_total += wrong
        algbw = size / secs / 1e9 if secs > 0 else None
        busbw = algbw * bus_factor(n) if algbw is not None else None
        rows.append((size, busbw))
        if RANK == 0:
            emit("measure", test="allreduce", metric="busbw_gb_s", value=busbw, unit="GB/s", device=None,
                 size_bytes=size, count=count, dtype="float32", time_us=secs * 1e6, algbw_gb_s=algbw,
                 busbw_gb_s=busbw, world_size=n, wrong=wrong, iters=iters)
            emit("progress", test="allreduce", phase="all-reduce %s" % human(size), done=i + 1, total=len(counts),
                 size_bytes=size, busbw_gb_s=busbw)
    del buf
    if RANK == 0:
        best = max((r[1] for r in rows if r[1] is not None), default=None)
        emit("result", test="allreduce", ok=wrong_total == 0, summary={
            "sizes": len(rows), "max_size_bytes": rows[-1][0], "busbw_gb_s_at_max_size": rows[-1][1],
            "max_busbw_gb_s": best, "wrong": wrong_total, "world_size": n})


def phase_p2p(ctx, d):
    torch, args, dist = ctx.torch, ctx.args, d.dist
    cuda = d.device == "cuda"
    if cuda:
        nbytes = args.p2p_bytes or (64 * MiB if args.quick else 256 * MiB)
    else:
        nbytes = args.p2p_bytes or (1 * MiB if args.quick else 4 * MiB)
    count = max(1, nbytes // 4)
    size = count * 4
    iters = args.iters or (10 if cuda else 5)
    pairs = [(s, t) for s in range(d.n) for t in range(d.n) if s != t]
    buf = torch.empty(count, dtype=torch.float32, device=d.dev)
    results = []
    for idx, (src, dst) in enumerate(pairs):
        ctx.wd.beat()
        if RANK == src:
            buf.fill_(float(src + 1))
        elif RANK == dst:
            buf.zero_()
        sync(torch, d.dev)
        dist.barrier(group=d.gloo)
        el, bad = 0.0, 0
        if RANK in (src, dst):
            def once():
                if RANK == src:
                    dist.send(buf, dst)
                else:
                    dist.recv(buf, src)
            once()  # warm-up: NCCL connects a pair lazily on its first send/recv
            sync(torch, d.dev)
            t0 = time.perf_counter()
            for _ in range(iters):
                once()
            sync(torch, d.dev)
            el = (time.perf_counter() - t0) / iters
            if RANK == dst:
                bad = int((buf != float(src + 1)).sum().item())
        el, badf = d.max_over_ranks([el, float(bad)])
        bad = int(badf)
        gbs = size / el / 1e9 if el > 0 else None
        results.append((src, dst, gbs, bad))
        if RANK == 0:
            emit("measure", test="p2p", metric="gb_s", value=gbs, unit="GB/s", device=None, src=src, dst=dst,
                 size_bytes=size, wrong=bad, iters=iters, time_us=el * 1e6, src_node=d.node_of(src),
                 dst_node=d.node_of(dst))
            emit("progress", test="p2p", phase="p2p %d->%d %s" % (src, dst, human(size)), done=idx + 1,
                 total=len(pairs), size_bytes=size)
    if RANK == 0:
        vals = [r[2] for r in results if r[2] is not None]
        summary = {"pairs": len(results), "size_bytes": size, "wrong": sum(r[3] for r in results),
                   "min_gb_s": min(vals) if vals else None, "max_gb_s": max(vals) if vals else None}
        if not pairs:
            summary["skipped"] = "world_size 1: no pairs"
        emit("result", test="p2p", ok=summary["wrong"] == 0, summary=summary)


def cmd_node(args, torch):
    device = resolve_device(args, torch)
    backend = None if device is None else ("nccl" if device == "cuda" else "gloo")
    emit("start", test="node", args=vars(args), device=device or "cuda", world_size=WORLD,
         local_rank=LOCAL_RANK, versions=versions(torch, device, backend))
    if device is None:
        emit_error("node", "no_cuda", no_cuda_message(torch))
        return 3
    ctx = Ctx(args, torch)
    d = Dist(ctx, device)
    if not d.init():
        return 2
    info = cuda_info(torch, d.dev.index) if device == "cuda" else cpu_info()
    emit("device", **info)  # each rank's device: the judge derives the floor from names, PCIe and NVLink
    node_phase(ctx, d, "sanity", "sanity", lambda: phase_sanity(ctx, d, info))
    node_phase(ctx, d, "allreduce", "allreduce", lambda: phase_allreduce(ctx, d))
    node_phase(ctx, d, "p2p", "p2p", lambda: phase_p2p(ctx, d))
    d.close()
    return 2 if ctx.errors else 0


# --------------------------------------------------------------------------------------------- soak
def _change_pct(first, last):
    if first is None or last is None or not first:
        return None
    return (last - first) / first * 100.0


def cmd_soak(args, torch):
    device = resolve_device(args, torch)
    distributed = WORLD > 1
    backend = None if device is None else (("nccl" if device == "cuda" else "gloo") if distributed else None)
    emit("start", test="soak", args=vars(args), device=device or "cuda", world_size=WORLD, local_rank=LOCAL_RANK,
         versions=versions(torch, device, backend))
    if device is None:
        emit_error("soak", "no_cuda", no_cuda_message(torch))
        return 3
    ctx = Ctx(args, torch)
    d = None
    if distributed:
        d = Dist(ctx, device)
        if not d.init():
            return 2
    if device == "cuda":
        try:
            indices = [d.dev.index] if d is not None else select_gpus(args, torch)
        except ValueError as e:
            emit_error("soak", "exception", str(e), remedy=REMEDY["bad_args"])
            return 3
        infos = [cuda_info(torch, i) for i in indices]
        devs = [torch.device("cuda", i) for i in indices]
    else:
        infos, devs = [cpu_info()], [torch.device("cpu")]
    for info in infos:
        emit("device", **info)
    nvml = Nvml() if device == "cuda" else None
    emit_counters("before", device, infos, nvml)
    sampler = Sampler(nvml, infos, args.sample_interval).start()
    interval = args.interval or (1.0 if args.quick else 10.0)
    total_s = max(0.0, args.minutes * 60.0)
    gemm_hist = {info["index"]: [] for info in infos}
    ar_hist = []
    ar_size = None
    k = 0
    t_begin = time.time()
    try:
        mats = []
        for dv, info in zip(devs, infos):
            a, b, c, n, dname = make_gemm(torch, dv, args)
            mats.append((dv, info["index"], a, b, c, n, dname))
        if distributed:
            default = 256 * MiB if device == "cuda" else (1 * MiB if args.quick else 4 * MiB)
            cnt = max(1, (args.soak_bytes or default) // 4)
            ar_buf = torch.zeros(cnt, dtype=torch.float32, device=d.dev)
            ar_size = cnt * 4
        while True:
            k += 1
            ctx.wd.arm("soak_gemm", "soak_gemm %d" % k, watchdog_limit(args.timeout) + interval, "timeout")
            for index, tflops, secs, iters, n, dname in soak_gemm_interval(torch, mats, interval):
                gemm_hist[index].append(tflops)
                emit("measure", test="soak_gemm", metric="tflops", value=tflops, unit="TFLOPS", device=index
                     if device == "cuda" else None, interval=k, elapsed_s=time.time() - t_begin, dtype=dname,
                     m=n, n=n, k=n, iters=iters, seconds=secs)
            ctx.wd.disarm()
            if distributed:
                d.open_phase("soak_allreduce", "soak_allreduce", work_s=2 * interval)
                calib = d.timed_allreduce(ar_buf, 3, 1)
                iters = int(max(1, min(100000, interval / calib))) if calib > 0 else 10
                secs = d.timed_allreduce(ar_buf, iters, 0)
                d.close_phase()
                algbw = ar_size / secs / 1e9 if secs > 0 else None
                busbw = algbw * bus_factor(d.n) if algbw is not None else None
                ar_hist.append(busbw)
                if RANK == 0:
                    emit("measure", test="soak_allreduce", metric="busbw_gb_s", value=busbw, unit="GB/s",
                         device=None, interval=k, elapsed_s=time.time() - t_begin, size_bytes=ar_size,
                         algbw_gb_s=algbw, busbw_gb_s=busbw, world_size=d.n, iters=iters, time_us=secs * 1e6)
                # rank 0 decides whether another interval starts, so every rank runs the same collectives
                flag = torch.tensor([1 if time.time() - t_begin < total_s else 0], dtype=torch.int64)
                d.dist.broadcast(flag, src=0, group=d.gloo)
                go_on = bool(flag.item())
            else:
                go_on = time.time() - t_begin < total_s
            emit("progress", test="soak", phase="soak interval %d" % k, done=int(min(time.time() - t_begin, total_s)),
                 total=int(total_s), unit="s")
            if not go_on:
                break
    except Exception as e:
        kind = "oom" if is_oom(torch, e) else "exception"
        ctx.errors += 1
        emit_error("soak", kind, "%s: %s" % (type(e).__name__, str(e)[:1500]))
    finally:
        ctx.wd.disarm()
        sampler.stop()
    emit_counters("after", device, infos, nvml)
    if nvml is not None:
        nvml.shutdown()
    summary = {"intervals": k, "interval_s": interval, "seconds": time.time() - t_begin, "gemm": []}
    for index, hist in gemm_hist.items():
        first, last = (hist[0], hist[-1]) if hist else (None, None)
        summary["gemm"].append({"device": index if device == "cuda" else None, "first_tflops": first,
                                "last_tflops": last, "change_pct": _change_pct(first, last),
                                "min_tflops": min(hist) if hist else None})
    if distributed and RANK == 0:
        first, last = (ar_hist[0], ar_hist[-1]) if ar_hist else (None, None)
        summary["allreduce"] = {"size_bytes": ar_size, "first_busbw_gb_s": first, "last_busbw_gb_s": last,
                                "change_pct": _change_pct(first, last),
                                "min_busbw_gb_s": min([x for x in ar_hist if x is not None], default=None)}
    emit("result", test="soak", ok=ctx.errors == 0, summary=summary)
    if d is not None and not ctx.errors:
        d.close()
    return 2 if ctx.errors else 0


def soak_gemm_interval(torch, mats, seconds):
    """Run GEMMs on every device (launches interleaved, so CUDA devices run concurrently) for ~seconds.
    Yields (index, tflops, seconds, iters, n, dtype) per device; CUDA time from events on each device."""
    cuda = [m for m in mats if m[0].type == "cuda"]
    starts, ends = {}, {}
    for dv, index, a, b, c, n, _ in cuda:
        starts[index] = torch.cuda.Event(enable_timing=True)
        ends[index] = torch.cuda.Event(enable_timing=True)
        with torch.cuda.device(dv):
            starts[index].record()
    t0 = time.perf_counter()
    iters = 0
    while True:
        for dv, index, a, b, c, n, _ in mats:
            torch.matmul(a, b, out=c)
        iters += 1
        if iters % 8 == 0:
            for dv, *_ in cuda:
                torch.cuda.synchronize(dv)
        if time.perf_counter() - t0 >= seconds:
            break
    for dv, index, *_ in cuda:
        with torch.cuda.device(dv):
            ends[index].record()
    for dv, *_ in cuda:
        torch.cuda.synchronize(dv)
    wall = time.perf_counter() - t0
    for dv, index, a, b, c, n, dname in mats:
        secs = starts[index].elapsed_time(ends[index]) / 1000.0 if dv.type == "cuda" else wall
        yield index, 2.0 * n * n * n * iters / secs / 1e12, secs, iters, n, dname


# --------------------------------------------------------------------------------------------- facts
def _os_pretty():
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith("PRETTY_NAME="):
                        return line.split("=", 1)[1].strip().strip('"').strip("'")
        except OSError:
            continue
    return None


def _driver_version():
    try:
        with open("/proc/driver/nvidia/version") as f:
            text = f.read()
    except OSError:
        return None
    m = re.search(r"Kernel Module(?: for \S+)?\s+(\d+\.\d+(?:\.\d+)?)", text)
    return m.group(1) if m else None


def cmd_facts(args, torch, torch_error):
    have_cuda = torch is not None and cuda_ok(torch)
    device = "cuda" if have_cuda else "cpu"
    emit("start", test="facts", args=vars(args), device=device, world_size=WORLD, local_rank=LOCAL_RANK,
         versions=versions(torch, device, None))
    v = versions(torch, device, None)
    facts = {"hostname": NODE, "kernel": platform.release(), "os": _os_pretty(), "python": v["python"],
             "python_executable": sys.executable, "torch": v["torch"], "torch_cuda": v["cuda"], "nccl": v["nccl"],
             "cuda_available": have_cuda, "driver": _driver_version(), "gpu_count": 0, "torch_gpu_count": None,
             "gpu_models": [], "vbios": [], "gpu_uuids": [], "pynvml": False}
    if torch is None:
        facts["torch_error"] = torch_error
    if have_cuda:
        n = torch.cuda.device_count()
        facts["torch_gpu_count"] = n
        infos = [cuda_info(torch, i) for i in range(n)]
        facts.update(gpu_count=n, gpu_models=[i["name"] for i in infos], gpu_uuids=[i["uuid"] for i in infos])
    nvml = Nvml()
    if nvml.ok:
        facts["pynvml"] = True
        cnt = nvml._call("nvmlDeviceGetCount")
        if isinstance(cnt, int):
            handles = [nvml._call("nvmlDeviceGetHandleByIndex", i) for i in range(cnt)]
            facts["gpu_count"] = cnt  # NVML sees every GPU, whatever CUDA_VISIBLE_DEVICES says
            facts["gpu_models"] = [nvml._s(nvml._call("nvmlDeviceGetName", h)) for h in handles]
            facts["gpu_uuids"] = [nvml._s(nvml._call("nvmlDeviceGetUUID", h)) for h in handles]
            facts["vbios"] = [nvml._s(nvml._call("nvmlDeviceGetVbiosVersion", h)) for h in handles]
        if facts["driver"] is None:
            facts["driver"] = nvml._s(nvml._call("nvmlSystemGetDriverVersion"))
        nvml.shutdown()
    else:
        facts["nvml_error"] = nvml.reason
        if not have_cuda:
            try:
                facts["gpu_count"] = len(os.listdir("/proc/driver/nvidia/gpus"))
            except OSError:
                pass
    emit("facts", **facts)
    return 0


# --------------------------------------------------------------------------------------------- main
class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        emit_error("args", "exception", "bad arguments: %s" % message, remedy=REMEDY["bad_args"])
        die(3)


def build_parser():
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto",
                        help="auto: cuda when torch sees a GPU, else cpu")
    common.add_argument("--quick", action="store_true",
                        help="shorter run: small sizes on CPU (tests); on GPUs the judged sizes stay large and only "
                             "timings, steps and the largest all-reduce (1G) shrink")
    common.add_argument("--timeout", type=float, default=300.0,
                        help="seconds: process-group timeout, barrier timeout, longest phase without progress")
    common.add_argument("--gpus", default=None, help="comma-separated CUDA indices (default: all, or LOCAL_RANK)")
    common.add_argument("--sample-interval", type=float, default=1.0, help="NVML sample period, s")
    common.add_argument("--gemm-size", type=int, default=None, help="square GEMM size m=n=k")
    p = _Parser(prog="bringup_validate.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", parser_class=_Parser)
    sub.required = True
    g = sub.add_parser("gpu", parents=[common], help="each GPU (or the CPU)")
    g.add_argument("--mem-fraction", type=float, default=0.9, help="fraction of FREE device memory to test")
    g.add_argument("--cpu-mem-mib", type=int, default=256, help="cap of the memory test on CPU, MiB")
    g.add_argument("--steps", type=int, default=None, help="training steps (default 300; 60 with --quick)")
    g.add_argument("--copy-bytes", type=parse_size, default=None)
    g.add_argument("--pcie-bytes", type=parse_size, default=None)
    g.add_argument("--gemm-seconds", type=float, default=None)
    n = sub.add_parser("node", parents=[common], help="all GPUs of a node (or nodes) under torchrun")
    n.add_argument("--min-bytes", type=parse_size, default=8)
    n.add_argument("--max-bytes", type=parse_size, default=None,
                   help="default 4G on cuda (1G with --quick), 64M on cpu (1M with --quick)")
    n.add_argument("--p2p-bytes", type=parse_size, default=None,
                   help="default 256M cuda (64M quick), 4M cpu (1M quick)")
    n.add_argument("--iters", type=int, default=None, help="timed iterations for small messages (default 20)")
    s = sub.add_parser("soak", parents=[common], help="N minutes of GEMM (+ all-reduce under torchrun)")
    s.add_argument("--minutes", type=float, default=10.0)
    s.add_argument("--interval", type=float, default=None, help="seconds per interval (10; 1 with --quick)")
    s.add_argument("--soak-bytes", type=parse_size, default=None,
                   help="all-reduce size (256M cuda, 4M cpu, 1M cpu quick)")
    sub.add_parser("facts", parents=[common], help="versions and GPU identity (torch optional)")
    return p


def _check_args(args):
    problems = []
    for name in ("timeout", "minutes", "interval", "sample_interval", "gemm_seconds", "mem_fraction"):
        v = getattr(args, name, None)
        if v is not None and not math.isfinite(v):
            problems.append("--%s must be a finite number" % name.replace("_", "-"))
    if args.timeout <= 0:
        problems.append("--timeout must be > 0")
    if getattr(args, "mem_fraction", 0.5) is not None and not (0 < getattr(args, "mem_fraction", 0.5) <= 1):
        problems.append("--mem-fraction must be in (0, 1]")
    for name in ("steps", "iters", "gemm_size", "cpu_mem_mib", "interval", "gemm_seconds"):
        v = getattr(args, name, None)
        if v is not None and v <= 0:
            problems.append("--%s must be > 0" % name.replace("_", "-"))
    if getattr(args, "minutes", 0) < 0:
        problems.append("--minutes must be >= 0")
    return problems


def main(argv=None):
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
    except (ValueError, OSError):
        pass
    args = build_parser().parse_args(argv)
    problems = _check_args(args)
    if problems:
        emit_error("args", "exception", "bad arguments: " + "; ".join(problems), remedy=REMEDY["bad_args"])
        die(3)
    torch, terr = import_torch()
    rc = 0
    try:
        if args.cmd == "facts":
            rc = cmd_facts(args, torch, terr)
        elif torch is None:
            emit("start", test=args.cmd, args=vars(args), device=None, world_size=WORLD, local_rank=LOCAL_RANK,
                 versions=versions(None, None, None))
            emit_error(args.cmd, "torch_missing", "torch is not importable by %s (%s)" % (sys.executable, terr),
                       python=sys.executable)
            rc = 3
        elif args.cmd == "gpu":
            rc = cmd_gpu(args, torch)
        elif args.cmd == "node":
            rc = cmd_node(args, torch)
        elif args.cmd == "soak":
            rc = cmd_soak(args, torch)
    except KeyboardInterrupt:
        rc = 130
    except Exception as e:  # a bug or an unexpected failure outside a sub-test: still an error and an end
        emit_error(args.cmd, "oom" if torch is not None and is_oom(torch, e) else "exception",
                   "%s: %s" % (type(e).__name__, str(e)[:1500]))
        rc = 2
    emit_end(rc)
    sys.stdout.flush()
    if args.cmd in ("node", "soak") and WORLD > 1:
        os._exit(rc)  # skip interpreter teardown: a broken process group can hang it
    return rc


if __name__ == "__main__":
    sys.exit(main())
