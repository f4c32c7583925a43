"""Short answers: a caller's short draft is one slot per part, of the kind the question asks
for, and its candidates are the evidence's values of that kind (or the two names a comparison
question offers). The slot machinery itself is `rules.slots`."""

from __future__ import annotations

import re
import unicodedata

from serc_dspy.core.text import normalise, split_sentences
from serc_dspy.core.trace import Candidate, Slot
from serc_dspy.rules.base import Rule, RuleSwitch, register
from serc_dspy.rules.nationalities import asks_nationality, is_nationality, stated_nationalities
from serc_dspy.rules.people import asked_gender, full_name, opens_person_name, other_gender
from serc_dspy.rules.places import asked_place, is_asked_place
from serc_dspy.rules.questions import closes_with, head_noun, question_kind, titled
from serc_dspy.rules.ranking import rank_by_question
from serc_dspy.rules.rivals import sentence_of
from serc_dspy.rules.slots import (
    _YEAR,
    MAX_CANDIDATES,
    NOT_STATED,
    EvidenceSentence,
    Span,
    _count,
    _offer,
    normal_form,
    spans,
)
from serc_dspy.rules.titles import is_quoted_title, quoted, quoted_titles, titled_value
from serc_dspy.rules.two_options import (
    answers_no_option,
    comparison_options,
    evidence_form,
    option_ends,
    option_slot,
)
from serc_dspy.rules.words import STOP, content_stems, words_of

SHORT_PHRASE_WORDS = 6
"""A short draft sentence of at most this many words is one value ("Mike's Gym in Oostzaan")."""
ANSWER_SENTENCE_WORDS = 25
"""A caller's one-sentence draft of at most this many words can be an answer to the question
(`answer_sentence`): HaluEval's sentence answers run 7 to 26 words, while Factcheck-Bench's
one-sentence answers, lists of things, run 27 to 55."""
RANK_POOL = 40
"""Evidence values gathered for `choose.asked_rank` to rank before the option cap."""
POOLED_MARGIN = 0.25
"""The pooled probability by which one value must lead the next for `choose.pooled` to decide
a short answer whose two orders disagree (set on HaluEval's tuning items 1-30)."""
WANTED = {"date": ("date", "year"), "number": ("number",), "place": ("name",),
           "person": ("name",)}
"""The span kinds that answer each kind of question."""


def _every_rule(rule: str) -> bool:
    return True


