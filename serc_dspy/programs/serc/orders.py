"""The chooser's options as the model reads them: lettered, each evidence value with the words
that lead up to it, in the orders that share out the positions (small models prefer early
options, so every value is asked at more than one place)."""

from __future__ import annotations

from serc_dspy.core.trace import Candidate

LETTERS = "ABCDEF"


def shown(candidate: Candidate) -> str:
    """An option as the model reads it: a value the evidence states with the words that lead
    up to it ("1934 (the evidence: "...died on 4 July 1934")"), so it finds the value's
    sentence; the draft's own value too, where `rules.shown` found it (`choose.own_context`)."""
    if candidate.origin == "none" or not candidate.context:
        return candidate.value
    return f'{candidate.value} (the evidence: "...{candidate.context}")'


def _values(candidates: list[Candidate]) -> tuple[list[Candidate], list[Candidate]]:
    """The values to order, and "not stated", which always stands last."""
    return ([c for c in candidates if c.origin != "none"],
            [c for c in candidates if c.origin == "none"])


def option_orders(candidates: list[Candidate]) -> list[list[Candidate]]:
    """The values in the order found (the fact's own first), then reversed; "not stated" is
    always last, so the two orders put every value at another position."""
    values, tail = _values(candidates)
    return [values + tail, values[::-1] + tail]


def third_order(candidates: list[Candidate]) -> list[Candidate]:
    """The values turned by half their number ([a, b, c, d] -> [c, d, a, b]): with three
    values or more, each stands somewhere it stood in neither first order, or nearly so."""
    values, tail = _values(candidates)
    turn = len(values) // 2
    return values[turn:] + values[:turn] + tail
