"""Shared fixtures: state directories, a frozen clock, the development VM's capture bundle."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
DEVVM_BUNDLE = DATA / "bundles" / "devvm.tar.gz"
"""A real capture of the development VM (Debian 12, Firecracker, no GPU), 2026-11-30."""

FROZEN = "2026-11-30T12:00:00+00:00"


def frozen_clock() -> str:
    return FROZEN


@pytest.fixture(autouse=True)
def _stable_env(monkeypatch):
    """Deterministic identity of 'who' ran things, and no colour surprises."""
    monkeypatch.setenv("SUDO_USER", "tester")
    monkeypatch.delenv("NO_COLOR", raising=False)
    yield


@pytest.fixture
def state_dir(tmp_path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


@pytest.fixture
def devvm_host():
    from wizard.capture import load_bundle

    host, manifest = load_bundle(DEVVM_BUNDLE)
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
    client config for ``-F`` (see tests/sshd.py). Missing sshd fails the test with the fix; never a skip."""
    from tests.sshd import SshdUnavailable, start_cluster

    try:
        cluster = start_cluster(tmp_path_factory.mktemp("sshd"), 3)
    except SshdUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        yield cluster
    finally:
        cluster.stop()