register(
    Rule("choose.asked_place", "a short answer to a place question (\"Where ...\", \"... in "
         "which country?\") is the draft's place name, where it has one, and its options are "
         "the evidence's names of places of the asked kind (a country for \"which country\"), "
         "as the gazetteers (GeoNames, ISO 3166-2) know them, sought through every evidence "
         "sentence", "the options of a place question were every name of the sentences nearest "
         "the question: a park's Turkish name and a language for \"which country\", a chain's "
         "name and its owner before the state it trades in", english_only=True,
         found_on="HaluEval tuning items 5, 26"),
    Rule("choose.asked_nationality", "a short answer to a question of nationality (\"What "
         "nationality was ...?\") is the draft's nationality word, the last one the question "
         "does not name (\"Jauja is a Spanish historical drama.\": Spanish; \"Patti Smith is "
         "Irish-American.\": Irish-American), and its options are the evidence's nationality "
         "words (`rules.nationalities`: their endings, no given name)", "the slot was the "
         "draft's first name (\"Jauja\", \"Patti Smith\"), so that the nationality the "
         "model chose in both orders (\"Argentine\", \"American\") was held back by "
         "`choose.own_stated` or had nothing to replace", english_only=True,
         found_on="HaluEval extra tuning items 140, 200; multi-turn tuning item 170"),
    Rule("choose.asked_person", "a short answer to a person question (\"Who ...\", \"What "
         "author ...\") is offered the evidence's full names: two words or more, opening with "
         "a given name (gender-guesser's list), an initial or an honorific, not a title the "
         "evidence quotes, not a place", "ranked by the question's words, a person "
         "question's options were a nationality, a film company and a quoted magazine, which "
         "was chosen in both orders", english_only=True,
         found_on="HaluEval tuning items 8, 19"),
    Rule("choose.third_order", "a short answer whose two option orders chose different values "
         "is asked once more, its values turned by half; the value two of the three orders "
         "chose stands as if both had chosen it, every guard still applying, else the answer "
         "stays unverified (with three values or more; two values have no third order)",
         "the two orders disagreed on a quarter of HaluEval's hallucinated answers, often "
         "between the right value and a value at the first position (off by default: on the "
         "tuning items the third order sided with a wrong value 4 times in 5, swapping one "
         "wrong answer for another twice and held back by `choose.own_stated` twice)",
         default=False, found_on="HaluEval tuning items 2, 12, 25"),
    Rule("choose.asked_gender", "a person question whose first gendered word (he, his, she, "
         "her, actress, woman, ...) says the answer is a man or a woman is not offered full "
         "names whose given name is, by gender-guesser's list, only ever the other gender's",
         "\"... sang a duet with her ex-husband\" was offered the husband, and the two orders "
         "split between him and the singer", english_only=True,
         found_on="HaluEval tuning item 12"),
    Rule("choose.off_type", "a short answer to a person question whose value is no person's "
         "name (two words or more, the first no given name, initial or honorific; or a name "
         "the answer puts after \"the\") is not held "
         "by `choose.own_stated` against a rival chosen in both orders when every rival offered "
         "is a full name: the evidence states the value, but not as who was asked for",
         "a kickboxer question answered with his gym (\"Mike's Gym in Oostzaan\"), which the "
         "evidence names, kept the right fighter out", english_only=True,
         found_on="HaluEval tuning item 2"),
    Rule("choose.pooled", "a short answer whose two option orders chose different values is "
         "decided by the values' probabilities (the option letters' log-probabilities, where "
         "the backend returns them), averaged over both orders: a value that leads every other "
         "by `pooled_margin` stands as if both orders had chosen it, every guard still "
         "applying; else the answer stays unverified (and `choose.third_order`, when on, asks "
         "again)", "the two orders split on 4 of HaluEval's 30 tuning hallucinated answers and "
         "5 right ones; a third order had sided with a wrong value 4 times in 5, while the "
         "letters' "
         "probabilities say how close each value came in both orders at no extra call",
         thresholds={"pooled_margin": POOLED_MARGIN}, found_on="HaluEval tuning items 2, 12, 26"),
)


def answer_slots(question: str, sentence: str, on: RuleSwitch = _every_rule) -> list[Slot]:
    """A short draft's slot: the detail of the question's kind in the draft ("Warsaw. Born
    1868.": each part is its own draft sentence, and its own slot), else the draft sentence
    itself, without its final stop."""
    kind = question_kind(question)
    wanted = WANTED.get(kind, ())
    if kind == "comparison" and on("choose.no_option") and answers_no_option(question, sentence):
        whole = sentence.strip()  # no option to swap: the whole answer is the slot
        return [Slot(kind="sentence", text=whole, start=sentence.find(whole))]
    if kind == "comparison" and (named := option_slot(question, sentence)) is not None:
        return named
    if kind == "yes/no":
        return []  # "yes" or "no" is in no passage: nothing to choose from the evidence
    if on("choose.asked_nationality") and asks_nationality(question) and \
            (stated := stated_nationalities(question, sentence)):
        word, at = stated[-1]  # "Jauja is a Spanish drama.": Spanish
        return [Slot(kind="name", text=word, start=at)]
    noun = titled(question) if on("choose.asked_type") else ""
    closing = answer_spans(question, sentence, lambda s: s.kind == "name" and
                           closes_with(s.text, noun)) if noun else []
    if closing:  # "What book ...?" answered "... the Canterbury Book": the "... Book"
        return [Slot(kind="name", text=closing[0].text, start=closing[0].start)]
    found = answer_spans(question, sentence, lambda s: s.kind in wanted)
    if kind == "place" and on("choose.asked_place"):  # "Greece, the birthplace of ...": Greece
        # then a name after "in", "on", "at", "from" ("Kyuss was formed on Mars": Mars)
        found.sort(key=lambda s: (not is_asked_place(s.text, ""), not _LOCATIVE.search(
            sentence[:s.start])))
    whole = sentence.strip().rstrip(".!")
    clause = bool(_FINITE.search(whole))  # "Polaris is based in Michigan": no one value
    if found and (kind in ("date", "number") or len(whole.split()) > SHORT_PHRASE_WORDS or
                  clause or _restates(question, sentence)):
        return [Slot(kind=found[0].kind, text=found[0].text, start=found[0].start)]
    other = sorted(answer_spans(question, sentence, lambda s: True),  # a name before a role:
                   key=lambda s: s.kind == "role")  # '"Family Guy" was the show that ...'
    title = _title(whole)
    if not found and other and not title:  # "Born 1868." answering where and when: the year
        return [Slot(kind=other[0].kind, text=other[0].text, start=other[0].start)]
    if title and _count(sentence, title) == 1:  # "Sex and the City" is one title, not two
        return [Slot(kind="name", text=title, start=sentence.find(title))]
    if whole and _count(sentence, whole) == 1 and len(whole.split()) <= SHORT_PHRASE_WORDS \
            and not clause:
        span_kind = "year" if _YEAR.fullmatch(whole) else "name"
        bare = re.sub(r"^(?:The|the)\s+(?=\S)", "", whole)  # "The Babylonians": the
        return [Slot(kind=span_kind, text=bare,  # article stays, the name is swapped
                     start=sentence.find(whole) + len(whole) - len(bare))]
    return []


