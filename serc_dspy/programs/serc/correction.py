"""Phase 3a: the correction map, a one-pass unfolding of belief propagation. Contradicted facts
of a sentence are corrected together from the evidence, dependents following (logic
propagation); each reply is held to the `fix.` rules."""

from __future__ import annotations

from typing import Any, ClassVar

import dspy

from serc_dspy.core.text import best_match, normalise, similarity, unique_texts
from serc_dspy.core.trace import Check, Correction, Fact, Sentence, Trace
from serc_dspy.programs.serc.common import UNCHANGED, Settings, Stage, as_sentence
from serc_dspy.rules.agree import mentioned
from serc_dspy.rules.draft import answer_claim
from serc_dspy.rules.fixes import POSITIONAL_MIN_SIMILARITY, collateral, loses_content, rewords
from serc_dspy.rules.swaps import swap
from serc_dspy.runtime.steps import Run, StepSpec
from serc_dspy.signatures import CorrectFacts, FactFix


class Corrector(Stage):
    """Correct a sentence's contradicted facts from the evidence, with their dependents. Alone:
    `Corrector()(subject=..., evidence=..., erroneous_facts=[...], related_facts=[...])`."""

    steps: ClassVar[dict[str, StepSpec]] = {
        "corrector": StepSpec("correct", "correction"),
    }

    def __init__(self, settings: Settings | None = None, **options: Any):
        super().__init__(settings, **options)
        self.corrector = dspy.Predict(CorrectFacts)

    def forward(self, subject: str, evidence: str, erroneous_facts: list[str],
                related_facts: list[str] | None = None) -> dspy.Prediction:
        """Correct contradicted facts against `evidence` alone: each fact's status and fix."""
        trace = Trace(method="correction", subject=subject)
        check = "c0.0"
        wrong = [Fact(id=f"f0.{i}", text=t, sentence=0, verdict="CONTRADICTED", check=check)
                 for i, t in enumerate(erroneous_facts)]
        related = [Fact(id=f"f0.{len(wrong) + i}", text=t, sentence=0, verdict="SUPPORTED",
                        status="kept", check=check) for i, t in enumerate(related_facts or [])]
        trace.facts = wrong + related

        trace.checks = [Check(id=check, facts=[f.id for f in trace.facts], sentence=0,
                              evidence=evidence)]
        _, trace = self.standalone(self.correct_group, 0, wrong, trace=trace)
        return dspy.Prediction(facts=trace.facts, corrections=trace.corrections, trace=trace)

    async def correct(self, run: Run, sentence: Sentence, facts: list[Fact]) -> list[str]:
        """A sentence's correction map: SUPPORTED kept, NOT_FOUND pruned, CONTRADICTED fixed
        together with their dependents. Returns the facts the sentence accepts."""
        for fact in facts:
            if fact.verdict == "SUPPORTED":
                fact.settle("supported", status="kept")
            elif fact.verdict == "NOT_FOUND" and fact.status == "pending":
                self.prune_or_keep(run, fact)
        self.swap_slots(run, facts)
        wrong = [f for f in facts if f.verdict == "CONTRADICTED" and f.status == "pending"]
        if wrong:
            run.expect("correct", 1)
            await self.correct_group(run, sentence.index, wrong)
            run.advance("correct")
        return [f.correction or f.text for f in facts if f.status in (*UNCHANGED, "corrected")]

    def swap_slots(self, run: Run, facts: list[Fact]) -> None:
        """`choose.swap`: a fact whose slot the evidence's value took in both option orders is
        corrected by swapping that span alone (no LM call). `choose.propagate`: a fact of the
        same sentence that states the swapped value and was not itself supported takes the
        same swap, the dependents of a corrected detail following it."""
        roots = [f for f in facts if f.status == "pending" and f.verdict == "CONTRADICTED"
                 and f.witness is not None and any(s.ruling == "contradicted" for s in f.slots)]
        for fact in roots:
            fixed = swap(fact.text, fact.witness.old, fact.witness.new)
            if fixed is None and run.trace.short_draft:  # the claim quotes the question too
                part = swap(run.trace.sentences[fact.sentence].text, fact.witness.old,
                            fact.witness.new)
                fixed = answer_claim(run.trace.question, part) if part else None
            if fixed is None:
                continue  # not placeable: the corrector's LM path, behind its guards
            fact.correction = fixed
            fact.settle("choose.swap", status="corrected")
            with run.lock:
                run.trace.corrections.append(Correction(original=fact.text, fixed=fixed,
                                                        fact=fact.id, match_score=1.0))
            if not run.on("choose.propagate"):
                continue
            for other in facts:
                if other is fact or other in roots or other.verdict == "SUPPORTED" or \
                        other.status in ("corrected", "pruned"):
                    continue
                carried = swap(other.text, fact.witness.old, fact.witness.new)
                if carried is None:
                    continue
                run.rule("choose.propagate", other.id, before=other.text, after=carried,
                         detail=f"states {fact.witness.old!r}, which {fact.id} corrected to "
                                f"{fact.witness.new!r}")
                other.correction = carried
                other.settle("choose.propagate", status="corrected")
                other.witness = fact.witness
                with run.lock:
                    run.trace.corrections.append(Correction(
                        original=other.text, fixed=carried, fact=other.id, match_score=1.0,
                        propagated=True))

    def prune_or_keep(self, run: Run, fact: Fact) -> None:
        """`agree.not_found`: a NOT_FOUND fact whose key details its check's passages do
        mention is not pruned: the evidence is there, the verdict could not read it."""
        check = next((c for c in run.trace.checks if c.id == fact.check), None)
        texts = [p.text for p in check.passages] if check is not None else []
        if texts and run.on("agree.not_found") and \
                mentioned(fact.text, run.trace.subject, texts):
            fact.settle("agree.not_found", status="unverified")
            run.rule("agree.not_found", fact.id, before="pruned", after="unverified",
                     detail="its check's passages mention its key details")
        else:
            fact.settle("not found", status="pruned")

    async def correct_group(self, run: Run, sentence: int, wrong: list[Fact]) -> None:
        trace = run.trace
        related = [f for f in trace.facts if f.sentence == sentence
                   and f.verdict != "CONTRADICTED" and f.status != "pruned"]
        checks = {f.check for f in wrong}
        if all(f.quote for f in wrong) and run.on("fix.quote_evidence"):
            evidence = "\n".join(unique_texts(f.quote for f in wrong))
            run.rule("fix.quote_evidence", f"s{sentence}", detail=f"the corrector reads the "
                     f"{len(wrong)} contradicted facts' quotes, not their checks' evidence")
        else:
            evidence = "\n\n".join(c.evidence for c in trace.checks if c.id in checks)
        # A fix that restates its fact is no fix; a small model does this. With `fix.retry`
        # (off by default: it cost calls and did not pay in its ablation) one retry, on the
        # facts still open and with some sampling freedom, is allowed; then they stay
        # CONTRADICTED and uncorrected.
        temperatures = (0.0, 0.5) if run.on("fix.retry") else (0.0,)
        for attempt, temperature in enumerate(temperatures):
            open_facts = [f for f in wrong if f.status == "pending"]
            if not open_facts:
                break

            async def fix(open_facts=open_facts, temperature=temperature) -> list[FactFix]:
                return (await run.call(
                    "corrector", subject=trace.subject, evidence=evidence,
                    erroneous_facts=[f.text for f in open_facts],
                    related_facts=[f.text for f in related],
                    config={"temperature": temperature})).corrections
            fixes = await run.attempt("correct", f"correction of sentence {sentence} failed, "
                                      "facts kept", fix, None)
            if fixes is None:
                break
            self.apply_fixes(run, fixes, open_facts, related, evidence)
            if attempt == 0 and len(temperatures) > 1 and any(f.status == "pending"
                                                               for f in wrong):
                run.rule("fix.retry", f"s{sentence}", detail="a contradicted fact got no usable "
                         "fix; asked once more at temperature 0.5")
        for fact in wrong:
            self.swap_back(run, fact)
            if fact.status == "pending":
                fact.settle("no usable fix", status="uncorrected")
                run.log("correct", f"fact {fact.id} stays contradicted and uncorrected",
                        "fallback")

    def apply_fixes(self, run: Run, fixes: list[FactFix], open_facts: list[Fact],
                    related: list[Fact], evidence: str) -> None:
        """Map one corrector reply onto the open facts (and their dependents). The evidence
        licenses what a fix may change (`fix.collateral`); a dependent's change may also
        follow the reply's own corrections."""
        licence = (evidence, evidence + "\n" + "\n".join(fix.fixed or "" for fix in fixes))
        unmatched = [fix for fix in fixes
                     if not self.apply_fix(run, fix.original, fix.fixed, open_facts, related,
                                           licence)]
        still_open = [f for f in open_facts if f.status == "pending"]
        if len(unmatched) > 1 and len(still_open) == 1 and run.on("fix.join_pieces"):
            # Several pieces for the one open fact: the model split its fix. Join them.
            fact = still_open[0]
            pieces = [fix.fixed or (fix.original if normalise(fix.original)
                                    in normalise(fact.text) else "") for fix in unmatched]
            joined = " ".join(as_sentence(piece) for piece in pieces if piece.strip())
            run.rule("fix.join_pieces", fact.id, after=joined,
                     detail=f"{len(unmatched)} unmatched pieces joined")
            unmatched = [FactFix(original=fact.text, fixed=joined)]
        if unmatched and len(unmatched) == len(still_open) and run.on("fix.positional"):
            # A small model often quotes its fix, not the original, as `original`; when the
            # unmatched fixes and the open facts pair up one to one, the order decides.
            for fix, fact in zip(unmatched, still_open, strict=True):
                if similarity(fix.fixed, fact.text) < POSITIONAL_MIN_SIMILARITY:
                    continue  # a fix unlike its fact is not a fix of it: never guessed
                run.rule("fix.positional", fact.id, before=fix.original, after=fix.fixed,
                         detail="matched no fact by text; mapped by position")
                self.apply_fix(run, fact.text, fix.fixed, [fact], [], licence)

    def swap_back(self, run: Run, fact: Fact) -> None:
        """`fix.swap_back`: when the quote swapped exactly one detail, the minimal correction is
        to swap it back. It stands in for an LM fix that is missing, empty, or rewrites the
        fact's other details away (a small model copies the quote over the fact)."""
        swap = fact.witness
        minimal = swap.apply(fact.text) if swap is not None else None
        if minimal is None or not run.on("fix.swap_back"):
            return
        if fact.status == "corrected" and not loses_content(fact.text, fact.correction or "",
                                                            swap.old):
            return
        why = ("instead of a fix that dropped other details" if fact.status == "corrected"
               else "no usable fix")
        run.rule("fix.swap_back", fact.id, before=fact.correction or fact.text, after=minimal,
                 detail=f"{swap.old} -> {swap.new} from its quote ({why})")
        fact.correction = minimal
        fact.settle("fix.swap_back", status="corrected")

    def apply_fix(self, run: Run, original: str, fixed: str, wrong: list[Fact],
                  related: list[Fact], licence: tuple[str, str] = ("", "")) -> bool:
        """Map a returned `original` to the closest buffered fact, else to a dependent fact.

        A fix equal to its fact (after case and punctuation) is a no-op and changes nothing; a
        propagated (dependent-fact) change may rewrite a fact but never delete it. Returns
        whether `original` matched a fact.
        """
        fixed = (fixed or "").strip()
        record = Correction(original=original, fixed=fixed)
        for pool, propagated in ((wrong, False), (related, True)):
            open_facts = [f for f in pool if f.status in ("pending", "kept", "unverified")]
            match = best_match(original, [f.text for f in open_facts], self.settings.match_cutoff)
            if match is None:
                continue
            fact = open_facts[match[0]]
            record.fact, record.match_score, record.propagated = fact.id, match[1], propagated
            refused = self.refuse_fix(run, fact, fixed, propagated, licence[propagated])
            if refused is not None:
                rule, why = refused
                if not propagated or rule in ("fix.propagated_delete", "fix.collateral"):
                    run.rule(rule, fact.id, before=fact.text, after=fixed, detail=why)
                break
            fact.correction = fixed or None  # empty, with its rules off: pruned, as the paper
            fact.settle("corrector, propagated" if propagated else "corrector",
                        status="corrected" if fixed else "pruned")
            break
        else:
            run.log("correct", f"correction for {original!r} matched no fact", "fallback")
        with run.lock:
            run.trace.corrections.append(record)
        return record.fact is not None

    def refuse_fix(self, run: Run, fact: Fact, fixed: str, propagated: bool,
                   evidence: str = "") -> tuple[str, str] | None:
        """The `fix.` rule that refuses a fix for this fact and why, or None when it is a
        correction."""
        if run.on("fix.restates") and normalise(fixed) == normalise(fact.text):
            return "fix.restates", "not a correction: it restates its fact"
        if run.on("fix.rewords") and fixed and rewords(fact.text, fixed, run.trace.subject):
            return "fix.rewords", "not a correction: it rewords its fact"
        witness = fact.witness
        if not propagated and fixed and witness is not None and witness.kept_by(fixed) and \
                run.on("fix.keeps_contradicted"):
            # "appointed Knight of the Thistle in 2009" -> "knighted in 2009": the year the
            # quote contradicts is still there, so nothing was fixed.
            return "fix.keeps_contradicted", "not a correction: it keeps the contradicted detail"
        if fixed and evidence and run.on("fix.collateral"):
            contradicted = witness.old if witness is not None else None
            damage = collateral(fact.text, fixed, evidence, run.trace.subject, contradicted,
                                words=not propagated)
            if damage:
                return "fix.collateral", damage
        if propagated and not fixed and run.on("fix.propagated_delete"):
            return "fix.propagated_delete", "not a correction: a propagated change may not delete"
        if not fixed and run.on("fix.empty"):
            # An empty fix says the corrector could not fix it, not that the fact is false
            # beyond repair: the fact stays contradicted (and open for the retry).
            return "fix.empty", "not a correction: it is empty"
        return None
