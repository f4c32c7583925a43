"""SERC: decode an LM answer like a noisy codeword against retrieved evidence.

`forward` reads like the paper's Algorithm 1: align (firewall), decompose, detect (check nodes),
correct (one-pass belief propagation), reconstruct (fact-to-text), polish. Every phase writes
into the trace; nothing is recomputed from text afterwards.

Failure policy (where the reference implementation lost facts): a retriever or LM failure
never becomes evidence. Facts whose check failed are marked `unverified` and kept verbatim; a
failed correction keeps the fact (`uncorrected`); a failed rewrite keeps the original sentence.
"""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any, ClassVar, Literal

import dspy

from serc_dspy.backends.models import model_of_lm
from serc_dspy.entities import Descriptor, more_specific
from serc_dspy.errors import MalformedOutput
from serc_dspy.layout import Layout
from serc_dspy.programs.base import (
    NO_INFO_ANSWER,
    InputError,
    Run,
    StepSpec,
    TracedProgram,
    check_text,
    format_passages,
)
from serc_dspy.retrieval.base import RetrievalError, cap_context
from serc_dspy.rules import RuleSet, language_of
from serc_dspy.rules.agree import MIN_AGREEING, contradicting, mentioned
from serc_dspy.rules.draft import answer_claim
from serc_dspy.rules.fixes import POSITIONAL_MIN_SIMILARITY, loses_content, rewords
from serc_dspy.rules.guards import minimal_edit, orphan_details, polish_problem, rewrite_problem
from serc_dspy.rules.hygiene import (
    clean_facts,
    not_a_statement,
    split_clauses,
    subject_pronouns,
)
from serc_dspy.rules.names import mentions, names_a_subject, names_in, same_name
from serc_dspy.rules.quotes import HeldVerdict, hold_to_quote
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
from serc_dspy.steps import gather
from serc_dspy.text import (
    SHORT_ANSWER_CHARS,
    best_match,
    is_refusal,
    needs_cold_start,
    normalise,
    similarity,
    text_size,
    unique_texts,
)
from serc_dspy.trace import Check, Correction, Fact, Passage, Sentence

