"""The methods SERC is compared with, on the same backends, retrievers and inputs.

Each takes `question` and an optional `draft` and returns `answer`, `initial_answer`, `trace`
and `usage` like SERC. Their intermediate steps go to `trace.steps`. As in SERC, a retrieval
or LM failure in a verification step is recorded and that step is left out; it never becomes
evidence that changes the answer.
"""

from __future__ import annotations

import functools
from typing import ClassVar

import dspy

from serc_dspy.core.text import unique_texts
from serc_dspy.core.trace import Step
from serc_dspy.programs.base import Run, StepSpec, TracedProgram, format_passages
from serc_dspy.signatures import (
    AnswerFromContext,
    AnswerFromMemory,
    CheckAgreement,
    ExplainErrors,
    MinimalEdit,
    PlanVerifications,
    ResearchQuestions,
    ReviseWithExplanation,
    SubQuestions,
    VerifiedAnswer,
)


class InitialAnswer(TracedProgram):
    """The uncorrected answer R_init: the reference row of every comparison."""

    method_name = "initial"

    async def aforward(self, question: str, draft: str | None = None) -> dspy.Prediction:
        run, question, draft = self.start(question, draft)
        return self.finish(run, await self.initial_answer(run, question, draft))


class CoVe(TracedProgram):
    """Chain-of-Verification: plan questions, answer them without retrieval, then revise.

    `use_retrieval=True` (the CoVeRAG subclass) answers each question from retrieved context
    only, with one retrieval per verification question.
    """

    method_name = "cove"
    use_retrieval = False
    steps: ClassVar[dict[str, StepSpec]] = {
        "planner": StepSpec("verify", "plan_verifications"),
        "memory_answerer": StepSpec("verify", "verification_answer"),
        "context_answerer": StepSpec("verify", "verification_answer"),
        "finalizer": StepSpec("rewrite", "final_answer"),
    }

    def __init__(self, retriever=None, **options):
        super().__init__(retriever, **options)
        self.planner = dspy.Predict(PlanVerifications)
        self.memory_answerer = dspy.Predict(AnswerFromMemory)
        self.context_answerer = dspy.Predict(AnswerFromContext)
        self.finalizer = dspy.Predict(VerifiedAnswer)

    @property
    def needs_retriever(self) -> bool:  # type: ignore[override]
        return self.use_retrieval

    async def aforward(self, question: str, draft: str | None = None) -> dspy.Prediction:
        run, question, draft = self.start(question, draft)
        received = await self.initial_answer(run, question, draft)
        planned = (await run.call("planner", question=question,
                                  draft=received)).verification_questions
        questions = unique_texts(planned)
        self.add_step(run, Step(name="plan", inputs={"draft": received},
                                outputs={"questions": questions}))

        async def verify(q: str) -> str | None:
            return await question_step(run, self, "verify", "verification question", q,
                                       self.answer)

        verifications = [v for v in await run.map("verify", verify, questions) if v]
        if not verifications:
            run.log("final", "no verification succeeded; returned the initial answer", "fallback")
            return self.finish(run, received)
        answer = (await run.call("finalizer", question=question, draft=received,
                                 verifications=verifications)).answer.strip()
        return self.finish(run, answer or received)

    async def answer(self, run: Run, question: str, step: Step) -> str:
        if not self.use_retrieval:
            return (await run.call("memory_answerer", question=question)).answer.strip()
        step.passages = await self.retrieve(run, question)
        return (await run.call("context_answerer", question=question,
                               context=format_passages(step.passages))).answer.strip()


class CoVeRAG(CoVe):
    """CoVe whose verification questions are answered from retrieved context only."""

    method_name = "cove_rag"
    use_retrieval = True


