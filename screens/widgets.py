"""Small shared widgets: the top bar."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Static

if TYPE_CHECKING:
    from screens.app import BringupApp


class TopBar(Static):
    app: BringupApp  # for type checkers only: the App this runs in (Textual types it App[object])
    """One line: product, host, build, and OBSERVING / DRY RUN / SNAPSHOT markers (words, not colour)."""

    DEFAULT_CSS = """
    TopBar { height: 1; background: $primary; color: $text; padding: 0 1; }
    """

    def __init__(self) -> None:
        super().__init__("", markup=False)

    def on_mount(self) -> None:
        self.watch(self.app, "revision", lambda _: self.refresh_text(), init=True)

    def refresh_text(self) -> None:
        app = self.app
        host = getattr(app, "identity", {}).get("hostname") or "?"
        parts = ["bringup", host]
        build = getattr(app, "build", None)
        if build is not None:
            parts.append(f"build {build.info.build_id}")
            if build.observing:
                parts.append("READ-ONLY" if getattr(app, "read_only_reason", "") else "OBSERVING (read-only)")
        if getattr(app, "dry_run", False):
            parts.append("DRY RUN")
        if getattr(app, "snapshot", None):
            parts.append("SNAPSHOT")
        self.update(" | ".join(parts))
