"""Names: when two entity descriptors name the same entity without asking the judge.

The firewall's LM judge decides between two usable descriptors whose names differ. A 1.5B
judge threw true drafts away ("Kim Burrell" and "Kimberly Jean Burrell" as two people; a bio
of the singer Wendy that opens with her birth name), so names are compared as text first.

`firewall.known_as` was found on one tuning-split bio and decided nothing on the 54
report-split answers it was first recorded on (Factcheck-Bench items 26-50 and the noise
benchmark's report bios); the rulebook's rule is that such a rule shows its worth on data it
was not found on, or goes. It is off by default and stays in the rulebook for a user who meets
such names (`--rule=+firewall.known_as`). `firewall.short_given_name`, off at first for the same
reason, reads the `nicknames` table since a second tuning bio ("Mike" / "Michael
Trivisonno") was reset, and is on.
"""

from __future__ import annotations

import re
from functools import cache

from nicknames import NickNamer

from serc_dspy.core.text import normalise_name
from serc_dspy.rules.base import Rule, RuleSet, register

ASKED_ANSWER_MIN_SENTENCES = 3
"""Sentences an answer must have for `firewall.asked_answer` and `firewall.asked_subject`: a
reset throws all of them away, while a one-sentence answer's reset replaces one claim (and
fixed most of HaluEval's tuning answers it fired on)."""

register(
    Rule("firewall.placeholder", "an empty or placeholder descriptor (\"Name\", "
         "\"unknown\") passes the firewall: it never triggers a reset",
         "a small model echoes the requested format"),
    Rule("firewall.same_name", "two descriptors with the same normalised name (case, accents, "
         "titles aside, or one full name contained in the other) are the same entity, with no "
         "judge call", "one name spelled two ways is one person"),
    Rule("firewall.short_given_name", "a given name that begins the other's (\"Kim\" / "
         "\"Kimberly\") or is its nickname in the `nicknames` table (\"Mike\" / "
         "\"Michael\"), with the same surname, is the same name",
         "a 1.5B judge called Kim Burrell and Kimberly Jean Burrell two people, and Mike "
         "Trivisonno and Michael Joseph Trivisonno, and threw each true draft away",
         thresholds={"min_letters": 3},
         found_on="Kim Burrell, Mike Trivisonno (tuning split)"),
    Rule("firewall.asked_entity", "an answer that names the asked entity, which the evidence "
         "is about, passes with no judge call", "drafts that open with the subject's birth "
         "name (Beenie Man, Botak Chin) were reset", found_on="noise bios 1-8 (tuning split)"),
    Rule("firewall.query_on_demand", "the question's descriptor is read only where the "
         "answer's and the evidence's do not name one entity (`firewall.same_name`): no rule "
         "that passes them uses it, and the subject then is theirs", "every firewall read "
         "three descriptors; on 240 HaluEval extra tuning items, 18 of the 59 drafts it read "
         "passed on the other two alone, a call each that decided nothing",
         found_on="HaluEval extra tuning items 101-340 (counted per firewall branch)"),
    Rule("firewall.named_subject", "the firewall runs only for a question that names its "
         "subject (a capitalised word after the first): a question about a concept (\"Why do "
         "the giant planets rotate faster?\") has no entity to confuse", "on Factcheck-Bench "
         "the firewall took \"giant planets\" and the passages' \"Uranus\" for two entities "
         "and threw a true answer away", english_only=True,
         found_on="Factcheck-Bench item 3 (tuning split)"),
    Rule("firewall.evidence_in_answer", "an answer that itself names the evidence's entity "
         "passes: the passages are about something the answer talks about",
         "the firewall reset an answer about Mondeca's tools because the passages were about "
         "one of them, Intellilink, which the answer named",
         found_on="Factcheck-Bench item 6 (tuning split)"),
    Rule("firewall.refused_reset", "a reset whose grounded answer refuses (\"No verified "
         "information was found\") keeps the answer it would have replaced: the judge found "
         "another entity, but the evidence grounded nothing to put in its place",
         "a caller's short answer was replaced by a refusal after the judge took the "
         "passages' entity for another", english_only=True,
         found_on="HaluEval tuning item 14"),
    Rule("firewall.asked_answer", "a long answer (at least `min_sentences` sentences) to a "
         "question that asks for an entity it does not name (\"Who was the general chair of "
         "...?\", \"What is the most expensive restaurant in ...?\") passes: its entity is "
         "the value asked for, and evidence about another candidate is a contradiction for the "
         "check nodes, not a different subject", "on Factcheck-Bench the firewall reset three "
         "tuning answers whose evidence was about a rival candidate (Geranium and Noma), "
         "throwing every claim of each away (on the report split it fired on none: its 4 "
         "resets answer questions that name the answer's entity)", english_only=True,
         thresholds={"min_sentences": ASKED_ANSWER_MIN_SENTENCES},
         found_on="Factcheck-Bench items 10, 11, 14 (tuning split)"),
    Rule("firewall.asked_subject", "a long answer (at least `min_sentences` sentences, as "
         "`firewall.asked_answer`) about the entity the question names (its text names it, "
         "and the question's and the answer's descriptors name one entity) passes whatever "
         "entity the evidence is about: the answer is about what was asked, and a search that "
         "found another entity is no reason to throw the answer away; the check nodes weigh "
         "that evidence, and what it does not support stays unverified", "the reset replaced "
         "such an answer by one grounded in the other entity's passages: every claim of the "
         "answer lost to the search's confusion, and an answer about an entity the question "
         "did not ask about put in its place (the paper's reset is for an answer about the "
         "wrong entity, not for evidence about one)", english_only=True,
         thresholds={"min_sentences": ASKED_ANSWER_MIN_SENTENCES},
         found_on="Factcheck-Bench tuning item 19 (evidence about Gregorio for a question "
         "about Manuel, answered about Manuel in 3 sentences; passed there by "
         "`firewall.evidence_in_answer`, since the answer also names Gregorio; item 6, "
         "Mondeca and Intellilink, is the same case in 2 sentences)"),
    Rule("firewall.known_as", "a one-word name counts as named by a text only where the text "
         "gives it as its subject's name (\"known professionally as Wendy\")",
         "the firewall reset a true bio of the singer Wendy, which opens with her birth name",
         english_only=True, found_on="Wendy (singer), noise split 4 (tuning split)",
         default=False),
)

