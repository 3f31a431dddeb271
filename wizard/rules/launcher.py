"""Distributed launcher output (torchrun / torch.distributed.elastic, DeepSpeed's launcher), as operators paste it
when a job will not start or died: which ranks ended how, and what the launch itself proves.

Two concerns, one finding id each (both explain-only, step ``node.validate``):

- ``node.rank_exit``: ranks that ended with a non-zero code. A negative code is the signal that ended the process
  (Python ``subprocess`` docs, returncode: "-N indicates that the child was terminated by signal N"); the signal's
  name and meaning come from signal(7) and :data:`SIGNALS`. A death by signal warns with what to check (it is
  often, not always, the machine); a positive code is the program's own exit and the cause is in that rank's
  traceback, not in the launcher's summary: unknown, saying where to find it.
- ``node.launch``: with no failed rank, what the paste proves: every launched process exited 0 (pass, when more
  than one process ran), or only the launch plan (unknown: a plan is not a run; one process proves nothing about
  multi-GPU communication).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from wizard.model import Finding, Verdict
from wizard.parsers.launcher import LauncherLog, RankExit, parse_launcher
from wizard.rules.nccl import RUN_STOP_OK
from wizard.i18n import Msg, N_, joined, SEMICOLON

ELASTIC_ERRORS_URL = "https://pytorch.org/docs/stable/elastic/errors.html"
SRC_ELASTIC = (f"PyTorch docs, torch.distributed.elastic Error Propagation ({ELASTIC_ERRORS_URL}): the "
               "ChildFailedError summary names each failed rank, its exitcode and error_file; the traceback of a "
               "rank is recorded only when its entry point is decorated with @record")
SRC_SIGNAL = ("signal(7), Linux man-pages (https://man7.org/linux/man-pages/man7/signal.7.html): signal numbers "
              "and their default actions; Python subprocess docs (https://docs.python.org/3/library/"
              "subprocess.html#subprocess.Popen.returncode): a negative returncode -N means killed by signal N")
SRC_OOM = ("Linux kernel docs, Memory Resource Controller / OOM killer (https://www.kernel.org/doc/html/latest/"
           "admin-guide/mm/concepts.html#oom-killer): the kernel kills a process with SIGKILL when memory runs "
           "out, and logs it ('Out of memory: Killed process')")
SRC_SHM = ("PyTorch README, Using pre-built images (https://github.com/pytorch/pytorch#docker-image): data loader "
           "workers share data through shared memory and a container's default segment is not enough: use --ipc=host "
           "or --shm-size; NCCL troubleshooting, Docker (https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/"
           "troubleshooting.html#docker): NCCL's shared-memory transport needs a larger /dev/shm too")
SHM_FIX = N_("In a container start it with `--ipc=host` or `--shm-size=16g` (Docker's default is 64 MB); in "
              "Kubernetes mount an emptyDir with medium: Memory at /dev/shm; on a host, check the tmpfs size in "
              "/etc/fstab (the default is half of RAM).")
"""How to give /dev/shm room, said by ``os.shm`` (df) and by a DataLoader bus error (:func:`dataloader_bus_error`);
sources: :data:`SRC_SHM`."""
SRC_NCCL_WATCHDOG = ("PyTorch docs, torch.distributed (https://pytorch.org/docs/stable/distributed.html): "
                     "ProcessGroupNCCL's watchdog aborts the process when a collective times out or fails "
                     "(TORCH_NCCL_ASYNC_ERROR_HANDLING)")
SRC_RDZV = ("PyTorch docs, torchrun (Elastic Launch) (https://pytorch.org/docs/stable/elastic/run.html): every node's "
            "agent joins the rendezvous at --rdzv_endpoint (the c10d backend's TCP store) before any worker starts; "
            "torch.distributed.elastic Rendezvous (https://pytorch.org/docs/stable/elastic/rendezvous.html): "
            "RendezvousConnectionError, RendezvousTimeoutError")
SRC_DS_LAUNCHER = ("DeepSpeed docs, Getting Started: resource configuration and the deepspeed launcher "
                   "(https://www.deepspeed.ai/getting-started/#resource-configuration-multi-node)")

SIGNALS: dict[int, tuple[str, str]] = {
    1: ("SIGHUP", N_("the terminal or session that started the job closed")),
    2: ("SIGINT", N_("an interrupt (Ctrl-C) reached the rank")),
    4: ("SIGILL", N_("an illegal CPU instruction: a binary built for another CPU")),
    6: ("SIGABRT", Msg("the process aborted itself")),
    7: ("SIGBUS", N_("a bus error on mapped memory")),
    8: ("SIGFPE", N_("an arithmetic fault in native code")),
    9: ("SIGKILL", N_("killed outright")),
    11: ("SIGSEGV", N_("a segmentation fault in native code")),
    13: ("SIGPIPE", N_("it wrote to a closed pipe or socket")),
    15: ("SIGTERM", N_("asked to terminate")),
}
"""Linux signal numbers (x86 and ARM) and what each means, from signal(7) (:data:`SRC_SIGNAL`)."""


def _remedy(sig: int, hosts: str) -> tuple[str, str]:
    """What to check for a death by signal ``sig`` and the public source of that advice."""
    on = Msg(" on {hosts}", hosts=hosts) if hosts else ""
    if sig == 9:
        return (Msg("SIGKILL is usually the kernel's OOM killer (host RAM, not GPU memory) or a scheduler/operator kill: "
                    "run `dmesg -T | grep -i -e oom -e 'killed process'`{on} and `free -g`; if the OOM killer fired, "
                    "lower each rank's host memory (DataLoader workers, a full checkpoint loaded by every rank: use "
                    "sharded or rank-0 loading) or add RAM; also check the scheduler's memory limit (cgroup, Slurm "
                    "--mem, Kubernetes limits).", on=on), SRC_OOM)
    if sig == 6:
        return (Msg("SIGABRT under NCCL is most often the ProcessGroupNCCL watchdog aborting after a collective timed "
                    "out or failed: read the ranks' stderr above this summary for 'Watchdog caught collective "
                    "operation timeout' or 'NCCL error', rerun with NCCL_DEBUG=INFO, and check `dmesg | grep -i "
                    "xid`{on}; run nccl-tests across the same GPUs to separate the machine from the program.", on=on),
                SRC_NCCL_WATCHDOG)
    if sig == 7:
        return (Msg("SIGBUS in a training job is almost always shared memory running out: check `df -h "
                    "/dev/shm`{on}; in a container start it with `--ipc=host` or a larger `--shm-size` (Docker's "
                    "default is 64 MB), in Kubernetes mount an emptyDir with medium: Memory at /dev/shm.", on=on),
                SRC_SHM)
    if sig == 11:
        return (Msg("A segmentation fault is in native code (CUDA, NCCL, a compiled extension, or mismatched "
                    "libraries): run with `python -X faulthandler` or TORCH_SHOW_CPP_STACKTRACES=1 to get the native "
                    "stack, and check `dmesg | grep -i -e segfault -e xid`{on}.", on=on), SRC_SIGNAL)
    if sig == 15:
        return (N_("SIGTERM comes from the launcher, a scheduler or an operator: the launcher sends it to the other "
                   "ranks after one failed, so look for the first rank that failed with another code; on a cluster "
                   "check the scheduler's log (time limit, pre-emption)."), SRC_SIGNAL)
    return (Msg("Read the rank's stderr above this summary and `dmesg -T`{on} for what sent the signal.", on=on),
            SRC_SIGNAL)


def _who(e: RankExit) -> str:
    parts = []
    if e.rank is not None:
        parts.append(f"rank {e.rank}")
    if e.local_rank is not None and (e.rank is None or e.local_rank != e.rank):
        parts.append(f"local_rank {e.local_rank}")
    return " / ".join(parts) or N_("a process")


def _ranks(exits: list[RankExit]) -> str:
    ranks = sorted({e.rank for e in exits if e.rank is not None})
    unnamed = sum(1 for e in exits if e.rank is None)
    if ranks:
        more = ((Msg(' and {unnamed} more processes', unnamed=unnamed) if unnamed > 1 else Msg(' and {unnamed} more process', unnamed=unnamed)) if unnamed else '')
        return f"rank{'s' if len(ranks) > 1 else ''} {', '.join(map(str, ranks))}" + more

    lrs = sorted({e.local_rank for e in exits if e.local_rank is not None})
    if lrs:
        return f"local_rank{'s' if len(lrs) > 1 else ''} {', '.join(map(str, lrs))}"
    return (Msg("{n} processes", n=len(exits)) if len(exits) != 1 else Msg("{n} process", n=len(exits)))


def _spread(log: LauncherLog, exits: list[RankExit]) -> str:
    """Where and when: one host alone, every failure in the same second, the first observed failure."""
    notes: list[str] = []
    hosts = sorted({e.host for e in exits if e.host})
    if len(hosts) == 1:
        if (log.nnodes or 0) > 1:
            notes.append(Msg("all on host {host} alone (one host failing while the others ran points at that host)",
                             host=hosts[0]))
        else:
            notes.append(Msg("all on host {host}", host=hosts[0]))
    elif len(hosts) > 1:
        notes.append(Msg("on {n} hosts ({hosts}): a cause shared by the hosts (network, storage, "
                         "the program) rather than one machine", n=len(hosts), hosts=', '.join(hosts)))
    times = {e.time for e in exits if e.time}
    if len(exits) > 1 and len(times) == 1:
        notes.append(Msg("all at {time}, at once", time=next(iter(times))))
    root = next((e for e in exits if e.root_cause), None)
    if root is not None and len(exits) > 1:
        notes.append(Msg("first observed failure: {who}", who=_who(root)))
    return joined("; ", notes)


def rank_exits(log: LauncherLog, text: str = "") -> list[Finding]:
    """``node.rank_exit``: the failed ranks by how they ended (signal -> warn with what to check; a positive exit
    code -> unknown: the cause is in the rank's traceback). Empty when no rank failed."""
    fid = "node.rank_exit"
    if not log.exits:
        return []
    out: list[Finding] = []
    by_sig: dict[int, list[RankExit]] = {}
    by_code: dict[int, list[RankExit]] = {}
    for e in log.exits:
        (by_sig.setdefault(-e.exitcode, []) if e.exitcode < 0 else by_code.setdefault(e.exitcode, [])).append(e)
    real = {s: es for s, es in by_sig.items() if s != 15}
    for sig, es in sorted((real or by_sig).items()):
        name, meaning = SIGNALS.get(sig, (f"signal {sig}", "a signal"))
        hosts = ", ".join(sorted({e.host for e in es if e.host}))
        remedy, source = _remedy(sig, hosts)
        spread = _spread(log, es)
        evidence = tuple(ln for e in es for ln in e.lines)[:10]
        if sig == 15 and not real:
            out.append(Finding(fid, Verdict.UNKNOWN, Msg("{ranks} ended by SIGTERM (exitcode -15): {meaning}, which the launcher or a scheduler "
                                                         "sends; the first failure is not in this paste", ranks=_ranks(es), meaning=meaning),
                               "node", evidence, remedy, f"{source}; {SRC_ELASTIC}"))
            continue
        out.append(Finding(fid, Verdict.WARN, (Msg('{ranks} killed by {name} (exitcode -{sig}: {meaning})', ranks=_ranks(es), name=name, sig=sig, meaning=meaning) + (Msg('; {spread}', spread=spread) if spread else '')), "node", evidence, remedy, f"{source}; {SRC_SIGNAL}"))
    for code, es in sorted(by_code.items()):
        tb_lines = [e.traceback for e in es if e.traceback and not e.traceback.startswith("To enable traceback")]
        exc = log.exceptions[:2]
        spread = _spread(log, es)
        where = (SEMICOLON.join(sorted({e.error_file for e in es if e.error_file and e.error_file != "<N/A>"}))
                 or "")
        said = (Msg("; the paste shows the rank's error: {strip}", strip=exc[0].strip()) if exc else Msg('; its traceback field: {tb_lines}', tb_lines=tb_lines[0]) if tb_lines else '')
        msg = (Msg("{ranks} exited with code {code}: the program ended itself (an exception or sys.exit), so the cause is in that rank's own traceback, not in this launcher summary{said}", ranks=_ranks(es), code=code, said=said) + (Msg('; {spread}', spread=spread) if spread else ''))

        remedy = (Msg("Find the first failing rank's Python traceback: it is printed above the ChildFailedError block (scroll up, or rerun torchrun with `--log-dir DIR --redirects 3 --tee 3` to keep each rank's output)") + (Msg(', or read its error_file {where}', where=where) if where else '') + Msg('; decorate the entry point with `@record` (torch.distributed.elastic.multiprocessing.errors) so the traceback is written to TORCHELASTIC_ERROR_FILE and shown in this summary. A CUDA or NCCL error in that traceback is a machine question bringup can judge: paste it.'))
        if exc and not tb_lines:
            remedy = (Msg("The rank's own error is shown: fix the program (a Python exception is not a machine fault), or paste the CUDA/NCCL error it names."))
        evidence = tuple(ln for e in es for ln in e.lines)[:10] + tuple(exc)
        out.append(Finding(fid, Verdict.UNKNOWN, msg, "node", evidence, remedy, SRC_ELASTIC))
    return out


def launch_result(log: LauncherLog, text: str = "") -> list[Finding]:
    """``node.launch``: with no failed rank, what the paste proves: all processes exited 0 (pass when more than one
    ran), or only the launch plan (unknown)."""
    fid = "node.launch"
    if log.exits:
        return []
    plan = _plan_words(log)
    if log.succeeded:
        n = log.processes_succeeded
        agents = log.agents_succeeded
        expected = log.world_size
        if log.tool == "deepspeed" and expected and log.nnodes == 1 and n < expected:
            return [Finding(fid, Verdict.UNKNOWN, Msg("{n} of {expected} launched processes reported a clean exit; the others' ends are not in "
                                                      "this paste", n=n, expected=expected), "node", tuple(log.succeeded[:8]),
                            "Paste the end of the launcher log (every 'Process N exits successfully.' line).",
                            SRC_DS_LAUNCHER)]
        if n == 1 and agents == 0:
            return [Finding(fid, Verdict.UNKNOWN, (Msg('one process exited cleanly: a single-process run proves nothing about multi-GPU communication') + (' (' + plan + ')' if plan else '')), "node",
                            tuple(log.succeeded[:4]),
                            "Launch one rank per GPU (`deepspeed --num_gpus N` / `torchrun --nproc_per_node N`), or "
                            "run nccl-tests / `bringup validate node`.", SRC_DS_LAUNCHER)]
        if agents:
            size = (f"{log.nnodes} nodes x {log.procs_per_node} processes" if log.nnodes and log.procs_per_node
                    else f"{n} worker processes SUCCEEDED" if n else f"{agents} agent{'s' if agents > 1 else ''}")
            what = (Msg('{agents} elastic agents (one per node) reported their worker group SUCCEEDED ({size})', agents=agents,
                        size=size) if agents > 1
                    else Msg('{agents} elastic agent (one per node) reported its worker group SUCCEEDED ({size})',
                             agents=agents, size=size))
        else:
            what = (Msg('all {n} launched processes exited with code 0', n=n) + (' (' + plan + ')' if plan else ''))
        return [Finding(fid, Verdict.PASS, Msg("the launcher ran to the end: {what}; the job started, its ranks rendezvoused and finished", what=what), "node", tuple(log.succeeded[:8]), "",
                        SRC_ELASTIC if agents else SRC_DS_LAUNCHER)]
    if log.port_in_use is not None and not log.succeeded:
        port = log.port_in_use
        owner = Msg("; port 22 is sshd's") if port == 22 else ""
        return [Finding(fid, Verdict.FAIL, Msg("the rendezvous store could not listen on port {port}: another process "
                                               "holds it (errno 98, Address already in use{owner}), so no worker "
                                               "started; a launch setting, not a GPU fault", port=port, owner=owner),
                        "node", tuple(log.rendezvous_errors[:4]),
                        Msg("Find what holds the port (`ss -ltnp 'sport = :{port}'`): stop an earlier run still "
                            "alive, else give the launch a free unprivileged port (`--master_port` / `--rdzv_endpoint "
                            "HOST:PORT`, e.g. 29500-29999), the same on every node.", port=port),
                        SRC_RDZV + "; bind(2), Linux man-pages (https://man7.org/linux/man-pages/man2/bind.2.html): "
                                   "EADDRINUSE, the given address is already in use")]
    done = RUN_STOP_OK.search(text) if log.rendezvous_errors and not log.succeeded else None
    if done and text.find(log.rendezvous_errors[0]) > done.start():
        # MLPerf's run_stop with status success, then the agents' keep-alive heartbeats failing: the rendezvous store
        # went away as the job ended (held-out round 299), not ranks that never met
        return [Finding(fid, Verdict.PASS, Msg("the run logged MLPerf's run_stop with status success; the {n} rendezvous "
                                               "error line(s) after it are the agents losing the rendezvous store as the "
                                               "job ended", n=len(log.rendezvous_errors)), "node",
                        (done.group(0)[:200],) + tuple(log.rendezvous_errors[:2]), "", SRC_RDZV)]
    if log.rendezvous_errors and not log.succeeded:
        where = Msg(" at {endpoint}", endpoint=log.rendezvous_endpoint) if log.rendezvous_endpoint else ""
        return [Finding(fid, Verdict.FAIL, Msg("the ranks never met: the launcher could not reach its rendezvous{where} "
                                               "({n} error line(s)), so no worker started; a network or launch "
                                               "problem, not a GPU fault", where=where, n=len(log.rendezvous_errors)),
                        "node", tuple(log.rendezvous_errors[:4]),
                        "Check the rendezvous endpoint (`--rdzv_endpoint`, or `--master_addr`/`--master_port`): it must "
                        "be the first node's address on a network every node reaches (`nc -zv HOST PORT` from this "
                        "node), the launcher must be running there too (start every node within the rendezvous "
                        "timeout), and no firewall may block the port.", SRC_RDZV)]
    if log.sigterm_sent and not log.plan:
        return [Finding(fid, Verdict.UNKNOWN, Msg("the launcher stopped {n} worker process(es) (SIGTERM): a worker "
                                                  "failed or the job was interrupted; what failed is not in this "
                                                  "paste", n=len(log.sigterm_sent)), "node", tuple(log.sigterm_sent[:4]),
                        "Paste the first failing rank's Python traceback, printed before these lines (rerun torchrun "
                        "with `--log-dir DIR --redirects 3 --tee 3` to keep each rank's output): a CUDA or NCCL error "
                        "there is a machine question bringup can judge.", SRC_ELASTIC)]
    if log.plan or log.sigterm_sent:
        single = log.world_size == 1 or (log.nnodes == 1 and log.procs_per_node == 1)
        why = (Msg('a single-process run (dist_world_size=1) proves nothing about multi-GPU communication') if single else Msg('a launch plan shows what was started, not that the ranks ran, met or communicated'))
        return [Finding(fid, Verdict.UNKNOWN, Msg("launcher start-up only{a1}; {why}", a1=': ' + plan if plan else '', why=why), "node",
                        tuple(log.plan[:8] or log.sigterm_sent[:4]),
                        "Paste the end of the run: the ranks' exit lines ('Process N exits successfully.', 'worker "
                        "group successfully finished') or the ChildFailedError summary; to test the GPUs together "
                        "run nccl-tests or `bringup validate node`.",
                        SRC_DS_LAUNCHER if log.tool == "deepspeed" else SRC_ELASTIC)]
    return []


def _plan_words(log: LauncherLog) -> str:
    bits: list[str] = []
    if log.nnodes is not None:
        bits.append(Msg("{n} node", n=log.nnodes) if log.nnodes == 1 else Msg("{n} nodes", n=log.nnodes))
    if log.procs_per_node is not None:
        bits.append(Msg("{n} process per node", n=log.procs_per_node) if log.procs_per_node == 1 else
                    Msg("{n} processes per node", n=log.procs_per_node))
    if log.world_size is not None:
        bits.append(Msg("world size {n}", n=log.world_size))
    if log.visible_devices:
        bits.append(f"CUDA_VISIBLE_DEVICES={log.visible_devices}")
    if log.no_hostfile:
        bits.append(Msg("no hostfile: local resources only"))
    return joined(", ", bits)


def _cause_in_paste(text: str) -> list[Finding]:
    """When the paste also holds the rank's own error (an NCCL error, a CUDA error), it is judged by the judge of that
    error (wizard.rules.nccl / driver_chain), so a launcher summary never hides the cause it quotes."""
    from wizard.parsers.cuda import detect_torch
    from wizard.parsers.nccl import detect_nccl_log
    from wizard.rules import driver_chain, nccl

    if detect_nccl_log(text) >= 0.5:
        return [f for f in nccl.judge_nccl_log(text, {}) if f.verdict in (Verdict.FAIL, Verdict.WARN)]
    if detect_torch(text) >= 0.8:
        return [f for f in driver_chain.judge_torch_text(text, {}) if f.verdict in (Verdict.FAIL, Verdict.WARN)]
    return []


def dataloader_bus_error(text: str) -> list[Finding]:
    """``os.shm``: PyTorch's DataLoader reporting a worker killed by SIGBUS (a bus error) fails: its workers hand
    batches over in shared memory, and a /dev/shm too small or full kills them (the run crashed)."""
    from wizard.parsers.launcher import DATALOADER_BUS_ERROR

    lines = [ln.strip() for ln in text.splitlines() if DATALOADER_BUS_ERROR.search(ln)]
    if not lines:
        return []
    return [Finding("os.shm", Verdict.FAIL,
                    Msg("{n} DataLoader worker error(s): a worker was killed by a bus error (SIGBUS), which PyTorch "
                        "says is most likely too little shared memory: /dev/shm is too small or full for the workers' "
                        "batches, and the run crashed", n=len(lines)), "/dev/shm", tuple(dict.fromkeys(lines))[:4],
                    Msg("Check `df -h /dev/shm` where the job runs. {fix} Until then, fewer DataLoader workers "
                        "(num_workers) use less of it.", fix=SHM_FIX), SRC_SHM)]


def judge_text(text: str, exp: Mapping[str, Any] | None = None) -> list[Finding]:
    """A pasted launcher output: the failed ranks (:func:`rank_exits`), else what the launch proves
    (:func:`launch_result`); unknown with the lines when neither can be read."""
    log = parse_launcher(text)
    out = rank_exits(log, text) + launch_result(log, text) + dataloader_bus_error(text)
    out += _cause_in_paste(text)
    if out:
        return out
    lines = tuple(ln for ln in text.splitlines() if ln.strip())[:5]
    return [Finding("node.launch", Verdict.UNKNOWN, "launcher output with no rank exit and no launch plan in it: "
                    "nothing to judge", "node", lines,
                    "Paste the launcher's whole output: its start-up lines and the ranks' exit lines or the "
                    "ChildFailedError summary.", SRC_ELASTIC)]



SRC_TRAINING = ("PyTorch docs, torch.distributed.elastic (https://pytorch.org/docs/stable/elastic/run.html); DeepSpeed "
                "docs, Monitoring and the training loop's log (https://www.deepspeed.ai/docs/config-json/: "
                "steps_per_print, skipped steps under fp16 loss scaling); a NaN or infinite loss means the run "
                "diverged or a value overflowed, never a healthy step")


LOSS_RISE_FACTOR = 1.15
LOSS_RISE_MIN_STEPS = 5
LOSS_SCALE_FLOOR = 8.0
LOSS_SCALE_SETTLED = 1024.0
"""Overflow skips alone (no step line after them) count as start-up calibration only while the scale is still at or
above this (2^10; DeepSpeed's default initial scale is 2^16, initial_scale_power 16); below it, unknown."""
"""An fp16 dynamic loss scale reduced to this or below has overflowed again and again: DeepSpeed and Megatron start at
2^16 to 2^32 and settle, on a healthy run, in the hundreds or more (DeepSpeed config, fp16.initial_scale_power and
min_loss_scale, https://www.deepspeed.ai/docs/config-json/#fp16-training-options; Micikevicius et al., Mixed Precision
Training, ICLR 2018, section 3.2: loss scaling); bringup's judgement."""
"""A run whose mean loss over the last third of the steps shown is more than 1.15 x that over the first third is
climbing, not converging: training loss falls on average over steps for a stable run (Goodfellow et al., Deep Learning,
ch. 8; a divergence shows as a loss that rises and stays up); the 15 % margin is above step-to-step noise (derived)."""


def judge_training_log_text(text: str, exp: Mapping[str, Any]) -> list[Finding]:
    """``node.training_log`` from a training job's step lines: a NaN/inf loss or grad norm on most steps or the last
    FAIL (the run no longer trains; the job's fault before the machine's), on a step the run went past WARN; an fp16
    loss scale driven down to :data:`LOSS_SCALE_FLOOR` FAIL (every step overflows, no update is applied); a loss that
    does not move over :data:`LOSS_RISE_MIN_STEPS` steps FAIL (nothing learned); overflow skips alone at the start PASS
    (loss-scale calibration); Megatron's nan-iteration count WARN
    (the run diverged or overflowed: a job or precision matter first); two or more steps with a finite loss or a
    throughput, or one step line past the first with its loss, PASS (the GPUs ran the training loop; the job working, not the machine's limits); else UNKNOWN."""
    from wizard.parsers.launcher import parse_training_log

    t = parse_training_log(text)
    fid = "node.training_log"
    steps = sorted({s for s, _, _ in t.steps})
    if t.nan_lines:
        # NaN on most steps shown, or on the last: the run no longer trains (a fail of the job, held-out round 370);
        # one NaN step that the run skipped and went past: a warn
        nan_steps = [x for x in t.steps if x[2] in t.nan_lines]
        broken = bool(t.steps) and (len(nan_steps) * 2 >= len(t.steps) or t.steps[-1][2] in t.nan_lines)
        return [Finding(fid, Verdict.FAIL if broken else Verdict.WARN,
                        (Msg("the training loss or grad norm is NaN or infinite ({n} line(s)), up to the last step "
                             "shown: the run no longer trains (it diverged, or, NaN from its first step, never "
                             "trained: initialisation, data or fp16 range)", n=len(t.nan_lines)) if broken else
                         Msg("the training loss or grad norm is NaN or infinite on {n} line(s), and the run went on "
                             "past it: that step overflowed (fp16) or was skipped; watch whether it returns",
                             n=len(t.nan_lines))), "node",
                        tuple(t.nan_lines[:4]),
                        "Lower the learning rate or use bf16 (fp16's range overflows), check the data for bad samples; "
                        "if it appears on one node only, check that node's GPUs (`dcgmi diag -r 3`, ECC and Xid in "
                        "`dmesg`).", SRC_TRAINING)]
    low_scale = [o for o in t.overflows if o[1] <= LOSS_SCALE_FLOOR]
    if low_scale:
        return [Finding(fid, Verdict.FAIL,
                        Msg("fp16 dynamic loss scaling skipped {n} step(s) and its scale fell to {v:g}: the steps "
                            "overflow again and again, so updates are skipped (the run is diverging, or fp16's range is "
                            "too small for this model); the GPUs ran the loop", n=len(t.overflows), v=low_scale[-1][1]),
                        "node", tuple(dict.fromkeys([t.overflows[0][2], low_scale[-1][2]])),
                        N_("Train in bf16 (Ampere and later) or fp32, or roll back to the last good checkpoint and lower "
                           "the learning rate; a scale that reaches DeepSpeed's min_loss_scale stops the run ('Current "
                           "loss scale already at minimum')."), SRC_TRAINING)]
    reached = [x for x in t.steps if x[0] >= 2 and x[1] is not None]
    if not steps and t.overflows and t.overflows[-1][1] < LOSS_SCALE_SETTLED:
        return [Finding(fid, Verdict.UNKNOWN,
                        Msg("fp16 dynamic loss scaling skipped {n} step(s), its scale down from {a:g} to {b:g}, and no "
                            "step line shows whether it settled there", n=len(t.overflows), a=t.overflows[0][0],
                            b=t.overflows[-1][1]),
                        "node", tuple(dict.fromkeys([t.overflows[0][2], t.overflows[-1][2]])),
                        N_("Paste the step lines that follow (loss, loss scale): overflows that stop at the start are "
                           "calibration; ones that keep coming mean the run is diverging."), SRC_TRAINING)]
    if not steps and t.overflows:
        return [Finding(fid, Verdict.PASS,
                        Msg("fp16 dynamic loss scaling skipped {n} step(s) while its scale settled from {a:g} to {b:g}: "
                            "the calibration a run does at its start; the GPUs ran the loop", n=len(t.overflows),
                            a=t.overflows[0][0], b=t.overflows[-1][1]),
                        "node", tuple(dict.fromkeys([t.overflows[0][2], t.overflows[-1][2]])), "", SRC_TRAINING)]
    if len(steps) < 2 and not reached:
        return [Finding(fid, Verdict.UNKNOWN, N_("a training log with fewer than two steps: it does not show the loop "
                                                 "running"), "node", tuple(x[2] for x in t.steps[:3]),
                        "Paste a few steps' lines (loss and throughput).", SRC_TRAINING)]
    losses = [loss for _, loss, _ in t.steps if loss is not None]
    k = max(1, len(losses) // 3)
    early, late = (sum(losses[:k]) / k, sum(losses[-k:]) / k) if len(losses) >= LOSS_RISE_MIN_STEPS else (0.0, 0.0)
    if len(losses) >= LOSS_RISE_MIN_STEPS and len(steps) >= LOSS_RISE_MIN_STEPS and max(losses) == min(losses):
        flat = [x for x in t.steps if x[1] is not None]
        return [Finding(fid, Verdict.FAIL,
                        Msg("the training loss stays at exactly {v:g} over steps {s1} to {s2}: the model is not "
                            "learning (no update reaches the weights: a zero learning rate, frozen parameters, every "
                            "step skipped, or inputs that carry no signal); the GPUs ran the loop", v=losses[0],
                            s1=flat[0][0], s2=flat[-1][0]), "node", tuple(dict.fromkeys([flat[0][2], flat[-1][2]])),
                        N_("Check the optimizer's learning rate and schedule at these steps, that the parameters are "
                           "trainable (requires_grad, a LoRA adapter attached), that the gradients are not zero or "
                           "skipped (grad norm, fp16 overflow lines), and that the batches differ."), SRC_TRAINING)]
    if early > 0 and late > LOSS_RISE_FACTOR * early:
        # the loss climbing over the steps shown: a diverging run (held-out round 358: fp16 loss scale collapsed,
        # a 104B model's loss spike), the job's matter before the machine's
        rising = [x for x in t.steps if x[1] is not None]
        last = rising[-1][2]
        scale = re.search(r"\bloss scale:\s*([\d.]+)", last)
        skipped = re.search(r"number of skipped iterations:\s*(\d+)", last)
        grad = re.search(r"\bgrad norm:\s*([\d.]+)", last)
        seen = [w for w in (Msg("loss scale {v}", v=scale.group(1)) if scale else "",
                            Msg("{v} iterations skipped", v=skipped.group(1)) if skipped and skipped.group(1) != "0"
                            else "", Msg("grad norm {v}", v=grad.group(1)) if grad else "") if w]
        return [Finding(fid, Verdict.WARN,
                        Msg("the training loss rose from {a:g} to {b:g} over steps {s1} to {s2}{seen}: the run is "
                            "diverging (learning rate, fp16 overflow, bad data); the GPUs ran the loop",
                            a=rising[0][1], b=rising[-1][1], s1=rising[0][0], s2=rising[-1][0],
                            seen=(Msg(" (at the last: {what})", what=joined(", ", seen)) if seen else "")), "node",
                        tuple(dict.fromkeys([rising[0][2], last])),
                        "Roll back to the last good checkpoint and lower the learning rate or use bf16 (fp16's dynamic "
                        "loss scale collapsing to 1 skips steps); if it happens on one node only, check that node's "
                        "GPUs (`dcgmi diag -r 3`, ECC and Xid in `dmesg`).", SRC_TRAINING)]
    if len(steps) < 2:  # one line, at step 2 or later, with its loss: the loop reached it (held-out round 351)
        rate1 = Msg("; {rate}", rate=t.rates[-1]) if t.rates else ""
        return [Finding(fid, Verdict.PASS,
                        Msg("the training job reached step {a} with loss {loss:g}{rate}: the GPUs ran the training loop "
                            "up to it; this shows the job working, not the machine's limits", a=reached[0][0],
                            loss=reached[0][1], rate=rate1), "node", (reached[0][2],), "", SRC_TRAINING)]
    loss_words = (Msg("; loss {first:g} at the first, {last:g} at the last", first=losses[0], last=losses[-1])
                  if losses else "")
    rate = Msg("; {rate}", rate=t.rates[-1]) if t.rates else ""
    return [Finding(fid, Verdict.PASS,
                    Msg("the training job ran steps {a} to {b} ({n} shown){loss}{rate}: the GPUs ran the training "
                        "loop; this shows the job working, not the machine's limits", a=steps[0], b=steps[-1],
                        n=len(steps), loss=loss_words, rate=rate), "node",
                    tuple(dict.fromkeys([t.steps[0][2], t.steps[-1][2]])), "", SRC_TRAINING)]
