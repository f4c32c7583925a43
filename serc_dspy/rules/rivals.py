"""Whether a rival value chosen in both option orders may replace a fact's own: the `choose.`
rules that hold a choice back when the evidence states the fact's value for its event, or when
the rival's own words are about another thing (`choose.own_stated`, `choose.name_stated`,
`choose.same_frame`, `choose.same_unit`, `choose.counted_noun`, `choose.same_range`,
`choose.range_order`). The guards that also read a short answer's question are in
`rules.asked`.

A swap chosen twice by a 1.5B model is still a reading of the evidence, and on clean text most
such swaps hit true details: these rules ask the passages, not the model, whether the rival is
a value of the same thing."""

from __future__ import annotations

import re

from serc_dspy.core.text import normalise
from serc_dspy.core.trace import Candidate, Slot
from serc_dspy.rules.base import Rule, RuleSwitch, register
from serc_dspy.rules.frames import preceding_word
from serc_dspy.rules.places import place_kinds
from serc_dspy.rules.roles import said_of_subject
from serc_dspy.rules.slots import (
    EvidenceSentence,
    compatible,
    has_value,
    normal_form,
    sentence_of,
    spans,
)
from serc_dspy.rules.units import UNIT_WORDS, unit_of
from serc_dspy.rules.words import STOP, content_stems, is_content, stem, words_of

FRAME_WORDS = 3
"""Words each side of a fact's value that say what it is a value of ("has won ___ official
LPGA tournaments", "was born on ___"): `choose.same_frame` looks for one of them among the
`RIVAL_FRAME_WORDS` words each side of the rival in its passage, whose prose is wordier ("was
born on 3 March 1951 into a poor family in ___")."""
RIVAL_FRAME_WORDS = 5
BOUND_WORDS = frozenset({"after", "before", "since", "until", "till", "by"})
"""Words that make the year after them a bound of the event, not its value
(`choose.year_bound`)."""

