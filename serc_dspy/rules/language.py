"""Which language a draft is written in, so English-only rules stay off for other languages.

Read by a maintained classifier (py3langid, a naive-Bayes byte n-gram model in a 4.6 MB wheel,
about 0.1 ms a sentence) on the draft's prose: quoted titles and runs of capitalised words are
taken out first, because an English answer that names "Der Ring des Nibelungen und Die Walküre"
is still English, and the guards that read English words must stay on for it. The measured
reason for this design is in docs/architecture.md.
"""

from __future__ import annotations

import functools
import re

from py3langid.langid import MODEL_FILE, LanguageIdentifier

LANGUAGES = ("en de fr es it nl pt pl sv da no fi cs sk ro hu tr ru uk el bg zh ja ko ar he "
             "hi id vi").split()
"""The languages the classifier chooses among: a closed set keeps a few words of English from
reading as a minor language."""
MIN_OTHER_PROBABILITY = 0.5
"""A draft is `other` only when the classifier gives another language at least this
probability: on too little prose it is English, so the guards stay on (the safe side)."""

_QUOTED = re.compile(r"[\"“„«»‘][^\"“”„«»’]{0,200}[\"”»«’]")
_WORD = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
_CONNECTORS = frozenset("des der die das und von van da de del della di du la le of the and"
                        .split())
"""Short words that titles and names carry between capitals ("Der Ring des Nibelungen und Die
Walküre", "Leonardo da Vinci")."""


def prose_of(text: str) -> str:
    """The text without quoted spans and runs of capitalised words (names and titles), in any
    cased script; a connector between two capitalised words goes with them."""
    text = _QUOTED.sub(" ", text or "")
    spans = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]
    drop = [word[0].isupper() for _, _, word in spans]
    for i in range(1, len(spans) - 1):
        if spans[i][2].lower() in _CONNECTORS and drop[i - 1] and any(drop[i + 1:i + 3]):
            drop[i] = True
    out, last = [], 0
    for (start, end, _), dropped in zip(spans, drop, strict=True):
        if dropped:
            out.append(text[last:start] + " ")
            last = end
    return "".join(out) + text[last:]


@functools.cache
def _identifier() -> LanguageIdentifier:
    identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    identifier.set_languages(LANGUAGES)
    return identifier


def language_of(text: str) -> str:
    """`en` when a text's prose reads as English (or there is too little to tell), else
    `other`."""
    prose = prose_of(text)
    if not any(ch.isalpha() for ch in prose):
        return "en"
    ranked = dict(_identifier().rank(prose))
    best = max(ranked, key=ranked.get)
    return "other" if best != "en" and ranked[best] >= MIN_OTHER_PROBABILITY else "en"
