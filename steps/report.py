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
                "The build record (`bringup status`) lists every step, who confirmed or skipped it and "
                "why, and every action run with its log: the evidence that the machine was proven "
                "ready, and where to look first when it misbehaves later."
            ),
            instructions="Run `bringup status` and attach its output and the capture bundle to the hand-over ticket.",
            manual=True,
        ),
    ),
)