register(
    Rule("choose.same_unit", "a number rival chosen in both orders is swapped in only when "
         "the noun after it counts what the noun after the slot's number counts (each the "
         "last word of the words that follow, up to a function word); otherwise the fact "
         "stays unverified", "on Factcheck-Bench's tuning answers number swaps changed "
         "\"38 chromosomes\" to 19 (\"19 chromosome pairs\"), \"79% nitrogen\" to 36% "
         "(\"36% Oxygen\") and \"390 USD\" to 2,000 (\"2,000 DKK\")", english_only=True,
         found_on="Factcheck-Bench items 9, 11, 23 (tuning split)",
         thresholds={"unit_words": UNIT_WORDS}),
    Rule("choose.counted_noun", "a number rival chosen in both orders is swapped in only "
         "when each of the two numbers is followed by the noun it counts, so that "
         "`choose.same_unit` can compare them; a bare number (\"at the age of 11\", \"24 "
         "other tournaments\", \"three, teen-age girls\") or one inside a name (\"50 Cent\") "
         "leaves the fact unverified", "on the tuning split every number swap whose either "
         "side counted no noun was wrong: \"at the age of 11\" became nine, \"50 Cent\" 5, "
         "\"one of the best restaurants\" 50 (\"World's 50 Best\"), a list's \"1.\" three; "
         "the one right number swap (\"one new star\" to 7 \"stars\") counts a noun on both "
         "sides", english_only=True, found_on="wikipedia_dev.json (Anna May Wong, Focus..., "
         "K = 0 and 2); Factcheck-Bench items 11, 15 (tuning split)",
         thresholds={"unit_words": UNIT_WORDS}),
    Rule("choose.name_stated", "a fact's one contradicted slot, a name or role that an "
         "evidence sentence about the subject states word for word together with the fact's "
         "other years, dates and numbers, is not swapped (a planted or invented name is stated "
         "nowhere; \"Chemistry\" beside 1911 states no prize of 1903); two contradicted slots "
         "of one fact are weighed by `choose.settle` as before", "on the tuning bios' clean "
         "drafts true names the article states were swapped for other names of its "
         "sentences: a birth name \"Neeru Bheda\" for \"Hindu\", a bandmate for another "
         "bandmate", english_only=True,
         found_on="wikipedia_dev.json, Rakhi Sawant and Nikki Sixx, K = 0"),
    Rule("choose.range_order", "a year or date rival chosen in both orders for one end of a "
         "range in the draft's sentence (\"from 19 February 2010 to 26 October 2011\", "
         "\"(September 4, 1931 – October 17, 2024)\") is swapped in only when the range stays "
         "in order, its start before its end; otherwise the fact stays unverified", "on the "
         "tuning bios' clean drafts a term's end became a date before its start, and a death "
         "date the birth date that opens the same range", english_only=True,
         found_on="wikipedia_dev.json, Nisar Ahmad Kakru and Mitzi Gaynor, K = 0"),
    Rule("choose.same_range", "a year or date rival chosen in both orders is swapped in only "
         "when it stands at the same end of a range as the slot's value, or either stands in "
         "none (a range: two years joined by a dash, \"to\", \"until\" or \"through\"); "
         "otherwise the fact stays unverified", "on a tuning bio's clean draft \"1969 to "
         "1972\" became \"1969 to 1967\", from a vice-governorship \"(1967–1969)\" that "
         "ended as the fact's term began", english_only=True,
         found_on="wikipedia_dev.json, Antonio Diaz (Filipino politician), K = 0"),
    Rule("choose.own_stated", "a slot's rival chosen in both orders is not swapped in when "
         "the evidence states the fact's own value in a sentence about the fact's event more "
         "closely than the rival's sentence, or word for word with the two words each side of "
         "it (a caller's short answer: when the evidence states it at all): the fact stays "
         "unverified", "on the report "
         "split's planted errors (values the article never states) 27 swaps fixed 7 errors "
         "and altered 14 true units, whose own values the articles do state"),
    Rule("choose.same_frame", "a slot's rival chosen in both orders is swapped in only when "
         "the words around it in its passage (five each side, in its sentence) share a "
         "content word with the words around the slot in the fact (three each side), the "
         "subject's names and the two values aside (\"won 72 official LPGA tournaments\" is "
         "not corrected by \"another four times\"); a one-sentence draft answering a "
         "question has the question's words in its frame too; otherwise the fact stays "
         "unverified",
         "on the tuning split's clean drafts (K = 0), 17 slots were swapped, every one onto "
         "true text, and 15 of their rivals stood in other events' words (a death date for a "
         "birth date, a 1904 recital series for an organist's last year)",
         found_on="wikipedia_dev.json, the first 10 bios, K = 0", thresholds={
             "frame_words": FRAME_WORDS, "rival_frame_words": RIVAL_FRAME_WORDS}),
    Rule("choose.year_bound", "a year or date rival chosen in both orders that the passage "
         "gives as a bound (after \"after\", \"before\", \"since\", \"until\", \"till\" or "
         "\"by\": \"writers born after 1959\") is swapped in only where the slot's value "
         "stands after the same word; otherwise the fact stays unverified", "a bound is no "
         "value of the event: on a tuning bio's K = 2 draft a birth year became the 1959 of "
         "an anthology of \"writers born after 1959\"; of the recorded year swaps of the "
         "tuning and report runs, none other had a rival after such a word (counted)",
         english_only=True, found_on="wikipedia_dev.json, Gerardo Fernandez Fe, K = 2",
         thresholds={"bound_words": sorted(BOUND_WORDS)}),
    Rule("choose.place_for_place", "a name slot that names a place the gazetteers know "
         "(GeoNames, ISO 3166-2: `rules.places`) is swapped only for a rival that names one "
         "too; otherwise the fact stays unverified", "a city is no show: on a tuning bio's "
         "K = 2 draft \"on Cleveland radio station WTAM\" became \"on Sportsline radio "
         "station\", from \"a frequent caller on the Sportsline radio show on WTAM\"; of the "
         "recorded name swaps of the tuning and report bios, none other replaced a place by "
         "a name that is none (counted)", found_on="wikipedia_dev.json, Mike Trivisonno, "
         "K = 2"),
    Rule("choose.frame_first", "a rival that `choose.same_frame` would hold back is swapped "
         "in when a word of the slot's frame stands before it in its sentence's clause and "
         "no other value of its kind stands between them (for a name or role: none with the "
         "rival's word before it; a clause ends at a comma, semicolon, bracket, \"and\" or "
         "\"but\"): \"was born in the Waterhouse district of Kingston in 1973\" gives the "
         "birth year", "the five words around a rival miss the verb of a long clause: on the "
         "tuning bios' K = 2 drafts a planted birth year was offered the right year and held "
         "back; off by default: on the report bios' clean drafts (K = 0) it let one swap onto "
         "true text through and fixed nothing at K = 2", english_only=True,
         found_on="wikipedia_dev.json, Beenie Man, K = 2", default=False),
)


