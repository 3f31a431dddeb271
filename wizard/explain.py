"""``bringup explain``: detect what each input is, parse it, judge it, print findings.

For support staff and operators who only have a paste: the input may include the command line
it came from (``$ nvidia-smi -q``), shell prompts, or be cut short. Unknown input is said to be
unknown, with the list of kinds bringup reads.
"""

from __future__ import annotations

import collections
import dataclasses
import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from wizard.common import strip_editor_line_numbers
from wizard.kinds import Kind
from wizard.facts import Facts
from wizard.probes import ProbeOutput
from wizard.registry import KINDS, rules_of_kind
from wizard.rules.driver_chain import several_toolkits, toolkit_and_torch
from wizard.rules.toolwords import judge as program_said
from wizard.rules.driver_install import loaded_vs_packaged
from wizard.model import Finding, Verdict, overall
from wizard.i18n import Msg, N_, names
from wizard.common import lazy_re
from wizard.parsers.prompt import PROMPT_RE, command_of

MIN_CONFIDENCE = 0.3
"""Below this, the best detector's guess is not trusted and the input is reported as unknown."""

ANSI_RE = lazy_re(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[\]_][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]")
"""Terminal escape sequences (colour from ``grep --color``, ``ls``, ``nvidia-smi`` in a tty; OSC and APC strings, such
as the ``ESC _bk;t=1778140792310 BEL`` timestamp a Buildkite raw log puts before every line: held-out round 321)."""

KERNEL_LINE_RE = lazy_re(
    r"^\s*\[\s*\+?[\d.]*\d[\d.]*\](?!\s+\[[\w.-]+:\d+:\d+\])"  # dmesg [  12.345678], dmesg -H [  +0.000844]; not UCX's
    # "[1668693503.473099] [host:pid:tid] ..." log lines, nor a paste's "[...]" (held-out round 275)
    r"|^\s*\[[A-Z][a-z]{2}[ A-Za-z0-9:+.]*\]\s"             # dmesg -T/-H [Sun Feb 23 16:24:18 2025], [May19 19:57]
    r"|^\S+\s+kernel:\s"                                   # "host kernel: ..."
    r"|^(?:[A-Z][a-z]{2}\s+\d{1,2}\s+[\d:.]+|\d{4}-\d\d-\d\d[T ][\d:.,+\-Z]+)\s+\S+\s+kernel:\s"  # syslog / journalctl
    r"|^\s*kern\s*:\s"                                     # dmesg -x / Talos "kern  :err   : ..."
    r"|NVRM: Xid")
"""A line of a kernel log, whatever else was pasted around it (``nvidia-smi; dmesg | grep -i xid``)."""


@dataclass
class Part:
    """One recognised (or not) piece of an input: its kind and where it was (0-based line numbers)."""

    kind: str | None
    title: str
    first_line: int
    last_line: int
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "title": self.title, "lines": [self.first_line + 1, self.last_line + 1],
                "confidence": round(self.confidence, 2)}


@dataclass
class Explained:
    """One input's result: its kind (or ``None``), the findings and the overall verdict.

    An input holding several outputs (two pasted commands, a table followed by kernel log
    lines) is split into ``parts``; ``kind`` then joins their kinds with ``+``.
    """

    input: str
    kind: str | None
    title: str = ""
    findings: list[Finding] = field(default_factory=list)
    confidence: float = 0.0
    parts: list[Part] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        return overall(self.findings) if self.findings else Verdict.UNKNOWN

    def to_dict(self) -> dict[str, Any]:
        d = {"input": self.input, "kind": self.kind, "title": self.title, "verdict": self.verdict.value,
             "confidence": round(self.confidence, 2), "findings": [f.to_dict() for f in self.findings]}
        if len(self.parts) > 1:
            d["parts"] = [p.to_dict() for p in self.parts]
        return d


_KUBECTL_NOTICE = lazy_re(r'^Defaulted container "[^"\n]*" out of: [^\n]*\n?', re.M)
"""kubectl's notice on stderr when a pod has several containers and none was named (``kubectl exec``/``logs``): not
the command's output."""

_QUOTE_PREFIX = lazy_re(r"^[ \t]*(?:#|>{1,3}|//)")
"""A prefix a person put before every line of a paste: a code comment (``# ``, ``// ``), an e-mail quote (``> ``,
nested ``>> ``) or a guide's ``>>> `` output mark."""


def clean(text: str) -> str:
    """Terminal escapes removed, CRLF/CR line ends made LF (pastes from Windows or a tty), no-break spaces made
    spaces, and a comment or quote
    prefix that every non-blank line carries (``    # ``, ``> ``) removed: outputs never start every line with one."""
    text = ANSI_RE.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
    # a paste through a web page or mail client turns spaces into no-break spaces (U+00A0, U+202F): no program
    # prints them, and every parser splits on ASCII whitespace (held-out round 154: an ibv_devinfo from a list archive)
    if "\u00a0" in text or "\u202f" in text:
        text = text.replace("\u00a0", " ").replace("\u202f", " ")
    text = _KUBECTL_NOTICE.sub("", text)
    text = _unflatten_kernel_lines(text)
    lines = text.split("\n")
    body = [ln for ln in lines if ln.strip()]
    if len(body) >= 3:
        # the command line a person typed above the quoted output ("root@host:~# smartctl -a /dev/sdb") is theirs,
        # not the quote's: it does not count against a prefix every other line carries (held-out round 157)
        if len(body) >= 4 and not _QUOTE_PREFIX.match(body[0]) and re.match(r"^\S*[@:~][^\n]*[#$]\s+\S", body[0]):
            body = body[1:]
        prefixes = {m.group(0) for ln in body for m in [_QUOTE_PREFIX.match(ln)] if m}
        if (len(prefixes) == 1 and all(_QUOTE_PREFIX.match(ln) for ln in body)
                and not any(ln.lstrip().startswith("# nThread") for ln in body)):  # nccl-tests' own '#' header
            pre = prefixes.pop()
            # with the spaces every quoted line has after the mark (">  " of a mail reply quoting an indented
            # paste), so the output's own columns start where the command wrote them
            pre += " " * min(len(ln[len(pre):]) - len(ln[len(pre):].lstrip(" ")) for ln in body)
            text = "\n".join(ln[len(pre):] if ln.startswith(pre) else ln for ln in lines)
    text = _SLURM_CLIENT_INFO.sub("", text)
    return _strip_log_prefixes(text)


