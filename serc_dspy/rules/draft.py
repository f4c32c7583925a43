"""Drafts: how a caller's draft enters the decoder."""

from __future__ import annotations

import re

from serc_dspy.core.text import normalise, split_sentences
from serc_dspy.rules.answers import (
    _FINITE,
    ANSWER_SENTENCE_WORDS,
    SHORT_PHRASE_WORDS,
    WANTED,
    one_sentence,
)
from serc_dspy.rules.base import Rule, register
from serc_dspy.rules.questions import question_kind
from serc_dspy.rules.shared import shared_question
from serc_dspy.rules.slots import _NUMBER_WORDS, spans
from serc_dspy.rules.two_options import comparison_options
from serc_dspy.rules.words import content_stems, stated_negations

SAYS_MORE_WORDS = 5
"""Words at least in a draft that `draft.says_more` reads as a sentence, not a bare value
("Tsim Sha Tsui, Hong Kong" is a value; HaluEval's right answers are rarely longer)."""
PREMISE_EXTRA_WORDS = 1
"""Content words at most that a premise denial (`draft.denies_premise`) says beyond the
question's own ("The Oberoi family is not involved in any hotel company.": "involved")."""
_DIFFER = re.compile(r"\b(?:different|differ|differs)\b")
"""What denies the premise of a question asking what two things have in common ("A and B
play completely different genres.")."""
NO_VALUE_WORDS = 3
"""Words at least in a draft that `draft.no_value` reads as a sentence around a value, not a
value ("II", "Ten weeks." are values of a sort)."""
NO_VALUE_KINDS = ("person", "place", "date", "number")
"""The question kinds whose value a sentence either states or does not (a name, a date or a
year, a number); another question's answer may be any phrase."""
_AMOUNT_WORDS = re.compile(r"\b(?:" + "|".join(_NUMBER_WORDS) + r"|dozens?|hundreds?|"
                           r"thousands?|millions?|billions?|trillions?|once|twice|thrice)\b",
                           re.IGNORECASE)
"""Number words a sentence may state its count in ("a trillion dollars", "Ten weeks.": a
capitalised one is read as a name's first word by `spans`)."""
_COMMON_TYPE = re.compile(r"\b(?:what|which)\s+(?:[\w-]+\s+){0,2}?(?:genres?|types?|kinds?|sorts?|"
                          r"professions?|occupations?|positions?|sports?|roles?|styles?)\b",
                          re.IGNORECASE)
"""The types a question asks for whose values are common nouns ("Which genre ...?": rock),
which `draft.no_name` does not read as names."""
SAYS_MORE_KINDS = ("person", "place", "date", "number")
"""The question kinds whose answer slot is a value of the asked kind, so that its support
says the asked value is right. Another question's slot may be any name in the draft ("Judy
Woodruff hosted The Ellen Show." to "... an anchor of what show?": the host, supported), and
a comparison's or yes/no answer is read whole."""

