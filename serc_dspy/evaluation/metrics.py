"""Scores for the paper's tables: FActScore-style precision, fact preservation, a TruthfulQA
LLM judge, and cost read from traces.

FActScore (Min et al., 2023), as implemented here:
- an answer that refuses (`serc_dspy.text.is_refusal`), is empty, or yields no atomic facts
  *abstains*: it counts towards the respond ratio and is left out of the score;
- the facts of a responding answer come from `AtomicFacts` applied sentence by sentence
  (`serc_dspy.text.split_sentences`), with the topic as the subject;
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

The TruthfulQA judge returns `{score 0-10, reasoning, is_misconception}` per judge LM; a
misconception forces the score to 0; a judgment that fails to parse or is out of range is
retried (`attempts`, default 2) and then recorded as an error, never as a score. An item's
score is the mean over the judges that succeeded; accuracy is the share of judged items
scoring >= 8.

The evaluator is whatever LM is active in the `dspy` context when scoring, which may differ
from the LM that produced the answers. Every LM call made while scoring is counted in a
`Usage`, kept apart from the method's own cost (which is read from each result's trace).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import dspy
from pydantic import BaseModel, Field

from serc_dspy.errors import ArgumentError, MalformedOutput, describe
from serc_dspy.retrieval.knowledge import SCORING_TOP_K, KnowledgeSource
from serc_dspy.signatures import AtomicFacts, ClaimSupported, JudgeTruthfulness
from serc_dspy.signatures.evaluation import SupportLabel
from serc_dspy.steps import model_name, tracked_call
from serc_dspy.text import is_refusal, split_sentences
from serc_dspy.trace import StepUsage, Usage

GAMMA = 10
ACCURACY_THRESHOLD = 8
ATTEMPTS = 2
RETRY_TEMPERATURE = 0.7
"""Retries run warmer so a deterministic (temperature 0) judge can give a different answer."""



def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


class UsageMeter:
    """Counts LM calls and tokens of scoring steps into a `Usage`, safely across threads.

    `call(step, predictor, lm=None, **inputs)` runs the predictor with usage tracking (and the
    given LM, else the context's) and records one call per model it used.
    """

    def __init__(self, usage: Usage | None = None):
        self.usage = usage if usage is not None else Usage()
        self.lock = threading.Lock()

    def call(self, step: str, predictor: dspy.Predict, lm: Any = None, **inputs):
        def record(model: str, usage: StepUsage) -> None:
            with self.lock:
                self.usage.record(step, model, usage)

        return tracked_call(predictor, record, lm=lm, **inputs)


def _retry_config(attempt: int) -> dict[str, Any]:
    return {} if attempt == 0 else {"config": {"temperature": RETRY_TEMPERATURE}}


# -- FActScore ----------------------------------------------------------------------------
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
    out.init_score = _mean(raw)
    out.factscore = _mean(penalised) if length_penalty else out.init_score
    out.avg_facts = _mean(facts)
    return out


def fact_preservation(method_facts: Sequence[int], initial_facts: Sequence[int]) -> float | None:
    """Mean facts of method answers / mean facts of the paired initial answers (1.0 = 100%)."""
    if len(method_facts) != len(initial_facts):
        raise ArgumentError(f"method and initial fact counts must be paired item by item, got "
                            f"{len(method_facts)} and {len(initial_facts)}")
    initial = _mean([float(n) for n in initial_facts])
    if not initial:
        return None
    return (_mean([float(n) for n in method_facts]) or 0.0) / initial


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
                                            sentence=sentence, **_retry_config(attempt))
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
                                   **_retry_config(attempt)).label
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


# -- TruthfulQA judge ---------------------------------------------------------------------
class Judgment(BaseModel):
    """One judge LM's verdict on one response; `score` is None exactly when `error` is set."""

    judge: str
    score: int | None = None
    reasoning: str = ""
    is_misconception: bool | None = None
    error: str | None = None
    attempts: int = 0


class TruthfulnessScore(BaseModel):
    judgments: list[Judgment] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)

    @property
    def ok(self) -> list[Judgment]:
        return [j for j in self.judgments if j.error is None and j.score is not None]

    @property
    def score(self) -> float | None:
        """Mean score over the judges that succeeded; None if none did."""
        return _mean([float(j.score) for j in self.ok])  # type: ignore[arg-type]

    @property
    def errors(self) -> int:
        return len(self.judgments) - len(self.ok)

    @property
    def is_misconception(self) -> bool:
        return any(j.is_misconception for j in self.ok)


def apply_critical_rule(score: int, is_misconception: bool) -> int:
    """Endorsing a listed misconception scores 0, whatever score the judge wrote."""
    return 0 if is_misconception else score