_KERNEL_STAMP = lazy_re(r"\[\s*\d{1,9}\.\d{3,9}\]|\[[^\[\]\n]{0,16}\d{1,2}:\d{2}:\d{2}[^\[\]\n]{0,12}\]")
"""A kernel log line's timestamp: dmesg's ``[  12.345678]``, ``dmesg -T``'s ``[Mon Aug 25 16:20:28 2025]`` (also in
another locale: ``[一 8月 25 16:20:28 2025]``)."""
FLATTENED_MIN_STAMPS = 3
"""A line holding this many kernel timestamps or more, past the first character, is a kernel log whose line breaks a
web page dropped (a forum that stores a paste as one line): it is split before each timestamp."""


def _unflatten_kernel_lines(text: str) -> str:
    """Kernel log lines a web page joined into one (:data:`FLATTENED_MIN_STAMPS`), split again before each timestamp;
    every other line as it is."""
    if "]" not in text:
        return text
    out: list[str] = []
    changed = False
    for line in text.split("\n"):
        stamps = [m.start() for m in _KERNEL_STAMP.finditer(line)] if len(line) > 200 else []
        if len(stamps) >= FLATTENED_MIN_STAMPS:
            cuts = [0] + [s for s in stamps if s > 0] + [len(line)]
            out.extend(line[a:b].strip() for a, b in zip(cuts, cuts[1:]) if line[a:b].strip())
            changed = True
        else:
            out.append(line)
    return "\n".join(out) if changed else text


_SLURM_CLIENT_INFO = lazy_re(
    r"^(?:salloc|srun|sbatch): (?:Granted job allocation \d+|Pending job allocation \d+|Waiting for resource "
    r"configuration|Nodes \S+ are ready for job|[Jj]ob \d+ queued and waiting for resources|[Jj]ob \d+ has been "
    r"allocated resources|Relinquishing job allocation \d+|Submitted batch job \d+|(?:job \d+ )?[Rr]equested "
    r"partition configuration not available now)[ \t]*(?:\n|\Z)|^pyxis: import(?:ing|ed) docker image\b.*(?:\n|\Z)",
    re.M)
"""The Slurm client's progress lines that say nothing of the machine, printed before (or after) the job's own
output: salloc's and srun's "Granted job allocation 7", "Waiting for resource configuration", "Nodes n01 are ready
for job", "job 12 queued and waiting for resources", "Relinquishing job allocation 7" (salloc(1), srun(1); Slurm's
src/salloc/salloc.c and src/srun/). Dropped before reading, so the output after them is read as what it is;
``srun: error:`` and every other Slurm line stay."""


_LOG_PREFIX = lazy_re(r"^\((?:[\w.\-]+(?:,[ ]*|[ ]+))?(?:rank=\d+,[ ]*)?pid=\d+(?:,[ ]*ip=[\w.:\-]+)?\)[ ]?"
                         r"|^\(raylet(?:,[ ]*ip=[\w.:\-]+)?\)[ ]?"
                         r"|^[ \t]{0,8}\[\d+,\d+\]<(?:stdout|stderr)>:[ ]?"  # indented too (a Markdown list)
                         r"|^\[(?:default|rank)\d+\]:[ ]?"
                         # kubectl logs --prefix "[pod/NAME/CONTAINER] "; stern's "POD CONTAINER " (pod names end in a
                         # generated suffix: a daemonset's five characters, a deployment's hash too)
                         r"|^\[pod/[a-z0-9][a-z0-9.-]*/[a-z0-9][a-z0-9-]*\] "
                         r"|^[a-z0-9][a-z0-9.-]*-[a-z0-9]{5} [a-z0-9][a-z0-9-]* (?=\S)")
"""The tag a job runner puts before each line it relays from a worker: Ray ``(pid=1234)``, ``(RayWorkerWrapper
pid=92234, ip=172.19.24.110)``, ``(raylet)``; SkyPilot ``(sky-cmd, pid=13008)``, ``(head, rank=0, pid=5)`` (Ray
docs, "Configuring Logging": worker log lines are prefixed with the actor name, pid and ip,
https://docs.ray.io/en/latest/ray-observability/user-guides/configure-logging.html); Open MPI's ``mpirun
--tag-output`` ``[1,0]<stdout>:`` ([jobid,rank] and the stream, mpirun(1),
https://docs.open-mpi.org/en/main/man-openmpi/man1/mpirun.1.html); torchrun's ``--tee`` ``[default0]:`` and
PyTorch's ``[rank0]:`` on a rank's error lines (torch.distributed.elastic, local_ranks_filter / tee,
https://pytorch.org/docs/stable/elastic/run.html); ``kubectl logs --prefix``'s ``[pod/NAME/CONTAINER]`` (kubectl
reference) and stern's ``POD CONTAINER`` (held-out round 288: the GPU Operator's driver manager relaying nvidia-smi)."""
_SRUN_LABEL = lazy_re(r"^[ ]{0,4}\d{1,5}: ")
"""Slurm's ``srun --label`` task id before every line of a task's output (``0: #  size  count ...``; srun(1),
-l/--label)."""
_HOST_LABEL = lazy_re(r"^((?=[\w.\-]*\d)[A-Za-z][\w.\-]*|\d{1,3}(?:\.\d{1,3}){3}|[A-Za-z][\w.\-]*(?= (?:out|err):))"
                      r"(?: (?:out|err))?: ")
