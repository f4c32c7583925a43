"""Phase 2, `verdicts="choose"`: check nodes that choose from the evidence.

A free three-way verdict and a free rewrite are the wrong questions for a 1.5B model. Here each
fact's details (slots: `rules.slots`) are masked, the values the evidence offers for them are
listed as lettered options beside the fact's own and "not stated", and the model picks one,
decoded under the output's `Literal` (the engine's grammar), twice, in two option orders (small
models prefer early options). The fact's own value chosen both times supports it; the same
other value chosen both times, a value found literally in a passage about the subject,
contradicts it and is its correction (`choose.swap`); anything else leaves it unverified and
in the draft's words. A fact with no slot gets a sentence choice: the model picks, by number,
the evidence sentence about the claim, and says whether it states it, its opposite, or neither.
"""

from __future__ import annotations

from typing import Any, ClassVar

import dspy

from serc_dspy.core.trace import Candidate, Check, Fact, Passage, Sentence, Slot, Trace, Witness
from serc_dspy.programs.base import format_passages
from serc_dspy.programs.serc.common import Settings, Stage, subject_name
from serc_dspy.programs.serc.confidence import (
    LOGPROBS_CONFIG,
    Asked,
    letter_probabilities,
    pooled,
    pooled_leader,
    value_probabilities,
)
from serc_dspy.programs.serc.orders import LETTERS, option_orders, shown, third_order
from serc_dspy.programs.serc.short_answers import MAX_SENTENCES, ShortAnswers
from serc_dspy.rules.asked import echo_leader
from serc_dspy.rules.dates import year_slot
from serc_dspy.rules.frames import following_words, preceding_word
from serc_dspy.rules.questions import question_kind
from serc_dspy.rules.quotes import opening_name
from serc_dspy.rules.rivals import (
    context_of,
    held_back,
    own_attested,
    same_frame,
    sentence_of,
    stated_alone,
)
from serc_dspy.rules.roles import offer_roles
from serc_dspy.rules.shown import show_own_values
from serc_dspy.rules.slots import (
    NOT_STATED,
    EvidenceSentence,
    about_subject,
    blank_in,
    collect_candidates,
    find_slots,
    focus,
    stated,
)
from serc_dspy.rules.titles import title_candidates
from serc_dspy.rules.words import content_stems
from serc_dspy.runtime.steps import Run, StepSpec
from serc_dspy.signatures import ChooseSentence, ChooseValue, ReadAnswer


