"""Multi-node validation: the launcher that runs bringup's validation script on every node of a hostfile
(read by :mod:`wizard.parsers.hostfile`).

``python -m wizard.multinode --hostfile FILE [--device cuda|cpu] [--pairwise] ...`` is what the
``multinode.*`` actions run, detached under :mod:`wizard.supervise` (so a dropped SSH session of the
operator does not stop it). It:

1. copies ``assets/scripts/bringup_validate.py`` to every node over SSH (:data:`COPY_COMMAND`, the file on
   stdin) into a per-run directory that ``mktemp -d`` makes there, ``/tmp/bringup-validate-<run id>-<node>.XXXXXXXXXX``
   (``--workdir``; the ssh user's, 0700, never one that already existed), removed at the end, a stopped run's too
   (``--keep`` keeps it); :func:`remote_plan` lists every command it runs on the nodes, and the multi-node actions show it before
   asking;
2. asks every node for its facts (the script's ``facts`` subcommand), concurrently (at most
   ``--max-parallel`` at once); ``--facts-only`` stops here (the consistency step);
3. starts ``<python> -m torch.distributed.run --nnodes=N --nproc_per_node=G --rdzv_backend=c10d
   --rdzv_endpoint=HEAD:PORT --rdzv_id=ID --rdzv_conf=is_host=..,join_timeout=.. bringup_validate.py node
   --device D`` on every node over SSH at once, with ``NCCL_DEBUG=INFO`` (``env K=V`` in the remote argv),
   each under a small remote watcher (:data:`WATCHER`) that stops torchrun when the SSH channel closes or the
   run's time is up. No ``--node_rank``: c10d ignores it (and torchrun warns). HEAD is the first usable
   node; its address is ``addr=`` from the hostfile, else the HostName ssh resolves (``ssh -G``);
4. with ``--pairwise`` (``--pairwise-only``: without the all-nodes job), runs every pair of nodes
   (Meta GCM's pairwise NCCL check), disjoint pairs at the same time (a round-robin schedule: N-1 rounds for N nodes);
5. runs nccl-tests' ``all_reduce_perf`` under ``mpirun`` when both are installed here and the device is
   cuda; inside a Slurm allocation (``SLURM_JOB_ID`` set and ``srun`` on PATH) uses ``sbcast`` for the
   copy and ``srun --label`` for facts and the job instead of SSH, and takes the allocation's nodes when no
   hostfile is given. (The tests run the SSH path on loopback sshd servers, and the srun path inside a real
   allocation of a two-node Slurm on one machine: tests/test_slurm.py.)

Every node's output line is re-printed as ``[<node name>] <line>`` so one log holds all nodes (the event
parser, :mod:`wizard.parsers.validate`, strips the prefix). The launcher's own events are ``BRINGUP``
lines without a prefix and with ``"source": "launcher"``:

* ``hosts``: the plan (nodes, launcher, device, run id);
* ``group``: ``state`` ``start``/``end`` of one torchrun job (``group`` ``all``, ``pair:a,b`` or
  ``nccl-tests``; ``nodes``; at the start ``endpoint``, ``nproc_per_node``, ``world_size``, ``left_out``;
  at the end ``rc`` per node, ``timed_out``, ``stopped``, ``duration_s``);
* ``error`` (``test`` ``multinode``): ``kind`` ``hostfile`` | ``launch`` | ``unreachable`` | ``copy_failed`` |
  ``python_missing`` | ``torch_missing`` | ``facts_failed`` | ``too_few_nodes`` | ``rendezvous`` | ``hang`` |
  ``node_failed`` | ``stopped`` | ``nccl_tests_missing``, with ``node``, ``message`` (ssh's own error for
  ``unreachable``), ``remedy``, and for job errors ``group`` and ``culprit``;
* ``progress`` (for the UI's live line) and a final ``end`` (``rc``, ``duration_s``).

A node that cannot be reached is named and the others go on: facts from the reachable ones, and the
all-reduce across the nodes that remain if at least 2 do. Exit status: 0 when the run got to the end
(judging is :mod:`wizard.rules.multinode`'s job, so the action "succeeds" and its judge speaks), 1 when no node
could take part (none reached, or none with its facts read: nothing ran anywhere), 3 for a bad hostfile or arguments, 143 when stopped (SIGTERM/SIGINT/SIGHUP: every remote torchrun is stopped first).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Sequence, TextIO

from wizard.i18n import Msg, N_, SEMICOLON, os_error
from wizard.hosts import DEFAULT_CONNECT_TIMEOUT_S, LocalHost, SSHHost, probe_env, ssh_error_text, ssh_failed
from wizard.parsers.hostfile import MAX_GPUS_PER_NODE, NodeSpec, parse_hostfile
from wizard.rules.multinode import REMEDY_TOO_FEW, REMEDY_UNREACHABLE, too_few_nodes_words
from wizard.common import CPU_NPROC, lazy_re

SCRIPT_NAME = "bringup_validate.py"
DEFAULT_PORT = 29400
"""torchrun's own default c10d rendezvous port (PyTorch torchrun docs, ``--rdzv-endpoint``)."""
DEFAULT_TIMEOUT_S = 1200.0
"""Whole-run limit of one torchrun job, seconds (judgement: a 2-node sweep to 4 GiB takes minutes)."""
DEFAULT_RDZV_TIMEOUT_S = 300.0
"""How long torchrun waits for every node to join the rendezvous (``join_timeout``), seconds; torchrun's
default is 600 (PyTorch elastic rendezvous docs); shorter so a node that never joins is named sooner."""
DEFAULT_FACTS_TIMEOUT_S = 120.0
"""Limit of one node's ``facts`` call, seconds (importing torch on a cold cache takes tens of seconds)."""
FAIL_GRACE_S = 10.0
"""After one node's torchrun fails, the others get this long (seconds) to fail on their own before they
are stopped (judgement: gloo/NCCL peers notice a dead peer within seconds; a rank waiting in the
rendezvous would otherwise wait ``join_timeout``)."""
KILL_GRACE_S = 10.0
"""A stopped node's torchrun gets this long after SIGTERM to stop its ranks before the remote watcher
SIGKILLs it and every descendant, seconds (judgement: torchrun itself waits 30 s, but a rank blocked in a
collective or a store wait does not run its signal handler, so waiting longer only delays the report)."""
STOP_MARGIN_S = 5.0
"""After the kill grace, time the watcher gets to report before the local ssh is killed, seconds."""
WATCHER_MARGIN_S = 60.0
"""The remote watcher's own deadline is the run timeout plus this margin (seconds): the launcher acts
first; the watcher is the backstop when the launcher itself is gone."""
MAX_PARALLEL = 16
"""Nodes copied to / asked for facts at once (bounded fan-out)."""

TORCH_MISSING_RE = lazy_re(r"No module named '?torch'?\b|ModuleNotFoundError: No module named 'torch")
RDZV_TIMEOUT_RE = lazy_re(r"RendezvousTimeoutError")
RDZV_CONNECT_RE = lazy_re(r"RendezvousConnectionError|The connection to the C10d store has failed|"
                             r"DistStoreError|TCPStore.*(timed out|Connection refused)")
PY_MISSING_RE = lazy_re(r"(No such file or directory|command not found|not found)")

REMEDY_TORCH = N_("Install PyTorch on {name} in the Python the hostfile names (python=... on its line; now {python}), "
                "the same version as on the other nodes, e.g. `{python} -m pip install torch==<version>`; or point "
                "python= at a virtual environment that has it.")
REMEDY_PYTHON = N_("Set python=/path/to/python (an interpreter with PyTorch) on {name}'s hostfile line, or install "
                 "python3 there; {python} was not found.")