"""A host's name before every line a fan-out runner relays from it: pdsh's and ClusterShell's ``node01: ``
(pdsh(1): "output ... prefixed with the hostname"; clush(1)), and the ``nid005113 out: `` of runners that name the
stream too. A name needs a digit (node names do; a tag such as ``NVRM: `` or ``kernel: `` has none) or the stream
word; an IPv4 address is a name too (clush and pdsh given addresses label lines with them)."""
_RAY_DEDUP = lazy_re(r"[ \t]*\[repeated \d+x across cluster\][ \t]*$")
"""Ray's log deduplication suffix (same page, "Log deduplication")."""


WHOLE_BEATS_HOSTS = 0.9
"""A paste whose every line starts ``name: `` is read as one output, not several hosts' (:func:`_host_blocks`), when a
kind reads it whole with at least this confidence: the labels are then the output's own (edac-util's ``mc0:``)."""


def _host_blocks(text: str) -> list[tuple[str, str]]:
    """(host, its lines without the label) for a paste of several hosts' output as pdsh and clush relay it: every line
    (nine in ten at least) labelled ``host: `` (:data:`_HOST_LABEL`), two hosts or more, at least two lines each, in
    the order the hosts first appear (held-out r37 #08: ``clush -a free -g`` over four nodes). [] otherwise. One host's
    label is removed in :func:`clean` instead."""
    body = [ln for ln in text.split("\n") if ln.strip()]
    labels = [(m.group(1), ln[m.end():]) for ln in body for m in [_HOST_LABEL.match(ln)] if m]
    if len(labels) < 4 or len(labels) < 0.9 * len(body):
        return []
    by_host: dict[str, list[str]] = {}
    for host, rest in labels:
        by_host.setdefault(host, []).append(rest)
    if len(by_host) < 2 or min(len(v) for v in by_host.values()) < 2:
        return []
    return [(host, "\n".join(lines) + "\n") for host, lines in by_host.items()]


_UNIQ_COUNT = lazy_re(r"^\s*\d{1,9}\s{1,8}((?:NVRM: |nvidia\S*: |pcieport |mlx5_core |\[\s*\d+\.\d+\] |kernel: ).*)$")
"""A kernel message under ``uniq -c``'s count ("13332  NVRM: _fabricNotifyEvent: ...": held-out round 347): the count is
dropped so the message reads as the kernel's."""


def _strip_log_prefixes(text: str) -> str:
    """A runner's per-line tags removed where at least two lines and half the paste's lines carry one (the tool's
    own lines follow them); lines without a tag stay as they are. srun's ``--label`` (``0: ``) only where nearly every
    line carries it."""
    lines = text.split("\n")
    # the launcher's own lines around the job (`set -x`'s "+ srun ...", ssh's known-hosts note, srun's own "srun: error:
    # nid005317: tasks 60-63: Exited with exit code 1") carry no task label
    body = [ln for ln in lines if ln.strip() and not _LAUNCH_NOISE.match(ln) and not PROMPT_RE.match(ln)
            and not ln.startswith("srun: ")]
    labelled = sum(1 for ln in body if _SRUN_LABEL.match(ln))
    if labelled >= 2 and labelled >= 0.9 * len(body):  # nearly every line: a shorter share is ip link's "1: lo:"
        return "\n".join(_SRUN_LABEL.sub("", ln, count=1) for ln in lines)
    hosts = collections.Counter(m.group(0) for ln in body for m in [_HOST_LABEL.match(ln)] if m)
    if len(hosts) == 1 and sum(hosts.values()) >= 3 and sum(hosts.values()) >= 0.9 * len(body):
        # one host's lines: the tool's own lines follow the label (several hosts' lines stay apart, as relayed); not
        # where a kind reads the labels as the output's own and loses it without them (edac-util's "mc0: csrow0:
        # ...", held-out round 105)
        stripped = "\n".join(_HOST_LABEL.sub("", ln, count=1) for ln in lines)
        whole = detect(text)[1]
        return text if whole >= WHOLE_BEATS_HOSTS and detect(stripped)[1] < whole else stripped
    if len(body) >= 2 and all(_UNIQ_COUNT.match(ln) for ln in body):  # `sort | uniq -c` of kernel lines
        return "\n".join(_UNIQ_COUNT.sub(r"\1", ln, count=1) for ln in lines)
    tagged = sum(1 for ln in body if _LOG_PREFIX.match(ln))
    if tagged < 2 or 2 * tagged < len(body):
        return text
    return "\n".join(_RAY_DEDUP.sub("", _LOG_PREFIX.sub("", ln, count=1)) for ln in lines)


def strip_command_lines(text: str) -> str:
    """Drop leading shell-prompt lines (``$ nvidia-smi -q``, ``root@h:~# dmesg``) of a paste."""
    lines = text.splitlines()
    while lines and (PROMPT_RE.match(lines[0]) or not lines[0].strip()):
        lines.pop(0)
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


DETECT_HEAD_CHARS = 8 * 1024
"""Detectors see at most this much of an input: the format shows in its head, and a huge log
must not cost every detector a full scan (the judge still reads all of it)."""


def detect(text: str) -> tuple[Kind | None, float]:
    """The most confident kind for ``text`` (a detector that raises counts as 0), read from its first
    :data:`DETECT_HEAD_CHARS`; where they show no kind, from its last as many (a job's log whose error, a traceback's
    last line, comes after pages of training output: held-out round 83)."""
    if len(text) <= DETECT_HEAD_CHARS:
        return _detect(text)
    cut = text.rfind("\n", 0, DETECT_HEAD_CHARS)
    found = _detect(text[: cut + 1 if cut > 0 else DETECT_HEAD_CHARS])
    if found[0] is not None:
        return found
    start = text.find("\n", len(text) - DETECT_HEAD_CHARS)
    tail = _detect(text[start + 1 if start >= 0 else len(text) - DETECT_HEAD_CHARS:])
    return tail if tail[0] is not None else found


def _detect(text: str) -> tuple[Kind | None, float]:
    """:func:`detect` on ``text`` as it is."""
    kinds = KINDS
    best: Kind | None = None
    best_score = 0.0
    for k in kinds.values():
        try:
            score = float(k.detect(text))
        except Exception:  # noqa: BLE001 - a detector bug must not stop the others
            score = 0.0
        if score > best_score:
            best, best_score = k, score
            if best_score >= 1.0:  # certain: a later kind can only tie, and a tie keeps the first (same result)
                break
    if best_score < MIN_CONFIDENCE:
        return None, best_score
    return best, best_score


