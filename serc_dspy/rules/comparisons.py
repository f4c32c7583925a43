"""Comparison questions ("Which magazine was started first, A or B?", "Which genus has more
species, A or B?"): their two options, and the decision the evidence's own dates and amounts
make between them, with no choice call (`choose.compare`, `choose.compare_amounts`).

A 1.5B chooser asked to compare two values swapped 3 of 4 right comparison answers of the
tuning split; reading a year or an amount beside each option's name and comparing them is
arithmetic, which rules do and small models do not."""

from __future__ import annotations

import re

from serc_dspy.core.trace import Slot
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.claims import CLAIM_SENTENCES, claim_with
from serc_dspy.rules.slots import _NUMBER, _NUMBER_WORDS, _YEAR, EvidenceSentence
from serc_dspy.rules.two_options import (
    COMPARISON,
    EARLIER,
    FEWER,
    LATER,
    MORE,
    RELATIVE,
    comparison_options,
    evidence_form,
    exchanged,
    mentions,
    names_option,
    option_ends,
    without_options,
)
from serc_dspy.rules.units import in_metres
from serc_dspy.rules.words import MONTHS, STOP, content_stems, negations, stem, words_of

_COUNTED = re.compile(r"\b(more|fewer|less)\s+([^\W\d_]+)", re.IGNORECASE)
"""A count compared ("has more species", "fewer members"): the noun after the word is what
both options' numbers must count."""
_MEASURED = {"taller": max, "higher": max, "longer": max, "shorter": min}
"""Comparisons of a length: the options' numbers must be lengths (pint's registry tells a
length unit), compared in metres."""
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9}
_MONTH_NAMES = "|".join(sorted((m.capitalize() for m in MONTHS), key=len, reverse=True))
_GLUED_YEAR = re.compile(rf"(?<!\d)(1\d{{3}}|20\d{{2}})(?=[0-3]?\d\s+(?:{_MONTH_NAMES})\b)")
"""A year glued to the day that follows it, a life span's dash lost ("188926 May 1976")."""
COMPARING = ("choose.compare", "choose.compare_amounts", "choose.stated_option")
"""The rules that decide a comparison from the evidence, with no choice call."""
STATED_MARGIN = 1
"""Question words more that one option's own evidence must state than the other's
(`choose.stated_option`)."""
register(
    Rule("choose.compare", "a short answer to a date comparison (\"which was started first, "
         "A or B?\") is decided by the first year the evidence gives each option (in the "
         "first sentence that names it, each of its words if not in a row, a given name "
         "in full or by its nickname, a word both options share left out, and not the "
         "other), with no choice call; with no year for each, it stays unverified, a negated "
         "answer is kept, unverified (a swap would keep its \"not\"), an answer worded "
         "the other way round (\"A is younger\" for \"who is older?\") names the other "
         "option, and one that ranks both options (\"A is older than B\") has the two "
         "swapped", "the "
         "1.5B chooser swapped 3 of 4 right comparison answers of HaluEval's tuning split for "
         "the wrong option", found_on="HaluEval tuning items 1, 6, 9"),
    Rule("choose.compare_amounts", "a short answer to a comparison of counts (\"which has more "
         "species, A or B?\") or of lengths (\"which is taller ...?\") is decided by the "
         "amount the evidence gives each option: a number followed by the counted noun, or by "
         "a length unit (compared in metres); with no such amount for each, it stays "
         "unverified", "`choose.compare` read years only, and comparisons of counts and sizes "
         "were left unverified (3 of the 6 comparisons of HaluEval's report items 31-90 ask "
         "\"more\" of something; counted, not read)",
         english_only=True, found_on="first on no tuning item (none of the 4 tuning "
         "comparisons then compared amounts); members counted from a band's list: extra "
         "tuning item 195"),
    Rule("choose.no_option", "a short answer to a comparison that names neither option (\"It "
         "is unclear which was released second.\") or both without ranking them (\"A and B "
         "are the same age.\") is one slot, the whole answer, which the option the evidence's "
         "dates or amounts decide replaces (`choose.compare`, `choose.compare_amounts`); "
         "undecided, it stays unverified; a part of a longer answer is none of its own ("
         "\"Planes. It came out in 2013.\": unverified)", "such an answer had no option to "
         "swap: it stayed unverified whatever the evidence's dates said", english_only=True,
         found_on="HaluEval extra and multi-turn tuning drafts of comparison questions "
         "(\"It is unclear which was released second.\", \"Vincent Walker and David Usher "
         "are the same age.\")"),
    Rule("choose.stated_option", "a short answer to a question of which of two named options "
         "a statement holds for (\"Which documentary is about Finnish rock groups, A or B?\", "
         "\"Is A or B the largest private hospital in Washington?\"), where no date or amount "
         "decides it and no word compares the two (\"closer\", \"further west\"), is decided "
         "by the option whose own evidence (each sentence naming it and not the other, and "
         "the sentences after it that open on a function word, \"It is ...\") states more "
         "of the question's words, by at least `stated_margin`; with no such lead it stays "
         "unverified. A negated answer (\"A is not about rock groups\") is never swapped",
         "such questions were left unverified (`choose.either`, the chooser between the two "
         "options, fixed none and broke a right answer); HaluEval builds them from the two "
         "options' own Wikipedia openings, which state the question's words of the right one",
         english_only=True, thresholds={"stated_margin": STATED_MARGIN}, default=False,
         found_on="HaluEval extra tuning items 27, 45, 150, 193, 197, 260, 390 "
         "(off by default: on HaluEval's report items 31-90 it decided one question, wrongly, "
         "and broke that right answer)"),
    Rule("choose.either", "a which/who/what question that ends on two named options and "
         "compares nothing (\"Which director is American, A or B?\") is a comparison whose "
         "options are the two names; no date or amount decides it, so the chooser picks one "
         "of the two in both orders, and the other option chosen in both replaces the "
         "answer (`choose.own_stated` does not hold it: the evidence states both names)",
         "such questions were typed by their head word, and their options were the "
         "evidence's other names: the right option was often no option at all "
         "(off by default: on the first 60 extra tuning items it fired on 2 wrong answers "
         "and fixed neither, and on 3 right ones and broke one)",
         english_only=True, default=False, found_on="HaluEval extra tuning items 27, 28"),
    Rule("choose.option_claims", "a short answer to a question of which of two named options "
         "a statement holds for, where no date or amount decides it and no word compares the "
         "two, that names one option and does not negate it, is read against each option's "
         "own sentences (`choose.stated_option`'s reading), one sentence choice each: the "
         "answer's own sentence, and the same sentence with the other option in its slot, "
         "are the claims (a bare name's are the question answered by each option), and the "
         "model says whether one of that option's sentences states it, states the opposite, "
         "or does not settle it. The other option replaces the answer only where its claim "
         "is stated and the answer's own is not; the answer's claim stated and the other's "
         "not supports it; anything else leaves it unverified", "such questions were left "
         "unverified with no call: the "
         "chooser between the two names (`choose.either`) fixed none and broke a right "
         "answer, and the question's words counted (`choose.stated_option`) broke a report "
         "answer; a claim read against one option's own sentences is the sentence choice "
         "the check nodes already make", english_only=True,
         found_on="HaluEval comparison tuning drafts (`cmp51`: \"Which director is "
         "American, A or B?\", \"What film director is from Great Britain, A or B?\")"),
)