_LOCATIVE = re.compile(r"\b(?:in|on|at|from|near)\s+(?:the\s+)?$", re.IGNORECASE)
"""The word before a name that makes it where something is or was."""
_FINITE = re.compile(r"\b(?:is|are|was|were|has|have|had|been|[a-z]{3,}ed)\b")
"""A verb that makes a short draft a clause around its value, not the value itself."""
_TITLE_LINKS = frozenset("a an and at by for from in of on or the to with".split())


def _title(phrase: str) -> str:
    """A short phrase that is one title whose lower-case words split its name spans ("Sex and
    the City", "Gone with the Wind"), without a leading "The"; "" for any other phrase."""
    words = phrase.split()
    if words and words[0] in ("The", "A", "An"):
        words = words[1:]
    capital = [w[:1].isupper() for w in words]
    if len(words) > SHORT_PHRASE_WORDS or sum(capital) < 2 or not capital[0] or \
            not capital[-1] or all(capital):
        return ""
    linked = all(c or w in _TITLE_LINKS for w, c in zip(words, capital, strict=True))
    return " ".join(words) if linked else ""


def one_sentence(draft: str) -> bool:
    """Whether a draft is one sentence of at most `ANSWER_SENTENCE_WORDS` words."""
    words = draft.split()
    return 0 < len(words) <= ANSWER_SENTENCE_WORDS and len(split_sentences(" ".join(words))) == 1


def answer_sentence(question: str, draft: str, on: RuleSwitch = _every_rule) -> bool:
    """Whether a caller's draft is one short sentence (`one_sentence`) stating a value of the
    asked kind (a date, number, place, person, name ending in the asked type word, one of a
    comparison's two options, a yes or no) that the question does not name: its answer ("...
    won by a driver who retired in 1980."), checked as a short answer is, not as prose."""
    text, kind = " ".join(draft.split()), question_kind(question)
    if not one_sentence(text):
        return False
    if kind == "comparison":
        return sum(any(_count(text, end) for end in option_ends(option))
                   for option in comparison_options(question)) == 1
    if kind == "yes/no":  # "Yes, both were golfers.": its answer is its first word
        return bool(re.match(r"\W*(?:yes|no)\b", text, re.IGNORECASE))
    wanted, noun = WANTED.get(kind, ()), titled(question)
    asked = f" {normalise(question, fold=True)} "
    if on("choose.asked_nationality") and asks_nationality(question) and \
            stated_nationalities(question, text):
        return True
    return any((s.kind in wanted or noun and s.kind == "name" and closes_with(s.text, noun))
               and f" {normalise(s.text, fold=True)} " not in asked for s in spans(text))


