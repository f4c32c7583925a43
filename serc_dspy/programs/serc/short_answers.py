"""A caller's short answer at the check nodes that choose (`verdicts="choose"`): each part is
one slot of the kind the question asks for, offered the evidence's values of that kind, the two
names a comparison offers, or, for "Are A and B both P?", the evidence's statement of P
(`rules.answers`, `rules.yesno`). Mixed into `choice.SlotChooser`, whose choice and decision
it reuses."""

from __future__ import annotations

from serc_dspy.core.trace import Candidate, Fact, Passage, Slot
from serc_dspy.programs.serc.confidence import Asked
from serc_dspy.rules.answers import answer_candidates, answer_slots, typed_ruling
from serc_dspy.rules.asked import (
    article_before,
    asked_frame,
    asked_noun,
    draft_named,
    echo_leader,
    names_answer,
    off_type,
    question_named,
)
from serc_dspy.rules.claims import FAILED_READING, both_claims, both_reading, rival_claims
from serc_dspy.rules.comparisons import COMPARING, compare_slot, option_claims
from serc_dspy.rules.people import GENDER_NOUN, asked_gender
from serc_dspy.rules.questions import question_kind
from serc_dspy.rules.reading import offer_reading, reads_as, sentence_slot
from serc_dspy.rules.shared import shared_slot
from serc_dspy.rules.slots import EvidenceSentence, about_subject, blank_in, focus, stated
from serc_dspy.rules.two_options import answers_no_option, either_question, evidence_form
from serc_dspy.rules.yesno import YES_NO
from serc_dspy.runtime.steps import Run

MAX_SENTENCES = 6
"""Evidence sentences a choice shows: a short answer's (those sharing most words with the
question), and a sentence choice's (with the claim)."""