def stated_alone(slot: Slot, others: list[Slot], evidence: list[EvidenceSentence]) -> bool:
    """Whether an evidence sentence states the slot's name or role word for word together
    with the fact's other years, dates and numbers: a statement of the same event. "Chemistry"
    in "two sciences, physics and chemistry" or beside 1911 is no statement of "Chemistry in
    1903"; a fact with no such detail ("a bandmate of Lizzie Grey") needs the name alone."""
    own = normalise(slot.text, fold=True)
    counted = [o for o in others if o.kind in ("year", "date", "number")]
    return bool(own) and any(
        own in normalise(s.text, fold=True) and
        all(has_value(o.kind, normal_form(o.kind, o.text), s.text) for o in counted)
        for s in evidence)


def context_of(slot: Slot, evidence: list[EvidenceSentence]) -> str:
    """The evidence sentence the slot's chosen value was found in, and the one after it."""
    found = next((c for c in slot.candidates if c.value == slot.chosen and c.origin ==
                  "evidence"), None)
    sentence = sentence_of(found, evidence) if found is not None else None
    if sentence is None:
        return ""
    k = evidence.index(sentence)
    following = evidence[k + 1].text if k + 1 < len(evidence) and \
        evidence[k + 1].passage == sentence.passage else ""
    return sentence.text + " " + following


PHRASE_WORDS = 2
"""Words each side of a slot's value that, stated with it word for word in a passage, attest it
("the first woman to win" against a rival "person" from "the first person to win two")."""


def own_phrase(fact: str, slot: Slot) -> str:
    """The slot's value with `PHRASE_WORDS` words each side, normalised and padded ("" when
    either side has none: the value alone is not a phrase)."""
    before = re.findall(r"[^\W_]+", fact[:slot.start])[-PHRASE_WORDS:]
    after = re.findall(r"[^\W_]+", fact[slot.start + len(slot.text):])[:PHRASE_WORDS]
    if not before or not after:
        return ""
    return f" {normalise(' '.join(before + [slot.text] + after), fold=True)} "


def own_attested(slot: Slot, fact: str, evidence: list[EvidenceSentence], chosen: Candidate,
                 subject: str = "") -> bool:
    """Whether the evidence states the fact's own value (as a value of its kind) in a sentence
    about the fact's event more closely than the chosen rival's sentence is (event words shared
    with the fact, its slot aside): then the evidence supports the fact as it stands, and the
    choice of the rival is the model's misreading, not a contradiction. A planted or invented
    value is stated nowhere, so this never stands in a real correction's way; "Chemistry in
    1903" is stated for 1911's prize, a sentence less about the fact than 1903's "Physics"
    one."""
    phrase = own_phrase(fact, slot)
    if phrase and any(phrase in f" {normalise(s.text, fold=True)} " for s in evidence):
        return True  # "the first woman to win" stands word for word in a passage
    rest = fact[:slot.start] + " " + fact[slot.start + len(slot.text):]
    event = content_stems(rest, subject) - {stem(w) for w in words_of(slot.text)}
    own = normal_form(slot.kind, slot.text)

    def states_own(sentence: EvidenceSentence) -> bool:  # as a value of its kind
        return has_value(slot.kind, own, sentence.text)

    def shared(sentence: EvidenceSentence) -> int:
        return len(event & content_stems(sentence.text, subject))

    own_best = max((shared(s) for s in evidence if states_own(s)), default=0)
    rival = sentence_of(chosen, evidence)
    return own_best > (shared(rival) if rival is not None else 0)


