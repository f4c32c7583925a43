"""What a number counts (`unit_of`: the noun after it), and units of measure by pint's
registry, which knows their names, abbreviations and plurals: "km", "kilometre" and
"kilometers" are one unit, and a foot is 0.3048 metres. The rules that compare numbers
(`choose.same_unit`, `choose.counted_noun`, `choose.compare_amounts`) ask it instead of a list
of spellings kept by hand."""

from __future__ import annotations

import re
from functools import cache

import pint

from serc_dspy.rules.words import STOP, stem

UNIT_WORDS = 3
"""Words after a number its noun phrase may run to ("38 chromosomes", "19 chromosome pairs")."""


@cache
def _registry() -> pint.UnitRegistry:
    return pint.UnitRegistry()  # about a quarter of a second, once, when a number is compared


@cache
def unit_named(word: str) -> pint.Unit | None:
    """The unit a word names ("km" and "kilometers": the kilometre); None when it names none
    ("chromosomes") or is a number or a mark."""
    if not word or not word.isalpha():
        return None
    try:
        return _registry().parse_units(word)
    except (pint.errors.PintError, AttributeError, TypeError, ValueError, KeyError):
        return None


def measure_name(word: str) -> str:
    """The unit's own name for a word that names a unit of anything but time ("km" ->
    "kilometer"), else "": "years" names a unit, but "5 years old" is an age and "3 years
    later" an interval, told apart by the words after it."""
    unit = unit_named(word)
    if unit is None or unit.dimensionality == _registry().second.dimensionality:
        return ""
    return str(unit)


def in_metres(amount: float, word: str) -> float | None:
    """A length in metres ("6.213", "km" -> 6213.0); None when the word names no length."""
    unit = unit_named(word)
    if unit is None or unit.dimensionality != _registry().metre.dimensionality:
        return None
    return (amount * unit).to(_registry().metre).magnitude


_UNIT_WORD = re.compile(r"\s+([^\W\d_][\w-]*)")


def unit_of(text: str, end: int) -> str:
    """The noun a number counts: the last word of the run of words after it, up to a
    function word or a punctuation mark ("38 chromosomes in" -> chromosome, "19 chromosome
    pairs for" -> pair, "390 USD)" -> usd); a unit of measure right after it, by its own name
    ("6.213 km long track" and "6 kilometers long": kilometer), time aside ("5 years old":
    old); "" when a mark or a function word follows."""
    head = ""
    for _ in range(UNIT_WORDS):
        m = _UNIT_WORD.match(text, end)
        if not m or m.group(1).lower() in STOP:
            break
        if not head and (unit := measure_name(m.group(1).lower())):
            return unit  # a unit is what a number counts, whatever follows ("km long track")
        head, end = m.group(1), m.end()
    word = head.lower()
    return stem(word[:-1] if word.endswith("s") and len(word) > 3 else word)