register(
    Rule("draft.short_claim", "a caller's draft too short to read as prose (\"Ulster "
         "County\") is checked as one claim answering the question, never replaced by the "
         "cold start", "on HaluEval, with the right answer as the draft, the cold start "
         "replaced every short right answer, and 3 of 8 came back wrong"),
    Rule("draft.answer_sentence", "a caller's draft of one short sentence (at most 25 words) "
         "that states a value of the kind the question asks for (\"... was won by a driver who "
         "retired in 1980.\" to \"... retired in what year?\") is checked as a short answer: "
         "that value is its one slot, with the evidence's values of that kind as options",
         "HaluEval's sentence answers went through the prose path (the firewall, the fact "
         "extractor, every detail a slot), which checked the details the question had given "
         "and left the asked value alone", english_only=True,
         thresholds={"answer_sentence_words": ANSWER_SENTENCE_WORDS},
         found_on="HaluEval tuning items 11, 26, 29"),
    Rule("draft.read_sentence", "a caller's draft of one short sentence (at most 25 words) "
         "that `draft.answer_sentence` does not take, to a question that is neither a "
         "comparison nor a yes/no question, is read against the question's evidence (the "
         "reading of `choose.read_answer`, one call): where a passage holds the reading and "
         "the draft has exactly one detail of the reading's kind that the question does not "
         "name, the draft is checked as a short answer with that detail as its one slot and "
         "the reading among its options",
         "one-sentence drafts whose value is a title, a name or a count the question's type "
         "word does not give away went through the prose path, which checks the details the "
         "question names and left the answer alone (11 of the unfixed HaluEval extra tuning "
         "answers 1-60 were such drafts)", english_only=True,
         thresholds={"answer_sentence_words": ANSWER_SENTENCE_WORDS},
         found_on="HaluEval extra tuning items 15, 49, 52, 64"),
    Rule("draft.shared_sentence", "a caller's draft of one short sentence (at most 25 words) "
         "to a question of what two named things have in common (\"Rhodochiton and "
         "Platystemon are both genuses of what kind of life form?\") is checked as a short "
         "answer, so that `choose.shared_value` decides it by the kinds both openings give; "
         "where that rule finds no shared kind, it is decoded as prose as before "
         "(`draft.sentence_as_prose`)", "`choose.shared_value` reached bare answers only: the "
         "sentence \"Rhodochiton and Platystemon are both insect species.\" took the prose "
         "path, which checked its names and kept the insects", english_only=True,
         thresholds={"answer_sentence_words": ANSWER_SENTENCE_WORDS},
         found_on="HaluEval extra tuning item 371"),
    Rule("draft.yes_no_sentence", "a caller's draft of one short sentence (at most 25 "
         "words) to a yes/no question of whether two named things are both P or share a "
         "value (\"Are A and B both plants?\", \"Were A and B released in the same year?\") "
         "is checked as a short answer, so that `choose.both`, `choose.same_value` and "
         "`choose.both_not` read its yes or no from the passages; where they correct it, "
         "the answer is theirs (\"Yes, A and B are both plants.\"); where they decide "
         "nothing or find its yes supported (they check the yes, not the rest of the "
         "sentence), it is decoded as prose as before (`draft.sentence_as_prose`)",
         "such sentences (\"Calochone is a flowering plant, but Adlumia is not.\") took the "
         "prose path, which checks their names and never their yes or no; the same draft "
         "in fewer words was answered from the passages", english_only=True,
         thresholds={"answer_sentence_words": ANSWER_SENTENCE_WORDS},
         found_on="HaluEval multi-turn tuning items 68, 244"),
    Rule("draft.sentence_as_prose", "a sentence answer (`draft.answer_sentence`, "
         "`draft.read_sentence`, `draft.shared_sentence` or `draft.yes_no_sentence`) whose "
         "value "
         "the slot check neither supported nor corrected (the two orders disagree, no rival, "
         "a rival held back) is decoded again as prose (off: it is kept, unverified)",
         "alone, the sentence check fixed 2 of HaluEval's report-split sentence answers that "
         "the prose path had not, and left open 6 that the prose path's rewrites had fixed"),
    Rule("draft.says_more", "a one-sentence caller draft (at least `says_more_words` words "
         "closing on a full stop) answering a person, place, date or number question, whose "
         "answer value the slot check supported, and which states more than that value and "
         "the question's own words (\"Martha Coolidge, a Canadian director with over 50 years "
         "of experience in the film industry.\"), is decoded again as prose: the slot check "
         "verified only the value. The firewall passes it: the evidence states its value, so "
         "it is about the evidence's entity (a reset threw a supported birth date away for a "
         "wrong name on multi-turn tuning draft 108)",
         "a hallucinated answer often names the right value and says something false of it; "
         "the slot check supported the value and printed the falsehood (6 of the 160 "
         "HaluEval extra tuning answers 1-160, 4 of them to person questions)",
         english_only=True, thresholds={"says_more_words": SAYS_MORE_WORDS},
         found_on="HaluEval extra tuning items 61, 86, 118, 151"),
    Rule("draft.denies_premise", "a one-sentence draft that answers a question which is "
         "neither a yes/no question nor a comparison by denying its premise (a negation, or "
         "\"different\" to a question of what two things have in common, and "
         "at most `premise_extra_words` content word beyond the question's own: \"Warren "
         "Bryant was not a CEO.\" to \"Which state are the drug stores of which the CEO is "
         "Warren Bryant located in?\") is a refusal: it is replaced by an answer grounded in "
         "the question's passages and decoded as the cold start's; where that answer refuses, "
         "denies too or says only the question's words, the draft is kept and decoded as "
         "before",
         "a draft that only denies the question's premise states no value to check or choose: "
         "the checks found nothing to correct and kept it (4 of the 35 unfixed HaluEval "
         "multi-turn tuning drafts 1-64, comparisons aside)", english_only=True,
         thresholds={"premise_extra_words": PREMISE_EXTRA_WORDS},
         found_on="HaluEval multi-turn tuning drafts 2, 21, 38"),
    Rule("draft.no_value", "a one-sentence draft of `no_value_words` words or more to a "
         "person, place, date or number question that names no two options, and that states "
         "no value of the asked kind beyond the question's own "
         "(no name to \"who\" or \"where\", no date or year to \"when\", no number in "
         "figures or words to \"how many\": \"The school teachers funded the bowling team.\") "
         "answers nothing: it is replaced by an answer grounded in the question's passages "
         "and decoded as the cold start's, as `draft.denies_premise` does; where that answer "
         "refuses, denies, states no such value either or only the question's words, the "
         "draft is kept",
         "a sentence without the asked value gives the slot checks nothing to choose against: "
         "they kept it (47 of the 874 HaluEval tuning drafts state none, 7 of them premise "
         "denials, and none of the right answers do)", english_only=True,
         thresholds={"no_value_words": NO_VALUE_WORDS},
         found_on="HaluEval multi-turn tuning drafts 52, 74, 78"),
    Rule("draft.no_name", "a one-sentence draft of `no_value_words` words or more to a "
         "question of no kind the rules type (\"In what show ...?\", \"Which court case "
         "...?\"), naming no two options, asking for no shared value and no common-noun type "
         "(genre, type, kind, profession, position, sport, role, style), that states no name, "
         "number or date beyond the question's own (\"... for her performance in a popular "
         "romantic comedy series.\") answers nothing: it is replaced by an answer grounded in "
         "the question's passages, as `draft.no_value` does for the typed kinds; where that "
         "answer refuses, denies, states no name, number or date either or only the "
         "question's words, the draft is kept",
         "such a sentence gives the slot checks nothing to choose against, and they kept it "
         "(59 of the 874 HaluEval tuning drafts, 44 of them where the right answer is a name, "
         "and none of the right answers)", english_only=True,
         thresholds={"no_value_words": NO_VALUE_WORDS},
         found_on="HaluEval multi-turn tuning drafts 54, 269, 274"),
    Rule("draft.cold_start", "the model's own first answer, a refusal or under 50 characters "
         "of text, is replaced by an answer grounded in the question's passages before it is "
         "decoded (off: it is decoded as it stands)", "the paper's source dropout: too short an "
         "answer has no facts to check, and a refusal none to correct"),
    Rule("draft.no_info", "a refusal or an empty answer that the cold start could not ground "
         "(no passages, or a grounded answer that refuses too) becomes the no-information "
         "answer, status no_info (off: the refusal is returned as it stands, still no_info)",
         "an empty or refusing answer is no correction of anything; the paper answers "
         "\"no information\" in its place"),
)