def frame_stems(text: str, start: int, end: int, skip: set[str], size: int) -> set[str]:
    """The content stems of the `size` words before `text[start:end]` and after it."""
    tokens = list(re.finditer(r"[^\W_]+", text))
    before = [m.group() for m in tokens if m.end() <= start][-size:]
    after = [m.group() for m in tokens if m.start() >= end][:size]
    return {stem(w) for w in before + after
            if w.lower() not in STOP and w.lower() not in skip and is_content(w)}


def same_frame(slot: Slot, fact: str, evidence: list[EvidenceSentence], chosen: Candidate,
               subject: str = "", question: str = "") -> bool:
    """Whether the chosen rival stands among words about the same thing as the slot's value:
    the words around it in its sentence share a content stem with the words around the slot
    in the fact (the subject's names and both values aside). On the tuning split's traces
    (windows 3 and 5) it kept 3 of the 4 swaps that fixed a planted error and refused 21 of
    the 25 that did not. A fact whose slot has no content
    word around it, or a rival whose sentence is not at hand, is not held back. A one-sentence
    answer's frame is also the `question` it answers ("In what show did Nixon receive the 2004
    Emmy ...?": the show's "(1998-2004)")."""
    rival = sentence_of(chosen, evidence)
    skip = _skipped(slot, chosen, subject)
    own = own_frame(slot, fact, skip, question)
    if rival is None or not own:
        return True
    at = (chosen.offset or 0) - rival.offset
    return bool(own & frame_stems(rival.text, at, at + len(chosen.value), skip,
                                  RIVAL_FRAME_WORDS))


def _skipped(slot: Slot, chosen: Candidate, subject: str) -> set[str]:
    """Words no frame is made of: the subject's names and the two values."""
    return {w.lower() for w in words_of(f"{subject} {slot.text} {chosen.value}")}


def own_frame(slot: Slot, fact: str, skip: set[str], question: str = "") -> set[str]:
    """The content stems around the slot in the fact (`FRAME_WORDS` each side; a year that
    stands in a date, around the date: "was born on 26 August ___"), and the question's."""
    start, end = slot.start, slot.start + len(slot.text)
    if slot.kind == "year":
        start, end = next(((d.start, d.start + len(d.text)) for d in spans(fact)
                           if d.kind == "date" and d.start <= start < d.start + len(d.text)),
                          (start, end))
    return frame_stems(fact, start, end, skip, FRAME_WORDS) | (
        content_stems(question) - {stem(w) for w in skip})


_CLAUSE_BREAK = re.compile(r"[,;:()]|\s(?:and|but|while|whereas)\s")


def frame_first(slot: Slot, fact: str, evidence: list[EvidenceSentence], chosen: Candidate,
                subject: str = "", question: str = "") -> bool:
    """Whether a word of the slot's frame stands before the rival in its clause (no comma,
    semicolon, bracket, "and" or "but" between), with no other value of its kind between them
    (a name or role: none with the rival's word before it): the rival is then the value the
    frame's word governs ("born in the Waterhouse district of Kingston in 1973"), however many
    words away. On the tuning bios' clean drafts a sentence-wide reach let "born ... in
    Morovis, Puerto Rico on March 24, 2018" give a birth date."""
    rival = sentence_of(chosen, evidence)
    skip = _skipped(slot, chosen, subject)
    own = own_frame(slot, fact, skip, question)
    if rival is None or not own:
        return False
    text, at = rival.text, (chosen.offset or 0) - rival.offset
    clause = max((m.end() for m in _CLAUSE_BREAK.finditer(text, 0, at)), default=0)
    ends = [m.end() for m in re.finditer(r"[^\W_]+", text[clause:at])
            if m.group().lower() not in skip and stem(m.group()) in own]
    if not ends:
        return False
    last, word = clause + ends[-1], preceding_word(text, at)
    return not any(compatible(slot.kind, s.kind) and (
        slot.kind not in ("name", "role") or preceding_word(text, last + s.start) == word)
        for s in spans(text[last:at], subject))


