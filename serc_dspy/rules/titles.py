"""Titles a draft quotes: a slot that stands in quotes ("Desperate Housewives") is a title, and
its rivals are the titles the evidence quotes (`choose.quoted_title`), whatever their words: a
title such as "Sex and the City" is no run of capitalised words, so no name span finds it."""

from __future__ import annotations

import re
from collections.abc import Callable

from serc_dspy.core.text import normalise
from serc_dspy.core.trace import Candidate, Slot
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.slots import MAX_CANDIDATES, NOT_STATED, EvidenceSentence, Span

register(
    Rule("choose.quoted_title", "a slot the draft quotes (a title: \"Desperate Housewives\") "
         "is offered the titles the evidence quotes, whatever their words, where the evidence "
         "quotes one", "a quoted show's options were the network and the award's category "
         "(HBO, Comedy Series): the title the evidence quoted, \"Sex and the City\", is no run "
         "of capitalised words, and was never offered", found_on="HaluEval tuning item 15"),
)

_QUOTE = re.compile(r"[\"“]([^\"“”\n]{2,80}?)[\"”]")


def quoted(sentence: str, span: Span) -> bool:
    """Whether the span stands in quotes, an article before it inside them ("The Nation")."""
    before, after = sentence[:span.start], sentence[span.start + len(span.text):]
    before = re.sub(r"\b(?:The|A|An)\s*$", "", before)
    return before.rstrip()[-1:] in "\"“'‘" and bool(before.strip()) and \
        after.lstrip()[:1] in "\"”'’"


def is_quoted_title(candidate: Candidate) -> bool:
    """Whether an evidence candidate was offered as a quoted title (its context is the quote)."""
    return candidate.origin == "evidence" and candidate.context[:1] in ("\"", "“")


def quoted_titles(slot: Slot, sentences: list[EvidenceSentence],
                  new_value: Callable[[str], bool]) -> list[Candidate]:
    """The slot's own value, then the titles `sentences` quote (once each, where `new_value`
    admits them, up to the cap), then "not stated"."""
    options = [Candidate(value=slot.text, origin="fact")]
    seen = {normalise(slot.text, fold=True)}
    for sentence in sentences:
        for m in _QUOTE.finditer(sentence.text):
            value = m.group(1).strip(" ,.")
            key = normalise(value, fold=True)
            if len(options) < MAX_CANDIDATES - 1 and key and key not in seen and \
                    new_value(value):
                seen.add(key)
                options.append(Candidate(value=value, passage=sentence.passage,
                                         offset=sentence.offset + m.start(1),
                                         context=m.group(0)))
    return options + [Candidate(value=NOT_STATED, origin="none")]


def title_candidates(slot: Slot, sentence: str, fact: str,
                     sentences: list[EvidenceSentence]) -> list[Candidate] | None:
    """`choose.quoted_title` for a fact's slot: where the draft sentence quotes it, the titles
    the evidence sentences quote that the fact does not name; None where it is not quoted or
    the evidence quotes no other title (its options are then found as any name's)."""
    at = sentence.find(slot.text)
    if at < 0 or not quoted(sentence, Span(slot.kind, slot.text, at)):
        return None
    in_fact = normalise(fact, fold=True)
    options = quoted_titles(slot, sentences,
                            lambda value: normalise(value, fold=True) not in in_fact)
    return options if any(c.origin == "evidence" for c in options) else None


def titled_value(sentence: str, value: str) -> str:
    """A value that a quoted title holds but for its leading article ("The Joshua Tree"),
    with it; else the value."""
    found = re.search(rf"[\"“](The|A|An) {re.escape(value)}[\"”]", sentence)
    return f"{found.group(1)} {value}" if found else value
