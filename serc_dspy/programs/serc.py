"""SERC: decode an LM answer like a noisy codeword against retrieved evidence.

`forward` reads like the paper's Algorithm 1: align (firewall), decompose, detect (check nodes),
correct (one-pass belief propagation), reconstruct (fact-to-text), polish. Every phase writes
into the trace; nothing is recomputed from text afterwards.

Failure policy (where the reference implementation lost facts): a retriever or LM failure
never becomes evidence. Facts whose check failed are marked `unverified` and kept verbatim; a
failed correction keeps the fact (`uncorrected`); a failed rewrite keeps the original sentence.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Literal

import dspy

from serc_dspy.entities import Descriptor, more_specific, same_name
from serc_dspy.errors import describe
from serc_dspy.facts import clean_facts, not_a_statement
from serc_dspy.programs.base import (
    NO_INFO_ANSWER,
    InputError,
    Run,
    TracedProgram,
    check_text,
    format_passages,
)
from serc_dspy.retrieval.base import RetrievalError
from serc_dspy.signatures import (
    AnswerEntity,
    AtomicFacts,
    CorrectFacts,
    EvidenceEntity,
    EvidenceSummary,
    GroundedAnswer,
    JudgeFact,
    JudgeFacts,
    ParametricEvidence,
    PolishAnswer,
    QueryEntity,
    RewriteSentence,
    SameEntity,
    VerificationQuery,
)
from serc_dspy.text import (
    SHORT_ANSWER_CHARS,
    SHORT_SENTENCE_CHARS,
    best_match,
    is_refusal,
    is_runaway,
    needs_cold_start,
    normalise,
    split_sentences,
)
from serc_dspy.trace import Check, Correction, Fact, Passage, Sentence, Trace

Density = Literal["sentence", "atomic"]
UNCHANGED = ("kept", "unverified", "uncorrected")
NO_PASSAGES_EVIDENCE = "The search returned no passages for this query."



class _CompiledLoad:
    """`SERC.load(path, **options)` builds a SERC with a compiled state (`compiled=path`).

    On an instance, `program.load(...)` stays DSPy's in-place `Module.load`, which DSPy's own
    optimizers call on copies of a program.
    """

    def __get__(self, instance, owner):
        if instance is None:
            def load(path: str | Path, **options: Any) -> SERC:
                return owner(compiled=path, **options)
            return load
        return functools.partial(dspy.Module.load, instance)


class SERC(TracedProgram):
    """Semantic Error-Reduction and Correction as a DSPy module.

    Args:
        retriever: any callable `(query, k) -> list[Passage | str | dict]`.
        firewall: run the entity firewall (phase 1, steps 3-5).
        use_retrieval: False takes every piece of evidence from the LM's own knowledge and
            never calls the retriever (the paper's "w/o RAG" ablation).
        density: "sentence" groups a sentence's facts into check nodes of at most
            `max_facts_per_check`; "atomic" gives each fact its own check (High-Density).
        max_facts_per_check: the paper's bound on a check node's degree (5).
        match_cutoff: similarity a returned `original` needs to be mapped to a fact.
        top_k / context_chars: retrieval depth and context cap (the paper's 8 and 20,000).
        max_workers: how many independent calls (sentences, check nodes) run at once.
        lms: per-stage LMs, e.g. `{"verify": big_lm}`; other stages use the configured LM.
        adapter: DSPy adapter for every call (the embedded model needs `dspy.JSONAdapter()`).
        progress: `progress(phase, done, total)` callback.
        polish_temperature: the paper polishes at 0.1.
        compiled: a compiled state to apply at the end of construction: a `.json` path saved
            by `serc compile`, or a NAME of a state shipped in `serc_dspy/compiled/NAME.json`.
            Each saved stage's signature hash is checked first (CompiledStateError on a
            mismatch, naming the stage); pickles are refused.
    """

    method_name = "serc"

    def __init__(
        self,
        retriever=None,
        *,
        firewall: bool = True,
        use_retrieval: bool = True,
        density: Density = "sentence",
        max_facts_per_check: int = 5,
        match_cutoff: float = 0.75,
        polish_temperature: float = 0.1,
        compiled: str | Path | None = None,
        **options: Any,
    ):
        super().__init__(retriever, **options)
        if density not in ("sentence", "atomic"):
            raise InputError(f"density must be 'sentence' or 'atomic', got {density!r}")
        if max_facts_per_check < 1:
            raise InputError(f"max_facts_per_check must be at least 1, got {max_facts_per_check}")
        if not 0.0 < match_cutoff <= 1.0:
            raise InputError(f"match_cutoff must be in (0, 1], got {match_cutoff}")
        self.firewall = firewall
        self.use_retrieval = use_retrieval
        self.density = density
        self.max_facts_per_check = 1 if density == "atomic" else max_facts_per_check
        self.match_cutoff = match_cutoff
        self.polish_temperature = polish_temperature

        self.grounded_answerer = dspy.Predict(GroundedAnswer)
        self.query_entity = dspy.Predict(QueryEntity)
        self.answer_entity = dspy.Predict(AnswerEntity)
        self.evidence_entity = dspy.Predict(EvidenceEntity)
        self.entity_judge = dspy.Predict(SameEntity)
        self.fact_extractor = dspy.Predict(AtomicFacts)
        self.query_writer = dspy.Predict(VerificationQuery)
        self.evidence_writer = dspy.Predict(EvidenceSummary)
        self.recaller = dspy.Predict(ParametricEvidence)
        self.verifier = dspy.Predict(JudgeFacts)
        self.single_verifier = dspy.Predict(JudgeFact)
        self.corrector = dspy.Predict(CorrectFacts)
        self.rewriter = dspy.Predict(RewriteSentence)
        self.polisher = dspy.Predict(PolishAnswer)
        if compiled is not None:
            from serc_dspy.compiling.state import load_compiled

            load_compiled(self, compiled)

    load = _CompiledLoad()

    # ======================================================================================
    def forward(self, question: str, draft: str | None = None) -> dspy.Prediction:
        if self.use_retrieval and self.retriever is None:
            check_text("question", question)
            raise InputError(
                "SERC needs a retriever: pass SERC(retriever=...) (e.g. a LocalCorpus), "
                "or SERC(use_retrieval=False) to verify against the LM's own knowledge"
            )
        run, question, draft = self.start(question, draft)
        self.align(run, question, draft)
        if run.trace.status != "no_info":
            self.decompose(run)
            self.detect(run)
            self.correct(run)
            self.reconstruct(run)
            self.polish(run)
        return self.finish(run, run.trace.answer)

    # == Phase 1: coarse alignment and the entity firewall ==================================
    def align(self, run: Run, question: str, draft: str | None) -> None:
        trace = run.trace
        trace.firewall.enabled = self.firewall
        received = self.initial_answer(run, question, draft)
        context = _LazyContext(self, run, question)

        if needs_cold_start(received):
            trace.cold_start = True
            passages = context.get()
            if passages:
                received = self.grounded_answer(run, question, passages, received)
            if not passages or is_refusal(received) or not received.strip():
                if is_refusal(received) or not received.strip():
                    trace.status = "no_info"
                    trace.received = received
                    trace.answer = NO_INFO_ANSWER
                    run.log("align", "no usable answer and no retrieved context", "fallback")
                    return
        trace.received = received
        trace.subject = question
        if self.firewall and not trace.cold_start:
            self.entity_firewall(run, question, context)
        elif trace.cold_start:
            trace.firewall.error = "skipped: the answer was already grounded by the cold start"

    def grounded_answer(self, run: Run, question: str, passages: list[Passage],
                        fallback: str) -> str:
        try:
            return self.call(run, "grounded_answer", "generate", self.grounded_answerer,
                             question=question, context=format_passages(passages)).answer.strip()
        except Exception as exc:  # an LM failure keeps the answer we had
            run.log("align", f"grounded answer failed, kept the draft: {describe(exc)}", "error")
            return fallback

    def entity_firewall(self, run: Run, question: str, context: _LazyContext) -> None:
        """Steps 3-5. The received answer (a caller's draft included) is replaced only when the
        judge positively found a different entity from two usable descriptors whose names
        differ; every other outcome passes, and `firewall.decision` says why."""
        trace, firewall = run.trace, run.trace.firewall
        run.report("firewall", 0, 1)
        passages = context.get()
        readers = {
            "query": (self.query_entity, {"question": question}),
            "answer": (self.answer_entity, {"answer": trace.received}),
            "evidence": (self.evidence_entity, {"context": format_passages(passages)}),
        }
        kinds = ["query", "answer"] + (["evidence"] if passages else [])

        def describe_entity(kind: str) -> Descriptor:
            predictor, inputs = readers[kind]
            result = self.call(run, f"{kind}_entity", "firewall", predictor, **inputs)
            return Descriptor.of(result.name, result.characteristic)

        try:
            found = dict(zip(kinds, self.parallel(describe_entity, kinds), strict=True))
        except Exception as exc:
            firewall.error = f"descriptor extraction failed: {describe(exc)}"
            firewall.decision = "passed: the descriptors could not be read"
            run.log("firewall", firewall.error, "error")
            return
        query, answer = found["query"], found["answer"]
        evidence = found.get("evidence", Descriptor())
        firewall.query_entity, firewall.answer_entity = str(query), str(answer)
        firewall.evidence_entity = str(evidence)
        trace.subject = str(more_specific(answer, query)) or question
        if not passages:
            firewall.decision = "passed: no retrieved context to compare with"
            return
        if not (answer.usable and evidence.usable):
            which = " and ".join(k for k, d in (("answer", answer), ("evidence", evidence))
                                 if not d.usable)
            firewall.decision = f"passed: the {which} descriptor is empty or a placeholder"
            run.log("firewall", firewall.decision, "fallback")
            return
        if same_name(answer.name, evidence.name):
            firewall.same_entity = True
            firewall.decision = "passed: the answer and the evidence name the same entity " \
                                "(same normalised name, no judge call)"
            trace.subject = str(more_specific(answer, evidence))
            return
        try:
            judged = self.call(run, "same_entity", "firewall", self.entity_judge,
                               answer_entity=str(answer), evidence_entity=str(evidence))
        except Exception as exc:
            firewall.error = f"entity judge failed: {describe(exc)}"
            firewall.decision = "passed: the entity judge failed"
            run.log("firewall", firewall.error, "error")
            return
        firewall.analysis = judged.analysis
        firewall.same_entity = judged.same == "YES"
        if firewall.same_entity:
            firewall.decision = "passed: the judge found the same entity under different names"
            trace.subject = str(more_specific(answer, evidence))
            return
        firewall.reset = True
        firewall.decision = (f"reset: the judge found {answer} and {evidence} to be different "
                             "entities")
        firewall.replaced_answer = trace.received
        trace.subject = str(evidence)
        trace.received = self.grounded_answer(run, question, passages, trace.received)
        run.log("firewall", f"entity mismatch ({answer} vs {evidence}): hard reset to a "
                "context-grounded answer")

    # == Phase 2: fact decomposition and sparse verification =================================
    def decompose(self, run: Run) -> None:
        trace = run.trace
        texts = split_sentences(trace.received)
        trace.sentences = [Sentence(index=k, text=text) for k, text in enumerate(texts)]
        done = [0]

        def extract(sentence: Sentence) -> list[str]:
            try:
                raw = self.call(run, "atomic_facts", "decompose", self.fact_extractor,
                                subject=trace.subject, sentence=sentence.text).facts
            except Exception as exc:
                run.log("decompose", f"sentence {sentence.index} kept unverified: "
                        f"{describe(exc)}", "error")
                raw = None
            facts = self.hygiene(run, sentence, raw)
            with run.lock:
                done[0] += 1
            run.report("decompose", done[0], len(texts))
            return facts

        per_sentence = self.parallel(extract, trace.sentences)
        for sentence, facts in zip(trace.sentences, per_sentence, strict=True):
            for i, text in enumerate(facts):
                trace.facts.append(Fact(id=f"f{sentence.index}.{i}", text=text,
                                        sentence=sentence.index))
        self.build_checks(trace)

    def hygiene(self, run: Run, sentence: Sentence, raw: list[str] | None) -> list[str]:
        """Keep only statements grounded in the sentence; log every fact that is dropped.

        If nothing usable is left of a sentence that was read, the sentence itself becomes its
        one fact, so it is still verified rather than silently passed through.
        """
        if raw is None:
            return []
        facts, dropped = clean_facts(raw, sentence.text, run.trace.subject)
        for fact, reason in dropped:
            run.log("decompose", f"sentence {sentence.index}: dropped fact {fact!r} ({reason})",
                    "fallback")
        if not facts and not_a_statement(sentence.text) is None:
            run.log("decompose", f"sentence {sentence.index}: no usable fact extracted; the "
                    "sentence is checked as one fact", "fallback")
            facts = [sentence.text]
        return facts

    def build_checks(self, trace: Trace) -> None:
        """Group each sentence's facts into check nodes of bounded degree."""
        size = self.max_facts_per_check
        for sentence in trace.sentences:
            facts = [f for f in trace.facts if f.sentence == sentence.index]
            for start in range(0, len(facts), size):
                check = Check(id=f"c{len(trace.checks)}", sentence=sentence.index,
                              facts=[f.id for f in facts[start:start + size]])
                for fact in facts[start:start + size]:
                    fact.check = check.id
                trace.checks.append(check)

    def detect(self, run: Run) -> None:
        trace = run.trace
        done = [0]
        run.report("detect", 0, len(trace.checks))

        def verify(check: Check) -> None:
            facts = [trace.fact(fid) for fid in check.facts]
            try:
                self.run_check(run, check, facts)
            except Exception as exc:
                check.error = describe(exc)
                for fact in facts:
                    fact.verdict, fact.status = None, "unverified"
                run.log("detect", f"check {check.id} failed, its facts stay unverified: "
                        f"{check.error}", "error")
            with run.lock:
                done[0] += 1
            run.report("detect", done[0], len(trace.checks))

        self.parallel(verify, trace.checks)

    def run_check(self, run: Run, check: Check, facts: list[Fact]) -> None:
        subject = run.trace.subject
        check.query = self.call(run, "verification_query", "verify", self.query_writer,
                                subject=subject, facts=[f.text for f in facts]).query.strip()
        if not check.query:
            raise ValueError("the query writer returned an empty query")
        if not self.use_retrieval:
            check.evidence_source = "parametric"
            check.evidence = self.call(run, "parametric_evidence", "verify", self.recaller,
                                       query=check.query).evidence.strip()
        else:
            check.passages = self.retrieve(check.query)
            if not check.passages:
                check.evidence_source = "none"
                check.evidence = NO_PASSAGES_EVIDENCE
                for fact in facts:
                    fact.verdict = "NOT_FOUND"
                return
            check.evidence = self.call(run, "evidence_summary", "verify", self.evidence_writer,
                                       query=check.query,
                                       passages=format_passages(check.passages)).evidence.strip()
        for fact, verdict in zip(facts, self.judge(run, check.evidence, facts), strict=True):
            fact.verdict = verdict

    def judge(self, run: Run, evidence: str, facts: list[Fact]) -> list[str]:
        """One call judges a whole check node; a reply of the wrong length is redone per fact."""
        claims = [f.text for f in facts]
        if len(claims) > 1:
            verdicts = self.call(run, "verdicts", "verify", self.verifier,
                                 evidence=evidence, claims=claims).verdicts
            if len(verdicts) == len(claims):
                return list(verdicts)
            run.log("detect", f"verifier returned {len(verdicts)} verdicts for {len(claims)} "
                    "claims; judging them one by one", "fallback")
        return [self.call(run, "verdict", "verify", self.single_verifier,
                          evidence=evidence, claim=claim).verdict for claim in claims]

    # == Phase 3: correction (one-pass BP) and reconstruction ===============================
    def correct(self, run: Run) -> None:
        """Build the correction map: SUPPORTED kept, NOT_FOUND pruned, CONTRADICTED fixed."""
        trace = run.trace
        for fact in trace.facts:
            if fact.verdict == "SUPPORTED":
                fact.status = "kept"
            elif fact.verdict == "NOT_FOUND":
                fact.status = "pruned"
        buffer: dict[int, list[Fact]] = {}
        for fact in trace.facts:
            if fact.verdict == "CONTRADICTED":
                buffer.setdefault(fact.sentence, []).append(fact)
        groups = sorted(buffer.items())
        run.report("correct", 0, len(groups))
        self.parallel(lambda item: self.correct_group(run, item[0], item[1]), groups)

    def correct_group(self, run: Run, sentence: int, wrong: list[Fact]) -> None:
        trace = run.trace
        related = [f for f in trace.facts if f.sentence == sentence
                   and f.verdict != "CONTRADICTED" and f.status != "pruned"]
        checks = {f.check for f in wrong}
        evidence = "\n\n".join(c.evidence for c in trace.checks if c.id in checks)
        # A fix that restates its fact is no fix; a small model does this. One retry, on the
        # facts still open and with some sampling freedom, is allowed; then they stay
        # CONTRADICTED and uncorrected.
        for attempt, temperature in enumerate((0.0, 0.5)):
            open_facts = [f for f in wrong if f.status == "pending"]
            if not open_facts:
                break
            try:
                fixes = self.call(run, "correction", "correct", self.corrector,
                                  subject=trace.subject, evidence=evidence,
                                  erroneous_facts=[f.text for f in open_facts],
                                  related_facts=[f.text for f in related],
                                  config={"temperature": temperature}).corrections
            except Exception as exc:
                run.log("correct", f"correction of sentence {sentence} failed, facts kept: "
                        f"{describe(exc)}", "error")
                break
            for fix in fixes:
                self.apply_fix(run, fix.original, fix.fixed, open_facts, related)
            if attempt == 0 and any(f.status == "pending" for f in wrong):
                run.log("correct", f"sentence {sentence}: a contradicted fact got no usable fix; "
                        "retrying once", "fallback")
        for fact in wrong:
            if fact.status == "pending":
                fact.status = "uncorrected"
                run.log("correct", f"fact {fact.id} stays contradicted and uncorrected",
                        "fallback")

    def apply_fix(self, run: Run, original: str, fixed: str, wrong: list[Fact],
                  related: list[Fact]) -> None:
        """Map a returned `original` to the closest buffered fact, else to a dependent fact.

        A fix equal to its fact (after case and punctuation) is a no-op and changes nothing; a
        propagated (dependent-fact) change may rewrite a fact but never delete it.
        """
        fixed = (fixed or "").strip()
        record = Correction(original=original, fixed=fixed)
        for pool, propagated in ((wrong, False), (related, True)):
            open_facts = [f for f in pool if f.status in ("pending", "kept", "unverified")]
            match = best_match(original, [f.text for f in open_facts], self.match_cutoff)
            if match is None:
                continue
            fact = open_facts[match[0]]
            record.fact, record.match_score, record.propagated = fact.id, match[1], propagated
            if normalise(fixed) == normalise(fact.text):
                if not propagated:
                    run.log("correct", f"the fix for fact {fact.id} repeats it; not a correction",
                            "fallback")
                break
            if propagated and not fixed:
                run.log("correct", f"a propagated change would delete fact {fact.id}; kept",
                        "fallback")
                break
            fact.correction = fixed or None
            fact.status = "corrected" if fixed else "pruned"
            break
        else:
            run.log("correct", f"correction for {original!r} matched no fact; ignored",
                    "fallback")
        with run.lock:
            run.trace.corrections.append(record)

    def reconstruct(self, run: Run) -> None:
        """Fact-to-text: rewrite only changed sentences, never showing the original sentence."""
        trace = run.trace
        accepted: list[list[str]] = []
        for sentence in trace.sentences:
            facts = [f for f in trace.facts if f.sentence == sentence.index]
            accepted.append([f.correction or f.text for f in facts
                             if f.status in (*UNCHANGED, "corrected")])
        changed = [s for s in trace.sentences
                   if any(f.status not in UNCHANGED for f in trace.facts
                          if f.sentence == s.index)]
        run.report("reconstruct", 0, len(changed))

        def rewrite(sentence: Sentence) -> None:
            facts = accepted[sentence.index]
            sentence.kept_verbatim = False
            if not facts:
                sentence.rewritten = ""
                return
            earlier = [fact for group in accepted[:sentence.index] for fact in group]
            try:
                text = self.call(run, "rewrite", "rewrite", self.rewriter,
                                 subject=trace.subject, earlier_facts=earlier,
                                 facts=facts).sentence.strip()
            except Exception as exc:
                run.log("reconstruct", f"rewrite of sentence {sentence.index} failed: "
                        f"{describe(exc)}", "error")
                text = ""
            if len(text) < SHORT_SENTENCE_CHARS:
                run.log("reconstruct", f"rewrite of sentence {sentence.index} was empty or too "
                        "short; kept the original sentence", "fallback")
                sentence.kept_verbatim, text = True, sentence.text
            elif is_runaway(text, " ".join(facts)):
                # A weak model can loop or recite its instructions; the corrected facts are
                # complete sentences, so stating them is safe, unlike the original sentence.
                run.log("reconstruct", f"rewrite of sentence {sentence.index} ran away "
                        f"({len(text)} characters); stated its facts instead", "fallback")
                text = " ".join(_as_sentence(fact) for fact in facts)
            sentence.rewritten = text

        self.parallel(rewrite, changed)

    def polish(self, run: Run) -> None:
        trace = run.trace
        parts = [s.text if s.kept_verbatim else (s.rewritten or "") for s in trace.sentences]
        trace.reconstructed = " ".join(p for p in parts if p.strip())
        if len(trace.reconstructed) < SHORT_ANSWER_CHARS:
            trace.answer = trace.received
            run.log("polish", "reconstructed draft under 50 characters; returned the received "
                    "answer", "fallback")
            return
        if all(s.kept_verbatim for s in trace.sentences):
            trace.answer = trace.reconstructed
            return
        run.report("polish", 0, 1)
        try:
            answer = self.call(run, "polish", "polish", self.polisher,
                               question=trace.question, draft=trace.reconstructed,
                               config={"temperature": self.polish_temperature}).answer.strip()
        except Exception as exc:
            run.log("polish", f"polish failed, returned the draft: {describe(exc)}", "error")
            answer = ""
        if len(answer) < SHORT_ANSWER_CHARS:
            answer = trace.reconstructed
        elif is_runaway(answer, trace.reconstructed):
            run.log("polish", f"polished answer ran away ({len(answer)} characters for a "
                    f"{len(trace.reconstructed)}-character draft); returned the draft", "fallback")
            answer = trace.reconstructed
        trace.answer = answer


class _LazyContext:
    """Retrieves R(Q) at most once, only if a phase needs it, and never raises."""

    def __init__(self, program: SERC, run: Run, question: str):
        self.program, self.run, self.question = program, run, question
        self.passages: list[Passage] | None = None

    def get(self) -> list[Passage]:
        if self.passages is None:
            self.passages = []
            if not self.program.use_retrieval:
                self.run.log("align", "retrieval disabled: no question context")
            else:
                try:
                    self.passages = self.program.retrieve(self.question)
                except RetrievalError as exc:
                    self.run.log("align", f"question retrieval failed: {exc}", "error")
        return self.passages



def _as_sentence(fact: str) -> str:
    fact = fact.strip()
    return fact if fact.endswith((".", "!", "?")) else fact + "."
