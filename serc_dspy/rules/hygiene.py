"""Hygiene: which extracted "facts" become variable nodes.

A 1.5B extractor was seen adding facts from its own memory ("She was born in Warsaw" from a
sentence about polonium), which were then verified SUPPORTED and written into the answer. A
variable node must be a reading of its sentence, so every extracted item is checked before it
enters the graph, and each item dropped, split or merged is a ruling.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from serc_dspy.core.text import split_sentences
from serc_dspy.rules.base import Rule, RuleSet, register
from serc_dspy.rules.words import STOP, is_content, is_number, stem, words_of

MIN_FACT_WORDS = 3
MAX_UNGROUNDED_SHARE = 0.25
"""Share of a fact's content words that may be missing from its sentence (rewording slack)."""

register(
    Rule("hygiene.pasted", "an extracted item that pastes several sentences back becomes one "
         "fact per sentence", "a small extractor copies the sentence, or two, as one item"),
    Rule("hygiene.duplicate", "an item that repeats an earlier one of its sentence is dropped",
         "small models repeat list items; a repeated fact would cost a second check"),
    Rule("hygiene.placeholder", "an item that is a placeholder (\"fact 1\", \"none\", \"n/a\") "
         "is dropped", "a small model echoes the format instead of answering"),
    Rule("hygiene.fragment", f"an item of fewer than {MIN_FACT_WORDS} words is dropped",
         "a fragment states nothing a verifier can check",
         thresholds={"min_fact_words": MIN_FACT_WORDS}),
    Rule("hygiene.bare_name", "an item of capitalised words and numbers only is dropped",
         "a bare name states nothing"),
    Rule("hygiene.ungrounded", "an item whose numbers or names are not in its sentence, or "
         "more than a quarter of whose content words are not, is dropped",
         "a 1.5B extractor added facts from memory (\"born in Warsaw\" from a sentence about "
         "polonium) that were verified and written into the answer", english_only=True,
         thresholds={"max_ungrounded_share": MAX_UNGROUNDED_SHARE}),
    Rule("hygiene.sentence_fact", "a sentence of which no usable fact is left is checked as "
         "one fact, the sentence itself", "a sentence that was read is verified, never passed "
         "through silently"),
    Rule("hygiene.clause_split", "\"X did A, and she did B\" becomes two facts, the pronoun "
         "replaced by the subject's name, when the pronoun is the subject's own",
         "a correction of one clause took the other clause with it; \"..., and he proposed to "
         "her\" about Marie Curie is Pierre, and stays whole", english_only=True),
)

_SENTENCE_BREAK = re.compile(r"[.!?]\s+\S")
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\(?\d{1,2}[.)])\s+")
_PLACEHOLDER = re.compile(r"^(?:atomic\s+)?(?:fact|statement|claim)s?\s*\d*$|^n/?a$|^none$|"
                          r"^\.+$|^unknown$", re.IGNORECASE)


@dataclass(frozen=True)
class Dropped:
    """An extracted item that did not become a fact as it was: the rule that dropped or split
    it, and why."""

    text: str
    rule: str
    reason: str
    after: str | None = None
    """What the item became instead (the sentences of a pasted item), if anything."""


def split_fact(text: str, rules: RuleSet | None = None) -> list[str]:
    """Clean one extracted item: strip list marks and quotes; split pasted multi-sentence text
    (`hygiene.pasted`)."""
    text = _LIST_MARK.sub("", " ".join(str(text or "").split())).strip(" \"'`")
    if not text:
        return []
    if not _SENTENCE_BREAK.search(text) or (rules is not None and
                                            not rules.on("hygiene.pasted")):
        return [text]
    parts = split_sentences(text)
    return [p.strip() for p in parts if p.strip()] if len(parts) > 1 else [text]


def not_a_statement(fact: str, rules: RuleSet | None = None) -> tuple[str, str] | None:
    """(rule, why) when `fact` is not a statement (a placeholder, a fragment, a bare name)."""
    def on(rule: str) -> bool:
        return rules is None or rules.on(rule)

    if on("hygiene.placeholder") and _PLACEHOLDER.match(fact.strip(" .")):
        return "hygiene.placeholder", "a placeholder, not a fact"
    found = words_of(fact)
    if on("hygiene.fragment") and len(found) < MIN_FACT_WORDS:
        return "hygiene.fragment", f"a fragment of {len(found)} word(s), not a statement"
    if on("hygiene.bare_name") and found and all(w[0].isupper() or is_number(w)
                                                 for w in found):
        return "hygiene.bare_name", "a bare name, not a statement"
    return None