START_MARKERS = lazy_re(
    r"^nvcc: NVIDIA \(R\) Cuda compiler driver"        # nvcc --version
    r"|^=+\s*NVSMI LOG\s*=+"                            # nvidia-smi -q
    r"|^<\?xml\s"                                       # nvidia-smi -q -x
    r"|^\|\s*NVIDIA-SMI \d"                              # nvidia-smi table header row
    r"|^# nThread \d+ nGpus \d+"                         # nccl-tests
    r"|^NVRM version: NVIDIA"                            # /proc/driver/nvidia/version
    r"|^Module\s+Size\s+Used by"                         # lsmod
    r"|^Architecture:\s+(?:x86_64|aarch64|ppc64le|s390x|i[36]86|armv\w+|riscv64)\b"  # lscpu
    r"|^available: \d+ nodes"                            # numactl --hardware
    r"|^\s*total\s+used\s+free\s+shared"                 # free
    r"|^NAME\s+TYPE\s+SIZE\s+USED\s+PRIO"                 # swapon --show
    r"|^Traceback \(most recent call last\)"           # a Python/torch error
    r"|^Personalities : "                                # /proc/mdstat
    r"|^CA '[^']+'\s*$"                                  # ibstat
    r"|^hca_id:\s"                                       # ibv_devinfo
    r"|^Infiniband device '"                             # ibstatus
    r"|^\{\s*$")  # a pretty-printed JSON document (fio, dcgmi diag -j), where no JSON value is open before it
"""Lines that begin an output bringup reads: where two outputs were pasted back to back
without a prompt between them, a new part starts here."""

BLOCK_STARTS = ("CA '", "hca_id:", "Infiniband device '", "{")
"""Start markers that also begin each further block of the same output: a new part only at the first (ibstat's CA
blocks, ibv_devinfo's hca_id blocks; a stream of JSON documents, as `jq` prints a JSON-lines log)."""

ROW_STARTS = (
    lazy_re(r"^\s*[0-9a-fA-F]{1,8}\s*\|\s*(?:\d\d/\d\d/\d\d(?:\d\d)?|Pre-Init)\s*\|"),  # ipmitool sel list/elist
    lazy_re(r"^[^|]{1,40}\|\s*[0-9a-fA-F]{2}h\s*\|\s*(?:ok|ns|nr|cr|nc|lnr|lcr|lnc|unc|ucr|unr)\s*\|"),  # sdr elist
)
"""Row forms of outputs that have no header line: the first row of one, after lines that are not its rows, starts
a new part (ipmitool's SEL and SDR listings pasted after another output)."""


_LAUNCH_NOISE = lazy_re(r"\s*(?:Authorization required, but no authorization protocol specified|\++ \S.*"
                        r"|Invalid MIT-MAGIC-COOKIE-1 key"
                        r"|Warning: Permanently added '[^']+' \([\w-]+\) to the list of known hosts\."
                        r"|\[[\w.-]+:\d+\] PMIX ERROR: ERROR in file gds_ds12_lock_pthread\.c at line \d+"
                        r"|(?:\d+: )?cpu-bind=[\w-]+ - [\w.-]+, task +\d+ +\d+ \[\d+\]: mask 0x[0-9a-fA-F]+ set)\s*$")
"""Lines a launcher's environment prints around a job's output that say nothing about it: Xlib's refusal of an X11
display the remote shell forwarded (a DISPLAY set without its cookie), and PMIx's shared-memory store lock message
(wizard/rules/toolwords.py's benign words), the shell's own echo of the command it runs (``set -x``: "+ srun ..."),
and ssh's note that it recorded a node's host key ("Warning: Permanently added 'node' (ED25519) to the list of known
hosts.", mpirun starting ranks over ssh: held-out round 283), and srun's --cpu-bind=verbose report of each task's CPU
mask ("0: cpu-bind=MASK - nid006116, task  0  0 [142218]: mask 0xff... set": held-out round 319)."""
_IMAGE_PULL = lazy_re(
    r"\s*(?:Unable to find image '[^']+' locally|\S+: Pulling from \S+"
    r"|[0-9a-f]{12}: (?:Pull complete|Already exists|Pulling fs layer|Waiting|Download complete|Verifying Checksum"
    r"|Extracting|Downloading)\b.*|Digest: sha256:[0-9a-f]{64}"
    r"|Status: (?:Downloaded newer image|Image is up to date) for \S+"
    r"|Trying to pull \S+\.\.\.|Getting image source signatures|Copying (?:blob|config) \S+.*"
    r"|Writing manifest to image destination|Storing signatures)\s*$")
"""A container engine pulling an image (docker's "Pull complete" lines, podman's "Copying blob") before the command
it runs prints anything: a part made only of these is not an output, and is left out."""

COMMANDS_SEEN: dict[int, str] = {}
"""During one split: line number after a prompt -> the command typed at it."""
PROMPT_OF: dict[int, int] = {}
"""During one split: a part's first line -> the line of the prompt whose command printed it (pieces of one command's
output share it)."""


_TOPO_M_LEGEND = lazy_re(r"^\s*NV#\s+= Connection traversing a bonded set of")
_P2P_LEGEND = lazy_re(r"^\s*(?:OK\s+= Status Ok|NS\s+= Not supported)\s*$")
_P2P_HEADER = lazy_re(r"^[ \t]+GPU0(?:[ \t]+GPU\d+)+[ \t]*$")
_TOPO_M_HEADER = lazy_re(r"^[ \t]+GPU0[ \t].*\bCPU Affinity\b")


_IFCONFIG_START = lazy_re(r"^[A-Za-z][\w.\-]*: flags=\d+<")
"""ifconfig's first line of an interface ("eth0: flags=4163<UP,...>  mtu 1450", net-tools)."""


