"""A short answer's options completed by a reading of the evidence: the model is asked the
question over the evidence sentences and writes the few words that answer it; where those words
stand in a passage, they are offered beside the values the patterns found.

The patterns offer the evidence's values of the asked kind in the sentences that share most
words with the question, up to the option cap. On HaluEval's multi-hop questions the answer
often stood outside those (a party where a person was typed, "Roseau, Minnesota" where only
"Roseau" and "Minnesota" were values): the right value was no option for a quarter of the
hallucinated answers of the extra tuning items, while the chooser picked it in both orders
for three quarters of those where it was one. Reading is what a 1.5B model does well with the
answer in front of it; choosing between its reading and the patterns' values is left to the
same choice and guards, so a reading alone never changes an answer."""

from __future__ import annotations

import re

from serc_dspy.core.text import normalise
from serc_dspy.core.trace import Candidate, Slot
from serc_dspy.rules.answers import one_sentence
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.people import full_name, opens_person_name
from serc_dspy.rules.places import is_asked_place
from serc_dspy.rules.questions import question_kind
from serc_dspy.rules.slots import (
    MAX_CANDIDATES,
    NOT_STATED,
    EvidenceSentence,
    Span,
    _count,
    normal_form,
    spans,
    with_lead,
)
from serc_dspy.rules.words import STOP

READ_WORDS = 8
"""Words at most in a reading that can be offered: a longer reply is a sentence, not a value."""

register(
    Rule("choose.read_answer", "a short answer whose own value no evidence sentence states is "
         "read once more: the model writes the few words of the evidence that answer the "
         "question, and where those words stand in an evidence sentence (case aside, a "
         "leading article or closing full stop aside) they are offered as an option, in the "
         "passage's spelling, ahead of the patterns' values (the last of them leaves when the "
         "cap is full); a reading not found in the evidence, \"not stated\", one already "
         "offered, or for a year, date or number slot one holding no value of that kind "
         "adds nothing",
         "on HaluEval's extra tuning items 1-60 the value that fixes a hallucinated short "
         "answer was no option for 26 of them (a party asked for, a person offered; a city "
         "and its state as two values), while the chooser picked the right value in both "
         "orders for 19 of the 25 where it was one",
         thresholds={"read_words": READ_WORDS},
         found_on="HaluEval extra tuning items 26, 48, 57"),
    Rule("choose.read_vote", "a short answer whose two option orders chose different values, "
         "one of them the value the model read as the answer (`choose.read_answer`), takes "
         "that value as if both orders had chosen it: two of three readings agree; every "
         "guard still applies",
         "the third reading is already paid for by `choose.read_answer`: a disagreement "
         "it settles needs no third order",
         found_on="HaluEval extra tuning items 13, 26, 33"),
    Rule("choose.read_rival", "a rival that both option orders chose over a short answer the "
         "evidence states, which `choose.own_stated` would hold back, replaces the answer "
         "where the model, asked the question over the same evidence sentences (one "
         "`ReadAnswer` call, asked only then), writes that rival: three readings agree",
         "on HaluEval's extra tuning items 1-100, `choose.own_stated` held back 8 right "
         "rivals of hallucinated answers and 13 wrong rivals of right answers: a hallucinated "
         "answer is usually another value the same evidence states, so its being stated does "
         "not tell it from the right one; a free reading was to be a third vote that neither "
         "the option order nor the option list steers. Off: on the 20 tuning items it was "
         "built for, it fixed 5 hallucinated answers and broke 7 of 13 right ones, the "
         "reading naming the same wrong rival the two orders chose",
         found_on="HaluEval extra tuning items 60, 72, 73, 88", default=False),
)

_TYPED = {"year": ("year", "date"), "date": ("date", "year"), "number": ("number",)}
"""The span kinds a reading must hold to be offered for a slot of a typed kind: a year's
rival is a year or a date, never the name a reading gave ("produced in Peter Asher")."""
_EDGES = re.compile(r"^[\s\"'“”‘’(\[]+|[\s\"'“”‘’)\].,;:!?]+$")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
_GLUED = re.compile(r"[^\W\d_]\.[A-Z][a-z]")
"""Two sentences a passage glued at a full stop ("... El-P.Jaime Meline"): no one value."""


