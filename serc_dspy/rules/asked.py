"""The guards that read a caller's short answer against its question: a rival chosen in both
option orders replaces an answer the evidence also states when the question's own words point
to it (`choose.asked_frame`, `choose.asked_noun`, `choose.question_echo`), when the answer is
of another type than the question asks (`choose.off_type`), or is a value the question itself
names (`choose.named_answer`, `choose.question_named`) or the draft's sentence already states
(`choose.draft_named`).

The draft's facts are guarded by the passages alone (`rules.rivals`); a short answer has one
more witness, the question, whose words describe the answer as the evidence does."""

from __future__ import annotations

import re

from serc_dspy.core.text import normalise
from serc_dspy.core.trace import Candidate, Slot
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.people import opens_person_name
from serc_dspy.rules.questions import head_noun, question_kind
from serc_dspy.rules.rivals import RIVAL_FRAME_WORDS, frame_stems, sentence_of
from serc_dspy.rules.slots import EvidenceSentence
from serc_dspy.rules.words import content_stems, stem, words_of

ECHO_MARGIN = 2
"""Question words more that the sentences naming one value must share than those naming the
other, for `choose.question_echo` to take it ("Badr Hari": 16 against 1)."""
ASKED_WORDS = 3
"""Words before a question's closing wh-word that say what it asks ("film, directed by who?")."""
_CLOSING_WH = re.compile(rf"((?:[^\s?]+\s+){{1,{ASKED_WORDS}}})(?-i:who|whom|what|which|when|"
                         r"where)[?.!\s]*$", re.IGNORECASE)
"""A wh-word in lower case, with no closing quote after it: 'was in "Doctor Who"?' ends on a
title (HaluEval extra tuning item 243, whose right host was swapped for his character)."""

register(
    Rule("choose.asked_frame", "a caller's short answer that the evidence states is replaced "
         "by a rival chosen in both orders when the question ends on what it asks (\"directed "
         "by who?\") and those words stand around the rival in its passage (five each side) "
         "more than around every statement of the answer (\"film directed by Robert Zemeckis "
         "and written by Neil Gaiman\")", "HaluEval's wrong answers are the evidence's other "
         "names: `choose.own_stated` alone held back every such fix, the model's right choice "
         "included; the whole question's words, tried first, also stand around the other "
         "people a question describes, and broke a right answer", found_on="HaluEval tuning "
         "items 12, 17", thresholds={"rival_frame_words": RIVAL_FRAME_WORDS,
                                           "asked_words": ASKED_WORDS}),
    Rule("choose.asked_noun", "a caller's short answer that the evidence states is replaced "
         "by a rival chosen in both orders when the evidence calls the rival by the type word "
         "the question asks for (\"Which state ...?\": \"the state of Hawaii\", \"Hawaii "
         "state\") and calls the answer by it nowhere", "the drug stores' state was held back "
         "by `choose.own_stated`: the evidence names California, as where their CEO's company "
         "came from, while the stores are \"throughout the state of Hawaii\"",
         english_only=True, found_on="HaluEval tuning item 5"),
    Rule("choose.question_echo", "a caller's short answer whose two option orders each passed "
         "it over, for two different rivals, takes the rival whose evidence sentences share "
         "`echo_margin` more of the question's content words than the other's; and a rival "
         "chosen so, or in both orders, replaces an answer the evidence states when it leads "
         "the answer by as many (the `choose.own_stated` guard yields)", "HaluEval's questions "
         "describe their answer in the words of the evidence about it (\"was once considered "
         "the best kickboxer in the world, however he has been involved in a number of "
         "controversies\"); on the tuning items the model passed such answers over for two "
         "different rivals, and the draft stayed wrong", english_only=True,
         found_on="HaluEval tuning items 2, 12",
         thresholds={"echo_margin": ECHO_MARGIN}, default=False),
    Rule("choose.question_named", "a value the question itself names (\"... which former "
         "member of the Eagles?\": Eagles) is not offered as the answer to a short answer "
         "that names it nowhere, unless the question offers options (\"A or B\", \"which "
         "one\")", "a wh-question describes its answer by other things it names; on the "
         "extra tuning items 1-160 the only two swaps to a name the question gives were "
         "wrong (\"Glenn Frey.\" became \"Eagles.\")",
         found_on="HaluEval extra tuning items 98, 160"),
    Rule("choose.draft_named", "a value the draft's own sentence states outside its answer "
         "slot (\"Bonds on Bonds was aired on TNT.\": Bonds on Bonds) is not offered for the "
         "slot, unless the question offers options", "the sentence's subject is not its "
         "object: on a fresh multi-turn tuning draft the model read the show's name as the "
         "network's, and the swap printed \"Bonds on Bonds was aired on Bonds on Bonds.\"",
         found_on="HaluEval multi-turn tuning item 256"),
    Rule("choose.named_answer", "a caller's short answer to a person, place, date or number "
         "question whose value the question itself names (\"Who won a Nobel Prize in 1943 "
         "and is associated with Max Volmer?\": \"Max Volmer won the Nobel Prize in "
         "1943.\"), the question offering no options, is not held by `choose.own_stated` "
         "against a rival chosen in both orders", "a question describes its answer by the "
         "things it names, so the evidence stating such a value is no sign it answers; of "
         "the 220 extra tuning items, 1 hallucinated answer and no right one was held so "
         "(its rival the right one); for an \"other\" question the slot may be the "
         "question's subject (\"Superheaven and Oceansize have unique genres.\"), not an "
         "answer, hence the kinds", found_on="HaluEval extra tuning item 164"),
    Rule("firewall.echoed_reset", "a reset whose grounded answer only repeats a name the "
         "question gives (\"The Libertine\" for \"What television series did the actor that "
         "Penny Layden performed with in The Libertine star in?\"), the question offering no "
         "options, keeps the answer it would have replaced", "a question describes its "
         "answer by the things it names, so such a grounded answer answers nothing; on the "
         "extra tuning items the only grounded answers of this kind (2 of 300 items) each "
         "replaced a draft by a name from its question", english_only=True,
         found_on="HaluEval extra tuning items 283, 311"),
)

