"""Plain-text helpers that need no LM: sentence splitting, refusal detection, fuzzy matching."""

from __future__ import annotations

import difflib
import functools
import json
import re
import threading
import time
import unicodedata

from anyascii import anyascii

# Phrases a model uses when it declines or knows nothing; matched at the start of the answer or
# anywhere for the unambiguous ones, so a biography that merely mentions "unknown" is not hit.
_REFUSAL_PATTERNS = [
    r"^\s*(i'?m|i am)\s+(sorry|afraid|not able|unable)",
    r"^\s*(sorry|unfortunately)\b",
    r"^\s*i\s+(cannot|can'?t|could not|couldn'?t|do not|don'?t|am unable to)\s+"
    r"(provide|find|answer|help|give|share|access|know|have)",
    r"\bas an ai\b",
    r"\b(i have|i've) no (information|knowledge|data)\b",
    r"\bi (do not|don'?t) have (any )?(information|knowledge|data|details)\b",
    r"\bno (verified|reliable|available) information\b",
]
_REFUSAL = re.compile("|".join(_REFUSAL_PATTERNS), re.IGNORECASE)

SHORT_ANSWER_CHARS = 50
SHORT_SENTENCE_CHARS = 10
"""Both are measured by `text_size`, in English-character equivalents, never by `len`."""

# Scripts written without spaces, where one character carries about what an English word does:
# CJK ideographs (with radicals, extensions and compatibility forms), hiragana and katakana.
_WIDE_CLASS = ("[\u2e80-\u2fdf\u3040-\u30fa\u30fc-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
               "\uf900-\ufaff\U00020000-\U0002fa1f]")
_WIDE = re.compile(_WIDE_CLASS)
_HANGUL = re.compile("[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")
WIDE_CHAR_WEIGHT = 3
"""English characters one CJK ideograph or kana counts for (a Chinese text runs about a third
of the characters of its English translation)."""
HANGUL_CHAR_WEIGHT = 2
"""English characters one Hangul syllable counts for (Korean separates words by spaces, and a
syllable block is about two letters)."""
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|\d+(?:[.,]\d+)*", re.UNICODE)


def text_size(text: str) -> int:
    """The length of `text` (stripped) in English-character equivalents: a CJK ideograph or
    kana counts `WIDE_CHAR_WEIGHT`, a Hangul syllable `HANGUL_CHAR_WEIGHT`, anything else 1.

    The length rules (`SHORT_ANSWER_CHARS`, `SHORT_SENTENCE_CHARS`) use this, so a complete
    45-character Chinese answer of three sentences is not "too short" by an English yardstick.
    """
    stripped = (text or "").strip()
    return (len(stripped) + (WIDE_CHAR_WEIGHT - 1) * len(_WIDE.findall(stripped))
            + (HANGUL_CHAR_WEIGHT - 1) * len(_HANGUL.findall(stripped)))


def is_wide(word: str) -> bool:
    """True for a token of a script without spaces (a CJK ideograph or a kana): one such
    character is a word of its own (see `words`)."""
    return bool(word) and _WIDE.match(word) is not None


def words(text: str) -> list[str]:
    """The words and numbers of `text`, in order: runs of letters (with an inner apostrophe,
    "Curie's"), numbers ("1,867", "3.5"), and each CJK ideograph or kana on its own, since
    those scripts put no spaces between words ("她死于1934年" -> 她, 死, 于, 1934, 年).

    Every word-count rule uses this; `str.split()` would count a Chinese sentence as one word.
    """
    return _WORD.findall(_WIDE.sub(r" \g<0> ", text or ""))


_FIELD_MARKER = re.compile(r"\[\[\s*##|##\s*\]\]")


