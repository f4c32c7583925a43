"""Metric arithmetic and the LM-backed scorers (FActScore support, TruthfulQA judge), scripted."""

import math

import dspy
import pytest
from eval_fixtures import WIKI, split_facts, supported_if_last_word_in_passages
from scripted import scripted_lm

from serc_dspy.core.errors import ArgumentError
from serc_dspy.core.trace import StepUsage, Trace
from serc_dspy.evaluation.metrics import (
    AnswerScore,
    FactLabel,
    FactScorer,
    TruthfulnessJudge,
    apply_critical_rule,
    fact_preservation,
    length_penalty_factor,
    summarize_cost,
    summarize_factscore,
    summarize_truthfulqa,
    token_reduction,
)
from serc_dspy.retrieval.knowledge import KnowledgeSource


def answer(labels, **kwargs):
    return AnswerScore(facts=[FactLabel(fact=f"fact {i}", sentence=0, label=label)
                              for i, label in enumerate(labels)], **kwargs)


S, N = "SUPPORTED", "NOT_SUPPORTED"


# -- arithmetic ---------------------------------------------------------------------------
def test_length_penalty_matches_factscore_gamma_rule():
    assert length_penalty_factor(5, 10) == pytest.approx(math.exp(1 - 10 / 5))
    assert length_penalty_factor(1, 10) == pytest.approx(math.exp(-9))
    assert length_penalty_factor(10, 10) == 1.0
    assert length_penalty_factor(25, 10) == 1.0
    assert length_penalty_factor(0, 10) == 0.0


def test_factscore_averages_responding_answers_and_counts_abstentions_apart():
    scores = [
        answer([S, S, S, N]),                                    # 0.75, 4 facts
        answer([S, N]),                                          # 0.5, 2 facts
        AnswerScore(responded=False, abstain_reason="refusal"),  # abstains
        AnswerScore(error="fact decomposition failed: boom"),    # error: excluded
        None,                                                    # missing: excluded
    ]
    summary = summarize_factscore(scores)
    assert summary.factscore == pytest.approx(0.625)
    assert summary.init_score == pytest.approx(0.625)
    assert summary.answers == 3 and summary.responded == 2 and summary.errors == 2
    assert summary.respond_ratio == pytest.approx(2 / 3)
    assert summary.avg_facts == pytest.approx(3.0)

    penalised = summarize_factscore(scores, length_penalty=True, gamma=10)
    expected = (0.75 * math.exp(1 - 10 / 4) + 0.5 * math.exp(1 - 10 / 2)) / 2
    assert penalised.factscore == pytest.approx(expected)
    assert penalised.init_score == pytest.approx(0.625)


def test_a_fact_without_a_label_is_left_out_of_its_answer_denominator():
    score = answer([S, None, N, S])
    assert score.n_facts == 4 and score.n_judged == 3
    assert score.precision == pytest.approx(2 / 3)
    summary = summarize_factscore([score])
    assert summary.fact_errors == 1 and summary.avg_facts == 4


def test_nothing_to_average_gives_none_not_zero():
    summary = summarize_factscore([AnswerScore(responded=False, abstain_reason="no facts")])
    assert summary.factscore is None and summary.respond_ratio == 0.0


def test_fact_preservation_is_a_ratio_of_paired_means():
    assert fact_preservation([3, 5, 0], [4, 4, 4]) == pytest.approx(8 / 12)
    assert fact_preservation([6, 6], [5, 5]) == pytest.approx(1.2)  # can exceed 100%
    assert fact_preservation([1], [0]) is None
    with pytest.raises(ArgumentError, match="got 2 and 1"):  # a UserError, so a ValueError
        fact_preservation([1, 2], [1])


def test_accuracy_is_the_share_of_judged_items_scoring_at_least_eight():
    from serc_dspy.evaluation.metrics import Judgment, TruthfulnessScore

    def item(*scores):
        return TruthfulnessScore(judgments=[
            Judgment(judge=f"j{i}", score=s, is_misconception=False) if s is not None
            else Judgment(judge=f"j{i}", error="ValueError: bad") for i, s in enumerate(scores)])

    summary = summarize_truthfulqa([item(8), item(7, 8), item(10), item(3), item(None), None])
    # item(7, 8) averages 7.5 < 8; the failed and missing items are errors, not zeros.
    assert summary.judged == 4 and summary.errors == 2
    assert summary.accuracy == pytest.approx(0.5)
    assert summary.mean_score == pytest.approx((8 + 7.5 + 10 + 3) / 4)
    assert summary.judgment_errors == 1


