"""FActScore-style precision of an answer against its topic's article, and fact preservation.

FActScore (Min et al., 2023), as implemented here:
- an answer that refuses (`serc_dspy.core.text.is_refusal`), is empty, or yields no atomic facts
  *abstains*: it counts towards the respond ratio and is left out of the score;
- the facts of a responding answer come from `AtomicFacts` applied sentence by sentence
  (`serc_dspy.core.text.split_sentences`), with the topic as the subject;
- each fact is judged `SUPPORTED` / `NOT_SUPPORTED` (`ClaimSupported`) against the top 5
  passages of the topic's own article (`KnowledgeSource.get_passages(topic, fact)`);
- an answer's score is supported / judged facts; the FActScore is its mean over responding
  answers; "avg facts" is the mean number of facts over responding answers;
- the optional length penalty is FActScore's `gamma` rule: an answer with `n < gamma` facts has
  its score multiplied by `exp(1 - gamma / n)` (1.0 from `n >= gamma` on; gamma = 10), checked
  against `factscore/factscorer.py` in shmsw25/FActScore;
- a fact whose judgment fails after retries gets no label and is left out of its answer's
  denominator (counted as `fact_errors`); a failed decomposition or an unknown topic makes the
  whole answer an error, excluded from every average and counted.

Fact Preservation Rate = mean facts of the method's answers / mean facts of their initial
answers, over the items where both were scored; here an abstaining answer counts as 0 facts (a
method that deletes everything preserved nothing), so it can differ from the ratio of the two
"avg facts" columns when a method abstains.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Sequence
from typing import Any

import dspy
from pydantic import BaseModel, Field

from serc_dspy.core.errors import ArgumentError, MalformedOutput, describe
from serc_dspy.core.text import is_refusal, split_sentences
from serc_dspy.core.trace import Usage
from serc_dspy.evaluation.metrics.meter import ATTEMPTS, UsageMeter, mean, retry_config
from serc_dspy.retrieval.knowledge import SCORING_TOP_K, KnowledgeSource
from serc_dspy.signatures import AtomicFacts, ClaimSupported
from serc_dspy.signatures.evaluation import SupportLabel

GAMMA = 10


class FactLabel(BaseModel):
    """One atomic fact of an answer and its support label (None when judging failed)."""

    fact: str
    sentence: int
    label: SupportLabel | None = None
    error: str | None = None


class AnswerScore(BaseModel):
    """FActScore decisions for one answer."""

    responded: bool = True
    abstain_reason: str | None = None
    facts: list[FactLabel] = Field(default_factory=list)
    error: str | None = None
    usage: Usage = Field(default_factory=Usage)

    @property
    def n_facts(self) -> int:
        return len(self.facts)

    @property
    def n_supported(self) -> int:
        return sum(1 for f in self.facts if f.label == "SUPPORTED")

    @property
    def n_judged(self) -> int:
        return sum(1 for f in self.facts if f.label is not None)

    @property
    def precision(self) -> float | None:
        """supported / judged facts; None for an abstention, an error or no judged fact."""
        if self.error or not self.responded or self.n_judged == 0:
            return None
        return self.n_supported / self.n_judged

    def summary(self, *, length_penalty: bool = False, gamma: int = GAMMA) -> dict[str, Any]:
        precision = self.precision
        penalised = (precision * length_penalty_factor(self.n_facts, gamma)
                     if precision is not None else None)
        return {"responded": self.responded, "facts": self.n_facts,
                "supported": self.n_supported, "judged": self.n_judged,
                "precision": precision,
                "score": penalised if length_penalty else precision}


def length_penalty_factor(n_facts: int, gamma: int = GAMMA) -> float:
    """FActScore's penalty for short answers: exp(1 - gamma/n) below gamma facts, else 1."""
    if n_facts <= 0:
        return 0.0
    return 1.0 if n_facts >= gamma else math.exp(1 - gamma / n_facts)


class FactScoreSummary(BaseModel):
    answers: int = 0
    responded: int = 0
    errors: int = 0
    fact_errors: int = 0
    respond_ratio: float | None = None
    factscore: float | None = None
    init_score: float | None = None
    avg_facts: float | None = None
    length_penalty: bool = False
    gamma: int = GAMMA


def summarize_factscore(scores: Iterable[AnswerScore | None], *, length_penalty: bool = False,
                        gamma: int = GAMMA) -> FactScoreSummary:
    """Average FActScore over responding answers; abstentions only change the respond ratio.

    `None` entries and answers with an error are counted as errors and excluded.
    """
    out = FactScoreSummary(length_penalty=length_penalty, gamma=gamma)
    raw, penalised, facts = [], [], []
    for score in scores:
        if score is None or score.error:
            out.errors += 1
            continue
        out.answers += 1
        out.fact_errors += score.n_facts - score.n_judged
        if not score.responded:
            continue
        out.responded += 1
        facts.append(score.n_facts)
        if score.precision is not None:
            raw.append(score.precision)
            penalised.append(score.precision * length_penalty_factor(score.n_facts, gamma))
    out.respond_ratio = out.responded / out.answers if out.answers else None
    out.init_score = mean(raw)
    out.factscore = mean(penalised) if length_penalty else out.init_score
    out.avg_facts = mean(facts)
    return out


