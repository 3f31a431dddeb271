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


def test_bringup_plan_keeps_each_help_under_its_own_column(capsys, monkeypatch):
    """walk 19: with a 28-character value the values' column was 30 wide, the help had under 30 columns left and its
    continuation lines fell back to column 7, where they read as new rows. At 80 columns every continuation line now
    starts at the help's column, a long value pushing only its own first line."""
    from wizard.cli import print_plan
    from wizard.plan import PLAN_KEYS

    monkeypatch.setenv("COLUMNS", "80")
    print_plan({"torch_python": "/tmp/walk19-torch/bin/python", "gpu_model": "H100 SXM5"})
    lines = capsys.readouterr().out.splitlines()
    help_col = max(len(k) for k in PLAN_KEYS) + 1 + 16 + 1
    assert all(ln.startswith(" " * help_col) and ln[help_col] != " " for ln in lines if ln.startswith(" "))
    assert all(len(ln) <= 80 for ln in lines if not ln.startswith("torch_python"))


def test_a_misspelt_key_names_the_closest_one():
    """walk 19: `bringup plan gpu_modell=x` listed every key and no "did you mean gpu_model" (`run` suggests)."""
    for item in ("gpu_modell=x", "gpu_modell="):
        with pytest.raises(ValueError, match=r"did you mean gpu_model\?"):
            parse_answer(item)
    with pytest.raises(ValueError) as exc:
        parse_answer("colour=blue")
    assert "did you mean" not in str(exc.value) and "keys: gpu_model" in str(exc.value)


def test_an_unknown_gpu_model_is_said_once_for_the_cli_and_the_form():
    """Walk 28 #20: the F2 form saved a GPU model no table names without the warning `bringup plan` gives; one function
    says it for both. A model of the sizing or PCI id table says nothing."""
    from wizard.plan import unknown_gpu_model

    assert unknown_gpu_model("H100 SXM5") == "" and unknown_gpu_model(None) == "" and unknown_gpu_model("") == ""
    said = unknown_gpu_model("RTX 9999 Ultra")
    assert "'RTX 9999 Ultra' is not a GPU bringup's tables name" in said and "bringup size --gpu ?" in said


def test_plan_warnings_name_paths_that_are_not_on_this_machine(tmp_path):
    """Walk 34 #9: `plan torch_python=/usr/bin/nonexist` was taken without a word (and later read as "python3 is not
    installed"). The CLI and the F2 form say it from one function; a path that exists, or a Python on PATH, says
    nothing; the answer is kept either way."""
    import sys

    from wizard.plan import plan_warnings

    said = plan_warnings({"torch_python": str(tmp_path / "nope" / "python"), "data_path": str(tmp_path),
                          "hostfile": str(tmp_path / "hosts"), "gpu_model": "H100 SXM5"})
    assert [s.split(" ")[0] for s in said] == ["torch_python", "hostfile"], said
    assert "is not on this machine yet" in said[0]
    assert plan_warnings({"torch_python": sys.executable}) == []
    assert plan_warnings({"torch_python": "python3"}) == []  # a name on PATH


def test_a_range_error_gives_whole_numbers_as_such():
    """Walk 34 #19g: "host_ram_gib must be more than 0 and at most 1.04858e+06"."""
    import pytest

    from wizard.plan import parse_value

    with pytest.raises(ValueError) as exc:
        parse_value("host_ram_gib", "-1")
    assert "at most 1048576 (got '-1')" in str(exc.value) and "e+" not in str(exc.value)


def test_a_keys_help_line_takes_the_readers_colon():
    """Walk 38 #13: the hostfile dialog read "hostfile: 多节点验证的节点：…" (an ASCII colon before Chinese)."""
    from wizard.i18n import set_language
    from wizard.plan import key_help

    assert key_help("hostfile").startswith("hostfile: ")
    try:
        set_language("zh_CN")
        assert key_help("hostfile").startswith("hostfile：") and ": " not in key_help("hostfile")[:12]
    finally:
        set_language("en")
    assert key_help("no_such_key") == ""
