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
        self._cache: dict[tuple[str, Any, bool], Any] = {}
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
    def parse(self, probe: str, parser: Callable[[ProbeOutput], T]) -> T | None:
        """``parser(output of probe)``, computed once per run; ``None`` when ``probe`` was not
        collected. The parser takes the whole :class:`ProbeOutput` (for file trees and exit status)."""
        return self._parse(probe, parser, False)

    def parse_text(self, probe: str, parser: Callable[[str], T]) -> T | None:
        """``parser(output.text)``, computed once per run; ``None`` when ``probe`` was not collected."""
        return self._parse(probe, parser, True)

    def _parse(self, probe: str, parser: Callable[[Any], T], text: bool) -> T | None:
        key = (probe, parser, text)
        hit = self._cache.get(key, _MISSING)
        if hit is not _MISSING:
            return hit  # type: ignore[no-any-return]
        out = self._outputs.get(probe)
        if out is None:
            result = None
        else:
            self.parse_counts[(probe, getattr(parser, "__qualname__", repr(parser)))] += 1
            result = parser(out.text if text else out)
        self._cache[key] = result
        return result


def facts_of(outputs: Mapping[str, ProbeOutput]) -> Facts:
    """``outputs`` as a :class:`Facts` (itself when it already is one, so a run shares one cache;
    a plain mapping, e.g. in a unit test or a one-off judge, gets a cache of its own)."""
    return outputs if isinstance(outputs, Facts) else Facts(outputs)


def of_text(probe: str, text: str, source: str = "(pasted)") -> Facts:
    """Facts for one pasted or saved text, as if ``probe`` had printed it (``bringup explain``)."""
    return Facts({probe: ProbeOutput(name=probe, source=source, text=text)})