def answer_spans(question: str, sentence: str, wanted) -> list[Span]:
    """The draft's detail spans that could be its answer, best first: once in the sentence;
    not a value the question itself names ("Lee Jun-fan played ..." answering "Lee Jun-fan
    played what character?" restates the question), unless every span is; a quoted title
    after an unquoted value ("The duet "Golden Ring" was sung by Loretta Lynn" answers
    who)."""
    found = [s for s in spans(sentence) if wanted(s) and _count(sentence, s.text) == 1]
    asked = f" {normalise(question, fold=True)} "
    new = [s for s in found if f" {normalise(s.text, fold=True)} " not in asked]
    verb = _before_wh(question)
    if not new and verb:  # every span is the question's: the one where its wh-word stands
        new = [s for s in found if re.search(  # ("played what?")
            rf"\b{re.escape(verb)}\s+(?:(?:the|a|an)\s+)?$", sentence[:s.start], re.I)]
    found = new or found
    # "starred along what actress?": the span after "along with", not an award named before it
    return sorted(found, key=lambda s: (
        quoted(sentence, s), not (verb and _follows(sentence, s, verb))))


def _follows(sentence: str, span: Span, word: str) -> bool:
    """Whether a span stands right after a word, one other word and an article allowed in
    between ("starred along with the ..." for "along")."""
    return bool(re.search(rf"\b{re.escape(word)}\s+(?:\w+\s+)?(?:(?:the|a|an)\s+)?$",
                          sentence[:span.start], re.IGNORECASE))


def _before_wh(question: str) -> str:
    """The word right before a wh-word inside a question ("Lee Jun-fan played what character
    ...?": played), where the answer stands in a sentence that restates it; "" for none."""
    found = re.search(r"\b([^\W\d_]+)\s+(?:what|which|whom|who)\b", question, re.IGNORECASE)
    return found.group(1) if found and found.group(1).lower() not in STOP else ""


def _restates(question: str, sentence: str) -> bool:
    """Whether a short draft restates a name of the question ("Dysteleology is associated
    with Orwell."): a sentence around its answer, not one value."""
    asked = f" {normalise(question, fold=True)} "
    return any(f" {normalise(s.text, fold=True)} " in asked for s in spans(sentence)
               if s.kind == "name")


def answer_candidates(question: str, slot: Slot, evidence: list[EvidenceSentence],
                      on: RuleSwitch = _every_rule, sentence: str = "") -> list[Candidate]:
    """A short answer's options: for a comparison, the two options the question names (each
    must stand in the evidence); for a title the draft (`sentence`) quotes, the evidence's
    quoted titles; otherwise the values of the slot's kind in the evidence sentences that
    share most words with the question; then "not stated"."""
    options = [Candidate(value=slot.text, origin="fact")]
    seen = {normal_form(slot.kind, slot.text)}
    if question_kind(question) == "comparison" and comparison_options(question):
        for option in comparison_options(question):
            # "... in Chestnut Hill, Massachusetts Boston College or ...": the option is the
            # longest end of its words that the evidence names
            value = evidence_form(option, evidence)
            key = normal_form(slot.kind, value)
            found = next(((s, s.text.find(value)) for s in evidence if value in s.text),
                         None)
            if key in seen or found is None:
                continue
            seen.add(key)
            sentence, at = found
            options.append(Candidate(value=value, passage=sentence.passage,
                                     offset=sentence.offset + at, context=value))
        options.append(Candidate(value=NOT_STATED, origin="none"))
        return options
    in_question = normalise(question, fold=True)
    own_words = {w.lower() for w in words_of(slot.text)}
    own_script = _scripts(slot.text)

    def new_value(sentence, span, value) -> bool:
        """Not named by the question, in the draft's script (no Cyrillic spelling for a Latin
        name), and not another form of the draft's own name ("Zvereva", "Natasha Zvereva")."""
        value_words = {w.lower() for w in words_of(value)}
        return normalise(value, fold=True) not in in_question and \
            _scripts(value) <= own_script and not (
                slot.kind == "name" and (value_words <= own_words or own_words <= value_words))

    # the evidence sentences that share most words with the question, the likeliest first
    # (in the passages' order, the cap filled up before a bio's own sentence was reached)
    words = content_stems(question)
    ranked = sorted(evidence, key=lambda s: -len(words & content_stems(s.text)))
    rank = on("choose.asked_rank")

    def offer(sentences: list[EvidenceSentence], fits) -> list[Candidate]:
        """`_offer`, or (`choose.asked_rank`) every fitting value ranked by the question; a
        quoted title's value with its article."""
        offered = rank_by_question(question, _offer(slot, sentences, fits, cap=RANK_POOL),
                                   evidence, MAX_CANDIDATES - 2) if rank else \
            _offer(slot, sentences, fits)
        for c in offered:
            at = sentence_of(c, evidence) if c.origin == "evidence" else None
            if at is not None and (titled := titled_value(at.text, c.value)) != c.value:
                c.value, c.offset = titled, (c.offset or 0) - len(titled) + len(c.value)
        return offered

    if sentence and on("choose.quoted_title") and \
            quoted(sentence, Span(slot.kind, slot.text, slot.start)):
        offered = quoted_titles(slot, ranked, lambda value: new_value(None, None, value))
        if any(c.origin == "evidence" for c in offered):
            return offered
    if on("choose.asked_nationality") and asks_nationality(question) and \
            is_nationality(slot.text):
        # "Irish-American" and "American" are two answers, not two forms of one name
        offered = offer(ranked, lambda sentence, span, value: is_nationality(value) and
                        normal_form("name", value) not in seen and
                        normalise(value, fold=True) not in in_question)
        if any(c.origin == "evidence" for c in offered):
            return offered
    noun = titled(question) if on("choose.asked_type") else ""
    kind = question_kind(question)
    if slot.kind == "name" and not noun and (
            kind == "place" and on("choose.asked_place") or
            kind == "person" and on("choose.asked_person")):
        # a place question is answered by a place of the asked kind, a person question by a
        # full name, wherever the evidence names one
        place = asked_place(head_noun(question))
        gender = asked_gender(question) if on("choose.asked_gender") else None

        def of_kind(sentence: EvidenceSentence, span: Span, value: str) -> bool:
            if kind == "place":
                return is_asked_place(value, place)
            return full_name(sentence.text, span) and not other_gender(value, gender)
        offered = offer(ranked, lambda sentence, span, value: new_value(
            sentence, span, value) and of_kind(sentence, span, value))
        if any(c.origin == "evidence" for c in offered):
            return offered
    if noun and slot.kind == "name":
        # the asked type closes its names: only "... County"s answer "which county?", and
        # they are sought through every evidence sentence
        offered = offer(ranked, lambda sentence, span, value: new_value(
            sentence, span, value) and closes_with(value, noun))
        if any(c.origin == "evidence" for c in offered):
            return offered
    sharing = [s for s in ranked if words & content_stems(s.text)]
    return offer(sharing if rank else sharing[:MAX_CANDIDATES], new_value)