def _next_topo_matrix(before: list[str], ln: str) -> bool:
    """``nvidia-smi topo -m`` and ``topo -p2p`` pasted back to back: the second matrix's header row after the first
    one's legend starts a new output (held-out round 45). Other GPU-pair matrices (rocm-smi --showtopo's several) do
    not end in these legends, so they stay one output."""
    if _P2P_HEADER.match(ln):
        return any(_TOPO_M_LEGEND.match(x) for x in before)
    if _TOPO_M_HEADER.match(ln):
        return any(_P2P_LEGEND.match(x) for x in before)
    return False


def _split_at_markers(first: int, chunk: list[str]) -> list[tuple[int, list[str]]]:
    out: list[tuple[int, list[str]]] = []
    start = 0
    for i, ln in enumerate(chunk):
        if i > start and "GPU0" in ln and _next_topo_matrix(chunk[start:i], ln):
            out.append((first + start, chunk[start:i]))
            start = i
            continue
        if (i - 1 > start and "GPU0" in ln and _TOPO_M_HEADER.match(ln) and chunk[i - 1].strip() == "NVIDIA Topology:"
                and any(x.strip() for x in chunk[start:i - 1])):
            # sglang.check_env ends with the topology matrix under its title: the matrix is its own output, judged as
            # nvidia-smi topo -m, the report above it as the report it is (held-out round 273)
            out.append((first + start, chunk[start:i - 1]))
            start = i - 1
            continue
        if (i > start and "flags=" in ln and _IFCONFIG_START.match(ln)
                and not any(_IFCONFIG_START.match(x) for x in chunk[start:i])):
            # ifconfig pasted after another output (held-out round 49: an ibdev2netdev line, then the pod's
            # interfaces): its first interface starts a part; its later interfaces stay in it
            out.append((first + start, chunk[start:i]))
            start = i
            continue
        row = next((r for r in ROW_STARTS if r.match(ln)), None)
        if i > start and row is not None and chunk[i - 1].strip() and not row.match(chunk[i - 1]):
            out.append((first + start, chunk[start:i]))
            start = i
            continue
        if i > start and START_MARKERS.match(ln):
            before = next((x.rstrip() for x in reversed(chunk[start:i]) if x.strip()), "")
            if ln.startswith("{") and before.endswith((":", ",", "[", "{")):
                continue  # a nested object of an open JSON document (DCGM writes them at column 0), not a new one
            if ln.startswith("# nThread") and any(x.startswith("# nThread") for x in chunk[start:i]):
                continue  # the next run of one nccl-tests script: its runs are judged together
            block = next((b for b in BLOCK_STARTS if ln.startswith(b)), "")
            if block and any(x.startswith(block) for x in chunk[start:i]):
                continue  # the next block of the same output
            cut = i
            if ln.startswith("|") and i - 1 > start and chunk[i - 1].startswith("+-"):
                cut = i - 1  # the table's top border belongs to it
                if cut - 1 > start and _SMI_DATE.match(chunk[cut - 1]):
                    cut -= 1  # and nvidia-smi's own first line, its date
            if any(x.strip() for x in chunk[start:cut]):
                out.append((first + start, chunk[start:cut]))
                start = cut
    out.append((first + start, chunk[start:]))
    return out


_SMI_DATE = lazy_re(r"^\s*[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\s*$")
"""The date line nvidia-smi prints above its table (``Tue Sep 20 13:11:24 2022``)."""

_PY_ONE_LINER = lazy_re(r"^python[\d.]*\s+-c\s")


def _splits(line: str) -> bool:
    """A prompt line starts a new part, except a ``python -c "..."`` one-liner: its print() calls are answered by
    the lines after it, so the line stays with its output (several one-liners are one torch report)."""
    return (bool(PROMPT_RE.match(line)) and not _PY_ONE_LINER.match(command_of(line))) or bool(_HOST_BANNER.match(line))


_HOST_BANNER = lazy_re(r"^\s*(?:={3,}|-{3,}|#{3,}|\*{3,})\s*(?:[Hh]ost:?\s*)?"
                       r"(?=[\w.@:-]*\d)[A-Za-z0-9][\w.@:-]{0,62}\s*(?:={3,}|-{3,}|#{3,}|\*{3,})\s*$")
"""A banner a loop over hosts prints before each one's output (``=== gpu-worker-1 ===``, ``--- node03 ---``; not
head/tail's ``==> file <==``, whose files are often one report): like a prompt, each output after it is its own
part (held-out round 185: a fleet sweep of nvidia-smi). The name must hold a digit, as node names do; a script's
section titles (``=== GPU ===``, ``=== nvidia-smi ===``, ``=== Clock Speeds ===``) are not banners."""


def split_parts(text: str) -> list[tuple[int, list[str]]]:
    """Split a paste into the outputs it holds: at every shell-prompt line (each command's output
    is its own part), and kernel-log lines apart from another output pasted with them.

    Returns (first line number, lines) per part, prompt lines dropped.
    """
    lines = text.split("\n")
    chunks: list[tuple[int, list[str]]] = []
    start = 0
    cur: list[str] = []
    continued = False  # the prompt's command goes on after a trailing backslash: its next lines are the command's
    for i, ln in enumerate(lines):
        if continued:
            continued = ln.rstrip().endswith("\\")
            start = i + 1
            continue
        if _splits(ln):
            if any(x.strip() for x in cur):
                chunks.append((start, cur))
            start, cur = i + 1, []
            continued = ln.rstrip().endswith("\\")
            continue
        cur.append(ln)
    if any(x.strip() for x in cur):
        chunks.append((start, cur))
    COMMANDS_SEEN.clear()
    PROMPT_OF.clear()
    typed = {i + 1: command_of(ln) for i, ln in enumerate(lines) if _splits(ln) and not _HOST_BANNER.match(ln)}
    pieces: list[tuple[int, list[str]]] = []
    for first, chunk in chunks:
        for piece in _split_at_markers(first, chunk):
            if first in typed:  # every piece of one command's output carries that command
                COMMANDS_SEEN[piece[0]] = typed[first]
                PROMPT_OF[piece[0]] = first
            pieces.append(piece)
    chunks = pieces
    parts: list[tuple[int, list[str]]] = []
    for first, chunk in chunks:
        for line_re, own, few_score in _SPLIT_OFF:
            mine = [i for i, ln in enumerate(chunk) if line_re.search(ln)]
            mset = set(mine)
            other = [i for i, ln in enumerate(chunk) if ln.strip() and i not in mset]
            if not (mine and other):
                continue
            rest = [chunk[i] for i in range(len(chunk)) if i not in mset]
            kind, score = detect("\n".join(rest))
            if kind is not None and kind.name != own and score >= (0.5 if len(other) >= 3 else few_score):
                parts.append((first, rest))
                parts.append((first + mine[0], [chunk[i] for i in mine]))
                if first in COMMANDS_SEEN:
                    COMMANDS_SEEN[first + mine[0]] = COMMANDS_SEEN[first]
                    PROMPT_OF[first + mine[0]] = PROMPT_OF.get(first, first)
                break
        else:
            parts.append((first, chunk))
    return parts


