"""wizard/parsers/launcher.py on real torchrun / DeepSpeed launcher outputs (tests/data/public)."""

from __future__ import annotations

from pathlib import Path

import pytest
from wizard.parsers.launcher import detect_launcher, parse_launcher

PUBLIC = Path(__file__).resolve().parents[1] / "data" / "public"


def _read(name: str) -> str:
    return (PUBLIC / name).read_text()


def test_child_failed_summary_reads_every_rank_and_the_root_cause():
    log = parse_launcher(_read("torchrun__openocr71-2ranks-sigbus-7-same-host-partial.txt"))
    assert log.tool == "torchrun" and log.has_summary
    assert sorted((e.rank, e.local_rank, e.exitcode) for e in log.exits) == [(0, 0, -7), (1, 1, -7)]
    root = [e for e in log.exits if e.root_cause]
    assert [e.rank for e in root] == [0]
    assert {e.host for e in log.exits} == {"server"}
    assert all(e.traceback.startswith("Signal 7 (SIGBUS)") for e in log.exits)


def test_summary_excerpt_that_starts_inside_an_entry():
    log = parse_launcher(_read("torchrun__picotron6-8ranks-sigabrt-6-root-cause-excerpt.txt"))
    assert [e.exitcode for e in log.exits] == [-6, -6, -6]
    assert [e.rank for e in log.exits] == [None, 7, 0]


def test_entries_whose_index_lines_were_removed_are_still_apart():
    text = _read("torchrun__openocr71-2ranks-sigbus-7-same-host-partial.txt")
    cut = "\n".join(ln for ln in text.splitlines() if ln.strip() not in ("[0]:", "[1]:"))
    assert sorted(e.rank for e in parse_launcher(cut).exits) == [0, 1]


def test_exit_code_one_keeps_the_traceback_hint_and_error_file():
    log = parse_launcher(_read("torchrun__glm130b100-ranks-6-7-exitcode-1-no-traceback-partial.txt"))
    assert {(e.rank, e.exitcode) for e in log.exits} == {(6, 1), (7, 1)}
    assert all(e.error_file == "<N/A>" and e.traceback.startswith("To enable traceback") for e in log.exits)


def test_deepspeed_return_code_line():
    log = parse_launcher(_read("deepspeed-launch__ds3232-killing-subprocess-return-code-minus-9.txt"))
    assert log.tool == "deepspeed"
    assert [(e.exitcode, e.local_rank) for e in log.exits] == [(-9, 0)]


def test_deepspeed_launch_plan_and_rank_exception():
    log = parse_launcher(_read("deepspeed-launch__ds618-2gpu-launch-plan-then-nameerror-in-script.txt"))
    assert (log.nnodes, log.procs_per_node, log.world_size, log.visible_devices) == (1, 2, 2, "0,1")
    assert log.no_hostfile and not log.exits
    assert log.exceptions == ["NameError: name 'garbageeeeee' is not defined"] * 2


def test_deepspeed_clean_exits_counted():
    log = parse_launcher(_read("deepspeed-launch__domino-gpt3-4proc-iterations-all-exit-successfully.txt"))
    assert log.processes_succeeded == 4 and not log.exits


def test_torchrun_agents_and_launch_configs():
    log = parse_launcher(_read("torchrun__awsome-cpu-ddp-2node-4proc-worker-group-succeeded.txt"))
    assert log.tool == "torchrun"
    assert (log.nnodes, log.procs_per_node, log.world_size, log.agents_succeeded) == (2, 4, 8, 2)


def test_agent_failed_line_alone():
    line = ("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 3 (pid: 812917) "
            "of binary: /usr/bin/python")  # the ColossalAI#3514 form (synthetic: one line)
    log = parse_launcher(line)
    assert [(e.exitcode, e.local_rank) for e in log.exits] == [(-9, 3)]


@pytest.mark.parametrize("name", sorted(p.name for p in PUBLIC.glob("*.txt")
                                        if p.name.startswith(("torchrun__", "deepspeed-launch__"))))
def test_detector_claims_launcher_files(name):
    assert detect_launcher(_read(name)) >= 0.5


@pytest.mark.parametrize("name", sorted(p.name for p in PUBLIC.glob("*.txt")
                                        if not p.name.startswith(("torchrun__", "deepspeed-launch__")))[:200])
def test_detector_leaves_other_kinds_alone(name):
    assert detect_launcher(_read(name)) == 0.0


def test_garbage_is_not_a_launcher_output():
    log = parse_launcher("exitcode: banana\n[0]:\nrank : x (local_rank: y)\n")
    assert log.exits == [] and log.tool == ""
    assert detect_launcher("hello world") == 0.0
