"""SERC: decode an LM answer like a noisy codeword against retrieved evidence.

`aforward` reads like the paper's Algorithm 1: align (the entity firewall), decompose and
detect (the check nodes), correct (one-pass belief propagation), reconstruct (fact-to-text),
polish. Each phase is a DSPy module of its own (`EntityFirewall`, `CheckNodes`, `Corrector`,
`Reconstructor`) with its own predictors, which can be called, tested and compiled alone; SERC
composes them and every phase writes into the trace.

Failure policy (where the reference implementation lost facts): a retriever or LM failure
never becomes evidence. Facts whose check failed are marked `unverified` and kept verbatim; a
failed correction keeps the fact (`uncorrected`); a failed rewrite keeps the original sentence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

import dspy

from serc_dspy.layout import Layout
from serc_dspy.programs.base import (
    NO_INFO_ANSWER,
    InputError,
    Run,
    StepSpec,
    TracedProgram,
    check_text,
)
from serc_dspy.programs.serc.checks import CheckNodes
from serc_dspy.programs.serc.choice import SlotChooser
from serc_dspy.programs.serc.common import AcceptedFacts, Settings
from serc_dspy.programs.serc.correction import Corrector
from serc_dspy.programs.serc.firewall import EntityFirewall
from serc_dspy.programs.serc.reconstruction import Reconstructor
from serc_dspy.retrieval.base import RetrievalError
from serc_dspy.rules import RuleSet, language_of
from serc_dspy.rules.draft import answer_claim
from serc_dspy.states import AUTO_STATE, apply_model_state, is_compiled_state, load_compiled
from serc_dspy.steps import gather
from serc_dspy.text import is_refusal, needs_cold_start
from serc_dspy.trace import Passage, Sentence

Density = Literal["sentence", "atomic"]
QueryMode = Literal["lm", "facts"]
EvidenceMode = Literal["summary", "passages"]
VerdictMode = Literal["check", "fact", "choose"]
Reconstruction = Literal["rebuild", "minimal"]
STAGES: dict[str, str] = {
    "grounded_answerer": "entities", "query_entity": "entities", "answer_entity": "entities",
    "evidence_entity": "entities", "entity_judge": "entities",
    "fact_extractor": "checks", "query_writer": "checks", "evidence_writer": "checks",
    "recaller": "checks", "verifier": "checks", "single_verifier": "checks",
    "fact_checker": "checks", "value_chooser": "choice", "sentence_chooser": "choice",
    "corrector": "correction", "rewriter": "reconstruction",
    "polisher": "reconstruction",
}
"""Each predictor's sub-module: `fact_extractor` is `checks.fact_extractor`. States saved before
the split name predictors without it, and load through this map (`states.load_compiled`)."""
PREDICTOR_PATHS = {name: f"{module}.{name}" for name, module in STAGES.items()}


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


def _predictor(name: str) -> property:
    module = STAGES[name]
    return property(lambda self: getattr(getattr(self, module), name),
                    lambda self, value: setattr(getattr(self, module), name, value),
                    doc=f"The `{module}.{name}` predictor (its name before the split).")


def _setting(name: str) -> property:
    return property(lambda self: getattr(self.settings, name), doc=f"`settings.{name}`.")


OPTIONS = ("firewall", "use_retrieval", "density", "max_facts_per_check", "match_cutoff",
           "polish_temperature", "queries", "evidence", "verdicts", "max_sentences",
           "max_facts_per_sentence", "fact_evidence", "evidence_window", "claim_verifier")


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
            calls, sharing a cached prompt prefix; far more accurate on small models);
            "choose" masks each detail of a fact and has the LM choose, in two option orders,
            among the values the evidence offers (`programs/serc/choice.py`): the same other
            value chosen twice is swapped in, in place; nothing else changes a fact.
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
        evidence_window: with `evidence="passages"`, cut each passage a check node reads to
            this many sentences around the one about each of its facts (the source kept; one
            cut per node, so its verdicts share it and its correction reads it): fewer prompt
            tokens for the engine to process.
        reconstruct: "rebuild" (the paper) rewrites a changed sentence from its facts;
            "minimal" makes each correction in place in the draft's sentence (a pruned fact
            takes out its own clause) and rewrites only when an edit cannot be placed.
        verifier: a claim verifier (`serc_dspy.verifiers`) whose verdict is one of the
            signals `agree.contradiction` counts before a fact is changed.
    """

    method_name = "serc"
    steps: ClassVar[dict[str, StepSpec]] = {
        **EntityFirewall.steps, **CheckNodes.steps, **SlotChooser.steps, **Corrector.steps,
        **Reconstructor.steps}
    """Every predictor's step: the union of the sub-modules' own tables."""

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
        evidence_window: int | None = None,
        reconstruct: Reconstruction = "rebuild",
        verifier: Any = None,
        **options: Any,
    ):
        super().__init__(retriever, **options)
        checks = [
            (density in ("sentence", "atomic"), f"density must be 'sentence' or 'atomic', got "
                                                f"{density!r}"),
            (max_facts_per_check >= 1, f"max_facts_per_check must be at least 1, got "
                                       f"{max_facts_per_check}"),
            (0.0 < match_cutoff <= 1.0, f"match_cutoff must be in (0, 1], got {match_cutoff}"),
            (queries in ("lm", "facts"), f"queries must be 'lm' or 'facts', got {queries!r}"),
            (evidence in ("summary", "passages"), f"evidence must be 'summary' or 'passages', "
                                                  f"got {evidence!r}"),
            (verdicts in ("check", "fact", "choose"), f"verdicts must be 'check', 'fact' or "
                                                      f"'choose', got {verdicts!r}"),
            (max_sentences >= 1 and max_facts_per_sentence >= 1,
             "max_sentences and max_facts_per_sentence must be at least 1"),
            (evidence_window is None or evidence_window >= 1,
             f"evidence_window must be at least 1 sentence, got {evidence_window}"),
            # a bound that cannot take effect is refused, not ignored (docs/cli.md)
            (evidence_window is None or (evidence == "passages" and use_retrieval),
             "evidence_window cuts retrieved passages: it needs evidence='passages' and "
             "retrieval (--evidence passages, without --no-retrieval)"),
            (not fact_evidence or use_retrieval,
             "fact_evidence searches each fact's own text: it needs retrieval (drop "
             "--no-retrieval or --fact-evidence)"),
            (reconstruct in ("rebuild", "minimal"), f"reconstruct must be 'rebuild' or "
                                                    f"'minimal', got {reconstruct!r}"),
            (verifier is None or callable(getattr(verifier, "averify", None)),
             "verifier must have averify(claims, evidence) (see "
             "serc_dspy.verifiers.ClassifierVerifier)"),
        ]
        for ok, message in checks:
            if not ok:
                raise InputError(message)
        self.rules = RuleSet(rules)
        self.settings = Settings(
            retriever=self.retriever, top_k=self.top_k, context_chars=self.context_chars,
            firewall=firewall, use_retrieval=use_retrieval, density=density,
            max_facts_per_check=1 if density == "atomic" else max_facts_per_check,
            match_cutoff=match_cutoff, polish_temperature=polish_temperature,
            queries=queries, evidence=evidence, verdicts=verdicts,
            max_sentences=max_sentences, max_facts_per_sentence=max_facts_per_sentence,
            fact_evidence=fact_evidence, evidence_window=evidence_window,
            reconstruction=reconstruct,
            claim_verifier=verifier, max_workers=self.max_workers, rules=self.rules)
        self.entities = EntityFirewall(self.settings)
        self.checks = CheckNodes(self.settings)
        self.choice = SlotChooser(self.settings)
        self.correction = Corrector(self.settings)
        self.reconstruction = Reconstructor(self.settings)
        self.compiled = str(compiled) if compiled is not None else None
        self.model_state: str | None = None
        """The offline model whose packaged state `compiled="auto"` applied (see forward)."""
        if compiled is not None and compiled != AUTO_STATE:
            load_compiled(self, compiled)
        self.check_lm_keys()

    load = _CompiledLoad()
    PREDICTOR_PATHS: ClassVar[dict[str, str]] = PREDICTOR_PATHS

    # ======================================================================================
    async def aforward(self, question: str, draft: str | None = None) -> dspy.Prediction:
        """Algorithm 1. Phase 1 hands the received answer R on; each sentence of R then flows
        through phases 2-3 on its own (facts -> check nodes -> syndromes -> corrections ->
        rewritten sentence) as soon as its inputs exist, all sentences sharing one bounded
        pool of LM calls; phase 4 polishes what they hand back."""
        if self.settings.use_retrieval and self.retriever is None:
            check_text("question", question)
            raise InputError(
                "SERC needs a retriever: pass SERC(retriever=...) (e.g. a LocalCorpus), "
                "or SERC(use_retrieval=False) to verify against the LM's own knowledge"
            )
        run, question, draft = self.start(question, draft)
        apply_model_state(self, run)
        received = await self.align(run, question, draft)              # Phase 1: R
        if received is None:                                           # no usable answer
            return self.finish(run, run.trace.answer)
        layout = self.split(run, received)                             # S_1 .. S_n
        if layout is None:                                             # out of time
            return self.finish(run, received)
        sentences = run.trace.sentences
        accepted = AcceptedFacts(len(sentences))
        run.expect("decompose", min(len(sentences), self.settings.max_sentences))
        await gather(*(self.decode_sentence(run, s, accepted) for s in sentences))
        if self.nothing_verified(run):
            return self.finish(run, run.trace.received)
        return self.finish(run, await self.reconstruction.polish(run, layout))        # Phase 4

    async def decode_sentence(self, run: Run, sentence: Sentence,
                              accepted: AcceptedFacts) -> None:
        """Phases 2-3 for one sentence: F_i, its check nodes, their syndromes, the correction
        map, and the sentence rebuilt from the facts it accepts."""
        kept: list[str] = []
        try:
            if sentence.index >= self.settings.max_sentences:
                return                                                 # kept, unverified
            facts = await self.checks.decompose(run, sentence)                # variable nodes F_i
            checks = self.checks.build_checks(run, sentence, facts)           # check nodes
            await run.map("detect", lambda c: self.detect(run, c), checks)     # syndromes
            kept = await self.correction.correct(run, sentence, facts)            # correction map
            accepted.set(sentence.index, kept)
            await self.reconstruction.reconstruct(run, sentence, facts, kept, accepted)  # S'_i
        finally:
            accepted.set(sentence.index, kept)  # never leave a later rewrite waiting

    async def detect(self, run: Run, check) -> None:
        """One check node's syndrome: verdicts judged freely (`verdicts="check"|"fact"`), or
        chosen among the evidence's own values (`verdicts="choose"`)."""
        judge = self.choice.judge if self.settings.verdicts == "choose" else None
        await self.checks.detect(run, check, judge=judge)

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
        trace.firewall.enabled = self.settings.firewall
        received = await self.initial_answer(run, question, draft)
        self.read_language(run, received)
        context = LazyContext(self.settings, run, question)

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
                received = await self.entities.grounded_answer(run, question, passages, received)
            if not passages or is_refusal(received) or not received.strip():
                if is_refusal(received) or not received.strip():
                    trace.status = "no_info"
                    trace.received = received
                    trace.answer = NO_INFO_ANSWER
                    run.log("align", "no usable answer and no retrieved context", "fallback")
                    return None
        trace.received = received
        trace.subject = question
        if self.settings.firewall and not trace.cold_start:
            await self.entities.entity_firewall(run, question, context)
        elif trace.cold_start:
            trace.firewall.error = "skipped: the answer was already grounded by the cold start"
        return trace.received

    def read_language(self, run: Run, received: str) -> None:
        """The rules of this run: the program's switches, with the English-only rules off when
        the received answer is not English."""
        run.trace.language = language_of(received)
        run.rules = self.rules.for_language(run.trace.language)
        run.trace.rules_off = run.rules.off()

    # == Phase 2: the sentences the graph is built on =====================================
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
        if len(texts) > self.settings.max_sentences:
            trace.bounded = True
            trace.unchecked_sentences = len(texts) - self.settings.max_sentences
            run.log("decompose", f"the answer has {len(texts)} sentences; only the first "
                    f"{self.settings.max_sentences} are checked (max_sentences), the rest are kept "
                    "verbatim and unverified", "fallback")
        return layout


class LazyContext:
    """Retrieves R(Q) at most once, only if a phase needs it, and never raises."""

    def __init__(self, settings: Settings, run: Run, question: str):
        self.settings, self.run, self.question = settings, run, question
        self.passages: list[Passage] | None = None

    async def get(self) -> list[Passage]:
        if self.passages is None:
            self.passages = []
            if not self.settings.use_retrieval:
                self.run.log("align", "retrieval disabled: no question context")
            else:
                try:
                    self.passages = await self.settings.retrieve(self.run, self.question)
                except RetrievalError as exc:
                    self.run.log("align", f"question retrieval failed: {exc}", "error")
        return self.passages


for _name in STAGES:  # `serc.fact_extractor` and the other names predictors had before the split
    setattr(SERC, _name, _predictor(_name))
for _name in OPTIONS:  # the options, read-only: the stages share them through `settings`
    setattr(SERC, _name, _setting(_name))