def clean_tree(value):
    """`clean_text` applied to every string inside parsed JSON (keys included)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean_tree(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k) if isinstance(k, str) else k: clean_tree(v)
                for k, v in value.items()}
    return value


def parse_json(text: str | bytes):
    """`json.loads` for untrusted files: lone surrogates cleaned, and nesting too deep to parse
    refused as a `json.JSONDecodeError` (callers already handle it) instead of RecursionError."""
    try:
        return clean_tree(json.loads(text))
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply", str(text[:40]), 0) from None


def defang(text: str) -> str:
    """Untrusted text (passages, drafts) with DSPy's field markers broken up and surrogates
    cleaned, so a passage cannot open a `[[ ## field ## ]]` of its own inside a prompt."""
    return _FIELD_MARKER.sub(lambda m: m.group(0).replace("[[", "[ [").replace("]]", "] ]"),
                             clean_text(text or ""))


def restore_markers(answer: str, original: str) -> str:
    """`answer` with each field marker that `defang` broke up in `original` (the caller's
    draft) put back as the caller wrote it: defanging guards the prompts, and the caller's
    untouched text comes back byte for byte. A broken-up form the caller wrote themselves is
    left alone."""
    original = clean_text(original or "")
    for marker in dict.fromkeys(m.group(0) for m in _FIELD_MARKER.finditer(original)):
        broken = defang(marker)
        if broken != marker and broken not in original:
            answer = answer.replace(broken, marker)
    return answer


def is_refusal(text: str) -> bool:
    """True when the text declines to answer; such a draft carries no facts to decode."""
    return bool(_REFUSAL.search(text or ""))


def needs_cold_start(text: str) -> bool:
    """The paper's source-dropout test: a refusal or an answer too short to decode (under
    `SHORT_ANSWER_CHARS` by `text_size`, so the rule holds for every script)."""
    stripped = (text or "").strip()
    return is_refusal(stripped) or text_size(stripped) < SHORT_ANSWER_CHARS


_local = threading.local()
_SURROGATE = re.compile("[\ud800-\udfff]")


def _segmenter():
    """One pysbd Segmenter per thread: it keeps the text being split on the instance, so a
    shared one hands threads each other's sentences (52 of 400 concurrent calls did)."""
    segmenter = getattr(_local, "segmenter", None)
    if segmenter is None:
        import pysbd

        segmenter = _local.segmenter = pysbd.Segmenter(language="en", clean=False)
    return segmenter


def clean_text(text: str) -> str:
    """Text safe to store and print: lone surrogates (from broken escapes such as "\\udcff"
    in JSON, or undecodable bytes) become U+FFFD instead of crashing a JSON writer later."""
    if not isinstance(text, str):
        return text
    return _SURROGATE.sub("\ufffd", text)


MAX_BLOCK_CHARS = 1500
"""The longest text pysbd is handed at once. Its cost grows with the square of its input (400
kB took 44 s), so a longer paragraph is first cut into blocks at sentence-like boundaries,
which keeps splitting linear in the text's size."""
_BLOCK_END = re.compile(
    # ". " after a word of 3+ lower-case letters or a digit (not after "Dr." or "Mrs."), or
    # after a closing quote or bracket, before what can start a sentence; or a CJK sentence end.
    r"(?:(?<=[^\W\d_A-Z]{3}[.!?])|(?<=\d[.!?])|(?<=[.!?][\"'”’)\]]))\s+"
    r"(?=[\"'“‘(\[]?[A-Z0-9])|(?<=[。！？])")


def _blocks(paragraph: str, limit: int = MAX_BLOCK_CHARS):
    """`paragraph` in pieces of at most `limit` characters, each cut at the last sentence-like
    boundary in its last three quarters, else at a space, else (a run of `limit` characters
    without one) hard."""
    start = 0
    while len(paragraph) - start > limit:
        low = start + limit // 4
        window = paragraph[low:start + limit]
        cut = None
        for match in _BLOCK_END.finditer(window):
            cut = match.end()
        if cut is None or cut == 0:
            space = window.rfind(" ")
            cut = space + 1 if space > 0 else len(window)
        yield paragraph[start:low + cut]
        start = low + cut
    yield paragraph[start:]


def split_sentences(text: str, *, deadline: float | None = None) -> list[str]:
    """Split prose into sentences with a rule-based splitter (abbreviations, decimals, initials).

    Paragraph breaks always end a sentence; whitespace around sentences is dropped; Chinese and
    Japanese sentences end at 。！？. A paragraph longer than `MAX_BLOCK_CHARS` is split block by
    block (`_blocks`), so the cost is linear in the text's size. `deadline` (a
    `time.monotonic()` value) is checked before each block: past it, `TimeoutError`.
    """
    sentences: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text or ""):
        paragraph = " ".join(paragraph.split())
        for block in _blocks(paragraph):
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"the deadline passed after {len(sentences)} sentences "
                                   "had been split")
            block = block.strip()
            if block:
                sentences.extend(s.strip() for s in _segmenter().segment(block) if s.strip())
    return sentences