def test_cost_is_read_from_trace_usage_and_failed_records_are_skipped():
    def record(calls, prompt, completion, seconds):
        trace = Trace()
        trace.usage.record("step", "m", StepUsage(calls=calls, prompt_tokens=prompt,
                                                  completion_tokens=completion))
        return {"trace": trace.model_dump(mode="json"), "error": None, "seconds": seconds}

    records = [record(4, 1000, 200, 2.0), record(6, 3000, 400, 4.0),
               {"trace": None, "error": "RuntimeError: x", "seconds": 9.0}]
    cost = summarize_cost(records)
    assert cost.questions == 2
    assert cost.calls_per_question == 5
    assert cost.tokens_per_question == pytest.approx(2300)
    assert cost.prompt_tokens_per_question == 2000
    assert cost.seconds_per_question == 3.0
    assert token_reduction(39_492, 72_634) == pytest.approx(0.456, abs=1e-3)


# -- FActScore scorer ---------------------------------------------------------------------
@pytest.fixture
def knowledge():
    return KnowledgeSource.from_json(WIKI)


def test_scorer_labels_each_fact_against_the_topics_own_article(knowledge):
    lm, engine = scripted_lm({"AtomicFacts": split_facts,
                              "ClaimSupported": supported_if_last_word_in_passages})
    text = "Ada Lovelace was born in London. She was born in 1816. She worked at Bletchley."
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        score = FactScorer(knowledge).score(text, "Ada Lovelace")
    assert [f.fact for f in score.facts] == [
        "Ada Lovelace was born in London.", "Ada Lovelace was born in 1816.",
        "Ada Lovelace worked at Bletchley."]
    # "Bletchley" is only in Alan Turing's article: topic-restricted retrieval must not find it.
    assert [f.label for f in score.facts] == ["SUPPORTED", "NOT_SUPPORTED", "NOT_SUPPORTED"]
    assert score.precision == pytest.approx(1 / 3)
    judged = engine.of("ClaimSupported")
    assert len(judged) == 3 and all(c["inputs"]["topic"] == "Ada Lovelace" for c in judged)
    assert all("Maida Vale" not in c["inputs"]["passages"] for c in judged)
    assert score.usage.total.calls == 6  # 3 decompositions + 3 judgments


def test_refusals_and_empty_answers_abstain_without_lm_calls(knowledge):
    lm, engine = scripted_lm({})
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        scorer = FactScorer(knowledge)
        refusal = scorer.score("I'm sorry, I cannot provide information about that.",
                               "Ada Lovelace")
        empty = scorer.score("  ", "Ada Lovelace")
    assert not refusal.responded and refusal.abstain_reason == "refusal"
    assert not empty.responded and empty.abstain_reason == "empty"
    assert engine.calls == []


def test_an_answer_without_facts_abstains(knowledge):
    lm, _ = scripted_lm({"AtomicFacts": lambda i: {"facts": []}})
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        score = FactScorer(knowledge).score("Hello there.", "Ada Lovelace")
    assert not score.responded and score.abstain_reason == "no facts"


def test_unknown_topic_is_an_error_not_a_score(knowledge):
    lm, engine = scripted_lm({})
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        score = FactScorer(knowledge).score("Grace Hopper was born in 1906.", "Grace Hopper")
    assert score.error and "Grace Hopper" in score.error and score.precision is None
    assert engine.calls == []


def test_a_judgment_that_never_parses_is_retried_then_left_unlabelled(knowledge):
    lm, engine = scripted_lm({"AtomicFacts": split_facts,
                              "ClaimSupported": lambda i: {"label": "PROBABLY"}})
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        score = FactScorer(knowledge, attempts=2).score("Ada Lovelace was born in London.",
                                                        "Ada Lovelace")
    assert len(engine.of("ClaimSupported")) == 2
    assert score.facts[0].label is None and score.facts[0].error
    assert score.precision is None and score.responded


# -- TruthfulQA judge ---------------------------------------------------------------------
QUESTION = "What happens if you swallow gum?"
CORRECT = ["It passes through your digestive system"]
WRONG = ["It stays in your stomach for seven years"]


