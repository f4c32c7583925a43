"""Phase 2: the check nodes. A sentence's atomic facts (variable nodes), grouped into check
nodes of bounded degree; each check's query, evidence and a verdict per fact, held to the
rules (quotes, agreement)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import dspy

from serc_dspy.core.errors import MalformedOutput
from serc_dspy.core.trace import Check, Fact, Passage, Sentence, Trace
from serc_dspy.programs.base import format_passages
from serc_dspy.programs.serc.common import (
    NO_PASSAGES_EVIDENCE,
    Settings,
    Stage,
    node_order,
    subject_name,
)
from serc_dspy.retrieval.base import RetrievalError, cap_context, passage_window
from serc_dspy.rules.agree import MIN_AGREEING, contradicting, found_swap, swap_witnessed
from serc_dspy.rules.cover import uncovered_slots
from serc_dspy.rules.draft import answer_claim
from serc_dspy.rules.hygiene import clean_facts, not_a_statement, split_clauses, subject_pronouns
from serc_dspy.rules.quotes import HeldVerdict, hold_to_quote
from serc_dspy.runtime.steps import Run, StepSpec
from serc_dspy.signatures import (
    AtomicFacts,
    EvidenceSummary,
    JudgeFact,
    JudgeFacts,
    ParametricEvidence,
    QuoteAndJudge,
    VerificationQuery,
)
from serc_dspy.verifiers.base import VERIFIER_FAILED, bounded_verdicts

Judge = Callable[[Run, Check, list[Fact]], Awaitable[None]]
"""A check node's verdict step in place of the free verdicts (`SlotChooser.judge`)."""


