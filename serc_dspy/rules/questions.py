"""What a question asks for: the kind of value that answers it (a comparison between two
named options, yes or no, a date, a number, a place, a person, or other), and the type word it
names ("What book ...?": book). Read from the question's words alone, before any evidence."""

from __future__ import annotations

import re

from serc_dspy.rules.two_options import comparison_question
from serc_dspy.rules.words import STOP

QUESTION_KINDS = ("comparison", "yes/no", "date", "number", "place", "person", "other")
HEAD_WORDS = 7
"""Words after "what"/"which" searched for the asked type ("Which 1999 French Open - Women's
Doubles runner-up")."""


_PERSON_NOUNS = frozenset("""actor actress author writer novelist poet playwright singer songwriter
singer-songwriter musician rapper vocalist guitarist drummer composer player footballer coach
director filmmaker producer screenwriter politician president king queen prince princess person
man woman artist painter sculptor comedian journalist scientist physicist chemist founder
entrepreneur businessman runner-up winner champion wrestler boxer driver manager architect
philosopher economist""".split())
_PLACE_NOUNS = frozenset("""state county city country town village region province island
continent capital district borough suburb neighborhood neighbourhood""".split())
_TITLED_NOUNS = frozenset("""county book university college school river island award prize
street park bridge hospital church cathedral stadium airport lake mountain castle palace
museum festival cup trophy party academy institute league tower""".split())
"""Type words that close a name of their type ("Ulster County", "Exeter Book")."""


_MODIFIER_LIST = re.compile(r"\b[a-z]+(?:, [a-z]+)+,? (?:and|or) [a-z]+\b")
"""Single lower-case words listed with commas ("stage, film, and television"): modifiers of
one head noun, whose commas do not end the type phrase."""


def head_noun(question: str) -> str:
    """The type word a "what"/"which" question asks for: the last type word (a person's, a
    place's or a titled kind's) of the words that follow it up to a function word or a
    comma ("What American country music singer-songwriter, born ..." -> "singer-songwriter",
    "What American stage, film, and television actor ...?" -> "actor",
    "... in which New York county?" -> "county"); "" when none names a type ("Which
    organization presents the award?": "award" is not what is asked)."""
    # "What American stage, film, and television actor ...": the list is one modifier
    question = _MODIFIER_LIST.sub(lambda m: re.sub(r",?\s+(?:and\s+|or\s+)?", " ",
                                                   m.group(0)), question)
    for m in re.finditer(r"\b(?:what|which)\s+([^,;:?.()]*)", question, re.IGNORECASE):
        found = ""
        for word in m.group(1).split()[:HEAD_WORDS]:
            word = word.lower()
            if word in STOP:
                break
            for form in (word, word[:-1] if word.endswith("s") else word):
                if form in _PERSON_NOUNS or form in _PLACE_NOUNS or form in _TITLED_NOUNS:
                    found = form
                    break
        if found:
            return found
    return ""


_HOW_MUCH = r"how (?:many|much|long|old|far|tall|big|large)"
"""A number asked, first or last in the question ("How many ...", "... spent how many weeks?",
"... earned how much money?")."""


_COUNT = (r"\bwhat (?:[\w-]+ ){0,3}?(?:population|percentage)\b|"
          r"\bpopulation\b[^,?]*\b(?:was|is|of) what\?$")
"""A count asked by its noun: "what is the approximate population of ...", "a town with a
population of what?", "whose population at the 2010 census was what?", "what percentage".
"""


def question_kind(question: str) -> str:
    """What kind of value answers a question, from its words: a comparison between two
    named options ("... first, A or B?", "Are both ...?"), a date, a number, a place, a
    person (also "What author ...", "Which state ...": the type word the question asks
    for), else other."""
    q = " ".join(question.split()).lower()
    if comparison_question(question):
        return "comparison"
    if re.match(r"^(?:are|were|is|was|do|did|does|can|could|has|have|had)\b", q):
        return "yes/no"
    if re.match(r"^(?:when|what (?:year|date|month|decade|century)|in (?:what|which) "
                r"(?:year|decade))\b", q) or re.search(r"\b(?:in|on|what|which) (?:year|decade|"
                                                        r"date|month|century)\b[^,]*\?$", q):
        return "date"  # "..., released in what year?", "born on which date?" ask a date too
    if re.search(rf"^{_HOW_MUCH}\b|\b{_HOW_MUCH}\b[^,]*\?$", q) or re.search(_COUNT, q):
        return "number"  # "... earned how much money?", "... whose population was what?"
    if re.match(r"^(?:where|in (?:what|which) (?:city|country|state|town|county|place)|"
                r"what (?:city|country|state|town|county|place))\b", q) or \
            re.search(r"\b(?:what|which) (?:city|country|state|town|county)\b[^,]*\?$", q):
        return "place"
    if re.match(r"^(?:who|whom|whose)\b", q) or re.search(r"\bby whom\b|\b(?:by )?who\?$", q):
        return "person"
    noun = head_noun(question)
    if noun in _PERSON_NOUNS:
        return "person"
    if noun in _PLACE_NOUNS:
        return "place"
    return "other"


def titled(question: str) -> str:
    """The type word that closes the asked-for name ("What book ..." -> "book": the answer
    is an "... Book"), or ""."""
    noun = head_noun(question)
    return noun if noun in _TITLED_NOUNS else ""


def closes_with(value: str, noun: str) -> bool:
    """Whether a name of two words or more ends in the type word ("Ulster County", county)."""
    words = value.split()
    return len(words) > 1 and words[-1].lower().rstrip("s") == noun
