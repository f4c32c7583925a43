"""Phase 1: the entity firewall, and the context-grounded answer a reset or a cold start
writes (the paper's steps 2-5)."""

from __future__ import annotations

from typing import Any, ClassVar

import dspy

from serc_dspy.core.entities import Descriptor, more_specific
from serc_dspy.core.text import is_refusal, split_sentences
from serc_dspy.core.trace import Passage, Trace
from serc_dspy.programs.base import format_passages
from serc_dspy.programs.serc.common import Settings, Stage, StaticContext
from serc_dspy.rules.asked import echoes_question
from serc_dspy.rules.draft import (
    adds_nothing,
    denies_premise,
    gives_no_value,
    states_no_name,
    states_no_value,
)
from serc_dspy.rules.names import (
    ASKED_ANSWER_MIN_SENTENCES,
    asks_for_answer_entity,
    mentions,
    names_a_subject,
    names_in,
    same_name,
)
from serc_dspy.runtime.steps import Run, StepSpec, gather
from serc_dspy.signatures import (
    AnswerEntity,
    EvidenceEntity,
    GroundedAnswer,
    QueryEntity,
    SameEntity,
)


class EntityFirewall(Stage):
    """Compare `Name (Characteristic)` descriptors of the question, the answer and the retrieved
    context; hard-reset the answer to a context-grounded one only when the judge found two
    different entities. Alone: `EntityFirewall()(question=..., answer=..., context=[...])`."""

    steps: ClassVar[dict[str, StepSpec]] = {
        "grounded_answerer": StepSpec("generate", "grounded_answer"),
        "query_entity": StepSpec("firewall", "query_entity"),
        "answer_entity": StepSpec("firewall", "answer_entity"),
        "evidence_entity": StepSpec("firewall", "evidence_entity"),
        "entity_judge": StepSpec("firewall", "same_entity"),
    }

    def __init__(self, settings: Settings | None = None, **options: Any):
        super().__init__(settings, **options)
        self.grounded_answerer = dspy.Predict(GroundedAnswer)
        self.query_entity = dspy.Predict(QueryEntity)
        self.answer_entity = dspy.Predict(AnswerEntity)
        self.evidence_entity = dspy.Predict(EvidenceEntity)
        self.entity_judge = dspy.Predict(SameEntity)

    def forward(self, question: str, answer: str, context=None) -> dspy.Prediction:
        """The firewall alone: `context` is passages (text or `Passage`s) about the question."""
        passages = [p if isinstance(p, Passage) else Passage(text=str(p))
                    for p in (context or [])]
        trace = Trace(method="firewall", question=question, received=answer, subject=question)
        trace.firewall.enabled = True
        _, trace = self.standalone(self.entity_firewall, question, StaticContext(passages),
                                   trace=trace)
        fw = trace.firewall
        return dspy.Prediction(decision=fw.decision, reset=fw.reset,
                               same_entity=fw.same_entity, answer=trace.received,
                               subject=trace.subject, firewall=fw, trace=trace)

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

    async def passage_answer(self, run: Run, question: str, draft: str, context: Any
                             ) -> tuple[str, str] | None:
        """`draft.denies_premise`, `draft.no_value`, `draft.no_name`: (the rule, the answer
        grounded in the question's passages) that replaces a draft denying the question's
        premise or stating no value of the asked kind; None (the draft stays) where no rule
        applies, no passage came back, or the grounded answer refuses, denies, gives no
        value of the asked kind (`gives_no_value`: "Merimbula" to "... had what
        population?"), or says only the question's words (`adds_nothing`)."""
        rule = next((r for r, says_nothing in (("draft.denies_premise", denies_premise),
                                               ("draft.no_value", states_no_value),
                                               ("draft.no_name", states_no_name))
                     if run.on(r) and says_nothing(question, draft)), None)
        if rule is None:
            return None
        passages = await context.get()
        if not passages:
            return None
        grounded = await self.grounded_answer(run, question, passages, draft)
        if grounded == draft or is_refusal(grounded) or denies_premise(question, grounded) or \
                gives_no_value(question, grounded) or states_no_name(question, grounded) or \
                adds_nothing(question, grounded):
            run.log("align", f"{rule}: the grounded answer failed, refused, denied, stated no "
                    "value of the asked kind too or only the question's words: kept the "
                    "draft", "fallback")
            return None
        return rule, grounded

    async def entity_firewall(self, run: Run, question: str, context: Any) -> None:
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
        # the question's descriptor serves only the rules after `firewall.same_name`
        eager = not passages or not run.on("firewall.query_on_demand")
        kinds = (["query"] if eager else []) + ["answer"] + (["evidence"] if passages else [])

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
        answer, evidence = found["answer"], found.get("evidence", Descriptor())
        firewall.answer_entity, firewall.evidence_entity = str(answer), str(evidence)
        firewall.query_entity = str(found.get("query", ""))
        placeholder = not (answer.usable and evidence.usable) and run.on("firewall.placeholder")
        decided_by: list[str] = []
        if passages and not placeholder and run.on("firewall.same_name") and \
                same_name(answer.name, evidence.name, run.rules, decided_by):
            firewall.same_entity = True
            firewall.decision = "passed: the answer and the evidence name the same entity " \
                                "(same normalised name, no judge call)"
            run.rule("firewall.same_name", "firewall", detail=f"{answer} / {evidence}")
            for rule in decided_by:
                run.rule(rule, "firewall", detail=f"{answer.name} / {evidence.name}")
            if not eager:
                run.rule("firewall.query_on_demand", "firewall", detail="the question's "
                         "descriptor was not read: no rule after this one ran")
            trace.subject = str(more_specific(answer, evidence))
            return
        query = found["query"] if eager else await run.attempt(
            "firewall", "descriptor extraction failed", lambda: describe_entity("query"),
            None, failed=unread)
        if query is None:
            return
        firewall.query_entity = str(query)  # read now, where the rules below need it
        trace.subject = str(more_specific(answer, query)) or question
        if not passages:
            firewall.decision = "passed: no retrieved context to compare with"
            return
        if placeholder:
            which = " and ".join(k for k, d in (("answer", answer), ("evidence", evidence))
                                 if not d.usable)
            firewall.decision = f"passed: the {which} descriptor is empty or a placeholder"
            run.rule("firewall.placeholder", "firewall", detail=firewall.decision)
            return
        if run.on("firewall.asked_entity") and query.usable and \
                same_name(query.name, evidence.name, run.rules, decided_by) and \
                mentions(trace.received, query.name, run.rules, decided_by):
            # The answer descriptor named another of the subject's names (a birth name, say)
            # while the answer itself names the entity asked about, which the evidence is about.
            firewall.same_entity = True
            firewall.decision = (f"passed: the answer names the asked entity ({query.name}), "
                                 "which the evidence is about (no judge call)")
            run.rule("firewall.asked_entity", "firewall",
                     detail=f"{query.name}: the answer descriptor said {answer}")
            for rule in decided_by:
                run.rule(rule, "firewall", detail=f"{query.name} / {evidence.name}")
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

        if run.on("firewall.asked_answer") and answer.usable and \
                asks_for_answer_entity(question, answer.name) and \
                len(split_sentences(trace.received)) >= ASKED_ANSWER_MIN_SENTENCES:
            firewall.decision = (f"passed: the answer's entity ({answer.name}) is what the "
                                 "question asks for; the check nodes test it against the "
                                 f"evidence's ({evidence.name})")
            run.rule("firewall.asked_answer", "firewall", detail=f"{answer} / {evidence}")
            return

        if run.on("firewall.asked_subject") and answer.usable and query.usable and \
                names_in(question, answer.name) and \
                same_name(query.name, answer.name, run.rules, decided_by) and \
                len(split_sentences(trace.received)) >= ASKED_ANSWER_MIN_SENTENCES:
            firewall.decision = (f"passed: the answer is about the entity the question names "
                                 f"({answer.name}); evidence about another ({evidence.name}) "
                                 "is for the check nodes to weigh")
            run.rule("firewall.asked_subject", "firewall", detail=f"{query} / {answer} / "
                     f"{evidence}")
            for rule in decided_by:
                run.rule(rule, "firewall", detail=f"{query.name} / {answer.name}")
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
        grounded = await self.grounded_answer(run, question, passages, trace.received)
        refused = is_refusal(grounded) and not is_refusal(trace.received) and \
            run.on("firewall.refused_reset")
        if refused or run.on("firewall.echoed_reset") and echoes_question(question, grounded):
            firewall.reset = False
            firewall.decision = (f"passed: the judge found {answer} and {evidence} to be "
                                 "different entities, but the grounded answer " +
                                 ("refused" if refused else "only repeats a name the question "
                                  "gives"))
            run.rule("firewall.refused_reset" if refused else "firewall.echoed_reset",
                     "firewall", before=grounded[:80], detail=firewall.decision)
            return
        firewall.replaced_answer = trace.received
        trace.subject = str(evidence)
        trace.received = grounded
        run.log("firewall", f"entity mismatch ({answer} vs {evidence}): hard reset to a "
                "context-grounded answer")