def reading_span(reply: str, evidence: list[EvidenceSentence]
                 ) -> tuple[EvidenceSentence, int, str] | None:
    """Where a reading stands in the evidence: the sentence, the offset in it, and the
    passage's own spelling of the words; None for a long reply, "not stated", or words no
    sentence holds. The whole reading is looked for first, then without its article."""
    text = _EDGES.sub("", " ".join(str(reply or "").split()))
    if not text or len(text.split()) > READ_WORDS or text.lower() == NOT_STATED:
        return None
    for words in dict.fromkeys((text, _ARTICLE.sub("", text))):
        pattern = re.compile(rf"(?<!\w){re.escape(words)}(?!\w)", re.IGNORECASE)
        for sentence in evidence:
            found = pattern.search(sentence.text)
            if found and not _GLUED.search(found.group(0)):
                return sentence, found.start(), found.group(0)
    return None


def reads_as(reply: str, value: str, kind: str, evidence: list[EvidenceSentence]) -> bool:
    """Whether a reading names `value`: it stands in the evidence and is the value (case,
    quotes, an article, or a closing full stop aside; a name with middle names added)."""
    found = reading_span(reply, evidence)
    if found is None:
        return False
    read = _ARTICLE.sub("", found[2])
    return normal_form(kind, read) == normal_form(kind, _ARTICLE.sub("", value)) or \
        _same_name(value, read)


def without_draft_tail(value: str, following: str) -> str:
    """A reading without the trailing parts the draft repeats after its slot: "Roseau,
    Minnesota, USA" for "Michigan" in "... based in Michigan, USA." is "Roseau, Minnesota"."""
    parts = value.split(", ")
    for cut in range(1, len(parts)):
        if following.lower().startswith(", " + ", ".join(parts[cut:]).lower()):
            return ", ".join(parts[:cut])
    return value


def offer_reading(slot: Slot, options: list[Candidate], reply: str,
                  evidence: list[EvidenceSentence], following: str = ""
                  ) -> tuple[list[Candidate], str]:
    """The options with the reading offered second (after the draft's own value), or marked
    read where a pattern offered it already, and what became of it: "offered", "the draft's
    own value", "already offered", or why it was not (not found, not stated, not of a typed
    slot's kind). `following`: the draft's words after the slot, whose repeated parts the
    value leaves out (`without_draft_tail`)."""
    found = reading_span(reply, evidence)
    if found is None:
        return options, "not found in the evidence" if str(reply or "").strip() and \
            str(reply).strip().lower().rstrip(".") != NOT_STATED else "not stated"
    sentence, at, value = found
    value = without_draft_tail(value, following)
    if slot.kind in _TYPED and not any(s.kind in _TYPED[slot.kind] for s in spans(value)):
        return options, f"not a {slot.kind}"
    key = normal_form(slot.kind, value) or value.lower()
    keys = [normal_form(slot.kind, c.value) or c.value.lower() for c in options]
    if options and options[0].origin == "fact" and key == keys[0]:
        return options, "the draft's own value"
    same = [i for i, c in enumerate(options) if c.origin == "evidence" and
            _same_name(c.value, value)]
    if key in keys or same:  # the patterns offered it too: now the reading's as well
        at_option = keys.index(key) if key in keys else same[0]
        return [c.model_copy(update={"read": True}) if i == at_option else c
                for i, c in enumerate(options)], "already offered"
    read = Candidate(value=value, passage=sentence.passage, offset=sentence.offset + at,
                     context=with_lead(sentence.text[:at], value), read=True)
    head = [c for c in options if c.origin == "fact"]
    found_values = [c for c in options if c.origin == "evidence"]
    tail = [c for c in options if c.origin not in ("fact", "evidence")]
    room = MAX_CANDIDATES - len(head) - len(tail) - 1
    return head + [read] + found_values[:max(room, 0)] + tail, "offered"


