"""Loaders map labels as documented, split deterministically, and metrics score as documented."""

import json
import random
from collections import Counter

import pytest
from compiling_helpers import correction_rows, factscore_rows, stance_rows, write_jsonl
from conftest import SHARED_DATA

from serc_dspy.compiling.devsets import (
    DataError,
    load_correction_examples,
    load_fact_examples,
    load_verdict_examples,
)
from serc_dspy.evaluation.metrics.dspy_metrics import (
    correction_score,
    fact_f1,
    macro_f1,
    match_facts,
    verdict_metric,
)
from serc_dspy.signatures import FactFix

FACTCHECK = SHARED_DATA / "factcheck_gpt"
FACTSCORE = SHARED_DATA / "factscore" / "labeled_dev"
STANCE_FILE = FACTCHECK / "subtask3_claim_evidence_stance_dev.jsonl"
CLAIMS_FILE = FACTCHECK / "subtask4_claim_factuality_dev.jsonl"
needs_shared = pytest.mark.skipif(not STANCE_FILE.is_file() or not FACTSCORE.is_dir(),
                                  reason="shared data (SERC_SHARED_DATA) not available")


def _keys(examples):
    return [json.dumps(e.toDict(), sort_keys=True, default=str) for e in examples]


# -- verify ---------------------------------------------------------------------------------------
def test_stances_map_to_verdicts_and_partial_support_is_left_out(tmp_path):
    rows = stance_rows(per_label=4)
    rows.append(dict(rows[0]))  # exact duplicate: kept once
    rows.append({"claim": "Conflicted claim.", "evidence": "E.", "stance": "refute"})
    rows.append({"claim": "Conflicted claim.", "evidence": "E.", "stance": "irrelevant"})
    write_jsonl(tmp_path / "s.jsonl", rows)
    split = load_verdict_examples(tmp_path / "s.jsonl")
    examples = split.train + split.dev
    by_claim = {e.claim: e.verdict for e in examples}
    assert by_claim["The alpha comet number 0 orbits the alpha star."] == "SUPPORTED"
    assert by_claim["The beta comet number 1 orbits the beta star."] == "CONTRADICTED"
    assert by_claim["The gamma comet number 2 orbits the gamma star."] == "NOT_FOUND"
    assert "The delta comet is bright." not in by_claim
    assert "Conflicted claim." not in by_claim
    assert len(examples) == 12
    # the conflicting pair's second row is a repeat too; the pair is then dropped
    assert split.counts["skipped"] == {"partially-support": 1, "duplicate pair": 2,
                                       "conflicting stances": 1}
    assert all(set(e.inputs().keys()) == {"evidence", "claim"} for e in examples)
    assert set(examples[0].labels().keys()) == {"verdict"}


def test_verdict_split_is_deterministic_groupwise_and_order_independent(tmp_path):
    rows = stance_rows(per_label=10)
    # the same claim with several passages must stay on one side
    rows += [{"claim": "The alpha comet number 0 orbits the alpha star.",
              "evidence": f"Extra passage {i}.", "stance": "irrelevant"} for i in range(4)]
    write_jsonl(tmp_path / "a.jsonl", rows)
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    write_jsonl(tmp_path / "b.jsonl", shuffled)
    first = load_verdict_examples(tmp_path / "a.jsonl", train=6, dev=9)
    again = load_verdict_examples(tmp_path / "a.jsonl", train=6, dev=9)
    other_order = load_verdict_examples(tmp_path / "b.jsonl", train=6, dev=9)
    assert _keys(first.train) == _keys(again.train) == _keys(other_order.train)
    assert _keys(first.dev) == _keys(again.dev) == _keys(other_order.dev)
    full = load_verdict_examples(tmp_path / "a.jsonl")
    assert not {e.claim for e in full.train} & {e.claim for e in full.dev}
    # asking for fewer training examples does not move dev examples
    assert _keys(load_verdict_examples(tmp_path / "a.jsonl", train=1, dev=9).dev) == \
        _keys(first.dev)
    assert _keys(load_verdict_examples(tmp_path / "a.jsonl", train=6, dev=9, seed=1).dev) != \
        _keys(first.dev)


def test_balanced_sampling_takes_labels_round_robin(tmp_path):
    rows = stance_rows(per_label=2)
    rows += [{"claim": f"Irrelevant claim {i}.", "evidence": f"Noise {i}.",
              "stance": "irrelevant"} for i in range(60)]
    write_jsonl(tmp_path / "s.jsonl", rows)
    plain = load_verdict_examples(tmp_path / "s.jsonl", train=6, dev=6, dev_share=0.5)
    balanced = load_verdict_examples(tmp_path / "s.jsonl", train=6, dev=6, balanced=True)
    assert Counter(e.verdict for e in plain.train)["NOT_FOUND"] >= 4
    pool = balanced.counts["pool_labels"]
    for side, chosen in (("train", balanced.train), ("dev", balanced.dev)):
        counts = Counter(e.verdict for e in chosen)
        for label in ("SUPPORTED", "CONTRADICTED"):  # every available rare example is taken
            assert counts[label] == min(2, pool[side].get(label, 0))
        assert len(chosen) == 6
    assert balanced.counts["balanced"] is True