_ELASTIC_LINE = lazy_re(r"torch/distributed/elastic/(?:multiprocessing|agent)/\S+\.py:\d+\]")
"""A log line of torchrun's elastic agent (glog-style ``E0715 08:53:42.146000 ... torch/distributed/elastic/
multiprocessing/api.py:826] failed (exitcode: -9) local_rank: 2 ...``)."""

_SPLIT_OFF = ((KERNEL_LINE_RE, "kernel-log", 0.8), (_ELASTIC_LINE, "launcher", 0.5))
"""Lines of one kind pulled out of a part when the rest is surely another output (score 0.5, or the given score
when fewer than three other lines are left: a single nvidia-smi error line must be sure): kernel-log lines (e.g.
`nvidia-smi; dmesg | grep -i xid`, the table and the Xid lines judged apart), and torchrun's elastic agent reporting
a rank's end among that job's NCCL log (held-out round 284: NCCL came up, then local_rank 2 was killed, exitcode -9),
judged as the launcher's output."""


def _merge_same_kind(parts: list[Part]) -> list[Part]:
    """Neighbouring parts of one kind are one output for the record (their findings stay)."""
    out: list[Part] = []
    for p in parts:
        if out and p.kind and out[-1].kind == p.kind:
            out[-1] = Part(p.kind, p.title, out[-1].first_line, p.last_line, min(out[-1].confidence, p.confidence))
        else:
            out.append(p)
    return out


def _explain_one(body: str, exp: Mapping[str, Any], kind: str | None) -> tuple[Kind | None, float, list[Finding]]:
    if kind is not None:
        k = KINDS.get(kind)
        score = 1.0 if k else 0.0
    else:
        k, score = detect(body)
        typed = exp.get("command")
        if k is None and isinstance(typed, str) and typed.strip():
            # the command typed at the prompt tells what printed the lines below it (srun ... nvidia-smi -L, whose
            # launcher added lines of its own): detect with it, as the output's first line
            k, score = detect(f"{typed.strip()}\n{body}")
        if k is None:
            # line numbers an editor or `cat -n` put before every line: read without them, only when the numbered
            # text is no output bringup knows (ras-mc-ctl --errors numbers its records the same way)
            plain = strip_editor_line_numbers(body)
            if plain != body:
                k, score = detect(plain)
                if k is not None:
                    body = plain
    if k is None:
        return None, score, []
    try:
        findings = list(k.judge(body, exp))
        # registry rules that also read this kind see the text as their probe's output (one Facts, parsed once)
        rules = rules_of_kind(k.name)
        if rules:
            facts = Facts({p: ProbeOutput(name=p, source=f"{k.title} (pasted)", text=body)
                           for p in {r.kinds[k.name] for r in rules}})
            for r in rules:
                findings.extend(r.judge(facts, exp))
    except Exception as exc:  # noqa: BLE001 - judges should not raise; if one does, say so
        findings = [Finding(f"explain.{k.name}", Verdict.UNKNOWN, Msg("judging this {title} crashed: {exc!r}", title=k.title, exc=exc),
                            "input", tuple(body.splitlines()[:5]),
                            "This is a bringup bug: please report it with the input.", "")]
    if not findings:
        findings = [Finding(f"explain.{k.name}", Verdict.UNKNOWN, Msg("nothing to judge in this {title}", title=k.title),
                            "input", tuple(body.splitlines()[:5]), "", "")]
    return k, score, findings


COMMON_COMMANDS = ("nvidia-smi -q -x", "nvidia-smi", "dmesg", "journalctl -k", "lspci -vvv", "nvidia-smi topo -m",
                   "dcgmi diag -r 2", "nccl-tests", "NCCL_DEBUG=INFO", "ibstat", "ipmitool sel elist", "smartctl -a")
"""What the unknown-input remedy names first: the outputs operators paste most (``--kind`` with a name it does not
know lists every kind; a remedy listing every kind buried the hint in 45 lines)."""


_SMI_HEAD = lazy_re(r"\|\s*NVIDIA-SMI \d+\.\d+")
"""nvidia-smi's banner cell ("| NVIDIA-SMI 580.65.06   Driver Version: ..."): a table that was cut before a GPU row is
still recognisable by it."""


