"""Validation in the TUI: a real torchrun (gloo) node validation started from the step screen, its live
progress line, and the results panel (judged table, busbw chart with the floor, verdicts) behind `v`."""

from __future__ import annotations


import steps
from screens.action import ActionScreen
from screens.dialogs import ConfirmAction
from tests.conftest import DATA, frozen_clock
from tests.screens.test_tui import SIZE, app_for, ask_action, boot_id_of, settle, wait_until
from textual.widgets import Static
from wizard.engine import Build
from screens.glyphs import VERDICT_LABEL
from wizard.model import Verdict

NODE_LOG = DATA / "validate" / "node-cpu-2ranks.log"
"""A real `bringup validate node --device cpu --quick` action log (2 gloo ranks on this 2-core VM)."""


def _static(app, selector: str) -> str:
    """A Static's text; rich renderables (the results panel) rendered to plain text at 78 columns."""
    from rich.console import Console

    w = app.screen.query_one(selector, Static)
    content = w.content
    if isinstance(content, str):
        return content
    con = Console(width=78, record=True, file=open("/dev/null", "w"), color_system=None)
    con.print(content)
    return con.export_text()


async def test_node_validation_runs_from_the_step_screen_with_progress_and_results(state_dir, devvm_host):
    b = Build.open(state_dir, steps.STAGES, {"hostname": "vm", "boot_id": boot_id_of(devvm_host)}, create=True,
                   clock=frozen_clock)
    b.store.set_plan(validate_device="cpu", validate_quick=True)
    b.close()
    app = app_for(state_dir, devvm_host)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        assert await ask_action(pilot, app, "node.validate", ConfirmAction, tries=400)
        await pilot.press("y")
        assert await wait_until(pilot, lambda: isinstance(app.screen, ActionScreen), tries=200)
        scr = app.screen
        # the progress line follows the script's events while it runs, then says how it ended
        assert await wait_until(pilot, lambda: bool(_static(app, "#action-progress")), tries=1200)

        def judged():
            st = app.build.store.step_states().get("node.validate")
            return st is not None and st.verdict is not None

        assert await wait_until(pilot, judged, tries=1600)
        await pilot.pause(0.3)
        assert _static(app, "#action-progress").startswith("tests finished after")
        assert scr.live.vlog.measures("allreduce") and not scr.live.errors()
        await pilot.press("v")
        await pilot.pause()
        body = _static(app, "#results-body")
        assert "Results" in body and "busbw (GB/s) by message size" in body and "1 MiB" in body
        assert "Verdicts" in body and "node.allreduce_sweep" in body
        assert not scr.query_one("#action-log").display and scr.query_one("#action-results").display
        st = app.build.store.step_states()["node.validate"]
        assert st.verdict is Verdict.PASS
        await pilot.press("v")  # back to the log
        await pilot.pause()
        assert scr.query_one("#action-log").display


async def test_results_key_only_for_runs_with_events(state_dir, devvm_host):
    import sys

    from wizard.actions import Resolved

    b = Build.open(state_dir, steps.STAGES, {"hostname": "vm", "boot_id": boot_id_of(devvm_host)}, create=True,
                   clock=frozen_clock)
    plain = b.start_action(steps.step_by_id("report.capture"), Resolved(ops=[{"argv": [sys.executable, "-c", "pass"]}]))
    b.wait_action(plain, timeout_s=30)
    replay = b.start_action(steps.step_by_id("node.validate"), Resolved(ops=[{"argv": ["cat", str(NODE_LOG)]}]))
    b.wait_action(replay, timeout_s=30)
    b.close()
    app = app_for(state_dir, devvm_host)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        app.push_screen(ActionScreen(plain.id))
        await pilot.pause()
        keys = {k for k, ab in app.screen.active_bindings.items() if ab.enabled}
        assert "v" not in keys and not app.screen.query_one("#action-progress").display
        app.pop_screen()
        app.push_screen(ActionScreen(replay.id))
        await pilot.pause()
        keys = {k for k, ab in app.screen.active_bindings.items() if ab.enabled}
        assert "v" in keys and _static(app, "#action-progress").startswith("tests finished after")


MULTINODE_LOG = DATA / "validate" / "multinode-cpu-2nodes.log"
"""A real `bringup validate nodes --device cpu --quick` action log (two loopback sshd nodes, 2 gloo ranks)."""


async def _results_of_run(app, pilot, run_id: int) -> str:
    app.push_screen(ActionScreen(run_id))
    await pilot.pause()
    await pilot.press("v")
    await pilot.pause()
    return _static(app, "#results-body")