def _own_sentences(option: str, rival: str, evidence: list[EvidenceSentence]):
    """The evidence sentences that name the option and not the other, in order."""
    return (s for s in evidence if mentions(s.text, option, rival) and
            not mentions(s.text, rival, option))


def compare_by_dates(question: str, options: list[str],
                     evidence: list[EvidenceSentence]) -> str | None:
    """The option a date comparison ("started first", "born first", "younger") picks by the
    evidence's dates: each option's date is the first year of the first evidence sentence that
    names it and not the other option; None when the question compares no dates, an option has
    no year, or the years are equal."""
    asked = without_options(question, options)
    earlier, later = bool(EARLIER.search(asked)), bool(LATER.search(asked))
    if len(options) != 2 or earlier == later:
        return None
    years = []
    for option, rival in (options, options[::-1]):
        found = next((year for s in _own_sentences(option, rival, evidence)
                      if (year := _first_year(s.text)) is not None), None)
        if found is None:
            return None
        years.append(found)
    if years[0] == years[1]:
        return None
    pick = min if earlier else max
    return options[years.index(pick(years))]


def _first_year(text: str) -> int | None:
    """The first year of a sentence, also where a life span lost its dash ("(26 September
    188926 May 1976)": 1889, as six of HaluEval's 500 tuning items print one)."""
    found = [m for m in (_YEAR.search(text), _GLUED_YEAR.search(text)) if m]
    return int(min(found, key=lambda m: m.start()).group(1)) if found else None


