"""Factcheck-Bench scoring: every path on hand-built items, the intervals, the command."""

from __future__ import annotations

import json

import pytest
from scripted import entity, scripted_lm

from serc_dspy.cli import main
from serc_dspy.core.errors import UserError
from serc_dspy.core.io import read_jsonl, write_jsonl
from serc_dspy.evaluation.factcheck import (
    BenchClaim,
    FactcheckItem,
    LabelledClaim,
    decide_by_words,
    judge_agreement,
    load_factcheck,
    score_answer,
    summarize_factcheck,
    trained_items,
)
from serc_dspy.evaluation.intervals import bootstrap_rate, paired_difference

DRAFT = ("Argentina has won the FIFA World Cup once, in 1986. The team is coached by Lionel "
         "Scaloni. Its home stadium is in Buenos Aires.")
WORLD_CUP = BenchClaim(index=0, sentence=0, label="false",
                       sentence_text="Argentina has won the FIFA World Cup once, in 1986.",
                       text="Argentina has won the FIFA World Cup once.",
                       revised="Argentina has won the FIFA World Cup three times.")
COACH = BenchClaim(index=1, sentence=1, label="true",
                   sentence_text="The team is coached by Lionel Scaloni.",
                   text="The Argentina team is coached by Lionel Scaloni.",
                   revised="The Argentina team is coached by Lionel Scaloni.")
STADIUM = BenchClaim(index=2, sentence=2, label="true",
                     sentence_text="Its home stadium is in Buenos Aires.",
                     text="The home stadium of Argentina is in Buenos Aires.",
                     revised="The home stadium of Argentina is in Buenos Aires.")
ITEM = FactcheckItem(id="factcheck-1", number=1, question="How often has Argentina won?",
                     draft=DRAFT, claims=[WORLD_CUP, COACH, STADIUM],
                     passages=[("https://example.org/a", "Argentina has won three FIFA World "
                                "Cups, in 1978, 1986 and 2022. Lionel Scaloni coaches it.")])


@pytest.mark.parametrize("answer, outcome", [
    ("Argentina has won the FIFA World Cup three times, in 1986. More text.", "fixed"),
    ("Argentina has won the FIFA World Cup 3 times.", "fixed"),  # number word as a digit
    ("Argentina plays football. The team is coached by Lionel Scaloni.", "removed"),
    ("Argentina won the FIFA World Cup once, they say.", "left"),
])
def test_a_detail_swap_is_fixed_removed_or_left_by_its_words(answer, outcome):
    decision = decide_by_words(WORLD_CUP, DRAFT, answer)
    assert (decision.outcome, decision.path) == (outcome, "details")


def test_a_verbatim_sentence_decides_without_reading_words():
    answer = "Argentina has won the FIFA World Cup once, in 1986. Something else."
    assert decide_by_words(WORLD_CUP, DRAFT, answer).path == "verbatim"
    assert decide_by_words(WORLD_CUP, DRAFT, answer).outcome == "left"


def test_a_true_claim_is_kept_removed_or_left_to_the_judge():
    kept = decide_by_words(COACH, DRAFT, "Lionel Scaloni is the coach of the Argentina team.")
    assert (kept.outcome, kept.path) == ("kept", "details")
    gone = decide_by_words(COACH, DRAFT, "Argentina won in 1986.")
    assert (gone.outcome, gone.path) == ("removed", "details")
    unsure = decide_by_words(COACH, DRAFT, "The team is coached by Diego Maradona.")
    assert unsure.outcome is None  # some words stay: only reading can say it was altered


