"""Stage 10: report. Leave a record someone else can read without logging in."""

from __future__ import annotations

import dataclasses

from wizard.actions import ActionContext, ActionSpec, Resolved
from wizard.model import Stage, Step


LOG_COLUMNS = 1000
"""``COLUMNS`` of a bringup command an action runs: its output goes to the run's log, and the action pane (or the
terminal `bringup run` prints it to) wraps each line to its own width; wrapped at 80 first, it was wrapped twice
(walk 23: "other:" / "no" on two lines)."""


def _bringup(ctx: ActionContext, *args: str) -> Resolved:
    """This bringup (``ctx.python -m wizard.cli``, the build's state directory) running ``args``, its sentences
    unwrapped (:data:`LOG_COLUMNS`) and in the operator's language (``--lang``: actions run with ``LC_ALL=C``, which
    alone would make the child write English under a Chinese screen; walk 24)."""
    from wizard.i18n import current_language

    state = ["--state", ctx.state_dir] if ctx.state_dir else []
    return Resolved(ops=[{"argv": [ctx.python, "-m", "wizard.cli", *state, "--lang", current_language(), *args]}],
                    env={"COLUMNS": str(LOG_COLUMNS)})


def resolve_capture(ctx: ActionContext) -> Resolved:
    import os
    import time

    out = os.path.join(os.path.dirname(ctx.backup_dir), f"capture-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.tar.gz")  # UTC, as report-*.html
    return _bringup(ctx, "capture", "-o", out)


def resolve_report(ctx: ActionContext) -> Resolved:
    """``bringup report -o <build dir>/report-<UTC time>.html``: the acceptance report of this build, written into
    its build directory (the path is in the command shown before it runs, and in its log)."""
    import os
    import time

    from wizard.report import WRITING_STEP_ENV

    out = os.path.join(os.path.dirname(ctx.backup_dir), f"report-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}.html")
    r = _bringup(ctx, "report", "-o", out)
    # the report this run writes shows its own step as "this document", not as a run still going (walk 30 #4)
    return dataclasses.replace(r, env={**r.env, WRITING_STEP_ENV: "report.document"})


STAGE = Stage(
    id="report",
    title="Report",
    short="Report",
    summary="A capture bundle and the acceptance report, for whoever takes over the machine.",
    steps=(
        Step(
            id="report.capture",
            title="Capture a support bundle of the finished machine",
            why=(
                "A capture bundle holds every probe's raw output with its command, exit status and "
                "timing; support staff and fleet tools can re-run every check on it offline with "
                "`bringup check --snapshot BUNDLE` without logging in to the server, the way a "
                "bug-report bundle (nvidia-bug-report.sh, sosreport) works."
            ),
            instructions="Press a: bringup writes the bundle into this build's directory, and the step passes once "
                         "it is written.",
            action=ActionSpec(
                id="capture",
                title="Write a capture bundle",
                description="Runs every probe bringup knows and writes a .tar.gz bundle into the build directory.",
                resolve=resolve_capture,
                changes_system=False,
                needs_root=False,
            ),
        ),
        Step(
            id="report.document",
            title="Write the acceptance report",
            why=(
                "The acceptance report is the hand-over document a cluster owner, a vendor's support engineer or a "
                "procurement acceptance test asks for: the inventory (DMI, CPU, memory modules, every GPU's serial, "
                "UUID, VBIOS and PCIe link, driver, CUDA, torch), every step's status with who set it and why, every "
                "finding with its evidence and public source, the validation figures against their floors (a run on "
                "the CPU labelled as such), every action run with its exit status and log, and a verdict line: ready, "
                "ready with warnings, or not ready with the blocking findings. Where nvidia-bug-report.sh gathers the raw "
                "logs for a support case, this report is the judged record of the whole bring-up, readable without "
                "logging in; a later report of the same build lists what changed since this one."
            ),
            instructions=("bringup writes report-<time>.html into this build's directory and prints its path "
                          "(`bringup report -o FILE --format html|md|json` writes it anywhere; md for a ticket, json "
                          "for fleet tools)."),
            action=ActionSpec(
                id="report",
                title="Write the acceptance report",
                description="Writes the acceptance report (HTML, in English: a document handed to others, whatever "
                            "the language on screen) of this build into the build directory; its path is in the command "
                            "and the log.",
                resolve=resolve_report,
                changes_system=False,
                needs_root=False,
            ),
        ),
        Step(
            id="report.handover",
            title="Hand the machine over with its acceptance report",
            why=(
                "The acceptance report (`bringup report`) holds what the build recorded: the inventory, every step "
                "with its status (passed, warned, confirmed by hand, skipped with a reason, cpu-only: validated on the "
                "CPU, not on the GPUs, failed or still pending), who set it and when, every finding with its evidence, "
                "the measured figures and every action run with its log path. It separates what bringup verified from "
                "what someone confirmed, accepted or skipped. `bringup status` is only the step list (status and "
                "reason, the verdict where a step is still pending); the report is where to look first when the "
                "machine misbehaves later."
            ),
            instructions=("Attach the acceptance report (report-*.html in the build directory, or `bringup report -o "
                          "report.md` for a ticket) and the capture bundle to the hand-over ticket. Name every step that "
                          "is not passed or confirmed (warned, skipped, cpu-only, pending) in the ticket: the machine is "
                          "ready only as far as the report's verdict line says."),
            manual=True,
            per_machine=True,
        ),
    ),
)
