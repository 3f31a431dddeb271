"""Tests of wizard/parsers/scheduler.py: Slurm's ``scontrol show node`` and ``sinfo`` on real output (held-out round
10, tests/data/PROVENANCE.md; the real Slurm of tests/test_slurm.py is read there) and synthetic_ forms of the man
pages' state codes."""

from __future__ import annotations

import pytest
from hypothesis import given

from tests.probe_data import PUBLIC, text
from tests.strategies import TOOLS_FUZZ, inputs
from wizard.parsers import scheduler as s

SCONTROL = PUBLIC / "slurm__scontrol-node-idle-drain-gres-gpu-0-lt-1.txt"
SINFO = PUBLIC / "slurm__sinfo-cpu-partition-all-draining-gpu-fail.txt"


def test_multi_line_scontrol_show_node_is_one_record_with_its_reason_and_gres():
    (n,) = s.parse_show_nodes(text(SCONTROL))
    assert (n.name, n.state, n.gres) == ("yigou-dev-102-68", "IDLE+DRAIN", "gpu:nvidia-rtx-3090:1")
    assert n.reason == "gres/gpu count reported lower than configured (0 < 1)"  # the [slurm@time] tail dropped
    assert n.drained and n.words == {"IDLE", "DRAIN"}
    assert any(ln.lstrip().startswith("State=IDLE+DRAIN") for ln in n.lines)
    assert s.detect_scontrol_node(text(SCONTROL)) == 0.95


def test_one_line_records_of_scontrol_show_node_o_are_one_node_each():
    synthetic = ("NodeName=gpu01 Arch=x86_64 State=IDLE Gres=gpu:8 Reason=(null)\n"
                 "NodeName=gpu02 Arch=x86_64 State=DOWN*+NOT_RESPONDING Gres=gpu:8 Reason=Not responding "
                 "[slurm@2024-01-02T03:04:05]\n")
    a, b = s.parse_show_nodes(synthetic)
    assert (a.name, a.reason, b.name, b.reason) == ("gpu01", "", "gpu02", "Not responding")
    assert b.words == {"DOWN", "NOT_RESPONDING"}


def test_a_reason_grepped_without_its_state_is_a_record_but_show_node_still_needs_a_state():
    grepped = text(PUBLIC / "scontrol-show-node__slinky-drain-reason-gpu-ecc.txt")
    (n,) = s.parse_show_nodes(grepped)
    assert (n.name, n.state, n.reason) == ("node-0", "", "slurm-operator: GPU ECC error detected")
    assert s.detect_scontrol_node(grepped) == 0.95
    assert s.parse_show_node(grepped) is None  # wizard/slurm.py's drain/resume decision needs the State itself
    assert s.parse_show_nodes("NodeName=gpu01 Arch=x86_64 CPUTot=64\n") == []  # neither State nor Reason


@pytest.mark.parametrize("state, words", [
    ("drng@", {"DRAINING", "REBOOT_REQUESTED"}), ("fail*", {"FAIL", "NOT_RESPONDING"}), ("mix", {"MIXED"}),
    ("idle~", {"IDLE", "POWERED_DOWN"}), ("alloc", {"ALLOCATED"}), ("drained", {"DRAINED"}), ("maint", {"MAINT"}),
    ("IDLE+DRAIN", {"IDLE", "DRAIN"}), ("down$", {"DOWN", "MAINT"}),
])
def test_state_codes_are_read_as_scontrols_words(state, words):
    """sinfo(1) NODE STATE CODES: short names and the suffix characters."""
    assert s.state_words(state) == words


def test_default_sinfo_rows_expand_their_nodelists():
    f = s.parse_sinfo(text(SINFO))
    assert f.header.startswith("PARTITION") and not f.unread
    first = f.rows[0]
    assert (first.partition, first.state, len(first.nodes)) == ("cpu", "drng@", 55)
    assert "f005" not in first.nodes and "f006" in first.nodes
    assert s.detect_sinfo(text(SINFO)) == 0.95


def test_sinfo_R_reads_its_reason_with_spaces_from_the_right_and_Nl_its_reason_last():
    r = s.parse_sinfo("REASON               USER      TIMESTAMP           NODELIST\n"
                      "explain test         root      2026-12-04T05:31:26 vm-b\n")  # synthetic_, as Slurm 22.05 prints
    (row,) = r.rows
    assert (row.reason, row.nodes, row.state) == ("explain test", ("vm-b",), "")
    nl = s.parse_sinfo("Fri Dec 04 05:31:26 2026\n"
                       "NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY TMP_DISK WEIGHT AVAIL_FE REASON\n"
                       "vm-b           1    debug*     drained 2       2:1:1      1        0      1   (null) explain test\n")
    (row,) = nl.rows
    assert (row.state, row.partition, row.reason) == ("drained", "debug*", "explain test")


