"""Parsed facts are frozen dataclasses: rules share them and must not change them.

Long parsers fill a facts object field by field as they read their input; they do so through
:func:`build_set`, the one place that writes a frozen object's field, and only while building
the object they are about to return. Rules never call it: a rule that needs a changed copy
uses :func:`dataclasses.replace`.
"""

from __future__ import annotations

from typing import Any


def build_set(obj: Any, name: str, value: Any) -> None:
    """Set ``obj.name = value`` on a frozen dataclass the calling parser is still building."""
    object.__setattr__(obj, name, value)