def answer_claim(question: str, answer: str) -> str:
    """A short answer as the statement it makes: "Ulster County" to "Which county is New
    Paltz in?" claims that the answer to that question is Ulster County."""
    return f'The answer to the question "{question.strip()}" is {answer.strip().rstrip(".")}.'


CLAIM_WRAPPER = "the answer to the question"


def claim_value(question: str, text: str, form: str) -> str | None:
    """The value an `answer_claim` states, written in the caller's `form` (a bare "Kraków"
    stays bare, "Kraków." keeps its stop); `text` itself when it wears no wrapper; None when
    the wrapper is there but mangled, so no wrapper ever reaches the caller."""
    prefix = f'The answer to the question "{question.strip()}" is '
    body = text.strip()
    if body.lower().startswith(prefix.lower()):
        body = body[len(prefix):].strip()
        body = body[:-1] if body.endswith(".") else body
        if not form.strip().endswith("."):
            return body
        return body + "."
    return None if CLAIM_WRAPPER in body.lower() or question.strip() in body else body


def says_more(question: str, draft: str, values: list[str]) -> bool:
    """`draft.says_more`: whether a one-sentence draft states content words beyond its
    answer `values` and the question's own words, in a sentence of `SAYS_MORE_WORDS` words
    or more that closes on a full stop, to a question of one of `SAYS_MORE_KINDS`."""
    if len(draft.split()) < SAYS_MORE_WORDS or not draft.rstrip().endswith((".", "!")) or \
            question_kind(question) not in SAYS_MORE_KINDS:
        return False  # a bare value ("alternative rock virtual band Gorillaz") says no more
    said = set().union(*(content_stems(v) for v in values)) | content_stems(question)
    return bool(content_stems(draft) - said)


def denies_premise(question: str, draft: str) -> bool:
    """`draft.denies_premise`: whether a one-sentence draft to a question that is neither a
    yes/no question nor a comparison (whose negated answer names the other option by
    elimination: "A is not in Massachusetts.") negates, opens on no "no", and says at most
    `PREMISE_EXTRA_WORDS` content words beyond the question's own: all it states is that the
    premise is false. To a question asking what two things have in common, "different" is
    such a negation."""
    text = (draft or "").strip()
    found = stated_negations(text) | (set(_DIFFER.findall(text.lower()))
                                      if shared_question(question) else set())
    if not found or question_kind(question) in ("yes/no", "comparison") or \
            text.lower().startswith("no") or len(split_sentences(text)) != 1:
        return False
    said = content_stems(text) - content_stems(" ".join(found))
    return len(said - content_stems(question)) <= PREMISE_EXTRA_WORDS


