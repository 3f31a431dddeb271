"""Tests of wizard/distro.py."""

from __future__ import annotations


def test_distro_helpers():
    from wizard.distro import nvidia_repo_arch, version_matches

    assert version_matches("9.4", "9") and version_matches("24.04", "24.04") and not version_matches("24.10", "24.04")
    assert not version_matches("", "9") and not version_matches("19.1", "9")
    assert nvidia_repo_arch("aarch64") == "sbsa" and nvidia_repo_arch("x86_64") == "x86_64" and nvidia_repo_arch("ppc64le") is None
