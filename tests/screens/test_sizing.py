"""The Plan & sizing screen: Pilot tests driven by the keyboard (80x24 and 60x20) and snapshots at
80x24 in the default and the basic (ANSI) theme.

Accept changed snapshots with `pytest tests/screens/test_sizing.py --snapshot-update` after looking at
them. State lives in fixed paths and the clock is frozen, so the top bar does not vary between runs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.widgets import Input, Select, Static

import steps
from screens.app import BringupApp
from screens.sizing import FORM, SizingScreen
from screens.step import StepScreen
from tests.conftest import DEVVM_BUNDLE, frozen_clock
from wizard.capture import load_bundle
from wizard.engine import Build
from wizard import sizing as sz

SIZE = (80, 24)
BASE = Path("/tmp/bringup-snapshots-sizing")
MODES = pytest.mark.parametrize("basic", [False, True], ids=["default", "basic"])


def host():
    return load_bundle(DEVVM_BUNDLE)[0]


def make_build(state: Path, **plan) -> None:
    """A fresh build at its first step (same boot as the bundle: nothing stale, no re-check starts)."""
    b = Build.open(state, steps.STAGES, {"hostname": "vm", "boot_id": host().identity.get("boot_id", "")},
                   create=True, clock=frozen_clock)
    if plan:
        b.store.set_plan(**plan)
    b.close()


def app_for(state: Path, basic: bool = False) -> BringupApp:
    return BringupApp(state_dir=state, host=host(), clock=frozen_clock, basic=basic)


async def open_sizing(pilot, step_id: str = "plan.workload") -> SizingScreen:
    """From a plan step screen, press z."""
    await pilot.pause()
    pilot.app.push_screen(StepScreen(step_id))
    await pilot.pause()
    await pilot.press("z")
    await pilot.pause()
    assert isinstance(pilot.app.screen, SizingScreen)
    return pilot.app.screen


def summary(screen: SizingScreen) -> str:
    return str(screen.query_one("#sz-summary", Static).render())


async def focus_field(pilot, screen: SizingScreen, name: str) -> None:
    """Tab from the first field to ``name`` (keyboard only, the way an operator moves)."""
    order = [f[1] for f in FORM]
    screen.query_one("#f-params").focus()
    await pilot.pause()
    for _ in range(order.index(name)):
        await pilot.press("tab")
    await pilot.pause()
    assert screen.focused is screen.query_one(f"#f-{name}")


async def type_into(pilot, screen: SizingScreen, name: str, text: str) -> None:
    await focus_field(pilot, screen, name)
    inp = screen.query_one(f"#f-{name}", Input)
    inp.action_end()
    for _ in range(len(inp.value)):
        await pilot.press("backspace")
    if text:
        await pilot.press(*text)
    await pilot.pause()


async def choose(pilot, screen: SizingScreen, name: str, label: str) -> None:
    """Open a Select with enter and move to ``label`` with the arrow keys."""
    await focus_field(pilot, screen, name)
    sel = screen.query_one(f"#f-{name}", Select)
    labels = [str(o[0]) for o in sel._options]
    await pilot.press("enter")
    await pilot.pause()
    cur = labels.index(next(lbl for lbl, v in sel._options if v == sel.value))
    want = labels.index(label)
    for _ in range(abs(want - cur)):
        await pilot.press("down" if want > cur else "up")
    await pilot.press("enter")
    await pilot.pause()
    assert str(next(lbl for lbl, v in sel._options if v == sel.value)) == label


# ------------------------------------------------------------------ Pilot


async def test_z_opens_sizing_from_plan_steps_only(state_dir, devvm_host):
    make_build(state_dir)
    app = app_for(state_dir)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.push_screen(StepScreen("plan.power"))
        await pilot.pause()
        assert app.screen.check_action("sizing", ()) is True
        app.pop_screen()
        app.push_screen(StepScreen("bios.iommu"))
        await pilot.pause()
        assert app.screen.check_action("sizing", ()) is False  # not shown, not run, outside the plan stage
        await pilot.press("z")
        await pilot.pause()
        assert isinstance(app.screen, StepScreen)
        app.pop_screen()
        screen = await open_sizing(pilot, "plan.host")
        assert "7.00e9 params, full fine-tune, ZeRO-0" in summary(screen)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, StepScreen) and app.screen.step_id == "plan.host"


async def test_results_follow_the_typing(state_dir):
    make_build(state_dir)
    app = app_for(state_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sizing(pilot)
        assert "112.0 GB" in screen.result_plain("model_states")
        await type_into(pilot, screen, "params", "13B")
        assert "1.30e10 params" in summary(screen)
        # 13B full fine-tune, ZeRO paper (2 + 2 + 12) x 13e9 = 208 GB
        assert "208.0 GB" in screen.result_plain("model_states")
        await choose(pilot, screen, "method", "QLoRA")
        text = screen.result_plain("bytes_per_param")
        assert "NF4" in text and "4.127 bits" in text and "2305.14314" in text
        await choose(pilot, screen, "zero_stage", "ZeRO-3")
        assert "ZeRO-3" in summary(screen)
        await type_into(pilot, screen, "seq_len", "2048")
        # 13B shape L40 h5120, flash attention: 40 x 2048 x 1 x 5120 x 34 bytes = 14.3 GB
        assert "40 x 2048 x 1 x 5120 x 34 = 14.3 GB" in screen.result_plain("activations")


async def test_a_refused_field_is_marked_and_blocks_use_as_plan(state_dir):
    make_build(state_dir)
    app = app_for(state_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sizing(pilot)
        await type_into(pilot, screen, "params", "[b]7")
        err = screen.query_one("#err-params", Static)
        assert err.display and "'[b]7'" in str(err.render())  # brackets shown verbatim, not eaten as markup
        assert "refused" in summary(screen)
        await pilot.press("f3")
        await pilot.pause()
        assert app.build.store.plan() == {}


async def test_use_as_plan_writes_the_answers(state_dir):
    make_build(state_dir)
    app = app_for(state_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sizing(pilot)
        await choose(pilot, screen, "gpu", "H200 SXM")
        await type_into(pilot, screen, "gpu_count", "4")
        assert "4 x 700 W" in screen.result_plain("power")
        await pilot.press("f3")
        await pilot.pause()
        plan = app.build.store.plan()
        # host RAM: no planned figure -> the counted minimum, 4 ranks x 2 B x 7e9 = 56 GB = 52.2 GiB -> 53
        assert plan == {"gpu_model": "H200 SXM", "gpu_count": 4, "host_ram_min_gib": 53.0}  # the workload minimum, not the installed size
        await type_into(pilot, screen, "host_ram_gib", "1024")
        await pilot.press("f3")
        await pilot.pause()
        assert app.build.store.plan()["host_ram_gib"] == 1024.0
        assert "plan has other figures" not in summary(screen)
        # walk 18: the form and the plan disagreed without a word; now the summary names what F3 would change
        await type_into(pilot, screen, "gpu_count", "8")
        assert "plan has other figures (F3 writes these): gpu_count 8 (plan: 4)" in " ".join(summary(screen).split())
        await pilot.press("f3")
        await pilot.pause()
        assert "plan has other figures" not in summary(screen)


async def test_opens_with_the_current_plan(state_dir):
    make_build(state_dir, gpu_model="a100 80gb sxm4", gpu_count=4, host_ram_gib=512.0)
    app = app_for(state_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sizing(pilot)
        assert screen.query_one("#f-gpu", Select).value == "A100 80GB SXM4"
        assert screen.query_one("#f-gpu_count", Input).value == "4"
        assert screen.query_one("#f-host_ram_gib", Input).value == "512"
        assert "4 x 400 W" in screen.result_plain("power")


async def test_form_inputs_are_kept_with_the_build_and_come_back(state_dir):
    """The fields typed are stored with the build (meta sizing_inputs) and fill the form on the next visit,
    in this session and in a later bringup; the plan's answers still win for the GPU fields."""
    from wizard import sizing as sz

    make_build(state_dir)
    app = app_for(state_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sizing(pilot)
        await type_into(pilot, screen, "params", "70B")
        await choose(pilot, screen, "zero_stage", "ZeRO-3")
        await type_into(pilot, screen, "tp", "2")
        assert sz.stored_inputs(app.build.store.meta())["params"] == "70B"
        await pilot.press("escape")
        await pilot.pause()
        app.pop_screen()
        screen = await open_sizing(pilot)
        assert screen.query_one("#f-params", Input).value == "70B"
        assert screen.query_one("#f-tp", Input).value == "2"
        assert "ZeRO-3" in summary(screen) and "DeepSpeed" in summary(screen)
    b = Build.open(state_dir, steps.STAGES, {"hostname": "vm", "boot_id": host().identity.get("boot_id", "")},
                   clock=frozen_clock)
    b.store.set_plan(gpu_count=4)
    b.close()
    app = app_for(state_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sizing(pilot)
        assert screen.query_one("#f-params", Input).value == "70B"
        assert screen.query_one("#f-zero_stage", Select).value == "3"
        assert screen.query_one("#f-gpu_count", Input).value == "4"  # the plan's answer


async def test_every_field_reachable_at_60x20(state_dir):
    make_build(state_dir)
    app = app_for(state_dir)
    async with app.run_test(size=(60, 20)) as pilot:
        screen = await open_sizing(pilot)
        assert screen.has_class("-narrow")
        await type_into(pilot, screen, "system_max_w", "10200")  # the last field, tabbed to
        field = screen.query_one("#f-system_max_w")
        form = screen.query_one("#sz-form")
        assert form.region.contains_region(field.region)  # scrolled into view, not off-screen
        assert "10,200 W" in summary(screen)
        await pilot.press("tab")  # on to the results, which scroll with the arrows
        assert screen.focused is screen.query_one("#sz-results")
        await pilot.press("down", "down")
        assert screen.query_one("#sz-results").scroll_y > 0


async def test_read_only_without_a_build(state_dir):
    app = app_for(state_dir)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        app.push_screen(SizingScreen())
        await pilot.pause()
        assert "f3" not in app.screen.active_bindings  # hidden: there is no build to keep a plan in
        await pilot.press("f3")  # pressed anyway: it says why instead of nothing
        await pilot.pause()
        assert app.build is None
        assert any("the plan cannot be changed here" in str(n.message) for n in app._notifications)


async def test_no_gpu_count_enough_never_reads_as_zero_needed(state_dir):
    """Issue 15 #7: "Min GPUs none at this stage" read as "no GPU needed"; it means no number of GPUs holds this
    workload at this ZeRO stage."""
    make_build(state_dir)
    app = app_for(state_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sizing(pilot)  # 7B full fine-tune, ZeRO-0, H100 80 GB: 130 GB per GPU
        assert screen.result is not None and screen.result.min_gpus is None
        text = summary(screen)
        assert "Min GPUs: no count is enough at ZeRO-0 (ZeRO-3: 3)" in text and "none" not in text
        assert "Minimum GPU count: no count is enough at ZeRO-0" in screen.result_plain("min_gpus")


async def test_use_as_plan_asks_before_keeping_a_short_plan_and_says_what_is_short(state_dir):
    """Issue 15 #7: F3 silently kept a plan the results call SHORT. It now asks, naming what is short; esc keeps
    nothing, y keeps it and the notification says it was kept although SHORT."""
    from screens.dialogs import YesNo

    make_build(state_dir)
    app = app_for(state_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sizing(pilot)
        assert "SHORT" in summary(screen)
        await pilot.press("f3")
        await pilot.pause()
        assert isinstance(app.screen, YesNo)
        asked = "\n".join(str(w.render()) for w in app.screen.query(Static))
        assert "Memory per GPU: SHORT by 50.3 GB" in asked and "Minimum GPU count: no count is enough" in asked
        # walk 32 #8: what y writes is said before it is written
        assert "It writes: gpu_model=H100 SXM5, gpu_count=8, host_ram_min_gib=" in " ".join(asked.split()), asked
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen and app.build.store.plan() == {}
        await pilot.press("f3")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert app.build.store.plan()["gpu_model"] == "H100 SXM5"
        assert any("kept although SHORT: Memory per GPU" in str(n.message) for n in app._notifications)


async def test_use_as_plan_asks_before_writing_the_forms_default_gpu(state_dir):
    """Walk 25: F3 wrote the form's default GPU (H100 SXM5 x 8) into the plan without a word, though the results
    said to choose the GPU first. It now asks; esc keeps nothing; after the GPU is chosen it writes without asking."""
    from screens.dialogs import YesNo

    make_build(state_dir)
    app = app_for(state_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sizing(pilot)
        await type_into(pilot, screen, "params", "1B")  # a workload that fits: only the GPU is in question
        assert "SHORT" not in summary(screen) and "form's default" in summary(screen)
        await pilot.press("f3")
        await pilot.pause()
        assert isinstance(app.screen, YesNo)
        asked = "\n".join(str(w.render()) for w in app.screen.query(Static))
        assert "still the form's default (H100 SXM5)" in asked
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen and app.build.store.plan() == {}
        await choose(pilot, screen, "gpu", "H200 SXM")
        await pilot.press("f3")
        await pilot.pause()
        assert app.screen is screen and app.build.store.plan()["gpu_model"] == "H200 SXM"


async def test_the_forms_default_gpu_is_still_the_default_on_the_next_visit(state_dir):
    """Walk 35 #1: after leaving the sizing screen and opening it again, the stored form held the default GPU as if
    chosen: the "form's default" line was gone and F3 wrote gpu_model=H100 SXM5 without a word. A GPU nobody chose is
    not stored as a choice; one chosen is."""
    from screens.dialogs import YesNo

    make_build(state_dir)
    app = app_for(state_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sizing(pilot)
        await type_into(pilot, screen, "params", "1B")
        assert "form's default" in summary(screen)
        await pilot.press("escape")
        await pilot.pause()
        app.pop_screen()
        screen = await open_sizing(pilot)
        assert screen.query_one("#f-params", Input).value == "1B"  # the typed fields came back
        assert "form's default" in summary(screen) and screen.gpu_is_default()
        await pilot.press("f3")
        await pilot.pause()
        assert isinstance(app.screen, YesNo)
        assert "still the form's default (H100 SXM5)" in "\n".join(str(w.render()) for w in app.screen.query(Static))
        await pilot.press("escape")
        await pilot.pause()
        await choose(pilot, screen, "gpu", "H200 SXM")
        await pilot.press("escape")
        await pilot.pause()
        app.pop_screen()
        screen = await open_sizing(pilot)
        assert screen.query_one("#f-gpu", Select).value == "H200 SXM" and not screen.gpu_is_default()


async def test_choosing_the_default_gpu_by_name_counts_as_a_choice(state_dir):
    """Walk 28 #1: the owner of an H100 SXM5 picked it in the GPU list, and F3 still called it "the form's default"
    (a Select posts no change for the value it already has). Opening the list and closing it on a model is a choice:
    F3 then writes it without asking, and the summary no longer says to choose the GPU."""
    make_build(state_dir)
    app = app_for(state_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sizing(pilot)
        await type_into(pilot, screen, "params", "1B")
        assert "form's default" in summary(screen)
        await choose(pilot, screen, "gpu", "H100 SXM5")
        assert "form's default" not in summary(screen) and not screen.gpu_is_default()
        await pilot.press("f3")
        await pilot.pause()
        assert app.screen is screen and app.build.store.plan()["gpu_model"] == "H100 SXM5"


# ------------------------------------------------------------------ snapshots


@pytest.fixture(scope="module")
def _one_run_at_a_time():
    import fcntl

    BASE.mkdir(parents=True, exist_ok=True)
    with open(BASE / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield


def fresh_state(name: str) -> Path:
    d = BASE / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True, mode=0o700)  # private, as bringup makes its state directory (a looser one is tightened and said)
    make_build(d)
    return d


async def _steady(pilot) -> None:
    for inp in pilot.app.screen.query(Input):
        inp.cursor_blink = False  # no blinking cursor in the picture
    await pilot.pause()
    await pilot.wait_for_scheduled_animations()
    await pilot.pause()


@MODES
def test_snapshot_sizing(snap_compare, basic, _one_run_at_a_time):
    async def go(pilot):
        await open_sizing(pilot)
        await _steady(pilot)

    assert snap_compare(app_for(fresh_state(f"sizing-{basic}"), basic), terminal_size=SIZE, run_before=go)


@MODES
def test_snapshot_sizing_70b_qlora(snap_compare, basic, _one_run_at_a_time):
    async def go(pilot):
        screen = await open_sizing(pilot)
        await type_into(pilot, screen, "params", "70B")
        await choose(pilot, screen, "method", "QLoRA")
        await choose(pilot, screen, "checkpointing", "on, every layer")
        screen.query_one("#f-params").focus()
        await _steady(pilot)

    assert snap_compare(app_for(fresh_state(f"sizing-70b-{basic}"), basic), terminal_size=SIZE, run_before=go)


@MODES
def test_snapshot_sizing_narrow(snap_compare, basic, _one_run_at_a_time):
    async def go(pilot):
        await open_sizing(pilot)
        await _steady(pilot)

    assert snap_compare(app_for(fresh_state(f"sizing-narrow-{basic}"), basic), terminal_size=(60, 20),
                        run_before=go)


async def test_page_down_scrolls_the_results_from_any_field(state_dir):
    """Issue 15 (reviewer): the results pane at 80x24 was reachable only by tabbing past every field. Page down /
    page up scroll it while a field keeps the focus (the form's own scroll does not take the key)."""
    make_build(state_dir)
    app = app_for(state_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sizing(pilot)
        await focus_field(pilot, screen, "params")
        results, form = screen.query_one("#sz-results"), screen.query_one("#sz-form")
        await pilot.press("pagedown")
        await pilot.pause()
        assert results.scroll_y > 0 and form.scroll_y == 0
        assert screen.focused is screen.query_one("#f-params")
        await pilot.press("pageup")
        await pilot.pause()
        assert results.scroll_y == 0
        # several presses before a refresh (a held key on a console) each move a page (walk 22: one page for twelve)
        page = results.scrollable_content_region.height
        assert results.max_scroll_y >= 2 * page
        screen.action_scroll_results(1)  # two presses handled before the screen refreshes
        screen.action_scroll_results(1)
        await pilot.pause()
        assert results.scroll_y == 2 * page


async def test_the_gpu_list_is_framed_and_ends_above_the_footer(state_dir):
    """Walk 23 #7: GPU model's list, opened at 80x24, had no border (a compact Select's list has none) and drew over
    the results and the key footer. It is framed, and the form scrolls the field up first so the list ends above the
    footer."""
    from screens.widgets import KeyFooter
    from textual.widgets._select import SelectOverlay

    make_build(state_dir)
    app = app_for(state_dir)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_sizing(pilot)
        await focus_field(pilot, screen, "gpu")
        await pilot.press("enter")
        await pilot.pause()
        await pilot.pause()
        select = screen.query_one("#f-gpu", Select)
        overlay = select.query_one(SelectOverlay)
        assert select.expanded and overlay.display
        assert overlay.styles.border_top[0] == "tall" and overlay.styles.border_bottom[0] == "tall"
        footer = screen.query_one(KeyFooter)
        assert overlay.region.bottom <= footer.region.y, (overlay.region, footer.region)


async def test_results_in_chinese(state_dir):
    """Issue 15 (reviewer): the results' titles, values and arithmetic were English on the Chinese screen. They are
    Msg templates now, shown translated; the figures are the same."""
    from wizard import i18n

    make_build(state_dir)
    i18n.set_language("zh_CN")
    try:
        app = app_for(state_dir)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_sizing(pilot)
            per_gpu = screen.result_plain("per_gpu")
            assert "每 GPU 显存" in per_gpu and "还差 50.3 GB" in per_gpu and "SHORT" not in per_gpu
            states = screen.result_plain("model_states")
            assert "每 GPU 模型状态（ZeRO-0，Nd 8）" in states and "112.0 GB" in states
            assert "fp32 主权重：7.00e9 x 4 B = 28.0 GB" in states
            assert "模型加载（按 ZeRO-0 自动选择）" in screen.result_plain("host_ram")
    finally:
        i18n.set_language("en")
    assert sz.size(sz.parse_inputs({})[0]).results[3].value.startswith("SHORT by ")  # the English is unchanged


@pytest.mark.parametrize("size", [SIZE, (60, 20)], ids=["80x24", "60x20"])
def test_snapshot_sizing_zh_cn(snap_compare, zh_cn, size, _one_run_at_a_time):
    """The sizing screen in Chinese: the form's labels and the results (titles, values, arithmetic) translated."""
    async def go(pilot):
        await open_sizing(pilot)
        await _steady(pilot)

    assert snap_compare(app_for(fresh_state(f"sizing-zh-{size[0]}")), terminal_size=size, run_before=go)