SHORT_FORM_MIN = 3
"""Letters a short given name must have to stand for a longer one ("Kim" for "Kimberly")."""


def same_name(first: str, second: str, rules: RuleSet | None = None,
              decided_by: list[str] | None = None) -> bool:
    """True when two names are the same after normalisation, or one full name (two words or
    more) is contained, in order, in the other ('Marie Curie' in 'Marie Skłodowska Curie').
    A given name may be the short form that begins the other's ('Kim Burrell' and 'Kimberly
    Jean Burrell') or its nickname ('Mike' for 'Michael'): a 1.5B judge called those two
    different people and threw true drafts away, while such a given name with the same surname
    is the same person.

    `decided_by`, when given, receives `firewall.short_given_name` when that rule made the
    match, so the caller records its ruling (a rule inside a rule still leaves its own)."""
    a, b = normalise_name(first).split(), normalise_name(second).split()
    if not a or not b:
        return False
    if a == b:
        return True
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    if len(short) < 2:
        return False
    if _contained(short, long_):
        return True
    if short_given(short[0], long_[0]) and \
            (rules or RuleSet()).on("firewall.short_given_name") and \
            _contained(short, [short[0], *long_[1:]]):
        if decided_by is not None:
            decided_by.append("firewall.short_given_name")
        return True
    return False


@cache
def short_given(short: str, given: str) -> bool:
    """Whether one given name (normalised) of `SHORT_FORM_MIN` letters at least stands for
    another: the short form that begins it ("kim" for "kimberly") or its nickname ("mike" for
    "michael"); "al" opens too many names to stand for one."""
    return short != given and len(short) >= SHORT_FORM_MIN and (
        given.startswith(short) or _nickname(short, given))


@cache
def _nicknames() -> NickNamer:
    return NickNamer()


def _nickname(short: str, given: str) -> bool:
    """Whether one given name is the other's nickname ("mike" / "michael"), either way."""
    return given in _nicknames().canonicals_of(short) or \
        short in _nicknames().canonicals_of(given)


def _contained(short: list[str], long_: list[str]) -> bool:
    """Every word of `short` occurs in `long_`, in order."""
    position = 0
    for word in long_:
        if position < len(short) and word == short[position]:
            position += 1
    return position == len(short)


def mentions(text: str, name: str, rules: RuleSet | None = None,
             decided_by: list[str] | None = None) -> bool:
    """True when `text` names `name` (normalised, as a contiguous run): a draft that says
    "known professionally as Beenie Man" is about Beenie Man.

    A one-word name ("Wendy", "Ronaldo") is too common to count anywhere in the text; it
    counts only where the text gives it as its subject's name ("known professionally as
    Wendy"). The firewall had reset a true bio of the singer Wendy, which opens with her birth
    name, Shon Seung-wan. `decided_by`, when given, receives `firewall.known_as` when that
    rule made the match."""
    words = normalise_name(name).split()
    if not words:
        return False
    folded = f" {normalise_name(text)} "
    if len(words) == 1:
        if not (rules or RuleSet()).on("firewall.known_as"):
            return False
        known = re.search(rf" known(?: \w+){{0,2}} as {re.escape(words[0])} ", folded)
        if known and decided_by is not None:
            decided_by.append("firewall.known_as")
        return known is not None
    return f" {' '.join(words)} " in folded




_CAPITALISED = re.compile(r"\b[A-Z][\w'’-]+")


_ASKS_FOR_ENTITY = re.compile(r"^\s*(?:who|whom|which|what)\b", re.IGNORECASE)


def asks_for_answer_entity(question: str, answer_name: str) -> bool:
    """Whether a question asks for the entity an answer names ("Who was the general chair of
    COLING 2020?" answered "Dan Jurafsky"): a wh-question that does not itself name it."""
    return bool(_ASKS_FOR_ENTITY.match(question or "")) and \
        not names_in(question, answer_name)


def names_a_subject(question: str) -> bool:
    """Whether a question names its subject: a capitalised word other than its first."""
    words = (question or "").split()
    return any(_CAPITALISED.match(w) for w in words[1:])


def names_in(text: str, name: str) -> bool:
    """Every word of `name` (normalised) occurs in `text`: the text talks about it."""
    words = normalise_name(name).split()
    have = set(normalise_name(text).split())
    return bool(words) and all(w in have for w in words)
