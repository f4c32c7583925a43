"""Phase 3b and 4: fact-to-text reconstruction of each changed sentence, held to the
`rewrite.` guards with their fallbacks, and the polish of the whole answer, held to the
`polish.` guards."""

from __future__ import annotations

from typing import Any, ClassVar

import dspy

from serc_dspy.core.layout import Layout
from serc_dspy.core.text import SHORT_ANSWER_CHARS, text_size
from serc_dspy.core.trace import Fact, Sentence, Trace
from serc_dspy.programs.serc.common import (
    REWRITE_CONTEXT_SENTENCES,
    UNCHANGED,
    AcceptedFacts,
    Settings,
    Stage,
    as_sentence,
)
from serc_dspy.rules.draft import claim_value
from serc_dspy.rules.guards import (
    dropped_words,
    minimal_edit,
    orphan_details,
    polish_problem,
    rewrite_problem,
)
from serc_dspy.rules.swaps import only_span_changed, swap
from serc_dspy.runtime.steps import Run, StepSpec
from serc_dspy.signatures import PolishAnswer, RewriteSentence


class Reconstructor(Stage):
    """Rebuild changed sentences from their accepted facts and polish the answer. Alone:
    `Reconstructor()(subject=..., sentence=..., facts=[...])` rewrites one sentence."""

    steps: ClassVar[dict[str, StepSpec]] = {
        "rewriter": StepSpec("rewrite", "rewrite"),
        "polisher": StepSpec("polish", "polish"),
    }

    def __init__(self, settings: Settings | None = None, **options: Any):
        super().__init__(settings, **options)
        self.rewriter = dspy.Predict(RewriteSentence)
        self.polisher = dspy.Predict(PolishAnswer)

    def forward(self, subject: str, sentence: str, facts: list[str]) -> dspy.Prediction:
        """Rewrite one draft sentence from the facts it now holds (each counted as changed),
        with the guards and their fallbacks: the sentence the answer would carry."""
        trace = Trace(method="reconstruction", subject=subject, received=sentence)
        node = Sentence(index=0, text=sentence)
        trace.sentences = [node]
        trace.facts = [Fact(id=f"f0.{i}", text=t, sentence=0, verdict="SUPPORTED",
                            status="corrected", correction=t) for i, t in enumerate(facts)]
        accepted = AcceptedFacts(1)

        async def rebuild(run: Run) -> str:
            await self.reconstruct(run, node, trace.facts, list(facts), accepted)
            return node.text if node.kept_verbatim else (node.rewritten or "")

        text, trace = self.standalone(rebuild, trace=trace)
        return dspy.Prediction(sentence=text, rulings=trace.rulings, trace=trace)

    async def reconstruct(self, run: Run, sentence: Sentence, facts: list[Fact],
                          kept: list[str], accepted: AcceptedFacts) -> None:
        """Fact-to-text: rewrite a changed sentence from the facts it accepts, never showing
        the original sentence; an unchanged one is kept verbatim."""
        if all(f.status in UNCHANGED for f in facts):
            return
        trace = run.trace
        run.expect("reconstruct", 1)
        sentence.kept_verbatim = False
        orphans = (orphan_details(sentence.text, [f.text for f in facts], trace.subject)
                   if run.on("rewrite.orphan") else [])
        if orphans:  # they bind every path below, so the rule acts here: a ruling says so
            run.rule("rewrite.orphan", f"s{sentence.index}", detail="details of the sentence "
                     f"that no fact carries, which its new text must keep: {', '.join(orphans)}")
        if not kept:
            sentence.rewritten = "" if not orphans else self.fallback_sentence(
                run, sentence, facts, kept, orphans, ("rewrite.orphan",
                                                      "would drop the whole sentence"))
            run.advance("reconstruct")
            return
        swapped = self.swap_in_place(run, sentence, facts)
        if swapped is not None:
            sentence.rewritten = swapped
            run.advance("reconstruct")
            return
        if self.settings.reconstruction == "minimal":
            placed = self.edit_in_place(run, sentence, facts)
            if placed is not None:
                sentence.rewritten = placed
                run.advance("reconstruct")
                return
        earlier = await accepted.before(sentence.index, REWRITE_CONTEXT_SENTENCES)

        async def rewrite() -> str:
            return (await run.call("rewriter", subject=trace.subject, earlier_facts=earlier,
                                   facts=kept)).sentence.strip()
        text = await run.attempt("reconstruct", f"rewrite of sentence {sentence.index} failed",
                                 rewrite, "")
        problem = rewrite_problem(text, kept, orphans, trace.subject, run.rules)
        if problem:
            text = self.fallback_sentence(run, sentence, facts, kept, orphans, problem, text)
        if text and text != sentence.text:
            lost = dropped_words(sentence.text, [f.text for f in facts], text, trace.subject)
            if lost:  # the extractor left them out, so no fact could keep them
                run.log("reconstruct", f"sentence {sentence.index}: dropped "
                        f"{', '.join(lost)}, which no extracted fact carried", "fallback")
        sentence.rewritten = text
        run.advance("reconstruct")

    def fallback_sentence(self, run: Run, sentence: Sentence, facts: list[Fact],
                          kept: list[str], orphans: list[str], problem: tuple[str, str],
                          refused: str = "") -> str:
        """A rewrite failed its guard (`problem`: the rule and why). In order: the draft's
        sentence with each correction made in place (`rewrite.in_place`, when every change
        can be placed and nothing is pruned); the corrected facts stated one by one
        (`rewrite.state_facts`, when that loses no detail of the sentence); else the draft's
        sentence unchanged, its corrections not applied (`rewrite.keep_sentence`), so the
        trace never claims a change the answer does not carry."""
        node = f"s{sentence.index}"
        guard, why = problem
        run.rule(guard, node, before=refused or None, detail=f"the rewrite {why}")
        placed = self.edit_in_place(run, sentence, facts)
        if placed is not None:
            return placed
        if not orphans and kept and run.on("rewrite.state_facts"):
            stated = " ".join(as_sentence(fact) for fact in kept)
            run.rule("rewrite.state_facts", node, after=stated, detail="its facts stated")
            return stated
        if not run.on("rewrite.keep_sentence"):
            return refused  # every fallback switched off: the refused rewrite stands
        for fact in facts:
            if fact.status == "corrected":
                fact.settle("rewrite.keep_sentence", status="uncorrected")
            elif fact.status == "pruned":
                fact.settle("rewrite.keep_sentence", status="unverified")
        sentence.kept_verbatim = True
        lost = f"; stating its facts would lose {', '.join(orphans)}" if orphans else ""
        run.rule("rewrite.keep_sentence", node, after=sentence.text,
                 detail=f"kept the draft's sentence, its changes not applied{lost}")
        return sentence.text

    def swap_in_place(self, run: Run, sentence: Sentence, facts: list[Fact]) -> str | None:
        """A sentence whose every change is a slot swap (`choose.swap`) gets exactly those
        swaps, in the draft's own sentence, and nothing else: each one's character diff is its
        span (and the article before it). None when a change is no swap, or one cannot be
        placed: the other reconstruction paths then apply."""
        changed = [f for f in facts if f.status in ("corrected", "pruned")]
        pairs: list[tuple[str, str]] = []
        for fact in changed:
            witness = fact.witness
            if fact.status != "corrected" or witness is None or not witness.old or \
                    not any(s.text == witness.old and s.chosen == witness.new
                            for s in fact.slots):
                return None
            if (witness.old, witness.new) not in pairs:
                pairs.append((witness.old, witness.new))
        text = sentence.text
        for old, new in pairs:
            fixed = swap(text, old, new)
            if fixed is None or not only_span_changed(text, fixed, old, new):
                return None
            text = fixed
        run.rule("rewrite.in_place", f"s{sentence.index}", before=sentence.text, after=text,
                 detail="slot swaps: " + ", ".join(f"{o} -> {n}" for o, n in pairs))
        return text

    def edit_in_place(self, run: Run, sentence: Sentence, facts: list[Fact]) -> str | None:
        """`rewrite.in_place`: the draft's sentence with each correction made where it stands
        and each pruned fact's own clause taken out; None when one cannot be placed."""
        if not run.on("rewrite.in_place"):
            return None
        changes = [(f.text, f.correction if f.status == "corrected" else None)
                   for f in facts if f.status in ("corrected", "pruned")]
        placed = minimal_edit(sentence.text, changes, run.trace.subject)
        if placed is not None:
            run.rule("rewrite.in_place", f"s{sentence.index}", before=sentence.text,
                     after=placed, detail="the changes made in place in the draft's sentence")
        return placed

    def short_answer(self, run: Run, layout: Layout) -> str:
        """A short caller draft's answer: the draft with every part the evidence corrected
        changed ("Warsaw. Born 1868." corrects each part, not only the first), each other part
        as the caller wrote it (a part nothing confirmed is never removed); no polish."""
        trace = run.trace
        corrected = {f.sentence for f in trace.facts if f.status == "corrected"}
        if not corrected:
            if any(f.status == "pruned" for f in trace.facts):
                trace.status = "fallback"  # nothing confirmed it, and nothing replaces it
                run.log("polish", "no evidence confirms the short draft; returned it unchanged",
                        "fallback")
            return trace.received
        parts = []
        for s in trace.sentences:
            new = s.rewritten if s.index in corrected and not s.kept_verbatim else None
            value = claim_value(trace.question, new, s.text) if new else None
            if new and not value:  # the claim's wrapper would leak into the answer
                for fact in trace.facts:
                    if fact.sentence == s.index and fact.status == "corrected":
                        fact.settle("the correction could not be written in the draft's form",
                                    status="uncorrected")
                run.log("polish", f"part {s.index} of the short draft kept: its correction "
                        "could not be written in the draft's form", "fallback")
            parts.append(value or s.text)
        answer = layout.rebuild(parts).strip()
        for fact in trace.facts:
            if fact.status == "corrected":
                run.log("polish", f"the short draft was corrected from the evidence: "
                        f"{fact.text!r} -> {fact.correction!r}")
        return answer or trace.received

    async def polish(self, run: Run, layout: Layout) -> str:
        """The rebuilt sentences, put back in the draft's layout -> the answer, smoothed at
        `polish_temperature` when any sentence changed and the draft is plain prose
        (`polish.layout`), unless every change was made in place in the draft's words
        (`polish.in_place`); every polish a `polish.` guard refuses falls back to the
        reconstructed draft."""
        trace = run.trace
        parts = [s.text if s.kept_verbatim else (s.rewritten or "") for s in trace.sentences]
        trace.reconstructed = layout.rebuild(parts).strip()
        if trace.short_draft:
            return self.short_answer(run, layout)
        if text_size(trace.reconstructed) < SHORT_ANSWER_CHARS and run.on("decode.too_short"):
            trace.status = "fallback"  # the answer is R unchanged, not a correction of it
            run.rule("decode.too_short", "answer", before=trace.reconstructed,
                     after=trace.received, detail=f"decoding left under {SHORT_ANSWER_CHARS} "
                     "characters (most facts pruned); the received answer comes back")
            return trace.received
        if all(s.kept_verbatim for s in trace.sentences):
            return trace.reconstructed
        if not layout.flat and run.on("polish.layout"):
            run.rule("polish.layout", "answer", detail="the draft has paragraphs, lists or "
                     "code: kept its layout, no polish")
            return trace.reconstructed
        edited = [s for s in trace.sentences if not s.kept_verbatim]
        if run.on("polish.in_place") and all(trace.ruled("rewrite.in_place", f"s{s.index}")
                                             for s in edited):
            run.rule("polish.in_place", "answer", detail="every change was made in place in "
                     "the draft's sentences (" + ", ".join(f"s{s.index}" for s in edited) +
                     "): no polish")
            return trace.reconstructed
        run.report("polish", 0, 1)

        async def smooth() -> str:
            return (await run.call("polisher", question=trace.question,
                                   draft=trace.reconstructed,
                                   config={"temperature": self.settings.polish_temperature})).answer
        answer = (await run.attempt("polish", "polish failed, returned the draft", smooth,
                                    None) or "").strip()
        run.report("polish", 1, 1)
        if not answer:
            return trace.reconstructed  # the failure is an error event already
        problem = polish_problem(answer, trace.reconstructed, trace.subject, run.rules)
        if problem:
            run.rule(problem[0], "answer", before=answer, after=trace.reconstructed,
                     detail=f"the polished answer {problem[1]}; the reconstructed draft is "
                            "the answer")
            return trace.reconstructed
        return answer