Density = Literal["sentence", "atomic"]
QueryMode = Literal["lm", "facts"]
EvidenceMode = Literal["summary", "passages"]
VerdictMode = Literal["check", "fact"]
Reconstruction = Literal["rebuild", "minimal"]
UNCHANGED = ("kept", "unverified", "uncorrected", "disputed")
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
        rules: switch named rules on or off, e.g. `{"quote.overrule": False}` (the ids and
            their defaults are in `serc_dspy.rules.RULES`; an unknown id is an error listing
            the valid ones). Every firing is a `Ruling` in the trace.
        fact_evidence: besides the check node's query, search each fact's own text too (no
            LM call) and show each verdict its own fact's passages first.
        reconstruct: "rebuild" (the paper) rewrites a changed sentence from its facts;
            "minimal" makes each correction in place in the draft's sentence (a pruned fact
            takes out its own clause) and rewrites only when an edit cannot be placed.
        verifier: a claim verifier (`serc_dspy.verifiers`) whose verdict is one of the
            signals `agree.contradiction` counts before a fact is changed.
    """

    method_name = "serc"
    steps: ClassVar[dict[str, StepSpec]] = {
        "grounded_answerer": StepSpec("generate", "grounded_answer"),
        "query_entity": StepSpec("firewall", "query_entity"),
        "answer_entity": StepSpec("firewall", "answer_entity"),
        "evidence_entity": StepSpec("firewall", "evidence_entity"),
        "entity_judge": StepSpec("firewall", "same_entity"),
        "fact_extractor": StepSpec("decompose", "atomic_facts"),
        "query_writer": StepSpec("verify", "verification_query"),
        "evidence_writer": StepSpec("verify", "evidence_summary"),
        "recaller": StepSpec("verify", "parametric_evidence"),
        "verifier": StepSpec("verify", "verdicts"),
        "single_verifier": StepSpec("verify", "verdict"),
        "fact_checker": StepSpec("verify", "cited_verdict"),
        "corrector": StepSpec("correct", "correction"),
        "rewriter": StepSpec("rewrite", "rewrite"),
        "polisher": StepSpec("polish", "polish"),
    }

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
        rules: dict[str, bool] | None = None,
        fact_evidence: bool = False,
        reconstruct: Reconstruction = "rebuild",
        verifier: Any = None,
        **options: Any,
    ):
        super().__init__(retriever, **options)
        self.rules = RuleSet(rules)
        if reconstruct not in ("rebuild", "minimal"):
            raise InputError(f"reconstruct must be 'rebuild' or 'minimal', got {reconstruct!r}")
        if verifier is not None and not callable(getattr(verifier, "averify", None)):
            raise InputError("verifier must have averify(claims, evidence) (see "
                             "serc_dspy.verifiers.ClassifierVerifier)")
        self.fact_evidence = fact_evidence
        self.reconstruction = reconstruct
        self.claim_verifier = verifier
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
    async def aforward(self, question: str, draft: str | None = None) -> dspy.Prediction:
        """Algorithm 1. Phase 1 hands the received answer R on; each sentence of R then flows
        through phases 2-3 on its own (facts -> check nodes -> syndromes -> corrections ->
        rewritten sentence) as soon as its inputs exist, all sentences sharing one bounded
        pool of LM calls; phase 4 polishes what they hand back."""
        if self.use_retrieval and self.retriever is None:
            check_text("question", question)
            raise InputError(
                "SERC needs a retriever: pass SERC(retriever=...) (e.g. a LocalCorpus), "
                "or SERC(use_retrieval=False) to verify against the LM's own knowledge"
            )
        run, question, draft = self.start(question, draft)
        self.apply_model_state(run)
        received = await self.align(run, question, draft)              # Phase 1: R
        if received is None:                                           # no usable answer
            return self.finish(run, run.trace.answer)
        layout = self.split(run, received)                             # S_1 .. S_n
        if layout is None:                                             # out of time
            return self.finish(run, received)
        sentences = run.trace.sentences
        accepted = _AcceptedFacts(len(sentences))
        run.expect("decompose", min(len(sentences), self.max_sentences))
        await gather(*(self.decode_sentence(run, s, accepted) for s in sentences))
        if self.nothing_verified(run):
            return self.finish(run, run.trace.received)
        return self.finish(run, await self.polish(run, layout))        # Phase 4

    async def decode_sentence(self, run: Run, sentence: Sentence,
                              accepted: _AcceptedFacts) -> None:
        """Phases 2-3 for one sentence: F_i, its check nodes, their syndromes, the correction
        map, and the sentence rebuilt from the facts it accepts."""
        kept: list[str] = []
        try:
            if sentence.index >= self.max_sentences:
                return                                                 # kept, unverified
            facts = await self.decompose(run, sentence)                # variable nodes F_i
            checks = self.build_checks(run, sentence, facts)           # check nodes
            await run.map("detect", lambda c: self.detect(run, c), checks)  # syndromes
            kept = await self.correct(run, sentence, facts)            # correction map
            accepted.set(sentence.index, kept)
            await self.reconstruct(run, sentence, facts, kept, accepted)  # S'_i
        finally:
            accepted.set(sentence.index, kept)  # never leave a later rewrite waiting

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
        elif trace.checks and all(c.evidence_source == "none" for c in trace.checks):
            # A search outage or an index that does not cover the topic: pruning every fact
            # as NOT_FOUND would be a verdict on the retriever, not on the answer.
            self.fail(run, f"every search came back empty ({len(trace.checks)} checks): "
                           "nothing was verified against evidence")
        elif not trace.facts and errors:
            self.fail(run, f"no fact could be extracted; first error: {errors[0]}")
        return trace.status == "failed"

    # == Phase 1: coarse alignment and the entity firewall ==================================
    async def align(self, run: Run, question: str, draft: str | None) -> str | None:
        """R_init -> R: the received answer to decode, or None when there is none (status
        `no_info`, with the no-information answer)."""
        trace = run.trace
        trace.firewall.enabled = self.firewall
        received = await self.initial_answer(run, question, draft)
        self.read_language(run, received)
        context = _LazyContext(self, run, question)

        if trace.draft_given and needs_cold_start(received) and run.on("draft.short_claim"):
            # The cold start replaces the model's own failed first answer; a caller's draft,
            # however short, is the caller's input: it is decoded, as one claim that answers
            # the question, and changed only by a correction the evidence supports.
            trace.short_draft = True
            trace.received, trace.subject = received, question
            trace.firewall.error = "skipped: a short caller draft is checked as one claim"
            run.rule("draft.short_claim", "answer", before=received,
                     after=answer_claim(question, received),
                     detail="a short caller draft: checked as one claim answering the question "
                            "(no cold start, no firewall)")
            return received
        if needs_cold_start(received):
            trace.cold_start = True
            passages = await context.get()
            if passages:
                received = await self.grounded_answer(run, question, passages, received)
            if not passages or is_refusal(received) or not received.strip():
                if is_refusal(received) or not received.strip():
                    trace.status = "no_info"
                    trace.received = received
                    trace.answer = NO_INFO_ANSWER
                    run.log("align", "no usable answer and no retrieved context", "fallback")
                    return None
        trace.received = received
        trace.subject = question
        if self.firewall and not trace.cold_start:
            await self.entity_firewall(run, question, context)
        elif trace.cold_start:
            trace.firewall.error = "skipped: the answer was already grounded by the cold start"
        return trace.received

    def read_language(self, run: Run, received: str) -> None:
        """The rules of this run: the program's switches, with the English-only rules off when
        the received answer is not English."""
        run.trace.language = language_of(received)
        run.rules = self.rules.for_language(run.trace.language)
        run.trace.rules_off = run.rules.off()

    async def grounded_answer(self, run: Run, question: str, passages: list[Passage],
                              fallback: str) -> str:
        async def ground() -> str:
            return (await run.call("grounded_answerer", question=question,
                                   context=format_passages(passages))).answer
        answer = await run.attempt("align", "grounded answer failed, kept the draft", ground,
                                   None)
        if answer is None:  # an LM failure keeps the answer we had
            return fallback
        if not (answer or "").strip():
            run.log("align", "the grounded answer came back empty; kept the draft", "fallback")
            return fallback
        return answer.strip()

    async def entity_firewall(self, run: Run, question: str, context: _LazyContext) -> None:
        """Steps 3-5. The received answer (a caller's draft included) is replaced only when the
        judge positively found a different entity from two usable descriptors whose names
        differ; every other outcome passes, and `firewall.decision` says why."""
        trace, firewall = run.trace, run.trace.firewall
        run.report("firewall", 0, 1)
        if run.on("firewall.named_subject") and not names_a_subject(question):
            firewall.decision = "passed: the question names no entity (no descriptor calls)"
            run.rule("firewall.named_subject", "firewall", detail=firewall.decision)
            return
        passages = await context.get()
        readers = {
            "query": ("query_entity", {"question": question}),
            "answer": ("answer_entity", {"answer": trace.received}),
            "evidence": ("evidence_entity", {"context": format_passages(passages)}),
        }
        kinds = ["query", "answer"] + (["evidence"] if passages else [])

        async def describe_entity(kind: str) -> Descriptor:
            name, inputs = readers[kind]
            result = await run.call(name, **inputs)
            return Descriptor.of(result.name, result.characteristic)

        def unread(error: str) -> None:
            firewall.error = f"descriptor extraction failed: {error}"
            firewall.decision = "passed: the descriptors could not be read"

        read = await run.attempt("firewall", "descriptor extraction failed",
                                 lambda: gather(*(describe_entity(k) for k in kinds)), None,
                                 failed=unread)
        if read is None:
            return
        found = dict(zip(kinds, read, strict=True))
        query, answer = found["query"], found["answer"]
        evidence = found.get("evidence", Descriptor())
        firewall.query_entity, firewall.answer_entity = str(query), str(answer)
        firewall.evidence_entity = str(evidence)
        trace.subject = str(more_specific(answer, query)) or question
        if not passages:
            firewall.decision = "passed: no retrieved context to compare with"
            return
        if not (answer.usable and evidence.usable) and run.on("firewall.placeholder"):
            which = " and ".join(k for k, d in (("answer", answer), ("evidence", evidence))
                                 if not d.usable)
            firewall.decision = f"passed: the {which} descriptor is empty or a placeholder"
            run.rule("firewall.placeholder", "firewall", detail=firewall.decision)
            return
        if run.on("firewall.same_name") and same_name(answer.name, evidence.name, run.rules):
            firewall.same_entity = True
            firewall.decision = "passed: the answer and the evidence name the same entity " \
                                "(same normalised name, no judge call)"
            run.rule("firewall.same_name", "firewall", detail=f"{answer} / {evidence}")
            trace.subject = str(more_specific(answer, evidence))
            return
        if run.on("firewall.asked_entity") and query.usable and \
                same_name(query.name, evidence.name, run.rules) and \
                mentions(trace.received, query.name, run.rules):
            # The answer descriptor named another of the subject's names (a birth name, say)
            # while the answer itself names the entity asked about, which the evidence is about.
            firewall.same_entity = True
            firewall.decision = (f"passed: the answer names the asked entity ({query.name}), "
                                 "which the evidence is about (no judge call)")
            run.rule("firewall.asked_entity", "firewall",
                     detail=f"{query.name}: the answer descriptor said {answer}")
            # The query descriptor is guessed from the question alone: the evidence's wins.
            trace.subject = str(evidence if evidence.characteristic else
                                more_specific(evidence, query))
            return

        if run.on("firewall.evidence_in_answer") and evidence.usable and \
                names_in(trace.received, evidence.name):
            firewall.decision = (f"passed: the answer itself names the evidence's entity "
                                 f"({evidence.name})")
            run.rule("firewall.evidence_in_answer", "firewall", detail=f"{evidence}")
            return

        def judge_failed(error: str) -> None:
            firewall.error = f"entity judge failed: {error}"
            firewall.decision = "passed: the entity judge failed"

        judged = await run.attempt(
            "firewall", "entity judge failed",
            lambda: run.call("entity_judge", answer_entity=str(answer),
                             evidence_entity=str(evidence)), None, failed=judge_failed)
        if judged is None:
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
        trace.received = await self.grounded_answer(run, question, passages, trace.received)
        run.log("firewall", f"entity mismatch ({answer} vs {evidence}): hard reset to a "
                "context-grounded answer")

    # == Phase 2: fact decomposition and sparse verification =================================
    def split(self, run: Run, received: str) -> Layout | None:
        """R -> its layout and sentences, the units the graph is built on (code blocks, list
        markers and paragraph breaks stay out of them, and in place); None when the deadline
        passed first (the run failed). Sentences past `max_sentences` count as unchecked."""
        trace = run.trace
        layout = self.layout(run, received)
        if layout is None:
            return None
        texts = layout.sentences
        trace.sentences = [Sentence(index=k, text=text) for k, text in enumerate(texts)]
        if len(texts) > self.max_sentences:
            trace.bounded = True
            trace.unchecked_sentences = len(texts) - self.max_sentences
            run.log("decompose", f"the answer has {len(texts)} sentences; only the first "
                    f"{self.max_sentences} are checked (max_sentences), the rest are kept "
                    "verbatim and unverified", "fallback")
        return layout

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
        with run.lock:
            trace.facts.extend(facts)
            trace.facts.sort(key=_node_order)
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
        if len(raw) > 4 * self.max_facts_per_sentence:
            run.log("decompose", f"sentence {sentence.index}: the extractor returned {len(raw)} "
                    f"items; read the first {4 * self.max_facts_per_sentence} "
                    "(max_facts_per_sentence)", "fallback")
            raw = raw[:4 * self.max_facts_per_sentence]
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
        if len(facts) > self.max_facts_per_sentence:
            run.log("decompose", f"sentence {sentence.index}: {len(facts)} facts; kept the first "
                    f"{self.max_facts_per_sentence} (max_facts_per_sentence)", "fallback")
            facts = facts[:self.max_facts_per_sentence]
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
        size = self.max_facts_per_check
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
            run.trace.checks.sort(key=_node_order)
        return checks

    async def detect(self, run: Run, check: Check) -> None:
        """One check node's syndrome: query, evidence, a verdict per fact. A failed check
        leaves its facts unverified, never judged."""
        facts = [run.trace.fact(fid) for fid in check.facts]

        def unverified(error: str) -> None:
            check.error = error
            for fact in facts:
                fact.verdict, fact.status = None, "unverified"

        await run.attempt("detect", f"check {check.id} failed, its facts stay unverified",
                          lambda: self.run_check(run, check, facts), None, failed=unverified)

    async def run_check(self, run: Run, check: Check, facts: list[Fact]) -> None:
        subject = run.trace.subject
        if self.queries == "facts":
            check.query = " ".join([subject, *(f.text for f in facts)])
        else:
            check.query = (await run.call("query_writer", subject=subject,
                                          facts=[f.text for f in facts])).query.strip()
        if not check.query:
            raise MalformedOutput("the query writer returned an empty query")
        if not self.use_retrieval:
            check.evidence_source = "parametric"
            check.evidence = (await run.call("recaller", query=check.query)).evidence.strip()
        else:
            check.passages = await self.retrieve(run, check.query)
            if self.fact_evidence:
                await self.own_passages(run, check, facts)
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
                check.evidence = (await run.call(
                    "evidence_writer", query=check.query,
                    passages=format_passages(check.passages))).evidence.strip()
        if not check.evidence:
            # An empty summary is a failed evidence step, not evidence that found nothing:
            # judged against it, every fact would be NOT_FOUND and pruned.
            raise RetrievalError(f"the {check.evidence_source or 'evidence'} summary came back "
                                 "empty")
        await self.judge(run, check, facts)
        await self.agree(run, check, facts)

    async def own_passages(self, run: Run, check: Check, facts: list[Fact]) -> None:
        """Per-fact evidence: the passages found for each fact's own text join the check's
        (deduplicated), and the fact remembers which are its own."""
        name = subject_name(run.trace.subject)
        seen = {(p.source, p.text): i for i, p in enumerate(check.passages)}
        for fact in facts:
            query = fact.text if name.lower() in fact.text.lower() else f"{name} {fact.text}"
            found = await self.retrieve(run, query.strip())
            for passage in found:
                key = (passage.source, passage.text)
                if key not in seen:
                    seen[key] = len(check.passages)
                    check.passages.append(passage)
                fact.own_passages.append(seen[key])
        check.passages = cap_context(check.passages, self.context_chars * 2)
        for fact in facts:
            fact.own_passages = [i for i in fact.own_passages if i < len(check.passages)]

    def evidence_for(self, check: Check, fact: Fact) -> str:
        """What one fact's verdict reads: its own passages first, then the check's, within
        the context budget; the check's evidence when there are no per-fact passages."""
        if not fact.own_passages or self.evidence != "passages":
            return check.evidence
        order = fact.own_passages + [i for i in range(len(check.passages))
                                     if i not in fact.own_passages]
        return format_passages(cap_context([check.passages[i] for i in order],
                                           self.context_chars))

    async def judge(self, run: Run, check: Check, facts: list[Fact]) -> None:
        """Set each fact's syndrome. `verdicts="check"`: one call judges the whole check node
        (redone fact by fact if the reply has the wrong length). `verdicts="fact"`: one call
        per fact that first quotes the evidence sentence it rests on; the calls share the
        prompt prefix up to the claim, which the engine's prompt cache serves once."""
        evidence = check.evidence
        if self.verdicts == "fact":
            for fact in facts:
                evidence = self.evidence_for(check, fact)
                cited = await run.call("fact_checker", evidence=evidence, claim=fact.text)
                fact.verdict, fact.quote = cited.verdict, (cited.quote or "").strip() or None
                fact.lm_verdict = fact.verdict
                if self.cross_check(run, evidence, fact).unwitnessed and \
                        run.on("quote.second_vote"):
                    await self.second_opinion(run, evidence, fact)
            return
        verdicts = await self.check_verdicts(run, evidence, facts)
        for fact, verdict in zip(facts, verdicts, strict=True):
            fact.verdict = fact.lm_verdict = verdict

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
        fact.verdict, fact.witness = held.verdict, held.witness
        return held

    async def second_opinion(self, run: Run, evidence: str, fact: Fact) -> None:
        """`quote.second_vote`: a cited contradiction whose quote shows no conflicting detail
        rests on the verifier's word alone. On the held-out noise bios every such
        contradiction of a true fact was "corrected" into a false one ("born on April 8,
        1944" -> "April 7, 1944", citing a paragraph about his death), so such a fact is never
        rewritten: the uncited verifier votes, SUPPORTED keeps it, any other vote prunes it
        (NOT_FOUND). A failed vote leaves it unverified, in the draft's words."""
        def unverified(error: str) -> None:
            fact.verdict, fact.status = None, "unverified"

        judged = await run.attempt(
            "detect", f"second opinion on fact {fact.id} failed, it stays unverified",
            lambda: run.call("single_verifier", evidence=evidence, claim=fact.text), None,
            failed=unverified)
        if judged is None:
            return
        fact.second_verdict = judged.verdict
        fact.verdict = "SUPPORTED" if judged.verdict == "SUPPORTED" else "NOT_FOUND"
        run.rule("quote.second_vote", fact.id, before="CONTRADICTED", after=fact.verdict,
                 detail=f"its quote shows no conflicting detail; the second verdict said "
                        f"{judged.verdict}")

    async def agree(self, run: Run, check: Check, facts: list[Fact]) -> None:
        """`agree.contradiction`: a contradicted fact is changed only when two independent
        signals say CONTRADICTED (its verdict, when witnessed by its quote or given for the
        whole group; a second verdict by another prompt on its own passages; the claim
        verifier). One alone leaves it `disputed`, in the draft's words."""
        wrong = [f for f in facts if f.verdict == "CONTRADICTED"]
        if not wrong or not run.on("agree.contradiction"):
            return
        for fact in wrong:
            evidence = self.evidence_for(check, fact)
            if self.verdicts == "check" or fact.witness is not None:
                fact.votes["cited" if self.verdicts == "fact" else "check"] = "CONTRADICTED"

            async def second(fact=fact, evidence=evidence) -> str:
                return (await run.call("single_verifier", evidence=evidence,
                                       claim=fact.text)).verdict
            if fact.second_verdict is None:
                vote = await run.attempt("detect", f"second verdict on fact {fact.id} failed",
                                         second, None)
                if vote is not None:
                    fact.second_verdict = fact.votes["second"] = vote
            else:
                fact.votes["second"] = fact.second_verdict
            if self.claim_verifier is not None:
                texts = [p.text for p in check.passages] or [check.evidence]
                judged = await run.attempt("detect", f"the claim verifier failed on {fact.id}",
                                           lambda fact=fact, texts=texts:
                                           self.claim_verifier.averify([fact.text], texts),
                                           None)
                if judged:
                    fact.votes["verifier"] = judged[0].verdict
            if contradicting(fact.votes) < MIN_AGREEING:
                fact.status = "disputed"
                run.rule("agree.contradiction", fact.id, before="CONTRADICTED",
                         after="disputed", detail="signals: " + ", ".join(
                             f"{k} {v}" for k, v in fact.votes.items()))

    def prune_or_keep(self, run: Run, fact: Fact) -> None:
        """`agree.not_found`: a NOT_FOUND fact whose key details its check's passages do
        mention is not pruned: the evidence is there, the verdict could not read it."""
        check = next((c for c in run.trace.checks if c.id == fact.check), None)
        texts = [p.text for p in check.passages] if check is not None else []
        if texts and run.on("agree.not_found") and \
                mentioned(fact.text, run.trace.subject, texts):
            fact.status = "unverified"
            run.rule("agree.not_found", fact.id, before="pruned", after="unverified",
                     detail="its check's passages mention its key details")
        else:
            fact.status = "pruned"

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

    # == Phase 3: correction (one-pass BP) and reconstruction ===============================
    async def correct(self, run: Run, sentence: Sentence, facts: list[Fact]) -> list[str]:
        """A sentence's correction map: SUPPORTED kept, NOT_FOUND pruned, CONTRADICTED fixed
        together with their dependents. Returns the facts the sentence accepts."""
        for fact in facts:
            if fact.verdict == "SUPPORTED":
                fact.status = "kept"
            elif fact.verdict == "NOT_FOUND":
                self.prune_or_keep(run, fact)
        wrong = [f for f in facts if f.verdict == "CONTRADICTED" and f.status == "pending"]
        if wrong:
            run.expect("correct", 1)
            await self.correct_group(run, sentence.index, wrong)
            run.advance("correct")
        return [f.correction or f.text for f in facts if f.status in (*UNCHANGED, "corrected")]

    async def correct_group(self, run: Run, sentence: int, wrong: list[Fact]) -> None:
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
            self.apply_fixes(run, fixes, open_facts, related)
            if attempt == 0 and len(temperatures) > 1 and any(f.status == "pending"
                                                               for f in wrong):
                run.rule("fix.retry", f"s{sentence}", detail="a contradicted fact got no usable "
                         "fix; asked once more at temperature 0.5")
        for fact in wrong:
            self.swap_back(run, fact)
            if fact.status == "pending":
                fact.status = "uncorrected"
                run.log("correct", f"fact {fact.id} stays contradicted and uncorrected",
                        "fallback")

    def apply_fixes(self, run: Run, fixes: list[FactFix], open_facts: list[Fact],
                    related: list[Fact]) -> None:
        """Map one corrector reply onto the open facts (and their dependents)."""
        unmatched = [fix for fix in fixes
                     if not self.apply_fix(run, fix.original, fix.fixed, open_facts, related)]
        still_open = [f for f in open_facts if f.status == "pending"]
        if len(unmatched) > 1 and len(still_open) == 1 and run.on("fix.join_pieces"):
            # Several pieces for the one open fact: the model split its fix. Join them.
            fact = still_open[0]
            pieces = [fix.fixed or (fix.original if normalise(fix.original)
                                    in normalise(fact.text) else "") for fix in unmatched]
            joined = " ".join(_as_sentence(piece) for piece in pieces if piece.strip())
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
                self.apply_fix(run, fact.text, fix.fixed, [fact], [])

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
            refused = self.refuse_fix(run, fact, fixed, propagated)
            if refused is not None:
                if not propagated or refused == "fix.propagated_delete":
                    run.rule(refused, fact.id, before=fact.text, after=fixed,
                             detail="not a correction")
                break
            fact.correction = fixed or None  # empty, with its rules off: pruned, as the paper
            fact.status = "corrected" if fixed else "pruned"
            break
        else:
            run.log("correct", f"correction for {original!r} matched no fact", "fallback")
        with run.lock:
            run.trace.corrections.append(record)
        return record.fact is not None

    def refuse_fix(self, run: Run, fact: Fact, fixed: str, propagated: bool) -> str | None:
        """The `fix.` rule that refuses a fix for this fact, or None when it is a correction."""
        if run.on("fix.restates") and normalise(fixed) == normalise(fact.text):
            return "fix.restates"
        if run.on("fix.rewords") and fixed and rewords(fact.text, fixed, run.trace.subject):
            return "fix.rewords"
        witness = fact.witness
        if not propagated and fixed and witness is not None and witness.kept_by(fixed) and \
                run.on("fix.keeps_contradicted"):
            # "appointed Knight of the Thistle in 2009" -> "knighted in 2009": the year the
            # quote contradicts is still there, so nothing was fixed.
            return "fix.keeps_contradicted"
        if propagated and not fixed and run.on("fix.propagated_delete"):
            return "fix.propagated_delete"
        if not fixed and run.on("fix.empty"):
            # An empty fix says the corrector could not fix it, not that the fact is false
            # beyond repair: the fact stays contradicted (and open for the retry).
            return "fix.empty"
        return None

    async def reconstruct(self, run: Run, sentence: Sentence, facts: list[Fact],
                          kept: list[str], accepted: _AcceptedFacts) -> None:
        """Fact-to-text: rewrite a changed sentence from the facts it accepts, never showing
        the original sentence; an unchanged one is kept verbatim."""
        if all(f.status in UNCHANGED for f in facts):
            return
        trace = run.trace
        run.expect("reconstruct", 1)
        sentence.kept_verbatim = False
        orphans = (orphan_details(sentence.text, [f.text for f in facts], trace.subject)
                   if run.on("rewrite.orphan") else [])
        if not kept:
            sentence.rewritten = "" if not orphans else self.fallback_sentence(
                run, sentence, facts, kept, orphans, ("rewrite.orphan",
                                                      "would drop the whole sentence"))
            run.advance("reconstruct")
            return
        if self.reconstruction == "minimal":
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
            stated = " ".join(_as_sentence(fact) for fact in kept)
            run.rule("rewrite.state_facts", node, after=stated, detail="its facts stated")
            return stated
        if not run.on("rewrite.keep_sentence"):
            return refused  # every fallback switched off: the refused rewrite stands
        for fact in facts:
            if fact.status == "corrected":
                fact.status = "uncorrected"
            elif fact.status == "pruned":
                fact.status = "unverified"
        sentence.kept_verbatim = True
        lost = f"; stating its facts would lose {', '.join(orphans)}" if orphans else ""
        run.rule("rewrite.keep_sentence", node, after=sentence.text,
                 detail=f"kept the draft's sentence, its changes not applied{lost}")
        return sentence.text

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

    def short_answer(self, run: Run) -> str:
        """A short caller draft's answer: the draft, unless the evidence corrected its claim
        (then the rewritten claim, which needs no polish)."""
        trace = run.trace
        claim = trace.facts[0] if trace.facts else None
        if claim is None or claim.status != "corrected" or not trace.reconstructed.strip():
            if claim is not None and claim.status == "pruned":
                trace.status = "fallback"  # nothing confirmed it, and nothing replaces it
                run.log("polish", "no evidence confirms the short draft; returned it unchanged",
                        "fallback")
            return trace.received
        run.log("polish", f"the short draft was corrected from the evidence: "
                f"{claim.text!r} -> {claim.correction!r}")
        return trace.reconstructed

    async def polish(self, run: Run, layout: Layout) -> str:
        """The rebuilt sentences, put back in the draft's layout -> the answer, smoothed at
        `polish_temperature` when any sentence changed and the draft is plain prose
        (`polish.layout`); every polish a `polish.` guard refuses falls back to the
        reconstructed draft."""
        trace = run.trace
        parts = [s.text if s.kept_verbatim else (s.rewritten or "") for s in trace.sentences]
        trace.reconstructed = layout.rebuild(parts).strip()
        if trace.short_draft:
            return self.short_answer(run)
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
        run.report("polish", 0, 1)

        async def smooth() -> str:
            return (await run.call("polisher", question=trace.question,
                                   draft=trace.reconstructed,
                                   config={"temperature": self.polish_temperature})).answer
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


class _AcceptedFacts:
    """Each sentence's accepted facts, published as soon as its correction map is done, so a
    rewrite waits only for the sentences before it that it reads (REWRITE_CONTEXT_SENTENCES)."""

    def __init__(self, n: int):
        self.facts: list[list[str] | None] = [None] * n
        self.ready = [asyncio.Event() for _ in range(n)]

    def set(self, index: int, facts: list[str]) -> None:
        if self.facts[index] is None:
            self.facts[index] = list(facts)
            self.ready[index].set()

    async def before(self, index: int, window: int) -> list[str]:
        earlier = range(max(0, index - window), index)
        for k in earlier:
            await self.ready[k].wait()
        return [fact for k in earlier for fact in self.facts[k] or []]


def _node_order(node: Fact | Check) -> tuple[int, int]:
    """Sentence, then position: `f3.10` and `c3.1` sort after `f3.2` and `c3.0`."""
    return node.sentence, int(node.id.rsplit(".", 1)[1])


class _LazyContext:
    """Retrieves R(Q) at most once, only if a phase needs it, and never raises."""

    def __init__(self, program: SERC, run: Run, question: str):
        self.program, self.run, self.question = program, run, question
        self.passages: list[Passage] | None = None

    async def get(self) -> list[Passage]:
        if self.passages is None:
            self.passages = []
            if not self.program.use_retrieval:
                self.run.log("align", "retrieval disabled: no question context")
            else:
                try:
                    self.passages = await self.program.retrieve(self.run, self.question)
                except RetrievalError as exc:
                    self.run.log("align", f"question retrieval failed: {exc}", "error")
        return self.passages



def subject_name(subject: str) -> str:
    """The name in a `Name (Characteristic)` subject; empty when the subject is no name (the
    question itself, with the firewall off)."""
    name = re.sub(r"\s*\([^)]*\)\s*$", "", subject or "").strip()
    return name if 0 < len(name.split()) <= 5 and not name.endswith("?") else ""


def _as_sentence(fact: str) -> str:
    fact = fact.strip()
    return fact if fact.endswith((".", "!", "?")) else fact + "."
