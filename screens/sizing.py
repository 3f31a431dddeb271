"""Plan & sizing screen: inputs on the left, live results (with their arithmetic and sources) on the right.

Every figure comes from :func:`wizard.sizing.size`; this screen only lays the inputs out and shows
the results. "Use as plan" (F3) writes gpu_model, gpu_count, host_ram_min_gib (what the workload
needs) and host_ram_gib (only when typed: what the machine has installed) to the build's plan
answers through :func:`wizard.plan.parse_value`, so later checks compare the machine against them.
The form's fields are kept with the build (``meta[sizing.STORE_KEY]``) as they change and come back
on the next visit; the plan answers (GPU model and count, installed RAM) win over them, being what
the checks use. ``bringup size`` computes the same figures from the command line.

Keyboard only: tab / shift+tab between fields, enter to open a choice list or go to the next
field, F3 use as plan (a plan the results call SHORT is kept only after a yes that names what is short), page
down / page up scroll the results from any field, esc back.
Below 76 columns the form and the results stack (60x20 works). In basic mode the choice lists' arrows are ASCII.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Input, Label, Select, Static

from rich.text import Text

from screens.plan import recheck_words, shown
from screens.widgets import FormInput, KeyFooter, TopBar
from wizard import sizing as sz
from wizard.i18n import N_, _, names_listed, spaced, tr, tr_source
from wizard.plan import parse_value

if TYPE_CHECKING:
    from screens.app import BringupApp

# (section, field, label, options or None for a text input, placeholder); the words are translated where shown
FORM: tuple[tuple[str, str, str, object, str], ...] = (
    (N_("Model and method"), "params", N_("Parameters"), None, "7B, 13e9, 70B"),
    ("", "method", N_("Method"), sz.METHODS, ""),
    ("", "lora", N_("LoRA r or %"), None, N_("rank 16, or 0.5%")),
    ("", "precision", N_("Precision"), {p: p for p in sz.PRECISIONS}, ""),
    ("", "optimizer", N_("Optimizer"), sz.OPTIMIZER_LABEL, ""),
    ("", "accounting", N_("Accounting"), sz.ACCOUNTINGS, ""),
    (N_("Parallelism"), "zero_stage", N_("ZeRO stage"), {str(i): f"ZeRO-{i}" for i in range(4)}, ""),
    ("", "dp_degree", N_("DP degree Nd"), None, N_("GPUs/(TP x PP)")),
    ("", "tp", N_("TP degree"), None, "1"),
    ("", "pp", N_("PP degree"), None, "1"),
    ("", "sp", N_("Seq. parallel"), sz.SEQ_PARALLEL, ""),
    ("", "offload", N_("CPU offload"), sz.OFFLOAD, ""),
    (N_("Activations"), "seq_len", N_("Sequence len"), None, N_("tokens")),
    ("", "micro_batch", N_("Micro-batch"), None, N_("per GPU")),
    ("", "checkpointing", N_("Grad. ckpt"), sz.CHECKPOINTING, ""),
    ("", "attention", N_("Attention"), sz.ATTENTION, ""),
    ("", "layers", N_("Layers"), None, N_("from table")),
    ("", "hidden", N_("Hidden size"), None, N_("from table")),
    ("", "heads", N_("Attn heads"), None, N_("from table")),
    ("", "kv_heads", N_("KV heads"), None, N_("as Attn heads")),
    ("", "largest_layer", N_("Largest layer"), None, N_("from table")),
    (N_("GPUs"), "gpu", N_("GPU model"), "gpus", ""),
    ("", "gpu_count", N_("GPUs per node"), None, "8"),
    (N_("Host and storage"), "loader_gb_per_gpu", N_("Loader GB/GPU"), None, N_("measured RSS")),
    ("", "ckpt_loaders", N_("Model loading"), sz.CKPT_LOADERS, ""),
    ("", "host_ram_gib", N_("RAM plan GiB"), None, N_("installed")),
    ("", "dataset_gb", N_("Dataset GB"), None, "0"),
    ("", "checkpoints_kept", N_("Ckpts kept"), None, "1"),
    (N_("Power"), "cpu_w", N_("CPU W"), None, N_("all sockets")),
    ("", "other_w", N_("Other W"), None, N_("RAM NIC disk fan")),
    ("", "psu_w", N_("PSU rating W"), None, N_("e.g. 3300")),
    ("", "system_max_w", N_("System max W"), None, N_("vendor's figure")),
)

RESULT_ORDER = ("per_gpu", "min_gpus", "bytes_per_param", "model_states", "activations", "host_ram", "cpu_cores",
                "nvme", "power")
"""Verdicts first (does it fit, how many GPUs), then the arithmetic that leads to them."""

STATUS_STYLE = {"ok": "green", "short": "bold red", "error": "bold red", "info": ""}


class SizingScreen(Screen[None]):
    app: BringupApp  # for type checkers only: the App this runs in (Textual types it App[object])
    """Plan & sizing: type the workload, read what it needs, and keep it as the build's plan."""

    BINDINGS = [
        Binding("f3", "use_plan", "Use as plan"),
        Binding("pagedown", "scroll_results(1)", "Scroll results", priority=True),
        Binding("pageup", "scroll_results(-1)", "Scroll results", show=False, priority=True),
        Binding("escape", "back", "Back"),
    ]
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (76, "-wide")]
    SCOPED_CSS = False  # every rule names SizingScreen itself; App.-basic must reach it (ASCII borders)

    DEFAULT_CSS = """
    SizingScreen #sz-head { height: 1; padding: 0 1; text-style: bold; }
    SizingScreen #sz-body { height: 1fr; }
    SizingScreen #sz-form { width: 35; padding: 0 0 0 1; border-right: solid $primary; scrollbar-size-vertical: 1; }
    SizingScreen #sz-results { width: 1fr; padding: 0 1; }
    SizingScreen #sz-results:focus { background-tint: $foreground 3%; }
    SizingScreen .sz-section { text-style: bold; margin-top: 1; }
    SizingScreen .sz-section.first { margin-top: 0; }
    SizingScreen .sz-row { height: 1; }
    SizingScreen .sz-label { width: 14; }
    SizingScreen #sz-results { scrollbar-size-vertical: 1; }
    SizingScreen .sz-input { width: 1fr; height: 1; border: none; padding: 0; }
    SizingScreen .sz-input:focus { text-style: reverse; }
    SizingScreen .sz-row:focus-within .sz-label { text-style: bold reverse; }
    SizingScreen Select.sz-input { width: 1fr; }
    /* walk 42 #3: a chosen value longer than the column ("RTX 6000 Ada Generation") was cut with no mark */
    SizingScreen Select.sz-input SelectCurrent Static#label { text-wrap: nowrap; text-overflow: ellipsis; }
    SizingScreen Select.sz-input > SelectOverlay { width: 34; }
    /* a compact Select's list has no border (Textual: border none !important): it read as part of the results */
    SizingScreen Select.sz-input > SelectOverlay.-textual-compact { border: tall $accent !important; max-height: 10; }
    App.-basic SizingScreen Select.sz-input > SelectOverlay.-textual-compact { border: ascii $accent !important; }
    SizingScreen .sz-error { color: $error; height: auto; display: none; padding-left: 2; }
    SizingScreen #sz-summary { padding-bottom: 1; height: auto; }
    SizingScreen .sz-result { margin-bottom: 1; height: auto; }
    SizingScreen .sz-math { padding-left: 2; }
    SizingScreen .sz-src { padding-left: 2; color: $text-muted; }
    SizingScreen.-narrow #sz-body { layout: vertical; }
    SizingScreen.-narrow .sz-input { width: 28; }
    SizingScreen.-narrow #sz-form { width: 1fr; height: 45%; border-right: none; border-bottom: solid $primary; }
    App.-basic SizingScreen #sz-form { border-right: ascii $primary; }
    App.-basic SizingScreen.-narrow #sz-form { border-right: none; border-bottom: ascii $primary; }
    """

    def __init__(self, initial: dict[str, str] | None = None) -> None:
        super().__init__()
        self.initial = dict(initial or {})
        self.result: sz.Sizing | None = None
        self.errors: dict[str, str] = {}
        self._saved: dict[str, str] = {}

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield TopBar()
        yield Static(_("Plan & sizing: what the workload needs from this machine"), id="sz-head",
                     markup=False)
        values = dict(sz.FIELDS)
        chosen = {**self._stored(), **self._from_plan(), **self.initial}
        values.update(chosen)
        self._gpu_default = "gpu" not in chosen  # nobody chose the GPU yet: the summary says it is the default
        self._saved = {k: str(values.get(k, "")) for k in sz.FIELDS}
        with Horizontal(id="sz-body"):
            with VerticalScroll(id="sz-form", can_focus=False):
                first = True
                for section, name, label, options, placeholder in FORM:
                    if section:
                        yield Static(_(section), classes="sz-section" + (" first" if first else ""), markup=False)
                        first = False
                    with Horizontal(classes="sz-row"):
                        yield Label(_(label), classes="sz-label", markup=False)
                        if options is None:
                            yield FormInput(values.get(name, ""), placeholder=_(placeholder) if placeholder else "",
                                        id=f"f-{name}",
                                        classes="sz-input", compact=True, select_on_focus=False)
                        else:
                            opts = ([(g.name, g.name) for g in sz.gpu_specs()] if options == "gpus"
                                    else [(_(lbl), key) for key, lbl in options.items()])  # type: ignore[attr-defined]  # FORM types options as object: 'gpus' or a dict
                            keys = [k for _label, k in opts]
                            value = values.get(name, "")
                            yield Select(opts, value=value if value in keys else keys[0], allow_blank=False,
                                         id=f"f-{name}", classes="sz-input", compact=True)
                    yield Static("", id=f"err-{name}", classes="sz-error", markup=False)
            with VerticalScroll(id="sz-results"):
                yield Static("", id="sz-summary", markup=False)
                for key in RESULT_ORDER:
                    with Vertical(id=f"res-{key}", classes="sz-result"):
                        yield Static("", classes="sz-title", markup=False)
                        yield Static("", classes="sz-math", markup=False)
                        yield Static("", classes="sz-src", markup=False)
        yield KeyFooter()

    def _stored(self) -> dict[str, str]:
        """The form's fields as the last visit left them (stored with the build)."""
        build = getattr(self.app, "build", None)
        if build is None:
            return {}
        try:
            return sz.stored_inputs(build.store.meta())
        except Exception:  # noqa: BLE001 - a broken store must not stop the calculator
            return {}

    def _save(self, raw: dict[str, str]) -> None:
        """Keep the form's fields with the build when they changed (not in an observing or read-only build)."""
        build = getattr(self.app, "build", None)
        if build is None or build.observing or raw == self._saved:
            return
        # a GPU nobody chose (the form's default) is not stored as a choice: the next visit still says it is the
        # default and F3 still warns (walk 35 #1: after leaving and reopening, F3 wrote gpu_model=H100 SXM5 silently)
        kept = {k: v for k, v in raw.items() if not (k == "gpu" and getattr(self, "_gpu_default", False))}
        try:
            build.store.set_meta(**{sz.STORE_KEY: kept})
        except Exception:  # noqa: BLE001 - a read-only or broken store must not stop the calculator
            return
        self._saved = dict(raw)

    def _from_plan(self) -> dict[str, str]:
        """Start from the build's current answers (GPU model and count, host RAM) when they fit."""
        build = getattr(self.app, "build", None)
        if build is None:
            return {}
        try:
            plan = build.plan()
        except Exception:  # noqa: BLE001 - a broken store must not stop the calculator
            return {}
        out: dict[str, str] = {}
        names = {g.name.lower(): g.name for g in sz.gpu_specs()}
        model = str(plan.get("gpu_model") or "").strip().lower()
        if model in names:
            out["gpu"] = names[model]
        if isinstance(plan.get("gpu_count"), int):
            out["gpu_count"] = str(plan["gpu_count"])
        if plan.get("host_ram_gib"):
            out["host_ram_gib"] = f"{plan['host_ram_gib']:g}" if isinstance(plan["host_ram_gib"], (int, float)) else ""
        return out

    def on_mount(self) -> None:
        self.recompute()
        self.query_one("#f-params", Input).focus()
        for select in self.query(Select):
            self.watch(select, "expanded", self._on_list_toggle(select), init=False)
        if self.app.basic:  # the Linux console's font has no triangles
            for arrow, glyph in ((".down-arrow", "v"), (".up-arrow", "^")):
                for w in self.query(arrow):
                    w.update(glyph)  # type: ignore[attr-defined]  # the Select's arrows are Statics

    def _on_list_toggle(self, select: Select) -> Callable[[bool], None]:
        """A Select's list opens downwards from its row: when it opens, the form scrolls that row up first, so the
        list ends above the key footer (walk 23: GPU model's list, opened low in the form, drew over the footer)."""
        def toggled(expanded: bool) -> None:
            if expanded:
                form = self.query_one("#sz-form", VerticalScroll)
                form.scroll_to_widget(select, top=True, animate=False)
            elif select.id == "f-gpu" and getattr(self, "_gpu_default", False):
                # the operator opened the GPU list and closed it on a model: theirs now, even the default's own name
                # (walk 28 #1: choosing H100 SXM5 changed nothing, so F3 kept calling it "the form's default")
                self._gpu_default = False
                self.recompute()
        return toggled

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """F3 is hidden without a build this window may write; pressed anyway (F1 lists it), it says why
        (:meth:`on_key`): a dimmed key did nothing, without a word, on the console."""
        if action == "use_plan":
            build = self.app.build
            return False if build is None or build.observing else True
        return True

    def on_key(self, event: events.Key) -> None:
        if event.key == "f3" and self.check_action("use_plan", ()) is False:
            event.stop()
            self.action_use_plan()  # says why the plan cannot be changed here

    # ------------------------------------------------------------------ live results

    def raw_values(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for _section, name, _label, _options, _placeholder in FORM:
            w = self.query_one(f"#f-{name}")
            if isinstance(w, Input):
                out[name] = w.value
            elif isinstance(w, Select):
                out[name] = "" if w.value is Select.BLANK else str(w.value)
        return out

    def recompute(self) -> None:
        raw = self.raw_values()
        if self.is_mounted:
            self._save(raw)
        inputs, errors = sz.parse_inputs(raw)
        self.errors = errors
        for _section, name, _label, _options, _placeholder in FORM:
            err = self.query_one(f"#err-{name}", Static)
            msg = errors.get(name, "")
            err.update(f"! {tr(msg)}" if msg else "")  # wrapped lines stay under it (the padding)
            err.display = bool(msg)
        self.result = sz.size(inputs)
        self.query_one("#sz-summary", Static).update(self._summary(self.result))
        for r in self.result.results:
            for box in self.query(f"#res-{r.key}"):
                title, math, src = box.query(Static)
                title.update(self.title_text(r))
                text = "\n".join(tr(m) for m in r.math)
                # the VGA console's fonts (CP437, Lat15) have no Ψ: the parameter count reads "P" there (walk 18)
                math.update(text.replace("Ψ", "P") if self.app.basic else text)
                src.update(_("source: {source}").format(source=tr_source(r.source)))
                box.display = True

    def _summary(self, s: sz.Sizing) -> Text:
        inp = s.inputs
        t = Text()
        t.append(_("{params} params, {method}, ZeRO-{stage}").format(
            params=sz.fmt_count(inp.params), method=_(sz.METHODS[inp.method]), stage=inp.zero_stage) + _(": "),
            style="bold")
        gpu = s.gpu.name if s.gpu else "?"
        t.append(_("{per_gpu} per GPU vs {gpu} ({memory} GB)").format(
            per_gpu=sz.fmt_bytes(s.per_gpu), gpu=gpu, memory=f"{s.gpu_memory / sz.GB:g}") + _(": "))
        t.append(_("fits") if s.fits else _("SHORT"), style="green" if s.fits else "bold red")
        # min_gpus None: no number of GPUs holds it at this ZeRO stage (what it never shards + activations exceed
        # one GPU), never "zero GPUs needed"
        n = f"{s.min_gpus}" if s.min_gpus else _("no count is enough at ZeRO-{stage}").format(stage=inp.zero_stage)
        if s.min_gpus_ds is not None:
            n += spaced(_("(paper {paper}, DeepSpeed {deepspeed})").format(
                paper=s.min_gpus_paper or _("not enough"), deepspeed=s.min_gpus_ds))
        if inp.zero_stage < 3:
            n += spaced(_("(ZeRO-3: {count})").format(count=s.min_gpus_stage3 or _("not enough either")))
        partial = not inp.system_max_w and (not inp.cpu_w or not inp.other_w)
        t.append(_(". ") + _("Min GPUs: {count}. Host RAM needed {ram} GiB. Power {watts} W").format(
            count=n, ram=f"{s.host_min / sz.GiB:,.1f}", watts=f"{s.load_w:,.0f}")  # as the detail says it
                 + (spaced(_("(GPUs only so far).")) if partial else "."))
        if self.errors:
            t.append("\n! " + _("{count} field(s) refused: their defaults are used").format(count=len(self.errors)),
                     style="bold")
        differ = self.plan_differences(s)
        if differ:  # walk 18: the form kept 70B after Esc while the plan kept the 7B figures, without a word
            t.append("\n! " + _("The build's plan has other figures (F3 writes these): {differ}").format(
                differ="; ".join(differ)), style="bold")
        if getattr(self, "_gpu_default", False) and inp.gpu == sz.FIELDS.get("gpu"):
            t.append("\n" + _("GPU {gpu} is the form's default: choose yours under 'GPU model' (the GPU section, "
                              "below) before F3.").format(gpu=inp.gpu), style="italic")
        return t

    def plan_differences(self, s: sz.Sizing) -> list[str]:
        """The answers F3 would write that the build's plan already holds with another value ("gpu_count 16 (plan:
        8)"): the form and the plan disagree. Empty without a build, or where the plan holds none of them yet."""
        build = getattr(self.app, "build", None)
        if build is None:
            return []
        try:
            plan = build.store.plan()
        except Exception:  # noqa: BLE001 - a broken store must not stop the calculator
            return []
        out = []
        for key, raw in s.plan_answers().items():
            try:
                value = parse_value(key, raw)
            except ValueError:
                continue
            if plan.get(key) is not None and plan[key] != value:
                out.append(_("{key} {value} (plan: {plan})").format(key=key, value=shown(value), plan=shown(plan[key])))
        return out

    @staticmethod
    def title_text(r: sz.Result) -> Text:
        """'Memory per GPU: 52 GB  [SHORT]': the status as a word after the value, as ``bringup size`` prints it (never
        colour alone; walk 22: before the title it ran into it)."""
        t = Text()
        t.append(tr(r.title), style="bold")
        t.append(_(": "))
        t.append(tr(r.value), style=STATUS_STYLE.get(r.status, "") if sz.STATUS_WORDS.get(r.status) else "")
        if r.status_word:
            t.append(f"  [{_(r.status_word)}]", style=STATUS_STYLE[r.status])
        return t

    def result_plain(self, key: str) -> str:
        """The shown text of one result (title, arithmetic, source), for tests and logs."""
        return "\n".join(str(w.render()) for w in self.query_one(f"#res-{key}").query(Static))

    def on_input_changed(self, event: Input.Changed) -> None:
        self.recompute()

    def on_select_changed(self, event: Select.Changed) -> None:
        self.recompute()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.focus_next()

    # ------------------------------------------------------------------ actions

    def action_use_plan(self) -> None:
        """Write the plan answers (validated by parse_value): gpu_model, gpu_count, host_ram_min_gib,
        and host_ram_gib only when the operator typed the installed size."""
        build = self.app.build
        if build is None or build.observing:
            self.notify(_("no writable build: the plan cannot be changed here"), severity="warning")
            return
        if self.errors:
            self.notify(_("fix the fields marked ! first"), severity="warning")
            return
        if self.result is None:
            return
        answers = {}
        for key, raw in self.result.plan_answers().items():
            try:
                answers[key] = parse_value(key, raw)
            except ValueError as exc:
                self.notify(str(exc), severity="error")
                return
        short = self.short_words()
        default_gpu = self.gpu_is_default()
        if not short and not default_gpu:
            self._keep(answers, "")
            return
        from screens.dialogs import YesNo

        body = ""
        if default_gpu:  # walk 25: F3 wrote the form's default H100 SXM5 x 8 into the plan, a choice nobody made
            body += _("The GPU is still the form's default ({gpu}): the checks would judge this machine against "
                      "it.").format(gpu=self.result.inputs.gpu) + "\n"
        if short:
            body += _("The results call this plan SHORT:") + "\n" + "\n".join(f"- {w}" for w in short) + "\n"
        title = _("This plan is SHORT: keep it anyway?") if short else _("Write the form's default GPU as the plan?")
        # what y writes, before it is written (walk 32 #8: host_ram_min_gib=1044 on a 23.5 GiB machine, said after)
        body += _("It writes: {answers}").format(answers=names_listed(f"{k}={shown(v)}" for k, v in answers.items())) + "\n"
        self.app.push_screen(YesNo(title, body + "\n" + _("Keep it as the build's plan anyway (the checks then compare "
                                                         "the machine against it)? Or change the form first (esc).")),
                             lambda yes: self._keep(answers, _("; ").join(short)) if yes else None)

    def gpu_is_default(self) -> bool:
        """The GPU model is still the form's default, never chosen (the results pane says so under the figures)."""
        return bool(getattr(self, "_gpu_default", False) and self.result is not None
                    and self.result.inputs.gpu == sz.FIELDS.get("gpu"))

    def short_words(self) -> list[str]:
        """What the results call SHORT, as "title: value" (empty when everything fits)."""
        if self.result is None:
            return []
        return [_("{title}: {value}").format(title=tr(r.title), value=tr(r.value)) for r in self.result.short()]

    def _keep(self, answers: dict, short: str) -> None:
        build = self.app.build
        if build is None or build.observing:
            return
        recheck = build.set_plan(**answers)
        self.recompute()  # the summary's "the plan has other figures" line goes
        bump = getattr(self.app, "bump", None)
        if callable(bump):
            bump()
        self.notify(_("plan: {answers}").format(answers=names_listed(f"{k}={shown(v)}" for k, v in answers.items()))
                    + (spaced(_("(kept although SHORT: {short})").format(short=short)) if short else "")
                    + recheck_words(recheck),
                    severity="warning" if short else "information", timeout=12 if recheck else 8)

    def action_scroll_results(self, pages: int) -> None:
        """page down / page up: scroll the results pane by a page whatever field has the focus, at once (``immediate``:
        each of several presses queued before a refresh moves its own page; walk 22: a held PgUp moved one)."""
        results = self.query_one("#sz-results", VerticalScroll)
        results.scroll_to(y=results.scroll_y + pages * results.scrollable_content_region.height, animate=False,
                          immediate=True)

    def action_back(self) -> None:
        self.app.pop_screen()
