"""wizard/plan.py: answers are validated before they are stored."""

from __future__ import annotations

import pytest

from wizard.plan import parse_answer, valid_plan


@pytest.mark.parametrize("raw", ["/data\nset", "/data\tx", "/data\x7f", "/data\x1b[2J"])
def test_a_data_path_with_a_control_character_is_refused(raw):
    with pytest.raises(ValueError, match="control character"):
        parse_answer("data_path=" + raw)
    assert valid_plan({"data_path": raw}) == {}  # a stored one is dropped, not used


def test_a_plain_data_path_is_kept():
    assert parse_answer("data_path=/raid/ok:colon") == ("data_path", "/raid/ok:colon")
    with pytest.raises(ValueError, match="absolute"):
        parse_answer("data_path=raid")
