"""The two options a comparison question names ("Which magazine was started first, A or B?",
"Which musician, A or B, played bass?", "Is A or B the largest ...?", "Between A and B, who is
older?"), which questions ask for one of two, and where a draft names them: the reading
`rules.comparisons` decides on."""

from __future__ import annotations

import re

from serc_dspy.core.text import normalise
from serc_dspy.core.trace import Slot
from serc_dspy.rules.names import short_given
from serc_dspy.rules.slots import EvidenceSentence, _count
from serc_dspy.rules.words import STOP

_LINKS = frozenset("the a an of and".split())
"""Words two options may share that are no part of either's own name."""

COMPARISON = re.compile(r"\b(?:first|earlier|older|younger|larger|bigger|smaller|longer|"
                        r"shorter|taller|higher|more|less|fewer|both)\b", re.IGNORECASE)
"""The words that make a question naming two options ("A or B") a comparison."""
_ORDERING = re.compile(r"\b(?:most|least|best|worst|[a-z]{3,}est|closer|nearer|farther|further|"
                       r"[a-z]{3,}er\s+than)\b", re.IGNORECASE)
"""Words that rank two options on a scale ("largest", "closer", "bigger than"): such a question
is no question of which option a statement is true of (`either_question`)."""
_NOT_ORDERING = frozenset({"interest", "west", "forest", "honest", "request", "contest", "guest",
                           "protest"})
"""Words ending in "est" that rank nothing."""
EITHER_WORDS = 6
"""Words at most in each option of "Which ..., A or B?" (`either_question`)."""
# the scales a comparison ranks on, each way: the words that tell which way an answer words it
EARLIER = re.compile(r"\b(?:first|earlier|earliest|older|oldest|before)\b", re.IGNORECASE)
LATER = re.compile(r"\b(?:later|latest|last|second|younger|youngest|newer|newest|"
                   r"more recent(?:ly)?)\b", re.IGNORECASE)
"""("... released second, A or B?": of two, the later one)"""
MORE = re.compile(r"\b(?:more|larger|bigger|higher|longer|taller|greater)\b", re.IGNORECASE)
FEWER = re.compile(r"\b(?:fewer|less|smaller|lower|shorter)\b", re.IGNORECASE)
RELATIVE = re.compile(r"\b(?:closer|nearer|farther|further|[a-z]{3,}er\s+than)\b",
                       re.IGNORECASE)
"""Words that compare two options to each other ("closer to Cleveland", "further west"): the
evidence states no such words of either (`stated_option`)."""
_CHOICE_VERB = re.compile(r"(?:is|was|are|were)\s+(?=\S)", re.IGNORECASE)
"""A question opening on a verb: its "A or B" asks which, not whether."""
NAME_RUN = re.compile(r"[A-Z0-9][\w'’.&-]*"
                      r"(?:,?\s+(?:(?:of|the|and|de|for)\s+)?[A-Z0-9][\w'’.&-]*)*")
"""The capitalised words of a name in a row at the start of a text ("Level 3 Communications",
"MedStar Washington Hospital Center", "Nasdaq, Inc."), linking words inside it."""


def comparison_options(question: str) -> list[str]:
    """The two options a comparison question names ("... started first Arthur's Magazine or
    First for Women?" -> both names; "Which musician, A or B, played bass?"; "Is A or B the
    largest ...?"; "Between A and B, who is older?"); [] when it names none."""
    text = " ".join(question.strip().rstrip("?").split())
    between = re.match(r"between\s+(.+?),\s*\S", text, re.IGNORECASE)
    if between:  # "Between two tennis players Kim Clijsters and Mary Pierce, who ...?"
        pair = re.sub(r"^(?:[a-z]+\s+)+", "", between.group(1))
        first, _, second = pair.rpartition(" and ")
        named = first[:1].isupper() and second[:1].isupper()  # "Between 1990 and 2000": none
        return _two(first, second) if named else []
    left, sep, right = text.rpartition(" or ")
    if not sep:
        return []
    opening = _CHOICE_VERB.match(left)
    if opening:  # "Is A or B headquartered further west?": B is the name after "or"
        named = NAME_RUN.match(right)
        rest = right[named.end():].strip() if named else ""
        return _two(left[opening.end():], named.group(0)) if named and rest else []
    stated = re.match(r"([^,]+),\s*(?=[a-z])", right)
    if stated and "," in left:  # "Which musician, A or B, played the bass guitar?"
        right = stated.group(1)
    marks = list(COMPARISON.finditer(left))
    after = left[marks[-1].end():] if marks else ""
    parts = [p.strip(" ,:") for p in re.split(r"[,:]", after)]
    if after.strip(" ,:"):
        # "founded first, Hole, the rock band that ..., or The Wolfhounds": "Hole"; "has
        # more species, Fagus or Quercus": the counted noun comes first, then the option
        opens_on_noun = not re.match(r"\s*[,:]", after) and len(parts) > 1
        first = parts[1] if opens_on_noun else next(p for p in parts if p)
    else:
        cuts = [m.end() for m in re.finditer(r"[,:]\s*", left)]
        first = left[max(cuts, default=0):].strip(" ,:")
    if right.strip(" ,:").lower() in ("not", "no", "neither"):  # "... in X, or not?": yes/no
        return []
    return _two(first, right)


