"""Shared fixtures: state directories, a frozen clock, the development VM's capture bundle, sshd "nodes".

No test reads or writes the real state directory (``/var/lib/bringup`` as root, the platformdirs user
state dir otherwise): ``$BRINGUP_STATE_DIR`` (``wizard.store.default_state_dir``'s override) and
``$XDG_STATE_HOME`` point at a temporary directory for the whole session (so session- and module-scoped
fixtures and every subprocess they start inherit it) and at a fresh one for each test. A test that wants a
given directory still passes ``--state DIR`` / ``Build.open(DIR)``, which wins over the environment.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# the tests pin English screens and texts: a developer whose locale is Chinese still runs them in English (the Chinese
# ones select it themselves, with --lang or wizard.i18n.set_language)
for _k in ("LC_ALL", "LC_MESSAGES", "LANG"):
    if os.environ.get(_k, "").lower().startswith("zh"):
        os.environ[_k] = "C.UTF-8"

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
DEVVM_BUNDLE = DATA / "bundles" / "devvm.tar.gz"
"""A real capture of the development VM (Debian 12, Firecracker, no GPU), 2026-11-30."""

FROZEN = "2026-11-30T12:00:00+00:00"


def frozen_clock() -> str:
    return FROZEN


def _point_state_at(setenv, base: Path) -> None:
    """bringup's default state dir (:func:`wizard.store.default_state_dir`) and platformdirs' -> under ``base``."""
    setenv("BRINGUP_STATE_DIR", str(base / "bringup-state"))
    setenv("XDG_STATE_HOME", str(base / "xdg-state"))


@pytest.fixture(autouse=True, scope="session")
def _session_state_dir(tmp_path_factory):
    """The default state dir of everything set up before a test's own fixtures run: a temporary one."""
    mp = pytest.MonkeyPatch()
    _point_state_at(mp.setenv, tmp_path_factory.mktemp("default-state"))
    try:
        yield
    finally:
        mp.undo()


@pytest.fixture(autouse=True)
def _stable_env(monkeypatch, tmp_path):
    """Deterministic identity of 'who' ran things, no colour surprises, and a fresh default state dir
    (never /var/lib/bringup nor ~/.local/state/bringup) for the test and every process it starts."""
    monkeypatch.setenv("SUDO_USER", "tester")
    monkeypatch.delenv("NO_COLOR", raising=False)
    _point_state_at(monkeypatch.setenv, tmp_path / "default-state")
    umask = os.umask(0o022)  # a test that calls the CLI in this process gets bringup's umask 077: never the next one's
    os.umask(umask)
    try:
        yield
    finally:
        os.umask(umask)


@pytest.fixture
def state_dir(tmp_path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


@pytest.fixture
def devvm_host():
    from wizard.capture import load_bundle

    host, _manifest = load_bundle(DEVVM_BUNDLE)
    return host


def bringup_cmd(*args: str) -> list[str]:
    """argv that runs this checkout's bringup with the test interpreter."""
    return [sys.executable, "-m", "wizard.cli", *args]


def env_for_cli() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["SUDO_USER"] = "tester"
    return env


@pytest.fixture(scope="session")
def ssh_cluster(tmp_path_factory):
    """Three real sshd "nodes" on 127.0.0.2-4 (node1..node3) plus ``dead`` (nothing listens), with an ssh
    client config for ``-F`` (see tests/sshd.py). OpenSSH is installed first when missing (as root, with
    apt-get, one xdist worker at a time: :func:`tests.sshd.ensure_openssh`); when it cannot be, the test
    fails with the fix, never a skip."""
    from tests.sshd import SshdUnavailable, ensure_openssh, start_cluster

    try:
        ensure_openssh()
        cluster = start_cluster(tmp_path_factory.mktemp("sshd"), 3)
    except SshdUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()


def packaged_kernel_host(host, release: str = "6.1.0-18-amd64"):
    """``host`` (a bundle's :class:`wizard.hosts.SnapshotHost`, the dev VM's) as if it ran one of Debian's own
    kernels, with loadable modules: the dev VM's kernel (6.18.44-fc-v1147, no /proc/modules) makes driver.install
    refuse (no headers package exists), and the tests of its confirmation need one it resolves. Synthetic: only the
    release and /proc/modules differ from the recorded bundle."""
    from dataclasses import replace

    from wizard.hosts import Operation, SnapshotHost

    ops = {k: op for k, op in host._ops.items()}
    key = ("file", "/proc/sys/kernel/osrelease")
    ops[key] = replace(ops[key], data=f"{release}\n".encode(), error="")
    ops[("file", "/proc/modules")] = Operation("file", "/proc/modules", path="/proc/modules",
                                               data=b"ext4 1007616 1 - Live 0x0000000000000000\n")
    return SnapshotHost(list(ops.values()), host.name, host.identity)