def _amount(number: re.Match[str]) -> float:
    """The value of a `_NUMBER` match: "1,200" 1200.0, "3.5 million" 3500000.0, "twelve" 12."""
    if number.group(3):
        return float(_NUMBER_WORDS[number.group(3).lower()])
    scale = _SCALES.get((number.group(2) or "").lower(), 1.0)
    return float(number.group(1).replace(",", "")) * scale


def _after(text: str, number: re.Match[str]) -> str:
    """The word right after a number (its scale word aside): the noun or unit it counts."""
    found = re.match(r"[\s-]*([^\W\d_][\w.]*)", text[number.end():])
    return found.group(1).rstrip(".") if found else ""


def _amount_of(sentences, noun: str) -> float | None:
    """The first amount in the sentences that counts `noun` (its stem) or, for "" , that is a
    length (in metres); years are never amounts."""
    counted = stem(noun.lower().rstrip("s"))
    for sentence in sentences:
        for number in _NUMBER.finditer(sentence.text):
            if _YEAR.fullmatch(number.group(0)):
                continue
            word = _after(sentence.text, number)
            if word.lower() in STOP:  # "ranked 5 in the world" counts no inches
                continue
            if noun and stem(word.lower().rstrip("s")) == counted:
                return _amount(number)
            if not noun and (metres := in_metres(_amount(number), word)) is not None:
                return metres
    return None


_LINEUP = re.compile(r"\b(?:(?:consists?|consisted|composed|made\s+up|comprised)\s+of|"
                     r"comprises|comprising|featuring|line-?up\s+(?:of|is|was))\s+",
                     re.IGNORECASE)
"""The words before a band's members ("The band consists of ...", "featuring ...")."""


def _lineup(sentences: list[str]) -> float | None:
    """The members a sentence lists after `_LINEUP`: the number that opens the list ("featuring
    four musicians"), else its names counted, their roles in brackets aside ("consists of Matt
    Bellamy (vocals), Chris Wolstenholme (bass) and Dominic Howard (drums)": 3); None where
    no sentence lists members, or an item of the list is no name."""
    for sentence in sentences:
        opening = _LINEUP.search(sentence)
        if not opening:
            continue
        listed = sentence[opening.end():]
        number = _NUMBER.match(listed)
        if number and not _YEAR.fullmatch(number.group(0)):
            return _amount(number)
        listed = re.sub(r"\([^)]*\)", " ", listed).split(":")[-1].strip(" .")
        items = [i.strip() for i in re.split(r",\s*(?:and\s+)?|\s+and\s+", listed) if i.strip()]
        if len(items) > 1 and all(i[:1].isupper() for i in items):
            return float(len(items))
        return None
    return None


def compare_by_amounts(question: str, options: list[str],
                       evidence: list[EvidenceSentence]) -> str | None:
    """The option a comparison of counts or lengths picks by the evidence's amounts (the first
    of each option's own sentences); None when the question compares neither, an option has
    no amount, or the amounts are equal."""
    asked = without_options(question, options)
    counted = _COUNTED.search(asked)
    measured = next((pick for word, pick in _MEASURED.items()
                     if word in {w.lower() for w in words_of(asked)}), None)
    if len(options) != 2 or not (counted or measured):
        return None
    noun = counted.group(2) if counted else ""
    if noun.lower() in STOP:
        return None
    pick = (min if counted.group(1).lower() in ("fewer", "less") else max) if counted \
        else measured
    amounts = [_amount_of(_own_sentences(option, rival, evidence), noun)
               for option, rival in (options, options[::-1])]
    if stem(noun.lower().rstrip("s")) == stem("member"):  # "The band consists of A, B and C.": 3
        amounts = [amount if amount is not None else _lineup(_own_paragraph(
            option, rival, evidence)) for amount, (option, rival) in
            zip(amounts, (options, options[::-1]), strict=True)]
    if None in amounts or amounts[0] == amounts[1]:
        return None
    return options[amounts.index(pick(amounts))]