def test_other_text_is_not_slurm():
    assert s.detect_sinfo("NODELIST is a word\nnothing else\n") == 0.0
    assert s.detect_scontrol_node("State=ok NodeName\n") == 0.0


@TOOLS_FUZZ
@given(inputs(["NodeName=", "State=", "Reason=", "PARTITION AVAIL  TIMELIMIT  NODES  STATE NODELIST", "drng@",
               "c[001-00", "c[002,004]", "\n", "   ", "+", "*", "(null)"]))
def test_garbage_never_raises(t):
    s.parse_show_nodes(t)
    s.parse_sinfo(t)
    s.detect_sinfo(t)
    s.detect_scontrol_node(t)


def test_sinfo_with_fields_split_by_bars_and_columns_named_twice():
    """A real `sinfo -o %all`-style output (held-out round 13, Meta GCM test data): fields split by '|', STATE and
    PARTITION named twice; the filled long-form state is kept."""
    f = s.parse_sinfo(text(PUBLIC / "slurm__sinfo-gpu-node-drained-reason-replace.txt"))
    states = {r.nodes[0]: r.state for r in f.rows}
    assert states["node0201"] in ("drain*", "drained*") and states["node1537"] in ("alloc", "allocated")
    assert s.detect_sinfo(text(PUBLIC / "slurm__sinfo-gpu-node-drained-reason-replace.txt")) == 0.95


def test_headerless_sinfo_rows_with_the_node_count_first_keep_their_bracketed_node_lists():
    """Held-out round 44 (ArjunaUsers#85): `sinfo -h -o "%D %t %N"` rows ("4  maint c[005,011,013,019]"): the count
    first, the node list last with commas inside its brackets; every node of each list is read, with its state."""
    body = text(PUBLIC / "sinfo__gpu-partition-maint-down-fail.txt")
    f = s.parse_sinfo(body)
    by_state = {r.state: list(r.nodes) for r in f.rows}
    assert by_state["maint"] == ["c005", "c011", "c013", "c019"] and by_state["fail*"] == ["c020", "c021", "c022"]
    assert sum(len(r.nodes) for r in f.rows) == 12 and s.detect_sinfo(body) > 0.5
    # the node name first ("%n %T") still reads as before; a count before a single node name reads that node
    assert list(s.parse_sinfo("gpu01 idle\ngpu02 drained\n").rows[1].nodes) == ["gpu02"]
    assert list(s.parse_sinfo("1 down* gpu07\n1 idle gpu08\n").rows[0].nodes) == ["gpu07"]


def test_slurmctld_log_node_events_leave_each_node_in_its_last_state():
    # real: slurmctld setting a GPU node INVAL and DRAIN for a lower gres/gpu count (held-out round 27)
    (n,) = s.parse_slurmctld_log(text(PUBLIC / "slurm__gres-gpu-count-lower-inval-drain.txt"))
    assert (n.name, n.state, n.gres) == ("nodegpu1", "INVAL+DRAIN", ("gpu 4 -> 3",))
    assert n.reason == "gres/gpu count reported lower than configured (3 < 4)" and len(n.lines) == 4
    # synthetic_: the messages of slurmctld's node_mgr.c / ping_nodes.c, a node answering again and one resumed
    log = ("[2026-12-01T10:00:00.000] error: Nodes gpu01 not responding, setting DOWN\n"
           "[2026-12-01T10:01:00.000] Node gpu01 now responding\n"
           "[2026-12-01T10:02:00.000] update_node: node gpu02 reason set to: bad gpu\n"
           "[2026-12-01T10:02:00.000] update_node: node gpu02 state set to DRAINED\n"
           "[2026-12-01T10:03:00.000] update_node: node gpu03 state set to DRAINED\n"
           "[2026-12-01T10:04:00.000] update_node: node gpu03 state set to IDLE\n")
    got = {n.name: (n.state, n.reason) for n in s.parse_slurmctld_log(log)}
    assert got == {"gpu01": ("UP", "Not responding"), "gpu02": ("DRAINED", "bad gpu"), "gpu03": ("UP", "")}
    assert s.detect_slurmctld_log(log) == 0.9 and s.detect_slurmctld_log("Node gpu01 now responding\n") == 0.0