WATCHER = r'''
import os, signal, subprocess, sys, threading, time
limit, grace = float(sys.argv[1]), float(sys.argv[2])
child = subprocess.Popen(sys.argv[3:], stdin=subprocess.DEVNULL, start_new_session=True)
lock = threading.Lock()
def tree():
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    out, todo = [], [child.pid]
    while todo:
        p = todo.pop()
        for k in kids.get(p, []):
            out.append(k)
            todo.append(k)
    return out
def stop(why):
    with lock:
        if child.poll() is not None:
            return
        sys.stderr.write("bringup-watch: %s: stopping torchrun (pid %d)\n" % (why, child.pid))
        sys.stderr.flush()
        seen = set(tree())
        try:
            os.killpg(child.pid, signal.SIGTERM)
        except OSError:
            pass
        end = time.time() + grace
        while time.time() < end:
            if child.poll() is not None:
                break
            seen.update(tree())
            time.sleep(0.1)
        for p in list(seen) + [child.pid]:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except OSError:
            pass
def eof():
    try:
        while os.read(0, 65536):
            pass
    except OSError:
        pass
    stop("the ssh session closed")
threading.Thread(target=eof, daemon=True).start()
try:
    rc = child.wait(timeout=limit if limit > 0 else None)
except subprocess.TimeoutExpired:
    stop("no end after %g s" % limit)
    child.wait()
    rc = 124
sys.exit(rc if rc >= 0 else 128 - rc)
'''
"""Runs on each node, in the node's Python (``python -c WATCHER LIMIT_S GRACE_S argv...``): starts the command
in its own session and stops it (SIGTERM, then SIGKILL of it and every descendant after GRACE_S) when its stdin reaches EOF (the ssh channel closed:
the launcher stopped it or died) or after the time limit (exit status 124)."""


# ---------------------------------------------------------------------------------------------- hostfile


class HostfileError(ValueError):
    """A hostfile that cannot be used. ``problems``: one ``"line N: what is wrong"`` per problem (all of
    them, not only the first); ``str()`` joins them."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = list(problems)
        self.message = Msg("{source}: ", source=source) + SEMICOLON.join(self.problems)
        """The same text as ``str()``, shown in the reader's language (:func:`wizard.i18n.tr`)."""
        super().__init__(str.__str__(self.message))