def units(slot: Slot, fact: str, evidence: list[EvidenceSentence], chosen: Candidate
          ) -> tuple[str, str] | None:
    """The nouns a number slot and its rival count (`unit_of`, "" for none); None when the
    slot is no number or the rival's sentence is not at hand (then no unit guard holds)."""
    rival = sentence_of(chosen, evidence)
    if slot.kind != "number" or rival is None:
        return None
    at = (chosen.offset or 0) - rival.offset
    return (unit_of(fact, slot.start + len(slot.text)),
            unit_of(rival.text, at + len(chosen.value)))


def same_unit(slot: Slot, fact: str, evidence: list[EvidenceSentence], chosen: Candidate
              ) -> bool:
    """Whether a number rival counts the same thing as the slot's number: the noun each is
    followed by ("19 chromosome pairs" does not count chromosomes, "36% oxygen" is not a share
    of nitrogen, "2,000 DKK" is no price in USD). Where either number is followed by no noun,
    or the rival's sentence is not at hand, it is not held back."""
    found = units(slot, fact, evidence, chosen)
    return found is None or not all(found) or found[0] == found[1]


def counted_noun(slot: Slot, fact: str, evidence: list[EvidenceSentence], chosen: Candidate
                 ) -> bool:
    """Whether a number rival and the slot's number each count a noun (`unit_of`): without
    both, `same_unit` has nothing to compare, and a bare number in a bio is most often
    another count the passage makes ("at the age of nine" for an 11 the article gives
    elsewhere). Not a number, or the rival's sentence not at hand: not held back."""
    found = units(slot, fact, evidence, chosen)
    return found is None or all(found)


_RANGE_JOIN = r"\s*(?:–|—|-|\bto\b|\buntil\b|\btill\b|\bthrough\b)\s*"
_DAY_MONTH = r"(?:[A-Za-z]+\.?\s+){0,2}(?:\d{1,2}(?:st|nd|rd|th)?,?\s+)?(?:[A-Za-z]+\.?\s+)?"
_OPENS_RANGE = re.compile(_RANGE_JOIN + _DAY_MONTH + r"\d{4}\b")
_CLOSES_RANGE = re.compile(r"\b\d{4}\)?" + _RANGE_JOIN + _DAY_MONTH + r"$")


def range_end(text: str, start: int, end: int) -> str:
    """Which end of a range of years the value at text[start:end] stands at: "start" ("1967" in
    "(1967–1969)", "January 3, 1905 – February 3, 1961"), "end" ("1972" in "from 1969 to
    1972"), or "" when it stands in none."""
    if _OPENS_RANGE.match(text, end):
        return "start"
    if _CLOSES_RANGE.search(text[:start]):
        return "end"
    return ""


def same_range(slot: Slot, fact: str, evidence: list[EvidenceSentence], chosen: Candidate
               ) -> bool:
    """Whether a year or date rival may replace the slot's: not when one closes a range and the
    other opens one ("1969 to 1972" is not corrected by the 1967 of "(1967–1969)", a term that
    ended as the fact's began). Where either stands in no range, it is not held back."""
    rival = sentence_of(chosen, evidence)
    if slot.kind not in ("year", "date") or rival is None:
        return True
    own = range_end(fact, slot.start, slot.start + len(slot.text))
    at = (chosen.offset or 0) - rival.offset
    found = rival.text.find(chosen.value, at)
    theirs = range_end(rival.text, at, found + len(chosen.value)) if found >= 0 else ""
    return not own or not theirs or own == theirs


_MONTHS3 = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
OTHER_END_CHARS = 20
"""Characters before a range's joining dash or "to" that hold its first date ("from 19 February
2010 to"): `choose.range_order` reads that date there."""