class RARR(TracedProgram):
    """Research and revision: per sentence of the draft, search questions, agreement, edit.

    A sentence is edited only after a DISAGREE verdict, and only that sentence, by a minimal
    edit; a draft every check agrees with comes back unchanged.
    """

    method_name = "rarr"
    needs_retriever = True
    steps: ClassVar[dict[str, StepSpec]] = {
        "researcher": StepSpec("verify", "research_questions"),
        "agreement": StepSpec("verify", "agreement"),
        "editor": StepSpec("correct", "edit"),
    }

    def __init__(self, retriever=None, *, max_questions: int = 5, **options):
        super().__init__(retriever, **options)
        self.max_questions = max_questions
        self.researcher = dspy.Predict(ResearchQuestions)
        self.agreement = dspy.Predict(CheckAgreement)
        self.editor = dspy.Predict(MinimalEdit)

    async def aforward(self, question: str, draft: str | None = None) -> dspy.Prediction:
        run, question, draft = self.start(question, draft)
        received = await self.initial_answer(run, question, draft)
        layout = self.layout(run, received)  # lists, paragraphs and code stay in place
        if layout is None:  # the deadline passed first
            return self.finish(run, received)
        sentences = layout.sentences
        revised = await run.map("revise", lambda s: self.revise_sentence(run, question, s),
                                sentences)
        if revised == sentences:
            return self.finish(run, received)
        return self.finish(run, layout.rebuild(revised))

    async def revise_sentence(self, run: Run, question: str, sentence: str) -> str:
        async def research_questions() -> list[str]:
            return (await run.call("researcher", context=question, text=sentence)).queries

        queries = unique_texts(await run.attempt(
            "revise", "research questions failed, the sentence is kept", research_questions,
            []))
        text = sentence
        for query in queries[: self.max_questions]:
            step = self.add_step(run, Step(name="agreement",
                                           inputs={"text": text, "query": query}))
            edited = await run.attempt("revise", f"research query {query!r} skipped",
                                       functools.partial(self.research, run, step, text, query),
                                       None,
                                       failed=step.fail)
            if edited:
                text = edited
        return text

    async def research(self, run: Run, step: Step, text: str, query: str) -> str | None:
        """One research query: its passages, the agreement verdict, and on DISAGREE the edit."""
        step.passages = await self.retrieve(run, query)
        if not step.passages:
            step.outputs["agreement"] = "NO_EVIDENCE"
            return None
        evidence = format_passages(step.passages)
        checked = await run.call("agreement", text=text, query=query, evidence=evidence)
        step.outputs.update(reasoning=checked.reasoning, agreement=checked.agreement)
        if checked.agreement != "DISAGREE":
            return None
        edited = (await run.call("editor", text=text, query=query,
                                 evidence=evidence)).edited_text.strip()
        step.outputs["edited_text"] = edited
        return edited or None


class ReEx(TracedProgram):
    """Revising after explanation: sub-questions answered with retrieval, then an explanation
    of the draft's errors (or "None"), then a revision guided by that explanation."""

    method_name = "reex"
    needs_retriever = True
    steps: ClassVar[dict[str, StepSpec]] = {
        "decomposer": StepSpec("verify", "sub_questions"),
        "context_answerer": StepSpec("verify", "sub_answer"),
        "explainer": StepSpec("correct", "explanation"),
        "reviser": StepSpec("rewrite", "revision"),
    }

    def __init__(self, retriever=None, **options):
        super().__init__(retriever, **options)
        self.decomposer = dspy.Predict(SubQuestions)
        self.context_answerer = dspy.Predict(AnswerFromContext)
        self.explainer = dspy.Predict(ExplainErrors)
        self.reviser = dspy.Predict(ReviseWithExplanation)

    async def aforward(self, question: str, draft: str | None = None) -> dspy.Prediction:
        run, question, draft = self.start(question, draft)
        received = await self.initial_answer(run, question, draft)
        subs = unique_texts((await run.call("decomposer", question=question,
                                            draft=received)).sub_questions)

        async def ask(run: Run, sub: str, step: Step) -> str:
            step.passages = await self.retrieve(run, sub)
            return (await run.call("context_answerer", question=sub,
                                   context=format_passages(step.passages))).answer.strip()

        async def answer(sub: str) -> str | None:
            return await question_step(run, self, "sub_question", "sub-question", sub, ask)

        findings = [f for f in await run.map("verify", answer, subs) if f]
        if not findings:
            run.log("explain", "no sub-question was answered; returned the draft", "fallback")
            return self.finish(run, received)
        explanation = (await run.call("explainer", question=question, draft=received,
                                      findings=findings)).explanation.strip()
        self.add_step(run, Step(name="explain", outputs={"explanation": explanation}))
        if _says_none(explanation):
            return self.finish(run, received)
        revised = (await run.call("reviser", question=question, draft=received,
                                  explanation=explanation)).answer.strip()
        return self.finish(run, revised or received)


async def question_step(run: Run, program: TracedProgram, name: str, what: str, question: str,
                        ask) -> str | None:
    """One question a baseline checks the draft with, as a traced `Step`: `ask(run, question,
    step)` answers it; a failure skips the question (logged, `step.error`). Returns the
    `Q: ... A: ...` line the final step reads, or None."""
    step = program.add_step(run, Step(name=name, inputs={"question": question}))
    reply = await run.attempt("verify", f"{what} {question!r} skipped",
                              lambda: ask(run, question, step), None, failed=step.fail)
    if reply is None:
        return None
    step.outputs["answer"] = reply
    return f"Q: {question} A: {reply}"


def _says_none(explanation: str) -> bool:
    return explanation.strip().strip(".\"'`").lower() in {"", "none", "no errors", "n/a"}