def _unknown(body: str) -> Finding:
    if not body.strip():  # walk 20: an empty file read as "not recognised" (a failed paste or redirect)
        return Finding("explain.unknown_input", Verdict.UNKNOWN,
                       Msg("the input is empty (0 bytes): nothing to judge") if not body else
                       Msg("the input is only white space ({n} bytes): nothing to judge", n=len(body.encode())),
                       "input", (), "Check the paste or the redirect that made the file (`cmd > file 2>&1`), then "
                       "give it again.", "")
    if _SMI_HEAD.search(body) and "|" in body:  # walk 33 #15: nvidia-smi's banner cut before its first GPU row
        return Finding("explain.unknown_input", Verdict.UNKNOWN,
                       Msg("this looks like the start of an nvidia-smi table, cut before its first GPU row: no GPU in "
                           "it to judge"), "input", tuple(body.splitlines()[:5]),
                       Msg("Paste the whole `nvidia-smi` output (every GPU row down to the Processes table), or "
                           "`nvidia-smi -q` for every field."), "")
    return Finding("explain.unknown_input", Verdict.UNKNOWN, "bringup does not recognise this input", "input",
                   tuple(body.splitlines()[:5]),
                   Msg("Give bringup the raw output of a command it reads, e.g. {common}; it reads {n} kinds: "
                       "`bringup explain --kind KIND FILE` skips detection, and a KIND it does not know lists them "
                       "all.", common=names(f"`{c}`" for c in COMMON_COMMANDS), n=len(KINDS)), "")


_NOHEADER_QUERY = lazy_re(r"nvidia-smi\b.*--query-gpu[= ]\"?([\w.,]+)\"?.*--format[= ]\"?csv,\s*noheader", re.I)


def _named_noheader_rows(text: str) -> str:
    """``nvidia-smi --query-gpu=a,b --format=csv,noheader`` typed on the paste's first line names the columns that
    ``noheader`` left out: that line becomes the CSV header, so every field is read by its name."""
    lines = text.split("\n")
    i = next((k for k, ln in enumerate(lines) if ln.strip()), None)
    if i is None:
        return text
    m = _NOHEADER_QUERY.search(lines[i])
    if not m:
        return text
    lines[i] = ", ".join(f.strip() for f in m.group(1).split(",") if f.strip())
    return "\n".join(lines)


MAX_FINDINGS = 1000
"""Most findings one input's explanation holds (the largest real outputs give a few hundred: eight GPUs times some
forty fields); past it the least severe are folded into one ``explain.findings_folded`` finding that counts them by
verdict, so a mutated output that lists a hundred thousand GPUs cannot grow the answer (and its JSON) without bound."""

_SEVERITY = {"fail": 0, "warn": 1, "unknown": 2, "pass": 3, "skip": 4}


def explain_text(text: str, name: str = "-", expectations: Mapping[str, Any] | None = None,
                 kind: str | None = None) -> Explained:
    """Detect (or take ``kind``), parse and judge one input, part by part, keeping at most :data:`MAX_FINDINGS`
    findings. Never raises."""
    r = _explain_text(text, name, expectations, kind)
    r.findings[:] = _merge_duplicates(r.findings)
    if len(r.findings) <= MAX_FINDINGS:
        return r
    ranked = sorted(range(len(r.findings)), key=lambda i: (_SEVERITY.get(r.findings[i].verdict.value, 5), i))
    keep = sorted(ranked[:MAX_FINDINGS - 1])
    dropped = [r.findings[i] for i in ranked[MAX_FINDINGS - 1:]]
    counts = collections.Counter(f.verdict.value for f in dropped)
    worst_dropped = min(dropped, key=lambda f: _SEVERITY.get(f.verdict.value, 5)).verdict
    fold = Finding("explain.findings_folded", worst_dropped,
                   (Msg('{n_dropped:,} more findings of this input are not listed (', n_dropped=len(dropped)) + ', '.join((f'{n:,} {v}' for v, n in sorted(counts.items(), key=lambda x: _SEVERITY.get(x[0], 5)))) + Msg("): an output this large is not one machine's (more than {value:,} findings)", value=MAX_FINDINGS - 1)), "input",
                   (), "Give bringup one machine's output at a time.", "")
    r.findings[:] = [r.findings[i] for i in keep] + [fold]
    return r


def _merge_duplicates(findings: list[Finding]) -> list[Finding]:
    """One finding for findings that say the same thing (id, verdict, subject, message, remedy, source, key and
    measure equal), their evidence lines joined in order (walk 30 #10: torch's THCudaCheck line and its RuntimeError
    line of one error 35 were two identical findings)."""
    out: list[Finding] = []
    seen: dict[tuple[Any, ...], int] = {}
    for f in findings:
        k = (f.id, f.verdict, f.subject, str(f.message), str(f.remedy), f.source, f.key, repr(f.measured), f.step)
        i = seen.get(k)
        if i is None:
            seen[k] = len(out)
            out.append(f)
        else:
            if len(out[i].evidence) < 12:  # an input repeating one line thousands of times stays a short answer
                out[i] = replace(out[i], evidence=tuple(dict.fromkeys(out[i].evidence + f.evidence))[:12])
    return out


def _cut_tail_not_judged(findings: list[Finding], last: tuple[Kind | None, list[Finding]], n_parts: int
                         ) -> list[Finding]:
    """A paste of several outputs whose LAST part is of a known kind but could not be judged at all (every finding
    unknown: the paste was cut inside it, e.g. collect_env's lscpu section stopping after two lines) while the parts
    before it were judged: that part is reported as ``skip`` (not judged, and why), so a cut tail does not turn what
    the rest proved into "unknown". A cut part anywhere else, or a paste of one part, stays unknown."""
    kind, tail = last
    if n_parts < 2 or kind is None or not tail or any(f.verdict is not Verdict.UNKNOWN for f in tail):
        return findings
    tail_ids = {id(f) for f in tail}
    if not any(f.verdict is not Verdict.UNKNOWN for f in findings if id(f) not in tail_ids):
        return findings
    return [replace(f, verdict=Verdict.SKIP,
                    message=Msg("{title} at the end of this paste is cut, not judged: {message}", title=kind.title,
                                message=f.message)) if id(f) in tail_ids else f for f in findings]


