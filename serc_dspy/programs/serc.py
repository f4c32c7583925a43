"""SERC: decode an LM answer like a noisy codeword against retrieved evidence.

`forward` reads like the paper's Algorithm 1: align (firewall), decompose, detect (check nodes),
correct (one-pass belief propagation), reconstruct (fact-to-text), polish. Every phase writes
into the trace; nothing is recomputed from text afterwards.

Failure policy (where the reference implementation lost facts): a retriever or LM failure
never becomes evidence. Facts whose check failed are marked `unverified` and kept verbatim; a
failed correction keeps the fact (`uncorrected`); a failed rewrite keeps the original sentence.
"""

from __future__ import annotations

import re
import threading
from pathlib import Path
from typing import Any, Literal

import dspy

from serc_dspy.backends.models import model_of_lm
from serc_dspy.entities import Descriptor, mentions, more_specific, same_name
from serc_dspy.errors import UserError, describe
from serc_dspy.facts import (
    clean_facts,
    loses_content,
    not_a_statement,
    split_clauses,
    substituted_detail,
    unstated_details,
)
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
    FactFix,
    GroundedAnswer,
    JudgeFact,
    JudgeFacts,
    ParametricEvidence,
    PolishAnswer,
    QueryEntity,
    QuoteAndJudge,
    RewriteSentence,
    SameEntity,
    VerificationQuery,
)
from serc_dspy.states import is_compiled_state, load_compiled
from serc_dspy.text import (
    SHORT_ANSWER_CHARS,
    SHORT_SENTENCE_CHARS,
    best_match,
    drifted,
    is_refusal,
    is_runaway,
    needs_cold_start,
    normalise,
    similarity,
    split_sentences,
    unique_texts,
)
from serc_dspy.trace import Check, Correction, Fact, Passage, Sentence, Trace

Density = Literal["sentence", "atomic"]
QueryMode = Literal["lm", "facts"]
EvidenceMode = Literal["summary", "passages"]
VerdictMode = Literal["check", "fact"]
UNCHANGED = ("kept", "unverified", "uncorrected")
# A fix mapped to a fact by position alone must still resemble it (a rewording of one fact
# scores 0.3-0.7 here; an unrelated sentence under 0.1).
POSITIONAL_MIN_SIMILARITY = 0.3
REWRITE_CONTEXT_SENTENCES = 2
"""A rewrite sees the accepted facts of this many preceding sentences (for flow: not repeating
them, resolving "she"). All of them would make rewrite prompts grow with the square of the
draft's length (13 tokens x n^2, 21% of prompt tokens at 80 sentences)."""
AUTO_STATE = "auto"
"""`SERC(compiled="auto")`, the default: the run's offline model's packaged state, if any."""
_MODEL_STATE_LOCK = threading.Lock()
NO_PASSAGES_EVIDENCE = "The search returned no passages for this query."