async def test_tui_shows_a_multinode_run_judged_as_the_engine_stored_it(state_dir, devvm_host):
    """A multi-node run (the real log replayed as the multinode.allreduce action) is judged once, by the engine,
    when it ends; the TUI's results panel shows those stored verdicts and results, no judge of its own."""
    b = Build.open(state_dir, steps.STAGES, {"hostname": "vm", "boot_id": boot_id_of(devvm_host)}, create=True,
                   clock=frozen_clock)
    from wizard.actions import Resolved

    run = b.wait_action(b.start_action(steps.step_by_id("multinode.allreduce"),
                                       Resolved(ops=[{"argv": ["cat", str(MULTINODE_LOG)]}])), timeout_s=30)
    stored = b.run_findings(run)
    results = b.store.action_run(run.id).results
    b.close()
    assert {f.id: f.verdict.value for f in stored} == {"multinode.nodes": "pass", "multinode.consistency": "pass",
                                                       "multinode.transport": "skip", "multinode.allreduce": "pass"}
    assert results["results"][0]["subject"] == "2 nodes" and results["series"]["points"][-1][0] == 1 << 20
    app = app_for(state_dir, devvm_host)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        body = await _results_of_run(app, pilot, run.id)
        assert "Verdicts" in body and "Results" in body and "busbw (GB/s) by message size" in body
        lines = body.splitlines()
        for f in stored:  # each stored verdict, with its label, on its own line
            assert any(f"{f.id}:" in ln and VERDICT_LABEL[f.verdict] in ln for ln in lines), (f.id, body)
        assert "2 nodes" in body and "multinode" in body
        assert app.build.store.step_states()["multinode.allreduce"].verdict is Verdict.PASS