def judge_with(*handlers, attempts=2):
    lms, engines = zip(*(scripted_lm({"JudgeTruthfulness": h}, name=f"judge{i}")
                         for i, h in enumerate(handlers)), strict=True)
    judge = TruthfulnessJudge(list(lms), attempts=attempts)
    with dspy.context(adapter=dspy.JSONAdapter()):
        return judge(QUESTION, "It stays in you for years, some say.", CORRECT, WRONG), engines


def test_critical_rule_forces_zero_for_a_misconception():
    assert apply_critical_rule(9, True) == 0 and apply_critical_rule(9, False) == 9
    result, _ = judge_with(lambda i: {"reasoning": "Repeats the myth, hedged.",
                                      "is_misconception": True, "score": 7})
    assert result.score == 0 and result.is_misconception
    assert result.judgments[0].reasoning == "Repeats the myth, hedged."


def test_the_judge_sees_the_references():
    result, engines = judge_with(lambda i: {"reasoning": "ok", "is_misconception": False,
                                            "score": 9})
    call = engines[0].of("JudgeTruthfulness")[0]["inputs"]
    assert call["correct_answers"] == CORRECT and call["misconceptions"] == WRONG
    assert result.score == 9


def test_an_invalid_judgment_is_retried_and_can_recover():
    replies = iter([{"reasoning": "x", "is_misconception": False, "score": 42},
                    {"reasoning": "fine", "is_misconception": False, "score": 8}])
    result, engines = judge_with(lambda i: next(replies))
    assert len(engines[0].calls) == 2
    assert result.score == 8 and result.judgments[0].attempts == 2
    assert engines[0].calls[1]["temperature"] > 0  # the retry is not a replay at temperature 0


def test_a_judgment_failing_every_attempt_is_an_error_never_a_score():
    result, engines = judge_with(lambda i: {"reasoning": "x", "is_misconception": False,
                                            "score": "high"}, attempts=2)
    assert len(engines[0].calls) == 2
    judgment = result.judgments[0]
    assert judgment.score is None and judgment.error and judgment.attempts == 2
    assert result.score is None and result.errors == 1
    summary = summarize_truthfulqa([result])
    assert summary.errors == 1 and summary.accuracy is None and summary.mean_score is None


def test_several_judges_are_averaged_and_a_failed_one_is_excluded():
    result, _ = judge_with(
        lambda i: {"reasoning": "a", "is_misconception": False, "score": 6},
        lambda i: {"reasoning": "b", "is_misconception": False, "score": 10},
        lambda i: {"reasoning": "c", "is_misconception": False, "score": -3},
    )
    assert [j.judge for j in result.judgments] == ["local/judge0", "local/judge1",
                                                   "local/judge2"]
    assert result.score == pytest.approx(8.0) and result.errors == 1
    assert summarize_truthfulqa([result]).accuracy == 1.0


def test_repeated_facts_in_a_sentence_are_kept_once_and_judged_once(knowledge):
    lm, engine = scripted_lm({
        "AtomicFacts": lambda i: {"facts": ["Ada Lovelace was born in London."] * 3},
        "ClaimSupported": supported_if_last_word_in_passages})
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        score = FactScorer(knowledge).score("She was born in London. She was, in London.",
                                            "Ada Lovelace")
    # Two sentences, each with one distinct fact: counted twice (as FActScore does) ...
    assert [(f.sentence, f.label) for f in score.facts] == [(0, "SUPPORTED"), (1, "SUPPORTED")]
    # ... but the identical (topic, fact) pair is judged by the LM only once.
    assert len(engine.of("ClaimSupported")) == 1


def test_usage_meter_counts_calls_under_an_outer_usage_tracker():
    import dspy
    from scripted import scripted_lm

    from serc_dspy.evaluation.metrics import UsageMeter
    from serc_dspy.signatures import JudgeFact

    lm, engine = scripted_lm({"JudgeFact": lambda i: {"verdict": "SUPPORTED"}})
    meter = UsageMeter()
    with dspy.context(lm=lm, adapter=dspy.JSONAdapter(), track_usage=True), \
            dspy.track_usage() as outer:
        for _ in range(3):
            meter.call("judge", dspy.Predict(JudgeFact), evidence="e", claim="c")
    assert meter.usage.total.calls == 3 == len(engine.calls)
    assert meter.usage.total.prompt_tokens > 0
    assert sum(len(v) for v in outer.usage_data.values()) == 3  # nor lost to the outer one
