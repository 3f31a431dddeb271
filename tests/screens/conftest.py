"""Fixtures shared by the screen tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def zh_cn():
    """The UI in Chinese for one test (the language is process-wide: English again after it)."""
    from wizard import i18n

    i18n.set_language("zh_CN")
    yield
    i18n.set_language("en")
