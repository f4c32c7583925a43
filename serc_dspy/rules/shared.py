"""What two named things have in common ("What profession do Nicholas Ray and Elia Kazan have
in common?", "Charles Hutchison and Reginald Barker, have which mutual occupation?", "What
sport did Jack Sock and Raffaella Reggi play?"): the answer is a kind both are, and each
thing's own opening sentence says what it is ("... was an American film actor, director and
screenwriter."). The value both openings give is the answer (`choose.shared_value`), read
from the passages with no choice call: a 1.5B model asked to choose among one thing's roles
cannot know that the answer is the role the other shares."""

from __future__ import annotations

import re

from serc_dspy.core.trace import Slot
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.slots import ROLE_NOT, EvidenceSentence
from serc_dspy.rules.words import STOP, words_of
from serc_dspy.rules.yesno import SUBJECT_WORDS

register(
    Rule("choose.shared_value", "a caller's one-part answer to a question asking what kind "
         "two named things both are (\"What profession do A and B have in common?\", \"A "
         "and B, have which mutual occupation?\", \"What sport did A and B play?\", \"A and "
         "B are both what?\") is decided by the kinds both things' opening "
         "sentences say they are (\"is a ...\", \"as the ...\", each item of a list, by its "
         "last word): an answer that states a word of a shared kind is supported; another "
         "is replaced by one naming the shared kind (\"A and B are both film directors.\", "
         "or the bare kind for a bare answer); with no shared kind it is left to the choice",
         "a question asking what two people share had only one person's values to choose "
         "from, so \"Both actors were also writers.\" stood though each one's opening "
         "sentence calls him a film director", english_only=True,
         found_on="HaluEval extra tuning items 317, 330, 338"),
)

_PAIR = re.compile(r"(?P<a>[A-Z][^,?]*?),?\s+and\s+(?P<b>[A-Z][^,?]*?),?\s+(?:have|has|had|"
                   r"share|shared|are|were|play|played|both)\b")
_ASKING = re.compile(r"^(?i:what|which)\b[^?]*?\b(?:do|does|did)\s+(?=[A-Z])")
"""A wh-question's words up to its first named thing ("What profession does ")."""
_YES_NO = re.compile(r"^(?:are|were|is|was|do|did|does|can|could|has|have|had)\b", re.I)
_KIND_ASKED = re.compile(r"\b(?:what|which)\s+(?:\w+\s+){0,2}?(?:profession|occupation|job|"
                         r"career|sport|genre|type|kind|skill|field|format)s?\b|\bwhat\?$",
                         re.IGNORECASE)
"""The question asks for a kind ("What profession ...", "... have which mutual occupation?",
"... are both what?"), not a thing of the two ("What film did A and B both star in?")."""
_PREDICATE = re.compile(r"\b(?:is|was|are|were|as)\s+(?:an?|the|one of the)\s+")
_END = re.compile(r"[.;:()\[\]\"“]|\b(?:who|which|that|whose|best|known|from|in|by|for|with|of|"
                  r"based|born|since|at|on|whom|where|within|among|including|containing|native)\b")
NO_KIND = ROLE_NOT | {"genus", "genera", "species", "family", "order", "class", "form",
                      "variety", "sort", "name"}
"""Words that end an item but name no kind a thing is ("a genus of flowering plants": the
plants are what it is, and "genus" is no answer to "what type of vegetation?")."""
_RANK_OF = re.compile(r"(?:[a-z]+\s+){0,3}?(?:genus|genera|species|family|group|type|kind)"
                      r"\s+of\s+")
"""A rank that names what its members are after "of" ("a monotypic genus of flowering
plants")."""
_VERB = re.compile(r"\b(?:is|are|was|were|has|have|had|been|[a-z]{3,}ed)\b")
"""A verb that makes a short answer a sentence ("Both have leaves."), not a bare value."""
_ITEM_SPLIT = re.compile(r",\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+")


def shared_question(question: str) -> tuple[str, str] | None:
    """(A, B) of a question asking what two named things have in common; None otherwise (a
    yes/no question is `rules.yesno`'s)."""
    text = " ".join(question.split())
    if _YES_NO.match(text) or not _KIND_ASKED.search(text):
        return None
    opening = _ASKING.match(text)
    pair = _PAIR.match(text, opening.end()) if opening else _PAIR.match(text)
    return (pair["a"].strip(), pair["b"].strip()) if pair else None


