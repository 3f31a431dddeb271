"""Tests of wizard/fleet.py and wizard/rules/fleet.py: `bringup check --nodes` and `bringup capture --nodes`.

The fleet is 15 real sshd servers on 127.0.0.2-16 (tests/sshd.py) plus nodes reached through a ProxyCommand. Every
"node" is this machine, so two of them are made odd with sshd's own ``SetEnv PATH=...`` (sshd_config(5): applied to
every session that server starts): their PATH finds an ``nvidia-smi`` that prints a real ``nvidia-smi -q -x``
captured on an A100 node (driver 535.54.03), the other nodes' one captured on an A10G node (driver 515.105.01)
(tests/data/cases, listed in tests/data/PROVENANCE.md). gpu015 is slow (its ProxyCommand holds the login for 600 s
after the server's banner), gpu016 is unreachable (nothing listens there).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import DATA, ROOT, bringup_cmd, env_for_cli
from wizard.fleet import FleetError, _FleetHost, _read_batch, _run_answers, nodes_from_hostfile, nodes_from_spec
from wizard.hosts import CommandResult, SSHHost
from wizard.model import Verdict
from wizard.rules.fleet import FLEET_IDS, Value, fold, judge_fleet

A10G = DATA / "cases" / "nvidia-smi-q-x__a10g-idle-p8-healthy.xml"
A100 = DATA / "cases" / "nvidia-smi-q-x__a100-sxm4-80gb-mig-enabled-1-of-4-gpus.xml"
ODD = (3, 11)
"""The nodes (gpu003, gpu011) whose nvidia-smi is the A100 node's."""

RELAY = textwrap.dedent('''\
    """ProxyCommand: relay stdio <-> HOST:PORT, noting start and end (CLOCK_MONOTONIC, system-wide) in LOG; after the
    server's first bytes (its SSH banner) wait SLEEP s: a login that hangs past ssh's ConnectTimeout, which covers the
    TCP connect and the banner only."""
    import os, signal, socket, sys, threading, time
    log, sleep_s, host, port = sys.argv[1], float(sys.argv[2]), sys.argv[3], int(sys.argv[4])

    def note(what):
        with open(log, "a") as fh:
            fh.write(f"{what} {host}:{port} {time.monotonic():.6f}\\n")

    ENDING = threading.Lock()

    def end(*_):
        """Note the end once and exit: ssh's SIGHUP and the server closing can come together, and only the first of
        the two writes (a second 'end' line made the log show more connections closed than opened)."""
        if ENDING.acquire(blocking=False):
            note("end")
            os._exit(0)
        threading.Event().wait()  # the other one is noting the end and exits the process

    note("start")
    signal.signal(signal.SIGHUP, end)  # ssh ends its ProxyCommand with SIGHUP
    s = socket.create_connection((host, port))

    def down():
        first = True
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                os.write(1, b)
                if first and sleep_s:
                    time.sleep(sleep_s)
                first = False
        except OSError:
            pass
        end()

    threading.Thread(target=down, daemon=True).start()
    while True:
        b = os.read(0, 65536)
        if not b:
            break
        s.sendall(b)
    s.shutdown(socket.SHUT_WR)
    threading.Event().wait()
''')


