"""Detail slots: the checkable spans of a fact, and the values the evidence offers for each.

A 1.5B model judges a claim badly when asked for a free verdict (macro-F1 0.43 on unseen stance
pairs) and corrects it badly when asked for a free rewrite. It does far better choosing among
options. This module does the deterministic half of that: it finds a fact's details (dates,
years, numbers, names, roles) with small patterns, and collects from the passages about the
subject the values of the same kind that could stand in their place. The choice itself is the
LM's (`programs/serc/choice.py`); whether a choice may change the fact is decided there, by the
`choose.` rules registered here.

No home-made entity recogniser: names are runs of capitalised words, roles the head noun of the
phrase after "was a"; their type is checked by the evidence sentence's topic (it must share the
fact's event words), and the model chooses among what is left.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from serc_dspy.core.text import glued_pieces, normalise, split_sentences
from serc_dspy.core.trace import Candidate, Passage, Slot
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.frames import following_words, preceding_word
from serc_dspy.rules.words import MONTHS, STOP, TITLES, content_stems, stem, words_of

MAX_SLOTS = 3
"""Slots asked per fact (two choice calls each); the most specific kinds first."""
MAX_CANDIDATES = 6
"""Options per slot, the fact's own value and "not stated" included."""
NOT_STATED = "not stated"
FOCUS_SENTENCES = 4
"""Evidence sentences a choice reads: those sharing most words with the fact."""

register(
    Rule("choose.supported", "with verdicts=\"choose\", a fact whose every asked slot had its "
         "own value chosen in both option orders, and found in the evidence, is SUPPORTED",
         "a 1.5B model chooses among options far better than it judges freely (free verdicts: "
         "macro-F1 0.43 on unseen stance pairs)"),
    Rule("choose.uncontested", "a slot whose value stands in the evidence about the subject, "
         "which offers no other value of its kind for the fact's event, is supported without "
         "asking", "options with one value and \"not stated\" test nothing but the model's "
         "reading, and cost two calls"),
    Rule("choose.swap", "a slot for which the same other candidate was chosen in both option "
         "orders, a value found literally in a passage about the subject, makes the fact "
         "CONTRADICTED and is its correction: that span alone is replaced",
         "free rewrites by a small model changed more than the wrong detail (the reliability "
         "round's N3) and corrected 6-9% of planted errors"),
    Rule("choose.unverified", "a choice that disagrees between the two orders, or says \"not "
         "stated\", leaves the fact unverified and in the draft's words: it is never removed "
         "on such a choice", "SERC removed 13 of 22 false claims and a quarter of the true ones "
         "on Factcheck-Bench's report split"),
    Rule("choose.rejected", "a slot whose own value, stated by no passage, was passed over in "
         "both option orders for a different evidence value each time makes the fact "
         "CONTRADICTED: one signal, which `agree.contradiction` holds to a second vote; "
         "confirmed or not, the fact is disputed and kept in the draft's words, since no "
         "value of the evidence fits to correct it with", "\"4.5 billion parameters\" "
         "against \"7 billion to 65 billion\": the model refused the claim's value in both "
         "orders yet split between the two rivals, and the claim was left unverified; a "
         "rewrite of a confirmed one invented a value (\"three separate tenures\" became "
         "\"four\"); off by default: on bios it fired on true facts (its one firing on the "
         "tuning split; 4 facts of the report split's clean drafts, 3 of them confirmed by the "
         "second vote), and the report stance pairs gained nothing",
         found_on="the tuning stance pairs (train 1-12, dev 1-42); the tuning split's K = 2 "
         "drafts", default=False),
    Rule("choose.asked_type", "a short answer to a question whose type word closes the "
         "names of its type (\"What book ...?\", \"... in which New York county?\") is "
         "the draft's name that ends in that word, where it has one, and its options are the "
         "evidence's names that end in it (\"Exeter Book\", \"Ulster County\"), sought "
         "through every evidence sentence", "the options of HaluEval's \"other\" questions "
         "were every name of the sentences nearest the question: nationalities for a book",
         english_only=True, found_on="HaluEval tuning items 11, 27"),
    Rule("choose.settle", "two slots of one fact contradicted (either swap would make it "
         "true) are each asked again with the blank in the draft's whole sentence; if more "
         "than one is still contradicted, only the one whose evidence (its sentence and the "
         "next) shares most words with the rest of the draft's sentence is swapped, and a tie "
         "swaps none", "\"the Nobel Prize in Chemistry in 1903\" is made true by 1911 as "
         "well as by Physics; \"together with Pierre Curie and Henri Becquerel\" says which "
         "was meant", found_on="the README's main job"),
    Rule("choose.propagate", "after a slot swap, a fact of the same sentence that states the "
         "swapped value takes the same swap, and the sentence's facts left unverified are "
         "asked again with the corrected fact beside the evidence",
         "the paper's Correct+Propagate (its Table 6: a corrected sport carries the role that "
         "depends on it)"),
)