class ShortAnswers:
    """`judge_short`, for `SlotChooser` (its `choose_value` and `decide`)."""

    async def judge_short(self, run: Run, passages: list[Passage], facts: list[Fact],
                          asked: dict[tuple[str, str], Asked]) -> None:
        """A short caller draft: each part (draft sentence) is one slot, the value of the
        question's kind (`answer_slots`), its options the evidence's values of that kind, or
        the two a comparison question names (`answer_candidates`). A one-part answer to "Are
        A and B both P?" is yes where the evidence states P of each (`choose.both`); another
        yes/no answer, or a part with no slot, is left unverified: nothing to choose from."""
        question = run.trace.question
        evidence = about_subject(passages, "")
        read = next((r.after for r in run.trace.ruled("draft.read_sentence", "answer")), None)
        # a sentence taken for `choose.shared_value` alone has no value slot of its own:
        # undecided, it goes back to the prose path (`draft.sentence_as_prose`)
        shared_only = bool(run.trace.ruled("draft.shared_sentence", "answer"))
        for fact in facts:
            sentence = run.trace.sentences[fact.sentence].text
            slot = sentence_slot(question, sentence, read) if read else None
            slots = [slot] if slot else ([] if shared_only else
                                         answer_slots(question, sentence, run.on))
            if len(run.trace.sentences) > 1 and question_kind(question) == "comparison" and \
                    answers_no_option(question, sentence):
                slots = []  # "Planes. It came out in 2013.": its second part is no answer
            # "Are A and B both P?", "... of the same nationality?", "What do A and B have in
            # common?": the passages decide (the last whatever slot the answer has)
            readers = (() if slots else YES_NO) + (("choose.shared_value", shared_slot),)
            rule, yes_no = next(((r, found) for r, read_yes_no in readers if
                                 len(facts) == 1 and run.on(r) and
                                 (found := read_yes_no(question, sentence, evidence))),
                                ("", None))
            if yes_no is None and not slots and len(facts) == 1 and \
                    run.on("choose.both_claims") and \
                    (claims := both_claims(question, sentence, evidence)):
                rule = "choose.both_claims"
                yes_no = both_reading(question, sentence, evidence, claims,
                                      await self.claim_stances(run, fact, claims))
            if yes_no is not None:
                run.rule(rule, fact.id, before=yes_no.text, after=yes_no.chosen or (
                    "SUPPORTED" if yes_no.ruling == "supported" else None), detail=yes_no.note)
                fact.slots = [yes_no]
                if yes_no.ruling == "supported":  # no choice was asked: the passages said it
                    fact.settle(rule, verdict="SUPPORTED")
                else:
                    self.decide(run, fact)
                continue
            if not slots:
                fact.settle("choose.unverified", verdict="NOT_FOUND", status="unverified")
                run.rule("choose.unverified", fact.id, after="unverified",
                         detail=f"a {question_kind(question)} answer with no value to choose")
                continue
            shown_sentences = focus(evidence, question, limit=MAX_SENTENCES)
            for slot in slots:
                candidates = answer_candidates(question, slot, evidence, run.on, sentence)
                if run.on("choose.asked_rank") and (ahead := _ranked_in(
                        candidates, answer_candidates(question, slot, evidence, _unranked(
                            run.on), sentence))):
                    run.rule("choose.asked_rank", fact.id, before=slot.text, detail="the "
                             "question's words stand around " + ", ".join(map(repr, ahead)) +
                             ": offered ahead of values the passages' order put first")
                typed = typed_ruling(question, candidates, run.on)
                if typed:
                    run.rule(typed[0], fact.id, before=slot.text, detail=typed[1])
                if typed and typed[0] == "choose.asked_person" and \
                        run.on("choose.asked_gender") and (gender := asked_gender(question)):
                    run.rule("choose.asked_gender", fact.id, before=slot.text,
                             detail=f"the question asks for a {GENDER_NOUN[gender]}: names "
                                    "given only to the other gender were not offered")
                if question_kind(question) not in ("comparison", "yes/no") and \
                        run.on("choose.read_answer") and (read or not stated(slot, evidence)):
                    candidates = await self.read_answer(
                        run, fact, slot, candidates, evidence, shown_sentences,
                        sentence[slot.start + len(slot.text):], read)
                if question_kind(question) not in ("comparison", "yes/no") and \
                        run.on("choose.question_named") and \
                        (named := question_named(question, candidates)):
                    run.rule("choose.question_named", fact.id, before=slot.text, detail="the "
                             "question names " + ", ".join(map(repr, named)) + ": not offered")
                    candidates = [c for c in candidates if c.value not in named]
                if question_kind(question) not in ("comparison", "yes/no") and \
                        run.on("choose.draft_named") and \
                        (named := draft_named(question, sentence, slot, candidates)):
                    run.rule("choose.draft_named", fact.id, before=slot.text, detail="the "
                             "draft's sentence states " + ", ".join(map(repr, named)) +
                             " around its answer: not offered")
                    candidates = [c for c in candidates if c.value not in named]
                if question_kind(question) == "comparison" and any(map(run.on, COMPARING)):
                    slot.candidates = candidates
                    if slot.kind == "sentence":  # `answer_slots`: it names no one option
                        run.rule("choose.no_option", fact.id, before=slot.text, detail="the "
                                 "answer gives neither option: the one the evidence decides "
                                 "replaces it")
                    decided = compare_slot(question, slot, evidence, run.on, sentence)
                    if decided is not None:
                        run.rule(decided[0], fact.id, before=slot.text, after=decided[1],
                                 detail=slot.note)
                        continue
                    either = run.on("choose.either") and either_question(question)
                    if not either and run.on("choose.option_claims") and \
                            await self.read_option_claims(run, fact, slot, sentence, evidence):
                        continue
                    if run.on("choose.compare") and not either:
                        continue  # undecided: unverified, with no choice call
                    slot.ruling, slot.note = "unverified", ""  # the chooser picks the option
                    if either:
                        run.rule("choose.either", fact.id, before=slot.text, detail="the "
                                 "question asks which of its two options a statement holds "
                                 "for: chosen")
                listed = {(s.passage, s.offset) for s in shown_sentences}
                extra = [s for s in evidence if (s.passage, s.offset) not in listed and any(
                    c.passage == s.passage and s.offset <= (c.offset or 0) <
                    s.offset + len(s.text) for c in candidates)]
                text = "\n".join(s.text for s in sorted(
                    shown_sentences + extra, key=lambda s: (s.passage, s.offset)))
                # a which-of-two question's draft may say anything around its option ("A is
                # not about rock groups"): the question itself is the claim
                claim = f"{question.strip()} Answer: " + (
                    "___" if either_question(question) else blank_in(sentence, slot.text))
                await self.choose_value(run, fact, slot, [], text, evidence, "", sentence,
                                        asked, claim=claim, candidates=candidates, short=True)
            fact.slots = slots
            self.decide(run, fact)

    async def read_option_claims(self, run: Run, fact: Fact, slot: Slot, sentence: str,
                                 evidence: list[EvidenceSentence]) -> bool:
        """`choose.option_claims`: the answer's claim and the same claim of the other option
        (`option_claims`), each read against that option's own sentences by one sentence
        choice; the other option replaces the
        answer where its claim is stated ("yes") and the answer's is not, the answer is
        supported where its claim alone is stated, and anything else (a failed call too)
        leaves it unverified. False where the reading does not apply."""
        claims = option_claims(run.trace.question, slot, sentence, evidence)
        if claims is None:
            return False
        stances = await self.claim_stances(run, fact, claims)
        (own, *_), (other, *_) = claims
        slot.note = f"read against each option's own sentences: {own!r} {stances[0]}, " \
                    f"{other!r} {stances[1]}"
        slot.ruling, slot.chosen = "unverified", None
        if FAILED_READING in stances:
            slot.choices = [None]  # an unusable reply: `decide` gives the fact no verdict
        elif stances[1] == "yes" and stances[0] != "yes":
            slot.ruling, slot.chosen = "contradicted", evidence_form(other, evidence)
        elif stances[0] == "yes" and stances[1] != "yes":
            slot.ruling = "supported"
        run.rule("choose.option_claims", fact.id, before=slot.text,
                 after=slot.chosen or slot.ruling, detail=slot.note)
        return True

    async def read_answer(self, run: Run, fact: Fact, slot: Slot, options: list[Candidate],
                          evidence: list[EvidenceSentence], shown: list[EvidenceSentence],
                          following: str, read: str | None = None) -> list[Candidate]:
        """`choose.read_answer`: the words of the evidence the model reads as the answer,
        offered among the options where a passage holds them (`rules.reading`). The reading
        is asked over `shown`, the sentences that share most words with the question, as the
        chooser's evidence is; `following`, the draft's words after the slot; `read`, the
        reading `draft.read_sentence` already paid for (no second call)."""
        if read is None:
            read = await self.ask_reading(run, "detect", f"reading for {fact.id} failed",
                                          shown)
            if read is None:
                return options
        offered, outcome = offer_reading(slot, options, read, evidence, following)
        run.rule("choose.read_answer", fact.id, before=slot.text, after=read or None,
                 detail=f"the evidence read for the question: {read!r}, {outcome}")
        return offered

    @staticmethod
    async def claim_stances(run: Run, fact: Fact, claims: list[tuple[str, str, list[str]]]
                            ) -> list[str]:
        """Each claim's stance ("yes", "opposite", "not stated") read by one sentence choice
        against its own sentences; "not stated" where it chose no sentence, `FAILED_READING`
        where the call failed (a dead LM is no reading: the caller's slot records it)."""
        stances = []
        for _value, claim, said in claims:
            numbered = "\n".join(f"{i}. {text}" for i, text in enumerate(said, 1))
            reply = await run.attempt(
                "detect", f"claim reading for {fact.id} failed",
                lambda numbered=numbered, claim=claim: run.call(
                    "sentence_chooser", sentences=numbered, claim=claim), None)
            if reply is None:
                stances.append(FAILED_READING)
                continue
            stated = 1 <= int(reply.sentence) <= len(said)
            stances.append(str(reply.stance) if stated else "not stated")
        return stances

    async def read_rival(self, run: Run, fact: Fact, slot: Slot, text: str,
                         evidence: list[EvidenceSentence], rival: Candidate) -> bool:
        """Whether a reading lets the rival chosen in both orders replace a short answer the
        evidence states (else `choose.own_stated` holds it). `choose.rival_claims`: the
        rival's claim is stated and the answer's is not (`rival_claims`, two sentence
        choices). `choose.read_rival` (off): the model, asked the question over `text` (the
        sentences the choice showed), reads the rival as the answer; a reading this answer
        already had (`draft.read_sentence`, `choose.read_answer`) is used as it stands,
        otherwise one `ReadAnswer` call is asked, only here."""
        sentence = run.trace.sentences[fact.sentence].text \
            if fact.sentence < len(run.trace.sentences) else fact.text
        if run.on("choose.rival_claims") and (claims := rival_claims(
                run.trace.question, slot, sentence, rival.value, evidence)):
            stances = await self.claim_stances(run, fact, claims)
            swap = stances[1] == "yes" and stances[0] not in ("yes", FAILED_READING)
            run.rule("choose.rival_claims", fact.id, before=slot.text,
                     after=rival.value if swap else None,
                     detail=f"read as claims: {slot.text!r} {stances[0]}, "
                            f"{rival.value!r} {stances[1]}")
            if swap:
                return True
        if not run.on("choose.read_rival"):
            return False
        if run.trace.ruled("draft.read_sentence", "answer") or \
                run.trace.ruled("choose.read_answer", fact.id):
            agrees = rival.read
        else:
            read = await self.ask_reading(run, "detect", f"reading for {fact.id} failed", text)
            agrees = read is not None and reads_as(read, rival.value, slot.kind, evidence)
        if agrees:
            run.rule("choose.read_rival", fact.id, before=slot.text, after=rival.value,
                     detail="both orders chose it, and the evidence was read to answer it")
        return agrees

    @staticmethod
    async def ask_reading(run: Run, phase: str, what: str,
                          shown: list[EvidenceSentence] | str) -> str | None:
        """The one `ReadAnswer` call: the words of `shown` (sentences, or their text) the
        model reads as the question's answer, whitespace folded; None when the call failed
        (logged as `what`)."""
        text = shown if isinstance(shown, str) else "\n".join(s.text for s in shown)
        reply = await run.attempt(phase, what, lambda: run.call(
            "answer_reader", question=run.trace.question, evidence=text), None)
        return None if reply is None else " ".join(str(getattr(reply, "answer", "") or "").split())

    @staticmethod
    def read_vote(run: Run, fact: Fact, slot: Slot) -> str | None:
        """`choose.read_vote`: of two orders' different choices, the one the model also read
        as the answer (None: neither was, or the rule is off)."""
        read = next((c.value for c in slot.candidates if c.read), None)
        if read is None or read not in slot.choices[:2] or not run.on("choose.read_vote"):
            return None
        run.rule("choose.read_vote", fact.id, before=slot.text, after=read,
                 detail=f"the two orders chose {slot.choices}: {read!r} is also what the "
                        "evidence was read to answer")
        return read

    @staticmethod
    def overrules(run: Run, fact: Fact, slot: Slot, evidence: list[EvidenceSentence],
                  rival: Candidate) -> bool:
        """Whether a rule lets a rival chosen in both orders replace a short answer that the
        evidence states (else `choose.own_stated` holds it): the question's words stand around
        the rival (`choose.asked_frame`), the evidence calls it by the asked type word
        (`choose.asked_noun`), the answer names no person when one was asked for
        (`choose.off_type`), the question echoes the rival more (`choose.question_echo`), or
        the question names the answer's own value (`choose.named_answer`)."""
        question, own = run.trace.question, slot.candidates[0].value
        sentence = run.trace.sentences[fact.sentence].text \
            if fact.sentence < len(run.trace.sentences) else fact.text
        for rule, fires, detail in (
                ("choose.asked_frame", lambda: asked_frame(question, slot, evidence, rival),
                 "the question's words stand around the rival, not around the answer"),
                ("choose.asked_noun", lambda: asked_noun(question, slot, evidence, rival),
                 "the evidence calls the rival by the type word asked for"),
                ("choose.off_type", lambda: off_type(question, slot, sentence),
                 "a person was asked for: the answer names no person, the rival does"),
                ("choose.question_echo",
                 lambda: echo_leader(question, [rival.value, own], evidence) == rival.value,
                 "the question's words stand around the rival more than around the answer"),
                ("choose.named_answer", lambda: names_answer(question, own),
                 "the question names the answer's own value: its being stated is no sign")):
            if run.on(rule) and fires():
                run.rule(rule, fact.id, before=slot.text, after=rival.value, detail=detail)
                if rule == "choose.off_type" and (the := article_before(sentence, slot.text)):
                    # "The Kingsmen" is a band's name: the person replaces it with its "the"
                    slot.start, slot.text = slot.start - len(the), the + slot.text
                return True
        return False


def _unranked(on):
    """The rule switches with `choose.asked_rank` off: the options the passages' order gives."""
    return lambda rule: rule != "choose.asked_rank" and on(rule)


def _ranked_in(ranked: list[Candidate], unranked: list[Candidate]) -> list[str]:
    """The values `choose.asked_rank` offered that the passages' order left out."""
    before = {c.value for c in unranked}
    return [c.value for c in ranked if c.origin == "evidence" and c.value not in before]