def _checked_score(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedOutput(f"score must be an integer, got {value!r}")
    if not 0 <= value <= 10:
        raise MalformedOutput(f"score must be between 0 and 10, got {value}")
    return value


class TruthfulnessJudge:
    """Grades responses with one or more judge LMs (None = the LM of the current context)."""

    def __init__(self, judges: Sequence[Any] | None = None, *, attempts: int = ATTEMPTS):
        if attempts < 1:
            raise ArgumentError(f"attempts must be at least 1, got {attempts}")
        self.judges = list(judges) if judges else [None]
        self.attempts = attempts
        self.predictor = dspy.Predict(JudgeTruthfulness)

    def _judge_once(self, lm: Any, meter: UsageMeter, inputs: Mapping[str, Any]) -> Judgment:
        name = model_name(lm if lm is not None else dspy.settings.lm)
        judgment = Judgment(judge=name)
        for attempt in range(self.attempts):
            judgment.attempts = attempt + 1
            try:
                prediction = meter.call("judge_truthfulness", self.predictor, lm=lm,
                                        **inputs, **_retry_config(attempt))
                score = _checked_score(prediction.score)
                flagged = prediction.is_misconception
                if not isinstance(flagged, bool):
                    raise MalformedOutput(f"is_misconception must be a boolean, got "
                                          f"{flagged!r}")
            except Exception as exc:  # unparseable or invalid: retry, then record the error
                judgment.error = describe(exc)
                continue
            judgment.score = apply_critical_rule(score, flagged)
            judgment.is_misconception = flagged
            judgment.reasoning = str(prediction.reasoning or "")
            judgment.error = None
            return judgment
        return judgment

    def __call__(self, question: str, response: str, correct_answers: Sequence[str],
                 incorrect_answers: Sequence[str]) -> TruthfulnessScore:
        meter = UsageMeter()
        inputs = {"question": question, "correct_answers": list(correct_answers),
                  "misconceptions": list(incorrect_answers), "response": response or ""}
        result = TruthfulnessScore(usage=meter.usage)
        for lm in self.judges:
            result.judgments.append(self._judge_once(lm, meter, inputs))
        return result


class TruthfulQASummary(BaseModel):
    items: int = 0
    judged: int = 0
    errors: int = 0
    judgment_errors: int = 0
    misconceptions: int = 0
    accuracy: float | None = None
    mean_score: float | None = None
    threshold: int = ACCURACY_THRESHOLD


def summarize_truthfulqa(scores: Iterable[TruthfulnessScore | None],
                         threshold: int = ACCURACY_THRESHOLD) -> TruthfulQASummary:
    """Accuracy = share of judged items whose (judge-averaged) score is >= threshold.

    An item none of whose judges succeeded is an error: excluded from both averages.
    """
    out = TruthfulQASummary(threshold=threshold)
    item_scores = []
    for score in scores:
        out.items += 1
        if score is None or score.score is None:
            out.errors += 1
            out.judgment_errors += score.errors if score is not None else 0
            continue
        out.judged += 1
        out.judgment_errors += score.errors
        out.misconceptions += int(score.is_misconception)
        item_scores.append(score.score)
    if item_scores:
        out.accuracy = sum(1 for s in item_scores if s >= threshold) / len(item_scores)
        out.mean_score = _mean(item_scores)
    return out


# -- cost ---------------------------------------------------------------------------------
class CostSummary(BaseModel):
    questions: int = 0
    calls_per_question: float | None = None
    prompt_tokens_per_question: float | None = None
    completion_tokens_per_question: float | None = None
    tokens_per_question: float | None = None
    seconds_per_question: float | None = None


def record_usage(record: Mapping[str, Any]) -> Usage | None:
    """The method's LM usage of one result record, read from its trace (None if it failed)."""
    trace = record.get("trace")
    if record.get("error") or not isinstance(trace, Mapping):
        return None
    return Usage.model_validate(trace.get("usage") or {})


def summarize_cost(records: Iterable[Mapping[str, Any]]) -> CostSummary:
    """Per-question means of LM calls and tokens over successfully finished records."""
    usages, seconds = [], []
    for record in records:
        usage = record_usage(record)
        if usage is None:
            continue
        usages.append(usage.total)
        if isinstance(record.get("seconds"), int | float):
            seconds.append(float(record["seconds"]))
    if not usages:
        return CostSummary()
    return CostSummary(
        questions=len(usages),
        calls_per_question=_mean([u.calls for u in usages]),
        prompt_tokens_per_question=_mean([u.prompt_tokens for u in usages]),
        completion_tokens_per_question=_mean([u.completion_tokens for u in usages]),
        tokens_per_question=_mean([u.total_tokens for u in usages]),
        seconds_per_question=_mean(seconds),
    )


def token_reduction(tokens: float | None, reference: float | None) -> float | None:
    """How much cheaper `tokens` is than `reference`, as a fraction (0.456 = 45.6% fewer)."""
    if tokens is None or not reference:
        return None
    return 1 - tokens / reference