def _same_name(offered: str, read: str) -> bool:
    """A reading that is an offered name with middle names added ("Robert Michael Sheehan"
    for "Robert Sheehan"): the same person, whom the offered, shorter form names."""
    short, full = offered.split(), read.split()
    return 2 <= len(short) < len(full) and short[0] == full[0] and short[-1] == full[-1]


def sentence_slot(question: str, draft: str, reading: str) -> Slot | None:
    """The span of a one-sentence draft (`one_sentence`) that a reading of the evidence
    would replace: the draft's one detail of the reading's kind that the question does not name
    ("eight" in "... spent eight weeks at No. 1" for the reading "nine"; "The Namesake" for
    "Salaam Bombay"). None where the draft has no such detail or more than one (which of two
    names a reading replaces is a guess), or where that detail is the reading itself."""
    if not one_sentence(draft):
        return None
    kinds = {s.kind for s in spans(reading)} or ({"name"} if reading[:1].isupper() else set())
    if not kinds:  # "standard gauge track": the draft's phrase closing on its last word
        return _phrase_slot(question, draft, reading)
    if len(kinds) != 1:
        return None
    kind, asked = kinds.pop(), f" {normalise(question, fold=True)} "
    found = [s for s in spans(draft) if s.kind == kind and _count(draft, s.text) == 1 and
             f" {normalise(s.text, fold=True)} " not in asked]
    if kind == "name" and len(found) > 1:  # a place read: the draft's place; a person: its
        found = _same_type(question, reading, draft, found)  # person ("Christina Aguilera,
        # born in Staten Island, New York.")
    if len(found) != 1 or normal_form(kind, _ARTICLE.sub("", found[0].text)) == \
            normal_form(kind, _ARTICLE.sub("", reading)):
        return None
    start, value = found[0].start, found[0].text
    head, of, tail = value.rpartition(" of ")
    if of and f" {normalise(head, fold=True)} " in asked:  # "... Attorney General of where?"
        start, value = start + len(head + of), tail  # "Attorney General of California"
    if kind == "name" and draft[:start].endswith("The "):  # "The Namesake": one title
        start, value = start - 4, "The " + value
    return Slot(kind=kind, text=value, start=start)


def _phrase_slot(question: str, draft: str, reading: str) -> Slot | None:
    """A lower-case reading's slot: the draft's words, as many as the reading has, that close
    on the reading's last word ("narrow gauge track" for "standard gauge track", asked "what
    kind of track?"), none of them a function word; None where that word is not once in the
    draft, or the words are the reading's or the question's own."""
    words = reading.split()
    last = re.finditer(rf"(?<![\w-]){re.escape(words[-1])}(?![\w-])", draft, re.IGNORECASE)
    ends = list(last)
    if len(words) < 2 or len(ends) != 1:
        return None
    run = re.search(rf"(?:[^\W\d][\w-]*\s+){{{len(words) - 1}}}$", draft[:ends[0].start()])
    value = (run.group(0) if run else "") + ends[0].group(0)
    if not run or any(w.lower() in STOP for w in value.split()[:-1]) or \
            value.lower() == reading.lower() or \
            f" {value.lower()} " in f" {normalise(question, fold=True)} ":
        return None
    return Slot(kind="role", text=value, start=run.start())


def _same_type(question: str, reading: str, draft: str, names: list[Span]) -> list[Span]:
    """Of the draft's names, the places where the question asks for one or the gazetteers
    know the reading as one, the people's full names where it asks for a person or the
    reading opens with a given name; all of them otherwise."""
    kind = question_kind(question)
    if kind == "place" or is_asked_place(reading, ""):
        return [s for s in names if is_asked_place(s.text, "")]
    if kind == "person" or (opens_person_name(reading.split()[0]) and len(reading.split()) > 1):
        return [s for s in names if full_name(draft, s)]
    return names