def read_hostfile(path: str | os.PathLike[str]) -> list[NodeSpec]:
    """Read and parse a hostfile (:func:`wizard.parsers.hostfile.parse_hostfile`): its nodes, in file order.
    Raises :class:`HostfileError` listing every problem (also for an unreadable file); never returns a partial
    list."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            text = fh.read(1 << 20)
    except OSError as exc:
        raise HostfileError(str(path), [Msg("cannot read it: {why}", why=os_error(exc))]) from None
    return hostfile_nodes(text, str(path))


def hostfile_nodes(text: str, source: str = "hostfile") -> list[NodeSpec]:
    """The nodes of hostfile ``text``; raises :class:`HostfileError` with every problem when it has any."""
    hf = parse_hostfile(text, source)
    if not hf.ok:
        raise HostfileError(source, list(hf.problems))
    return list(hf.nodes)


# ---------------------------------------------------------------------------------------------- argv builders


def torchrun_argv(python: str, script: str, nnodes: int, nproc: int | str, endpoint: str, rdzv_id: str,
                  device: str, is_host: bool, rdzv_timeout_s: float = DEFAULT_RDZV_TIMEOUT_S,
                  local_addr: str | None = None, script_args: Sequence[str] = ()) -> list[str]:
    """The argv of one node's torchrun (c10d rendezvous; PyTorch torchrun docs).

    ``is_host``: this node hosts the rendezvous store (``rdzv_conf is_host``; the head). ``local_addr``:
    ``--local-addr`` (PyTorch 2.2 and later), the address other nodes reach this node's ranks on.
    No ``--node_rank``: c10d assigns ranks by join order and torchrun prints a warning that it ignores it.
    """
    argv = [python, "-m", "torch.distributed.run", f"--nnodes={nnodes}", f"--nproc_per_node={nproc}",
            "--rdzv_backend=c10d", f"--rdzv_endpoint={endpoint}",
            f"--rdzv_id={rdzv_id}", f"--rdzv_conf=is_host={1 if is_host else 0},join_timeout={int(rdzv_timeout_s)}",
            "--max_restarts=0"]
    if local_addr:
        argv.append(f"--local-addr={local_addr}")
    return argv + [script, "node", "--device", device, *script_args]


def srun_argv(nodes: Sequence[str], python: str, script: str, nproc: int | str, endpoint: str, rdzv_id: str, device: str,
              env: dict[str, str], rdzv_timeout_s: float = DEFAULT_RDZV_TIMEOUT_S,
              script_args: Sequence[str] = ()) -> list[str]:
    """One ``srun`` that starts one torchrun per node inside the current Slurm allocation (``--label``
    prefixes each line with its task number = the node's index in ``nodes``; Slurm sbatch/srun docs)."""
    exports = ",".join(["ALL", *(f"{k}={v}" for k, v in env.items())])
    inner = [python, "-m", "torch.distributed.run", f"--nnodes={len(nodes)}", f"--nproc_per_node={nproc}",
             "--rdzv_backend=c10d", f"--rdzv_endpoint={endpoint}", f"--rdzv_id={rdzv_id}",
             f"--rdzv_conf=join_timeout={int(rdzv_timeout_s)}", "--max_restarts=0",
             script, "node", "--device", device, *script_args]
    return ["srun", f"--nodes={len(nodes)}", f"--ntasks={len(nodes)}", "--ntasks-per-node=1",
            f"--nodelist={','.join(nodes)}", "--label", "--kill-on-bad-exit=1", f"--export={exports}", *inner]


def sbcast_argv(src: str, dest: str) -> list[str]:
    """Copy the script to every node of the allocation (Slurm sbcast docs)."""
    return ["sbcast", "--force", src, dest]


def mpirun_allreduce_argv(nodes: Sequence[tuple[str, int]], env: dict[str, str], binary: str = "all_reduce_perf",
                          ssh_config: str | None = None, max_bytes: str = "16G") -> list[str]:
    """Open MPI ``mpirun`` of nccl-tests' all_reduce_perf, one rank per GPU (``-g 1``), checking results
    (``-c 1``), 8 B to ``max_bytes`` doubling (nccl-tests README). ``nodes``: (ssh
    target, GPUs) pairs."""
    hosts = ",".join(f"{t.rsplit('@', 1)[-1]}:{g}" for t, g in nodes)
    argv = ["mpirun", "--allow-run-as-root", "-np", str(sum(g for _, g in nodes)), "-H", hosts,
            "--bind-to", "none", "--map-by", "slot"]
    if ssh_config:
        argv += ["--mca", "plm_rsh_agent", f"ssh -F {ssh_config}"]
    for k, v in env.items():
        argv += ["-x", f"{k}={v}"]
    argv += ["-x", "LD_LIBRARY_PATH", "-x", "PATH"]
    return argv + [binary, "-b", "8", "-e", max_bytes, "-f", "2", "-g", "1", "-c", "1"]


def slurm_present(environ: dict[str, str] | None = None) -> bool:
    """Inside a Slurm allocation with ``srun`` on PATH."""
    env = os.environ if environ is None else environ
    return bool(env.get("SLURM_JOB_ID")) and shutil.which("srun") is not None


def slurm_nodes(environ: dict[str, str] | None = None) -> list[NodeSpec]:
    """The nodes of the current Slurm allocation (``scontrol show hostnames $SLURM_JOB_NODELIST``), each its
    own ssh/srun target; GPUs from ``SLURM_GPUS_ON_NODE`` when set. Raises :class:`HostfileError` when there is
    no allocation or scontrol cannot expand it."""
    env = os.environ if environ is None else environ
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or ""
    if not env.get("SLURM_JOB_ID") or not nodelist:
        raise HostfileError("Slurm allocation", ["no --hostfile and no Slurm allocation (SLURM_JOB_ID, "
                                                 "SLURM_JOB_NODELIST unset)"])
    import subprocess

    try:
        r = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HostfileError("Slurm allocation", [f"scontrol show hostnames {nodelist}: {exc}"]) from None
    hosts = [h.strip() for h in r.stdout.splitlines() if h.strip()]
    if r.returncode != 0 or not hosts:
        raise HostfileError("Slurm allocation", [f"scontrol show hostnames {nodelist} failed: "
                                                 f"{r.stderr.strip()[:200] or r.returncode}"])
    gpus_raw = env.get("SLURM_GPUS_ON_NODE", "")
    gpus = int(gpus_raw) if gpus_raw.isdigit() and 1 <= int(gpus_raw) <= MAX_GPUS_PER_NODE else None
    return [NodeSpec(h, h, gpus) for h in hosts]


def nccl_tests_present() -> tuple[bool, str]:
    """(``mpirun`` and ``all_reduce_perf`` both on PATH here, what is missing)."""
    missing = [b for b in ("mpirun", "all_reduce_perf") if shutil.which(b) is None]
    return (not missing, ", ".join(missing))


def round_robin(names: Sequence[str]) -> list[list[tuple[str, str]]]:
    """Every pair of ``names`` once, grouped into rounds of disjoint pairs (the circle method): N-1 rounds
    for even N, N for odd N. Each pair is (earlier in ``names``, later)."""
    items: list[str | None] = list(names)
    if len(items) < 2:
        return []
    if len(items) % 2:
        items.append(None)
    order = {n: i for i, n in enumerate(names)}
    n = len(items)
    rounds: list[list[tuple[str, str]]] = []
    for _ in range(n - 1):
        pairs = []
        for i in range(n // 2):
            a, b = items[i], items[n - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b) if order[a] < order[b] else (b, a))
        rounds.append(sorted(pairs, key=lambda p: (order[p[0]], order[p[1]])))
        items = [items[0], items[-1], *items[1:-1]]
    return rounds


def torch_version_at_least(version: Any, major: int, minor: int) -> bool:
    """``"2.13.0+cpu"`` >= (2, 2)? False for anything unreadable."""
    m = re.match(r"(\d+)\.(\d+)", str(version or ""))
    return m is not None and (int(m.group(1)), int(m.group(2))) >= (major, minor)


def default_script() -> Path:
    """The validation script shipped with bringup (``assets/scripts/bringup_validate.py``)."""
    import assets

    return Path(assets.__file__).resolve().parent / "scripts" / SCRIPT_NAME


# ---------------------------------------------------------------------------------------------- the launcher


class Out:
    """The launcher's output: node lines with their ``[name] `` prefix, and its own events."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stdout

    def line(self, prefix: str, text: str) -> None:
        self.stream.write(f"[{prefix}] {text}\n" if prefix else text + "\n")
        self.stream.flush()

    def event(self, event: str, /, **fields: Any) -> None:
        d = {"v": 1, "event": event, "t": round(time.time(), 3), "source": "launcher"}
        d.update(fields)
        self.stream.write("BRINGUP " + json.dumps(d, separators=(",", ":"), default=str) + "\n")
        self.stream.flush()

    def error(self, kind: str, node: str | None, message: str, remedy: str, /, **fields: Any) -> None:
        """An ``error`` event. ``message`` and ``remedy`` are stored as English text; where they are :class:`Msg`
        their template and arguments go beside them (``message_msg``/``remedy_msg``, :meth:`Msg.to_json`), so a
        screen in another language shows them translated (:func:`wizard.rules.multinode.said`)."""
        extra: dict[str, Any] = {"node": node} if node else {}
        for key, text in (("message", message), ("remedy", remedy)):
            if isinstance(text, Msg):
                extra[key + "_msg"] = text.to_json()
        self.event("error", test="multinode", kind=kind, message=str.__str__(message), remedy=str.__str__(remedy),
                   **extra, **fields)


@dataclass
class NodeState:
    """One node during a run."""

    spec: NodeSpec
    host: SSHHost
    python: str
    dir: str
    excluded: str = ""  # why it takes no part in the collectives ("" = it does)
    facts: dict[str, Any] | None = None
    addr: str = ""

    @property
    def name(self) -> str:
        return self.spec.name

    script_file: str = ""  # set when the script is not DIR/bringup_validate.py (srun: one sbcast file)

    @property
    def script(self) -> str:
        return self.script_file or f"{self.dir}/{SCRIPT_NAME}"


@dataclass
class NodeOutcome:
    rc: int | None = None
    timed_out: bool = False
    stopped: bool = False
    ended_at: float | None = None
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=40))
    started_ranks: int = 0
    torch_missing: bool = False
    rdzv_timeout: bool = False
    rdzv_connect: bool = False


@dataclass
class Options:
    device: str = "cuda"
    nproc_per_node: int | None = None
    python: str = "python3"
    ssh_config: str | None = None
    ssh_options: tuple[str, ...] = ()
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    port: int = DEFAULT_PORT
    timeout_s: float = DEFAULT_TIMEOUT_S
    rdzv_timeout_s: float = DEFAULT_RDZV_TIMEOUT_S
    facts_timeout_s: float = DEFAULT_FACTS_TIMEOUT_S
    fail_grace_s: float = FAIL_GRACE_S
    kill_grace_s: float = KILL_GRACE_S
    pairwise: bool = False
    all_nodes: bool = True
    max_parallel: int = MAX_PARALLEL
    launcher: str = "auto"  # auto | ssh | srun
    nccl_tests: str = "auto"  # auto | yes | no
    workdir: str = "/tmp"
    env: dict[str, str] = field(default_factory=dict)
    script: str = ""
    script_args: tuple[str, ...] = ()
    keep: bool = False
    facts_only: bool = False


COPY_COMMAND = ('umask 077 && d=$(mktemp -d "$1") && { cat > "$d/' + SCRIPT_NAME + '" || { rm -rf -- "$d"; exit 1; }; } '
                '&& echo "$d"')
"""The shell command that puts the validation script (on its stdin) on a node: ``mktemp -d`` makes a new
directory from the template in ``$1`` (the ssh user's, mode 0700, never one that existed: coreutils mktemp), the
script goes in it, and its path is printed. A directory made by someone else at a guessable name is never used."""


def workdir_template(workdir: str, run_id: str, node: str) -> str:
    """``mktemp -d``'s template for one node's per-run directory under ``workdir``: the run id and node name
    (for people reading ``ls``), then random characters ``mktemp`` fills in."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", node)[:40]
    return f"{workdir.rstrip('/') or ''}/bringup-validate-{run_id}-{safe}.XXXXXXXXXX"


def copy_argv(template: str) -> list[str]:
    """The node-side argv of the copy (the script on its stdin; prints the directory made)."""
    return ["sh", "-c", COPY_COMMAND, "sh", template]


def _home_relative(path: str) -> str:
    """``~/venv/bin/python`` -> ``venv/bin/python``: the remote shell gets every word quoted (no ``~``
    expansion), and ssh starts remote commands in the home directory, so the relative path is the same file."""
    if path == "~":
        return "."
    return path[2:] if path.startswith("~/") else path


def _watch_command(python: str, limit_s: float, grace_s: float, argv: list[str], env: dict[str, str],
                   watcher: str = WATCHER) -> str:
    inner = ["env", *(f"{k}={v}" for k, v in env.items()), *argv] if env else argv
    return shlex.join([python, "-c", watcher, f"{limit_s:g}", f"{grace_s:g}", *inner])


async def _pump(stream: asyncio.StreamReader | None, out: Out, prefix: str, outcome: NodeOutcome | None,
                collect: list[str] | None = None) -> None:
    """Copy ``stream`` line by line to ``out`` with ``prefix``; note what the lines say in ``outcome``."""
    if stream is None:
        return
    while True:
        try:
            raw = await stream.readline()
        except ValueError:  # a line longer than the reader's limit: take what is there
            raw = await stream.read(1 << 20)
        except (ConnectionResetError, OSError):
            break
        if not raw:
            break
        text = raw.decode("utf-8", "replace").rstrip("\r\n").replace("\r", "")
        out.line(prefix, text)
        if collect is not None:
            collect.append(text)
        if outcome is not None:
            outcome.tail.append(text)
            if text.startswith("BRINGUP ") and '"event":"start"' in text:
                outcome.started_ranks += 1
            if TORCH_MISSING_RE.search(text):
                outcome.torch_missing = True
            if RDZV_TIMEOUT_RE.search(text):
                outcome.rdzv_timeout = True
            if RDZV_CONNECT_RE.search(text):
                outcome.rdzv_connect = True


def _error_line(tail: Iterable[str]) -> str:
    """The most telling line of a failed node's last output (the last exception/error line)."""
    lines = [ln for ln in tail if ln.strip() and not ln.startswith("BRINGUP ")]
    for ln in reversed(lines):
        if re.search(r"(Error|Exception|error:|failed|Traceback)", ln) and not ln.lstrip().startswith("File "):
            return ln.strip()[:300]
    return lines[-1].strip()[:300] if lines else ""


class Launcher:
    """One multi-node validation run (see the module doc)."""

    def __init__(self, specs: list[NodeSpec], opts: Options, out: Out | None = None) -> None:
        self.opts = opts
        self.out = out or Out()
        self.run_id = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        self.procs: set[asyncio.subprocess.Process] = set()
        self.launcher = ("srun" if (opts.launcher == "srun" or (opts.launcher == "auto" and slurm_present()))
                         else "ssh")
        base = f"{opts.workdir.rstrip('/') or ''}/bringup-validate-{self.run_id}"
        # the directory is made by `mktemp -d` on the node when the script is copied (_copy): a fresh one, the ssh
        # user's, 0700; never one that was there before (another user's, or a link planted at a guessable name)
        self.nodes = [NodeState(s, SSHHost(s.target, s.name, opts.ssh_config, opts.ssh_options,
                                           opts.connect_timeout_s),
                                _home_relative(s.python or opts.python), "") for s in specs]
        if self.launcher == "srun":  # sbcast puts one file at the same path on every node: a name nobody can guess
            for n in self.nodes:
                n.dir, n.script_file = "", f"{base}-{secrets.token_hex(8)}.py"
        self.script_bytes = b""
        self._facts_done = 0
        self._facts_total = 0

    # -- phases

    async def run(self) -> int:
        t0 = time.monotonic()
        o = self.opts
        launcher = self.launcher
        self.out.event("hosts", run_id=self.run_id, launcher=launcher, device=o.device, pairwise=o.pairwise,
                       nodes=[{"name": n.name, "target": n.spec.target, "gpus": n.spec.gpus, "python": n.python,
                               "addr": n.spec.addr, "line": n.spec.line_no} for n in self.nodes])
        try:
            self.script_bytes = Path(o.script).read_bytes()
        except OSError as exc:
            self.out.error("launch", None, Msg("cannot read the validation script {script}: {why}", script=o.script,
                                               why=os_error(exc)),
                           Msg("Reinstall bringup (the script ships in assets/scripts/)."))
            self.out.event("end", rc=3, duration_s=round(time.monotonic() - t0, 3))
            return 3
        rc = 0
        try:
            if launcher == "srun":
                await self._srun_copy_and_facts()
            else:
                await self._copy_all()
                await self._facts_all()
            ready = [n for n in self.nodes if not n.excluded]
            left = [n for n in self.nodes if n.excluded]
            if not ready:
                rc = 1  # nothing could be read or run on any node: not "exit status 0" over no node (walk 27 #12)
            if o.facts_only:
                pass
            elif len(ready) < 2:
                names, why = [n.name for n in ready], [[n.name, n.excluded] for n in left]
                self.out.error("too_few_nodes", None, too_few_nodes_words(names, [(a, b) for a, b in why]),
                               Msg.plain(REMEDY_TOO_FEW), ready=names, left=why)  # the fields: said again translated
            else:
                await self._addresses(ready)
                if o.all_nodes:
                    await self._group("all", ready, o.port, left=left, launcher=launcher)
                if o.pairwise:
                    await self._pairwise(ready)
                await self._nccl_tests(ready)
        except asyncio.CancelledError:
            rc = 143
            self.out.line("", "# bringup: stopped (SIGTERM): remote runs were told to stop")
            await self._stop_all()
        except Exception as exc:  # noqa: BLE001 - a launcher bug: say so in the log, stop what runs
            rc = 1
            self.out.error("launch", None, Msg("the multi-node launcher failed: {exc}", exc=repr(exc)),
                           Msg("This is a bug in bringup: report it with this log."))
            await self._stop_all()
        finally:
            if not o.keep:  # stopped too: its remote runs were told to stop; no per-run directory is left behind
                await self._cleanup(launcher)
        self.out.event("end", rc=rc, duration_s=round(time.monotonic() - t0, 3))
        return rc

    async def _bounded(self, fn: Any, nodes: list[NodeState]) -> None:
        sem = asyncio.Semaphore(max(1, self.opts.max_parallel))

        async def one(n: NodeState) -> None:
            async with sem:
                await fn(n)

        await asyncio.gather(*(one(n) for n in nodes))

    async def _copy_all(self) -> None:
        self.out.event("progress", test="multinode", phase=f"copy the script to {len(self.nodes)} node(s)", done=0,
                       total=len(self.nodes))
        await self._bounded(self._copy, self.nodes)

    async def _copy(self, n: NodeState) -> None:
        template = workdir_template(self.opts.workdir, self.run_id, n.name)
        r = await n.host.run(copy_argv(template), timeout_s=max(30.0, self.opts.connect_timeout_s + 20),
                             stdin=self.script_bytes)
        made = r.text.strip().splitlines()[-1:] if r.ok else []
        if ssh_failed(r):
            n.excluded = "unreachable"
            self.out.error("unreachable", n.name, f"{n.name} ({n.spec.target}) unreachable: {r.error}",
                           Msg(REMEDY_UNREACHABLE, target=n.spec.target), target=n.spec.target, error=r.error)
        elif not r.ok or not made or not made[0].startswith(template.rstrip("X")):
            n.excluded = "copy failed"
            why = ((r.error or ssh_error_text(r.stderr) or Msg("exit status {rc}", rc=r.rc)) if not r.ok
                   else Msg("mktemp -d printed no directory under {workdir} ({printed})", workdir=self.opts.workdir,
                            printed=repr(r.text.strip()[-200:])))
            self.out.error("copy_failed", n.name, Msg("could not copy the validation script to {name}:{workdir}: {why}",
                                                      name=n.name, workdir=self.opts.workdir, why=why),
                           Msg("Check that {workdir} on {name} is writable and not full (df -h), or pass --workdir "
                               "with a writable directory.", workdir=self.opts.workdir, name=n.name))
        else:
            n.dir = made[0]

    async def _facts_all(self) -> None:
        todo = [n for n in self.nodes if not n.excluded]
        self._facts_total = len(todo)
        self.out.event("progress", test="multinode", phase=f"facts from {len(todo)} node(s)", done=0, total=len(todo))
        await self._bounded(self._facts, todo)

    async def _facts(self, n: NodeState) -> None:
        r = await n.host.run([n.python, n.script, "facts"], timeout_s=self.opts.facts_timeout_s)
        lines = r.text.splitlines() + r.stderr.decode("utf-8", "replace").splitlines()
        for ln in lines:
            self.out.line(n.name, ln.rstrip("\r"))
        if ssh_failed(r):
            n.excluded = "unreachable"
            self.out.error("unreachable", n.name, f"{n.name} ({n.spec.target}) unreachable: {r.error}",
                           Msg(REMEDY_UNREACHABLE, target=n.spec.target), target=n.spec.target, error=r.error)
            return
        self._classify_facts(n, r.text.splitlines(), lines, r.rc, r.error)
        self._facts_done += 1
        self.out.event("progress", test="multinode", phase=f"facts from {n.name}", done=self._facts_done,
                       total=self._facts_total)

    def _classify_facts(self, n: NodeState, stdout: list[str], lines: list[str], rc: int | None, error: str) -> None:
        """Keep a node's facts, or exclude it naming why (torch missing, Python missing, no facts)."""
        events = []
        for ln in stdout:
            if ln.startswith("BRINGUP "):
                try:
                    d = json.loads(ln[8:])
                except ValueError:
                    continue
                if isinstance(d, dict):
                    events.append(d)
        facts = [d for d in events if d.get("event") == "facts"]
        torch_err = [d for d in events if d.get("event") == "error" and d.get("kind") == "torch_missing"]
        torch_err += [d for d in facts if d.get("torch") is None and d.get("torch_error")]
        if torch_err or (not facts and any(TORCH_MISSING_RE.search(ln) for ln in lines)):
            n.excluded = "torch missing"
            if facts:
                n.facts = facts[-1]
            why = (torch_err[0].get("message") or torch_err[0].get("torch_error")) if torch_err else ""
            self.out.error("torch_missing", n.name, Msg("PyTorch is missing on {name} in {python}", name=n.name,
                                                        python=n.python) + (f": {why}" if why else ""),
                           Msg(REMEDY_TORCH, name=n.name, python=n.python))
        elif facts:
            n.facts = facts[-1]
        elif rc == 127 or (rc not in (0, None) and any(PY_MISSING_RE.search(ln) and n.python in ln for ln in lines)):
            n.excluded = "python missing"
            self.out.error("python_missing", n.name, Msg("{python} was not found on {name}: {why}", python=n.python,
                                                         name=n.name,
                                                         why=_error_line(lines) or Msg("exit status {rc}", rc=rc)),
                           Msg(REMEDY_PYTHON, name=n.name, python=n.python))
        else:
            n.excluded = "no facts"
            why = error or _error_line(lines) or Msg("exit status {rc} and no facts event", rc=rc)
            self.out.error("facts_failed", n.name, Msg("the validation script's facts failed on {name}: {why}",
                                                       name=n.name, why=why),
                           Msg("Run it by hand to see the whole error: {command}",
                               command=f"ssh {n.spec.target} {n.python} {n.script} facts"))

    # -- inside a Slurm allocation: sbcast for the copy, srun for facts and the job

    async def _srun_lines(self, argv: list[str], names: list[str], timeout_s: float
                          ) -> tuple[int | None, dict[str, list[str]]]:
        """Run one ``srun --label`` command; re-print its lines with the node prefixes (task i = names[i])."""
        per: dict[str, list[str]] = {n: [] for n in names}
        p = await self._spawn(argv)
        label = re.compile(r"^\s*(\d+): ?(.*)$")

        async def pump(stream: asyncio.StreamReader | None) -> None:
            if stream is None:
                return
            while True:
                raw = await stream.readline()
                if not raw:
                    return
                text = raw.decode("utf-8", "replace").rstrip("\r\n")
                m = label.match(text)
                if m and int(m.group(1)) < len(names):
                    name = names[int(m.group(1))]
                    self.out.line(name, m.group(2))
                    per[name].append(m.group(2))
                else:
                    self.out.line("srun", text)

        pumps = [asyncio.create_task(pump(p.stdout)), asyncio.create_task(pump(p.stderr))]
        try:
            rc: int | None = await asyncio.wait_for(p.wait(), timeout_s)
        except asyncio.TimeoutError:
            await self._stop(p)
            rc = 124
        await asyncio.gather(*pumps, return_exceptions=True)
        self.procs.discard(p)
        return rc, per

    async def _slurm_order(self) -> None:
        """Put the nodes in Slurm's task order (``scontrol show hostnames`` of the node list) so that srun's
        ``--label`` task numbers name the right node."""
        if shutil.which("scontrol") is None:
            return
        r = await LocalHost().run(["scontrol", "show", "hostnames", ",".join(n.spec.target for n in self.nodes)])
        order = [x.strip() for x in r.text.splitlines() if x.strip()] if r.ok else []
        if sorted(order) == sorted(n.spec.target for n in self.nodes):
            self.nodes.sort(key=lambda n: order.index(n.spec.target))

    async def _srun_copy_and_facts(self) -> None:
        o = self.opts
        await self._slurm_order()
        targets = [n.spec.target for n in self.nodes]
        names = [n.name for n in self.nodes]
        r = await LocalHost().run(sbcast_argv(o.script, self.nodes[0].script), timeout_s=120)
        if not r.ok:
            why = r.error or r.stderr.decode("utf-8", "replace").strip()[-300:] or Msg("exit status {rc}", rc=r.rc)
            for n in self.nodes:
                n.excluded = "copy failed"
            self.out.error("copy_failed", None, Msg("sbcast could not copy the validation script to the allocation's "
                                                    "nodes: {why}", why=why),
                           Msg("Check the Slurm allocation (squeue -j $SLURM_JOB_ID) and that {workdir} is writable on "
                               "the nodes, or pass --workdir.", workdir=o.workdir))
            return
        py = self.nodes[0].python
        argv = ["srun", f"--nodes={len(targets)}", f"--ntasks={len(targets)}", "--ntasks-per-node=1",
                f"--nodelist={','.join(targets)}", "--label", py, self.nodes[0].script, "facts"]
        rc, per = await self._srun_lines(argv, names, o.facts_timeout_s)
        for n in self.nodes:
            self._classify_facts(n, per[n.name], per[n.name], rc if not per[n.name] else 0, "")

    async def _addresses(self, ready: list[NodeState]) -> None:
        async def one(n: NodeState) -> None:
            n.addr = n.spec.addr or await n.host.hostname() or str((n.facts or {}).get("hostname") or "") \
                or n.spec.target.rsplit("@", 1)[-1]
        await asyncio.gather(*(one(n) for n in ready))

    def _nproc(self, n: NodeState) -> int:
        if self.opts.nproc_per_node:
            return self.opts.nproc_per_node
        if self.opts.device == "cpu":  # gloo ranks: the hostfile's GPU count at most CPU_NPROC (a GPU count is not a CPU's)
            return min(n.spec.gpus or 1, CPU_NPROC)
        if n.spec.gpus:
            return n.spec.gpus
        if self.opts.device == "cuda":
            c = (n.facts or {}).get("gpu_count")
            if isinstance(c, int) and not isinstance(c, bool) and c > 0:
                return c
        return 1

    async def _spawn(self, argv: list[str]) -> asyncio.subprocess.Process:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            env=probe_env(), start_new_session=True, limit=1 << 20)
        self.procs.add(proc)
        return proc

    async def _stop(self, proc: asyncio.subprocess.Process) -> None:
        """Close its stdin (the remote watcher stops torchrun), then kill the local ssh if it lingers."""
        if proc.returncode is not None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except (OSError, RuntimeError):
            pass
        try:
            await asyncio.wait_for(proc.wait(), self.opts.kill_grace_s + STOP_MARGIN_S)
        except asyncio.TimeoutError:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            await proc.wait()

    async def _stop_all(self) -> None:
        await asyncio.gather(*(self._stop(p) for p in list(self.procs)), return_exceptions=True)

    async def _group(self, group: str, members: list[NodeState], port: int, left: list[NodeState] | None = None,
                     launcher: str = "ssh", round_no: int | None = None) -> dict[str, NodeOutcome]:
        """Run one torchrun job across ``members`` (the first is the head) and report how each node ended."""
        o = self.opts
        head = members[0]
        endpoint = f"[{head.addr}]:{port}" if ":" in head.addr and not head.addr.startswith("[") else \
            f"{head.addr}:{port}"
        rdzv_id = f"bringup-{self.run_id}-{group.replace(':', '-').replace(',', '-')}"
        env = {"NCCL_DEBUG": "INFO", "PYTHONUNBUFFERED": "1", **({"OMP_NUM_THREADS": "1"} if o.device == "cpu" else {}),
               **o.env}
        nprocs = {n.name: self._nproc(n) for n in members}
        extra = {"round": round_no} if round_no is not None else {}
        self.out.event("group", group=group, state="start", nodes=[n.name for n in members], endpoint=endpoint,
                       nproc_per_node=nprocs, world_size=sum(nprocs.values()),
                       left_out=[{"node": n.name, "why": n.excluded} for n in (left or [])], **extra)
        t0 = time.monotonic()
        outcomes = {n.name: NodeOutcome() for n in members}
        procs: dict[str, asyncio.subprocess.Process] = {}
        pumps: list[asyncio.Task[None]] = []
        try:
            if launcher == "srun":
                return await self._srun_group(group, members, endpoint, rdzv_id, env, nprocs, extra)
            for i, n in enumerate(members):
                local = n.addr if torch_version_at_least((n.facts or {}).get("torch"), 2, 2) else None
                argv = torchrun_argv(n.python, n.script, len(members), nprocs[n.name], endpoint, rdzv_id,
                                     o.device, i == 0, o.rdzv_timeout_s, local, o.script_args)
                cmd = n.host.ssh_argv(_watch_command(n.python, o.timeout_s + WATCHER_MARGIN_S, o.kill_grace_s, argv,
                                                     env))
                try:
                    p = await self._spawn(cmd)
                except OSError as exc:  # no ssh client, out of processes: this node cannot start
                    outcomes[n.name].rc = 127 if isinstance(exc, FileNotFoundError) else 126
                    outcomes[n.name].tail.append(f"error: could not start {cmd[0]}: {exc.strerror or exc}")
                    continue
                procs[n.name] = p
                pumps.append(asyncio.create_task(_pump(p.stdout, self.out, n.name, outcomes[n.name])))
                pumps.append(asyncio.create_task(_pump(p.stderr, self.out, n.name, outcomes[n.name])))
            waits = {asyncio.create_task(p.wait()): name for name, p in procs.items()}
            deadline = t0 + o.timeout_s
            first_fail: tuple[str, float] | None = next(
                ((name, time.monotonic()) for name, oc in outcomes.items() if oc.rc is not None), None)
            pending = set(waits)
            while pending:
                now = time.monotonic()
                until = deadline - now
                if first_fail is not None:
                    until = min(until, first_fail[1] + o.fail_grace_s - now)
                done, pending = await asyncio.wait(pending, timeout=max(0.0, until),
                                                   return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    name = waits[t]
                    outcomes[name].rc = t.result()
                    outcomes[name].ended_at = time.monotonic() - t0
                    if outcomes[name].rc != 0 and first_fail is None:
                        first_fail = (name, time.monotonic())
                now = time.monotonic()
                if pending and now >= deadline:
                    for t in pending:
                        outcomes[waits[t]].timed_out = True
                    break
                if pending and first_fail is not None and now >= first_fail[1] + o.fail_grace_s:
                    for t in pending:
                        outcomes[waits[t]].stopped = True
                    break
            await asyncio.gather(*(self._stop(procs[waits[t]]) for t in pending), return_exceptions=True)
            await asyncio.gather(*pending, return_exceptions=True)
            for t in pending:
                outcomes[waits[t]].rc = procs[waits[t]].returncode
            await asyncio.gather(*pumps, return_exceptions=True)
        except asyncio.CancelledError:
            await asyncio.gather(*(self._stop(p) for p in procs.values()), return_exceptions=True)
            raise
        finally:
            for p in procs.values():
                self.procs.discard(p)
        self._report_group(group, members, outcomes, first_fail, o.timeout_s, endpoint)
        self.out.event("group", group=group, state="end", nodes=[n.name for n in members],
                       rc={k: v.rc for k, v in outcomes.items()},
                       timed_out=[k for k, v in outcomes.items() if v.timed_out],
                       stopped=[k for k, v in outcomes.items() if v.stopped],
                       duration_s=round(time.monotonic() - t0, 3), **extra)
        return outcomes

    def _report_group(self, group: str, members: list[NodeState], outcomes: dict[str, NodeOutcome],
                      first_fail: tuple[str, float] | None, timeout_s: float, endpoint: str) -> None:
        """Name the nodes that hung, failed or were stopped, with the telling line of their output."""
        by = {n.name: n for n in members}
        first = first_fail[0] if first_fail else None
        # a rendezvous timeout blames the nodes that never joined: those still running when it came
        rdzv_first = first is not None and outcomes[first].rdzv_timeout
        for name, oc in outcomes.items():
            n = by[name]
            if oc.timed_out:
                started = (Msg("{n} rank had started", n=oc.started_ranks) if oc.started_ranks == 1
                           else Msg("{n} ranks had started", n=oc.started_ranks) if oc.started_ranks
                           else Msg("no rank had started"))
                self.out.error("hang", name, Msg("{name}'s torchrun was still running after the {timeout_s:g} s run "
                                                 "timeout in group {group} ({started}); stopped", name=name,
                                                 timeout_s=timeout_s, group=group, started=started),
                               Msg("Look at this node's last lines in the log (the rank that stopped printing is the "
                                   "one that hangs); check its health (Xid/ECC, network link, stray processes) and "
                                   "that every node reaches the rendezvous address; rerun with --pairwise to isolate "
                                   "it."), group=group, started_ranks=oc.started_ranks)
            elif oc.stopped:
                if rdzv_first:
                    self.out.error("hang", name, Msg("{name} never completed the rendezvous in group {group}: {first} "
                                                     "gave up waiting (RendezvousTimeoutError) while {name} was still "
                                                     "running; stopped", name=name, group=group, first=first),
                                   Msg("Check that this node's torchrun starts (its lines in the log), that its clock "
                                       "and Python/torch match the others, and that it reaches the rendezvous address "
                                       "and port; rerun with --pairwise."), group=group, culprit=True)
                else:
                    self.out.error("stopped", name, Msg("{name} was stopped {grace_s:g} s after {first} failed in group "
                                                        "{group}", name=name, grace_s=self.opts.fail_grace_s,
                                                        first=first, group=group),
                                   Msg("Fix {first} first (its error is above).", first=first),
                                   group=group, culprit=False, after=first)
            elif oc.rc not in (0, None):
                line = _error_line(oc.tail)
                if oc.torch_missing:
                    self.out.error("torch_missing", name, Msg("PyTorch is missing on {name} in {python} ({line})",
                                                              name=name, python=n.python, line=line),
                                   Msg(REMEDY_TORCH, name=name, python=n.python), group=group)
                elif oc.rdzv_timeout and not oc.started_ranks:
                    others = [k for k, v in outcomes.items() if k != name and (v.stopped or v.timed_out)]
                    self.out.error("rendezvous", name, Msg("{name}'s torchrun gave up waiting for the other nodes "
                                                           "(RendezvousTimeoutError after {rdzv_s:g} s) in group {group}",
                                                           name=name, rdzv_s=self.opts.rdzv_timeout_s, group=group)
                                   + (Msg("; still not joined: {others}", others=", ".join(others)) if others else ""),
                                   Msg("The nodes named as not joined are the cause: check that their torchrun starts "
                                       "and reaches the rendezvous endpoint."), group=group, culprit=False)
                elif oc.rdzv_connect and not oc.started_ranks:
                    self.out.error("rendezvous", name, Msg("{name} could not reach the rendezvous store at {endpoint} in "
                                                           "group {group}: {line}", name=name, endpoint=endpoint,
                                                           group=group, line=line),
                                   Msg("Make the head's address reachable from {name} (addr= on the head's hostfile "
                                       "line; firewall open for the rendezvous port, --port).", name=name),
                                   group=group, culprit=True)
                else:
                    self.out.error("node_failed", name, Msg("{name}'s torchrun failed in group {group} (exit status "
                                                            "{rc}): {line}", name=name, group=group, rc=oc.rc,
                                                            line=line or Msg("no error line")),
                                   Msg("Read this node's lines above the error in the log: the first exception names "
                                       "the cause (a rank's collective timeout names its peer)."), group=group,
                                   culprit=name == first, rc=oc.rc)

    async def _srun_group(self, group: str, members: list[NodeState], endpoint: str, rdzv_id: str,
                          env: dict[str, str], nprocs: dict[str, int], extra: dict[str, Any]) -> dict[str, NodeOutcome]:
        """One srun for the whole group; ``--label`` task numbers map back to node names."""
        o = self.opts
        t0 = time.monotonic()
        names = [n.name for n in members]
        argv = srun_argv([n.spec.target for n in members], members[0].python, members[0].script,
                         max(nprocs.values()), endpoint, rdzv_id, o.device, env, o.rdzv_timeout_s, o.script_args)
        rc, per = await self._srun_lines(argv, names, o.timeout_s)
        outcomes = {n: NodeOutcome(rc=rc, timed_out=rc == 124) for n in names}
        for name, lines in per.items():
            outcomes[name].tail.extend(lines[-40:])
        if rc == 124:
            self.out.error("hang", None, Msg("srun of group {group} was still running after the {timeout_s:g} s run "
                                             "timeout; stopped", group=group, timeout_s=o.timeout_s),
                           Msg("Read each node's last lines in the log; rerun with --pairwise."), group=group)
        elif rc not in (0, None):
            self.out.error("node_failed", None, Msg("srun of group {group} failed (exit status {rc}): {line}",
                                                    group=group, rc=rc,
                                                    line=_error_line(ln for ls in per.values() for ln in ls)
                                                    or Msg("no error line")),
                           Msg("Read the nodes' lines above: the first exception names the cause."), group=group, rc=rc)
        self.out.event("group", group=group, state="end", nodes=names, rc={k: rc for k in names},
                       timed_out=[k for k, v in outcomes.items() if v.timed_out], stopped=[],
                       duration_s=round(time.monotonic() - t0, 3), **extra)
        return outcomes

    async def _pairwise(self, ready: list[NodeState]) -> None:
        by = {n.name: n for n in ready}
        rounds = round_robin([n.name for n in ready])
        total = sum(len(r) for r in rounds)
        done = 0
        for k, pairs in enumerate(rounds):
            self.out.event("progress", test="multinode", phase=f"pairwise round {k + 1}/{len(rounds)}", done=done,
                           total=total)
            await asyncio.gather(*(self._group(f"pair:{a},{b}", [by[a], by[b]], self.opts.port + i,
                                               launcher=self.launcher, round_no=k)
                                   for i, (a, b) in enumerate(pairs)))
            done += len(pairs)

    async def _nccl_tests(self, ready: list[NodeState]) -> None:
        o = self.opts
        if o.nccl_tests == "no":
            return
        if o.device != "cuda":
            if o.nccl_tests == "yes":
                self.out.error("nccl_tests_missing", None, Msg("nccl-tests need GPUs: not run with --device cpu"),
                               Msg("Run with --device cuda on GPU nodes."))
            return
        ok, missing = nccl_tests_present()
        if not ok:
            if o.nccl_tests == "yes":
                self.out.error("nccl_tests_missing", None, Msg("{missing} not found on this machine: nccl-tests' "
                                                               "all_reduce_perf under mpirun was not run",
                                                               missing=missing),
                               Msg("Build nccl-tests with MPI=1 (github.com/NVIDIA/nccl-tests) and put all_reduce_perf "
                                   "and mpirun on PATH on every node."))
            return
        argv = mpirun_allreduce_argv([(n.spec.target, self._nproc(n)) for n in ready], {"NCCL_DEBUG": "INFO", **o.env},
                                     ssh_config=o.ssh_config)
        self.out.event("group", group="nccl-tests", state="start", nodes=[n.name for n in ready], argv=argv)
        t0 = time.monotonic()
        p = await self._spawn(argv)
        pumps = [asyncio.create_task(_pump(p.stdout, self.out, "nccl-tests", None)),
                 asyncio.create_task(_pump(p.stderr, self.out, "nccl-tests", None))]
        try:
            rc = await asyncio.wait_for(p.wait(), o.timeout_s)
        except asyncio.TimeoutError:
            await self._stop(p)
            rc = 124
        await asyncio.gather(*pumps, return_exceptions=True)
        self.procs.discard(p)
        self.out.event("group", group="nccl-tests", state="end", nodes=[n.name for n in ready], rc={"mpirun": rc},
                       timed_out=["mpirun"] if rc == 124 else [], stopped=[], duration_s=round(time.monotonic() - t0, 3))

    async def _cleanup(self, launcher: str = "ssh") -> None:
        todo = [n for n in self.nodes if n.excluded not in ("unreachable", "copy failed")]
        if not todo:
            return
        if launcher == "srun":
            await self._srun_lines(["srun", f"--nodes={len(todo)}", f"--ntasks={len(todo)}", "--ntasks-per-node=1",
                                    f"--nodelist={','.join(n.spec.target for n in todo)}", "--label", "rm", "-f",
                                    "--", todo[0].script], [n.name for n in todo], 60)
            return

        async def one(n: NodeState) -> None:
            if "/bringup-validate-" in n.dir:  # only the per-run directory this launcher made
                await n.host.run(["rm", "-rf", "--", n.dir], timeout_s=30)

        await self._bounded(one, todo)


def remote_plan(specs: Sequence[NodeSpec], opts: Options) -> list[str]:
    """What the launcher will run on the nodes, one line per command, built by the same functions the run uses
    (the multi-node actions' confirmation shows these under the launcher's own command line). Values known only
    once the run starts are named in capitals: ``DIR`` (the directory ``mktemp -d`` makes on the node), ``RUN``
    (the run id), ``HEAD`` (the first usable node's address), ``GPUS`` (a node's GPU count from its facts, where
    the hostfile gives none), ``$WATCHER`` (:data:`WATCHER`: it stops torchrun when the ssh session closes or
    the time is up)."""
    c_env = {"LC_ALL": "C", "LANG": "C"}
    env = {"NCCL_DEBUG": "INFO", "PYTHONUNBUFFERED": "1", **({"OMP_NUM_THREADS": "1"} if opts.device == "cpu" else {}),
           **opts.env}
    job = not opts.facts_only and len(specs) >= 2
    endpoint, rdzv = f"HEAD:{opts.port}", "bringup-RUN-all"

    def nproc(s: NodeSpec) -> int | str:
        if opts.device == "cpu":
            return opts.nproc_per_node or min(s.gpus or 1, CPU_NPROC)
        return opts.nproc_per_node or s.gpus or "GPUS"

    counts = [nproc(s) for s in specs]
    tail: list[str] = []
    if job and opts.device == "cuda" and opts.nccl_tests != "no":
        mpirun = mpirun_allreduce_argv([(s.target, c if isinstance(c, int) else 1) for s, c in zip(specs, counts)],
                                       {"NCCL_DEBUG": "INFO", **opts.env}, ssh_config=opts.ssh_config)
        if not all(isinstance(c, int) for c in counts):
            mpirun[mpirun.index("-np") + 1] = "TOTAL"
            mpirun[mpirun.index("-H") + 1] = ",".join(f"{s.target.rsplit('@', 1)[-1]}:{c}" for s, c in zip(specs, counts))
        tail = [Msg("then, where mpirun and all_reduce_perf are on PATH here (nccl-tests):"), "  $ " + shlex.join(mpirun)]
    out: list[str] = []
    if opts.launcher == "srun" or (opts.launcher == "auto" and slurm_present()):
        script = f"{opts.workdir.rstrip('/') or ''}/bringup-validate-RUN-RANDOM.py"
        py = _home_relative(specs[0].python or opts.python) if specs else opts.python
        every = ["srun", f"--nodes={len(specs)}", f"--ntasks={len(specs)}", "--ntasks-per-node=1",
                 f"--nodelist={','.join(s.target for s in specs)}", "--label"]
        out.append(Msg("in this Slurm allocation, with sbcast and srun (no ssh):"))
        out.append("  $ " + shlex.join(sbcast_argv(opts.script, script)))
        out.append("  $ " + shlex.join([*every, py, script, "facts"]))
        if job and opts.all_nodes:
            most: int | str = max(c for c in counts if isinstance(c, int)) if all(
                isinstance(c, int) for c in counts) else "GPUS"
            out.append("  $ " + shlex.join(srun_argv([s.target for s in specs], py, script, most, endpoint, rdzv,
                                                     opts.device, env, opts.rdzv_timeout_s, opts.script_args)))
        if job and opts.pairwise:
            out.append("  " + Msg("then every pair of nodes: the same srun over the pair (rendezvous port {port} + the "
                                  "pair's place in its round)", port=opts.port))
        out.append("  $ " + shlex.join([*every, "rm", "-f", "--", script]))
        return out + tail
    for i, s in enumerate(specs):
        host = SSHHost(s.target, s.name, opts.ssh_config, opts.ssh_options, opts.connect_timeout_s)
        py, script = _home_relative(s.python or opts.python), f"DIR/{SCRIPT_NAME}"
        ssh = shlex.join(host.ssh_argv("")[:-1])
        out.append(Msg("on {node}, over ssh ({target}):", node=s.name, target=s.target))
        out.append(f"  $ {ssh} {host.remote_command(copy_argv(workdir_template(opts.workdir, 'RUN', s.name)), c_env)}"
                   f" < {opts.script}")
        out.append(f"  $ {ssh} {host.remote_command([py, script, 'facts'], c_env)}")
        if job and opts.all_nodes:
            argv = torchrun_argv(py, script, len(specs), counts[i], endpoint, rdzv, opts.device, i == 0,
                                 opts.rdzv_timeout_s, None, opts.script_args)
            out.append(f"  $ {ssh} " + _watch_command(py, opts.timeout_s + WATCHER_MARGIN_S, opts.kill_grace_s, argv,
                                                      env, watcher="$WATCHER"))
        out.append(f"  $ {ssh} {host.remote_command(['rm', '-rf', '--', 'DIR'], c_env)}")
    if job and opts.all_nodes:
        out.append("  " + Msg("(torchrun gets --local-addr=ADDR, the node's address, where the node's torch is 2.2 or "
                              "later)"))
    if job and opts.pairwise:
        out.append(Msg("then every pair of nodes: the same torchrun with --nnodes=2, the pair's first node as HEAD "
                       "(rendezvous port {port} + the pair's place in its round)", port=opts.port))
    return out + tail


# ---------------------------------------------------------------------------------------------- entry point


def run_cancelled_by_signals(main: "Callable[[], Awaitable[int]]") -> int:
    """``asyncio.run(main())`` with SIGTERM, SIGINT and SIGHUP cancelling its task (so its ``finally`` clauses stop
    what it started on the nodes). Raises what ``asyncio.run`` raises (``CancelledError`` after such a signal when
    ``main`` does not handle it, ``KeyboardInterrupt``)."""

    async def go() -> int:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            try:
                loop.add_signal_handler(s, task.cancel if task else (lambda: None))
            except (NotImplementedError, RuntimeError):  # pragma: no cover - not on the main thread
                pass
        return await main()

    return asyncio.run(go())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m wizard.multinode",
                                description="Run bringup's validation script across several nodes (torchrun over "
                                            "ssh, srun in a Slurm allocation, nccl-tests under mpirun).")
    p.add_argument("--hostfile", help="name ssh_target gpus [python=... addr=...] per line, or 'host slots=N' "
                                      "(default inside a Slurm allocation: its nodes)")
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cuda (NCCL) or cpu (gloo)")
    p.add_argument("--nproc-per-node", type=int, help="processes per node (default: the hostfile's GPU count)")
    p.add_argument("--python", default="python3", help="the nodes' Python with torch when the hostfile has no "
                                                       "python= (default python3)")
    p.add_argument("--ssh-config", help="ssh client config file (-F)")
    p.add_argument("--ssh-option", action="append", default=[], metavar="OPT", help="extra ssh -o option")
    p.add_argument("--connect-timeout", type=float, default=DEFAULT_CONNECT_TIMEOUT_S, help="ssh ConnectTimeout, s")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help="rendezvous port on the head node")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="limit of one torchrun job, s")
    p.add_argument("--rdzv-timeout", type=float, default=DEFAULT_RDZV_TIMEOUT_S, help="rendezvous join timeout, s")
    p.add_argument("--facts-timeout", type=float, default=DEFAULT_FACTS_TIMEOUT_S, help="limit of one facts call, s")
    p.add_argument("--fail-grace", type=float, default=FAIL_GRACE_S,
                   help="after one node fails, seconds before the others are stopped")
    p.add_argument("--kill-grace", type=float, default=KILL_GRACE_S,
                   help="seconds a stopped torchrun gets after SIGTERM before SIGKILL")
    p.add_argument("--pairwise", action="store_true", help="also run every pair of nodes (isolate a bad node)")
    p.add_argument("--pairwise-only", action="store_true", help="run the pairs only, not all nodes together")
    p.add_argument("--max-parallel", type=int, default=MAX_PARALLEL, help="nodes copied/asked for facts at once")
    p.add_argument("--launcher", choices=("auto", "ssh", "srun"), default="auto",
                   help="auto: srun inside a Slurm allocation, else ssh")
    p.add_argument("--nccl-tests", choices=("auto", "yes", "no"), default="auto",
                   help="run all_reduce_perf under mpirun (auto: when both are installed and --device cuda)")
    p.add_argument("--workdir", default="/tmp", help="where each node gets its per-run directory")
    p.add_argument("--env", action="append", default=[], metavar="K=V", help="environment for every rank")
    p.add_argument("--script", default="", help="the validation script (default: bringup's own)")
    p.add_argument("--keep", action="store_true", help="keep the per-run directories on the nodes")
    p.add_argument("--facts-only", action="store_true", help="copy the script and collect facts; no torchrun")
    p.add_argument("script_args", nargs=argparse.REMAINDER,
                   help="after --: arguments for the script's node subcommand")
    return p