_KIND_OF = re.compile(r"\b(?:an?)\s+(?:[a-z]+\s+)?$", re.IGNORECASE)
"""An indefinite article before a capitalised word makes it a kind of thing, not someone's
name: "is an Ohioan", "starred an Irish actor" (multi-turn tuning drafts 272 and 49 named no
one); "the" does not ("the American Chemical Society")."""


SAYS_NOTHING = {"draft.denies_premise": "the draft only denies the question's premise",
                "draft.no_value": "the draft states no value of the kind the question asks for",
                "draft.no_name": "the draft states no name, number or date beyond the "
                                 "question's own"}
"""Why each rule replaced a draft with an answer grounded in the question's passages."""
_A_KIND_OF = re.compile(r"\b(?:a|an)\s+(?:[a-z]+\s+)?$")
"""`_KIND_OF` in lower case (a title may open on "A": "A Mother's Gift"), for one word: "a
British publisher" names a kind, "a Nobel Prize" a prize."""
_WH_THING = re.compile(r"\b(?:what|which)\b", re.IGNORECASE)
"""A question that asks for a thing: "Tell me a bio of ..." asks for no one value."""


def states_no_name(question: str, draft: str) -> bool:
    """`draft.no_name`: whether a one-sentence draft of `NO_VALUE_WORDS` words or more, to a
    question of no kind `question_kind` knows ("In what show ...?", "Which court case ...?")
    that names no two options, asks for no shared value and no common-noun type ("Which
    genre ...?"), states no name, number or date that the question does not name itself:
    "... for her performance in a popular romantic comedy series." (a capitalised word after
    "a" or "an" is a kind: "a British publisher")."""
    text = " ".join((draft or "").split())
    if question_kind(question) != "other" or not _WH_THING.search(question) or \
            not one_sentence(text) or \
            len(text.split()) < NO_VALUE_WORDS or comparison_options(question) or \
            shared_question(question) or _COMMON_TYPE.search(question) or \
            _AMOUNT_WORDS.search(text) or \
            len(text.split()) <= SHORT_PHRASE_WORDS and not _FINITE.search(text):
        return False  # (a short phrase with no verb is a value of a sort: "oil of vitriol")
    asked = f" {normalise(question, fold=True)} "
    return not any(s.kind in ("name", "number", "date", "year") and
                   f" {normalise(s.text, fold=True)} " not in asked and
                   not (_A_KIND_OF.search(text[:s.start]) and " " not in s.text)
                   for s in spans(text))


def adds_nothing(question: str, answer: str) -> bool:
    """Whether an answer's content words are all the question's own ("The Libertine" to "What
    television series did the actor ... in The Libertine star in?"): it answers nothing, so a
    grounded answer saying only this does not replace a caller's draft."""
    return content_stems(answer) <= content_stems(question)


def states_no_value(question: str, draft: str) -> bool:
    """`draft.no_value`: whether a one-sentence draft of `NO_VALUE_WORDS` words or more, to a
    question of one of `NO_VALUE_KINDS`, states no value of the asked kind that the question
    does not name itself (`gives_no_value`): "The school teachers funded the bowling team.",
    "Alf Clausen composed the theme." to "In what year was ... born?"."""
    text = " ".join((draft or "").split())
    return one_sentence(text) and len(text.split()) >= NO_VALUE_WORDS and \
        gives_no_value(question, text)


def gives_no_value(question: str, answer: str) -> bool:
    """Whether an answer of any length, to a question of one of `NO_VALUE_KINDS` that names no
    two options, states no value of the asked kind that the question does not name itself:
    no name to "who" or "where", no date or year to "when", no number (in figures or words)
    to "how many". A grounded answer that gives none ("Merimbula" to "... had what
    population?") replaces no caller's draft."""
    text, kind = " ".join((answer or "").split()), question_kind(question)
    if kind not in NO_VALUE_KINDS or comparison_options(question):
        return False  # "Which musician, A or B, ...?": a draft naming A answers with an option
    if kind == "number" and _AMOUNT_WORDS.search(text):
        return False
    asked = f" {normalise(question, fold=True)} "
    return not any(s.kind in WANTED[kind] and f" {normalise(s.text, fold=True)} " not in asked
                   and not (kind == "person" and _KIND_OF.search(text[:s.start]))
                   for s in spans(text))