class _CompiledLoad:
    """`SERC.load(path, **options)` builds a SERC with a compiled state (`compiled=path`).

    On an instance, `program.load(path)` loads in place, as DSPy's `Module.load` (which DSPy's
    own optimizers call on copies of a program); a `serc compile` file is read by
    `load_compiled`, which DSPy's loader cannot read, so both formats work both ways.
    """

    def __get__(self, instance, owner):
        if instance is None:
            def load(path: str | Path, **options: Any) -> SERC:
                return owner(compiled=path, **options)
            return load

        def load_in_place(path, *args, **kwargs):
            if is_compiled_state(path):
                load_compiled(instance, path)
                return None  # in place, like DSPy's Module.load
            return dspy.Module.load(instance, path, *args, **kwargs)
        return load_in_place


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
        queries: "lm" (the paper) writes each check node's search query with the LM; "facts"
            searches with the subject and the facts themselves (no call; suits BM25 corpora).
        evidence: "summary" (the paper) has the LM summarise the passages into E_k before the
            verdicts; "passages" judges and corrects against the retrieved passages directly
            (one call less per check node, and no summary that can echo the claim back).
        max_sentences / max_facts_per_sentence: bounds on the graph (100 / 12); sentences past
            the first bound are kept verbatim and unverified, and each cap is logged.
        verdicts: "check" judges all facts of a check node in one call; "fact" judges each
            fact in its own call that first quotes the evidence sentence it rests on (more
            calls, sharing a cached prompt prefix; far more accurate on small models).
        compiled: "auto" (default) applies, on the first run, the packaged state of the
            offline model the run uses when that model ships one (`serc models` lists them);
            None keeps the frozen paper prompts; a `.json` path (saved by `serc compile`, or a
            plain DSPy `save()`) or a packaged NAME (`serc_dspy/compiled/NAME.json`) is applied
            at construction. A stage saved for another signature structure logs a warning
            naming it and gets only its demos and instructions; pickles are refused.
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
        queries: QueryMode = "lm",
        evidence: EvidenceMode = "summary",
        verdicts: VerdictMode = "check",
        max_sentences: int = 100,
        max_facts_per_sentence: int = 12,
        compiled: str | Path | None = "auto",
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
        if queries not in ("lm", "facts"):
            raise InputError(f"queries must be 'lm' or 'facts', got {queries!r}")
        if evidence not in ("summary", "passages"):
            raise InputError(f"evidence must be 'summary' or 'passages', got {evidence!r}")
        if verdicts not in ("check", "fact"):
            raise InputError(f"verdicts must be 'check' or 'fact', got {verdicts!r}")
        if max_sentences < 1 or max_facts_per_sentence < 1:
            raise InputError("max_sentences and max_facts_per_sentence must be at least 1")
        self.max_sentences = max_sentences
        self.max_facts_per_sentence = max_facts_per_sentence
        self.queries = queries
        self.evidence = evidence
        self.verdicts = verdicts

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
        self.fact_checker = dspy.Predict(QuoteAndJudge)
        self.corrector = dspy.Predict(CorrectFacts)
        self.rewriter = dspy.Predict(RewriteSentence)
        self.polisher = dspy.Predict(PolishAnswer)
        self.compiled = str(compiled) if compiled is not None else None
        self.model_state: str | None = None
        """The offline model whose packaged state `compiled="auto"` applied (see forward)."""
        if compiled is not None and compiled != AUTO_STATE:
            load_compiled(self, compiled)
        self.check_lm_keys()

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
        self.apply_model_state(run)
        self.align(run, question, draft)
        if run.trace.status != "no_info":
            self.decompose(run)
            self.detect(run)
            if self.nothing_verified(run):
                return self.finish(run, run.trace.received)
            self.correct(run)
            self.reconstruct(run)
            self.polish(run)
        return self.finish(run, run.trace.answer)

    def apply_model_state(self, run: Run) -> None:
        """`compiled="auto"`: on the first run, apply the packaged state of the offline model
        the context LM runs, if that model ships one (`OfflineModel.compiled`); any other LM
        keeps the frozen prompts. `compiled=None` always keeps them."""
        if self.compiled != AUTO_STATE:
            return
        model = model_of_lm(dspy.settings.lm)
        with _MODEL_STATE_LOCK:
            if self.model_state is None and model is not None and model.compiled:
                load_compiled(self, model.compiled)
                self.model_state = model.name
        if self.model_state and (model is None or model.name != self.model_state):
            run.log("align", f"this SERC carries the compiled state of {self.model_state} "
                             f"but runs with {getattr(dspy.settings.lm, 'model', '?')}",
                    "fallback")
        elif self.model_state:
            run.log("align", f"prompts: compiled state {model.compiled} of {model.name}")

    def nothing_verified(self, run: Run) -> bool:
        """A run whose check nodes produced no verdict at all verified nothing: it fails loudly
        instead of handing the received answer back as if it were a correction."""
        trace = run.trace
        errors = [e.message for e in trace.errors]
        if trace.facts and all(f.verdict is None for f in trace.facts):
            self.fail(run, f"no check node produced a verdict ({len(trace.checks)} failed); "
                           f"first error: {errors[0] if errors else 'unknown'}")
        elif not trace.facts and errors:
            self.fail(run, f"no fact could be extracted; first error: {errors[0]}")
        return trace.status == "failed"

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
            answer = self.call(run, "grounded_answer", "generate", self.grounded_answerer,
                               question=question, context=format_passages(passages)).answer
        except UserError:
            raise  # configuration errors abort; only outages degrade
        except Exception as exc:  # an LM failure keeps the answer we had
            run.log("align", f"grounded answer failed, kept the draft: {describe(exc)}", "error")
            return fallback
        if not (answer or "").strip():
            run.log("align", "the grounded answer came back empty; kept the draft", "fallback")
            return fallback
        return answer.strip()

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
        except UserError:
            raise  # configuration errors abort; only outages degrade
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
        if query.usable and same_name(query.name, evidence.name) and \
                mentions(trace.received, query.name):
            # The answer descriptor named another of the subject's names (a birth name, say)
            # while the answer itself names the entity asked about, which the evidence is about.
            firewall.same_entity = True
            firewall.decision = (f"passed: the answer names the asked entity ({query.name}), "
                                 "which the evidence is about (no judge call)")
            trace.subject = str(more_specific(evidence, query))
            return
        try:
            judged = self.call(run, "same_entity", "firewall", self.entity_judge,
                               answer_entity=str(answer), evidence_entity=str(evidence))
        except UserError:
            raise  # configuration errors abort; only outages degrade
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
        if len(texts) > self.max_sentences:
            run.log("decompose", f"the answer has {len(texts)} sentences; only the first "
                    f"{self.max_sentences} are checked (max_sentences), the rest are kept "
                    "verbatim and unverified", "fallback")
        checked = trace.sentences[:self.max_sentences]
        done = [0]

        def extract(sentence: Sentence) -> list[str]:
            try:
                raw = self.call(run, "atomic_facts", "decompose", self.fact_extractor,
                                subject=trace.subject, sentence=sentence.text).facts
            except UserError:
                raise  # configuration errors abort; only outages degrade
            except Exception as exc:
                run.log("decompose", f"sentence {sentence.index} kept unverified: "
                        f"{describe(exc)}", "error")
                raw = None
            facts = self.hygiene(run, sentence, raw)
            with run.lock:
                done[0] += 1
            run.report("decompose", done[0], len(checked))
            return facts

        per_sentence = self.parallel(extract, checked)
        for sentence, facts in zip(checked, per_sentence, strict=True):
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
        if len(raw) > 4 * self.max_facts_per_sentence:
            run.log("decompose", f"sentence {sentence.index}: the extractor returned {len(raw)} "
                    f"items; read the first {4 * self.max_facts_per_sentence} "
                    "(max_facts_per_sentence)", "fallback")
            raw = raw[:4 * self.max_facts_per_sentence]
        name = subject_name(run.trace.subject)
        raw = [part for item in raw for part in split_clauses(str(item), name)]
        facts, dropped = clean_facts(raw, sentence.text, run.trace.subject)
        if len(facts) > self.max_facts_per_sentence:
            run.log("decompose", f"sentence {sentence.index}: {len(facts)} facts; kept the first "
                    f"{self.max_facts_per_sentence} (max_facts_per_sentence)", "fallback")
            facts = facts[:self.max_facts_per_sentence]
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
            except UserError:
                raise  # configuration errors abort; only outages degrade
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
        if self.queries == "facts":
            check.query = " ".join([subject, *(f.text for f in facts)])
        else:
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
                run.log("detect", f"check {check.id}: the search returned nothing for "
                        f"{check.query[:80]!r}; its facts are NOT_FOUND and will be pruned")
                check.evidence_source = "none"
                check.evidence = NO_PASSAGES_EVIDENCE
                for fact in facts:
                    fact.verdict = "NOT_FOUND"
                return
            if self.evidence == "passages":
                check.evidence = format_passages(check.passages)
            else:
                check.evidence = self.call(
                    run, "evidence_summary", "verify", self.evidence_writer, query=check.query,
                    passages=format_passages(check.passages)).evidence.strip()
        self.judge(run, check.evidence, facts)

    def judge(self, run: Run, evidence: str, facts: list[Fact]) -> None:
        """Set each fact's syndrome. `verdicts="check"`: one call judges the whole check node
        (redone fact by fact if the reply has the wrong length). `verdicts="fact"`: one call
        per fact that first quotes the evidence sentence it rests on; the calls share the
        prompt prefix up to the claim, which the engine's prompt cache serves once."""
        if self.verdicts == "fact":
            for fact in facts:
                cited = self.call(run, "cited_verdict", "verify", self.fact_checker,
                                  evidence=evidence, claim=fact.text)
                fact.verdict, fact.quote = cited.verdict, (cited.quote or "").strip() or None
                self.cross_check(run, evidence, fact)
            return
        for fact, verdict in zip(facts, self.check_verdicts(run, evidence, facts), strict=True):
            fact.verdict = verdict

    def cross_check(self, run: Run, evidence: str, fact: Fact) -> None:
        """Hold a cited verdict to its own quote: a quote really taken from the evidence that
        gives another value for one of the claim's details contradicts the claim, whatever a
        small model answered."""
        if not fact.quote or normalise(fact.quote) not in normalise(evidence):
            return  # not a quotation of the evidence: nothing to hold the verdict to
        judged_wrong = fact.verdict == "CONTRADICTED"
        swap = substituted_detail(fact.text, fact.quote, run.trace.subject,
                                  same_event=not judged_wrong)
        if swap is None:
            return
        with run.lock:
            run.substitutions[fact.id] = swap
        if not judged_wrong:
            run.log("detect", f"fact {fact.id}: judged {fact.verdict}, but {swap.reason}; "
                    "CONTRADICTED", "fallback")
            fact.verdict = "CONTRADICTED"

    def check_verdicts(self, run: Run, evidence: str, facts: list[Fact]) -> list[str]:
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
        if all(f.quote for f in wrong):  # the sentences the verdicts rest on: short and exact
            evidence = "\n".join(unique_texts(f.quote for f in wrong))
        else:
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
            except UserError:
                raise  # configuration errors abort; only outages degrade
            except Exception as exc:
                run.log("correct", f"correction of sentence {sentence} failed, facts kept: "
                        f"{describe(exc)}", "error")
                break
            unmatched = [fix for fix in fixes
                         if not self.apply_fix(run, fix.original, fix.fixed, open_facts, related)]
            still_open = [f for f in open_facts if f.status == "pending"]
            if len(unmatched) > 1 and len(still_open) == 1:
                # Several pieces for the one open fact: the model split its fix. Join them.
                fact = still_open[0]
                pieces = [fix.fixed or (fix.original if normalise(fix.original)
                                        in normalise(fact.text) else "") for fix in unmatched]
                joined = " ".join(_as_sentence(piece) for piece in pieces if piece.strip())
                unmatched = [FactFix(original=fact.text, fixed=joined)]
            if unmatched and len(unmatched) == len(still_open):
                # A small model often quotes its fix, not the original, as `original`; when the
                # unmatched fixes and the open facts pair up one to one, the order decides.
                for fix, fact in zip(unmatched, still_open, strict=True):
                    if similarity(fix.fixed, fact.text) < POSITIONAL_MIN_SIMILARITY:
                        continue  # a fix unlike its fact is not a fix of it: never guessed
                    run.log("correct", f"fix {fix.original!r} matched no fact by text; mapped "
                            f"to {fact.id} by position", "fallback")
                    self.apply_fix(run, fact.text, fix.fixed, [fact], [])
            if attempt == 0 and any(f.status == "pending" for f in wrong):
                run.log("correct", f"sentence {sentence}: a contradicted fact got no usable fix; "
                        "retrying once", "fallback")
        for fact in wrong:
            self.swap_back(run, fact)
            if fact.status == "pending":
                fact.status = "uncorrected"
                run.log("correct", f"fact {fact.id} stays contradicted and uncorrected",
                        "fallback")

    def swap_back(self, run: Run, fact: Fact) -> None:
        """When the quote swapped exactly one detail, the minimal correction is to swap it back.
        It stands in for an LM fix that is missing, empty, or rewrites the fact's other
        details away (a small model copies the quote over the fact)."""
        swap = run.substitutions.get(fact.id)
        minimal = swap.apply(fact.text) if swap is not None else None
        if minimal is None:
            return
        if fact.status == "corrected" and not loses_content(fact.text, fact.correction or "",
                                                            swap.old):
            return
        why = ("instead of a fix that dropped other details" if fact.status == "corrected"
               else "no usable fix")
        run.log("correct", f"fact {fact.id}: {swap.old} -> {swap.new} from its quote ({why})",
                "fallback")
        fact.correction, fact.status = minimal, "corrected"

    def apply_fix(self, run: Run, original: str, fixed: str, wrong: list[Fact],
                  related: list[Fact]) -> bool:
        """Map a returned `original` to the closest buffered fact, else to a dependent fact.

        A fix equal to its fact (after case and punctuation) is a no-op and changes nothing; a
        propagated (dependent-fact) change may rewrite a fact but never delete it. Returns
        whether `original` matched a fact.
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
            run.log("correct", f"correction for {original!r} matched no fact", "fallback")
        with run.lock:
            run.trace.corrections.append(record)
        return record.fact is not None

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
            start = max(0, sentence.index - REWRITE_CONTEXT_SENTENCES)
            earlier = [fact for group in accepted[start:sentence.index] for fact in group]
            try:
                text = self.call(run, "rewrite", "rewrite", self.rewriter,
                                 subject=trace.subject, earlier_facts=earlier,
                                 facts=facts).sentence.strip()
            except UserError:
                raise  # configuration errors abort; only outages degrade
            except Exception as exc:
                run.log("reconstruct", f"rewrite of sentence {sentence.index} failed: "
                        f"{describe(exc)}", "error")
                text = ""
            if len(text) < SHORT_SENTENCE_CHARS:
                run.log("reconstruct", f"rewrite of sentence {sentence.index} was empty or too "
                        "short; kept the original sentence", "fallback")
                sentence.kept_verbatim, text = True, sentence.text
            elif problem := (
                    f"ran away ({len(text)} characters)" if is_runaway(text, " ".join(facts))
                    else _unfaithful(unstated_details(text, facts, trace.subject))):
                # A weak model loops, recites its instructions, or drops or adds a detail; the
                # corrected facts are complete sentences, so stating them is safe, unlike the
                # original sentence.
                run.log("reconstruct", f"rewrite of sentence {sentence.index} {problem}; "
                        "stated its facts instead", "fallback")
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
        except UserError:
            raise  # configuration errors abort; only outages degrade
        except Exception as exc:
            run.log("polish", f"polish failed, returned the draft: {describe(exc)}", "error")
            answer = ""
        if len(answer) < SHORT_ANSWER_CHARS:
            answer = trace.reconstructed
        elif is_refusal(answer) or drifted(answer, trace.reconstructed):
            run.log("polish", "the polished answer refused or left the draft's topic; returned "
                    "the reconstructed draft", "fallback")
            answer = trace.reconstructed
        elif reason := unstated_details(answer, [trace.reconstructed], trace.subject):
            run.log("polish", f"the polished answer is not faithful to the draft ({reason}); "
                    "returned the reconstructed draft", "fallback")
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



def subject_name(subject: str) -> str:
    """The name in a `Name (Characteristic)` subject; empty when the subject is no name (the
    question itself, with the firewall off)."""
    name = re.sub(r"\s*\([^)]*\)\s*$", "", subject or "").strip()
    return name if 0 < len(name.split()) <= 5 and not name.endswith("?") else ""


def _unfaithful(reason: str | None) -> str | None:
    return f"is not faithful to its facts ({reason})" if reason else None


def _as_sentence(fact: str) -> str:
    fact = fact.strip()
    return fact if fact.endswith((".", "!", "?")) else fact + "."
