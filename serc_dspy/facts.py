"""Deterministic hygiene for extracted facts: statements only, and only what the sentence said.

A 1.5B fact extractor was seen adding facts from its own memory ("She was born in Warsaw" from
a sentence about polonium), which were then verified SUPPORTED and written into the answer.
A variable node must be a reading of its sentence, so every fact is checked here before it
enters the graph:

- placeholders, bare names and fragments (fewer than three words) are dropped;
- a fact that pastes several sentences back is split into them;
- a fact is *grounded* only if each of its numbers and capitalised names, and most of its
  content words, occur in the sentence or the subject (a word counts when it shares its first
  five letters with one there, so "married" matches "marry" and "discovered" "discovery").

Dropped facts are returned with a reason so the caller can log them; nothing is dropped
silently.
"""

from __future__ import annotations

import re

from serc_dspy.text import split_sentences

MIN_FACT_WORDS = 3
# Share of a fact's content words that may be missing from its sentence (rewording slack).
MAX_UNGROUNDED_SHARE = 0.25

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|\d+(?:[.,]\d+)*", re.UNICODE)
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\(?\d{1,2}[.)])\s+")
_PLACEHOLDER = re.compile(r"^(?:atomic\s+)?(?:fact|statement|claim)s?\s*\d*$|^n/?a$|^none$|"
                          r"^\.+$|^unknown$", re.IGNORECASE)
# Function words and the verbs a paraphrase adds; they carry no claim of their own.
_STOP = set("""
a an the and or but nor of in on at to for from by with without as into onto over under about
after before during since until between among through per via than then also too very so such
is are was were be been being am has have had having do does did done will would shall should
can could may might must not no yes it its it's this that these those there here their them
they he him his she her hers we us our you your i me my mine who whom whose which what when
where why how all any both each few more most other some own same only just one ones
later earlier first became become becomes becoming known named called made make makes
""".split())


def _words(text: str) -> list[str]:
    return _WORD.findall(text or "")


def _stem(word: str) -> str:
    return word.lower()[:5]


def _is_number(word: str) -> bool:
    return word[0].isdigit()


def split_fact(text: str) -> list[str]:
    """Clean one extracted item: strip list marks and quotes; split pasted multi-sentence text."""
    text = _LIST_MARK.sub("", " ".join(str(text or "").split())).strip(" \"'`")
    if not text:
        return []
    parts = split_sentences(text)
    return [p.strip() for p in parts if p.strip()] if len(parts) > 1 else [text]


def not_a_statement(fact: str) -> str | None:
    """Why `fact` is not a statement (a placeholder, a bare name, a fragment), or None."""
    if _PLACEHOLDER.match(fact.strip(" .")):
        return "a placeholder, not a fact"
    words = _words(fact)
    if len(words) < MIN_FACT_WORDS:
        return f"a fragment of {len(words)} word(s), not a statement"
    if all(w[0].isupper() or _is_number(w) for w in words):
        return "a bare name, not a statement"
    return None


def ungrounded(fact: str, sentence: str, subject: str) -> str | None:
    """Why `fact` says something its sentence (or the subject) does not, or None if grounded."""
    source = _words(sentence) + _words(subject)
    exact = {w.lower() for w in source}
    stems = {_stem(w) for w in source if not _is_number(w)}
    numbers = {w for w in source if _is_number(w)}

    def known(word: str) -> bool:
        return word.lower() in exact or (len(word) >= 5 and _stem(word) in stems)

    missing_numbers = [w for w in _words(fact) if _is_number(w) and w not in numbers]
    if missing_numbers:
        return f"number(s) {', '.join(missing_numbers)} not in the sentence"
    content = [w for w in _words(fact) if not _is_number(w) and w.lower() not in _STOP
               and len(w) > 2]
    names = [w for w in content if w[0].isupper() and not known(w)]
    if names:
        return f"name(s) {', '.join(names)} not in the sentence"
    missing = [w for w in content if not known(w)]
    if content and len(missing) > max(1, MAX_UNGROUNDED_SHARE * len(content)):
        return f"word(s) {', '.join(missing)} not in the sentence"
    return None


def clean_facts(facts, sentence: str, subject: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The facts to keep (deduplicated, in order) and the dropped ones with their reasons."""
    kept: list[str] = []
    dropped: list[tuple[str, str]] = []
    seen: set[str] = set()
    for item in facts or []:
        for fact in split_fact(item):
            key = fact.lower().rstrip(".")
            if key in seen:
                continue
            seen.add(key)
            reason = not_a_statement(fact) or ungrounded(fact, sentence, subject)
            if reason:
                dropped.append((fact, reason))
            else:
                kept.append(fact)
    return kept, dropped