class SlotChooser(ShortAnswers, Stage):
    """Judge a check node's facts by choices among the evidence's own values. Alone:
    `SlotChooser()(subject=..., claim=..., passages=[...])` gives a claim's slots, verdict."""

    steps: ClassVar[dict[str, StepSpec]] = {
        "value_chooser": StepSpec("verify", "choice"),
        "sentence_chooser": StepSpec("verify", "sentence_choice"),
        "answer_reader": StepSpec("verify", "reading"),
    }

    def __init__(self, settings: Settings | None = None, **options: Any):
        super().__init__(settings, **options)
        self.value_chooser = dspy.Predict(ChooseValue)
        self.sentence_chooser = dspy.Predict(ChooseSentence)
        self.answer_reader = dspy.Predict(ReadAnswer)

    def forward(self, subject: str, claim: str, passages: list[Passage | str]
                ) -> dspy.Prediction:
        """One claim judged by choice against `passages` (its own sentence is the claim)."""
        found = [p if isinstance(p, Passage) else Passage(text=str(p)) for p in passages]
        trace = Trace(method="choice", subject=subject, received=claim)
        trace.sentences = [Sentence(index=0, text=claim)]
        fact = Fact(id="f0.0", text=claim, sentence=0, check="c0.0")
        check = Check(id="c0.0", facts=[fact.id], sentence=0, passages=found,
                      evidence=format_passages(found))
        trace.facts, trace.checks = [fact], [check]
        _, trace = self.standalone(self.judge, check, [fact], trace=trace)
        return dspy.Prediction(verdict=fact.verdict, status=fact.status, slots=fact.slots,
                               correction=fact.witness.apply(claim) if fact.witness else None,
                               trace=trace)

    async def judge(self, run: Run, check: Check, facts: list[Fact]) -> None:
        """Each fact's verdict from its slots' choices (or a sentence choice). The facts go
        one by one, each reading the few evidence sentences about it (`focus`); a fact's
        slots and both option orders share that prefix, which the engine caches."""
        passages = check.passages or [Passage(text=check.evidence)]
        asked: dict[tuple[str, str], Asked] = {}
        if run.trace.short_draft:
            await self.judge_short(run, passages, facts, asked)
            return
        for fact in facts:
            # the subject's name, else (no firewall: the subject is the question) the name
            # the fact opens with
            name = subject_name(run.trace.subject)
            evidence = about_subject(passages, name or opening_name(fact.text))
            if not name:
                name = opening_name(fact.text)
                # a claim's capitalised first word is often no name ("Compressed air ...",
                # "Firms advertise ..."): named by no passage, it filters no evidence out
                evidence = evidence or about_subject(passages, "")
            about = focus(evidence, fact.text, name)
            text = "\n".join(s.text for s in about)
            sentence = run.trace.sentences[fact.sentence].text \
                if fact.sentence < len(run.trace.sentences) else fact.text
            slots = fact.slots or find_slots(fact.text, sentence, name or run.trace.subject)
            if slots:
                for slot in slots:
                    await self.choose_value(run, fact, slot, about, text, evidence, name,
                                            sentence, asked)
                fact.slots = slots
                self.name_stated(run, fact, evidence)
                await self.settle(run, fact, evidence, name, sentence)
                self.decide(run, fact)
            else:
                await self.choose_sentence(run, check, fact, evidence, name)

    async def choose_value(self, run: Run, fact: Fact, slot: Slot,
                           about: list[EvidenceSentence], text: str,
                           evidence: list[EvidenceSentence], name: str, sentence: str,
                           asked: dict[tuple[str, str], Asked], *,
                           claim: str | None = None,
                           candidates: list[Candidate] | None = None,
                           short: bool = False) -> None:
        """One slot: its candidates from the sentences about the fact (`about`, shown as
        `text`), and the choice in both orders (no call when they offer no rival value:
        `choose.uncontested`). The blank is shown in the fact, a short claim (a whole
        sentence of several clauses confused the model); the same blank and options asked
        for two facts are asked once."""
        claim = claim or blank_in(fact.text, slot.text) or blank_in(sentence, slot.text) or \
            fact.text
        at = sentence.find(slot.text)
        frame = preceding_word(sentence, at)
        after = following_words(sentence, at + len(slot.text)) \
            if run.on("choose.after_frame") else ()
        titles = title_candidates(slot, sentence, fact.text, about) \
            if candidates is None and run.on("choose.quoted_title") else None
        if titles:
            run.rule("choose.quoted_title", fact.id, before=slot.text, detail="the draft quotes "
                     "it: the options are the titles the evidence quotes")
        slot.candidates = candidates if candidates is not None else \
            titles or collect_candidates(slot, fact.text, about, name, frame, after)
        if after and candidates is None and not titles and \
                (added := self.after_frame_only(slot, about, frame)):
            run.rule("choose.after_frame", fact.id, before=slot.text, detail="offered " +
                     ", ".join(map(repr, added)) + ": the two words after each are the slot's")
        if slot.kind == "role" and not short and candidates is None and \
                run.on("choose.subject_roles"):
            text = offer_roles(slot, fact, evidence, name, text, run.rule)
        if not short and candidates is None and run.on("choose.date_year") and \
                (year := year_slot(slot, fact.text, sentence, about, evidence, name)):
            run.rule("choose.date_year", fact.id, before=slot.text, after=year.text,
                     detail="no date offered; the evidence offers other years")
            slot.kind, slot.text, slot.start, slot.candidates = \
                year.kind, year.text, year.start, year.candidates
            claim = blank_in(fact.text, year.text) or claim
        own_stated = stated(slot, evidence)
        if not any(c.origin == "evidence" for c in slot.candidates):
            slot.ruling = "supported" if own_stated and run.on("choose.uncontested") \
                else "unverified"
            slot.note = ("its value is in the evidence, which offers no other"
                         if own_stated else "the evidence offers no value for it")
            return
        key = (claim, "|".join(c.value for c in slot.candidates))
        if key not in asked:
            asked[key] = await self.ask(run, fact, slot, text, claim)
        slot.choices, slot.confidence = list(asked[key][0]), pooled(asked[key][1])
        first, second = slot.choices
        if short and first != second and (read := self.read_vote(run, fact, slot)):
            first = second = read
        elif short and first != second and run.on("choose.pooled") and \
                (leader := pooled_leader(slot.confidence)) is not None:
            run.rule("choose.pooled", fact.id, before=slot.text, after=leader,
                     detail=f"the two orders chose {slot.choices}: pooled over both, "
                            f"{leader!r} leads ({slot.confidence})")
            first = second = leader
        elif short and first != second and len(slot.candidates) > 3 and \
                run.on("choose.third_order"):
            first, second = await self.third_ask(run, fact, slot, text, claim)
        own = slot.candidates[0].value
        if short and first != second and {first, second}.isdisjoint({None, own, NOT_STATED}) \
                and run.on("choose.question_echo"):
            leader = echo_leader(run.trace.question, [first, second], evidence)
            if leader is not None:
                first = second = leader
                run.rule("choose.question_echo", fact.id, before=slot.text, after=first,
                         detail=f"the two orders chose {slot.choices[:2]}: the question's "
                                f"words stand around {first!r}")
        if first is not None and first == second:
            if first == own:
                slot.ruling = "supported" if own_stated else "unverified"
                slot.note = "" if own_stated else "its own value was chosen, yet no passage " \
                                                  "states it"
            elif first != NOT_STATED:
                slot.ruling, slot.chosen = "contradicted", first
                rival = next(c for c in slot.candidates if c.value == first)
                # a caller's short answer that the evidence states is never replaced on a
                # choice alone (HaluEval's report split: 6 of 30 right answers were); a
                # comparison's two options both stand in the evidence, so it is exempt
                attested = (own_stated and question_kind(run.trace.question) != "comparison"
                            if short else own_attested(slot, fact.text, evidence, rival, name))
                if attested and short:
                    attested = not self.overrules(run, fact, slot, evidence, rival) and \
                        not await self.read_rival(run, fact, slot, text, evidence, rival)
                if run.on("choose.own_stated") and attested:
                    slot.ruling, slot.chosen = "unverified", None
                    slot.note = f"{first!r} was chosen, but the evidence states its own value " \
                                + ("" if short else "for this event more closely")
                    run.rule("choose.own_stated", fact.id, before=slot.text, after=first,
                             detail=slot.note)
                elif not short:
                    self.hold_back(run, fact, slot, evidence, rival, name)
            else:
                slot.note = "not stated, in both orders"
        elif not short and not own_stated and first not in (None, own, NOT_STATED) and \
                second not in (None, own, NOT_STATED) and run.on("choose.rejected"):
            slot.ruling = "rejected"
            slot.note = f"its value was passed over in both orders, for {first!r} and " \
                        f"{second!r}, and no passage states it"
        elif len(slot.choices) == 3:
            slot.note = "the three orders disagree (" + ", ".join(map(repr, slot.choices)) + ")"
        else:
            slot.note = f"the two orders disagree ({first!r}, {second!r})"

    @staticmethod
    def after_frame_only(slot: Slot, about: list[EvidenceSentence], frame: str) -> list[str]:
        """The rivals `choose.after_frame` alone admitted (word before them not the slot's)."""
        if slot.kind not in ("name", "role"):
            return []
        return [c.value for c in slot.candidates if c.origin == "evidence" and
                (s := sentence_of(c, about)) is not None and
                preceding_word(s.text, (c.offset or 0) - s.offset) != frame]

    @staticmethod
    def hold_back(run: Run, fact: Fact, slot: Slot, evidence: list[EvidenceSentence],
                  rival: Candidate, name: str) -> None:
        """The guards on a rival a fact's slot chose in both orders (`rules.rivals.held_back`):
        the first that finds it a value of another thing leaves the fact unverified."""
        sentence = run.trace.sentences[fact.sentence].text \
            if fact.sentence < len(run.trace.sentences) else fact.text
        question = run.trace.question.strip()  # a one-sentence answer's frame is its question
        asked = question if len(run.trace.sentences) == 1 and question.endswith("?") else ""
        held = held_back(slot, fact.text, sentence, evidence, rival, name, run.on, asked)
        if held is None and run.on("choose.same_frame") and run.on("choose.frame_first") and \
                not same_frame(slot, fact.text, evidence, rival, name, asked):
            run.rule("choose.frame_first", fact.id, before=slot.text, after=rival.value,
                     detail="a word of its frame stands before it, no value of its kind between")
        if held is not None:
            slot.ruling, slot.chosen = "unverified", None
            slot.note = f"{rival.value!r} was chosen, but {held[1]}"
            run.rule(held[0], fact.id, before=slot.text, after=rival.value, detail=slot.note)

    async def third_ask(self, run: Run, fact: Fact, slot: Slot, text: str, claim: str
                        ) -> tuple[str | None, str | None]:
        """`choose.third_order`: a short answer whose two orders disagree is asked once more,
        its values turned by half; the value two of the three orders chose stands as if both
        had chosen it (every guard still applies), else the three disagree."""
        third = (await self.ask(run, fact, slot, text, claim,
                                orders=[third_order(slot.candidates)]))[0][0]
        first, second = slot.choices
        slot.choices.append(third)
        if third is None or third not in (first, second):
            return first, second
        run.rule("choose.third_order", fact.id, before=slot.text, after=third,
                 detail=f"the two orders disagreed ({first!r}, {second!r}); a third, turned "
                        f"by half, chose {third!r}")
        return third, third

    async def ask(self, run: Run, fact: Fact, slot: Slot, text: str, claim: str,
                  orders: list[list[Candidate]] | None = None) -> Asked:
        """The value chosen for the blank in each option order (None: no usable reply), and
        each order's probabilities of the values (`confidence`; {} if the backend gave none)."""
        chosen: list[str | None] = []
        probabilities: list[dict[str, float]] = []
        if run.on("choose.own_context") and not run.trace.short_draft:
            show_own_values(slot.candidates, fact.text, slot, text)
        for order in orders or option_orders(slot.candidates):
            options = "\n".join(f"{letter}) {shown(c)}"
                                for letter, c in zip(LETTERS[:len(order)], order, strict=True))

            async def call(options=options):
                return await run.call("value_chooser", evidence=text, claim=claim,
                                      options=options, config=LOGPROBS_CONFIG)
            reply = await run.attempt("detect", f"choice for {fact.id} ({slot.text!r}) failed",
                                      call, None)
            index = LETTERS.find(str(getattr(reply, "choice", "") or "?"))
            chosen.append(order[index].value if 0 <= index < len(order) else None)
            probabilities.append(value_probabilities(
                order, letter_probabilities(reply, LETTERS[:len(order)]), LETTERS))
        return chosen, probabilities

    @staticmethod
    def name_stated(run: Run, fact: Fact, evidence: list[EvidenceSentence]) -> None:
        """`choose.name_stated`: a fact's one contradicted name or role that the evidence
        states with the fact's other years, dates and numbers (`stated_alone`) stays: an
        invented one is stated nowhere; two contradicted slots are left to `settle`."""
        wrong = [s for s in fact.slots if s.ruling == "contradicted"]
        if len(wrong) == 1 and (slot := wrong[0]).kind in ("name", "role") and \
                run.on("choose.name_stated") and \
                stated_alone(slot, [o for o in fact.slots if o is not slot], evidence):
            slot.note = f"{slot.chosen!r} was chosen, but the evidence states {slot.text!r}"
            run.rule("choose.name_stated", fact.id, before=slot.text, after=slot.chosen,
                     detail=slot.note)
            slot.ruling, slot.chosen = "unverified", None

    async def settle(self, run: Run, fact: Fact, evidence: list[EvidenceSentence], name: str,
                     sentence: str) -> None:
        """`choose.settle`: two slots of one fact contradicted ("Chemistry in 1903": 1911 and
        Physics each make it true). Each is asked again with the blank in the draft's whole
        sentence, whose other words tell which event it means ("... in 1903 together with
        Pierre Curie"); a slot whose choice then changes is no longer contradicted. If more
        than one still is, the one whose evidence (its sentence and the next) shares most
        words with the rest of the draft's sentence stays; a tie leaves none."""
        wrong = [s for s in fact.slots if s.ruling == "contradicted"]
        if len(wrong) < 2 or sentence == fact.text or not run.on("choose.settle"):
            return
        text = "\n".join(s.text for s in focus(evidence, sentence, name))
        run.rule("choose.settle", fact.id, detail=f"{len(wrong)} contradicted slots of one fact: "
                 "asked again in the whole sentence")
        for slot in wrong:
            claim = blank_in(sentence, slot.text)
            again = (await self.ask(run, fact, slot, text, claim))[0] if claim else []
            slot.choices += again
            if again and again != [slot.chosen, slot.chosen]:
                slot.ruling = "unverified"
                slot.note = f"asked in the whole sentence, chosen {again}"
        wrong = [s for s in wrong if s.ruling == "contradicted"]
        if len(wrong) < 2:
            return
        rest = content_stems(sentence, name) - {w for s in wrong for w in
                                                 content_stems(s.text) | content_stems(
                                                     s.chosen or "")}
        shared = [len(rest & content_stems(context_of(s, evidence), name)) for s in wrong]
        best = max(shared)
        keep = wrong[shared.index(best)] if shared.count(best) == 1 else None
        for slot, score in zip(wrong, shared, strict=True):
            if slot is not keep:
                slot.ruling = "unverified"
                slot.note = f"another slot's evidence agrees better with the sentence " \
                            f"({score} words shared, against {best})"
        if keep is not None:
            run.rule("choose.settle", fact.id, before=keep.text, after=keep.chosen,
                     detail=f"of {len(wrong)} contradicted slots, its evidence shares most "
                            f"words ({best}) with the rest of the draft's sentence")

    def decide(self, run: Run, fact: Fact) -> None:
        """The fact's verdict from its slots: one contradicted slot contradicts it (the first
        is its witness and its correction); every slot supported supports it; otherwise it is
        unverified and kept. A choice whose calls failed leaves no verdict."""
        wrong = [s for s in fact.slots if s.ruling == "contradicted"]
        if len(wrong) > 1:
            # "Chemistry in 1903" is made true by 1911 as well as by Physics: when two details
            # could each be the wrong one, the evidence does not say which
            for slot in wrong:
                slot.ruling, slot.note = "unverified", f"another slot was contradicted too " \
                                                      f"(chosen: {slot.chosen!r})"
            wrong = []
        if wrong and run.on("choose.swap"):
            slot = wrong[0]
            # a slot the passages decided by rule (`choose.compare`, `choose.both`) was
            # asked no choice, and its ruling says so
            how = "chosen in both option orders, found in the evidence" if slot.choices \
                else f"decided by the passages, not chosen ({slot.note})"
            fact.settle("choose.swap", verdict="CONTRADICTED", model=True)
            fact.witness = Witness(reason="chosen from the evidence in both option orders"
                                   if slot.choices else slot.note, old=slot.text,
                                   new=slot.chosen, contradicted=(slot.text,))
            fact.votes.update({"choice": "CONTRADICTED", "reversed": "CONTRADICTED"})
            run.rule("choose.swap", fact.id, before=slot.text, after=slot.chosen,
                     detail=f"{slot.kind} slot: {how}")
            return
        rejected = [s for s in fact.slots if s.ruling == "rejected"]
        if rejected:
            # one CONTRADICTED signal with no correction: `agree.contradiction` holds it to a
            # second vote, and confirmed or not the fact stays in the draft's words
            fact.settle("choose.rejected", verdict="CONTRADICTED", model=True)
            fact.votes["choice"] = "CONTRADICTED"
            run.rule("choose.rejected", fact.id, after="CONTRADICTED", detail="; ".join(
                f"{s.text!r}: {s.note}" for s in rejected))
            return
        if all(s.ruling == "supported" for s in fact.slots):
            fact.settle("choose.supported", verdict="SUPPORTED", model=True)
            uncontested = [s for s in fact.slots if not s.choices]
            if len(uncontested) < len(fact.slots):
                run.rule("choose.supported", fact.id, after="SUPPORTED", detail=", ".join(
                    f"{s.kind} {s.text!r}" for s in fact.slots if s.choices))
            if uncontested:  # supported without a choice: the rule acted, and says so
                run.rule("choose.uncontested", fact.id, after="SUPPORTED", detail=", ".join(
                    f"{s.kind} {s.text!r}" for s in uncontested))
            return
        failed = any(c is None for s in fact.slots for c in s.choices)
        fact.settle("choose.unverified", verdict=None if failed else "NOT_FOUND",
                    status="unverified")
        run.rule("choose.unverified", fact.id, after="unverified", detail="; ".join(
            f"{s.text!r}: {s.note or s.ruling}" for s in fact.slots))

    async def choose_sentence(self, run: Run, check: Check, fact: Fact,
                              evidence: list[EvidenceSentence], name: str) -> None:
        """A fact with no slot: the evidence sentence about it, chosen by number, and its
        stance. "yes" supports the fact; "opposite" is one CONTRADICTED signal, which
        `agree.contradiction` holds to a second; anything else leaves it unverified."""
        claim = content_stems(fact.text, name)
        ranked = sorted(evidence, key=lambda s: -len(claim & content_stems(s.text, name)))
        listed = [s for s in ranked if claim & content_stems(s.text, name)][:MAX_SENTENCES]
        slot = Slot(kind="sentence", text=fact.text,
                    candidates=[Candidate(value=s.text, passage=s.passage, offset=s.offset)
                                for s in listed])
        fact.slots = [slot]
        if not listed:
            slot.note = "no evidence sentence shares a word with it"
            fact.settle("choose.unverified", verdict="NOT_FOUND", status="unverified")
            run.rule("choose.unverified", fact.id, after="unverified", detail=slot.note)
            return
        numbered = "\n".join(f"{i}. {s.text}" for i, s in enumerate(listed, 1))
        reply = await run.attempt(
            "detect", f"sentence choice for {fact.id} failed",
            lambda: run.call("sentence_chooser", sentences=numbered, claim=fact.text), None)
        if reply is None:
            fact.settle("sentence choice failed", verdict=None, status="unverified")
            slot.choices = [None]
            return
        number, stance = int(reply.sentence), str(reply.stance)
        slot.choices = [f"{number}: {stance}"]
        if 1 <= number <= len(listed) and stance in ("yes", "opposite"):
            fact.quote = listed[number - 1].text
            if stance == "yes":
                slot.ruling = "supported"
                fact.settle("choose.supported", verdict="SUPPORTED", model=True)
                run.rule("choose.supported", fact.id, after="SUPPORTED",
                         detail=f"sentence {number} states it")
            else:
                slot.ruling = "contradicted"
                fact.settle("sentence choice", verdict="CONTRADICTED", model=True)
                fact.votes["sentence"] = "CONTRADICTED"
            return
        slot.note = f"sentence {number}: {stance}"
        fact.settle("choose.unverified", verdict="NOT_FOUND", status="unverified")
        run.rule("choose.unverified", fact.id, after="unverified", detail=slot.note)
