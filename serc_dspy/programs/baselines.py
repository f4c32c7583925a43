"""The methods SERC is compared with, on the same backends, retrievers and inputs.

Each takes `question` and an optional `draft` and returns `answer`, `initial_answer`, `trace`
and `usage` like SERC. Their intermediate steps go to `trace.steps`. As in SERC, a retrieval
or LM failure in a verification step is recorded and that step is left out; it never becomes
evidence that changes the answer.
"""

from __future__ import annotations

import dspy

from serc_dspy.errors import UserError, describe
from serc_dspy.programs.base import Run, TracedProgram, format_passages
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
from serc_dspy.text import split_sentences, unique_texts
from serc_dspy.trace import Step


class InitialAnswer(TracedProgram):
    """The uncorrected answer R_init: the reference row of every comparison."""

    method_name = "initial"

    def forward(self, question: str, draft: str | None = None) -> dspy.Prediction:
        run, question, draft = self.start(question, draft)
        return self.finish(run, self.initial_answer(run, question, draft))


class CoVe(TracedProgram):
    """Chain-of-Verification: plan questions, answer them without retrieval, then revise.

    `use_retrieval=True` (the CoVeRAG subclass) answers each question from retrieved context
    only, with one retrieval per verification question.
    """

    method_name = "cove"
    use_retrieval = False

    def __init__(self, retriever=None, **options):
        super().__init__(retriever, **options)
        self.planner = dspy.Predict(PlanVerifications)
        self.memory_answerer = dspy.Predict(AnswerFromMemory)
        self.context_answerer = dspy.Predict(AnswerFromContext)
        self.finalizer = dspy.Predict(VerifiedAnswer)

    @property
    def needs_retriever(self) -> bool:  # type: ignore[override]
        return self.use_retrieval

    def forward(self, question: str, draft: str | None = None) -> dspy.Prediction:
        run, question, draft = self.start(question, draft)
        received = self.initial_answer(run, question, draft)
        planned = self.call(run, "plan_verifications", "verify", self.planner,
                            question=question, draft=received).verification_questions
        questions = unique_texts(planned)
        self.add_step(run, Step(name="plan", inputs={"draft": received},
                                outputs={"questions": questions}))
        done = [0]

        def verify(q: str) -> str | None:
            step = self.add_step(run, Step(name="verify", inputs={"question": q}))
            try:
                answer = self.answer(run, q, step)
            except UserError:
                raise  # configuration errors abort; only outages degrade
            except Exception as exc:
                step.error = describe(exc)
                run.log("verify", f"verification question {q!r} skipped: {step.error}", "error")
                answer = None
            else:
                step.outputs["answer"] = answer
            with run.lock:
                done[0] += 1
            run.report("verify", done[0], len(questions))
            return None if answer is None else f"Q: {q} A: {answer}"

        verifications = [v for v in self.parallel(verify, questions) if v]
        if not verifications:
            run.log("final", "no verification succeeded; returned the initial answer", "fallback")
            return self.finish(run, received)
        answer = self.call(run, "final_answer", "rewrite", self.finalizer, question=question,
                           draft=received, verifications=verifications).answer.strip()
        return self.finish(run, answer or received)

    def answer(self, run: Run, question: str, step: Step) -> str:
        if not self.use_retrieval:
            return self.call(run, "verification_answer", "verify", self.memory_answerer,
                             question=question).answer.strip()
        step.passages = self.retrieve(question)
        return self.call(run, "verification_answer", "verify", self.context_answerer,
                         question=question, context=format_passages(step.passages)
                         ).answer.strip()


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

    def __init__(self, retriever=None, *, max_questions: int = 5, **options):
        super().__init__(retriever, **options)
        self.max_questions = max_questions
        self.researcher = dspy.Predict(ResearchQuestions)
        self.agreement = dspy.Predict(CheckAgreement)
        self.editor = dspy.Predict(MinimalEdit)

    def forward(self, question: str, draft: str | None = None) -> dspy.Prediction:
        run, question, draft = self.start(question, draft)
        received = self.initial_answer(run, question, draft)
        sentences = split_sentences(received)
        done = [0]

        def revise(sentence: str) -> str:
            text = self.revise_sentence(run, question, sentence)
            with run.lock:
                done[0] += 1
            run.report("revise", done[0], len(sentences))
            return text

        revised = self.parallel(revise, sentences)
        if revised == sentences:
            return self.finish(run, received)
        return self.finish(run, " ".join(revised))

    def revise_sentence(self, run: Run, question: str, sentence: str) -> str:
        queries = unique_texts(self.call(run, "research_questions", "verify", self.researcher,
                                       context=question, text=sentence).queries)
        text = sentence
        for query in queries[: self.max_questions]:
            step = self.add_step(run, Step(name="agreement",
                                           inputs={"text": text, "query": query}))
            try:
                step.passages = self.retrieve(query)
                if not step.passages:
                    step.outputs["agreement"] = "NO_EVIDENCE"
                    continue
                evidence = format_passages(step.passages)
                checked = self.call(run, "agreement", "verify", self.agreement,
                                    text=text, query=query, evidence=evidence)
                step.outputs.update(reasoning=checked.reasoning, agreement=checked.agreement)
                if checked.agreement != "DISAGREE":
                    continue
                edited = self.call(run, "edit", "correct", self.editor, text=text, query=query,
                                   evidence=evidence).edited_text.strip()
                step.outputs["edited_text"] = edited
                if edited:
                    text = edited
            except UserError:
                raise  # configuration errors abort; only outages degrade
            except Exception as exc:
                step.error = describe(exc)
                run.log("revise", f"research query {query!r} skipped: {step.error}", "error")
        return text