@dataclass
class Fleet:
    cluster: object
    ssh_config: Path
    recorded_config: Path
    relay_log: Path
    tmp: Path


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    from tests.sshd import SshdUnavailable, ensure_openssh, fake_nvidia_smi, start_cluster

    tmp = tmp_path_factory.mktemp("fleet")
    a, b = fake_nvidia_smi(tmp / "smi-a10g", A10G), fake_nvidia_smi(tmp / "smi-a100", A100)
    path = os.environ.get("PATH", "/usr/bin:/bin")
    extra = {f"node{i}": [f"SetEnv PATH={b if i in ODD else a}:{path}"] for i in range(1, 16)}
    try:
        ensure_openssh()
        cluster = start_cluster(tmp / "sshd", 15, extra)
    except SshdUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    relay = tmp / "relay.py"
    relay.write_text(RELAY)
    log = tmp / "relay.log"
    base = cluster.ssh_config.read_text()  # its `Host *` (user, key, known_hosts) applies after these
    direct, recorded = [], []
    for i in range(1, 15):
        n = cluster.node(f"node{i}")
        direct += [f"Host gpu{i:03d}", f"  HostName {n.addr}", f"  Port {n.port}"]
        recorded += [f"Host gpu{i:03d}", f"  HostName {n.addr}", f"  Port {n.port}",
                     f"  ProxyCommand {sys.executable} {relay} {log} 0 %h %p"]
    n15 = cluster.node("node15")
    direct += ["Host gpu015", f"  HostName {n15.addr}", f"  Port {n15.port}",
               f"  ProxyCommand {sys.executable} {relay} {tmp / 'slow.log'} 600 %h %p"]
    direct += ["Host gpu016", f"  HostName {cluster.dead.addr}", f"  Port {cluster.dead.port}"]
    cfg, rcfg = tmp / "ssh_config", tmp / "ssh_config_recorded"
    cfg.write_text("\n".join(direct) + "\n" + base)
    rcfg.write_text("\n".join(recorded) + "\n" + base)
    try:
        yield Fleet(cluster, cfg, rcfg, log, tmp)
    finally:
        cluster.stop()