def date_key(value: str) -> tuple[int, ...]:
    """(year, month, day) as far as the value gives them, by the one date form of the
    project (`normal_form`); () when it has no year."""
    parts = normal_form("date", value).split()
    if not parts or not parts[0].isdigit():
        return ()
    key = [int(parts[0])]
    if len(parts) > 1 and parts[1] in _MONTHS3:
        key.append(_MONTHS3.index(parts[1]) + 1)
        if len(parts) > 2 and parts[2].isdigit():
            key.append(int(parts[2]))
    return tuple(key)


def range_order(slot: Slot, sentence: str, chosen: Candidate) -> bool:
    """Whether a year or date rival keeps the draft sentence's range in order: swapped in at
    the range's end it must not come before its start (or be the same day), at its start not
    after its end. A value in no range is not held back."""
    at = sentence.find(slot.text)
    if slot.kind not in ("year", "date") or at < 0:
        return True
    end = at + len(slot.text)
    opens = _OPENS_RANGE.match(sentence, end)
    closes = None if opens else _CLOSES_RANGE.search(sentence[:at])
    if opens:
        first, last = date_key(chosen.value), date_key(opens.group(0))
    elif closes:
        first = date_key(sentence[max(0, closes.start() - OTHER_END_CHARS):closes.start() + 4])
        last = date_key(chosen.value)
    else:
        return True
    common = min(len(first), len(last))
    if not common:
        return True
    return first[:common] < last[:common] or (first[:common] == last[:common] and common < 3)


def year_bound(slot: Slot, fact: str, evidence: list[EvidenceSentence], chosen: Candidate
               ) -> bool:
    """Whether a year or date rival stands after a bound word (`BOUND_WORDS`) that the slot's
    value does not: "writers born after 1959" bounds a generation and dates no birth."""
    rival = sentence_of(chosen, evidence)
    if slot.kind not in ("year", "date") or rival is None:
        return False
    word = preceding_word(rival.text, (chosen.offset or 0) - rival.offset)
    return word in BOUND_WORDS and word != preceding_word(fact, slot.start)


def place_for_place(slot: Slot, rival: Candidate) -> bool:
    """Whether a rival may replace the slot's name as a place: always, unless the slot names a
    place the gazetteers know and the rival names none ("Cleveland" is not replaced by a
    radio show's name)."""
    return slot.kind != "name" or not place_kinds(slot.text) or bool(place_kinds(rival.value))


def held_back(slot: Slot, fact: str, sentence: str, evidence: list[EvidenceSentence],
              rival: Candidate, subject: str, on: RuleSwitch, question: str = ""
              ) -> tuple[str, str] | None:
    """The first guard (switched on) that finds a rival chosen in both orders to be a value of
    another thing, as (its rule, why); None: the rival may be swapped in. `question`: the
    question a one-sentence draft answers, whose words frame its value too."""
    guards = (
        ("choose.same_frame", lambda: same_frame(slot, fact, evidence, rival, subject,
                                                 question) or (
            on("choose.frame_first") and frame_first(slot, fact, evidence, rival, subject,
                                                     question)) or (
            slot.kind == "role" and on("choose.subject_roles") and
            said_of_subject(rival, evidence, subject)),
         "the words around it in its passage are about something else"),
        ("choose.place_for_place", lambda: place_for_place(slot, rival),
         "the slot names a place, and it names none"),
        ("choose.year_bound", lambda: not year_bound(slot, fact, evidence, rival),
         "the passage gives it as a bound, not as the event's year"),
        ("choose.same_unit", lambda: same_unit(slot, fact, evidence, rival),
         "it counts something else"),
        ("choose.counted_noun", lambda: counted_noun(slot, fact, evidence, rival),
         "one of the two numbers counts no noun to compare them by"),
        ("choose.same_range", lambda: same_range(slot, fact, evidence, rival),
         "it stands at the other end of a range than the slot's value"),
        ("choose.range_order", lambda: range_order(slot, sentence, rival),
         "swapped in, it would put the draft's range out of order"))
    return next(((rule, why) for rule, fits, why in guards if on(rule) and not fits()), None)