ECHO_WORDS = 6
"""A grounded answer longer than this is more than a name, whatever the question says."""
_OFFERS = re.compile(r"\bor\s+(?:(?:the|a|an)\s+)?(?-i:(?=[\"“A-Z0-9]))|"
                     r"\bor\s+(?:(?:the|a|an)\s+)?\w+\s*\?\s*$|\bwhich (?:one|of)\b", re.IGNORECASE)
"""A question that offers options: "or" before a name, or before the word that ends it ("...
a democrat or a republican?"), "which one/of". Not "or" between verbs ("who suffer or have
suffered from discrimination") nor inside a name ("Sde-Or"): HaluEval extra tuning item 363
kept the name its question gives as an option, and the reading swapped it in."""


def question_named(question: str, options: list[Candidate]) -> list[str]:
    """The evidence's capitalised values that `question` names, to be left out of a short
    answer's options (`choose.question_named`); none where the answer (the first option)
    is named there too, or the question offers options of its own."""
    text = f" {normalise(question, fold=True)} "

    def named(value: str) -> bool:
        return f" {normalise(value, fold=True)} " in text

    if not options or _OFFERS.search(question) or named(options[0].value):
        return []
    return [c.value for c in options[1:] if c.origin == "evidence" and c.value[:1].isupper()
            and named(c.value)]


def draft_named(question: str, sentence: str, slot: Slot, options: list[Candidate]) -> list[str]:
    """The evidence's capitalised values that the draft's `sentence` states outside `slot`,
    to be left out of the slot's options (`choose.draft_named`): what a sentence already
    says around its answer is not that answer. None where the question offers options."""
    start = slot.start if sentence[slot.start:].startswith(slot.text) else \
        sentence.find(slot.text)
    end = start + len(slot.text)
    around = sentence if start < 0 else f"{sentence[:start]} , {sentence[end:]}"
    return [] if _OFFERS.search(question) else question_named(around, options)


def echoes_question(question: str, answer: str) -> bool:
    """Whether an answer is only a name the question gives (an article and a final stop
    aside), and the question offers no options (`firewall.echoed_reset`)."""
    bare = normalise(re.sub(r"^(?:the|a|an)\s+", "", answer.strip().rstrip("."), flags=re.I),
                     fold=True)
    return bool(bare) and len(bare.split()) <= ECHO_WORDS and not _OFFERS.search(question) \
        and f" {bare} " in f" {normalise(question, fold=True)} "


def names_answer(question: str, value: str) -> bool:
    """Whether a person, place, date or number question names `value`, the short answer's
    own, and offers no options (`choose.named_answer`)."""
    return question_kind(question) in ("person", "place", "date", "number") and \
        not _OFFERS.search(question) and bool(normalise(value, fold=True)) and \
        f" {normalise(value, fold=True)} " in f" {normalise(question, fold=True)} "


def article_before(sentence: str, value: str) -> str:
    """The "the " that stands right before `value` in `sentence` ("The Kingsmen"), or ""."""
    at = sentence.find(value) if value else -1
    found = re.search(r"\bthe\s+$", sentence[:at], re.IGNORECASE) if at >= 0 else None
    return found.group(0) if found else ""