def _own_paragraph(option: str, rival: str, evidence: list[EvidenceSentence]) -> list[str]:
    """What the evidence says of an option: each sentence that names it and not the rival,
    and the sentences after it in its passage that open on a function word ("It is a
    documentary of three Finnish rock groups ...", "The band consists of ..."), up to one that
    names something else or the rival. Knowledge sources pack several paragraphs into one
    passage, so a passage is no option's own."""
    said: list[str] = []
    following = False
    for k, s in enumerate(evidence):
        following = following and s.passage == evidence[k - 1].passage and \
            (words_of(s.text)[:1] or [""])[0].lower() in STOP
        if mentions(s.text, rival, option):
            following = False
        elif mentions(s.text, option, rival):
            following = True
        if following:
            said.append(s.text)
    return said


def _said_of(option: str, rival: str, evidence: list[EvidenceSentence]) -> set[str]:
    """The content stems of what the evidence says of an option (`_own_paragraph`)."""
    return set().union(*(content_stems(text) for text in _own_paragraph(option, rival,
                                                                        evidence)))


def stated_option(question: str, options: list[str],
                  evidence: list[EvidenceSentence], margin: int = STATED_MARGIN) -> str | None:
    """`choose.stated_option`: of a question's two options, the one whose own evidence states
    `margin` or more of the question's words (the options' own words aside) than the
    other's; None when the question compares them by a date, an amount or a relation
    ("closer"), or neither leads."""
    asked = without_options(question, options)
    if len(options) != 2 or COMPARISON.search(asked) or RELATIVE.search(asked):
        return None
    words = content_stems(asked) - content_stems(" ".join(options))
    stated = [len(words & _said_of(option, rival, evidence))
              for option, rival in (options, options[::-1])]
    if abs(stated[0] - stated[1]) < max(margin, 1):
        return None
    return options[stated.index(max(stated))]


def compare_slot(question: str, slot: Slot, evidence: list[EvidenceSentence],
                 on=lambda rule: True, sentence: str = "") -> tuple[str, str] | None:
    """`choose.compare`: "which was started first, A or B?" is decided by the dates the
    evidence gives each option, (`choose.compare_amounts`) "which has more species?" by the
    counts it gives them, and (`choose.stated_option`) "which documentary is about Finnish
    rock groups?" by the question's words each option's evidence states, not by the model;
    the slot's ruling and note are set, and (the deciding rule, the option) returned (None:
    nothing decided, and the answer stays unverified). An answer `sentence` that negates its
    option ("A is not about rock groups") is kept: a swap would keep its "not"."""
    options = comparison_options(question)
    rule, decided = "choose.compare", None
    if on("choose.compare"):
        decided = compare_by_dates(question, options, evidence)
    if decided is None and on("choose.compare_amounts"):
        rule, decided = "choose.compare_amounts", compare_by_amounts(question, options, evidence)
    if decided is None and on("choose.stated_option"):
        rule, decided = "choose.stated_option", stated_option(question, options, evidence)
    named = [o for o in options if sentence and names_option(sentence, o)]
    # a slot that is no option ("Lucky" in 'H. Bruce "Lucky" Humberstone') stands for the one
    # option the answer names: never swapped for that option's own name
    own = next((o for o in options if slot.text in option_ends(o)),
               named[0] if len(named) == 1 else slot.text)
    if decided is None:
        slot.ruling = "unverified"
        slot.note = "the evidence decides between the options neither by a date or amount " \
                    "for each nor by stating more of the question's words of one"
        return None
    what = {"choose.compare": "dates", "choose.compare_amounts": "amounts"}.get(
        rule, "statements of the question's words")
    slot.note = f"by the evidence's {what}, {decided!r} is the answer"
    if negations(without_options(sentence, options)):  # "A is not about rock groups"
        slot.ruling = "unverified"
        slot.note += f"; the answer negates {slot.text!r}: kept as it is"
        return rule, decided
    other = next((o for o in options if o != own), None)
    turned = bool(own in options and other and _reversed(
        rule, without_options(question, options), without_options(sentence, options)))
    answer = other if turned else own  # "A is two years younger" for "who is older?": B
    if own in options and other and sentence and names_option(sentence, other):
        return _both_named(rule, decided, slot, sentence.strip(), own, other, answer)
    if turned:
        slot.note += f"; the answer words it the other way round: it names {other!r}"
    slot.ruling = "supported" if decided == answer else "contradicted"
    slot.chosen = None if decided == answer else evidence_form(
        other if turned else decided, evidence)
    return rule, decided