def test_every_path_and_introduced_details_count_in_one_answer():
    answer = ("Argentina has won the FIFA World Cup three times. The team is coached by Diego "
              "Maradona since 2031.")
    calls = []

    def judge(claim, text):
        calls.append(claim)
        return "contradicts"

    score = score_answer(ITEM, answer, method="serc", judge=judge)
    outcomes = {c.index: (c.outcome, c.path) for c in score.claims}
    assert outcomes == {0: ("fixed", "details"), 1: ("altered", "judge"),
                        2: ("removed", "details")}
    assert calls == [COACH.text]
    assert sorted(score.introduced) == ["2031", "Diego Maradona"]
    summary = summarize_factcheck([score, None])
    assert summary["fixed_rate"] == 1.0 and summary["kept_rate"] == 0.0
    assert summary["false_alarm_rate"] == 0.5 and summary["true_removed_rate"] == 0.5
    assert summary["failed"] == 1 and summary["items"] == 1
    assert summary["paths"] == {"verbatim": 0.0, "details": 2 / 3, "judge": 1 / 3}
    assert summary["perfect_answer_rate"] == 0.0


def test_a_false_claim_the_judge_reads_is_fixed_only_when_the_revision_is_stated():
    negated = BenchClaim(index=0, sentence=0, label="false", sentence_text="X.",
                         text="Land can be found on Jupiter.",
                         revised="Land can not be found on Jupiter.")
    item = ITEM.model_copy(update={"claims": [negated], "draft": "Land can be found on "
                                   "Jupiter, they say."})

    def judge(claim, text):
        return "states" if "not" in claim else "contradicts"

    score = score_answer(item, "Jupiter has no land.", judge=judge)
    assert [(c.outcome, c.path) for c in score.claims] == [("fixed", "judge")]
    failing = score_answer(item, "Jupiter has no land.", judge=lambda c, t: 1 / 0)
    assert failing.claims[0].outcome is None and "ZeroDivisionError" in failing.claims[0].error
    assert summarize_factcheck([failing])["unscored_claims"] == 1


def test_degenerate_sentences_count_in_factcheck_scores():
    answer = ("Argentina is Argentina. The team is coached by Lionel Scaloni. The team is "
              "coached by Lionel Scaloni.")
    score = score_answer(ITEM, answer)
    assert score.degenerate == {0: "tautology", 2: "repeated"}
    assert summarize_factcheck([score])["degenerate_per_answer"] == 2


def test_the_bootstrap_gives_a_known_interval_and_a_self_difference_of_zero():
    sample = [(1.0, 1.0)] * 6 + [(0.0, 1.0)] * 4
    assert bootstrap_rate(sample, seed=0) == bootstrap_rate(sample, seed=0)
    low, high = bootstrap_rate(sample, seed=0)
    assert low == pytest.approx(0.3) and high == pytest.approx(0.9)
    assert bootstrap_rate([(2.0, 4.0)] * 5) == (0.5, 0.5)  # no variation, no width
    assert bootstrap_rate([(0.0, 0.0)]) is None
    run = {str(i): pair for i, pair in enumerate(sample)}
    same = paired_difference(run, run, figure="x")
    assert (same.difference, same.low, same.high, same.items) == (0.0, 0.0, 0.0, 10)
    assert not same.excludes_zero
    better = {k: (1.0, 1.0) for k in run}
    assert paired_difference(better, run).excludes_zero


def test_items_a_compiled_state_learned_from_are_found_by_their_claims():
    state = {"state": {"corrector": {"demos": [{"erroneous_facts": [COACH.text]}]},
                       "fact_extractor": {"demos": [{"sentence": "unrelated"}]}}}
    other = ITEM.model_copy(update={"id": "factcheck-2", "claims": [STADIUM]})
    assert trained_items([ITEM, other], state) == ["factcheck-1"]
    assert trained_items([ITEM], None) == []


def test_the_judge_agreement_counts_the_judge_and_the_word_paths():
    labels = [LabelledClaim(item="factcheck-1", claim=COACH, draft=DRAFT, outcome=o, answer=a)
              for o, a in [("kept", "Lionel Scaloni coaches the Argentina team."),
                           ("altered", "The team is coached by Diego Maradona."),
                           ("removed", "Argentina won in 1986.")]]
    table = {"Lionel Scaloni coaches the Argentina team.": "states",
             "The team is coached by Diego Maradona.": "contradicts",
             "Argentina won in 1986.": "states"}  # one judge mistake
    agreement = judge_agreement(labels, lambda claim, answer: table[answer])
    assert agreement["judge"]["agreement"] == pytest.approx(2 / 3)
    assert agreement["judge"]["n"] == 3 and agreement["words"]["n"] == 2
    assert agreement["words"]["agreement"] == 1.0