def ungrounded(fact: str, sentence: str, subject: str, *, words: bool = True) -> str | None:
    """Why `fact` says something its sentence (or the subject) does not, or None if grounded.

    `words=False` checks numbers and names only (a rewording may change the other words).
    """
    source = words_of(sentence) + words_of(subject)
    exact = {w.lower() for w in source}
    stems = {stem(w) for w in source if not is_number(w)}
    numbers = {w for w in source if is_number(w)}

    def known(word: str) -> bool:
        return word.lower() in exact or (len(word) >= 5 and stem(word) in stems)

    missing_numbers = [w for w in words_of(fact) if is_number(w) and w not in numbers]
    if missing_numbers:
        return f"number(s) {', '.join(missing_numbers)} not in the sentence"
    content = [w for w in words_of(fact) if not is_number(w) and w.lower() not in STOP
               and is_content(w)]
    names = [w for w in content if w[0].isupper() and not known(w)]
    if names:
        return f"name(s) {', '.join(names)} not in the sentence"
    missing = [w for w in content if not known(w)]
    if words and content and len(missing) > max(1, MAX_UNGROUNDED_SHARE * len(content)):
        return f"word(s) {', '.join(missing)} not in the sentence"
    return None


def clean_facts(facts, sentence: str, subject: str, rules: RuleSet | None = None
                ) -> tuple[list[str], list[Dropped]]:
    """The facts to keep (deduplicated, in order) and the dropped items with their rule."""
    kept: list[str] = []
    dropped: list[Dropped] = []
    seen: set[str] = set()

    def on(rule: str) -> bool:
        return rules is None or rules.on(rule)

    for item in facts or []:
        parts = split_fact(item, rules)
        if len(parts) > 1:
            dropped.append(Dropped(str(item), "hygiene.pasted", "several sentences in one item",
                                   after=" | ".join(parts)))
        for fact in parts:
            key = fact.lower().rstrip(".")
            if key in seen and on("hygiene.duplicate"):
                dropped.append(Dropped(fact, "hygiene.duplicate", "repeats an earlier fact"))
                continue
            seen.add(key)
            found = not_a_statement(fact, rules)
            if found is None and on("hygiene.ungrounded"):
                reason = ungrounded(fact, sentence, subject)
                found = ("hygiene.ungrounded", reason) if reason else None
            if found:
                dropped.append(Dropped(fact, *found))
            else:
                kept.append(fact)
    return kept, dropped


# -- clauses ------------------------------------------------------------------------------------
_CLAUSE = re.compile(r",\s+and\s+(she|he|they|it|her|his|their|its)\s+(?=\S+\s+\S+)",
                     re.IGNORECASE)
PRONOUN_CLASSES: dict[str, frozenset[str]] = {
    "she": frozenset({"she", "her", "hers", "herself"}),
    "he": frozenset({"he", "him", "his", "himself"}),
    "they": frozenset({"they", "them", "their", "theirs", "themselves"}),
    "it": frozenset({"it", "its", "itself"}),
}
_PRONOUN = re.compile(r"\b(" + "|".join(sorted({p for c in PRONOUN_CLASSES.values() for p in c},
                                               key=len, reverse=True)) + r")\b", re.IGNORECASE)


def subject_pronouns(text: str) -> frozenset[str]:
    """The pronouns an answer uses for its subject: the class (she / he / they / it) it uses
    most. Empty when no class leads (no pronouns, or a tie): then no pronoun is taken to be the
    subject."""
    counts = {name: 0 for name in PRONOUN_CLASSES}
    for match in _PRONOUN.findall(text or ""):
        for name, members in PRONOUN_CLASSES.items():
            if match.lower() in members:
                counts[name] += 1
    ranked = sorted(counts.items(), key=lambda item: -item[1])
    if ranked[0][1] == 0 or ranked[0][1] == ranked[1][1]:
        return frozenset()
    return PRONOUN_CLASSES[ranked[0][0]]


def split_clauses(fact: str, name: str, pronouns: frozenset[str] = frozenset()) -> list[str]:
    """`hygiene.clause_split`: "X did A, and her B was C" as two facts, the pronoun replaced by
    the name, so a correction of one clause cannot take the other clause with it.

    Only a pronoun of the subject's own class (`subject_pronouns` of the answer) is replaced:
    in "Marie Curie met Pierre, and he proposed to her" the "he" is Pierre, and in "..., and it
    became a leading laboratory" the "it" is the laboratory; such a clause stays whole."""
    match = _CLAUSE.search(fact)
    if not name or match is None or match.group(1).lower() not in pronouns:
        return [fact]
    pronoun = match.group(1).lower()
    lead = fact[:match.start()].rstrip(" ,") + "."
    who = name if pronoun in ("she", "he", "they", "it") else f"{name}'s"
    rest = fact[match.end():].strip()
    return [lead, f"{who} {rest}"]
