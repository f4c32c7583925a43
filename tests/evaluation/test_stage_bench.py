"""`serc bench stages`: one table of per-stage figures on the real labelled dev splits."""

from __future__ import annotations

import json

import pytest
from conftest import SHARED_DATA
from scripted import scripted_lm

from serc_dspy.cli import main
from serc_dspy.compiling.compile import CitedVerifier
from serc_dspy.compiling.stage_bench import firewall_pairs
from serc_dspy.evaluation.injection import load_articles

WIKI = SHARED_DATA / "factscore_wiki" / "wikipedia_dev.json"
needs_data = pytest.mark.skipif(not (SHARED_DATA / "factcheck_gpt").is_dir(),
                                reason="needs the shared datasets (SERC_SHARED_DATA)")


@needs_data
def test_firewall_pairs_are_balanced_and_name_namesakes_as_different():
    pairs = firewall_pairs(load_articles(WIKI), limit=20)
    assert len(pairs) == 20
    assert sum(p["same"] == "YES" for p in pairs) == 10
    namesakes = [p for p in pairs if p["same"] == "NO"
                 and p["answer"].split(" (")[0] == p["evidence"].split(" (")[0]]
    assert namesakes, "a same-name, different-entity pair must be in the set"


@pytest.mark.parametrize(("quote", "verdict", "evidence", "expected"), [
    # A quote from the evidence that swaps the claim's place overrules SUPPORTED.
    ("She was born in Warsaw.", "SUPPORTED",
     "Marie Curie was a physicist. She was born in Warsaw.", "CONTRADICTED"),
    # The claim "quoted" back, absent from the evidence: SERC prunes it, so the stage that
    # scores SERC's verifier gives NOT_FOUND too.
    ("Marie Curie was born in Kraków.", "CONTRADICTED",
     "Marie Curie was a physicist. She won two Nobel Prizes.", "NOT_FOUND"),
])
def test_cited_verdict_is_held_to_its_quote_as_serc_holds_it(quote, verdict, evidence,
                                                              expected):
    lm, _ = scripted_lm({"QuoteAndJudge": lambda i: {"quote": quote, "verdict": verdict}})
    import dspy

    from serc_dspy import SERC

    with dspy.context(lm=lm, adapter=dspy.JSONAdapter()):
        result = CitedVerifier(SERC().fact_checker)(evidence=evidence,
                                                    claim="Marie Curie was born in Kraków.")
    assert result.verdict == expected


@needs_data
def test_bench_stages_prints_one_row_per_stage(tmp_path, monkeypatch, capsys):
    handlers = {
        "JudgeFact": lambda i: {"verdict": "NOT_FOUND"},
        "QuoteAndJudge": lambda i: {"quote": "", "verdict": "NOT_FOUND"},
        "AtomicFacts": lambda i: {"facts": [i["sentence"]]},
        "CorrectFacts": lambda i: {"corrections": []},
        "SameEntity": lambda i: {"analysis": "", "same": "NO"},
    }
    lm, engine = scripted_lm(handlers)
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    assert main(["bench", "stages", "--data", str(SHARED_DATA), "--dev", "6", "--json",
                 "--out", str(tmp_path), "--lm", "openai=http://x/v1|m"]) == 0
    summary = json.loads(capsys.readouterr().out)
    stages = summary["stages"]
    assert list(stages) == ["verify", "verify_cited", "facts", "correct", "firewall"]
    # Always NOT_FOUND on a balanced split: exactly the NOT_FOUND third is right.
    assert stages["verify"]["score"] == pytest.approx(100 * 2 / 6, abs=0.01)
    assert stages["correct"]["score"] == 0.0  # no fix closes no gap
    assert 0 < stages["facts"]["score"] < 100  # whole sentences match some human facts
    # Always NO: the different-entity half is right, and same names never reach the judge.
    assert stages["firewall"]["score"] > 50 and stages["firewall"]["judge_calls"] < 6
    low, high = stages["verify"]["score_ci"]  # the bootstrap over the 6 examples
    assert 0 <= low <= stages["verify"]["score"] <= high <= 100
    assert stages["verify"]["macro_f1_ci"][0] <= stages["verify"]["macro_f1"]
    assert "| firewall |" in (tmp_path / "stages.md").read_text()
    assert "33.3 [" in (tmp_path / "stages.md").read_text()
    assert engine.of("SameEntity")


