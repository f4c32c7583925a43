"""Short answers: a caller's short draft is one slot per part, of the kind the question asks
for, and its candidates are the evidence's values of that kind (or the two names a comparison
question offers). The slot machinery itself is `rules.slots`."""

from __future__ import annotations

import re

from serc_dspy.core.text import normalise
from serc_dspy.core.trace import Candidate, Slot
from serc_dspy.rules.slots import (
    _YEAR,
    MAX_CANDIDATES,
    NOT_STATED,
    EvidenceSentence,
    Span,
    _count,
    _offer,
    focus,
    normal_form,
    spans,
)

_COMPARISON = re.compile(r"\b(?:first|earlier|older|younger|larger|bigger|smaller|longer|"
                         r"shorter|taller|higher|more|less|fewer|both)\b", re.IGNORECASE)
QUESTION_KINDS = ("comparison", "yes/no", "date", "number", "place", "person", "other")
SHORT_PHRASE_WORDS = 6
"""A short draft sentence of at most this many words is one value ("Mike's Gym in Oostzaan")."""


def question_kind(question: str) -> str:
    """What kind of value answers a question, from its words: a comparison between two
    named options ("... first, A or B?", "Are both ...?"), a date, a number, a place, a
    person, else other."""
    q = " ".join(question.split()).lower()
    if " or " in q and _COMPARISON.search(q):
        return "comparison"
    if re.match(r"^(?:are|were|is|was|do|did|does|can|could|has|have|had)\b", q):
        return "yes/no"
    if re.match(r"^(?:when|what (?:year|date|month|decade|century)|in (?:what|which) "
                r"(?:year|decade))\b", q) or re.search(r"\b(?:in|what|which) (?:year|decade)"
                                                        r"\b[^,]*\?$", q):
        return "date"  # "..., released in what year?" asks for a date too
    if re.match(r"^(?:how (?:many|much|long|old|far|tall|big|large))\b", q):
        return "number"
    if re.match(r"^(?:where|in (?:what|which) (?:city|country|state|town|county|place)|"
                r"what (?:city|country|state|town|county|place))\b", q) or \
            re.search(r"\b(?:what|which) (?:city|country|state|town|county)\b[^,]*\?$", q):
        return "place"
    if re.match(r"^(?:who|whom|whose)\b", q) or re.search(r"\bby whom\b|\b(?:by )?who\?$", q):
        return "person"
    return "other"


def comparison_options(question: str) -> list[str]:
    """The two options a comparison question names ("... started first Arthur's Magazine or
    First for Women?" -> both names); [] when it names none."""
    text = " ".join(question.strip().rstrip("?").split())
    left, sep, right = text.rpartition(" or ")
    if not sep:
        return []
    marks = list(_COMPARISON.finditer(left))
    after = left[marks[-1].end():].strip(" ,:") if marks else ""
    if after:  # "founded first, Hole, the rock band that ..., or The Wolfhounds": "Hole"
        first = after.split(",")[0].strip()
    else:
        cuts = [m.end() for m in re.finditer(r"[,:]\s*", left)]
        first = left[max(cuts, default=0):].strip(" ,:")
    options = [first, right.strip(" ,:")]
    if options[1].lower() in ("not", "no", "neither"):  # "... both in X, or not?": yes/no
        return []
    return options if all(options) and options[0].lower() != options[1].lower() else []


def answer_slots(question: str, sentence: str) -> list[Slot]:
    """A short draft's slot: the detail of the question's kind in the draft ("Warsaw. Born
    1868.": each part is its own draft sentence, and its own slot), else the draft sentence
    itself, without its final stop."""
    kind = question_kind(question)
    wanted = {"date": ("date", "year"), "number": ("number",),
              "place": ("name",), "person": ("name",)}.get(kind, ())
    if kind == "comparison":
        for option in comparison_options(question):
            if _count(sentence, option) == 1:
                return [Slot(kind="name", text=option, start=sentence.find(option))]
    if kind == "yes/no":
        return []  # "yes" or "no" is in no passage: nothing to choose from the evidence
    found = answer_spans(question, sentence, lambda s: s.kind in wanted)
    whole = sentence.strip().rstrip(".!")
    if found and (kind in ("date", "number") or len(whole.split()) > SHORT_PHRASE_WORDS):
        return [Slot(kind=found[0].kind, text=found[0].text, start=found[0].start)]
    other = answer_spans(question, sentence, lambda s: True)
    if not found and other:  # "Born 1868." answering where and when: its detail is the year
        return [Slot(kind=other[0].kind, text=other[0].text, start=other[0].start)]
    if whole and _count(sentence, whole) == 1 and len(whole.split()) <= SHORT_PHRASE_WORDS:
        span_kind = "year" if _YEAR.fullmatch(whole) else "name"
        return [Slot(kind=span_kind, text=whole, start=sentence.find(whole))]
    return []