def _scripts(text: str) -> set[str]:
    """The scripts of a text's letters, by their Unicode names ("LATIN", "CYRILLIC")."""
    return {unicodedata.name(ch, "?").split()[0] for ch in text if ch.isalpha()}


def typed_ruling(question: str, candidates: list[Candidate], on: RuleSwitch = _every_rule
                 ) -> tuple[str, str] | None:
    """The rule that typed a short answer's options by the question (`choose.asked_type`,
    `choose.asked_place`, `choose.asked_person`, `choose.asked_nationality`) or by the draft's
    quotes (`choose.quoted_title`) and what it did, when its options were the ones offered;
    None otherwise."""
    offered = [c.value for c in candidates if c.origin == "evidence"]
    noun = titled(question) if on("choose.asked_type") else ""
    kind = question_kind(question)
    if not offered:
        return None
    if on("choose.quoted_title") and all(is_quoted_title(c) for c in candidates
                                          if c.origin == "evidence"):
        return "choose.quoted_title", "the draft quotes a title: the options are the " \
                                      "titles the evidence quotes (" + ", ".join(offered) + ")"
    if on("choose.asked_nationality") and asks_nationality(question) and \
            all(is_nationality(v) for v in offered):
        return "choose.asked_nationality", "a question of nationality: the options are " \
            "the evidence's nationality words (" + ", ".join(offered) + ")"
    if noun:
        if all(closes_with(v, noun) for v in offered):
            return "choose.asked_type", f"the question asks for a {noun}: the options are " \
                                        f"the evidence's names ending in it"
    elif kind == "place" and on("choose.asked_place") and \
            all(is_asked_place(v, "") for v in offered):
        return "choose.asked_place", "a place question: the options are the evidence's " \
                                     "places (" + ", ".join(offered) + ")"
    elif kind == "person" and on("choose.asked_person") and \
            all(len(v.split()) > 1 and opens_person_name(v.split()[0]) for v in offered):
        return "choose.asked_person", "a person question: the options are the evidence's " \
                                      "full names (" + ", ".join(offered) + ")"
    return None