# -- the data file and the command ---------------------------------------------------------------
def _row(prompt, response, sentences):
    return {"prompt": prompt, "response": response, "revised_response": "", "sentences": {
        f"sentence{i + 1}": {
            "text": text, "claims": [c for c, _, _ in claims],
            "claims_factuality_label": [lab for _, lab, _ in claims],
            "revised_claims": [r for _, _, r in claims],
            "human_evidence": ["NA" for _ in claims],
            "auto_evidence": [[evidence] for _ in claims],
            "auto_evidence_url": [[f"https://example.org/{i}"] for _ in claims]}
        for i, (text, claims, evidence) in enumerate(sentences)}}


def _data(tmp_path):
    rows = [
        _row("How many World Cups has Argentina won?",
             "Argentina has won the World Cup once, a win its fans still sing about.",
             [("Argentina has won the World Cup once, a win its fans still sing about.",
               [("Argentina has won the World Cup once.", False,
                 "Argentina has won the World Cup three times.")],
               "Argentina has won the World Cup three times, in 1978, 1986 and 2022.")]),
        _row("Where is the Eiffel Tower?", "The Eiffel Tower is in Paris. It opened in 1889.",
             [("The Eiffel Tower is in Paris.",
               [("The Eiffel Tower is in Paris.", True, "The Eiffel Tower is in Paris.")],
               "The Eiffel Tower is a tower in Paris, France."),
              ("It opened in 1889.", [("The Eiffel Tower opened in 1889.", True,
                                       "The Eiffel Tower opened in 1889.")],
               "The Eiffel Tower opened to the public in 1889.")]),
    ]
    path = tmp_path / "benchmark.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_loading_keeps_urls_as_sources_and_names_a_bad_line(tmp_path):
    path = _data(tmp_path)
    items = load_factcheck(path)
    assert [i.id for i in items] == ["factcheck-1", "factcheck-2"]
    assert items[0].passages[0][0] == "https://example.org/0"
    assert [c.label for c in items[1].claims] == ["true", "true"]
    assert load_factcheck(path, evidence="human")[0].passages == []
    path.write_text(path.read_text() + "{not json\n", encoding="utf-8")
    with pytest.raises(UserError, match="line 3"):
        load_factcheck(path)


def _handlers():
    def judge(i):
        claim = i["claim"]
        return {"quote": "", "verdict": "CONTRADICTED" if "once" in claim else "SUPPORTED"}

    def fix(text):
        return text.replace("once", "three times")

    return {
        "QueryEntity": lambda i: entity("Argentina"), "AnswerEntity": lambda i: entity(""),
        "EvidenceEntity": lambda i: entity(""),
        "SameEntity": lambda i: {"analysis": "", "same": "YES"},
        "AtomicFacts": lambda i: {"facts": [i["sentence"]]},
        "VerificationQuery": lambda i: {"query": i["facts"][0]},
        "EvidenceSummary": lambda i: {"evidence": i["passages"][:500]},
        "QuoteAndJudge": judge,
        "JudgeFacts": lambda i: {"verdicts": [judge({"claim": c})["verdict"]
                                              for c in i["claims"]]},
        "JudgeFact": lambda i: {"verdict": judge(i)["verdict"]},
        "CorrectFacts": lambda i: {"corrections": [{"original": f, "fixed": fix(f)}
                                                   for f in i["erroneous_facts"]]},
        "RewriteSentence": lambda i: {"sentence": " ".join(i["facts"])},
        "PolishAnswer": lambda i: {"answer": i["draft"]},
        "ClaimInAnswer": lambda i: {"verdict": "states" if i["claim"].split()[-1].strip(".")
                                    in i["answer"] else "silent"},
    }


