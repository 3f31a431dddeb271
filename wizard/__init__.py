"""bringup's engine: model, hosts, probes, parsers, checks, store, actions, capture, CLI.

Nothing in this package imports Textual (a test and an import-linter contract enforce it), so
the same engine serves the TUI, ``bringup check --json`` and scripts.
"""

__version__ = "0.1.0"