def glue_cuts(text: str) -> list[int]:
    """Where two sentences were glued with no space ("... and actor.H. Bruce Humberstone",
    "... Nano Letters.ACS Nano is", "... 2 June 2017.\"New Rules\" is"), as knowledge files
    concatenated from paragraphs have them: the offsets at which the second sentence starts.
    A stop after two lower-case letters may be followed by any capital (an initial, an
    acronym); after a digit, a bracket or a quote, only by a capitalised word ("3.5",
    "U.S.Army", "Ph.D." are no glue). A straight quote right after the stop closes the first
    sentence where the first sentence has an open quote, else opens the second."""
    cuts: list[int] = []
    for stop in re.finditer(r"[.!?]", text):
        at = stop.end()
        if text[at:at + 1] in ("\"", "\u201d") and (
                text[at] == "\u201d" or text[cuts[-1] if cuts else 0:stop.start()].count('"') % 2):
            at += 1  # the quote closes the first sentence
        start = at + (text[at:at + 1] in ("\"", "\u201c", "("))
        head, word = text[max(0, stop.start() - 2):stop.start()], text[start:start + 2]
        if not word[:1].isupper():
            continue
        after_word = len(head) == 2 and head.isalpha() and head.islower()
        after_mark = head[-1:].isdigit() or head[-1:] in (")", "]", '"', "\u201d", "\u2019")
        if after_word or (after_mark and word[1:].islower()) or opens_article(text, stop.start(),
                                                                              start):
            cuts.append(at)
    return cuts


_NAME_RUN = (r"(?:The\s+)?[A-Z][a-z]+(?:[\s-]+(?:[A-Z][\w'’.-]*|[a-z]+))?"
             r"(?:[\s-]+[A-Z][\w'’.-]*){0,4}")
_OPENING = re.compile(_NAME_RUN + r"(?:\s+\(|\s+(?:is|was|are|were)\s|,\s)")
"""An encyclopedia article's opening: a name of up to six words, then its parenthesis ("Ross
Shor Lynch (born ..."), its copula ("Sinclair Broadcast Group is ...") or a comma ("Robert
Anthony Eden, 1st Earl of Avon")."""
_OPENING_AFTER_LETTER = re.compile(_NAME_RUN + r"(?:\s+\(|\s+(?:is|was|are|were)\s)")
"""After one capital letter, which may be an initial ("T.Alexander Rich", "Folha de
S.Paulo, Ronaldo"), only a parenthesis or a copula opens an article ("Styles P.Albert
Johnson (November 2, 1974")."""


def opens_article(text: str, stop: int, start: int) -> bool:
    """Whether the stop at `stop` ends a paragraph glued to an article's opening at `start`
    ("... the Mk.Ross Shor Lynch (born 1995)", "... in World War II.John Kennedy Toole (",
    "... on ESPN.Barry Lamar Bonds (born"): after any word but an initialism's letter
    ("U.S.Army"), a capitalised word of two letters or more that opens a name with a
    parenthesis, a copula or (not after one capital letter, which may be an initial) a comma
    after it."""
    token = re.search(r"\S*$", text[:stop]).group(0)
    opening = _OPENING_AFTER_LETTER if re.fullmatch(r"[A-Z]", token[-1:]) and \
        not token[-2:-1].isalnum() else _OPENING
    return bool(token) and "." not in token and token[-1:].isalnum() and \
        bool(opening.match(text, start))


def glued_pieces(text: str) -> list[str]:
    """`text` cut where two sentences were glued (`glue_cuts`), in order."""
    cuts = [0, *glue_cuts(text), len(text)]
    return [text[a:b] for a, b in zip(cuts, cuts[1:], strict=False) if text[a:b].strip()]


def unique_texts(items) -> list[str]:
    """Whitespace-normalised, non-empty items, each kept once (case-insensitively), in order.

    Small models repeat list items; a repeated fact or question would cost a second check.
    """
    seen, out = set(), []
    for item in items or []:
        text = " ".join(str(item).split())
        if text and text.lower() not in seen:
            seen.add(text.lower())
            out.append(text)
    return out


_PUNCTUATION = re.compile(r"[^\w\s]")
_PARENTHETICAL = re.compile(r"\([^)]*\)")
NAME_TITLES = frozenset({"dr", "mr", "mrs", "ms", "miss", "prof", "professor", "sir", "dame",
                         "madame", "mme", "lord", "lady", "the"})
"""Words `normalise_name` leaves out: titles and the article, which one name may carry in one
text and not in another."""


def fold_latin(text: str) -> str:
    """Latin letters spelled in ASCII by anyascii ("Đorđe Æbelø" -> "Dorde Aebelo", ł, ø, ß
    included), every other script only without its combining accents: a name written with
    and without accents is one name, and a Chinese or Russian text is not transliterated."""
    latin = "".join(anyascii(ch) if ord(ch) > 127 and _is_latin(ch) else ch
                    for ch in unicodedata.normalize("NFKC", text))  # "Ｃurie" is Curie
    return "".join(ch for ch in unicodedata.normalize("NFKD", latin)
                   if not unicodedata.combining(ch))  # other scripts' accents, as before


