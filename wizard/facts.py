"""Facts: one run's probe outputs and what the parsers read from them, each parsed once.

The data flow of a check run is ``probes -> raw outputs -> parsers -> facts -> rules -> findings``.
A :class:`Facts` is built once per run (by :func:`wizard.engine.judge`, by ``explain`` for a pasted
input, by the validation judges for an action's log) and handed to every rule. It is a read-only
mapping of probe name -> :class:`~wizard.probes.ProbeOutput` (so a rule can still quote the raw
lines as evidence), plus :meth:`Facts.parse`, which runs a parser on a probe's output the first time
a rule asks and returns the same facts object to every later rule of the run.

Parsers are pure functions ``ProbeOutput -> facts`` or ``str -> facts`` that never raise on garbage
(they record what they could not read). Facts are shared, so a rule must never change them.

``Facts.parse_counts`` counts how often each (probe, parser) pair actually ran: the tests assert
that one full check run parses each probe at most once per parser.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Callable, Iterator, Mapping, TypeVar

from wizard.probes import ProbeOutput

T = TypeVar("T")

_MISSING = object()


class Facts(Mapping[str, ProbeOutput]):
    """A run's probe outputs (a read-only mapping by probe name) and the facts parsed from them.

    Args:
        outputs: probe name -> output, as :func:`wizard.probes.collect` returns them (or a bundle
            replays them).
    """

    def __init__(self, outputs: Mapping[str, ProbeOutput] | None = None) -> None:
        self._outputs: dict[str, ProbeOutput] = dict(outputs or {})
        self._cache: dict[tuple[str, Any, str], Any] = {}
        self._derived: dict[Any, Any] = {}
        self.parse_counts: Counter[tuple[str, str]] = Counter()

    # -- Mapping: the raw outputs, for evidence and for rules that read a probe's error
    def __getitem__(self, name: str) -> ProbeOutput:
        return self._outputs[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._outputs)

    def __len__(self) -> int:
        return len(self._outputs)

    def __repr__(self) -> str:
        return f"Facts({sorted(self._outputs)})"

    # -- facts
    def parse(self, probe: str, parser: Callable[[Any], T], on: str = "text") -> T | None:
        """``parser`` applied to ``probe``'s output, computed once per run; ``None`` when ``probe``
        was not collected.

        ``on`` says what the parser reads, as :data:`wizard.registry.PARSERS` declares it for that probe:
        ``"output"`` the whole :class:`ProbeOutput` (file trees with their errors, exit status),
        ``"text"`` (the default) its stdout / file content, ``"text+stderr"``
        stdout then stderr (commands that print their errors on either stream), ``"files"`` the
        path -> content mapping of a file-tree probe.

        Raises:
            ValueError: an unknown ``on`` (a bug in the rule).
        """
        if on not in INPUTS:
            raise ValueError(f"unknown parser input {on!r}; one of {', '.join(INPUTS)}")
        key = (probe, parser, on)
        hit = self._cache.get(key, _MISSING)
        if hit is not _MISSING:
            return hit
        out = self._outputs.get(probe)
        if out is None:
            result = None
        else:
            self.parse_counts[(probe, getattr(parser, "__qualname__", repr(parser)))] += 1
            result = parser(INPUTS[on](out))
        self._cache[key] = result
        return result

    def derived(self, key: Any, compute: Callable[[], T]) -> T:
        """A value computed from this run's facts once and shared (e.g. the judgement of one nvidia-smi
        document that several steps select their concerns from). ``key`` names it; the first caller
        computes it."""
        hit = self._derived.get(key, _MISSING)
        if hit is _MISSING:
            hit = self._derived[key] = compute()
        return hit

    def parse_text(self, probe: str, parser: Callable[[str], T]) -> T | None:
        """``parser(output.text)``, computed once per run (``parse(probe, parser, on="text")``)."""
        return self.parse(probe, parser, on="text")


def _text_and_stderr(out: ProbeOutput) -> str:
    return out.text + ("\n" + out.stderr if out.stderr else "")


INPUTS: dict[str, Callable[[ProbeOutput], Any]] = {
    "output": lambda out: out,
    "text": lambda out: out.text,
    "text+stderr": _text_and_stderr,
    "files": lambda out: out.files,
}
"""What a parser reads of a probe's output (see :meth:`Facts.parse`)."""


def facts_of(outputs: Mapping[str, ProbeOutput]) -> Facts:
    """``outputs`` as a :class:`Facts` (itself when it already is one, so a run shares one cache;
    a plain mapping, e.g. in a unit test or a one-off judge, gets a cache of its own)."""
    return outputs if isinstance(outputs, Facts) else Facts(outputs)