def options_from_args(args: argparse.Namespace) -> Options:
    """argparse values -> :class:`Options`. Raises ``ValueError`` for a bad ``--env`` item or counts."""
    env: dict[str, str] = {}
    for item in args.env:
        k, sep, v = item.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
            raise ValueError(f"--env takes NAME=value, got {item!r}")
        env[k] = v
    if args.nproc_per_node is not None and not 1 <= args.nproc_per_node <= MAX_GPUS_PER_NODE:
        raise ValueError(f"--nproc-per-node must be from 1 to {MAX_GPUS_PER_NODE}")
    if not 1 <= args.port <= 65535 - 64:
        raise ValueError("--port must be from 1 to 65471")
    for name in ("timeout", "rdzv_timeout", "facts_timeout", "connect_timeout"):
        if not getattr(args, name) > 0:
            raise ValueError(f"--{name.replace('_', '-')} must be more than 0 seconds")
    rest = list(args.script_args)
    if rest[:1] == ["--"]:
        rest = rest[1:]
    return Options(device=args.device, nproc_per_node=args.nproc_per_node, python=args.python,
                   ssh_config=args.ssh_config, ssh_options=tuple(args.ssh_option),
                   connect_timeout_s=args.connect_timeout, port=args.port, timeout_s=args.timeout,
                   rdzv_timeout_s=args.rdzv_timeout, facts_timeout_s=args.facts_timeout,
                   fail_grace_s=max(0.0, args.fail_grace),
                   kill_grace_s=max(0.0, args.kill_grace), pairwise=args.pairwise or args.pairwise_only,
                   all_nodes=not args.pairwise_only, max_parallel=max(1, args.max_parallel),
                   launcher=args.launcher, nccl_tests=args.nccl_tests, workdir=args.workdir, env=env,
                   script=args.script or str(default_script()), script_args=tuple(rest), keep=args.keep,
                   facts_only=args.facts_only)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = Out()
    try:
        opts = options_from_args(args)
        specs = read_hostfile(args.hostfile) if args.hostfile else slurm_nodes()
    except HostfileError as exc:
        where = "" if exc.source == "Slurm allocation" else Msg("hostfile {source}: ", source=exc.source)
        out.error("hostfile", None, where + SEMICOLON.join(exc.problems),
                  Msg("Fix the lines named (format: 'name ssh_target gpus [python=/path addr=IP]' or 'host slots=N'; "
                      "# starts a comment), then rerun."), problems=exc.problems)
        sys.stderr.write(f"bringup multinode: {exc}\n")
        return 3
    except ValueError as exc:
        out.error("launch", None, str(exc), "Fix the option and rerun.")
        sys.stderr.write(f"bringup multinode: {exc}\n")
        return 3
    launcher = Launcher(specs, opts, out)
    try:
        return run_cancelled_by_signals(launcher.run)
    except KeyboardInterrupt:  # pragma: no cover
        return 130


if __name__ == "__main__":
    sys.exit(main())