def off_type(question: str, slot: Slot, sentence: str = "") -> bool:
    """`choose.off_type`: a person question's answer that is no person's name (of two words or
    more: a bare surname may still be one; not only capitalised words, which may name a person
    whose given name no list knows, "Zooey Deschanel"; or a name the answer's `sentence` puts
    after "the": "The Kingsmen wrote the song."), while every rival offered is a full name
    ("Mike's Gym in Oostzaan" is none)."""
    words = slot.text.split()
    offered = [c.value for c in slot.candidates if c.origin == "evidence"]
    plain = all(w[:1].isupper() and w.isalpha() for w in words)
    no_name = bool(article_before(sentence, slot.text)) or \
        (not plain and len(words) > 1 and not opens_person_name(words[0]))
    return question_kind(question) == "person" and slot.kind == "name" and no_name and \
        bool(offered) and \
        all(len(v.split()) > 1 and opens_person_name(v.split()[0]) for v in offered)


def asked_noun(question: str, slot: Slot, evidence: list[EvidenceSentence],
               chosen: Candidate) -> bool:
    """Whether the evidence calls the chosen rival by the type word the question asks for
    ("the state of Hawaii", "Hawaii State", "Vestfold is a county in Norway" for "Which state
    ...?", "... which county?") and the short answer's own value by it nowhere: the rival is
    then of the asked kind, and the answer a value of something else the evidence names."""
    noun = head_noun(question)
    if not noun or sentence_of(chosen, evidence) is None:
        return False

    def typed(text: str, value: str) -> bool:
        name = re.escape(value)
        return bool(re.search(rf"\b{noun}s?\s+of\s+(?:the\s+)?{name}(?!\w)|(?<!\w){name}\s+"
                              rf"{noun}\b|(?<!\w){name}\W{{0,4}}\s*(?:is|was)\s+(?:an?|the)\s+"
                              rf"(?:[\w-]+\s+){{0,2}}?{noun}s?\b", text, re.IGNORECASE))
    # a definition may stand in a sentence of its own ("Vestfold is a county in Norway.")
    return any(typed(s.text, chosen.value) for s in evidence) and \
        not any(typed(s.text, slot.text) for s in evidence)


def asked_relation(question: str) -> set[str]:
    """The content stems of the words just before a question's closing wh-word ("directed by
    who?": direct); empty when the question does not end on one."""
    found = _CLOSING_WH.search(question.strip())
    return content_stems(found.group(1)) if found else set()


def asked_frame(question: str, slot: Slot, evidence: list[EvidenceSentence],
                chosen: Candidate) -> bool:
    """Whether the words a question ends on stand around the chosen rival in its passage more
    than around any statement of the short answer's own value: the rival is then what the
    question asks for, and the answer another thing the evidence names ("written by Neil
    Gaiman" answering "directed by who?")."""
    skip = {w.lower() for w in words_of(f"{slot.text} {chosen.value}")}
    asked = asked_relation(question) - {stem(w) for w in skip}
    rival = sentence_of(chosen, evidence)
    if not asked or rival is None:
        return False

    def around(sentence: EvidenceSentence, start: int, end: int) -> int:
        return len(asked & frame_stems(sentence.text, start, end, skip, RIVAL_FRAME_WORDS))

    own = 0
    for sentence in evidence:
        for m in re.finditer(rf"(?<!\w){re.escape(slot.text)}(?!\w)", sentence.text,
                             re.IGNORECASE):
            own = max(own, around(sentence, m.start(), m.end()))
    at = (chosen.offset or 0) - rival.offset
    return around(rival, at, at + len(chosen.value)) > own


def question_echo(question: str, value: str, evidence: list[EvidenceSentence]) -> int:
    """The most content words of the question (the value's own aside) that one evidence
    sentence naming the value shares: a sentence names it when it holds the value's last word
    ("Hari has been ... once considered the best kickboxer" names "Badr Hari")."""
    last = (words_of(value) or [""])[-1].lower()
    asked = content_stems(question) - content_stems(value)
    return max((len(asked & content_stems(s.text)) for s in evidence
                if len(last) > 2 and last in {w.lower() for w in words_of(s.text)}), default=0)


def echo_leader(question: str, values: list[str], evidence: list[EvidenceSentence]
                ) -> str | None:
    """Of two values, the one the question echoes by `ECHO_MARGIN` words more (None: neither)."""
    first, second = (question_echo(question, v, evidence) for v in values)
    if abs(first - second) < ECHO_MARGIN:
        return None
    return values[0] if first > second else values[1]