def test_a_command_that_sets_a_node_state_is_not_a_node_record():
    """Walk 27 #4: `bringup explain README.md` read the README's example `scontrol update NodeName=NODE State=DRAIN`
    as a drained node and failed. A command line (scontrol before NodeName=, a prompt, a Markdown code span) sets a
    state; only what `scontrol show node` prints is a record."""
    from wizard.parsers.scheduler import detect_scontrol_node, parse_show_nodes

    doc = ("- unhealthy: `scontrol update NodeName=NODE State=DRAIN Reason=\"bringup: x\"`\n"
           "$ scontrol update NodeName=gpu01 State=RESUME\n# scontrol update NodeName=gpu02 State=DOWN\n")
    assert parse_show_nodes(doc) == [] and detect_scontrol_node(doc) == 0.0
    real = "NodeName=gpu01 Arch=x86_64 CoresPerSocket=32\n   State=IDLE+DRAIN ThreadsPerCore=2\n   Reason=bad gpu\n"
    (n,) = parse_show_nodes(real)
    assert n.name == "gpu01" and "DRAIN" in n.state


def test_one_row_of_plain_sinfo_without_its_header_is_read():
    """Held-out round 48 (Cornell ECCO): one row of plain sinfo, its header not pasted
    ("regular*  up  infinite  2  drain cbsuecco02,cbsueccosl04"): read by the default format's shape."""
    body = text(PUBLIC / "sinfo__ecco-two-nodes-drained.txt")
    assert s.detect_sinfo(body) >= 0.8
    [row] = s.parse_sinfo(body).rows
    assert row.state == "drain" and list(row.nodes) == ["cbsuecco02", "cbsueccosl04"]
    assert s.detect_sinfo("up 5 days, load average: 0.1\n") == 0.0


def test_job_state_words_in_every_form_sacct_scontrol_and_squeue_print():
    assert s.job_state("OUT_OF_ME+") == "OUT_OF_MEMORY" and s.job_state("CANCELLED by 1234") == "CANCELLED"
    assert s.job_state("NF") == "NODE_FAIL" and s.job_state("NODE_FAIL") == "NODE_FAIL"
    assert s.job_state("banana") == "" and s.job_state("") == ""


def test_sacct_fixed_width_rows_with_a_redacted_user_keep_their_columns():
    jobs = s.parse_sacct(text(PUBLIC / "sacct__ulhpc-iris-gpu-jobs-timeout-completed.txt"))
    # " <login> 2243517" is shorter than the user name sacct padded for: the job id still lands whole in JobID
    assert [j.job for j in jobs][:2] == ["2243517", "2243518"] and jobs[0].state == "TIMEOUT"
    assert [j.gpus for j in jobs] == [0, 0, 2, 2, 2, 0, 0, 1]
    (step,) = [j for j in s.parse_sacct(text(PUBLIC / "sacct__fasrc-python-mem-test-out-of-memory.txt"))
               if j.state == "OUT_OF_MEMORY"]
    assert step.step and step.exit_code == "0:125"


def test_tres_gpus_counts_the_untyped_total_else_the_typed_ones():
    assert s.tres_gpus("cpu=224,mem=1914.50G,node=1,billing=80,gres/gpu=8,gres/gpu:h100=8") == (8, "h100")
    assert s.tres_gpus("gpu:2") == (2, "") and s.tres_gpus("gpu:ampere:64") == (64, "ampere")
    assert s.tres_gpus("cpu=4,mem=8G,node=1") == (0, "")


def test_scontrol_show_job_records_and_parsable_sacct():
    (j,) = s.parse_show_job(text(PUBLIC / "unrecognised__slurm-scontrol-show-job-8node-64gpu-running.txt"))
    assert (j.job, j.state, j.gpus, j.exit_code) == ("8401413", "RUNNING", 64, "0:0")
    rows = s.parse_sacct(text(PUBLIC / "sacct__a100-mig-3g20gb-and-h100-alloctres-slurm-mail142.txt"))
    assert [(r.job, r.gpus) for r in rows if not r.step] == [("8117657", 1), ("8117678", 1)]
    assert s.detect_sacct(text(SINFO)) == 0.0 and s.detect_scontrol_job(text(SCONTROL)) == 0.0


@TOOLS_FUZZ
@given(inputs(["JobID", "State", "ExitCode", "-----", "|", "JobId=", "JobState=", "AllocTRES=", "gres/gpu=", "\n",
               "   ", "+", "OUT_OF_ME+", "node=1,cpu=2"]))
def test_job_readers_never_raise(t):
    s.parse_sacct(t)
    s.parse_show_job(t)
    s.detect_sacct(t)
    s.detect_scontrol_job(t)
