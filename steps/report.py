"""Stage 10: report. Leave a record someone else can read without logging in."""

from __future__ import annotations

from wizard.actions import ActionContext, ActionSpec, Resolved
from wizard.model import Stage, Step


def resolve_capture(ctx: ActionContext) -> Resolved:
    import os
    import time

    out = os.path.join(os.path.dirname(ctx.backup_dir), f"capture-{time.strftime('%Y%m%dT%H%M%S')}.tar.gz")
    state = ["--state", ctx.state_dir] if ctx.state_dir else []
    return Resolved(ops=[{"argv": [ctx.python, "-m", "wizard.cli", *state, "capture", "-o", out]}])


STAGE = Stage(
    id="report",
    title="Report",
    short="Report",
    summary="A capture bundle and the build record, for whoever takes over the machine.",
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
            instructions="bringup writes the bundle into this build's directory.",
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
            id="report.handover",
            title="Hand the machine over with its build record",
            why=(
                "The build record (`bringup status`; `--json` adds who set each step and when) lists every "
                "step with its status and the verdict of its last check or run: passed, warned, confirmed by "
                "hand, skipped with a reason, cpu-only (validated on the CPU, not on the GPUs), failed or still "
                "pending. It separates what bringup verified from what someone confirmed, accepted or skipped; "
                "each action's log stays in the build directory (actions/). It is where to look first when the "
                "machine misbehaves later."
            ),
            instructions=("Run `bringup status` (and `bringup status --json`) and attach the output and the capture "
                          "bundle to the hand-over ticket. Name every step that is not passed or confirmed (warned, "
                          "skipped, cpu-only, pending) in the ticket: the machine is ready only as far as the record "
                          "shows it."),
            manual=True,
        ),
    ),
)