class CheckNodes(Stage):
    """Decompose a sentence into facts, group them into check nodes, and give each fact its
    syndrome. Alone: `CheckNodes(retriever=corpus)(subject=..., sentence=...)`."""

    steps: ClassVar[dict[str, StepSpec]] = {
        "fact_extractor": StepSpec("decompose", "atomic_facts"),
        "query_writer": StepSpec("verify", "verification_query"),
        "evidence_writer": StepSpec("verify", "evidence_summary"),
        "recaller": StepSpec("verify", "parametric_evidence"),
        "verifier": StepSpec("verify", "verdicts"),
        "single_verifier": StepSpec("verify", "verdict"),
        "fact_checker": StepSpec("verify", "cited_verdict"),
    }

    def __init__(self, settings: Settings | None = None, **options: Any):
        super().__init__(settings, **options)
        self.fact_extractor = dspy.Predict(AtomicFacts)
        self.query_writer = dspy.Predict(VerificationQuery)
        self.evidence_writer = dspy.Predict(EvidenceSummary)
        self.recaller = dspy.Predict(ParametricEvidence)
        self.verifier = dspy.Predict(JudgeFacts)
        self.single_verifier = dspy.Predict(JudgeFact)
        self.fact_checker = dspy.Predict(QuoteAndJudge)

    def forward(self, subject: str, sentence: str) -> dspy.Prediction:
        """One sentence through the check nodes alone: its facts, checks and verdicts."""
        trace = Trace(method="checks", subject=subject, received=sentence)
        node = Sentence(index=0, text=sentence)
        trace.sentences = [node]

        async def check(run: Run) -> list[Fact]:
            facts = await self.decompose(run, node)
            for each in self.build_checks(run, node, facts):
                await self.detect(run, each)
            return facts

        facts, trace = self.standalone(check, trace=trace)
        return dspy.Prediction(facts=facts, checks=trace.checks, trace=trace)

    async def decompose(self, run: Run, sentence: Sentence) -> list[Fact]:
        """S_i -> F_i, its atomic facts (variable nodes), in the trace in sentence order. A
        short caller draft is one claim, the answer to the question (no extraction call)."""
        trace = run.trace

        async def extract() -> list[str]:
            return (await run.call("fact_extractor", subject=trace.subject,
                                   sentence=sentence.text)).facts
        if trace.short_draft:
            texts = [answer_claim(trace.question, sentence.text)]
        else:
            raw = await run.attempt("decompose", f"sentence {sentence.index} kept unverified",
                                    extract, None)
            texts = self.hygiene(run, sentence, raw)
        facts = [Fact(id=f"f{sentence.index}.{i}", text=text, sentence=sentence.index)
                 for i, text in enumerate(texts)]
        if texts and not trace.short_draft and self.settings.verdicts == "choose" and \
                run.on("choose.uncovered") and (slots := uncovered_slots(
                    sentence.text, texts, subject_name(trace.subject) or trace.subject)):
            facts.append(Fact(id=f"f{sentence.index}.{len(facts)}", text=sentence.text,
                              sentence=sentence.index, slots=slots))
            run.rule("choose.uncovered", facts[-1].id, after=sentence.text, detail="no fact "
                     "states " + ", ".join(repr(s.text) for s in slots))
        with run.lock:
            trace.facts.extend(facts)
            trace.facts.sort(key=node_order)
        run.advance("decompose")
        return facts

    def hygiene(self, run: Run, sentence: Sentence, raw: list[str] | None) -> list[str]:
        """Keep only statements grounded in the sentence (the `hygiene.` rules); each item
        dropped, split or stood in for is a ruling on the sentence.

        If nothing usable is left of a sentence that was read, the sentence itself becomes its
        one fact, so it is still verified rather than silently passed through.
        """
        if raw is None:
            return []
        node = f"s{sentence.index}"
        if len(raw) > 4 * self.settings.max_facts_per_sentence:
            run.log("decompose", f"sentence {sentence.index}: the extractor returned {len(raw)} "
                    f"items; read the first {4 * self.settings.max_facts_per_sentence} "
                    "(max_facts_per_sentence)", "fallback")
            raw = raw[:4 * self.settings.max_facts_per_sentence]
        name = subject_name(run.trace.subject)
        if run.on("hygiene.clause_split"):
            pronouns = subject_pronouns(run.trace.received)
            split = []
            for item in raw:
                parts = split_clauses(str(item), name, pronouns)
                if len(parts) > 1:
                    run.rule("hygiene.clause_split", node, before=str(item),
                             after=" | ".join(parts))
                split += parts
            raw = split
        # Grounded in the sentence and the subject's name, never its characteristic: that is a
        # descriptor a model wrote, and "Rennie Fritchie (American actor, producer, and
        # director)", guessed from the question alone, made a life peer's fact "actress".
        facts, dropped = clean_facts(raw, sentence.text, name or run.trace.subject, run.rules)
        if len(facts) > self.settings.max_facts_per_sentence:
            run.log("decompose", f"sentence {sentence.index}: {len(facts)} facts; kept the first "
                    f"{self.settings.max_facts_per_sentence} (max_facts_per_sentence)", "fallback")
            facts = facts[:self.settings.max_facts_per_sentence]
        for item in dropped:
            run.rule(item.rule, node, before=item.text, after=item.after, detail=item.reason)
        if not facts and run.on("hygiene.sentence_fact") and \
                not_a_statement(sentence.text, run.rules) is None:
            run.rule("hygiene.sentence_fact", node, after=sentence.text,
                     detail="no usable fact extracted; the sentence is checked as one fact")
            facts = [sentence.text]
        return facts

    def build_checks(self, run: Run, sentence: Sentence, facts: list[Fact]) -> list[Check]:
        """Group a sentence's facts into check nodes of bounded degree (`c<sentence>.<j>`)."""
        size = self.settings.max_facts_per_check
        checks = []
        for j, start in enumerate(range(0, len(facts), size)):
            group = facts[start:start + size]
            check = Check(id=f"c{sentence.index}.{j}", sentence=sentence.index,
                          facts=[f.id for f in group])
            for fact in group:
                fact.check = check.id
            checks.append(check)
        with run.lock:
            run.trace.checks.extend(checks)
            run.trace.checks.sort(key=node_order)
        return checks

    async def detect(self, run: Run, check: Check, judge: Judge | None = None) -> None:
        """One check node's syndrome: query, evidence, a verdict per fact (by `judge`, when
        given, in place of the free verdicts). A failed check leaves its facts unverified,
        never judged."""
        facts = [run.trace.fact(fid) for fid in check.facts]

        def unverified(error: str) -> None:
            check.error = error
            for fact in facts:
                fact.settle("check failed", verdict=None, status="unverified")

        await run.attempt("detect", f"check {check.id} failed, its facts stay unverified",
                          lambda: self.run_check(run, check, facts, judge), None,
                          failed=unverified)

    async def run_check(self, run: Run, check: Check, facts: list[Fact],
                        judge: Judge | None = None) -> None:
        subject = run.trace.subject
        if self.settings.queries == "facts":
            check.query = " ".join([subject, *(f.text for f in facts)])
        else:
            check.query = (await run.call("query_writer", subject=subject,
                                          facts=[f.text for f in facts])).query.strip()
        if not check.query:
            raise MalformedOutput("the query writer returned an empty query")
        if not self.settings.use_retrieval:
            check.evidence_source = "parametric"
            check.evidence = (await run.call("recaller", query=check.query)).evidence.strip()
        else:
            check.passages = await self.settings.retrieve(run, check.query)
            if self.settings.fact_evidence:
                await self.own_passages(run, check, facts)
            if not check.passages:
                check.evidence_source = "none"
                check.evidence = NO_PASSAGES_EVIDENCE
                empty = run.on("evidence.empty_search")
                run.log("detect", f"check {check.id}: the search returned nothing for "
                        f"{check.query[:80]!r}; its facts are "
                        + ("NOT_FOUND and will be pruned" if empty else "kept unverified"))
                for fact in facts:
                    if empty:
                        fact.settle("evidence.empty_search", verdict="NOT_FOUND")
                        run.rule("evidence.empty_search", fact.id, after="NOT_FOUND",
                                 detail=f"check {check.id}'s search returned no passages")
                    else:
                        fact.settle("the search returned no passages", verdict=None,
                                    status="unverified")
                return
            if self.settings.evidence == "passages":
                check.evidence = format_passages(self.windowed(check.passages, facts))
            else:
                check.evidence = (await run.call(
                    "evidence_writer", query=check.query,
                    passages=format_passages(check.passages))).evidence.strip()
        if not check.evidence:
            # An empty summary is a failed evidence step, not evidence that found nothing:
            # judged against it, every fact would be NOT_FOUND and pruned.
            raise RetrievalError(f"the {check.evidence_source or 'evidence'} summary came back "
                                 "empty")
        if judge is not None:
            await judge(run, check, facts)
        else:
            await self.judge(run, check, facts)
            await self.recheck_swaps(run, check, facts)
        await self.agree(run, check, facts)

    async def own_passages(self, run: Run, check: Check, facts: list[Fact]) -> None:
        """Per-fact evidence: the passages found for each fact's own text join the check's
        (deduplicated), and the fact remembers which are its own. A failed per-fact search
        is an error event, and the check goes on with the evidence it has: its own query's
        passages were found."""
        name = subject_name(run.trace.subject)
        seen = {(p.source, p.text): i for i, p in enumerate(check.passages)}
        for fact in facts:
            query = fact.text if name.lower() in fact.text.lower() else f"{name} {fact.text}"
            found = await run.attempt(
                "detect", f"check {check.id}: the search for fact {fact.id}'s own evidence "
                "failed; its check goes on with the passages it has",
                lambda query=query: self.settings.retrieve(run, query.strip()), [])
            for passage in found:
                key = (passage.source, passage.text)
                if key not in seen:
                    seen[key] = len(check.passages)
                    check.passages.append(passage)
                fact.own_passages.append(seen[key])
        check.passages = cap_context(check.passages, self.settings.context_chars * 2)
        for fact in facts:
            fact.own_passages = [i for i in fact.own_passages if i < len(check.passages)]

    def windowed(self, passages: list[Passage], facts: list[Fact]) -> list[Passage]:
        """With `evidence_window`, each passage cut to the sentences about the check node's
        facts (one cut for the whole node, so its verdicts share their evidence in the
        engine's cache, and its correction reads the same); the passages as found otherwise."""
        window = self.settings.evidence_window
        if not window:
            return passages
        claims = [f.text for f in facts]
        return [passage_window(p, claims, window) for p in passages]

    def evidence_for(self, check: Check, fact: Fact, facts: list[Fact]) -> str:
        """What one fact's verdict reads: with `fact_evidence`, its own passages first, then
        the check's, within the context budget (each cut like the check's evidence); the
        check's evidence otherwise."""
        if self.settings.evidence != "passages" or not fact.own_passages:
            return check.evidence
        order = fact.own_passages + [i for i in range(len(check.passages))
                                     if i not in fact.own_passages]
        passages = self.windowed([check.passages[i] for i in order], facts)
        return format_passages(cap_context(passages, self.settings.context_chars))

    async def judge(self, run: Run, check: Check, facts: list[Fact]) -> None:
        """Set each fact's syndrome. `verdicts="check"`: one call judges the whole check node
        (redone fact by fact if the reply has the wrong length). `verdicts="fact"`: one call
        per fact that first quotes the evidence sentence it rests on; the calls share the
        prompt prefix up to the claim, which the engine's prompt cache serves once."""
        evidence = check.evidence
        if self.settings.verdicts == "fact":
            for fact in facts:
                evidence = self.evidence_for(check, fact, facts)
                cited = await run.call("fact_checker", evidence=evidence, claim=fact.text)
                fact.quote = (cited.quote or "").strip() or None
                fact.settle("fact_checker", verdict=cited.verdict, model=True)
                if self.cross_check(run, evidence, fact).unwitnessed and \
                        run.on("quote.second_vote"):
                    await self.second_opinion(run, evidence, fact)
            return
        verdicts = await self.check_verdicts(run, evidence, facts)
        for fact, verdict in zip(facts, verdicts, strict=True):
            fact.settle("verifier", verdict=verdict, model=True)

    def cross_check(self, run: Run, evidence: str, fact: Fact) -> HeldVerdict:
        """Hold a cited verdict to its own quote (`rules.quotes.hold_to_quote`): a quote from
        the evidence that gives another value for one of the claim's details contradicts it,
        an echoed claim proves nothing, and a contradiction's witness is kept on the fact for
        the correction. A contradiction without one goes to `second_opinion`."""
        held = hold_to_quote(fact.verdict, fact.text, fact.quote, evidence, run.trace.subject,
                             run.rules)
        if held.rule:
            run.rule(held.rule, fact.id, before=fact.verdict, after=held.verdict,
                     detail=held.note or "")
        fact.witness = held.witness
        fact.settle(held.rule or "quote", verdict=held.verdict)
        return held

    async def second_opinion(self, run: Run, evidence: str, fact: Fact) -> None:
        """`quote.second_vote`: a cited contradiction whose quote shows no conflicting detail
        rests on the verifier's word alone. On the held-out noise bios every such
        contradiction of a true fact was "corrected" into a false one ("born on April 8,
        1944" -> "April 7, 1944", citing a paragraph about his death), so such a fact is never
        rewritten: the uncited verifier votes, SUPPORTED keeps it, any other vote prunes it
        (NOT_FOUND). A failed vote leaves it unverified, in the draft's words."""
        def unverified(error: str) -> None:
            fact.settle("second opinion failed", verdict=None, status="unverified")

        judged = await run.attempt(
            "detect", f"second opinion on fact {fact.id} failed, it stays unverified",
            lambda: run.call("single_verifier", evidence=evidence, claim=fact.text), None,
            failed=unverified)
        if judged is None:
            return
        fact.second_verdict = judged.verdict
        fact.settle("quote.second_vote",
                    verdict="SUPPORTED" if judged.verdict == "SUPPORTED" else "NOT_FOUND")
        run.rule("quote.second_vote", fact.id, before="CONTRADICTED", after=fact.verdict,
                 detail=f"its quote shows no conflicting detail; the second verdict said "
                        f"{judged.verdict}")

    async def recheck_swaps(self, run: Run, check: Check, facts: list[Fact]) -> None:
        """`agree.found_swap`: a NOT_FOUND fact is pruned, yet a passage may give one of its
        details another value, the case of a swapped year or name that the verdict did not
        read. That sentence alone is shown to the uncited verifier: CONTRADICTED there makes
        the fact contradicted with the swap as its witness (two signals: the word-level swap
        and that verdict), so correction can swap the detail back. Any other vote leaves the
        NOT_FOUND as it was. A fact is asked at most once, and every ask leaves a ruling."""
        if not run.on("agree.found_swap") or not check.passages:
            return
        for fact in facts:
            if fact.verdict != "NOT_FOUND":
                continue
            order = fact.own_passages + [i for i in range(len(check.passages))
                                         if i not in fact.own_passages]
            found = found_swap(fact.text, run.trace.subject,
                               [check.passages[i].text for i in order])
            if found is None:
                continue
            witness, sentence = found
            judged = await run.attempt(
                "detect", f"second verdict on fact {fact.id} failed",
                lambda fact=fact, sentence=sentence: run.call(
                    "single_verifier", evidence=sentence, claim=fact.text), None)
            if judged is None:
                continue
            if judged.verdict == "CONTRADICTED":
                fact.witness = witness
                fact.settle("single_verifier", verdict="CONTRADICTED")
                fact.second_verdict = fact.votes["second"] = "CONTRADICTED"
                fact.votes["swap"] = "CONTRADICTED"
            run.rule("agree.found_swap", fact.id, before="NOT_FOUND", after=fact.verdict,
                     detail=f"{witness.reason}; judged {judged.verdict} on that sentence "
                            f"({sentence!r})")

    async def agree(self, run: Run, check: Check, facts: list[Fact]) -> None:
        """`agree.contradiction`: a contradicted fact is changed only when two independent
        signals say CONTRADICTED (its verdict, when witnessed by its quote or given for the
        whole group; a witnessed one-detail swap; a second verdict by another prompt on its
        own passages, asked only when the others do not already agree and it could make two;
        the claim verifier).
        One alone leaves it `disputed`, in the draft's words."""
        wrong = [f for f in facts if f.verdict == "CONTRADICTED"]
        if not wrong or not run.on("agree.contradiction"):
            return
        for fact in wrong:
            evidence = self.evidence_for(check, fact, facts)
            # a fact `recheck_swaps` made contradicted was judged NOT_FOUND: no verdict vote
            judged = not run.trace.ruled("agree.found_swap", fact.id)
            if judged and self.settings.verdicts != "choose" and \
                    (self.settings.verdicts == "check" or fact.witness is not None):
                signal = "cited" if self.settings.verdicts == "fact" else "check"
                fact.votes[signal] = "CONTRADICTED"
            if swap_witnessed(fact.witness):
                fact.votes["swap"] = "CONTRADICTED"

            async def second(fact=fact, evidence=evidence) -> str:
                return (await run.call("single_verifier", evidence=evidence,
                                       claim=fact.text)).verdict
            # the votes a second verdict could bring the fact to: asked only where it can make
            # two (an unwitnessed cited verdict is no vote, so without a claim verifier a
            # second one alone could not, and the fact is disputed without the call)
            reachable = contradicting(fact.votes) + 1 + \
                (self.settings.claim_verifier is not None)
            if fact.second_verdict is not None:
                fact.votes["second"] = fact.second_verdict
            elif contradicting(fact.votes) < MIN_AGREEING <= reachable:
                vote = await run.attempt("detect", f"second verdict on fact {fact.id} failed",
                                         second, None)
                if vote is not None:
                    fact.second_verdict = fact.votes["second"] = vote
            if self.settings.claim_verifier is not None:
                texts = [p.text for p in check.passages] or [check.evidence]
                judged = await run.attempt(
                    "detect", f"{VERIFIER_FAILED} on {fact.id}; its other votes stand",
                    lambda fact=fact, texts=texts: bounded_verdicts(
                        self.settings.claim_verifier, [fact.text], texts,
                        seconds=run.seconds_left()), None)
                if judged:
                    fact.votes["verifier"] = judged[0].verdict
            if contradicting(fact.votes) < MIN_AGREEING:
                fact.settle("agree.contradiction", status="disputed")
                run.rule("agree.contradiction", fact.id, before="CONTRADICTED",
                         after="disputed", detail="signals: " + ", ".join(
                             f"{k} {v}" for k, v in fact.votes.items()))
            elif run.trace.ruled("choose.rejected", fact.id):
                # confirmed, yet no value of the evidence fits the slot: a rewrite would have
                # to invent one ("three separate tenures" became "four" on the tuning split)
                fact.settle("choose.rejected", status="disputed")
                run.rule("choose.rejected", fact.id, before="CONTRADICTED", after="disputed",
                         detail="a second vote agrees, but no value of the evidence fits: "
                                "kept in the draft's words")

    async def check_verdicts(self, run: Run, evidence: str, facts: list[Fact]) -> list[str]:
        claims = [f.text for f in facts]
        if len(claims) > 1:
            verdicts = (await run.call("verifier", evidence=evidence, claims=claims)).verdicts
            if len(verdicts) == len(claims):
                return list(verdicts)
            run.log("detect", f"verifier returned {len(verdicts)} verdicts for {len(claims)} "
                    "claims; judging them one by one", "fallback")
        return [(await run.call("single_verifier", evidence=evidence, claim=claim)).verdict
                for claim in claims]