_MONTH = (r"(?:January|February|March|April|May|June|July|August|September|October|November|"
          r"December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)\.?")
_DATE = re.compile(rf"\b(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+\d{{3,4}}"
                   rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{3,4}}|{_MONTH}\s+\d{{4}}"
                   # a day and month without a year ("born on June 25"): a date, not the
                   # number 25 (whose swap for "25 June 1961" wrote "June 25 June 1961")
                   rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?!\w|,?\s*\d)"
                   rf"|{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?!\w|,?\s*\d))\b")
_YEAR = re.compile(r"(?<![\w.,-])(1\d{3}|20\d{2})(?![\w])")
_NUMBER_WORDS = {w: n for n, w in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty".split())}
_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?:\s?(%|percent|million|"
                     r"billion|thousand))?(?![\w])|\b(" + "|".join(_NUMBER_WORDS) + r")\b",
                     re.IGNORECASE)
_WORD_TOKEN = re.compile(r"(?<![\w'’-])[^\W\d_][\w'’-]*(?:\.(?=\w))?[\w'’-]*")
_NAME_LINKS = frozenset("de da van von del di of the la le du".split())
"""Lower-case words that may stand inside a name ("Ludwig van Beethoven")."""


_INITIAL = re.compile(r"[A-Z]")
"""A middle or first initial, whose full stop does not end the name ("John F. Kennedy")."""


def _name_runs(text: str):
    """(start, end) of each run of capitalised words (any script with case: "Kraków",
    "Łódź"), joined by single spaces, an initial's or a title's full stop ("Dwight D.
    Eisenhower", "Mr. Probz") or at
    most one linking word ("University of Paris")."""
    tokens = list(_WORD_TOKEN.finditer(text))
    k = 0
    while k < len(tokens):
        if not tokens[k].group(0)[0].isupper():
            k += 1
            continue
        start, end, j = tokens[k].start(), tokens[k].end(), k + 1
        while j < len(tokens) and (text[end:tokens[j].start()] == " " or (
                text[end:tokens[j].start()] == ". " and (
                    _INITIAL.fullmatch(tokens[j - 1].group(0)) or
                    tokens[j - 1].group(0).lower() in TITLES)
                and tokens[j].group(0)[0].isupper() and tokens[j].group(0).lower() not in STOP
                )):  # "Dwight D. Eisenhower", "Mr. Probz" are one name
            word = tokens[j].group(0)
            if word[0].isupper():
                end, j = tokens[j].end(), j + 1
            elif word in _NAME_LINKS and j + 1 < len(tokens) and \
                    tokens[j + 1].group(0)[0].isupper() and \
                    text[tokens[j].end():tokens[j + 1].start()] == " ":
                end, j = tokens[j + 1].end(), j + 2
            else:
                break
        yield start, end
        k = j
_ROLE = re.compile(r"\b(?:is|was|are|were|became|become|as)\s+(?:an?|the)\s+"
                   r"((?:[A-Z][\w-]*\s+|[a-z]+ly\s+|(?:and|or)\s+)*)([a-z][a-z-]+)\b")
ROLE_NOT = STOP | {"member", "part", "number", "one", "group", "lot", "kind", "type", "result",
                    "time", "year", "way", "series", "couple", "pair", "total"}
ROLE_WORDS = 3
"""Lower-case words a role phrase may run to before its head noun ("a French film director")."""
_LY_NOUNS = frozenset({"family", "ally", "bully"})
"""Nouns in "-ly"; another "-ly" word is a modifier ("a monthly, peer-reviewed journal" is no
monthly: multi-turn tuning draft 146 had its "founder" swapped for "monthly")."""
_LOWER_WORD = re.compile(r" ([a-z][a-z-]+)\b")
KIND_ORDER = ("date", "year", "number", "name", "role")
_SENTENCE_STARTERS = frozenset("""born died founded located based released published married
formed created established written directed produced raised educated elected appointed
around approximately nearly almost roughly less fewer circa""".split())
"""Participles and hedges of an amount that open a sentence capitalised ("Born 1868.", "Around
100,000 inhabitants"): never a name."""


@dataclass(frozen=True)
class Span:
    kind: str
    text: str
    start: int


def spans(text: str, subject: str = "") -> list[Span]:
    """The text's detail spans, of every kind, without overlaps (a date's year is the date's):
    the subject's own name is no detail, nor a month, nor a capitalised function word."""
    taken: list[tuple[int, int]] = []
    found: list[Span] = []

    def free(a: int, b: int) -> bool:
        return all(b <= x or a >= y for x, y in taken)

    def add(kind: str, a: int, b: int) -> None:
        value = text[a:b].strip(" ,.")
        if value and free(a, b):
            taken.append((a, b))
            found.append(Span(kind, value, a))

    for m in _DATE.finditer(text):
        add("date", m.start(), m.end())
    for m in _YEAR.finditer(text):
        add("year", m.start(1), m.end(1))
    for m in _NUMBER.finditer(text):
        if _counts_something(text, m):
            add("number", m.start(), m.end())
    subject_words = {w.lower() for w in words_of(subject) if w.lower() not in STOP}
    for start, end in _name_runs(text):
        run = re.sub(r"['’]s$", "", text[start:end])  # "Puerto Rico's" names Puerto Rico
        name = _trim_name(run, subject_words)
        if name:
            a = start + run.index(name)
            add("name", a, a + len(name))
    for m in _ROLE.finditer(text):
        start, end = role_head(text, m.start(2), m.end(2))
        role = text[start:end]
        if role.lower() not in ROLE_NOT and len(role) > 3 and not role.endswith("-") and \
                (not role.endswith("ly") or role.lower() in _LY_NOUNS):
            add("role", start, end)
    return sorted(found, key=lambda s: s.start)


def _counts_something(text: str, number: re.Match[str]) -> bool:
    """A number that states a quantity: not a capitalised word of a title ("Square One"), not
    "one of", nor a list marker ("1." opening a line or following a colon). Factcheck-Bench
    tuning answers had "Square One" swapped to "Square 24", a list's "1." to "three" and "one
    of the best restaurants" to "50 of"."""
    value = number.group(0)
    if value[0].isupper() or re.match(r"one\s+of\b", text[number.start():], re.I):
        return False
    before = text[:number.start()].rsplit("\n", 1)[-1].rstrip()
    after = text[number.end():number.end() + 1]
    return not ((not before or before.endswith(":")) and after in (".", ")"))


def role_head(text: str, start: int, end: int) -> tuple[int, int]:
    """The noun a role phrase ends in: "was a prominent figure" is a figure, "a software
    engineer" an engineer (taking the first word made "prominent" and "software" slots, and
    a Factcheck-Bench tuning answer's "prominent" was swapped for "dazzling")."""
    for _ in range(ROLE_WORDS - 1):
        following = _LOWER_WORD.match(text, end)
        if not following or following.group(1).lower() in STOP or \
                following.group(1).endswith("ing") and not (
                    (after := _LOWER_WORD.match(text, following.end(1))) and
                    after.group(1).lower() not in STOP):
            break  # "a child actor using the name" is an actor; a "figure skating champion"
        start, end = following.start(1), following.end(1)
    return start, end


def _trim_name(name: str, subject_words: set[str]) -> str:
    """A capitalised run without its leading function word ("The", "In") or title ("Lady",
    while two words are left), and without the subject's own name words; empty when nothing
    is left that names something."""
    parts = name.split()
    while parts and (parts[0].lower() in STOP or parts[0].lower().rstrip(".") in MONTHS
                     or parts[0].lower() in _SENTENCE_STARTERS):
        parts.pop(0)
    while parts and parts[-1].lower() in STOP:
        parts.pop()
    while len(parts) > 2 and parts[0].lower().rstrip(".") in TITLES:
        parts.pop(0)  # "then-First Lady Hillary Clinton" names Hillary Clinton; "Lady Gaga" stays
    words = {w.lower() for w in words_of(" ".join(parts))}
    if not parts or not parts[0][:1].isupper() or words <= subject_words or (
            len(subject_words) > 1 and subject_words <= words):
        # the subject itself, by any of its names ("Félix-Alexandre Guilmant" for Alexandre
        # Guilmant): not a detail of the fact
        return ""
    if len(parts) == 1 and parts[0].lower().rstrip(".") in MONTHS:
        return ""
    return " ".join(parts)


def blank_in(text: str, value: str) -> str | None:
    """`text` with its one whole-word `value` replaced by ___ (None unless it stands once)."""
    if _count(text, value) != 1:
        return None
    return re.sub(rf"(?<!\w){re.escape(value)}(?!\w)", "___", text, count=1)


def find_slots(fact: str, sentence: str, subject: str = "") -> list[Slot]:
    """A fact's slots: its detail spans that also stand exactly once in the draft's sentence
    (so a swap can be made there, and nowhere else), the most specific kinds first, at most
    `MAX_SLOTS`."""
    chosen = []
    for span in spans(fact, subject):
        if _count(sentence, span.text) == 1:
            chosen.append(Slot(kind=span.kind, text=span.text, start=span.start))
    chosen.sort(key=lambda s: KIND_ORDER.index(s.kind))
    return chosen[:MAX_SLOTS]


def _count(text: str, value: str) -> int:
    return len(re.findall(rf"(?<!\w){re.escape(value)}(?!\w)", text))


def occurrences(text: str, value: str) -> int:
    """How often `value` stands in `text` as whole words."""
    return _count(text, value)


def normal_form(kind: str, value: str) -> str:
    """What two values of one kind are compared by: "7 November 1867" and "November 7, 1867"
    alike, "three" and "3", accents and case folded."""
    if kind in ("date", "year"):
        year = _YEAR.search(value)
        month = re.search(_MONTH, value)
        day = re.search(r"(?<!\d)(\d{1,2})(?:st|nd|rd|th)?(?!\d)", value)
        if kind == "year" or not month:
            return year.group(1) if year else normalise(value, fold=True)
        return " ".join(x for x in (year.group(1) if year else "", month.group(0)[:3].lower(),
                                    day.group(1).lstrip("0") if day else "") if x)
    if kind == "number":
        word = value.lower().strip()
        if word in _NUMBER_WORDS:
            return str(_NUMBER_WORDS[word])
        return normalise(re.sub(r"(?<=\d),(?=\d{3})", "", value), fold=True)
    if kind == "role":
        return stem(value)
    return normalise(value, fold=True)


def compatible(kind: str, span_kind: str) -> bool:
    return kind == span_kind or (kind == "year" and span_kind == "date")


def _as_kind(kind: str, span: Span) -> str:
    """A date offered for a year slot is offered as its year."""
    if kind == "year" and span.kind == "date":
        year = _YEAR.search(span.text)
        return year.group(1) if year else span.text
    return span.text


@dataclass(frozen=True)
class EvidenceSentence:
    text: str
    passage: int
    offset: int


def about_subject(passages: list[Passage], subject_name: str) -> list[EvidenceSentence]:
    """The sentences of the passages that name the subject (any of its name words, anywhere
    in the passage: a passage about "Maria Skłodowska" that says "Curie" later is about
    Marie Curie); every passage's sentences when the subject has no name."""
    names = {w.lower() for w in words_of(subject_name)
             if len(w) > 2 and w.lower() not in STOP}
    found = []
    for index, passage in enumerate(passages):
        if names and not names & {w.lower() for w in words_of(passage.text)}:
            continue
        cursor = 0
        sentences = [sentence for piece in glued_pieces(passage.text)
                     for sentence in split_sentences(piece) or [piece]]
        for sentence in sentences:
            offset = passage.text.find(sentence, cursor)
            offset = cursor if offset < 0 else offset
            cursor = offset + len(sentence)
            found.append(EvidenceSentence(sentence, index, offset))
    return found


def focus(evidence: list[EvidenceSentence], fact: str, subject: str = "",
          limit: int = FOCUS_SENTENCES) -> list[EvidenceSentence]:
    """The evidence sentences about the fact: those sharing most content words with it (one
    at least), at most `limit`, in the passages' order. A 1.5B model reads a few sentences
    about the claim far better than a page (MiniCheck's lesson: judge against short chunks)."""
    words = content_stems(fact, subject)
    scored = [(len(words & content_stems(s.text, subject)), k) for k, s in enumerate(evidence)]
    best = sorted((x for x in scored if x[0] > 0), key=lambda x: -x[0])[:limit]
    return [evidence[k] for _, k in sorted(best, key=lambda x: x[1])]


def collect_candidates(slot: Slot, fact: str, evidence: list[EvidenceSentence],
                       subject: str = "", frame: str | None = None,
                       after: tuple[str, ...] = ()) -> list[Candidate]:
    """The slot's options: its own value, the same-kind values of the evidence sentences about
    the fact's event (most shared event words first; one shared word at least), each once by
    its normal form, then "not stated"; at most `MAX_CANDIDATES`.

    A name or role is offered only in the slot's frame, the word before it in the draft
    (`frame`, `preceding_word`): "born in ___" is offered "in Warsaw", not "with Pierre
    Curie"; or in its two words after (`after`, `following_words`: "Jordan's 15th ___" is
    offered "Puerto Rico's 15th"); a person is never offered for a field; and the subject's own
    names are never a rival ("Beenie Man" for his birth name "Moses Anthony Davis")."""
    rest = (fact[:slot.start] + " " + fact[slot.start + len(slot.text):])
    event = content_stems(rest, subject) - {stem(w) for w in words_of(slot.text)}
    in_fact = normalise(fact, fold=True)
    ranked = sorted(evidence, key=lambda s: -len(event & content_stems(s.text, subject)))
    about = [s for s in ranked if event & content_stems(s.text, subject)]

    own_words = content_stems(slot.text)

    def fits(sentence: EvidenceSentence, span: Span, value: str) -> bool:
        """A rival: not stated in the fact already ("from 1871 until 1901" offers 1871 for
        neither year); a name or role in the slot's frame, sharing no word with the fact's
        own value ("Chinese Americans" is another wording of "Taishanese Chinese American",
        not another value)."""
        if _count(fact, value) or normal_form(slot.kind, value) in {
                normal_form(s.kind, s.text) for s in spans(fact) if compatible(slot.kind,
                                                                              s.kind)}:
            return False
        if slot.kind not in ("name", "role"):
            return True
        return (frame is None or preceding_word(sentence.text, span.start) == frame or
                bool(after) and following_words(sentence.text, span.start + len(span.text)) ==
                after) and \
            not own_words & content_stems(value) and normalise(value, fold=True) not in in_fact

    return _offer(slot, about, fits, subject=subject)


def _offer(slot: Slot, sentences: list[EvidenceSentence],
           fits: Callable[[EvidenceSentence, Span, str], bool],
           options: list[Candidate] | None = None, subject: str = "",
           cap: int = MAX_CANDIDATES) -> list[Candidate]:
    """The slot's options: its own value (unless `options` already start the list), then the
    values of its kind in `sentences`, in that order, each once by its normal form and only
    where `fits`, with the words that lead up to each, up to the `cap`; then "not stated"."""
    options = options or [Candidate(value=slot.text, origin="fact")]
    seen = {normal_form(slot.kind, c.value) for c in options}
    dated = slot.kind == "date" and bool(_YEAR.search(slot.text))
    for sentence in sentences:
        for span in spans(sentence.text, subject):
            if len(options) >= cap - 1:
                break
            if not compatible(slot.kind, span.kind) or \
                    dated and span.kind == "date" and not _YEAR.search(span.text):
                continue  # a date with its year is never offered a day and month alone
            value = _as_kind(slot.kind, span)
            key = normal_form(slot.kind, value)
            if not key or key in seen or not fits(sentence, span, value):
                continue
            seen.add(key)
            options.append(Candidate(value=value, passage=sentence.passage,
                                     offset=sentence.offset + span.start,
                                     context=with_lead(sentence.text[:span.start], span.text)))
    options.append(Candidate(value=NOT_STATED, origin="none"))
    return options


def sentence_of(candidate: Candidate, evidence: list[EvidenceSentence]
                ) -> EvidenceSentence | None:
    """The evidence sentence an evidence candidate was found in (None: not at hand)."""
    return next((s for s in evidence if s.passage == candidate.passage and
                 s.offset <= (candidate.offset or 0) < s.offset + len(s.text)), None)


def stated(slot: Slot, evidence: list[EvidenceSentence]) -> bool:
    """Whether the slot's own value (by its normal form) stands in an evidence sentence."""
    own = normal_form(slot.kind, slot.text)
    return any(has_value(slot.kind, own, sentence.text) or
               (slot.kind in ("name", "role") and bool(own) and
                own in normalise(sentence.text, fold=True))
               for sentence in evidence)


def with_lead(before: str, value: str) -> str:
    """`value` after up to three of the words before it (`before`), as an option shows where
    the evidence states it ("died on 4 July 1934"): one mechanism for every option."""
    lead = re.search(r"(?:\S+\s+){0,3}$", before)
    return (lead.group(0) if lead else "") + value


def has_value(kind: str, value: str, text: str) -> bool:
    """Whether `text` holds a span of the slot's kind whose normal form is `value`."""
    return any(compatible(kind, s.kind) and normal_form(kind, _as_kind(kind, s)) == value
               for s in spans(text))