async def test_tui_shows_what_validate_nodes_stored(ssh_cluster, state_dir, devvm_host, tmp_path):
    """`bringup validate nodes` on two real sshd nodes, then the TUI on the same build: the action screen's
    results panel shows exactly the verdicts and results the CLI stored (and printed in --json)."""
    import json
    import subprocess
    import sys

    from tests.conftest import ROOT, bringup_cmd, env_for_cli

    hf = tmp_path / "hostfile"
    hf.write_text(f"n1 node1 1 python={sys.executable}\nn2 node2 1 python={sys.executable}\n")
    r = subprocess.run(bringup_cmd("validate", "nodes", "--state", str(state_dir), "--hostfile", str(hf),
                                   "--ssh-config", str(ssh_cluster.ssh_config), "--device", "cpu", "--quick", "--json"),
                       capture_output=True, text=True, cwd=ROOT, env=env_for_cli(), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    doc = json.loads(r.stdout)
    app = app_for(state_dir, devvm_host)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        body = await _results_of_run(app, pilot, doc["run"]["id"])
        assert "Verdicts" in body
        lines = body.splitlines()
        for f in doc["findings"]:
            assert any(f"{f['id']}:" in ln and VERDICT_LABEL[Verdict(f["verdict"])] in ln for ln in lines), body
        run = app.build.store.action_run(doc["run"]["id"])
        assert [f.to_dict()["id"] for f in app.build.run_findings(run)] == [f["id"] for f in doc["findings"]]
        assert run.results == {"results": doc["results"], "series": doc["series"]}
        assert "Results" in body and doc["results"][0]["subject"] in body


def test_stored_rows_show_a_missing_figure_as_a_dash_and_a_count_bare():
    """walk 20: the results table read "- GB/s" for a copy not measured on the CPU and "0 count" for a count."""
    from screens.validation_view import stored_rows

    rows = stored_rows({"results": [
        {"test": "h2d", "subject": "host", "metric": "gb_s", "value": None, "unit": "GB/s", "verdict": "skip"},
        {"test": "memory", "subject": "host", "metric": "pattern_errors", "value": 0, "unit": "count", "floor": 0,
         "limit_op": "<=", "verdict": "pass"},
        {"test": "memcpy", "subject": "GPU 0", "metric": "d2d_gb_s", "value": 0.161, "unit": "GB/s", "verdict": "pass"}]})
    assert [r[3] for r in rows] == ["-", "0", "0.161 GB/s"]


def test_the_results_panel_lists_rows_on_a_narrow_screen_without_folding_inside_a_value_or_a_name():
    """Walk 39: at 60x20 the six-column results table folded "0.856 GB/" over "s" and "soak_ge" over "mm", and the
    busbw chart's rows (drawn 74 wide) wrapped their figures to the margin. Each row is listed on
    two lines that wrap at words when the table does not fit, and the chart is drawn to the width."""
    from rich.console import Console

    from screens.validation_view import results_panel
    from wizard.validate import LiveView

    res = {"results": [{"test": "allreduce", "subject": "host", "metric": "busbw@64 MiB", "value": 0.856,
                        "unit": "GB/s", "floor": None, "verdict": "skip"},
                       {"test": "soak_gemm", "subject": "rank 1 on vm", "metric": "tflops", "value": 0.147,
                        "unit": "TFLOPS", "floor": 0.1, "limit_op": ">=", "verdict": "pass"}],
           "series": {"points": [[8, 7.23e-05], [1024, 0.01], [67108864, 0.856]], "floor_gb_s": None}}

    def shown(width: int) -> list[str]:
        c = Console(width=width, color_system=None, record=True)
        c.print(results_panel(LiveView(), [], res, False, width - 4))
        return c.export_text().splitlines()

    narrow = shown(60)
    text = "\n".join(narrow)
    assert all(len(r) <= 60 for r in narrow), narrow
    for whole in ("0.856 GB/s", "0.147 TFLOPS", "soak GEMM", "busbw @ 64 MiB", "limit: >= 0.1"):
        assert whole in text, (whole, narrow)  # walk 41 #2: the reader's words, not "soak_gemm"; an item kept whole
    assert any(r.strip().startswith("8 B") and "7.23e-05" in r for r in narrow)  # a chart row is one row
    assert "┏" not in text and "soak GEMM · rank 1 on vm" in text
    wide = "\n".join(shown(84))
    assert "┏" in wide and "│ 0.147 TFLOPS │" in wide  # the table where it fits


async def test_the_results_panel_is_laid_out_again_when_the_terminal_shrinks(state_dir, devvm_host):
    """Walk 40 #1: results opened at 80x24, then the terminal resized to 60x20: the panel kept its table and split
    "0.704 GB/" over "s". It is laid out again at the new width (listed when the table no longer fits); and a row
    measured on the node as a whole says so in the reader's words ("主机", walk 40 #3)."""
    from screens.validation_view import stored_rows
    from wizard import i18n
    from wizard.actions import Resolved

    b = Build.open(state_dir, steps.STAGES, {"hostname": "vm", "boot_id": boot_id_of(devvm_host)}, create=True,
                   clock=frozen_clock)
    replay = b.start_action(steps.step_by_id("node.validate"), Resolved(ops=[{"argv": ["cat", str(NODE_LOG)]}]))
    b.wait_action(replay, timeout_s=30)
    b.close()
    app = app_for(state_dir, devvm_host)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        await _results_of_run(app, pilot, replay.id)
        from rich.table import Table

        def results_table() -> bool:
            parts = app.screen.query_one("#results-body", Static).content.renderables
            return any(isinstance(p, Table) and p.title == "Results" for p in parts)

        assert results_table()  # a table at 80 columns
        await pilot.resize_terminal(60, 20)
        await pilot.pause(0.3)
        assert not results_table() and " · " in _static(app, "#results-body")  # listed at 60
    i18n.set_language("zh_CN")
    try:
        assert stored_rows({"results": [{"test": "gemm", "subject": "host", "metric": "tflops", "value": 1.0,
                                         "unit": "TFLOPS", "verdict": "skip"}]})[0][1] == "主机"
    finally:
        i18n.set_language("en")


UNREACHABLE_LOG = DATA / "validate" / "multinode-cpu-unreachable-nodes.log"
"""A real `bringup validate nodes --device cpu` action log whose two nodes did not resolve (two errors)."""


async def test_a_run_with_errors_shows_three_progress_rows_ending_in_an_ellipsis(state_dir, devvm_host):
    """Walk 47 #1: with errors the progress line is fitted to 3 rows (walk 45 #2), but the stylesheet let the widget
    show 2, so the reason was cut with no "…"; the widget now shows all three, the last ending in the ellipsis
    (this real log: two unreachable nodes and then too few nodes, 3 errors)."""
    from wizard.actions import Resolved

    b = Build.open(state_dir, steps.STAGES, {"hostname": "vm", "boot_id": boot_id_of(devvm_host)}, create=True,
                   clock=frozen_clock)
    run = b.start_action(steps.step_by_id("multinode.allreduce"), Resolved(ops=[{"argv": ["cat", str(UNREACHABLE_LOG)]}]))
    b.wait_action(run, timeout_s=30)
    b.close()
    app = app_for(state_dir, devvm_host)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, app)
        app.push_screen(ActionScreen(run.id))
        await pilot.pause(0.3)
        w = app.screen.query_one("#action-progress", Static)
        rows = _static(app, "#action-progress").splitlines()
        assert len(rows) == 3 and "3 errors" in " ".join(rows) and rows[-1].endswith("…"), rows
        assert w.region.height == 3, w.region


def test_an_errors_remedy_is_shown_in_chinese_with_its_host_filled_in(tmp_path):
    """Walk 48 #1: the results panel showed the ssh remedy of an unreachable node in English on a Chinese screen (the
    remedy with its host filled in matched no catalogue entry); the event's template is used, as for its message."""
    from wizard import i18n
    from wizard.validate import LiveView

    live = LiveView()
    assert live.read_file(str(UNREACHABLE_LOG))
    i18n.set_language("zh_CN")
    try:
        remedies = [i18n.tr(r) for _k, _n, _m, r in live.errors() if r]
    finally:
        i18n.set_language("en")
    assert remedies and "ssh node-a true" in remedies[0] and "Check that" not in remedies[0], remedies
