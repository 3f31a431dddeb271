"""Static checks run with the README's test command: ruff and mypy over wizard/, steps/ and screens/,
with the settings in pyproject.toml ([tool.ruff], [tool.ruff.lint], [tool.mypy]). import-linter runs in
tests/test_import_hygiene.py. Each check is one test, so under ``-n auto`` each takes one worker once."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT, env_for_cli

PACKAGES = ["wizard", "steps", "screens"]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    # the test venv's interpreter: ruff and mypy come with the `test` extra
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env_for_cli(), timeout=600)


@pytest.mark.parametrize("tool", ["ruff", "mypy"])
def test_static_check_is_clean(tool):
    if tool == "ruff":
        r = _run("ruff", "check", "--no-fix", *PACKAGES)
    else:
        r = _run("mypy")  # files = wizard, steps, screens (pyproject.toml)
    assert r.returncode == 0, f"{tool} found problems:\n{r.stdout}{r.stderr}"