def answer_spans(question: str, sentence: str, wanted) -> list[Span]:
    """The draft's detail spans that could be its answer, best first: once in the sentence;
    not a value the question itself names ("Lee Jun-fan played ..." answering "Lee Jun-fan
    played what character?" restates the question), unless every span is; a quoted title
    after an unquoted value ("The duet "Golden Ring" was sung by Loretta Lynn" answers
    who)."""
    found = [s for s in spans(sentence) if wanted(s) and _count(sentence, s.text) == 1]
    asked = f" {normalise(question, fold=True)} "
    new = [s for s in found if f" {normalise(s.text, fold=True)} " not in asked]
    found = new or found
    return sorted(found, key=lambda s: _quoted(sentence, s))


def _quoted(sentence: str, span: Span) -> bool:
    before, after = sentence[:span.start], sentence[span.start + len(span.text):]
    return before.rstrip()[-1:] in "\"“'‘" and bool(before.strip()) and \
        after.lstrip()[:1] in "\"”'’"


def answer_candidates(question: str, slot: Slot, evidence: list[EvidenceSentence]
                      ) -> list[Candidate]:
    """A short answer's options: for a comparison, the two options the question names (each
    must stand in the evidence); otherwise the values of the slot's kind in the evidence
    sentences that share most words with the question; then "not stated"."""
    options = [Candidate(value=slot.text, origin="fact")]
    seen = {normal_form(slot.kind, slot.text)}
    if question_kind(question) == "comparison" and comparison_options(question):
        for value in comparison_options(question):
            key = normal_form(slot.kind, value)
            found = next(((s, s.text.find(value)) for s in evidence if value in s.text),
                         None)
            if key in seen or found is None:
                continue
            seen.add(key)
            sentence, at = found
            options.append(Candidate(value=value, passage=sentence.passage,
                                     offset=sentence.offset + at, context=value))
        options.append(Candidate(value=NOT_STATED, origin="none"))
        return options
    in_question = normalise(question, fold=True)
    return _offer(slot, focus(evidence, question, limit=MAX_CANDIDATES),
                  lambda sentence, span, value: normalise(value, fold=True) not in in_question)


_EARLIER = re.compile(r"\b(?:first|earlier|earliest|older|oldest|before)\b", re.IGNORECASE)
_LATER = re.compile(r"\b(?:later|latest|last|younger|youngest|newer|newest|more recent(?:ly)?)"
                    r"\b", re.IGNORECASE)


def compare_by_dates(question: str, options: list[str],
                     evidence: list[EvidenceSentence]) -> str | None:
    """The option a date comparison ("started first", "born first", "younger") picks by the
    evidence's dates: each option's date is the first year of the first evidence sentence that
    names it and not the other option; None when the question compares no dates, an option has
    no year, or the years are equal."""
    asked = question
    for option in options:  # "First for Women" names an option, it asks no order
        asked = asked.replace(option, " ")
    earlier, later = bool(_EARLIER.search(asked)), bool(_LATER.search(asked))
    if len(options) != 2 or earlier == later:
        return None
    years = []
    for option, rival in (options, options[::-1]):
        found = next((int(m.group(0)) for s in evidence
                      if option.lower() in s.text.lower() and rival.lower() not in s.text.lower()
                      for m in [_YEAR.search(s.text)] if m), None)
        if found is None:
            return None
        years.append(found)
    if years[0] == years[1]:
        return None
    pick = min if earlier else max
    return options[years.index(pick(years))]
