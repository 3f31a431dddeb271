"""The engine and the catalogue never import Textual (DESIGN.md; tui-practices B.3 #1)."""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys
import textwrap

from tests.conftest import ROOT, env_for_cli


def test_engine_and_catalogue_load_without_textual():
    code = textwrap.dedent("""
        import importlib, pkgutil, sys
        import wizard, steps
        for pkg in (wizard, steps):
            for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + "."):
                importlib.import_module(m.name)
        import wizard.cli
        wizard.cli.build_parser()
        bad = sorted(m for m in sys.modules if m == "textual" or m.startswith(("textual.", "screens")))
        print(",".join(bad))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env_for_cli(), cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == ""


def test_import_linter_contract_holds():
    lint = Path(sys.executable).parent / "lint-imports"  # installed with the test extra
    r = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml")],
                       capture_output=True, text=True, cwd=ROOT, env=env_for_cli())
    assert r.returncode == 0, r.stdout + r.stderr
    assert "KEPT" in r.stdout


def test_version_does_not_import_heavy_modules():
    code = ("import sys, wizard.cli\n"
            "try:\n    wizard.cli.main(['--version'])\nexcept SystemExit:\n    pass\n"
            "print(','.join(m for m in ('textual', 'psutil', 'pynvml', 'sqlite3', 'rich') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env_for_cli(), cwd=ROOT)
    assert r.stdout.split("\n")[-2] == "", r.stdout
