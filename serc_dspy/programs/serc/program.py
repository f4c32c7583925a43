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
from typing import Any, ClassVar

import dspy

from serc_dspy.core.layout import Layout
from serc_dspy.core.text import is_refusal, needs_cold_start
from serc_dspy.core.trace import Firewall, Passage, Sentence
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
from serc_dspy.programs.serc.options import SERC_OPTION_NAMES, SercOptions
from serc_dspy.programs.serc.packaged import AUTO_STATE, apply_model_state
from serc_dspy.programs.serc.reconstruction import Reconstructor
from serc_dspy.programs.serc.short_answers import MAX_SENTENCES
from serc_dspy.retrieval.base import RetrievalError
from serc_dspy.rules import RuleSet, language_of
from serc_dspy.rules.answers import answer_sentence, one_sentence
from serc_dspy.rules.draft import SAYS_NOTHING, answer_claim, says_more
from serc_dspy.rules.questions import question_kind
from serc_dspy.rules.reading import reading_span, sentence_slot
from serc_dspy.rules.shared import shared_question
from serc_dspy.rules.slots import about_subject, focus
from serc_dspy.rules.yesno import pair_question
from serc_dspy.runtime.states import is_compiled_state, load_compiled
from serc_dspy.runtime.steps import gather

STAGES: dict[str, str] = {
    "grounded_answerer": "entities", "query_entity": "entities", "answer_entity": "entities",
    "evidence_entity": "entities", "entity_judge": "entities",
    "fact_extractor": "checks", "query_writer": "checks", "evidence_writer": "checks",
    "recaller": "checks", "verifier": "checks", "single_verifier": "checks",
    "fact_checker": "checks", "value_chooser": "choice", "sentence_chooser": "choice",
    "answer_reader": "choice",
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


_ONE_CLAIM = {
    "draft.short_claim": "a short caller draft: checked as one claim answering the question "
                         "(no cold start, no firewall)",
    "draft.answer_sentence": "a one-sentence caller draft stating the kind of value the "
                             "question asks for: checked as its answer (no firewall)",
    "draft.shared_sentence": "a one-sentence caller draft to a question of what two things "
                             "have in common: checked as its answer (no firewall)",
    "draft.yes_no_sentence": "a one-sentence caller draft to a question of whether two things "
                             "are both P or share a value: its yes or no read from the "
                             "passages (no firewall)",
}
"""Each `one_claim` rule's ruling: why the draft was checked as one claim."""


class SERC(TracedProgram):
    """Semantic Error-Reduction and Correction as a DSPy module.

    `SERC(retriever, options=SercOptions(...), **overrides)`: `retriever` is any callable
    `(query, k) -> list[Passage | str | dict]`; SERC's own options (the firewall, density,
    queries, evidence, verdicts, reconstruction, rules, compiled state, bounds, a claim
    verifier) are the fields of `SercOptions`, each with its meaning, given as an object, as
    keywords, or both (keywords win); the options every method takes (`top_k`,
    `context_chars`, `max_workers`, `lms`, `adapter`, `progress`, `deadline_s`) are
    `TracedProgram`'s. `serc.options` is the validated set; each option also reads as
    `serc.verdicts`, and each predictor by its name before the stages split
    (`serc.fact_extractor` is `serc.checks.fact_extractor`).
    """

    method_name = "serc"
    steps: ClassVar[dict[str, StepSpec]] = {
        **EntityFirewall.steps, **CheckNodes.steps, **SlotChooser.steps, **Corrector.steps,
        **Reconstructor.steps}
    """Every predictor's step: the union of the sub-modules' own tables."""

    def __init__(self, retriever=None, options: SercOptions | None = None, **overrides: Any):
        own = {k: v for k, v in overrides.items() if k in SERC_OPTION_NAMES}
        super().__init__(retriever, **{k: v for k, v in overrides.items() if k not in own})
        self.options = SercOptions.build(options, own)
        self.rules = RuleSet(self.options.rules)
        self.settings = Settings(self.retriever, options=self.options, top_k=self.top_k,
                                 context_chars=self.context_chars,
                                 max_workers=self.max_workers, rules=self.rules)
        self.entities = EntityFirewall(self.settings)
        self.checks = CheckNodes(self.settings)
        self.choice = SlotChooser(self.settings)
        self.correction = Corrector(self.settings)
        self.reconstruction = Reconstructor(self.settings)
        compiled = self.options.compiled
        self.compiled = str(compiled) if compiled is not None else None
        self.model_state: str | None = None
        """The offline model whose packaged state `compiled="auto"` applied (see forward)."""
        if compiled is not None and compiled != AUTO_STATE:
            load_compiled(self, compiled)
        self.check_lm_keys()

    def __getattr__(self, name: str) -> Any:
        """A predictor by its name before the split (`serc.fact_extractor`), else an option
        (`serc.verdicts`), read-only."""
        if name.startswith("__") or "options" not in self.__dict__:
            raise AttributeError(name)
        if name in STAGES:
            return getattr(getattr(self, STAGES[name]), name)
        if name in SERC_OPTION_NAMES:
            return getattr(self.options, name)
        if name == "claim_verifier":
            return self.options.verifier
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

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
        answer = await self.decode(run, received)                      # Phases 2-4
        if again := self.prose_again(run):                             # a sentence answer
            received = await self.as_prose(run, question, again)       # the check left open
            answer = await self.decode(run, received)
        return self.finish(run, answer)

    async def decode(self, run: Run, received: str) -> str:
        """Phases 2-4 on the received answer: the decoded text (the received text itself when
        the run failed: out of time, or nothing verified)."""
        layout = self.split(run, received)                             # S_1 .. S_n
        if layout is None:                                             # out of time
            return received
        sentences = run.trace.sentences
        accepted = AcceptedFacts(len(sentences))
        run.expect("decompose", min(len(sentences), self.settings.max_sentences))
        await gather(*(self.decode_sentence(run, s, accepted) for s in sentences))
        if self.nothing_verified(run):
            return run.trace.received
        return await self.reconstruction.polish(run, layout)                   # Phase 4

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

        replaced = await self.entities.passage_answer(run, question, received, context)
        if replaced is not None:
            rule, grounded = replaced
            run.rule(rule, "answer", before=received, after=grounded,
                     detail=SAYS_NOTHING[rule] + ": answered from the question's passages")
            trace.cold_start, received = True, grounded
        one_claim = not trace.cold_start and (self.one_claim(run, question, received) or
                                              await self.read_sentence(run, question,
                                                                       received, context))
        if one_claim:
            # The cold start replaces the model's own failed first answer; a caller's draft,
            # however short, is the caller's input: it is decoded, as one claim that answers
            # the question, and changed only by a correction the evidence supports.
            trace.short_draft = True
            trace.received, trace.subject = received, question
            trace.firewall.error = "skipped: a short caller draft is checked as one claim"
            if one_claim == "draft.read_sentence":  # its ruling names the slot and reading
                return received
            run.rule(one_claim, "answer", before=received,
                     after=answer_claim(question, received), detail=_ONE_CLAIM[one_claim])
            return received
        if not trace.cold_start and needs_cold_start(received) and run.on("draft.cold_start"):
            trace.cold_start = True
            passages = await context.get()
            before = received
            if passages:
                received = await self.entities.grounded_answer(run, question, passages, received)
            run.rule("draft.cold_start", "answer", before=before, after=received,
                     detail="grounded in the question's passages" if passages else
                            "no passages to ground it in")
            if not passages or is_refusal(received) or not received.strip():
                if is_refusal(received) or not received.strip():
                    trace.status = "no_info"
                    trace.received = received
                    trace.answer = received
                    if run.on("draft.no_info"):
                        trace.answer = NO_INFO_ANSWER
                        run.rule("draft.no_info", "answer", before=received,
                                 after=NO_INFO_ANSWER, detail="a refusal or an empty answer "
                                 "the cold start could not ground")
                    run.log("align", "no usable answer and no retrieved context", "fallback")
                    return None
        trace.received = received
        trace.subject = question
        if self.settings.firewall and not trace.cold_start:
            await self.entities.entity_firewall(run, question, context)
        elif trace.cold_start:
            trace.firewall.error = "skipped: the answer was already grounded by the cold start"
        return trace.received

    @staticmethod
    def prose_again(run: Run) -> str | None:
        """The rule under which a short draft checked as one slot is decoded again as prose:
        a sentence answer (`draft.answer_sentence`, `draft.read_sentence`) whose value the
        check neither supported nor corrected (`draft.sentence_as_prose`), or a one-sentence
        draft whose supported value is not all it says (`draft.says_more`); None: neither."""
        trace = run.trace
        if trace.status == "failed" or not trace.short_draft:
            return None
        rulings = [s.ruling for f in trace.facts for s in f.slots]
        sentence = any(trace.ruled(rule, "answer") for rule in (
            "draft.answer_sentence", "draft.read_sentence", "draft.shared_sentence",
            "draft.yes_no_sentence"))
        # a yes the passages support says nothing of the rest of the draft's sentence
        yes_only = trace.ruled("draft.yes_no_sentence", "answer") and "contradicted" not in rulings
        if yes_only or not any(r in ("supported", "contradicted") for r in rulings):
            return "draft.sentence_as_prose" if sentence and \
                run.on("draft.sentence_as_prose") else None
        values = [s.text for f in trace.facts for s in f.slots]
        if run.on("draft.says_more") and rulings and set(rulings) == {"supported"} and \
                one_sentence(trace.received) and \
                says_more(trace.question, trace.received, values):
            return "draft.says_more"
        return None

    async def as_prose(self, run: Run, question: str, rule: str) -> str:
        """`draft.sentence_as_prose`, `draft.says_more` (`rule`): a short draft the slot check
        left open, or whose supported value is not all it says, is decoded again as prose
        (the firewall, the fact extractor, every detail a slot), whose rewrites fix sentence
        answers that a choice among values misses. The first check's rulings stay in the
        trace, on the answer node, with what it found."""
        trace = run.trace
        found = "; ".join(f"{s.text!r}: {s.note or s.ruling}" for f in trace.facts
                          for s in f.slots) or "no slot"
        for ruling in trace.rulings:
            if ruling.node not in ("answer", "firewall"):
                ruling.detail = f"(the sentence check, on {ruling.node}) {ruling.detail}"
                ruling.node = "answer"
        run.rule(rule, "answer", before=trace.received, after=trace.received,
                 detail=(f"the sentence check left its value open ({found})"
                         if rule == "draft.sentence_as_prose" else
                         f"the slot check supported its value ({found}); the draft says "
                         "more") + ": decoded as prose")
        trace.short_draft = False
        trace.sentences, trace.facts, trace.checks, trace.corrections = [], [], [], []
        trace.reconstructed = ""
        trace.firewall = Firewall(enabled=self.settings.firewall)
        if rule == "draft.says_more":  # the evidence states its value: no other entity's
            trace.firewall.decision = "passed: the slot check supported the draft's value"
        elif self.settings.firewall:
            await self.entities.entity_firewall(run, question,
                                                LazyContext(self.settings, run, question))
        return trace.received

    @staticmethod
    def one_claim(run: Run, question: str, received: str) -> str | None:
        """The rule under which a caller's draft is one claim answering the question: too short
        to read as prose (`draft.short_claim`), or one short sentence stating a value of the
        asked kind (`draft.answer_sentence`) or answering what two things have in common
        (`draft.shared_sentence`); None: it is decoded as prose."""
        if not run.trace.draft_given:
            return None
        if needs_cold_start(received):
            return "draft.short_claim" if run.on("draft.short_claim") else None
        if run.on("draft.answer_sentence") and answer_sentence(question, received, run.on):
            return "draft.answer_sentence"
        if run.on("draft.shared_sentence") and run.on("choose.shared_value") and \
                one_sentence(received) and shared_question(question):
            return "draft.shared_sentence"
        if run.on("draft.yes_no_sentence") and question_kind(question) == "yes/no" and \
                one_sentence(received) and pair_question(question):
            return "draft.yes_no_sentence"
        return None

    async def read_sentence(self, run: Run, question: str, received: str,
                            context: LazyContext) -> str | None:
        """`draft.read_sentence`: a caller's one-sentence draft that states no value of the
        asked kind is read against the question's evidence (one call); where the reading stands
        in a passage and the draft has one detail of its kind the question does not name, the
        draft is one claim with that detail as its slot. None: it is decoded as prose."""
        if not (run.trace.draft_given and self.settings.verdicts == "choose" and
                run.on("draft.read_sentence") and question_kind(question) not in (
                    "comparison", "yes/no") and one_sentence(received)):
            return None
        evidence = about_subject(await context.get(), "")
        if not evidence:
            return None
        read = await self.choice.ask_reading(run, "align", "the draft's reading failed",
                                             focus(evidence, question, limit=MAX_SENTENCES))
        if read is None:  # the failure is logged: the draft goes on as prose, unchanged
            return None
        found = reading_span(read, evidence)
        slot = sentence_slot(question, received, found[2]) if found else None
        if slot is None:
            run.log("align", f"the one-sentence draft was read as {read!r}: "
                             f"{'no one detail of its kind' if found else 'in no passage'}; "
                             "decoded as prose")
            return None
        run.rule("draft.read_sentence", "answer", before=slot.text, after=found[2],
                 detail=f"the evidence read for the question: {found[2]!r}; the draft's one "
                        f"{slot.kind} the question does not name, {slot.text!r}, is its "
                        "answer: checked as a short answer (no firewall)")
        return "draft.read_sentence"

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