def _two(first: str, second: str) -> list[str]:
    """Two options, trimmed, without a lower-case "the" ("the Chien-gris": a draft's "The
    Chinese Crested Dog" takes "Chien-gris"); [] unless both are named and differ."""
    options = [re.sub(r"^the\s+", "", option.strip(" ,:")) for option in (first, second)]
    return options if all(options) and options[0].lower() != options[1].lower() else []


def option_ends(option: str) -> list[str]:
    """An option and its ends of two words or more, longest first ("... in Chestnut Hill,
    Massachusetts Boston College or ...?": "Boston College" is the option)."""
    words = option.split()
    return [" ".join(words[k:]) for k in range(max(len(words) - 1, 1))]


def names_option(sentence: str, option: str) -> bool:
    """Whether a draft sentence names an option: one of its ends (`option_ends`), or its last
    word alone ("... younger than Elytis" names Odysseas Elytis)."""
    return bool(_named_form(sentence, option))


def _named_form(sentence: str, option: str) -> str:
    """The words by which a sentence names an option (its longest end, else its last word
    alone), "" for none."""
    last = option.split()[-1] if option.split() else ""
    named = option_ends(option) + ([last] if len(last) > 2 and last.lower() not in STOP else [])
    return next((n for n in named if re.search(rf"(?<!\w){re.escape(n)}(?!\w)", sentence)), "")


def option_slot(question: str, sentence: str) -> list[Slot] | None:
    """A comparison answer's slot: the option the draft sentence names, by its longest end
    named once; where it names both, the one it names first, if it compares them ("Curve has
    more members than Saint Motel": `compare_slot` swaps the two), else [] ("Both A and B
    were inducted": no one value to swap); None where it names neither."""
    options = comparison_options(question)
    if options and all(names_option(sentence, option) for option in options):
        if not _compares(without_options(sentence, options)):
            return []
        form = min((_named_form(sentence, o) for o in options), key=sentence.find)
        return [Slot(kind="name", text=form, start=sentence.find(form))] \
            if _count(sentence, form) == 1 else []
    for option in options:
        named = next((end for end in option_ends(option) if _count(sentence, end)), "")
        if named and _count(sentence, named) == 1:
            return [Slot(kind="name", text=named, start=sentence.find(named))]
    return None


def answers_no_option(question: str, sentence: str) -> bool:
    """Whether a comparison answer names neither of the question's options ("It is unclear
    which was released second.") or both without ranking them ("A and B are the same age."):
    it gives no option as the answer (`choose.no_option`)."""
    options = comparison_options(question)
    named = [o for o in options if any(_count(sentence, end) for end in option_ends(o)) or
             mentions(sentence, o)]  # "Firs" names the genus Fir
    if not named and len({o.split()[-1] for o in options}) == 2:  # "... than Elytis"; not
        named = [o for o in options if names_option(sentence, o)]  # two "... Center"s
    return bool(options) and bool(sentence.strip()) and (
        not named or len(named) == 2 and not _compares(without_options(sentence, options)))


def _compares(text: str) -> bool:
    """Whether a sentence ranks two things ("than", "older", "more", "first")."""
    return bool(re.search(r"\bthan\b", text, re.IGNORECASE)) or any(
        scale.search(text) for scale in (EARLIER, LATER, MORE, FEWER))