@needs_data
def test_a_stage_too_small_for_the_offset_is_reported_and_the_rest_still_run(
        tmp_path, monkeypatch, capsys):
    lm, _ = scripted_lm({"JudgeFact": lambda i: {"verdict": "NOT_FOUND"},
                         "CorrectFacts": lambda i: {"corrections": []}})
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    code = main(["bench", "stages", "--data", str(SHARED_DATA), "--dev", "3", "--offset", "25",
                 "--stage", "correct", "--stage", "verify", "--out", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 1 and "correct: the dev split of stage 'correct' has" in captured.err
    summary = json.loads((tmp_path / "stages.json").read_text())
    assert "error" in summary["stages"]["correct"] and summary["stages"]["verify"]["n"] == 3


@needs_data
def test_verdicts_on_unseen_pairs_with_the_agreement_path(tmp_path, monkeypatch, capsys):
    def cited(inputs):  # contradicts everything, citing nothing
        return {"quote": "", "verdict": "CONTRADICTED"}

    lm, engine = scripted_lm({"QuoteAndJudge": cited,
                              "JudgeFact": lambda i: {"verdict": "NOT_FOUND"}})
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    assert main(["bench", "stages", "--data", str(SHARED_DATA), "--pairs", "9", "--json",
                 "--stage", "verify_cited", "--stage", "verify_agree", "--out", str(tmp_path),
                 "--lm", "openai=http://x/v1|m"]) == 0
    stages = json.loads(capsys.readouterr().out)["stages"]
    assert stages["verify_cited"]["labels"] == {"SUPPORTED": 3, "CONTRADICTED": 3,
                                                 "NOT_FOUND": 3}
    assert stages["verify_cited"]["score"] == pytest.approx(100 / 3, abs=0.01)  # the 3 refuted
    # the second vote never agrees: no CONTRADICTED survives, the NOT_FOUND third is right
    assert stages["verify_agree"]["score"] == pytest.approx(100 / 3, abs=0.01)
    assert stages["verify_agree"]["per_label"]["CONTRADICTED"]["recall"] == 0.0
    low, high = stages["verify_agree"]["score_ci"]
    assert low <= 100 / 3 <= high and "macro_f1_ci" in stages["verify_agree"]
    assert len(engine.of("JudgeFact")) == 9  # one second vote per cited contradiction
    assert main(["bench", "stages", "--data", str(SHARED_DATA), "--stage", "verify_agree",
                 "--lm", "openai=http://x/v1|m"]) == 2


@needs_data
def test_the_verdict_paths_share_their_calls_and_a_rerun_resumes_from_the_saved_votes(
        tmp_path, monkeypatch, capsys):
    lm, engine = scripted_lm({"QuoteAndJudge": lambda i: {"quote": "", "verdict": "NOT_FOUND"},
                              "JudgeFact": lambda i: {"verdict": "SUPPORTED"},
                              "ChooseValue": lambda i: {"choice": "A"},
                              "ChooseSentence": lambda i: {"sentence": 0,
                                                           "stance": "not stated"}})
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    argv = ["bench", "stages", "--data", str(SHARED_DATA), "--pairs", "6", "--json",
            "--out", str(tmp_path), "--lm", "openai=http://x/v1|m"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)["stages"]
    # every path scored on the same 6 pairs, each pair asked once per predictor
    assert set(first) == {"verify", "verify_cited", "verify_agree", "choose"}
    # the choice never contradicts here (the orders disagree, or "not stated"): NOT_FOUND
    assert first["choose"]["score"] == pytest.approx(100 / 3, abs=0.01)
    assert len(engine.of("JudgeFact")) == 6 and len(engine.of("QuoteAndJudge")) == 6
    assert first["verify"]["score"] == pytest.approx(100 / 3, abs=0.01)  # the 2 supported
    assert first["verify_agree"]["score"] == pytest.approx(100 / 3, abs=0.01)  # the 2 unfound
    saved = list(tmp_path.glob("pair-votes-*.jsonl"))
    assert len(saved) == 1 and len(saved[0].read_text().splitlines()) == 6
    # a stopped run left a torn last line: the rerun asks that pair alone again
    lines = saved[0].read_text().splitlines()
    saved[0].write_text("\n".join(lines[:5]) + '\n{"key": "x", "vo')
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["stages"]["verify"]["score"] == \
        first["verify"]["score"]
    assert len(engine.of("JudgeFact")) == 7 and len(engine.of("QuoteAndJudge")) == 7
    assert len(saved[0].read_text().splitlines()) == 6  # the torn line gave way to its redo
    assert main(argv) == 0 and len(engine.of("JudgeFact")) == 7
    assert "6 unseen stance pairs" in (tmp_path / "stages.md").read_text()


@needs_data
def test_pairs_take_their_workers_and_refuse_a_method_option(tmp_path, monkeypatch, capsys):
    """`--workers` sets how many pairs are judged at once (it was refused as a method option,
    so every pair run went one at a time); a method's own options stay refused."""
    seen = {}

    def fake_pairs(data, **kwargs):
        seen.update(kwargs)
        return {"stages": {}}

    monkeypatch.setattr("serc_dspy.commands.bench.run_pair_stages", fake_pairs)
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: None)
    assert main(["bench", "stages", "--data", str(SHARED_DATA), "--pairs", "6", "--stage",
                 "choose", "--workers", "4", "--json"]) == 0
    assert seen["workers"] == 4 and seen["stages"] == ["choose"]
    assert main(["bench", "stages", "--data", str(SHARED_DATA), "--pairs", "6",
                 "--verdicts", "choose"]) == 2
    assert "does not apply here" in capsys.readouterr().err


@needs_data
def test_the_choose_stage_is_scored_on_the_bios_slot_choices_without_pairs(
        tmp_path, monkeypatch, capsys):
    lm, engine = scripted_lm({"ChooseValue": lambda i: {"choice": "A"}})  # always the first
    monkeypatch.setattr("serc_dspy.config.build_lm", lambda *a, **k: lm)
    assert main(["bench", "stages", "--data", str(SHARED_DATA), "--dev", "8", "--stage",
                 "choose", "--json", "--lm", "openai=http://x/v1|m"]) == 0
    stage = json.loads(capsys.readouterr().out)["stages"]["choose"]
    # own and planted examples alternate: choosing the first option is right on the own half
    assert stage["n"] == 8 and stage["score"] == pytest.approx(50.0)
    assert len(engine.of("ChooseValue")) == 8