@functools.cache
def _is_latin(ch: str) -> bool:
    return unicodedata.name(ch, "").startswith("LATIN")


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def normalise(text: str, *, fold: bool = False, singular: bool = False) -> str:
    """The words of `text` for comparing texts: lower-cased, each punctuation mark a space,
    white space collapsed ("Curie's 2nd-prize" -> "curie s 2nd prize").

    The one normaliser of the package; its options:
    - `fold`: accents and case folded too: Latin letters in ASCII (`fold_latin`),
      `str.casefold` instead of `str.lower`, and "_" a space ("Élodie_Straße" -> "elodie
      strasse"), for names written with and without accents;
    - `singular`: a plural -s dropped from every word of four letters or more not ending in
      "ss" ("years" -> "year", "Hole" and "class" unchanged), so "16-year-old" and "16 years
      old" compare equal.
    `normalise_name` builds on it for person names.
    """
    text = text or ""
    if fold:
        text = fold_latin(text).casefold()
    else:
        text = text.lower()
    text = _PUNCTUATION.sub(" ", text)
    words = (text.replace("_", " ") if fold else text).split()
    return " ".join(map(_singular, words) if singular else words)


def normalise_name(name: str) -> str:
    """A name for comparing names: parentheticals removed, then `normalise(fold=True)`
    without `NAME_TITLES`:
    "Dr. Maria Skłodowska-Curie (physicist)" -> "maria sklodowska curie"."""
    name = _PARENTHETICAL.sub(" ", name or "")
    return " ".join(w for w in normalise(name, fold=True).split() if w not in NAME_TITLES)


def similarity(a: str, b: str) -> float:
    """Character-level similarity in [0, 1] after case and punctuation are ignored."""
    return difflib.SequenceMatcher(None, normalise(a), normalise(b)).ratio()


def best_match(target: str, candidates: list[str], cutoff: float) -> tuple[int, float] | None:
    """Index and score of the candidate closest to `target`, or None below `cutoff`."""
    best: tuple[int, float] | None = None
    for index, candidate in enumerate(candidates):
        score = similarity(target, candidate)
        if score >= cutoff and (best is None or score > best[1]):
            best = (index, score)
    return best


# -- collateral damage: sentences that no reader would accept --------------------------------
RESTATED_RUN = 3
"""Consecutive sentences with one opening that make a run of restatements ("P was fluent in A.
P was fluent in B. P was fluent in C."): a list of atomic facts, not prose."""
_COPULA = re.compile(r"^(?P<left>.+?) (?:is|was|are|were|remains|remained|became) "
                     r"(?P<right>.+)$")
_LEADING_NAME = re.compile(r"^(?:[A-Z][\w'’.-]*\s+){1,3}[A-Z][\w'’.-]*")


def _without_articles(words: str) -> str:
    return " ".join(w for w in words.split() if w not in ("a", "an", "the"))


def is_tautology(sentence: str) -> bool:
    """"The fourth division of X is the fourth division of X.": both sides of the copula say
    the same thing, so the sentence states nothing."""
    m = _COPULA.match(normalise(sentence))
    return bool(m) and _without_articles(m["left"]) == _without_articles(m["right"]) != ""


def _opening(sentence: str) -> str:
    """What a run of restatements shares: the leading multi-word name if there is one, else
    the first three words."""
    name = _LEADING_NAME.match(sentence.strip())
    return normalise(name.group(0)) if name else " ".join(normalise(sentence).split()[:3])


def degenerate_sentences(text: str) -> dict[int, str]:
    """Sentence index -> why it is degenerate: `tautology`, `repeated` (a sentence said
    before, word for word), or `restated` (third and later of a run of `RESTATED_RUN` or more
    sentences sharing one opening; the run's first sentence is fine)."""
    sentences = split_sentences(text)
    found: dict[int, str] = {}
    seen: set[str] = set()
    for index, sentence in enumerate(sentences):
        key = normalise(sentence)
        if key and is_tautology(sentence):
            found[index] = "tautology"
        elif key in seen:
            found[index] = "repeated"
        seen.add(key)
    openings = [_opening(s) for s in sentences]
    start = 0
    while start < len(sentences):
        end = start + 1
        while end < len(sentences) and openings[end] and openings[end] == openings[start]:
            end += 1
        if end - start >= RESTATED_RUN:
            for index in range(start + 1, end):
                found.setdefault(index, "restated")
        start = end
    return dict(sorted(found.items()))