def fact_preservation(method_facts: Sequence[int], initial_facts: Sequence[int]) -> float | None:
    """Mean facts of method answers / mean facts of the paired initial answers (1.0 = 100%)."""
    if len(method_facts) != len(initial_facts):
        raise ArgumentError(f"method and initial fact counts must be paired item by item, got "
                            f"{len(method_facts)} and {len(initial_facts)}")
    initial = mean([float(n) for n in initial_facts])
    if not initial:
        return None
    return (mean([float(n) for n in method_facts]) or 0.0) / initial


def format_passages_for_judge(passages) -> str:
    return "\n\n".join(f"[{n}] {p.text}" for n, p in enumerate(passages, 1))


class FactScorer:
    """Scores answers about a topic against the topic's article in a `KnowledgeSource`.

    Calls are made under the caller's `dspy` context (the evaluator LM); each answer's
    `AnswerScore.usage` counts the evaluator calls made for it. A (topic, fact) pair already
    judged by this scorer reuses its label without a call. Use one scorer per evaluator LM.
    """

    def __init__(self, knowledge: KnowledgeSource, *, k: int = SCORING_TOP_K,
                 attempts: int = ATTEMPTS):
        if k < 1:
            raise ArgumentError(f"k must be at least 1, got {k}")
        if attempts < 1:
            raise ArgumentError(f"attempts must be at least 1, got {attempts}")
        self.knowledge = knowledge
        self.k = k
        self.attempts = attempts
        self.decomposer = dspy.Predict(AtomicFacts)
        self.judge = dspy.Predict(ClaimSupported)
        # The same fact about the same topic gets the same passages and prompt: judge it once
        # per scorer (failures are not remembered, so they are retried).
        self._memo: dict[tuple[str, str], SupportLabel] = {}
        self._memo_lock = threading.Lock()

    def facts(self, answer: str, subject: str, meter: UsageMeter | None = None
              ) -> list[tuple[int, str]]:
        """(sentence index, fact) pairs of the answer; a sentence that fails every attempt
        raises. A fact repeated within one sentence's list is kept once (a decomposition
        artefact of small models); the same fact in two sentences counts twice, as in
        FActScore."""
        meter = meter or UsageMeter()
        out = []
        for index, sentence in enumerate(split_sentences(answer)):
            prediction = None
            for attempt in range(self.attempts):
                try:
                    prediction = meter.call("atomic_facts", self.decomposer, subject=subject,
                                            sentence=sentence, **retry_config(attempt))
                    break
                except Exception:
                    if attempt == self.attempts - 1:
                        raise
            seen: set[str] = set()
            for fact in prediction.facts or []:
                text = " ".join(str(fact).split())
                if text and text.casefold() not in seen:
                    seen.add(text.casefold())
                    out.append((index, text))
        return out

    def judge_fact(self, topic: str, fact: str, meter: UsageMeter | None = None
                   ) -> tuple[SupportLabel | None, str | None]:
        """Label one fact against the topic's top-k passages; (None, error) after retries."""
        meter = meter or UsageMeter()
        key = (topic, fact)
        with self._memo_lock:
            if key in self._memo:
                return self._memo[key], None
        passages = self.knowledge.get_passages(topic, fact, self.k)
        context = format_passages_for_judge(passages)
        error = None
        for attempt in range(self.attempts):
            try:
                label = meter.call("claim_supported", self.judge, topic=topic,
                                   passages=context, fact=fact,
                                   **retry_config(attempt)).label
                if label in ("SUPPORTED", "NOT_SUPPORTED"):
                    with self._memo_lock:
                        self._memo[key] = label
                    return label, None
                error = describe(MalformedOutput(f"unexpected label {label!r}"))
            except Exception as exc:  # a parse failure or LM outage: retry, then record
                error = describe(exc)
        return None, error

    def score(self, answer: str | None, topic: str) -> AnswerScore:
        """Decompose, retrieve and judge one answer; errors are recorded, never raised."""
        meter = UsageMeter()
        result = AnswerScore(usage=meter.usage)
        text = (answer or "").strip()
        if not text:
            result.responded, result.abstain_reason = False, "empty"
            return result
        if is_refusal(text):
            result.responded, result.abstain_reason = False, "refusal"
            return result
        if topic not in self.knowledge:
            result.error = f"topic {topic!r} is not in the knowledge source"
            return result
        try:
            facts = self.facts(text, topic, meter)
        except Exception as exc:
            result.error = f"fact decomposition failed: {describe(exc)}"
            return result
        if not facts:
            result.responded, result.abstain_reason = False, "no facts"
            return result
        for sentence, fact in facts:
            label, error = self.judge_fact(topic, fact, meter)
            result.facts.append(FactLabel(fact=fact, sentence=sentence, label=label, error=error))
        return result