def opening_of(option: str, evidence: list[EvidenceSentence]) -> str | None:
    """The option's own sentence: the first whose first words hold all its name's words."""
    names = {w.lower() for w in words_of(option) if w.lower() not in STOP}
    return next((s.text for s in evidence if names and names <= {
        w.lower() for w in words_of(s.text)[:SUBJECT_WORDS + len(names)]}), None)


def kinds_of(option: str, evidence: list[EvidenceSentence]) -> list[list[str]]:
    """The kinds the option's opening sentence (its first that opens by naming it) says it
    is: each item of the phrase after "is a", "was an", "as the" (or after a rank's "of":
    "a genus of flowering plants"), as its lower-case words (a nationality or other
    capitalised word before them aside): "an American film actor, director and screenwriter"
    gives [film, actor], [director], [screenwriter]."""
    own = opening_of(option, evidence)
    if own is None:
        return []
    kinds = []
    for found in _PREDICATE.finditer(own):
        phrase = own[found.end():]
        while rank := _RANK_OF.match(phrase):  # "a genus of two or three species of
            phrase = phrase[rank.end():]  # flowering plants": flowering plants
        end = _END.search(phrase)
        for item in _ITEM_SPLIT.split(phrase[:end.start()] if end else phrase):
            words = [w for w in item.split() if not w[:1].isupper()]
            while words and words[0] in STOP:
                words = words[1:]
            if words and all(re.fullmatch(r"[a-z][a-z-]*", w) for w in words) and \
                    words[-1] not in NO_KIND:
                kinds.append(words)
    return kinds


def _form(one: list[str], other: list[str]) -> str:
    """The words two items of one kind share at their end ("film director" of "pioneer film
    director" and "film director"); where one is the bare kind, the other's last two words."""
    shared = 1
    while shared < min(len(one), len(other)) and one[-1 - shared] == other[-1 - shared]:
        shared += 1
    if shared == 1 and min(len(one), len(other)) == 1:
        return " ".join(max(one, other, key=len)[-2:])
    return " ".join(one[-shared:])


def shared_kinds(a: str, b: str, evidence: list[EvidenceSentence]) -> list[str]:
    """The kinds both options' openings give (by the last word, `_key`), each in its shared
    form, in A's order."""
    theirs = {_key(k[-1]): k for k in kinds_of(b, evidence)}
    found = []
    for kind in kinds_of(a, evidence):
        other = theirs.get(_key(kind[-1]))
        if other is not None and (form := _form(kind, other)) not in found:
            found.append(form)
    return found


def _key(word: str) -> str:
    """A kind word as compared: lower case, a plural's "s" aside. Not `words.stem`, whose
    first letters make "player" "played" and "singer-songwriter" "singer"."""
    return word.lower().removesuffix("s")


def _words(text: str) -> set[str]:
    """A text's kind words (`_key`), function words left out."""
    return {_key(w) for w in words_of(text) if w.lower() not in STOP}


def plural(kind: str) -> str:
    """A kind's plural ("film directors", "actresses", "lead singers"); a kind read after a
    rank's "of" is plural already ("flowering plants")."""
    if re.search(r"[^s]s$", kind):
        return kind
    if re.search(r"(?:s|sh|ch|x)$", kind):
        return kind + "es"
    if re.search(r"[^aeiou]y$", kind):
        return kind[:-1] + "ies"
    return kind + "s"


def shared_slot(question: str, sentence: str, evidence: list[EvidenceSentence]) -> Slot | None:
    """`choose.shared_value`: the answer as one slot, supported where it states a word of a
    kind both things are, contradicted (its correction naming the shared kinds) where it
    does not; None when the question asks for no shared value or the openings share none."""
    pair = shared_question(question)
    if pair is None:
        return None
    a, b = pair
    kinds = shared_kinds(a, b, evidence)
    if not kinds:
        return None
    text = sentence.strip()
    slot = Slot(kind="sentence", text=text, start=sentence.find(text))
    slot.note = f"the openings of {a} and {b} both give " + ", ".join(map(repr, kinds))
    said = _words(text)
    openings = [_words(opening_of(option, evidence) or "") for option in (a, b)]
    if (said - _words(f"{a} {b}")) & {w for kind in kinds for w in _words(kind)} or \
            said and all(said <= words for words in openings):
        slot.ruling = "supported"  # it states a shared kind, or what each opening says
        return slot
    slot.ruling = "contradicted"
    value = " and ".join(kinds)
    bare = len(text.split()) <= 3 and not _VERB.search(text)
    verb = "were" if re.search(r"\b(?:did|were|was)\b", question, re.IGNORECASE) else "are"
    slot.chosen = value if bare else \
        f"{a} and {b} {verb} both {' and '.join(map(plural, kinds))}."
    return slot