def test_bench_factcheck_runs_end_to_end_and_compares(tmp_path, monkeypatch, capsys):
    data = _data(tmp_path)
    lm, engine = scripted_lm(_handlers())
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    out = tmp_path / "fc"
    argv = ["bench", "factcheck", "--data", str(data), "--method", "initial", "--method",
            "serc", "--lm", "openai=http://x/v1#m", "--out", str(out), "--quiet", "--json",
            "--judge-labels", "none"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    serc, initial = report["methods"]["serc"], report["methods"]["initial"]
    assert initial["residual_rate"] == 1.0 and initial["kept_rate"] == 1.0
    assert serc["fixed_rate"] == 1.0 and serc["kept_rate"] == 1.0
    assert serc["fixed_rate_ci"] == [1.0, 1.0] and serc["items"] == 2
    assert serc["calls_per_answer"] > 0 and initial["calls_per_answer"] == 0
    assert report["split"] == "tuning" and report["excluded_as_trained"] == []
    assert "| serc | 2 | 1 | 1.000 [1.00, 1.00] |" in (out / "factcheck.md").read_text()
    meta = json.loads((out / "serc.meta.json").read_text())
    assert meta["split"] == "tuning" and meta["command"].startswith("serc bench factcheck")
    calls = len(engine.calls)
    assert main(argv) == 0  # resumed: nothing is decoded or judged again
    assert len(engine.calls) == calls
    capsys.readouterr()
    assert main([a for a in argv if a != "--quiet"]) == 0  # scoring says what it is doing
    assert "[serc] scoring serc.jsonl against the human labels" in capsys.readouterr().err
    assert main(["bench", "compare", str(out / "serc.jsonl"), str(out / "initial.jsonl"),
                 "--json", "--figure", "fixed_rate", "--figure", "kept_rate"]) == 0
    diffs = {d["figure"]: d for d in json.loads(capsys.readouterr().out)["differences"]}
    assert diffs["fixed_rate"]["difference"] == 1.0 and diffs["kept_rate"]["difference"] == 0
    assert main(["bench", "compare", str(out / "serc.jsonl"), str(out / "serc.jsonl")]) == 0
    assert "| fixed_rate | 2 | 1.000 | 1.000 | 0.000 | [0.000, 0.000] | no |" in \
        capsys.readouterr().out


def test_bench_compare_refuses_unscored_runs_and_unknown_figures(tmp_path, capsys):
    run = tmp_path / "x.jsonl"
    run.write_text("{}\n", encoding="utf-8")
    assert main(["bench", "compare", str(run), str(run)]) == 2
    assert "no scores next to it" in capsys.readouterr().err


def test_a_revision_that_gives_a_range_is_stated_by_a_number_in_it():
    claim = BenchClaim(index=0, sentence=0, label="false",
                       sentence_text="The Milky Way produces about one new star per year.",
                       text="The Milky Way produces about one new star per year on average.",
                       revised="The Milky Way produces six to seven new stars per year on average.")
    draft = "It is thought that the Milky Way produces about one new star per year."
    fixed = decide_by_words(claim, draft, "The Milky Way is estimated to produce about 7 stars "
                                          "per year on average.")
    assert (fixed.outcome, fixed.path) == ("fixed", "details")
    assert decide_by_words(claim, draft, "The Milky Way produces about 9 stars per year on "
                                         "average.").outcome == "removed"


def test_the_shipped_labels_load_and_the_word_paths_agree_with_them():
    from serc_dspy.evaluation.factcheck import load_labels, packaged_labels

    labels = load_labels(packaged_labels())
    assert len(labels) >= 30 and {r.outcome for r in labels} >= {"fixed", "kept", "removed"}
    decided = [(decide_by_words(r.claim, r.draft, r.answer).outcome, r.outcome) for r in labels]
    decided = [(a, b) for a, b in decided if a is not None]
    assert decided and sum(a == b for a, b in decided) / len(decided) >= 0.9


def test_an_ablation_decodes_again_only_the_answers_its_rule_fired_on(tmp_path, monkeypatch,
                                                                       capsys):
    """The placeholder rule fires on the first item only (its answer descriptor is empty): the
    second answer is carried over from the full run, the first decoded with the rule off."""
    data = _data(tmp_path)
    lm, engine = scripted_lm(_handlers())
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    out = tmp_path / "fc"
    argv = ["bench", "factcheck", "--data", str(data), "--method", "serc", "--lm",
            "openai=http://x/v1#m", "--out", str(out), "--quiet", "--json",
            "--judge-labels", "none", "--ablate", "firewall.placeholder"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    full = {r["id"]: r for r in read_jsonl(out / "serc.jsonl")}
    assert [r["rule"] for r in full["factcheck-1"]["trace"]["rulings"]] == \
        ["firewall.placeholder"]
    off = {r["id"]: r for r in read_jsonl(out / "serc~firewall.placeholder.jsonl")}
    assert off["factcheck-2"]["carried_from"] == "serc.jsonl"
    assert off["factcheck-2"]["answer"] == full["factcheck-2"]["answer"]
    assert "carried_from" not in off["factcheck-1"]
    assert set(off["factcheck-1"]["trace"]["rules_off"]) - \
        set(full["factcheck-1"]["trace"]["rules_off"]) == {"firewall.placeholder"}
    assert not off["factcheck-1"]["trace"]["rulings"]
    (row,) = report["ablation"]
    assert (row["rule"], row["against"]) == ("firewall.placeholder", "serc")
    assert {d["figure"]: d["items"] for d in row["differences"]}["fixed_rate"] == 2

    # a carried answer keeps the full run's score: marked "altered" there, rescoring the
    # ablation reads it from there instead of scoring the same text again
    scored = out / "serc.factcheck.jsonl"
    rows = read_jsonl(scored)
    for r in rows:
        if r["id"] == "factcheck-2":
            r["claims"][0]["outcome"] = "altered"
    write_jsonl(scored, rows)
    (out / "serc~firewall.placeholder.factcheck.jsonl").unlink()
    assert main(argv) == 0
    capsys.readouterr()
    scores = {r["id"]: r for r in read_jsonl(out / "serc~firewall.placeholder.factcheck.jsonl")}
    assert scores["factcheck-2"]["claims"][0]["outcome"] == "altered"
    assert scores["factcheck-2"]["method"] == "serc"

    rerun = tmp_path / "rerun"
    argv = [*argv[:argv.index("--out") + 1], str(rerun), *argv[argv.index("--out") + 2:],
            "--ablate-rerun-all"]
    assert main([a for a in argv if a != "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "serc (firewall.placeholder off)" in err and "carried over" not in err
    off = read_jsonl(rerun / "serc~firewall.placeholder.jsonl")
    assert len(off) == 2 and not any("carried_from" in r for r in off)


def test_a_judge_under_the_agreement_bar_scores_nothing_and_its_claims_are_undecided(
        tmp_path, monkeypatch, capsys):
    from serc_dspy.evaluation import factcheck_bench
    from serc_dspy.evaluation.factcheck_bench import MIN_JUDGE_AGREEMENT, judge_trusted

    assert judge_trusted({"judge": {"agreement": 0.85, "failed": 0}})
    assert not judge_trusted({"judge": {"agreement": 0.327, "failed": 0}})
    assert not judge_trusted({"judge": {"agreement": 0.9, "failed": 2}})
    assert not judge_trusted(None) and MIN_JUDGE_AGREEMENT == 0.8

    data = _data(tmp_path)
    handlers = _handlers()
    # a draft whose claim the words cannot decide: only a judge could score it
    handlers["ClaimInAnswer"] = lambda i: {"verdict": "states"}
    lm, engine = scripted_lm(handlers)
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    for agreement, used in ((0.327, False), (0.9, True)):
        monkeypatch.setattr(factcheck_bench, "measure_judge",
                            lambda out, path, lm, a=agreement: {
                                "judge": {"agreement": a, "agreement_ci": None, "n": 49,
                                          "failed": 0},
                                "words": {"agreement": 1.0, "agreement_ci": None, "n": 25},
                                "labels": str(path), "judge_lm": "m"})
        out = tmp_path / f"fc-{agreement}"
        argv = ["bench", "factcheck", "--data", str(data), "--method", "serc", "--lm",
                "openai=http://x/v1#m", "--out", str(out), "--quiet", "--json"]
        assert main(argv) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["judge_used"] is used
        if not used:
            assert report["judge_calls"] == 0
            assert "so the judge scored nothing" in (out / "factcheck.md").read_text()


def test_a_stray_jsonl_in_the_output_folder_is_never_scored_as_a_method(tmp_path, monkeypatch,
                                                                        capsys):
    data = _data(tmp_path)
    lm, _ = scripted_lm(_handlers())
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    out = tmp_path / "fc"
    out.mkdir()
    (out / "notes.jsonl").write_text('{"id": "factcheck-1", "answer": "x"}\n')
    argv = ["bench", "factcheck", "--data", str(data), "--method", "initial", "--lm",
            "openai=http://x/v1#m", "--out", str(out), "--json", "--judge-labels", "none"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert set(json.loads(captured.out)["methods"]) == {"initial"}
    assert "not scored: notes.jsonl" in captured.err


@pytest.mark.parametrize("field, value, words", [
    ("claims", "Argentina has won the World Cup once.", "claims"),  # a string, not a list
    ("claims_factuality_label", ["falsetrue"], "falsetrue"),
    ("claims_factuality_label", [float("nan")], "claims_factuality_label"),
    ("claims_factuality_label", None, "labels"),  # no label list for one claim
    ("auto_evidence", ["a string group"], "auto_evidence"),  # per-character passages
])
def test_a_malformed_item_is_refused_with_file_and_line_through_the_command(
        tmp_path, capsys, field, value, words):
    path = _data(tmp_path)
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    sentence = rows[1]["sentences"]["sentence1"]
    if value is None:
        del sentence[field]
    else:
        sentence[field] = value
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(UserError, match=rf"line 2: sentence 'sentence1' is malformed.*{words}"):
        load_factcheck(path)
    from serc_dspy.cli import main

    code = main(["bench", "factcheck", "--data", str(path), "--items", "2", "--method",
                 "initial", "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and "line 2" in err and "Traceback" not in err


@pytest.mark.parametrize("kind", ["noise", "factcheck"])
@pytest.mark.parametrize("rows, words", [
    ([{"id": "a", "method": "serc", "calls": -3}], "line 1: calls: Input should be greater"),
    ([{"id": "a", "method": "serc"}, {"id": "a", "method": "serc"}], "line 2: item 'a' is "
                                                                      "scored twice"),
    ([{"id": "a", "method": "serc", "tokens": "many"}], "line 1: tokens"),
    ([{"id": "a", "method": "serc", "calls": 1e300}], "line 1: calls"),
    ([{"method": "serc"}], "line 1: a score row needs an id"),
    ([{"id": "a", "method": "serc", "claims": "oops", "units": "oops"}], "line 1: "),
])
def test_a_malformed_score_file_is_refused_naming_file_and_line(tmp_path, capsys, kind, rows,
                                                                 words):
    """N14: `serc bench compare` (and the factcheck summary, which reads the same rows) never
    scores a malformed file, and never ends in a raw TypeError or OverflowError."""
    good = tmp_path / f"good.{kind}.jsonl"
    good.write_text(json.dumps({"id": "a", "method": "serc"}) + "\n", encoding="utf-8")
    bad = tmp_path / f"bad.{kind}.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["bench", "compare", str(bad), str(good)]) == 2
    err = capsys.readouterr().err
    assert f"bad.{kind}.jsonl, {words}" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