def _both_named(rule: str, decided: str, slot: Slot, sentence: str, own: str, other: str,
                answer: str) -> tuple[str, str]:
    """A comparison answer that names both options ("Lee Ranaldo is younger than Mary
    Ramsey."): supported where the option it puts first (or, worded the other way round,
    second) is the one decided; otherwise the whole sentence is the slot, and its correction
    swaps the two names. No statement of the question's words ranks two options named
    together: `choose.stated_option` leaves it unverified."""
    if rule == "choose.stated_option":
        slot.ruling = "unverified"
        slot.note += "; the answer names both options"
    elif decided == answer:
        slot.ruling = "supported"
    else:
        slot.kind, slot.text, slot.start = "sentence", sentence, 0
        slot.ruling, slot.chosen = "contradicted", exchanged(sentence, own, other)
        slot.note += "; the answer names both options: they are swapped"
    return rule, decided


def _reversed(rule: str, question: str, sentence: str) -> bool:
    """Whether the answer compares the other way round from the question ("younger" for
    "older", "fewer" for "more"), by the words of the rule's scale."""
    scale = {"choose.compare": (EARLIER, LATER),
             "choose.compare_amounts": (MORE, FEWER)}.get(rule)
    if scale is None:
        return False
    asked, said = ([bool(p.search(text)) for p in scale] for text in (question, sentence))
    return sum(asked) == 1 and sum(said) == 1 and asked != said


def option_claims(question: str, slot: Slot, sentence: str, evidence: list[EvidenceSentence]
                  ) -> list[tuple[str, str, list[str]]] | None:
    """`choose.option_claims`: for a question of which of two options a statement holds for,
    answered by `sentence` naming one of them (`slot`) without negating it, each option (the
    answer's first) with its claim and the option's own sentences (`_own_paragraph`) to read
    it against. The claims are the answer's sentence and the same sentence with the other
    option in the slot ("Boston College is located in Chestnut Hill."): a question answered
    by a name ("...? Answer: Boston College.") was read as stated of either option by its
    opening sentence alone. A bare name has no sentence: its claims are the question
    answered by each option. None where the reading does not apply: a date, an amount or a
    relation compares the options (`compare_by_dates` and the like decide those), the answer
    names both or neither, negates its option, or an option has no sentence of its own."""
    options = comparison_options(question)
    asked = without_options(question, options)
    if len(options) != 2 or slot.kind == "sentence" or COMPARISON.search(asked) or \
            RELATIVE.search(asked) or negations(without_options(sentence, options)):
        return None
    named = [o for o in options if names_option(sentence, o)]
    own = next((o for o in options if slot.text in option_ends(o)),
               named[0] if len(named) == 1 else None)
    if own is None or len(named) > 1:
        return None
    other = options[1 - options.index(own)]
    claims = []
    for option, rival in ((own, other), (other, own)):
        said = _own_paragraph(option, rival, evidence)[:CLAIM_SENTENCES]
        if not said:
            return None
        form = slot.text if option == own else evidence_form(option, evidence)
        claims.append((option, claim_with(question, sentence, slot, form), said))
    return claims