class ReEx(TracedProgram):
    """Revising after explanation: sub-questions answered with retrieval, then an explanation
    of the draft's errors (or "None"), then a revision guided by that explanation."""

    method_name = "reex"
    needs_retriever = True

    def __init__(self, retriever=None, **options):
        super().__init__(retriever, **options)
        self.decomposer = dspy.Predict(SubQuestions)
        self.context_answerer = dspy.Predict(AnswerFromContext)
        self.explainer = dspy.Predict(ExplainErrors)
        self.reviser = dspy.Predict(ReviseWithExplanation)

    def forward(self, question: str, draft: str | None = None) -> dspy.Prediction:
        run, question, draft = self.start(question, draft)
        received = self.initial_answer(run, question, draft)
        subs = unique_texts(self.call(run, "sub_questions", "verify", self.decomposer,
                                    question=question, draft=received).sub_questions)

        def answer(sub: str) -> str | None:
            step = self.add_step(run, Step(name="sub_question", inputs={"question": sub}))
            try:
                step.passages = self.retrieve(sub)
                reply = self.call(run, "sub_answer", "verify", self.context_answerer,
                                  question=sub, context=format_passages(step.passages)
                                  ).answer.strip()
            except UserError:
                raise  # configuration errors abort; only outages degrade
            except Exception as exc:
                step.error = describe(exc)
                run.log("verify", f"sub-question {sub!r} skipped: {step.error}", "error")
                return None
            step.outputs["answer"] = reply
            return f"Q: {sub} A: {reply}"

        findings = [f for f in self.parallel(answer, subs) if f]
        if not findings:
            run.log("explain", "no sub-question was answered; returned the draft", "fallback")
            return self.finish(run, received)
        explanation = self.call(run, "explanation", "correct", self.explainer, question=question,
                                draft=received, findings=findings).explanation.strip()
        self.add_step(run, Step(name="explain", outputs={"explanation": explanation}))
        if _says_none(explanation):
            return self.finish(run, received)
        revised = self.call(run, "revision", "rewrite", self.reviser, question=question,
                            draft=received, explanation=explanation).answer.strip()
        return self.finish(run, revised or received)


def _says_none(explanation: str) -> bool:
    return explanation.strip().strip(".\"'`").lower() in {"", "none", "no errors", "n/a"}
