"""The test suite stands alone: no test reads outside the clone, none touches the real state directory.

tests/conftest.py points ``$BRINGUP_STATE_DIR`` (the override of :func:`wizard.store.default_state_dir`) and
``$XDG_STATE_HOME`` at temporary directories, for the session and for each test, so a machine where someone ran
bringup (as root: ``/var/lib/bringup``) cannot leak its build or plan into a test, and no test writes there.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from tests.conftest import ROOT, bringup_cmd, env_for_cli
from wizard.store import default_state_dir, sudo_user_state_dir

TESTS = Path(__file__).resolve().parent


def test_default_state_dir_is_this_tests_temporary_dir(tmp_path):
    d = default_state_dir()
    assert d.is_relative_to(tmp_path), d
    assert d != Path("/var/lib/bringup") and ".local/state" not in str(d)
    assert os.environ["XDG_STATE_HOME"].startswith(str(tmp_path))
    assert sudo_user_state_dir() is None  # the override names the one state dir: no hint about another user's


def test_a_cli_run_without_state_uses_the_temporary_dir(tmp_path):
    """What a subprocess sees: ``status --json`` names the state dir it looked in."""
    r = subprocess.run(bringup_cmd("status", "--json"), check=False, capture_output=True, text=True,
                       env=env_for_cli(), cwd=ROOT, timeout=60)
    doc = json.loads(r.stdout)
    assert Path(doc["state_dir"]).is_relative_to(tmp_path), doc
    assert doc["build"] is None  # nothing from a real build on this machine


def test_no_test_names_a_path_outside_the_clone():
    """No test module reads the shared case collection or any other path beside the clone."""
    outside = re.compile(r"""(/work/shared|\.\./shared|["']\.\./\.\./(?!local-vm)|parents\[[2-9]\])""")
    hits = []
    for p in sorted(TESTS.rglob("*.py")):
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            if outside.search(line) and p.name != "test_isolation.py":
                hits.append(f"{p.relative_to(ROOT)}:{n}: {line.strip()}")
    assert not hits, "\n".join(hits)