def exchanged(sentence: str, one: str, other: str) -> str:
    """The sentence with the words naming two options swapped ("Curve has more members than
    Saint Motel." -> "Saint Motel has more members than Curve.")."""
    forms = {_named_form(sentence, one): _named_form(sentence, other)}
    forms.update({v: k for k, v in forms.items()})
    pattern = "|".join(re.escape(f) for f in sorted(forms, key=len, reverse=True))
    return re.sub(rf"(?<!\w)(?:{pattern})(?!\w)", lambda m: forms[m.group(0)], sentence)


def evidence_form(option: str, evidence: list[EvidenceSentence]) -> str:
    """The longest end of an option that an evidence sentence names word for word; the option
    itself when none does."""
    return next((end for end in option_ends(option) if any(end in s.text for s in evidence)),
                option)


def comparison_question(question: str) -> bool:
    """Whether a question asks which of two options: one that compares them ("... first, A or
    B?"), or a choice between two it names (`choice_question`)."""
    text = " ".join(question.split())
    return " or " in text and bool(COMPARISON.search(text)) or choice_question(text)


def choice_question(question: str) -> bool:
    """Whether a question asks which of two named options with no comparative word: "Is A or
    B the largest private hospital ...?" (no yes or no answers it), "Between A and B, who
    ...?", or a which-question of a statement that ends on its options (`either_question`)."""
    text = " ".join(question.split())
    return bool(re.match(r"(?:is|was|are|were|between)\s", text, re.IGNORECASE)) and \
        bool(comparison_options(text)) or either_question(text)


def either_question(question: str) -> bool:
    """Whether a which/who/what question ends on two named options of which a statement holds
    ("Which documentary is about Finnish rock groups, A or B?", "Which director is American, A
    or B?"), with no word that compares or ranks them: the evidence says which option it is
    true of, a reading the chooser can do (`choose.either`), unlike a ranking by dates or sizes
    (`choose.compare`)."""
    text = " ".join(question.split())
    if not re.match(r"(?:which|who|whom|what)\b", text, re.IGNORECASE) or \
            COMPARISON.search(text):
        return False
    if any(m.group(0).lower() not in _NOT_ORDERING for m in _ORDERING.finditer(text)):
        return False
    options = comparison_options(text)
    # "Which musician, A or B, played bass?" stays a person question, read as one: no default
    # rule decides which of two options a statement holds for (`choose.stated_option` is off)
    return len(options) == 2 and text.rstrip("? ").endswith(options[1]) and all(
        "," not in o and 0 < len(o.split()) <= EITHER_WORDS for o in options)


def mentions(text: str, option: str, rival: str = "") -> bool:
    """Whether a sentence names an option: its words in a row, accents and case aside, or
    every word of a name of two words or more ("Anna Kournikova" in "Anna Sergeyevna
    Kournikova", "The Love Bug" in "Love Bug"), function words aside; a one-word option
    also in its plural ("Fir" in "Firs (Abies) are a genus of 48-56 species"). A name's
    first word may stand for a given name it shortens (`rules.names.short_given`: "Ken Loach"
    in "Kenneth Charles Loach", "Mike Tyson" in "Michael Gerard Tyson"), and, given the
    `rival` option, the words the two names share may be left out ("Camlaren Mine" in
    "... development at Camlaren", against "Barton Mine"): a passage names an option as
    its article does, not as the question does."""
    said, named = f" {normalise(text, fold=True)} ", normalise(option, fold=True)
    ends = ("",) if " " in named else ("", "s", "es")
    if named and any(f" {named}{end} " in said for end in ends):
        return True
    words = [w for w in named.split() if w not in STOP]
    if len(words) > 1 and all(f" {w} " in said for w in words[1:]) and (
            f" {words[0]} " in said or any(short_given(words[0], w) for w in said.split())):
        return True
    shared = set(normalise(rival, fold=True).split()) - _LINKS
    own = [w for w in named.split() if w not in shared and w not in STOP]
    return bool(own) and bool(shared & set(named.split())) and \
        all(f" {w} " in said for w in own)


def without_options(question: str, options: list[str]) -> str:
    """The question without its options' names: "First for Women" names an option, it asks
    no order; "Taller Tales" asks no height."""
    for option in options:
        question = question.replace(option, " ")
    return question
