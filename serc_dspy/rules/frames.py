"""A value's frame: the words around it in its sentence that say what it is a value of. A
name or role is offered as a rival only in its slot's frame ("born in ___" is offered "in
Warsaw", not "with Pierre Curie")."""

from __future__ import annotations

import re

from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.words import STOP

AFTER_WORDS = 2

register(
    Rule("choose.after_frame", "a name or role in the evidence is offered as a slot's rival "
         "also where the two words after it are the two after the slot in the draft, neither a "
         "function word (\"Jordan's 15th Secretary\" is offered \"Puerto Rico's 15th "
         "Secretary\"), not only where the word before it is the slot's", "the frame was the "
         "word before alone: \"He was Jordan's 15th Secretary of State\" had no rival, since "
         "\"Puerto Rico's 15th Secretary of State\" follows \"as\", not \"was\"",
         english_only=True, thresholds={"after_words": AFTER_WORDS},
         found_on="wikipedia_dev.json, Baltasar Corrada del Río, K = 2"),
)
_TOKEN = re.compile(r"['’]s\b|[^\W_]+")


def preceding_word(text: str, start: int) -> str:
    """The word before a span, lower-cased, articles and conjunctions passed over ("" at the
    start): a name's frame, "born in ___", "with ___", "Prize in ___", "of (the) ___" (an
    article alone let "at the Iba Cathedral" stand for "of the Philippines"; "and" alone let
    "golfer and LPGA Tour winner" stand for "Swedish and American")."""
    before = [w.lower() for w in re.findall(r"[^\W_]+", text[:start])]
    while before and before[-1] in ("the", "a", "an", "and", "or"):
        before.pop()
    return before[-1] if before else ""


def following_words(text: str, end: int) -> tuple[str, ...]:
    """The `AFTER_WORDS` words after a span, lower-cased, a possessive "'s" one of them (a
    name's frame after it: "___'s 15th"); () when fewer follow or one is a function word."""
    after = tuple(w.lower().replace("’", "'") for w in _TOKEN.findall(text[end:])[:AFTER_WORDS])
    return after if len(after) == AFTER_WORDS and not STOP & set(after) else ()