def test_missing_and_malformed_files_raise_data_errors(tmp_path):
    with pytest.raises(DataError, match="not found"):
        load_verdict_examples(tmp_path / "nope.jsonl")
    (tmp_path / "bad.jsonl").write_text('{"claim": "x"}\n{oops\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.jsonl, line 2: invalid JSON"):
        load_verdict_examples(tmp_path / "bad.jsonl")


@needs_shared
def test_real_stance_file_labels_counts_and_determinism():
    raw = [json.loads(line) for line in STANCE_FILE.read_text(encoding="utf-8").splitlines()]
    stances = Counter(r["stance"] for r in raw)
    split = load_verdict_examples(STANCE_FILE)
    examples = split.train + split.dev
    assert {e.verdict for e in examples} == {"SUPPORTED", "CONTRADICTED", "NOT_FOUND"}
    assert split.counts["rows"] == len(raw)
    assert split.counts["skipped"]["partially-support"] == stances["partially-support"]
    mapped = {"completely-support": "SUPPORTED", "refute": "CONTRADICTED",
              "irrelevant": "NOT_FOUND"}
    gold = {(" ".join(r["claim"].split()), " ".join(r["evidence"].split())): mapped[r["stance"]]
            for r in raw if r["stance"] in mapped}
    for e in examples[:200]:
        assert gold[(e.claim, e.evidence)] == e.verdict
    assert not {e.claim for e in split.train} & {e.claim for e in split.dev}
    small = load_verdict_examples(STANCE_FILE, train=12, dev=48, balanced=True)
    assert Counter(e.verdict for e in small.dev) == {"SUPPORTED": 16, "CONTRADICTED": 16,
                                                     "NOT_FOUND": 16}
    assert _keys(small.dev) == _keys(load_verdict_examples(STANCE_FILE, train=12, dev=48,
                                                           balanced=True).dev)


# -- facts ---------------------------------------------------------------------------------------
def test_factscore_sentences_become_fact_examples(tmp_path):
    write_jsonl(tmp_path / "fs" / "ChatGPT.jsonl", factscore_rows(n_topics=6))
    split = load_fact_examples(tmp_path / "fs")
    examples = split.train + split.dev
    assert len(examples) == 6  # one annotated sentence per topic; null facts/annotations skip
    example = next(e for e in examples if e.subject == "Person 3")
    assert example.sentence == "Person 3 was a painter and Person 3 lived in Rome."
    assert example.facts == ["Person 3 was a painter.", "Person 3 lived in Rome."]
    assert set(example.inputs().keys()) == {"subject", "sentence"}
    assert split.counts["skipped"] == {"row with null annotations": 1,
                                       "sentence with null human facts": 6}
    assert not {e.subject for e in split.train} & {e.subject for e in split.dev}
    assert _keys(load_fact_examples(tmp_path / "fs", train=2, dev=2).dev) == \
        _keys(load_fact_examples(tmp_path / "fs" / "ChatGPT.jsonl", train=2, dev=2).dev)


@needs_shared
def test_real_factscore_files_map_sentences_and_human_facts():
    files = sorted(FACTSCORE.glob("*.jsonl"))
    expected = 0
    for file in files:
        for line in file.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            for a in row["annotations"] or []:
                expected += a.get("human-atomic-facts") is not None
    split = load_fact_examples(FACTSCORE)
    assert split.counts["examples"] == expected
    assert all(e.facts and e.sentence and e.subject for e in split.train + split.dev)
    first = load_fact_examples(FACTSCORE, train=10, dev=20)
    assert _keys(first.train) == _keys(load_fact_examples(FACTSCORE, train=10, dev=20).train)
    assert not {e.subject for e in split.train} & {e.subject for e in split.dev}


# -- correct -------------------------------------------------------------------------------------
def test_false_claims_with_refuting_evidence_become_corrections(tmp_path):
    claims, stances, benchmark = correction_rows(n=4)
    stances.append({"claim": claims[1]["claim"], "evidence": "A partial passage.",
                    "stance": "partially-support"})
    # a claim whose only useful evidence partially supports it
    claims.append({"claim": "Gate 9 is red.", "label": "false", "revised_claim": "Gate 9 is blue."})
    stances.append({"claim": "Gate 9 is red.", "evidence": "Gate 9 is blue and tall.",
                    "stance": "partially-support"})
    claims.append({"claim": "Same.", "label": "false", "revised_claim": "Same."})
    write_jsonl(tmp_path / "c.jsonl", claims)
    write_jsonl(tmp_path / "s.jsonl", stances)
    write_jsonl(tmp_path / "b.jsonl", benchmark)
    split = load_correction_examples(tmp_path / "c.jsonl", tmp_path / "s.jsonl",
                                     benchmark_path=tmp_path / "b.jsonl")
    examples = {e.erroneous_facts[0]: e for e in split.train + split.dev}
    assert set(examples) == {f"Bridge {i} was opened in 18{i}0." for i in range(4)} | \
        {"Gate 9 is red."}
    bridge0 = examples["Bridge 0 was opened in 1800."]
    assert bridge0.subject == "When was Bridge 0 opened?"  # from the benchmark
    assert bridge0.evidence == "Bridge 0 was opened in 1905. It spans a river."  # refute only
    assert bridge0.related_facts == []
    assert bridge0.corrections == [FactFix(original="Bridge 0 was opened in 1800.",
                                           fixed="Bridge 0 was opened in 1905.")]
    assert examples["Bridge 1 was opened in 1810."].subject == "Bridge 1 was opened in 1810."
    assert examples["Gate 9 is red."].evidence == "Gate 9 is blue and tall."
    assert split.counts["skipped"] == {
        "label true": 1, "no refuting or partially supporting passage": 1,
        "revised claim equals the claim": 1}
    assert split.counts["evidence"] == {"refute": 4, "partially-support": 1}
    assert set(bridge0.inputs().keys()) == {"subject", "evidence", "erroneous_facts",
                                            "related_facts"}


@needs_shared
def test_real_correction_data_uses_false_claims_only():
    raw = {json.loads(line)["claim"]: json.loads(line)
           for line in CLAIMS_FILE.read_text(encoding="utf-8").splitlines()}
    split = load_correction_examples(CLAIMS_FILE, STANCE_FILE,
                                     benchmark_path=FACTCHECK / "benchmark_dev.jsonl")
    examples = split.train + split.dev
    assert len(examples) >= 20
    for e in examples:
        row = raw[e.erroneous_facts[0]]
        assert row["label"] == "false"
        assert e.corrections[0].fixed == " ".join(row["revised_claim"].split())
        assert e.evidence
    assert split.counts["subject"]["benchmark prompt"] > 0
    again = load_correction_examples(CLAIMS_FILE, STANCE_FILE,
                                     benchmark_path=FACTCHECK / "benchmark_dev.jsonl")
    assert _keys(again.dev) == _keys(split.dev)


# -- metrics -------------------------------------------------------------------------------------
def test_verdict_metric_and_macro_f1():
    import dspy

    example = dspy.Example(evidence="e", claim="c", verdict="CONTRADICTED")
    assert verdict_metric(example, dspy.Prediction(verdict="CONTRADICTED"))
    assert not verdict_metric(example, dspy.Prediction(verdict="SUPPORTED"))
    assert not verdict_metric(example, dspy.Prediction())  # a failed call
    gold = ["SUPPORTED", "CONTRADICTED", "NOT_FOUND"] * 2
    assert macro_f1(gold, gold)[0] == 1.0
    always_supported, per_label = macro_f1(gold, ["SUPPORTED"] * 6)
    assert always_supported == pytest.approx(0.5 / 3, abs=1e-3)
    assert per_label["SUPPORTED"] == {"precision": 0.3333, "recall": 1.0, "f1": 0.5,
                                      "support": 2}
    assert macro_f1(gold, [None] * 6)[0] == 0.0


def test_fact_f1_greedy_one_to_one_matching():
    gold = ["Marie Curie was born in Warsaw.", "Marie Curie was born in 1867."]
    assert fact_f1(gold, gold) == 1.0
    assert fact_f1([], []) == 1.0
    assert fact_f1([], gold) == 0.0
    # a near-paraphrase matches; the same prediction cannot match two gold facts
    assert fact_f1(["Marie Curie was born in Warsaw, Poland."], gold) == pytest.approx(2 / 3)
    assert len(match_facts(["Marie Curie was born in Warsaw."] * 2, gold[:1])) == 1
    # the whole sentence as one fact does not match the atomic facts
    assert fact_f1(["Marie Curie was born in Warsaw in 1867 and studied physics in Paris, "
                    "where she met Pierre."], gold) == 0.0


def test_correction_score_rewards_closing_the_gap_to_the_gold_revision():
    claim, gold = "Bridge 0 was opened in 1800.", "Bridge 0 was opened in 1905."
    assert correction_score(claim, gold, [FactFix(original=claim, fixed=gold)]) == 1.0
    assert correction_score(claim, gold, [{"original": claim, "fixed": claim}]) == 0.0
    assert correction_score(claim, gold, [{"original": claim, "fixed": ""}]) == 0.0
    assert correction_score(claim, gold, [{"original": "Something else.", "fixed": gold}]) == 0.0
    assert correction_score(claim, gold, []) == 0.0
    partial = correction_score(claim, gold, [{"original": claim,
                                              "fixed": "Bridge 0 was opened in 1900."}])
    assert 0.0 < partial < 1.0
