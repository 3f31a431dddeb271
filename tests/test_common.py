"""wizard.common: the one integer/float reader and the one byte formatter every layer uses."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wizard.common import INT_SATURATION, human_bytes, sat_int, to_float, to_int


def test_to_int_reads_text_and_json_numbers():
    assert to_int(" 42\n") == 42
    assert to_int("-3") == -3
    assert to_int(7) == 7
    for bad in (None, True, 1.5, "1.5", "+1", "0x1f", "", "12 MB", [1]):
        assert to_int(bad) is None, bad


def test_to_int_bounds_the_digits():
    assert to_int("9" * 18) == int("9" * 18)
    assert to_int("9" * 19) is None
    assert to_int("1234567890", 9) is None  # lscpu counts: at most 9 digits
    assert to_int("123456789", 9) == 123456789


def test_to_int_json_only_and_unsigned():
    # validation events are JSON: a number written as text is not read as one
    assert to_int("3", text=False) is None
    assert to_int(3, text=False) == 3
    # counts (lscpu): a minus sign is not a count
    assert to_int("-1", signed=False) is None
    assert to_int("8", signed=False) == 8


def test_to_float_modes():
    assert to_float(" 12.5 ") == 12.5
    assert to_float("1e3") == 1000.0
    for bad in (None, True, "nan", "inf", float("nan"), float("inf"), "N/A", [1.0]):
        assert to_float(bad) is None, bad
    assert to_float("12.5", text=False) is None
    assert to_float(12.5, text=False) == 12.5
    assert to_float("0", positive=True) is None
    assert to_float(-2, text=False, positive=True) is None
    assert to_float("989.5", positive=True) == 989.5


@given(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=40),
                 st.lists(st.integers(), max_size=2)))
def test_readers_never_raise(v):
    for text in (True, False):
        to_int(v, text=text)
        to_int(v, 9, text=text, signed=False)
        to_float(v, text=text)
        to_float(v, text=text, positive=True)


def test_human_bytes():
    assert human_bytes(None) == "?"
    assert human_bytes(0) == "0 B"
    assert human_bytes(64 * 1024 ** 3) == "64 GiB"  # whole: no decimals (as lspci prints BAR sizes)
    assert human_bytes(1536 * 1024 ** 2) == "1.5 GiB"
    assert human_bytes(128 * 1024 ** 3) == "128 GiB"  # a DIMM total (bios.memory_channels)
    assert human_bytes(2 * 1024 ** 4) == "2 TiB"


def test_sat_int_reads_like_int_and_saturates_huge_digit_runs():
    assert sat_int("42") == 42 and sat_int(" -7 ") == -7 and sat_int(3.9) == 3
    assert sat_int("18446744073709551615") == 2 ** 64 - 1  # a 64-bit -1 printed unsigned stays exact
    assert sat_int("0" * 5000 + "5") == 5  # leading zeros are not digits of the value
    # int() raises ValueError past 4,300 digits: a parser reading \d+ from hostile text must not crash
    assert sat_int("9" * 5000) == INT_SATURATION and sat_int("-" + "9" * 5000) == -INT_SATURATION
    assert sat_int("1" * 21) == INT_SATURATION
    for bad in ("", "x" * 30, "9" * 30 + "a", "--" + "9" * 30):
        with pytest.raises(ValueError):
            sat_int(bad)
    with pytest.raises(TypeError):
        sat_int(None)


@given(st.text(alphabet="0123456789-+ ", max_size=6000))
def test_sat_int_agrees_with_int_below_21_digits(s):
    try:
        want: int | None = int(s)
    except ValueError:
        want = None
    try:
        got: int | None = sat_int(s)
    except ValueError:
        got = None
    if want is not None and abs(want) <= INT_SATURATION:
        assert got == want
    elif want is not None:
        assert got == (INT_SATURATION if want > 0 else -INT_SATURATION)
    elif got is not None:  # int() refused only for its digit limit (leading zeros count there, not here)
        t = s.strip()
        sig = t.lstrip("+-").lstrip("0")
        assert got == (INT_SATURATION if len(sig) > 20 else int(sig or "0")) * (-1 if t.startswith("-") else 1)


def test_a_lazy_pattern_compiles_on_first_use_and_then_is_the_compiled_patterns():
    """lazy_re defers compiling (about 650 module-level patterns cost a third of a process's start): the first use
    compiles, later calls are the compiled pattern's own methods; a bad pattern raises re.error when used."""
    import re

    from wizard.common import _LazyPattern, lazy_re

    p = lazy_re(r"(?P<n>\d+) GPUs", re.I)
    assert p.pattern == r"(?P<n>\d+) GPUs" and "search" not in vars(p)  # not compiled yet
    assert p.search("8 gpus").group("n") == "8"
    assert vars(p)["search"].__self__ is vars(p)["match"].__self__  # bound to one compiled pattern now
    assert p.groupindex == {"n": 1} and p.flags & re.I and p.sub("x", "2 GPUs") == "x"
    with pytest.raises(re.error):
        lazy_re("(unclosed").search("x")
    assert isinstance(p, _LazyPattern)


def test_every_module_level_lazy_pattern_compiles():
    """A pattern is compiled only when used, so one no test reaches would fail first on an operator's machine: every
    lazy pattern bringup's modules hold (at module level, or in a module-level tuple, list or dict) compiles."""
    import importlib
    import pkgutil
    import re

    import wizard
    from wizard.common import _LazyPattern

    seen = 0

    def each(v, depth=0):
        if isinstance(v, _LazyPattern):
            yield v
        elif depth < 3 and isinstance(v, (tuple, list)):
            for x in v:
                yield from each(x, depth + 1)
        elif depth < 3 and isinstance(v, dict):
            for x in v.values():
                yield from each(x, depth + 1)

    for info in pkgutil.walk_packages(wizard.__path__, "wizard."):
        mod = importlib.import_module(info.name)
        for value in list(vars(mod).values()):
            for lazy in each(value):
                re.compile(lazy.pattern, lazy._flags)
                seen += 1
    assert seen > 500, seen
