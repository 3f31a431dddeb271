"""Tests of wizard/parsers/hosttools.py."""

from __future__ import annotations

from wizard.parsers.hosttools import size_bytes


def test_size_units() -> None:
    assert size_bytes("251G") == 251 * 1024 ** 3
    assert size_bytes("1.9Gi") == int(1.9 * 1024 ** 3)
    assert size_bytes("0B") == 0
    assert size_bytes("1024", 1024) == 1024 ** 2
    assert size_bytes("x") is None