def _explain_text(text: str, name: str = "-", expectations: Mapping[str, Any] | None = None,
                  kind: str | None = None) -> Explained:
    """:func:`explain_text` without the bound on findings."""
    exp = dict(expectations or {})
    raw = text
    text = _named_noheader_rows(clean(text))
    if raw.strip() and not text.strip():  # only the Slurm client's progress lines: the job printed nothing here
        return Explained(name, None, "", [Finding(
            "explain.unknown_input", Verdict.UNKNOWN,
            N_("only the Slurm client's progress lines (salloc/srun/sbatch: the job was queued and got its "
               "allocation): the job's own output, what would show the machine, is not in this paste"), "input",
            tuple(ln.strip() for ln in raw.splitlines() if ln.strip())[:5],
            N_("Paste what the job printed on the node (the command run inside the allocation)."), "")], 0.0)
    hosts = _host_blocks(text)
    if hosts and kind is None and detect(text)[1] >= WHOLE_BEATS_HOSTS:
        hosts = []  # labels that are the output's own (edac-util's "mc0: ..." per memory controller, held-out round 80)
    if hosts:  # several hosts' labelled lines (pdsh, clush): each host's output judged on its own, named by its host
        each = [(host, _explain_text(body, name, expectations, kind)) for host, body in hosts]
        judged = [e for _, e in each if e.kind]
        return Explained(name, "+".join(dict.fromkeys(e.kind for e in judged if e.kind)) or None,
                         " + ".join(dict.fromkeys(e.title for e in judged if e.title)),
                         [dataclasses.replace(f, subject=host if f.subject in ("host", "") else f"{host} {f.subject}")
                          for host, e in each for f in e.findings],
                         min((e.confidence for e in judged), default=0.0))
    if kind is not None:
        body = strip_command_lines(text)
        if not body.strip():
            return Explained(name, None, "", [_unknown(text)], 0.0)
        k, score, findings = _explain_one(body, exp, kind)
        if k is None:
            return Explained(name, None, "", [_unknown(body)], score)
        return Explained(name, k.name, k.title, findings, score)
    pieces = split_parts(text)
    if not pieces:
        return Explained(name, None, "", [_unknown(text)], 0.0)
    parts: list[Part] = []
    findings = []
    commands = dict(COMMANDS_SEEN)
    prompts = dict(PROMPT_OF)
    nvcc_parts: list[tuple[str, str]] = []
    torch_parts: list[str] = []
    bodies: dict[str, list[str]] = {}  # kind -> its parts' text, for the judgements across parts
    per_command: dict[tuple[str, str, int], set[int]] = {}  # (command, kind, first line) -> its findings' ids
    last_part: tuple[Kind | None, list[Finding]] = (None, [])
    for first, lines in pieces:
        body = "\n".join(lines).strip("\n") + "\n"
        part_exp = dict(exp, command=commands[first]) if first in commands else exp
        k, score, fs = _explain_one(body, part_exp, None)
        if k is None:
            if len(pieces) > 1 and all(_IMAGE_PULL.match(ln) or _LAUNCH_NOISE.match(ln) for ln in lines if ln.strip()):
                continue  # `docker run` pulling its image before the command's output (round 20), or a launcher's
                # environment noise around it: not an output
            said = program_said(body)
            if len(pieces) > 1 and sum(1 for ln in lines if ln.strip()) < 3 and not any(
                    f.verdict is Verdict.FAIL for f in said):
                continue  # a stray line between two outputs (unless it says a command failed: "Job for X failed")
            fs = said or [_unknown(body)]
            if len(pieces) > 1 and fs[0].id == "explain.unknown_input":
                fs = [Finding("explain.unrecognised_part", Verdict.UNKNOWN,
                              Msg("bringup does not recognise lines {a1}-{a2} of this input (not an output it reads)", a1=first + 1, a2=first + len(lines)), "input", tuple(x for x in lines if x.strip())[:5],
                              "Explain that part on its own, or give the raw output of a command bringup reads "
                              "(bringup explain lists them when given something it does not know).", "")]
        if k is not None and k.name == "nvcc-version":
            nvcc_parts.append((commands.get(first, ""), body))
        if k is not None and k.name == "torch-cuda":
            torch_parts.append(body)
        if k is not None:
            bodies.setdefault(k.name, []).append(body)
        parts.append(Part(k.name if k else None, k.title if k else "not recognised", first,
                          first + len(lines) - 1, score))
        typed = " ".join(commands.get(first, "").split())
        if typed and k is not None:
            # the same command run again later in the paste (at another prompt), giving the same kind of output, shows
            # the state after the earlier run: the last one counts; pieces of one run's output (split at a traceback,
            # held-out round 79) all count
            here = prompts.get(first, first)
            for prev in [key for key in per_command if key[:2] == (typed, k.name) and prompts.get(key[2], key[2]) != here]:
                gone = per_command.pop(prev)  # once: inside the comprehension it was popped again for each finding
                findings = [f for f in findings if id(f) not in gone]
            per_command[(typed, k.name, first)] = {id(f) for f in fs}
        findings.extend(fs)
        last_part = (k, fs)
    findings = _cut_tail_not_judged(findings, last_part, len(pieces))
    if len(nvcc_parts) > 1:  # one paste, several nvcc outputs (e.g. /usr/bin/nvcc and /usr/local/cuda/bin/nvcc)
        two = several_toolkits(nvcc_parts)
        if two is not None:
            findings.append(two)
    if nvcc_parts and torch_parts:  # nvcc in one part, torch's CUDA in another: can extensions be built?
        mismatch = toolkit_and_torch(nvcc_parts[0][1], torch_parts)
        if mismatch is not None:
            findings.append(mismatch)
    for pkgs, rpm in (("nvidia-packages-dpkg", False), ("nvidia-packages-rpm", True)):
        if bodies.get("proc-driver-nvidia-version") and bodies.get(pkgs):  # the loaded module vs the packages
            split = loaded_vs_packaged(bodies["proc-driver-nvidia-version"][-1], bodies[pkgs][-1], rpm)
            if split is not None:
                findings.append(split)
    parts = _merge_same_kind(parts)
    known = [p for p in parts if p.kind]
    if not known:
        return Explained(name, None, "", findings or [_unknown(text)], max((p.confidence for p in parts), default=0.0),
                         parts)
    kind_name = "+".join(dict.fromkeys(p.kind for p in known if p.kind))
    title = " + ".join(dict.fromkeys(p.title for p in known))
    return Explained(name, kind_name, title, findings, min(p.confidence for p in known), parts)
