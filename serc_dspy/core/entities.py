"""Entity descriptors for the firewall, compared deterministically before any judge is asked.

A small model's slips are predictable: it echoes the requested format ("Name (Characteristic)"),
leaves a field empty, or spells one name two ways. None of that may throw a caller's draft
away, so a descriptor is checked for usability and two names are compared as text first; the
LM judge only decides between two usable descriptors whose names differ.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from serc_dspy.core.text import normalise, normalise_name

# What a model writes when it echoes the format or has nothing to say.
_PLACEHOLDERS = {
    "", "name", "names", "entity", "the entity", "subject", "the subject", "person", "unknown",
    "none", "n a", "na", "null", "not specified", "not mentioned", "not applicable", "empty",
    "no entity", "no name", "characteristic", "name characteristic", "proper name",
}


class Descriptor(BaseModel):
    """`Name (Characteristic)`, kept as two fields so neither has to be parsed out of text."""

    name: str = ""
    characteristic: str = ""

    @classmethod
    def of(cls, name: str | None, characteristic: str | None) -> Descriptor:
        """A cleaned descriptor: format echoes and placeholders become empty fields."""
        name = _strip_echo(name)
        characteristic = _strip_echo(characteristic)
        if normalise(characteristic, fold=True) in _PLACEHOLDERS:
            characteristic = ""
        return cls(name=name, characteristic=characteristic)

    @property
    def usable(self) -> bool:
        """A descriptor with a real proper name (an empty or echoed one never triggers a reset)."""
        return normalise_name(self.name) not in _PLACEHOLDERS

    def __str__(self) -> str:
        if not self.name:
            return ""
        return f"{self.name} ({self.characteristic})" if self.characteristic else self.name


def _strip_echo(text: str | None) -> str:
    text = " ".join((text or "").split()).strip(" \"'`.,;:")
    # "Marie Curie (Characteristic)" -> "Marie Curie": a parenthesis that only echoes the format.
    text = re.sub(r"\s*\((characteristic|name|entity)\)\s*$", "", text, flags=re.I)
    return text


def more_specific(first: Descriptor, second: Descriptor) -> Descriptor:
    """Prefer a usable descriptor that carries a characteristic, then the longer one."""
    candidates = [d for d in (first, second) if d.usable]
    if not candidates:
        return Descriptor()
    return max(candidates, key=lambda d: (bool(d.characteristic), len(str(d))))