def _bringup(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(bringup_cmd(*args), capture_output=True, text=True, cwd=ROOT, env=env_for_cli(),
                          timeout=timeout)


NODE_TIMEOUT_S = 45
"""--node-timeout of the 16-node run (one step, os.release, besides the probes the fleet comparison reads: a few ssh
sessions a node): the healthy nodes finish well within it even on a loaded 2-core machine; gpu015's login hangs for
600 s, so it times out."""


@pytest.fixture(scope="module")
def sixteen(fleet, tmp_path_factory):
    state = tmp_path_factory.mktemp("state16")
    r = _bringup("--state", str(state), "check", "--nodes", "gpu[001-016]", "--ssh-config", str(fleet.ssh_config),
                 "--step", "os.release", "--json", "--fanout", "8", "--node-timeout", str(NODE_TIMEOUT_S))
    assert r.stdout.strip(), r.stderr
    return r, json.loads(r.stdout)


def test_all_sixteen_nodes_are_judged_and_the_json_follows_the_schema(sixteen):
    import jsonschema

    r, doc = sixteen
    jsonschema.validate(doc, json.loads((ROOT / "assets" / "schema" / "check.schema.json").read_text()))
    assert list(doc["nodes"]) == [f"gpu{i:03d}" for i in range(1, 17)]
    for i in range(1, 15):
        node = doc["nodes"][f"gpu{i:03d}"]
        assert "error" not in node, node
        ids = {f["id"] for f in node["findings"]}
        assert "os.release" in ids  # its own check ran there
        assert not any(fid.startswith("fleet.") for fid in ids)
        assert node["host"]["hostname"] and node["host"]["kernel"]
    assert doc["host"]["hostname"] == "gpu[001-016]" and doc["fleet"]["nodeset"] == "gpu[001-016]"


def test_an_unreachable_node_is_its_finding_with_ssh_s_words_and_the_others_finish(sixteen, fleet):
    _, doc = sixteen
    dead = doc["nodes"]["gpu016"]
    assert dead["verdict"] == "fail" and [f["id"] for f in dead["findings"]] == ["fleet.unreachable"]
    f = dead["findings"][0]
    assert "Connection refused" in f["message"] and fleet.cluster.dead.addr in f["message"]
    assert "Connection refused" in dead["error"] and f["step"] == "multinode.consistency"
    assert "ssh gpu016 true" in f["remedy"]


def test_a_slow_node_times_out_at_node_timeout_and_is_killed(sixteen, fleet):
    _, doc = sixteen
    slow = doc["nodes"]["gpu015"]
    assert [f["id"] for f in slow["findings"]] == ["fleet.timeout"] and slow["verdict"] == "fail"
    assert slow["error"] == f"timed out after {NODE_TIMEOUT_S} s"
    assert NODE_TIMEOUT_S - 1 <= slow["seconds"] < NODE_TIMEOUT_S + 15
    started = (fleet.tmp / "slow.log").read_text()
    assert started.startswith("start ") and "end" not in started  # killed with its ssh at the node's timeout
    assert all(doc["nodes"][f"gpu{i:03d}"]["seconds"] < NODE_TIMEOUT_S for i in range(1, 15))


def test_the_exit_status_is_the_worst_node_s(sixteen):
    r, doc = sixteen
    order = ["skip", "pass", "unknown", "warn", "fail"]
    verdicts = [n["verdict"] for n in doc["nodes"].values()] + [f["verdict"] for f in doc["findings"]]
    worst = max(verdicts, key=order.index)
    assert doc["verdict"] == worst == "fail"
    assert r.returncode == {"fail": 2, "warn": 1, "unknown": 1}.get(worst, 0)


def test_the_odd_nodes_are_named_with_a_folded_nodeset(sixteen):
    _, doc = sixteen
    by_id = {f["id"]: f for f in doc["findings"]}
    assert set(by_id) <= set(FLEET_IDS)
    drv = by_id["fleet.consistency.driver"]
    assert drv["verdict"] == "fail" and drv["subject"] == "gpu[003,011]"
    assert drv["message"].startswith("gpu[003,011]: driver 535.54.03, the other 12: 515.105.01")
    assert "not compared: gpu015 (timed out), gpu016 (unreachable)" in drv["message"]
    assert any("<driver_version>535.54.03</driver_version>" in e for e in drv["evidence"])
    assert by_id["fleet.consistency.gpu_model"]["message"].startswith(
        "gpu[003,011]: GPU model NVIDIA A100-SXM4-80GB, the other 12: NVIDIA A10G")
    assert by_id["fleet.consistency.vbios"]["verdict"] == "fail"
    for same in ("kernel", "os", "gpu_count"):  # one machine: these agree
        assert by_id[f"fleet.consistency.{same}"]["verdict"] == "pass", by_id[f"fleet.consistency.{same}"]
    assert "on all 14 nodes (gpu[001-014])" in by_id["fleet.consistency.kernel"]["message"]


def _max_concurrent(log: Path) -> int:
    """Most nodes whose ssh connection (the ProxyCommand's life) was open at the same instant."""
    spans: dict[str, list[float]] = {}
    for line in log.read_text().splitlines():
        what, node, t = line.split()
        spans.setdefault(node, []).append(float(t))
    events = sorted((t, +1 if i == 0 else -1) for ts in spans.values() for i, t in enumerate((min(ts), max(ts))))
    cur = best = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best


@pytest.fixture(scope="module")
def fanout3(fleet, tmp_path_factory):
    state = tmp_path_factory.mktemp("state3")
    fleet.relay_log.unlink(missing_ok=True)
    r = _bringup("--state", str(state), "check", "--nodes", "gpu[001-014]", "--ssh-config", str(fleet.recorded_config),
                 "--stage", "os", "--fanout", "3", "--progress", "--node-timeout", "120")
    return r, fleet.relay_log.read_text()


def test_fanout_bounds_the_nodes_connected_at_once(fanout3, fleet):
    r, log = fanout3
    starts = [ln for ln in log.splitlines() if ln.startswith("start")]
    assert len(starts) == 14  # one connection per node: every probe went over that node's master
    assert len([ln for ln in log.splitlines() if ln.startswith("end")]) == 14  # each closed when its node was done
    assert 2 <= _max_concurrent(fleet.relay_log) <= 3, log


def test_text_output_has_the_node_table_then_folded_findings(fanout3):
    r, _ = fanout3
    out = r.stdout
    assert out.startswith("bringup check on 14 nodes: gpu[001-014] (fanout 3,")
    table = out.split("\n\n")[0].splitlines()
    head = next(i for i, ln in enumerate(table) if ln.startswith("name "))  # after the wrapped summary line
    assert table[head].split()[:3] == ["name", "verdict", "os"]
    assert [ln.split()[0] for ln in table[head + 1:head + 15]] == [f"gpu{i:03d}" for i in range(1, 15)]
    assert all(len(ln) <= 80 for ln in out.splitlines()), out  # walk 29 #9; the table too (walk 34 #18)
    joined = re.sub(r"\n +", " ", out)  # a wrapped finding's continuation lines, indented, joined back
    assert re.search(r"^\[FAIL\] fleet\.consistency\.driver +gpu\[003,011\]: driver 535\.54\.03, the other 12: "
                     r"515\.105\.01", joined, re.M)  # the id column as wide as the longest id printed
    assert "\ngpu[001-014] (14 nodes):\n" in out  # what every node has, once
    assert "os.kernel_headers" in out.split("gpu[001-014] (14 nodes):")[1]
    assert out.rstrip().splitlines()[-1].startswith("overall: ")
    lines = r.stderr.splitlines()  # --progress without a terminal: one line per finished node
    assert "nodes 14/14 done" in lines
    assert any(ln.startswith("nodes 1/14 done, slowest still running: gpu") and ln.endswith(" s)") for ln in lines)


def test_capture_writes_one_bundle_per_node_and_report_reads_them(fleet, tmp_path):
    out = tmp_path / "bundles"
    r = _bringup("--state", str(tmp_path / "state"), "capture", "--nodes", "gpu[001,003,016]", "-o", str(out),
                 "--ssh-config", str(fleet.ssh_config), "--node-timeout", "120")
    assert r.returncode == 2, r.stdout + r.stderr  # gpu016 could not be captured
    assert sorted(p.name for p in out.iterdir()) == ["gpu001.tar.gz", "gpu003.tar.gz"]
    assert "gpu016: no bundle: unreachable: ssh: connect to host" in r.stdout and "2 of 3 nodes captured" in r.stdout
    from wizard.capture import load_bundle

    host, manifest = load_bundle(out / "gpu003.tar.gz")
    assert manifest["host"]["fleet_node"] == "gpu003"
    smi = asyncio.run(host.run(["nvidia-smi", "-q", "-x"]))
    assert smi.stdout == A100.read_bytes()  # gpu003's own output came back over ssh
    rep = _bringup("report", "--snapshot", str(out / "gpu001.tar.gz"), str(out / "gpu003.tar.gz"), "--format", "json",
                   "-o", "-")
    assert rep.returncode == 0, rep.stderr
    doc = json.loads(rep.stdout)
    assert [n["name"] for n in doc["nodes"]] == ["gpu001", "gpu003"]


def test_batched_reads_and_globs_give_what_sshhost_gives(fleet, tmp_path):
    d = tmp_path / "files"
    d.mkdir()
    (d / "text").write_text("line 1\nline 2\n\n\n")
    (d / "binary").write_bytes(bytes(range(256)) + b"\0\n")
    (d / "empty").write_bytes(b"")
    (d / "sp ace").write_text("x")
    (d / "sub").mkdir()
    paths = [str(d / n) for n in ("text", "binary", "empty", "sp ace", "sub", "missing")] + ["/proc/self/status"]
    patterns = [f"{d}/*", f"{d}/nothing*", f"{d}/s*"]

    async def both():
        plain = SSHHost("gpu001", ssh_config=str(fleet.ssh_config))
        batched = _FleetHost(SSHHost("gpu001", ssh_config=str(fleet.ssh_config)), 8)
        a = await asyncio.gather(*(plain.read(p) for p in paths), *(plain.glob(p) for p in patterns))
        b = await asyncio.gather(*(batched.read(p) for p in paths), *(batched.glob(p) for p in patterns))
        return a, b, batched

    plain, batched, host = asyncio.run(both())
    for x, y in zip(plain[:6], batched[:6]):
        assert (x.path, x.data, x.error) == (y.path, y.data, y.error)
    assert batched[5].error == "no such file" and batched[4].error == "is a directory"
    assert b"Name:" in (batched[6].data or b"")
    assert plain[7:] == batched[7:] and batched[8] == []
    assert str(d / "sp ace") in batched[7]


class _Counting(SSHHost):
    """A real SSHHost that counts its ssh sessions, and can refuse the batch script as a node without coreutils
    ``timeout`` does (its exit status 98)."""

    def __init__(self, *a, refuse_batch: bool = False, **kw):
        super().__init__(*a, **kw)
        self.sessions, self.refuse_batch = 0, refuse_batch

    async def run(self, argv, timeout_s=20.0, stdin=None):
        self.sessions += 1
        if self.refuse_batch and argv[:2] == ["sh", "-c"] and "command -v timeout" in argv[2]:
            return CommandResult(argv, 98, b"", b"")
        return await super().run(argv, timeout_s, stdin)


COMMANDS = [(["echo", "hi there"], 20.0), (["sh", "-c", "echo oops >&2; exit 3"], 20.0),
            (["no-such-tool-xyz", "--version"], 20.0), (["printf", "a\\000b\\377\\n"], 20.0),
            (["sh", "-c", "echo started; sleep 30"], 1.0), (["cat", "/proc/self/status"], 20.0),
            (["sh", "-c", "printf '%s' \"$LC_ALL\""], 20.0)]


@pytest.mark.parametrize("refuse", [False, True], ids=["batched", "node-without-timeout"])
def test_commands_asked_together_run_in_one_session_and_give_what_sshhost_gives(fleet, refuse):
    """A check asks for about thirty commands at once; each its own ssh session was most of a node's time (and one ssh
    client a command here): they run together in one session, with the same exit status, output and error words as
    SSHHost gives (a missing tool is "command not found", a command past its limit "timed out", binary output exact);
    a node that cannot run the batch script gets each command in its own session, with the same results."""
    async def both():
        plain = SSHHost("gpu001", ssh_config=str(fleet.ssh_config))
        inner = _Counting("gpu001", ssh_config=str(fleet.ssh_config), refuse_batch=refuse)
        batched = _FleetHost(inner, 8)
        a = await asyncio.gather(*(plain.run(c, t) for c, t in COMMANDS))
        b = await asyncio.gather(*(batched.run(c, t) for c, t in COMMANDS))
        return a, b, inner.sessions

    plain, batched, sessions = asyncio.run(both())
    assert sessions == (1 + len(COMMANDS) if refuse else 1)
    for x, y in zip(plain, batched):
        assert (x.argv, x.rc, x.error) == (y.argv, y.rc, y.error)
        # stdout as SSHHost gives it; stderr is compared below per command: a plain session's stderr also carries the
        # node's login shell's own messages (a profile's "pyenv: cannot rehash" when seven logins race), a batch's
        # holds only the command's. /proc/self/status is the reading process's own; a run cut by its limit keeps
        # what arrived (below)
        if x.argv[0] != "cat" and x.rc != 124:
            assert x.stdout == y.stdout, x.argv
    hi, oops, missing, binary, slow, status, env = batched
    assert hi.ok and hi.stdout == b"hi there\n" and oops.rc == 3 and oops.stderr == b"oops\n"
    assert missing.rc == 127 and missing.error == "command not found: no-such-tool-xyz"
    if not refuse:  # a batch holds only what each command wrote to stderr
        assert hi.stderr == b"" and binary.stderr == b"" and env.stderr == b""
    assert binary.stdout == b"a\0b\xff\n"
    assert slow.rc == 124 and slow.error == "timed out after 1 s (on gpu001 over ssh)"
    assert slow.stdout == (b"" if refuse else b"started\n")  # a batch keeps what it printed before its limit
    assert b"Name:" in status.stdout and env.stdout == b"C"


def test_a_command_batch_that_cannot_be_read_is_refused_whole():
    ok = CommandResult([], 0, b"C 0 aGk= \nC 127  bm8=\n")
    assert _run_answers(ok, 2) == [(0, b"hi", b""), (127, b"", b"no")]
    assert _run_answers(ok, 3) is None  # one line too few
    assert _run_answers(CommandResult([], 0, b"C 0 !!! \n"), 1) is None  # not base64
    assert _run_answers(CommandResult([], 0, b"C x aGk= \n"), 1) is None  # not an exit status
    assert _run_answers(CommandResult([], 0, b"R 0 aGk= ok\n"), 1) is None


def test_a_batch_that_cannot_be_read_is_refused_whole():
    ok = CommandResult([], 0, b"G L2E=\nR eA== ok\nR  err bm8=\n")
    assert _read_batch(ok, ["g", "r", "r"]) == [(b"/a", None), (b"x", None), (b"", b"no")]
    assert _read_batch(ok, ["g", "r"]) is None  # one line too many
    assert _read_batch(CommandResult([], 0, b"G !!!\n"), ["g"]) is None  # not base64
    assert _read_batch(CommandResult([], 0, b"R eA== maybe\n"), ["r"]) is None


def _v(text: str) -> Value:
    return Value(text, f"<driver_version>{text}</driver_version>")


def test_judge_fleet_names_the_odd_nodes_folded_and_the_majority():
    vals = {f"gpu{i:03d}": {"driver": _v("570.86.15" if i in (3, 11) else "580.95.05")} for i in range(1, 17)}
    fs = {f.id: f for f in judge_fleet(vals)}
    drv = fs["fleet.consistency.driver"]
    assert drv.verdict is Verdict.FAIL and drv.subject == "gpu[003,011]"
    assert drv.message == "gpu[003,011]: driver 570.86.15, the other 14: 580.95.05"
    assert drv.evidence == ("[gpu001] <driver_version>580.95.05</driver_version>",
                            "[gpu003] <driver_version>570.86.15</driver_version>")
    assert "580.95.05" in drv.remedy and drv.step == "multinode.consistency"
    assert fs["fleet.consistency.kernel"].verdict is Verdict.SKIP  # no node told it


def test_judge_fleet_without_majority_unread_nodes_and_too_few_nodes():
    split = {f"n{i}": {"driver": _v("1" if i < 2 else "2")} for i in range(4)}
    f = {x.id: x for x in judge_fleet(split)}["fleet.consistency.driver"]
    assert f.verdict is Verdict.FAIL and f.message == "driver differs with no majority: n[0-1]: 1; n[2-3]: 2"
    some = {"a1": {"driver": _v("1")}, "a2": {"driver": _v("1")}, "a3": {"driver": None}}
    f = {x.id: x for x in judge_fleet(some, {"a4": "unreachable"})}["fleet.consistency.driver"]
    assert f.verdict is Verdict.UNKNOWN and f.subject == "a3"
    assert f.message == "a3: driver not read, so not compared; the other 2: 1; not compared: a4 (unreachable)"
    alone = judge_fleet({"a1": {"driver": _v("1")}}, {"a2": "timed out"})
    assert [(x.id, x.verdict) for x in alone] == [("fleet.consistency.driver", Verdict.UNKNOWN)]
    assert "at least 2" in alone[0].message and "a2 (timed out)" in alone[0].message
    assert alone[0].message.startswith("only a1 answered: ")  # walk 38 #21: "1 node(s) answered (a1)"
    none = judge_fleet({}, {"a1": "unreachable", "a2": "unreachable"})[0]
    assert none.message.startswith("no node answered: ") and "(none)" not in none.message  # not "0 node(s) ... (none)"
    assert fold(["b", "a1", "a2"]) == "a[1-2],b"


def test_node_lists_from_a_nodeset_and_a_hostfile(tmp_path):
    assert [n.name for n in nodes_from_spec("gpu[001-003],login")] == ["gpu001", "gpu002", "gpu003", "login"]
    for bad, words in (("gpu[003-001", "not a nodeset"), ("", "empty"), ("-oProxyCommand=x", "starts with '-'")):
        with pytest.raises(FleetError, match=words):
            nodes_from_spec(bad)
    hf = tmp_path / "hosts"
    hf.write_text("# two nodes\nn1 root@10.0.0.1 8\nnode2 slots=8\n")
    assert [(n.name, n.target) for n in nodes_from_hostfile(str(hf))] == [("n1", "root@10.0.0.1"), ("node2", "node2")]
    hf.write_text("n1 a 8\nn2 b\n")
    with pytest.raises(FleetError, match="line 2: expected 'name ssh_target gpus'"):
        nodes_from_hostfile(str(hf))
    with pytest.raises(FleetError, match="cannot read the hostfile"):
        nodes_from_hostfile(str(tmp_path / "none"))


@pytest.mark.parametrize("args, words", [
    (["--nodes", "gpu[1-"], "is not a nodeset"),
    (["--nodes", "a", "--hostfile", "/dev/null"], "not both"),
    (["--nodes", "a", "--fanout", "0"], "--fanout must be from 1"),
    (["--nodes", "a", "--node-timeout", "nan"], "--node-timeout must be"),
    (["--nodes", "a", "--ssh-config", "/no/such/config"], "no such file"),
])
def test_a_bad_node_list_or_option_is_exit_3_with_the_reason(args, words, tmp_path):
    r = _bringup("--state", str(tmp_path), "check", *args, timeout=60)
    assert r.returncode == 3 and words in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert r.stdout == ""


def test_a_bringup_bug_on_one_node_is_that_node_s_finding_and_the_others_finish(fleet):
    from wizard.fleet import FleetNode, for_each_node

    seen = []

    async def work(node, host):
        if node.name == "gpu002":
            raise RuntimeError("boom")
        return (await host.run(["echo", node.name])).text.strip()

    got = asyncio.run(for_each_node([FleetNode(n, n) for n in ("gpu001", "gpu002", "gpu016")], work, fanout=2,
                                    node_timeout_s=60, ssh_config=str(fleet.ssh_config),
                                    on_progress=lambda p: seen.append(p.line())))
    assert got["gpu001"].value == "gpu001" and not got["gpu001"].findings
    assert [(f.id, f.verdict) for f in got["gpu002"].findings] == [("fleet.error", Verdict.UNKNOWN)]
    assert "RuntimeError('boom')" in got["gpu002"].findings[0].message
    assert [f.id for f in got["gpu016"].findings] == ["fleet.unreachable"] and got["gpu016"].reason == "unreachable"
    assert seen[-1] == "nodes 3/3 done" and any("slowest still running" in s for s in seen)


def test_capture_into_a_file_or_an_unmakeable_directory_is_exit_3(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    r = _bringup("--state", str(tmp_path / "s"), "capture", "--nodes", "a", "-o", str(f), timeout=60)
    assert r.returncode == 3 and "is a file" in r.stderr and f.read_text() == "x"
    r = _bringup("--state", str(tmp_path / "s"), "capture", "--nodes", "a", "-o", str(f / "sub"), timeout=60)
    assert r.returncode == 3 and "cannot make the directory" in r.stderr and "Traceback" not in r.stderr


def test_unreachable_nodes_are_said_in_the_readers_language_and_json_keeps_english(tmp_path):
    """Walk 28 #14 C: under Chinese headings the `check --nodes` table said "gpu001  fail    unreachable: ssh: ...",
    its last line "总体：失败（fail: gpu[001-002]）", and `capture --nodes` "没有采集包：unreachable: ssh: ...". The
    verdict and reason words are translated (ssh's own words kept); --json and the English output are unchanged."""
    cfg = tmp_path / "ssh_config"
    cfg.write_text("Host *\n  HostName 127.0.0.1\n  Port 1\n  ConnectTimeout 5\n")
    common = ("--ssh-config", str(cfg), "--node-timeout", "30")
    zh = _bringup("--state", str(tmp_path / "s"), "--lang", "zh_CN", "check", "--nodes", "gpu[001-002]", *common,
                  timeout=120)
    rows = [ln for ln in zh.stdout.splitlines() if ln.startswith("gpu00")][:2]
    assert len(rows) == 2 and all(ln.split()[1] == "失败" and "  无法连接：ssh" in ln for ln in rows), zh.stdout
    assert zh.stdout.rstrip().splitlines()[-1] == "总体：失败（失败：gpu[001-002]）", zh.stdout
    # walk 36 #2: the reason's wrapped line sits under the reason, counted in terminal cells (失败 is four)
    from rich.cells import cell_len

    lines = zh.stdout.splitlines()
    first = lines.index(rows[0])
    start = cell_len(rows[0][:rows[0].index("无法连接")])
    if first + 1 < len(lines) and lines[first + 1].startswith(" "):
        cont = lines[first + 1]
        assert len(cont) - len(cont.lstrip(" ")) == start, (rows[0], cont)
    en = _bringup("--state", str(tmp_path / "s"), "--lang", "en", "check", "--nodes", "gpu[001-002]", *common,
                  timeout=120)
    assert re.search(r"^gpu001  fail    unreachable: ssh", en.stdout, re.M), en.stdout
    assert en.stdout.rstrip().splitlines()[-1] == "overall: fail (fail: gpu[001-002])"
    js = json.loads(_bringup("--state", str(tmp_path / "s"), "--lang", "zh_CN", "check", "--nodes", "gpu001",
                             "--json", *common, timeout=120).stdout)
    assert js["verdict"] == "fail"
    cap = _bringup("--state", str(tmp_path / "s"), "--lang", "zh_CN", "capture", "--nodes", "gpu001", "-o",
                   str(tmp_path / "b"), *common, timeout=120)
    assert "gpu001：没有采集包：无法连接：ssh" in cap.stdout, cap.stdout
